//! Operator lines in captures: an arbiter's command journaled among the bytes
//! is applied at its place by `replay`, so a capture alone rebuilds what the
//! daemon did; captures without such lines read as before.

use std::path::PathBuf;

use eboard_bridge::cli::emulate::load_game;
use eboard_bridge::events::{GameEvent, GameResult, TrackerEvent};
use eboard_bridge::operator::TrackerCommand;
use eboard_bridge::session::capture::{
    CaptureError, CaptureHeader, CaptureReader, CaptureWriter, OperatorLine, PortMode, Record,
};
use eboard_bridge::session::replay::{replay, Collected};
use eboard_bridge::sim::{simulate, SimOptions};
use eboard_bridge::tracker::TrackerConfig;

/// The first eight plies of a real game, played on the virtual board, as a
/// capture; `operator` lines are written after the last chunk.
fn capture(operator: &[TrackerCommand]) -> Vec<u8> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let mut game = load_game(&file, 1).unwrap();
    // The game ends in mate at ply 10; eight plies leave it open.
    game.moves.truncate(8);
    let run = simulate(&game, &SimOptions::default());
    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Single);
    let mut w = CaptureWriter::new(Vec::new(), &header).unwrap();
    for c in &run.chunks {
        w.write_chunk(c).unwrap();
    }
    let end = run.chunks.last().unwrap().t_ms + 10_000;
    for (i, command) in operator.iter().enumerate() {
        w.write_operator(&OperatorLine {
            t_ms: end + i as u64,
            board: 7,
            by: Some("IA Example".into()),
            command: command.clone(),
        })
        .unwrap();
    }
    w.into_inner()
}

fn results(sink: &Collected) -> Vec<GameResult> {
    sink.events
        .iter()
        .filter_map(|e| match &e.event {
            TrackerEvent::Game(GameEvent::Result { result, .. }) => Some(*result),
            _ => None,
        })
        .collect()
}

#[test]
fn a_journaled_result_is_replayed_into_the_game() {
    let bytes = capture(&[TrackerCommand::SetResult {
        result: GameResult::BlackWins,
        reason: "White resigned".into(),
    }]);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let line = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["operator"]["action"], "set_result");
    assert_eq!(v["operator"]["result"], "0-1");
    assert_eq!(v["board"], 7);
    assert_eq!(v["by"], "IA Example");

    let mut sink = Collected::default();
    // The daemon numbered the board 7; replay numbers it 1: a single-board
    // capture's command belongs to its one board whatever the number.
    replay(&bytes[..], 1, &TrackerConfig::default(), &mut sink).unwrap();
    assert!(sink.warnings.is_empty(), "{:?}", sink.warnings);
    assert_eq!(results(&sink), vec![GameResult::BlackWins]);
    let game = sink.games.last().unwrap();
    assert_eq!(game.moves.len(), 8);
    assert_eq!(game.result, Some(GameResult::BlackWins));
    assert!(game.to_pgn().contains("[Result \"0-1\"]"));
}

#[test]
fn captures_without_operator_lines_replay_as_before() {
    let plain = capture(&[]);
    let mut sink = Collected::default();
    replay(&plain[..], 1, &TrackerConfig::default(), &mut sink).unwrap();
    assert!(results(&sink).is_empty());
    assert_eq!(sink.games.last().unwrap().moves.len(), 8);
    // Readers that only want bytes skip operator lines.
    let with = capture(&[TrackerCommand::SetActive { active: false }]);
    let chunks = |b: &[u8]| CaptureReader::new(b).unwrap().count();
    assert_eq!(chunks(&plain), chunks(&with));
    let mut reader = CaptureReader::new(&with[..]).unwrap();
    let mut last = None;
    while let Some(r) = reader.next_record().unwrap() {
        last = Some(r);
    }
    assert!(matches!(
        last,
        Some(Record::Operator(OperatorLine {
            command: TrackerCommand::SetActive { active: false },
            ..
        }))
    ));
}

#[test]
fn a_refused_command_is_a_warning_and_changes_nothing() {
    let bytes = capture(&[TrackerCommand::RejectRetraction]);
    let mut sink = Collected::default();
    replay(&bytes[..], 1, &TrackerConfig::default(), &mut sink).unwrap();
    assert_eq!(sink.warnings.len(), 1, "{:?}", sink.warnings);
    assert!(
        sink.warnings[0].contains("no retraction"),
        "{}",
        sink.warnings[0]
    );
    assert_eq!(sink.games.last().unwrap().moves.len(), 8);
}

#[test]
fn a_malformed_operator_line_is_reported_with_its_line() {
    let mut text = String::from_utf8(capture(&[])).unwrap();
    let lines = text.lines().count() as u64;
    text.push_str("{\"t_ms\":99999999,\"board\":1,\"operator\":{\"action\":\"set_result\",\"result\":\"2-0\",\"reason\":\"\"}}\n");
    let mut reader = CaptureReader::new(text.as_bytes()).unwrap();
    let err = loop {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the bad line was accepted"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.line(), lines + 1);
    assert!(
        matches!(&err, CaptureError::BadField { field: "operator", problem, .. } if problem.contains("\"1-0\"")),
        "{err}"
    );
    let no_board = "{\"t_ms\":1,\"operator\":{\"action\":\"accept_retraction\"}}\n";
    let text = format!(
        "{}\n{no_board}",
        String::from_utf8(capture(&[]))
            .unwrap()
            .lines()
            .next()
            .unwrap()
    );
    let mut reader = CaptureReader::new(text.as_bytes()).unwrap();
    let err = reader.next_record().unwrap_err();
    assert!(
        matches!(err, CaptureError::BadField { field: "board", .. }),
        "{err}"
    );
}
