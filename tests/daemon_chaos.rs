//! The daemon in-process while boards are unplugged and plugged back again and
//! again: a pty closed at a seeded random moment (often mid-move, a piece in
//! the air) and a new one opened at the same link path, standing where the game
//! stood. No verified move may be lost or published twice.

mod daemon_common;

mod child_guard;
use child_guard::ChildGuard;
use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions};
use rand::{Rng, SeedableRng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_unplug_replug_cycles_lose_and_duplicate_no_verified_move() {
    const CYCLES: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 40..=48, 1)
        .pop()
        .unwrap();
    let link = dir.path().join("dgt-board");
    let opts = |seed| EmulateOptions {
        seed,
        speed: 400.0,
        hand_speed: 3.0,
        start_after_host: Some(300),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    let mut board = serve_pty(&game, &opts(1)).unwrap();
    let d = start(config(&dir.path().join("data"), vec![single(&link, 1)]));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    let mut verified = Vec::new();
    let started = Instant::now();
    for cycle in 0..CYCLES {
        wait_for("the board online", Duration::from_secs(10), || {
            hub.public_board(1).is_some_and(|b| b.online)
        })
        .await;
        // Unplug at a random moment of play.
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..700))).await;
        board.stop().unwrap();
        wait_for("the board offline", Duration::from_secs(10), || {
            !hub.public_board(1).unwrap().online
        })
        .await;
        drain_verified(&mut public, &mut verified);
        let done = hub.verified_plies(1);
        assert_eq!(ucis(&hub, 1), want[..done], "cycle {cycle}");
        // Plug back: a board standing where the game stood.
        board = serve_pty(&resumed(&game, done), &opts(10 + cycle as u64)).unwrap();
    }
    wait_for("the whole game", Duration::from_secs(30), || {
        ucis(&hub, 1) == want
    })
    .await;
    eprintln!("{CYCLES} cycles and the game in {:?}", started.elapsed());
    drain_verified(&mut public, &mut verified);
    assert_each_ply_once(&verified, 1, &want);
    d.shutdown().await;
    board.stop().unwrap();
}

/// The event log's verified moves of board 1, in order: what subscribers saw.
fn logged_verified(data: &std::path::Path) -> Vec<(u64, String)> {
    let Ok(text) = std::fs::read_to_string(data.join("journal/events/board-1.jsonl")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "move" && v["verified"] == true)
        .map(|v| {
            (
                v["ply"].as_u64().unwrap(),
                v["uci"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// `verified_plies` of the `daemon_start` notes of board 1, oldest first.
fn rebuilt_plies(data: &std::path::Path) -> Vec<u64> {
    let text =
        std::fs::read_to_string(data.join("journal/events/board-1.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "daemon_start")
        .map(|v| v["verified_plies"].as_u64().unwrap())
        .collect()
}

/// `eboard-bridge run` as a child process, killed with SIGKILL at seeded
/// random moments (while the board plays on) and restarted at once, 50 times.
/// After each restart the state rebuilt from the journal (the `daemon_start`
/// note's verified plies) must be what was published before the kill (or one
/// scan more, whose bytes were journaled first); at the end every ply of the
/// game is logged exactly once, in order.
#[test]
fn fifty_kill_9_and_restarts_lose_nothing_and_rebuild_the_same_state() {
    use std::process::{Command, Stdio};
    const KILLS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 40..=48, 2)
        .pop()
        .unwrap();
    let link = dir.path().join("dgt1");
    let _board = serve_pty(
        &game,
        &EmulateOptions {
            seed: 77,
            speed: 400.0,
            hand_speed: 3.0,
            start_after_host: Some(1_500),
            link: Some(link.clone()),
            ..EmulateOptions::default()
        },
    )
    .unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("eboard-bridge.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\ndata_dir = {data:?}\n[discovery]\nenabled = false\n\
             [[board]]\nport = {link:?}\nprotocol = \"dgt\"\nnumber = 1\n"
        ),
    )
    .unwrap();
    let log = dir.path().join("daemon.log");
    let start = || {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        ChildGuard::new(
            Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
                // Tests run in parallel: each daemon takes a free port, not 8080.
                .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
                .arg("run")
                .arg("--config")
                .arg(&config)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        )
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x9);
    let started = Instant::now();
    let mut daemon = start();
    let mut checked = 0;
    for kill in 0..KILLS {
        std::thread::sleep(Duration::from_millis(rng.random_range(200..1_200)));
        daemon.kill().unwrap(); // SIGKILL
        daemon.wait().unwrap();
        let published = logged_verified(&data);
        let notes_before = rebuilt_plies(&data).len();
        daemon = start();
        if published.is_empty() {
            continue;
        }
        // The restarted daemon notes what it rebuilt once it has read the journal.
        let deadline = Instant::now() + Duration::from_secs(10);
        while rebuilt_plies(&data).len() == notes_before {
            assert!(
                Instant::now() < deadline,
                "kill {kill}: no daemon_start note"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let rebuilt = rebuilt_plies(&data)[notes_before];
        // The capture is flushed before the events it gave are logged (the
        // bytes are the journal; events follow from them). A kill between the
        // two leaves the capture one scan ahead of the event log: the rebuilt
        // state then holds that scan's plies too (at most two: a move and its
        // reply), and the restarted daemon logs them; the final check below
        // proves each ply is logged exactly once.
        let published = published.len() as u64;
        assert!(
            (published..=published + 2).contains(&rebuilt),
            "kill {kill}: the rebuilt state ({rebuilt} plies) is what was published before the kill ({published})"
        );
        checked += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(40);
    while logged_verified(&data).len() < want.len() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the whole game"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = daemon.kill();
    daemon.wait().unwrap();
    eprintln!(
        "{KILLS} kills ({checked} checked against the journal) in {:?}",
        started.elapsed()
    );
    let got = logged_verified(&data);
    let expected: Vec<(u64, String)> = want
        .iter()
        .enumerate()
        .map(|(i, u)| (i as u64 + 1, u.clone()))
        .collect();
    assert_eq!(
        got, expected,
        "each ply published once, in order, none lost"
    );
    assert!(checked >= KILLS / 2, "most kills came mid-game: {checked}");
}
