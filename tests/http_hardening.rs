//! The HTTP side's edges, with a real server on 127.0.0.1:0 and a real client:
//! how the streams take a position they cannot read, what the arbiter API
//! accepts and how it answers, inactive boards on the public side, and names
//! that would display differently from what they are.

use std::sync::Arc;
use std::time::Duration;

use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{GameEvent, MoveEvent, Stamped, TrackerEvent};
use eboard_bridge::http::{router_with_desk, FeedConfig};
use eboard_bridge::operator::Desk;
use eboard_bridge::publish::{PairingConfig, Player, Tournament, TournamentConfig};
use serde_json::{json, Value};

const TOKEN: &str = "hardening-test-token-0123";

fn player(name: &str) -> Player {
    Player {
        name: name.into(),
        ..Player::default()
    }
}

fn tournament() -> Tournament {
    Tournament::new(
        TournamentConfig {
            name: Some("Edge Open".into()),
            current_round: 1,
            ..TournamentConfig::default()
        },
        &[1, 2].map(|board| PairingConfig {
            round: None,
            board,
            white: player(&format!("White{board}, Anna")),
            black: player(&format!("Black{board}, Bert")),
        }),
    )
    .unwrap()
}

fn apply(hub: &Hub, board: u32, ply: u32, event: GameEvent) -> u64 {
    hub.apply(
        &Stamped {
            board,
            ply,
            t_ms: u64::from(ply) * 1000,
            event: TrackerEvent::Game(event),
        },
        true,
    )
    .unwrap()
}

/// Board `board` starts a game and plays 1. e4.
fn play_e4(hub: &Hub, board: u32) -> u64 {
    apply(
        hub,
        board,
        0,
        GameEvent::GameStart {
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            chess960: Some(518),
            rotated: false,
        },
    );
    apply(
        hub,
        board,
        1,
        GameEvent::Move(MoveEvent {
            ply: 1,
            san: "e4".into(),
            uci: "e2e4".into(),
            fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
            verified: true,
            clock_ms: None,
            emt_ms: None,
            reconstructed: false,
            corrected: false,
        }),
    )
}

async fn start(hub: Arc<Hub>, desk: Arc<Desk>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router_with_desk(
        hub,
        FeedConfig {
            arbiter_token: TOKEN.into(),
            tournament: Arc::new(tournament()),
            pgn_dir: None,
        },
        desk,
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn server() -> (Arc<Hub>, Arc<Desk>, String) {
    let hub = Arc::new(Hub::new());
    let desk = Arc::new(Desk::new(tournament()));
    let base = start(Arc::clone(&hub), Arc::clone(&desk)).await;
    (hub, desk, base)
}

/// Reads a stream body until `done` holds for the text so far.
async fn read_until(resp: &mut reqwest::Response, done: impl Fn(&str) -> bool) -> String {
    let mut buf = String::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done(&buf) {
            let chunk = resp.chunk().await.unwrap().expect("stream ended early");
            buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; read so far:\n{buf}"));
    buf
}

#[tokio::test]
async fn an_unreadable_last_event_id_resets_from_the_header_and_the_query_alike() {
    let (hub, _desk, base) = server().await;
    play_e4(&hub, 1);
    let client = reqwest::Client::new();
    for (header, query) in [(Some("12abc"), ""), (None, "?last_event_id=12abc")] {
        let mut req = client.get(format!("{base}/events{query}"));
        if let Some(h) = header {
            req = req.header("Last-Event-ID", h);
        }
        let mut resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200, "{header:?} {query}");
        let text = read_until(&mut resp, |b| b.contains("\n\n")).await;
        assert!(
            text.starts_with("event: reset\n")
                && text.contains("\"reason\":\"last_event_id_unreadable\""),
            "{header:?} {query}: {text}"
        );
    }
    // The WebSocket takes the query the same way.
    let ws_url = base.replace("http://", "ws://");
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("{ws_url}/ws?last_event_id=x1"))
        .await
        .unwrap();
    use futures_util::StreamExt;
    let first = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let v: Value = serde_json::from_str(first.to_text().unwrap()).unwrap();
    assert_eq!(v["type"], "reset", "{v}");
    assert_eq!(v["reason"], "last_event_id_unreadable", "{v}");
}

#[tokio::test]
async fn arbiter_api_wants_json_and_answers_without_cors_and_uncached() {
    let (hub, _desk, base) = server().await;
    play_e4(&hub, 1);
    let client = reqwest::Client::new();
    let body = r#"{"board":2,"white":{"name":"A, B"},"black":{"name":"C, D"}}"#;
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut req = client
            .post(format!("{base}/arbiter/api/pairing"))
            .bearer_auth(TOKEN)
            .body(body);
        if let Some(ct) = content_type {
            req = req.header("Content-Type", ct);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 415, "{content_type:?}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["ok"], false);
        assert!(
            v["error"].as_str().unwrap().contains("application/json"),
            "{v}"
        );
    }
    // With the right type (parameters and case are the client's business) it is done.
    let r = client
        .post(format!("{base}/arbiter/api/pairing"))
        .bearer_auth(TOKEN)
        .header("Content-Type", "Application/JSON; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // Every arbiter answer: no CORS, never stored; errors and 401s too.
    let checks: Vec<reqwest::Response> = vec![
        client
            .get(format!("{base}/arbiter/api/state"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
        client
            .get(format!("{base}/arbiter/api/board/1"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
        client
            .post(format!("{base}/arbiter/api/ack"))
            .bearer_auth(TOKEN)
            .json(&json!({"board": 1, "seq": 99}))
            .send()
            .await
            .unwrap(),
        client
            .get(format!("{base}/arbiter/api/state"))
            .send()
            .await
            .unwrap(),
        client
            .get(format!("{base}/metrics"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
    ];
    for r in checks {
        let url = r.url().to_string();
        assert!(
            r.headers().get("access-control-allow-origin").is_none(),
            "{url}: {:?}",
            r.headers()
        );
        assert_eq!(
            r.headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{url}"
        );
    }
    // The public side keeps its CORS header for broadcast pages.
    let r = client
        .get(format!("{base}/games.pgn"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn every_arbiter_api_answer_is_json_even_for_bad_paths_and_methods() {
    let (hub, _desk, base) = server().await;
    play_e4(&hub, 1);
    let client = reqwest::Client::new();
    let cases = [
        (
            reqwest::Method::GET,
            "/arbiter/api/board/abc",
            400,
            "not a board number",
        ),
        (
            reqwest::Method::GET,
            "/arbiter/api/board/-1",
            400,
            "not a board number",
        ),
        (
            reqwest::Method::GET,
            "/arbiter/api/board/77",
            400,
            "no board 77",
        ),
        (reqwest::Method::GET, "/arbiter/api/nothing", 404, "no such"),
        (reqwest::Method::GET, "/arbiter/api/result", 405, "POST"),
        (reqwest::Method::POST, "/arbiter/api/state", 405, "GET"),
    ];
    for (method, path, status, says) in cases {
        let r = client
            .request(method.clone(), format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{method} {path}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"),
            "{method} {path}"
        );
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["ok"], false, "{method} {path}: {v}");
        assert!(
            v["error"].as_str().unwrap().contains(says),
            "{method} {path}: {v}"
        );
    }
}

#[tokio::test]
async fn an_inactive_board_is_neither_streamed_nor_served() {
    let (hub, desk, base) = server().await;
    play_e4(&hub, 1);
    play_e4(&hub, 2);
    let client = reqwest::Client::new();
    let get = |path: &str| {
        let url = format!("{base}{path}");
        let client = client.clone();
        async move {
            let r = client.get(url).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(get("/round/1/game/2.pgn").await.0, 200);
    desk.change(|o| {
        o.inactive.insert(2);
    })
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    // Out of the round's files and the per-game ones alike.
    let (_, all) = get("/games.pgn").await;
    assert!(
        all.contains("White1, Anna") && !all.contains("White2"),
        "{all}"
    );
    assert_eq!(get("/round/1/game/2.pgn").await.0, 404);
    assert_eq!(get("/round-1/game-2.json").await.0, 404);
    let (_, snap) = get("/snapshot.json").await;
    assert!(!snap.contains("White2"), "{snap}");

    // Streams: a replay from the start holds board 1's events only, and so
    // do live events.
    let mut resp = client
        .get(format!("{base}/events"))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .unwrap();
    let seq1 = apply(
        &hub,
        1,
        1,
        GameEvent::Clock {
            white_ms: 1000,
            black_ms: 2000,
            running: None,
        },
    );
    let seq2 = apply(
        &hub,
        2,
        1,
        GameEvent::Clock {
            white_ms: 3000,
            black_ms: 4000,
            running: None,
        },
    );
    let seq1b = apply(
        &hub,
        1,
        1,
        GameEvent::Clock {
            white_ms: 5000,
            black_ms: 6000,
            running: None,
        },
    );
    assert!(seq1 < seq2 && seq2 < seq1b);
    let text = read_until(&mut resp, |b| b.contains(&format!("id: {seq1b}\n"))).await;
    assert!(!text.contains("\"board\":2"), "{text}");
    assert!(text.contains("\"board\":1"), "{text}");

    let ws_url = base.replace("http://", "ws://");
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("{ws_url}/ws?last_event_id=0"))
        .await
        .unwrap();
    use futures_util::StreamExt;
    let mut boards = Vec::new();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(m.to_text().unwrap()).unwrap();
        boards.push(v["board"].as_u64().unwrap());
        if v["seq"] == seq1b {
            break;
        }
    }
    assert!(boards.iter().all(|&b| b == 1), "{boards:?}");

    // Active again: served and streamed again.
    desk.change(|o| {
        o.inactive.remove(&2);
    })
    .unwrap();
    assert_eq!(get("/round/1/game/2.pgn").await.0, 200);
}

#[tokio::test]
async fn names_that_display_as_something_else_are_refused() {
    let (hub, _desk, base) = server().await;
    play_e4(&hub, 1);
    let client = reqwest::Client::new();
    for (name, says) in [
        ("Doe\u{202E}enaJ", "U+202E"),
        ("\u{200B}", "U+200B"),
        ("Doe,\u{2028}Jane", "U+2028"),
    ] {
        let r = client
            .post(format!("{base}/arbiter/api/pairing"))
            .bearer_auth(TOKEN)
            .json(&json!({"board": 2, "white": {"name": name}, "black": {"name": "Roe, Rick"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{name:?}");
        let v: Value = r.json().await.unwrap();
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("white") && e.contains(says), "{name:?}: {e}");
        // The arbiter's own name is checked the same way.
        let r = client
            .post(format!("{base}/arbiter/api/swap"))
            .bearer_auth(TOKEN)
            .json(&json!({"board": 1, "by": name}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "by {name:?}");
    }
    let pgn = client
        .get(format!("{base}/games.pgn"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!pgn.contains("Doe") && !pgn.contains('\u{202E}'), "{pgn}");
    // A real name in another script is fine.
    let r = client
        .post(format!("{base}/arbiter/api/pairing"))
        .bearer_auth(TOKEN)
        .json(
            &json!({"board": 2, "white": {"name": "丁立人"}, "black": {"name": "Müller, Jürgen"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
