//! `GET /metrics` from outside: a virtual board on a pty plays a real game into
//! the daemon, and the Prometheus exposition served over HTTP counts what
//! happened — frames, the board online, every verified move and its latency —
//! then the unplug. Without the arbiter token the endpoint answers 401.

mod daemon_common;

use std::time::Duration;

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions};

const TOKEN: &str = "metrics-test-token-0123456789";

/// The value of the sample line `name` (exact match up to the value).
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

async fn scrape(client: &reqwest::Client, url: &str) -> String {
    let res = client.get(url).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let kind = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    res.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_frames_moves_latency_and_the_unplug() {
    let dir = tempfile::tempdir().unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=20, 1)
        .pop()
        .unwrap();
    let link = dir.path().join("dgt-1");
    let board = serve_pty(
        &game,
        &EmulateOptions {
            seed: 7,
            speed: 400.0,
            hand_speed: 1.0,
            start_after_host: Some(1_500),
            link: Some(link.clone()),
            ..EmulateOptions::default()
        },
    )
    .unwrap();
    let mut cfg = config(&dir.path().join("data"), vec![single(&link, 1)]);
    cfg.http.arbiter_token = Some(TOKEN.into());
    let d = start(cfg.clone());
    let http = eboard_bridge::daemon::service::start_http(
        &cfg,
        "127.0.0.1:0".parse().unwrap(),
        d.hub.clone(),
    )
    .await
    .unwrap();
    let url = format!("http://{}/metrics", http.addr);
    let client = reqwest::Client::new();

    let res = client.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 401, "alert counts are arbiter business");
    let res = client.get(&url).bearer_auth("wrong").send().await.unwrap();
    assert_eq!(res.status(), 401);

    let hub = d.hub.clone();
    wait_for("the whole game", Duration::from_secs(60), || {
        ucis(&hub, 1) == want
    })
    .await;
    let text = scrape(&client, &url).await;
    let plies = want.len() as f64;
    assert_eq!(sample(&text, "eboard_boards"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "eboard_boards_online"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "eboard_moves_total"), Some(plies), "{text}");
    assert_eq!(
        sample(&text, "eboard_retractions_total"),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "eboard_frames_total").unwrap() > plies,
        "{text}"
    );
    assert_eq!(
        sample(&text, "eboard_decode_errors_total"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "eboard_journal_errors_total"),
        Some(0.0),
        "{text}"
    );
    // Every move verified by bytes from the board has its latency observed
    // (moves verified by a hold timer have no bytes to time from).
    let timed = sample(&text, "eboard_move_latency_seconds_count").unwrap();
    assert!(timed >= 1.0 && timed <= plies, "{timed} of {plies}: {text}");
    let total = sample(&text, "eboard_move_latency_seconds_sum").unwrap();
    assert!(total / timed < 0.05, "mean latency {} s", total / timed);
    assert!(
        sample(&text, "eboard_resyncs_total").unwrap() >= 1.0,
        "{text}"
    );
    assert_eq!(sample(&text, "eboard_link_down_total"), Some(0.0), "{text}");

    // Unplugged: the link goes down and the gauge follows.
    board.stop().unwrap();
    let mut text = String::new();
    for _ in 0..100 {
        text = scrape(&client, &url).await;
        if sample(&text, "eboard_boards_online") == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sample(&text, "eboard_boards_online"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "eboard_link_down_total"), Some(1.0), "{text}");
    d.shutdown().await;
}
