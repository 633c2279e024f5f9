//! The real `eboard-bridge run` against careless set-ups and hostile clients:
//! a data directory that is a file, token files that are too short or open
//! to others, a loose umask, and (with a 64-file limit) hundreds of idle or
//! half-open HTTP connections while a virtual board plays on a pty.

mod child_guard;
mod daemon_common;
use child_guard::ChildGuard;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::sim::games::{load_pgn, Game};

const TOKEN: &str = "hardening-daemon-token-42";

fn game() -> Game {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    load_game(&file, 1).unwrap()
}

fn board(game: &Game, link: &Path, seed: u64, speed: f64) -> EmulatorHandle {
    let opts = EmulateOptions {
        seed,
        speed,
        hand_speed: 3.0,
        start_after_host: Some(1_500),
        link: Some(link.to_owned()),
        ..EmulateOptions::default()
    };
    serve_pty(game, &opts).unwrap()
}

/// A configuration with one board at `link` (data in `dir/data`); `token`
/// in the file when given, else the daemon keeps one in `data/arbiter-token`.
fn write_config(dir: &Path, link: &Path, token: Option<&str>, extra: &str) -> PathBuf {
    let mut text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n\
         [device]\nprobe_ms = 1000\nsilence_timeout_ms = 3000\n\
         [[board]]\nport = {link:?}\nprotocol = \"dgt\"\nnumber = 1\n",
        dir.join("data")
    );
    if let Some(t) = token {
        text.push_str(&format!("[http]\narbiter_token = {t:?}\n"));
    }
    text.push_str(extra);
    let path = dir.join("eboard-bridge.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `eboard-bridge run` with `setup` applied in the child before it starts.
fn spawn(
    config: &Path,
    log: &Path,
    setup: impl Fn() -> std::io::Result<()> + Send + Sync + 'static,
) -> ChildGuard {
    let out = std::fs::File::create(log).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"));
    cmd.env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info")
        .arg("run")
        .arg("--config")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(out);
    // SAFETY: `setup` only makes system calls that are safe between fork and
    // exec (umask, setrlimit); it allocates nothing.
    unsafe {
        cmd.pre_exec(setup);
    }
    ChildGuard::new(cmd.spawn().unwrap())
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

fn wait_for(what: &str, log: &Path, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; daemon log:\n{}",
            log_text(log)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The daemon's HTTP address, once it says it is running.
fn http_base(log: &Path) -> String {
    let mut base = String::new();
    wait_for("the daemon to run", log, Duration::from_secs(30), || {
        let text = log_text(log);
        if !text.contains("running") {
            return false;
        }
        let Some(i) = text.find("feeds on http://") else {
            return false;
        };
        let rest = &text[i + "feeds on ".len()..];
        base = rest[..rest.find("/games.pgn").unwrap()].to_string();
        true
    });
    base
}

fn stop(mut child: ChildGuard, log: &Path) {
    assert!(Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}: {}", log_text(log));
}

fn pgn_ucis(data: &Path) -> Vec<String> {
    std::fs::read_to_string(data.join("games/board-1.pgn"))
        .ok()
        .and_then(|t| load_pgn(&t).ok())
        .and_then(|g| g.last().map(Game::uci_moves))
        .unwrap_or_default()
}

#[test]
fn a_data_dir_that_is_a_file_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data"), "not a folder").unwrap();
    let config = write_config(dir.path(), &dir.path().join("nowhere"), None, "");
    let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
        .arg("run")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is a file, not a directory"), "{err}");
    assert!(!err.contains("token"), "not a token problem: {err}");
}

#[test]
fn a_short_token_file_is_refused_and_an_open_one_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let token = data.join("arbiter-token");
    let config = write_config(dir.path(), &dir.path().join("nowhere"), None, "");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
            .arg("run")
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };
    for short in ["a\n", "fifteen-chars-x", "has spaces in the middle of it"] {
        std::fs::write(&token, short).unwrap();
        let out = run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{short:?} accepted");
        assert!(
            err.contains("arbiter token") && err.contains("at least 16 characters"),
            "{short:?}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(&token).unwrap(),
            short,
            "left as it was"
        );
    }
    // An empty file open to everyone: a token is made, and the file closed.
    std::fs::write(&token, "").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let log = dir.path().join("daemon.log");
    let child = spawn(&config, &log, || Ok(()));
    http_base(&log);
    let made = std::fs::read_to_string(&token).unwrap();
    assert_eq!(made.trim().len(), 32, "{made:?}");
    let mode = std::fs::metadata(&token).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    stop(child, &log);
    // A good token left open to others is closed at the next start.
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let child = spawn(&config, &log, || Ok(()));
    http_base(&log);
    let mode = std::fs::metadata(&token).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        log_text(&log).contains("was readable by other users"),
        "{}",
        log_text(&log)
    );
    stop(child, &log);
}

/// Every folder and file under `dir`, with its mode.
fn modes(dir: &Path, out: &mut Vec<(PathBuf, u32)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        out.push((path.clone(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            modes(&path, out);
        }
    }
}

#[test]
fn everything_under_the_data_dir_is_private_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dgt1");
    let game = game();
    let want = game.uci_moves();
    let _board = board(&game, &link, 5, 1000.0);
    let config = write_config(dir.path(), &link, None, "");
    let log = dir.path().join("daemon.log");
    // A umask that keeps nothing private, as a careless shell may have.
    let child = spawn(&config, &log, || {
        nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        Ok(())
    });
    let base = http_base(&log);
    let data = dir.path().join("data");
    wait_for("the whole game", &log, Duration::from_secs(45), || {
        pgn_ucis(&data) == want
    });
    let token = std::fs::read_to_string(data.join("arbiter-token")).unwrap();
    let client = reqwest::blocking::Client::new();
    let r = client
        .post(format!("{base}/arbiter/api/pairing"))
        .bearer_auth(token.trim())
        .json(
            &serde_json::json!({"board": 1, "white": {"name": "Molinari, Luigi"},
                                  "black": {"name": "Bordais, Jean"}}),
        )
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .post(format!("{base}/arbiter/api/result"))
        .bearer_auth(token.trim())
        .json(&serde_json::json!({"board": 1, "result": "1-0", "reason": "a note"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    wait_for("the broadcast files", &log, Duration::from_secs(10), || {
        std::fs::read_to_string(data.join("broadcast/round-1/game-1.pgn"))
            .is_ok_and(|t| t.contains("Molinari"))
    });
    stop(child, &log);
    let mut all = Vec::new();
    all.push((
        data.clone(),
        std::fs::metadata(&data).unwrap().permissions().mode() & 0o777,
    ));
    modes(&data, &mut all);
    for want_there in [
        "journal/captures",
        "journal/events/board-1.jsonl",
        "games/board-1.pgn",
        "operator/pairings.json",
        "broadcast/round-1/games.pgn",
        "arbiter-token",
    ] {
        assert!(data.join(want_there).exists(), "{want_there} was written");
    }
    let open: Vec<_> = all.iter().filter(|(_, m)| m & 0o077 != 0).collect();
    assert!(open.is_empty(), "open to other users: {open:?}");
}

/// The value of the sample `name` in an OpenMetrics text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn with_64_files_and_500_idle_clients_the_board_and_the_journal_go_on() {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dgt1");
    let game = game();
    let want = game.uci_moves();
    let opts = |seed| EmulateOptions {
        seed,
        speed: 150.0,
        hand_speed: 3.0,
        start_after_host: Some(1_500),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let first = serve_pty(&game, &opts(31)).unwrap();
    let config = write_config(
        dir.path(),
        &link,
        Some(TOKEN),
        "request_timeout_ms = 2000\n",
    );
    let log = dir.path().join("daemon.log");
    let child = spawn(&config, &log, || {
        use nix::sys::resource::{setrlimit, Resource};
        setrlimit(Resource::RLIMIT_NOFILE, 64, 64).map_err(std::io::Error::from)
    });
    let base = http_base(&log);
    let addr = base.trim_start_matches("http://").to_string();
    let data = dir.path().join("data");
    wait_for("two verified moves", &log, Duration::from_secs(30), || {
        pgn_ucis(&data).len() >= 2
    });

    // 500 clients: half connect and say nothing, half send half a request.
    let mut held = Vec::new();
    for i in 0..500 {
        let mut s = TcpStream::connect(&addr).unwrap();
        if i % 2 == 1 {
            s.write_all(b"GET /games.pgn HTTP/1.1\r\nHost: eboard\r\nX-Slow: ")
                .unwrap();
        }
        held.push(s);
    }
    // The board is followed meanwhile: moves keep reaching the PGN file.
    let before = pgn_ucis(&data).len();
    wait_for(
        "more moves under the flood",
        &log,
        Duration::from_secs(30),
        || pgn_ucis(&data).len() >= before + 2,
    );
    // Unplug the board and plug it back while the clients are still there:
    // it is reopened within its normal backoff (at most 5 s).
    let answered = |text: &str| text.matches("board answers; resynchronising").count();
    let ups = answered(&log_text(&log));
    let done = pgn_ucis(&data).len();
    first.stop().unwrap();
    wait_for(
        "the unplug to be noticed",
        &log,
        Duration::from_secs(10),
        || {
            log_text(&log).contains("closed by the other side")
                || log_text(&log).contains("sent nothing for")
                || log_text(&log).contains("failed")
        },
    );
    std::thread::sleep(Duration::from_secs(2));
    let plugged = Instant::now();
    let _second = serve_pty(&daemon_common::resumed(&game, done), &opts(32)).unwrap();
    wait_for(
        "the board to be reopened",
        &log,
        Duration::from_secs(10),
        || answered(&log_text(&log)) > ups,
    );
    let reopened = plugged.elapsed();
    wait_for("the whole game", &log, Duration::from_secs(60), || {
        pgn_ucis(&data) == want
    });

    // What the clients saw: a 503 and a close beyond the cap, a close at the
    // request timeout for those let in. None is left open by the server.
    let mut refused = 0;
    let mut timed_out = 0;
    for s in &mut held {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = Vec::new();
        match s.read_to_end(&mut answer) {
            Ok(_) if answer.starts_with(b"HTTP/1.1 503") => refused += 1,
            Ok(_) => timed_out += 1,
            // A reset after the 503 is a refusal too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => refused += 1,
            Err(e) => panic!("a connection still open after the timeouts: {e}"),
        }
    }
    drop(held);
    eprintln!(
        "500 clients: {timed_out} let in and closed at the request timeout, {refused} refused \
         at the cap; the board reopened {} ms after it was plugged back",
        reopened.as_millis()
    );
    assert_eq!(refused + timed_out, 500);
    assert!(
        refused > 0 && timed_out > 0,
        "{refused} refused, {timed_out} let in"
    );
    assert!(reopened < Duration::from_millis(5_500), "{reopened:?}");
    let text = log_text(&log);
    assert!(
        text.contains("refusing new ones"),
        "the shedding is logged:\n{text}"
    );
    assert!(!text.contains("Too many open files"), "{text}");

    // Afterwards the server answers again, and the journal reports no error.
    let metrics = reqwest::blocking::Client::new()
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(
        sample(&metrics, "eboard_journal_errors_total"),
        Some(0.0),
        "{metrics}"
    );
    stop(child, &log);
    // Every verified move is in the journal's event log, once.
    let events = std::fs::read_to_string(data.join("journal/events/board-1.jsonl")).unwrap();
    let plies: Vec<u64> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "move" && v["verified"] == true)
        .map(|v| v["ply"].as_u64().unwrap())
        .collect();
    assert_eq!(plies, (1..=want.len() as u64).collect::<Vec<_>>());
}
