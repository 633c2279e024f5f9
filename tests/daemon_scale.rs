//! The daemon at scale, in-process, against virtual boards on ptys: 64 boards
//! at once on their own ports, each playing a different real game to the end. Every board's verified moves must be
//! exactly its source game's, each ply published once. Thinking time is
//! compressed, the hands move at human speed: at three times human speed a
//! capture and the recapture on the same square fit inside one sensor scan,
//! which no hand does and which the tracker rightly refuses to guess. And the
//! daemon on a host that stalls it for seconds at a time: late, never wrong.

mod daemon_common;

use std::path::Path;
use std::time::{Duration, Instant};

use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::daemon::config::BoardConfig;
use eboard_bridge::sim::games::Game;

/// A virtual board per game on a pty of its own under `dir` (board `i + 1`
/// with seed `first_seed + i`), thinking time ÷400, hands at human speed,
/// and the daemon's configuration for each.
fn boards_on_ptys(
    dir: &Path,
    games: &[(Game, Vec<String>)],
    first_seed: u64,
) -> (Vec<EmulatorHandle>, Vec<BoardConfig>) {
    let mut emulators = Vec::new();
    let mut boards = Vec::new();
    for (i, (game, _)) in games.iter().enumerate() {
        let link = dir.join(format!("dgt-{i:02}"));
        let opts = EmulateOptions {
            seed: first_seed + i as u64,
            speed: 400.0,
            hand_speed: 1.0,
            // The ports open one after another; every board waits for its host.
            start_after_host: Some(2_000),
            link: Some(link.clone()),
            ..EmulateOptions::default()
        };
        emulators.push(serve_pty(game, &opts).unwrap());
        boards.push(single(&link, i as u32 + 1));
    }
    (emulators, boards)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_boards_on_their_own_ptys_are_all_followed_exactly() {
    const BOARDS: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=32, BOARDS);
    let (emulators, boards) = boards_on_ptys(dir.path(), &games, 100);
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

/// A loaded host: the runtime the daemon was started on stalls for 1.5 s every
/// second of its own time, as a Raspberry Pi busy with other work would, or a
/// loop deep in a hard position. The boards' reports must still be read as
/// they come, each stamped with the time it was read; read only after a
/// stall, seconds of play would come in one chunk with one time and be judged
/// as one instant. The daemon may publish late, never wrongly: every game
/// exact, no warning raised.
#[tokio::test(flavor = "current_thread")]
async fn a_stalling_host_publishes_late_but_right_and_reads_the_boards_on_time() {
    const BOARDS: usize = 4;
    const STALL: Duration = Duration::from_millis(3_500);
    let dir = tempfile::tempdir().unwrap();
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=22, BOARDS);
    let (emulators, boards) = boards_on_ptys(dir.path(), &games, 300);
    let data = dir.path().join("data");
    let d = start(config(&data, boards));
    let staller = tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            std::thread::sleep(STALL);
        }
    });
    let mut public = d.hub.subscribe_public();
    let mut verified = Vec::new();
    let want: Vec<(u32, Vec<String>)> = games
        .iter()
        .enumerate()
        .map(|(i, (_, w))| (i as u32 + 1, w.clone()))
        .collect();
    wait_games(
        &d.hub,
        &want,
        Duration::from_secs(120),
        &mut public,
        &mut verified,
    )
    .await;
    staller.abort();
    // What the operator's graph of `eboard_reading_lag_seconds` shows: some
    // chunks waited for the loop seconds, none longer than the stalls explain.
    let metrics = d.hub.metrics().render(0, 0, 0);
    let bucket = |le: &str| -> u64 {
        let name = format!("eboard_reading_lag_seconds_bucket{{le=\"{le}\"}} ");
        let line = metrics.lines().find(|l| l.starts_with(&name));
        line.unwrap_or_else(|| panic!("{name} in {metrics}"))[name.len()..]
            .parse()
            .unwrap()
    };
    assert!(bucket("1.0") < bucket("5.0"), "the lag showed: {metrics}");
    assert_eq!(bucket("5.0"), bucket("+Inf"), "{metrics}");
    drain_verified(&mut public, &mut verified);
    for (n, want) in &want {
        assert_each_ply_once(&verified, *n, want);
    }
    d.shutdown().await;

    for n in 1..=BOARDS {
        let events =
            std::fs::read_to_string(data.join(format!("journal/events/board-{n}.jsonl"))).unwrap();
        for line in events.lines() {
            let e: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                e["type"] != "alert" || e["severity"] == "info",
                "board {n}: a stalling host raised {line}"
            );
        }
    }
    // Each board speaks at least once a second (it is asked for its clock
    // when quiet): a longer silence in a capture is a stall read as one.
    let mut captures = 0;
    for port in std::fs::read_dir(data.join("journal/captures")).unwrap() {
        for file in std::fs::read_dir(port.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let reads: Vec<u64> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|c| c["dir"] == "in")
                .filter_map(|c| c["t_ms"].as_u64())
                .collect();
            let longest = reads.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            assert!(
                longest < 1_300,
                "{}: {longest} ms without a read, in a capture of {} reads",
                path.display(),
                reads.len()
            );
            captures += 1;
        }
    }
    assert_eq!(captures, BOARDS);
    drop(emulators);
}
