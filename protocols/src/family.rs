//! The seam every board family plugs into.
//!
//! A family is described once, by a [`Family`] in the registration table
//! ([`crate::families`]), and brings four things:
//!
//! - a [`Codec`]: board bytes, host bytes and ticks in, protocol-neutral
//!   [`Observed`] values out (pictures, square changes, clock readings, facts
//!   about the board, command acks), each tagged with the board behind the
//!   port. `replay`, crash recovery and the benches read captures with it; the
//!   daemon reads live ports with it. Its [`Capabilities`] say what the board
//!   can sense and report, and give the tracker its [`SensorProfile`].
//! - a [`Driver`] for the live side: what to write to the port and when
//!   ([`Driver::poll_transmit`], [`Driver::next_deadline`]), the board's
//!   liveness, and commands ([`DriverCommand`]: set the clock, light LEDs,
//!   beep). It declares its [`Transport`] (serial settings, or hidraw).
//! - a virtual board ([`VirtualDevice`]) the hand models play on, for `sim`,
//!   `emulate`, the demo, the benches and the tests.
//! - how the daemon finds it: USB ids ([`UsbMatch`]), `/dev/serial/by-id/`
//!   names, and, for boards on chips other devices share, a listening probe;
//!   and how `eboard-bridge doctor` asks a board who it is ([`Identify`]),
//!   when the protocol has such a request.
//!
//! Everything here is sans-IO and time-injected, like the rest of the crate.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

use shakmaty::{Bitboard, Square};

use crate::clock::{ClockReading, ClockSide};
use crate::dgt::virtual_clock::{ClockConfig, PressRecord};
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::picture::{Picture, Sensed};

/// Which board behind a port an observation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoardId {
    /// The one board of a single-board port.
    Single,
    /// A board on a shared line (DGT bus mode), by its address.
    Bus(u16),
}

/// How a port is used: one board, or several on one line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PortMode {
    /// One board (`"single"` in a capture header).
    #[default]
    Single,
    /// Several boards on one line, each answering for itself (`"bus"`).
    Bus,
}

/// What the board's sensors can tell apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sensing {
    /// Which piece stands on a square (DGT, Millennium, Certabo, Chessnut).
    Identity,
    /// Only whether a square is occupied ([`Sensed::Occupied`]).
    Occupancy,
}

/// How the board reports what its sensors see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reporting {
    /// Every change a scan finds is reported, one scan every `scan_ms` (a
    /// range: the period varies). A piece lifted and put back between two
    /// scans is not seen.
    EveryChange { scan_ms: (u64, u64) },
    /// A whole picture every `period_ms`, whether anything changed or not;
    /// whatever happens between two frames is seen only as its result.
    Frames { period_ms: u64 },
}

/// How a clock reaches the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockLink {
    /// The protocol carries no clock.
    None,
    /// A clock plugged into the board is read through it; `settable` when the
    /// host can also set its times.
    ThroughBoard { settable: bool },
}

/// What a board family can do, from its protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Capabilities {
    pub sensing: Sensing,
    pub reporting: Reporting,
    pub clock: ClockLink,
    /// The board has a light per square (or per square corner) the host sets.
    pub leds: bool,
    /// The board (or its clock) can beep on command.
    pub beep: bool,
    /// Several boards can share one port.
    pub bus: bool,
}

impl Capabilities {
    /// What the tracker needs to know about the sensors.
    pub fn sensor_profile(&self) -> SensorProfile {
        SensorProfile {
            sensing: self.sensing,
            reporting: self.reporting,
            clock: !matches!(self.clock, ClockLink::None),
        }
    }
}

/// What a tracker may assume about the pictures it is given: whether pieces
/// are identified, whether every change is reported or only periodic frames
/// (and at what period), and whether clock readings can come at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SensorProfile {
    pub sensing: Sensing,
    pub reporting: Reporting,
    /// Clock readings may come through the board.
    pub clock: bool,
}

impl Default for SensorProfile {
    /// A DGT board: pieces identified, every change reported at a scan every
    /// 200-250 ms, a clock read through the board.
    fn default() -> Self {
        SensorProfile {
            sensing: Sensing::Identity,
            reporting: Reporting::EveryChange {
                scan_ms: (200, 250),
            },
            clock: true,
        }
    }
}

/// Something a board told about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardFact {
    /// A short serial number.
    Serial(String),
    /// A long serial number (DGT Bluetooth boards).
    LongSerial(String),
    /// Firmware main and sub version.
    Version(u8, u8),
    /// A product or trademark text.
    Model(String),
    /// Battery charge in percent.
    Battery(u8),
    /// The address the board answers to on a shared line.
    BusAddress(u16),
}

/// A command the board acknowledged (or refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandAck {
    /// The clock answered a command (DGT: a BWTIME ack).
    Clock { accepted: bool },
    /// The board took an LED command.
    Leds,
    /// The board took a setting (an option write).
    Setting,
}

/// One thing a codec read from the board's bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Observation {
    /// A whole picture (a dump, a status, a frame): replaces what was known.
    Picture(Picture),
    /// One square changed; passed on as the whole picture it makes.
    Square { square: Square, sensed: Sensed },
    /// Several squares changed at once (a catch-up on history): passed on as
    /// one picture, and only if it differs from the last.
    Squares(Vec<(Square, Sensed)>),
    /// The board's scan is over: every change it saw in that scan has been
    /// reported (a DGT bus report holds whole scans). Boards that report
    /// changes one at a time never say so; the tracker waits for time to pass.
    ScanEnded,
    /// A clock reading.
    Clock(ClockReading),
    /// The board says no clock is connected.
    NoClock,
    /// A fact about the board.
    Fact(BoardFact),
    /// A command was answered.
    Ack(CommandAck),
    /// The board answered, with nothing else to tell (it exists).
    Heard,
    /// The host stops reading the board for a while (`true`), though the
    /// board keeps every change for it (a DGT bus host listening for new
    /// boards polls nobody for over a second), or the catch-up has been read
    /// (`false`). Until then the board's silence is not stillness: no hold
    /// may run out on it.
    Paused(bool),
    /// State the codec learned that belongs with the board and must be given
    /// back to it next time (Certabo: the calibration of piece ids). Written
    /// into the capture header of the next run.
    Setting { key: String, value: String },
}

/// An observation about one board.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub board: BoardId,
    pub what: Observation,
}

/// What a codec counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodecStats {
    /// Frames (messages, reports, lines) decoded from the board.
    pub frames: u64,
    /// Decode errors (garbage skipped, bad checksums, cut frames, …).
    pub decode_errors: u64,
    /// The last decode error, for diagnostics.
    pub last_decode_error: Option<String>,
    /// Host commands seen.
    pub host_frames: u64,
    /// Host bytes that formed no command.
    pub host_errors: u64,
}

impl CodecStats {
    /// Counts a decode error.
    pub fn error(&mut self, e: impl fmt::Display) {
        self.decode_errors += 1;
        self.last_decode_error = Some(e.to_string());
    }
}

/// Family-specific state kept with a board between runs (see
/// [`Observation::Setting`]), by key.
pub type Settings = BTreeMap<String, String>;

/// How a codec starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodecSetup {
    pub mode: PortMode,
    /// What the capture header (or the board's saved state) holds.
    pub settings: Settings,
}

/// A setting the family cannot use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {family} setting {key:?} is unusable: {problem}")]
pub struct SetupError {
    pub family: &'static str,
    pub key: String,
    pub problem: String,
}

/// The decoding side of a family: bytes both ways and time in, observations
/// out. Never panics and never loops on any bytes.
pub trait Codec: Send + fmt::Debug {
    /// What the board can do (may depend on the port's mode).
    fn capabilities(&self) -> Capabilities;
    /// Bytes the board sent, at `t_ms`.
    fn board_bytes(&mut self, t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>);
    /// Bytes the host sent, at `t_ms` (a codec may follow the host's
    /// commands, e.g. a mode switch).
    fn host_bytes(&mut self, t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>);
    /// Time passes with no bytes.
    fn tick(&mut self, t_ms: u64, out: &mut Vec<Observed>);
    /// Counters so far.
    fn stats(&self) -> &CodecStats;
    /// The state to keep with the board (written into capture headers).
    fn settings(&self) -> Settings {
        Settings::new()
    }
    /// Goes on from `settings` (a capture header's), as a codec made with
    /// them would: crash recovery gives every recorded run the settings its
    /// header names. Families without settings ignore it.
    fn restore(&mut self, _settings: &Settings) -> Result<(), SetupError> {
        Ok(())
    }
    /// The port's mode as the codec follows it now.
    fn mode(&self) -> PortMode {
        PortMode::Single
    }
    /// For family-specific inspection (tests, diagnostics).
    fn as_any(&self) -> &dyn Any;
}

/// Serial parity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Parity {
    None,
    Odd,
    Even,
}

/// Serial line settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SerialSettings {
    pub baud: u32,
    /// 7 or 8.
    pub data_bits: u8,
    pub parity: Parity,
    /// 1 or 2.
    pub stop_bits: u8,
}

/// How the port is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A serial port (USB CDC, a USB-UART bridge, a pseudo-terminal).
    Serial(SerialSettings),
    /// A Linux hidraw node: every read returns one input report (report id
    /// first), every write sends one output report (report id first). A
    /// device with several HID interfaces is read on the one whose report
    /// descriptor opens with `usage_page`, when given.
    Hidraw { usage_page: Option<u16> },
}

/// Timings of the live side (from `[device]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverTimings {
    /// Ask a quiet board for something after this long without a byte.
    pub probe_ms: u64,
    /// No byte for this long: the board is gone.
    pub silence_ms: u64,
    /// Shared lines: the polling period.
    pub poll_ms: u64,
}

impl Default for DriverTimings {
    fn default() -> Self {
        DriverTimings {
            probe_ms: 2_000,
            silence_ms: 6_000,
            poll_ms: 300,
        }
    }
}

/// How a driver starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverSetup {
    pub mode: PortMode,
    pub timings: DriverTimings,
}

/// A command for the board (or its clock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverCommand {
    /// Sets the clock: `left_ms` and `right_ms` on the displays, the side
    /// `running` counts down, or the clock stays paused when `run` is false.
    SetClock {
        left_ms: u64,
        right_ms: u64,
        running: ClockSide,
        run: bool,
    },
    /// Lights exactly these squares (in the board's own frame); empty: all off.
    Leds(Bitboard),
    /// A short beep.
    Beep { ms: u64 },
}

impl DriverCommand {
    /// A short name for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            DriverCommand::SetClock { .. } => "set clock",
            DriverCommand::Leds(_) => "LEDs",
            DriverCommand::Beep { .. } => "beep",
        }
    }
}

/// Why a driver did not take a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandRefused {
    #[error("this board cannot do that ({0}): its protocol has no such command")]
    Unsupported(&'static str),
    #[error("{0} commands are already waiting for this board; wait for them to be answered")]
    QueueFull(usize),
}

/// Why a command ended unanswered when the link to the board was lost,
/// worded for an arbiter.
pub const COMMAND_LINK_LOST: &str =
    "the board was disconnected before the clock answered: check the board's cable, then try again";

/// What the live side reports besides bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverEvent {
    /// A board on a shared line started (`present`) or stopped answering.
    BoardPresent { address: u16, present: bool },
    /// Command `id` ended: `Ok(attempts)` when the board (or clock) took it,
    /// or why it did not, worded for an arbiter.
    CommandDone {
        id: u64,
        outcome: Result<u8, String>,
    },
    /// The link must be closed and reopened: why, worded for an operator.
    Failed(String),
}

/// The live side of a family: a sans-IO state machine the device layer runs
/// over an open port. The device layer writes what [`Driver::poll_transmit`]
/// returns, feeds every read to [`Driver::board_bytes`], hands on
/// [`Driver::poll_event`]s, and calls again by [`Driver::next_deadline`].
pub trait Driver: Send {
    /// How to open the port.
    fn transport(&self) -> Transport;
    /// The port was just opened at `now_ms`.
    fn start(&mut self, now_ms: u64);
    /// Bytes read from the board.
    fn board_bytes(&mut self, now_ms: u64, bytes: &[u8]);
    /// A command, tagged `id` for its [`DriverEvent::CommandDone`]. LED and
    /// beep commands are fire-and-forget (no `CommandDone`); a newer LED
    /// command replaces one not yet sent.
    fn command(
        &mut self,
        now_ms: u64,
        id: u64,
        command: DriverCommand,
    ) -> Result<(), CommandRefused>;
    /// The bytes to write now, if any (call until `None`).
    fn poll_transmit(&mut self, now_ms: u64) -> Option<Vec<u8>>;
    /// What happened, oldest first (call until `None`).
    fn poll_event(&mut self) -> Option<DriverEvent>;
    /// When to call [`Driver::poll_transmit`] again if no byte comes.
    fn next_deadline(&self) -> Option<u64>;
}

/// What every driver keeps of a link's life: when the board last spoke,
/// when it was last asked for something, and whether the link was given up
/// for silence.
#[derive(Clone, Copy, Debug)]
pub struct Liveness {
    timings: DriverTimings,
    started: bool,
    failed: bool,
    last_rx: u64,
    last_probe: u64,
}

impl Liveness {
    pub fn new(timings: DriverTimings) -> Liveness {
        Liveness {
            timings,
            started: false,
            failed: false,
            last_rx: 0,
            last_probe: 0,
        }
    }

    /// The port was opened at `now_ms`.
    pub fn start(&mut self, now_ms: u64) {
        self.started = true;
        self.last_rx = now_ms;
        self.last_probe = now_ms;
    }

    /// The board sent bytes at `now_ms`.
    pub fn heard(&mut self, now_ms: u64) {
        self.last_rx = now_ms;
    }

    /// Whether the link runs (started, not given up).
    pub fn running(&self) -> bool {
        self.started && !self.failed
    }

    /// How long the board has been silent at `now_ms` once that is
    /// `silence_ms` or more: the link is then given up (`running` turns
    /// false) and the driver reports why.
    pub fn silent(&mut self, now_ms: u64) -> Option<u64> {
        let quiet = now_ms.saturating_sub(self.last_rx);
        if self.running() && quiet >= self.timings.silence_ms {
            self.failed = true;
            return Some(quiet);
        }
        None
    }

    /// Whether to ask a quiet board for something now (it has said nothing
    /// for `probe_ms`, and was not asked in the last `probe_ms`); counts the
    /// probe as sent.
    pub fn probe_due(&mut self, now_ms: u64) -> bool {
        let due = now_ms.saturating_sub(self.last_rx) >= self.timings.probe_ms
            && now_ms.saturating_sub(self.last_probe) >= self.timings.probe_ms;
        if due {
            self.last_probe = now_ms;
        }
        due
    }

    /// When a probe falls due.
    pub fn probe_at(&self) -> u64 {
        (self.last_rx + self.timings.probe_ms).max(self.last_probe + self.timings.probe_ms)
    }

    /// When the silence runs out.
    pub fn silence_at(&self) -> u64 {
        self.last_rx + self.timings.silence_ms
    }
}

/// Sensor faults of a virtual board, each a probability per occupied square
/// per scan (or frame). Off by default.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SensorNoise {
    /// The square reads empty for one scan.
    pub flicker_empty: f64,
    /// The piece reads as another piece of its colour for one scan (off-centre).
    pub misread: f64,
}

/// How a virtual board is built, whatever its family.
#[derive(Clone, Debug, PartialEq)]
pub struct VirtualSpec {
    pub seed: u64,
    /// Serial number (DGT: also the bus address of board 0 of a line; board
    /// `i` has `serial + i`).
    pub serial: u16,
    pub noise: SensorNoise,
    /// The clock plugged into the board, for families that read one through
    /// the board (DGT); others have none and ignore it.
    pub clock: ClockConfig,
    /// Frame-reporting boards: the period between two frames, when not the
    /// family's own (ms).
    pub frame_ms: Option<u64>,
}

impl Default for VirtualSpec {
    fn default() -> Self {
        VirtualSpec {
            seed: 0,
            serial: 1025,
            noise: SensorNoise::default(),
            clock: ClockConfig::default(),
            frame_ms: None,
        }
    }
}

/// What is at the far end of a port in a simulation: one virtual board, or
/// several on one line. Time-injected: bytes in by [`VirtualDevice::receive_host`],
/// timestamped bytes out by [`VirtualDevice::take_output`], hands act through
/// [`VirtualDevice::apply`].
pub trait VirtualDevice: Send {
    /// How many boards are on the line.
    fn boards(&self) -> usize {
        1
    }
    /// A hand acts on board `board` (or its clock) at `t_ms`.
    fn apply(
        &mut self,
        board: usize,
        t_ms: u64,
        action: PhysicalAction,
    ) -> Result<(), PhysicalError>;
    /// Host bytes arrive at `t_ms`.
    fn receive_host(&mut self, t_ms: u64, bytes: &[u8]);
    /// Runs scans, frames and replies up to `t_ms`.
    fn advance(&mut self, t_ms: u64);
    /// What went out on the line so far, with times, oldest first.
    fn take_output(&mut self) -> Vec<(u64, Vec<u8>)>;
    /// When the device does something next on its own.
    fn next_event_at(&self) -> u64;
    /// Board `board`'s clock's record of every press that completed a move
    /// (empty for boards without a clock).
    fn presses(&self, _board: usize) -> Vec<PressRecord> {
        Vec::new()
    }
    /// The squares board `board` lights now, in its own frame (`None`: no
    /// LEDs).
    fn leds(&self, board: usize) -> Option<Bitboard>;
    /// A short text naming what the device is, for logs.
    fn describe(&self) -> String;
}

/// A USB device a family is found by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UsbMatch {
    pub vendor: u16,
    /// `None`: any product of the vendor.
    pub product: Option<u16>,
    /// The USB ids are shared with other products (a generic USB-UART chip):
    /// a port found by them is followed only after [`Family::recognise`]
    /// accepted what it sent.
    pub shared: bool,
}

/// One board family: everything the rest of the project needs to know about
/// it. Listed once, in [`crate::families`].
pub struct Family {
    /// The family's name: a capture header's `protocol`, a `[[board]]`'s
    /// `protocol`, `emulate --protocol`.
    pub name: &'static str,
    /// How people call the boards ("DGT", "Millennium ChessLink", …).
    pub title: &'static str,
    /// What the boards can do on a port used in `mode`.
    pub capabilities: fn(PortMode) -> Capabilities,
    /// A codec for captures and live ports. Never fails with empty settings.
    pub codec: fn(&CodecSetup) -> Result<Box<dyn Codec>, SetupError>,
    /// A driver for the live side.
    pub driver: fn(&DriverSetup) -> Box<dyn Driver>,
    /// Virtual boards with these pieces standing on them, on one line (more
    /// than one only for families with [`Capabilities::bus`]).
    pub virtual_device: fn(&VirtualSpec, Vec<PhysicalBoard>) -> Box<dyn VirtualDevice>,
    /// The settings a virtual board built from a spec keeps with it once set
    /// up (Certabo: the calibration of its piece set, as the daemon saves it
    /// after the board's first start position): what the benches give the
    /// codec, as the daemon would after an earlier session.
    pub kept_settings: fn(&VirtualSpec) -> Settings,
    /// USB ids the boards use.
    pub usb: &'static [UsbMatch],
    /// Whether a `/dev/serial/by-id/` name is one of these boards' (by their
    /// USB manufacturer or product strings).
    pub by_id_name: fn(&str) -> bool,
    /// Whether bytes a port sent unasked are this family's (a listening
    /// probe for ports found by shared USB ids); `None`: never probed.
    pub recognise: Option<fn(&[u8]) -> bool>,
    /// A request that asks a board who it is and changes nothing on it;
    /// `None`: the protocol has none this project sends.
    pub identify: Option<Identify>,
}

/// How to ask a board who it is (`eboard-bridge doctor` does, on a port
/// nobody else holds): bytes that only ask (a serial number, a version, a
/// ping), never a setting, a mode or LEDs. The answers are read with the
/// family's codec, as [`BoardFact`]s (one board) or as observations tagged
/// with each answering board's [`BoardId`] (a shared line).
#[derive(Clone, Copy, Debug)]
pub struct Identify {
    /// The bytes to write on a port used in `mode`.
    pub request: fn(PortMode) -> Vec<u8>,
    /// How many facts one board answers the request with: the host stops
    /// listening once they came. On a shared line every board answers, so
    /// the host listens for the whole time it allows.
    pub facts: usize,
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family").field("name", &self.name).finish()
    }
}

impl PartialEq for Family {
    fn eq(&self, other: &Family) -> bool {
        self.name == other.name
    }
}

impl Eq for Family {}

impl std::hash::Hash for Family {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl Family {
    /// Whether USB device `vendor:product` is one of this family's.
    pub fn matches_usb(&self, vendor: u16, product: u16) -> Option<UsbMatch> {
        self.usb
            .iter()
            .copied()
            .find(|m| m.vendor == vendor && m.product.is_none_or(|p| p == product))
    }
}
