//! The Lichess push client against a local HTTP server that enforces the
//! documented contract of `POST /api/broadcast/round/{id}/push` (method, path,
//! `Authorization: Bearer`, a `text/plain` body of at most 100 games, a JSON
//! answer per game with `moves` or `error`, 429 when pushed too fast). Not
//! lichess.org itself: the server here checks what Lichess's API documentation
//! and code say, and replays every game's moves by the rules of chess as
//! Lichess does (an illegal move fails the game).
//!
//! Also here: with an arbiter alert open (7.5.1, an illegal move completed),
//! nothing of it reaches the EBAPI, the PGN feeds or the pushed body.

mod child_guard;
mod live_daemon;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::publish::ids::game_id;
use eboard_bridge::publish::{PairingConfig, Player};
use serde_json::{json, Value};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{CastlingMode, Chess, Position};

const TOKEN: &str = "lip_contract_test_token";
const ROUND_ID: &str = "TestRnd1";

/// One request as the contract server saw it, and what it answered.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    status: u16,
    body: String,
}

#[derive(Clone, Default)]
struct Contract {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Answer the first request with 429.
    throttle_first: bool,
}

/// The games of a PGN text: (tags, movetext).
fn games(pgn: &str) -> Vec<(Vec<(String, String)>, String)> {
    let mut out: Vec<(Vec<(String, String)>, String)> = Vec::new();
    let mut in_moves = false;
    for line in pgn.lines() {
        if line.starts_with('[') && (out.is_empty() || in_moves) {
            out.push((Vec::new(), String::new()));
            in_moves = false;
        }
        if let Some(tag) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if !in_moves {
                if let Some((k, v)) = tag.split_once(' ') {
                    let v = v
                        .trim_matches('"')
                        .replace("\\\"", "\"")
                        .replace("\\\\", "\\");
                    out.last_mut().unwrap().0.push((k.to_owned(), v));
                }
                continue;
            }
        }
        if !line.trim().is_empty() {
            in_moves = true;
            let g = out.last_mut().unwrap();
            g.1.push_str(line);
            g.1.push(' ');
        }
    }
    out
}

fn tag<'a>(tags: &'a [(String, String)], name: &str) -> Option<&'a str> {
    tags.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The SAN moves of a movetext (comments, numbers and the result left out).
fn sans(movetext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut plain = String::new();
    for c in movetext.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            c if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    for tok in plain.split_whitespace() {
        let tok = tok.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        if tok.is_empty() || ["*", "1-0", "0-1", "1/2-1/2"].contains(&tok) {
            continue;
        }
        out.push(tok.to_owned());
    }
    out
}

/// What Lichess answers for one game: its moves played by the rules, or why not.
fn reply(tags: &[(String, String)], movetext: &str) -> Value {
    let mut pos: Chess = match tag(tags, "FEN") {
        Some(f) => f
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap(),
        None => Chess::default(),
    };
    let tags_json: serde_json::Map<String, Value> = tags
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    let moves = sans(movetext);
    for (i, san) in moves.iter().enumerate() {
        let Some(m) = san.parse::<San>().ok().and_then(|s| s.to_move(&pos).ok()) else {
            return json!({"tags": tags_json, "error": format!("Illegal move {san} at ply {}", i + 1)});
        };
        pos.play_unchecked(m);
    }
    json!({"tags": tags_json, "moves": moves.len()})
}

async fn push(
    State(c): State<Contract>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let games = games(&body);
    let first = c.seen.lock().unwrap().is_empty();
    let (status, answer) = if id != ROUND_ID {
        (StatusCode::NOT_FOUND, json!({"error": "No such round"}))
    } else if header("authorization") != format!("Bearer {TOKEN}") {
        (StatusCode::UNAUTHORIZED, json!({"error": "No such token"}))
    } else if !header("content-type").starts_with("text/plain") {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "the body must be text/plain PGN"}),
        )
    } else if !header("user-agent").starts_with("eboard-bridge/") {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "say who you are in User-Agent"}),
        )
    } else if games.is_empty() || games.len() > 100 {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": format!("{} games: 1 to 100 per push", games.len())}),
        )
    } else if first && c.throttle_first {
        (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": "Too many requests. Try again later."}),
        )
    } else {
        let replies: Vec<Value> = games.iter().map(|(t, m)| reply(t, m)).collect();
        (StatusCode::OK, json!({"games": replies}))
    };
    c.seen.lock().unwrap().push(Seen {
        at: Instant::now(),
        status: status.as_u16(),
        body,
    });
    let mut res = (status, answer.to_string()).into_response();
    if status == StatusCode::TOO_MANY_REQUESTS {
        res.headers_mut()
            .insert("retry-after", "1".parse().unwrap());
    }
    res
}

async fn contract_server(c: Contract) -> String {
    let app = Router::new()
        .route("/api/broadcast/round/{id}/push", post(push))
        .with_state(c);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn player(name: &str) -> Player {
    Player {
        name: name.into(),
        ..Player::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_round_of_120_boards_is_pushed_in_chunks_with_backoff() {
    let contract = Contract {
        throttle_first: true,
        ..Contract::default()
    };
    let url = contract_server(contract.clone()).await;
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let game = load_game(&file, 1).unwrap();
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
    let token = dir.path().join("lichess-token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    config.storage.recover = false;
    config.discovery.enabled = false;
    config.http.listen = "127.0.0.1:0".parse().unwrap();
    config.http.arbiter_token = Some("push-test-arbiter-token".into());
    config.ebapi.enabled = false;
    config.tournament.name = Some("Push Open".into());
    config.lichess.round_id = Some(ROUND_ID.into());
    config.lichess.token_file = Some(token);
    config.lichess.url = url;
    for b in 1..=120 {
        config.pairings.push(PairingConfig {
            round: None,
            board: b,
            white: player(&format!("White, Player {b}")),
            black: player(&format!("Black, Player {b}")),
        });
    }
    config.boards.push(BoardConfig {
        port: emulator.path().to_owned(),
        protocol: Protocol::DGT,
        bus: false,
        number: Some(1),
        serial: None,
        leds: None,
    });
    config.validate().unwrap();
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
    let id = game_id(Some("Push Open"), 1, 1);
    let board1_moves = |s: &Seen| {
        games(&s.body)
            .into_iter()
            .find(|(t, _)| tag(t, "GameId") == Some(id.as_str()))
            .map(|(_, m)| sans(&m).len())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done = contract
            .seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.status == 200 && board1_moves(s).is_some_and(|n| n >= 8));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "no push with 8 plies of board 1");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The fake Lichess records a request before it answers, and the daemon
    // reads the answer into its report after that: wait for the report too.
    let report = loop {
        let report: Value = reqwest::Client::new()
            .get(format!("http://{}/arbiter/api/lichess", http.addr))
            .bearer_auth("push-test-arbiter-token")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let answered = report["games"]
            .get(0)
            .and_then(|g| g["moves"].as_u64())
            .is_some_and(|n| n >= 8);
        if answered || Instant::now() >= deadline {
            break report;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = stop_tx.send(());
    daemon.await.unwrap().unwrap();
    let _ = emulator.stop();

    let seen = contract.seen.lock().unwrap().clone();
    assert_eq!(seen[0].status, 429, "the first push is throttled");
    let after = seen.iter().find(|s| s.at > seen[0].at).unwrap();
    assert!(
        after.at.duration_since(seen[0].at) >= Duration::from_millis(950),
        "the client waited the Retry-After second"
    );
    assert!(
        after.body.contains("[Round \"1.1\"]"),
        "the whole round again, from its first game"
    );
    for s in &seen {
        assert!(
            s.status == 200 || s.status == 429,
            "refused: {} {}",
            s.status,
            s.body.len()
        );
        let n = games(&s.body).len();
        assert!((1..=100).contains(&n), "{n} games in one request");
    }
    let ok: Vec<&Seen> = seen.iter().filter(|s| s.status == 200).collect();
    // 120 games: every round push is two requests, 100 then 20.
    assert_eq!(games(&ok[0].body).len(), 100);
    assert_eq!(games(&ok[1].body).len(), 20);
    assert!(ok[1].body.contains("[Round \"1.120\"]"));
    let counts: Vec<usize> = ok.iter().filter_map(|s| board1_moves(s)).collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "board 1 only grows: {counts:?}"
    );
    let mut distinct = counts.clone();
    distinct.dedup();
    assert!(distinct.len() >= 3, "pushed on each change: {counts:?}");
    assert!(
        counts.len() <= hub.verified_plies(1) + 2,
        "bursts coalesced, clock readings alone not pushed: {} pushes of board 1 for {} plies",
        counts.len(),
        hub.verified_plies(1)
    );
    for s in &ok {
        for (tags, moves) in games(&s.body) {
            let b = tag(&tags, "Board").unwrap();
            assert_eq!(tag(&tags, "Round"), Some(format!("1.{b}").as_str()));
            let want = game_id(Some("Push Open"), 1, b.parse().unwrap());
            assert_eq!(tag(&tags, "GameId"), Some(want.as_str()), "a stable GameId");
            assert_eq!(
                moves.matches("[%clk").count(),
                sans(&moves).len(),
                "[%clk] on every move: {moves}"
            );
        }
    }
    assert_eq!(report["enabled"], true, "{report}");
    assert_eq!(report["round_id"], ROUND_ID);
    assert!(
        report["failures"].as_u64().unwrap() >= 1,
        "the 429 is counted: {report}"
    );
    assert!(report["pushes"].as_u64().unwrap() >= 1, "{report}");
    let games = report["games"].as_array().unwrap();
    assert_eq!(
        games.len(),
        120,
        "Lichess's answer for every game: {report}"
    );
    assert!(
        games[0]["moves"].as_u64().unwrap() >= 8 && games[0]["error"].is_null(),
        "board 1 answered with its moves: {}",
        games[0]
    );
}

#[test]
fn an_open_illegal_move_alert_reaches_no_public_output() {
    use live_daemon::{
        game_capture, leave_capture, port, write_config, Daemon, Then, TOKEN as ARBITER,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let contract = Contract::default();
    let url = rt.block_on(contract_server(contract.clone()));
    let dir = tempfile::tempdir().unwrap();
    leave_capture(
        &dir.path().join("data"),
        &port(dir.path(), 1),
        1,
        &game_capture(Then::IllegalMove),
    );
    let token = dir.path().join("lichess-token");
    std::fs::write(&token, TOKEN).unwrap();
    let config = write_config(
        dir.path(),
        1,
        &format!(
            "[lichess]\nround_id = {ROUND_ID:?}\ntoken_file = {token:?}\nurl = {url:?}\n\
             [[pairing]]\nboard = 1\nwhite = {{ name = \"Molinari, Carlos\" }}\nblack = {{ name = \"Bordais, Jean\" }}\n"
        ),
    );
    let d = Daemon::start(&config);
    let client = reqwest::blocking::Client::new();
    let state: Value = client
        .get(format!("{}/arbiter/api/state", d.base))
        .bearer_auth(ARBITER)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let open = state["boards"][0]["open"].as_array().unwrap().clone();
    let alert = open
        .iter()
        .find(|a| a["notice"]["article"] == "7.5.1")
        .unwrap_or_else(|| panic!("an open 7.5.1 alert: {state}"))
        .clone();
    let message = alert["notice"]["message"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !contract
        .seen
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.status == 200)
    {
        assert!(
            Instant::now() < deadline,
            "nothing pushed:\n{}",
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let ebapi = d.ebapi.clone().unwrap();
    let get = |url: String| client.get(url).send().unwrap().text().unwrap();
    let eboards: Value = serde_json::from_str(&get(format!("{ebapi}/api/v1.0/eboards"))).unwrap();
    let tid = eboard_bridge::publish::ids::tournament_id(Some("Operator Open"));
    let mut public = vec![
        eboards.to_string(),
        get(format!("{ebapi}/api/v1.0/tournaments")),
        get(format!("{ebapi}/api/v1.0/tournament/{tid}")),
        get(format!("{ebapi}/api/v1.0/round/{tid}/0")),
        get(format!(
            "{ebapi}/api/v1.0/game/{}",
            game_id(Some("Operator Open"), 1, 1)
        )),
        get(format!("{}/games.pgn", d.base)),
        get(format!("{}/round/1/games.pgn", d.base)),
        get(format!("{}/round/1/game/1.pgn", d.base)),
    ];
    // The WebSocket: eboards, a subscription and a setup.
    public.extend(rt.block_on(async {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let ws_url = ebapi.replace("http://", "ws://") + "/api/v1.0";
        let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
        let serial = eboards[0]["serialnr"].as_str().unwrap().to_owned();
        for m in [
            json!({"id":1,"call":"eboards"}),
            json!({"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":serial}}}),
            json!({"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}}}),
        ] {
            ws.send(Message::Text(m.to_string().into())).await.unwrap();
        }
        let mut got = Vec::new();
        while let Ok(Some(Ok(Message::Text(t)))) =
            tokio::time::timeout(Duration::from_secs(2), ws.next()).await
        {
            got.push(t.to_string());
        }
        assert!(got.len() >= 5, "replies, snapshot, setup and moves: {got:?}");
        got
    }));
    public.extend(contract.seen.lock().unwrap().iter().map(|s| s.body.clone()));
    for text in &public {
        assert!(
            !text.contains(&message),
            "the alert's text went out: {text}"
        );
        assert!(
            !text.contains("7.5.1") && !text.to_lowercase().contains("illegal"),
            "{text}"
        );
    }
    let pushed = &contract.seen.lock().unwrap()[0].body;
    assert!(
        pushed.contains("4... Nb4"),
        "the legal moves are pushed: {pushed}"
    );
    assert!(!pushed.contains("Qh5"), "not the illegal one: {pushed}");
    d.stop();
}
