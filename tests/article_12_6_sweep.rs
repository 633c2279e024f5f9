//! Article 12.6: the arbiter's business is not the public's. A game played on a
//! virtual board into the daemon (in this process, so that an alert of every
//! kind the docs list can be raised on its hub, as the tracker would), with
//! arbiters acknowledging and resolving them with notes, entering pairings, a
//! result with a reason and their names, and the board unplugged; then every
//! public output is swept for anything only arbiters may read: the HTTP feeds,
//! both streams replayed from their start, and the files the publishers write.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Config, Protocol};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{Alert, AlertResolved, Severity, Stamped, TrackerEvent};
use eboard_bridge::publish::{PairingConfig, Player};
use serde_json::{json, Value};

const TOKEN: &str = "sweep-arbiter-token-12345";
/// In every arbiter-only text this test makes.
const MARK: &str = "ARBITER-ONLY";
const ARBITER: &str = "IA Sweepstone";

/// Every alert kind the documentation lists (docs/alerts.md "Kinds",
/// docs/alerts-clock.md "Alerts"), so a kind added there is swept too.
fn documented_kinds() -> Vec<String> {
    let mut kinds = Vec::new();
    for (file, section) in [
        ("docs/alerts.md", "## Kinds"),
        ("docs/alerts-clock.md", "## Alerts"),
    ] {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        let start = text
            .find(section)
            .unwrap_or_else(|| panic!("{file}: no {section}"));
        let body = &text[start + section.len()..];
        let body = &body[..body.find("\n## ").unwrap_or(body.len())];
        for line in body.lines().filter(|l| l.starts_with("| `")) {
            let kind = line[3..].split('`').next().unwrap().to_string();
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    assert!(kinds.len() >= 20, "{kinds:?}");
    kinds
}

fn config(dir: &Path, link: &Path) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = dir.join("data");
    c.discovery.enabled = false;
    c.device.probe_ms = 1_000;
    c.device.silence_timeout_ms = 3_000;
    c.http.arbiter_token = Some(TOKEN.into());
    c.ebapi.listen = "127.0.0.1:0".parse().unwrap();
    c.tournament.name = Some("Sweep Open".into());
    c.boards = vec![BoardConfig {
        port: link.to_owned(),
        protocol: Protocol::DGT,
        bus: false,
        number: Some(1),
        serial: None,
        leds: None,
    }];
    c.pairings = vec![PairingConfig {
        round: None,
        board: 1,
        white: Player {
            name: "Molinari, Luigi".into(),
            ..Player::default()
        },
        black: Player {
            name: "Bordais, Jean".into(),
            ..Player::default()
        },
    }];
    c.validate().unwrap();
    c
}

async fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Api {
    client: reqwest::Client,
    base: String,
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert!(status.is_success(), "{path} {body}: {status} {v}");
        v
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn arbiter(&self, path: &str) -> Value {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// Everything `/events` replays after `Last-Event-ID: 0`, read for two seconds.
async fn sse_replay(base: &str) -> String {
    let mut r = reqwest::Client::new()
        .get(format!("{base}/events"))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout(Duration::from_secs(2), r.chunk()).await {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

/// Everything `/ws?last_event_id=0` replays, read for two seconds.
async fn ws_replay(base: &str) -> String {
    use futures_util::StreamExt;
    let url = format!("{}/ws?last_event_id=0", base.replace("http://", "ws://"));
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let mut text = String::new();
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_secs(2), ws.next()).await {
        text.push_str(m.to_text().unwrap_or_default());
        text.push('\n');
    }
    text
}

/// Every file under `dir`, with its text.
fn files(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_public_output_carries_anything_only_arbiters_may_read() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dgt-board");
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let game = load_game(&file, 1).unwrap();
    let board = serve_pty(
        &game,
        &EmulateOptions {
            seed: 3,
            speed: 300.0,
            hand_speed: 3.0,
            start_after_host: Some(1_500),
            link: Some(link.clone()),
            ..EmulateOptions::default()
        },
    )
    .unwrap();
    let config = config(dir.path(), &link);
    let hub = Arc::new(Hub::new());
    let (commands_tx, commands_rx) = tokio::sync::mpsc::channel(16);
    let http = eboard_bridge::daemon::service::start_http_with_commands(
        &config,
        "127.0.0.1:0".parse().unwrap(),
        Arc::clone(&hub),
        Some(commands_tx),
    )
    .await
    .unwrap();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(eboard_bridge::daemon::run_with_commands(
        config.clone(),
        Arc::clone(&hub),
        Some(commands_rx),
        async {
            let _ = stop_rx.await;
        },
        || {},
    ));
    let api = Api {
        client: reqwest::Client::new(),
        base: format!("http://{}", http.addr),
    };
    wait_for("six verified moves", Duration::from_secs(40), || {
        hub.verified_plies(1) >= 6
    })
    .await;

    // An alert of every documented kind, as the tracker raises them; half
    // resolved by the tracker, the rest acknowledged or resolved by an
    // arbiter with a note.
    let kinds = documented_kinds();
    let mut secrets: Vec<String> = kinds.clone();
    for (i, kind) in kinds.iter().enumerate() {
        let id = i as u32 + 1;
        let message = format!("{MARK} message of {kind}: the knight on g1 was touched");
        let penalty = format!("{MARK} penalty of {kind}: two minutes to the opponent");
        secrets.extend([message.clone(), penalty.clone()]);
        let seq = hub
            .apply(
                &Stamped {
                    board: 1,
                    ply: 6,
                    t_ms: 60_000 + u64::from(id),
                    event: TrackerEvent::Alert(Alert {
                        id,
                        kind: eboard_bridge::events::AlertKind::from_name(kind),
                        article: "7.5.1".into(),
                        severity: Severity::Error,
                        squares: vec!["g1".into()],
                        message,
                        penalty: Some(penalty),
                    }),
                },
                true,
            )
            .unwrap();
        match i % 3 {
            0 => {
                let reason = format!("{MARK} the tracker saw {kind} corrected");
                secrets.push(reason.clone());
                hub.apply(
                    &Stamped {
                        board: 1,
                        ply: 6,
                        t_ms: 61_000 + u64::from(id),
                        event: TrackerEvent::Resolved(AlertResolved {
                            id,
                            kind: eboard_bridge::events::AlertKind::from_name(kind),
                            reason,
                        }),
                    },
                    true,
                );
            }
            1 => {
                api.post(
                    "/arbiter/api/ack",
                    json!({"board": 1, "seq": seq, "by": ARBITER}),
                )
                .await;
            }
            _ => {
                let note = format!("{MARK} note on {kind}: warned the player");
                secrets.push(note.clone());
                api.post(
                    "/arbiter/api/resolve",
                    json!({"board": 1, "seq": seq, "by": ARBITER, "reason": note}),
                )
                .await;
            }
        }
    }
    // Pairing changes and a result, with the arbiter's name and notes.
    api.post(
        "/arbiter/api/pairing",
        json!({"board": 2, "white": {"name": "Roe, Rick"}, "black": {"name": "Poe, Pia"}, "by": ARBITER}),
    )
    .await;
    api.post("/arbiter/api/swap", json!({"board": 1, "by": ARBITER}))
        .await;
    api.post("/arbiter/api/swap", json!({"board": 1, "by": ARBITER}))
        .await;
    let result_note = format!("{MARK} White resigned after the second warning");
    secrets.push(result_note.clone());
    let answer = api
        .post(
            "/arbiter/api/result",
            json!({"board": 1, "result": "0-1", "reason": result_note, "by": ARBITER}),
        )
        .await;
    assert_eq!(answer["done"], format!("result 0-1 ({result_note})"));
    secrets.push(ARBITER.into());

    // The board is unplugged: arbiters are told why, with the port.
    board.stop().unwrap();
    wait_for(
        "the board reported offline",
        Duration::from_secs(15),
        || !hub.public_board(1).unwrap().online,
    )
    .await;
    let state = api.arbiter("/arbiter/api/state").await;
    let open = state["boards"][0]["open"].to_string();
    assert!(open.contains("board_offline"), "{open}");
    secrets.push(link.display().to_string());
    // The arbiters see it all (so the sweep below looks for real strings).
    let timeline = api.arbiter("/arbiter/api/board/1").await["timeline"].to_string();
    for s in secrets.iter().filter(|s| s.contains(MARK) || *s == ARBITER) {
        assert!(timeline.contains(s.as_str()), "the timeline lacks {s:?}");
    }
    // Let the PGN sink and the journal's game files catch up.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The sweep.
    let mut outputs: Vec<(String, String)> = Vec::new();
    for path in [
        "/games.pgn",
        "/round/1/game/1.pgn",
        "/round/1/game/2.pgn",
        "/tournament.json",
        "/round-1/index.json",
        "/round-1/game-1.json",
        "/round-1/game-2.json",
        "/snapshot.json",
    ] {
        let (status, body) = api.get(path).await;
        assert_eq!(status, 200, "{path}");
        outputs.push((path.into(), body));
    }
    let (_, round) = api.get("/round/1/games.pgn").await;
    outputs.push(("/round/1/games.pgn".into(), round));
    // The LiveChess-compatible API: REST, and a WebSocket client's session.
    let ebapi = format!("http://{}/api/v1.0", http.ebapi.expect("the EBAPI listens"));
    let tid = eboard_bridge::publish::ids::tournament_id(Some("Sweep Open"));
    let gid = eboard_bridge::publish::ids::game_id(Some("Sweep Open"), 1, 1);
    for path in [
        "/eboards".to_string(),
        "/tournaments".into(),
        format!("/tournament/{tid}"),
        format!("/round/{tid}/0"),
        format!("/game/{gid}"),
    ] {
        let r = reqwest::get(format!("{ebapi}{path}")).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        outputs.push((format!("EBAPI {path}"), r.text().await.unwrap()));
    }
    {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let (mut ws, _) = tokio_tungstenite::connect_async(ebapi.replace("http://", "ws://"))
            .await
            .unwrap();
        ws.send(Message::Text(
            json!({"id":1,"call":"eboards"}).to_string().into(),
        ))
        .await
        .unwrap();
        let Some(Ok(Message::Text(list))) = ws.next().await else {
            panic!("no answer to eboards")
        };
        let mut got = format!("{}\n", list.as_str());
        let list: Value = serde_json::from_str(list.as_str()).unwrap();
        let serial = list["param"][0]["serialnr"].clone();
        for m in [
            json!({"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":serial}}}),
            json!({"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}}}),
        ] {
            ws.send(Message::Text(m.to_string().into())).await.unwrap();
        }
        while let Ok(Some(Ok(Message::Text(t)))) =
            tokio::time::timeout(Duration::from_secs(1), ws.next()).await
        {
            got.push_str(t.as_str());
            got.push('\n');
        }
        assert!(got.contains("\"san\""), "{got}");
        outputs.push(("EBAPI WebSocket".into(), got));
    }
    let sse = sse_replay(&api.base).await;
    assert!(sse.contains("\"type\":\"result\""), "{sse}");
    assert!(
        sse.contains("\"reason\":\"entered by the arbiter\""),
        "{sse}"
    );
    outputs.push(("/events".into(), sse));
    let ws = ws_replay(&api.base).await;
    assert!(ws.contains("\"type\":\"result\""), "{ws}");
    outputs.push(("/ws".into(), ws));
    let mut written = Vec::new();
    files(&config.storage.data_dir.join("broadcast"), &mut written);
    files(&config.storage.data_dir.join("games"), &mut written);
    assert!(
        written
            .iter()
            .any(|(p, _)| p.ends_with("round-1/game-1.pgn")),
        "{written:?}"
    );
    outputs.extend(
        written
            .into_iter()
            .map(|(p, text)| (p.display().to_string(), text)),
    );
    let mut leaks = Vec::new();
    for (name, text) in &outputs {
        assert!(text.len() > 20, "{name} is a real output: {text:?}");
        for s in &secrets {
            if text.contains(s.as_str()) {
                leaks.push(format!("{name} carries {s:?}"));
            }
        }
        for word in [
            "alert",
            "penalty",
            "acknowledged",
            "resolved",
            "board_offline",
            "operator",
        ] {
            if text.contains(word) {
                leaks.push(format!("{name} carries the word {word:?}"));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));

    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();
}
