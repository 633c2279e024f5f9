//! Byte-level building blocks shared by the DGT encoders and decoders: piece
//! codes, BCD, BWTIME and clock-ack layouts, EEPROM event records.
//!
//! Everything here is a pure function on bytes so the hot decoding path can call it
//! without allocating, and so each rule lives in exactly one place for both
//! directions.

use shakmaty::{Color, Piece, Role, Square};

use super::types::{BwTime, ClockAck, DgtSideTime, EeRecord};
use crate::clock::{ClockReading, ClockSide, SideTime};
use crate::picture::{field_to_square, square_to_field, MagicPiece, Sensed};

/// The DGT piece code (dgt.md §1.5) for what a sensor reports.
///
/// DGT has no code for "occupied, identity unknown". Occupancy-only boards that
/// speak this protocol (the Pegasus) send `0x01` for an occupied square, so
/// [`Sensed::Occupied`] encodes as `0x01`; decoding `0x01` always yields a white
/// pawn, which is why an occupancy reading does not survive a round trip.
pub fn piece_code(sensed: Sensed) -> u8 {
    match sensed {
        Sensed::Empty => 0x00,
        Sensed::Occupied => 0x01,
        Sensed::Magic(MagicPiece::Draw) => 0x0d,
        Sensed::Magic(MagicPiece::WhiteWins) => 0x0e,
        Sensed::Magic(MagicPiece::BlackWins) => 0x0f,
        Sensed::Piece(p) => {
            // Note the DGT order: rook, knight, bishop, king, queen.
            let role = match p.role {
                Role::Pawn => 1,
                Role::Rook => 2,
                Role::Knight => 3,
                Role::Bishop => 4,
                Role::King => 5,
                Role::Queen => 6,
            };
            match p.color {
                Color::White => role,
                Color::Black => role + 6,
            }
        }
    }
}

/// What a DGT piece code means, or `None` for a code outside `0x00..=0x0f`.
#[inline]
pub fn sensed_from_code(code: u8) -> Option<Sensed> {
    (code <= 0x0f).then(|| sensed_from_nibble(code))
}

/// What the low four bits of a piece code mean (every 4-bit value is a code).
#[inline]
pub fn sensed_from_nibble(code: u8) -> Sensed {
    // A table keeps the hot path (board dumps, field updates) branch-free.
    const TABLE: [Sensed; 16] = {
        const fn p(color: Color, role: Role) -> Sensed {
            Sensed::Piece(Piece { color, role })
        }
        [
            Sensed::Empty,
            p(Color::White, Role::Pawn),
            p(Color::White, Role::Rook),
            p(Color::White, Role::Knight),
            p(Color::White, Role::Bishop),
            p(Color::White, Role::King),
            p(Color::White, Role::Queen),
            p(Color::Black, Role::Pawn),
            p(Color::Black, Role::Rook),
            p(Color::Black, Role::Knight),
            p(Color::Black, Role::Bishop),
            p(Color::Black, Role::King),
            p(Color::Black, Role::Queen),
            Sensed::Magic(MagicPiece::Draw),
            Sensed::Magic(MagicPiece::WhiteWins),
            Sensed::Magic(MagicPiece::BlackWins),
        ]
    };
    TABLE[usize::from(code & 0x0f)]
}

/// Two BCD digits to binary, or `None` if either nibble is above 9 or the value
/// is above `max`.
#[inline]
pub fn from_bcd(byte: u8, max: u8) -> Option<u8> {
    // A table: BWTIME arrives every second per board and is the most frequent
    // message, so its six BCD bytes are worth a lookup instead of arithmetic.
    const BCD: [u8; 256] = {
        let mut t = [0xff; 256];
        let mut i = 0;
        while i < 256 {
            let (tens, units) = (i >> 4, i & 0x0f);
            if tens <= 9 && units <= 9 {
                t[i] = (tens * 10 + units) as u8;
            }
            i += 1;
        }
        t
    };
    let v = BCD[usize::from(byte)];
    (v <= max).then_some(v)
}

/// Binary 0..=99 to two BCD digits (values above 99 are clamped: callers only pass
/// minutes and seconds).
pub fn to_bcd(value: u8) -> u8 {
    let v = value.min(99);
    ((v / 10) << 4) | (v % 10)
}

/// Whether a 7-byte BWTIME payload is a clock ack rather than times (dgt.md §2.3):
/// an hours nibble of 10 cannot be a time.
pub fn bwtime_is_ack(d: &[u8; 7]) -> bool {
    (d[0] & 0x0f) == 0x0a || (d[3] & 0x0f) == 0x0a
}

/// Rebuilds the four ack bytes from a BWTIME payload (dgt.md §2.3).
pub fn ack_from_bwtime(d: &[u8; 7]) -> ClockAck {
    ClockAck {
        bytes: [
            (d[1] & 0x7f) | ((d[3] << 3) & 0x80),
            (d[2] & 0x7f) | ((d[3] << 2) & 0x80),
            (d[4] & 0x7f) | ((d[0] << 3) & 0x80),
            (d[5] & 0x7f) | ((d[0] << 2) & 0x80),
        ],
    }
}

/// The BWTIME payload that carries `ack`: the inverse of [`ack_from_bwtime`], with
/// the hours nibble `0x0a` in both d0 and d3 (either one marks an ack; a clock
/// sets both) and a zero status byte.
pub fn bwtime_from_ack(ack: &ClockAck) -> [u8; 7] {
    let [a0, a1, a2, a3] = ack.bytes;
    let d0 = 0x0a | ((a2 & 0x80) >> 3) | ((a3 & 0x80) >> 2);
    let d3 = 0x0a | ((a0 & 0x80) >> 3) | ((a1 & 0x80) >> 2);
    [d0, a0 & 0x7f, a1 & 0x7f, d3, a2 & 0x7f, a3 & 0x7f, 0]
}

/// Why a BWTIME payload could not be read as times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BwTimeFault {
    /// Byte `index` (0..=6 of the payload) is not valid BCD / hours.
    Bcd { index: u8, byte: u8 },
}

#[inline(always)]
fn side_from(
    flags_hours: u8,
    minutes: u8,
    seconds: u8,
    base: u8,
) -> Result<DgtSideTime, BwTimeFault> {
    let hours = flags_hours & 0x0f;
    if hours > 9 {
        return Err(BwTimeFault::Bcd {
            index: base,
            byte: flags_hours,
        });
    }
    let minutes = from_bcd(minutes, 59).ok_or(BwTimeFault::Bcd {
        index: base + 1,
        byte: minutes,
    })?;
    let seconds = from_bcd(seconds, 59).ok_or(BwTimeFault::Bcd {
        index: base + 2,
        byte: seconds,
    })?;
    Ok(DgtSideTime {
        hours,
        minutes,
        seconds,
        flag_fallen: flags_hours & 0x10 != 0,
        time_per_move: flags_hours & 0x20 != 0,
        flag_shown: flags_hours & 0x40 != 0,
    })
}

/// Reads a BWTIME payload that is not an ack as clock times, validating BCD.
#[inline(always)]
pub fn bwtime_from_payload(d: &[u8; 7]) -> Result<BwTime, BwTimeFault> {
    let status = d[6];
    Ok(BwTime {
        right: side_from(d[0], d[1], d[2], 0)?,
        left: side_from(d[3], d[4], d[5], 3)?,
        running: status & 0x01 != 0,
        lever_right_high: status & 0x02 != 0,
        battery_low: status & 0x04 != 0,
        left_turn: status & 0x08 != 0,
        right_turn: status & 0x10 != 0,
        no_clock: status & 0x20 != 0,
    })
}

fn side_bytes(s: &DgtSideTime) -> [u8; 3] {
    let mut b0 = s.hours.min(9);
    if s.flag_fallen {
        b0 |= 0x10;
    }
    if s.time_per_move {
        b0 |= 0x20;
    }
    if s.flag_shown {
        b0 |= 0x40;
    }
    [b0, to_bcd(s.minutes.min(59)), to_bcd(s.seconds.min(59))]
}

/// The 7-byte BWTIME payload for `t` (out-of-range values are clamped so the bytes
/// stay valid: hours to 9, minutes and seconds to 59).
pub fn bwtime_payload(t: &BwTime) -> [u8; 7] {
    let r = side_bytes(&t.right);
    let l = side_bytes(&t.left);
    let status = u8::from(t.running)
        | u8::from(t.lever_right_high) << 1
        | u8::from(t.battery_low) << 2
        | u8::from(t.left_turn) << 3
        | u8::from(t.right_turn) << 4
        | u8::from(t.no_clock) << 5;
    [r[0], r[1], r[2], l[0], l[1], l[2], status]
}

impl BwTime {
    /// An all-zero BWTIME: Bluetooth firmware 2.10 sends one right after a clock
    /// command (dgt.md §1.6). It says nothing about the clock; callers ignore it.
    pub fn is_blank(&self) -> bool {
        *self == BwTime::default()
    }
}

impl From<&DgtSideTime> for SideTime {
    fn from(s: &DgtSideTime) -> SideTime {
        // DGT clocks report whole seconds.
        let secs = u64::from(s.hours) * 3600 + u64::from(s.minutes) * 60 + u64::from(s.seconds);
        SideTime {
            millis: secs * 1000,
            flag_fallen: s.flag_fallen,
            flag_shown: s.flag_shown,
            time_per_move: s.time_per_move,
        }
    }
}

impl From<&BwTime> for ClockReading {
    /// Left and right stay physical sides. The lever comes from status bit 1 (set =
    /// right side high), which every source agrees on, unlike the turn bits.
    fn from(t: &BwTime) -> ClockReading {
        ClockReading {
            left: SideTime::from(&t.left),
            right: SideTime::from(&t.right),
            running: t.running,
            lever_high: Some(if t.lever_right_high {
                ClockSide::Right
            } else {
                ClockSide::Left
            }),
            battery_low: t.battery_low,
        }
    }
}

/// Why an EEPROM event stream could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EeFault {
    /// A record starts with a byte no record type uses.
    UnknownTag { offset: usize, byte: u8 },
    /// The stream ends inside a multi-byte record.
    Truncated { offset: usize },
    /// A field record names a field above 63.
    BadField { offset: usize, field: u8 },
    /// A clock record holds invalid BCD.
    BadBcd { offset: usize, byte: u8 },
}

/// Reads an EEPROM event stream (dgt.md §1.7) into `out`.
pub fn decode_ee(data: &[u8], out: &mut Vec<EeRecord>) -> Result<(), EeFault> {
    // A dump holds thousands of records. Writing them into slots made up front
    // (at most one record per byte) and cutting the rest off afterwards avoids a
    // capacity check per record, without unsafe code.
    let base = out.len();
    out.resize(base + data.len(), EeRecord::Nop);
    let (written, result) = decode_ee_into(data, &mut out[base..]);
    out.truncate(base + written);
    result
}

/// Decodes into `slots` (one per data byte); returns how many were written.
fn decode_ee_into(data: &[u8], slots: &mut [EeRecord]) -> (usize, Result<(), EeFault>) {
    let mut k = 0;
    let mut i = 0;
    let result = loop {
        let Some(&b) = data.get(i) else {
            break Ok(());
        };
        // Field records are nearly the whole log: decoded here, branch-light.
        if b & 0xe0 == 0x40 {
            if let Some(&field) = data.get(i + 1) {
                if field < 64 {
                    if let Some(slot) = slots.get_mut(k) {
                        *slot = EeRecord::Field {
                            // Field 0 is a8 (square 56): the rank bits flip.
                            square: Square::new(u32::from(field ^ 56)),
                            sensed: sensed_from_nibble(b),
                            recent: b & 0x10 != 0,
                        };
                    }
                    k += 1;
                    i += 2;
                    continue;
                }
            }
        }
        // Everything else, including the errors of a bad field record.
        match decode_ee_record(data, i) {
            Ok((rec, len)) => {
                // k <= i < data.len() == slots.len(): a record is at least one byte.
                if let Some(slot) = slots.get_mut(k) {
                    *slot = rec;
                }
                k += 1;
                i += len;
            }
            Err(e) => break Err(e),
        }
    };
    (k, result)
}

/// The record starting at `data[i]`, and its length in bytes.
fn decode_ee_record(data: &[u8], i: usize) -> Result<(EeRecord, usize), EeFault> {
    let b = data[i];
    Ok(match b {
        0x40..=0x5f => {
            let field = *data.get(i + 1).ok_or(EeFault::Truncated { offset: i })?;
            if field > 63 {
                return Err(EeFault::BadField {
                    offset: i + 1,
                    field,
                });
            }
            let rec = EeRecord::Field {
                square: field_to_square(field),
                sensed: sensed_from_nibble(b),
                recent: b & 0x10 != 0,
            };
            (rec, 2)
        }
        0x60..=0x69 | 0x70..=0x79 => {
            let (m, s) = match (data.get(i + 1), data.get(i + 2)) {
                (Some(&m), Some(&s)) => (m, s),
                _ => return Err(EeFault::Truncated { offset: i }),
            };
            let minutes = from_bcd(m, 59).ok_or(EeFault::BadBcd {
                offset: i + 1,
                byte: m,
            })?;
            let seconds = from_bcd(s, 59).ok_or(EeFault::BadBcd {
                offset: i + 2,
                byte: s,
            })?;
            let rec = EeRecord::Clock {
                left: b & 0x10 != 0,
                hours: b & 0x0f,
                minutes,
                seconds,
            };
            (rec, 3)
        }
        0x6a => (EeRecord::PowerUp, 1),
        0x6b => (EeRecord::Eof, 1),
        0x6c => (EeRecord::FourRows, 1),
        0x6d => (EeRecord::EmptyBoard, 1),
        0x6e => (EeRecord::Downloaded, 1),
        0x6f => (EeRecord::BeginPos, 1),
        0x7a => (EeRecord::BeginPosRotated, 1),
        0x7b => (EeRecord::StartTag, 1),
        0x7c => (EeRecord::WatchdogAction, 1),
        0x7d => (EeRecord::Future1, 1),
        0x7e => (EeRecord::Future2, 1),
        0x7f => (EeRecord::Nop, 1),
        0x00 => (EeRecord::Nop2, 1),
        _ => return Err(EeFault::UnknownTag { offset: i, byte: b }),
    })
}

/// Appends the bytes of one EEPROM record (inverse of [`decode_ee`]). Values out of
/// range are clamped so the bytes stay decodable (hours to 9, minutes and seconds to
/// 59); a field record stores only the 4-bit piece code, so `Occupied` is written as
/// `0x01` like everywhere else.
pub fn encode_ee(rec: &EeRecord, out: &mut Vec<u8>) {
    match *rec {
        EeRecord::Field {
            square,
            sensed,
            recent,
        } => {
            let tag = 0x40 | if recent { 0x10 } else { 0 } | piece_code(sensed);
            out.extend_from_slice(&[tag, square_to_field(square)]);
        }
        EeRecord::Clock {
            left,
            hours,
            minutes,
            seconds,
        } => {
            let tag = 0x60 | if left { 0x10 } else { 0 } | hours.min(9);
            out.extend_from_slice(&[tag, to_bcd(minutes.min(59)), to_bcd(seconds.min(59))]);
        }
        EeRecord::PowerUp => out.push(0x6a),
        EeRecord::Eof => out.push(0x6b),
        EeRecord::FourRows => out.push(0x6c),
        EeRecord::EmptyBoard => out.push(0x6d),
        EeRecord::Downloaded => out.push(0x6e),
        EeRecord::BeginPos => out.push(0x6f),
        EeRecord::BeginPosRotated => out.push(0x7a),
        EeRecord::StartTag => out.push(0x7b),
        EeRecord::WatchdogAction => out.push(0x7c),
        EeRecord::Future1 => out.push(0x7d),
        EeRecord::Future2 => out.push(0x7e),
        EeRecord::Nop => out.push(0x7f),
        EeRecord::Nop2 => out.push(0x00),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_codes_follow_dgt_order() {
        assert_eq!(piece_code(Sensed::Piece(Role::King.of(Color::White))), 0x05);
        assert_eq!(
            piece_code(Sensed::Piece(Role::Queen.of(Color::White))),
            0x06
        );
        assert_eq!(piece_code(Sensed::Piece(Role::Rook.of(Color::Black))), 0x08);
        assert_eq!(
            piece_code(Sensed::Piece(Role::Queen.of(Color::Black))),
            0x0c
        );
        assert_eq!(piece_code(Sensed::Occupied), 0x01);
        for code in 0..16u8 {
            let s = sensed_from_code(code).expect("codes 0..16 are defined");
            assert_eq!(piece_code(s), code);
        }
        assert_eq!(sensed_from_code(0x10), None);
    }

    #[test]
    fn bcd_rejects_non_decimal_nibbles() {
        assert_eq!(from_bcd(0x59, 59), Some(59));
        assert_eq!(from_bcd(0x60, 59), None);
        assert_eq!(from_bcd(0x0a, 59), None);
        assert_eq!(to_bcd(47), 0x47);
    }

    #[test]
    fn ack_bytes_rebuild_bit7_from_hours_bytes() {
        // ack0 = 0x10 (normal), ack1 = 0x88 (button), ack2 = 0x00, ack3 = 0xb3.
        let ack = ClockAck {
            bytes: [0x10, 0x88, 0x00, 0xb3],
        };
        let d = bwtime_from_ack(&ack);
        // d3 carries ack1's bit 7 in bit 5; d0 carries ack3's bit 7 in bit 5.
        assert_eq!(d, [0x2a, 0x10, 0x08, 0x2a, 0x00, 0x33, 0x00]);
        assert!(bwtime_is_ack(&d));
        assert_eq!(ack_from_bwtime(&d), ack);
    }
}
