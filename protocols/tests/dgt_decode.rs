//! Board → host direction: the decoder against the encoders (property tests), hand
//! vectors written from the protocol facts (dgt.md §1, §2.3, §3), and a real
//! recording of a DGT board with a DGT clock decoded by another driver.

use eboard_protocols::dgt::{
    id, BatteryStatus, BusMessage, BusReply, BwTime, ClockAck, DecodeError, Decoder, DgtSideTime,
    EeRecord, Frame, Message, Mode,
};
use eboard_protocols::picture::{field_to_square, MagicPiece, Picture, Sensed};
use eboard_protocols::{ClockReading, ClockSide};
use proptest::prelude::*;
use shakmaty::{Board, Color, Piece, Role, Square};

// ---------------------------------------------------------------- helpers

fn decode_chunked(mode: Mode, bytes: &[u8], cuts: &[usize]) -> Vec<Result<Frame, DecodeError>> {
    let mut d = Decoder::new(mode);
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts = cuts.to_vec();
    cuts.sort_unstable();
    for c in cuts.into_iter().chain(std::iter::once(bytes.len())) {
        let end = c.clamp(at, bytes.len());
        d.push(&bytes[at..end]);
        at = end;
        // Termination: every result consumes bytes or clears pending state, so a
        // decoder can never yield more results than bytes pushed plus one per push.
        let mut guard = 0;
        while let Some(r) = d.next() {
            out.push(r);
            guard += 1;
            assert!(guard <= bytes.len() + 2, "decoder does not terminate");
        }
    }
    out
}

fn decode_one(mode: Mode, bytes: &[u8]) -> Result<Frame, DecodeError> {
    let mut got = decode_chunked(mode, bytes, &[]);
    assert_eq!(
        got.len(),
        1,
        "expected exactly one result from {bytes:02x?}: {got:?}"
    );
    got.remove(0)
}

fn single(bytes: &[u8]) -> Message {
    match decode_one(Mode::Single, bytes) {
        Ok(Frame::Single(m)) => m,
        other => panic!("expected a single-board message from {bytes:02x?}, got {other:?}"),
    }
}

fn bus(bytes: &[u8]) -> BusMessage {
    match decode_one(Mode::Bus, bytes) {
        Ok(Frame::Bus(m)) => m,
        other => panic!("expected a bus message from {bytes:02x?}, got {other:?}"),
    }
}

fn enc(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v);
    v
}

fn enc_bus(m: &BusMessage) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v);
    v
}

fn piece(color: Color, role: Role) -> Sensed {
    Sensed::Piece(Piece { color, role })
}

// ---------------------------------------------------------------- vectors

#[test]
fn field_update_vector() {
    // e2 (field 52) emptied, then a white king (code 5, not 6) on e1 (field 60).
    assert_eq!(
        single(&[0x8e, 0x00, 0x05, 52, 0x00]),
        Message::FieldUpdate {
            square: Square::E2,
            sensed: Sensed::Empty
        }
    );
    let king = Message::FieldUpdate {
        square: Square::E1,
        sensed: piece(Color::White, Role::King),
    };
    assert_eq!(enc(&king), [0x8e, 0x00, 0x05, 60, 0x05]);
    let bq = Message::FieldUpdate {
        square: Square::D8,
        sensed: piece(Color::Black, Role::Queen),
    };
    assert_eq!(enc(&bq), [0x8e, 0x00, 0x05, 3, 0x0c]);
    assert_eq!(
        single(&[0x8e, 0x00, 0x05, 27, 0x0e]),
        Message::FieldUpdate {
            square: Square::D5,
            sensed: Sensed::Magic(MagicPiece::WhiteWins)
        }
    );
    // Occupancy-only boards (Pegasus) use 1 for "occupied": it encodes as 0x01.
    let occ = Message::FieldUpdate {
        square: Square::A8,
        sensed: Sensed::Occupied,
    };
    assert_eq!(enc(&occ), [0x8e, 0x00, 0x05, 0, 0x01]);
}

#[test]
fn field_update_errors() {
    assert_eq!(
        decode_one(Mode::Single, &[0x8e, 0x00, 0x05, 64, 0x00]),
        Err(DecodeError::BadField {
            id: 0x8e,
            field: 64
        })
    );
    assert_eq!(
        decode_one(Mode::Single, &[0x8e, 0x00, 0x05, 10, 0x10]),
        Err(DecodeError::BadPieceCode {
            id: 0x8e,
            index: 1,
            code: 0x10
        })
    );
}

#[test]
fn bwtime_vector_from_the_real_recording() {
    // Line 3 of dgtdriver-recordings/1.inbytes: right 0:03:02, left 0:03:01, both
    // with the time-per-move indicator; status 0x09 = running, bit 3 set.
    let bytes = [0x8d, 0x00, 0x0a, 0x20, 0x03, 0x02, 0x20, 0x03, 0x01, 0x09];
    let side = |seconds| DgtSideTime {
        hours: 0,
        minutes: 3,
        seconds,
        flag_fallen: false,
        time_per_move: true,
        flag_shown: false,
    };
    let want = BwTime {
        right: side(2),
        left: side(1),
        running: true,
        lever_right_high: false,
        battery_low: false,
        left_turn: true,
        right_turn: false,
        no_clock: false,
    };
    assert_eq!(single(&bytes), Message::Clock(want));
    assert_eq!(enc(&Message::Clock(want)), bytes);
    let r = ClockReading::from(&want);
    assert_eq!(r.left.millis, 181_000);
    assert_eq!(r.right.millis, 182_000);
    assert!(r.left.time_per_move);
    assert_eq!(r.lever_high, Some(ClockSide::Left));
    assert_eq!(r.running_side(), Some(ClockSide::Left));
}

#[test]
fn bwtime_flags_hours_and_bcd() {
    // Right: 9:59:58 with flag fallen (0x10) and flag shown (0x40); left 1:00:00.
    // Status: lever right high (0x02), battery low (0x04), no clock (0x20).
    let bytes = [0x8d, 0x00, 0x0a, 0x59, 0x59, 0x58, 0x01, 0x00, 0x00, 0x26];
    let Message::Clock(t) = single(&bytes) else {
        panic!("not a clock reading")
    };
    assert_eq!(
        (t.right.hours, t.right.minutes, t.right.seconds),
        (9, 59, 58)
    );
    assert!(t.right.flag_fallen && t.right.flag_shown && !t.right.time_per_move);
    assert_eq!((t.left.hours, t.left.minutes, t.left.seconds), (1, 0, 0));
    assert!(!t.running && t.lever_right_high && t.battery_low && t.no_clock);
    let r = ClockReading::from(&t);
    assert_eq!(r.right.millis, (9 * 3600 + 59 * 60 + 58) * 1000);
    assert_eq!(r.lever_high, Some(ClockSide::Right));
    assert_eq!(r.running_side(), None);
    // A minutes byte of 0x5a is not BCD.
    assert_eq!(
        decode_one(Mode::Single, &[0x8d, 0x00, 0x0a, 0x00, 0x5a, 0, 0, 0, 0, 0]),
        Err(DecodeError::BadBcd {
            id: 0x8d,
            index: 1,
            byte: 0x5a
        })
    );
    // Seconds 0x60 is BCD but not a valid second.
    assert!(matches!(
        decode_one(Mode::Single, &[0x8d, 0x00, 0x0a, 0, 0, 0, 0, 0, 0x60, 0]),
        Err(DecodeError::BadBcd { index: 5, .. })
    ));
    // Hours nibble 0x0b is neither an hour nor the ack marker.
    assert!(matches!(
        decode_one(Mode::Single, &[0x8d, 0x00, 0x0a, 0x0b, 0, 0, 0, 0, 0, 0]),
        Err(DecodeError::BadBcd { index: 0, .. })
    ));
}

#[test]
fn all_zero_bwtime_is_kept_and_blank() {
    let m = single(&[0x8d, 0x00, 0x0a, 0, 0, 0, 0, 0, 0, 0]);
    let Message::Clock(t) = m else {
        panic!("all-zero BWTIME must stay a clock message")
    };
    assert!(t.is_blank());
    let Message::Clock(real) =
        single(&[0x8d, 0x00, 0x0a, 0x20, 0x03, 0x02, 0x20, 0x03, 0x01, 0x09])
    else {
        panic!("not a clock reading")
    };
    assert!(!real.is_blank());
}

#[test]
fn clock_acks_rebuild_bit7() {
    // Version ack (dgt.md §2.3): ack0 0x10, ack1 = command 0x09, ack2 = 0x21 →
    // version 2.1 (a DGT 3000). Both hours nibbles carry 0x0a.
    let bytes = [0x8d, 0x00, 0x0a, 0x0a, 0x10, 0x09, 0x0a, 0x21, 0x00, 0x00];
    let ack = ClockAck {
        bytes: [0x10, 0x09, 0x21, 0x00],
    };
    assert_eq!(single(&bytes), Message::ClockAck(ack));
    assert_eq!(enc(&Message::ClockAck(ack)), bytes);
    assert_eq!((ack.bytes[2] >> 4, ack.bytes[2] & 0x0f), (2, 1));
    // Button "run" (ack1 0x88, ack3 0x33): ack1's bit 7 travels in bit 5 of d3.
    let button = [0x8d, 0x00, 0x0a, 0x0a, 0x10, 0x08, 0x2a, 0x00, 0x33, 0x00];
    assert_eq!(
        single(&button),
        Message::ClockAck(ClockAck {
            bytes: [0x10, 0x88, 0x00, 0x33]
        })
    );
    // Only one hours nibble at 0x0a is enough; ack2's bit 7 from bit 4 of d0.
    let one = [0x8d, 0x00, 0x0a, 0x10, 0x40, 0x0a, 0x0a, 0x01, 0x02, 0x00];
    assert_eq!(
        single(&one),
        Message::ClockAck(ClockAck {
            bytes: [0x40, 0x0a, 0x81, 0x02]
        })
    );
}

#[test]
fn board_dump_vector_start_position() {
    let mut bytes = vec![0x86, 0x00, 0x43];
    bytes.extend_from_slice(&[0x08, 0x09, 0x0a, 0x0c, 0x0b, 0x0a, 0x09, 0x08]);
    bytes.extend_from_slice(&[0x07; 8]);
    bytes.extend_from_slice(&[0x00; 32]);
    bytes.extend_from_slice(&[0x01; 8]);
    bytes.extend_from_slice(&[0x02, 0x03, 0x04, 0x06, 0x05, 0x04, 0x03, 0x02]);
    let want = Message::BoardDump(Picture::from_board(&Board::default()));
    assert_eq!(single(&bytes), want);
    assert_eq!(enc(&want), bytes);
}

#[test]
fn identity_messages() {
    // Serial "01025" and its bus address 1025 = 0x08 0x01 (dgt.md §1.4).
    assert_eq!(
        single(&[0x91, 0x00, 0x08, b'0', b'1', b'0', b'2', b'5']),
        Message::SerialNumber("01025".into())
    );
    // The 1998 header's 12-byte form: digits, space, version.
    assert_eq!(
        single(&[0x91, 0x00, 0x0c, b'0', b'0', b'1', b'3', b'7', b' ', b'1', b'.', b'0']),
        Message::SerialNumber("00137".into())
    );
    assert!(matches!(
        decode_one(
            Mode::Single,
            &[0x91, 0x00, 0x08, b'0', b'x', b'0', b'2', b'5']
        ),
        Err(DecodeError::BadSerial { .. })
    ));
    // Found by the fuzzer: fewer than 5 digits before the space is not a serial,
    // nor are 6 digits.
    assert!(matches!(
        decode_one(
            Mode::Single,
            &[0x91, 0x00, 0x09, b'2', b' ', b'0', b'2', b'5', b'7']
        ),
        Err(DecodeError::BadSerial { .. })
    ));
    assert!(matches!(
        decode_one(
            Mode::Single,
            &[0x91, 0x00, 0x09, b'0', b'1', b'0', b'2', b'5', b'7']
        ),
        Err(DecodeError::BadSerial { .. })
    ));
    assert_eq!(
        single(&[0x90, 0x00, 0x05, 0x08, 0x01]),
        Message::BusAddress(1025)
    );
    assert_eq!(
        enc(&Message::BusAddress(1025)),
        [0x90, 0x00, 0x05, 0x08, 0x01]
    );
    assert_eq!(
        single(&[0x93, 0x00, 0x05, 0x01, 0x02]),
        Message::Version { major: 1, minor: 2 }
    );
    let long = b"3.250010001";
    let mut bytes = vec![0xa2, 0x00, 3 + long.len() as u8];
    bytes.extend_from_slice(long);
    assert_eq!(
        single(&bytes),
        Message::LongSerialNumber("3.250010001".into())
    );
    let tm = Message::Trademark("Digital Game Technology".into());
    let b = enc(&tm);
    assert_eq!(&b[..3], &[0x92, 0x00, 3 + 23]);
    assert_eq!(single(&b), tm);
}

#[test]
fn unknown_and_draughts_messages_are_kept() {
    // Pegasus hardware version (0x96) is not in the DGT header: kept, not dropped.
    assert_eq!(
        single(&[0x96, 0x00, 0x05, 0x01, 0x02]),
        Message::Unknown {
            id: 0x96,
            payload: vec![1, 2]
        }
    );
    let mut d50 = vec![0x94, 0x00, 53];
    d50.extend((0..50).map(|i| (i % 11) as u8));
    assert_eq!(
        single(&d50),
        Message::Draughts50 {
            id: 0x94,
            fields: d50[3..].to_vec()
        }
    );
    // A 100-field draughts dump shares the chess dump's id.
    let mut d100 = vec![0x86, 0x00, 103];
    d100.extend([0u8; 100]);
    assert!(
        matches!(single(&d100), Message::Unknown { id: 0x86, ref payload } if payload.len() == 100)
    );
}

#[test]
fn bus_board_dump_vector() {
    // 0x83, length 70, address 1025, 64 codes, checksum.
    let mut frame = vec![0x83, 0x00, 70, 0x08, 0x01];
    frame.extend_from_slice(&[0x08, 0x09, 0x0a, 0x0c, 0x0b, 0x0a, 0x09, 0x08]);
    frame.extend_from_slice(&[0x07; 8]);
    frame.extend_from_slice(&[0x00; 32]);
    frame.extend_from_slice(&[0x01; 8]);
    frame.extend_from_slice(&[0x02, 0x03, 0x04, 0x06, 0x05, 0x04, 0x03, 0x02]);
    let sum = frame.iter().fold(0u8, |a, &b| a.wrapping_add(b)) & 0x7f;
    frame.push(sum);
    let want = BusMessage {
        address: 1025,
        reply: BusReply::BoardDump(Picture::from_board(&Board::default())),
    };
    assert_eq!(bus(&frame), want);
    assert_eq!(enc_bus(&want), frame);
}

#[test]
fn battery_payload_is_kept_whole() {
    // The 9-byte layout (dgt.md §7 conflict: header constant says 7 in total).
    let bytes = [0xa0, 0x00, 0x0c, 90, 0x7f, 0x7f, 1, 2, 0, 3, 4, 0x02];
    let m = single(&bytes);
    let Message::BatteryStatus(b) = &m else {
        panic!("not a battery status")
    };
    assert_eq!(b.percent(), Some(90));
    assert_eq!(b.payload.len(), 9);
    assert_eq!(enc(&m), bytes);
    // The 4-byte form the header constant implies still decodes.
    assert_eq!(
        single(&[0xa0, 0x00, 0x07, 55, 1, 2, 3]),
        Message::BatteryStatus(BatteryStatus {
            payload: vec![55, 1, 2, 3]
        })
    );
}

#[test]
fn ee_moves_vector() {
    // Power-up (three NOPs, POWERUP), a white pawn on a2 (field 48), a black king
    // lifted from e8 with the "recent" bit, begin position, the left clock halted at
    // 0:03:00, EOF.
    let bytes = [
        0x8f, 0x00, 0x12, 0x7f, 0x7f, 0x7f, 0x6a, 0x41, 48, 0x50, 4, 0x6f, 0x70, 0x03, 0x00, 0x6b,
        0x7a, 0x00,
    ];
    let want = Message::EeMoves(vec![
        EeRecord::Nop,
        EeRecord::Nop,
        EeRecord::Nop,
        EeRecord::PowerUp,
        EeRecord::Field {
            square: Square::A2,
            sensed: piece(Color::White, Role::Pawn),
            recent: false,
        },
        EeRecord::Field {
            square: Square::E8,
            sensed: Sensed::Empty,
            recent: true,
        },
        EeRecord::BeginPos,
        EeRecord::Clock {
            left: true,
            hours: 0,
            minutes: 3,
            seconds: 0,
        },
        EeRecord::Eof,
        EeRecord::BeginPosRotated,
        EeRecord::Nop2,
    ]);
    assert_eq!(single(&bytes), want);
    assert_eq!(enc(&want), bytes);
    // 0x30 starts no record.
    assert!(matches!(
        decode_one(Mode::Single, &[0x8f, 0x00, 0x05, 0x6a, 0x30]),
        Err(DecodeError::BadEeRecord { id: 0x8f, .. })
    ));
    // A field record cut by the end of the message.
    assert!(matches!(
        decode_one(Mode::Single, &[0x8f, 0x00, 0x04, 0x41]),
        Err(DecodeError::BadEeRecord { .. })
    ));
}

#[test]
fn longest_ee_moves_dump_decodes_in_small_chunks() {
    // 0x2000 - 0x100 + 3 = 7939 bytes in total (dgt.md §1.4): the header, 3967
    // two-byte field records, a NOP and EOF.
    let mut records = Vec::new();
    for i in 0..3967u32 {
        records.push(EeRecord::Field {
            square: Square::new(i % 64),
            sensed: if i % 2 == 0 {
                Sensed::Empty
            } else {
                piece(Color::Black, Role::Knight)
            },
            recent: i % 3 == 0,
        });
    }
    records.push(EeRecord::Nop);
    records.push(EeRecord::Eof);
    let m = Message::EeMoves(records);
    let bytes = enc(&m);
    assert_eq!(bytes.len(), 7939);
    assert_eq!(bytes[1..3], [(7939 >> 7) as u8, (7939 & 0x7f) as u8]);
    let cuts: Vec<usize> = (1..bytes.len()).step_by(7).collect();
    let got = decode_chunked(Mode::Single, &bytes, &cuts);
    assert_eq!(got, vec![Ok(Frame::Single(m))]);
}

#[test]
fn bus_vectors() {
    // Ping from board 01025: 87 00 06 08 01, checksum (0x87+0x06+0x08+0x01) & 0x7f.
    let ping = [0x87, 0x00, 0x06, 0x08, 0x01, 0x16];
    let want = BusMessage {
        address: 1025,
        reply: BusReply::Ping,
    };
    assert_eq!(bus(&ping), want);
    assert_eq!(enc_bus(&want), ping);
    let version = [0x89, 0x00, 0x08, 0x08, 0x01, 0x01, 0x02, 0x1d];
    assert_eq!(
        bus(&version),
        BusMessage {
            address: 1025,
            reply: BusReply::Version { major: 1, minor: 2 }
        }
    );
    let mut bad = ping;
    bad[5] = 0x17;
    assert_eq!(
        decode_one(Mode::Bus, &bad),
        Err(DecodeError::BadChecksum {
            id: 0x87,
            address: 1025,
            expected: 0x16,
            found: 0x17
        })
    );
    // The same id means different things per mode: 0x86 is FROM_START in bus mode.
    let from_start = BusMessage {
        address: 7,
        reply: BusReply::FromStart(vec![EeRecord::StartTag, EeRecord::Eof]),
    };
    let b = enc_bus(&from_start);
    assert_eq!(&b[..5], &[0x86, 0x00, 0x08, 0x00, 0x07]);
    assert_eq!(bus(&b), from_start);
    assert!(matches!(
        decode_one(Mode::Single, &b),
        Err(DecodeError::BadLength {
            id: 0x86,
            len: 8,
            ..
        })
    ));
    // A bus BWTIME uses the same 7 bytes as single mode.
    let clock = [
        0x84, 0x00, 0x0d, 0x00, 0x01, 0x20, 0x03, 0x02, 0x20, 0x03, 0x01, 0x09, 0x00,
    ];
    let mut clock = clock.to_vec();
    let last = clock.len() - 1;
    clock[last] = clock[..last].iter().fold(0u8, |a, &b| a.wrapping_add(b)) & 0x7f;
    assert!(matches!(bus(&clock).reply, BusReply::Clock(t) if t.left.seconds == 1 && t.running));
}

#[test]
fn resynchronisation() {
    let fu = [0x8e, 0x00, 0x05, 52, 0x00];
    // Garbage, a message cut by the next one, garbage, a good one.
    let mut bytes = vec![0x01, 0x02, 0x03];
    bytes.extend_from_slice(&[0x86, 0x00, 0x43, 0x00, 0x00]);
    bytes.extend_from_slice(&fu);
    bytes.extend_from_slice(&[0x7f; 4]);
    bytes.extend_from_slice(&fu);
    let got = decode_chunked(Mode::Single, &bytes, &[1, 4, 9]);
    let e2 = Ok(Frame::Single(Message::FieldUpdate {
        square: Square::E2,
        sensed: Sensed::Empty,
    }));
    assert_eq!(
        got,
        vec![
            Err(DecodeError::Garbage { count: 3 }),
            Err(DecodeError::Cut { id: 0x86, len: 5 }),
            e2.clone(),
            Err(DecodeError::Garbage { count: 4 }),
            e2,
        ]
    );
    // A high byte inside the length field cuts the header.
    let got = decode_chunked(Mode::Single, &[0x8d, 0x00, 0x8e, 0x00, 0x05, 52, 0x00], &[]);
    assert_eq!(got[0], Err(DecodeError::Cut { id: 0x8d, len: 2 }));
    assert_eq!(got.len(), 2);
    // Need more bytes is None, never an error.
    let mut d = Decoder::new(Mode::Single);
    d.push(&fu[..4]);
    assert_eq!(d.next(), None);
    d.push(&fu[4..]);
    assert!(matches!(d.next(), Some(Ok(_))));
    assert_eq!(d.next(), None);
}

#[test]
fn set_mode_switches_framing() {
    let mut d = Decoder::new(Mode::Single);
    assert_eq!(d.mode(), Mode::Single);
    d.set_mode(Mode::Bus);
    assert_eq!(d.mode(), Mode::Bus);
    d.push(&[0x87, 0x00, 0x06, 0x08, 0x01, 0x16]);
    assert!(matches!(d.next(), Some(Ok(Frame::Bus(_)))));
}

// ---------------------------------------------------------------- real data

/// Standard base64 (the recording's alphabet, with padding).
fn base64(line: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c:#04x}"),
    };
    let digits: Vec<u8> = line.bytes().filter(|&c| c != b'=').map(val).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &d) in chunk.iter().enumerate() {
            acc |= u32::from(d) << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    out
}

/// Just enough JSON for the recording's flat lines.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Bool(bool),
    Num(u64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn parse(s: &str) -> Json {
        let b = s.as_bytes();
        let mut i = 0;
        let v = Json::value(b, &mut i);
        Json::ws(b, &mut i);
        assert_eq!(i, b.len(), "trailing bytes in {s}");
        v
    }
    fn ws(b: &[u8], i: &mut usize) {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }
    fn value(b: &[u8], i: &mut usize) -> Json {
        Json::ws(b, i);
        match b[*i] {
            b'{' => {
                *i += 1;
                let mut fields = Vec::new();
                loop {
                    Json::ws(b, i);
                    if b[*i] == b'}' {
                        *i += 1;
                        return Json::Obj(fields);
                    }
                    let Json::Str(k) = Json::value(b, i) else {
                        panic!("key")
                    };
                    Json::ws(b, i);
                    assert_eq!(b[*i], b':');
                    *i += 1;
                    fields.push((k, Json::value(b, i)));
                    Json::ws(b, i);
                    if b[*i] == b',' {
                        *i += 1;
                    }
                }
            }
            b'[' => {
                *i += 1;
                let mut items = Vec::new();
                loop {
                    Json::ws(b, i);
                    if b[*i] == b']' {
                        *i += 1;
                        return Json::Arr(items);
                    }
                    items.push(Json::value(b, i));
                    Json::ws(b, i);
                    if b[*i] == b',' {
                        *i += 1;
                    }
                }
            }
            b'"' => {
                let end = *i
                    + 1
                    + b[*i + 1..]
                        .iter()
                        .position(|&c| c == b'"')
                        .expect("string end");
                let s = String::from_utf8(b[*i + 1..end].to_vec()).expect("utf8");
                *i = end + 1;
                Json::Str(s)
            }
            b't' => {
                *i += 4;
                Json::Bool(true)
            }
            b'f' => {
                *i += 5;
                Json::Bool(false)
            }
            _ => {
                let start = *i;
                while *i < b.len() && b[*i].is_ascii_digit() {
                    *i += 1;
                }
                Json::Num(
                    std::str::from_utf8(&b[start..*i])
                        .unwrap()
                        .parse()
                        .expect("number"),
                )
            }
        }
    }
    fn get(&self, key: &str) -> &Json {
        match self {
            Json::Obj(f) => {
                &f.iter()
                    .find(|(k, _)| k == key)
                    .unwrap_or_else(|| panic!("no {key}"))
                    .1
            }
            _ => panic!("not an object"),
        }
    }
    fn has(&self, key: &str) -> bool {
        matches!(self, Json::Obj(f) if f.iter().any(|(k, _)| k == key))
    }
    fn bool(&self, key: &str) -> bool {
        match self.get(key) {
            Json::Bool(b) => *b,
            other => panic!("{key} is not a bool: {other:?}"),
        }
    }
    fn num(&self, key: &str) -> u8 {
        match self.get(key) {
            Json::Num(n) => u8::try_from(*n).expect("small number"),
            other => panic!("{key} is not a number: {other:?}"),
        }
    }
    fn str(&self, key: &str) -> &str {
        match self.get(key) {
            Json::Str(s) => s,
            other => panic!("{key} is not a string: {other:?}"),
        }
    }
}

fn side_matches(t: &DgtSideTime, j: &Json) -> bool {
    t.hours == j.num("hours")
        && t.minutes == j.num("minutes")
        && t.seconds == j.num("seconds")
        && t.flag_fallen == j.bool("final_flag")
        && t.flag_shown == j.bool("flag")
        && t.time_per_move == j.bool("time_per_move")
}

#[test]
fn real_recording_matches_the_other_driver() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/eboard/dgtdriver-recordings"
    );
    let inbytes = std::fs::read_to_string(format!("{dir}/1.inbytes")).expect("read 1.inbytes");
    let json = std::fs::read_to_string(format!("{dir}/1.json")).expect("read 1.json");
    let mut d = Decoder::new(Mode::Single);
    let mut frames = Vec::new();
    for line in inbytes.lines().filter(|l| !l.trim().is_empty()) {
        d.push(&base64(line.trim()));
        while let Some(r) = d.next() {
            frames.push(r.expect("the real recording decodes without errors"));
        }
    }
    let expected: Vec<Json> = json
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Json::parse)
        .collect();
    assert_eq!(
        frames.len(),
        expected.len(),
        "one decoded message per recorded message"
    );
    let (mut boards, mut clocks, mut fields) = (0, 0, 0);
    for (n, (f, j)) in frames.iter().zip(&expected).enumerate() {
        let Frame::Single(m) = f else {
            panic!("bus frame in single mode")
        };
        match m {
            Message::BoardDump(p) => {
                let Json::Arr(cells) = j.get("board") else {
                    panic!("line {n}: board")
                };
                assert_eq!(cells.len(), 64);
                for (field, c) in cells.iter().enumerate() {
                    let Json::Str(c) = c else { panic!("cell") };
                    let got = p.get(field_to_square(field as u8)).char().to_string();
                    assert_eq!(&got, c, "line {n}: field {field}");
                }
                boards += 1;
            }
            Message::Clock(t) => {
                assert!(
                    side_matches(&t.left, j.get("left_clock")),
                    "line {n}: left {t:?} vs {j:?}"
                );
                assert!(
                    side_matches(&t.right, j.get("right_clock")),
                    "line {n}: right {t:?} vs {j:?}"
                );
                assert_eq!(t.running, j.bool("clock_running"), "line {n}");
                assert_eq!(t.lever_right_high, j.bool("right_high"), "line {n}");
                assert_eq!(t.battery_low, j.bool("battery_indicator"), "line {n}");
                assert_eq!(t.left_turn, j.bool("left_turn"), "line {n}");
                assert_eq!(t.right_turn, j.bool("right_turn"), "line {n}");
                assert_eq!(t.no_clock, j.bool("no_clock"), "line {n}");
                clocks += 1;
            }
            Message::FieldUpdate { square, sensed } => {
                assert!(
                    j.has("field"),
                    "line {n}: expected {j:?}, got a field update"
                );
                assert_eq!(square.to_string(), j.str("field"), "line {n}");
                assert_eq!(sensed.char().to_string(), j.str("piece"), "line {n}");
                fields += 1;
            }
            other => panic!("line {n}: unexpected {other:?}"),
        }
    }
    assert_eq!((boards, clocks, fields), (1, 323, 131));
    // The whole stream again in one push: the decoder must not depend on chunking.
    let all: Vec<u8> = inbytes
        .lines()
        .filter(|l| !l.trim().is_empty())
        .flat_map(|l| base64(l.trim()))
        .collect();
    let again = decode_chunked(Mode::Single, &all, &[]);
    assert_eq!(again, frames.into_iter().map(Ok).collect::<Vec<_>>());
}

// ---------------------------------------------------------------- properties

fn arb_sensed() -> impl Strategy<Value = Sensed> {
    // Occupied is excluded: it encodes as 0x01 and decodes as a white pawn.
    (0u8..16).prop_map(|c| {
        let color = if c > 6 { Color::Black } else { Color::White };
        match c {
            0 => Sensed::Empty,
            13 => Sensed::Magic(MagicPiece::Draw),
            14 => Sensed::Magic(MagicPiece::WhiteWins),
            15 => Sensed::Magic(MagicPiece::BlackWins),
            _ => piece(
                color,
                [
                    Role::Pawn,
                    Role::Rook,
                    Role::Knight,
                    Role::Bishop,
                    Role::King,
                    Role::Queen,
                ][usize::from((c - 1) % 6)],
            ),
        }
    })
}

fn arb_square() -> impl Strategy<Value = Square> {
    (0u32..64).prop_map(Square::new)
}

fn arb_picture() -> impl Strategy<Value = Picture> {
    prop::collection::vec(arb_sensed(), 64).prop_map(|cells| {
        let mut p = Picture::empty();
        for (i, s) in cells.into_iter().enumerate() {
            p.set(Square::new(i as u32), s);
        }
        p
    })
}

fn arb_side() -> impl Strategy<Value = DgtSideTime> {
    (0u8..10, 0u8..60, 0u8..60, any::<[bool; 3]>()).prop_map(|(hours, minutes, seconds, f)| {
        DgtSideTime {
            hours,
            minutes,
            seconds,
            flag_fallen: f[0],
            time_per_move: f[1],
            flag_shown: f[2],
        }
    })
}

fn arb_bwtime() -> impl Strategy<Value = BwTime> {
    (arb_side(), arb_side(), any::<[bool; 6]>()).prop_map(|(right, left, s)| BwTime {
        right,
        left,
        running: s[0],
        lever_right_high: s[1],
        battery_low: s[2],
        left_turn: s[3],
        right_turn: s[4],
        no_clock: s[5],
    })
}

fn arb_ack() -> impl Strategy<Value = ClockAck> {
    any::<[u8; 4]>().prop_map(|bytes| ClockAck { bytes })
}

fn arb_ee() -> impl Strategy<Value = EeRecord> {
    prop_oneof![
        4 => (arb_square(), arb_sensed(), any::<bool>())
            .prop_map(|(square, sensed, recent)| EeRecord::Field { square, sensed, recent }),
        2 => (any::<bool>(), 0u8..10, 0u8..60, 0u8..60)
            .prop_map(|(left, hours, minutes, seconds)| EeRecord::Clock { left, hours, minutes, seconds }),
        1 => prop::sample::select(vec![
            EeRecord::PowerUp, EeRecord::Eof, EeRecord::FourRows, EeRecord::EmptyBoard,
            EeRecord::Downloaded, EeRecord::BeginPos, EeRecord::BeginPosRotated, EeRecord::StartTag,
            EeRecord::WatchdogAction, EeRecord::Future1, EeRecord::Future2, EeRecord::Nop, EeRecord::Nop2,
        ]),
    ]
}

fn bytes7(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..0x80, 0..max)
}

fn arb_message() -> impl Strategy<Value = Message> {
    const KNOWN: [u8; 13] = [
        id::BOARD_DUMP,
        id::BWTIME,
        id::FIELD_UPDATE,
        id::EE_MOVES,
        id::BUSADRES,
        id::SERIALNR,
        id::TRADEMARK,
        id::VERSION,
        id::BOARD_DUMP_50B,
        id::BOARD_DUMP_50W,
        id::BATTERY_STATUS,
        id::LONG_SERIALNR,
        0x80,
    ];
    prop_oneof![
        arb_picture().prop_map(Message::BoardDump),
        (arb_square(), arb_sensed())
            .prop_map(|(square, sensed)| Message::FieldUpdate { square, sensed }),
        arb_bwtime().prop_map(Message::Clock),
        arb_ack().prop_map(Message::ClockAck),
        prop::collection::vec(arb_ee(), 0..40).prop_map(Message::EeMoves),
        (0u16..1 << 14).prop_map(Message::BusAddress),
        "[0-9]{5}".prop_map(Message::SerialNumber),
        "[ -~]{0,12}".prop_map(Message::LongSerialNumber),
        "[ -~]{0,40}".prop_map(Message::Trademark),
        (0u8..0x80, 0u8..0x80).prop_map(|(major, minor)| Message::Version { major, minor }),
        bytes7(12).prop_map(|payload| Message::BatteryStatus(BatteryStatus { payload })),
        (
            prop::sample::select(vec![id::BOARD_DUMP_50B, id::BOARD_DUMP_50W]),
            prop::collection::vec(0u8..0x80, 50)
        )
            .prop_map(|(id, fields)| Message::Draughts50 { id, fields }),
        (
            (0x81u8..=0xff).prop_filter("unknown id", |i| !KNOWN.contains(i)),
            bytes7(30)
        )
            .prop_map(|(id, payload)| Message::Unknown { id, payload }),
    ]
}

fn arb_bus_message() -> impl Strategy<Value = BusMessage> {
    let reply = prop_oneof![
        arb_picture().prop_map(BusReply::BoardDump),
        arb_bwtime().prop_map(BusReply::Clock),
        arb_ack().prop_map(BusReply::ClockAck),
        prop::collection::vec(arb_ee(), 0..30).prop_map(BusReply::Changes),
        prop::collection::vec(arb_ee(), 0..30).prop_map(BusReply::FromStart),
        Just(BusReply::Ping),
        Just(BusReply::StartGameWritten),
        (0u8..0x80, 0u8..0x80).prop_map(|(major, minor)| BusReply::Version { major, minor }),
        prop::collection::vec(0u8..0x80, 50).prop_map(BusReply::Draughts50),
        (
            (0x80u8..=0xff).prop_filter("unknown id", |i| !(0x83..=0x8a).contains(i)),
            bytes7(30)
        )
            .prop_map(|(id, data)| BusReply::Unknown { id, data }),
    ];
    (0u16..1 << 14, reply).prop_map(|(address, reply)| BusMessage { address, reply })
}

fn arb_cuts(max: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..max, 0..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn messages_roundtrip_in_any_chunking(ms in prop::collection::vec(arb_message(), 1..6), cuts in arb_cuts(600)) {
        let mut bytes = Vec::new();
        for m in &ms {
            m.encode(&mut bytes);
        }
        let got = decode_chunked(Mode::Single, &bytes, &cuts);
        prop_assert_eq!(got, ms.into_iter().map(|m| Ok(Frame::Single(m))).collect::<Vec<_>>());
    }

    #[test]
    fn bus_messages_roundtrip_in_any_chunking(ms in prop::collection::vec(arb_bus_message(), 1..6), cuts in arb_cuts(600)) {
        let mut bytes = Vec::new();
        for m in &ms {
            m.encode(&mut bytes);
        }
        let got = decode_chunked(Mode::Bus, &bytes, &cuts);
        prop_assert_eq!(got, ms.into_iter().map(|m| Ok(Frame::Bus(m))).collect::<Vec<_>>());
    }

    #[test]
    fn low_garbage_around_frames_loses_nothing(
        ms in prop::collection::vec((bytes7(6), arb_message()), 1..6),
        tail in bytes7(6),
        cuts in arb_cuts(600),
    ) {
        let mut bytes = Vec::new();
        let mut want = Vec::new();
        for (garbage, m) in &ms {
            if !garbage.is_empty() {
                want.push(Err(DecodeError::Garbage { count: garbage.len() }));
            }
            bytes.extend_from_slice(garbage);
            m.encode(&mut bytes);
            want.push(Ok(Frame::Single(m.clone())));
        }
        bytes.extend_from_slice(&tail);
        let got = decode_chunked(Mode::Single, &bytes, &cuts);
        // Trailing garbage is only reported once a message start shows it ended.
        prop_assert_eq!(got, want);
    }
}

/// The valid frames appear, in order, among the decoded frames.
fn is_subsequence(want: &[Frame], got: &[Result<Frame, DecodeError>]) -> bool {
    let mut it = got.iter().filter_map(|r| r.as_ref().ok());
    want.iter().all(|w| it.any(|g| g == w))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    #[test]
    fn any_garbage_before_frames_loses_no_frame(
        ms in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..12), arb_message()), 1..5),
        cuts in arb_cuts(400),
    ) {
        let mut bytes = Vec::new();
        for (garbage, m) in &ms {
            bytes.extend_from_slice(garbage);
            m.encode(&mut bytes);
        }
        let got = decode_chunked(Mode::Single, &bytes, &cuts);
        let want: Vec<Frame> = ms.into_iter().map(|(_, m)| Frame::Single(m)).collect();
        prop_assert!(is_subsequence(&want, &got), "lost a frame: {:?}", got);
    }

    #[test]
    fn any_garbage_before_bus_frames_loses_no_frame(
        ms in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..12), arb_bus_message()), 1..5),
        cuts in arb_cuts(400),
    ) {
        let mut bytes = Vec::new();
        for (garbage, m) in &ms {
            bytes.extend_from_slice(garbage);
            m.encode(&mut bytes);
        }
        let got = decode_chunked(Mode::Bus, &bytes, &cuts);
        let want: Vec<Frame> = ms.into_iter().map(|(_, m)| Frame::Bus(m)).collect();
        prop_assert!(is_subsequence(&want, &got), "lost a frame: {:?}", got);
    }
}

/// Bytes shaped like DGT traffic: high bytes that are real ids, small lengths, so
/// the framing paths (cut, bad length, bad payload) are reached, not only garbage.
fn dgt_ish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => 0u8..0x10,
        2 => prop::sample::select(vec![0x83, 0x84, 0x85, 0x86, 0x87, 0x89, 0x8d, 0x8e, 0x8f, 0x91, 0x93, 0xa0]),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(25_000))]

    #[test]
    fn arbitrary_bytes_never_panic_single(bytes in prop::collection::vec(any::<u8>(), 0..96), cuts in arb_cuts(96)) {
        decode_chunked(Mode::Single, &bytes, &cuts);
    }

    #[test]
    fn arbitrary_bytes_never_panic_bus(bytes in prop::collection::vec(any::<u8>(), 0..96), cuts in arb_cuts(96)) {
        decode_chunked(Mode::Bus, &bytes, &cuts);
    }

    #[test]
    fn dgt_shaped_bytes_never_panic(bytes in dgt_ish_bytes(), cuts in arb_cuts(120), bus in any::<bool>()) {
        let mode = if bus { Mode::Bus } else { Mode::Single };
        let got = decode_chunked(mode, &bytes, &cuts);
        // Whatever decodes re-encodes to bytes that decode to the same thing.
        for f in got.into_iter().flatten() {
            let mut b = Vec::new();
            match &f {
                Frame::Single(m) => m.encode(&mut b),
                Frame::Bus(m) => m.encode(&mut b),
            }
            let again = decode_chunked(mode, &b, &[]);
            prop_assert_eq!(again, vec![Ok(f)]);
        }
    }
}
