//! A faithful virtual DGT board: physical pieces, a scanning sensor matrix, the
//! board's modes and answers, its EEPROM event log, bus mode, and a DGT 3000
//! clock plugged into it.
//!
//! Sans-IO and deterministic: time is injected (`t_ms`), randomness comes from
//! a seed, bytes go in through [`VirtualBoard::receive_host`] and come out,
//! timestamped, from [`VirtualBoard::take_output`]. Hands act on the pieces
//! through [`VirtualBoard::apply`]. What the host sees is only what the sensors
//! saw at a scan, as on the real board (`reference/dgt.md` §1.5): a change is
//! reported at the first scan after it, several changes found by one scan may
//! come out in another order than they happened, and a piece lifted and put back
//! between two scans is never reported.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shakmaty::{Board, Piece, Role, Square};

use crate::clock::ClockSide;
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::picture::{Picture, Sensed};

use super::types::{
    BusCommand, BusCommandKind, BusMessage, BusReply, Command, EeRecord, HostFrame, Message,
};
use super::virtual_clock::{ClockButton, ClockConfig, VirtualClock};
use super::HostDecoder;

pub use crate::family::SensorNoise;

/// How the virtual board is built.
#[derive(Clone, Debug, PartialEq)]
pub struct VirtualBoardConfig {
    pub seed: u64,
    /// Serial number; also the 14-bit bus address, so at most 16383.
    pub serial: u16,
    /// Firmware main and sub version.
    pub version: (u8, u8),
    pub trademark: String,
    /// Time between two scans, drawn uniformly from this range for each scan.
    pub scan_ms: (u64, u64),
    /// Chance that the changes found by one scan are reported shuffled rather
    /// than in the order they happened.
    pub reorder: f64,
    pub noise: SensorNoise,
    pub clock: ClockConfig,
    /// Bytes per second on the line (9600 baud, 10 bits a byte).
    pub bytes_per_s: u64,
}

impl Default for VirtualBoardConfig {
    fn default() -> Self {
        VirtualBoardConfig {
            seed: 0,
            serial: 1025,
            version: (1, 7),
            trademark: "Digital Game Technology - virtual DGT board (eboard-bridge)".into(),
            scan_ms: (200, 250),
            reorder: 0.3,
            noise: SensorNoise::default(),
            clock: ClockConfig::default(),
            bytes_per_s: 960,
        }
    }
}

/// The board's reporting mode (`reference/dgt.md` §1.2) or bus mode (§3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoardMode {
    Idle,
    Update,
    UpdateBoard,
    UpdateNice,
    Bus,
}

/// A message the board sends, before encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outgoing {
    Single(Message),
    Bus(BusMessage),
}

impl Outgoing {
    /// The bytes on the wire.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Outgoing::Single(m) => m.encode(out),
            Outgoing::Bus(m) => m.encode(out),
        }
    }
}

/// Size of the EEPROM event ring in bytes.
const EE_CAPACITY: usize = 0x1f00;

fn ee_len(r: &EeRecord) -> usize {
    match r {
        EeRecord::Field { .. } => 2,
        EeRecord::Clock { .. } => 3,
        _ => 1,
    }
}

#[derive(Clone, Debug)]
enum Pending {
    Send(Outgoing),
    PowerUp,
}

/// The virtual board.
#[derive(Clone, Debug)]
pub struct VirtualBoard {
    cfg: VirtualBoardConfig,
    rng: SmallRng,
    physical: PhysicalBoard,
    /// When each square last changed physically (orders a scan's reports).
    changed_at: [u64; 64],
    /// The last scanned picture: what a dump reports.
    picture: Picture,
    mode: BoardMode,
    now: u64,
    next_scan: u64,
    line_free_at: u64,
    out: Vec<(u64, Outgoing)>,
    pending: Vec<(u64, Pending)>,
    clock: VirtualClock,
    last_clock_sent: Option<(u64, super::BwTime)>,
    ee: std::collections::VecDeque<EeRecord>,
    ee_bytes: usize,
    /// Absolute index of `ee[0]` (records dropped from the ring so far).
    ee_base: usize,
    last_field_t: Option<u64>,
    changes_from: usize,
    last_changes: Vec<EeRecord>,
    start_tag: Option<usize>,
    begin_tagged: bool,
    empty_tagged: bool,
    ignore_next_ping: bool,
    host: HostDecoder,
    host_errors: usize,
    /// A piece moved since the last full read of the sensors.
    dirty: bool,
}

fn standard_start() -> Board {
    Board::default()
}

impl VirtualBoard {
    /// A board switched on at time 0 with `pieces` standing on it (in the board's
    /// own frame), in bus mode as after power-up.
    pub fn new(cfg: VirtualBoardConfig, pieces: PhysicalBoard) -> VirtualBoard {
        let mut b = VirtualBoard {
            rng: SmallRng::seed_from_u64(cfg.seed),
            clock: VirtualClock::new(cfg.clock),
            cfg,
            physical: pieces,
            changed_at: [0; 64],
            picture: Picture::empty(),
            mode: BoardMode::Bus,
            now: 0,
            next_scan: 0,
            line_free_at: 0,
            out: Vec::new(),
            pending: Vec::new(),
            last_clock_sent: None,
            ee: Default::default(),
            ee_bytes: 0,
            ee_base: 0,
            last_field_t: None,
            changes_from: 0,
            last_changes: Vec::new(),
            start_tag: None,
            begin_tagged: false,
            empty_tagged: false,
            ignore_next_ping: false,
            host: HostDecoder::new(),
            host_errors: 0,
            dirty: true,
        };
        b.power_up(0);
        b
    }

    /// The configuration.
    pub fn config(&self) -> &VirtualBoardConfig {
        &self.cfg
    }

    /// The current mode.
    pub fn mode(&self) -> BoardMode {
        self.mode
    }

    /// The last scanned picture.
    pub fn picture(&self) -> &Picture {
        &self.picture
    }

    /// What really stands on the board.
    pub fn physical(&self) -> &PhysicalBoard {
        &self.physical
    }

    /// The clock.
    pub fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    /// Host frames that could not be decoded (bad checksums, garbage) so far.
    pub fn host_errors(&self) -> usize {
        self.host_errors
    }

    /// The EEPROM log, oldest first.
    pub fn ee_log(&self) -> Vec<EeRecord> {
        self.ee.iter().copied().collect()
    }

    /// The time of the next thing the board will do on its own.
    pub fn next_event_at(&self) -> u64 {
        let mut t = self.next_scan;
        if let Some(a) = self.clock.next_ack_at() {
            t = t.min(a);
        }
        if let Some(p) = self.pending.iter().map(|(t, _)| *t).min() {
            t = t.min(p);
        }
        t
    }

    fn power_up(&mut self, t: u64) {
        for _ in 0..3 {
            self.log(EeRecord::Nop);
        }
        self.log(EeRecord::PowerUp);
        self.picture = Picture::empty();
        self.begin_tagged = false;
        self.empty_tagged = false;
        self.last_field_t = None;
        self.next_scan = t;
        self.dirty = true;
        // The first scan writes one field record per piece found.
        self.scan(t);
    }

    fn log(&mut self, r: EeRecord) {
        self.ee_bytes += ee_len(&r);
        self.ee.push_back(r);
        // One byte stays free for the EE_EOF that ends a dump.
        while self.ee_bytes > EE_CAPACITY - 1 {
            if let Some(old) = self.ee.pop_front() {
                self.ee_bytes -= ee_len(&old);
                self.ee_base += 1;
            }
        }
    }

    fn ee_end(&self) -> usize {
        self.ee_base + self.ee.len()
    }

    fn ee_since(&self, abs: usize) -> Vec<EeRecord> {
        let from = abs.saturating_sub(self.ee_base).min(self.ee.len());
        self.ee.iter().skip(from).copied().collect()
    }

    /// Queues a message at `t`, after whatever is still going out on the line.
    fn send(&mut self, t: u64, msg: Outgoing) {
        let mut bytes = Vec::new();
        msg.encode(&mut bytes);
        let start = t.max(self.line_free_at);
        let dur = (bytes.len() as u64 * 1000).div_ceil(self.cfg.bytes_per_s.max(1));
        self.line_free_at = start + dur;
        self.out.push((start, msg));
    }

    fn later(&mut self, t: u64, p: Pending) {
        self.pending.push((t, p));
    }

    /// Runs scans, clock reports and delayed replies up to `t_ms`.
    pub fn advance(&mut self, t_ms: u64) {
        loop {
            let next = self.next_event_at();
            if next > t_ms {
                break;
            }
            if let Some(i) = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, (t, _))| *t == next)
                .map(|(i, _)| i)
                .next()
            {
                let (t, p) = self.pending.remove(i);
                self.now = self.now.max(t);
                match p {
                    Pending::Send(m) => self.send(t, m),
                    Pending::PowerUp => self.power_up(t),
                }
            } else if self.clock.next_ack_at() == Some(next) {
                self.now = self.now.max(next);
                for (t, ack) in self.clock.take_acks(next) {
                    // The board relays clock acks only in UPDATE and UPDATE_NICE.
                    if matches!(self.mode, BoardMode::Update | BoardMode::UpdateNice) {
                        self.send(t, Outgoing::Single(Message::ClockAck(ack)));
                    }
                }
            } else {
                self.now = self.now.max(next);
                self.scan(next);
            }
        }
        self.now = self.now.max(t_ms);
        self.clock.advance(self.now);
    }

    /// One sensor scan at `t`: reports changes, keeps the log, reports the clock.
    fn scan(&mut self, t: u64) {
        let (lo, hi) = self.cfg.scan_ms;
        self.next_scan = t + self.rng.random_range(lo.min(hi)..=hi.max(lo)).max(1);
        let noisy = self.cfg.noise.flicker_empty > 0.0 || self.cfg.noise.misread > 0.0;
        if !self.dirty && !noisy && !self.physical.has_stack() {
            // Nothing moved since the last scan read it all: same picture. This
            // keeps long simulated games cheap.
            self.clock.advance(t);
            self.report_clock(t);
            return;
        }
        self.dirty = false;
        let mut changed: Vec<(u64, Square, Sensed)> = Vec::new();
        for sq in Square::ALL {
            let sensed = self.sense(sq);
            if sensed != self.picture.get(sq) {
                changed.push((self.changed_at[usize::from(sq)], sq, sensed));
            }
        }
        changed.sort_by_key(|c| c.0);
        if changed.len() > 1 && self.rng.random_bool(self.cfg.reorder) {
            changed.shuffle(&mut self.rng);
        }
        for (_, sq, sensed) in changed {
            self.picture.set(sq, sensed);
            self.log_field(t, sq, sensed);
            if matches!(
                self.mode,
                BoardMode::Update | BoardMode::UpdateBoard | BoardMode::UpdateNice
            ) {
                self.send(
                    t,
                    Outgoing::Single(Message::FieldUpdate { square: sq, sensed }),
                );
            }
        }
        self.tag_positions();
        self.clock.advance(t);
        self.report_clock(t);
    }

    /// What the sensor of `sq` reads at this scan.
    fn sense(&mut self, sq: Square) -> Sensed {
        let mut on = self.physical.pieces_on(sq);
        let piece = match (on.next(), on.next()) {
            (None, _) => return Sensed::Empty,
            (Some(p), None) => p,
            // Two pieces on one square: the reading flickers between them.
            (Some(a), Some(b)) => {
                if self.rng.random_bool(0.5) {
                    a
                } else {
                    b
                }
            }
        };
        let noise = self.cfg.noise;
        if noise.flicker_empty > 0.0 && self.rng.random_bool(noise.flicker_empty.min(1.0)) {
            return Sensed::Empty;
        }
        if noise.misread > 0.0 && self.rng.random_bool(noise.misread.min(1.0)) {
            let others: Vec<Role> = Role::ALL.into_iter().filter(|&r| r != piece.role).collect();
            let role = others[self.rng.random_range(0..others.len())];
            return Sensed::Piece(Piece {
                color: piece.color,
                role,
            });
        }
        Sensed::Piece(piece)
    }

    fn log_field(&mut self, t: u64, square: Square, sensed: Sensed) {
        let recent = self.last_field_t.is_some_and(|l| t.saturating_sub(l) < 250);
        self.last_field_t = Some(t);
        let rec = EeRecord::Field {
            square,
            sensed,
            recent,
        };
        // When one square keeps changing, the board overwrites its last record.
        if let Some(EeRecord::Field { square: last, .. }) = self.ee.back() {
            if *last == square && self.ee.len() + self.ee_base > self.changes_from {
                self.ee.pop_back();
                self.ee_bytes -= 2;
            }
        }
        self.log(rec);
    }

    /// Start-position and empty-board tags, with the board's hysteresis: a new
    /// tag needs more than two pieces out of place first.
    fn tag_positions(&mut self) {
        let start = Picture::from_board(&standard_start());
        let rotated = start.rotated_180();
        let off = self
            .picture
            .diff(&start)
            .count()
            .min(self.picture.diff(&rotated).count());
        if off == 0 && !self.begin_tagged {
            self.begin_tagged = true;
            let tag = if self.picture == start {
                EeRecord::BeginPos
            } else {
                EeRecord::BeginPosRotated
            };
            self.log(tag);
        } else if off > 2 {
            self.begin_tagged = false;
        }
        let empty = self.picture.occupied().is_empty();
        if empty && !self.empty_tagged {
            self.log(EeRecord::EmptyBoard);
        }
        self.empty_tagged = empty;
    }

    fn report_clock(&mut self, t: u64) {
        let due = matches!(self.mode, BoardMode::Update | BoardMode::UpdateNice);
        if !due || !self.clock.present() {
            return;
        }
        let now = self.clock.reading();
        let send = match (self.mode, self.last_clock_sent) {
            (_, None) => true,
            (BoardMode::Update, Some((when, last))) => last != now || t >= when + 1000,
            (_, Some((_, last))) => last != now,
        };
        if send {
            self.last_clock_sent = Some((t, now));
            self.send(t, Outgoing::Single(Message::Clock(now)));
        }
    }

    /// A hand acts on the board or the clock at `t_ms`.
    pub fn apply(&mut self, t_ms: u64, action: PhysicalAction) -> Result<(), PhysicalError> {
        self.advance(t_ms);
        match action {
            PhysicalAction::Lift { square, .. } | PhysicalAction::Place { square, .. } => {
                self.physical.apply(action)?;
                self.changed_at[usize::from(square)] = t_ms;
                self.dirty = true;
            }
            PhysicalAction::PressClock(side) => {
                if let Some((halted, ms)) = self.clock.press(t_ms, side) {
                    let s = ms.div_ceil(1000);
                    self.log(EeRecord::Clock {
                        left: halted == ClockSide::Left,
                        hours: (s / 3600).min(9) as u8,
                        minutes: ((s / 60) % 60) as u8,
                        seconds: (s % 60) as u8,
                    });
                }
            }
        }
        Ok(())
    }

    /// A button on the clock's front is pressed.
    pub fn press_clock_button(&mut self, t_ms: u64, button: ClockButton) {
        self.advance(t_ms);
        self.clock.button(t_ms, button);
    }

    /// Bytes from the host arrive at `t_ms`.
    pub fn receive_host(&mut self, t_ms: u64, bytes: &[u8]) {
        self.advance(t_ms);
        self.host.push(bytes);
        while let Some(frame) = self.host.next() {
            match frame {
                Ok(f) => self.handle(t_ms, f),
                // A real board ignores what it cannot parse, bad checksums included.
                Err(_) => self.host_errors += 1,
            }
        }
    }

    /// A decoded host frame arrives at `t_ms`.
    pub fn receive_frame(&mut self, t_ms: u64, frame: HostFrame) {
        self.advance(t_ms);
        self.handle(t_ms, frame);
    }

    fn handle(&mut self, t: u64, frame: HostFrame) {
        match frame {
            HostFrame::Single(cmd) => {
                if self.mode == BoardMode::Bus {
                    // Any single-board command leaves bus mode and is processed.
                    self.mode = BoardMode::Idle;
                }
                self.single(t, cmd);
            }
            HostFrame::Bus(cmd) => {
                if self.mode != BoardMode::Bus {
                    // The bus command that switches to bus mode is not processed.
                    self.mode = BoardMode::Bus;
                    return;
                }
                self.bus(t, cmd);
            }
        }
    }

    fn reply(&mut self, t: u64, m: Message) {
        // A couple of milliseconds of firmware before the answer starts.
        self.send(t + 2, Outgoing::Single(m));
    }

    fn single(&mut self, t: u64, cmd: Command) {
        match cmd {
            Command::Reset => {
                self.mode = BoardMode::Idle;
                self.last_clock_sent = None;
            }
            Command::SendClock => {
                let r = self.clock.reading();
                self.reply(t, Message::Clock(r));
            }
            Command::SendBoard => {
                let p = self.picture.clone();
                self.reply(t, Message::BoardDump(p));
            }
            Command::SendUpdate => self.enter(BoardMode::Update),
            Command::SendUpdateBoard => self.enter(BoardMode::UpdateBoard),
            Command::SendUpdateNice => self.enter(BoardMode::UpdateNice),
            Command::ReturnSerialNumber => {
                let s = format!("{:05}", self.cfg.serial);
                self.reply(t, Message::SerialNumber(s));
            }
            Command::ReturnLongSerialNumber => {
                let s = format!("{:010}", self.cfg.serial);
                self.reply(t, Message::LongSerialNumber(s));
            }
            Command::ReturnBusAddress => {
                let a = self.address();
                self.reply(t, Message::BusAddress(a));
            }
            Command::SendTrademark => {
                let s = self.cfg.trademark.clone();
                self.reply(t, Message::Trademark(s));
            }
            Command::SendEeMoves => {
                let mut records = self.ee_log();
                records.push(EeRecord::Eof);
                self.log(EeRecord::Downloaded);
                self.reply(t, Message::EeMoves(records));
            }
            Command::ToBusMode => self.mode = BoardMode::Bus,
            Command::SendBatteryStatus => {
                // 100 %, no running/charging estimate, idle, not charging.
                let payload = vec![100, 0x7f, 0x7f, 0, 0, 0, 0, 0, 0];
                self.reply(t, Message::BatteryStatus(super::BatteryStatus { payload }));
            }
            Command::SendVersion => {
                let (major, minor) = self.cfg.version;
                self.reply(t, Message::Version { major, minor });
            }
            Command::Clock(c) => self.clock.command(t, &c),
            // Draughts scans, LEDs: a chess board without LEDs stays silent.
            Command::SendBoard50B
            | Command::Scan50B
            | Command::SendBoard50W
            | Command::Scan50W
            | Command::Scan100
            | Command::SetLeds { .. } => {}
        }
    }

    fn enter(&mut self, mode: BoardMode) {
        if self.mode != mode {
            self.last_clock_sent = None;
        }
        self.mode = mode;
    }

    /// The bus address: the serial number, 14 bits.
    pub fn address(&self) -> u16 {
        self.cfg.serial & 0x3fff
    }

    fn bus_reply(&mut self, t: u64, reply: BusReply) {
        let delay = self.rng.random_range(3..=8);
        let m = BusMessage {
            address: self.address(),
            reply,
        };
        self.send(t + delay, Outgoing::Bus(m));
    }

    fn bus(&mut self, t: u64, cmd: BusCommand) {
        if cmd.address != 0 && cmd.address != self.address() {
            return;
        }
        match cmd.kind {
            BusCommandKind::SendClock => {
                let r = self.clock.reading();
                self.bus_reply(t, BusReply::Clock(r));
            }
            BusCommandKind::SendBoard => {
                let p = self.picture.clone();
                self.bus_reply(t, BusReply::BoardDump(p));
            }
            BusCommandKind::SendChanges => {
                let changes = self.ee_since(self.changes_from);
                self.changes_from = self.ee_end();
                self.last_changes = changes.clone();
                self.bus_reply(t, BusReply::Changes(changes));
            }
            BusCommandKind::RepeatChanges => {
                let c = self.last_changes.clone();
                self.bus_reply(t, BusReply::Changes(c));
            }
            BusCommandKind::SetStartGame => {
                self.log(EeRecord::StartTag);
                self.start_tag = Some(self.ee_end());
                let m = Outgoing::Bus(BusMessage {
                    address: self.address(),
                    reply: BusReply::StartGameWritten,
                });
                self.later(t + 70, Pending::Send(m));
            }
            BusCommandKind::SendFromStart => {
                let from = self.start_tag.unwrap_or(self.ee_base);
                let r = self.ee_since(from);
                self.bus_reply(t, BusReply::FromStart(r));
            }
            BusCommandKind::Ping => {
                if cmd.address == 0 {
                    if self.ignore_next_ping {
                        self.ignore_next_ping = false;
                        return;
                    }
                    // Every board answers an address-0 ping at a random time so
                    // that, with luck, answers do not collide.
                    let at = t + self.rng.random_range(5..=1100);
                    let m = Outgoing::Bus(BusMessage {
                        address: self.address(),
                        reply: BusReply::Ping,
                    });
                    self.later(at, Pending::Send(m));
                } else {
                    self.bus_reply(t, BusReply::Ping);
                }
            }
            BusCommandKind::IgnoreNextBusPing => {
                self.ignore_next_ping = true;
                self.bus_reply(t, BusReply::Ping);
            }
            BusCommandKind::EndBusMode => self.mode = BoardMode::Idle,
            BusCommandKind::Reset => {
                // A power-up reset takes a couple of seconds; the board then
                // comes back in bus mode.
                self.later(t + 2000, Pending::PowerUp);
            }
            BusCommandKind::SendVersion => {
                let (major, minor) = self.cfg.version;
                self.bus_reply(t, BusReply::Version { major, minor });
            }
            BusCommandKind::SendAllData => {
                let changes = self.ee_since(self.changes_from);
                self.changes_from = self.ee_end();
                self.last_changes = changes.clone();
                self.bus_reply(t, BusReply::Changes(changes));
                let r = self.clock.reading();
                self.bus_reply(t, BusReply::Clock(r));
                let p = self.picture.clone();
                self.bus_reply(t, BusReply::BoardDump(p));
            }
            // A chess board has no draughts dump.
            BusCommandKind::SendBoard50B => {}
        }
    }

    /// Typed messages queued so far, with the time each starts on the line.
    pub fn take_messages(&mut self) -> Vec<(u64, Outgoing)> {
        std::mem::take(&mut self.out)
    }

    /// Bytes queued so far, with the time each message starts on the line.
    pub fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.take_messages()
            .into_iter()
            .map(|(t, m)| {
                let mut b = Vec::new();
                m.encode(&mut b);
                (t, b)
            })
            .collect()
    }
}

/// Several boards on one bus line: host bytes reach every board, replies are
/// merged in time order.
#[derive(Clone, Debug, Default)]
pub struct VirtualBus {
    pub boards: Vec<VirtualBoard>,
}

impl VirtualBus {
    /// A bus with these boards.
    pub fn new(boards: Vec<VirtualBoard>) -> VirtualBus {
        VirtualBus { boards }
    }

    /// Host bytes at `t_ms`, heard by every board.
    pub fn receive_host(&mut self, t_ms: u64, bytes: &[u8]) {
        for b in &mut self.boards {
            b.receive_host(t_ms, bytes);
        }
    }

    /// Runs every board up to `t_ms`.
    pub fn advance(&mut self, t_ms: u64) {
        for b in &mut self.boards {
            b.advance(t_ms);
        }
    }

    /// A hand acts on board `index`.
    pub fn apply(
        &mut self,
        index: usize,
        t_ms: u64,
        action: PhysicalAction,
    ) -> Result<(), PhysicalError> {
        self.boards[index].apply(t_ms, action)
    }

    /// Everything the boards said, in time order (ties keep board order).
    pub fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        let mut all: Vec<(u64, Vec<u8>)> = self
            .boards
            .iter_mut()
            .flat_map(|b| b.take_output())
            .collect();
        all.sort_by_key(|(t, _)| *t);
        all
    }
}

impl crate::family::VirtualDevice for VirtualBus {
    fn boards(&self) -> usize {
        self.boards.len()
    }

    fn apply(
        &mut self,
        board: usize,
        t_ms: u64,
        action: PhysicalAction,
    ) -> Result<(), PhysicalError> {
        VirtualBus::apply(self, board, t_ms, action)
    }

    fn receive_host(&mut self, t_ms: u64, bytes: &[u8]) {
        VirtualBus::receive_host(self, t_ms, bytes)
    }

    fn advance(&mut self, t_ms: u64) {
        VirtualBus::advance(self, t_ms)
    }

    fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        VirtualBus::take_output(self)
    }

    fn next_event_at(&self) -> u64 {
        self.boards
            .iter()
            .map(VirtualBoard::next_event_at)
            .min()
            .unwrap_or(u64::MAX)
    }

    fn presses(&self, board: usize) -> Vec<super::virtual_clock::PressRecord> {
        self.boards
            .get(board)
            .map(|b| b.clock().presses().to_vec())
            .unwrap_or_default()
    }

    fn leds(&self, _board: usize) -> Option<shakmaty::Bitboard> {
        None
    }

    fn describe(&self) -> String {
        match self.boards.len() {
            1 => "virtual DGT board".to_string(),
            n => format!("{n} virtual DGT boards on one bus line"),
        }
    }
}

/// Virtual DGT boards built from a family-neutral spec: board `i` has serial
/// number (and bus address) `spec.serial + i` and seed `spec.seed + i`.
pub fn virtual_device(
    spec: &crate::family::VirtualSpec,
    pieces: Vec<PhysicalBoard>,
) -> Box<dyn crate::family::VirtualDevice> {
    let boards = pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            VirtualBoard::new(
                VirtualBoardConfig {
                    seed: spec.seed.wrapping_add(i as u64),
                    serial: spec.serial.wrapping_add(i as u16),
                    noise: spec.noise,
                    clock: spec.clock,
                    ..VirtualBoardConfig::default()
                },
                p,
            )
        })
        .collect();
    Box::new(VirtualBus::new(boards))
}

/// The standard start position standing on a board, White at the connector's
/// left (`rotated` false) or right.
pub fn start_position(rotated: bool) -> PhysicalBoard {
    PhysicalBoard::from_board(&standard_start(), rotated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dgt::{bus_checksum, ClockCommand, Decoder, Frame, Mode};
    use shakmaty::Color;

    fn board(cfg: VirtualBoardConfig) -> VirtualBoard {
        VirtualBoard::new(cfg, start_position(false))
    }

    fn singles(b: &mut VirtualBoard) -> Vec<(u64, Message)> {
        b.take_messages()
            .into_iter()
            .filter_map(|(t, m)| match m {
                Outgoing::Single(m) => Some((t, m)),
                Outgoing::Bus(_) => None,
            })
            .collect()
    }

    fn fields(msgs: &[(u64, Message)]) -> Vec<(Square, Sensed)> {
        msgs.iter()
            .filter_map(|(_, m)| match m {
                Message::FieldUpdate { square, sensed } => Some((*square, *sensed)),
                _ => None,
            })
            .collect()
    }

    fn bus_frame(kind: u8, address: u16) -> Vec<u8> {
        let mut f = vec![kind, ((address >> 7) & 0x7f) as u8, (address & 0x7f) as u8];
        f.push(bus_checksum(&f));
        f
    }

    #[test]
    fn start_up_sequence_answers_like_a_board() {
        let mut b = board(VirtualBoardConfig::default());
        assert_eq!(b.mode(), BoardMode::Bus);
        b.receive_host(100, &[0x40, 0x45, 0x4d, 0x42, 0x4b, 0x41]);
        assert_eq!(b.mode(), BoardMode::UpdateNice);
        let bytes: Vec<u8> = b.take_output().into_iter().flat_map(|(_, b)| b).collect();
        let mut d = Decoder::new(Mode::Single);
        d.push(&bytes);
        let mut got = Vec::new();
        while let Some(f) = d.next() {
            match f.unwrap() {
                Frame::Single(m) => got.push(m),
                Frame::Bus(m) => panic!("bus frame {m:?}"),
            }
        }
        assert_eq!(got[0], Message::SerialNumber("01025".into()));
        assert_eq!(got[1], Message::Version { major: 1, minor: 7 });
        assert_eq!(
            got[2],
            Message::BoardDump(Picture::from_board(&Board::default()))
        );
        assert!(matches!(got[3], Message::Clock(c) if !c.running && c.left_turn));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn field_updates_only_in_update_modes_and_at_the_next_scan() {
        let mut b = board(VirtualBoardConfig::default());
        b.receive_host(0, &[0x40]);
        b.apply(
            1000,
            PhysicalAction::Lift {
                square: Square::E2,
                piece: Color::White.pawn(),
            },
        )
        .unwrap();
        b.advance(1300);
        assert!(
            fields(&singles(&mut b)).is_empty(),
            "IDLE sends no field updates"
        );
        assert_eq!(b.picture().get(Square::E2), Sensed::Empty, "but it scans");
        b.receive_host(1300, &[0x44]);
        b.apply(
            1400,
            PhysicalAction::Place {
                square: Square::E4,
                piece: Color::White.pawn(),
            },
        )
        .unwrap();
        b.advance(1399 + 251);
        let msgs = singles(&mut b);
        assert_eq!(
            fields(&msgs),
            [(Square::E4, Sensed::Piece(Color::White.pawn()))]
        );
        assert!(msgs[0].0 >= 1400 && msgs[0].0 <= 1400 + 252);
        // UPDATE_BOARD never sends clock times.
        b.advance(10_000);
        assert!(singles(&mut b).is_empty());
    }

    #[test]
    fn a_piece_put_back_between_two_scans_is_never_reported() {
        let mut b = board(VirtualBoardConfig::default());
        b.receive_host(0, &[0x40, 0x44]);
        b.advance(5_000);
        b.take_messages();
        // Scans are at least 200 ms apart: 100 ms in the air fits between two.
        let next = b.next_event_at();
        let piece = Color::Black.knight();
        b.apply(
            next + 10,
            PhysicalAction::Lift {
                square: Square::G8,
                piece,
            },
        )
        .unwrap();
        b.apply(
            next + 110,
            PhysicalAction::Place {
                square: Square::G8,
                piece,
            },
        )
        .unwrap();
        b.advance(next + 2_000);
        assert!(fields(&singles(&mut b)).is_empty());
    }

    #[test]
    fn changes_in_one_scan_may_be_reordered() {
        let mut orders = std::collections::HashSet::new();
        for (seed, reorder) in (0..40).map(|s| (s, 1.0)).chain((40..60).map(|s| (s, 0.0))) {
            let mut b = board(VirtualBoardConfig {
                seed,
                reorder,
                ..VirtualBoardConfig::default()
            });
            b.receive_host(0, &[0x40, 0x44]);
            b.advance(1_000);
            let next = b.next_event_at();
            let p = Color::White.pawn();
            b.apply(
                next + 1,
                PhysicalAction::Lift {
                    square: Square::E2,
                    piece: p,
                },
            )
            .unwrap();
            b.apply(
                next + 60,
                PhysicalAction::Place {
                    square: Square::E4,
                    piece: p,
                },
            )
            .unwrap();
            b.advance(next + 500);
            let f = fields(&singles(&mut b));
            assert_eq!(f.len(), 2);
            if reorder == 0.0 {
                assert_eq!(f[0].0, Square::E2, "real order without reordering");
            }
            orders.insert(f[0].0);
        }
        assert_eq!(orders.len(), 2, "both orders seen");
    }

    #[test]
    fn two_pieces_on_a_square_flicker_and_noise_is_off_by_default() {
        let mut b = board(VirtualBoardConfig::default());
        b.receive_host(0, &[0x40, 0x44]);
        b.apply(
            1_000,
            PhysicalAction::Place {
                square: Square::E7,
                piece: Color::White.queen(),
            },
        )
        .unwrap();
        b.advance(20_000);
        let f = fields(&singles(&mut b));
        assert!(
            f.len() > 4,
            "a stack reads as one piece, then the other: {f:?}"
        );
        b.apply(
            20_000,
            PhysicalAction::Lift {
                square: Square::E7,
                piece: Color::White.queen(),
            },
        )
        .unwrap();
        b.advance(21_000);
        b.take_messages();
        b.advance(60_000);
        assert!(singles(&mut b).is_empty(), "a still board says nothing");

        let mut noisy = board(VirtualBoardConfig {
            noise: SensorNoise {
                flicker_empty: 0.01,
                misread: 0.01,
            },
            ..VirtualBoardConfig::default()
        });
        noisy.receive_host(0, &[0x40, 0x44]);
        noisy.advance(60_000);
        let f = fields(&singles(&mut noisy));
        assert!(f.iter().any(|(_, s)| *s == Sensed::Empty));
        // Noise lasts one scan: the real pieces are reported back afterwards.
        assert!(f.iter().any(|(_, s)| s.piece().is_some()));
    }

    #[test]
    fn bwtime_every_second_in_update_and_on_change_in_update_nice() {
        let mut b = board(VirtualBoardConfig::default());
        b.receive_host(0, &[0x40, 0x43]);
        b.advance(10_000);
        let clocks = singles(&mut b)
            .iter()
            .filter(|(_, m)| matches!(m, Message::Clock(_)))
            .count();
        assert!(
            (9..=12).contains(&clocks),
            "UPDATE: {clocks} in 10 s with a stopped clock"
        );

        let mut b = board(VirtualBoardConfig::default());
        b.receive_host(0, &[0x40, 0x4b]);
        b.advance(10_000);
        let clocks = singles(&mut b)
            .iter()
            .filter(|(_, m)| matches!(m, Message::Clock(_)))
            .count();
        assert_eq!(
            clocks, 1,
            "UPDATE_NICE: only the first reading while nothing changes"
        );
        b.apply(10_000, PhysicalAction::PressClock(ClockSide::Right))
            .unwrap();
        b.advance(20_000);
        let times: Vec<u8> = singles(&mut b)
            .iter()
            .filter_map(|(_, m)| match m {
                Message::Clock(c) => Some(c.left.seconds),
                _ => None,
            })
            .collect();
        assert!(
            (10..=12).contains(&times.len()),
            "one per displayed second: {times:?}"
        );
    }

    #[test]
    fn clock_acks_only_in_update_modes() {
        for (mode, acks) in [(0x40u8, 0usize), (0x44, 0), (0x43, 1), (0x4b, 1)] {
            let mut b = board(VirtualBoardConfig::default());
            b.receive_host(0, &[0x40, mode]);
            let mut cmd = Vec::new();
            Command::Clock(ClockCommand::Version).encode(&mut cmd);
            b.receive_host(100, &cmd);
            b.advance(3_000);
            let got = singles(&mut b)
                .iter()
                .filter(|(_, m)| matches!(m, Message::ClockAck(a) if a.bytes[1] == 0x09))
                .count();
            assert_eq!(got, acks, "mode {mode:#x}");
        }
    }

    #[test]
    fn ee_log_records_fields_clock_and_start_tag() {
        let mut b = board(VirtualBoardConfig::default());
        let log = b.ee_log();
        assert_eq!(
            &log[..4],
            &[
                EeRecord::Nop,
                EeRecord::Nop,
                EeRecord::Nop,
                EeRecord::PowerUp
            ]
        );
        assert_eq!(
            log.iter()
                .filter(|r| matches!(r, EeRecord::Field { .. }))
                .count(),
            32
        );
        assert_eq!(log.last(), Some(&EeRecord::BeginPos));
        b.apply(500, PhysicalAction::PressClock(ClockSide::Right))
            .unwrap();
        let p = Color::White.pawn();
        b.apply(
            2_000,
            PhysicalAction::Lift {
                square: Square::E2,
                piece: p,
            },
        )
        .unwrap();
        b.apply(
            2_400,
            PhysicalAction::Place {
                square: Square::E4,
                piece: p,
            },
        )
        .unwrap();
        b.apply(3_000, PhysicalAction::PressClock(ClockSide::Left))
            .unwrap();
        b.receive_host(4_000, &[0x40, 0x49]);
        b.advance(20_000);
        let msgs = singles(&mut b);
        let Some((_, Message::EeMoves(records))) = msgs.last() else {
            panic!("no EE moves: {msgs:?}")
        };
        let tail: Vec<_> = records.iter().rev().take(4).rev().copied().collect();
        assert!(matches!(
            tail[0],
            EeRecord::Field {
                square: Square::E2,
                sensed: Sensed::Empty,
                ..
            }
        ));
        assert!(matches!(
            tail[1],
            EeRecord::Field {
                square: Square::E4,
                ..
            }
        ));
        assert!(matches!(
            tail[2],
            EeRecord::Clock {
                left: true,
                hours: 1,
                minutes: 30,
                seconds: 58
            }
        ));
        assert_eq!(tail[3], EeRecord::Eof);
    }

    #[test]
    fn bus_mode_addressing_and_checksums() {
        let mut b = board(VirtualBoardConfig::default());
        let me = b.address();
        assert_eq!(me, 1025);
        // Bad checksum: silence.
        let mut bad = bus_frame(0x87, me);
        bad[3] ^= 1;
        b.receive_host(0, &bad);
        // Another board's address: silence.
        b.receive_host(10, &bus_frame(0x87, 77));
        b.advance(2_000);
        assert!(b.take_messages().is_empty());
        assert_eq!(b.host_errors(), 1);
        // Own address: answer within a few ms.
        b.receive_host(2_000, &bus_frame(0x87, me));
        b.receive_host(2_100, &bus_frame(0x82, me));
        b.advance(2_200);
        let out = b.take_output();
        assert_eq!(out.len(), 2);
        assert!(out[0].0 >= 2_000 && out[0].0 <= 2_010);
        let mut d = Decoder::new(Mode::Bus);
        for (_, bytes) in &out {
            d.push(bytes);
        }
        let first = d.next().unwrap().unwrap();
        assert_eq!(
            first,
            Frame::Bus(BusMessage {
                address: me,
                reply: BusReply::Ping
            })
        );
        let Frame::Bus(BusMessage {
            reply: BusReply::BoardDump(p),
            ..
        }) = d.next().unwrap().unwrap()
        else {
            panic!("no dump")
        };
        assert_eq!(p, Picture::from_board(&Board::default()));
        // A single-board command leaves bus mode; the next bus command only
        // switches back and is not answered.
        b.receive_host(3_000, &[0x45]);
        assert_eq!(b.mode(), BoardMode::Idle);
        b.receive_host(3_100, &bus_frame(0x87, me));
        b.advance(4_000);
        assert_eq!(b.take_messages().len(), 1, "only the serial number");
        assert_eq!(b.mode(), BoardMode::Bus);
    }

    #[test]
    fn bus_changes_repeat_and_from_start() {
        let mut b = board(VirtualBoardConfig::default());
        let me = b.address();
        b.receive_host(0, &bus_frame(0x83, me));
        b.receive_host(10, &bus_frame(0x85, me));
        let p = Color::White.knight();
        b.apply(
            500,
            PhysicalAction::Lift {
                square: Square::G1,
                piece: p,
            },
        )
        .unwrap();
        b.apply(
            900,
            PhysicalAction::Place {
                square: Square::F3,
                piece: p,
            },
        )
        .unwrap();
        b.advance(1_500);
        let early = b.take_messages();
        assert!(matches!(
            &early[1],
            (
                80..=90,
                Outgoing::Bus(BusMessage {
                    reply: BusReply::StartGameWritten,
                    ..
                })
            )
        ));
        b.receive_host(1_500, &bus_frame(0x83, me));
        b.receive_host(1_600, &bus_frame(0x84, me));
        b.receive_host(1_700, &bus_frame(0x86, me));
        b.advance(2_000);
        let replies: Vec<BusReply> = b
            .take_messages()
            .into_iter()
            .map(|(_, m)| match m {
                Outgoing::Bus(m) => m.reply,
                Outgoing::Single(m) => panic!("{m:?}"),
            })
            .collect();
        let want = vec![
            EeRecord::Field {
                square: Square::G1,
                sensed: Sensed::Empty,
                recent: false,
            },
            EeRecord::Field {
                square: Square::F3,
                sensed: Sensed::Piece(p),
                recent: false,
            },
        ];
        // SEND_CHANGES sends all logged since the last one, the start tag included.
        let mut since = vec![EeRecord::StartTag];
        since.extend(want.iter().copied());
        assert_eq!(replies[0], BusReply::Changes(since.clone()));
        assert_eq!(replies[1], BusReply::Changes(since));
        assert_eq!(replies[2], BusReply::FromStart(want));
    }

    #[test]
    fn a_bus_of_boards_answers_an_address_zero_ping_at_random_times() {
        let boards = (0..4)
            .map(|i| {
                VirtualBoard::new(
                    VirtualBoardConfig {
                        seed: i,
                        serial: 100 + i as u16,
                        ..VirtualBoardConfig::default()
                    },
                    start_position(false),
                )
            })
            .collect();
        let mut bus = VirtualBus::new(boards);
        bus.receive_host(0, &bus_frame(0x8a, 101));
        bus.receive_host(50, &bus_frame(0x87, 0));
        bus.advance(3_000);
        let out = bus.take_output();
        let mut d = Decoder::new(Mode::Bus);
        let mut who = Vec::new();
        let mut last_t = 0;
        for (t, bytes) in &out {
            assert!(*t >= last_t);
            last_t = *t;
            d.push(bytes);
            while let Some(f) = d.next() {
                let Frame::Bus(m) = f.unwrap() else { panic!() };
                assert_eq!(m.reply, BusReply::Ping);
                who.push((*t, m.address));
            }
        }
        // 101 answered the ignore-next-ping at once and skipped the general ping.
        assert_eq!(who[0].1, 101);
        assert!(who[0].0 < 20);
        let mut rest: Vec<u16> = who[1..].iter().map(|w| w.1).collect();
        rest.sort();
        assert_eq!(rest, [100, 102, 103]);
        assert!(who[1..]
            .iter()
            .all(|(t, _)| *t >= 50 && *t <= 50 + 1100 + 20));
    }
}
