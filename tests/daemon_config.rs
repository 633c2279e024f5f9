//! Configuration through the real binary: the printed defaults are a valid
//! configuration, bad files and variables are refused with messages naming
//! the key, no file at all works, and a DGT board plugged in while the daemon
//! runs is found under the discovery directory and followed.

mod child_guard;
use child_guard::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions};
use eboard_bridge::daemon::config::{Config, DEFAULT_CONFIG_TOML};
use eboard_bridge::sim::games::load_pgn;

fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"));
    // Tests run in parallel: each daemon takes a free port, not 8080.
    cmd.env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0");
    cmd
}

fn run_with(config: &str, env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = bin();
    cmd.arg("run").arg("--config").arg(&path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn terminate(child: &Child) {
    assert!(Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn print_config_prints_the_defaults_as_valid_toml() {
    let out = bin().arg("print-config").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, DEFAULT_CONFIG_TOML);
    let parsed = Config::from_toml(&text, Path::new("printed")).unwrap();
    assert_eq!(parsed, Config::default());
}

#[test]
fn bad_configurations_are_refused_with_the_key_named() {
    let out = run_with("[storage]\ndatadir = \"/tmp/x\"\n", &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("datadir") && err.contains("data_dir"), "{err}");
    assert!(err.contains("print-config"), "says where to look: {err}");

    let out = run_with("[[board]]\nport = \"/dev/ttyACM0\"\nnumber = 0\n", &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("board[1].number"), "{err}");

    let out = run_with("", &[("EBOARD_BRIDGE_HTTP_LISTEN", "port 80")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("EBOARD_BRIDGE_HTTP_LISTEN"), "{err}");

    let out = bin()
        .args(["run", "--config", "/nonexistent/eboard.toml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/eboard.toml"), "{err}");
}

fn wait_for(what: &str, log: &Path, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn no_file_at_all_runs_with_environment_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("state");
    let log = dir.path().join("log");
    let mut child = ChildGuard::new(
        bin()
            .arg("run")
            .env("EBOARD_BRIDGE_DATA_DIR", &data)
            .env("EBOARD_BRIDGE_DISCOVERY", "false")
            .stderr(std::fs::File::create(&log).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the daemon to run", &log, Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("running"))
    });
    assert!(
        data.join("journal/captures").is_dir(),
        "data_dir came from the environment"
    );
    terminate(&child);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_board_plugged_in_later_is_discovered_and_followed() {
    let dir = tempfile::tempdir().unwrap();
    let by_id = dir.path().join("by-id");
    std::fs::create_dir(&by_id).unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!("[storage]\ndata_dir = {data:?}\n[discovery]\ndir = {by_id:?}\nrescan_ms = 200\n"),
    )
    .unwrap();
    let log = dir.path().join("log");
    let mut child = ChildGuard::new(
        bin()
            .arg("run")
            .arg("--config")
            .arg(&config)
            .stderr(std::fs::File::create(&log).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the daemon to run", &log, Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("running"))
    });

    // A generic USB-serial adapter is not claimed; a DGT board is.
    let game_file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let game = load_game(&game_file, 1).unwrap();
    let opts = |seed, name: &str| EmulateOptions {
        seed,
        speed: 1000.0,
        hand_speed: 3.0,
        start_after_host: Some(1_500),
        link: Some(by_id.join(name)),
        ..EmulateOptions::default()
    };
    let _other = serve_pty(
        &game,
        &opts(1, "usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"),
    )
    .unwrap();
    let _dgt = serve_pty(
        &game,
        &opts(2, "usb-Digital_Game_Technology_DGT_Board_01025-if00"),
    )
    .unwrap();
    let want = game.uci_moves();
    let pgn = data.join("games/board-1.pgn");
    wait_for(
        "the discovered board's game",
        &log,
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(&pgn)
                .ok()
                .and_then(|t| load_pgn(&t).ok())
                .and_then(|g| g.last().map(|g| g.uci_moves()))
                .is_some_and(|m| m == want)
        },
    );
    terminate(&child);
    assert!(child.wait().unwrap().success());
    let ports: Vec<String> = std::fs::read_dir(data.join("journal/captures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ports.len(), 1, "only the DGT board was opened: {ports:?}");
    assert!(ports[0].contains("Digital_Game_Technology"));
}

#[test]
fn systemd_hears_ready_status_watchdog_and_stopping() {
    use std::os::unix::net::UnixDatagram;
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let log = dir.path().join("log");
    // systemd names the watched process in WATCHDOG_PID; exec keeps the shell's pid.
    let mut child = ChildGuard::new(
        Command::new("sh")
            .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
            .arg("-c")
            .arg("WATCHDOG_PID=$$ exec \"$0\" run")
            .arg(env!("CARGO_BIN_EXE_eboard-bridge"))
            .env("EBOARD_BRIDGE_DATA_DIR", dir.path().join("data"))
            .env("EBOARD_BRIDGE_DISCOVERY", "false")
            .env("NOTIFY_SOCKET", &socket_path)
            .env("WATCHDOG_USEC", "400000")
            .stderr(std::fs::File::create(&log).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut heard: Vec<String> = Vec::new();
    let mut buf = [0u8; 512];
    let mut recv = |heard: &mut Vec<String>| {
        let n = socket.recv(&mut buf).expect("a notification within 10 s");
        heard.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    };
    while heard.iter().filter(|m| m.contains("WATCHDOG=1")).count() < 2 {
        recv(&mut heard);
    }
    assert!(heard[0].contains("READY=1"), "READY first: {heard:?}");
    assert!(
        heard.iter().any(|m| m.contains("STATUS=0 boards")),
        "{heard:?}"
    );
    terminate(&child);
    while !heard.last().unwrap().contains("STOPPING=1") {
        recv(&mut heard);
    }
    assert!(child.wait().unwrap().success());
}
