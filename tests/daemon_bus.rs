//! Eight virtual DGT boards in bus mode behind one pty, each playing a
//! different real game to the end at human hand speed (thinking time
//! compressed). Half are configured by serial number, half discovered on the
//! bus; every board's verified moves must be exactly its source game's, each
//! ply published once.

mod daemon_common;

use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_bus_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Protocol};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_boards_behind_one_bus_port_are_all_followed_exactly() {
    const BOARDS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    // At human hand speed a ply takes about 1.7 s of hand motion even with
    // thinking compressed 400 times, so games of at most 24 plies end within
    // 40 s of the host's first byte (a 33-ply game needed 61.5 s, which is
    // what made an earlier version of this test miss its 60 s).
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 16..=24, BOARDS);
    let link = dir.path().join("dgt-bus");
    let opts = EmulateOptions {
        seed: 7,
        speed: 400.0,
        hand_speed: 1.0,
        // Discovery takes two ping rounds of 1.3 s before the first dumps; the
        // players sit down after that.
        start_after_host: Some(5_000),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let only: Vec<_> = games.iter().map(|(g, _)| g.clone()).collect();
    let _bus = serve_bus_pty(&only, &opts).unwrap();
    // Serial numbers 01025..=01032: the emulator counts up from 1025. Half are
    // configured (numbered 11..=14), half numbered by their bus address.
    let mut boards = Vec::new();
    let mut numbers = Vec::new();
    for i in 0..BOARDS {
        let address = 1025 + i as u32;
        if i % 2 == 0 {
            boards.push(BoardConfig {
                port: link.clone(),
                protocol: Protocol::DGT_BUS,
                bus: false,
                number: Some(11 + i as u32 / 2),
                serial: Some(format!("{address:05}")),
                leds: None,
            });
            numbers.push(11 + i as u32 / 2);
        } else {
            numbers.push(address);
        }
    }
    let d = start(config(&dir.path().join("data"), boards));
    let mut public = d.hub.subscribe_public();
    let mut verified = Vec::new();
    let hub = d.hub.clone();
    let started = Instant::now();
    let want: Vec<(u32, Vec<String>)> = games
        .iter()
        .zip(&numbers)
        .map(|((_, w), &n)| (n, w.clone()))
        .collect();
    wait_games(
        &hub,
        &want,
        Duration::from_secs(60),
        &mut public,
        &mut verified,
    )
    .await;
    eprintln!("8 bus games followed in {:?}", started.elapsed());
    drain_verified(&mut public, &mut verified);
    for ((_, want), &n) in games.iter().zip(&numbers) {
        assert_each_ply_once(&verified, n, want);
        assert!(d.hub.public_board(n).unwrap().online);
    }
    d.shutdown().await;
}
