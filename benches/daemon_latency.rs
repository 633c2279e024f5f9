//! Latency of the daemon from board to subscriber, on pseudo-terminals.
//!
//! Each board is a `VirtualBoard` driven by this process on the master side of
//! its own pty, playing a real game with the hand model (thinking compressed
//! 400 times, hands at human speed); the daemon runs in-process on the slave
//! sides, exactly as `eboard-bridge run` would. For every verified move the
//! bench takes two times until the move event is received from the hub's
//! public broadcast channel:
//! - from the last byte of the clock-press frame written to the port (the
//!   issue's definition);
//! - from the last byte of the last evidence frame: the press frame or, when
//!   the board reported the completing square after the press (it scans every
//!   200-250 ms, the clock frame goes out at once), that field update. No
//!   tracker can verify a move before the board has shown it, so this is the
//!   daemon's own latency; the first includes the board's scan delay.
//!
//! It also reports the daemon's CPU time and the process's resident memory per
//! board.
//!
//! `cargo bench --bench daemon_latency -- [boards]` (default 1).

#[path = "support/pty_boards.rs"]
mod pty_boards;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::load_game;
use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::GameEvent;
use pty_boards::{drive, open_board, percentile, stat_cpu_seconds, Evidence};

/// CPU seconds (user + system) of this process's threads named like `prefix`.
fn cpu_seconds(prefix: &str) -> f64 {
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            total += stat_cpu_seconds(&task.path().join("stat"));
        }
    }
    total
}

/// CPU seconds of the daemon: its runtime's threads, and the thread its ports
/// are read on.
fn daemon_cpu_seconds() -> f64 {
    cpu_seconds("daemon") + cpu_seconds("eboard-ports")
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let boards: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1);
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/chessjs-benchmark-lichess-2012-2013-part-b.pgn");
    // Game 4 of the file: 127 plies, enough presses for a percentile at one board.
    let game = load_game(&file, 4).unwrap();
    let plies = game.moves.len();
    let dir = tempfile::tempdir().unwrap();
    let rss_before = rss_kib();
    let mut vboards = Vec::new();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().join("data");
    config.discovery.enabled = false;
    for i in 0..boards {
        let (b, path) = open_board(&game, 1000 + i as u64);
        vboards.push(b);
        config.boards.push(BoardConfig {
            port: path,
            protocol: Protocol::DGT,
            bus: false,
            number: Some(i as u32 + 1),
            serial: None,
            leds: None,
        });
    }
    config.validate().unwrap();
    let evidence = Arc::new(Mutex::new(vec![Evidence::default(); boards]));
    let stop = Arc::new(AtomicBool::new(false));
    let driver = {
        let (p, s) = (evidence.clone(), stop.clone());
        std::thread::Builder::new()
            .name("boards".into())
            .spawn(move || drive(vboards, p, s))
            .unwrap()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("daemon")
        .enable_all()
        .build()
        .unwrap();
    let hub = Arc::new(Hub::new());
    let mut rx = hub.subscribe_public();
    let started = Instant::now();
    let cpu_start = daemon_cpu_seconds();
    let (lat, elapsed, cpu, rss_after, unpressed) = runtime.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let daemon = tokio::spawn(eboard_bridge::daemon::run(
            config,
            hub.clone(),
            async {
                let _ = stop_rx.await;
            },
            || {},
        ));
        // (press -> event, last evidence -> event, completed after the
        // press, castling)
        let mut lat: Vec<(Duration, Duration, bool, bool)> = Vec::new();
        // Verified with no press of their own since the previous move (by the
        // opponent's next move, or a hold).
        let mut unpressed = 0usize;
        let mut done = vec![0usize; boards];
        // Stop when every game is over, or when nothing was verified for 10 s
        // (a board the tracker lost: reported below, not waited for forever).
        let mut last_progress = Instant::now();
        while done.iter().any(|&d| d < plies) && last_progress.elapsed() < Duration::from_secs(10) {
            match tokio::time::timeout(Duration::from_secs(1), rx.recv()).await {
                Ok(Ok(e)) => {
                    if let GameEvent::Move(m) = &e.event {
                        if m.verified {
                            let at = Instant::now();
                            let b = e.board as usize - 1;
                            done[b] += 1;
                            last_progress = at;
                            match evidence.lock().unwrap()[b].take_for_move(at) {
                                Some(l) => lat.push((
                                    l.from_press,
                                    l.from_evidence,
                                    l.completed_after_press,
                                    m.san.starts_with("O-O"),
                                )),
                                None => unpressed += 1,
                            }
                        }
                    }
                }
                Ok(Err(e)) => panic!("the bench fell behind the hub: {e}"),
                Err(_) => {}
            }
        }
        let elapsed = started.elapsed();
        let cpu = daemon_cpu_seconds() - cpu_start;
        let rss = rss_kib();
        let verified: usize = done.iter().sum();
        if verified != boards * plies {
            let short = done.iter().filter(|&&d| d < plies).count();
            println!(
                "{short} boards stalled before the end: {verified} of {} moves verified",
                boards * plies
            );
        }
        stop_tx.send(()).unwrap();
        daemon.await.unwrap().unwrap();
        (lat, elapsed, cpu, rss, unpressed)
    });
    stop.store(true, Ordering::Relaxed);
    driver.join().unwrap();
    let after_press = lat.iter().filter(|l| l.2).count();
    let mut from_press: Vec<Duration> = lat.iter().map(|l| l.0).collect();
    let mut from_evidence: Vec<Duration> = lat.iter().map(|l| l.1).collect();
    from_press.sort();
    from_evidence.sort();
    println!(
        "boards {boards}, verified moves {} with their press, {unpressed} without, in {:.1} s",
        lat.len(),
        elapsed.as_secs_f64()
    );
    println!(
        "press frame written -> verified move received: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&from_press, 0.5),
        percentile(&from_press, 0.99),
        from_press[from_press.len() - 1]
    );
    println!(
        "last evidence frame written -> verified move received: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&from_evidence, 0.5),
        percentile(&from_evidence, 0.99),
        from_evidence[from_evidence.len() - 1]
    );
    println!(
        "completing square reported after the press: {after_press} of {} moves",
        lat.len()
    );
    let slow = from_evidence
        .iter()
        .filter(|d| **d > Duration::from_millis(5))
        .count();
    println!(
        "verified more than 5 ms after the last evidence: {slow} of {}",
        lat.len()
    );
    // Where the slow ones are: castlings may settle by design (a rook
    // reported before its king is a legal rook move of its own).
    for (lo, hi) in [(5, 50), (50, 300), (300, 1_000), (1_000, u64::MAX)] {
        let (lo_d, hi_d) = (Duration::from_millis(lo), Duration::from_millis(hi));
        let slow: Vec<_> = lat.iter().filter(|l| l.1 > lo_d && l.1 <= hi_d).collect();
        let castlings = slow.iter().filter(|l| l.3).count();
        println!(
            "  after the evidence {lo}..{hi} ms: {} moves, {castlings} of them castlings",
            slow.len()
        );
    }
    println!(
        "daemon CPU {:.2} s = {:.2} % of one core per board; RSS +{} KiB = {:.1} KiB per board (with the board emulators)",
        cpu,
        100.0 * cpu / elapsed.as_secs_f64() / boards as f64,
        rss_after.saturating_sub(rss_before),
        rss_after.saturating_sub(rss_before) as f64 / boards as f64
    );
}
