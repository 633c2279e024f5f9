//! The arbiter's "set clock times" on the real daemon: virtual boards with
//! DGT 3000 clocks on pseudo-terminals, the daemon reading them, the operator
//! API over HTTP. A clock that acks takes the times (they show in the next
//! readings and the next moves' `[%clk]`, and the game stays exact); a clock
//! outside mode 23 refuses twice and one that never answers is tried twice,
//! each ending with an error that says what to do; two commands in a row go
//! out one at a time, the second only after the first's ack; every byte sent
//! is in the board's capture.

mod daemon_common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions};
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::daemon::service::start_http_with_commands;
use eboard_bridge::session::capture::{CaptureReader, Direction};
use eboard_protocols::dgt::virtual_clock::CommandHandling;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

/// Every host→board clock command (`0x2b …`) in the captures of `port`, with
/// its time, and the times of the clock acks the board sent.
fn clock_traffic(data: &Path, port: &Path) -> (Vec<(u64, Vec<u8>)>, usize) {
    let key = eboard_bridge::daemon::journal::port_key(port);
    let dir = data.join("journal/captures").join(key);
    let mut sent = Vec::new();
    let mut acks = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = std::fs::File::open(entry.unwrap().path()).unwrap();
        let mut reader = CaptureReader::new(std::io::BufReader::new(file)).unwrap();
        let mut decoder = eboard_protocols::dgt::Decoder::new(eboard_protocols::dgt::Mode::Single);
        while let Some(chunk) = reader.next_chunk().unwrap() {
            match chunk.dir {
                Direction::Out if chunk.bytes.first() == Some(&0x2b) => {
                    sent.push((chunk.t_ms, chunk.bytes.clone()))
                }
                Direction::Out => {}
                Direction::In => {
                    decoder.push(&chunk.bytes);
                    while let Some(f) = decoder.next() {
                        if let Ok(eboard_protocols::dgt::Frame::Single(
                            eboard_protocols::dgt::Message::ClockAck(_),
                        )) = f
                        {
                            acks += 1;
                        }
                    }
                }
            }
        }
    }
    (sent, acks)
}

async fn post(client: &reqwest::Client, base: &str, token: &str, body: Value) -> (u16, Value) {
    let r = client
        .post(format!("{base}/arbiter/api/clock"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arbiter_sets_the_clock_and_each_failure_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 30..=40, 1)
        .pop()
        .unwrap();
    let board = |n: u32, handling: CommandHandling| {
        let mut opts = EmulateOptions {
            seed: 40 + u64::from(n),
            speed: 400.0,
            hand_speed: 1.0,
            // Board 1 has White's clock on the right: the daemon must map
            // White's time to the side the tracker learned.
            clock_right: n == 1,
            start_after_host: Some(1_500),
            link: Some(dir.path().join(format!("board-{n}"))),
            ..EmulateOptions::default()
        };
        opts.board.clock.commands = handling;
        serve_pty(&game, &opts).unwrap()
    };
    let _b1 = board(1, CommandHandling::Ack);
    let _b2 = board(2, CommandHandling::NotMode23);
    let _b3 = board(3, CommandHandling::Unreachable);
    let ports: Vec<_> = (1..=3)
        .map(|n| dir.path().join(format!("board-{n}")))
        .collect();
    let config = config(
        &data,
        ports
            .iter()
            .enumerate()
            .map(|(i, p)| single(p, i as u32 + 1))
            .collect(),
    );
    let hub = Arc::new(Hub::new());
    let (commands_tx, commands_rx) = mpsc::channel(16);
    let http = start_http_with_commands(
        &config,
        "127.0.0.1:0".parse().unwrap(),
        hub.clone(),
        Some(commands_tx),
    )
    .await
    .unwrap();
    let (stop, stop_rx) = oneshot::channel::<()>();
    let daemon = tokio::spawn(eboard_bridge::daemon::run_with_commands(
        config,
        hub.clone(),
        Some(commands_rx),
        async {
            let _ = stop_rx.await;
        },
        || {},
    ));
    let base = format!("http://{}", http.addr);
    let client = reqwest::Client::new();

    // Once a few moves are in, the clocks' sides are known.
    wait_for("four plies on every board", Duration::from_secs(40), || {
        (1..=3).all(|n| ucis(&hub, n).len() >= 4)
    })
    .await;

    // Board 1: the clock acks; the times show in the next readings.
    let asked = Instant::now();
    let (status, answer) = post(
        &client,
        &base,
        &http.token,
        json!({"board": 1, "white": "1:00:00", "black": "0:30:00", "by": "IA Example"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["white_ms"], 3_600_000);
    assert!(asked.elapsed() < Duration::from_secs(2), "acked at once");
    wait_for(
        "board 1's clock to show the new times",
        Duration::from_secs(10),
        || {
            hub.public_board(1).and_then(|b| b.clock).is_some_and(|c| {
                (3_590_000..=3_600_000).contains(&c.white_ms)
                    && (1_790_000..=1_800_000).contains(&c.black_ms)
            })
        },
    )
    .await;
    let plies_at_set = ucis(&hub, 1).len();

    // Two commands in a row: the second goes out only after the first's ack,
    // and the clock ends with the second's times.
    let first = post(
        &client,
        &base,
        &http.token,
        json!({"board": 1, "white": "0:59:00", "black": "0:31:00"}),
    );
    let second = async {
        tokio::time::sleep(Duration::from_millis(30)).await;
        post(
            &client,
            &base,
            &http.token,
            json!({"board": 1, "white": "0:58:00", "black": "0:32:00"}),
        )
        .await
    };
    let ((s1, a1), (s2, a2)) = tokio::join!(first, second);
    assert_eq!((s1, s2), (200, 200), "{a1} {a2}");
    wait_for(
        "board 1's clock to show the second times",
        Duration::from_secs(10),
        || {
            hub.public_board(1)
                .and_then(|b| b.clock)
                .is_some_and(|c| (1_910_000..=1_920_000).contains(&c.black_ms))
        },
    )
    .await;

    // Board 2's clock is not in mode 23: refused twice, a 502 that says so.
    let (status, answer) = post(
        &client,
        &base,
        &http.token,
        json!({"board": 2, "white": "1:00:00", "black": "1:00:00"}),
    )
    .await;
    assert_eq!(status, 502, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(error.contains("mode 23"), "{answer}");

    // Board 3's clock never answers: sent twice, 2 s apart, then given up.
    let asked = Instant::now();
    let (status, answer) = post(
        &client,
        &base,
        &http.token,
        json!({"board": 3, "white": "1:00:00", "black": "1:00:00"}),
    )
    .await;
    let took = asked.elapsed();
    assert_eq!(status, 502, "{answer}");
    let error = answer["error"].as_str().unwrap_or_default();
    assert!(error.contains("did not answer"), "{answer}");
    assert!(
        took >= Duration::from_millis(3_900) && took < Duration::from_secs(6),
        "{took:?}"
    );

    // Bad times and unknown boards are refused before anything is sent.
    for (body, status) in [
        (
            json!({"board": 1, "white": "1:75:00", "black": "1:00:00"}),
            400,
        ),
        (
            json!({"board": 1, "white": "10:00:00", "black": "1:00:00"}),
            400,
        ),
        (
            json!({"board": 1, "white": "soon", "black": "1:00:00"}),
            400,
        ),
        (
            json!({"board": 9, "white": "1:00:00", "black": "1:00:00"}),
            400,
        ),
    ] {
        let (got, answer) = post(&client, &base, &http.token, body.clone()).await;
        assert_eq!(got, status, "{body} → {answer}");
        assert!(answer["error"].as_str().is_some(), "{answer}");
    }

    // The game goes on and stays exact; the moves after the set carry the
    // new times.
    wait_for(
        "four more plies on board 1",
        Duration::from_secs(30),
        || ucis(&hub, 1).len() >= plies_at_set + 4,
    )
    .await;
    let moves = hub.public_board(1).and_then(|b| b.game).unwrap().moves;
    let got: Vec<_> = moves.iter().map(|m| m.uci.clone()).collect();
    assert_eq!(got[..], want[..got.len()], "board 1 stays exact");
    let late = &moves[moves.len() - 2..];
    for m in late {
        let clk = m.clock_ms.expect("a clock time");
        assert!(clk <= 3_600_000 + 30_000, "ply {}: {clk} ms", m.ply);
    }
    // No warning or error alert on board 1 from the jump in its times.
    let serious: Vec<_> = hub
        .arbiter_snapshot()
        .into_iter()
        .filter(|b| b.public.number == 1)
        .flat_map(|b| b.open)
        .filter(|e| {
            matches!(&e.notice, eboard_bridge::daemon::hub::ArbiterNotice::Alert(a)
                if a.severity >= eboard_bridge::events::Severity::Warning)
        })
        .collect();
    assert!(serious.is_empty(), "{serious:?}");

    stop.send(()).unwrap();
    daemon.await.unwrap().unwrap();

    // What was sent is in the captures: board 1 three commands, each after
    // the previous one's ack; boards 2 and 3 two each.
    let (sent1, acks1) = clock_traffic(&data, &ports[0]);
    assert_eq!(sent1.len(), 3, "{sent1:?}");
    assert!(acks1 >= 3, "{acks1} acks");
    assert!(
        sent1.windows(2).all(|w| w[1].0 >= w[0].0 + 200),
        "one at a time, each after the last one's ack (the clock acks after 250 ms): {sent1:?}"
    );
    // White's clock is on the right on board 1: 0:58:00 goes to the right.
    let last = &sent1[2].1;
    assert_eq!(&last[4..10], &[0, 32, 0, 0, 58, 0], "{last:02x?}");
    let (sent2, _) = clock_traffic(&data, &ports[1]);
    assert_eq!(sent2.len(), 2, "{sent2:?}");
    let (sent3, acks3) = clock_traffic(&data, &ports[2]);
    assert_eq!(sent3.len(), 2, "{sent3:?}");
    assert_eq!(acks3, 0);
    assert!(sent3[1].0 >= sent3[0].0 + 2_000, "{sent3:?}");
}
