//! A real `eboard-bridge run` for the HTTP tests: boards on ports that are not
//! plugged in (the daemon waits for them, as in a hall before the round), whose
//! games come from captures left in the journal, which the daemon replays at
//! start exactly as after a crash. So the games, alerts and operator commands
//! the tests see went through the same code as a live run.

#![allow(dead_code)] // each test file uses a part

use crate::child_guard::ChildGuard;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::load_game;
use eboard_bridge::daemon::journal::port_key;
use eboard_bridge::session::capture::{CaptureHeader, CaptureWriter, Chunk, Direction, PortMode};
use eboard_bridge::sim::{run_line, SimOptions};
use eboard_protocols::dgt::{ClockCommand, Command as BoardCommand, Hms};
use eboard_protocols::family::{DriverSetup, VirtualSpec};
use eboard_protocols::hand::{self, HandConfig, PhysicalAction, PhysicalBoard, TimedAction};
use shakmaty::{Color, Piece, Position, Role, Square};

pub const TOKEN: &str = "operator-test-token";

/// Plies of Molinari–Bordais, 1979, played: 1. e4 c5 2. c4 Nc6 3. Ne2 Nf6
/// 4. Nbc3 Nb4, White to move, the knight on e2 blocks the queen's diagonal.
pub const PLIES: usize = 8;

/// What happens on the board after the eight plies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    Nothing,
    /// White's queen jumps over the knight (d1-h5) and White presses the
    /// clock: an illegal move completed (Article 7.5.1).
    IllegalMove,
    /// Black's knight goes back from b4 to c6: ply 8 is withdrawn.
    KnightBack,
    /// The clock is paused (set to 1:25:00 / 1:28:00 and stopped, as an
    /// arbiter stops it) with White to move.
    ClockPaused,
}

/// The DGT traffic of those eight plies on a virtual board with a clock, then
/// what `then` says.
pub fn game_capture(then: Then) -> Vec<Chunk> {
    game_capture_on(then, VirtualSpec::default().serial)
}

/// [`game_capture`] on a board with serial number `serial` (boards of one
/// hall have different ones).
pub fn game_capture_on(then: Then, serial: u16) -> Vec<Chunk> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn");
    let mut game = load_game(&file, 1).unwrap();
    game.moves.truncate(PLIES);
    let opts = SimOptions::default();
    let hand_cfg = HandConfig {
        seed: 7,
        ..opts.hand.clone()
    };
    let script = hand::play(&game.start, &game.moves, &hand_cfg);
    let pieces = PhysicalBoard::from_board(game.start.board(), false);
    let family = &eboard_protocols::dgt::FAMILY;
    let mut board = (family.virtual_device)(
        &VirtualSpec {
            seed: 7,
            serial,
            ..opts.board.clone()
        },
        vec![pieces],
    );
    let mut driver = (family.driver)(&DriverSetup::default());
    let mut actions: Vec<TimedAction> = script.actions.clone();
    let mut end = actions.last().map_or(opts.host_start_ms, |a| a.t_ms);
    if then == Then::KnightBack {
        let knight = Piece {
            color: Color::Black,
            role: Role::Knight,
        };
        for (dt, action) in [
            (
                2_000,
                PhysicalAction::Lift {
                    square: Square::B4,
                    piece: knight,
                },
            ),
            (
                2_400,
                PhysicalAction::Place {
                    square: Square::C6,
                    piece: knight,
                },
            ),
        ] {
            actions.push(TimedAction {
                t_ms: end + dt,
                action,
            });
        }
        end += 2_400;
    }
    if then == Then::IllegalMove {
        // White's clock button is the one pressed after White's first move.
        let white = script
            .actions
            .iter()
            .find_map(|a| match a.action {
                PhysicalAction::PressClock(side) if a.t_ms == script.made_at[0].1 => Some(side),
                _ => None,
            })
            .expect("White pressed after the first move");
        let queen = Piece {
            color: Color::White,
            role: Role::Queen,
        };
        for (dt, action) in [
            (
                2_000,
                PhysicalAction::Lift {
                    square: Square::D1,
                    piece: queen,
                },
            ),
            (
                2_400,
                PhysicalAction::Place {
                    square: Square::H5,
                    piece: queen,
                },
            ),
            (3_000, PhysicalAction::PressClock(white)),
        ] {
            actions.push(TimedAction {
                t_ms: end + dt,
                action,
            });
        }
        end += 3_000;
    }
    // The daemon's driver is the host for the game; what follows it (an
    // arbiter's clock command) is the board's alone, as in the recording.
    let timed: Vec<_> = actions.iter().map(|a| (a.t_ms, 0, a.action)).collect();
    let tail = end - timed.last().map_or(end, |a| a.0);
    let mut chunks = run_line(
        board.as_mut(),
        driver.as_mut(),
        &timed,
        opts.host_start_ms,
        tail,
    );
    if then == Then::ClockPaused {
        let hms = |hours, minutes| Hms {
            hours,
            minutes,
            seconds: 0,
        };
        // dgt.md §2.2: flags 0x01 left (White's here) to move, 0x04 paused.
        let mut bytes = Vec::new();
        BoardCommand::Clock(ClockCommand::SetAndRun {
            left: hms(1, 25),
            right: hms(1, 28),
            flags: 0x01 | 0x04,
        })
        .encode(&mut bytes);
        board.receive_host(end + 2_000, &bytes);
        end += 2_000;
    }
    board.advance(end + 8_000);
    for (t_ms, bytes) in board.take_output() {
        chunks.push(Chunk {
            t_ms,
            dir: Direction::In,
            bytes,
        });
    }
    chunks.sort_by_key(|c| c.t_ms);
    chunks
}

/// Leaves `chunks` in the journal as an earlier run's capture of `port`.
pub fn leave_capture(data: &Path, port: &Path, board: u32, chunks: &[Chunk]) {
    let dir = data.join("journal/captures").join(port_key(port));
    std::fs::create_dir_all(&dir).unwrap();
    // An hour ago: well before the run the test starts.
    let started = eboard_bridge::daemon::journal::unix_ms_now() - 3_600_000;
    let mut header = CaptureHeader::new("dgt");
    header.port = Some(port.display().to_string());
    header.board = Some(board.to_string());
    header.mode = Some(PortMode::Single);
    header
        .extra
        .insert("started_unix_ms".into(), started.into());
    let file = std::fs::File::create(dir.join(format!("{started:013}.jsonl"))).unwrap();
    let mut w = CaptureWriter::new(std::io::BufWriter::new(file), &header).unwrap();
    for c in chunks {
        w.write_chunk(c).unwrap();
    }
    w.flush().unwrap();
}

/// The configuration: boards 1..=n on ports `dir/port-N` (not plugged in),
/// the token, round 1 with `pairings` (TOML `[[pairing]]` tables).
pub fn write_config(dir: &Path, boards: u32, pairings: &str) -> PathBuf {
    let mut text = format!(
        "[storage]\ndata_dir = {:?}\n[discovery]\nenabled = false\n[http]\narbiter_token = {TOKEN:?}\n\
         [tournament]\nname = \"Operator Open\"\ncurrent_round = 1\n",
        dir.join("data")
    );
    for n in 1..=boards {
        text.push_str(&format!(
            "[[board]]\nport = {:?}\nprotocol = \"dgt\"\nnumber = {n}\n",
            port(dir, n)
        ));
    }
    text.push_str(pairings);
    let path = dir.join("eboard-bridge.toml");
    std::fs::write(&path, text).unwrap();
    path
}

pub fn port(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("port-{n}"))
}

/// A running daemon and its HTTP address.
pub struct Daemon {
    child: ChildGuard,
    pub base: String,
    /// `http://address` of the LiveChess-compatible API, when it listens.
    pub ebapi: Option<String>,
    pub log: PathBuf,
}

impl Daemon {
    /// The daemon with its LiveChess-compatible API on a port of its own
    /// ([`Daemon::ebapi`]).
    pub fn start(config: &Path) -> Daemon {
        Daemon::start_with_ebapi(config, "127.0.0.1:0")
    }

    /// The daemon with its LiveChess-compatible API on `ebapi` (an address,
    /// or `off`).
    pub fn start_with_ebapi(config: &Path, ebapi: &str) -> Daemon {
        Daemon::start_env(config, ebapi, &[])
    }

    /// [`Daemon::start_with_ebapi`] with more environment variables (`env`).
    pub fn start_env(config: &Path, ebapi: &str, env: &[(&str, &str)]) -> Daemon {
        let log = config.with_file_name(format!(
            "daemon-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let out = std::fs::File::create(&log).unwrap();
        let child = ChildGuard::new(
            Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
                .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
                .env("EBOARD_BRIDGE_EBAPI_LISTEN", ebapi)
                .env("RUST_LOG", "info")
                .envs(env.iter().copied())
                .arg("run")
                .arg("--config")
                .arg(config)
                .stdout(Stdio::null())
                .stderr(out)
                .spawn()
                .unwrap(),
        );
        // Long enough for a daemon with a hundred boards on a loaded machine.
        let deadline = Instant::now() + Duration::from_secs(60);
        let base = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // Serving starts before the journal is replayed; "running" comes
            // once every board is rebuilt.
            if text.contains("running") {
                if let Some(i) = text.find("feeds on http://") {
                    let rest = &text[i + "feeds on ".len()..];
                    let end = rest.find("/games.pgn").unwrap();
                    break rest[..end].to_string();
                }
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let ebapi = text.find("LiveChess-compatible API on http://").map(|i| {
            let rest = &text[i + "LiveChess-compatible API on ".len()..];
            rest[..rest.find("/api/v1.0").unwrap()].to_string()
        });
        Daemon {
            child,
            base,
            ebapi,
            log,
        }
    }

    /// SIGTERM, as systemd stops it; waits for a clean exit.
    pub fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-s", "TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(
            exit.success(),
            "{exit}: {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// SIGKILL: no goodbye, nothing flushed.
    pub fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A failed test must not leave its daemon running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
