//! DGT vocabulary types: messages board → host, commands host → board.

use shakmaty::Square;

use crate::picture::{Picture, Sensed};

/// The 3-byte header's first byte has this bit set; every other byte of a message has it clear.
pub const MESSAGE_BIT: u8 = 0x80;

/// Message ids (board → host, single-board mode), without [`MESSAGE_BIT`] applied.
pub mod id {
    pub const BOARD_DUMP: u8 = 0x86;
    pub const BWTIME: u8 = 0x8d;
    pub const FIELD_UPDATE: u8 = 0x8e;
    pub const EE_MOVES: u8 = 0x8f;
    pub const BUSADRES: u8 = 0x90;
    pub const SERIALNR: u8 = 0x91;
    pub const TRADEMARK: u8 = 0x92;
    pub const VERSION: u8 = 0x93;
    pub const BOARD_DUMP_50B: u8 = 0x94;
    pub const BOARD_DUMP_50W: u8 = 0x95;
    pub const BATTERY_STATUS: u8 = 0xa0;
    pub const LONG_SERIALNR: u8 = 0xa2;
}

/// One display of a DGT clock as BWTIME reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DgtSideTime {
    /// Hours, 0..=9.
    pub hours: u8,
    /// Minutes, 0..=59 (BCD on the wire).
    pub minutes: u8,
    /// Seconds, 0..=59 (BCD on the wire).
    pub seconds: u8,
    /// Bit 4: flag fallen and clock blocked at zero.
    pub flag_fallen: bool,
    /// Bit 5: time-per-move indicator (Bronstein/Fischer) on.
    pub time_per_move: bool,
    /// Bit 6: flag shown on the display.
    pub flag_shown: bool,
}

/// BWTIME (`0x8d`) carrying clock times.
///
/// Layout choice (dgt.md §7): d0..d2 are the *right* display and d3..d5 the *left*,
/// as in the current DGT header. Status bit 3 (`0x08`) is taken to mean "left
/// player's turn" and bit 4 (`0x10`) "right player's turn", which is what the real
/// recording in `data/eboard/dgtdriver-recordings` shows (the left display counts
/// down while bit 3 is set and the lever bit says the left side is high), and what
/// the Java driver does; the 2015+ header says the opposite. The tracker never relies
/// on these bits: it uses the lever and the running display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BwTime {
    /// The right display (d0..d2).
    pub right: DgtSideTime,
    /// The left display (d3..d5).
    pub left: DgtSideTime,
    /// Status bit 0: clock running.
    pub running: bool,
    /// Status bit 1: the lever's right side is high ("/"); clear means left side high.
    pub lever_right_high: bool,
    /// Status bit 2: battery low shown.
    pub battery_low: bool,
    /// Status bit 3: the left player's turn (see the type's docs).
    pub left_turn: bool,
    /// Status bit 4: the right player's turn (see the type's docs).
    pub right_turn: bool,
    /// Status bit 5: no clock connected, or the reading is invalid.
    pub no_clock: bool,
}

/// A clock ack rebuilt from a BWTIME whose hours nibble is `0x0a` (dgt.md §2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClockAck {
    /// ack0..ack3, bit 7 restored.
    pub bytes: [u8; 4],
}

/// Records of the EEPROM event stream (EE_MOVES, bus UPDATE and FROM_START).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EeRecord {
    /// A square changed (2 bytes): `sensed` is `Empty` when a piece was lifted.
    Field {
        square: Square,
        sensed: Sensed,
        /// The "r" bit: less than ~250 ms since the previous field record.
        recent: bool,
    },
    /// The halted clock's time, written at each lever change (3 bytes).
    Clock {
        /// The left display (the "f" bit), else the right.
        left: bool,
        hours: u8,
        minutes: u8,
        seconds: u8,
    },
    PowerUp,
    Eof,
    FourRows,
    EmptyBoard,
    Downloaded,
    BeginPos,
    BeginPosRotated,
    StartTag,
    WatchdogAction,
    Future1,
    Future2,
    Nop,
    Nop2,
}

/// Battery status (`0xa0`, Bluetooth boards). Sources disagree on the size
/// (dgt.md §7); the payload is kept whole and read by position.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct BatteryStatus {
    pub payload: Vec<u8>,
}

impl BatteryStatus {
    /// Percent of charge left, when reported.
    pub fn percent(&self) -> Option<u8> {
        self.payload.first().copied()
    }
}

/// A message from a board in single-board mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Message {
    /// `0x86`: all 64 squares.
    BoardDump(Picture),
    /// `0x8e`: one square changed.
    FieldUpdate { square: Square, sensed: Sensed },
    /// `0x8d` with times.
    Clock(BwTime),
    /// `0x8d` carrying a clock ack.
    ClockAck(ClockAck),
    /// `0x8f`: the EEPROM event log, oldest first.
    EeMoves(Vec<EeRecord>),
    /// `0x90`: the 14-bit bus address.
    BusAddress(u16),
    /// `0x91`: five ASCII digits.
    SerialNumber(String),
    /// `0xa2`: ten ASCII digits.
    LongSerialNumber(String),
    /// `0x92`: free ASCII text.
    Trademark(String),
    /// `0x93`: main and sub version.
    Version { major: u8, minor: u8 },
    /// `0xa0`.
    BatteryStatus(BatteryStatus),
    /// `0x94` / `0x95`: draughts dumps, 50 field codes, kept raw.
    Draughts50 { id: u8, fields: Vec<u8> },
    /// A well-framed message with an id this codec does not know; kept, not dropped.
    Unknown { id: u8, payload: Vec<u8> },
}

/// A bus-mode command (host → board), 4 bytes on the wire with a checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusCommandKind {
    SendClock = 0x81,
    SendBoard = 0x82,
    SendChanges = 0x83,
    RepeatChanges = 0x84,
    SetStartGame = 0x85,
    SendFromStart = 0x86,
    Ping = 0x87,
    EndBusMode = 0x88,
    Reset = 0x89,
    IgnoreNextBusPing = 0x8a,
    SendVersion = 0x8b,
    SendBoard50B = 0x8c,
    SendAllData = 0x8d,
}

/// A bus command addressed to one board (or to all, address 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BusCommand {
    pub kind: BusCommandKind,
    /// 14-bit address; 0 = all boards.
    pub address: u16,
}

/// What a board in bus mode says, after its address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BusReply {
    /// `0x83`: the 64 squares.
    BoardDump(Picture),
    /// `0x84`: clock times.
    Clock(BwTime),
    /// `0x84`: a clock ack.
    ClockAck(ClockAck),
    /// `0x85`: events since the last SEND_CHANGES.
    Changes(Vec<EeRecord>),
    /// `0x86`: events since EE_START_TAG.
    FromStart(Vec<EeRecord>),
    /// `0x87`.
    Ping,
    /// `0x88`.
    StartGameWritten,
    /// `0x89`.
    Version { major: u8, minor: u8 },
    /// `0x8a`: draughts dump, raw.
    Draughts50(Vec<u8>),
    /// A well-framed reply with an id this codec does not know.
    Unknown { id: u8, data: Vec<u8> },
}

/// A message from a board in bus mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BusMessage {
    /// The board's 14-bit address (its serial number).
    pub address: u16,
    pub reply: BusReply,
}

/// Hours, minutes, seconds in plain binary (SETNRUN sends binary, not BCD: dgt.md §2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Hms {
    pub hours: u8,
    pub minutes: u8,
    pub seconds: u8,
}

/// Sub-commands of the `0x2b` clock message (dgt.md §2.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClockCommand {
    /// `0x01`: XL 7-segment display: segment bytes C, B, A, F, E, D; icons; beep.
    Display {
        segments: [u8; 6],
        icons: u8,
        beep: u8,
    },
    /// `0x02`: icon bytes and the special byte.
    Icons { icons: [u8; 4], special: u8 },
    /// `0x03`: leave text mode, show times again.
    End,
    /// `0x08`: ask for the current button.
    Button,
    /// `0x09`: ask for the clock's version.
    Version,
    /// `0x0a`: set times and run; `flags` as dgt.md §2.2.
    SetAndRun { left: Hms, right: Hms, flags: u8 },
    /// `0x0b`: beep for `duration` × 64 ms.
    Beep { duration: u8 },
    /// `0x0c`: DGT 3000 ASCII text, 8 characters, beep 0..15.
    Ascii { text: [u8; 8], beep: u8 },
    /// `0x0d`: Revelation II text, 11 characters, beep.
    Rev2Ascii { text: [u8; 11], beep: u8 },
}

/// A single-board command (host → board).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    Reset,
    SendClock,
    SendBoard,
    SendUpdate,
    SendUpdateBoard,
    ReturnSerialNumber,
    ReturnBusAddress,
    SendTrademark,
    SendEeMoves,
    ToBusMode,
    SendUpdateNice,
    SendBatteryStatus,
    SendVersion,
    SendBoard50B,
    Scan50B,
    SendBoard50W,
    Scan50W,
    Scan100,
    ReturnLongSerialNumber,
    /// `0x60 0x04 pattern start end 0x00` (Revelation II LEDs).
    SetLeds {
        pattern: u8,
        start: u8,
        end: u8,
    },
    /// `0x2b size 0x03 id content 0x00`.
    Clock(ClockCommand),
}

/// Anything a host sends: single-board and bus commands share the line (bus
/// commands have bit 7 set).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostFrame {
    Single(Command),
    Bus(BusCommand),
}
