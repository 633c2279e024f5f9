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

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eboard_bridge::config::{BoardConfig, Config, Protocol};
use eboard_bridge::emulate::load_game;
use eboard_bridge::events::GameEvent;
use eboard_bridge::hub::Hub;
use eboard_protocols::dgt::virtual_board::{VirtualBoard, VirtualBoardConfig};
use eboard_protocols::hand::{self, HandConfig, PhysicalAction, PhysicalBoard, TimedAction};
use shakmaty::Position;

/// DGT_MSG_BWTIME with its top bit: the clock frame a press produces.
const CLOCK_FRAME_ID: u8 = 0x8d;
/// DGT_MSG_FIELD_UPDATE with its top bit: one square changed.
const FIELD_FRAME_ID: u8 = 0x8e;

/// When the evidence for a board's next move was written to its port.
#[derive(Clone, Copy, Default)]
struct Evidence {
    /// The last byte of the last press's clock frame.
    press: Option<Instant>,
    /// The last byte of the last field update.
    field: Option<Instant>,
}

struct Board {
    master: File,
    _slave: OwnedFd,
    vb: VirtualBoard,
    script: Vec<TimedAction>,
    next: usize,
    /// Script time 0: the host's first byte.
    base: Option<u64>,
    out: std::collections::VecDeque<(u64, Vec<u8>)>,
    /// A press happened; its clock frame is the next one written.
    press_pending: bool,
}

fn open_board(game: &eboard_bridge::games::Game, seed: u64) -> (Board, PathBuf) {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let mut t = tcgetattr(&pty.slave).unwrap();
    cfmakeraw(&mut t);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &t).unwrap();
    let path = nix::unistd::ttyname(&pty.slave).unwrap();
    {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let fd = pty.master.as_raw_fd();
        let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap());
        fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).unwrap();
    }
    let cfg = HandConfig {
        seed,
        speed: 1.0 / 400.0,
        hand_speed: 1.0,
        start_ms: 2_000,
        ..HandConfig::default()
    };
    let script = hand::play(&game.start, &game.moves, &cfg).actions;
    let vb = VirtualBoard::new(
        VirtualBoardConfig {
            seed,
            ..VirtualBoardConfig::default()
        },
        PhysicalBoard::from_board(game.start.board(), false),
    );
    (
        Board {
            master: File::from(pty.master),
            _slave: pty.slave,
            vb,
            script,
            next: 0,
            base: None,
            out: Default::default(),
            press_pending: false,
        },
        path,
    )
}

/// Drives every board until `stop`; records when each press's frame was written.
fn drive(mut boards: Vec<Board>, evidence: Arc<Mutex<Vec<Evidence>>>, stop: Arc<AtomicBool>) {
    let epoch = Instant::now();
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        let now = epoch.elapsed().as_millis() as u64;
        for (i, b) in boards.iter_mut().enumerate() {
            loop {
                match b.master.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        b.vb.receive_host(now, &buf[..n]);
                        b.base.get_or_insert(now);
                    }
                    _ => break,
                }
            }
            if let Some(base) = b.base {
                while let Some(a) = b.script.get(b.next) {
                    if base + a.t_ms > now {
                        break;
                    }
                    b.vb.apply(now, a.action).expect("a possible action");
                    if matches!(a.action, PhysicalAction::PressClock(_)) {
                        b.press_pending = true;
                    }
                    b.next += 1;
                }
            }
            b.vb.advance(now);
            b.out.extend(b.vb.take_output());
            while let Some((t, bytes)) = b.out.front_mut() {
                if *t > now {
                    break;
                }
                match b.master.write(bytes) {
                    Ok(n) if n == bytes.len() => {
                        // Each queued entry is one whole message.
                        if b.press_pending && bytes[0] == CLOCK_FRAME_ID {
                            b.press_pending = false;
                            evidence.lock().unwrap()[i].press = Some(Instant::now());
                        } else if bytes[0] == FIELD_FRAME_ID {
                            evidence.lock().unwrap()[i].field = Some(Instant::now());
                        }
                        b.out.pop_front();
                    }
                    Ok(n) => {
                        bytes.drain(..n);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// CPU seconds (user + system) of this process's threads named like `prefix`.
fn cpu_seconds(prefix: &str) -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        // Fields after the ")" that ends the command name: utime is the 12th, stime the 13th.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        total += (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / tick;
    }
    total
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
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
    let cpu_start = cpu_seconds("daemon");
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
                            let mut ev = evidence.lock().unwrap();
                            // Each press counts for one move only.
                            match ev[b].press.take() {
                                Some(p) => {
                                    let after = ev[b].field.filter(|&f| f > p);
                                    let last = after.unwrap_or(p);
                                    lat.push((
                                        at - p,
                                        at.saturating_duration_since(last),
                                        after.is_some(),
                                        m.san.starts_with("O-O"),
                                    ));
                                }
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
        let cpu = cpu_seconds("daemon") - cpu_start;
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
