//! End-to-end latency of a venue: boards on ptys → hall daemons → mosquitto
//! → the aggregator's public event stream (issue 15, `docs/mqtt.md`).
//!
//! A real mosquitto, `hosts` real `eboard-bridge run` daemons (the bench's
//! release binary), each following `boards` boards, and one aggregator
//! (`[mqtt] subscribe = true`). Every board is a `VirtualBoard` this process
//! drives on the master side of a pty (`support/pty_boards.rs`: a real game
//! with the hand model, thinking ÷400, hands at human speed); the bench reads
//! the aggregator's `/events` (SSE) and, for every verified move, takes the
//! time from the last byte of its clock-press frame written to the pty (and
//! from its last evidence frame) to the move's line on the stream. It also
//! reports the CPU time of the broker and of each daemon over the run.
//!
//! `cargo bench --bench mqtt_venue -- [boards per host] [hosts]`
//! (default 100 3; mosquitto installed: `apt-get install mosquitto`).

#[allow(dead_code)]
#[path = "../tests/child_guard/mod.rs"]
mod child_guard;
#[path = "../tests/live_daemon/mod.rs"]
mod live_daemon;
#[path = "../tests/mosquitto/mod.rs"]
mod mosquitto;
#[path = "support/pty_boards.rs"]
mod pty_boards;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::load_game;
use live_daemon::Daemon;
use mosquitto::Broker;
use pty_boards::{drive, open_board, percentile, stat_cpu_seconds, Evidence, MoveLatency};

/// CPU seconds of process `pid` (every thread).
fn process_cpu(pid: u32) -> f64 {
    stat_cpu_seconds(Path::new(&format!("/proc/{pid}/stat")))
}

/// The `[mqtt]` lines every daemon of the venue shares.
fn mqtt_lines(broker: u16, host: &str) -> String {
    format!(
        "[mqtt]\nenabled = true\nbroker = \"mqtt://127.0.0.1:{broker}\"\nevent = \"bench\"\n\
         host = {host:?}\n"
    )
}

/// Verified moves received on `base`'s `/events`, as (board, when).
fn follow(base: &str) -> mpsc::Receiver<(u32, Instant)> {
    let (tx, rx) = mpsc::channel();
    let url = format!("{base}/events");
    std::thread::spawn(move || {
        let client = reqwest::blocking::Client::builder()
            .timeout(None)
            .build()
            .unwrap();
        let resp = client.get(url).send().expect("the aggregator's /events");
        for line in BufReader::new(resp).lines() {
            let Ok(line) = line else { break };
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let at = Instant::now();
            let Ok(v) = serde_json::from_str::<serde_json::Value>(data) else {
                continue;
            };
            if v["type"] == "move"
                && v["verified"] == true
                && tx.send((v["board"].as_u64().unwrap() as u32, at)).is_err()
            {
                break;
            }
        }
    });
    rx
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let per_host = args.next().unwrap_or(100);
    let hosts = args.next().unwrap_or(3);
    let boards = per_host * hosts;
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/chessjs-benchmark-lichess-2012-2013-part-b.pgn");
    let game = load_game(&file, 4).unwrap();
    let plies = game.moves.len();
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(dir.path());

    let agg_dir = dir.path().join("aggregator");
    std::fs::create_dir_all(&agg_dir).unwrap();
    let agg_config = agg_dir.join("eboard-bridge.toml");
    std::fs::write(
        &agg_config,
        format!(
            "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n{}\
             publish = false\nsubscribe = true\n",
            agg_dir.join("data"),
            mqtt_lines(broker.port, "aggregator")
        ),
    )
    .unwrap();
    let aggregator = Daemon::start_env(&agg_config, "off", &[]);
    let received = follow(&aggregator.base);

    let mut vboards = Vec::new();
    let mut halls = Vec::new();
    for h in 0..hosts {
        let name = format!("hall-{h}");
        let hall_dir = dir.path().join(&name);
        std::fs::create_dir_all(&hall_dir).unwrap();
        let mut text = format!(
            "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n{}",
            hall_dir.join("data"),
            mqtt_lines(broker.port, &name)
        );
        for i in 0..per_host {
            let number = h * per_host + i + 1;
            let (b, path) = open_board(&game, 1000 + number as u64);
            vboards.push(b);
            text.push_str(&format!(
                "[[board]]\nport = {path:?}\nprotocol = \"dgt\"\nnumber = {number}\n"
            ));
        }
        let config = hall_dir.join("eboard-bridge.toml");
        std::fs::write(&config, text).unwrap();
        halls.push(config);
    }
    let evidence = Arc::new(Mutex::new(vec![Evidence::default(); boards]));
    let stop = Arc::new(AtomicBool::new(false));
    let daemons: Vec<Daemon> = halls
        .iter()
        .map(|c| Daemon::start_env(c, "off", &[]))
        .collect();
    let cpu = |d: &[&Daemon]| -> Vec<f64> { d.iter().map(|d| process_cpu(d.pid())).collect() };
    let cpu_start = (
        process_cpu(broker.pid()),
        cpu(&[&aggregator]),
        cpu(&daemons.iter().collect::<Vec<_>>()),
    );
    let started = Instant::now();
    // The boards start playing when their host first speaks to them.
    let driver = {
        let (e, s) = (evidence.clone(), stop.clone());
        std::thread::Builder::new()
            .name("boards".into())
            .spawn(move || drive(vboards, e, s))
            .unwrap()
    };
    let mut lat: Vec<MoveLatency> = Vec::new();
    let mut unpressed = 0usize;
    let mut done = vec![0usize; boards];
    let mut last_progress = Instant::now();
    while done.iter().any(|&d| d < plies) && last_progress.elapsed() < Duration::from_secs(20) {
        let Ok((board, at)) = received.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        let b = board as usize - 1;
        done[b] += 1;
        last_progress = at;
        match evidence.lock().unwrap()[b].take_for_move(at) {
            Some(l) => lat.push(l),
            None => unpressed += 1,
        }
    }
    let elapsed = started.elapsed();
    let played = last_progress.saturating_duration_since(started);
    let cpu_end = (
        process_cpu(broker.pid()),
        cpu(&[&aggregator]),
        cpu(&daemons.iter().collect::<Vec<_>>()),
    );
    stop.store(true, Ordering::Relaxed);
    driver.join().unwrap();
    let verified: usize = done.iter().sum();
    println!(
        "{hosts} hosts x {per_host} boards through mosquitto to one aggregator: {verified} of {} \
         verified moves on the aggregator's stream ({} with their press, {unpressed} without) in {:.1} s",
        boards * plies,
        lat.len(),
        elapsed.as_secs_f64()
    );
    if verified != boards * plies {
        let short = done.iter().filter(|&&d| d < plies).count();
        println!("{short} boards stopped short of the game's {plies} plies");
    }
    // What the hosts verified, from their journals: the aggregator must have
    // every one of them, whatever a tracker made of its board.
    let mut differ = Vec::new();
    for (i, &got) in done.iter().enumerate() {
        let (h, n) = (i / per_host, i + 1);
        let log = dir
            .path()
            .join(format!("hall-{h}/data/journal/events/board-{n}.jsonl"));
        let logged = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"type\":\"move\"") && l.contains("\"verified\":true"))
            .count();
        if logged != got {
            differ.push(format!("board {n}: host {logged}, aggregator {got}"));
        }
    }
    println!(
        "boards whose verified moves differ between the host's journal and the aggregator's stream: {}",
        if differ.is_empty() {
            "none".to_owned()
        } else {
            differ.join("; ")
        }
    );
    let mut from_press: Vec<Duration> = lat.iter().map(|l| l.from_press).collect();
    let mut from_evidence: Vec<Duration> = lat.iter().map(|l| l.from_evidence).collect();
    from_press.sort();
    from_evidence.sort();
    println!(
        "press frame written -> move on the aggregator's SSE: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&from_press, 0.5),
        percentile(&from_press, 0.99),
        from_press[from_press.len() - 1]
    );
    println!(
        "last evidence frame written -> move on the aggregator's SSE: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&from_evidence, 0.5),
        percentile(&from_evidence, 0.99),
        from_evidence[from_evidence.len() - 1]
    );
    println!(
        "completing square reported after the press: {} of {} moves",
        lat.iter().filter(|l| l.completed_after_press).count(),
        lat.len()
    );
    // Over the play (to the last move received), not the idle wait after it.
    let secs = played.as_secs_f64();
    println!("CPU over the {secs:.1} s of play:");
    let share =
        |a: f64, b: f64| format!("{:.1} s = {:.1} % of a core", b - a, 100.0 * (b - a) / secs);
    println!("  mosquitto {}", share(cpu_start.0, cpu_end.0));
    println!("  aggregator {}", share(cpu_start.1[0], cpu_end.1[0]));
    for (h, (a, b)) in cpu_start.2.iter().zip(&cpu_end.2).enumerate() {
        println!("  hall-{h} ({per_host} boards) {}", share(*a, *b));
    }
    drop(daemons);
    drop(aggregator);
}
