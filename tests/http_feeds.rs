//! The HTTP side with a real server on 127.0.0.1:0 and a real HTTP client.

use std::sync::Arc;
use std::time::Duration;

use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{
    Alert, GameEvent, GameResult, MoveEvent, ResultReason, Severity, Stamped, TrackerEvent,
};
use eboard_bridge::http::{router, FeedConfig};
use eboard_bridge::publish::{PairingConfig, Player, Tournament, TournamentConfig};
use eboard_bridge::sim::games::load_pgn;
use serde_json::Value;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode};

const TOKEN: &str = "s3cret-arbiter-token";
const EVIL: &str = "<script>alert(1)</script>";
const ALERT_TEXT: &str = "ALERT-ONLY-FOR-ARBITERS: the knight on g1 was moved and put back";

fn tournament(delay_secs: u32) -> Tournament {
    Tournament::new(
        TournamentConfig {
            name: Some("Club Open".into()),
            site: Some("Hometown".into()),
            time_control: Some("5400+30".into()),
            rounds: 7,
            current_round: 3,
            date: Some("2026-11-22".into()),
            delay_secs,
            ..TournamentConfig::default()
        },
        &[PairingConfig {
            round: None,
            board: 1,
            white: Player {
                name: EVIL.into(),
                title: Some("GM".into()),
                rating: Some(2700),
                fide_id: Some(1234567),
                federation: Some("NOR".into()),
            },
            black: Player {
                name: "Doe, Jane".into(),
                title: None,
                rating: Some(2105),
                fide_id: None,
                federation: None,
            },
        }],
    )
    .unwrap()
}

fn game(event: GameEvent) -> TrackerEvent {
    TrackerEvent::Game(event)
}

/// Feeds board `board` a game start (when `ply0` is 0) and the verified moves
/// `ucis` from ply `ply0 + 1` on, the way the tracker would.
struct Feeder {
    pos: Chess,
    ply: u32,
    board: u32,
}

impl Feeder {
    fn start(hub: &Hub, board: u32) -> Feeder {
        let pos = Chess::default();
        hub.apply(
            &Stamped {
                board,
                ply: 0,
                t_ms: 0,
                event: game(GameEvent::GameStart {
                    fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
                    chess960: Some(518),
                    rotated: false,
                }),
            },
            true,
        );
        Feeder { pos, ply: 0, board }
    }

    fn play(&mut self, hub: &Hub, uci: &str) -> u64 {
        let m = uci.parse::<UciMove>().unwrap().to_move(&self.pos).unwrap();
        let san = SanPlus::from_move_and_play_unchecked(&mut self.pos, m).to_string();
        self.ply += 1;
        let fen = shakmaty::fen::Fen::from_position(&self.pos, EnPassantMode::Legal).to_string();
        hub.apply(
            &Stamped {
                board: self.board,
                ply: self.ply,
                t_ms: u64::from(self.ply) * 1000,
                event: game(GameEvent::Move(MoveEvent {
                    ply: self.ply,
                    san,
                    uci: UciMove::from_move(m, CastlingMode::Standard).to_string(),
                    fen,
                    verified: true,
                    clock_ms: Some(5_400_000 - u64::from(self.ply) * 1000),
                    emt_ms: Some(2000),
                    reconstructed: false,
                    corrected: false,
                })),
            },
            true,
        )
        .unwrap()
    }
}

fn alert(hub: &Hub, board: u32) -> u64 {
    hub.apply(
        &Stamped {
            board,
            ply: 2,
            t_ms: 5000,
            event: TrackerEvent::Alert(Alert {
                id: 0,
                penalty: None,
                kind: eboard_bridge::events::AlertKind::DisplacedPieces,
                article: "7.4".into(),
                severity: Severity::Warning,
                squares: vec!["g1".into()],
                message: ALERT_TEXT.into(),
            }),
        },
        true,
    )
    .unwrap()
}

async fn start(hub: Arc<Hub>, t: Tournament, token: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(
        hub,
        FeedConfig {
            arbiter_token: token.into(),
            tournament: Arc::new(t),
            pgn_dir: None,
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn get(url: &str) -> (u16, String, reqwest::header::HeaderMap) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, r.text().await.unwrap(), headers)
}

fn hub_with_game() -> (Arc<Hub>, Feeder) {
    let hub = Arc::new(Hub::new());
    hub.register(1, "/dev/ttyUSB0");
    let mut f = Feeder::start(&hub, 1);
    for m in ["e2e4", "e7e5", "g1f3"] {
        f.play(&hub, m);
    }
    (hub, f)
}

#[tokio::test]
async fn games_pgn_is_broadcast_ready_and_parses_back() {
    let (hub, _) = hub_with_game();
    let base = start(hub, tournament(0), TOKEN).await;
    let (status, body, headers) = get(&format!("{base}/games.pgn")).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/x-chess-pgn"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let games = load_pgn(&body).unwrap();
    assert_eq!(games.len(), 1, "{body}");
    let g = &games[0];
    assert_eq!(g.uci_moves(), ["e2e4", "e7e5", "g1f3"]);
    for (tag, want) in [
        ("Event", "Club Open"),
        ("Site", "Hometown"),
        ("Date", "2026.11.22"),
        ("Round", "3.1"),
        ("White", EVIL),
        ("Black", "Doe, Jane"),
        ("WhiteTitle", "GM"),
        ("WhiteElo", "2700"),
        ("WhiteFideId", "1234567"),
        ("BlackElo", "2105"),
        ("TimeControl", "5400+30"),
        ("Result", "*"),
    ] {
        assert_eq!(g.header(tag), Some(want), "tag {tag} in {body}");
    }
    assert_eq!(body.matches("[%clk ").count(), 3, "{body}");
    assert!(body.contains("[%clk 1:29:57]"), "{body}");

    let (status, one, _) = get(&format!("{base}/round/3/game/1.pgn")).await;
    assert_eq!(status, 200);
    assert_eq!(
        one, body,
        "one game: the per-game file equals the round file"
    );
    for missing in [
        "/round/2/game/1.pgn",
        "/round/3/game/9.pgn",
        "/round/3/game/x.pgn",
    ] {
        assert_eq!(get(&format!("{base}{missing}")).await.0, 404, "{missing}");
    }
}

#[tokio::test]
async fn a_finished_game_carries_its_result() {
    let (hub, _) = hub_with_game();
    hub.apply(
        &Stamped {
            board: 1,
            ply: 3,
            t_ms: 9000,
            event: game(GameEvent::Result {
                result: GameResult::WhiteWins,
                reason: ResultReason::Arbiter,
            }),
        },
        true,
    );
    // The players set the pieces up again: the finished game stays the board's game.
    Feeder::start(&hub, 1);
    let base = start(hub, tournament(0), TOKEN).await;
    let body = get(&format!("{base}/games.pgn")).await.1;
    let games = load_pgn(&body).unwrap();
    assert_eq!(games.len(), 1, "{body}");
    assert_eq!(games[0].header("Result"), Some("1-0"));
    assert_eq!(games[0].moves.len(), 3);
    let g: Value =
        serde_json::from_str(&get(&format!("{base}/round-3/game-1.json")).await.1).unwrap();
    assert_eq!(g["result"], "WHITEWIN");
    assert_eq!(g["live"], false);
    let idx: Value =
        serde_json::from_str(&get(&format!("{base}/round-3/index.json")).await.1).unwrap();
    assert_eq!(idx["pairings"][0]["result"], "1-0");
}

#[tokio::test]
async fn livechess_cloud_json_has_the_documented_fields() {
    let (hub, _) = hub_with_game();
    let base = start(hub, tournament(0), TOKEN).await;
    let t: Value = serde_json::from_str(&get(&format!("{base}/tournament.json")).await.1).unwrap();
    assert_eq!(t["name"], "Club Open");
    assert_eq!(t["location"], "Hometown");
    assert_eq!(t["timecontrol"], "90|30");
    assert_eq!(t["rounds"].as_array().unwrap().len(), 7);
    assert_eq!(t["rounds"][2]["count"], 1);
    assert_eq!(t["rounds"][2]["live"], 1);
    for key in ["id", "country", "website", "rules", "chess960", "eboards"] {
        assert!(t.get(key).is_some(), "tournament.json lacks {key}");
    }

    let idx: Value =
        serde_json::from_str(&get(&format!("{base}/round-3/index.json")).await.1).unwrap();
    assert_eq!(idx["date"], "2026-11-22");
    let p = &idx["pairings"][0];
    assert_eq!(p["black"]["lname"], "Doe");
    assert_eq!(p["black"]["fname"], "Jane");
    assert_eq!(p["white"]["title"], "GM");
    assert_eq!(p["white"]["fideid"], 1234567);
    assert_eq!(p["white"]["federation"], "NOR");
    assert_eq!(p["result"], "*");
    assert_eq!(p["live"], true);

    let g: Value =
        serde_json::from_str(&get(&format!("{base}/round-3/game-1.json?poll")).await.1).unwrap();
    assert_eq!(g["live"], true);
    assert_eq!(g["chess960"], 518);
    assert_eq!(g["result"], Value::Null);
    assert_eq!(
        g["moves"],
        serde_json::json!(["e4 5399+2", "e5 5398+2", "Nf3 5397+2"])
    );
    assert_eq!(
        g["fen"],
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2"
    );
    for key in ["serialNr", "firstMove", "comment", "clock"] {
        assert!(g.get(key).is_some(), "game json lacks {key}");
    }
    assert_eq!(get(&format!("{base}/round-3/game-2.json")).await.0, 404);
    assert_eq!(get(&format!("{base}/round-x/index.json")).await.0, 404);
}

/// Reads SSE text from `resp` until `pred` holds for what was read so far.
async fn read_until(resp: &mut reqwest::Response, buf: &mut String, pred: impl Fn(&str) -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !pred(buf) {
            let chunk = resp.chunk().await.unwrap().expect("stream ended early");
            buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; read so far:\n{buf}"));
}

/// Reconnects to `/events` with `Last-Event-ID: last` until what the server
/// resumes with contains `want` (the history that resumption reads is filled by
/// a task of its own, so an event just published may not be in it yet); returns
/// what that connection read.
async fn resume_sse(client: &reqwest::Client, base: &str, last: u64, want: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut resp = client
            .get(format!("{base}/events"))
            .header("Last-Event-ID", last.to_string())
            .send()
            .await
            .unwrap();
        let mut buf = String::new();
        let read = tokio::time::timeout(Duration::from_millis(250), async {
            while !buf.contains(want) {
                match resp.chunk().await.unwrap() {
                    Some(chunk) => buf.push_str(std::str::from_utf8(&chunk).unwrap()),
                    None => panic!("the stream ended early; read so far:\n{buf}"),
                }
            }
        })
        .await;
        if read.is_ok() {
            return buf;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never resumed with {want}; the last try read:\n{buf}"
        );
    }
}

/// `(id, data)` of the SSE messages in `text`.
fn sse_messages(text: &str) -> Vec<(Option<String>, Option<String>, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut event = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ").or(line.strip_prefix("id:")) {
                    id = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("event: ").or(line.strip_prefix("event:"))
                {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    data = Some(serde_json::from_str(v).unwrap());
                }
            }
            data.map(|d| (id, event, d))
        })
        .collect()
}

#[tokio::test]
async fn sse_delivers_moves_and_resumes_from_last_event_id() {
    let (hub, mut f) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(0), TOKEN).await;
    let client = reqwest::Client::new();
    let mut resp = client.get(format!("{base}/events")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    // The subscription exists once the response headers are back.
    let seq = f.play(&hub, "b8c6");
    let mut buf = String::new();
    read_until(&mut resp, &mut buf, |b| b.contains("\"type\":\"move\"")).await;
    let msgs = sse_messages(&buf);
    let (id, _, data) = msgs.iter().find(|m| m.2["type"] == "move").unwrap();
    assert_eq!(id.as_deref(), Some(seq.to_string().as_str()));
    assert_eq!(data["board"], 1);
    assert_eq!(data["san"], "Nc6");
    assert_eq!(data["ply"], 4);
    assert_eq!(data["seq"], seq);
    drop(resp);

    // Two moves while the client is away; it comes back with the last id it saw.
    let a = f.play(&hub, "f1b5");
    let b = f.play(&hub, "a7a6");
    // The server's history task records the public stream on its own turn:
    // come back until it resumes with both moves.
    let buf = resume_sse(&client, &base, seq, "\"san\":\"a6\"").await;
    let ids: Vec<String> = sse_messages(&buf).into_iter().filter_map(|m| m.0).collect();
    assert_eq!(ids, [a.to_string(), b.to_string()], "{buf}");

    // An id this daemon never issued (numbering restarts with the daemon): reset.
    let mut resp = client
        .get(format!("{base}/events?last_event_id=999999"))
        .send()
        .await
        .unwrap();
    let mut buf = String::new();
    read_until(&mut resp, &mut buf, |b| b.contains("reset")).await;
    let msgs = sse_messages(&buf);
    assert_eq!(msgs[0].1.as_deref(), Some("reset"), "{buf}");
    assert_eq!(msgs[0].2["type"], "reset");
    assert_eq!(msgs[0].2["snapshot"], "/snapshot.json");
    let snap: Value = serde_json::from_str(&get(&format!("{base}/snapshot.json")).await.1).unwrap();
    assert_eq!(snap["seq"], b);
    assert_eq!(snap["boards"][0]["moves"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn every_arbiter_path_needs_the_token() {
    let (hub, _) = hub_with_game();
    let seq = alert(&hub, 1);
    let base = start(Arc::clone(&hub), tournament(0), TOKEN).await;
    let client = reqwest::Client::new();
    let gets = [
        "/arbiter",
        "/arbiter/",
        "/arbiter/api/state",
        "/arbiter/app.js",
        "/arbiter/x/y",
        "/arbiter/api/ack",
    ];
    for path in gets {
        for auth in [None, Some("Bearer wrong"), Some("Bearer "), Some(TOKEN)] {
            let mut req = client.get(format!("{base}{path}"));
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), 401, "GET {path} with {auth:?}");
            assert!(r.headers().contains_key("www-authenticate"));
        }
        let r = client
            .get(format!("{base}{path}?token=nope"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "GET {path}?token=nope");
    }
    let ack = serde_json::json!({"board": 1, "seq": seq});
    let r = client
        .post(format!("{base}/arbiter/api/ack"))
        .json(&ack)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "POST ack without token");
    assert_eq!(
        hub.arbiter_snapshot()[0].open.len(),
        1,
        "nothing acknowledged without the token"
    );

    // With the token: the page, the state, the action.
    let bearer = format!("Bearer {TOKEN}");
    for path in ["/arbiter/", "/arbiter/api/state"] {
        let r = client
            .get(format!("{base}{path}"))
            .header("Authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let r = client
        .get(format!("{base}/arbiter/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!("{base}/arbiter/api/state"))
        .header("Authorization", format!("bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the scheme name is case-insensitive");
    let r = client
        .get(format!("{base}/arbiter/x/y"))
        .header("Authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = client
        .post(format!("{base}/arbiter/api/ack"))
        .header("Authorization", &bearer)
        .json(&ack)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Acknowledged alerts stay open (marked) until resolved.
    assert_eq!(hub.arbiter_snapshot()[0].acknowledged, vec![seq]);
    let r = client
        .post(format!("{base}/arbiter/api/resolve"))
        .header("Authorization", &bearer)
        .json(&ack)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(hub.arbiter_snapshot()[0].open.is_empty());
    let again = client
        .post(format!("{base}/arbiter/api/ack"))
        .header("Authorization", &bearer)
        .json(&ack)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
    assert!(again.text().await.unwrap().contains("already resolved"));
    let unknown = client
        .post(format!("{base}/arbiter/api/ack"))
        .header("Authorization", &bearer)
        .json(&serde_json::json!({"board": 77, "seq": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    assert!(
        hub.public_board(77).is_none(),
        "a bad request must not create a board"
    );
    let big = client
        .post(format!("{base}/arbiter/api/ack"))
        .header("Authorization", &bearer)
        .header("Content-Type", "application/json")
        .body(format!(
            "{{\"board\":1,\"seq\":1,\"pad\":\"{}\"}}",
            "x".repeat(64 * 1024)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413, "oversized operator input is refused");
}

#[tokio::test]
async fn an_empty_token_disables_the_arbiter_side() {
    let (hub, _) = hub_with_game();
    let base = start(hub, tournament(0), "").await;
    let client = reqwest::Client::new();
    for req in [
        client.get(format!("{base}/arbiter/")),
        client.get(format!("{base}/arbiter/?token=")),
        client
            .get(format!("{base}/arbiter/api/state"))
            .header("Authorization", "Bearer "),
    ] {
        assert_eq!(req.send().await.unwrap().status(), 401);
    }
}

#[tokio::test]
async fn public_feeds_never_carry_alerts() {
    let (hub, mut f) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(0), TOKEN).await;
    let client = reqwest::Client::new();
    let mut stream = client.get(format!("{base}/events")).send().await.unwrap();
    alert(&hub, 1);
    hub.set_online(1, false, 6000, "cable unplugged: ALERT-ONLY-FOR-ARBITERS");
    f.play(&hub, "b8c6");
    let mut buf = String::new();
    read_until(&mut stream, &mut buf, |b| b.contains("Nc6")).await;
    assert!(!buf.contains("ALERT-ONLY"), "{buf}");
    assert!(!buf.contains("\"alert\""), "{buf}");
    for path in [
        "/games.pgn",
        "/round/3/game/1.pgn",
        "/tournament.json",
        "/round-3/index.json",
        "/round-3/game-1.json",
        "/snapshot.json",
    ] {
        let (status, body, _) = get(&format!("{base}{path}")).await;
        assert_eq!(status, 200, "{path}");
        assert!(!body.contains("ALERT-ONLY"), "{path}: {body}");
        assert!(
            !body.contains("7.4"),
            "{path} shows the alert's article: {body}"
        );
    }
    // The arbiter side sees it.
    let state = client
        .get(format!("{base}/arbiter/api/state"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        state.contains("ALERT-ONLY-FOR-ARBITERS: the knight"),
        "{state}"
    );
    assert!(state.contains("\"article\":\"7.4\""), "{state}");
}

#[tokio::test]
async fn a_player_named_script_is_escaped_everywhere() {
    let (hub, _) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(0), TOKEN).await;
    for path in [
        "/tournament.json",
        "/round-3/index.json",
        "/round-3/game-1.json",
        "/snapshot.json",
    ] {
        let (_, body, headers) = get(&format!("{base}{path}")).await;
        assert!(!body.contains('<'), "{path} has a raw '<': {body}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert!(headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"));
    }
    let idx: Value =
        serde_json::from_str(&get(&format!("{base}/round-3/index.json")).await.1).unwrap();
    assert_eq!(
        idx["pairings"][0]["white"]["lname"], EVIL,
        "the name survives, escaped"
    );
    // PGN is not HTML: the name is kept as is, served as PGN that browsers must not sniff.
    let (_, pgn, headers) = get(&format!("{base}/games.pgn")).await;
    assert!(pgn.contains(&format!("[White \"{EVIL}\"]")));
    assert_eq!(headers["x-content-type-options"], "nosniff");

    let client = reqwest::Client::new();
    let bearer = format!("Bearer {TOKEN}");
    let page = client
        .get(format!("{base}/arbiter/"))
        .header("Authorization", &bearer)
        .send()
        .await
        .unwrap();
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("default-src 'none'"));
    let page = page.text().await.unwrap();
    assert!(
        !page.contains("alert(1)"),
        "the page is static; data never goes into it"
    );
    assert!(
        !page.contains("innerHTML"),
        "the dashboard builds nodes with textContent only"
    );
    let state = client
        .get(format!("{base}/arbiter/api/state"))
        .header("Authorization", &bearer)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!state.contains('<'), "{state}");
    assert!(state.contains("\\u003cscript\\u003e"), "{state}");
}

#[tokio::test]
async fn the_public_delay_holds_moves_back_but_not_from_arbiters() {
    let (hub, mut f) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(1), TOKEN).await;
    // Games known at start are shown at once (they predate the restart).
    let games = load_pgn(&get(&format!("{base}/games.pgn")).await.1).unwrap();
    assert_eq!(games[0].moves.len(), 3);
    f.play(&hub, "b8c6");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let games = load_pgn(&get(&format!("{base}/games.pgn")).await.1).unwrap();
    assert_eq!(
        games[0].moves.len(),
        3,
        "the move is not public before the delay"
    );
    let state: Value = serde_json::from_str(
        &reqwest::Client::new()
            .get(format!("{base}/arbiter/api/state"))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(state["boards"][0]["plies"], 4, "arbiters are live");
    // The delay is 1 s; poll rather than guess how late a loaded machine is.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let games = load_pgn(&get(&format!("{base}/games.pgn")).await.1).unwrap();
        if games[0].moves.len() == 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the move never became public after the delay"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_websocket_carries_the_same_messages_and_resumes() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let (hub, mut f) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(0), TOKEN).await;
    let ws_url = base.replace("http://", "ws://");
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("{ws_url}/ws"))
        .await
        .unwrap();
    let seq = f.play(&hub, "b8c6");
    let next_json = |msg: Message| -> Value {
        match msg {
            Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
            other => panic!("expected text, got {other:?}"),
        }
    };
    let got = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let v = next_json(got);
    assert_eq!(v["type"], "move");
    assert_eq!(v["board"], 1);
    assert_eq!(v["seq"], seq);
    drop(ws);

    let later = f.play(&hub, "f1c4");
    // As for SSE: reconnect until the server's history holds the move (a
    // resumption from an up-to-date position sends nothing until the next event).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let v = loop {
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("{ws_url}/ws?last_event_id={seq}"))
                .await
                .unwrap();
        if let Ok(got) = tokio::time::timeout(Duration::from_millis(250), ws.next()).await {
            break next_json(got.unwrap().unwrap());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the WebSocket never resumed with the move played while away"
        );
    };
    assert_eq!(v["seq"], later);
    assert_eq!(v["san"], "Bc4");
}

#[tokio::test]
async fn a_stalled_subscriber_gets_a_reset_and_delays_nobody() {
    use eboard_bridge::http::stream::{subscribe, History, Item, ResetReason, Resume};
    use futures_util::StreamExt;

    let (hub, mut f) = hub_with_game();
    let history = History::follow(&hub);
    let stalled = subscribe(&hub, Arc::clone(&history), Resume::Now, |_| true);
    let mut stalled = Box::pin(stalled);
    let mut live = Box::pin(subscribe(&hub, Arc::clone(&history), Resume::Now, |_| true));
    // Far more events than a subscriber's queue holds, nobody reading the first
    // stream; the hub does not block.
    let clock = |ms| Stamped {
        board: 1,
        ply: 3,
        t_ms: ms,
        event: game(GameEvent::Clock {
            white_ms: ms,
            black_ms: ms,
            running: None,
        }),
    };
    for ms in 0..(eboard_bridge::daemon::hub::CHANNEL_CAPACITY as u64 + 10) {
        hub.apply(&clock(ms), true);
    }
    let seq = f.play(&hub, "b8c6");
    match stalled.next().await.unwrap() {
        Item::Reset(ResetReason::Lagged) => {}
        other => panic!("expected a reset, got {other:?}"),
    }
    // After the reset it follows the live events again.
    let mut last = None;
    while let Some(Item::Event(ev)) = stalled.next().await {
        if ev.seq == seq {
            last = Some(ev);
            break;
        }
    }
    assert!(matches!(last.unwrap().event, GameEvent::Move(_)));
    // The other subscriber also lagged (it did not read either), independently.
    assert!(matches!(
        live.next().await.unwrap(),
        Item::Reset(ResetReason::Lagged)
    ));
}

#[tokio::test]
async fn a_token_with_reserved_characters_works_percent_encoded_in_the_address() {
    let (hub, _) = hub_with_game();
    let token = "a+b/c&d=e f";
    let base = start(hub, tournament(0), token).await;
    let encoded = "a%2Bb%2Fc%26d%3De%20f";
    let r = reqwest::get(format!("{base}/arbiter/?token={encoded}"))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = reqwest::get(format!("{base}/arbiter/?token=a+b/c"))
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn the_file_sink_follows_the_public_view() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, mut f) = hub_with_game();
    let app = router(
        Arc::clone(&hub),
        FeedConfig {
            arbiter_token: TOKEN.into(),
            tournament: Arc::new(tournament(0)),
            pgn_dir: Some(dir.path().to_path_buf()),
        },
    );
    f.play(&hub, "b8c6");
    let file = dir.path().join("round-3/game-1.pgn");
    let mut moves = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(text) = std::fs::read_to_string(&file) {
            moves = load_pgn(&text).unwrap()[0].moves.len();
            if moves == 4 {
                break;
            }
        }
    }
    assert_eq!(moves, 4);
    drop(app);
}

/// After the round changes, the previous round's games stay under their round
/// (PGN, LCC JSON, the file sink) and the current round's feeds show the new one.
#[tokio::test]
async fn a_round_change_keeps_the_previous_rounds_games_under_their_round() {
    let (hub, _) = hub_with_game();
    hub.apply(
        &Stamped {
            board: 1,
            ply: 3,
            t_ms: 9000,
            event: game(GameEvent::Result {
                result: GameResult::WhiteWins,
                reason: ResultReason::Arbiter,
            }),
        },
        true,
    );
    let mut t = tournament(0);
    t.pairings.insert(
        (4, 1),
        (
            Player {
                name: "Fourth, Round".into(),
                ..Player::default()
            },
            Player {
                name: "Next, Opponent".into(),
                ..Player::default()
            },
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(
        Arc::clone(&hub),
        FeedConfig {
            arbiter_token: TOKEN.into(),
            tournament: Arc::new(t),
            pgn_dir: Some(dir.path().to_path_buf()),
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    // The players set the pieces up again before the arbiter moves the
    // tournament on: that game is the next round's.
    let mut f = Feeder::start(&hub, 1);
    hub.set_round(4);
    f.play(&hub, "d2d4");

    let now = get(&format!("{base}/games.pgn")).await.1;
    let now = load_pgn(&now).unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].header("Round"), Some("4.1"));
    assert_eq!(now[0].header("White"), Some("Fourth, Round"));
    assert_eq!(now[0].uci_moves(), ["d2d4"]);

    let (status, before, _) = get(&format!("{base}/round/3/game/1.pgn")).await;
    assert_eq!(status, 200, "{before}");
    let before = load_pgn(&before).unwrap();
    assert_eq!(before[0].header("Round"), Some("3.1"));
    assert_eq!(before[0].header("White"), Some(EVIL));
    assert_eq!(before[0].header("Result"), Some("1-0"));
    assert_eq!(before[0].uci_moves(), ["e2e4", "e7e5", "g1f3"]);

    let json = |path: &'static str| {
        let base = base.clone();
        async move {
            let (status, body, _) = get(&format!("{base}{path}")).await;
            assert_eq!(status, 200, "{path}: {body}");
            serde_json::from_str::<Value>(&body).unwrap()
        }
    };
    let tour = json("/tournament.json").await;
    assert_eq!(tour["rounds"][2]["live"], 0);
    assert_eq!(tour["rounds"][3]["live"], 1);
    let r3 = json("/round-3/index.json").await;
    assert_eq!(r3["pairings"][0]["result"], "1-0");
    assert_eq!(r3["pairings"][0]["live"], false);
    assert_eq!(r3["pairings"][0]["black"]["lname"], "Doe");
    let r4 = json("/round-4/index.json").await;
    assert_eq!(r4["pairings"][0]["white"]["lname"], "Fourth");
    assert_eq!(r4["pairings"][0]["live"], true);
    let g3 = json("/round-3/game-1.json").await;
    assert_eq!(g3["result"], "WHITEWIN");
    assert_eq!(g3["moves"].as_array().unwrap().len(), 3);
    assert_eq!(g3["clock"], Value::Null, "the board's clock is round 4's");
    let g4 = json("/round-4/game-1.json").await;
    assert_eq!(g4["moves"], serde_json::json!(["d4 5399+2"]));
    let snap = json("/snapshot.json").await;
    assert_eq!(snap["round"], 4);
    assert_eq!(snap["boards"][0]["moves"], serde_json::json!(["d4"]));

    // The file sink keeps round 3's folder and writes round 4's.
    let mut files = (String::new(), String::new());
    for _ in 0..200 {
        files = (
            std::fs::read_to_string(dir.path().join("round-3/game-1.pgn")).unwrap_or_default(),
            std::fs::read_to_string(dir.path().join("round-4/games.pgn")).unwrap_or_default(),
        );
        if files.0.contains("1-0") && files.1.contains("1. d4") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        files.0.contains("2. Nf3") && files.0.contains("[Round \"3.1\"]"),
        "{}",
        files.0
    );
    assert!(files.1.contains("[Round \"4.1\"]"), "{}", files.1);
}

/// With a broadcast delay the delayed view learns each game's round from the
/// live one: a move of round 4 is published under round 4 once it is due.
#[tokio::test]
async fn the_delayed_view_keeps_each_games_round() {
    let (hub, _) = hub_with_game();
    let base = start(Arc::clone(&hub), tournament(1), TOKEN).await;
    hub.set_round(4);
    let mut f = Feeder::start(&hub, 1);
    f.play(&hub, "c2c4");
    // Before the delay: round 3's game is public, the new one is not yet.
    let r3 = get(&format!("{base}/round/3/game/1.pgn")).await.1;
    assert!(r3.contains("2. Nf3"), "{r3}");
    let mut now = String::new();
    for _ in 0..100 {
        now = get(&format!("{base}/games.pgn")).await.1;
        if now.contains("1. c4") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        now.contains("[Round \"4.1\"]") && now.contains("1. c4"),
        "{now}"
    );
    let r3 = get(&format!("{base}/round/3/game/1.pgn")).await.1;
    // (The move, not any "c4" in the tags: the GameId is hexadecimal.)
    assert!(r3.contains("2. Nf3") && !r3.contains(". c4"), "{r3}");
}

/// Every field dgt.md §4.2 lists is present, with the documented JSON type,
/// in the tournament, round index and game resources.
#[tokio::test]
async fn livechess_cloud_json_has_every_field_of_dgt_md_4_2() {
    let (hub, _) = hub_with_game();
    hub.apply(
        &Stamped {
            board: 1,
            ply: 3,
            t_ms: 7000,
            event: game(GameEvent::Clock {
                white_ms: 5_397_000,
                black_ms: 5_398_000,
                running: None,
            }),
        },
        true,
    );
    let base = start(hub, tournament(0), TOKEN).await;
    let json =
        |path: String| async move { serde_json::from_str::<Value>(&get(&path).await.1).unwrap() };
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |mut k: Vec<&str>| {
        k.sort_unstable();
        k.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let t = json(format!("{base}/tournament.json")).await;
    for key in [
        "id",
        "name",
        "location",
        "country",
        "website",
        "rules",
        "chess960",
        "timecontrol",
        "rounds",
        "eboards",
    ] {
        assert!(t.get(key).is_some(), "tournament.json lacks {key}");
    }
    for r in t["rounds"].as_array().unwrap() {
        assert_eq!(keys(r), sorted(vec!["count", "live"]));
        assert!(r["count"].is_u64() && r["live"].is_u64(), "{r}");
    }
    assert!(t["eboards"].is_array());

    let idx = json(format!("{base}/round-3/index.json")).await;
    assert!(idx["date"].is_string());
    let p = &idx["pairings"][0];
    assert_eq!(keys(p), sorted(vec!["white", "black", "result", "live"]));
    for side in ["white", "black"] {
        assert_eq!(
            keys(&p[side]),
            sorted(vec![
                "fname",
                "mname",
                "lname",
                "title",
                "federation",
                "gender",
                "fideid"
            ]),
            "{side}"
        );
    }
    assert!(p["live"].is_boolean());
    assert!(["1-0", "0-1", "1/2-1/2", "*"].contains(&p["result"].as_str().unwrap()));

    let g = json(format!("{base}/round-3/game-1.json?poll")).await;
    for key in [
        "live",
        "serialNr",
        "firstMove",
        "chess960",
        "result",
        "comment",
        "clock",
        "moves",
    ] {
        assert!(g.get(key).is_some(), "game json lacks {key}");
    }
    assert!(g["live"].is_boolean() && g["chess960"].is_u64() && g["moves"].is_array());
    assert_eq!(keys(&g["clock"]), sorted(vec!["white", "black", "time"]));
    assert_eq!(g["clock"]["white"], 5397);
    assert_eq!(g["clock"]["black"], 5398);
    // "<SAN>[ <clock>][+<used>]"
    for m in g["moves"].as_array().unwrap() {
        let m = m.as_str().unwrap();
        let (san, rest) = m.split_once(' ').unwrap();
        let (left, used) = rest.split_once('+').unwrap();
        assert!(
            !san.is_empty() && left.parse::<u64>().is_ok() && used.parse::<u64>().is_ok(),
            "{m}"
        );
    }
}
