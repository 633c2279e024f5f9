//! The daemon in-process, against virtual boards on ptys: a board unplugged
//! mid-game and plugged back (a new pty at the same path) continues with no
//! verified move lost or published twice; several boards behind one bus port
//! are all followed.

mod daemon_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use daemon_common::*;
use eboard_bridge::cli::emulate::{load_game, serve_bus_pty, serve_pty, EmulateOptions};
use eboard_bridge::daemon::config::{BoardConfig, Protocol};
use eboard_bridge::daemon::hub::ArbiterNotice;
use eboard_bridge::sim::games::Game;

fn game() -> Game {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    load_game(&file, 1).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_unplugged_mid_game_continues_after_replug_without_loss_or_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let link = dir.path().join("dgt-board");
    let opts = |seed| EmulateOptions {
        seed,
        speed: 400.0,
        hand_speed: 3.0,
        start_after_host: Some(1_500),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let first = serve_pty(&game, &opts(21)).unwrap();
    let d = start(config(&dir.path().join("data"), vec![single(&link, 1)]));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    let mut arbiter = hub.subscribe_arbiter();
    let mut verified = Vec::new();
    wait_for("three verified moves", Duration::from_secs(30), || {
        hub.verified_plies(1) >= 3
    })
    .await;

    // Unplug: the pty disappears.
    first.stop().unwrap();
    wait_for(
        "the board reported offline",
        Duration::from_secs(10),
        || !hub.public_board(1).unwrap().online,
    )
    .await;
    let done = hub.verified_plies(1);
    assert!(done < want.len(), "unplugged mid-game, after {done} plies");
    assert!(hub.arbiter_snapshot()[0]
        .open
        .iter()
        .any(|e| matches!(e.notice, ArbiterNotice::BoardOffline { .. })));

    // Replug: a board at the same path, standing where the game stood.
    let _second = serve_pty(&resumed(&game, done), &opts(22)).unwrap();
    wait_for("the whole game", Duration::from_secs(40), || {
        ucis(&hub, 1) == want
    })
    .await;
    drain_verified(&mut public, &mut verified);
    let plies: Vec<u32> = verified.iter().map(|(_, p, _)| *p).collect();
    assert_eq!(
        plies,
        (1..=want.len() as u32).collect::<Vec<_>>(),
        "each ply verified once, in order"
    );
    assert!(hub.public_board(1).unwrap().online);
    let mut notices = Vec::new();
    while let Ok(e) = arbiter.try_recv() {
        notices.push(e.notice);
    }
    let offline = notices
        .iter()
        .position(|n| matches!(n, ArbiterNotice::BoardOffline { .. }))
        .expect("an offline notice");
    assert!(
        notices[offline..]
            .iter()
            .any(|n| matches!(n, ArbiterNotice::BoardOnline { .. })),
        "{notices:?}"
    );
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_behind_one_bus_port_are_all_followed() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let link = dir.path().join("dgt-bus");
    let opts = EmulateOptions {
        seed: 31,
        speed: 400.0,
        // Human hands, as the issue asks of the pty tests; faster hands with
        // thinking compressed 400 times answer a capture within one scan,
        // which no sensor sees (see BENCHMARKS.md, daemon tests).
        hand_speed: 1.0,
        // Discovery takes two ping rounds of 1.3 s before the first dump; the
        // players sit down after that.
        start_after_host: Some(4_500),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    // Serial numbers 01025, 01026, 01027 (the emulator counts up from 1025).
    let _bus = serve_bus_pty(&[game.clone(), game.clone(), game.clone()], &opts).unwrap();
    let bus_board = |serial: &str, number| BoardConfig {
        port: link.clone(),
        protocol: Protocol::DGT_BUS,
        bus: false,
        number: Some(number),
        serial: Some(serial.into()),
        leds: None,
    };
    // The third board is not configured: it is numbered by its address.
    let d = start(config(
        &dir.path().join("data"),
        vec![bus_board("01025", 5), bus_board("01026", 6)],
    ));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    let mut verified = Vec::new();
    let boards: Vec<(u32, Vec<String>)> = [5, 6, 1027].map(|n| (n, want.clone())).into();
    wait_games(
        &hub,
        &boards,
        Duration::from_secs(50),
        &mut public,
        &mut verified,
    )
    .await;
    for board in [5, 6, 1027] {
        let plies: Vec<u32> = verified
            .iter()
            .filter(|(b, _, _)| *b == board)
            .map(|(_, p, _)| *p)
            .collect();
        assert_eq!(plies, (1..=want.len() as u32).collect::<Vec<_>>());
        assert!(hub.public_board(board).unwrap().online);
    }
    d.shutdown().await;
    // One capture for the port, recorded in bus mode.
    let captures: Vec<_> = std::fs::read_dir(dir.path().join("data/journal/captures"))
        .unwrap()
        .collect();
    assert_eq!(captures.len(), 1);
}

/// A line between the daemon and a bus of virtual boards that garbles the
/// checksum of the first `garble` change reports that carry changes, as line
/// noise would. The daemon opens `daemon_link`.
fn noisy_line(board_side: &Path, daemon_link: &Path, garble: usize) {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    use std::io::{Read, Write};
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut t = tcgetattr(&pty.slave).unwrap();
    cfmakeraw(&mut t);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &t).unwrap();
    let daemon_side = nix::unistd::ttyname(&pty.slave).unwrap();
    std::os::unix::fs::symlink(&daemon_side, daemon_link).unwrap();
    let mut host = std::fs::File::from(pty.master);
    let mut host_out = host.try_clone().unwrap();
    let mut boards = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(board_side)
        .unwrap();
    let mut boards_in = boards.try_clone().unwrap();
    // The slave stays open here so the line never reads as closed.
    std::mem::forget(pty.slave);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok(n) = host.read(&mut buf) {
            if n == 0 || boards.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let changes_id = eboard_protocols::dgt::BusReply::Changes(Vec::new()).id();
        let mut pending: Vec<u8> = Vec::new();
        let mut left = garble;
        let mut buf = [0u8; 512];
        while let Ok(n) = boards_in.read(&mut buf) {
            if n == 0 {
                break;
            }
            pending.extend_from_slice(&buf[..n]);
            // Pass whole frames on (id with bit 7, 14-bit length from id to checksum).
            loop {
                if pending.len() < 3 {
                    break;
                }
                let len = (usize::from(pending[1]) << 7) | usize::from(pending[2]);
                if pending[0] & 0x80 == 0 || len < 6 {
                    let b = pending.remove(0);
                    let _ = host_out.write_all(&[b]);
                    continue;
                }
                if pending.len() < len {
                    break;
                }
                let mut frame: Vec<u8> = pending.drain(..len).collect();
                if frame[0] == changes_id && len > 6 && left > 0 {
                    left -= 1;
                    frame[len - 1] ^= 0x01;
                }
                if host_out.write_all(&frame).is_err() {
                    return;
                }
            }
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbled_change_reports_are_asked_again_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let opts = EmulateOptions {
        seed: 41,
        speed: 400.0,
        hand_speed: 3.0,
        start_after_host: Some(4_500),
        ..EmulateOptions::default()
    };
    let bus = serve_bus_pty(&[game.clone(), game.clone()], &opts).unwrap();
    let link = dir.path().join("noisy-bus");
    noisy_line(bus.path(), &link, 4);
    let d = start(config(
        &dir.path().join("data"),
        vec![BoardConfig {
            port: link.clone(),
            protocol: Protocol::DGT_BUS,
            bus: false,
            number: None,
            serial: None,
            leds: None,
        }],
    ));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    wait_for(
        "both games through the noise",
        Duration::from_secs(50),
        || ucis(&hub, 1025) == want && ucis(&hub, 1026) == want,
    )
    .await;
    let mut verified = Vec::new();
    drain_verified(&mut public, &mut verified);
    for board in [1025, 1026] {
        let plies: Vec<u32> = verified
            .iter()
            .filter(|(b, _, _)| *b == board)
            .map(|(_, p, _)| *p)
            .collect();
        assert_eq!(plies, (1..=want.len() as u32).collect::<Vec<_>>());
    }
    d.shutdown().await;
    // The journal shows the daemon asked again (BUS_REPEAT_CHANGES, 0x84).
    let port_dir = std::fs::read_dir(dir.path().join("data/journal/captures"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let capture = std::fs::read_dir(port_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(capture).unwrap();
    let out: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"dir\":\"out\""))
        .collect();
    let first_repeat = out
        .iter()
        .position(|l| l.contains("\"hex\":\"84"))
        .expect("REPEAT_CHANGES sent");
    let repeats = out.iter().filter(|l| l.contains("\"hex\":\"84")).count();
    assert!(repeats >= 3, "REPEAT_CHANGES sent {repeats} times");
    // Four garbled reports in a row outlast the repeats: a full dump resynchronises.
    assert!(
        out[first_repeat..]
            .iter()
            .any(|l| l.contains("\"hex\":\"82")),
        "BUS_SEND_BRD after the repeats"
    );
}

/// How much board time the current run has read on the one journaled port:
/// from its first `in` chunk to its last, from the newest capture file (the
/// journal writes its buffers out within a loop tick or two).
fn board_time_read(data: &Path) -> Option<u64> {
    let port_dir = std::fs::read_dir(data.join("journal/captures"))
        .ok()?
        .next()?
        .ok()?
        .path();
    let newest = std::fs::read_dir(port_dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .max()?;
    let text = std::fs::read_to_string(newest).ok()?;
    let times: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["dir"] == "in")
        .filter_map(|v| v["t_ms"].as_u64())
        .collect();
    Some(times.last()? - times.first()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_rebuilds_the_game_from_the_journal_and_republishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let game = game();
    let want = game.uci_moves();
    let link = dir.path().join("dgt-board");
    let data = dir.path().join("data");
    let opts = |seed| EmulateOptions {
        seed,
        speed: 1000.0,
        hand_speed: 3.0,
        start_after_host: Some(1_500),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let boards = || vec![single(&link, 4)];
    let first = serve_pty(&game, &opts(51)).unwrap();
    let d = start(config(&data, boards()));
    let hub = d.hub.clone();
    wait_for("the whole game", Duration::from_secs(30), || {
        ucis(&hub, 4) == want
    })
    .await;
    d.shutdown().await;
    first.stop().unwrap();

    // Second run, board absent: the game is there from the journal alone.
    let d = start(config(&data, boards()));
    let hub = d.hub.clone();
    let mut public = hub.subscribe_public();
    wait_for("the rebuilt game", Duration::from_secs(10), || {
        ucis(&hub, 4) == want
    })
    .await;
    assert!(!hub.public_board(4).unwrap().online);

    // The board comes back showing the final position: nothing new happens.
    let _again = serve_pty(&resumed(&game, want.len()), &opts(52)).unwrap();
    wait_for("the board back online", Duration::from_secs(10), || {
        hub.public_board(4).unwrap().online
    })
    .await;
    // The tracker's time is the board's: wait until the daemon has read the
    // board for longer than any hold that could turn its picture into a move
    // or a retraction (a still picture counts as certain after 2 s).
    wait_for(
        "2.5 s of the returned board read",
        Duration::from_secs(20),
        || board_time_read(&data).is_some_and(|ms| ms >= 2_500),
    )
    .await;
    let mut verified = Vec::new();
    drain_verified(&mut public, &mut verified);
    assert!(verified.is_empty(), "republished {verified:?}");
    assert_eq!(ucis(&hub, 4), want);
    d.shutdown().await;
}
