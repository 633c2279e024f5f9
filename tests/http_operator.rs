//! The operator API against the real daemon: every endpoint wants the token,
//! bad input gets a 400 that says what is wrong, each action shows in the
//! arbiters' state and the public feeds, and a restart keeps them all (board
//! commands from the journal's captures, pairings from their file).

mod child_guard;
mod live_daemon;

use live_daemon::{game_capture, leave_capture, port, write_config, Daemon, Then, PLIES, TOKEN};
use reqwest::blocking::Client;
use serde_json::{json, Value};

const EVIL: &str = "<script>alert(1)</script>";

const ENDPOINTS: [&str; 8] = [
    "/arbiter/api/ack",
    "/arbiter/api/resolve",
    "/arbiter/api/result",
    "/arbiter/api/retraction",
    "/arbiter/api/pairing",
    "/arbiter/api/swap",
    "/arbiter/api/start-fen",
    "/arbiter/api/active",
];

struct Api {
    client: Client,
    base: String,
}

impl Api {
    fn new(d: &Daemon) -> Api {
        Api {
            client: Client::new(),
            base: d.base.clone(),
        }
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    fn state(&self) -> Value {
        self.client
            .get(format!("{}/arbiter/api/state", self.base))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
            .json()
            .unwrap()
    }

    fn board(&self, n: u64) -> Value {
        self.state()["boards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["board"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("board {n} is not in the state"))
    }

    /// Board `n`'s record and timeline (`/arbiter/api/board/{n}`).
    fn record(&self, n: u32) -> Value {
        self.client
            .get(format!("{}/arbiter/api/board/{n}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
            .json()
            .unwrap()
    }

    fn public(&self, path: &str) -> String {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        r.text().unwrap()
    }
}

fn pairings() -> String {
    format!(
        "[[pairing]]\nboard = 1\nwhite = {{ name = \"Molinari, Luigi\" }}\nblack = {{ name = \"Bordais, Jean\" }}\n\
         [[pairing]]\nboard = 3\nwhite = {{ name = {EVIL:?} }}\nblack = {{ name = \"Doe, Jane\" }}\n"
    )
}

/// Three boards; board 1 has played eight plies (from the journal).
fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 3, &pairings());
    leave_capture(
        &dir.path().join("data"),
        &port(dir.path(), 1),
        1,
        &game_capture(Then::Nothing),
    );
    (dir, config)
}

#[test]
fn every_operator_endpoint_wants_the_token() {
    let (_dir, config) = setup();
    let d = Daemon::start(&config);
    let client = Client::new();
    let body = json!({"board": 1, "result": "1-0", "seq": 1, "decision": "accept",
                      "fen": "8/8/8/8/8/8/8/K6k w - - 0 1", "active": false});
    for path in ENDPOINTS.iter().chain(&["/arbiter/api/board/1"]) {
        for auth in [None, Some("Bearer wrong"), Some("Bearer ")] {
            let mut req = if path.starts_with("/arbiter/api/board") {
                client.get(format!("{}{path}", d.base))
            } else {
                client.post(format!("{}{path}", d.base)).json(&body)
            };
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            let r = req.send().unwrap();
            assert_eq!(r.status(), 401, "{path} with {auth:?}");
        }
    }
    // Nothing was done: the game is still open.
    let api = Api::new(&d);
    assert_eq!(api.board(1)["result"], "*");
    assert_eq!(api.board(1)["plies"], PLIES);
}

#[test]
fn bad_input_gets_a_400_that_says_what_is_wrong() {
    let (_dir, config) = setup();
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    let cases = [
        (
            "/arbiter/api/start-fen",
            json!({"board": 2, "fen": "8/8/8/8/8/8/8/KK5k w - - 0 1"}),
            "not usable",
        ),
        (
            "/arbiter/api/start-fen",
            json!({"board": 2, "fen": "hello"}),
            "FEN",
        ),
        (
            "/arbiter/api/result",
            json!({"board": 1, "result": "2-0"}),
            "\"1-0\"",
        ),
        (
            "/arbiter/api/result",
            json!({"board": 99, "result": "1-0"}),
            "there is no board 99",
        ),
        (
            "/arbiter/api/active",
            json!({"board": 99, "active": false}),
            "no board 99",
        ),
        (
            "/arbiter/api/ack",
            json!({"board": 99, "seq": 1}),
            "no board 99",
        ),
        (
            "/arbiter/api/retraction",
            json!({"board": 1, "decision": "maybe"}),
            "\"reject\"",
        ),
        (
            "/arbiter/api/result",
            json!({"board": 1, "result": "1-0", "colour": "x"}),
            "unknown field",
        ),
        (
            "/arbiter/api/result",
            json!({"board": "one", "result": "1-0"}),
            "not a valid action",
        ),
        (
            "/arbiter/api/pairing",
            json!({"board": 2, "white": {"name": ""}, "black": {"name": "B"}}),
            "needs a name",
        ),
        (
            "/arbiter/api/pairing",
            json!({"board": 2, "white": {"name": "A", "title": "Boss"}, "black": {"name": "B"}}),
            "not a FIDE title",
        ),
        (
            "/arbiter/api/swap",
            json!({"board": 2}),
            "no pairing in round 1",
        ),
        (
            "/arbiter/api/result",
            json!({"board": 1, "result": "1-0", "reason": "line\nbreak"}),
            "control characters",
        ),
    ];
    for (path, body, says) in cases {
        let (status, answer) = api.post(path, body.clone());
        assert_eq!(status, 400, "{path} {body}: {answer}");
        let message = answer["error"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{path} {body}: {message}");
    }
    // A ruling with nothing to rule on is a conflict, not a bad request.
    let (status, answer) = api.post(
        "/arbiter/api/retraction",
        json!({"board": 1, "decision": "reject"}),
    );
    assert_eq!(status, 409, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("no retraction"));
    // Oversized bodies are refused before they are parsed.
    let r = Client::new()
        .post(format!("{}/arbiter/api/result", d.base))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .body(format!(
            "{{\"board\":1,\"result\":\"1-0\",\"reason\":\"{}\"}}",
            "x".repeat(64 * 1024)
        ))
        .send()
        .unwrap();
    assert_eq!(r.status(), 413);
    let answer: Value = r.json().unwrap();
    assert!(
        answer["error"].as_str().unwrap().contains("bytes"),
        "{answer}"
    );
    // None of it changed anything, and no board 99 was created.
    assert_eq!(api.board(1)["result"], "*");
    assert!(api.state()["boards"].as_array().unwrap().len() == 3);
}

#[test]
fn actions_show_in_the_state_and_the_feeds_and_survive_a_restart() {
    let (dir, config) = setup();
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    assert_eq!(api.board(1)["plies"], PLIES);

    // Result.
    let (status, answer) = api.post(
        "/arbiter/api/result",
        json!({"board": 1, "result": "0-1", "reason": "White resigned", "by": "IA Example"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(api.board(1)["result"], "0-1");
    let pgn = api.public("/games.pgn");
    assert!(pgn.contains("[Result \"0-1\"]"), "{pgn}");

    // Colours: the players of board 1 sat the wrong way round (7.3).
    let (status, answer) = api.post("/arbiter/api/swap", json!({"board": 1}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["swapped"], true);
    let b1 = api.board(1);
    assert_eq!(b1["white"], "Bordais, Jean");
    assert_eq!(b1["black"], "Molinari, Luigi");
    let pgn = api.public("/round/1/game/1.pgn");
    assert!(pgn.contains("[White \"Bordais, Jean\"]"), "{pgn}");
    assert!(pgn.contains("[Black \"Molinari, Luigi\"]"), "{pgn}");
    // The file the Lichess broadcaster watches follows at once, without a move.
    let file = dir.path().join("data/broadcast/round-1/game-1.pgn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.contains("[White \"Bordais, Jean\"]") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}: {text}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // A pairing for board 2, then board 2 is marked inactive: out of the feeds.
    let (status, answer) = api.post(
        "/arbiter/api/pairing",
        json!({"board": 2, "white": {"name": "Carlsen, Magnus", "title": "gm", "rating": 2830, "fide_id": 1503014},
               "black": {"name": "Nakamura, Hikaru", "title": "GM", "rating": 2790}}),
    );
    assert_eq!(status, 200, "{answer}");
    let pgn = api.public("/games.pgn");
    assert!(pgn.contains("[White \"Carlsen, Magnus\"]"), "{pgn}");
    assert!(pgn.contains("[WhiteTitle \"GM\"]"), "{pgn}");
    assert!(pgn.contains("[WhiteFideId \"1503014\"]"), "{pgn}");
    let (status, answer) = api.post("/arbiter/api/active", json!({"board": 2, "active": false}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(api.board(2)["active"], false);
    let pgn = api.public("/games.pgn");
    assert!(
        !pgn.contains("Carlsen"),
        "an inactive board is not listed: {pgn}"
    );
    let index = api.public("/round-1/index.json");
    assert!(!index.contains("Carlsen"), "{index}");

    // A start position for board 3.
    let (status, answer) = api.post(
        "/arbiter/api/start-fen",
        json!({"board": 3, "fen": "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"}),
    );
    assert_eq!(status, 200, "{answer}");

    // The timeline tells who did what.
    let record = Api::new(&d).record(1);
    let timeline = record["timeline"].to_string();
    assert!(
        timeline.contains("set_result") && timeline.contains("White resigned"),
        "{timeline}"
    );
    assert!(
        timeline.contains("swap_colours") && timeline.contains("7.3"),
        "{timeline}"
    );
    assert!(record["games"][0]["pgn"].as_str().unwrap().contains("0-1"));

    d.stop();
    assert!(dir.path().join("data/operator/pairings.json").exists());

    // A new run rebuilds everything: the result from the journaled command,
    // names and the inactive board from the pairings file.
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    let b1 = api.board(1);
    assert_eq!(b1["result"], "0-1", "{b1}");
    assert_eq!(b1["plies"], PLIES);
    assert_eq!(b1["white"], "Bordais, Jean");
    assert_eq!(api.board(2)["active"], false);
    let pgn = api.public("/games.pgn");
    assert!(pgn.contains("[Result \"0-1\"]"), "{pgn}");
    assert!(pgn.contains("[White \"Bordais, Jean\"]"), "{pgn}");
    assert!(!pgn.contains("Carlsen"), "{pgn}");
    let record = Api::new(&d).record(1);
    let timeline = record["timeline"].to_string();
    assert!(
        timeline.contains("White resigned") && timeline.contains("by IA Example"),
        "the journaled command is back on the timeline, with who gave it: {timeline}"
    );
    // Marking it active again brings board 2 back.
    let (status, _) = api.post("/arbiter/api/active", json!({"board": 2, "active": true}));
    assert_eq!(status, 200);
    assert!(api.public("/games.pgn").contains("Carlsen"));
    d.stop();
}

#[test]
fn a_rejected_retraction_is_journaled_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 1, &pairings());
    leave_capture(
        &dir.path().join("data"),
        &port(dir.path(), 1),
        1,
        &game_capture(Then::KnightBack),
    );
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    let b1 = api.board(1);
    assert_eq!(b1["plies"], PLIES - 1, "the knight went back: {b1}");
    let kinds = |b: &Value| -> Vec<String> {
        b["open"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n["notice"]["kind"].as_str().map(str::to_string))
            .collect()
    };
    assert!(kinds(&b1).contains(&"takeback".to_string()), "{b1}");

    let (status, answer) = api.post(
        "/arbiter/api/retraction",
        json!({"board": 1, "decision": "reject", "by": "IA Example"}),
    );
    assert_eq!(status, 200, "{answer}");
    let check = |api: &Api| {
        let b1 = api.board(1);
        assert_eq!(b1["plies"], PLIES, "Nb4 stands again: {b1}");
        assert_eq!(b1["last_move"]["san"], "Nb4");
        let open = kinds(&b1);
        assert!(!open.contains(&"takeback".to_string()), "ruled on: {b1}");
        assert!(
            open.contains(&"displaced_pieces".to_string()),
            "the knight must go back to b4: {b1}"
        );
        let pgn = api.public("/games.pgn");
        assert!(pgn.contains("Nb4"), "{pgn}");
    };
    check(&api);
    // A second ruling has nothing left to rule on.
    let (status, _) = api.post(
        "/arbiter/api/retraction",
        json!({"board": 1, "decision": "accept"}),
    );
    assert_eq!(status, 409);
    d.stop();

    let d = Daemon::start(&config);
    check(&Api::new(&d));
    d.stop();
}

/// The open alerts of board `n`: (notice number, tracker's alert id, kind, state).
fn alerts(api: &Api, n: u64) -> Vec<(u64, u64, String, String)> {
    api.board(n)["open"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["notice"]["type"] == "alert")
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["notice"]["id"].as_u64().unwrap(),
                e["notice"]["kind"].as_str().unwrap().to_owned(),
                e["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The daemon rebuilds alerts from the journal after a restart; an arbiter's
/// acknowledgement or resolution, kept in the rulings file, must come back
/// with them, or every handled alert would be raised again.
#[test]
fn acknowledged_and_resolved_alerts_stay_so_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 2, &pairings());
    for n in 1..=2 {
        leave_capture(
            &dir.path().join("data"),
            &port(dir.path(), n),
            n,
            &game_capture(Then::IllegalMove),
        );
    }
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    let illegal = |api: &Api, n: u64| {
        alerts(api, n)
            .into_iter()
            .find(|a| a.2 == "illegal_move")
            .unwrap_or_else(|| panic!("board {n} has no illegal-move alert: {}", api.board(n)))
    };
    let (seq1, id1, _, state) = illegal(&api, 1);
    assert_eq!(state, "raised");
    let (seq2, id2, _, _) = illegal(&api, 2);
    let (status, answer) = api.post(
        "/arbiter/api/ack",
        json!({"board": 1, "seq": seq1, "by": "IA Example"}),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = api.post(
        "/arbiter/api/resolve",
        json!({"board": 2, "seq": seq2, "by": "IA Example", "reason": "7.5.5: two minutes added"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(illegal(&api, 1).3, "acknowledged");
    assert!(alerts(&api, 2).iter().all(|a| a.1 != id2));
    d.stop();
    let rulings = dir.path().join("data/operator/alert-rulings.jsonl");
    assert!(rulings.exists(), "{}", rulings.display());

    // The restart raises both alerts again from the captures; the rulings file
    // puts them back as the arbiter left them.
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    let (_, again1, _, state) = illegal(&api, 1);
    assert_eq!(
        again1, id1,
        "the tracker numbers alerts the same on a rebuild"
    );
    assert_eq!(state, "acknowledged", "{}", api.board(1));
    assert!(
        alerts(&api, 2).iter().all(|a| a.1 != id2),
        "the resolved alert stays resolved: {}",
        api.board(2)
    );
    d.stop();

    // A rulings file cut short by a crash loses only its torn line.
    let mut text = std::fs::read_to_string(&rulings).unwrap();
    text.push_str("{\"board\":1,\"alert\":");
    std::fs::write(&rulings, text).unwrap();
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    assert_eq!(illegal(&api, 1).3, "acknowledged");
    assert!(alerts(&api, 2).iter().all(|a| a.1 != id2));
    assert!(
        d.log_text().contains("could not be read and is skipped"),
        "{}",
        d.log_text()
    );
    d.stop();
}

/// What a public stream (`/events` or `/ws`) replays from its history (events
/// after `Last-Event-ID: 0`), read for two seconds.
fn public_stream_text(base: &str) -> (String, String) {
    use std::io::Read;
    let client = Client::builder()
        .timeout(std::time::Duration::from_secs(2))
        .build()
        .unwrap();
    let mut r = client
        .get(format!("{base}/events"))
        .header("Last-Event-ID", "0")
        .send()
        .unwrap();
    let mut sse = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            break;
        }
        sse.extend_from_slice(&buf[..n]);
    }
    let ws_url = format!("{}/ws?last_event_id=0", base.replace("http://", "ws://"));
    let ws = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use futures_util::StreamExt;
        let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
        let mut text = String::new();
        while let Ok(Some(Ok(m))) =
            tokio::time::timeout(std::time::Duration::from_secs(2), ws.next()).await
        {
            text.push_str(m.to_text().unwrap_or_default());
            text.push('\n');
        }
        text
    });
    (String::from_utf8_lossy(&sse).into_owned(), ws)
}

#[test]
fn the_arbiters_name_and_notes_never_reach_the_public_streams() {
    let (_dir, config) = setup();
    let d = Daemon::start(&config);
    let api = Api::new(&d);
    // A result without a reason, then a correction with the arbiter's note.
    let (status, answer) = api.post(
        "/arbiter/api/result",
        json!({"board": 1, "result": "1-0", "by": "IA Example"}),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = api.post(
        "/arbiter/api/result",
        json!({"board": 1, "result": "0-1", "reason": "White resigned after a warning",
               "by": "IA Example"}),
    );
    assert_eq!(status, 200, "{answer}");
    let (sse, ws) = public_stream_text(&d.base);
    for (name, text) in [("/events", &sse), ("/ws", &ws)] {
        assert_eq!(
            text.matches("\"type\":\"result\"").count(),
            2,
            "{name} replays both results: {text}"
        );
        assert!(
            text.contains("\"reason\":\"entered by the arbiter\""),
            "{name}: {text}"
        );
        for secret in ["IA Example", "White resigned", "warning"] {
            assert!(!text.contains(secret), "{name} carries {secret:?}: {text}");
        }
    }
    for path in [
        "/games.pgn",
        "/round/1/game/1.pgn",
        "/round-1/game-1.json",
        "/snapshot.json",
    ] {
        let body = api.public(path);
        assert!(
            !body.contains("IA Example") && !body.contains("White resigned"),
            "{path}: {body}"
        );
    }
    // The arbiters see who did what, and the note.
    let record = Api::new(&d).record(1);
    let timeline = record["timeline"].to_string();
    assert!(
        timeline.contains("IA Example") && timeline.contains("White resigned after a warning"),
        "{timeline}"
    );
}
