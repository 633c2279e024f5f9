//! `eboard-bridge emulate`: a virtual board of any registered family on a
//! pseudo-terminal, playing a game from a PGN file in real time.
//!
//! The daemon (or any software for that board) opens the pty's slave side as
//! if it were the board's serial port. The virtual board answers its commands,
//! and the hand model plays the game on it, so the host sees exactly what a
//! real board sends (DGT field updates and clock messages, Millennium status
//! frames, Certabo lines, …).
//!
//! A family read over USB HID (Chessnut) is served on a pty too, as a stand-in
//! for its hidraw node: the bytes are the same reports (report id first), one
//! after the other. On a real hidraw node every read returns exactly one
//! report; on the pty reads may join or split them, so the codecs frame
//! reports by their content, never by read boundaries (docs/boards.md).
//!
//! [`serve_pty`] is the reusable core: it starts one board on its own pty and
//! thread and returns a handle, so the demo and tests can run many boards in
//! one process; [`serve_bus_pty`] puts several boards on one line (DGT bus
//! mode). The loop polls the non-blocking master side every few milliseconds:
//! this adds no visible latency and needs no async runtime inside.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use eboard_protocols::family::{Family, VirtualDevice, VirtualSpec};
use eboard_protocols::hand::{self, HandConfig, PhysicalBoard};
use eboard_protocols::ClockSide;
use shakmaty::Position;

use crate::sim::games::{load_pgn_file, Game, GamesError};

/// Why the emulator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    #[error(transparent)]
    Games(#[from] GamesError),
    #[error("{file} holds no games; give a PGN file with at least one game")]
    NoGame { file: String },
    #[error("{file} holds {count} game(s), so there is no game {asked}; use --game 1..={count}")]
    NoSuchGame {
        file: String,
        count: usize,
        asked: usize,
    },
    #[error(
        "cannot open a pseudo-terminal: {0}; check that /dev/ptmx exists and devpts is mounted"
    )]
    Pty(nix::Error),
    #[error("cannot create the link {path}: {error}; choose a path in a writable directory, or remove what is there if it is not a symlink")]
    Link {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the pseudo-terminal failed: {0}; restart the emulator")]
    Io(std::io::Error),
    #[error("the emulator thread panicked")]
    Panicked,
}

/// How a virtual board is run.
#[derive(Clone, Debug)]
pub struct EmulateOptions {
    /// The board family emulated.
    pub family: &'static Family,
    pub seed: u64,
    /// Thinking time is divided by this (10 = ten times faster).
    pub speed: f64,
    /// Hand motions are divided by this; keep it near 1 for realistic streams.
    pub hand_speed: f64,
    /// White sits at the far side from the connector.
    pub rotated: bool,
    /// White's clock is on the right.
    pub clock_right: bool,
    /// The virtual board's build (its seed is replaced by `seed`).
    pub board: VirtualSpec,
    /// Start playing this long after the host's first byte (rather than at once),
    /// so a host that connects late still sees the whole game.
    pub start_after_host: Option<u64>,
    /// Create this symlink to the pty (replacing a stale one), removed on stop.
    pub link: Option<PathBuf>,
}

impl Default for EmulateOptions {
    fn default() -> Self {
        EmulateOptions {
            family: &eboard_protocols::dgt::FAMILY,
            seed: 0,
            speed: 1.0,
            hand_speed: 1.0,
            rotated: false,
            clock_right: false,
            board: VirtualSpec::default(),
            start_after_host: Some(2_000),
            link: None,
        }
    }
}

/// A virtual board running on a pty. Dropping it stops the board and removes
/// the link.
pub struct EmulatorHandle {
    path: PathBuf,
    link: Option<PathBuf>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    dropped_bytes: Arc<AtomicUsize>,
    /// What each board's LEDs show, as the host last set them.
    leds: Arc<std::sync::Mutex<Vec<Option<shakmaty::Bitboard>>>>,
    thread: Option<JoinHandle<Result<(), EmulateError>>>,
}

impl EmulatorHandle {
    /// The pty's slave path: open it as the board's serial port.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The symlink, when one was asked for.
    pub fn link(&self) -> Option<&Path> {
        self.link.as_deref()
    }

    /// The game has been played to the end (the board keeps answering).
    pub fn game_over(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    /// The squares board `board` of the line lights now, in its own frame
    /// (`None`: a board without LEDs).
    pub fn leds(&self, board: usize) -> Option<shakmaty::Bitboard> {
        self.leds
            .lock()
            .ok()
            .and_then(|l| l.get(board).copied().flatten())
    }

    /// Board bytes thrown away because nobody read the pty.
    pub fn dropped_bytes(&self) -> usize {
        self.dropped_bytes.load(Ordering::Relaxed)
    }

    /// Whether the board thread has stopped (on its own only after an error).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the board, removes the link and reports how the board thread ended.
    pub fn stop(mut self) -> Result<(), EmulateError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), EmulateError> {
        self.stop.store(true, Ordering::Relaxed);
        let result = match self.thread.take() {
            Some(t) => t.join().map_err(|_| EmulateError::Panicked).and_then(|r| r),
            None => Ok(()),
        };
        if let Some(link) = self.link.take() {
            // Only remove our own link, not something put there since.
            if std::fs::read_link(&link).is_ok_and(|p| p == self.path) {
                let _ = std::fs::remove_file(&link);
            }
        }
        result
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), EmulateError> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL).map_err(EmulateError::Pty)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(flags)).map_err(EmulateError::Pty)?;
    Ok(())
}

fn make_link(link: &Path, target: &Path) -> Result<(), EmulateError> {
    let err = |error| EmulateError::Link {
        path: link.to_owned(),
        error,
    };
    match std::fs::symlink_metadata(link) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(link).map_err(err)?,
        Ok(_) => {
            return Err(err(std::io::Error::new(
                ErrorKind::AlreadyExists,
                "a file that is not a symlink is in the way",
            )))
        }
        Err(_) => {}
    }
    std::os::unix::fs::symlink(target, link).map_err(err)
}

/// Starts a virtual board playing `game` on a new pty.
pub fn serve_pty(game: &Game, opts: &EmulateOptions) -> Result<EmulatorHandle, EmulateError> {
    serve_bus_pty(std::slice::from_ref(game), opts)
}

/// Starts several virtual boards on one new pty, as DGT boards share one line
/// in bus mode: board `i` plays `games[i]`, has serial number (and bus address)
/// `opts.board.serial + i` and seed `opts.seed + i`. Host bytes reach every
/// board; their answers are merged in time order.
pub fn serve_bus_pty(
    games: &[Game],
    opts: &EmulateOptions,
) -> Result<EmulatorHandle, EmulateError> {
    serve_line(games, &[], opts)
}

/// [`serve_pty`], then what the hands do after the game: `then` holds actions
/// timed from the game's last action (a move taken back, another move played
/// in its place, a clock paused), which tests use for what a game from a PGN
/// file cannot show.
pub fn serve_script_pty(
    game: &Game,
    then: &[hand::TimedAction],
    opts: &EmulateOptions,
) -> Result<EmulatorHandle, EmulateError> {
    serve_line(std::slice::from_ref(game), then, opts)
}

fn serve_line(
    games: &[Game],
    then: &[hand::TimedAction],
    opts: &EmulateOptions,
) -> Result<EmulatorHandle, EmulateError> {
    let mut boards = Vec::with_capacity(games.len());
    for (i, game) in games.iter().enumerate() {
        let seed = opts.seed.wrapping_add(i as u64);
        let hand_cfg = HandConfig {
            seed,
            speed: 1.0 / opts.speed.max(1e-6),
            hand_speed: 1.0 / opts.hand_speed.max(1e-6),
            start_ms: opts.start_after_host.unwrap_or(2_000),
            rotated: opts.rotated,
            white_clock: if opts.clock_right {
                ClockSide::Right
            } else {
                ClockSide::Left
            },
            ..HandConfig::default()
        };
        let mut actions = hand::play(&game.start, &game.moves, &hand_cfg).actions;
        if i == 0 {
            let end = actions.last().map_or(hand_cfg.start_ms, |a| a.t_ms);
            actions.extend(then.iter().map(|a| hand::TimedAction {
                t_ms: end + a.t_ms,
                action: a.action,
            }));
        }
        boards.push((
            PhysicalBoard::from_board(game.start.board(), opts.rotated),
            actions,
        ));
    }
    serve_scripts_pty(boards, opts)
}

/// Starts virtual boards on one new pty, board `i` with the pieces and the
/// hands' script of `boards[i]` (in the board's own frame, times from the
/// host's first byte when `opts.start_after_host` is set): for tests that
/// need actions no game has (pieces knocked over and left, …).
pub fn serve_scripts_pty(
    boards: Vec<(PhysicalBoard, Vec<hand::TimedAction>)>,
    opts: &EmulateOptions,
) -> Result<EmulatorHandle, EmulateError> {
    let (path, master, slave) = crate::daemon::device::raw_pty().map_err(EmulateError::Pty)?;
    set_nonblocking(&master)?;
    if let Some(link) = &opts.link {
        make_link(link, &path)?;
    }
    let count = boards.len();
    let (pieces, scripts): (Vec<PhysicalBoard>, Vec<Vec<hand::TimedAction>>) =
        boards.into_iter().unzip();
    let spec = VirtualSpec {
        seed: opts.seed,
        ..opts.board.clone()
    };
    let device = (opts.family.virtual_device)(&spec, pieces);

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicUsize::new(0));
    let master = File::from(master);
    // Our own slave descriptor stays open for the board's lifetime: without it
    // the master reads EIO whenever the host closes the port.
    let line = Line {
        device,
        next: vec![0; scripts.len()],
        scripts,
    };
    let wait_for_host = opts.start_after_host.is_some();
    let leds = Arc::new(std::sync::Mutex::new(vec![None; count]));
    let (s, d, dr, lit) = (stop.clone(), done.clone(), dropped.clone(), leds.clone());
    let thread = std::thread::Builder::new()
        .name(format!("vboard {}", path.display()))
        .spawn(move || {
            let r = run_loop(line, master, wait_for_host, &s, &d, &dr, &lit);
            drop(slave);
            r
        })
        .map_err(EmulateError::Io)?;
    Ok(EmulatorHandle {
        path,
        link: opts.link.clone(),
        stop,
        done,
        dropped_bytes: dropped,
        leds,
        thread: Some(thread),
    })
}

/// The boards on one line and the hands playing on them.
struct Line {
    device: Box<dyn VirtualDevice>,
    scripts: Vec<Vec<hand::TimedAction>>,
    /// Per board, the next action to do.
    next: Vec<usize>,
}

impl Line {
    /// Does every action due by `now` (script times count from `base`).
    fn act(&mut self, base: u64, now: u64) {
        for (i, script) in self.scripts.iter().enumerate() {
            while let Some(a) = script.get(self.next[i]) {
                if base + a.t_ms > now {
                    break;
                }
                self.device
                    .apply(i, now, a.action)
                    .expect("the hand model produced a physically impossible action");
                self.next[i] += 1;
            }
        }
    }

    fn all_played(&self) -> bool {
        self.scripts
            .iter()
            .zip(&self.next)
            .all(|(s, &n)| n >= s.len())
    }

    /// The next time anything is due: a board event or a hand action.
    fn next_due(&self, base: Option<u64>) -> u64 {
        let mut due = self.device.next_event_at();
        if let Some(b) = base {
            for (s, &n) in self.scripts.iter().zip(&self.next) {
                if let Some(a) = s.get(n) {
                    due = due.min(b + a.t_ms);
                }
            }
        }
        due
    }
}

/// How long a board message may wait for a reader before it is dropped, as a
/// real board's bytes are lost when nobody listens.
const STALE_OUTPUT_MS: u64 = 2_000;

fn run_loop(
    mut line: Line,
    mut master: File,
    wait_for_host: bool,
    stop: &AtomicBool,
    done: &AtomicBool,
    dropped: &AtomicUsize,
    lit: &std::sync::Mutex<Vec<Option<shakmaty::Bitboard>>>,
) -> Result<(), EmulateError> {
    let epoch = Instant::now();
    let now_ms = || epoch.elapsed().as_millis() as u64;
    // The script's times count from here (the host's first byte, or the start).
    let mut base: Option<u64> = if wait_for_host { None } else { Some(0) };
    let mut out: std::collections::VecDeque<(u64, Vec<u8>)> = Default::default();
    let mut buf = [0u8; 512];
    while !stop.load(Ordering::Relaxed) {
        let now = now_ms();
        loop {
            match master.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    line.device.receive_host(now, &buf[..n]);
                    base.get_or_insert(now);
                    if let Ok(mut l) = lit.lock() {
                        for (i, slot) in l.iter_mut().enumerate() {
                            *slot = line.device.leds(i);
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // EIO: no slave side open right now; try again later.
                Err(e) if e.raw_os_error() == Some(nix::libc::EIO) => break,
                Err(e) => return Err(EmulateError::Io(e)),
            }
        }
        if let Some(b) = base {
            line.act(b, now);
            if line.all_played() {
                done.store(true, Ordering::Relaxed);
            }
        }
        line.device.advance(now);
        out.extend(line.device.take_output());
        while let Some((t, bytes)) = out.front_mut() {
            if *t > now {
                break;
            }
            match master.write(bytes) {
                Ok(n) if n == bytes.len() => {
                    out.pop_front();
                }
                Ok(n) => {
                    bytes.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(nix::libc::EIO) =>
                {
                    if now > *t + STALE_OUTPUT_MS {
                        dropped.fetch_add(bytes.len(), Ordering::Relaxed);
                        out.pop_front();
                        continue;
                    }
                    break;
                }
                Err(e) => return Err(EmulateError::Io(e)),
            }
        }
        // Sleep until the next thing to do, but poll the host at least every 5 ms.
        let mut wake = line.next_due(base);
        if let Some((t, _)) = out.front() {
            wake = wake.min(*t);
        }
        let nap = wake.saturating_sub(now_ms()).clamp(1, 5);
        std::thread::sleep(Duration::from_millis(nap));
    }
    Ok(())
}

/// Command-line options of `eboard-bridge emulate`.
#[derive(Clone, Debug)]
pub struct EmulateArgs {
    /// The board family's name (`dgt`, `millennium`, …).
    pub protocol: String,
    pub pgn: PathBuf,
    pub link: Option<PathBuf>,
    /// 1-based game number in the file.
    pub game: usize,
    pub speed: f64,
    pub seed: u64,
    pub rotated: bool,
    pub clock_right: bool,
}

/// Loads game `number` (1-based) of a PGN file.
pub fn load_game(pgn: &Path, number: usize) -> Result<Game, EmulateError> {
    let games = load_pgn_file(pgn)?;
    let file = pgn.display().to_string();
    if games.is_empty() {
        return Err(EmulateError::NoGame { file });
    }
    let count = games.len();
    games
        .into_iter()
        .nth(number.wrapping_sub(1))
        .ok_or(EmulateError::NoSuchGame {
            file,
            count,
            asked: number,
        })
}

/// Entry point of `eboard-bridge emulate`: runs until Ctrl-C or SIGTERM.
pub fn run_cli(args: &EmulateArgs) -> anyhow::Result<ExitCode> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        anyhow::bail!(
            "--speed must be a positive number (1 = real time, 10 = ten times faster), not {}",
            args.speed
        );
    }
    let Some(family) = eboard_protocols::family(&args.protocol) else {
        anyhow::bail!(
            "--protocol {:?} is not a board family; write one of {}",
            args.protocol,
            eboard_protocols::family_names()
        );
    };
    let game = load_game(&args.pgn, args.game)?;
    let opts = EmulateOptions {
        family,
        seed: args.seed,
        speed: args.speed,
        rotated: args.rotated,
        clock_right: args.clock_right,
        link: args.link.clone(),
        ..EmulateOptions::default()
    };
    let handle = serve_pty(&game, &opts)?;
    println!("{}", handle.path().display());
    if let Some(link) = handle.link() {
        eprintln!(
            "eboard-bridge: virtual {} board on {} (link {})",
            family.title,
            handle.path().display(),
            link.display()
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = tick.tick() => {
                    if handle.is_finished() {
                        break;
                    }
                }
            }
        }
        Ok::<(), std::io::Error>(())
    })?;
    handle.stop()?;
    Ok(ExitCode::SUCCESS)
}
