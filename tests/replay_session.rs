//! The DGT session: mode switching from host commands, several boards behind
//! one bus port, frames split across chunks, and the library replay entry point.

use std::io;

use eboard_bridge::events::Stamped;
use eboard_bridge::pgn::GameRecord;
use eboard_bridge::session::capture::{CaptureHeader, CaptureWriter, Chunk, Direction, PortMode};
use eboard_bridge::session::replay::{replay, Collected, ReplayError};
use eboard_bridge::session::Session;
use eboard_protocols::dgt::{DgtCodec, DgtStats};

/// The DGT codec's own counters.
fn dgt(session: &Session) -> &DgtStats {
    session
        .codec()
        .as_any()
        .downcast_ref::<DgtCodec>()
        .expect("a DGT session")
        .dgt_stats()
}
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::dgt::{
    BusCommand, BusCommandKind, BusMessage, BusReply, BwTime, Command, DgtSideTime, EeRecord,
    HostFrame, Message, Mode,
};
use eboard_protocols::{Picture, Sensed};
use shakmaty::{Board, Color, Role, Square};

fn start() -> Picture {
    Picture::from_board(&Board::default())
}

fn host(frame: HostFrame) -> Vec<u8> {
    let mut v = Vec::new();
    frame.encode(&mut v);
    v
}

fn bus(address: u16, reply: BusReply) -> Vec<u8> {
    let mut v = Vec::new();
    BusMessage { address, reply }.encode(&mut v);
    v
}

/// Board 1025 of a bus line says `reply` at `t_ms`.
fn bus_report(session: &mut Session, t_ms: u64, reply: BusReply, events: &mut Vec<Stamped>) {
    session.feed(
        &Chunk {
            t_ms,
            dir: Direction::In,
            bytes: bus(1025, reply),
        },
        events,
    );
}

fn single(m: Message) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v);
    v
}

fn field(square: Square, sensed: Sensed) -> EeRecord {
    EeRecord::Field {
        square,
        sensed,
        recent: false,
    }
}

/// Host and board traffic of a bus port: probe in single mode, switch to bus
/// mode, two boards answer, one of them reports e2-e4, then back to single mode.
fn bus_traffic() -> Vec<(Direction, Vec<u8>)> {
    let pawn = Sensed::Piece(Role::Pawn.of(Color::White));
    vec![
        (
            Direction::Out,
            host(HostFrame::Single(Command::ReturnSerialNumber)),
        ),
        (Direction::In, single(Message::SerialNumber("01025".into()))),
        (Direction::Out, host(HostFrame::Single(Command::ToBusMode))),
        (
            Direction::Out,
            host(HostFrame::Bus(BusCommand {
                kind: BusCommandKind::SendBoard,
                address: 1025,
            })),
        ),
        (Direction::In, bus(1025, BusReply::BoardDump(start()))),
        (Direction::In, bus(77, BusReply::BoardDump(start()))),
        (
            Direction::In,
            bus(77, BusReply::Version { major: 1, minor: 7 }),
        ),
        (
            Direction::In,
            bus(
                1025,
                BusReply::Changes(vec![
                    field(Square::E2, Sensed::Empty),
                    field(Square::E4, pawn),
                ]),
            ),
        ),
        (Direction::Out, host(HostFrame::Single(Command::SendBoard))),
        (Direction::In, single(Message::BoardDump(Picture::empty()))),
    ]
}

/// Feeds the traffic cut into chunks of `size` bytes (a new chunk at every
/// change of direction), 10 ms apart.
fn chunked(traffic: &[(Direction, Vec<u8>)], size: usize) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for (dir, bytes) in traffic {
        for piece in bytes.chunks(size) {
            chunks.push(Chunk {
                t_ms: chunks.len() as u64 * 10,
                dir: *dir,
                bytes: piece.to_vec(),
            });
        }
    }
    chunks
}

#[test]
fn bus_boards_are_tracked_by_address_whatever_the_chunking() {
    for size in [1, 2, 3, 7, 64, 1000] {
        let mut session = Session::new(9, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
        session.set_bus_board_number(77, 4);
        let mut events = Vec::new();
        for c in chunked(&bus_traffic(), size) {
            session.feed(&c, &mut events);
        }
        let stats = session.stats();
        assert_eq!(
            stats.decode_errors, 0,
            "size {size}: {:?}",
            stats.last_decode_error
        );
        assert_eq!(stats.frames, 6, "size {size}");
        assert_eq!(
            dgt(&session).mode_switches,
            2,
            "into bus mode and out again"
        );
        assert_eq!(session.mode(), PortMode::Single);
        assert_eq!(session.board_info().serial.as_deref(), Some("01025"));

        let boards: Vec<(u16, u32)> = session.bus_boards().map(|(a, n, _)| (a, n)).collect();
        assert_eq!(boards, vec![(77, 4), (1025, 1025)], "size {size}");
        let mut after = start();
        after.set(Square::E2, Sensed::Empty);
        after.set(Square::E4, Sensed::Piece(Role::Pawn.of(Color::White)));
        assert_eq!(session.bus_picture(1025), Some(&after));
        assert_eq!(session.bus_picture(77), Some(&start()));
        let info77 = session.bus_boards().find(|b| b.0 == 77).unwrap().2;
        assert_eq!(info77.version, Some((1, 7)));
        assert_eq!(info77.bus_address, Some(77));
        // The single board's last dump (after leaving bus mode) was decoded as a
        // single-board message, not as a bus reply.
        assert_eq!(session.picture(), &Picture::empty());
        for e in &events {
            assert!([4, 1025, 9].contains(&e.board), "{e:?}");
        }
    }
}

fn clock_reading(left_s: u8, right_s: u8) -> BwTime {
    let side = |s: u8| DgtSideTime {
        minutes: 3,
        seconds: s,
        ..DgtSideTime::default()
    };
    BwTime {
        left: side(left_s),
        right: side(right_s),
        running: true,
        ..BwTime::default()
    }
}

#[test]
fn blank_and_clockless_readings_are_not_given_to_the_tracker() {
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut events = Vec::new();
    let no_clock = BwTime {
        no_clock: true,
        ..clock_reading(5, 5)
    };
    for (t, m) in [
        (0, Message::Clock(BwTime::default())),
        (10, Message::Clock(no_clock)),
    ] {
        let chunk = Chunk {
            t_ms: t,
            dir: Direction::In,
            bytes: single(m),
        };
        session.feed(&chunk, &mut events);
    }
    assert_eq!(dgt(&session).blank_clock_readings, 1);
    assert_eq!(dgt(&session).no_clock_readings, 1);
    assert!(session.board_info().no_clock);
    assert!(events.is_empty(), "{events:?}");
    let chunk = Chunk {
        t_ms: 20,
        dir: Direction::In,
        bytes: single(Message::Clock(clock_reading(5, 6))),
    };
    session.feed(&chunk, &mut events);
    assert!(
        !session.board_info().no_clock,
        "a real reading says a clock is back"
    );
}

#[test]
fn garbage_is_counted_never_fatal() {
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut events = Vec::new();
    let mut bytes = vec![0x01, 0x02, 0x03];
    bytes.extend(single(Message::SerialNumber("12345".into())));
    session.feed(
        &Chunk {
            t_ms: 0,
            dir: Direction::In,
            bytes,
        },
        &mut events,
    );
    // The three garbage bytes are one run the decoder skips to resynchronise.
    assert_eq!(session.stats().decode_errors, 1);
    assert_eq!(session.board_info().serial.as_deref(), Some("12345"));
}

#[test]
fn a_bus_capture_header_starts_the_decoder_in_bus_mode() {
    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Bus);
    let mut w = CaptureWriter::new(Vec::new(), &header).unwrap();
    // No host traffic at all: only the header says this is a bus port.
    w.write(0, Direction::In, &bus(300, BusReply::Ping))
        .unwrap();
    w.write(5, Direction::In, &bus(300, BusReply::BoardDump(start())))
        .unwrap();
    let bytes = w.into_inner();
    let mut sink = Collected::default();
    let summary = replay(&bytes[..], 1, &TrackerConfig::default(), &mut sink).unwrap();
    assert_eq!(summary.chunks, 2);
    assert_eq!(
        summary.stats.decode_errors, 0,
        "{:?}",
        summary.stats.last_decode_error
    );
    assert_eq!(summary.stats.frames, 2);
    assert!(
        sink.events.iter().all(|e| e.board == 300),
        "{:?}",
        sink.events
    );
}

#[test]
fn other_protocols_are_refused_with_a_reason() {
    let header = CaptureHeader::new("novag");
    let bytes = CaptureWriter::new(Vec::new(), &header)
        .unwrap()
        .into_inner();
    let err = replay(
        &bytes[..],
        1,
        &TrackerConfig::default(),
        &mut Collected::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ReplayError::UnsupportedProtocol(ref p, _) if p == "novag"));
    assert!(err.to_string().contains("\"dgt\""), "{err}");
}

/// The real recording played on two boards of one bus at once: the bus replies
/// are built from the recording's own messages, interleaved in time. Each board
/// must come out as its own game with the recording's moves.
#[test]
fn two_bus_boards_replay_to_two_games() {
    use eboard_bridge::session::capture::import;
    use eboard_protocols::dgt::{Decoder, Frame};

    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/eboard/dgtdriver-recordings/1.inbytes"
    ))
    .unwrap();
    let expected: Vec<String> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/eboard/dgtdriver-recordings/1.uci"
    ))
    .unwrap()
    .split_whitespace()
    .filter(|t| !t.ends_with('.') && *t != "*")
    .map(str::to_string)
    .collect();

    let as_bus = |address: u16, offset: u64| -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut decoder = Decoder::new(Mode::Single);
        for chunk in import::dgtdriver_inbytes(&text).unwrap() {
            decoder.push(&chunk.bytes);
            while let Some(frame) = decoder.next() {
                let reply = match frame.unwrap() {
                    Frame::Single(Message::BoardDump(p)) => BusReply::BoardDump(p),
                    Frame::Single(Message::Clock(bw)) => BusReply::Clock(bw),
                    Frame::Single(Message::FieldUpdate { square, sensed }) => {
                        BusReply::Changes(vec![field(square, sensed)])
                    }
                    other => panic!("unexpected frame {other:?}"),
                };
                out.push((chunk.t_ms + offset, bus(address, reply)));
            }
        }
        out
    };
    let mut all = as_bus(1025, 0);
    all.extend(as_bus(77, 137));
    all.sort_by_key(|(t, _)| *t);

    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Bus);
    let mut w = CaptureWriter::new(Vec::new(), &header).unwrap();
    for (t, bytes) in &all {
        w.write(*t, Direction::In, bytes).unwrap();
    }
    let bytes = w.into_inner();
    let mut sink = Collected::default();
    let summary = replay(&bytes[..], 1, &TrackerConfig::default(), &mut sink).unwrap();
    assert_eq!(summary.stats.decode_errors, 0);
    assert_eq!(sink.games.len(), 2, "warnings: {:?}", sink.warnings);
    for (game, board) in sink.games.iter().map(GameRecord::to_pgn).zip([77, 1025]) {
        assert!(game.contains(&format!("[Board \"{board}\"]")), "{game}");
        let mut reader = pgn_reader::Reader::new(io::Cursor::new(game.as_bytes()));
        let mut pos = shakmaty::Chess::default();
        let mut ucis = Vec::new();
        struct Sans(Vec<String>);
        impl pgn_reader::Visitor for Sans {
            type Tags = ();
            type Movetext = ();
            type Output = ();
            fn begin_tags(&mut self) -> std::ops::ControlFlow<()> {
                std::ops::ControlFlow::Continue(())
            }
            fn begin_movetext(&mut self, _: ()) -> std::ops::ControlFlow<(), ()> {
                std::ops::ControlFlow::Continue(())
            }
            fn san(&mut self, _: &mut (), san: pgn_reader::SanPlus) -> std::ops::ControlFlow<()> {
                self.0.push(san.to_string());
                std::ops::ControlFlow::Continue(())
            }
            fn end_game(&mut self, _: ()) {}
        }
        let mut sans = Sans(Vec::new());
        reader.read_game(&mut sans).unwrap();
        for s in sans.0 {
            use shakmaty::Position;
            let m = s
                .parse::<pgn_reader::SanPlus>()
                .unwrap()
                .san
                .to_move(&pos)
                .unwrap();
            ucis.push(
                shakmaty::uci::UciMove::from_move(m, shakmaty::CastlingMode::Standard).to_string(),
            );
            pos.play_unchecked(m);
        }
        assert_eq!(ucis, expected, "board {board}");
    }
    let boards: std::collections::BTreeSet<u32> = sink.events.iter().map(|e| e.board).collect();
    assert_eq!(boards.into_iter().collect::<Vec<_>>(), vec![77, 1025]);
}

#[test]
fn from_start_history_gives_only_the_resulting_picture() {
    let pawn = Sensed::Piece(Role::Pawn.of(Color::White));
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Bus), TrackerConfig::default());
    let mut events = Vec::new();
    let mut feed = |t_ms: u64, bytes: Vec<u8>, session: &mut Session| {
        session.feed(
            &Chunk {
                t_ms,
                dir: Direction::In,
                bytes,
            },
            &mut events,
        );
    };
    feed(0, bus(5, BusReply::BoardDump(start())), &mut session);
    feed(
        10,
        bus(
            5,
            BusReply::Changes(vec![
                field(Square::E2, Sensed::Empty),
                field(Square::E4, pawn),
            ]),
        ),
        &mut session,
    );
    assert_eq!(session.stats().pictures, 3, "a dump and each change");
    // The host re-reads the whole game since the start tag: e2-e4 again, then
    // d2-d4. Replaying it square by square would show the start position again.
    feed(
        20,
        bus(
            5,
            BusReply::FromStart(vec![
                EeRecord::BeginPos,
                field(Square::E2, Sensed::Empty),
                field(Square::E4, pawn),
                field(Square::D2, Sensed::Empty),
                field(Square::D4, pawn),
            ]),
        ),
        &mut session,
    );
    assert_eq!(
        session.stats().pictures,
        4,
        "one picture for the whole history"
    );
    assert_eq!(dgt(&session).ee_records_unused, 1);
    let picture = session.bus_picture(5).unwrap();
    assert_eq!(picture.get(Square::D4), pawn);
    assert_eq!(picture.get(Square::E4), pawn);
    assert_eq!(picture.get(Square::D2), Sensed::Empty);
    // Nothing new since: no picture at all.
    feed(
        30,
        bus(5, BusReply::FromStart(vec![field(Square::D4, pawn)])),
        &mut session,
    );
    assert_eq!(session.stats().pictures, 4);
}

#[test]
fn end_busmode_leaves_bus_mode() {
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Bus), TrackerConfig::default());
    let mut events = Vec::new();
    let end = host(HostFrame::Bus(BusCommand {
        kind: BusCommandKind::EndBusMode,
        address: 0,
    }));
    session.feed(
        &Chunk {
            t_ms: 0,
            dir: Direction::Out,
            bytes: end,
        },
        &mut events,
    );
    assert_eq!(session.mode(), PortMode::Single);
    let ping = host(HostFrame::Bus(BusCommand {
        kind: BusCommandKind::Ping,
        address: 0,
    }));
    session.feed(
        &Chunk {
            t_ms: 1,
            dir: Direction::Out,
            bytes: ping,
        },
        &mut events,
    );
    assert_eq!(session.mode(), PortMode::Bus);
}

/// A bus board's change report holds its clock records (one per lever change)
/// in order with the field records. The presses must reach the tracker in that
/// order, but only once the board has scanned after them: the record is
/// written when the lever moves, a square only at the board's next scan, so a
/// piece put down just before the press is logged after the record.
#[test]
fn bus_clock_records_are_presses_given_after_the_next_scan() {
    use eboard_bridge::events::{GameEvent, TrackerEvent};
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Bus), TrackerConfig::default());
    let mut events = Vec::new();
    let feed = bus_report;
    // White's clock (left) runs: the left side of the lever is high.
    let reading = |lever_right_high: bool| BwTime {
        lever_right_high,
        ..clock_reading(0, 0)
    };
    let verified = |events: &[Stamped]| -> Vec<(u32, String, u64)> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                    Some((m.ply, m.uci.clone(), e.t_ms))
                }
                _ => None,
            })
            .collect()
    };
    feed(&mut session, 0, BusReply::BoardDump(start()), &mut events);
    session.tick(1_000, &mut events);
    feed(
        &mut session,
        1_100,
        BusReply::Clock(reading(false)),
        &mut events,
    );
    let white = Sensed::Piece(Role::Pawn.of(Color::White));
    let black = Sensed::Piece(Role::Pawn.of(Color::Black));
    let clock = |left: bool| EeRecord::Clock {
        left,
        hours: 0,
        minutes: 2,
        seconds: 55,
    };

    // Two plies and both presses in one report: White's press is given when
    // Black's comes, the squares between being Black's move; Black's waits
    // for the next report.
    feed(
        &mut session,
        5_000,
        BusReply::Changes(vec![
            field(Square::E2, Sensed::Empty),
            field(Square::E4, white),
            clock(true),
            field(Square::E7, Sensed::Empty),
            field(Square::E5, black),
            clock(false),
        ]),
        &mut events,
    );
    assert_eq!(verified(&events), vec![(1, "e2e4".into(), 5_000)]);
    feed(&mut session, 5_300, BusReply::Changes(vec![]), &mut events);
    assert_eq!(
        verified(&events),
        vec![(1, "e2e4".into(), 5_000), (2, "e7e5".into(), 5_300)],
        "{events:#?}"
    );
    assert_eq!(dgt(&session).ee_presses, 2);
    // The next clock poll shows the lever where the records left it: no
    // further press, nothing withdrawn, no alert.
    let before = events.len();
    feed(
        &mut session,
        5_600,
        BusReply::Clock(reading(false)),
        &mut events,
    );
    session.tick(20_000, &mut events);
    assert!(
        events[before..]
            .iter()
            .all(|e| matches!(e.event, TrackerEvent::Game(GameEvent::Clock { .. }))),
        "{:#?}",
        &events[before..]
    );

    // A press a clock poll showed first waits for its record, which places
    // it among the squares: it is given once, after the scan that follows
    // the record, never at the poll.
    let before = events.len();
    feed(
        &mut session,
        21_000,
        BusReply::Changes(vec![
            field(Square::G1, Sensed::Empty),
            field(Square::F3, Sensed::Piece(Role::Knight.of(Color::White))),
        ]),
        &mut events,
    );
    feed(
        &mut session,
        21_100,
        BusReply::Clock(reading(true)),
        &mut events,
    );
    assert!(verified(&events[before..]).is_empty(), "not at the poll");
    feed(
        &mut session,
        21_400,
        BusReply::Changes(vec![clock(true)]),
        &mut events,
    );
    assert_eq!(
        dgt(&session).ee_presses,
        3,
        "the record takes the poll's place"
    );
    assert!(
        verified(&events[before..]).is_empty(),
        "not before the next scan"
    );
    feed(&mut session, 21_700, BusReply::Changes(vec![]), &mut events);
    assert_eq!(
        verified(&events[before..]),
        vec![(3, "g1f3".into(), 21_700)]
    );

    // A pawn seen on a6 on its way to a5, the press logged before the scan
    // that found it on a5: the press waits for that scan.
    let before = events.len();
    feed(
        &mut session,
        30_000,
        BusReply::Changes(vec![
            field(Square::A7, Sensed::Empty),
            field(Square::A6, black),
            clock(false),
        ]),
        &mut events,
    );
    // A clock poll in between shows the new lever: it waits with the press.
    feed(
        &mut session,
        30_100,
        BusReply::Clock(reading(false)),
        &mut events,
    );
    assert!(verified(&events[before..]).is_empty());
    feed(
        &mut session,
        30_300,
        BusReply::Changes(vec![
            field(Square::A6, Sensed::Empty),
            field(Square::A5, black),
        ]),
        &mut events,
    );
    // The press is given after that scan, never before it. The move is then
    // verified once nothing else reads the board as well: a pawn gone from a6
    // and one on a5 also read as White taking on a6 and sliding the pawn off,
    // which a still board refutes within a second.
    session.tick(31_300, &mut events);
    let got = verified(&events[before..]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1.as_str()), (4, "a7a5"));
    assert!((30_300..=31_300).contains(&got[0].2), "{got:?}");

    // A board that stops answering polls: its press is given after a second.
    let before = events.len();
    feed(
        &mut session,
        40_000,
        BusReply::Changes(vec![
            field(Square::F1, Sensed::Empty),
            field(Square::C4, Sensed::Piece(Role::Bishop.of(Color::White))),
            clock(true),
        ]),
        &mut events,
    );
    session.tick(40_500, &mut events);
    assert!(verified(&events[before..]).is_empty());
    session.tick(41_000, &mut events);
    assert_eq!(
        verified(&events[before..]),
        vec![(5, "f1c4".into(), 41_000)]
    );
    assert_quiet_session(&events);
}

/// A catch-up report can hold several scans after a press record: the press
/// is given once the scan after the record is read, before the next one.
/// Held to the end of the report, it came after a move made later: White
/// plays e4 and presses, Black plays e5 and forgets to press, White sets a
/// knight down on f3 and takes it back. Given after the knight, the press
/// verified Nf3, and the knight going back read as a takeback (7.1).
#[test]
fn a_bus_press_is_given_before_the_second_scan_after_its_record() {
    use eboard_bridge::events::{GameEvent, TrackerEvent};
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Bus), TrackerConfig::default());
    let mut events = Vec::new();
    let mut feed = |t_ms: u64, reply: BusReply, events: &mut Vec<Stamped>| {
        bus_report(&mut session, t_ms, reply, events)
    };
    let verified = |events: &[Stamped]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => Some(m.uci.clone()),
                _ => None,
            })
            .collect()
    };
    feed(0, BusReply::BoardDump(start()), &mut events);
    feed(
        1_100,
        BusReply::Clock(BwTime {
            lever_right_high: false,
            ..clock_reading(0, 0)
        }),
        &mut events,
    );
    let white = |r: Role| Sensed::Piece(r.of(Color::White));
    let black = Sensed::Piece(Role::Pawn.of(Color::Black));
    feed(
        5_000,
        BusReply::Changes(vec![
            field(Square::E2, Sensed::Empty),
            field(Square::E4, white(Role::Pawn)),
            EeRecord::Clock {
                left: true,
                hours: 0,
                minutes: 2,
                seconds: 55,
            },
            field(Square::E7, Sensed::Empty),
            field(Square::E5, black),
            field(Square::G1, Sensed::Empty),
            field(Square::F3, white(Role::Knight)),
        ]),
        &mut events,
    );
    feed(
        5_500,
        BusReply::Changes(vec![
            field(Square::F3, Sensed::Empty),
            field(Square::G1, white(Role::Knight)),
        ]),
        &mut events,
    );
    for t in (6_000..=9_000).step_by(500) {
        feed(t, BusReply::Changes(vec![]), &mut events);
    }
    assert_eq!(verified(&events), vec!["e2e4".to_string()], "{events:#?}");
    assert_quiet_session(&events);
}

fn assert_quiet_session(events: &[Stamped]) {
    use eboard_bridge::events::{GameEvent, TrackerEvent};
    for e in events {
        assert!(
            !matches!(
                e.event,
                TrackerEvent::Alert(_) | TrackerEvent::Game(GameEvent::Retraction { .. })
            ),
            "{e:?}"
        );
    }
}

/// A bus board's clock is polled every two seconds, so the arbiter's start
/// (Black, on the left, starts White's clock on the right) can fall between
/// two polls and leave no record, and White's first press record then puts
/// the lever back where the last poll saw it. The record still proves a
/// start came first: the clock's sides are learned from it (White on the
/// right) and White's press is not lost.
#[test]
fn a_bus_clock_started_between_polls_is_learned_from_the_first_press_record() {
    use eboard_bridge::events::{ColorName, GameEvent, TrackerEvent};
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Bus), TrackerConfig::default());
    let mut events = Vec::new();
    let mut feed = |t_ms: u64, reply: BusReply, events: &mut Vec<Stamped>| {
        bus_report(&mut session, t_ms, reply, events)
    };
    feed(0, BusReply::BoardDump(start()), &mut events);
    // Before the start: stopped, the lever's left side high.
    feed(
        1_100,
        BusReply::Clock(BwTime {
            running: false,
            ..clock_reading(0, 0)
        }),
        &mut events,
    );
    let white = Sensed::Piece(Role::Pawn.of(Color::White));
    let black = Sensed::Piece(Role::Pawn.of(Color::Black));
    let clock = |left: bool| EeRecord::Clock {
        left,
        hours: 0,
        minutes: 2,
        seconds: 55,
    };
    // Started unseen; 1.e4 and White's press on the right.
    feed(
        5_000,
        BusReply::Changes(vec![
            field(Square::E2, Sensed::Empty),
            field(Square::E4, white),
            clock(false),
        ]),
        &mut events,
    );
    feed(
        5_300,
        BusReply::Changes(vec![
            field(Square::E7, Sensed::Empty),
            field(Square::E5, black),
            clock(true),
        ]),
        &mut events,
    );
    feed(5_600, BusReply::Changes(vec![]), &mut events);
    let moves: Vec<(String, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.event {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                Some((m.uci.clone(), m.clock_ms))
            }
            _ => None,
        })
        .collect();
    // Both moves verified by their own presses, each with the time of its
    // mover's display (2:55 from the record).
    assert_eq!(
        moves,
        vec![
            ("e2e4".to_owned(), Some(175_000)),
            ("e7e5".to_owned(), Some(175_000))
        ],
        "{events:#?}"
    );
    let running: Vec<Option<ColorName>> = events
        .iter()
        .filter_map(|e| match &e.event {
            TrackerEvent::Game(GameEvent::Clock { running, .. }) => Some(*running),
            _ => None,
        })
        .collect();
    assert_eq!(
        running,
        vec![
            Some(ColorName::White),
            Some(ColorName::Black),
            Some(ColorName::White)
        ],
        "the start, White's press, Black's press"
    );
    assert_quiet_session(&events);
}
