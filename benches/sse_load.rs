//! Load on the public event stream: 1,000 concurrent SSE subscribers on
//! loopback while 100 boards play, plus one subscriber that never reads.
//!
//! The boards are in-process: each board's DGT capture is made by the
//! simulator (virtual board and hand model, thinking 50 times faster than
//! humans, hands at human speed) and fed at its recorded pace through a
//! `Session` into the hub, as the daemon's loop does. The feeds are the
//! real HTTP router on 127.0.0.1; the subscribers are real HTTP clients.
//!
//! Latency is per event per subscriber: the instant the hub was handed the
//! event → the instant the client parsed its `data:` line (same process, same
//! monotonic clock). CPU and memory are the whole process's (server, 1,000
//! clients and 100 boards together).
//!
//! `cargo bench --bench sse_load` (environment: `SSE_SUBSCRIBERS`,
//! `SSE_BOARDS`, `SSE_SECONDS`, `SSE_STALLED=0` for no stalled subscriber).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::TrackerEvent;
use eboard_bridge::http::{router, FeedConfig};
use eboard_bridge::session::capture::{Chunk, Direction};
use eboard_bridge::session::Session;
use eboard_bridge::sim::games::load_index;
use eboard_bridge::sim::{dgt_capture, SimOptions};
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;
use eboard_protocols::hand::HandConfig;
use tokio::io::AsyncWriteExt as _;

/// Sequence numbers up to this get a creation time (far above what a run makes).
const MAX_EVENTS: usize = 1 << 22;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// 1,000 clients and 1,000 server sockets need more than the usual 1,024 descriptors.
fn raise_open_files(want: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < want {
            let new = want.min(hard);
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, new, hard) {
                eprintln!("cannot raise the open-file limit to {new} ({e}); the run may fail");
            }
        }
    }
}

/// (user + system CPU seconds, RSS MiB, peak RSS MiB) of this process.
fn usage() -> (f64, f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at `)`.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after `)`.
    // USER_HZ: /proc counts in hundredths of a second on every Linux ABI.
    let tck = 100.0;
    let cpu = (ticks(11) + ticks(12)) / tck;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (cpu, kb("VmRSS:"), kb("VmHWM:"))
}

#[derive(Default)]
struct Tally {
    /// Microseconds from creation to receipt, one per delivered event.
    latencies_us: Vec<u32>,
    resets: u64,
}

/// Reads one SSE stream until `stop`, timing every event by its `seq`.
async fn subscriber(
    client: reqwest::Client,
    url: String,
    created: Arc<Vec<AtomicU64>>,
    epoch: Instant,
    connected: Arc<AtomicUsize>,
    stop: Arc<tokio::sync::Notify>,
) -> Tally {
    let mut tally = Tally::default();
    let mut resp = client.get(&url).send().await.expect("subscribe");
    assert!(resp.status().is_success());
    connected.fetch_add(1, Ordering::SeqCst);
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let stopped = stop.notified();
    tokio::pin!(stopped);
    loop {
        let chunk = tokio::select! {
            c = resp.chunk() => c,
            () = &mut stopped => break,
        };
        let Ok(Some(chunk)) = chunk else { break };
        let now = epoch.elapsed().as_nanos() as u64;
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            if line.starts_with(b"event: reset") {
                tally.resets += 1;
            }
            if let Some(data) = line.strip_prefix(b"data: ") {
                if let Some(seq) = seq_of(data) {
                    let t0 = created
                        .get(seq as usize)
                        .map_or(0, |a| a.load(Ordering::Acquire));
                    if t0 != 0 {
                        tally
                            .latencies_us
                            .push((now.saturating_sub(t0) / 1000).min(u64::from(u32::MAX)) as u32);
                    }
                }
            }
        }
        buf.drain(..start);
    }
    tally
}

/// The `"seq":N` of an event's JSON, without parsing the rest.
fn seq_of(data: &[u8]) -> Option<u64> {
    let key = b"\"seq\":";
    let at = data.windows(key.len()).position(|w| w == key)? + key.len();
    let digits: &[u8] = &data[at..];
    let end = digits
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

fn main() {
    let subscribers = env("SSE_SUBSCRIBERS", 1000) as usize;
    let boards = env("SSE_BOARDS", 100) as usize;
    let seconds = env("SSE_SECONDS", 60);
    let with_stalled = env("SSE_STALLED", 1) != 0;
    raise_open_files(subscribers as u64 * 2 + 512);

    // Captures first (CPU-heavy, not part of the measurement).
    let index = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/expected/games-index.jsonl");
    let games: Vec<_> = load_index(&index)
        .expect("the data set's index (tests/data)")
        .into_iter()
        .filter(|g| g.status == "ok")
        .filter_map(|g| g.game)
        .filter(|g| g.chess960.is_none() && g.moves.len() >= 40)
        .collect();
    assert!(!games.is_empty());
    let horizon_ms = seconds * 1000;
    let mut timeline: Vec<(u64, usize, Chunk)> = Vec::new();
    for b in 0..boards {
        let opts = SimOptions {
            seed: b as u64,
            hand: HandConfig {
                seed: b as u64,
                speed: 0.02,
                hand_speed: 1.0,
                start_ms: 2_000 + (b as u64 * 37) % 3_000,
                ..HandConfig::default()
            },
            ..SimOptions::default()
        };
        for c in dgt_capture(&games[b % games.len()], &opts) {
            if c.t_ms <= horizon_ms && c.dir == Direction::In {
                timeline.push((c.t_ms, b, c));
            }
        }
    }
    timeline.sort_by_key(|(t, b, _)| (*t, *b));
    eprintln!(
        "{boards} boards, {} capture chunks over {seconds} s; {subscribers} subscribers",
        timeline.len()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let hub = Arc::new(Hub::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = router(Arc::clone(&hub), FeedConfig::default());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let url = format!("http://{addr}/events");

        let epoch = Instant::now();
        let created: Arc<Vec<AtomicU64>> =
            Arc::new((0..MAX_EVENTS).map(|_| AtomicU64::new(0)).collect());
        let connected = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(tokio::sync::Notify::new());
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let mut tasks = Vec::with_capacity(subscribers);
        for _ in 0..subscribers {
            tasks.push(tokio::spawn(subscriber(
                client.clone(),
                url.clone(),
                Arc::clone(&created),
                epoch,
                Arc::clone(&connected),
                Arc::clone(&stop),
            )));
        }
        // One subscriber that sends its request and never reads a byte, with a
        // small receive buffer so the server's writes to it block within
        // seconds (its queue then overflows and it is reset, alone).
        let mut stalled = None;
        if with_stalled {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(4096).unwrap();
            let mut s = socket.connect(addr).await.unwrap();
            s.write_all(format!("GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
                .await
                .unwrap();
            stalled = Some(s);
        }
        while connected.load(Ordering::SeqCst) < subscribers {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        eprintln!("{subscribers} subscribers connected in {:?}", epoch.elapsed());

        let (cpu0, _, _) = usage();
        let start = Instant::now();
        let mut sessions: Vec<Session> = (0..boards)
            .map(|b| Session::new(b as u32 + 1, DgtCodec::boxed(Mode::Single), TrackerConfig::default()))
            .collect();
        let mut events = Vec::new();
        let mut next_seq = 1u64;
        let mut published = 0u64;
        let mut next_tick = 100u64;
        let mut mid_usage = None;
        for (t, b, chunk) in &timeline {
            let due = start + Duration::from_millis(*t);
            tokio::time::sleep_until(due.into()).await;
            while next_tick <= *t {
                for s in &mut sessions {
                    s.tick(next_tick, &mut events);
                }
                next_tick += 100;
            }
            sessions[*b].feed(chunk, &mut events);
            for e in events.drain(..) {
                let public = matches!(e.event, TrackerEvent::Game(_));
                if public {
                    // The creation time is stored before the hub broadcasts.
                    created[next_seq as usize]
                        .store(epoch.elapsed().as_nanos() as u64, Ordering::Release);
                }
                let seq = hub.apply(&e, true);
                if public {
                    assert_eq!(seq, Some(next_seq), "one publisher numbers the events");
                    next_seq += 1;
                    published += 1;
                }
            }
            if mid_usage.is_none() && *t >= horizon_ms / 2 {
                mid_usage = Some(usage());
            }
        }
        let elapsed = start.elapsed();
        // Let the last events arrive before stopping the clients.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (cpu1, rss, peak) = usage();
        stop.notify_waiters();
        let mut all: Vec<u32> = Vec::new();
        let mut resets = 0;
        let mut short = 0;
        for t in tasks {
            let tally = t.await.unwrap();
            resets += tally.resets;
            if (tally.latencies_us.len() as u64) < published {
                short += 1;
            }
            all.extend(tally.latencies_us);
        }
        drop(stalled);
        all.sort_unstable();
        let (_, mid_rss, _) = mid_usage.unwrap_or_default();
        println!(
            "sse_load: {boards} boards, {subscribers} SSE subscribers + {} stalled, {:.1} s of play",
            u8::from(with_stalled),
            elapsed.as_secs_f64()
        );
        println!(
            "  events published: {published} ({:.1}/s); deliveries: {} (expected {})",
            published as f64 / elapsed.as_secs_f64(),
            all.len(),
            published * subscribers as u64
        );
        println!(
            "  delivery latency: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
            percentile(&all, 0.50),
            percentile(&all, 0.99),
            percentile(&all, 0.999),
            all.last().map_or(0.0, |m| f64::from(*m) / 1000.0)
        );
        println!(
            "  subscribers missing events: {short}; resets: {resets} (the stalled one is not counted)"
        );
        println!(
            "  CPU {:.1} s over {:.1} s ({:.0}% of one core); RSS {:.0} MiB at half time, {:.0} MiB at the end, peak {:.0} MiB",
            cpu1 - cpu0,
            elapsed.as_secs_f64() + 2.0,
            (cpu1 - cpu0) / (elapsed.as_secs_f64() + 2.0) * 100.0,
            mid_rss,
            rss,
            peak
        );
    });
}
