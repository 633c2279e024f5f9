//! Host → board direction: command encoders against the board-side parser, and
//! conformance vectors written from the protocol facts (dgt.md §1.3, §2, §3).

use eboard_protocols::dgt::{
    BusCommand, BusCommandKind, ClockCommand, Command, Hms, HostDecodeError, HostDecoder, HostFrame,
};
use proptest::prelude::*;

fn encode(f: &HostFrame) -> Vec<u8> {
    let mut v = Vec::new();
    f.encode(&mut v);
    v
}

fn decode_chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Result<HostFrame, HostDecodeError>> {
    let mut d = HostDecoder::new();
    let mut out = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let end = c.clamp(at, bytes.len());
        d.push(&bytes[at..end]);
        at = end;
        while let Some(r) = d.next() {
            out.push(r);
        }
    }
    out
}

#[test]
fn simple_command_bytes() {
    let cases = [
        (Command::Reset, 0x40),
        (Command::SendClock, 0x41),
        (Command::SendBoard, 0x42),
        (Command::SendUpdate, 0x43),
        (Command::SendUpdateBoard, 0x44),
        (Command::ReturnSerialNumber, 0x45),
        (Command::ReturnBusAddress, 0x46),
        (Command::SendTrademark, 0x47),
        (Command::SendEeMoves, 0x49),
        (Command::ToBusMode, 0x4a),
        (Command::SendUpdateNice, 0x4b),
        (Command::SendBatteryStatus, 0x4c),
        (Command::SendVersion, 0x4d),
        (Command::SendBoard50B, 0x50),
        (Command::Scan50B, 0x51),
        (Command::SendBoard50W, 0x52),
        (Command::Scan50W, 0x53),
        (Command::Scan100, 0x54),
        (Command::ReturnLongSerialNumber, 0x55),
    ];
    for (c, byte) in cases {
        assert_eq!(encode(&HostFrame::Single(c)), vec![byte]);
    }
}

#[test]
fn clock_and_led_vectors() {
    // dgt.md §2.2 examples from the production Python driver.
    assert_eq!(
        encode(&HostFrame::Single(Command::Clock(ClockCommand::Version))),
        [0x2b, 0x03, 0x03, 0x09, 0x00]
    );
    assert_eq!(
        encode(&HostFrame::Single(Command::Clock(ClockCommand::End))),
        [0x2b, 0x03, 0x03, 0x03, 0x00]
    );
    let text = *b"  e2e4  ";
    let mut want = vec![0x2b, 0x0c, 0x03, 0x0c];
    want.extend_from_slice(&text);
    want.extend_from_slice(&[0x05, 0x00]);
    assert_eq!(
        encode(&HostFrame::Single(Command::Clock(ClockCommand::Ascii {
            text,
            beep: 5
        }))),
        want
    );
    // SETNRUN sends binary h/m/s, size 0x0a.
    assert_eq!(
        encode(&HostFrame::Single(Command::Clock(
            ClockCommand::SetAndRun {
                left: Hms {
                    hours: 1,
                    minutes: 30,
                    seconds: 0
                },
                right: Hms {
                    hours: 0,
                    minutes: 59,
                    seconds: 59
                },
                flags: 0x01,
            }
        ))),
        [0x2b, 0x0a, 0x03, 0x0a, 1, 30, 0, 0, 59, 59, 0x01, 0x00]
    );
    // Sizes of the remaining sub-commands (total − 2).
    let display = encode(&HostFrame::Single(Command::Clock(ClockCommand::Display {
        segments: [0x3f, 0x06, 0, 0, 0, 0],
        icons: 0x02,
        beep: 0x03,
    })));
    assert_eq!(&display[..4], &[0x2b, 0x0b, 0x03, 0x01]);
    assert_eq!(display.len(), 13);
    let beep = encode(&HostFrame::Single(Command::Clock(ClockCommand::Beep {
        duration: 4,
    })));
    assert_eq!(beep, [0x2b, 0x04, 0x03, 0x0b, 0x04, 0x00]);
    let rev2 = encode(&HostFrame::Single(Command::Clock(
        ClockCommand::Rev2Ascii {
            text: *b"hello world",
            beep: 0,
        },
    )));
    assert_eq!(rev2[1], 0x0f);
    assert_eq!(rev2.len(), 17);
    // Revelation II LEDs: light a move, then clear all.
    assert_eq!(
        encode(&HostFrame::Single(Command::SetLeds {
            pattern: 1,
            start: 52,
            end: 36
        })),
        [0x60, 0x04, 0x01, 52, 36, 0x00]
    );
}

#[test]
fn bus_command_vectors() {
    // dgt.md §3: `81 10 06` has checksum 0x17.
    let f = HostFrame::Bus(BusCommand {
        kind: BusCommandKind::SendClock,
        address: (0x10 << 7) | 0x06,
    });
    assert_eq!(encode(&f), [0x81, 0x10, 0x06, 0x17]);
    // LiveChess's probe: bus SEND_VERSION to address 0.
    let v = HostFrame::Bus(BusCommand {
        kind: BusCommandKind::SendVersion,
        address: 0,
    });
    assert_eq!(encode(&v), [0x8b, 0x00, 0x00, 0x0b]);
    // Serial "01025" is bus address 1025 = 0x08 0x01.
    let p = HostFrame::Bus(BusCommand {
        kind: BusCommandKind::Ping,
        address: 1025,
    });
    assert_eq!(encode(&p), [0x87, 0x08, 0x01, 0x10]);
}

#[test]
fn livechess_probe_sequence_decodes() {
    let bytes = [0x40, 0x40, 0x40, 0x47, 0x46, 0x4a, 0x8b, 0x00, 0x00, 0x0b];
    let got: Vec<_> = decode_chunked(&bytes, &[])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got.len(), 7);
    assert_eq!(got[5], HostFrame::Single(Command::ToBusMode));
}

fn arb_hms() -> impl Strategy<Value = Hms> {
    (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(hours, minutes, seconds)| Hms {
        hours,
        minutes,
        seconds,
    })
}

fn arb_clock_command() -> impl Strategy<Value = ClockCommand> {
    prop_oneof![
        (any::<[u8; 6]>(), any::<u8>(), any::<u8>()).prop_map(|(segments, icons, beep)| {
            ClockCommand::Display {
                segments,
                icons,
                beep,
            }
        }),
        (any::<[u8; 4]>(), any::<u8>())
            .prop_map(|(icons, special)| ClockCommand::Icons { icons, special }),
        Just(ClockCommand::End),
        Just(ClockCommand::Button),
        Just(ClockCommand::Version),
        (arb_hms(), arb_hms(), any::<u8>())
            .prop_map(|(left, right, flags)| ClockCommand::SetAndRun { left, right, flags }),
        any::<u8>().prop_map(|duration| ClockCommand::Beep { duration }),
        (any::<[u8; 8]>(), any::<u8>()).prop_map(|(text, beep)| ClockCommand::Ascii { text, beep }),
        (any::<[u8; 11]>(), any::<u8>())
            .prop_map(|(text, beep)| ClockCommand::Rev2Ascii { text, beep }),
    ]
}

fn arb_command() -> impl Strategy<Value = Command> {
    prop_oneof![
        (0x40u8..=0x55).prop_filter_map("simple command", Command::from_simple_code),
        (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(pattern, start, end)| {
            Command::SetLeds {
                pattern,
                start,
                end,
            }
        }),
        arb_clock_command().prop_map(Command::Clock),
    ]
}

fn arb_bus_command() -> impl Strategy<Value = BusCommand> {
    (
        (0x81u8..=0x8d).prop_filter_map("bus command", BusCommandKind::from_code),
        0u16..(1 << 14),
    )
        .prop_map(|(kind, address)| BusCommand { kind, address })
}

fn arb_host_frame() -> impl Strategy<Value = HostFrame> {
    prop_oneof![
        arb_command().prop_map(HostFrame::Single),
        arb_bus_command().prop_map(HostFrame::Bus),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    #[test]
    fn host_frames_roundtrip_in_any_chunking(
        frames in prop::collection::vec(arb_host_frame(), 1..12),
        cuts in prop::collection::vec(0usize..200, 0..8),
    ) {
        let mut bytes = Vec::new();
        for f in &frames {
            f.encode(&mut bytes);
        }
        let mut cuts = cuts;
        cuts.sort_unstable();
        let got: Vec<_> = decode_chunked(&bytes, &cuts);
        let want: Vec<_> = frames.into_iter().map(Ok).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn host_decoder_survives_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        cuts in prop::collection::vec(0usize..300, 0..8),
    ) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        // Each result consumes at least one byte, so results never exceed bytes.
        let got = decode_chunked(&bytes, &cuts);
        prop_assert!(got.len() <= bytes.len());
    }

    #[test]
    fn garbage_before_a_command_does_not_hide_it(
        garbage in prop::collection::vec(0x00u8..0x2b, 0..20),
        frame in arb_host_frame(),
    ) {
        let mut bytes = garbage.clone();
        frame.encode(&mut bytes);
        let got = decode_chunked(&bytes, &[]);
        prop_assert_eq!(got.last().cloned(), Some(Ok(frame)));
        prop_assert_eq!(got.len(), if garbage.is_empty() { 1 } else { 2 });
    }
}
