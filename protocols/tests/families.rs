//! Every registered family, through the seam: its codec never panics and
//! never loops on any bytes, in any chunking, either way; its virtual board
//! played through its driver decodes back into the position on the board; its
//! capabilities give the sensor profile; its virtual board takes any host
//! bytes. A family added to the registration table is tested here without
//! touching this file.

use eboard_protocols::family::{
    CodecSetup, DriverSetup, Observation, PortMode, Reporting, Sensing, SensorProfile, VirtualSpec,
};
use eboard_protocols::hand::{PhysicalAction, PhysicalBoard};
use eboard_protocols::{families, Picture};
use proptest::prelude::*;
use shakmaty::{Board, Color, Piece, Role, Square};

fn codec(f: &eboard_protocols::family::Family) -> Box<dyn eboard_protocols::family::Codec> {
    (f.codec)(&CodecSetup::default()).expect("every codec starts without settings")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_codec_panics_or_loops_on_any_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..2_000),
        cut in 1usize..97,
        host in any::<bool>(),
    ) {
        for f in families() {
            let mut c = codec(f);
            let mut out = Vec::new();
            for (i, piece) in bytes.chunks(cut).enumerate() {
                if host && i % 2 == 1 {
                    c.host_bytes(i as u64, piece, &mut out);
                } else {
                    c.board_bytes(i as u64, piece, &mut out);
                }
                c.tick(i as u64 + 1, &mut out);
            }
            // Whatever came out describes a board behind the port.
            prop_assert!(c.stats().frames + c.stats().decode_errors < bytes.len() as u64 + 1);
        }
    }

    #[test]
    fn no_virtual_board_panics_on_any_host_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cut in 1usize..41,
    ) {
        for f in families() {
            let mut d = (f.virtual_device)(
                &VirtualSpec::default(),
                vec![PhysicalBoard::from_board(&Board::default(), false)],
            );
            let mut t = 0;
            for piece in bytes.chunks(cut) {
                t += 7;
                d.receive_host(t, piece);
            }
            d.advance(t + 3_000);
            let _ = d.take_output();
        }
    }
}

#[test]
fn capabilities_give_the_tracker_its_sensor_profile() {
    let dgt = eboard_protocols::family("dgt").unwrap();
    assert_eq!(
        (dgt.capabilities)(PortMode::Single).sensor_profile(),
        SensorProfile::default(),
        "the tracker's default profile is a DGT board's"
    );
    for f in families() {
        let c = (f.capabilities)(PortMode::Single);
        let p = c.sensor_profile();
        assert_eq!(p.sensing, c.sensing, "{}", f.name);
        match p.reporting {
            Reporting::EveryChange { scan_ms: (lo, hi) } => {
                assert!(0 < lo && lo <= hi, "{}", f.name)
            }
            Reporting::Frames { period_ms } => assert!(period_ms > 0, "{}", f.name),
        }
    }
}

#[test]
fn names_are_unique_and_lowercase() {
    let mut names: Vec<&str> = families().iter().map(|f| f.name).collect();
    assert!(names
        .iter()
        .all(|n| n.bytes().all(|b| b.is_ascii_lowercase())));
    names.sort();
    names.dedup();
    assert_eq!(names.len(), families().len());
}

/// Runs `driver` as host of `device` until `until`, the hands doing
/// `actions`; returns what the board sent, with times.
fn run(
    f: &eboard_protocols::family::Family,
    actions: &[(u64, PhysicalAction)],
    until: u64,
) -> Vec<(u64, Vec<u8>)> {
    let spec = VirtualSpec {
        seed: 3,
        ..VirtualSpec::default()
    };
    let mut device = (f.virtual_device)(
        &spec,
        vec![PhysicalBoard::from_board(&Board::default(), false)],
    );
    let mut driver = (f.driver)(&DriverSetup::default());
    driver.start(0);
    let mut got = Vec::new();
    let mut next = 0;
    let mut t = 0;
    while t < until {
        while let Some(b) = driver.poll_transmit(t) {
            device.receive_host(t, &b);
        }
        while let Some(&(at, a)) = actions.get(next).filter(|a| a.0 <= t) {
            device.apply(0, at, a).unwrap();
            next += 1;
        }
        device.advance(t);
        for (at, b) in device.take_output() {
            driver.board_bytes(at.max(t), &b);
            got.push((at, b));
        }
        t += 5;
    }
    got
}

#[test]
fn every_virtual_board_read_through_its_driver_decodes_into_the_board() {
    let pawn = Piece {
        color: Color::White,
        role: Role::Pawn,
    };
    let actions = [
        (
            2_000,
            PhysicalAction::Lift {
                square: Square::E2,
                piece: pawn,
            },
        ),
        (
            2_300,
            PhysicalAction::Place {
                square: Square::E4,
                piece: pawn,
            },
        ),
    ];
    let mut after = Board::default();
    after.discard_piece_at(Square::E2);
    after.set_piece_at(Square::E4, pawn);
    for f in families() {
        let setup = CodecSetup {
            mode: PortMode::Single,
            settings: (f.kept_settings)(&VirtualSpec {
                seed: 3,
                ..VirtualSpec::default()
            }),
        };
        let mut c = (f.codec)(&setup).unwrap();
        let mut picture: Option<Picture> = None;
        let mut out = Vec::new();
        for (t, bytes) in run(f, &actions, 6_000) {
            c.board_bytes(t, &bytes, &mut out);
            for o in out.drain(..) {
                match o.what {
                    Observation::Picture(p) => picture = Some(p),
                    Observation::Square { square, sensed } => {
                        if let Some(p) = picture.as_mut() {
                            p.set(square, sensed);
                        }
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(c.stats().decode_errors, 0, "{}: {:?}", f.name, c.stats());
        let want = match (f.capabilities)(PortMode::Single).sensing {
            Sensing::Identity => Picture::from_board(&after),
            Sensing::Occupancy => Picture::occupancy_of(&after),
        };
        assert_eq!(picture, Some(want), "{}", f.name);
    }
}
