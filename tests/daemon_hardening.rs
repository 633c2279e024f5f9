//! The real `eboard-bridge run` against careless set-ups and hostile clients:
//! a data directory that is a file, token files that are too short or open
//! to others, a loose umask, and (with a 64-file limit) hundreds of idle or
//! half-open HTTP connections while a virtual board plays on a pty.

mod child_guard;
use child_guard::ChildGuard;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::emulate::{load_game, serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::games::{load_pgn, Game};

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
fn spawn(config: &Path, log: &Path, setup: impl Fn() -> std::io::Result<()> + Send + Sync + 'static) -> ChildGuard {
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
        assert_eq!(std::fs::read_to_string(&token).unwrap(), short, "left as it was");
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
    assert!(log_text(&log).contains("was readable by other users"), "{}", log_text(&log));
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
        .json(&serde_json::json!({"board": 1, "white": {"name": "Molinari, Luigi"},
                                  "black": {"name": "Bordais, Jean"}}))
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
