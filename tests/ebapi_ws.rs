//! The EBAPI WebSocket against the real daemon and a virtual DGT board on a
//! pseudo-terminal, over a whole game with a move taken back and another
//! played in its place. Three real WebSocket clients replay the request
//! sequences of the known EBAPI clients (docs/ebapi.md):
//!
//! * lichess.org's DGT page: `eboards` id 1 with no `param`, `subscribe` id 2
//!   with feed 1, `setup` id 3 with the start FEN; `Origin: https://lichess.org`;
//! * the 2020 capture (chess.com's page): the same calls without `setup`;
//!   `Origin: https://www.chess.com`;
//! * livechess-go: keys in `call, id, param` order, call 42 with feed 7, and
//!   its flip call (sent as method `setup` with a `flip` argument).
//!
//! Checked on every message: ids echoed as JSON numbers, `param: null` for
//! subscribe and setup, the snapshot right after subscribe, `clock` only when
//! it changed, no `san` without `setup`, `san: []` right after `setup`, the
//! SAN list never shorter and one new move per message, a client counting new
//! entries as lichess's page does never out of step, no arbiter text. The test
//! also measures the time from a verified move in the hub to the lichess-style
//! client receiving it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_script_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::{ArbiterNotice, Hub};
use eboard_bridge::events::GameEvent;
use eboard_bridge::publish::{PairingConfig, Player};
use eboard_protocols::hand::{PhysicalAction, TimedAction};
use eboard_protocols::ClockSide;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use shakmaty::{Color, Piece, Role, Square};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
/// Molinari–Bordais 1979, eight plies; ply 8 (…Nb4) is taken back and
/// …d6 played instead, then 5. d4 cxd4 6. Nxd4.
const PLAYED: [&str; 8] = ["e4", "c5", "c4", "Nc6", "Ne2", "Nf6", "Nbc3", "Nb4"];
const FINAL: [&str; 11] = [
    "e4", "c5", "c4", "Nc6", "Ne2", "Nf6", "Nbc3", "d6", "d4", "cxd4", "Nxd4",
];

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn piece(color: Color, role: Role) -> Piece {
    Piece { color, role }
}

/// After the eight plies: Black's knight goes back b4 → c6 (White's clock
/// runs, Black cannot press), Black plays …d6 instead, then the game goes on
/// with presses. White's clock is on the left.
fn then() -> Vec<TimedAction> {
    use PhysicalAction::{Lift, Place, PressClock};
    let bn = piece(Color::Black, Role::Knight);
    let bp = piece(Color::Black, Role::Pawn);
    let wp = piece(Color::White, Role::Pawn);
    let wn = piece(Color::White, Role::Knight);
    [
        (
            2_000,
            Lift {
                square: Square::B4,
                piece: bn,
            },
        ),
        (
            2_400,
            Place {
                square: Square::C6,
                piece: bn,
            },
        ),
        (
            6_000,
            Lift {
                square: Square::D7,
                piece: bp,
            },
        ),
        (
            6_400,
            Place {
                square: Square::D6,
                piece: bp,
            },
        ),
        (
            9_000,
            Lift {
                square: Square::D2,
                piece: wp,
            },
        ),
        (
            9_400,
            Place {
                square: Square::D4,
                piece: wp,
            },
        ),
        (9_900, PressClock(ClockSide::Left)),
        (
            12_000,
            Lift {
                square: Square::C5,
                piece: bp,
            },
        ),
        (
            12_300,
            Lift {
                square: Square::D4,
                piece: wp,
            },
        ),
        (
            12_600,
            Place {
                square: Square::D4,
                piece: bp,
            },
        ),
        (13_100, PressClock(ClockSide::Right)),
        (
            15_000,
            Lift {
                square: Square::D4,
                piece: bp,
            },
        ),
        (
            15_300,
            Lift {
                square: Square::E2,
                piece: wn,
            },
        ),
        (
            15_600,
            Place {
                square: Square::D4,
                piece: wn,
            },
        ),
        (16_100, PressClock(ClockSide::Left)),
    ]
    .into_iter()
    .map(|(t_ms, action)| TimedAction { t_ms, action })
    .collect()
}

async fn connect(addr: std::net::SocketAddr, origin: Option<&str>) -> Ws {
    let mut req = format!("ws://{addr}/api/v1.0")
        .into_client_request()
        .unwrap();
    if let Some(o) = origin {
        req.headers_mut().insert("origin", o.parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

/// What a client received, with when.
type Log = Vec<(Instant, Value)>;

async fn recv(ws: &mut Ws, log: &mut Log) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("the server answers within 10 s")
            .expect("the connection stays open")
            .unwrap();
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            log.push((Instant::now(), v.clone()));
            return v;
        }
    }
}

async fn send(ws: &mut Ws, text: &str) {
    ws.send(Message::Text(text.into())).await.unwrap();
}

/// Reads until told to stop; `Some(text)` on the channel is sent first.
fn collect(
    mut ws: Ws,
    mut log: Log,
    mut cmds: mpsc::Receiver<Option<String>>,
) -> tokio::task::JoinHandle<Log> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                msg = ws.next() => match msg {
                    Some(Ok(Message::Text(t))) => {
                        log.push((Instant::now(), serde_json::from_str(t.as_str()).unwrap()));
                    }
                    Some(Ok(_)) => {}
                    _ => return log,
                },
                cmd = cmds.recv() => match cmd {
                    Some(Some(text)) => ws.send(Message::Text(text.into())).await.unwrap(),
                    _ => return log,
                },
            }
        }
    })
}

fn feed_params(log: &Log, feed: i64) -> Vec<(Instant, Value)> {
    log.iter()
        .filter(|(_, m)| m["response"] == "feed" && m["id"] == feed)
        .map(|(t, m)| (*t, m["param"].clone()))
        .collect()
}

fn san_of(p: &Value) -> Option<Vec<String>> {
    p.get("san")
        .map(|s| serde_json::from_value(s.clone()).unwrap())
}

/// Properties every feed has: known keys only, `serialnr`/`flipped`/`board`
/// always, `clock` only when it differs from the last one sent.
fn check_feed(params: &[(Instant, Value)], serial: &str, with_setup: bool) {
    let (_, first) = &params[0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["board", "clock", "flipped", "serialnr"],
        "the snapshot: {first}"
    );
    let mut last_clock = first["clock"].clone();
    for (_, p) in params {
        let obj = p.as_object().unwrap();
        for k in obj.keys() {
            assert!(
                ["serialnr", "flipped", "board", "clock", "start", "san", "match"]
                    .contains(&k.as_str()),
                "unknown key {k} in {p}"
            );
        }
        assert_eq!(p["serialnr"], serial);
        assert!(p["flipped"].is_boolean() && p["board"].is_string(), "{p}");
        if !with_setup {
            assert!(
                p.get("san").is_none() && p.get("start").is_none() && p.get("match").is_none(),
                "{p}"
            );
        }
        if let Some(c) = obj.get("clock") {
            if !std::ptr::eq(p, first) {
                let key = |c: &Value| (c["white"].clone(), c["black"].clone(), c["run"].clone());
                assert_ne!(key(c), key(&last_clock), "clock sent unchanged: {p}");
            }
            if !c.is_null() {
                assert!(
                    c["white"].is_u64() && c["black"].is_u64() && c["time"].is_u64(),
                    "{c}"
                );
                assert!(c["run"].is_boolean() || c["run"].is_null(), "{c}");
            }
            last_clock = c.clone();
        }
    }
}

/// The SAN lists after `setup`: `[]` first, then never shorter, one new
/// move per message except a correction sent whole; and what a client that
/// counts new entries (lichess's page) processes stays in step with them.
fn check_san_lists(params: &[(Instant, Value)]) -> Vec<Vec<String>> {
    let lists: Vec<Vec<String>> = params.iter().filter_map(|(_, p)| san_of(p)).collect();
    assert_eq!(
        lists.first(),
        Some(&Vec::new()),
        "san: [] right after setup"
    );
    for w in lists.windows(2) {
        assert!(
            w[1].len() >= w[0].len(),
            "the list shrank: {:?} -> {:?}",
            w[0],
            w[1]
        );
        assert_ne!(w[0], w[1], "the same list twice");
        let grew = w[1].len() - w[0].len();
        if w[1].starts_with(&w[0]) {
            assert_eq!(
                grew, 1,
                "one new move per message: {:?} -> {:?}",
                w[0], w[1]
            );
        } else {
            assert_eq!(
                grew, 0,
                "a correction keeps the length: {:?} -> {:?}",
                w[0], w[1]
            );
        }
    }
    // lichess's page: movesToProcess = new length − the last list's length,
    // an empty list ignored; its count must always equal the list's length.
    let mut processed = 0usize;
    let mut last: Option<&Vec<String>> = None;
    for l in &lists {
        if l.is_empty() || last == Some(l) {
            continue;
        }
        let n = l.len() as isize - last.map_or(l.len() as isize - 1, |x| x.len() as isize);
        processed += n.max(0) as usize;
        last = Some(l);
        assert_eq!(
            processed,
            l.len(),
            "a counting client fell out of step at {l:?}"
        );
    }
    lists
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_known_clients_follow_a_whole_game_with_a_retraction() {
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let mut game = load_game(&file, 1).unwrap();
    game.moves.truncate(PLAYED.len());
    let dir = tempfile::tempdir().unwrap();
    let emulator = serve_script_pty(
        &game,
        &then(),
        &EmulateOptions {
            seed: 7,
            speed: 1000.0,
            start_after_host: Some(5_000),
            ..EmulateOptions::default()
        },
    )
    .unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    config.storage.recover = false;
    config.discovery.enabled = false;
    config.tournament.name = Some("EBAPI Open".into());
    config.pairings.push(PairingConfig {
        round: None,
        board: 1,
        white: Player {
            name: "Molinari, Carlos".into(),
            ..Player::default()
        },
        black: Player {
            name: "Bordais, Jean".into(),
            ..Player::default()
        },
    });
    config.boards.push(BoardConfig {
        port: emulator.path().to_owned(),
        protocol: Protocol::DGT,
        bus: false,
        number: Some(1),
        serial: None,
        leds: None,
    });
    config.http.listen = "127.0.0.1:0".parse().unwrap();
    config.ebapi.listen = "127.0.0.1:0".parse().unwrap();
    let hub = Arc::new(Hub::new());
    let mut public = hub.subscribe_public();
    let mut arbiter = hub.subscribe_arbiter();
    let http =
        eboard_bridge::daemon::service::start_http(&config, config.http.listen, Arc::clone(&hub))
            .await
            .unwrap();
    let addr = http.ebapi.expect("the EBAPI listens");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(eboard_bridge::daemon::run(
        config,
        Arc::clone(&hub),
        async {
            let _ = stop_rx.await;
        },
        || {},
    ));

    // The board is listed once it answered: ACTIVE, first, its own serial;
    // the clients below connect once its picture came too (the serial number
    // may come in an earlier read than the dump, and a snapshot taken between
    // the two has no `board`).
    let deadline = Instant::now() + Duration::from_secs(20);
    let board = loop {
        let list: Value = reqwest::get(format!("http://{addr}/api/v1.0/eboards"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list[0]["state"] == "ACTIVE"
            && list[0]["serialnr"] != "board-1"
            && list[0]["board"].is_string()
        {
            break list[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the board is not listed as ACTIVE: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let serial = board["serialnr"].as_str().unwrap().to_owned();
    assert!(
        serial.len() == 5 && serial.bytes().all(|b| b.is_ascii_digit()),
        "the virtual board's own serial number (0x91): {serial}"
    );

    // lichess.org's page.
    let mut lila = connect(addr, Some("https://lichess.org")).await;
    let mut lila_log = Log::new();
    send(&mut lila, r#"{"id":1,"call":"eboards"}"#).await;
    let r = recv(&mut lila, &mut lila_log).await;
    assert_eq!((&r["response"], &r["id"]), (&json!("call"), &json!(1)));
    assert!(r["id"].is_u64(), "ids are numbers: {r}");
    assert_eq!(r["param"][0]["serialnr"], serial);
    let keys: Vec<&String> = r["param"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 8, "exactly eight keys: {r}");
    send(
        &mut lila,
        &json!({"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":serial}}}).to_string(),
    )
    .await;
    let r = recv(&mut lila, &mut lila_log).await;
    assert_eq!(
        r,
        json!({"response":"call","id":2,"param":null,"time":r["time"]})
    );
    let snap = recv(&mut lila, &mut lila_log).await;
    assert_eq!(
        (&snap["response"], &snap["id"]),
        (&json!("feed"), &json!(1))
    );
    send(
        &mut lila,
        &json!({"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":START}}})
            .to_string(),
    )
    .await;
    let r = recv(&mut lila, &mut lila_log).await;
    assert_eq!(
        (&r["response"], &r["id"], &r["param"]),
        (&json!("call"), &json!(3), &Value::Null)
    );
    let (lila_tx, rx) = mpsc::channel(4);
    let lila_task = collect(lila, lila_log, rx);

    // The 2020 capture: no setup.
    let mut cap = connect(addr, Some("https://www.chess.com")).await;
    let mut cap_log = Log::new();
    send(&mut cap, r#"{"id":1,"call":"eboards"}"#).await;
    recv(&mut cap, &mut cap_log).await;
    send(
        &mut cap,
        &format!(r#"{{"id":2,"call":"subscribe","param":{{"feed":"eboardevent","id":1,"param":{{"serialnr":"{serial}"}}}}}}"#),
    )
    .await;
    let (cap_tx, rx) = mpsc::channel(4);
    let cap_task = collect(cap, cap_log, rx);

    // livechess-go: its own key order and ids.
    let mut go = connect(addr, None).await;
    let mut go_log = Log::new();
    send(&mut go, r#"{"call":"eboards","id":41}"#).await;
    let r = recv(&mut go, &mut go_log).await;
    assert_eq!(r["id"], 41);
    send(
        &mut go,
        &format!(r#"{{"call":"subscribe","id":42,"param":{{"feed":"eboardevent","id":7,"param":{{"serialnr":"{serial}"}}}}}}"#),
    )
    .await;
    let r = recv(&mut go, &mut go_log).await;
    assert_eq!((&r["id"], &r["param"]), (&json!(42), &Value::Null));
    send(
        &mut go,
        &format!(r#"{{"call":"call","id":43,"param":{{"id":7,"method":"setup","param":{{"fen":"{START}"}}}}}}"#),
    )
    .await;
    let (go_tx, rx) = mpsc::channel(4);
    let go_task = collect(go, go_log, rx);

    // The game: verified moves as the hub publishes them, with when.
    let mut verified: Vec<(Instant, u32, String)> = Vec::new();
    let mut retracted = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    while verified.iter().filter(|v| v.1 == 11).count() == 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "the game did not reach ply 11: {verified:?}"
        );
        match tokio::time::timeout(left, public.recv()).await {
            Ok(Ok(e)) => match &e.event {
                GameEvent::Move(m) if m.verified => {
                    verified.push((Instant::now(), m.ply, m.san.clone()))
                }
                GameEvent::Retraction { .. } => retracted = true,
                _ => {}
            },
            Ok(Err(e)) => panic!("the test fell behind the hub: {e}"),
            Err(_) => panic!("the game did not reach ply 11: {verified:?}"),
        }
    }
    assert!(retracted, "the knight taken back is a retraction");
    let line: Vec<String> = hub
        .public_board(1)
        .and_then(|b| b.game)
        .map(|g| g.moves.iter().map(|m| m.san.clone()).collect())
        .unwrap();
    assert_eq!(line, FINAL);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    // livechess-go's flip: method "setup" with a flip argument.
    go_tx
        .send(Some(
            r#"{"call":"call","id":44,"param":{"id":7,"method":"setup","param":{"flip":true}}}"#
                .to_string(),
        ))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    for tx in [&lila_tx, &cap_tx, &go_tx] {
        tx.send(None).await.unwrap();
    }
    let (lila_log, cap_log, go_log) = (
        lila_task.await.unwrap(),
        cap_task.await.unwrap(),
        go_task.await.unwrap(),
    );
    let _ = stop_tx.send(());
    daemon.await.unwrap().unwrap();
    let _ = emulator.stop();

    // lichess.org's page.
    let lila_feed = feed_params(&lila_log, 1);
    check_feed(&lila_feed, &serial, true);
    let lists = check_san_lists(&lila_feed);
    let last = lists.last().unwrap();
    assert_eq!(
        last,
        &FINAL.map(String::from).to_vec(),
        "the client ends with the game"
    );
    assert!(
        lists.contains(&PLAYED.map(String::from).to_vec()),
        "the eight plies were sent before the retraction: {lists:?}"
    );
    let corrected: Vec<String> = FINAL[..8].iter().map(|s| s.to_string()).collect();
    assert!(
        lists.contains(&corrected),
        "the correction went out whole: {lists:?}"
    );
    assert!(
        lila_feed
            .iter()
            .filter(|(_, p)| p.get("san").is_some())
            .all(|(_, p)| p["start"] == START && p["match"].is_boolean()),
        "san messages carry start and match"
    );
    // Latency: a verified move in the hub to the message that carries it.
    let mut waits: Vec<Duration> = Vec::new();
    for (at, ply, san) in &verified {
        let Some((got, _)) = lila_feed.iter().find(|(_, p)| {
            san_of(p).is_some_and(|l| l.len() == *ply as usize && l.last() == Some(san))
        }) else {
            continue;
        };
        waits.push(got.saturating_duration_since(*at));
    }
    waits.sort();
    assert!(
        waits.len() >= 9,
        "most verified moves reached the client as they were: {waits:?}"
    );
    let worst = *waits.last().unwrap();
    eprintln!(
        "verified move -> EBAPI client: {} moves, median {:?}, worst {:?}",
        waits.len(),
        waits[waits.len() / 2],
        worst
    );
    assert!(
        worst < Duration::from_millis(500),
        "a move waited {worst:?}"
    );

    // The 2020 capture: pictures and clocks only.
    let cap_feed = feed_params(&cap_log, 1);
    check_feed(&cap_feed, &serial, false);
    assert!(
        cap_feed.len() > 20,
        "one message per picture or clock change: {}",
        cap_feed.len()
    );

    // livechess-go.
    let go_feed = feed_params(&go_log, 7);
    check_feed(&go_feed, &serial, true);
    assert_eq!(
        check_san_lists(&go_feed).last(),
        Some(&FINAL.map(String::from).to_vec())
    );
    let at = go_log
        .iter()
        .position(|(_, m)| m["response"] == "call" && m["id"] == 44)
        .expect("the flip is answered");
    assert_eq!(go_log[at].1["param"], Value::Null);
    let is_feed = |m: &Value| m["response"] == "feed" && m["id"] == 7;
    let before = &go_log[..at]
        .iter()
        .rev()
        .find(|(_, m)| is_feed(m))
        .unwrap()
        .1["param"];
    let after = &go_log[at..].iter().find(|(_, m)| is_feed(m)).unwrap().1["param"];
    assert_eq!(
        (&before["flipped"], &after["flipped"]),
        (&json!(false), &json!(true))
    );
    // A placement turned 180° is the same text backwards.
    let turned: String = before["board"].as_str().unwrap().chars().rev().collect();
    assert_eq!(after["board"], turned);

    // No arbiter text on any connection.
    let mut alerts = Vec::new();
    while let Ok(e) = arbiter.try_recv() {
        if let ArbiterNotice::Alert(a) = e.notice {
            alerts.push(a.message);
        }
    }
    assert!(
        !alerts.is_empty(),
        "the takeback raised an alert for the arbiter"
    );
    for (_, m) in lila_log.iter().chain(&cap_log).chain(&go_log) {
        let text = m.to_string();
        for a in &alerts {
            assert!(!text.contains(a.as_str()), "arbiter text in {text}");
        }
        assert!(
            !text.contains("article") && !text.contains("alert"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn errors_foreign_origins_and_unsubscribe() {
    let hub = Arc::new(Hub::new());
    hub.register(1, "/dev/ttyACM0");
    let desk = Arc::new(eboard_bridge::operator::Desk::new(Default::default()));
    let api = eboard_bridge::ebapi::Ebapi::new(Arc::clone(&hub), Arc::clone(&hub), desk, &[]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(eboard_bridge::ebapi::serve(listener, api));

    let mut ws = connect(addr, Some("http://localhost:5173")).await;
    let mut log = Log::new();
    for (request, id, words) in [
        (
            r#"{"id":5,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"99999"}}}"#,
            json!(5),
            "no e-board",
        ),
        (
            r#"{"id":"6","call":"tournaments"}"#,
            json!(6),
            "unknown call",
        ),
        (
            r#"{"id":7,"call":"call","param":{"id":3,"method":"setup","param":{"fen":"x"}}}"#,
            json!(7),
            "no such feed",
        ),
        (
            r#"{"id":8,"call":"subscribe","param":{"feed":"other","id":1}}"#,
            json!(8),
            "unknown feed",
        ),
        ("not json", Value::Null, "not JSON"),
    ] {
        send(&mut ws, request).await;
        let r = recv(&mut ws, &mut log).await;
        assert_eq!((&r["response"], &r["id"]), (&json!("error"), &id), "{r}");
        assert!(
            r["param"]["message"].as_str().unwrap().contains(words),
            "{r}"
        );
    }
    send(&mut ws, r#"{"id":9,"call":"subscribe","param":{"feed":"eboardevent","id":3,"param":{"serialnr":"board-1"}}}"#).await;
    assert_eq!(recv(&mut ws, &mut log).await["param"], Value::Null);
    let snap = recv(&mut ws, &mut log).await;
    assert_eq!(
        snap["param"]["serialnr"], "board-1",
        "a board never heard from has a stand-in"
    );
    send(&mut ws, r#"{"id":10,"call":"call","param":{"id":3,"method":"setup","param":{"fen":"8/8/8/8/8/8/8/8 w - - 0 1"}}}"#).await;
    let r = recv(&mut ws, &mut log).await;
    assert_eq!(r["response"], "error", "not a legal position: {r}");
    send(
        &mut ws,
        r#"{"id":11,"call":"call","param":{"id":3,"method":"unsubscribe"}}"#,
    )
    .await;
    assert_eq!(
        recv(&mut ws, &mut log).await,
        json!({"response":"call","id":11,"param":null,"time":log.last().unwrap().1["time"]})
    );
    send(
        &mut ws,
        r#"{"id":12,"call":"call","param":{"id":3,"method":"flip","param":{"flip":true}}}"#,
    )
    .await;
    assert_eq!(
        recv(&mut ws, &mut log).await["response"],
        "error",
        "the feed is gone"
    );

    // Pages from other sites are refused; the known ones get CORS headers.
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/api/v1.0/eboards");
    let r = client
        .get(&url)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("[ebapi] origins"));
    let mut req = format!("ws://{addr}/api/v1.0")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    assert!(
        tokio_tungstenite::connect_async(req).await.is_err(),
        "the upgrade is refused"
    );
    for origin in [
        "https://lichess.org",
        "https://www.chess.com",
        "http://127.0.0.1:8080",
    ] {
        let r = client
            .get(&url)
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{origin}");
        assert_eq!(r.headers()["access-control-allow-origin"], origin);
    }
    let r = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "https://lichess.org")
        .header("access-control-request-private-network", "true")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(r.headers()["access-control-allow-private-network"], "true");
}

/// Fan-out: 200 WebSocket clients, each with a `setup`, follow 30 verified
/// moves put into the hub; every client gets each move once, in order. The
/// time from a move entering the hub to the last client having it is printed
/// (`--nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_clients_get_every_move_once() {
    use eboard_bridge::events::{MoveEvent, Stamped, TrackerEvent};
    use shakmaty::fen::Fen;
    use shakmaty::san::SanPlus;
    use shakmaty::EnPassantMode;
    const CLIENTS: usize = 200;
    const PLIES: usize = 30;
    // A game of the Dortmund tournament: long enough, from the standard start.
    let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/pychess-dortmund.pgn");
    let game = load_game(&file, 1).unwrap();
    assert!(game.moves.len() >= PLIES && game.start == shakmaty::Chess::default());
    let hub = Arc::new(Hub::new());
    hub.register(1, "/dev/ttyACM0");
    hub.set_online(1, true, 0, "");
    let desk = Arc::new(eboard_bridge::operator::Desk::new(Default::default()));
    let api = eboard_bridge::ebapi::Ebapi::new(Arc::clone(&hub), Arc::clone(&hub), desk, &[]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(eboard_bridge::ebapi::serve(listener, api));
    let stamped = |ply: u32, event: GameEvent| Stamped {
        board: 1,
        ply,
        t_ms: u64::from(ply) * 1000,
        event: TrackerEvent::Game(event),
    };
    hub.apply(
        &stamped(
            0,
            GameEvent::GameStart {
                fen: START.into(),
                chess960: Some(518),
                rotated: false,
            },
        ),
        true,
    );
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut ws = connect(addr, Some("https://lichess.org")).await;
        let mut log = Log::new();
        send(&mut ws, r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"board-1"}}}"#).await;
        send(&mut ws, &format!(r#"{{"id":3,"call":"call","param":{{"id":1,"method":"setup","param":{{"fen":"{START}"}}}}}}"#)).await;
        for _ in 0..4 {
            recv(&mut ws, &mut log).await;
        }
        assert_eq!(log[3].1["param"]["san"], json!([]), "{:?}", log[3]);
        clients.push(tokio::spawn(async move {
            let mut got: Vec<(Instant, usize)> = Vec::new();
            while got.last().map_or(0, |g| g.1) < PLIES {
                let Ok(Some(Ok(Message::Text(t)))) =
                    tokio::time::timeout(Duration::from_secs(10), ws.next()).await
                else {
                    panic!(
                        "a client stopped hearing after {:?}",
                        log.iter().map(|l| l.1.to_string()).collect::<Vec<_>>()
                    );
                };
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                log.push((Instant::now(), v.clone()));
                if let Some(l) = v["param"]["san"].as_array() {
                    got.push((Instant::now(), l.len()));
                }
            }
            got
        }));
    }
    let mut pos = game.start.clone();
    let mut sent_at = Vec::new();
    for (i, m) in game.moves.iter().take(PLIES).enumerate() {
        let uci = m.to_uci(shakmaty::CastlingMode::Standard).to_string();
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string();
        let ply = i as u32 + 1;
        sent_at.push(Instant::now());
        hub.apply(
            &stamped(
                ply,
                GameEvent::Move(MoveEvent {
                    ply,
                    san,
                    uci,
                    fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                    verified: true,
                    clock_ms: Some(5_400_000 - u64::from(ply) * 1000),
                    emt_ms: None,
                    reconstructed: false,
                    corrected: false,
                }),
            ),
            true,
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut last_client = vec![Duration::ZERO; PLIES];
    for c in clients {
        let got = tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .unwrap()
            .unwrap();
        let lens: Vec<usize> = got.iter().map(|g| g.1).collect();
        assert_eq!(
            lens,
            (1..=PLIES).collect::<Vec<_>>(),
            "each move once, in order"
        );
        for (at, len) in got {
            let wait = at.saturating_duration_since(sent_at[len - 1]);
            last_client[len - 1] = last_client[len - 1].max(wait);
        }
    }
    last_client.sort();
    eprintln!(
        "{CLIENTS} clients, {PLIES} moves: move in the hub -> last client has it: median {:?}, worst {:?}",
        last_client[PLIES / 2],
        last_client[PLIES - 1]
    );
    assert!(
        last_client[PLIES - 1] < Duration::from_secs(2),
        "{last_client:?}"
    );
}
