//! `eboard-bridge replay [--events FILE] CAPTURE...`: captures in, games out.
//!
//! Each capture is streamed line by line through a [`Session`] with the codec
//! of the family its header names (bounded memory
//! whatever its size); its games are printed as PGN on stdout, each as soon as it
//! is complete, and with `--events` every event is written as one JSON line. A
//! capture that turns out malformed is reported on stderr with its file name and
//! line; the games reconstructed up to that line are still printed (a recorder
//! that crashed mid-write leaves a cut last line, and the game before it is worth
//! having), the remaining captures are still processed, and the exit status says
//! that something failed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::events::{GameEvent, Millis, Stamped, TrackerEvent};
use crate::pgn::{GameInfo, GameRecord, GameRecorder};
use crate::session::capture::{CaptureError, CaptureHeader, CaptureReader, PortMode, Record};
use crate::session::{CaptureDriver, Session, SessionStats};
use crate::tracker::TrackerConfig;

/// How long after the last chunk the trackers are ticked, so that holds expire
/// and the last move is verified: a move left without a press (a forgotten
/// press, or the opponent's press on the side already down) is verified after
/// `unpressed_hold_ms`, a clockless board's after twice its hold. Never under
/// five seconds.
pub fn end_grace_ms(config: &TrackerConfig) -> Millis {
    (2 * config.clockless_hold_ms)
        .max(config.unpressed_hold_ms + 1_000)
        .max(5_000)
}

/// Why a capture could not be replayed to its end.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot open: {0}")]
    Open(#[source] io::Error),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(
        "line 1: protocol {0:?} is not a board family this version reads ({1}); \
         the capture was written by a newer recorder"
    )]
    UnsupportedProtocol(String, String),
    #[error("line 1: {0}")]
    Settings(#[from] eboard_protocols::family::SetupError),
    #[error("cannot write the output: {0}")]
    Output(#[source] io::Error),
}

/// Where a replay's results go.
pub trait ReplaySink {
    /// Every event, in order.
    fn event(&mut self, event: &Stamped) -> io::Result<()>;
    /// A complete game (or, at the end or at an error, a game as far as it went).
    fn game(&mut self, game: &GameRecord) -> io::Result<()>;
    /// Something odd that does not stop the replay.
    fn warning(&mut self, message: &str);
}

/// A sink that keeps everything: for the library's callers that want the
/// results in memory (tests, tools).
#[derive(Debug, Default)]
pub struct Collected {
    pub events: Vec<Stamped>,
    pub games: Vec<GameRecord>,
    pub warnings: Vec<String>,
}

impl ReplaySink for Collected {
    fn event(&mut self, event: &Stamped) -> io::Result<()> {
        self.events.push(event.clone());
        Ok(())
    }
    fn game(&mut self, game: &GameRecord) -> io::Result<()> {
        self.games.push(game.clone());
        Ok(())
    }
    fn warning(&mut self, message: &str) {
        self.warnings.push(message.to_string());
    }
}

/// What a replay saw.
#[derive(Debug, Default)]
pub struct ReplaySummary {
    pub chunks: u64,
    pub events: u64,
    pub games: u64,
    /// Games the tracker started (a start position seen), printed or not.
    pub starts: u64,
    pub stats: SessionStats,
}

/// Replays one capture: `board` numbers the single-mode board (bus boards are
/// numbered by address). Games go to `sink` as they complete; on a malformed line
/// the games so far are given to `sink` before the error is returned.
pub fn replay<R: BufRead>(
    input: R,
    board: u32,
    config: &TrackerConfig,
    sink: &mut impl ReplaySink,
) -> Result<ReplaySummary, ReplayError> {
    let mut reader = CaptureReader::new(input)?;
    let header = reader.header().clone();
    let Some(family) = eboard_protocols::family(&header.protocol) else {
        return Err(ReplayError::UnsupportedProtocol(
            header.protocol,
            eboard_protocols::family_names(),
        ));
    };
    let mode = header.mode.unwrap_or(PortMode::Single);
    let session = Session::for_family(family, board, mode, &header.settings, config.clone())?;
    let mut run = Run {
        driver: CaptureDriver::new(session),
        recorders: BTreeMap::new(),
        info: base_info(&header),
        events: Vec::new(),
        summary: ReplaySummary::default(),
    };
    loop {
        match reader.next_record() {
            Ok(Some(Record::Chunk(chunk))) => {
                run.summary.chunks += 1;
                run.driver.chunk(&chunk, &mut run.events);
                run.drain(sink)?;
            }
            Ok(Some(Record::Operator(op))) => {
                // A single-board capture has one board, whatever number the
                // daemon gave it; a bus capture names its boards.
                let target = if mode == PortMode::Single {
                    board
                } else {
                    op.board
                };
                if let Err(e) = run
                    .driver
                    .operator(op.t_ms, target, &op.command, &mut run.events)
                {
                    sink.warning(&format!(
                        "the arbiter's {} at {} ms did not apply: {e}",
                        op.command.action(),
                        op.t_ms
                    ));
                }
                run.drain(sink)?;
            }
            Ok(None) => break,
            Err(e) => {
                // No end-of-capture tick here: the capture is cut, and expiring
                // holds would verify a move the board may not have finished.
                run.finish(sink)?;
                return Err(e.into());
            }
        }
    }
    run.driver.finish(end_grace_ms(config), &mut run.events);
    run.drain(sink)?;
    run.finish(sink)?;
    run.summary.stats = run.driver.session.stats().clone();
    Ok(run.summary)
}

/// The tags every game of a capture shares.
fn base_info(header: &CaptureHeader) -> GameInfo {
    GameInfo {
        date: header
            .started
            .as_deref()
            .and_then(GameInfo::date_from_rfc3339),
        ..GameInfo::default()
    }
}

struct Run {
    driver: CaptureDriver,
    recorders: BTreeMap<u32, GameRecorder>,
    info: GameInfo,
    events: Vec<Stamped>,
    summary: ReplaySummary,
}

impl Run {
    /// Passes pending events on and prints the games they completed.
    fn drain(&mut self, sink: &mut impl ReplaySink) -> Result<(), ReplayError> {
        for e in self.events.drain(..) {
            self.summary.events += 1;
            sink.event(&e).map_err(ReplayError::Output)?;
            let TrackerEvent::Game(game_event) = &e.event else {
                continue;
            };
            if matches!(game_event, GameEvent::GameStart { .. }) {
                self.summary.starts += 1;
            }
            let info = &self.info;
            let recorder = self.recorders.entry(e.board).or_insert_with(|| {
                GameRecorder::new(GameInfo {
                    board: Some(e.board),
                    ..info.clone()
                })
            });
            if let Err(err) = recorder.push(game_event) {
                sink.warning(&format!("board {} at t_ms {}: {err}", e.board, e.t_ms));
            }
            for game in recorder.take_finished() {
                emit_game(&game, sink, &mut self.summary)?;
            }
        }
        Ok(())
    }

    /// Prints every game still open, board by board.
    fn finish(&mut self, sink: &mut impl ReplaySink) -> Result<(), ReplayError> {
        for (_, recorder) in std::mem::take(&mut self.recorders) {
            for game in recorder.finish() {
                emit_game(&game, sink, &mut self.summary)?;
            }
        }
        Ok(())
    }
}

fn emit_game(
    game: &GameRecord,
    sink: &mut impl ReplaySink,
    summary: &mut ReplaySummary,
) -> Result<(), ReplayError> {
    if let Err(e) = game.check_moves() {
        sink.warning(&format!(
            "board {}: the game record does not replay: {e}",
            game.info.board.unwrap_or(0)
        ));
    }
    summary.games += 1;
    sink.game(game).map_err(ReplayError::Output)
}

/// The command line's sink: PGN to one writer, events as JSON Lines to another,
/// warnings to stderr prefixed with the capture's name.
struct CliSink<'a, O: Write, E: Write> {
    pgn: &'a mut O,
    events: Option<&'a mut E>,
    name: &'a str,
}

impl<O: Write, E: Write> ReplaySink for CliSink<'_, O, E> {
    fn event(&mut self, event: &Stamped) -> io::Result<()> {
        if let Some(out) = self.events.as_mut() {
            serde_json::to_writer(&mut **out, &event.to_json())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn game(&mut self, game: &GameRecord) -> io::Result<()> {
        self.pgn.write_all(game.to_pgn().as_bytes())
    }

    fn warning(&mut self, message: &str) {
        eprintln!("eboard-bridge: {}: warning: {message}", self.name);
    }
}

/// Creating the events file empties it: if it is one of the captures (the
/// same name, or another name for the same file), the capture would be lost
/// before it is read. Refused before anything is written.
fn refuse_capture_as_events_file(events: &Path, captures: &[PathBuf]) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::metadata(events) else {
        // Nothing there yet: it cannot be a capture that exists.
        return Ok(());
    };
    for capture in captures {
        let same = std::fs::metadata(capture)
            .is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino());
        if same {
            anyhow::bail!(
                "the events file {} is also a capture to replay ({}); writing the events \
                 would overwrite it before it is read: give --events another file name",
                events.display(),
                capture.display()
            );
        }
    }
    Ok(())
}

/// Entry point of `eboard-bridge replay`.
pub fn run_cli(events: Option<&Path>, captures: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let config = TrackerConfig::default();
    let stdout = io::stdout();
    let mut pgn = BufWriter::new(stdout.lock());
    if let Some(path) = events {
        refuse_capture_as_events_file(path, captures)?;
    }
    let mut events_out = match events {
        Some(path) => Some(BufWriter::new(File::create(path).with_context(|| {
            format!(
                "cannot create the events file {}; check the directory exists and is writable",
                path.display()
            )
        })?)),
        None => None,
    };
    let mut failed = 0usize;
    for (index, path) in captures.iter().enumerate() {
        let name = path.display().to_string();
        let board = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let mut sink = CliSink {
            pgn: &mut pgn,
            events: events_out.as_mut(),
            name: &name,
        };
        let result = File::open(path)
            .map_err(ReplayError::Open)
            .and_then(|f| replay(BufReader::new(f), board, &config, &mut sink));
        match result {
            Ok(summary) => {
                if summary.stats.decode_errors > 0 {
                    sink.warning(&format!(
                        "{} decode error(s) in the board's bytes, skipped (last: {})",
                        summary.stats.decode_errors,
                        summary.stats.last_decode_error.as_deref().unwrap_or("?")
                    ));
                }
                if summary.games == 0 && summary.starts == 0 {
                    sink.warning("no game found (no start position was seen on any board)");
                } else if summary.games == 0 {
                    sink.warning(&format!(
                        "{} game(s) started (a start position was seen) but no move was made, \
                         so there is no PGN to print; the events file has the game start",
                        summary.starts
                    ));
                }
            }
            Err(ReplayError::Output(e)) => {
                return Err(e).context("cannot write the output (stdout or the events file)")
            }
            Err(e) => {
                eprintln!("eboard-bridge: {name}: {e}");
                failed += 1;
            }
        }
        // Games of one capture are out before the next starts, even if it hangs
        // on a slow file system.
        pgn.flush().context("cannot write the PGN to stdout")?;
    }
    if let Some(out) = events_out.as_mut() {
        out.flush().context("cannot write the events file")?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
