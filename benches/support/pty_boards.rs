//! Boards on pseudo-terminals driven by the bench itself: a `VirtualBoard`
//! on the master side of each pty plays a real game with the hand model
//! (thinking compressed 400 times, hands at human speed), and the bench
//! records when each press's clock frame and each field update was written,
//! so a move's latency can be measured from its evidence to wherever the
//! move is received (`daemon_latency`: the hub in-process; `mqtt_venue`: an
//! aggregator's event stream, several daemons and a broker away).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eboard_protocols::dgt::virtual_board::{VirtualBoard, VirtualBoardConfig};
use eboard_protocols::hand::{self, HandConfig, PhysicalAction, PhysicalBoard, TimedAction};
use shakmaty::Position;

/// DGT_MSG_BWTIME with its top bit: the clock frame a press produces.
const CLOCK_FRAME_ID: u8 = 0x8d;
/// DGT_MSG_FIELD_UPDATE with its top bit: one square changed.
const FIELD_FRAME_ID: u8 = 0x8e;

/// When the evidence for a board's next move was written to its port.
#[derive(Clone, Copy, Default)]
pub struct Evidence {
    /// The last byte of the last press's clock frame.
    press: Option<Instant>,
    /// The last byte of the last field update.
    field: Option<Instant>,
}

/// A verified move's latencies, measured when it was received.
pub struct MoveLatency {
    /// From the press's clock frame.
    pub from_press: Duration,
    /// From the last frame the move needed: the press, or a field update
    /// after it.
    pub from_evidence: Duration,
    /// The board reported the completing square after the press.
    pub completed_after_press: bool,
}

impl Evidence {
    /// The latencies of a move received `at`, measured from the board's last
    /// press; `None` when no press came since the last move (verified by the
    /// opponent's next move, or a hold). Each press counts for one move only.
    pub fn take_for_move(&mut self, at: Instant) -> Option<MoveLatency> {
        let press = self.press.take()?;
        let after = self.field.filter(|&f| f > press);
        Some(MoveLatency {
            from_press: at.saturating_duration_since(press),
            from_evidence: at.saturating_duration_since(after.unwrap_or(press)),
            completed_after_press: after.is_some(),
        })
    }
}

pub struct Board {
    master: File,
    _slave: OwnedFd,
    vb: VirtualBoard,
    script: Vec<TimedAction>,
    next: usize,
    /// Script time 0: the host's first byte.
    base: Option<u64>,
    out: std::collections::VecDeque<(u64, Vec<u8>)>,
    /// A press happened; its clock frame is the next one written.
    press_pending: bool,
}

pub fn open_board(game: &eboard_bridge::sim::games::Game, seed: u64) -> (Board, PathBuf) {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let mut t = tcgetattr(&pty.slave).unwrap();
    cfmakeraw(&mut t);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &t).unwrap();
    let path = nix::unistd::ttyname(&pty.slave).unwrap();
    {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let fd = pty.master.as_raw_fd();
        let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL).unwrap());
        fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).unwrap();
    }
    let cfg = HandConfig {
        seed,
        speed: 1.0 / 400.0,
        hand_speed: 1.0,
        start_ms: 2_000,
        ..HandConfig::default()
    };
    let script = hand::play(&game.start, &game.moves, &cfg).actions;
    let vb = VirtualBoard::new(
        VirtualBoardConfig {
            seed,
            ..VirtualBoardConfig::default()
        },
        PhysicalBoard::from_board(game.start.board(), false),
    );
    (
        Board {
            master: File::from(pty.master),
            _slave: pty.slave,
            vb,
            script,
            next: 0,
            base: None,
            out: Default::default(),
            press_pending: false,
        },
        path,
    )
}

/// Drives every board until `stop`; records when each press's frame was written.
pub fn drive(mut boards: Vec<Board>, evidence: Arc<Mutex<Vec<Evidence>>>, stop: Arc<AtomicBool>) {
    let epoch = Instant::now();
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        let now = epoch.elapsed().as_millis() as u64;
        for (i, b) in boards.iter_mut().enumerate() {
            loop {
                match b.master.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        b.vb.receive_host(now, &buf[..n]);
                        b.base.get_or_insert(now);
                    }
                    _ => break,
                }
            }
            if let Some(base) = b.base {
                while let Some(a) = b.script.get(b.next) {
                    if base + a.t_ms > now {
                        break;
                    }
                    b.vb.apply(now, a.action).expect("a possible action");
                    if matches!(a.action, PhysicalAction::PressClock(_)) {
                        b.press_pending = true;
                    }
                    b.next += 1;
                }
            }
            b.vb.advance(now);
            b.out.extend(b.vb.take_output());
            while let Some((t, bytes)) = b.out.front_mut() {
                if *t > now {
                    break;
                }
                match b.master.write(bytes) {
                    Ok(n) if n == bytes.len() => {
                        // Each queued entry is one whole message.
                        if b.press_pending && bytes[0] == CLOCK_FRAME_ID {
                            b.press_pending = false;
                            evidence.lock().unwrap()[i].press = Some(Instant::now());
                        } else if bytes[0] == FIELD_FRAME_ID {
                            evidence.lock().unwrap()[i].field = Some(Instant::now());
                        }
                        b.out.pop_front();
                    }
                    Ok(n) => {
                        bytes.drain(..n);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// The `p` quantile (0..=1) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// CPU seconds (user + system) in a `/proc/…/stat` file (a process's or a
/// thread's); 0 when it is gone.
pub fn stat_cpu_seconds(stat: &std::path::Path) -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    let Ok(stat) = std::fs::read_to_string(stat) else {
        return 0.0;
    };
    // Fields after the ")" that ends the command name: utime is the 12th, stime the 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / tick
}
