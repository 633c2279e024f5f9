//! `eboard-bridge demo`: virtual DGT boards on pseudo-terminals playing real games,
//! read back through the same device layer, session and tracker the daemon uses.
//!
//! Nothing is short-circuited: each board is the virtual DGT board on its own pty,
//! the host side opens the pty as a serial port, sends the DGT start-up sequence and
//! decodes what comes back. So what the demo prints is what the daemon would publish.
//! The games are public-domain games embedded in the binary, so the demo needs no
//! files on a fresh machine.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use eboard_protocols::dgt::Mode;
use tokio::sync::mpsc;

use crate::capture::{CaptureHeader, CaptureWriter, Chunk};
use crate::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use crate::events::{GameEvent, Stamped, TrackerEvent};
use crate::games::{load_pgn, Game};
use crate::pgn::{GameInfo, GameRecorder};
use crate::session::DgtSession;
use crate::tracker::TrackerConfig;

/// The embedded games (public domain, from the GNU Chess opening book).
const DEMO_GAMES: &str = include_str!("../assets/demo-games.pgn");

/// How the demo runs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Number of virtual boards.
    pub boards: usize,
    /// Thinking time is divided by this; hands move at human speed whatever it is.
    pub speed: f64,
    /// Seed of the hand model (each board adds its number).
    pub seed: u64,
    /// Stop after this long even if games are still running.
    pub max_duration: Option<Duration>,
    /// Record every board's traffic as a capture (`board-N.jsonl`) in this folder,
    /// so any run can be replayed with `eboard-bridge replay`.
    pub record: Option<PathBuf>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            boards: 8,
            speed: 30.0,
            seed: 1,
            max_duration: None,
            record: None,
        }
    }
}

/// One board of the demo: its emulator and what was read back from it.
struct DemoBoard {
    number: u32,
    game: Game,
    emulator: EmulatorHandle,
    recorder: GameRecorder,
    verified: usize,
    /// The source game's moves in UCI, to check every verified move against.
    expected: Vec<String>,
    /// Verified moves that differ from the source (must stay zero).
    mismatches: usize,
    capture: Option<CaptureWriter<BufWriter<File>>>,
}

/// Entry point of `eboard-bridge demo`.
pub fn run_cli(opts: &DemoOptions) -> anyhow::Result<ExitCode> {
    if opts.boards == 0 {
        anyhow::bail!("--boards must be at least 1");
    }
    if !(opts.speed.is_finite() && opts.speed > 0.0) {
        anyhow::bail!("--speed must be a positive number (e.g. 30 plays thirty times faster than humans think)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let faithful = runtime.block_on(run(opts))?;
    Ok(if faithful {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs the demo; returns whether every move read back equals the source game
/// and every board was heard from. Games cut short by `max_duration` or Ctrl-C
/// are not failures: what was read so far must still be right.
async fn run(opts: &DemoOptions) -> anyhow::Result<bool> {
    let games: Vec<Game> = load_pgn(DEMO_GAMES)
        .context("the embedded demo games do not parse")?
        .into_iter()
        .filter(|g| !g.moves.is_empty())
        .collect();
    anyhow::ensure!(!games.is_empty(), "the embedded demo games hold no moves");
    if let Some(dir) = &opts.record {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the capture folder {}", dir.display()))?;
    }
    let epoch = Instant::now();
    let (tx, mut rx) = mpsc::channel::<(u32, Chunk)>(1024);

    let mut boards: BTreeMap<u32, DemoBoard> = BTreeMap::new();
    for i in 0..opts.boards {
        let number = i as u32 + 1;
        let game = games[i % games.len()].clone();
        // Vary the set-up as a real hall does: every fourth board is turned round,
        // every third has White's clock on the right. The tracker must find both.
        let emulator_opts = EmulateOptions {
            seed: opts.seed.wrapping_add(i as u64),
            speed: opts.speed,
            rotated: i % 4 == 3,
            clock_right: i % 3 == 2,
            ..EmulateOptions::default()
        };
        let emulator = serve_pty(&game, &emulator_opts)
            .with_context(|| format!("cannot start virtual board {number}"))?;
        let path = emulator.path().to_owned();
        println!(
            "board {number}: virtual DGT board on {} ({} - {}{}{})",
            path.display(),
            game.header("White").unwrap_or("?"),
            game.header("Black").unwrap_or("?"),
            if emulator_opts.rotated {
                ", board turned round"
            } else {
                ""
            },
            if emulator_opts.clock_right {
                ", White's clock on the right"
            } else {
                ""
            },
        );
        let info = GameInfo {
            event: Some("eboard-bridge demo".into()),
            site: Some("virtual boards".into()),
            round: Some("1".into()),
            board: Some(number),
            white: game.header("White").map(str::to_owned),
            black: game.header("Black").map(str::to_owned),
            ..GameInfo::default()
        };
        let capture = match &opts.record {
            Some(dir) => Some(open_capture(dir, number, &path)?),
            None => None,
        };
        boards.insert(
            number,
            DemoBoard {
                number,
                expected: game.uci_moves(),
                game,
                emulator,
                recorder: GameRecorder::new(info),
                verified: 0,
                mismatches: 0,
                capture,
            },
        );
        spawn_link(number, path, epoch, tx.clone());
    }
    drop(tx);

    let mut sessions: BTreeMap<u32, DgtSession> = boards
        .keys()
        .map(|&n| {
            (
                n,
                DgtSession::new(n, Mode::Single, TrackerConfig::default()),
            )
        })
        .collect();
    let mut events = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let deadline = opts.max_duration.map(|d| epoch + d);

    loop {
        tokio::select! {
            chunk = rx.recv() => {
                let Some((number, chunk)) = chunk else { break };
                if let Some(session) = sessions.get_mut(&number) {
                    session.feed(&chunk, &mut events);
                }
                if let Some(writer) = boards.get_mut(&number).and_then(|b| b.capture.as_mut()) {
                    writer.write_chunk(&chunk).context("cannot write the capture")?;
                }
            }
            _ = tick.tick() => {
                let now = epoch.elapsed().as_millis() as u64;
                for session in sessions.values_mut() {
                    session.tick(now, &mut events);
                }
            }
            _ = tokio::signal::ctrl_c() => {
                println!("interrupted: printing the games as far as they went");
                break;
            }
        }
        for stamped in events.drain(..) {
            if let Some(board) = boards.get_mut(&stamped.board) {
                show(board, &stamped);
            }
        }
        let done = boards.values().all(|b| {
            b.verified >= b.game.moves.len() || (b.emulator.game_over() && b.emulator.is_finished())
        });
        if done || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }

    println!();
    let mut faithful = true;
    for mut board in boards.into_values() {
        if board.mismatches > 0 || board.verified == 0 {
            faithful = false;
            eprintln!(
                "board {}: {} verified moves, {} of them different from the source game",
                board.number, board.verified, board.mismatches
            );
        }
        if let Some(writer) = board.capture.as_mut() {
            writer.flush().context("cannot write the capture")?;
        }
        for record in board.recorder.finish() {
            println!("{}", record.to_pgn());
        }
        if let Err(e) = board.emulator.stop() {
            eprintln!("board {}: the virtual board ended badly: {e}", board.number);
        }
    }
    Ok(faithful)
}

/// Opens `board-N.jsonl` in `dir` for board `number`'s traffic.
fn open_capture(
    dir: &std::path::Path,
    number: u32,
    port: &std::path::Path,
) -> anyhow::Result<CaptureWriter<BufWriter<File>>> {
    let path = dir.join(format!("board-{number}.jsonl"));
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut header = CaptureHeader::new("dgt");
    header.board = Some(number.to_string());
    header.port = Some(port.display().to_string());
    CaptureWriter::new(BufWriter::new(file), &header)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Reads one board's pty as the daemon reads a port, reopening on failure.
fn spawn_link(
    number: u32,
    path: std::path::PathBuf,
    epoch: Instant,
    tx: mpsc::Sender<(u32, Chunk)>,
) {
    tokio::spawn(async move {
        let (chunk_tx, mut chunk_rx) = mpsc::channel::<Chunk>(256);
        let forward = {
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(chunk) = chunk_rx.recv().await {
                    if tx.send((number, chunk)).await.is_err() {
                        break;
                    }
                }
            })
        };
        if let Err(e) = crate::device::run_dgt_link(&path, epoch, chunk_tx).await {
            eprintln!("board {number}: {e}");
        }
        let _ = forward.await;
    });
}

/// Prints one event the way an operator watching the demo wants it, and keeps the record.
fn show(board: &mut DemoBoard, stamped: &Stamped) {
    let n = board.number;
    let t = stamped.t_ms as f64 / 1000.0;
    match &stamped.event {
        TrackerEvent::Game(event) => {
            if let Err(e) = board.recorder.push(event) {
                eprintln!("board {n}: record error: {e}");
            }
            match event {
                GameEvent::GameStart { fen, rotated, .. } => {
                    println!(
                        "[{t:7.1}s] board {n}: game starts from {fen}{}",
                        if *rotated {
                            " (board turned round)"
                        } else {
                            ""
                        }
                    );
                }
                GameEvent::Move(m) if m.verified => {
                    board.verified = board.verified.max(m.ply as usize);
                    let expected = board.expected.get(m.ply as usize - 1);
                    if expected != Some(&m.uci) {
                        board.mismatches += 1;
                        println!(
                            "[{t:7.1}s] board {n}: MISMATCH at ply {}: read {} but the game has {}",
                            m.ply,
                            m.uci,
                            expected.map_or("no move", String::as_str)
                        );
                    }
                    let number = m.ply.div_ceil(2);
                    let dots = if m.ply % 2 == 1 { "." } else { "..." };
                    let clock = m
                        .clock_ms
                        .map(|c| format!("  [{}]", crate::pgn::hms(c)))
                        .unwrap_or_default();
                    println!("[{t:7.1}s] board {n}: {number}{dots} {}{clock}", m.san);
                }
                GameEvent::Move(_) | GameEvent::Clock { .. } => {}
                GameEvent::Retraction { from_ply, plies } => {
                    board.verified = (*from_ply as usize).saturating_sub(1);
                    println!(
                        "[{t:7.1}s] board {n}: moves from ply {from_ply} withdrawn ({} plies)",
                        plies.len()
                    );
                }
                GameEvent::Result { result, reason } => {
                    println!(
                        "[{t:7.1}s] board {n}: result {} ({reason})",
                        result.as_pgn()
                    );
                }
            }
        }
        TrackerEvent::Alert(a) => {
            println!(
                "[{t:7.1}s] board {n}: ALERT (arbiters only) Article {} {:?}: {}",
                a.article, a.severity, a.message
            );
        }
    }
}
