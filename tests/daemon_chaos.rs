//! The daemon in-process while boards are unplugged and plugged back again and
//! again: a pty closed at a seeded random moment (often mid-move, a piece in
//! the air) and a new one opened at the same link path, standing where the game
//! stood. No verified move may be lost or published twice.

mod daemon_common;

use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::emulate::{serve_pty, EmulateOptions};
use rand::{Rng, SeedableRng};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_unplug_replug_cycles_lose_and_duplicate_no_verified_move() {
    const CYCLES: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 40..=48, 1)
        .pop()
        .unwrap();
    let link = dir.path().join("dgt-board");
    let opts = |seed| EmulateOptions {
        seed,
        speed: 400.0,
        hand_speed: 3.0,
        start_after_host: Some(300),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    let mut board = serve_pty(&game, &opts(1)).unwrap();
    let d = start(config(&dir.path().join("data"), vec![single(&link, 1)]));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    let mut verified = Vec::new();
    let started = Instant::now();
    for cycle in 0..CYCLES {
        wait_for("the board online", Duration::from_secs(10), || {
            hub.public_board(1).is_some_and(|b| b.online)
        })
        .await;
        // Unplug at a random moment of play.
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..700))).await;
        board.stop().unwrap();
        wait_for("the board offline", Duration::from_secs(10), || {
            !hub.public_board(1).unwrap().online
        })
        .await;
        drain_verified(&mut public, &mut verified);
        let done = hub.verified_plies(1);
        assert_eq!(ucis(&hub, 1), want[..done], "cycle {cycle}");
        // Plug back: a board standing where the game stood.
        board = serve_pty(&resumed(&game, done), &opts(10 + cycle as u64)).unwrap();
    }
    wait_for("the whole game", Duration::from_secs(30), || {
        ucis(&hub, 1) == want
    })
    .await;
    eprintln!("{CYCLES} cycles and the game in {:?}", started.elapsed());
    drain_verified(&mut public, &mut verified);
    assert_each_ply_once(&verified, 1, &want);
    d.shutdown().await;
    board.stop().unwrap();
}
