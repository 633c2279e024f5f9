//! The device layer: the only code that opens board ports and moves bytes.
//!
//! Everything it reads or writes leaves as a [`Chunk`] stamped with the time since
//! the link started, which is exactly what the capture format records and what the
//! session consumes. So the daemon, the recorder and `replay` see the same stream.
//!
//! One generic loop ([`run_link`]) serves every board family: the family's
//! [`Driver`] says how to open the port ([`Transport`]: serial settings, or a
//! hidraw node), what to write and when; this module only opens, reads, writes
//! and waits. [`supervise`] keeps one port followed for the daemon's lifetime:
//! it runs the link, reports it down when it ends, and reopens it with
//! [`reopen_backoff`]. [`listen`] reads a port for a while without writing
//! anything, for discovery on USB ids that other devices share.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eboard_protocols::family::{
    DriverCommand, DriverEvent, DriverSetup, Family, Parity, SerialSettings, Transport,
};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_serial::{DataBits, FlowControl, SerialPortBuilderExt, SerialStream, StopBits};

use crate::session::capture::{Chunk, Direction};

/// Why a board link ended or could not start.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error(
        "cannot open {path}: {source}. Check that the board is plugged in, that the path is right \
         (ls /dev/serial/by-id/ /dev/chessboard/), and that this user may use the port (group \
         dialout; `eboard-bridge doctor` checks)"
    )]
    Open { path: PathBuf, source: io::Error },
    #[error("reading from {path} failed: {source}. The board was probably unplugged; it will be reopened")]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "writing to {path} failed: {source}. The board was probably unplugged; it will be reopened"
    )]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} was closed by the other side (end of file). The board was unplugged or the emulator stopped")]
    Closed { path: PathBuf },
}

/// Why a link ended, besides I/O errors.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The driver gave up on the board (silence, no board on a bus line).
    #[error("{path} {reason}")]
    Board { path: PathBuf, reason: String },
}

/// What a port's supervisor reports to the daemon, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// Bytes moved, either way (stamped from the daemon's epoch).
    Chunk(Chunk),
    /// The board answers (first byte after the port was opened).
    Up,
    /// The link ended or could not be opened; the port will be reopened.
    Down(String),
    /// A board on a shared line started or stopped answering.
    BusBoard { address: u16, present: bool },
    /// Command `id` ended (see [`DriverEvent::CommandDone`]).
    CommandDone {
        id: u64,
        outcome: Result<u8, String>,
    },
}

/// An open port of either transport.
enum Port {
    Serial(SerialStream),
    Hidraw(AsyncFd<std::fs::File>),
}

fn data_bits(s: &SerialSettings) -> DataBits {
    match s.data_bits {
        5 => DataBits::Five,
        6 => DataBits::Six,
        7 => DataBits::Seven,
        _ => DataBits::Eight,
    }
}

/// Opens `path` as `transport` says: a serial port (or pseudo-terminal) with
/// its line settings, taken exclusively, or a hidraw node.
fn open(path: &Path, transport: Transport) -> Result<Port, DeviceError> {
    let err = |source: io::Error| DeviceError::Open {
        path: path.to_owned(),
        source,
    };
    match transport {
        Transport::Serial(s) => {
            use tokio_serial::{ClearBuffer, SerialPort};
            let builder = tokio_serial::new(path.to_string_lossy(), s.baud)
                .data_bits(data_bits(&s))
                .parity(match s.parity {
                    Parity::None => tokio_serial::Parity::None,
                    Parity::Odd => tokio_serial::Parity::Odd,
                    Parity::Even => tokio_serial::Parity::Even,
                })
                .stop_bits(if s.stop_bits == 2 {
                    StopBits::Two
                } else {
                    StopBits::One
                })
                .flow_control(FlowControl::None);
            let mut stream = builder
                .open_native_async()
                .map_err(|e| err(io::Error::from(e)))?;
            // Exclusive access would stop a second daemon (or a stray terminal
            // program) from stealing bytes, but pseudo-terminals in tests are
            // opened by the emulator side too; TIOCEXCL only affects further
            // opens of the same node, so it is safe.
            let _ = stream.set_exclusive(true);
            // Bytes queued while nobody read the port are from before the
            // resynchronisation the driver starts with.
            let _ = stream.clear(ClearBuffer::Input);
            Ok(Port::Serial(stream))
        }
        Transport::Hidraw { .. } => {
            use std::os::unix::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(path)
                .map_err(err)?;
            // SAFETY: a `File` owns its descriptor, keeps it open and returns
            // the same one from `as_raw_fd` until it is dropped, which only
            // the `AsyncFd` that takes it over can do.
            let fd = unsafe { AsyncFd::register(file) };
            Ok(Port::Hidraw(fd.map_err(|e| err(io::Error::from(e)))?))
        }
    }
}

impl Port {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Port::Serial(s) => s.read(buf).await,
            Port::Hidraw(fd) => loop {
                let mut guard = fd.readable().await?;
                match guard.try_io(|f| read_fd(f.get_ref().as_raw_fd(), buf)) {
                    Ok(r) => return r,
                    Err(_would_block) => continue,
                }
            },
        }
    }

    /// Writes `bytes` whole. On hidraw one write is one output report.
    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Port::Serial(s) => s.write_all(bytes).await,
            Port::Hidraw(fd) => {
                let mut done = 0;
                while done < bytes.len() {
                    let mut guard = fd.writable().await?;
                    match guard.try_io(|f| write_fd(f.get_ref().as_raw_fd(), &bytes[done..])) {
                        Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(Ok(n)) => done += n,
                        Ok(Err(e)) => return Err(e),
                        Err(_would_block) => continue,
                    }
                }
                Ok(())
            }
        }
    }
}

fn read_fd(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes and `fd` is open for the
    // duration of the call (borrowed from the AsyncFd that owns it).
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn write_fd(fd: std::os::fd::RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: as `read_fd`, for a buffer that is only read.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// The receiver is gone: the daemon is shutting down, the link just ends.
struct Gone;

/// Longest wait for bytes when the driver has nothing due: commands still
/// arrive at once, this only bounds how stale `now` gets.
const IDLE_WAIT: Duration = Duration::from_millis(250);

/// Runs one link of `family` on `path` until the port fails, closes, or the
/// driver gives up on the board: opens the port with the driver's transport,
/// writes what the driver asks for, forwards every read and write as a chunk,
/// hands commands arriving on `commands` to the driver (their outcomes come
/// back as [`LinkEvent::CommandDone`]), and reports boards appearing on a
/// shared line. `epoch` is the time every stamp counts from. Returns `Ok`
/// when the daemon stops (nobody listens any more).
pub async fn run_link(
    path: &Path,
    family: &Family,
    setup: &DriverSetup,
    epoch: Instant,
    tx: mpsc::UnboundedSender<LinkEvent>,
    commands: &mut mpsc::Receiver<(u64, DriverCommand)>,
) -> Result<(), LinkError> {
    let mut driver = (family.driver)(setup);
    let mut port = open(path, driver.transport())?;
    let t_ms = || epoch.elapsed().as_millis() as u64;
    // Never waits: a port is read as its bytes come, whatever the loop is
    // doing, so every chunk is stamped with the time it was read. Waiting on a
    // busy loop would leave the bytes in the port, to be read later in one
    // chunk with one stamp: a loaded host would then see seconds of play as
    // one instant (see `Daemon::tick`).
    let emit = |e: LinkEvent| tx.send(e).map_err(|_| Gone);
    driver.start(t_ms());
    let mut heard = false;
    let mut buf = vec![0u8; 4096];
    loop {
        let now = t_ms();
        while let Some(bytes) = driver.poll_transmit(now) {
            if let Err(source) = port.write_all(&bytes).await {
                return Err(DeviceError::Write {
                    path: path.to_owned(),
                    source,
                }
                .into());
            }
            let chunk = Chunk {
                t_ms: t_ms(),
                dir: Direction::Out,
                bytes,
            };
            if emit(LinkEvent::Chunk(chunk)).is_err() {
                return Ok(());
            }
        }
        while let Some(event) = driver.poll_event() {
            let e = match event {
                DriverEvent::Failed(reason) => {
                    return Err(LinkError::Board {
                        path: path.to_owned(),
                        reason,
                    })
                }
                DriverEvent::BoardPresent { address, present } => {
                    LinkEvent::BusBoard { address, present }
                }
                DriverEvent::CommandDone { id, outcome } => LinkEvent::CommandDone { id, outcome },
            };
            if emit(e).is_err() {
                return Ok(());
            }
        }
        let wait = driver
            .next_deadline()
            .map_or(IDLE_WAIT, |d| {
                Duration::from_millis(d.saturating_sub(t_ms()))
            })
            .min(IDLE_WAIT);
        // The select only races the wait for bytes against a command;
        // forwarding what was read happens after it, so no chunk can be lost
        // to a cancelled send.
        enum Got {
            Command(u64, DriverCommand),
            Read(Result<io::Result<usize>, tokio::time::error::Elapsed>),
        }
        let got = tokio::select! {
            biased;
            Some((id, command)) = commands.recv() => Got::Command(id, command),
            r = tokio::time::timeout(wait, port.read(&mut buf)) => Got::Read(r),
        };
        match got {
            Got::Command(id, command) => {
                if let Err(refused) = driver.command(t_ms(), id, command) {
                    let done = LinkEvent::CommandDone {
                        id,
                        outcome: Err(refused.to_string()),
                    };
                    if emit(done).is_err() {
                        return Ok(());
                    }
                }
            }
            Got::Read(Err(_elapsed)) => {}
            Got::Read(Ok(Err(source))) => {
                return Err(DeviceError::Read {
                    path: path.to_owned(),
                    source,
                }
                .into())
            }
            Got::Read(Ok(Ok(0))) => {
                return Err(DeviceError::Closed {
                    path: path.to_owned(),
                }
                .into())
            }
            Got::Read(Ok(Ok(n))) => {
                let now = t_ms();
                if !heard {
                    heard = true;
                    if emit(LinkEvent::Up).is_err() {
                        return Ok(());
                    }
                }
                let bytes = buf[..n].to_vec();
                driver.board_bytes(now, &bytes);
                let chunk = Chunk {
                    t_ms: now,
                    dir: Direction::In,
                    bytes,
                };
                if emit(LinkEvent::Chunk(chunk)).is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// Reads `path` for `wait` without writing anything and returns what came:
/// discovery's listening probe on ports found by USB ids other devices share
/// (the boards on them send unasked). Stops early once `enough` bytes came.
pub async fn listen(
    path: &Path,
    transport: Transport,
    wait: Duration,
    enough: usize,
) -> Result<Vec<u8>, DeviceError> {
    let mut port = open(path, transport)?;
    let deadline = tokio::time::Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 4096];
    while got.len() < enough {
        match tokio::time::timeout_at(deadline, port.read(&mut buf)).await {
            Err(_) => break,
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(source)) => {
                return Err(DeviceError::Read {
                    path: path.to_owned(),
                    source,
                })
            }
        }
    }
    Ok(got)
}

/// Supervises one port for the daemon's lifetime: runs the link, reports it
/// down when it ends, waits [`reopen_backoff`], and opens it again, so an
/// unplugged board is followed again within seconds of its return. Its events
/// go to `tx` tagged with `port`, straight into the daemon's one queue (no
/// task in between that a loaded host could leave waiting). Ends when the
/// daemon drops the receiver.
pub async fn supervise(
    path: PathBuf,
    family: &'static Family,
    setup: DriverSetup,
    epoch: Instant,
    (port, tx): (usize, mpsc::UnboundedSender<(usize, LinkEvent)>),
    mut commands: mpsc::Receiver<(u64, DriverCommand)>,
) {
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        // Commands sent while the last link failed are for a board state that
        // is gone (the daemon fails them on `Down` and sends none until the
        // board answers again): never give them to the board that comes back.
        while commands.try_recv().is_ok() {}
        // The link's reports pass through here so that we see whether a board
        // answered: a board that answered and was then unplugged is replugged
        // as a fresh start (250 ms), not as the n-th failure of an absent one.
        let (link_tx, mut link_rx) = mpsc::unbounded_channel::<LinkEvent>();
        let link = run_link(&path, family, &setup, epoch, link_tx, &mut commands);
        tokio::pin!(link);
        let mut answered = false;
        let result = loop {
            tokio::select! {
                biased;
                Some(e) = link_rx.recv() => {
                    answered |= matches!(e, LinkEvent::Up | LinkEvent::BusBoard { present: true, .. });
                    if tx.send((port, e)).is_err() {
                        return;
                    }
                }
                r = &mut link => break r,
            }
        };
        // What the link reported just before it ended.
        while let Ok(e) = link_rx.try_recv() {
            answered |= matches!(e, LinkEvent::Up | LinkEvent::BusBoard { present: true, .. });
            if tx.send((port, e)).is_err() {
                return;
            }
        }
        let reason = match result {
            Ok(()) => return,
            Err(e) => e.to_string(),
        };
        if tx.send((port, LinkEvent::Down(reason))).is_err() {
            return;
        }
        // A link a board answered on, or one that ran for a while, was
        // healthy: start the backoff afresh.
        if answered || started.elapsed() > Duration::from_secs(30) {
            failures = 0;
        }
        tokio::time::sleep(reopen_backoff(failures)).await;
        failures = failures.saturating_add(1);
        if tx.is_closed() {
            return;
        }
    }
}

/// How long to wait before reopening a port after the `attempt`-th failure in a
/// row: doubling from 250 ms, capped at 5 s, so a replugged board is back within
/// seconds but a missing one does not spin.
pub fn reopen_backoff(attempt: u32) -> Duration {
    let ms = 250u64.saturating_mul(1u64 << attempt.min(5));
    Duration::from_millis(ms.min(5_000))
}

/// A pseudo-terminal pair in raw mode: `(slave path, master, slave)`. What
/// the emulator serves boards on, and what tests stand a silent board on.
pub fn raw_pty() -> nix::Result<(PathBuf, OwnedFd, OwnedFd)> {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let pty = nix::pty::openpty(None, None)?;
    // Raw mode: no echo, no line editing, every byte passes untouched.
    let mut t = tcgetattr(&pty.slave)?;
    cfmakeraw(&mut t);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &t)?;
    let path = nix::unistd::ttyname(&pty.slave)?;
    Ok((path, pty.master, pty.slave))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_then_caps() {
        assert_eq!(reopen_backoff(0), Duration::from_millis(250));
        assert_eq!(reopen_backoff(1), Duration::from_millis(500));
        assert_eq!(reopen_backoff(10), Duration::from_millis(5_000));
    }
}
