//! Real PGN readers on every PGN the bridge serves or writes: python-chess
//! (PyPI `chess`) and pgn-extract (Debian `pgn-extract`). Built only with
//! `--features reader-tests`, so that `cargo test --workspace` needs nothing
//! but Rust; `.ci/run` installs both readers and runs it. When one is missing
//! this test fails and says how to install it.
//!
//! Served: `/games.pgn` and every `/round/{r}/game/{b}.pgn` of two rounds, the
//! broadcast folder of the file sink; written: the daemon's own
//! `<data_dir>/games/board-N.pgn` after a virtual board played into it. The
//! games cover a real game with a result, Chess960 (FEN/SetUp/Variant), a game
//! from a set position, `[%clk]` on every move and player names with quotes,
//! a backslash and `<script>`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::chess960::start_number;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{
    GameEvent, GameResult, MoveEvent, ResultReason, Stamped, TrackerEvent,
};
use eboard_bridge::http::{router, FeedConfig};
use eboard_bridge::publish::{PairingConfig, Player, Tournament, TournamentConfig};
use eboard_bridge::sim::games::{load_index, load_pgn, Game};
use serde_json::Value;
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{EnPassantMode, Position};

const QUOTE: &str = "O\"Brien, \"Quick\" Sean";
const BACKSLASH: &str = "Back\\slash, C:\\Users";
const SCRIPT: &str = "<script>alert(1)</script>";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A Python with python-chess: `READERS_PYTHON`, the venv `.ci/run` makes, or
/// `python3`. Panics with the install command when none has it.
fn python() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("READERS_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            workspace().join("target/readers-venv/bin/python"),
            PathBuf::from("python3"),
        ])
        .collect();
    for p in &candidates {
        let ok = Command::new(p)
            .args(["-c", "import chess.pgn"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return p.clone();
        }
    }
    panic!(
        "python-chess is not installed (tried {candidates:?}): run `bash .ci/run`, or \
         `python3 -m venv target/readers-venv && target/readers-venv/bin/pip install chess`"
    );
}

/// pgn-extract, which Debian installs under /usr/games.
fn pgn_extract() -> PathBuf {
    for p in ["pgn-extract", "/usr/games/pgn-extract"] {
        if Command::new(p).arg("-h").output().is_ok() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "pgn-extract is not installed: `apt-get install -y pgn-extract` (or run `bash .ci/run`)"
    );
}

/// What python-chess read from one file: per game its parse errors, headers,
/// mainline SAN and how many moves carry a `[%clk]`.
const READ_PY: &str = r#"
import json, sys
import chess.pgn
out = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        while True:
            game = chess.pgn.read_game(f)
            if game is None:
                break
            sans, clocks = [], 0
            for node in game.mainline():
                sans.append(node.san())
                if node.clock() is not None:
                    clocks += 1
            out.append({
                "file": path,
                "errors": [repr(e) for e in game.errors],
                "headers": dict(game.headers),
                "sans": sans,
                "clocks": clocks,
                "chess960": game.board().chess960,
                "end": game.end().board().fen(),
            })
print(json.dumps(out))
"#;

fn python_read(files: &[PathBuf]) -> Vec<Value> {
    let out = Command::new(python())
        .arg("-c")
        .arg(READ_PY)
        .args(files)
        .output()
        .expect("python runs");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "python-chess failed on {files:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// pgn-extract reads `file` strictly (`-s` silent, so any line on stderr is a
/// complaint) and writes it back; the copy must read the same in python-chess.
fn pgn_extract_round_trip(file: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join(format!(
        "{}.extracted.pgn",
        file.file_name().unwrap().to_string_lossy()
    ));
    let out = Command::new(pgn_extract())
        .arg("-s")
        .arg("-o")
        .arg(&copy)
        .arg(file)
        .output()
        .expect("pgn-extract runs");
    assert!(
        out.status.success() && out.stderr.is_empty() && out.stdout.is_empty(),
        "pgn-extract complained about {}:\n{}{}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
    copy
}

/// Both readers on `file`: no error, every game's moves as `want` (SAN per
/// game, in order; `None` = do not compare), a clock on every move; returns
/// what python-chess read.
fn check_file(file: &Path, dir: &Path, want: &[Option<Vec<String>>]) -> Vec<Value> {
    let games = python_read(&[file.to_path_buf()]);
    assert_eq!(games.len(), want.len(), "{}: game count", file.display());
    let copy = pgn_extract_round_trip(file, dir);
    let again = python_read(&[copy]);
    assert_eq!(
        again.len(),
        games.len(),
        "{}: pgn-extract kept every game",
        file.display()
    );
    for ((g, a), w) in games.iter().zip(&again).zip(want) {
        let what = format!("{} game {}", file.display(), g["headers"]["Round"]);
        assert_eq!(g["errors"], serde_json::json!([]), "{what}");
        assert_eq!(
            a["errors"],
            serde_json::json!([]),
            "{what} after pgn-extract"
        );
        let sans: Vec<String> = serde_json::from_value(g["sans"].clone()).unwrap();
        if let Some(w) = w {
            assert_eq!(&sans, w, "{what}: moves");
        }
        assert_eq!(
            g["clocks"].as_u64().unwrap() as usize,
            sans.len(),
            "{what}: [%clk] on every move"
        );
        assert_eq!(a["sans"], g["sans"], "{what}: pgn-extract kept the moves");
        assert_eq!(
            a["clocks"], g["clocks"],
            "{what}: pgn-extract kept the clocks"
        );
        assert_eq!(
            a["headers"], g["headers"],
            "{what}: pgn-extract kept the tags"
        );
        assert_eq!(a["end"], g["end"], "{what}");
    }
    games
}

/// Plays `game`'s moves (from ply `skip` on, starting at the position there)
/// into `hub` as board `board`'s tracker would; returns the SAN played.
fn feed(hub: &Hub, board: u32, game: &Game, skip: usize, plies: usize) -> Vec<String> {
    let mode = game.castling_mode();
    let mut pos = game.start.clone();
    for m in &game.moves[..skip] {
        pos.play_unchecked(*m);
    }
    let stamp = |ply: u32, event| Stamped {
        board,
        ply,
        t_ms: u64::from(ply) * 1000,
        event: TrackerEvent::Game(event),
    };
    let chess960 = start_number(pos.board()).filter(|_| skip == 0);
    hub.apply(
        &stamp(
            0,
            GameEvent::GameStart {
                fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                chess960,
                rotated: false,
            },
        ),
        true,
    );
    let mut sans = Vec::new();
    for (n, m) in game.moves[skip..].iter().take(plies).enumerate() {
        let ply = n as u32 + 1;
        let uci = UciMove::from_move(*m, mode).to_string();
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string();
        sans.push(san.clone());
        hub.apply(
            &stamp(
                ply,
                GameEvent::Move(MoveEvent {
                    ply,
                    san,
                    uci,
                    fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                    verified: true,
                    clock_ms: Some(5_400_000 - u64::from(ply) * 7_000),
                    emt_ms: Some(7_000),
                    reconstructed: false,
                    corrected: false,
                }),
            ),
            true,
        );
    }
    sans
}

/// A tag value as PGN writes it (`\\` and `\"`). python-chess 1.11 hands tag
/// values back as written, escapes included, so that is what it must return:
/// the point is that the value survives whole, not cut at an inner quote.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

fn player(name: &str) -> Player {
    Player {
        name: name.into(),
        title: Some("IM".into()),
        rating: Some(2400),
        fide_id: Some(1_000_001),
        federation: Some("IRL".into()),
    }
}

fn pairing(round: u32, board: u32, white: &str, black: &str) -> PairingConfig {
    PairingConfig {
        round: Some(round),
        board,
        white: player(white),
        black: player(black),
    }
}

async fn fetch(url: &str) -> String {
    let r = reqwest::get(url).await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{url}");
    r.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_pgn_reads_cleanly_in_python_chess_and_pgn_extract() {
    let index = load_index(&workspace().join("tests/data/expected/games-index.jsonl")).unwrap();
    let ok: Vec<&Game> = index
        .iter()
        .filter(|g| g.status == "ok")
        .filter_map(|g| g.game.as_ref())
        .collect();
    let standard = ok
        .iter()
        .find(|g| g.chess960.is_none() && g.moves.len() > 60)
        .expect("a long standard game in the data set");
    let c960 = ok
        .iter()
        .find(|g| g.chess960.is_some_and(|n| n != 518) && g.moves.len() > 30)
        .expect("a Chess960 game in the data set");

    let t = Tournament::new(
        TournamentConfig {
            name: Some("Readers \"Open\" \\ 2026".into()),
            site: Some("Hometown".into()),
            time_control: Some("5400+30".into()),
            rounds: 2,
            current_round: 1,
            date: Some("2026-11-22".into()),
            ..TournamentConfig::default()
        },
        &[
            pairing(1, 1, QUOTE, BACKSLASH),
            pairing(1, 2, SCRIPT, QUOTE),
            pairing(1, 3, BACKSLASH, SCRIPT),
            pairing(2, 1, SCRIPT, BACKSLASH),
        ],
    )
    .unwrap();
    let hub = Arc::new(Hub::new());
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(
        Arc::clone(&hub),
        FeedConfig {
            arbiter_token: "token".into(),
            tournament: Arc::new(t),
            pgn_dir: Some(dir.path().join("broadcast")),
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    // Round 1: a real game with a result, Chess960, a game from a set position.
    let r1b1 = feed(&hub, 1, standard, 0, standard.moves.len());
    hub.apply(
        &Stamped {
            board: 1,
            ply: r1b1.len() as u32,
            t_ms: 999_000,
            event: TrackerEvent::Game(GameEvent::Result {
                result: GameResult::Draw,
                reason: ResultReason::Arbiter,
            }),
        },
        true,
    );
    let r1b2 = feed(&hub, 2, c960, 0, c960.moves.len());
    let r1b3 = feed(&hub, 3, standard, 21, 30);
    // Round 2 on board 1: round 1's games stay served under round 1.
    hub.set_round(2);
    let r2b1 = feed(&hub, 1, standard, 0, 12);

    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let save = |name: &str, text: &str| {
        let p = served.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let games = save("games.pgn", &fetch(&format!("{base}/games.pgn")).await);
    let read = check_file(&games, dir.path(), &[Some(r2b1.clone())]);
    assert_eq!(read[0]["headers"]["White"], esc(SCRIPT));
    assert_eq!(read[0]["headers"]["Black"], esc(BACKSLASH));
    assert_eq!(read[0]["headers"]["Event"], esc("Readers \"Open\" \\ 2026"));
    for (round, board, sans) in [(1, 1, &r1b1), (1, 2, &r1b2), (1, 3, &r1b3), (2, 1, &r2b1)] {
        let text = fetch(&format!("{base}/round/{round}/game/{board}.pgn")).await;
        let file = save(&format!("r{round}b{board}.pgn"), &text);
        let g = &check_file(&file, dir.path(), &[Some(sans.clone())])[0];
        assert_eq!(g["headers"]["Round"], format!("{round}.{board}"));
        match (round, board) {
            (1, 1) => {
                assert_eq!(g["headers"]["Result"], "1/2-1/2");
                assert_eq!(g["headers"]["White"], esc(QUOTE));
                assert_eq!(g["headers"]["Black"], esc(BACKSLASH));
            }
            (1, 2) => {
                assert_eq!(g["headers"]["Variant"], "Chess960");
                assert_eq!(g["headers"]["SetUp"], "1");
                assert_eq!(g["chess960"], true);
                assert_eq!(g["headers"]["White"], esc(SCRIPT));
            }
            (1, 3) => {
                assert_eq!(g["headers"]["SetUp"], "1");
                assert!(g["headers"].get("Variant").is_none());
                assert!(
                    g["headers"]["FEN"].as_str().unwrap().contains(" b ")
                        || g["headers"]["FEN"].as_str().unwrap().contains(" w ")
                );
            }
            _ => {}
        }
    }
    // The file sink's folders, once they hold the last moves.
    let deadline = Instant::now() + Duration::from_secs(10);
    let b = dir.path().join("broadcast");
    while !(std::fs::read_to_string(b.join("round-1/games.pgn"))
        .is_ok_and(|t| t.matches("[Event ").count() == 3 && t.contains("1/2-1/2"))
        && std::fs::read_to_string(b.join("round-2/game-1.pgn")).is_ok_and(|t| t.contains("6. ")))
    {
        assert!(Instant::now() < deadline, "the file sink did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check_file(
        &b.join("round-1/games.pgn"),
        dir.path(),
        &[Some(r1b1.clone()), Some(r1b2.clone()), Some(r1b3.clone())],
    );
    for (round, board, sans) in [(1, 1, &r1b1), (1, 2, &r1b2), (1, 3, &r1b3), (2, 1, &r2b1)] {
        check_file(
            &b.join(format!("round-{round}/game-{board}.pgn")),
            dir.path(),
            &[Some(sans.clone())],
        );
    }
}

/// The daemon's own `games/board-N.pgn` and its broadcast folder, after a
/// virtual DGT board played a real game into it through a pseudo-terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_own_pgn_files_read_cleanly_and_name_the_players() {
    let games = load_pgn(
        &std::fs::read_to_string(
            workspace().join("tests/data/games/python-chess-molinari-bordais-1979.pgn"),
        )
        .unwrap(),
    )
    .unwrap();
    let game = games[0].clone();
    let dir = tempfile::tempdir().unwrap();
    let emulator = serve_pty(
        &game,
        &EmulateOptions {
            seed: 7,
            speed: 1000.0,
            start_after_host: Some(1_500),
            ..EmulateOptions::default()
        },
    )
    .unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    config.storage.recover = false;
    config.discovery.enabled = false;
    config.tournament.name = Some("Daemon \"Readers\" Cup".into());
    config.tournament.current_round = 2;
    config.pairings.push(pairing(2, 1, SCRIPT, QUOTE));
    config.boards.push(BoardConfig {
        port: emulator.path().to_owned(),
        protocol: Protocol::DGT,
        bus: false,
        number: Some(1),
        serial: None,
        leds: None,
    });
    config.http.listen = "127.0.0.1:0".parse().unwrap();
    config.ebapi.enabled = false;
    // A stand-in for Lichess that keeps what is pushed (the contract itself
    // is tested in tests/lichess_push.rs).
    let pushed: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let keep = Arc::clone(&pushed);
    let lichess = axum::Router::new().route(
        "/api/broadcast/round/{id}/push",
        axum::routing::post(move |body: String| {
            let keep = Arc::clone(&keep);
            async move {
                keep.lock().unwrap().push(body);
                r#"{"games":[]}"#
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    config.lichess.url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, lichess).await });
    let token = dir.path().join("lichess-token");
    std::fs::write(&token, "readers-test-token").unwrap();
    config.lichess.round_id = Some("Readers1".into());
    config.lichess.token_file = Some(token);
    let hub = Arc::new(Hub::new());
    let http =
        eboard_bridge::daemon::service::start_http(&config, config.http.listen, Arc::clone(&hub))
            .await
            .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(eboard_bridge::daemon::run(
        config,
        Arc::clone(&hub),
        async {
            let _ = stop_rx.await;
        },
        || {},
    ));
    // Hands move at human speed (a second or two per move on a busy machine).
    let deadline = Instant::now() + Duration::from_secs(120);
    while hub.verified_plies(1) < 6 {
        assert!(
            Instant::now() < deadline,
            "the daemon verified only {} plies",
            hub.verified_plies(1)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let served = fetch(&format!("http://{}/games.pgn", http.addr)).await;
    let round_early = fetch(&format!("http://{}/round/2/games.pgn", http.addr)).await;
    while hub.verified_plies(1) < 10 {
        assert!(
            Instant::now() < deadline,
            "the daemon verified only {} plies",
            hub.verified_plies(1)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let round_later = fetch(&format!("http://{}/round/2/games.pgn", http.addr)).await;
    // The push that carries the tenth ply (pushes follow within about a second).
    let push_deadline = Instant::now() + Duration::from_secs(20);
    let last_push = loop {
        let last = pushed.lock().unwrap().last().cloned().unwrap_or_default();
        if last.contains("5... ") || last.contains("6. ") {
            break last;
        }
        assert!(
            Instant::now() < push_deadline,
            "no push with ten plies: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = stop_tx.send(());
    daemon.await.unwrap().unwrap();
    let _ = emulator.stop();

    let want: Vec<String> = {
        let mut pos = game.start.clone();
        game.moves
            .iter()
            .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
            .collect()
    };
    let prefix_ok = |g: &Value| {
        let sans: Vec<String> = serde_json::from_value(g["sans"].clone()).unwrap();
        assert!(sans.len() >= 6 && want.starts_with(&sans), "{sans:?}");
    };
    let own = dir.path().join("games/board-1.pgn");
    let g = &check_file(&own, dir.path(), &[None])[0];
    prefix_ok(g);
    assert_eq!(
        g["headers"]["White"],
        esc(SCRIPT),
        "the pairing names the players"
    );
    assert_eq!(g["headers"]["Black"], esc(QUOTE));
    assert_eq!(g["headers"]["Round"], "2.1");
    assert_eq!(g["headers"]["Event"], esc("Daemon \"Readers\" Cup"));
    assert_eq!(g["headers"]["WhiteElo"], "2400");
    let file = dir.path().join("served.pgn");
    std::fs::write(&file, served).unwrap();
    prefix_ok(&check_file(&file, dir.path(), &[None])[0]);
    let sink = dir.path().join("broadcast/round-2/game-1.pgn");
    prefix_ok(&check_file(&sink, dir.path(), &[None])[0]);

    // The round's URL and the pushed body read cleanly too, and a game keeps
    // its GameId (and Round, Board, names) from one update to the next.
    let mut ids = Vec::new();
    for (name, text) in [
        ("round-early.pgn", round_early),
        ("round-later.pgn", round_later),
        ("pushed.pgn", last_push),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let g = check_file(&file, dir.path(), &[None])[0].clone();
        prefix_ok(&g);
        let h = &g["headers"];
        assert_eq!(
            (&h["Round"], &h["Board"]),
            (&Value::from("2.1"), &Value::from("1")),
            "{name}"
        );
        assert!(
            h["WhiteClock"].is_string() && h["BlackClock"].is_string(),
            "{name}: {h}"
        );
        ids.push((h["GameId"].clone(), h["White"].clone(), h["Black"].clone()));
    }
    assert!(ids[0].0.is_string());
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one GameId and the same players: {ids:?}"
    );
}
