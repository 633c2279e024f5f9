//! Recordings of real DGT boards, converted to captures and fed to the session.

use eboard_bridge::session::capture::{
    import, CaptureHeader, CaptureReader, CaptureWriter, Chunk, Direction,
};
use eboard_bridge::session::Session;
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;
use eboard_protocols::{Picture, Sensed};
use shakmaty::{Board, Square};

fn data(path: &str) -> String {
    let full = format!("{}/tests/data/eboard/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn session_over(chunks: &[Chunk]) -> Session {
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut events = Vec::new();
    for c in chunks {
        session.feed(c, &mut events);
    }
    session
}

/// The bytes of the board dump in `dgt-chess-to-max-position-data-example.txt`
/// (one dump, as the chunks Node printed).
fn example_dump_bytes() -> Vec<u8> {
    import::node_serial_log(&data("dgt-chess-to-max-position-data-example.txt"))
        .unwrap()
        .into_iter()
        .flat_map(|c| c.bytes)
        .collect()
}

#[test]
fn node_log_decodes_cleanly_and_shows_serial_version_and_dump() {
    let chunks = import::node_serial_log(&data("dgt-chess-to-max-serial-log-output.txt")).unwrap();
    // 15 dump requests, reset, serial number and version requests.
    let writes: Vec<&[u8]> = chunks
        .iter()
        .filter(|c| c.dir == Direction::Out)
        .map(|c| c.bytes.as_slice())
        .collect();
    assert_eq!(writes.len(), 18);
    assert_eq!(&writes[..3], &[&[0x40][..], &[0x45], &[0x4d]]);
    assert!(chunks.windows(2).all(|w| w[0].t_ms < w[1].t_ms));

    let session = session_over(&chunks);
    let stats = session.stats();
    assert_eq!(stats.decode_errors, 0, "{:?}", stats.last_decode_error);
    // Serial number reply, version reply and 15 board dumps.
    assert_eq!(stats.frames, 17);
    let info = session.board_info();
    assert_eq!(info.serial.as_deref(), Some("25805"));
    assert_eq!(info.version, Some((3, 1)));
    assert!(info.has_picture);

    // The example file is one of these dumps: the standard start position.
    let example = example_dump_bytes();
    assert_eq!(example.len(), 67);
    assert_eq!(&example[..3], &[0x86, 0x00, 0x43]);
    let start = Picture::from_board(&Board::default());
    assert_eq!(session.picture(), &start);
    assert_eq!(
        session.picture().get(Square::E1),
        Sensed::Piece(shakmaty::Piece::from_char('K').unwrap())
    );
    let example_session = session_over(&[Chunk {
        t_ms: 0,
        dir: Direction::In,
        bytes: example,
    }]);
    assert_eq!(example_session.picture(), session.picture());
}

#[test]
fn dgtdriver_recording_gets_clock_derived_times() {
    let chunks = import::dgtdriver_inbytes(&data("dgtdriver-recordings/1.inbytes")).unwrap();
    assert_eq!(chunks.len(), 455);
    assert!(chunks.iter().all(|c| c.dir == Direction::In));
    assert!(
        chunks.windows(2).all(|w| w[0].t_ms <= w[1].t_ms),
        "times never go backwards"
    );
    // Message 0 is the dump, 1 the first (stopped) reading, 2 the clock started,
    // 3 the left display down to 3:01: one second after 2.
    assert_eq!(chunks[2].t_ms - chunks[1].t_ms, import::STOPPED_STEP_MS);
    assert_eq!(chunks[3].t_ms - chunks[2].t_ms, 1_000);
    // Messages 4 and 5 (e2, e4) lie evenly between readings 3 and 6 (3:00).
    assert_eq!(chunks[6].t_ms - chunks[3].t_ms, 1_000);
    assert!(chunks[3].t_ms < chunks[4].t_ms && chunks[4].t_ms < chunks[5].t_ms);
    assert!(chunks[5].t_ms < chunks[6].t_ms);
    // The game used about 3 minutes of each side's clock (a 3+2 game that went
    // 29 moves): the derived span must be of that order, not of the number of
    // messages.
    let span_s = chunks.last().unwrap().t_ms / 1000;
    assert!((120..=900).contains(&span_s), "span {span_s} s");

    let session = session_over(&chunks);
    assert_eq!(session.stats().decode_errors, 0);
    assert_eq!(session.stats().frames, 455);
}

#[test]
fn converted_recordings_survive_a_capture_round_trip() {
    let chunks = import::dgtdriver_inbytes(&data("dgtdriver-recordings/1.inbytes")).unwrap();
    let mut w = CaptureWriter::new(Vec::new(), &CaptureHeader::new("dgt")).unwrap();
    for c in &chunks {
        w.write_chunk(c).unwrap();
    }
    let bytes = w.into_inner();
    let back: Vec<Chunk> = CaptureReader::new(&bytes[..])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, chunks);
}

#[test]
fn field_updates_before_the_first_dump_wait_for_it() {
    // e2 emptied before any dump: applied to the session's picture, but the
    // tracker gets nothing until the dump.
    let update = Chunk {
        t_ms: 5,
        dir: Direction::In,
        bytes: vec![0x8e, 0x00, 0x05, 52, 0x00],
    };
    let mut session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut events = Vec::new();
    session.feed(&update, &mut events);
    assert_eq!(session.stats().updates_before_dump, 1);
    assert!(!session.board_info().has_picture);
    let dump = example_dump_bytes();
    session.feed(
        &Chunk {
            t_ms: 9,
            dir: Direction::In,
            bytes: dump,
        },
        &mut events,
    );
    assert!(session.board_info().has_picture);
    assert_eq!(session.picture(), &Picture::from_board(&Board::default()));
}
