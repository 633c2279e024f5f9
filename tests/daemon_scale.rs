//! The daemon at scale, in-process, against virtual boards on ptys: 64 boards
//! at once on their own ports, each playing a different real game to the end. Every board's verified moves must be
//! exactly its source game's, each ply published once. Thinking time is
//! compressed, the hands move at human speed: at three times human speed a
//! capture and the recapture on the same square fit inside one sensor scan,
//! which no hand does and which the tracker rightly refuses to guess.

mod daemon_common;

use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_boards_on_their_own_ptys_are_all_followed_exactly() {
    const BOARDS: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=32, BOARDS);
    let mut emulators = Vec::new();
    let mut boards = Vec::new();
    for (i, (game, _)) in games.iter().enumerate() {
        let link = dir.path().join(format!("dgt-{i:02}"));
        let opts = EmulateOptions {
            seed: 100 + i as u64,
            speed: 400.0,
            hand_speed: 1.0,
            // 64 ports open one after another; every board waits for its host.
            start_after_host: Some(2_000),
            link: Some(link.clone()),
            ..EmulateOptions::default()
        };
        emulators.push(serve_pty(game, &opts).unwrap());
        boards.push(single(&link, i as u32 + 1));
    }
    let started = Instant::now();
    let d = start(config(&dir.path().join("data"), boards));
    let mut public = d.hub.subscribe_public();
    let mut verified = Vec::new();
    let hub = d.hub.clone();
    let want: Vec<(u32, Vec<String>)> = games
        .iter()
        .enumerate()
        .map(|(i, (_, w))| (i as u32 + 1, w.clone()))
        .collect();
    // A board whose host falls behind throws its bytes away, as a full pty
    // would: whether any did tells a host that lost reports from one that
    // misread what it got.
    let dropped = || {
        let dropped: Vec<(usize, usize)> = emulators
            .iter()
            .enumerate()
            .map(|(i, e)| (i + 1, e.dropped_bytes()))
            .filter(|&(_, n)| n > 0)
            .collect();
        format!("; bytes the boards threw away, by board: {dropped:?}")
    };
    wait_games_or_say(
        &hub,
        &want,
        Duration::from_secs(90),
        &mut public,
        &mut verified,
        dropped,
    )
    .await;
    eprintln!("64 games followed in {:?}", started.elapsed());
    drain_verified(&mut public, &mut verified);
    for (i, (_, want)) in games.iter().enumerate() {
        assert_each_ply_once(&verified, i as u32 + 1, want);
        assert!(d.hub.public_board(i as u32 + 1).unwrap().online);
    }
    for e in &emulators {
        assert_eq!(e.dropped_bytes(), 0, "the daemon kept up with every board");
    }
    d.shutdown().await;
}
