//! The arbiter dashboard in a real headless Chromium (Debian package
//! `chromium`): the page renders boards and alerts from the live API, and a
//! player named `<script>` shows up as text, never as markup.
//!
//! Needs a browser, so it is built only with `--features browser-tests`
//! (`apt-get install --no-install-recommends chromium`).

use std::process::Command;
use std::sync::Arc;

use eboard_bridge::events::{Alert, GameEvent, MoveEvent, Severity, Stamped, TrackerEvent};
use eboard_bridge::http::{router, FeedConfig};
use eboard_bridge::hub::Hub;
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
                kind: "illegal_move".into(),
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
