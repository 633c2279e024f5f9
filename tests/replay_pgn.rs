//! PGN records: assembled from events, written in export form, read back by an
//! independent PGN parser.

use std::ops::ControlFlow;

use eboard_bridge::events::{GameEvent, GameResult, MoveEvent, ResultReason};
use eboard_bridge::pgn::{GameInfo, GameRecord, GameRecorder, RecordError, MAX_LINE};
use pgn_reader::{RawComment, RawTag, Reader, SanPlus, Visitor};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Verified move events for `ucis` played from `fen`, with clock times when given.
fn moves(fen: &str, mode: CastlingMode, ucis: &[&str], clocks: &[(u64, u64)]) -> Vec<GameEvent> {
    let mut pos: Chess = fen.parse::<Fen>().unwrap().into_position(mode).unwrap();
    ucis.iter()
        .enumerate()
        .map(|(i, u)| {
            let m = u.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, m).to_string();
            GameEvent::Move(MoveEvent {
                ply: i as u32 + 1,
                san,
                uci: u.to_string(),
                fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                verified: true,
                clock_ms: clocks.get(i).map(|c| c.0),
                emt_ms: clocks.get(i).map(|c| c.1),
                reconstructed: false,
                corrected: false,
            })
        })
        .collect()
}

fn start(fen: &str, chess960: Option<u32>) -> GameEvent {
    GameEvent::GameStart {
        fen: fen.into(),
        chess960,
        rotated: false,
    }
}

fn record(info: GameInfo, events: &[GameEvent]) -> GameRecord {
    let mut r = GameRecorder::new(info);
    for e in events {
        r.push(e).unwrap();
    }
    let mut games = r.finish();
    assert_eq!(games.len(), 1);
    games.remove(0)
}

#[test]
fn exact_export_text_with_clocks() {
    let info = GameInfo {
        event: Some("Club \"Open\" 2026".into()),
        site: Some("Hall\\2".into()),
        date: Some("2026.11.22".into()),
        round: Some("3".into()),
        board: Some(5),
        white: Some("Doe, Jane".into()),
        black: Some("Roe, Rick".into()),
        extra_tags: vec![("TimeControl".into(), "180+2".into())],
    };
    let mut events = vec![start(START, Some(518))];
    events.extend(moves(
        START,
        CastlingMode::Standard,
        &["e2e4", "e7e5", "g1f3"],
        &[(181_000, 1_000), (182_400, 600), (175_000, 8_000)],
    ));
    events.push(GameEvent::Result {
        result: GameResult::BlackWins,
        reason: ResultReason::Arbiter,
    });
    let game = record(info, &events);
    assert_eq!(
        game.to_pgn(),
        r#"[Event "Club \"Open\" 2026"]
[Site "Hall\\2"]
[Date "2026.11.22"]
[Round "3.5"]
[White "Doe, Jane"]
[Black "Roe, Rick"]
[Result "0-1"]
[TimeControl "180+2"]

1. e4 { [%clk 0:03:01] [%emt 0:00:01] } 1... e5
{ [%clk 0:03:02] [%emt 0:00:00] } 2. Nf3 { [%clk 0:02:55] [%emt 0:00:08] } 0-1

"#
    );
    game.check_moves().unwrap();
}

#[test]
fn unknown_tags_are_question_marks_and_no_clock_means_no_comment() {
    let mut events = vec![start(START, None)];
    events.extend(moves(START, CastlingMode::Standard, &["d2d4", "d7d5"], &[]));
    let game = record(
        GameInfo {
            board: Some(2),
            ..GameInfo::default()
        },
        &events,
    );
    assert_eq!(
        game.to_pgn(),
        "[Event \"?\"]\n[Site \"?\"]\n[Date \"????.??.??\"]\n[Round \"?\"]\n[White \"?\"]\n\
         [Black \"?\"]\n[Result \"*\"]\n[Board \"2\"]\n\n1. d4 d5 *\n\n"
    );
}

#[test]
fn a_set_position_gets_fen_and_setup_and_black_to_move_numbering() {
    let fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 0 37";
    let mut events = vec![start(fen, None)];
    events.extend(moves(fen, CastlingMode::Standard, &["e8d7", "e2e4"], &[]));
    let game = record(GameInfo::default(), &events);
    let pgn = game.to_pgn();
    assert!(
        pgn.contains("[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 37\"]\n"),
        "{pgn}"
    );
    assert!(pgn.contains("\n37... Kd7 38. e4 *\n"), "{pgn}");
    assert!(!pgn.contains("Variant"));
    game.check_moves().unwrap();
}

#[test]
fn chess960_gets_variant_fen_and_king_takes_rook_castling() {
    // Start position 289 (BQNBRKRN): king f1 beside the g1 rook, so White can
    // castle short at once; Chess960 UCI writes it king-takes-rook, f1g1.
    let fen = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w EGeg - 0 1";
    let mut events = vec![start(fen, Some(289))];
    events.extend(moves(
        fen,
        CastlingMode::Chess960,
        &["g2g3", "g7g6", "f1g1"],
        &[],
    ));
    let game = record(GameInfo::default(), &events);
    let pgn = game.to_pgn();
    assert!(
        pgn.contains("[Variant \"Chess960\"]\n[SetUp \"1\"]\n[FEN \""),
        "{pgn}"
    );
    assert!(pgn.contains("1. g3 g6 2. O-O *"), "{pgn}");
    game.check_moves().unwrap();
}

#[test]
fn retractions_take_moves_back_and_reopen_the_result() {
    let mut events = vec![start(START, None)];
    let played = moves(
        START,
        CastlingMode::Standard,
        &["e2e4", "e7e5", "g1f3", "b8c6"],
        &[],
    );
    events.extend(played[..3].iter().cloned());
    events.push(GameEvent::Result {
        result: GameResult::Draw,
        reason: ResultReason::Arbiter,
    });
    events.push(GameEvent::Retraction {
        from_ply: 3,
        plies: vec![3],
    });
    // The game goes on differently: 2. Nc3 instead of Nf3.
    let other = moves(
        START,
        CastlingMode::Standard,
        &["e2e4", "e7e5", "b1c3"],
        &[],
    );
    events.push(other[2].clone());
    // Provisional moves and clock readings leave the record alone.
    let mut provisional = played[3].clone();
    if let GameEvent::Move(m) = &mut provisional {
        m.verified = false;
    }
    events.push(provisional);
    events.push(GameEvent::Clock {
        white_ms: 1,
        black_ms: 2,
        running: None,
    });
    let game = record(GameInfo::default(), &events);
    let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["e4", "e5", "Nc3"]);
    assert_eq!(game.result, None);
    assert!(game.to_pgn().ends_with("1. e4 e5 2. Nc3 *\n\n"));
}

#[test]
fn a_gap_in_plies_is_an_error_not_a_wrong_record() {
    let played = moves(START, CastlingMode::Standard, &["e2e4", "e7e5"], &[]);
    let mut r = GameRecorder::new(GameInfo::default());
    r.push(&start(START, None)).unwrap();
    assert_eq!(
        r.push(&played[1]),
        Err(RecordError::Gap { have: 0, got: 2 })
    );
    assert!(r.current().unwrap().moves.is_empty());
}

#[test]
fn the_recorder_splits_games_and_ignores_restarts_before_a_move() {
    let mut r = GameRecorder::new(GameInfo::default());
    let first = moves(
        START,
        CastlingMode::Standard,
        &["f2f3", "e7e5", "g2g4", "d8h4"],
        &[],
    );
    // Events before any start belong to no game.
    r.push(&first[0]).unwrap();
    r.push(&start(START, None)).unwrap();
    r.push(&start(START, None)).unwrap();
    for e in &first {
        r.push(e).unwrap();
    }
    r.push(&GameEvent::Result {
        result: GameResult::BlackWins,
        reason: ResultReason::Checkmate,
    })
    .unwrap();
    assert!(
        r.take_finished().is_empty(),
        "the game ends at the next start"
    );
    r.push(&start(START, None)).unwrap();
    let done = r.take_finished();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].moves.len(), 4);
    assert!(done[0].to_pgn().contains("2. g4 Qh4# 0-1"));
    // The new game has no move yet: nothing more to print.
    assert!(r.finish().is_empty());
}

#[test]
fn check_moves_catches_a_wrong_san() {
    let mut events = vec![start(START, None)];
    events.extend(moves(START, CastlingMode::Standard, &["e2e4"], &[]));
    let mut game = record(GameInfo::default(), &events);
    game.moves[0].san = "e3".into();
    assert!(matches!(
        game.check_moves(),
        Err(RecordError::BadMove { ply: 1, .. })
    ));
}

/// What an independent PGN parser sees in a game.
#[derive(Default, Debug)]
struct Parsed {
    tags: Vec<(String, String)>,
    sans: Vec<String>,
    comments: Vec<String>,
    outcome: Option<String>,
}

struct Collect;

impl Visitor for Collect {
    type Tags = Parsed;
    type Movetext = Parsed;
    type Output = Parsed;

    fn begin_tags(&mut self) -> ControlFlow<Parsed, Parsed> {
        ControlFlow::Continue(Parsed::default())
    }

    fn tag(&mut self, tags: &mut Parsed, name: &[u8], value: RawTag<'_>) -> ControlFlow<Parsed> {
        tags.tags.push((
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        ));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Parsed) -> ControlFlow<Parsed, Parsed> {
        ControlFlow::Continue(tags)
    }

    fn san(&mut self, m: &mut Parsed, san: SanPlus) -> ControlFlow<Parsed> {
        m.sans.push(san.to_string());
        ControlFlow::Continue(())
    }

    fn comment(&mut self, m: &mut Parsed, c: RawComment<'_>) -> ControlFlow<Parsed> {
        m.comments
            .push(String::from_utf8_lossy(c.as_bytes()).trim().to_string());
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, m: &mut Parsed, o: pgn_reader::Outcome) -> ControlFlow<Parsed> {
        m.outcome = Some(o.to_string());
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, m: Parsed) -> Parsed {
        m
    }
}

/// A real 29-move game (the dgtdriver recording's moves) with clocks on every
/// move: wrapped at 80 columns, read back whole by pgn-reader.
#[test]
fn a_long_game_wraps_and_parses_back() {
    let uci_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/eboard/dgtdriver-recordings/1.uci"
    ))
    .unwrap();
    let ucis: Vec<&str> = uci_text
        .split_whitespace()
        .filter(|t| !t.ends_with('.') && *t != "*")
        .collect();
    assert_eq!(ucis.len(), 57);
    let clocks: Vec<(u64, u64)> = (0..ucis.len() as u64)
        .map(|i| (180_000 - i * 1_500, 3_000 + i))
        .collect();
    let mut events = vec![start(START, None)];
    events.extend(moves(START, CastlingMode::Standard, &ucis, &clocks));
    let game = record(
        GameInfo {
            white: Some("Ärbiter \"Quote\" Ünïcode".into()),
            ..GameInfo::default()
        },
        &events,
    );
    game.check_moves().unwrap();
    let pgn = game.to_pgn();
    for line in pgn.lines() {
        assert!(line.chars().count() <= MAX_LINE, "{line:?}");
        assert!(
            !line.ends_with('.'),
            "a move number stays with its move: {line:?}"
        );
    }
    let mut reader = Reader::new(std::io::Cursor::new(pgn.as_bytes()));
    let parsed = reader.read_game(&mut Collect).unwrap().unwrap();
    let sans: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
    assert_eq!(parsed.sans, sans);
    assert_eq!(parsed.comments.len(), 57, "a clock comment on every move");
    assert_eq!(parsed.comments[0], "[%clk 0:03:00] [%emt 0:00:03]");
    assert_eq!(parsed.outcome.as_deref(), Some("*"));
    assert!(parsed
        .tags
        .contains(&("White".to_string(), "Ärbiter \"Quote\" Ünïcode".to_string())));
    let tag_names: Vec<&str> = parsed.tags.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        tag_names,
        ["Event", "Site", "Date", "Round", "White", "Black", "Result"]
    );
}
