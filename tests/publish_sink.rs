//! The PGN file sink: round folders, and atomic replacement.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{GameEvent, MoveEvent, Stamped, TrackerEvent};
use eboard_bridge::publish::sink::{run, write_atomic, write_round};
use eboard_bridge::publish::{Tournament, TournamentConfig};
use eboard_bridge::sim::games::load_pgn;

#[test]
fn a_reader_never_sees_a_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("games.pgn");
    // Two versions of different lengths, each large enough that a plain
    // rewrite would be observed half-written.
    let a = "[Event \"A\"]\n\n1. e4 *\n".repeat(20_000);
    let b = "[Event \"B\"]\n\n1. d4 d5 2. c4 *\n".repeat(30_000);
    write_atomic(&path, a.as_bytes()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, a, b, stop) = (path.clone(), a.clone(), b.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let got = std::fs::read_to_string(&path).unwrap();
                assert!(got == a || got == b, "partial file of {} bytes", got.len());
                reads += 1;
            }
            reads
        })
    };
    for i in 0..200 {
        write_atomic(
            &path,
            if i % 2 == 0 {
                b.as_bytes()
            } else {
                a.as_bytes()
            },
        )
        .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "games.pgn")
        .collect();
    assert!(
        leftovers.is_empty(),
        "temp files left behind: {leftovers:?}"
    );
}

#[test]
fn a_missing_folder_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = write_atomic(&dir.path().join("no/such/games.pgn"), b"x").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("no/such/games.pgn") && msg.contains("writable"),
        "{msg}"
    );
}

fn start_and_move(hub: &Hub, board: u32) {
    let ev = |ply, event| Stamped {
        board,
        ply,
        t_ms: 0,
        event: TrackerEvent::Game(event),
    };
    hub.apply(
        &ev(
            0,
            GameEvent::GameStart {
                fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
                chess960: None,
                rotated: false,
            },
        ),
        true,
    );
    hub.apply(
        &ev(
            1,
            GameEvent::Move(MoveEvent {
                ply: 1,
                san: "d4".into(),
                uci: "d2d4".into(),
                fen: "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1".into(),
                verified: true,
                clock_ms: Some(600_000),
                emt_ms: None,
                reconstructed: false,
                corrected: false,
            }),
        ),
        true,
    );
}

fn tournament() -> Tournament {
    Tournament::new(
        TournamentConfig {
            name: Some("Sink Open".into()),
            current_round: 2,
            ..TournamentConfig::default()
        },
        &[],
    )
    .unwrap()
}

#[test]
fn the_round_folder_holds_games_pgn_and_one_file_per_board() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::new();
    start_and_move(&hub, 1);
    start_and_move(&hub, 4);
    let folder = write_round(dir.path(), &hub, &tournament()).unwrap();
    assert_eq!(folder, dir.path().join("round-2"));
    let all = load_pgn(&std::fs::read_to_string(folder.join("games.pgn")).unwrap()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].header("Round"), Some("2.4"));
    let four = load_pgn(&std::fs::read_to_string(folder.join("game-4.pgn")).unwrap()).unwrap();
    assert_eq!(four.len(), 1);
    assert_eq!(four[0].uci_moves(), ["d2d4"]);
    assert_eq!(four[0].header("Event"), Some("Sink Open"));
    assert!(folder.join("game-1.pgn").exists());
}

#[tokio::test]
async fn the_sink_rewrites_the_files_after_each_event() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Arc::new(Hub::new());
    let task = tokio::spawn(run(
        dir.path().to_path_buf(),
        Arc::clone(&hub),
        Arc::new(tournament()),
    ));
    start_and_move(&hub, 3);
    let file = dir.path().join("round-2/game-3.pgn");
    let mut text = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("1. d4") {
            break;
        }
    }
    assert!(text.contains("1. d4 { [%clk 0:10:00] }"), "{text}");
    task.abort();
}
