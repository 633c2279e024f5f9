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
mod mosquitto;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use daemon_common::short_games;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::sim::games::{load_pgn, Game};
use live_daemon::Daemon;
use mosquitto::{Broker, Tls};
use serde_json::Value;

/// One test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
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

const TOKEN: &str = "mqtt-venue-test-token";

/// A hall host's daemon (no EBAPI of its own: the aggregator serves the
/// venue's), with `env` (e.g. a clock of its own).
fn host_daemon(h: &Hall, env: &[(&str, &str)]) -> Daemon {
    let mut all = vec![("EBOARD_BRIDGE_ARBITER_TOKEN", TOKEN)];
    all.extend_from_slice(env);
    Daemon::start_env(&h.config, "off", &all)
}

/// The aggregator's daemon, with its LiveChess-compatible API.
fn aggregator_daemon(config: &Path) -> Daemon {
    Daemon::start_env(
        config,
        "127.0.0.1:0",
        &[("EBOARD_BRIDGE_ARBITER_TOKEN", TOKEN)],
    )
}

/// The last lines of every log of the daemons started from `dir`.
fn log_tails(dir: &Path, lines: usize) -> String {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut out = String::new();
    for log in logs {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        out.push_str(&format!("--- {}\n", log.display()));
        for l in tail.into_iter().rev() {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

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
    aggregator_config_with(root, &format!("mqtt://127.0.0.1:{broker_port}"), "")
}

/// [`aggregator_config`] with the broker at `broker` (a URL) and more
/// `[mqtt]` lines.
fn aggregator_config_with(root: &Path, broker: &str, mqtt: &str) -> PathBuf {
    let dir = root.join("aggregator");
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n\
         [mqtt]\nenabled = true\nbroker = {broker:?}\nhost = \"aggregator\"\n\
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
    /// Each event and when it came (Unix ms, this machine's clock).
    events: Arc<Mutex<Vec<(Value, u64)>>>,
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
                            let now = eboard_bridge::daemon::journal::unix_ms_now();
                            e.lock().unwrap().push((v, now));
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
        for (v, _) in self.events.lock().unwrap().iter() {
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
            let mut logs: String = halls.iter().map(|h| log_tails(&h.dir, 30)).collect();
            logs.push_str(&log_tails(agg.log.parent().unwrap(), 40));
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
    let agg = aggregator_daemon(&aggregator_config(root.path(), broker.port));
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
    let daemons: Vec<Daemon> = halls.iter().map(|h| host_daemon(h, &[])).collect();
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
    assert_ebapi_serves_the_venue(&agg, &halls);
    drop(daemons);
}

/// The aggregator's LiveChess-compatible API lists every board of the venue
/// and gives each board's game as its host played it.
fn assert_ebapi_serves_the_venue(agg: &Daemon, halls: &[Hall]) {
    let ebapi = agg
        .ebapi
        .as_deref()
        .expect("the aggregator serves the LiveChess-compatible API");
    let client = reqwest::blocking::Client::new();
    let get = |path: &str| -> Value {
        let resp = client
            .get(format!("{ebapi}/api/v1.0/{path}"))
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().unwrap()
    };
    let want: BTreeMap<u64, &Vec<String>> = halls
        .iter()
        .flat_map(|h| &h.boards)
        .map(|(n, ucis)| (u64::from(*n), ucis))
        .collect();
    let eboards = get("eboards");
    assert_eq!(eboards.as_array().unwrap().len(), want.len(), "{eboards}");
    let uuid = get("tournaments")[0]["uuid"].as_str().unwrap().to_owned();
    let round = get(&format!("round/{uuid}/0"));
    let pairings = round["pairings"].as_array().unwrap();
    let boards: Vec<u64> = pairings.iter().map(|p| p["nr"].as_u64().unwrap()).collect();
    assert_eq!(boards, want.keys().copied().collect::<Vec<_>>());
    for p in pairings {
        let n = p["nr"].as_u64().unwrap();
        let game = get(&format!("game/{}", p["uuid"].as_str().unwrap()));
        let sans: Vec<&str> = game["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().split(' ').next().unwrap())
            .collect();
        assert_eq!(
            &sans_to_ucis(&sans),
            want[&n],
            "board {n}: the EBAPI game is the host's"
        );
    }
}

/// SAN moves from the standard start, as UCI.
fn sans_to_ucis(sans: &[&str]) -> Vec<String> {
    use shakmaty::{san::San, CastlingMode, Chess, Position};
    let mut pos = Chess::default();
    sans.iter()
        .map(|s| {
            let m = San::from_ascii(s.as_bytes())
                .unwrap()
                .to_move(&pos)
                .unwrap_or_else(|e| panic!("{s} in {sans:?}: {e}"));
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            pos.play_unchecked(m);
            uci
        })
        .collect()
}

#[test]
fn a_host_cut_off_for_30_s_and_killed_meanwhile_loses_nothing() {
    let _one = serial();
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path());
    let relay = Relay::start(broker.port);
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 40..=50, 6);
    let agg = aggregator_daemon(&aggregator_config(root.path(), broker.port));
    let stream = Stream::follow(&agg.base);
    let h = hall(root.path(), "hall-a", relay.port, 1, &games, 400.0);
    let daemon = host_daemon(&h, &[]);
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
    let daemon = host_daemon(&h, &[]);
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
    let _daemons: Vec<Daemon> = halls.iter().map(|h| host_daemon(h, &[])).collect();
    wait_until("40 plies on every board", Duration::from_secs(150), || {
        halls.iter().all(|h| min_plies(h) >= 40)
    });
    let late = Instant::now();
    let agg = aggregator_daemon(&aggregator_config(root.path(), broker.port));
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
                    let now = eboard_bridge::daemon::journal::unix_ms_now();
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
fn alerts_travel_only_on_the_arbiter_tree_which_the_acl_keeps_from_viewers_over_tls() {
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
    std::fs::write(dir.join("wrong.pw"), "pw-not-hall-a\n").unwrap();
    // The daemons reach the broker over TLS (a CA of the test's own); the
    // test's own listeners use a plain listener with the same users and ACL.
    let tls = Tls::make(dir);
    let tls_port = mosquitto::free_port();
    let broker = Broker::start_with(
        dir,
        &format!(
            "allow_anonymous false\nuser root\npassword_file {}\nacl_file {}\n{}",
            passwd.display(),
            acl.display(),
            tls.listener(tls_port)
        ),
    );
    let url = format!("mqtts://127.0.0.1:{tls_port}");
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
             [mqtt]\nenabled = true\nbroker = {url:?}\nca_file = {:?}\nhost = \"hall-a\"\n\
             event = \"venue-test\"\nusername = \"hall-a\"\npassword_file = {:?}\n\
             [[board]]\nport = {port:?}\nnumber = 1\n",
            h_dir.join("data"),
            tls.ca,
            dir.join("hall-a.pw")
        ),
    )
    .unwrap();
    let agg = aggregator_daemon(&aggregator_config_with(
        dir,
        &url,
        &format!(
            "ca_file = {:?}\nusername = \"aggregator\"\npassword_file = {:?}\n",
            tls.ca,
            dir.join("aggregator.pw")
        ),
    ));
    let host = Daemon::start_env(&config, "off", &[]);
    let client = reqwest::blocking::Client::new();
    let logs = || {
        let mut text = log_tails(dir, 60);
        text.push_str(&log_tails(&dir.join("aggregator"), 60));
        text.push_str(&log_tails(&h_dir, 60));
        for f in [
            "hall-a/data/journal/events/board-1.jsonl",
            "hall-a/data/mqtt/acked.json",
        ] {
            text.push_str(&format!(
                "--- {f}\n{}",
                std::fs::read_to_string(dir.join(f)).unwrap_or_default()
            ));
        }
        text
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
    assert!(
        host.log_text().contains("publishing to the MQTT broker"),
        "{}",
        host.log_text()
    );
    // The same host with a wrong password: refused, and it says what to check.
    let wrong_dir = dir.join("wrong");
    std::fs::create_dir_all(&wrong_dir).unwrap();
    let wrong = wrong_dir.join("eboard-bridge.toml");
    std::fs::write(
        &wrong,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("hall-a.pw", "wrong.pw")
            .replace("host = \"hall-a\"", "host = \"hall-x\"")
            .replace(
                &format!("{:?}", h_dir.join("data")),
                &format!("{:?}", wrong_dir.join("data")),
            ),
    )
    .unwrap();
    let refused = Daemon::start_env(&wrong, "off", &[]);
    wait_until_or(
        "the refusal in the log",
        Duration::from_secs(15),
        || {
            refused.log_text().contains(
                "refused the user name or password; check [mqtt] username and password_file",
            )
        },
        || refused.log_text(),
    );
}

#[test]
fn a_board_number_on_two_hosts_raises_an_alert_and_one_host_s_game_is_shown() {
    let _one = serial();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path());
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 20..=40, 2);
    let agg = aggregator_daemon(&aggregator_config(root.path(), broker.port));
    let stream = Stream::follow(&agg.base);
    let a = hall(root.path(), "hall-a", broker.port, 1, &games[..1], 400.0);
    let _host_a = host_daemon(&a, &[]);
    wait_until(
        "hall-a's board 1 on the aggregator",
        Duration::from_secs(60),
        || stream.verified().contains_key(&1),
    );
    // A second host configured with the same board number.
    let b = hall(root.path(), "hall-b", broker.port, 1, &games[1..], 400.0);
    let _host_b = host_daemon(&b, &[]);
    let client = reqwest::blocking::Client::new();
    let board_1 = || -> String {
        let state: Value = client
            .get(format!("{}/arbiter/api/state", agg.base))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
            .json()
            .unwrap();
        state["boards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["board"] == 1)
            .map(Value::to_string)
            .unwrap_or_default()
    };
    wait_until_or(
        "the clash alert on the aggregator's dashboard",
        Duration::from_secs(30),
        || board_1().contains("board_number_clash"),
        || {
            format!(
                "{}\n{}",
                board_1(),
                log_tails(&root.path().join("aggregator"), 40)
            )
        },
    );
    let text = board_1();
    assert!(
        text.contains("Board number 1 is used by two hosts: hall-a and hall-b")
            && text.contains("Give the board on hall-b a number of its own"),
        "{text}"
    );
    // hall-b's game goes on, on hall-b; the aggregator shows hall-a's alone.
    wait_until("hall-b's game to end", Duration::from_secs(120), || {
        pgn_ucis(&b.data(), 1) == b.boards[0].1
    });
    assert_venue_complete(&[&a], &stream, Duration::from_secs(120), &agg);
    assert_ne!(a.boards[0].1, b.boards[0].1, "two different games");
}

/// libfaketime (Debian's `libfaketime`; `.ci/run` installs it): a daemon of
/// its own with a wall clock set apart, the monotonic clock left alone.
fn faketime_library() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .unwrap()
        .flatten()
        .map(|d| d.path().join("faketime/libfaketimeMT.so.1"))
        .find(|p| p.exists());
    found.expect("libfaketime is not installed; apt-get install libfaketime")
}

#[test]
fn host_clocks_are_compared_and_a_board_s_times_never_go_back() {
    let _one = serial();
    let root = tempfile::tempdir().unwrap();
    let broker = Broker::start(root.path());
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 30..=45, 4);
    let agg = aggregator_daemon(&aggregator_config(root.path(), broker.port));
    let stream = Stream::follow(&agg.base);
    let a = hall(root.path(), "hall-a", broker.port, 1, &games[..2], 400.0);
    let b = hall(root.path(), "hall-b", broker.port, 3, &games[2..], 400.0);
    // hall-b's wall clock is 90 s behind, and is set back 60 s more mid-game.
    let clock = root.path().join("hall-b-clock");
    std::fs::write(&clock, "-90s\n").unwrap();
    let lib = faketime_library();
    let _host_a = host_daemon(&a, &[]);
    let _host_b = host_daemon(
        &b,
        &[
            ("LD_PRELOAD", lib.to_str().unwrap()),
            ("FAKETIME_TIMESTAMP_FILE", clock.to_str().unwrap()),
            ("FAKETIME_CACHE_DURATION", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    wait_until("8 plies on every board", Duration::from_secs(90), || {
        min_plies(&a) >= 8 && min_plies(&b) >= 8
    });
    std::fs::write(&clock, "-150s\n").unwrap();
    assert_venue_complete(&[&a, &b], &stream, Duration::from_secs(150), &agg);
    // The aggregator said how far behind hall-b's clock is, each time it changed.
    let log = agg.log_text();
    let behind: Vec<i64> = log
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find("host hall-b's clock is ")? + "host hall-b's clock is ".len()..];
            let (ms, tail) = rest.split_once(" ms ")?;
            tail.starts_with("behind").then(|| ms.parse().ok())?
        })
        .collect();
    assert!(
        behind.iter().any(|ms| (85_000..95_000).contains(ms))
            && behind.iter().any(|ms| (145_000..155_000).contains(ms)),
        "{behind:?}\n{log}"
    );
    assert!(!log.contains("host hall-a's clock"), "{log}");
    // On the aggregator's time line a board's times never go back, and both
    // hosts' events sit where the aggregator's clock saw them: the time an
    // event came minus its time is about the same for either host (it would
    // differ by 90 s and more on hall-b's own clock).
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut lag: [Vec<i64>; 2] = Default::default();
    for (v, at) in stream.events.lock().unwrap().iter() {
        let (Some(board), Some(t)) = (v["board"].as_u64(), v["t_ms"].as_u64()) else {
            continue;
        };
        let prev = last.insert(board, t).unwrap_or(0);
        assert!(t >= prev, "board {board}: {t} ms after {prev} ms: {v}");
        lag[usize::from(board > 2)].push(*at as i64 - t as i64);
    }
    let median = |v: &mut Vec<i64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (lag_a, lag_b) = (median(&mut lag[0]), median(&mut lag[1]));
    assert!(
        (lag_a - lag_b).abs() < 3_000,
        "hall-a's events {lag_a} ms, hall-b's {lag_b} ms from the aggregator's epoch"
    );
}
