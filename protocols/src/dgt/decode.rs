//! The board → host decoder: the daemon's hot path.
//!
//! Framing (dgt.md §1.1): only the first byte of a message has bit 7 set, so the
//! decoder drops bytes until one has it, and a high byte inside a payload means the
//! message was cut (e.g. a USB glitch or a board reset): the cut message is
//! reported and decoding restarts at that byte. In bus mode (dgt.md §3) the same
//! rule holds, and frames carry an address and a checksum.
//!
//! Cost model: one `memcpy` per `push`, one scan for high bits per payload, and no
//! allocation for field updates, BWTIME and board dumps. The buffer is an offset
//! into a `Vec` that is compacted only when the consumed prefix is large, so the
//! amortised cost per byte stays constant whatever the chunking.

use shakmaty::Square;

use super::bus_id;
use super::codes::{
    ack_from_bwtime, bwtime_from_payload, bwtime_is_ack, decode_ee, sensed_from_code,
    sensed_from_nibble, BwTimeFault, EeFault,
};
use super::encode::bus_checksum;
use super::types::{id, BatteryStatus, BusMessage, BusReply, EeRecord, Message};
use crate::picture::Picture;

/// Unread bytes kept at most. Four maximal messages: far more than any board sends
/// between two reads, so reaching it means the caller stopped reading.
pub const BUFFER_CAP: usize = 4 << 14;

/// Consumed bytes tolerated at the front of the buffer before it is compacted.
const COMPACT_AT: usize = 1024;

/// Which framing the board is using. Bus replies reuse single-board ids (`0x86`
/// is a board dump in one and FROM_START in the other), so the caller, who knows
/// which commands it sent, must say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One board on the line: `id, len, len, payload`.
    Single,
    /// Boards in bus mode: `id, len, len, addr, addr, data, checksum`.
    Bus,
}

/// One decoded message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Frame {
    Single(Message),
    Bus(BusMessage),
}

/// Why bytes from a board did not decode. Every error has consumed the bytes it
/// describes, so the caller just logs it and calls `next` again.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Bytes outside any message (no message start before them), skipped.
    #[error("skipped {count} byte(s) outside any message (line noise or a message whose start was lost)")]
    Garbage { count: usize },
    /// A byte with bit 7 set arrived `len` bytes into message `id`: the message was
    /// cut short, and the high byte starts the next one.
    #[error(
        "message {id:#04x} cut after {len} byte(s) by the start of another message; it is dropped"
    )]
    Cut { id: u8, len: usize },
    /// The length in the header cannot be right for this id.
    #[error("message {id:#04x} declares length {len}, expected {expected}; dropped its header and resynchronising")]
    BadLength {
        id: u8,
        len: usize,
        expected: &'static str,
    },
    /// A bus frame whose checksum does not match; the host should resend (or use
    /// REPEAT_CHANGES for changes).
    #[error("bus frame {id:#04x} from address {address} has checksum {found:#04x}, expected {expected:#04x}; request it again")]
    BadChecksum {
        id: u8,
        address: u16,
        expected: u8,
        found: u8,
    },
    /// A BWTIME byte that is neither valid BCD nor a valid hours nibble.
    #[error("clock times in message {id:#04x}: payload byte {index} = {byte:#04x} is not a valid time digit")]
    BadBcd { id: u8, index: u8, byte: u8 },
    /// A piece code above `0x0f`.
    #[error(
        "message {id:#04x}: piece code {code:#04x} at payload byte {index} is not a DGT piece code"
    )]
    BadPieceCode { id: u8, index: usize, code: u8 },
    /// A field number above 63.
    #[error("message {id:#04x}: field number {field} is not 0..=63")]
    BadField { id: u8, field: u8 },
    /// An EEPROM event stream record that cannot be read.
    #[error("EEPROM events in message {id:#04x}: {detail}")]
    BadEeRecord { id: u8, detail: String },
    /// A serial number that is not 5 ASCII digits (optionally followed by a space
    /// and a version, as old boards send).
    #[error("message {id:#04x}: serial number {text:?} is not 5 digits")]
    BadSerial { id: u8, text: String },
    /// The caller pushed more than [`BUFFER_CAP`] unread bytes; the oldest were dropped.
    #[error("dropped {dropped} unread byte(s): call next() until None before pushing more")]
    Overflow { dropped: usize },
}

/// Incremental decoder of board → host bytes.
#[derive(Clone, Debug)]
pub struct Decoder {
    mode: Mode,
    buf: Vec<u8>,
    /// Start of unread bytes in `buf`.
    pos: usize,
    /// Bytes after `pos` already known to have bit 7 clear, so a long message
    /// arriving in small chunks is scanned once, not once per chunk.
    clean: usize,
    /// Garbage bytes consumed but not yet reported (reported once, together).
    skipped: usize,
    /// Bytes dropped by the buffer bound, not yet reported.
    dropped: usize,
}

impl Decoder {
    /// An empty decoder for `mode`.
    pub fn new(mode: Mode) -> Decoder {
        Decoder {
            mode,
            buf: Vec::with_capacity(4096),
            pos: 0,
            clean: 0,
            skipped: 0,
            dropped: 0,
        }
    }

    /// The framing in use.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Switches framing (after sending `0x4a` or a single-board command). Unread
    /// bytes stay and are read with the new framing.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Appends received bytes. Beyond [`BUFFER_CAP`] unread bytes the oldest are
    /// dropped and reported by the next call to [`Decoder::next`].
    pub fn push(&mut self, bytes: &[u8]) {
        let unread = self.buf.len() - self.pos;
        if unread == 0 {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos >= COMPACT_AT && self.pos >= unread {
            // Moving the unread tail costs at most what was consumed since the
            // last compaction, so the cost per byte stays constant, and the
            // buffer stays near the size of one read plus one pending message
            // instead of growing (and reallocating) towards the cap.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
        let unread = self.buf.len() - self.pos;
        if unread > BUFFER_CAP {
            let excess = unread - BUFFER_CAP;
            self.pos += excess;
            self.dropped += excess;
            self.clean = 0;
            // Keep the allocation bounded too: drop what was cut off.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.clean = 0;
    }

    /// The next message or error; `None` when more bytes are needed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<Frame, DecodeError>> {
        // Fast path for the messages that make up nearly all traffic. Each one is
        // built in the `return` expression itself: a `Frame` is 136 bytes, and
        // building it anywhere else (a helper's result, a local) costs a copy of
        // all 136 bytes per message, more than decoding a BWTIME. Anything the
        // fast path does not finish goes through `step` and `decode_single`,
        // which apply the same rules one check at a time.
        if self.mode == Mode::Single && self.dropped == 0 && self.skipped == 0 {
            let start = self.pos;
            let rest = &self.buf[start..];
            if rest.len() >= 3 && rest[0] >= 0x80 && (rest[1] | rest[2]) < 0x80 {
                let id = rest[0];
                let len = (usize::from(rest[1]) << 7) | usize::from(rest[2]);
                let len_ok = single_len_ok(id, len).is_ok();
                if len_ok && len > rest.len() {
                    // A message split by a read boundary: once per read. Check
                    // only the bytes not seen yet, so a long dump arriving in
                    // small reads is scanned once in all.
                    let from = self.clean.clamp(3, rest.len());
                    if !has_high_bit(&rest[from..]) {
                        self.clean = rest.len();
                        return None;
                    }
                } else if len_ok && !has_high_bit(&rest[3..len]) {
                    self.pos = start + len;
                    self.clean = 0;
                    let p = &self.buf[start + 3..start + len];
                    match id {
                        id::BWTIME => {
                            if let Ok(d) = <&[u8; 7]>::try_from(p) {
                                if !bwtime_is_ack(d) {
                                    if let Ok(t) = bwtime_from_payload(d) {
                                        return Some(Ok(Frame::Single(Message::Clock(t))));
                                    }
                                }
                            }
                        }
                        id::FIELD_UPDATE => {
                            if let (true, Some(sensed)) = (p[0] < 64, sensed_from_code(p[1])) {
                                return Some(Ok(Frame::Single(Message::FieldUpdate {
                                    square: square_of(p[0]),
                                    sensed,
                                })));
                            }
                        }
                        id::BOARD_DUMP if p.len() == 64 && check_codes(id, p).is_ok() => {
                            return Some(Ok(Frame::Single(Message::BoardDump(picture_of(p)))));
                        }
                        _ => {}
                    }
                    return Some(decode_single(id, p));
                }
            }
        }
        match self.step() {
            Step::NeedMore => None,
            Step::Error(e) => Some(Err(e)),
            Step::Single { id, start, len } => {
                Some(decode_single(id, &self.buf[start + 3..start + len]))
            }
            Step::Bus { start, len } => Some(decode_bus(&self.buf[start..start + len])),
        }
    }

    /// Everything but the fast path: overflow and garbage reports, partial
    /// messages, cuts, bad lengths, bus frames. Kept out of line so `next` stays
    /// small (fewer registers to save on every call).
    #[inline(never)]
    fn step(&mut self) -> Step {
        if self.dropped > 0 {
            let dropped = std::mem::take(&mut self.dropped);
            return Step::Error(DecodeError::Overflow { dropped });
        }
        let rest = &self.buf[self.pos..];
        // Resynchronise: a message starts at a byte with bit 7 set.
        match rest.iter().position(|&b| b >= 0x80) {
            None => {
                self.skipped += rest.len();
                self.pos = self.buf.len();
                self.clean = 0;
                return Step::NeedMore;
            }
            Some(0) if self.skipped == 0 => {}
            Some(n) => {
                let count = self.skipped + n;
                self.skipped = 0;
                self.consume(n);
                return Step::Error(DecodeError::Garbage { count });
            }
        }
        let id = self.buf[self.pos];
        let header = match self.mode {
            Mode::Single => 3,
            Mode::Bus => 5,
        };
        match self.scan(1, header) {
            Err(k) => {
                self.consume(k);
                return Step::Error(DecodeError::Cut { id, len: k });
            }
            Ok(false) => return Step::NeedMore,
            Ok(true) => {}
        }
        let b = &self.buf[self.pos..];
        let len = (usize::from(b[1]) << 7) | usize::from(b[2]);
        let len_ok = match self.mode {
            Mode::Single => single_len_ok(id, len),
            Mode::Bus => bus_len_ok(id, len),
        };
        if let Err(expected) = len_ok {
            self.consume(header);
            return Step::Error(DecodeError::BadLength { id, len, expected });
        }
        match self.scan(header, len) {
            Err(k) => {
                self.consume(k);
                return Step::Error(DecodeError::Cut { id, len: k });
            }
            Ok(false) => return Step::NeedMore,
            Ok(true) => {}
        }
        let start = self.pos;
        self.consume(len);
        match self.mode {
            Mode::Single => Step::Single { id, start, len },
            Mode::Bus => Step::Bus { start, len },
        }
    }

    /// Checks that the bytes `from..len` of the message at `pos` have bit 7 clear.
    /// `Err(k)`: byte `k` has it set (the message is cut there). `Ok(false)`: fewer
    /// than `len` bytes buffered yet.
    fn scan(&mut self, from: usize, len: usize) -> Result<bool, usize> {
        let rest = &self.buf[self.pos..];
        let end = len.min(rest.len());
        let start = from.max(self.clean);
        if start < end {
            let part = &rest[start..end];
            // The exact position is only needed on the rare cut.
            if has_high_bit(part) {
                let k = part.iter().position(|&b| b >= 0x80).unwrap_or(0);
                return Err(start + k);
            }
            self.clean = end;
        }
        Ok(rest.len() >= len)
    }
}

/// What the slow path found. Small on purpose: the frame itself is built in
/// [`Decoder::next`]'s result.
enum Step {
    NeedMore,
    Error(DecodeError),
    /// A complete, clean single-board message at `start..start + len`.
    Single {
        id: u8,
        start: usize,
        len: usize,
    },
    /// A complete, clean bus frame at `start..start + len`, checksum not yet checked.
    Bus {
        start: usize,
        len: usize,
    },
}

/// Whether any byte has bit 7 set, eight bytes at a time: payloads are short
/// (BWTIME has 7 bytes, a dump 64), so word loads beat a byte loop.
#[inline(always)]
fn has_high_bit(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    if n >= 8 {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        // Whole words, then one overlapping word for the tail.
        let mut acc = word(n - 8);
        let mut i = 0;
        while i + 8 <= n {
            acc |= word(i);
            i += 8;
        }
        acc & HIGH != 0
    } else if n >= 4 {
        let word = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&bytes[i..i + 4]);
            u32::from_ne_bytes(w)
        };
        (word(0) | word(n - 4)) & 0x8080_8080 != 0
    } else {
        bytes.iter().any(|&b| b >= 0x80)
    }
}

/// Whether a single-mode total length is possible for `id`; checked on the header
/// alone so a corrupt length never makes the decoder wait for bytes that belong
/// to later messages.
#[inline(always)]
fn single_len_ok(id: u8, len: usize) -> Result<(), &'static str> {
    let ok = match id {
        id::BOARD_DUMP => len == 67 || len == 103,
        id::BWTIME => len == 10,
        id::FIELD_UPDATE => len == 5,
        id::BUSADRES | id::VERSION => len == 5,
        id::SERIALNR => (8..=16).contains(&len),
        id::BOARD_DUMP_50B | id::BOARD_DUMP_50W => len == 53,
        _ => len >= 3,
    };
    if ok {
        return Ok(());
    }
    Err(match id {
        id::BOARD_DUMP => "67 (64 piece codes) or 103 (draughts)",
        id::BWTIME => "10 (7 clock bytes)",
        id::FIELD_UPDATE => "5 (field and piece code)",
        id::BUSADRES | id::VERSION => "5 (two bytes)",
        id::SERIALNR => "8 (5 digits) or up to 16 (digits, space, version)",
        id::BOARD_DUMP_50B | id::BOARD_DUMP_50W => "53 (50 fields)",
        _ => "at least 3 (the header)",
    })
}

fn bus_len_ok(id: u8, len: usize) -> Result<(), &'static str> {
    let ok = match id {
        bus_id::BOARD_DUMP => len == 70,
        bus_id::BWTIME => len == 13,
        bus_id::PING | bus_id::START_GAME_WRITTEN => len == 6,
        bus_id::VERSION => len == 8,
        bus_id::DRAUGHTS_50 => len == 56,
        _ => len >= 6,
    };
    if ok {
        return Ok(());
    }
    Err(match id {
        bus_id::BOARD_DUMP => "70 (64 piece codes)",
        bus_id::BWTIME => "13 (7 clock bytes)",
        bus_id::PING | bus_id::START_GAME_WRITTEN => "6 (no data)",
        bus_id::VERSION => "8 (two version bytes; boards up to 1.2 sent 6 and are not supported)",
        bus_id::DRAUGHTS_50 => "56 (50 fields)",
        _ => "at least 6 (header, address, checksum)",
    })
}

/// Square for a field number below 64: field 0 = a8 is square 56, so the rank
/// bits flip (`f ^ 56`), the same mapping as `picture::field_to_square`.
#[inline]
fn square_of(field: u8) -> Square {
    Square::new(u32::from(field ^ 56))
}

/// Checks that `codes` are all DGT piece codes, before any picture is built.
#[inline]
fn check_codes(id: u8, codes: &[u8]) -> Result<(), DecodeError> {
    // Valid codes are 0..=15, so the OR of all of them is too; the fold vectorises
    // and the position is only looked for on the rare bad dump.
    if codes.iter().fold(0u8, |a, &c| a | c) > 0x0f {
        let index = codes.iter().position(|&c| c > 0x0f).unwrap_or(0);
        return Err(DecodeError::BadPieceCode {
            id,
            index,
            code: codes[index],
        });
    }
    Ok(())
}

/// The picture of 64 codes already checked by [`check_codes`].
///
/// Not inlined on purpose: returned by value, the picture is written straight
/// into the caller's frame (the call's result slot), instead of being built in a
/// local and copied, which stalled on reading back 64 fresh two-byte stores.
#[inline(never)]
fn picture_of(codes: &[u8]) -> Picture {
    let mut p = Picture::empty();
    if let Ok(codes) = <&[u8; 64]>::try_from(codes) {
        // Field f is square f ^ 56 (a8 is field 0, square 56). With a counter
        // and a fixed-size array every index is provably in range, so the loop
        // has no bounds checks and no index loads.
        for f in 0..64u32 {
            p.set(Square::new(f ^ 56), sensed_from_nibble(codes[f as usize]));
        }
    }
    p
}

#[inline(always)]
fn bwtime(id: u8, d: &[u8]) -> Result<Result<super::BwTime, super::ClockAck>, DecodeError> {
    let d: &[u8; 7] = d.try_into().map_err(|_| DecodeError::BadLength {
        id,
        len: d.len(),
        expected: "7 clock bytes",
    })?;
    if bwtime_is_ack(d) {
        return Ok(Err(ack_from_bwtime(d)));
    }
    bwtime_from_payload(d)
        .map(Ok)
        .map_err(|BwTimeFault::Bcd { index, byte }| DecodeError::BadBcd { id, index, byte })
}

fn ee_records(id: u8, data: &[u8]) -> Result<Vec<EeRecord>, DecodeError> {
    let mut out = Vec::new();
    let r = decode_ee(data, &mut out);
    // decode_ee sized the vector for one record per byte; most records take two.
    out.shrink_to_fit();
    r.map_err(|f| DecodeError::BadEeRecord {
        id,
        detail: match f {
            EeFault::UnknownTag { offset, byte } => {
                format!("byte {byte:#04x} at offset {offset} starts no record")
            }
            EeFault::Truncated { offset } => format!("record at offset {offset} is cut by the end"),
            EeFault::BadField { offset, field } => {
                format!("field number {field} at offset {offset} is not 0..=63")
            }
            EeFault::BadBcd { offset, byte } => {
                format!("time byte {byte:#04x} at offset {offset} is not BCD")
            }
        },
    })?;
    Ok(out)
}

fn text(payload: &[u8]) -> String {
    // Every payload byte is below 0x80, so this is plain ASCII.
    payload.iter().map(|&b| char::from(b)).collect()
}

/// Decodes one complete single-board message (payload `p`, length already checked
/// against the id).
#[inline(never)]
fn decode_single(id: u8, p: &[u8]) -> Result<Frame, DecodeError> {
    let m = match id {
        id::FIELD_UPDATE => {
            let (field, code) = (p[0], p[1]);
            if field > 63 {
                return Err(DecodeError::BadField { id, field });
            }
            let sensed =
                sensed_from_code(code).ok_or(DecodeError::BadPieceCode { id, index: 1, code })?;
            Message::FieldUpdate {
                square: square_of(field),
                sensed,
            }
        }
        id::BWTIME => match bwtime(id, p)? {
            Ok(t) => Message::Clock(t),
            Err(a) => Message::ClockAck(a),
        },
        id::BOARD_DUMP if p.len() == 64 => {
            check_codes(id, p)?;
            Message::BoardDump(picture_of(p))
        }
        _ => decode_single_rare(id, p)?,
    };
    Ok(Frame::Single(m))
}

/// Messages a board sends once per session or on request.
#[inline(never)]
fn decode_single_rare(id: u8, p: &[u8]) -> Result<Message, DecodeError> {
    Ok(match id {
        id::EE_MOVES => Message::EeMoves(ee_records(id, p)?),
        id::BUSADRES => Message::BusAddress((u16::from(p[0]) << 7) | u16::from(p[1])),
        id::SERIALNR => {
            // Current boards send 5 digits; the 1998 header's boards add a space
            // and a version, " 1.0" (dgt.md §7). The serial is the 5 digits.
            let (serial, tail) = p.split_at(5.min(p.len()));
            let digits = serial.len() == 5 && serial.iter().all(u8::is_ascii_digit);
            if !digits || tail.first().is_some_and(|&b| b != b' ') {
                return Err(DecodeError::BadSerial { id, text: text(p) });
            }
            Message::SerialNumber(text(serial))
        }
        id::LONG_SERIALNR => Message::LongSerialNumber(text(p)),
        id::TRADEMARK => Message::Trademark(text(p)),
        id::VERSION => Message::Version {
            major: p[0],
            minor: p[1],
        },
        id::BATTERY_STATUS => Message::BatteryStatus(BatteryStatus {
            payload: p.to_vec(),
        }),
        id::BOARD_DUMP_50B | id::BOARD_DUMP_50W => Message::Draughts50 {
            id,
            fields: p.to_vec(),
        },
        _ => Message::Unknown {
            id,
            payload: p.to_vec(),
        },
    })
}

/// Decodes a complete bus frame (`id, len, len, addr, addr, data, checksum`) whose
/// bytes after the id all have bit 7 clear.
#[inline(never)]
fn decode_bus(frame: &[u8]) -> Result<Frame, DecodeError> {
    let len = frame.len();
    let id = frame[0];
    let address = (u16::from(frame[3]) << 7) | u16::from(frame[4]);
    let expected = bus_checksum(&frame[..len - 1]);
    let found = frame[len - 1];
    if expected != found {
        return Err(DecodeError::BadChecksum {
            id,
            address,
            expected,
            found,
        });
    }
    let d = &frame[5..len - 1];
    let reply = match id {
        bus_id::BOARD_DUMP => {
            check_codes(id, d)?;
            BusReply::BoardDump(picture_of(d))
        }
        bus_id::BWTIME => match bwtime(id, d)? {
            Ok(t) => BusReply::Clock(t),
            Err(a) => BusReply::ClockAck(a),
        },
        bus_id::CHANGES => BusReply::Changes(ee_records(id, d)?),
        bus_id::FROM_START => BusReply::FromStart(ee_records(id, d)?),
        bus_id::PING => BusReply::Ping,
        bus_id::START_GAME_WRITTEN => BusReply::StartGameWritten,
        bus_id::VERSION => BusReply::Version {
            major: d[0],
            minor: d[1],
        },
        bus_id::DRAUGHTS_50 => BusReply::Draughts50(d.to_vec()),
        _ => BusReply::Unknown {
            id,
            data: d.to_vec(),
        },
    };
    Ok(Frame::Bus(BusMessage { address, reply }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::Sensed;

    fn all(mode: Mode, bytes: &[u8]) -> Vec<Result<Frame, DecodeError>> {
        let mut d = Decoder::new(mode);
        d.push(bytes);
        std::iter::from_fn(|| d.next()).collect()
    }

    #[test]
    fn square_of_matches_picture_numbering() {
        for f in 0..64 {
            assert_eq!(square_of(f), crate::picture::field_to_square(f));
        }
    }

    #[test]
    fn garbage_is_reported_once_across_pushes() {
        let mut d = Decoder::new(Mode::Single);
        d.push(&[1, 2, 3]);
        assert_eq!(d.next(), None);
        d.push(&[4, 5, 0x8e, 0x00, 0x05, 12, 0]);
        assert_eq!(d.next(), Some(Err(DecodeError::Garbage { count: 5 })));
        assert!(matches!(
            d.next(),
            Some(Ok(Frame::Single(Message::FieldUpdate { .. })))
        ));
        assert_eq!(d.next(), None);
    }

    #[test]
    fn cut_message_restarts_at_the_high_byte() {
        let got = all(
            Mode::Single,
            &[0x86, 0x00, 0x43, 1, 2, 0x8e, 0x00, 0x05, 0x3c, 0x05],
        );
        assert_eq!(got[0], Err(DecodeError::Cut { id: 0x86, len: 5 }));
        assert_eq!(
            got[1],
            Ok(Frame::Single(Message::FieldUpdate {
                square: Square::E1,
                sensed: Sensed::Piece(shakmaty::Piece {
                    color: shakmaty::Color::White,
                    role: shakmaty::Role::King
                }),
            }))
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn impossible_length_is_rejected_from_the_header() {
        let got = all(Mode::Single, &[0x8e, 0x7f, 0x7f]);
        assert!(matches!(
            got[0],
            Err(DecodeError::BadLength {
                id: 0x8e,
                len: 16383,
                ..
            })
        ));
    }

    #[test]
    fn small_reads_keep_the_buffer_small() {
        // 20,000 field updates read 64 bytes at a time: every read ends inside a
        // message, so the buffer is never emptied outright and must be compacted.
        let mut bytes = Vec::new();
        for i in 0..20_000u32 {
            bytes.extend_from_slice(&[0x8e, 0x00, 0x05, (i % 64) as u8, (i % 13) as u8]);
        }
        let mut d = Decoder::new(Mode::Single);
        let mut frames = 0;
        for chunk in bytes.chunks(64) {
            d.push(chunk);
            while let Some(r) = d.next() {
                assert!(r.is_ok(), "{r:?}");
                frames += 1;
            }
            assert!(
                d.buf.len() <= 2 * COMPACT_AT + 64,
                "buffer grew to {}",
                d.buf.len()
            );
        }
        assert_eq!(frames, 20_000);
    }

    #[test]
    fn overflow_keeps_memory_bounded() {
        let mut d = Decoder::new(Mode::Single);
        d.push(&vec![0x01; BUFFER_CAP + 7]);
        assert_eq!(d.next(), Some(Err(DecodeError::Overflow { dropped: 7 })));
        assert!(d.buf.len() <= BUFFER_CAP);
    }
}
