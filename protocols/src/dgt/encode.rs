//! Encoders: every DGT value to its wire bytes.
//!
//! Encoders never fail. Values that cannot be represented are made representable
//! in a documented way (text outside ASCII becomes `?`, bytes of raw payloads lose
//! bit 7, an over-long payload is cut at the 14-bit length limit) because a
//! message with a high bit inside its payload would desynchronise every reader.

use super::codes::{bwtime_from_ack, bwtime_payload, encode_ee, piece_code};
use super::types::{
    id, BusCommand, BusMessage, BusReply, ClockCommand, Command, EeRecord, HostFrame, Message,
    MESSAGE_BIT,
};
use crate::picture::{field_to_square, square_to_field, Picture};

/// Largest total length the 14-bit length field can carry.
pub const MAX_MESSAGE_LEN: usize = (1 << 14) - 1;

/// Bus reply ids (board → host in bus mode, dgt.md §3).
pub mod bus_id {
    pub const BOARD_DUMP: u8 = 0x83;
    pub const BWTIME: u8 = 0x84;
    pub const CHANGES: u8 = 0x85;
    pub const FROM_START: u8 = 0x86;
    pub const PING: u8 = 0x87;
    pub const START_GAME_WRITTEN: u8 = 0x88;
    pub const VERSION: u8 = 0x89;
    pub const DRAUGHTS_50: u8 = 0x8a;
}

/// The 7-bit checksum of bus frames: the sum of all bytes, bit 7 cleared.
pub fn bus_checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |acc, &b| acc.wrapping_add(b)) & 0x7f
}

fn push_picture(p: &Picture, out: &mut Vec<u8>) {
    out.extend((0..64u8).map(|f| piece_code(p.get(field_to_square(f)))));
}

/// ASCII text as payload bytes; anything else becomes `?` so no byte has bit 7 set.
fn push_text(s: &str, out: &mut Vec<u8>) {
    out.extend(s.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' }));
}

fn push_raw7(bytes: &[u8], out: &mut Vec<u8>) {
    out.extend(bytes.iter().map(|b| b & 0x7f));
}

fn push_ee(records: &[EeRecord], out: &mut Vec<u8>) {
    for r in records {
        encode_ee(r, out);
    }
}

/// Writes the header's 7-bit length pair at `at` for a message spanning `at..out.len()`,
/// cutting the message at [`MAX_MESSAGE_LEN`] first.
fn patch_len(out: &mut Vec<u8>, start: usize, len_at: usize) {
    if out.len() - start > MAX_MESSAGE_LEN {
        out.truncate(start + MAX_MESSAGE_LEN);
    }
    let len = out.len() - start;
    out[len_at] = ((len >> 7) & 0x7f) as u8;
    out[len_at + 1] = (len & 0x7f) as u8;
}

impl Message {
    /// The message id byte (with [`MESSAGE_BIT`] set).
    pub fn id(&self) -> u8 {
        match self {
            Message::BoardDump(_) => id::BOARD_DUMP,
            Message::FieldUpdate { .. } => id::FIELD_UPDATE,
            Message::Clock(_) | Message::ClockAck(_) => id::BWTIME,
            Message::EeMoves(_) => id::EE_MOVES,
            Message::BusAddress(_) => id::BUSADRES,
            Message::SerialNumber(_) => id::SERIALNR,
            Message::LongSerialNumber(_) => id::LONG_SERIALNR,
            Message::Trademark(_) => id::TRADEMARK,
            Message::Version { .. } => id::VERSION,
            Message::BatteryStatus(_) => id::BATTERY_STATUS,
            Message::Draughts50 { id, .. } | Message::Unknown { id, .. } => id | MESSAGE_BIT,
        }
    }

    /// Appends the message as a board sends it: `0x80|id`, 14-bit total length in
    /// two 7-bit bytes (header included), payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[self.id(), 0, 0]);
        match self {
            Message::BoardDump(p) => push_picture(p, out),
            Message::FieldUpdate { square, sensed } => {
                out.extend_from_slice(&[square_to_field(*square), piece_code(*sensed)]);
            }
            Message::Clock(t) => out.extend_from_slice(&bwtime_payload(t)),
            Message::ClockAck(a) => out.extend_from_slice(&bwtime_from_ack(a)),
            Message::EeMoves(records) => push_ee(records, out),
            Message::BusAddress(a) => {
                out.extend_from_slice(&[((a >> 7) & 0x7f) as u8, (a & 0x7f) as u8])
            }
            Message::SerialNumber(s) | Message::LongSerialNumber(s) | Message::Trademark(s) => {
                push_text(s, out)
            }
            Message::Version { major, minor } => {
                out.extend_from_slice(&[major & 0x7f, minor & 0x7f])
            }
            Message::BatteryStatus(b) => push_raw7(&b.payload, out),
            Message::Draughts50 { fields, .. } => push_raw7(fields, out),
            Message::Unknown { payload, .. } => push_raw7(payload, out),
        }
        patch_len(out, start, start + 1);
    }
}

impl BusReply {
    /// The bus reply id byte.
    pub fn id(&self) -> u8 {
        match self {
            BusReply::BoardDump(_) => bus_id::BOARD_DUMP,
            BusReply::Clock(_) | BusReply::ClockAck(_) => bus_id::BWTIME,
            BusReply::Changes(_) => bus_id::CHANGES,
            BusReply::FromStart(_) => bus_id::FROM_START,
            BusReply::Ping => bus_id::PING,
            BusReply::StartGameWritten => bus_id::START_GAME_WRITTEN,
            BusReply::Version { .. } => bus_id::VERSION,
            BusReply::Draughts50(_) => bus_id::DRAUGHTS_50,
            BusReply::Unknown { id, .. } => id | MESSAGE_BIT,
        }
    }
}

impl BusMessage {
    /// Appends the frame as a board in bus mode sends it: id, length (id through
    /// checksum) in two 7-bit bytes, address in two 7-bit bytes, data, checksum.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let a = self.address;
        out.extend_from_slice(&[
            self.reply.id(),
            0,
            0,
            ((a >> 7) & 0x7f) as u8,
            (a & 0x7f) as u8,
        ]);
        match &self.reply {
            BusReply::BoardDump(p) => push_picture(p, out),
            BusReply::Clock(t) => out.extend_from_slice(&bwtime_payload(t)),
            BusReply::ClockAck(ack) => out.extend_from_slice(&bwtime_from_ack(ack)),
            BusReply::Changes(r) | BusReply::FromStart(r) => push_ee(r, out),
            BusReply::Ping | BusReply::StartGameWritten => {}
            BusReply::Version { major, minor } => {
                out.extend_from_slice(&[major & 0x7f, minor & 0x7f])
            }
            BusReply::Draughts50(d) => push_raw7(d, out),
            BusReply::Unknown { data, .. } => push_raw7(data, out),
        }
        // Leave room for the checksum within the 14-bit limit.
        if out.len() - start > MAX_MESSAGE_LEN - 1 {
            out.truncate(start + MAX_MESSAGE_LEN - 1);
        }
        out.push(0);
        patch_len(out, start, start + 1);
        let last = out.len() - 1;
        out[last] = bus_checksum(&out[start..last]);
    }
}

impl ClockCommand {
    /// The clock sub-command id (dgt.md §2.2).
    pub fn id(&self) -> u8 {
        match self {
            ClockCommand::Display { .. } => 0x01,
            ClockCommand::Icons { .. } => 0x02,
            ClockCommand::End => 0x03,
            ClockCommand::Button => 0x08,
            ClockCommand::Version => 0x09,
            ClockCommand::SetAndRun { .. } => 0x0a,
            ClockCommand::Beep { .. } => 0x0b,
            ClockCommand::Ascii { .. } => 0x0c,
            ClockCommand::Rev2Ascii { .. } => 0x0d,
        }
    }

    /// Appends `0x2b, size, 0x03, id, content…, 0x00` with size = total − 2.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0x2b, 0, 0x03, self.id()]);
        match self {
            ClockCommand::Display {
                segments,
                icons,
                beep,
            } => {
                out.extend_from_slice(segments);
                out.extend_from_slice(&[*icons, *beep]);
            }
            ClockCommand::Icons { icons, special } => {
                out.extend_from_slice(icons);
                out.extend_from_slice(&[*special, 0, 0, 0]);
            }
            ClockCommand::End | ClockCommand::Button | ClockCommand::Version => {}
            ClockCommand::SetAndRun { left, right, flags } => out.extend_from_slice(&[
                left.hours,
                left.minutes,
                left.seconds,
                right.hours,
                right.minutes,
                right.seconds,
                *flags,
            ]),
            ClockCommand::Beep { duration } => out.push(*duration),
            ClockCommand::Ascii { text, beep } => {
                out.extend_from_slice(text);
                out.push(*beep);
            }
            ClockCommand::Rev2Ascii { text, beep } => {
                out.extend_from_slice(text);
                out.push(*beep);
            }
        }
        out.push(0x00);
        // At most 17 bytes, so the size always fits in one byte.
        out[start + 1] = (out.len() - start - 2) as u8;
    }
}

impl Command {
    /// The command byte (dgt.md §1.3).
    pub fn code(&self) -> u8 {
        match self {
            Command::Reset => 0x40,
            Command::SendClock => 0x41,
            Command::SendBoard => 0x42,
            Command::SendUpdate => 0x43,
            Command::SendUpdateBoard => 0x44,
            Command::ReturnSerialNumber => 0x45,
            Command::ReturnBusAddress => 0x46,
            Command::SendTrademark => 0x47,
            Command::SendEeMoves => 0x49,
            Command::ToBusMode => 0x4a,
            Command::SendUpdateNice => 0x4b,
            Command::SendBatteryStatus => 0x4c,
            Command::SendVersion => 0x4d,
            Command::SendBoard50B => 0x50,
            Command::Scan50B => 0x51,
            Command::SendBoard50W => 0x52,
            Command::Scan50W => 0x53,
            Command::Scan100 => 0x54,
            Command::ReturnLongSerialNumber => 0x55,
            Command::SetLeds { .. } => 0x60,
            Command::Clock(_) => 0x2b,
        }
    }

    /// The argument-less command for a command byte, if there is one.
    pub fn from_simple_code(code: u8) -> Option<Command> {
        Some(match code {
            0x40 => Command::Reset,
            0x41 => Command::SendClock,
            0x42 => Command::SendBoard,
            0x43 => Command::SendUpdate,
            0x44 => Command::SendUpdateBoard,
            0x45 => Command::ReturnSerialNumber,
            0x46 => Command::ReturnBusAddress,
            0x47 => Command::SendTrademark,
            0x49 => Command::SendEeMoves,
            0x4a => Command::ToBusMode,
            0x4b => Command::SendUpdateNice,
            0x4c => Command::SendBatteryStatus,
            0x4d => Command::SendVersion,
            0x50 => Command::SendBoard50B,
            0x51 => Command::Scan50B,
            0x52 => Command::SendBoard50W,
            0x53 => Command::Scan50W,
            0x54 => Command::Scan100,
            0x55 => Command::ReturnLongSerialNumber,
            _ => return None,
        })
    }

    /// Appends the command bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Command::SetLeds {
                pattern,
                start,
                end,
            } => out.extend_from_slice(&[0x60, 0x04, *pattern, *start, *end, 0x00]),
            Command::Clock(c) => c.encode(out),
            simple => out.push(simple.code()),
        }
    }
}

impl BusCommand {
    /// Appends `cmd, addr MSB, addr LSB, checksum` (dgt.md §3).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let a = self.address;
        let frame = [self.kind as u8, ((a >> 7) & 0x7f) as u8, (a & 0x7f) as u8];
        out.extend_from_slice(&frame);
        out.push(bus_checksum(&frame));
    }
}

impl HostFrame {
    /// Appends the frame's bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            HostFrame::Single(c) => c.encode(out),
            HostFrame::Bus(b) => b.encode(out),
        }
    }
}
