//! Chessnut messages: `type, length, payload`, both ways (other_boards.md §3).
//!
//! Over USB the board is a HID device: every input report is 65 bytes, the
//! message first and zeros after it; every output report is one command. A
//! real hidraw node returns one report per read, but the codec never relies
//! on it: it frames messages by their type and length and skips the zero
//! padding between them, so the same bytes read from a pseudo-terminal
//! stand-in, joined or split anywhere, decode alike.

use std::fmt;

use shakmaty::{Bitboard, Color, File, Piece, Rank, Role, Square};

use crate::picture::{Picture, Sensed};

/// Size of an input report over USB, the report id included.
pub const REPORT_LEN: usize = 65;
/// Most unread bytes kept; beyond, the oldest are dropped.
pub const BUFFER_CAP: usize = 4_096;

/// A position report: 32 bytes of nibbles, then (USB) 29 bytes whose meaning
/// is not published, or (Bluetooth) 4.
pub const POSITION: u8 = 0x01;
/// Length byte of a position report over USB.
pub const POSITION_USB_LEN: u8 = 0x3d;
/// Length byte of a position report over Bluetooth.
pub const POSITION_BLE_LEN: u8 = 0x24;
/// An acknowledgement: `23 01 00` (taken), `23 01 01` (not ready).
pub const ACK: u8 = 0x23;
/// The battery: `2A 02 b2 b3`.
pub const BATTERY: u8 = 0x2a;
/// A firmware version, ASCII.
pub const VERSION: u8 = 0x27;
/// Stored games: count and transfer markers.
pub const STORED: [u8; 3] = [0x32, 0x37, 0x38];

/// Host commands.
pub const REALTIME: [u8; 3] = [0x21, 0x01, 0x00];
pub const BATTERY_REQUEST: [u8; 3] = [0x29, 0x01, 0x00];
const LEDS: u8 = 0x0a;
const BEEP: u8 = 0x0b;

/// A board message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardMessage {
    /// The 64 squares.
    Position(Picture),
    /// A command was taken (`true`) or the board was not ready.
    Ack(bool),
    /// Battery charge in percent.
    Battery(u8),
    /// Any other well-framed message, kept raw.
    Other { kind: u8, payload: Vec<u8> },
}

/// A host command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCommand {
    /// `21 01 mode`: 0 real time (positions are sent), 1 upload.
    Mode(u8),
    /// `0A 08` + 8 bytes: the lit squares.
    Leds(Bitboard),
    /// `0B 04`: a beep of `hz` for `ms`.
    Beep { hz: u16, ms: u16 },
    /// Any other command, raw.
    Other { kind: u8, payload: Vec<u8> },
}

/// The nibble of a reading: 0 empty, 1 q, 2 k, 3 b, 4 p, 5 n, 6 R, 7 P, 8 r,
/// 9 B, A N, B Q, C K. A reading the board has no code for is empty.
pub fn code_of(s: Sensed) -> u8 {
    let Sensed::Piece(p) = s else { return 0 };
    match (p.color, p.role) {
        (Color::Black, Role::Queen) => 1,
        (Color::Black, Role::King) => 2,
        (Color::Black, Role::Bishop) => 3,
        (Color::Black, Role::Pawn) => 4,
        (Color::Black, Role::Knight) => 5,
        (Color::White, Role::Rook) => 6,
        (Color::White, Role::Pawn) => 7,
        (Color::Black, Role::Rook) => 8,
        (Color::White, Role::Bishop) => 9,
        (Color::White, Role::Knight) => 0xa,
        (Color::White, Role::Queen) => 0xb,
        (Color::White, Role::King) => 0xc,
    }
}

fn sensed_of(code: u8) -> Option<Sensed> {
    let (color, role) = match code {
        0 => return Some(Sensed::Empty),
        1 => (Color::Black, Role::Queen),
        2 => (Color::Black, Role::King),
        3 => (Color::Black, Role::Bishop),
        4 => (Color::Black, Role::Pawn),
        5 => (Color::Black, Role::Knight),
        6 => (Color::White, Role::Rook),
        7 => (Color::White, Role::Pawn),
        8 => (Color::Black, Role::Rook),
        9 => (Color::White, Role::Bishop),
        0xa => (Color::White, Role::Knight),
        0xb => (Color::White, Role::Queen),
        0xc => (Color::White, Role::King),
        _ => return None,
    };
    Some(Sensed::Piece(Piece { color, role }))
}

/// Square `s` of the position bytes: 0 = h8, 1 = g8, …, 7 = a8, 8 = h7, …,
/// 63 = a1.
pub fn square_of(s: usize) -> Square {
    Square::from_coords(File::new(7 - (s % 8) as u32), Rank::new(7 - (s / 8) as u32))
}

/// The 32 position bytes of a picture: square `s` in byte `s / 2`, the low
/// nibble for even `s`.
pub fn position_bytes(p: &Picture) -> [u8; 32] {
    let mut b = [0u8; 32];
    for s in 0..64 {
        let code = code_of(p.get(square_of(s)));
        b[s / 2] |= if s % 2 == 0 { code } else { code << 4 };
    }
    b
}

/// A position report as the board sends it over USB, padded to a report.
pub fn position_report(p: &Picture) -> Vec<u8> {
    let mut r = vec![POSITION, POSITION_USB_LEN];
    r.extend_from_slice(&position_bytes(p));
    r.resize(REPORT_LEN, 0);
    r
}

/// A short board message padded to a report.
pub fn report(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut r = vec![kind, payload.len() as u8];
    r.extend_from_slice(payload);
    r.resize(REPORT_LEN.max(r.len()), 0);
    r
}

impl HostCommand {
    /// The bytes of one output report.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            HostCommand::Mode(m) => vec![0x21, 0x01, *m],
            HostCommand::Leds(squares) => {
                let mut b = vec![LEDS, 0x08];
                for rank in (0..8u32).rev() {
                    let mut byte = 0u8;
                    for file in 0..8u32 {
                        if squares.contains(Square::from_coords(File::new(file), Rank::new(rank))) {
                            // The most significant bit is file a.
                            byte |= 0x80 >> file;
                        }
                    }
                    b.push(byte);
                }
                b
            }
            HostCommand::Beep { hz, ms } => {
                let [fh, fl] = hz.to_be_bytes();
                let [dh, dl] = ms.to_be_bytes();
                vec![BEEP, 0x04, fh, fl, dh, dl]
            }
            HostCommand::Other { kind, payload } => {
                let mut b = vec![*kind, payload.len() as u8];
                b.extend_from_slice(payload);
                b
            }
        }
    }

    fn parse(kind: u8, payload: &[u8]) -> HostCommand {
        match (kind, payload) {
            (0x21, [m]) => HostCommand::Mode(*m),
            (LEDS, bytes) if bytes.len() == 8 => {
                let mut squares = Bitboard::EMPTY;
                for (row, byte) in bytes.iter().enumerate() {
                    for file in 0..8u32 {
                        if byte & (0x80 >> file) != 0 {
                            squares.add(Square::from_coords(
                                File::new(file),
                                Rank::new(7 - row as u32),
                            ));
                        }
                    }
                }
                HostCommand::Leds(squares)
            }
            (BEEP, [fh, fl, dh, dl]) => HostCommand::Beep {
                hz: u16::from_be_bytes([*fh, *fl]),
                ms: u16::from_be_bytes([*dh, *dl]),
            },
            _ => HostCommand::Other {
                kind,
                payload: payload.to_vec(),
            },
        }
    }
}

/// Why bytes formed no message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Bytes that start no message a Chessnut sends, skipped.
    Garbage { count: usize },
    /// A position with a nibble no piece has: dropped.
    BadPiece { code: u8 },
    /// More than [`BUFFER_CAP`] bytes waited: the oldest were dropped.
    Overflow { dropped: usize },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Garbage { count } => {
                write!(f, "{count} byte(s) that start no message skipped")
            }
            WireError::BadPiece { code } => {
                write!(
                    f,
                    "a position with piece code {code:#x}, which no piece has, was dropped"
                )
            }
            WireError::Overflow { dropped } => {
                write!(f, "{dropped} unread byte(s) dropped (buffer full)")
            }
        }
    }
}

/// The payload lengths a message type may have; `None`: not a type this side
/// sends.
type Lengths = fn(u8, u8) -> bool;

fn board_length_ok(kind: u8, len: u8) -> bool {
    match kind {
        POSITION => len == POSITION_USB_LEN || len == POSITION_BLE_LEN,
        ACK => len == 1,
        BATTERY => len == 2,
        VERSION => (1..=62).contains(&len),
        k if STORED.contains(&k) => (1..=62).contains(&len),
        _ => false,
    }
}

fn host_length_ok(kind: u8, len: u8) -> bool {
    match kind {
        0x21 | 0x26 | 0x27 | 0x29 | 0x2b | 0x31 | 0x33 | 0x34 | 0x39 => len == 1,
        LEDS => len == 8,
        BEEP => len == 4,
        _ => false,
    }
}

/// Frames `type, length, payload` messages, skipping zero padding.
#[derive(Clone, Debug)]
pub struct Framer {
    buf: Vec<u8>,
    start: usize,
    lengths: Lengths,
    overflow: usize,
}

impl Framer {
    /// A framer of what a board sends.
    pub fn board() -> Framer {
        Framer::new(board_length_ok)
    }

    /// A framer of what a host sends.
    pub fn host() -> Framer {
        Framer::new(host_length_ok)
    }

    fn new(lengths: Lengths) -> Framer {
        Framer {
            buf: Vec::new(),
            start: 0,
            lengths,
            overflow: 0,
        }
    }

    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
        let unread = self.buf.len() - self.start;
        if unread > BUFFER_CAP {
            let drop = unread - BUFFER_CAP;
            self.start += drop;
            self.overflow += drop;
        }
    }

    /// The next message (`type`, payload), an error that consumed at least
    /// one byte, or `None`: need more bytes (not the end, so this is no
    /// `Iterator`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<(u8, Vec<u8>), WireError>> {
        if self.overflow > 0 {
            let dropped = std::mem::take(&mut self.overflow);
            return Some(Err(WireError::Overflow { dropped }));
        }
        // Zeros are report padding.
        while self.buf.get(self.start) == Some(&0) {
            self.start += 1;
        }
        let rest = &self.buf[self.start..];
        let kind = *rest.first()?;
        let Some(&len) = rest.get(1) else {
            // A type that never starts a message need not wait for its length.
            let known = (0..=255u8).any(|l| (self.lengths)(kind, l));
            if known {
                return None;
            }
            self.start += 1;
            return Some(Err(WireError::Garbage { count: 1 }));
        };
        if !(self.lengths)(kind, len) {
            self.start += 1;
            return Some(Err(WireError::Garbage { count: 1 }));
        }
        let end = 2 + usize::from(len);
        if rest.len() < end {
            return None;
        }
        let payload = rest[2..end].to_vec();
        self.start += end;
        Some(Ok((kind, payload)))
    }
}

/// Reads a framed board message.
pub fn parse_board(kind: u8, payload: &[u8]) -> Result<BoardMessage, WireError> {
    match kind {
        POSITION => {
            let mut p = Picture::empty();
            for s in 0..64 {
                let byte = payload[s / 2];
                let code = if s % 2 == 0 { byte & 0x0f } else { byte >> 4 };
                p.set(
                    square_of(s),
                    sensed_of(code).ok_or(WireError::BadPiece { code })?,
                );
            }
            Ok(BoardMessage::Position(p))
        }
        ACK => Ok(BoardMessage::Ack(payload.first() == Some(&0))),
        // Sources disagree on the second byte; all agree the charge in percent
        // is in the low seven bits of the first (docs/boards.md).
        BATTERY => Ok(BoardMessage::Battery(payload[0] & 0x7f)),
        _ => Ok(BoardMessage::Other {
            kind,
            payload: payload.to_vec(),
        }),
    }
}

/// Reads a framed host command.
pub fn parse_host(kind: u8, payload: &[u8]) -> HostCommand {
    HostCommand::parse(kind, payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use shakmaty::Board;

    #[test]
    fn the_start_position_reads_as_the_reference_gives_it() {
        let b = position_bytes(&Picture::from_board(&Board::default()));
        assert_eq!(&b[..8], &[0x58, 0x23, 0x31, 0x85, 0x44, 0x44, 0x44, 0x44]);
        assert!(b[8..24].iter().all(|&x| x == 0));
        assert_eq!(&b[24..], &[0x77, 0x77, 0x77, 0x77, 0xa6, 0xc9, 0x9b, 0x6a]);
        let e2e4 = Bitboard::from(Square::E2) | Bitboard::from(Square::E4);
        assert_eq!(
            HostCommand::Leds(e2e4).encode(),
            vec![0x0a, 0x08, 0, 0, 0, 0, 0x08, 0, 0x08, 0]
        );
    }

    fn sensed() -> impl Strategy<Value = Sensed> {
        (0u8..13).prop_map(|c| sensed_of(c).unwrap())
    }

    fn picture() -> impl Strategy<Value = Picture> {
        proptest::collection::vec(sensed(), 64).prop_map(|v| {
            let mut p = Picture::empty();
            for (s, x) in v.into_iter().enumerate() {
                p.set(square_of(s), x);
            }
            p
        })
    }

    proptest! {
        #[test]
        fn positions_round_trip_in_any_chunking(ps in proptest::collection::vec(picture(), 1..4), cut in 1usize..90) {
            let mut bytes: Vec<u8> = ps.iter().flat_map(position_report).collect();
            bytes.extend(report(ACK, &[0]));
            let mut f = Framer::board();
            let mut got = Vec::new();
            for piece in bytes.chunks(cut) {
                f.push(piece);
                while let Some(r) = f.next() {
                    let (k, p) = r.unwrap();
                    got.push(parse_board(k, &p).unwrap());
                }
            }
            let mut want: Vec<BoardMessage> = ps.into_iter().map(BoardMessage::Position).collect();
            want.push(BoardMessage::Ack(true));
            prop_assert_eq!(got, want);
        }

        #[test]
        fn commands_round_trip(leds in any::<u64>(), hz in any::<u16>(), ms in any::<u16>(), mode in 0u8..2) {
            let cs = vec![HostCommand::Mode(mode), HostCommand::Leds(Bitboard(leds)), HostCommand::Beep { hz, ms }];
            let bytes: Vec<u8> = cs.iter().flat_map(HostCommand::encode).collect();
            let mut f = Framer::host();
            f.push(&bytes);
            let mut got = Vec::new();
            while let Some(r) = f.next() {
                let (k, p) = r.unwrap();
                got.push(parse_host(k, &p));
            }
            prop_assert_eq!(got, cs);
        }
    }
}
