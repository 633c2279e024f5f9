//! Restart time of the daemon with a journal of many boards' games.
//!
//! Writes a journal as a run of the daemon following `boards` boards would
//! have left it (each board's capture made by the simulator: a real game's
//! first `plies` plies played by the hand model on a virtual DGT board at
//! human speed, thinking included, in UPDATE_NICE mode; with the events a
//! session derives from it in the board's event log), then starts the daemon
//! on it with every board unplugged and measures the time until READY, by
//! which every game is rebuilt in the hub. It checks the rebuilt hub holds
//! every board's plies and that nothing is published again.
//!
//! `cargo bench --bench daemon_restart -- [boards] [plies]` (default 500 80).

#[path = "../tests/daemon_common/journal_seed.rs"]
mod journal_seed;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::daemon::journal::Journal;
use eboard_bridge::events::GameEvent;
use eboard_bridge::sim::games::{load_pgn_file, Game};
use eboard_bridge::sim::{dgt_capture, SimOptions};

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Standard-start games of at least `plies` plies, cut to `plies`.
fn long_games(plies: usize) -> Vec<Game> {
    let index = std::fs::read_to_string(data("expected/games-index.jsonl")).unwrap();
    let mut files: std::collections::BTreeMap<String, Vec<Game>> = Default::default();
    let mut out = Vec::new();
    for line in index.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["chess960"] != false
            || v["start_fen"] != "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
            || (v["plies"].as_u64().unwrap() as usize) < plies
        {
            continue;
        }
        let file = v["file"].as_str().unwrap().to_owned();
        let games = files
            .entry(file.clone())
            .or_insert_with(|| load_pgn_file(&data(&file)).unwrap());
        let mut g = games[v["game"].as_u64().unwrap() as usize].clone();
        g.moves.truncate(plies);
        out.push(g);
        if out.len() == 64 {
            break;
        }
    }
    assert!(!out.is_empty(), "no game of {plies} plies in the data set");
    out
}

fn dir_size(path: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(path).unwrap().flatten() {
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            dir_size(&e.path())
        } else {
            m.len()
        };
    }
    total
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let boards = args.next().unwrap_or(500);
    let plies = args.next().unwrap_or(80);
    let games = long_games(plies);
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");

    let seeded = Instant::now();
    let mut config = Config::default();
    config.storage.data_dir = data_dir.clone();
    config.discovery.enabled = false;
    // A journal per 100 boards: each keeps its files open.
    let mut journal = None;
    let mut chunks_total = 0usize;
    for i in 0..boards {
        if i % 100 == 0 {
            if let Some(mut j) = journal.take() {
                Journal::sync(&mut j).unwrap();
            }
            journal = Some(Journal::open(&data_dir).unwrap());
        }
        let game = &games[i % games.len()];
        let chunks = dgt_capture(
            game,
            &SimOptions {
                seed: 7_000 + i as u64,
                ..SimOptions::default()
            },
        );
        let number = i as u32 + 1;
        let events = journal_seed::derive(number, &chunks);
        let verified = events
            .iter()
            .filter(|e| matches!(&e.event, eboard_bridge::events::TrackerEvent::Game(GameEvent::Move(m)) if m.verified))
            .count();
        assert_eq!(
            verified, plies,
            "board {number}: the simulation is followed"
        );
        let port = dir.path().join(format!("unplugged-{number}"));
        journal_seed::seed_port(journal.as_mut().unwrap(), &port, number, &chunks, &events);
        chunks_total += chunks.len();
        config.boards.push(BoardConfig {
            port,
            protocol: Protocol::DGT,
            bus: false,
            number: Some(number),
            serial: None,
            leds: None,
        });
    }
    if let Some(mut j) = journal.take() {
        j.sync().unwrap();
    }
    config.validate().unwrap();
    println!(
        "journal: {boards} boards x {plies} plies, {chunks_total} chunks, {:.1} MB of captures, {:.1} MB of event logs, written in {:.1} s",
        dir_size(&data_dir.join("journal/captures")) as f64 / 1e6,
        dir_size(&data_dir.join("journal/events")) as f64 / 1e6,
        seeded.elapsed().as_secs_f64()
    );
    // Run files are named by their start time in ms: the restart is a later run.
    std::thread::sleep(Duration::from_millis(5));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let hub = Arc::new(Hub::new());
    let mut public = hub.subscribe_public();
    let (ready_at, stopped) = runtime.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Instant>();
        let started = Instant::now();
        let daemon = tokio::spawn(eboard_bridge::daemon::run(
            config,
            hub.clone(),
            async {
                let _ = stop_rx.await;
            },
            move || {
                let _ = ready_tx.send(Instant::now());
            },
        ));
        let ready = ready_rx.await.unwrap() - started;
        for b in 1..=boards as u32 {
            assert_eq!(hub.verified_plies(b), plies, "board {b} rebuilt");
        }
        stop_tx.send(()).unwrap();
        daemon.await.unwrap().unwrap();
        (ready, started.elapsed())
    });
    let mut republished = 0;
    while let Ok(e) = public.try_recv() {
        if matches!(&e.event, GameEvent::Move(m) if m.verified) {
            republished += 1;
        }
    }
    assert_eq!(
        republished, 0,
        "a restart publishes nothing already published"
    );
    println!(
        "restart to READY (every game rebuilt in the hub): {:.3} s; start to stopped {:.3} s",
        ready_at.as_secs_f64(),
        stopped.as_secs_f64()
    );
}
