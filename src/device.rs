//! The device layer: the only code that opens board ports and moves bytes.
//!
//! Everything it reads or writes leaves as a [`Chunk`] stamped with the time since
//! the link started, which is exactly what the capture format records and what the
//! session consumes. So the daemon, the recorder and `replay` see the same stream.
//!
//! [`supervise`] keeps one port followed for the daemon's lifetime: it runs a
//! single-board link ([`run_single_link`]) or a bus link ([`run_dgt_bus_link`]),
//! reports it down when it ends, and reopens it with [`reopen_backoff`].

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eboard_protocols::dgt::{
    BusCommand, BusCommandKind, BusMessage, BusReply, Command, Decoder, Frame, Mode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_serial::{DataBits, FlowControl, Parity, SerialPortBuilderExt, SerialStream, StopBits};

use crate::capture::{Chunk, Direction};

/// DGT boards talk 9600 baud, 8N1, no flow control (dgt.md §1.1).
pub const DGT_BAUD: u32 = 9600;

/// Why a board link ended or could not start.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error(
        "cannot open {path}: {source}. Check that the board is plugged in, that the path is right \
         (ls /dev/serial/by-id/), and that this user may use serial ports (group dialout)"
    )]
    Open {
        path: PathBuf,
        source: tokio_serial::Error,
    },
    #[error("reading from {path} failed: {source}. The board was probably unplugged; it will be reopened")]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "writing to {path} failed: {source}. The board was probably unplugged; it will be reopened"
    )]
    Write { path: PathBuf, source: io::Error },
    #[error("{path} was closed by the other side (end of file). The board was unplugged or the emulator stopped")]
    Closed { path: PathBuf },
}

/// Opens a serial port (or pseudo-terminal) with the DGT line settings.
pub fn open_serial(path: &Path) -> Result<SerialStream, DeviceError> {
    let builder = tokio_serial::new(path.to_string_lossy(), DGT_BAUD)
        .data_bits(DataBits::Eight)
        .parity(Parity::None)
        .stop_bits(StopBits::One)
        .flow_control(FlowControl::None);
    let mut stream = builder
        .open_native_async()
        .map_err(|source| DeviceError::Open {
            path: path.to_owned(),
            source,
        })?;
    // Exclusive access would stop a second daemon (or a stray terminal program)
    // from stealing bytes, but pseudo-terminals in tests are opened by the emulator
    // side too; TIOCEXCL only affects further opens of the same node, so it is safe.
    let _ = stream.set_exclusive(true);
    Ok(stream)
}

/// The bytes a host sends to bring a DGT board into a known state: reset, serial
/// number, version, a full dump, then UPDATE_NICE (field updates plus clock times
/// when they change), then one clock reading. The dump comes before the update
/// mode so that every field update refers to a known picture.
pub fn dgt_startup() -> Vec<u8> {
    let mut out = Vec::new();
    for cmd in [
        Command::Reset,
        Command::ReturnSerialNumber,
        Command::SendVersion,
        Command::SendBoard,
        Command::SendUpdateNice,
        Command::SendClock,
    ] {
        cmd.encode(&mut out);
    }
    out
}

/// Runs one DGT board link until the port fails or closes: sends the start-up
/// sequence, then forwards every read as a chunk. `epoch` is the time all chunk
/// stamps count from. Returns why the link ended; the caller decides whether to
/// reopen. This is the bare link the demo uses; the daemon uses
/// [`supervise`], which adds liveness probes, silence detection and reopening.
pub async fn run_dgt_link(
    path: &Path,
    epoch: Instant,
    chunks: mpsc::Sender<Chunk>,
) -> Result<(), DeviceError> {
    let mut port = open_serial(path)?;
    let t_ms = |now: Instant| now.saturating_duration_since(epoch).as_millis() as u64;

    let startup = dgt_startup();
    port.write_all(&startup)
        .await
        .map_err(|source| DeviceError::Write {
            path: path.to_owned(),
            source,
        })?;
    if chunks
        .send(Chunk {
            t_ms: t_ms(Instant::now()),
            dir: Direction::Out,
            bytes: startup,
        })
        .await
        .is_err()
    {
        return Ok(());
    }

    let mut buf = vec![0u8; 4096];
    loop {
        let n = port
            .read(&mut buf)
            .await
            .map_err(|source| DeviceError::Read {
                path: path.to_owned(),
                source,
            })?;
        if n == 0 {
            return Err(DeviceError::Closed {
                path: path.to_owned(),
            });
        }
        let chunk = Chunk {
            t_ms: t_ms(Instant::now()),
            dir: Direction::In,
            bytes: buf[..n].to_vec(),
        };
        if chunks.send(chunk).await.is_err() {
            // Nobody listens any more: the daemon is shutting down.
            return Ok(());
        }
    }
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
    /// Bus mode: a board behind the port started or stopped answering.
    BusBoard { address: u16, present: bool },
}

/// Supervision timings (from `[device]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkTimings {
    /// Ask a quiet board for its clock after this long without a byte.
    pub probe: Duration,
    /// No byte for this long: the board is gone.
    pub silence: Duration,
    /// Bus mode: the polling period.
    pub bus_poll: Duration,
}

impl Default for LinkTimings {
    fn default() -> Self {
        LinkTimings {
            probe: Duration::from_millis(2_000),
            silence: Duration::from_millis(6_000),
            bus_poll: Duration::from_millis(300),
        }
    }
}

/// Why a link ended, besides I/O errors.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("{path} sent nothing for {ms} ms although it was asked for its clock; the board is unplugged, switched off or its cable is loose")]
    Silent { path: PathBuf, ms: u128 },
    #[error("no board answered on the bus at {path}; check that bus-mode boards are connected and powered")]
    NoBusBoards { path: PathBuf },
}

/// The port plus the bookkeeping every link needs: stamps, forwarding chunks,
/// remembering when the board last spoke.
struct Link {
    path: PathBuf,
    port: SerialStream,
    epoch: Instant,
    tx: mpsc::Sender<LinkEvent>,
    buf: Vec<u8>,
    last_rx: Instant,
    heard: bool,
}

/// The receiver is gone: the daemon is shutting down, the link just ends.
struct Gone;

enum Step {
    Read(usize),
    Timeout,
    /// Bytes the daemon asked for were written.
    Wrote,
}

impl Link {
    fn open(path: &Path, epoch: Instant, tx: mpsc::Sender<LinkEvent>) -> Result<Link, DeviceError> {
        use tokio_serial::{ClearBuffer, SerialPort};
        let port = open_serial(path)?;
        // Bytes queued while nobody read the port are from before the last dump
        // we will ask for; dropping them makes the resynchronisation start clean.
        let _ = port.clear(ClearBuffer::Input);
        Ok(Link {
            path: path.to_owned(),
            port,
            epoch,
            tx,
            buf: vec![0u8; 4096],
            last_rx: Instant::now(),
            heard: false,
        })
    }

    fn t_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    async fn emit(&self, e: LinkEvent) -> Result<(), Gone> {
        self.tx.send(e).await.map_err(|_| Gone)
    }

    async fn write(&mut self, bytes: Vec<u8>) -> Result<Result<(), DeviceError>, Gone> {
        if let Err(source) = self.port.write_all(&bytes).await {
            return Ok(Err(DeviceError::Write {
                path: self.path.clone(),
                source,
            }));
        }
        let t_ms = self.t_ms();
        self.emit(LinkEvent::Chunk(Chunk {
            t_ms,
            dir: Direction::Out,
            bytes,
        }))
        .await?;
        Ok(Ok(()))
    }

    /// Reads once, waiting at most `wait`; forwards what came.
    async fn read(&mut self, wait: Duration) -> Result<Result<Step, DeviceError>, Gone> {
        let read = tokio::time::timeout(wait, self.port.read(&mut self.buf)).await;
        self.forward_read(read).await
    }

    /// Like [`Link::read`], but bytes the daemon asks to write (clock
    /// commands) go out as soon as they come, not after the wait.
    async fn read_or_write(
        &mut self,
        wait: Duration,
        writes: &mut mpsc::Receiver<Vec<u8>>,
    ) -> Result<Result<Step, DeviceError>, Gone> {
        // The select only races the wait for bytes against a write request;
        // forwarding what was read happens after it, so no chunk can be lost
        // to a cancelled send.
        enum Got {
            Write(Vec<u8>),
            Read(Result<std::io::Result<usize>, tokio::time::error::Elapsed>),
        }
        let got = tokio::select! {
            biased;
            Some(bytes) = writes.recv() => Got::Write(bytes),
            r = tokio::time::timeout(wait, self.port.read(&mut self.buf)) => Got::Read(r),
        };
        match got {
            Got::Write(bytes) => Ok(self.write(bytes).await?.map(|()| Step::Wrote)),
            Got::Read(read) => self.forward_read(read).await,
        }
    }

    async fn forward_read(
        &mut self,
        read: Result<std::io::Result<usize>, tokio::time::error::Elapsed>,
    ) -> Result<Result<Step, DeviceError>, Gone> {
        let n = match read {
            Err(_) => return Ok(Ok(Step::Timeout)),
            Ok(Err(source)) => {
                return Ok(Err(DeviceError::Read {
                    path: self.path.clone(),
                    source,
                }))
            }
            Ok(Ok(0)) => {
                return Ok(Err(DeviceError::Closed {
                    path: self.path.clone(),
                }))
            }
            Ok(Ok(n)) => n,
        };
        self.last_rx = Instant::now();
        if !self.heard {
            self.heard = true;
            self.emit(LinkEvent::Up).await?;
        }
        let t_ms = self.t_ms();
        let bytes = self.buf[..n].to_vec();
        self.emit(LinkEvent::Chunk(Chunk {
            t_ms,
            dir: Direction::In,
            bytes,
        }))
        .await?;
        Ok(Ok(Step::Read(n)))
    }

    fn silent_for(&self) -> Duration {
        self.last_rx.elapsed()
    }
}

/// Unwraps a link step: `Gone` ends the link quietly, errors end it loudly.
macro_rules! step {
    ($e:expr) => {
        match $e {
            Err(Gone) => return Ok(()),
            Ok(Err(e)) => return Err(LinkError::from(e)),
            Ok(Ok(v)) => v,
        }
    };
}

/// Runs one single-board DGT link until the port fails, closes or falls silent:
/// sends the start-up sequence, forwards every read, and asks for a clock
/// reading whenever the board has been quiet for `timings.probe`, so silence
/// beyond `timings.silence` means the board is gone (UPDATE_NICE sends nothing
/// while nobody moves and no clock runs). Bytes arriving on `writes` (clock
/// commands, see `daemon.rs`) are written at once, as chunks like the rest.
/// Returns `Ok` when the daemon stops.
pub async fn run_single_link(
    path: &Path,
    epoch: Instant,
    timings: LinkTimings,
    tx: mpsc::Sender<LinkEvent>,
    writes: &mut mpsc::Receiver<Vec<u8>>,
) -> Result<(), LinkError> {
    let mut link = Link::open(path, epoch, tx)?;
    step!(link.write(dgt_startup()).await);
    let mut last_probe = Instant::now();
    loop {
        step!(
            link.read_or_write(timings.probe.min(Duration::from_millis(250)), writes)
                .await
        );
        let quiet = link.silent_for();
        if quiet >= timings.silence {
            return Err(LinkError::Silent {
                path: path.to_owned(),
                ms: quiet.as_millis(),
            });
        }
        if quiet >= timings.probe && last_probe.elapsed() >= timings.probe {
            let mut probe = Vec::new();
            Command::SendClock.encode(&mut probe);
            step!(link.write(probe).await);
            last_probe = Instant::now();
        }
    }
}

/// How long a bus board may take to answer one command: a few ms normally, up
/// to 20 ms while it writes its EEPROM (dgt.md §3), plus the reply's own time on
/// the wire at 9600 baud (a 70-byte board dump takes 73 ms).
const BUS_REPLY_TIMEOUT: Duration = Duration::from_millis(250);
/// Every board answers an address-0 ping within 1100 ms (dgt.md §3).
const BUS_PING_WINDOW: Duration = Duration::from_millis(1_300);
/// How often a garbled or missing change report is asked for again before the
/// board's picture is resynchronised from a full dump.
const BUS_REPEATS: u32 = 3;
/// A bus board that misses this many polls in a row is reported absent.
const BUS_MISSES_OFFLINE: u32 = 5;
/// How often to look for boards added to the bus.
const BUS_REDISCOVER: Duration = Duration::from_secs(15);

/// The bus side of a link: a decoder of our own, to know which board answered
/// what (the session decodes the same bytes independently for tracking).
struct Bus {
    link: Link,
    decoder: Decoder,
    known: Vec<u16>,
}

/// What came back while waiting for one reply.
enum Heard {
    Reply,
    BadFrame,
    Nothing,
}

impl Bus {
    /// The board at `address` answers (found, or back after missed polls): the
    /// daemon is told, and a full dump resynchronises its picture, since the
    /// changes it made while unheard are not all in its change log any more.
    async fn board_present(&mut self, address: u16) -> Result<Result<Heard, DeviceError>, Gone> {
        self.link
            .emit(LinkEvent::BusBoard {
                address,
                present: true,
            })
            .await?;
        self.ask(BusCommandKind::SendBoard, address, |r| {
            matches!(r, BusReply::BoardDump(_))
        })
        .await
    }

    async fn send(
        &mut self,
        kind: BusCommandKind,
        address: u16,
    ) -> Result<Result<(), DeviceError>, Gone> {
        let mut out = Vec::new();
        BusCommand { kind, address }.encode(&mut out);
        self.link.write(out).await
    }

    /// Reads for `wait`, collecting every frame; calls `seen` on each bus
    /// message. Returns whether `want` matched one, or a decode error came.
    async fn listen(
        &mut self,
        wait: Duration,
        mut want: impl FnMut(&BusMessage) -> bool,
        stop_on_match: bool,
    ) -> Result<Result<Heard, DeviceError>, Gone> {
        let deadline = Instant::now() + wait;
        let mut heard = Heard::Nothing;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Ok(heard));
            }
            let n = match self.link.read(left).await? {
                Err(e) => return Ok(Err(e)),
                Ok(Step::Timeout) => return Ok(Ok(heard)),
                Ok(Step::Read(n)) => n,
                // Bus links read with `Link::read`, which never writes.
                Ok(Step::Wrote) => continue,
            };
            self.decoder.push(&self.link.buf[..n]);
            while let Some(r) = self.decoder.next() {
                match r {
                    Ok(Frame::Bus(m)) => {
                        if want(&m) {
                            heard = Heard::Reply;
                        }
                    }
                    Ok(Frame::Single(_)) => {}
                    Err(_) => {
                        if !matches!(heard, Heard::Reply) {
                            heard = Heard::BadFrame;
                        }
                    }
                }
            }
            if stop_on_match && matches!(heard, Heard::Reply) {
                return Ok(Ok(heard));
            }
        }
    }

    /// Sends one command to `address` and waits for a reply from it of the
    /// kind `want` accepts.
    async fn ask(
        &mut self,
        kind: BusCommandKind,
        address: u16,
        want: fn(&BusReply) -> bool,
    ) -> Result<Result<Heard, DeviceError>, Gone> {
        if let Err(e) = self.send(kind, address).await? {
            return Ok(Err(e));
        }
        self.listen(
            BUS_REPLY_TIMEOUT,
            |m| m.address == address && want(&m.reply),
            true,
        )
        .await
    }

    /// Discovery as [HDR] advises: a ping to all; then, until a round finds no
    /// new board, IGNORE_NEXT_PING to every known board and another ping to all.
    async fn discover(&mut self) -> Result<Result<Vec<u16>, DeviceError>, Gone> {
        let mut found = Vec::new();
        loop {
            for a in self.known.clone() {
                if let Err(e) = self
                    .ask(BusCommandKind::IgnoreNextBusPing, a, |r| {
                        matches!(r, BusReply::Ping)
                    })
                    .await?
                {
                    return Ok(Err(e));
                }
            }
            if let Err(e) = self.send(BusCommandKind::Ping, 0).await? {
                return Ok(Err(e));
            }
            let mut new = Vec::new();
            let known = self.known.clone();
            if let Err(e) = self
                .listen(
                    BUS_PING_WINDOW,
                    |m| {
                        if matches!(m.reply, BusReply::Ping)
                            && !known.contains(&m.address)
                            && !new.contains(&m.address)
                        {
                            new.push(m.address);
                        }
                        false
                    },
                    false,
                )
                .await?
            {
                return Ok(Err(e));
            }
            if new.is_empty() {
                return Ok(Ok(found));
            }
            for a in new {
                self.known.push(a);
                found.push(a);
            }
        }
    }
}

/// Runs a bus-mode DGT link: discovers the boards, asks each for a full dump
/// and its clock, then polls SEND_CHANGES on every board every
/// `timings.bus_poll` (REPEAT_CHANGES after a garbled or missing answer, and a
/// full dump if the repeats fail too, since those changes are then lost) and
/// SEND_CLK every `timings.probe`. A board missing five polls
/// in a row is reported absent; one that answers again is resynchronised with a
/// fresh dump. The port fails over (and is reopened) when no board answers at all.
pub async fn run_dgt_bus_link(
    path: &Path,
    epoch: Instant,
    timings: LinkTimings,
    tx: mpsc::Sender<LinkEvent>,
) -> Result<(), LinkError> {
    let link = Link::open(path, epoch, tx)?;
    let mut bus = Bus {
        link,
        decoder: Decoder::new(Mode::Bus),
        known: Vec::new(),
    };
    // A board left in single-board mode (by other software, or a host that
    // spoke to it alone) would swallow the first bus command as its switch
    // back (dgt.md §3); 0x4a switches every board to bus mode silently.
    let mut to_bus = Vec::new();
    Command::ToBusMode.encode(&mut to_bus);
    step!(bus.link.write(to_bus).await);
    let found = step!(bus.discover().await);
    if found.is_empty() {
        return Err(LinkError::NoBusBoards {
            path: path.to_owned(),
        });
    }
    let mut misses: std::collections::BTreeMap<u16, u32> = found.iter().map(|&a| (a, 0)).collect();
    for &a in &found {
        step!(bus.board_present(a).await);
        step!(
            bus.ask(BusCommandKind::SendClock, a, |r| matches!(
                r,
                BusReply::Clock(_) | BusReply::ClockAck(_)
            ))
            .await
        );
    }
    let mut last_clock = Instant::now();
    let mut last_discovery = Instant::now();
    loop {
        let round = Instant::now();
        let clocks = last_clock.elapsed() >= timings.probe;
        let addresses: Vec<u16> = misses.keys().copied().collect();
        for a in addresses {
            let mut heard = step!(
                bus.ask(BusCommandKind::SendChanges, a, |r| matches!(
                    r,
                    BusReply::Changes(_)
                ))
                .await
            );
            // A garbled answer lost changes the board will not send again:
            // ask for the same packet once more (dgt.md §3).
            let mut retries = 0;
            while !matches!(heard, Heard::Reply) && retries < BUS_REPEATS {
                retries += 1;
                heard = step!(
                    bus.ask(BusCommandKind::RepeatChanges, a, |r| matches!(
                        r,
                        BusReply::Changes(_)
                    ))
                    .await
                );
            }
            if !matches!(heard, Heard::Reply) {
                // The changes are lost for good; a full dump puts the picture
                // right again (and proves the board is there at all).
                heard = step!(
                    bus.ask(BusCommandKind::SendBoard, a, |r| matches!(
                        r,
                        BusReply::BoardDump(_)
                    ))
                    .await
                );
            }
            let m = misses.entry(a).or_insert(0);
            if matches!(heard, Heard::Reply) {
                if *m >= BUS_MISSES_OFFLINE {
                    step!(bus.board_present(a).await);
                }
                *m = 0;
            } else {
                *m += 1;
                if *m == BUS_MISSES_OFFLINE
                    && bus
                        .link
                        .emit(LinkEvent::BusBoard {
                            address: a,
                            present: false,
                        })
                        .await
                        .is_err()
                {
                    return Ok(());
                }
            }
            if clocks {
                step!(
                    bus.ask(BusCommandKind::SendClock, a, |r| matches!(
                        r,
                        BusReply::Clock(_) | BusReply::ClockAck(_)
                    ))
                    .await
                );
            }
        }
        if clocks {
            last_clock = Instant::now();
        }
        if misses.values().all(|&m| m >= BUS_MISSES_OFFLINE)
            && bus.link.silent_for() >= timings.silence
        {
            return Err(LinkError::Silent {
                path: path.to_owned(),
                ms: bus.link.silent_for().as_millis(),
            });
        }
        if last_discovery.elapsed() >= BUS_REDISCOVER {
            last_discovery = Instant::now();
            for a in step!(bus.discover().await) {
                misses.insert(a, 0);
                if bus
                    .link
                    .emit(LinkEvent::BusBoard {
                        address: a,
                        present: true,
                    })
                    .await
                    .is_err()
                {
                    return Ok(());
                }
                step!(
                    bus.ask(BusCommandKind::SendBoard, a, |r| matches!(
                        r,
                        BusReply::BoardDump(_)
                    ))
                    .await
                );
            }
        }
        let spent = round.elapsed();
        if spent < timings.bus_poll {
            tokio::time::sleep(timings.bus_poll - spent).await;
        }
    }
}

/// Supervises one port for the daemon's lifetime: runs the link, reports it
/// down when it ends, waits [`reopen_backoff`], and opens it again, so an
/// unplugged board is followed again within seconds of its return. Ends when
/// the daemon drops the receiver.
pub async fn supervise(
    path: PathBuf,
    bus: bool,
    epoch: Instant,
    timings: LinkTimings,
    tx: mpsc::Sender<LinkEvent>,
    mut writes: mpsc::Receiver<Vec<u8>>,
) {
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        // Writes asked for while the last link failed are for a board state
        // that is gone (the daemon fails its clock commands on `Down` and sends
        // none until the board answers again): never write them to the board
        // that comes back.
        while writes.try_recv().is_ok() {}
        // The link's reports pass through here so that we see whether a board
        // answered: a board that answered and was then unplugged is replugged
        // as a fresh start (250 ms), not as the n-th failure of an absent one.
        let (link_tx, mut link_rx) = mpsc::channel::<LinkEvent>(64);
        let link = async {
            if bus {
                run_dgt_bus_link(&path, epoch, timings, link_tx).await
            } else {
                run_single_link(&path, epoch, timings, link_tx, &mut writes).await
            }
        };
        tokio::pin!(link);
        let mut answered = false;
        let result = loop {
            tokio::select! {
                biased;
                Some(e) = link_rx.recv() => {
                    answered |= matches!(e, LinkEvent::Up | LinkEvent::BusBoard { present: true, .. });
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
                r = &mut link => break r,
            }
        };
        // What the link reported just before it ended.
        while let Ok(e) = link_rx.try_recv() {
            answered |= matches!(e, LinkEvent::Up | LinkEvent::BusBoard { present: true, .. });
            if tx.send(e).await.is_err() {
                return;
            }
        }
        let reason = match result {
            Ok(()) => return,
            Err(e) => e.to_string(),
        };
        if tx.send(LinkEvent::Down(reason)).await.is_err() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_is_reset_serial_version_dump_nice_clock() {
        assert_eq!(dgt_startup(), vec![0x40, 0x45, 0x4d, 0x42, 0x4b, 0x41]);
    }

    #[test]
    fn backoff_grows_then_caps() {
        assert_eq!(reopen_backoff(0), Duration::from_millis(250));
        assert_eq!(reopen_backoff(1), Duration::from_millis(500));
        assert_eq!(reopen_backoff(10), Duration::from_millis(5_000));
    }
}
