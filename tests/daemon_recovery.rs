//! Recovery of what a crashed run journaled but never published: the daemon
//! journals a chunk (to the OS) before it logs and publishes the events the
//! chunk caused, so a crash in between leaves a verified move in the capture
//! only. The restarted daemon derives it again from the capture and must
//! publish it then, once, and never again on a later restart.

mod daemon_common;

use std::sync::Arc;
use std::time::Duration;

use daemon_common::journal_seed::{derive, seed_port};
use daemon_common::*;
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::daemon::journal::Journal;
use eboard_bridge::events::{GameEvent, TrackerEvent};
use eboard_bridge::sim::{dgt_capture, SimOptions};

/// (ply, uci) of every verified move in board 1's event log.
fn logged_verified(data: &std::path::Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(data.join("journal/events/board-1.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "move" && v["verified"] == true)
        .map(|v| {
            (
                v["ply"].as_u64().unwrap(),
                v["uci"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_journaled_but_not_published_before_a_crash_is_published_once_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 16..=24, 1).remove(0);
    // The board stays unplugged after the crash: only the journal speaks.
    let port = dir.path().join("dgt-unplugged");
    let chunks = dgt_capture(
        &game,
        &SimOptions {
            seed: 5,
            ..SimOptions::default()
        },
    );
    let derived = derive(1, &chunks);
    let verified: Vec<(u64, String)> = derived
        .iter()
        .filter_map(|e| match &e.event {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                Some((u64::from(m.ply), m.uci.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        verified.iter().map(|(_, u)| u.clone()).collect::<Vec<_>>(),
        want,
        "the simulated capture holds the whole game"
    );
    // The crash: every chunk journaled, but the events from the last verified
    // move on were never logged (nor published).
    let cut = derived
        .iter()
        .rposition(|e| matches!(&e.event, TrackerEvent::Game(GameEvent::Move(m)) if m.verified))
        .unwrap();
    {
        let mut journal = Journal::open(&data).unwrap();
        seed_port(&mut journal, &port, 1, &chunks, &derived[..cut]);
        journal.sync().unwrap();
    }
    assert_eq!(logged_verified(&data), verified[..verified.len() - 1]);
    // Run names are start times in ms: the restart must be a later run.
    std::thread::sleep(Duration::from_millis(5));

    let hub = Arc::new(Hub::new());
    let mut public = hub.subscribe_public();
    let d = start_on(hub.clone(), config(&data, vec![single(&port, 1)]));
    wait_for("the rebuilt game", Duration::from_secs(20), || {
        ucis(&hub, 1) == want
    })
    .await;
    let mut published = Vec::new();
    wait_for(
        "the withheld move published",
        Duration::from_secs(5),
        || {
            drain_verified(&mut public, &mut published);
            !published.is_empty()
        },
    )
    .await;
    d.shutdown().await;
    drain_verified(&mut public, &mut published);
    let last = verified.last().unwrap();
    assert_eq!(
        published,
        vec![(1, last.0 as u32, last.1.clone())],
        "exactly the move the crash withheld is published, nothing already public again"
    );
    assert_eq!(logged_verified(&data), verified, "each ply logged once");

    // A further restart publishes nothing: the move is in the log now.
    std::thread::sleep(Duration::from_millis(5));
    let hub = Arc::new(Hub::new());
    let mut public = hub.subscribe_public();
    let mut d = start_on(hub.clone(), config(&data, vec![single(&port, 1)]));
    // Ready comes after the journal's recovery, which is where a move would be
    // published again.
    d.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(ucis(&hub, 1), want, "the game rebuilt before ready");
    d.shutdown().await;
    let mut again = Vec::new();
    drain_verified(&mut public, &mut again);
    assert!(again.is_empty(), "published twice: {again:?}");
    assert_eq!(logged_verified(&data), verified, "each ply logged once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_chunk_over_64_kib_is_recovered_whole() {
    use eboard_bridge::session::capture::{Chunk, Direction};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 16..=24, 1).remove(0);
    let port = dir.path().join("dgt-unplugged");
    let chunks = dgt_capture(
        &game,
        &SimOptions {
            seed: 9,
            ..SimOptions::default()
        },
    );
    // The board's bytes up to just after its first dump merged into one
    // chunk, followed by 70 KB of harmless VERSION replies: what another
    // tool may write, or a hand merging chunks (a line may hold 1 MiB).
    let dump = chunks
        .iter()
        .position(|c| c.dir == Direction::In && c.bytes.contains(&0x86))
        .unwrap();
    let until = chunks[dump].t_ms + 300;
    let mut merged = Chunk {
        t_ms: until,
        dir: Direction::In,
        bytes: Vec::new(),
    };
    let mut rest = Vec::new();
    for c in &chunks {
        if c.t_ms <= until && c.dir == Direction::In {
            merged.bytes.extend_from_slice(&c.bytes);
        } else if c.t_ms <= until {
            rest.push(c.clone());
        }
    }
    for _ in 0..14_000 {
        merged
            .bytes
            .extend_from_slice(&[0x93, 0x00, 0x05, 0x01, 0x02]);
    }
    rest.push(merged);
    rest.extend(chunks.iter().filter(|c| c.t_ms > until).cloned());
    let derived = derive(1, &rest);
    {
        let mut journal = Journal::open(&data).unwrap();
        seed_port(&mut journal, &port, 1, &rest, &derived);
        journal.sync().unwrap();
    }
    std::thread::sleep(Duration::from_millis(5));
    let d = start(config(&data, vec![single(&port, 1)]));
    let hub = d.hub.clone();
    wait_for("the journal replayed", Duration::from_secs(20), || {
        hub.public_board(1).is_some()
    })
    .await;
    // Nothing of the start is lost: the game is rebuilt whole.
    wait_for("the game rebuilt", Duration::from_secs(20), || {
        ucis(&hub, 1) == want
    })
    .await;
    d.shutdown().await;
}
