//! The board side's reader of host bytes: what a DGT board does with the commands
//! a host sends. The virtual board uses it; the daemon never does.
//!
//! Single-board commands are recognised by their code and fixed lengths (`0x60`
//! carries a length byte, `0x2b` a size byte); bus commands by bit 7 and verified
//! by their checksum. Anything else is reported as a typed error, which a real
//! board would silently ignore.

use super::encode::bus_checksum;
use super::types::{BusCommand, BusCommandKind, ClockCommand, Command, Hms, HostFrame};

/// Bytes buffered before the oldest are dropped. A host frame is at most 129
/// bytes (`0x60` with a 127-byte length), so this only bites a caller that pushes
/// far more than it reads.
pub const HOST_BUFFER_CAP: usize = 4096;

/// Why host bytes did not form a command.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
pub enum HostDecodeError {
    /// Bytes that start no known command; a real board ignores them.
    #[error("skipped {count} byte(s) that start no DGT command (a real board ignores them)")]
    Garbage { count: usize },
    /// A bus command whose checksum byte does not match its first three bytes.
    #[error("bus command {cmd:#04x} has checksum {found:#04x}, expected {expected:#04x}; the host should resend it")]
    BadChecksum { cmd: u8, expected: u8, found: u8 },
    /// A bus command cut short by a byte with bit 7 set (the start of another frame).
    #[error("bus command {cmd:#04x} cut after {len} byte(s) by a byte with bit 7 set")]
    CutBusCommand { cmd: u8, len: usize },
    /// A `0x2b` clock message that does not follow `0x2b size 0x03 id content 0x00`
    /// with the size its id requires.
    #[error("malformed clock message ({reason}): bytes {bytes:02x?}")]
    BadClockMessage {
        reason: &'static str,
        bytes: Vec<u8>,
    },
    /// A `0x60` LED command in a layout other than the Revelation II one
    /// (`60 04 pattern start end 00`), e.g. the Pegasus layout.
    #[error("LED command with {len} byte(s) after its length byte is not the Revelation II layout (60 04 pattern start end 00)")]
    UnsupportedLeds { len: usize },
    /// The caller pushed more than [`HOST_BUFFER_CAP`] bytes without reading; the
    /// oldest were dropped.
    #[error(
        "dropped {dropped} buffered host byte(s): read frames with next() before pushing more"
    )]
    Overflow { dropped: usize },
}

impl BusCommandKind {
    /// The bus command for a command byte (bit 7 set), if it is one.
    pub fn from_code(code: u8) -> Option<BusCommandKind> {
        use BusCommandKind::*;
        Some(match code {
            0x81 => SendClock,
            0x82 => SendBoard,
            0x83 => SendChanges,
            0x84 => RepeatChanges,
            0x85 => SetStartGame,
            0x86 => SendFromStart,
            0x87 => Ping,
            0x88 => EndBusMode,
            0x89 => Reset,
            0x8a => IgnoreNextBusPing,
            0x8b => SendVersion,
            0x8c => SendBoard50B,
            0x8d => SendAllData,
            _ => return None,
        })
    }
}

/// Size byte each clock sub-command requires (dgt.md §2.2): bytes after the size byte.
fn clock_size(id: u8) -> Option<usize> {
    Some(match id {
        0x01 | 0x02 => 0x0b,
        0x03 | 0x08 | 0x09 => 0x03,
        0x0a => 0x0a,
        0x0b => 0x04,
        0x0c => 0x0c,
        0x0d => 0x0f,
        _ => return None,
    })
}

fn starts_frame(b: u8) -> bool {
    b == 0x2b
        || b == 0x60
        || Command::from_simple_code(b).is_some()
        || BusCommandKind::from_code(b).is_some()
}

/// Parses a complete `0x2b` frame (`f` = all `size + 2` bytes).
fn parse_clock(f: &[u8]) -> Result<ClockCommand, HostDecodeError> {
    let bad = |reason| HostDecodeError::BadClockMessage {
        reason,
        bytes: f.to_vec(),
    };
    if f[2] != 0x03 {
        return Err(bad("start marker is not 0x03"));
    }
    if f[f.len() - 1] != 0x00 {
        return Err(bad("end marker is not 0x00"));
    }
    let id = f[3];
    match clock_size(id) {
        None => return Err(bad("unknown clock command id")),
        Some(size) if size != usize::from(f[1]) => {
            return Err(bad("size byte does not match the command id"))
        }
        Some(_) => {}
    }
    let c = &f[4..f.len() - 1];
    let arr = |s: &[u8]| -> [u8; 11] {
        let mut a = [0; 11];
        a[..s.len()].copy_from_slice(s);
        a
    };
    Ok(match id {
        0x01 => {
            let a = arr(&c[..6]);
            ClockCommand::Display {
                segments: [a[0], a[1], a[2], a[3], a[4], a[5]],
                icons: c[6],
                beep: c[7],
            }
        }
        0x02 => ClockCommand::Icons {
            icons: [c[0], c[1], c[2], c[3]],
            special: c[4],
        },
        0x03 => ClockCommand::End,
        0x08 => ClockCommand::Button,
        0x09 => ClockCommand::Version,
        0x0a => ClockCommand::SetAndRun {
            left: Hms {
                hours: c[0],
                minutes: c[1],
                seconds: c[2],
            },
            right: Hms {
                hours: c[3],
                minutes: c[4],
                seconds: c[5],
            },
            flags: c[6],
        },
        0x0b => ClockCommand::Beep { duration: c[0] },
        0x0c => {
            let a = arr(&c[..8]);
            ClockCommand::Ascii {
                text: [a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]],
                beep: c[8],
            }
        }
        // 0x0d: clock_size() admitted no other id.
        _ => ClockCommand::Rev2Ascii {
            text: arr(&c[..11]),
            beep: c[11],
        },
    })
}

/// Incremental parser of host → board bytes.
#[derive(Clone, Debug, Default)]
pub struct HostDecoder {
    buf: Vec<u8>,
    pos: usize,
    dropped: usize,
}

impl HostDecoder {
    /// An empty decoder.
    pub fn new() -> HostDecoder {
        HostDecoder::default()
    }

    /// Appends received bytes. Beyond [`HOST_BUFFER_CAP`] unread bytes the oldest are
    /// dropped and reported by the next call to [`HostDecoder::next`].
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > HOST_BUFFER_CAP {
            let excess = self.buf.len() - HOST_BUFFER_CAP;
            self.buf.drain(..excess);
            self.dropped += excess;
        }
    }

    /// The next frame or error; `None` when more bytes are needed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<HostFrame, HostDecodeError>> {
        if self.dropped > 0 {
            let dropped = std::mem::take(&mut self.dropped);
            return Some(Err(HostDecodeError::Overflow { dropped }));
        }
        let rest = &self.buf[self.pos..];
        let (&b, _) = rest.split_first()?;
        let (consumed, result) = if let Some(kind) = BusCommandKind::from_code(b) {
            if let Some(k) = rest.iter().take(4).skip(1).position(|&x| x >= 0x80) {
                (
                    k + 1,
                    Err(HostDecodeError::CutBusCommand { cmd: b, len: k + 1 }),
                )
            } else if rest.len() < 4 {
                return None;
            } else {
                let expected = bus_checksum(&rest[..3]);
                let found = rest[3];
                let r = if expected == found {
                    Ok(HostFrame::Bus(BusCommand {
                        kind,
                        address: (u16::from(rest[1]) << 7) | u16::from(rest[2]),
                    }))
                } else {
                    Err(HostDecodeError::BadChecksum {
                        cmd: b,
                        expected,
                        found,
                    })
                };
                (4, r)
            }
        } else if b == 0x2b {
            let size = usize::from(*rest.get(1)?);
            if !(3..=0x0f).contains(&size) {
                (
                    2,
                    Err(HostDecodeError::BadClockMessage {
                        reason: "size byte out of range 3..=15",
                        bytes: rest[..2].to_vec(),
                    }),
                )
            } else if rest.len() < size + 2 {
                return None;
            } else {
                let f = &rest[..size + 2];
                (
                    size + 2,
                    parse_clock(f).map(|c| HostFrame::Single(Command::Clock(c))),
                )
            }
        } else if b == 0x60 {
            let len = usize::from(*rest.get(1)?);
            if rest.len() < len + 2 {
                return None;
            }
            let f = &rest[..len + 2];
            let r = if len == 4 && f[5] == 0x00 {
                Ok(HostFrame::Single(Command::SetLeds {
                    pattern: f[2],
                    start: f[3],
                    end: f[4],
                }))
            } else {
                Err(HostDecodeError::UnsupportedLeds { len })
            };
            (len + 2, r)
        } else if let Some(c) = Command::from_simple_code(b) {
            (1, Ok(HostFrame::Single(c)))
        } else {
            let count = rest
                .iter()
                .position(|&x| starts_frame(x))
                .unwrap_or(rest.len());
            (count, Err(HostDecodeError::Garbage { count }))
        };
        self.pos += consumed;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(bytes: &[u8]) -> Vec<Result<HostFrame, HostDecodeError>> {
        let mut d = HostDecoder::new();
        d.push(bytes);
        std::iter::from_fn(|| d.next()).collect()
    }

    #[test]
    fn bus_checksum_example_from_the_header() {
        // dgt.md §3: `81 10 06` → checksum 0x17.
        let got = decode_all(&[0x81, 0x10, 0x06, 0x17]);
        assert_eq!(
            got,
            vec![Ok(HostFrame::Bus(BusCommand {
                kind: BusCommandKind::SendClock,
                address: (0x10 << 7) | 0x06,
            }))]
        );
        let bad = decode_all(&[0x81, 0x10, 0x06, 0x18]);
        assert_eq!(
            bad,
            vec![Err(HostDecodeError::BadChecksum {
                cmd: 0x81,
                expected: 0x17,
                found: 0x18
            })]
        );
    }

    #[test]
    fn clock_version_request() {
        assert_eq!(
            decode_all(&[0x2b, 0x03, 0x03, 0x09, 0x00]),
            vec![Ok(HostFrame::Single(Command::Clock(ClockCommand::Version)))]
        );
    }

    #[test]
    fn garbage_is_one_error_then_commands_follow() {
        let got = decode_all(&[0x01, 0x02, 0x7e, 0x42]);
        assert_eq!(
            got,
            vec![
                Err(HostDecodeError::Garbage { count: 3 }),
                Ok(HostFrame::Single(Command::SendBoard))
            ]
        );
    }

    #[test]
    fn cut_bus_command_restarts_at_the_high_byte() {
        let got = decode_all(&[0x83, 0x01, 0x8b, 0x00, 0x00, 0x0b]);
        assert_eq!(
            got[0],
            Err(HostDecodeError::CutBusCommand { cmd: 0x83, len: 2 })
        );
        assert_eq!(
            got[1],
            Ok(HostFrame::Bus(BusCommand {
                kind: BusCommandKind::SendVersion,
                address: 0
            }))
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn pegasus_leds_are_skipped_whole() {
        let got = decode_all(&[0x60, 0x02, 0x00, 0x00, 0x42]);
        assert_eq!(got[0], Err(HostDecodeError::UnsupportedLeds { len: 2 }));
        assert_eq!(got[1], Ok(HostFrame::Single(Command::SendBoard)));
    }

    #[test]
    fn overflow_is_reported_and_bounded() {
        let mut d = HostDecoder::new();
        d.push(&vec![0x42; HOST_BUFFER_CAP + 10]);
        assert_eq!(
            d.next(),
            Some(Err(HostDecodeError::Overflow { dropped: 10 }))
        );
        assert_eq!(std::iter::from_fn(|| d.next()).count(), HOST_BUFFER_CAP);
    }
}
