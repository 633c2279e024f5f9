//! A DGT session: the bytes of one port, both ways, turned into tracker calls.
//!
//! [`DgtSession::feed`] takes capture chunks in time order (the daemon builds the
//! same chunks from its port). Board → host bytes go through the codec's
//! [`Decoder`]; every frame becomes a full sensor picture or a clock reading for
//! the board it came from, and the board's [`Tracker`] turns those into events,
//! stamped with the capture time of the chunk whose bytes completed the frame.
//! Host → board bytes are parsed only to follow the port's mode: `0x4a` or any bus
//! command puts the boards in bus mode, any other single-board command takes them
//! out of it (dgt.md §3), and the decoder must know which, because bus reply ids
//! overlap single-board ids.
//!
//! Nothing here is fatal: decode errors are counted in [`SessionStats`] and the
//! decoder resynchronises by itself.
//!
//! Pictures: a board dump replaces the board's picture and is given to the
//! tracker; a field update changes one square of the picture and the whole
//! picture is given to the tracker. Field updates that come before the board's
//! first dump are applied to an all-empty picture that is *not* given to the
//! tracker until a dump arrives: a partial picture would look like a board being
//! set up, and the dump (which a host always asks for at start) then replaces it.
//! The tracker thus only ever sees pictures the board actually showed.

use std::collections::{BTreeMap, HashMap};

use eboard_protocols::dgt::{
    BusCommand, BusCommandKind, BusMessage, BusReply, BwTime, ClockAck, Command, Decoder, EeRecord,
    Frame, HostDecoder, HostFrame, Message, Mode, BUFFER_CAP, HOST_BUFFER_CAP,
};
use eboard_protocols::{ClockReading, ClockSide, Picture};

use crate::capture::{Chunk, Direction};
use crate::events::{GameEvent, Millis, Stamped, TrackerEvent};
use crate::operator::{OperatorError, Refusal, TrackerCommand};
use crate::tracker::{Tracker, TrackerConfig, TrackerError};

/// What a board told about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoardInfo {
    /// Five-digit serial number (`0x91`).
    pub serial: Option<String>,
    /// Ten-digit serial number of Bluetooth boards (`0xa2`).
    pub long_serial: Option<String>,
    /// Firmware main and sub version (`0x93`, bus `0x89`).
    pub version: Option<(u8, u8)>,
    /// Trademark text (`0x92`).
    pub trademark: Option<String>,
    /// Bus address: reported by `0x90`, or the address its bus replies carry.
    pub bus_address: Option<u16>,
    /// Battery charge in percent (Bluetooth boards, `0xa0`).
    pub battery_percent: Option<u8>,
    /// Clock acks received (replies to clock commands, button presses).
    pub clock_acks: u64,
    /// The last clock ack.
    pub last_clock_ack: Option<ClockAck>,
    /// The board said no clock is connected (BWTIME status bit 5). The tracker
    /// then sees no clock readings at all, which is how it knows a board is
    /// clockless.
    pub no_clock: bool,
    /// A board dump has been received, so the tracker sees this board's pictures.
    pub has_picture: bool,
}

/// Counters of what went through the session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Board → host bytes fed.
    pub bytes_in: u64,
    /// Host → board bytes fed.
    pub bytes_out: u64,
    /// Frames decoded from the board.
    pub frames: u64,
    /// Decode errors (garbage skipped, cut messages, bad checksums, …).
    pub decode_errors: u64,
    /// The last decode error, for diagnostics.
    pub last_decode_error: Option<String>,
    /// All-zero BWTIME readings ignored (dgt.md §1.6).
    pub blank_clock_readings: u64,
    /// BWTIME readings saying "no clock" ignored.
    pub no_clock_readings: u64,
    /// Full pictures given to the trackers.
    pub pictures: u64,
    /// Field updates received before the board's first dump (not given to the tracker).
    pub updates_before_dump: u64,
    /// EEPROM records that carry no picture and no press (EE_MOVES history,
    /// tags, clock records that tell nothing new), not used for tracking.
    pub ee_records_unused: u64,
    /// Bus clock records (written by the board at each lever change) turned
    /// into presses for the tracker, in their place among the field changes.
    pub ee_presses: u64,
    /// Host commands seen.
    pub host_frames: u64,
    /// Host bytes that formed no command.
    pub host_errors: u64,
    /// Times the port's mode was switched by a host command.
    pub mode_switches: u64,
}

/// One board behind the port.
#[derive(Debug)]
struct BoardState {
    number: u32,
    picture: Picture,
    tracker: Tracker,
    info: BoardInfo,
    /// An arbiter marked the board inactive: its alerts are dropped.
    inactive: bool,
    /// The last clock reading given to the tracker (bus mode builds presses
    /// from the board's clock records on top of it).
    reading: Option<ClockReading>,
    /// Bus mode: a press read from a clock record, held back until the board
    /// has scanned after it (see [`DgtSession::ee_press`]): the reading to
    /// give, when it was read, and whether a later change report came since.
    held_press: Option<HeldPress>,
}

/// A bus press waiting for the board's next scan.
#[derive(Clone, Copy, Debug)]
struct HeldPress {
    reading: ClockReading,
    since: Millis,
    /// A change report was read after the one holding the record.
    report_after: bool,
    /// Seen first by a clock poll, not yet by the board's clock record: the
    /// record, in its place among the squares, is what says when it happened.
    from_poll: bool,
}

/// A held bus press is given anyway after this long without a change report
/// (the board stopped answering polls): later is better than never.
const HELD_PRESS_MAX_MS: Millis = 1_000;

impl BoardState {
    fn new(number: u32, config: &TrackerConfig) -> BoardState {
        BoardState {
            number,
            picture: Picture::empty(),
            tracker: Tracker::new(config.clone()),
            info: BoardInfo::default(),
            inactive: false,
            reading: None,
            held_press: None,
        }
    }
}

/// Which board state a frame belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Single,
    Bus(u16),
}

/// The trackers' hold timers are ticked on this grid of capture time, by the
/// daemon's loop and by everything that replays a capture (`replay`, crash
/// recovery, the benches), so the timers fire at the same instants and a replay
/// gives the live run's events, times included.
pub const TICK_MS: Millis = 100;

/// Which points of the tick grid a session has been ticked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickGrid {
    /// The last grid point ticked.
    done: Option<Millis>,
}

impl TickGrid {
    /// Ticks `session` at every grid point up to and including `t_ms` that it
    /// has not been ticked at, in order. Called before each input at `t_ms`
    /// (chunk or operator command) and when time passes.
    pub fn tick_until(&mut self, session: &mut DgtSession, t_ms: Millis, out: &mut Vec<Stamped>) {
        let last = t_ms / TICK_MS * TICK_MS;
        let mut g = match self.done {
            Some(d) if d >= last => return,
            Some(d) => d + TICK_MS,
            // Before its first input a session has nothing a tick could change.
            None => last,
        };
        while g <= last {
            session.tick(g, out);
            g += TICK_MS;
        }
        self.done = Some(last);
    }
}

/// Drives one session over a capture's records in time order, ticking it on
/// [`TICK_MS`] between them: the one loop from capture to events that `replay`,
/// crash recovery and the accuracy bench share with the daemon's own loop.
#[derive(Debug)]
pub struct CaptureDriver {
    pub session: DgtSession,
    grid: TickGrid,
    last_t: Millis,
}

impl CaptureDriver {
    pub fn new(session: DgtSession) -> CaptureDriver {
        CaptureDriver {
            session,
            grid: TickGrid::default(),
            last_t: 0,
        }
    }

    /// The time of the last record given.
    pub fn last_t(&self) -> Millis {
        self.last_t
    }

    /// One chunk of the capture.
    pub fn chunk(&mut self, chunk: &Chunk, out: &mut Vec<Stamped>) {
        self.grid.tick_until(&mut self.session, chunk.t_ms, out);
        self.last_t = self.last_t.max(chunk.t_ms);
        self.session.feed(chunk, out);
    }

    /// An arbiter's command journaled at `t_ms`.
    pub fn operator(
        &mut self,
        t_ms: Millis,
        board: u32,
        command: &TrackerCommand,
        out: &mut Vec<Stamped>,
    ) -> Result<(), OperatorError> {
        self.grid.tick_until(&mut self.session, t_ms, out);
        self.last_t = self.last_t.max(t_ms);
        self.session.operator(t_ms, board, command, out)
    }

    /// Time passes to `t_ms` with no input.
    pub fn tick_until(&mut self, t_ms: Millis, out: &mut Vec<Stamped>) {
        self.grid.tick_until(&mut self.session, t_ms, out);
    }

    /// The capture ended: holds run on for `grace_ms` past the last record (a
    /// last move without a press is verified), but nothing is read into the
    /// board's silence after it.
    pub fn finish(&mut self, grace_ms: Millis, out: &mut Vec<Stamped>) {
        self.session.end_of_input(self.last_t);
        let end = self.last_t.saturating_add(grace_ms);
        self.grid.tick_until(&mut self.session, end, out);
    }
}

/// The DGT traffic of one port, feeding one tracker per board.
#[derive(Debug)]
pub struct DgtSession {
    decoder: Decoder,
    host: HostDecoder,
    config: TrackerConfig,
    single: BoardState,
    bus: BTreeMap<u16, BoardState>,
    bus_numbers: HashMap<u16, u32>,
    stats: SessionStats,
    scratch: Vec<TrackerEvent>,
    /// The single board's clock acks not yet taken, when someone sends clock
    /// commands and waits for them (see [`DgtSession::take_clock_acks`]).
    acks: Option<Vec<ClockAck>>,
}

impl DgtSession {
    /// A session for the board numbered `board`, starting in `mode` (bus mode when
    /// the port is known to be used that way, e.g. from a capture header).
    pub fn new(board: u32, mode: Mode, config: TrackerConfig) -> DgtSession {
        DgtSession {
            decoder: Decoder::new(mode),
            host: HostDecoder::new(),
            single: BoardState::new(board, &config),
            config,
            bus: BTreeMap::new(),
            bus_numbers: HashMap::new(),
            stats: SessionStats::default(),
            scratch: Vec::new(),
            acks: None,
        }
    }

    /// From now on, keeps the single board's clock acks for
    /// [`DgtSession::take_clock_acks`] (the daemon, which sends clock
    /// commands, turns this on; a replay does not need it).
    pub fn collect_clock_acks(&mut self) {
        self.acks.get_or_insert_with(Vec::new);
    }

    /// The single board's clock acks received since the last call, oldest
    /// first.
    pub fn take_clock_acks(&mut self) -> Vec<ClockAck> {
        self.acks.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// What the single board's tracker knows of its clock: the side White
    /// uses, once learned, and the side the lever lets run now.
    pub fn clock_sides(&self) -> (Option<ClockSide>, Option<ClockSide>) {
        self.single.tracker.clock_sides()
    }

    /// Gives the board at bus `address` the number `board` (from the pairing).
    /// Without it a bus board is numbered by its address, which is its serial
    /// number (dgt.md §1.4), so the numbers stay stable from one capture to the next.
    /// Takes effect for a board not yet heard from.
    pub fn set_bus_board_number(&mut self, address: u16, board: u32) {
        self.bus_numbers.insert(address, board);
    }

    /// Games on the single-mode board start from `fen`, a position the operator
    /// set up, rather than from a standard or Chess960 start picture.
    pub fn set_start_fen(&mut self, fen: &str) -> Result<(), TrackerError> {
        self.single.tracker.set_start_fen(fen)
    }

    /// Applies an arbiter's command to board `board` at `t_ms` (in order with the
    /// chunks: the daemon and replay call this where the capture has the
    /// command's `operator` line). Events it causes are appended to `out`.
    pub fn operator(
        &mut self,
        t_ms: Millis,
        board: u32,
        command: &TrackerCommand,
        out: &mut Vec<Stamped>,
    ) -> Result<(), OperatorError> {
        let state = std::iter::once(&mut self.single)
            .chain(self.bus.values_mut())
            .find(|b| b.number == board)
            .ok_or(OperatorError::UnknownBoard(board))?;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let refusal = |r: Refusal| match r {
            Refusal::NoGame => OperatorError::NoGame(board),
            Refusal::NoRetraction => OperatorError::NoRetraction(board),
            Refusal::BadFen(reason) => OperatorError::BadFen {
                fen: match command {
                    TrackerCommand::SetStartFen { fen } => fen.clone(),
                    _ => String::new(),
                },
                reason,
            },
        };
        let result = match command {
            // The arbiter's notes (`reason`) are journaled with the command and
            // shown on the timeline; the public result carries none of them.
            TrackerCommand::SetResult { result, .. } => {
                state.tracker.operator_result(*result, &mut scratch)
            }
            TrackerCommand::AcceptRetraction => {
                state.tracker.operator_accept_retraction(&mut scratch)
            }
            TrackerCommand::RejectRetraction => {
                state.tracker.operator_reject_retraction(t_ms, &mut scratch)
            }
            TrackerCommand::SetStartFen { fen } => state.tracker.operator_start_fen(t_ms, fen),
            TrackerCommand::SetActive { active } => {
                state.inactive = !active;
                Ok(())
            }
        }
        .map_err(refusal);
        stamp(state, t_ms, &mut scratch, out);
        self.scratch = scratch;
        result
    }

    /// The port went down (`online == false`) or came back: every board behind it
    /// is told, so that silence is not taken for a still board (no hold timer fires
    /// while offline) and the dump after the return is matched as any picture.
    pub fn connection(&mut self, t_ms: Millis, online: bool, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        for board in std::iter::once(&mut self.single).chain(self.bus.values_mut()) {
            scratch.clear();
            board.tracker.connection(t_ms, online, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
        }
        self.scratch = scratch;
    }

    /// The decoder's current mode.
    pub fn mode(&self) -> Mode {
        self.decoder.mode()
    }

    /// Counters so far.
    pub fn stats(&self) -> &SessionStats {
        &self.stats
    }

    /// What the single-mode board told about itself.
    pub fn board_info(&self) -> &BoardInfo {
        &self.single.info
    }

    /// The boards heard from in bus mode, by address.
    pub fn bus_boards(&self) -> impl Iterator<Item = (u16, u32, &BoardInfo)> {
        self.bus.iter().map(|(&a, b)| (a, b.number, &b.info))
    }

    /// The current sensor picture of the single-mode board (all empty until it
    /// reported anything).
    pub fn picture(&self) -> &Picture {
        &self.single.picture
    }

    /// The current sensor picture of the bus board at `address`.
    pub fn bus_picture(&self, address: u16) -> Option<&Picture> {
        self.bus.get(&address).map(|b| &b.picture)
    }

    /// Takes one chunk of port traffic; events it caused are appended to `out`.
    ///
    /// The decoders keep a bounded buffer of unread bytes ([`BUFFER_CAP`],
    /// [`HOST_BUFFER_CAP`]) and drop the oldest beyond it, so a chunk is handed
    /// to them in pieces of half that size, each decoded before the next:
    /// a capture line may hold up to 1 MiB (written by another tool, or chunks
    /// merged by hand), and none of its bytes may be lost.
    pub fn feed(&mut self, chunk: &Chunk, out: &mut Vec<Stamped>) {
        match chunk.dir {
            Direction::In => {
                self.stats.bytes_in += chunk.bytes.len() as u64;
                for piece in chunk.bytes.chunks(BUFFER_CAP / 2) {
                    self.decoder.push(piece);
                    while let Some(result) = self.decoder.next() {
                        match result {
                            Ok(frame) => {
                                self.stats.frames += 1;
                                self.frame(chunk.t_ms, frame, out);
                            }
                            Err(e) => {
                                self.stats.decode_errors += 1;
                                self.stats.last_decode_error = Some(e.to_string());
                            }
                        }
                    }
                }
            }
            Direction::Out => {
                self.stats.bytes_out += chunk.bytes.len() as u64;
                for piece in chunk.bytes.chunks(HOST_BUFFER_CAP / 2) {
                    self.host.push(piece);
                    while let Some(result) = self.host.next() {
                        match result {
                            Ok(frame) => {
                                self.stats.host_frames += 1;
                                self.host_frame(&frame);
                            }
                            Err(_) => self.stats.host_errors += 1,
                        }
                    }
                }
            }
        }
    }

    /// The capture ends at `t_ms`: no board input comes after it (see
    /// [`Tracker::end_of_input`]). Time may still be ticked on, so that holds
    /// expire.
    pub fn end_of_input(&mut self, t_ms: Millis) {
        for board in std::iter::once(&mut self.single).chain(self.bus.values_mut()) {
            board.tracker.end_of_input(t_ms);
        }
    }

    /// Time passes with no traffic (drives the trackers' hold timers): every
    /// board's tracker is ticked.
    pub fn tick(&mut self, t_ms: Millis, out: &mut Vec<Stamped>) {
        let stale: Vec<u16> = self
            .bus
            .iter()
            .filter(|(_, b)| {
                b.held_press
                    .is_some_and(|h| t_ms.saturating_sub(h.since) >= HELD_PRESS_MAX_MS)
            })
            .map(|(&a, _)| a)
            .collect();
        for a in stale {
            self.release_press(Target::Bus(a), t_ms, out);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        for board in std::iter::once(&mut self.single).chain(self.bus.values_mut()) {
            scratch.clear();
            board.tracker.tick(t_ms, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
        }
        self.scratch = scratch;
    }

    /// Follows the port's mode from what the host says (dgt.md §3): `0x4a` or
    /// any bus command switches to bus mode, except END_BUSMODE, which leaves it;
    /// any other single-board command switches back too.
    fn host_frame(&mut self, frame: &HostFrame) {
        let mode = match frame {
            HostFrame::Bus(BusCommand {
                kind: BusCommandKind::EndBusMode,
                ..
            }) => Mode::Single,
            HostFrame::Single(Command::ToBusMode) | HostFrame::Bus(_) => Mode::Bus,
            HostFrame::Single(_) => Mode::Single,
        };
        if self.decoder.mode() != mode {
            self.decoder.set_mode(mode);
            self.stats.mode_switches += 1;
        }
    }

    fn frame(&mut self, t_ms: Millis, frame: Frame, out: &mut Vec<Stamped>) {
        match frame {
            Frame::Single(m) => self.message(t_ms, m, out),
            Frame::Bus(b) => self.bus_message(t_ms, b, out),
        }
    }

    fn board(&mut self, target: Target) -> &mut BoardState {
        match target {
            Target::Single => &mut self.single,
            Target::Bus(address) => {
                let number = self
                    .bus_numbers
                    .get(&address)
                    .copied()
                    .unwrap_or(u32::from(address));
                let config = &self.config;
                self.bus.entry(address).or_insert_with(|| {
                    let mut b = BoardState::new(number, config);
                    b.info.bus_address = Some(address);
                    b
                })
            }
        }
    }

    fn message(&mut self, t_ms: Millis, m: Message, out: &mut Vec<Stamped>) {
        let target = Target::Single;
        match m {
            Message::BoardDump(p) => self.dump(target, t_ms, p, out),
            Message::FieldUpdate { square, sensed } => {
                let board = self.board(target);
                board.picture.set(square, sensed);
                self.picture_changed(target, t_ms, out);
            }
            Message::Clock(bw) => self.clock(target, t_ms, &bw, out),
            Message::ClockAck(ack) => self.clock_ack(target, ack),
            Message::EeMoves(records) => {
                // The EEPROM log is history from before this session; the tracker
                // follows the live board only.
                self.stats.ee_records_unused += records.len() as u64;
            }
            Message::BusAddress(a) => self.board(target).info.bus_address = Some(a),
            Message::SerialNumber(s) => self.board(target).info.serial = Some(s),
            Message::LongSerialNumber(s) => self.board(target).info.long_serial = Some(s),
            Message::Trademark(s) => self.board(target).info.trademark = Some(s),
            Message::Version { major, minor } => {
                self.board(target).info.version = Some((major, minor))
            }
            Message::BatteryStatus(b) => self.board(target).info.battery_percent = b.percent(),
            Message::Draughts50 { .. } | Message::Unknown { .. } => {}
        }
    }

    fn bus_message(&mut self, t_ms: Millis, b: BusMessage, out: &mut Vec<Stamped>) {
        let target = Target::Bus(b.address);
        match b.reply {
            BusReply::BoardDump(p) => self.dump(target, t_ms, p, out),
            BusReply::Clock(bw) => self.clock(target, t_ms, &bw, out),
            BusReply::ClockAck(ack) => self.clock_ack(target, ack),
            BusReply::Changes(records) => {
                // A press held from an earlier report is released after this
                // report's field records: they hold the scan after it.
                if let Some(h) = self.board(target).held_press.as_mut() {
                    h.report_after = true;
                }
                // New changes since the last poll, oldest first: each one is a
                // picture the board showed, and the order matters to the tracker.
                for r in records {
                    match r {
                        EeRecord::Field {
                            square,
                            sensed,
                            recent,
                        } => {
                            // Records come in the order the board scanned
                            // them, all at the poll's time: one not flagged as
                            // close to the one before begins a new scan.
                            if !recent {
                                self.scan_ended(target, t_ms, out);
                            }
                            self.board(target).picture.set(square, sensed);
                            self.picture_changed(target, t_ms, out);
                        }
                        // The board writes a clock record at each lever change,
                        // in order with the field records. It is the only
                        // place a bus host learns *when* a press came relative
                        // to the pieces: BUS_SEND_CLK readings are polled far
                        // less often, so a press seen only through them comes
                        // after pictures of the next move, or not at all if
                        // both players pressed between two polls.
                        EeRecord::Clock {
                            left,
                            hours,
                            minutes,
                            seconds,
                        } => {
                            let halted = if left {
                                ClockSide::Left
                            } else {
                                ClockSide::Right
                            };
                            let ms = (u64::from(hours) * 3_600
                                + u64::from(minutes) * 60
                                + u64::from(seconds))
                                * 1_000;
                            self.ee_press(target, t_ms, halted, ms, out);
                        }
                        _ => self.stats.ee_records_unused += 1,
                    }
                }
                // The report holds whole scans: the last one is complete.
                self.scan_ended(target, t_ms, out);
                if self
                    .board(target)
                    .held_press
                    .is_some_and(|h| h.report_after)
                {
                    self.release_press(target, t_ms, out);
                }
            }
            BusReply::FromStart(records) => {
                // Everything since the start tag, which the tracker has mostly
                // seen already: replaying it picture by picture would walk the
                // board back to the start position and look like a takeback. Only
                // the resulting picture (the board as it is now) is passed on.
                let board = self.board(target);
                let before = board.picture.clone();
                let mut unused = 0;
                for r in records {
                    match r {
                        EeRecord::Field { square, sensed, .. } => board.picture.set(square, sensed),
                        _ => unused += 1,
                    }
                }
                let changed = board.picture != before;
                self.stats.ee_records_unused += unused;
                if changed {
                    self.picture_changed(target, t_ms, out);
                }
            }
            BusReply::Version { major, minor } => {
                self.board(target).info.version = Some((major, minor))
            }
            BusReply::Ping
            | BusReply::StartGameWritten
            | BusReply::Draughts50(_)
            | BusReply::Unknown { .. } => {
                // The board is there; remember it.
                self.board(target);
            }
        }
    }

    fn dump(&mut self, target: Target, t_ms: Millis, p: Picture, out: &mut Vec<Stamped>) {
        let board = self.board(target);
        board.picture = p;
        board.info.has_picture = true;
        self.picture_changed(target, t_ms, out);
    }

    /// The board's scan is over (a bus report's records are whole scans): the
    /// tracker reads it as such at once instead of waiting for time to pass.
    fn scan_ended(&mut self, target: Target, t_ms: Millis, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let board = self.board(target);
        board.tracker.scan_ended(t_ms, &mut scratch);
        stamp(board, t_ms, &mut scratch, out);
        self.scratch = scratch;
    }

    fn picture_changed(&mut self, target: Target, t_ms: Millis, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let board = self.board(target);
        if board.info.has_picture {
            board.tracker.picture(t_ms, &board.picture, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
            self.stats.pictures += 1;
        } else {
            self.stats.updates_before_dump += 1;
        }
        self.scratch = scratch;
    }

    fn clock(&mut self, target: Target, t_ms: Millis, bw: &BwTime, out: &mut Vec<Stamped>) {
        if bw.is_blank() {
            // Bluetooth firmware sends these after clock commands (dgt.md §1.6).
            self.stats.blank_clock_readings += 1;
            return;
        }
        if bw.no_clock {
            self.stats.no_clock_readings += 1;
            self.board(target).info.no_clock = true;
            return;
        }
        let reading = ClockReading::from(bw);
        if let Some(h) = self.board(target).held_press.as_mut() {
            if reading.lever_high == h.reading.lever_high && reading.running == h.reading.running {
                // The poll shows the held press: it waits with it, with the
                // clock's newer times, so the press is not seen early.
                h.reading = reading;
                return;
            }
            // The lever moved again since: the held press comes first.
            self.release_press(target, t_ms, out);
        }
        // A bus board's lever change (or its clock starting or stopping) seen
        // first by a poll happened somewhere since the last change report, so
        // the squares around it are not all read yet, and its clock record,
        // which places it among them, is still in the board. Given now, a
        // press would land before the last squares of its move, and a start
        // could be read after a press it hides. It waits for the next report:
        // the record there takes its place (see `ee_press`), and without one
        // it is given after that report's squares.
        let changed = self
            .board(target)
            .reading
            .is_some_and(|r| r.lever_high != reading.lever_high || r.running != reading.running);
        if matches!(target, Target::Bus(_)) && changed {
            self.board(target).held_press = Some(HeldPress {
                reading,
                since: t_ms,
                report_after: false,
                from_poll: true,
            });
            return;
        }
        self.give_clock(target, t_ms, reading, out);
    }

    /// A bus clock record: the `halted` side's clock stopped at `ms`, so that
    /// side pressed and the other side's clock runs now. The press is the
    /// last full reading with the lever moved and the halted display set; the
    /// other display stays as last polled until the next BUS_SEND_CLK. A
    /// poll that showed this lever first is waiting (see `clock`): the record
    /// takes its place. A record that changes nothing the tracker knows (no
    /// reading yet to build on, or a running clock already given with this
    /// lever) is not passed on, so one press is never seen twice.
    ///
    /// The board writes the record the moment the lever moves, but a square
    /// only at its next scan (every 200-250 ms): a piece put down just before
    /// the press is logged after the record. Given at once, the press would
    /// find the picture one scan old, and the tracker takes a press on a shown
    /// move as proof the move is complete (a pawn seen on c3 on its way to c4
    /// would be verified as c3). So the press is held until the change report
    /// after the one holding the record has been read (it holds the scan after
    /// the press), and then given after that report's squares.
    fn ee_press(
        &mut self,
        target: Target,
        t_ms: Millis,
        halted: ClockSide,
        ms: u64,
        out: &mut Vec<Stamped>,
    ) {
        if let Some(h) = self.board(target).held_press {
            if h.from_poll && h.reading.lever_high == Some(halted.other()) {
                // The record of the lever change a poll showed first: the
                // press now waits from here, its place among the squares.
                self.start_unseen(target, t_ms, halted, out);
                let h = self.board(target).held_press.as_mut().expect("checked");
                h.since = t_ms;
                h.report_after = false;
                h.from_poll = false;
                self.stats.ee_presses += 1;
                return;
            }
            // A second press before the first was given, or a poll's change
            // that came before this record: the earlier one's squares are in
            // what was read so far (the record order is the board's).
            self.release_press(target, t_ms, out);
        }
        let Some(last) = self
            .board(target)
            .reading
            .filter(|r| r.lever_high.is_some())
        else {
            self.stats.ee_records_unused += 1;
            return;
        };
        if last.running && last.lever_high == Some(halted.other()) {
            self.stats.ee_records_unused += 1;
            return;
        }
        let last = self.start_unseen(target, t_ms, halted, out).unwrap_or(last);
        let mut reading = last;
        reading.lever_high = Some(halted.other());
        match halted {
            ClockSide::Left => reading.left.millis = ms,
            ClockSide::Right => reading.right.millis = ms,
        }
        self.board(target).held_press = Some(HeldPress {
            reading,
            since: t_ms,
            report_after: false,
            from_poll: false,
        });
        self.stats.ee_presses += 1;
    }

    /// A press record while the last reading given shows the clock stopped:
    /// the clock was started since, and the start left no record (it
    /// completes no move) and fell between two polls. The `halted` side's
    /// clock ran up to this press, so that is the start to give first: the
    /// tracker maps the clock's sides from it (Article 6.6) before it sees the
    /// press. Returns the start reading given, if one was.
    fn start_unseen(
        &mut self,
        target: Target,
        t_ms: Millis,
        halted: ClockSide,
        out: &mut Vec<Stamped>,
    ) -> Option<ClockReading> {
        let last = self.board(target).reading.filter(|r| !r.running)?;
        let mut start = last;
        start.running = true;
        start.lever_high = Some(halted);
        self.give_clock(target, t_ms, start, out);
        Some(start)
    }

    /// Gives the tracker the press held for `target`, if any.
    fn release_press(&mut self, target: Target, t_ms: Millis, out: &mut Vec<Stamped>) {
        if let Some(h) = self.board(target).held_press.take() {
            self.give_clock(target, t_ms, h.reading, out);
        }
    }

    fn give_clock(
        &mut self,
        target: Target,
        t_ms: Millis,
        reading: ClockReading,
        out: &mut Vec<Stamped>,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let board = self.board(target);
        board.info.no_clock = false;
        board.reading = Some(reading);
        board.tracker.clock(t_ms, &reading, &mut scratch);
        stamp(board, t_ms, &mut scratch, out);
        self.scratch = scratch;
    }

    fn clock_ack(&mut self, target: Target, ack: ClockAck) {
        let info = &mut self.board(target).info;
        info.clock_acks += 1;
        info.last_clock_ack = Some(ack);
        if let (Target::Single, Some(acks)) = (target, self.acks.as_mut()) {
            acks.push(ack);
        }
    }
}

/// Stamps the tracker's events with board, ply and time, moving them to `out`.
fn stamp(board: &BoardState, t_ms: Millis, events: &mut Vec<TrackerEvent>, out: &mut Vec<Stamped>) {
    let plies = board.tracker.ply();
    if board.inactive {
        // An inactive board is nobody's game: nothing to alert arbiters about.
        events.retain(|e| !matches!(e, TrackerEvent::Alert(_) | TrackerEvent::Resolved(_)));
    }
    out.extend(events.drain(..).map(|event| {
        let ply = match &event {
            TrackerEvent::Game(GameEvent::Move(m)) => m.ply,
            _ => plies,
        };
        Stamped {
            board: board.number,
            ply,
            t_ms,
            event,
        }
    }));
}
