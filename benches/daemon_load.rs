//! The daemon on a host loaded by other work.
//!
//! One real `eboard-bridge run` (this build's release binary) follows `boards`
//! DGT boards on ptys, each playing a different real game from `tests/data`
//! (14 to 32 plies, thinking ÷400, hands at human speed). This process drives
//! the boards from a thread kept off CPU 0, so that they play on time. The
//! daemon, with every thread it has and starts, is pinned to CPU 0, and
//! `busy` processes spin there beside it: each of the daemon's threads gets
//! about 1/(busy + 1) of that core. What counts is whether the games come out
//! right, not how fast: exact games, warning and error alerts, and whether the
//! daemon said it fell behind its boards.
//!
//! `cargo bench --bench daemon_load -- [boards] [busy]` (default 64 8; Linux
//! with at least 2 CPUs, and `taskset` and `yes` installed).

#[allow(dead_code)]
#[path = "../tests/child_guard/mod.rs"]
mod child_guard;
#[path = "../tests/daemon_common/mod.rs"]
mod daemon_common;
#[path = "../tests/live_daemon/mod.rs"]
mod live_daemon;
#[allow(dead_code)]
#[path = "support/pty_boards.rs"]
mod pty_boards;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use child_guard::ChildGuard;
use live_daemon::Daemon;
use pty_boards::{drive, open_board, stat_cpu_seconds, Evidence};

/// The moves a board's event log ends with (verified moves, less those
/// withdrawn), and its warning and error alerts.
fn read_log(path: &Path) -> (Vec<String>, Vec<String>) {
    let mut moves: Vec<String> = Vec::new();
    let mut alerts = Vec::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match e["type"].as_str() {
            Some("move") if e["verified"] == true => {
                let ply = e["ply"].as_u64().unwrap() as usize;
                moves.truncate(ply.saturating_sub(1));
                moves.push(e["uci"].as_str().unwrap().to_owned());
            }
            Some("retraction") => {
                let from = e["from_ply"].as_u64().unwrap() as usize;
                moves.truncate(from.saturating_sub(1));
            }
            Some("alert") if e["severity"] != "info" => {
                let text = |k: &str| e[k].as_str().unwrap_or("?").to_owned();
                alerts.push(format!("{} {}", text("article"), text("kind")));
            }
            _ => {}
        }
    }
    (moves, alerts)
}

/// Keeps the calling thread off CPU 0, where the daemon and the load are.
fn leave_cpu_0() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        cpus >= 2,
        "this bench needs 2 CPUs: one loaded, one for the boards"
    );
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and
    // sched_setaffinity only read and write the set passed to them.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 1..cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        let r = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(
            r,
            0,
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<usize>().ok());
    let boards = args.next().unwrap_or(64);
    let busy = args.next().unwrap_or(8);
    let games = daemon_common::short_games("games/gnuchess-book-1.02-shared.pgn", 14..=32, boards);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut text = format!(
        "[storage]\ndata_dir = {data:?}\n[discovery]\nenabled = false\n\
         [device]\nprobe_ms = 1000\nsilence_timeout_ms = 3000\n"
    );
    let mut vboards = Vec::new();
    for (i, (game, _)) in games.iter().enumerate() {
        let (b, path) = open_board(game, 500 + i as u64);
        vboards.push(b);
        text.push_str(&format!(
            "[[board]]\nport = {path:?}\nprotocol = \"dgt\"\nnumber = {}\n",
            i + 1
        ));
    }
    let config = dir.path().join("eboard-bridge.toml");
    std::fs::write(&config, text).unwrap();

    // The load first, so that the daemon starts on a loaded core.
    let spinners: Vec<ChildGuard> = (0..busy)
        .map(|_| {
            ChildGuard::new(
                Command::new("taskset")
                    .args(["-c", "0", "yes"])
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("taskset and yes (util-linux, coreutils)"),
            )
        })
        .collect();
    let daemon = Daemon::start_env(&config, "off", &[]);
    let pinned = Command::new("taskset")
        .args(["-a", "-c", "-p", "0", &daemon.pid().to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(pinned.success(), "taskset could not pin the daemon");
    let stat = format!("/proc/{}/stat", daemon.pid());
    let cpu_start = stat_cpu_seconds(Path::new(&stat));
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let evidence = Arc::new(Mutex::new(vec![Evidence::default(); boards]));
    let driver = {
        let (e, s) = (evidence.clone(), stop.clone());
        std::thread::Builder::new()
            .name("boards".into())
            .spawn(move || {
                leave_cpu_0();
                drive(vboards, e, s)
            })
            .unwrap()
    };
    let log = |n: usize| data.join(format!("journal/events/board-{n}.jsonl"));
    let mut last_change = Instant::now();
    let mut last_count = 0;
    let mut finished = started.elapsed();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let got: Vec<Vec<String>> = (1..=boards).map(|n| read_log(&log(n)).0).collect();
        let count: usize = got.iter().map(Vec::len).sum();
        if count != last_count {
            last_count = count;
            last_change = Instant::now();
            finished = started.elapsed();
        }
        let all = got.iter().zip(&games).all(|(g, (_, want))| g == want);
        if all || last_change.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let cpu = stat_cpu_seconds(Path::new(&stat)) - cpu_start;
    stop.store(true, Ordering::Relaxed);
    driver.join().unwrap();
    drop(spinners);
    let daemon_log = daemon.log_text();
    daemon.stop();

    let (mut exact, mut short, mut wrong, mut alerts) = (0, 0, Vec::new(), Vec::new());
    for (i, (_, want)) in games.iter().enumerate() {
        let (got, a) = read_log(&log(i + 1));
        if got == *want {
            exact += 1;
        } else if want.starts_with(&got) {
            short += 1;
        } else {
            wrong.push(i + 1);
        }
        alerts.extend(a.into_iter().map(|a| format!("board {}: {a}", i + 1)));
    }
    let plies: usize = games.iter().map(|(_, w)| w.len()).sum();
    println!(
        "{boards} boards ({plies} plies) on a daemon pinned to CPU 0 beside {busy} busy processes: \
         {exact} exact, {short} stopped short, {} wrong {wrong:?}",
        wrong.len()
    );
    println!("warning and error alerts: {} {alerts:?}", alerts.len());
    let behind = daemon_log.matches("behind its boards").count();
    println!("the daemon said it fell behind its boards {behind} times");
    let secs = finished.as_secs_f64();
    println!(
        "last move journaled {secs:.1} s after the start; daemon CPU {cpu:.1} s = {:.1} % of a core",
        100.0 * cpu / secs
    );
}
