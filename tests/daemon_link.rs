//! Link supervision on a bare pseudo-terminal: a board that stops answering
//! without closing the line (power cut behind a USB hub, a hung board) is found
//! by the clock probes and reported down, and the supervisor keeps reopening.

use std::time::{Duration, Instant};

use eboard_bridge::daemon::device::{raw_pty, run_link, supervise, LinkError, LinkEvent};
use eboard_bridge::session::capture::Direction;
use eboard_protocols::dgt::driver::startup as dgt_startup;
use eboard_protocols::family::{DriverSetup, DriverTimings, PortMode};
use tokio::sync::mpsc;

/// A pty nobody answers on: the slave path, and the master kept open (so the
/// line does not close) but never written.
fn silent_pty() -> (
    std::path::PathBuf,
    std::os::fd::OwnedFd,
    std::os::fd::OwnedFd,
) {
    raw_pty().unwrap()
}

const FAST: DriverTimings = DriverTimings {
    probe_ms: 200,
    silence_ms: 700,
    poll_ms: 100,
};

fn dgt() -> DriverSetup {
    DriverSetup {
        mode: PortMode::Single,
        timings: FAST,
    }
}

#[tokio::test]
async fn a_silent_board_is_probed_then_declared_gone() {
    let (path, _master, _slave) = silent_pty();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let started = Instant::now();
    let (_commands_tx, mut commands) = mpsc::channel(4);
    let family = &eboard_protocols::dgt::FAMILY;
    let result = run_link(&path, family, &dgt(), Instant::now(), tx, &mut commands).await;
    let took = started.elapsed();
    assert!(matches!(result, Err(LinkError::Board { .. })), "{result:?}");
    let silence = Duration::from_millis(FAST.silence_ms);
    assert!(took >= silence && took < silence * 3, "{took:?}");
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        match e {
            LinkEvent::Chunk(c) => {
                assert_eq!(c.dir, Direction::Out, "the pty said nothing");
                out.push(c.bytes);
            }
            LinkEvent::Up => panic!("a silent board is never up"),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(out[0], dgt_startup());
    assert!(
        out[1..].iter().filter(|b| b.as_slice() == [0x41]).count() >= 2,
        "clock probes while quiet: {out:?}"
    );
    let msg = result.unwrap_err().to_string();
    assert!(msg.contains("sent nothing"), "{msg}");
}

#[tokio::test]
async fn the_supervisor_reports_down_and_reopens() {
    let (path, _master, _slave) = silent_pty();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_commands_tx, commands) = mpsc::channel(4);
    let task = tokio::spawn(supervise(
        path,
        &eboard_protocols::dgt::FAMILY,
        dgt(),
        Instant::now(),
        (7, tx),
        commands,
    ));
    let mut downs = 0;
    let mut startups = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while downs < 2 && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some((port, _))) if port != 7 => panic!("events come tagged with their port"),
            Ok(Some((_, LinkEvent::Down(reason)))) => {
                assert!(reason.contains("sent nothing"), "{reason}");
                downs += 1;
            }
            Ok(Some((_, LinkEvent::Chunk(c)))) if c.bytes == dgt_startup() => startups += 1,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    assert_eq!(downs, 2, "reported down twice");
    assert!(startups >= 2, "reopened and started again");
    drop(rx);
    // With nobody listening, the supervisor ends by itself.
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the supervisor stops when the daemon does")
        .unwrap();
}
