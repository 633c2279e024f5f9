//! Several real `eboard-bridge run` daemons as one venue through a real
//! mosquitto broker started by the test (`apt-get install mosquitto`; built
//! with `--features mqtt-tests`, which `.ci/run` turns on after installing it).
//!
//! Hall hosts follow virtual boards on ptys and publish; an aggregator takes
//! every board from the broker. Each verified move must reach the aggregator's
//! public stream exactly once and in order per board, the same list as the
//! host's own event log, through a broker restart, a host cut off from the
//! broker for 30 s and killed with `kill -9` meanwhile, and an aggregator
//! started after 40 plies per board. Alerts travel only on the arbiter tree.
//!
//! The tests run one at a time (a lock): each runs four daemons and tens of
//! boards, which is what two cores can take.

mod child_guard;
mod daemon_common;
mod live_daemon;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use child_guard::ChildGuard;
use daemon_common::short_games;
use eboard_bridge::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::games::{load_pgn, Game};
use serde_json::Value;

/// One test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn mosquitto_binary() -> PathBuf {
    for p in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("mosquitto is not installed; install Debian's package (apt-get install mosquitto)");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A mosquitto of the test's own, on loopback, keeping nothing on disk (the
/// hosts' journals are what must make up for a restart).
struct Broker {
    child: Option<ChildGuard>,
    port: u16,
    dir: PathBuf,
    extra: String,
}

impl Broker {
    fn start(dir: &Path) -> Broker {
        Broker::start_with(dir, "allow_anonymous true\n")
    }

    /// A broker with `extra` configuration lines (passwords, ACL).
    fn start_with(dir: &Path, extra: &str) -> Broker {
        let mut b = Broker {
            child: None,
            port: free_port(),
            dir: dir.to_owned(),
            extra: extra.to_owned(),
        };
        b.restart();
        b
    }

    fn restart(&mut self) {
        let conf = self.dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {} 127.0.0.1\npersistence false\nlog_dest stderr\n\
                 max_queued_messages 100000\n{}",
                self.port, self.extra
            ),
        )
        .unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("mosquitto.log"))
            .unwrap();
        self.child = Some(ChildGuard::new(
            Command::new(mosquitto_binary())
                .arg("-c")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        ));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mosquitto did not listen on {}: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: the broker loses everything it held.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

/// A TCP relay between a host and the broker that the test can cut: the
/// venue network failing between a hall and the broker.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start(to: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, o, s) = (cut.clone(), open.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Ok((inbound, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if c.load(Ordering::Relaxed) {
                    let _ = inbound.shutdown(Shutdown::Both);
                    continue;
                }
                inbound.set_nonblocking(false).unwrap();
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", to)) else {
                    let _ = inbound.shutdown(Shutdown::Both);
                    continue;
                };
                {
                    let mut open = o.lock().unwrap();
                    open.push(inbound.try_clone().unwrap());
                    open.push(outbound.try_clone().unwrap());
                }
                for (mut from, mut into) in [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound, inbound),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 * 1024];
                        loop {
                            match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => {
                                    if into.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                            }
                        }
                        let _ = into.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay {
            port,
            cut,
            open,
            stop,
        }
    }

    /// The link fails: every connection is dropped, new ones are refused.
    fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::Relaxed);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}

/// A real daemon and what it says.
struct Daemon {
    child: ChildGuard,
    log: PathBuf,
    base: String,
}

impl Daemon {
    fn start(config: &Path, log: &Path) -> Daemon {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let skip = std::fs::read_to_string(log).unwrap_or_default().len();
        let child = ChildGuard::new(
            Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
                .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
                .env("EBOARD_BRIDGE_EBAPI_LISTEN", "off")
                .env("EBOARD_BRIDGE_ARBITER_TOKEN", TOKEN)
                .env("RUST_LOG", "info")
                .arg("run")
                .arg("--config")
                .arg(config)
                .stdout(Stdio::null())
                .stderr(out)
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        let base = loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let text = &text[skip.min(text.len())..];
            if text.contains("running") {
                if let Some(i) = text.find("feeds on http://") {
                    let rest = &text[i + "feeds on ".len()..];
                    break rest[..rest.find("/games.pgn").unwrap()].to_string();
                }
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Daemon {
            child,
            log: log.to_owned(),
            base,
        }
    }

    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

const TOKEN: &str = "mqtt-venue-test-token";

/// A hall's host: its boards on ptys and its daemon's configuration.
struct Hall {
    name: String,
    dir: PathBuf,
    config: PathBuf,
    /// (board number, the source game's moves).
    boards: Vec<(u32, Vec<String>)>,
    _emulators: Vec<EmulatorHandle>,
}

impl Hall {
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("daemon.log")
    }
}

/// Host `name` with `games` on boards `first..`, publishing to `broker`.
fn hall(
    root: &Path,
    name: &str,
    broker_port: u16,
    first: u32,
    games: &[(Game, Vec<String>)],
    speed: f64,
) -> Hall {
    hall_with(root, name, broker_port, first, games, speed, "")
}

/// [`hall`] with more `[mqtt]` lines (`mqtt`).
fn hall_with(
    root: &Path,
    name: &str,
    broker_port: u16,
    first: u32,
    games: &[(Game, Vec<String>)],
    speed: f64,
    mqtt: &str,
) -> Hall {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n\
         [device]\nsilence_timeout_ms = 3000\nprobe_ms = 1000\n\
         [mqtt]\nenabled = true\nbroker = \"mqtt://127.0.0.1:{broker_port}\"\nhost = {name:?}\n\
         event = \"venue-test\"\nkeep_alive_secs = 5\n{mqtt}",
        dir.join("data")
    );
    let mut emulators = Vec::new();
    let mut boards = Vec::new();
    for (i, (game, want)) in games.iter().enumerate() {
        let number = first + i as u32;
        let link = dir.join(format!("dgt-{number}"));
        emulators.push(
            serve_pty(
                game,
                &EmulateOptions {
                    seed: 7_000 + u64::from(number),
                    speed,
                    hand_speed: 1.0,
                    start_after_host: Some(2_000),
                    link: Some(link.clone()),
                    ..EmulateOptions::default()
                },
            )
            .unwrap(),
        );
        text.push_str(&format!(
            "[[board]]\nport = {link:?}\nprotocol = \"dgt\"\nnumber = {number}\n"
        ));
        boards.push((number, want.clone()));
    }
    let config = dir.join("eboard-bridge.toml");
    std::fs::write(&config, text).unwrap();
    Hall {
        name: name.to_owned(),
        dir,
        config,
        boards,
        _emulators: emulators,
    }
}

fn aggregator_config(root: &Path, broker_port: u16) -> PathBuf {
    aggregator_config_with(root, broker_port, "")
}

/// [`aggregator_config`] with more `[mqtt]` lines.
fn aggregator_config_with(root: &Path, broker_port: u16, mqtt: &str) -> PathBuf {
    let dir = root.join("aggregator");
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n\
         [mqtt]\nenabled = true\nbroker = \"mqtt://127.0.0.1:{broker_port}\"\nhost = \"aggregator\"\n\
         event = \"venue-test\"\npublish = false\nsubscribe = true\nkeep_alive_secs = 5\n{mqtt}",
        dir.join("data")
    );
    let path = dir.join("eboard-bridge.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The host's own record of a board: its verified moves as its event log
/// holds them, in order, as (ply, uci).
fn host_record(data: &Path, board: u32) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(data.join(format!("journal/events/board-{board}.jsonl")))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "move" && v["verified"] == true)
        .map(|v| {
            (
                v["ply"].as_u64().unwrap(),
                v["uci"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The verified moves of the board's last game in the host's PGN file.
fn pgn_ucis(data: &Path, board: u32) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(data.join(format!("games/board-{board}.pgn"))) else {
        return Vec::new();
    };
    load_pgn(&text)
        .unwrap()
        .last()
        .map(Game::uci_moves)
        .unwrap_or_default()
}

/// The aggregator's public event stream (`/events`, from its first event),
/// collected on a thread of its own.
struct Stream {
    events: Arc<Mutex<Vec<Value>>>,
    resets: Arc<Mutex<usize>>,
}

impl Stream {
    fn follow(base: &str) -> Stream {
        let events = Arc::new(Mutex::new(Vec::new()));
        let resets = Arc::new(Mutex::new(0usize));
        let (e, r) = (events.clone(), resets.clone());
        let url = format!("{base}/events");
        std::thread::spawn(move || {
            let client = reqwest::blocking::Client::builder()
                .timeout(None)
                .build()
                .unwrap();
            let Ok(resp) = client.get(url).header("Last-Event-ID", "0").send() else {
                return;
            };
            let mut reset = false;
            for line in BufReader::new(resp).lines() {
                let Ok(line) = line else { break };
                if line == "event: reset" {
                    reset = true;
                    *r.lock().unwrap() += 1;
                } else if let Some(data) = line.strip_prefix("data: ") {
                    if !std::mem::take(&mut reset) {
                        if let Ok(v) = serde_json::from_str::<Value>(data) {
                            e.lock().unwrap().push(v);
                        }
                    }
                }
            }
        });
        Stream { events, resets }
    }

    /// The verified moves the aggregator published for each board, in order.
    fn verified(&self) -> BTreeMap<u32, Vec<(u64, String)>> {
        let mut out: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
        for v in self.events.lock().unwrap().iter() {
            if v["type"] == "move" && v["verified"] == true {
                out.entry(v["board"].as_u64().unwrap() as u32)
                    .or_default()
                    .push((
                        v["ply"].as_u64().unwrap(),
                        v["uci"].as_str().unwrap().to_owned(),
                    ));
            }
        }
        out
    }
}

/// Waits until every board of every hall has its whole game in the host's
/// PGN and the aggregator has published as many verified moves as the host
/// logged; then checks the aggregator's list is the host's, move for move.
fn assert_venue_complete(halls: &[&Hall], stream: &Stream, timeout: Duration, agg: &Daemon) {
    let deadline = Instant::now() + timeout;
    loop {
        let got = stream.verified();
        let mut lagging = Vec::new();
        for h in halls {
            for (n, want) in &h.boards {
                let host = host_record(&h.data(), *n);
                let done = pgn_ucis(&h.data(), *n) == *want
                    && got.get(n).map_or(0, Vec::len) >= host.len();
                if !done {
                    lagging.push(format!(
                        "{}/board {n}: host pgn {} of {} plies, host log {}, aggregator {}",
                        h.name,
                        pgn_ucis(&h.data(), *n).len(),
                        want.len(),
                        host.len(),
                        got.get(n).map_or(0, Vec::len)
                    ));
                }
            }
        }
        if lagging.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let mut logs = String::new();
            for h in halls {
                let text = std::fs::read_to_string(h.log()).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                logs.push_str(&format!("--- {}\n", h.name));
                for l in tail.into_iter().rev() {
                    logs.push_str(l);
                    logs.push('\n');
                }
            }
            let text = agg.log_text();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            logs.push_str("--- aggregator\n");
            for l in tail.into_iter().rev() {
                logs.push_str(l);
                logs.push('\n');
            }
            panic!(
                "timed out; {} boards lag:\n{}\n{logs}",
                lagging.len(),
                lagging.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Let anything sent twice arrive before judging.
    std::thread::sleep(Duration::from_secs(2));
    let got = stream.verified();
    for h in halls {
        for (n, want) in &h.boards {
            let host = host_record(&h.data(), *n);
            assert_eq!(
                got.get(n).cloned().unwrap_or_default(),
                host,
                "{}/board {n}: the aggregator published exactly the host's verified moves, once each, in order",
                h.name
            );
            let plies: Vec<u64> = host.iter().map(|(p, _)| *p).collect();
            assert_eq!(
                plies,
                (1..=want.len() as u64).collect::<Vec<_>>(),
                "{}/board {n}: the host logged each ply once",
                h.name
            );
        }
    }
    assert_eq!(
        *stream.resets.lock().unwrap(),
        0,
        "the test's stream never lost continuity"
    );
}

/// Plies the host logged as verified on every one of its boards, at least.
fn min_plies(h: &Hall) -> usize {
    h.boards
        .iter()
        .map(|(n, _)| host_record(&h.data(), *n).len())
        .min()
        .unwrap_or(0)
}

fn wait_until(what: &str, timeout: Duration, done: impl FnMut() -> bool) {
    wait_until_or(what, timeout, done, String::new);
}

/// [`wait_until`], saying `why()` (logs) on a timeout.
fn wait_until_or(
    what: &str,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
    why: impl Fn() -> String,
) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            why()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn three_hosts_of_twenty_boards_reach_one_aggregator_exactly_once_through_a_broker_restart() {
    let _one = serial();
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let mut broker = Broker::start(root.path());
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=32, 60);
    let agg = Daemon::start(
        &aggregator_config(root.path(), broker.port),
        &root.path().join("aggregator.log"),
    );
    let stream = Stream::follow(&agg.base);
    // A subscriber of the public tree, for the latency from a host's journal
    // to a subscriber of the broker.
    let public = listen(
        broker.port,
        "latency-probe",
        "",
        "eboard/venue-test/boards/+/events",
    );
    let halls: Vec<Hall> = ["hall-a", "hall-b", "hall-c"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            hall(
                root.path(),
                name,
                broker.port,
                1 + 20 * i as u32,
                &games[20 * i..20 * (i + 1)],
                400.0,
            )
        })
        .collect();
    let daemons: Vec<Daemon> = halls
        .iter()
        .map(|h| Daemon::start(&h.config, &h.log()))
        .collect();
    // Mid-round: every board has a few verified moves.
    wait_until("5 plies on every board", Duration::from_secs(90), || {
        halls.iter().all(|h| min_plies(h) >= 5)
    });
    let at_kill = Instant::now();
    broker.kill();
    std::thread::sleep(Duration::from_secs(2));
    broker.restart();
    assert_venue_complete(
        &halls.iter().collect::<Vec<_>>(),
        &stream,
        Duration::from_secs(150),
        &agg,
    );
    eprintln!(
        "3 x 20 boards, broker killed and restarted: all moves at the aggregator {:?} after the kill, test {:?}",
        at_kill.elapsed(),
        started.elapsed()
    );
    let mut waits: Vec<u64> = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0);
    for (_, payload, at) in public.lock().unwrap().iter() {
        let v: Value = serde_json::from_slice(payload).unwrap();
        let logged = v["unix_ms"].as_u64().unwrap();
        waits.push(at.saturating_sub(logged));
        first = first.min(*at);
        last = last.max(*at);
    }
    waits.sort_unstable();
    let pct = |p: usize| waits[(waits.len() - 1) * p / 100];
    eprintln!(
        "public events through the broker: {} in {:.1} s ({:.0}/s); journal to subscriber p50 {} ms, p99 {} ms, max {} ms (the broker's restart included)",
        waits.len(),
        (last - first) as f64 / 1000.0,
        waits.len() as f64 * 1000.0 / (last - first).max(1) as f64,
        pct(50),
        pct(99),
        waits.last().unwrap()
    );
    // Each board's host is on the aggregator's dashboard.
    let state: Value = reqwest::blocking::Client::new()
        .get(format!("{}/arbiter/api/state", agg.base))
        .bearer_auth(TOKEN)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let boards = state["boards"].as_array().unwrap();
    assert_eq!(boards.len(), 60);
    for b in boards {
        let n = b["board"].as_u64().unwrap();
        let host = ["hall-a", "hall-b", "hall-c"][((n - 1) / 20) as usize];
        let port = b["port"].as_str().unwrap();
        assert!(
            port.contains(&format!("(host {host})")),
            "board {n}: {port}"
        );
    }
    drop(daemons);
}

#[test]
fn a_host_cut_off_for_30_s_and_killed_meanwhile_loses_nothing() {
    let _one = serial();
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path());
    let relay = Relay::start(broker.port);
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 40..=50, 6);
    let agg = Daemon::start(
        &aggregator_config(root.path(), broker.port),
        &root.path().join("aggregator.log"),
    );
    let stream = Stream::follow(&agg.base);
    let h = hall(root.path(), "hall-a", relay.port, 1, &games, 400.0);
    let daemon = Daemon::start(&h.config, &h.log());
    wait_until("6 plies on every board", Duration::from_secs(60), || {
        min_plies(&h) >= 6
    });
    relay.cut();
    let cut_at = Instant::now();
    let before: usize = h
        .boards
        .iter()
        .map(|(n, _)| host_record(&h.data(), *n).len())
        .sum();
    std::thread::sleep(Duration::from_secs(12));
    // The host dies during the outage and comes back, still cut off.
    daemon.kill_9();
    let daemon = Daemon::start(&h.config, &h.log());
    let left = Duration::from_secs(30).saturating_sub(cut_at.elapsed());
    std::thread::sleep(left);
    let during: usize = h
        .boards
        .iter()
        .map(|(n, _)| host_record(&h.data(), *n).len())
        .sum();
    assert!(
        during > before + 12,
        "the boards kept playing during the outage ({before} -> {during} plies)"
    );
    let published_then: usize = stream.verified().values().map(Vec::len).sum();
    assert!(
        published_then <= before + h.boards.len(),
        "the aggregator got nothing new while the host was cut off ({published_then} of {during})"
    );
    relay.restore();
    let restored = Instant::now();
    wait_until(
        "the aggregator to catch up after the outage",
        Duration::from_secs(30),
        || {
            let got = stream.verified();
            h.boards.iter().all(|(n, _)| {
                got.get(n).map_or(0, Vec::len)
                    >= host_record(&h.data(), *n)
                        .len()
                        .min(during / h.boards.len())
            })
        },
    );
    eprintln!(
        "30 s outage with a kill -9: the aggregator caught up {:?} after the link came back",
        restored.elapsed()
    );
    assert_venue_complete(&[&h], &stream, Duration::from_secs(150), &agg);
    assert!(
        daemon.log_text().contains("reached again")
            || daemon.log_text().contains("publishing to the MQTT broker"),
        "the host says when the broker is back"
    );
    eprintln!("outage test {:?}", started.elapsed());
}

#[test]
fn an_aggregator_started_after_40_plies_rebuilds_every_board() {
    let _one = serial();
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path());
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 50..=64, 8);
    let halls = [
        hall(root.path(), "hall-a", broker.port, 1, &games[..4], 400.0),
        hall(root.path(), "hall-b", broker.port, 5, &games[4..], 400.0),
    ];
    let _daemons: Vec<Daemon> = halls
        .iter()
        .map(|h| Daemon::start(&h.config, &h.log()))
        .collect();
    wait_until("40 plies on every board", Duration::from_secs(150), || {
        halls.iter().all(|h| min_plies(h) >= 40)
    });
    let late = Instant::now();
    let agg = Daemon::start(
        &aggregator_config(root.path(), broker.port),
        &root.path().join("aggregator.log"),
    );
    let stream = Stream::follow(&agg.base);
    wait_until(
        "the late aggregator to have 40 plies everywhere",
        Duration::from_secs(30),
        || {
            let got = stream.verified();
            halls
                .iter()
                .flat_map(|h| &h.boards)
                .all(|(n, _)| got.get(n).map_or(0, Vec::len) >= 40)
        },
    );
    eprintln!(
        "late aggregator: 8 boards x 40 plies rebuilt {:?} after it started",
        late.elapsed()
    );
    assert_venue_complete(
        &halls.iter().collect::<Vec<_>>(),
        &stream,
        Duration::from_secs(120),
        &agg,
    );
    eprintln!("late aggregator test {:?}", started.elapsed());
}

/// Messages received: (topic, payload, when: Unix ms).
type Received = Arc<Mutex<Vec<(String, Vec<u8>, u64)>>>;

/// Collects every message a broker user receives on `filter`, on a thread.
fn listen(port: u16, user: &str, password: &str, filter: &str) -> Received {
    let got = Arc::new(Mutex::new(Vec::new()));
    let out = got.clone();
    let mut opts = rumqttc::MqttOptions::new(format!("test-{user}"), "127.0.0.1", port);
    if !password.is_empty() {
        opts.set_credentials(user, password);
    }
    opts.set_keep_alive(Duration::from_secs(5));
    let (client, mut connection) = rumqttc::Client::new(opts, 64);
    let filter = filter.to_owned();
    std::thread::spawn(move || {
        for ev in connection.iter() {
            match ev {
                // Every session (the first, and after a broker restart).
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(_))) => {
                    let _ = client.try_subscribe(filter.clone(), rumqttc::QoS::AtLeastOnce);
                }
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                    let now = eboard_bridge::journal::unix_ms_now();
                    out.lock()
                        .unwrap()
                        .push((p.topic.clone(), p.payload.to_vec(), now));
                }
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    });
    got
}

#[test]
fn alerts_travel_only_on_the_arbiter_tree_which_the_acl_keeps_from_viewers() {
    let _one = serial();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    // Users and the ACL of docs/mqtt.md.
    let passwd = dir.join("passwd");
    for (i, (user, pw)) in [
        ("hall-a", "pw-hall-a"),
        ("aggregator", "pw-aggregator"),
        ("viewer", "pw-viewer"),
    ]
    .iter()
    .enumerate()
    {
        let mut cmd = Command::new("mosquitto_passwd");
        if i == 0 {
            cmd.arg("-c");
        }
        let ok = cmd
            .arg("-b")
            .arg(&passwd)
            .arg(user)
            .arg(pw)
            .status()
            .unwrap();
        assert!(ok.success(), "mosquitto_passwd");
    }
    let acl = dir.join("acl");
    std::fs::write(
        &acl,
        "user hall-a\n\
         topic write eboard/venue-test/boards/#\n\
         topic write eboard/venue-test/hosts/hall-a/status\n\
         topic write eboard-arbiter/venue-test/boards/#\n\
         topic read eboard-arbiter/venue-test/replay/hall-a\n\
         user aggregator\n\
         topic read eboard/venue-test/#\n\
         topic read eboard-arbiter/venue-test/#\n\
         topic write eboard-arbiter/venue-test/replay/#\n\
         user viewer\n\
         topic read eboard/venue-test/#\n",
    )
    .unwrap();
    std::fs::write(dir.join("hall-a.pw"), "pw-hall-a\n").unwrap();
    std::fs::write(dir.join("aggregator.pw"), "pw-aggregator\n").unwrap();
    let broker = Broker::start_with(
        dir,
        &format!(
            "allow_anonymous false\nuser root\npassword_file {}\nacl_file {}\n",
            passwd.display(),
            acl.display()
        ),
    );
    let viewer = listen(broker.port, "viewer", "pw-viewer", "#");
    let arbiter_side = listen(
        broker.port,
        "aggregator",
        "pw-aggregator",
        "eboard-arbiter/#",
    );
    // A board whose game ends in an illegal move (7.5.1), journaled by an
    // earlier run and published at start.
    let h_dir = dir.join("hall-a");
    std::fs::create_dir_all(&h_dir).unwrap();
    let port = live_daemon::port(&h_dir, 1);
    live_daemon::leave_capture(
        &h_dir.join("data"),
        &port,
        1,
        &live_daemon::game_capture(live_daemon::Then::IllegalMove),
    );
    let config = h_dir.join("eboard-bridge.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n\
             [mqtt]\nenabled = true\nbroker = \"mqtt://127.0.0.1:{}\"\nhost = \"hall-a\"\n\
             event = \"venue-test\"\nusername = \"hall-a\"\npassword_file = {:?}\n\
             [[board]]\nport = {port:?}\nnumber = 1\n",
            h_dir.join("data"),
            broker.port,
            dir.join("hall-a.pw")
        ),
    )
    .unwrap();
    let agg = Daemon::start(
        &aggregator_config_with(
            dir,
            broker.port,
            &format!(
                "username = \"aggregator\"\npassword_file = {:?}\n",
                dir.join("aggregator.pw")
            ),
        ),
        &dir.join("aggregator.log"),
    );
    let _host = Daemon::start(&config, &h_dir.join("daemon.log"));
    let client = reqwest::blocking::Client::new();
    let logs = || {
        [
            "aggregator.log",
            "hall-a/daemon.log",
            "hall-a/data/journal/events/board-1.jsonl",
            "hall-a/data/mqtt/acked.json",
        ]
        .iter()
        .map(|f| {
            format!(
                "--- {f}\n{}",
                std::fs::read_to_string(dir.join(f)).unwrap_or_default()
            )
        })
        .collect::<String>()
    };
    wait_until_or(
        "the alert on the aggregator's dashboard",
        Duration::from_secs(30),
        || {
            let state: Value = client
                .get(format!("{}/arbiter/api/state", agg.base))
                .bearer_auth(TOKEN)
                .send()
                .unwrap()
                .json()
                .unwrap();
            state["boards"].as_array().is_some_and(|b| {
                b.iter().any(|b| {
                    b["open"]
                        .as_array()
                        .is_some_and(|o| o.iter().any(|e| e["notice"]["kind"] == "illegal_move"))
                })
            })
        },
        logs,
    );
    wait_until(
        "the viewer to see the game",
        Duration::from_secs(10),
        || {
            viewer
                .lock()
                .unwrap()
                .iter()
                .any(|(t, _, _)| t.ends_with("/boards/1/events"))
        },
    );
    std::thread::sleep(Duration::from_secs(1));
    let seen = viewer.lock().unwrap().clone();
    for (topic, payload, _) in &seen {
        assert!(
            topic.starts_with("eboard/venue-test/"),
            "a viewer got {topic}"
        );
        let text = String::from_utf8_lossy(payload);
        assert!(
            !text.contains("alert") && !text.contains("7.5"),
            "{topic}: {text}"
        );
    }
    let arb = arbiter_side.lock().unwrap().clone();
    assert!(
        arb.iter()
            .any(|(t, p, _)| t == "eboard-arbiter/venue-test/boards/1/events"
                && String::from_utf8_lossy(p).contains("illegal_move")),
        "the alert went out on the arbiter tree"
    );
    // The public event stream of the aggregator has the game, not the alert.
    let public = client
        .get(format!("{}/games.pgn", agg.base))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(public.contains("Nb4"), "{public}");
    assert!(!public.contains("illegal"), "{public}");
}
