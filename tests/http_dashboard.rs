//! The arbiter dashboard in a real headless Chromium (Debian package
//! `chromium`): the page renders boards and alerts from the live API, and a
//! player named `<script>` shows up as text, never as markup.
//!
//! The second test drives the browser over the DevTools protocol against the
//! real daemon: an illegal move in a board's journaled capture raises an alert
//! with its Article, an arbiter's click acknowledges it, and a screenshot is
//! decoded and checked.
//!
//! Needs a browser, so it is built only with `--features browser-tests`
//! (`apt-get install --no-install-recommends chromium`).

mod live_daemon;

mod child_guard;
use child_guard::ChildGuard;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{Alert, GameEvent, MoveEvent, Severity, Stamped, TrackerEvent};
use eboard_bridge::http::{router, FeedConfig};
use eboard_bridge::publish::{PairingConfig, Player, Tournament, TournamentConfig};

const TOKEN: &str = "dashboard-token";

fn browser() -> String {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return name.to_string();
        }
    }
    panic!("no Chromium found: install it with `apt-get install --no-install-recommends chromium`");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_boards_and_alerts_and_escapes_names() {
    let hub = Arc::new(Hub::new());
    hub.register(1, "/dev/ttyUSB0");
    let ev = |ply, event| Stamped {
        board: 1,
        ply,
        t_ms: 0,
        event,
    };
    hub.apply(
        &ev(
            0,
            TrackerEvent::Game(GameEvent::GameStart {
                fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
                chess960: None,
                rotated: false,
            }),
        ),
        true,
    );
    hub.apply(
        &ev(
            1,
            TrackerEvent::Game(GameEvent::Move(MoveEvent {
                ply: 1,
                san: "e4".into(),
                uci: "e2e4".into(),
                fen: String::new(),
                verified: true,
                clock_ms: None,
                emt_ms: None,
                reconstructed: false,
                corrected: false,
            })),
        ),
        true,
    );
    hub.apply(
        &ev(
            1,
            TrackerEvent::Alert(Alert {
                id: 0,
                penalty: None,
                kind: eboard_bridge::events::AlertKind::IllegalMove,
                article: "7.5.1".into(),
                severity: Severity::Error,
                squares: vec!["e5".into()],
                message: "Black completed an illegal move <b>e5</b>".into(),
            }),
        ),
        true,
    );
    let t = Tournament::new(
        TournamentConfig {
            current_round: 1,
            ..TournamentConfig::default()
        },
        &[PairingConfig {
            round: None,
            board: 1,
            white: Player {
                name: "<script>alert(1)</script>".into(),
                ..Player::default()
            },
            black: Player {
                name: "Doe, Jane".into(),
                ..Player::default()
            },
        }],
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(
        hub,
        FeedConfig {
            arbiter_token: TOKEN.into(),
            tournament: Arc::new(t),
            pgn_dir: None,
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let browser = browser();
    let profile = tempfile::tempdir().unwrap();
    let url = format!("http://{addr}/arbiter/?token={TOKEN}");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                &format!("--user-data-dir={}", profile.path().display()),
                "--virtual-time-budget=5000",
                "--dump-dom",
                &url,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dom.contains("Board 1"), "{dom}");
    assert!(dom.contains("Art. 7.5.1"), "{dom}");
    // The alert text and the player name are text nodes: serialised escaped.
    assert!(
        dom.contains("Black completed an illegal move &lt;b&gt;e5&lt;/b&gt;"),
        "{dom}"
    );
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt; – Doe, Jane"),
        "{dom}"
    );
    assert!(!dom.contains("<script>alert(1)"), "{dom}");
    assert!(dom.contains("Last move: e4 (ply 1)"), "{dom}");
    assert!(dom.contains("Acknowledge"), "{dom}");
    // The page authenticated its API calls with the token it took from the address.
    assert!(
        dom.contains("<span id=\"status\" class=\"status\">live"),
        "{dom}"
    );
    // The diagram shows the position after 1. e4: eight pawns a side, one on e4.
    let boards = &dom[dom.find("id=\"boards\"").unwrap()..];
    let boards = &boards[..boards.find("</section>").unwrap()];
    assert_eq!(boards.matches('\u{2659}').count(), 8, "{boards}");
    assert_eq!(boards.matches('\u{265F}').count(), 8, "{boards}");
    let squares: Vec<&str> = boards
        .split("<span class=")
        .skip(1)
        .filter(|s| s.starts_with("\"l\"") || s.starts_with("\"d\""))
        .collect();
    assert_eq!(squares.len(), 64);
    // e4: rank 4 is the fifth row from the top, file e the fifth column.
    assert!(
        squares[4 * 8 + 4].contains('\u{2659}'),
        "{}",
        squares[4 * 8 + 4]
    );
}

/// A minimal DevTools-protocol client: one page session over the browser's
/// WebSocket, commands answered by id, events kept for inspection.
struct Cdp {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next_id: u64,
    session: Option<String>,
    events: Vec<Value>,
}

impl Cdp {
    async fn connect(url: &str) -> Cdp {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Cdp {
            ws,
            next_id: 0,
            session: None,
            events: Vec::new(),
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no answer to {method}"))
                .unwrap()
                .unwrap();
            let Message::Text(text) = frame else { continue };
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Evaluates `expr` in the page and returns its value.
    async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is `true`.
    async fn wait_for(&mut self, what: &str, expr: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.eval(expr).await != json!(true) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; page text:\n{}",
                self.eval("document.body.innerText").await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn rgb_at(img: &(Vec<u8>, u32, u32), x: u32, y: u32) -> [u8; 3] {
    let (data, w, _) = img;
    let i = ((y * w + x) * 3) as usize;
    [data[i], data[i + 1], data[i + 2]]
}

/// Decodes a PNG screenshot to RGB8 (width, height).
fn decode_png(bytes: &[u8]) -> (Vec<u8>, u32, u32) {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let channels = info.color_type.samples();
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    (rgb, w, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_illegal_move_on_the_real_daemon_is_acknowledged_in_the_browser() {
    use live_daemon::{game_capture, leave_capture, port, write_config, Daemon, Then, TOKEN};
    let dir = tempfile::tempdir().unwrap();
    let pairing = "[[pairing]]\nboard = 1\nwhite = { name = \"<script>alert(1)</script>\" }\n\
                   black = { name = \"Doe, Jane\" }\n";
    let config = write_config(dir.path(), 1, pairing);
    leave_capture(
        &dir.path().join("data"),
        &port(dir.path(), 1),
        1,
        &game_capture(Then::IllegalMove),
    );
    let daemon = tokio::task::spawn_blocking(move || Daemon::start(&config))
        .await
        .unwrap();
    let base = daemon.base.clone();
    let client = reqwest::Client::new();
    let state = |client: reqwest::Client, base: String| async move {
        client
            .get(format!("{base}/arbiter/api/state"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    let s = state(client.clone(), base.clone()).await;
    let open = s["boards"][0]["open"].as_array().unwrap().clone();
    let illegal = open
        .iter()
        .find(|n| n["notice"]["kind"] == "illegal_move")
        .unwrap_or_else(|| {
            panic!(
                "the daemon raised no illegal-move alert: {s}\n{}",
                daemon.log_text()
            )
        })
        .clone();
    assert_eq!(illegal["notice"]["article"], "7.5.1");
    assert_eq!(illegal["state"], "raised");

    // Chromium with the DevTools protocol on a free port.
    let profile = tempfile::tempdir().unwrap();
    let mut chrome = ChildGuard::new(
        Command::new(browser())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = chrome.stderr.take().unwrap();
    let ws_url = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stderr).lines();
        let url = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split_once("DevTools listening on ")
                    .map(|(_, u)| u.trim().to_string())
            })
            .expect("chromium printed no DevTools address");
        // Keep draining so the browser never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        url
    })
    .await
    .unwrap();
    let mut cdp = Cdp::connect(&ws_url).await;
    let target = cdp
        .call("Target.createTarget", json!({"url": "about:blank"}))
        .await;
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        )
        .await;
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    cdp.call("Page.enable", json!({})).await;
    cdp.call("Runtime.enable", json!({})).await;
    let (width, height) = (1200u32, 900u32);
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await;
    cdp.call(
        "Page.navigate",
        json!({"url": format!("{base}/arbiter/?token={TOKEN}")}),
    )
    .await;
    cdp.wait_for(
        "the illegal-move alert",
        "[...document.querySelectorAll('#alerts li')].some(li => li.textContent.includes('Art. 7.5.1'))",
    )
    .await;
    // The page shows the board, the Article with its title, and the name as text.
    let text = cdp.eval("document.body.innerText").await;
    let text = text.as_str().unwrap();
    assert!(text.contains("Board 1"), "{text}");
    assert!(text.contains("Illegal move completed"), "{text}");
    assert!(
        text.contains("<script>alert(1)</script> – Doe, Jane"),
        "{text}"
    );
    assert_eq!(
        cdp.eval("document.scripts.length").await,
        json!(1),
        "only the page's own script"
    );
    assert!(
        !cdp.events
            .iter()
            .any(|e| e["method"] == "Page.javascriptDialogOpening"),
        "a player's name opened a dialog"
    );

    // Screenshot: right size, not blank, and the alert's red banner is drawn
    // where the page says the alert is.
    let rect = cdp
        .eval(
            "(() => { const li = [...document.querySelectorAll('#alerts li')].find(li => li.textContent.includes('7.5.1'));
                      li.scrollIntoView(); const r = li.getBoundingClientRect();
                      return [r.left, r.top, r.width, r.height]; })()",
        )
        .await;
    let shot = cdp
        .call("Page.captureScreenshot", json!({"format": "png"}))
        .await;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    // Kept beside the test's data for a look when the test fails.
    std::fs::write(dir.path().join("dashboard.png"), &png).unwrap();
    let img = decode_png(&png);
    assert_eq!((img.1, img.2), (width, height));
    let colours: std::collections::HashSet<[u8; 3]> =
        img.0.chunks(3).map(|p| [p[0], p[1], p[2]]).collect();
    assert!(
        colours.len() > 50,
        "the page looks blank: {} colours",
        colours.len()
    );
    let (x, y, w, h) = (
        rect[0].as_f64().unwrap() as u32,
        rect[1].as_f64().unwrap() as u32,
        rect[2].as_f64().unwrap() as u32,
        rect[3].as_f64().unwrap() as u32,
    );
    assert!(w > 100 && h > 10, "the alert has a size: {rect}");
    // The left border of an error alert is #c33; inside it, the light red #ffe9e9.
    assert_eq!(
        rgb_at(&img, x + 3, y + h / 2),
        [0xcc, 0x33, 0x33],
        "banner border"
    );
    assert_eq!(
        rgb_at(&img, x + w - 4, y + 3),
        [0xff, 0xe9, 0xe9],
        "banner fill"
    );

    // The arbiter clicks "Acknowledge", as a mouse does.
    let button = cdp
        .eval(
            "(() => { const li = [...document.querySelectorAll('#alerts li')].find(li => li.textContent.includes('7.5.1'));
                      const b = [...li.querySelectorAll('button')].find(b => b.textContent === 'Acknowledge');
                      const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()",
        )
        .await;
    for kind in ["mousePressed", "mouseReleased"] {
        cdp.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": button[0], "y": button[1], "button": "left", "clickCount": 1}),
        )
        .await;
    }
    cdp.wait_for(
        "the alert to show as acknowledged",
        "[...document.querySelectorAll('#alerts li')].some(li => li.textContent.includes('7.5.1') && li.classList.contains('acknowledged') && !li.textContent.includes('Acknowledge'))",
    )
    .await;
    let s = state(client.clone(), base.clone()).await;
    let after = s["boards"][0]["open"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["seq"] == illegal["seq"])
        .cloned()
        .expect("an acknowledged alert stays open until resolved");
    assert_eq!(after["state"], "acknowledged");

    // The board's operator form: the arbiter names herself and enters a result.
    cdp.eval(
        "(() => { const by = document.getElementById('by'); by.value = 'Test Arbiter';
                  by.dispatchEvent(new Event('change'));
                  const card = document.querySelector('#boards .card');
                  card.querySelector('details').open = true;
                  const form = card.querySelector('details form');
                  form.querySelector('select').value = '0-1';
                  form.querySelector('input').value = 'White resigned';
                  [...form.querySelectorAll('button')].find(b => b.textContent === 'Set result').click();
                  return true; })()",
    )
    .await;
    cdp.wait_for(
        "the result on the card",
        "document.querySelector('#boards .card').textContent.includes('Result: 0-1')",
    )
    .await;
    let message = cdp
        .eval("document.getElementById('message').textContent")
        .await;
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("result 0-1 (White resigned)"),
        "{message}"
    );
    // The record view shows the PGN and the timeline with who did it.
    cdp.eval(
        "[...document.querySelectorAll('#boards .card button')].find(b => b.textContent === 'Record and timeline').click()",
    )
    .await;
    cdp.wait_for(
        "the record and timeline",
        "document.getElementById('record-pgn').textContent.includes('[Result \"0-1\"]') && \
         document.getElementById('record-timeline').textContent.includes('by Test Arbiter')",
    )
    .await;
    let s = state(client.clone(), base.clone()).await;
    assert_eq!(s["boards"][0]["result"], "0-1");
    let _ = cdp.call("Browser.close", json!({})).await;
    let _ = chrome.kill();
    let _ = chrome.wait();
    drop(daemon);
}
