//! Helpers shared by the daemon scale and chaos tests: short real games from
//! `tests/data`, a daemon started in-process, waiting, and reading what the
//! hub published.

#![allow(dead_code)]

pub mod journal_seed;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::{Hub, PublicEvent};
use eboard_bridge::daemon::DaemonError;
use eboard_bridge::events::GameEvent;
use eboard_bridge::sim::games::{load_pgn_file, Game};
use shakmaty::Position;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;

pub fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// `count` distinct games of the standard start position with `plies` moves,
/// from one PGN file of `data/games`, each checked against the expected UCI
/// moves of `expected/games-index.jsonl` (the source the tests compare with).
pub fn short_games(
    file: &str,
    plies: std::ops::RangeInclusive<usize>,
    count: usize,
) -> Vec<(Game, Vec<String>)> {
    let index = std::fs::read_to_string(data("expected/games-index.jsonl")).unwrap();
    let games = load_pgn_file(&data(file)).unwrap();
    let mut out = Vec::new();
    for line in index.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["file"] != file
            || v["chess960"] != false
            || v["start_fen"] != "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
            || !plies.contains(&(v["plies"].as_u64().unwrap() as usize))
        {
            continue;
        }
        let want: Vec<String> = v["uci"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let game = games[v["game"].as_u64().unwrap() as usize].clone();
        assert_eq!(game.uci_moves(), want, "{file} game {}", v["game"]);
        out.push((game, want));
        if out.len() == count {
            break;
        }
    }
    assert_eq!(
        out.len(),
        count,
        "{file} has too few games of {plies:?} plies"
    );
    out
}

/// The same game from ply `from` on: the board as it stands after `from` plies.
pub fn resumed(game: &Game, from: usize) -> Game {
    let mut start = game.start.clone();
    for m in &game.moves[..from] {
        start.play_unchecked(*m);
    }
    Game {
        start,
        moves: game.moves[from..].to_vec(),
        ..game.clone()
    }
}

pub fn single(port: &Path, number: u32) -> BoardConfig {
    BoardConfig {
        port: port.to_owned(),
        protocol: Protocol::DGT,
        bus: false,
        number: Some(number),
        serial: None,
        leds: None,
    }
}

pub fn config(data: &Path, boards: Vec<BoardConfig>) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = data.to_owned();
    c.discovery.enabled = false;
    c.device.silence_timeout_ms = 3_000;
    c.device.probe_ms = 1_000;
    c.boards = boards;
    c.validate().unwrap();
    c
}

pub struct Running {
    pub hub: Arc<Hub>,
    pub stop: oneshot::Sender<()>,
    pub task: JoinHandle<Result<(), DaemonError>>,
    /// Fires when the daemon says it is ready: the journal recovered (what it
    /// had to publish again is published) and every port has its supervisor.
    pub ready: oneshot::Receiver<()>,
}

impl Running {
    /// Waits for the daemon's readiness (see [`Running::ready`]).
    pub async fn wait_ready(&mut self, timeout: Duration) {
        tokio::time::timeout(timeout, &mut self.ready)
            .await
            .expect("the daemon did not get ready in time")
            .expect("the daemon stopped before it was ready");
    }

    pub async fn shutdown(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

/// Starts the daemon in this process.
pub fn start(config: Config) -> Running {
    start_on(Arc::new(Hub::new()), config)
}

/// Starts the daemon on a hub the caller may have subscribed to already, so
/// that nothing published while the journal is recovered is missed.
pub fn start_on(hub: Arc<Hub>, config: Config) -> Running {
    let (stop, stop_rx) = oneshot::channel::<()>();
    let (ready_tx, ready) = oneshot::channel::<()>();
    let task = tokio::spawn(eboard_bridge::daemon::run(
        config,
        hub.clone(),
        async {
            let _ = stop_rx.await;
        },
        move || {
            let _ = ready_tx.send(());
        },
    ));
    Running {
        hub,
        stop,
        task,
        ready,
    }
}

pub async fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Verified plies published so far, in order, as (board, ply, uci).
pub fn drain_verified(
    rx: &mut broadcast::Receiver<std::sync::Arc<PublicEvent>>,
    out: &mut Vec<(u32, u32, String)>,
) {
    loop {
        match rx.try_recv() {
            Ok(e) => {
                if let GameEvent::Move(m) = &e.event {
                    if m.verified {
                        out.push((e.board, m.ply, m.uci.clone()));
                    }
                }
            }
            Err(broadcast::error::TryRecvError::Lagged(n)) => {
                panic!("the test fell {n} events behind the hub")
            }
            Err(_) => break,
        }
    }
}

/// The verified moves of the board's current game, as the hub holds them.
pub fn ucis(hub: &Hub, board: u32) -> Vec<String> {
    hub.public_board(board)
        .and_then(|b| b.game)
        .map(|g| g.moves.iter().map(|m| m.uci.clone()).collect())
        .unwrap_or_default()
}

/// The verified plies published for `board`, which must be 1, 2, … each once.
pub fn assert_each_ply_once(verified: &[(u32, u32, String)], board: u32, want: &[String]) {
    let got: Vec<(u32, &str)> = verified
        .iter()
        .filter(|(b, _, _)| *b == board)
        .map(|(_, p, u)| (*p, u.as_str()))
        .collect();
    let expected: Vec<(u32, &str)> = want
        .iter()
        .enumerate()
        .map(|(i, u)| (i as u32 + 1, u.as_str()))
        .collect();
    assert_eq!(
        got, expected,
        "board {board}: each ply verified once, in order"
    );
}

/// Waits until every `(board, moves)` has exactly its moves verified, collecting
/// the verified plies published meanwhile; on timeout, says which boards lag
/// and what the arbiters were told about them.
pub async fn wait_games(
    hub: &Hub,
    boards: &[(u32, Vec<String>)],
    timeout: Duration,
    public: &mut broadcast::Receiver<std::sync::Arc<PublicEvent>>,
    verified: &mut Vec<(u32, u32, String)>,
) {
    wait_games_or_say(hub, boards, timeout, public, verified, String::new).await;
}

/// [`wait_games`], adding what `more` says to the message on timeout (what
/// the test alone knows, such as the bytes its boards had to throw away).
pub async fn wait_games_or_say(
    hub: &Hub,
    boards: &[(u32, Vec<String>)],
    timeout: Duration,
    public: &mut broadcast::Receiver<std::sync::Arc<PublicEvent>>,
    verified: &mut Vec<(u32, u32, String)>,
    more: impl Fn() -> String,
) {
    let deadline = Instant::now() + timeout;
    while !boards.iter().all(|(n, want)| ucis(hub, *n) == *want) {
        drain_verified(public, verified);
        if Instant::now() > deadline {
            let arb = hub.arbiter_snapshot();
            let mut lagging = 0;
            for (n, want) in boards {
                let got = ucis(hub, *n);
                if got != *want {
                    lagging += 1;
                    let open = arb.iter().find(|b| b.public.number == *n).map(|b| &b.open);
                    eprintln!(
                        "board {n}: {} of {} plies, {}; open {open:?}",
                        got.len(),
                        want.len(),
                        if want.starts_with(&got) {
                            "a prefix"
                        } else {
                            "WRONG"
                        }
                    );
                }
            }
            panic!(
                "timed out: {lagging} of {} boards lag{}",
                boards.len(),
                more()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drain_verified(public, verified);
}
