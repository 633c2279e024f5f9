//! The real `eboard-bridge run` binary against virtual boards on ptys: whole
//! games end up in the PGN files, the journal's captures replay to the same
//! games, and a `kill -9` mid-game loses and duplicates no verified move.

mod child_guard;
use child_guard::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::sim::games::{load_pgn, Game};

fn game() -> Game {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    load_game(&file, 1).unwrap()
}

fn board(game: &Game, link: &Path, seed: u64) -> EmulatorHandle {
    let opts = EmulateOptions {
        seed,
        speed: 1000.0,
        hand_speed: 3.0,
        // The tracker starts a game once the start position has stood still
        // for 600 ms; players who move sooner than that after the daemon
        // connects are not a case these tests are about.
        start_after_host: Some(1_500),
        link: Some(link.to_owned()),
        ..EmulateOptions::default()
    };
    serve_pty(game, &opts).unwrap()
}

fn write_config(dir: &Path, ports: &[&Path]) -> PathBuf {
    let mut text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n",
        dir.join("data")
    );
    for (i, p) in ports.iter().enumerate() {
        text.push_str(&format!(
            "[[board]]\nport = {:?}\nprotocol = \"dgt\"\nnumber = {}\n",
            p,
            i + 1
        ));
    }
    let path = dir.join("eboard-bridge.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn start_daemon(config: &Path, log: &Path) -> ChildGuard {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    ChildGuard::new(
        Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            // Tests run in parallel: each daemon takes a free port, not 8080.
            .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
            .arg("run")
            .arg("--config")
            .arg(config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

/// The verified moves in a board's PGN file, as UCI (empty if no file yet).
fn pgn_ucis(data: &Path, board: u32) -> Vec<String> {
    let path = data.join(format!("games/board-{board}.pgn"));
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    load_pgn(&text)
        .unwrap()
        .last()
        .map(Game::uci_moves)
        .unwrap_or_default()
}

fn wait_for(what: &str, log: &Path, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; daemon log:\n{}\ncaptures:\n{}",
            std::fs::read_to_string(log).unwrap_or_default(),
            capture_tails(&log.with_file_name("data"))
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first and last lines of every capture under `data`, for failure messages.
fn capture_tails(data: &Path) -> String {
    let mut out = String::new();
    let Ok(ports) = std::fs::read_dir(data.join("journal/captures")) else {
        return out;
    };
    for port in ports {
        for file in std::fs::read_dir(port.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("{} ({} lines)\n", path.display(), lines.len()));
            for l in lines
                .iter()
                .take(12)
                .chain(lines.iter().rev().take(5).rev())
            {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

/// Sends SIGTERM, as systemd does to stop the service.
fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Verified plies in the order the event log of board `board` holds them.
fn logged_verified_plies(data: &Path, board: u32) -> Vec<u64> {
    let text =
        std::fs::read_to_string(data.join(format!("journal/events/board-{board}.jsonl"))).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "move" && v["verified"] == true)
        .map(|v| v["ply"].as_u64().unwrap())
        .collect()
}

#[test]
fn run_follows_two_boards_and_the_journal_replays_to_the_same_games() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let links = [dir.path().join("dgt1"), dir.path().join("dgt2")];
    let _boards: Vec<_> = links
        .iter()
        .enumerate()
        .map(|(i, l)| board(&game, l, 11 + i as u64))
        .collect();
    let config = write_config(dir.path(), &[&links[0], &links[1]]);
    let log = dir.path().join("daemon.log");
    let mut daemon = start_daemon(&config, &log);
    let data = dir.path().join("data");
    wait_for("both games", &log, Duration::from_secs(45), || {
        pgn_ucis(&data, 1) == want && pgn_ucis(&data, 2) == want
    });
    terminate(&daemon);
    let status = daemon.wait().unwrap();
    assert!(status.success(), "SIGTERM is a clean stop: {status}");

    for board in [1, 2] {
        let plies = logged_verified_plies(&data, board);
        assert_eq!(plies, (1..=want.len() as u64).collect::<Vec<_>>());
    }
    // One capture per port for this run; `replay` turns them into the same games.
    let mut captures = Vec::new();
    for entry in std::fs::read_dir(data.join("journal/captures")).unwrap() {
        let port_dir = entry.unwrap().path();
        let files: Vec<_> = std::fs::read_dir(&port_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "one capture per port per run");
        captures.extend(files);
    }
    captures.sort();
    assert_eq!(captures.len(), 2);
    let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        // Tests run in parallel: each daemon takes a free port, not 8080.
        .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
        .arg("replay")
        .args(&captures)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let games = load_pgn(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(games.len(), 2);
    for g in games {
        assert_eq!(g.uci_moves(), want);
    }
}

#[test]
fn kill_9_mid_game_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let link = dir.path().join("dgt1");
    let _board = board(&game, &link, 5);
    let config = write_config(dir.path(), &[&link]);
    let log = dir.path().join("daemon.log");
    let data = dir.path().join("data");

    let mut daemon = start_daemon(&config, &log);
    wait_for("a few moves", &log, Duration::from_secs(30), || {
        pgn_ucis(&data, 1).len() >= 3
    });
    daemon.kill().unwrap(); // SIGKILL
    daemon.wait().unwrap();
    let before = pgn_ucis(&data, 1);
    assert!(
        before.len() >= 3 && before.len() < want.len() && want.starts_with(&before),
        "killed mid-game after {} plies",
        before.len()
    );

    let mut daemon = start_daemon(&config, &log);
    wait_for(
        "the whole game after the restart",
        &log,
        Duration::from_secs(45),
        || pgn_ucis(&data, 1) == want,
    );
    terminate(&daemon);
    assert!(daemon.wait().unwrap().success());

    // The event log holds each verified ply once, across both runs.
    let plies = logged_verified_plies(&data, 1);
    let mut sorted = plies.clone();
    sorted.dedup();
    assert_eq!(plies, sorted, "no verified ply logged twice: {plies:?}");
    assert!(plies.windows(2).all(|w| w[0] < w[1]), "{plies:?}");
    assert_eq!(*plies.last().unwrap(), want.len() as u64);
    let runs = std::fs::read_dir(data.join("journal/captures"))
        .unwrap()
        .flat_map(|e| std::fs::read_dir(e.unwrap().path()).unwrap())
        .count();
    assert_eq!(runs, 2, "one capture per run");
}
