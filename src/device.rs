//! The device layer: the only code that opens board ports and moves bytes.
//!
//! Everything it reads or writes leaves as a [`Chunk`] stamped with the time since
//! the link started, which is exactly what the capture format records and what the
//! session consumes. So the daemon, the recorder and `replay` see the same stream.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eboard_protocols::dgt::Command;
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
/// reopen.
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
