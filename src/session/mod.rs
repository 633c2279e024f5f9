//! A session: the bytes of one port, both ways, turned into tracker calls, for
//! any board family.
//!
//! [`Session::feed`] takes capture chunks in time order (the daemon builds the
//! same chunks from its port). The family's [`Codec`] turns them into
//! protocol-neutral observations, each about one board behind the port; the
//! session keeps every board's current picture and facts, and the board's
//! [`Tracker`] turns pictures and clock readings into events, stamped with the
//! capture time of the chunk whose bytes completed the observation. Nothing
//! here knows a protocol: what is DGT (or Millennium, Certabo, …) is in the
//! codec.
//!
//! Nothing here is fatal: decode errors are counted in [`SessionStats`] and the
//! codec resynchronises by itself.
//!
//! Pictures: a whole picture (a dump, a status, a frame) replaces the board's
//! picture and is given to the tracker; a square change changes one square of
//! the picture and the whole picture is given to the tracker. Square changes
//! that come before the board's first whole picture are applied to an
//! all-empty picture that is *not* given to the tracker until a whole picture
//! arrives: a partial picture would look like a board being set up, and the
//! whole one (which a host always asks for at start) then replaces it. The
//! tracker thus only ever sees pictures the board actually showed.
//!
//! Beside the session live the two other pieces that turn bytes into tracker
//! input without touching a port: [`capture`], the format of the chunks a
//! session reads (the daemon records it, importers convert other recordings to
//! it), and [`replay`], the `replay` command that streams captures through
//! sessions.

pub mod capture;
pub mod replay;

use std::collections::{BTreeMap, HashMap};

use eboard_protocols::family::{
    BoardFact, BoardId, Codec, CodecSetup, Family, Observation, Observed, PortMode, Settings,
    SetupError,
};
use eboard_protocols::{ClockSide, Picture, Sensed};
use shakmaty::{Bitboard, Square};

use crate::events::{GameEvent, Millis, Stamped, TrackerEvent};
use crate::operator::{OperatorError, Refusal, TrackerCommand};
use crate::session::capture::{Chunk, Direction};
use crate::tracker::{Orientation, Tracker, TrackerConfig, TrackerError};

/// What a board told about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoardInfo {
    /// Short serial number (DGT: five digits, `0x91`).
    pub serial: Option<String>,
    /// Long serial number (DGT Bluetooth boards, `0xa2`).
    pub long_serial: Option<String>,
    /// Firmware main and sub version.
    pub version: Option<(u8, u8)>,
    /// Product or trademark text.
    pub model: Option<String>,
    /// Bus address: reported by the board, or the address its bus replies carry.
    pub bus_address: Option<u16>,
    /// Battery charge in percent.
    pub battery_percent: Option<u8>,
    /// Command acks received (clock, LEDs, settings).
    pub acks: u64,
    /// The board said no clock is connected. The tracker then sees no clock
    /// readings at all, which is how it knows a board is clockless.
    pub no_clock: bool,
    /// A whole picture has been received, so the tracker sees this board's
    /// pictures.
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
    /// Full pictures given to the trackers.
    pub pictures: u64,
    /// Square changes received before the board's first whole picture (not
    /// given to the tracker).
    pub updates_before_dump: u64,
    /// Host commands seen.
    pub host_frames: u64,
    /// Host bytes that formed no command.
    pub host_errors: u64,
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
}

impl BoardState {
    fn new(number: u32, config: &TrackerConfig) -> BoardState {
        BoardState {
            number,
            picture: Picture::empty(),
            tracker: Tracker::new(config.clone()),
            info: BoardInfo::default(),
            inactive: false,
        }
    }
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
    pub fn tick_until(&mut self, session: &mut Session, t_ms: Millis, out: &mut Vec<Stamped>) {
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
    pub session: Session,
    grid: TickGrid,
    last_t: Millis,
}

impl CaptureDriver {
    pub fn new(session: Session) -> CaptureDriver {
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

/// The traffic of one port, feeding one tracker per board.
#[derive(Debug)]
pub struct Session {
    codec: Box<dyn Codec>,
    config: TrackerConfig,
    single: BoardState,
    bus: BTreeMap<u16, BoardState>,
    bus_numbers: HashMap<u16, u32>,
    stats: SessionStats,
    scratch: Vec<TrackerEvent>,
    observed: Vec<Observed>,
    /// Settings the codec learned, not yet taken (see [`Session::take_settings`]).
    learned: Vec<(String, String)>,
}

impl Session {
    /// A session for the board numbered `board`, reading with `codec`. The
    /// trackers are told what the board's sensors can do (their
    /// [`TrackerConfig::sensor`] comes from the codec's capabilities).
    pub fn new(board: u32, codec: Box<dyn Codec>, config: TrackerConfig) -> Session {
        let config = TrackerConfig {
            sensor: codec.capabilities().sensor_profile(),
            ..config
        };
        Session {
            codec,
            single: BoardState::new(board, &config),
            config,
            bus: BTreeMap::new(),
            bus_numbers: HashMap::new(),
            stats: SessionStats::default(),
            scratch: Vec::new(),
            observed: Vec::new(),
            learned: Vec::new(),
        }
    }

    /// A session for a port of `family` used in `mode`, its codec started with
    /// `settings` (a capture header's, or the board's saved ones).
    pub fn for_family(
        family: &Family,
        board: u32,
        mode: PortMode,
        settings: &Settings,
        config: TrackerConfig,
    ) -> Result<Session, SetupError> {
        let codec = (family.codec)(&CodecSetup {
            mode,
            settings: settings.clone(),
        })?;
        Ok(Session::new(board, codec, config))
    }

    /// The codec, for family-specific inspection (downcast with `as_any`).
    pub fn codec(&self) -> &dyn Codec {
        self.codec.as_ref()
    }

    /// The port's mode as the codec follows it.
    pub fn mode(&self) -> PortMode {
        self.codec.mode()
    }

    /// The state the codec keeps with the board (for a capture header).
    pub fn settings(&self) -> Settings {
        self.codec.settings()
    }

    /// Has the codec go on from `settings` (see [`Codec::restore`]).
    pub fn restore_settings(&mut self, settings: &Settings) -> Result<(), SetupError> {
        if self.codec.settings() == *settings {
            return Ok(());
        }
        self.codec.restore(settings)
    }

    /// Settings the codec learned since the last call (Certabo: a new
    /// calibration), for the daemon to keep with the board.
    pub fn take_settings(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.learned)
    }

    /// The single board's tracker's readings (diagnostics, see
    /// [`Tracker::readings`]).
    #[doc(hidden)]
    pub fn readings(&self) -> (usize, Vec<String>) {
        self.single.tracker.readings()
    }

    /// What the single board's tracker knows of its clock: the side White
    /// uses, once learned, and the side the lever lets run now.
    pub fn clock_sides(&self) -> (Option<ClockSide>, Option<ClockSide>) {
        self.single.tracker.clock_sides()
    }

    /// Gives the board at bus `address` the number `board` (from the pairing).
    /// Without it a bus board is numbered by its address, which is its serial
    /// number (dgt.md §1.4), so the numbers stay stable from one capture to the
    /// next. Takes effect for a board not yet heard from.
    pub fn set_bus_board_number(&mut self, address: u16, board: u32) {
        self.bus_numbers.insert(address, board);
    }

    /// Games on the single-mode board start from `fen`, a position the operator
    /// set up, rather than from a standard or Chess960 start picture.
    pub fn set_start_fen(&mut self, fen: &str) -> Result<(), TrackerError> {
        self.single.tracker.set_start_fen(fen)
    }

    /// Board `board`'s squares `game` (in the game's frame) in the board's own
    /// frame, as the tracker found the board turned (`None`: no such board).
    /// What the daemon lights on a board's LEDs.
    pub fn board_frame(&self, board: u32, game: Bitboard) -> Option<Bitboard> {
        let state = std::iter::once(&self.single)
            .chain(self.bus.values())
            .find(|b| b.number == board)?;
        let o = state.tracker.orientation();
        if o == Orientation::NORMAL {
            return Some(game);
        }
        // The tracker maps raw pictures to the game's frame; the inverse map
        // is read off it one square at a time.
        let mut out = Bitboard::EMPTY;
        for raw in Square::ALL {
            let mut p = Picture::empty();
            p.set(raw, Sensed::Occupied);
            if o.apply(&p).occupied().intersects(game) {
                out.add(raw);
            }
        }
        Some(out)
    }

    /// The number of every board heard from (and the single board's).
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.single.number).chain(self.bus.values().map(|b| b.number))
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
                state.tracker.operator_result(t_ms, *result, &mut scratch)
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
    /// while offline) and the picture after the return is matched as any picture.
    pub fn connection(&mut self, t_ms: Millis, online: bool, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        for board in std::iter::once(&mut self.single).chain(self.bus.values_mut()) {
            scratch.clear();
            board.tracker.connection(t_ms, online, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
        }
        self.scratch = scratch;
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
    pub fn feed(&mut self, chunk: &Chunk, out: &mut Vec<Stamped>) {
        let mut observed = std::mem::take(&mut self.observed);
        observed.clear();
        match chunk.dir {
            Direction::In => {
                self.stats.bytes_in += chunk.bytes.len() as u64;
                self.codec
                    .board_bytes(chunk.t_ms, &chunk.bytes, &mut observed);
            }
            Direction::Out => {
                self.stats.bytes_out += chunk.bytes.len() as u64;
                self.codec
                    .host_bytes(chunk.t_ms, &chunk.bytes, &mut observed);
            }
        }
        self.sync_stats();
        for o in observed.drain(..) {
            self.observe(chunk.t_ms, o, out);
        }
        self.observed = observed;
    }

    /// The capture ends at `t_ms`: no board input comes after it (see
    /// [`Tracker::end_of_input`]). Time may still be ticked on, so that holds
    /// expire.
    pub fn end_of_input(&mut self, t_ms: Millis) {
        for board in std::iter::once(&mut self.single).chain(self.bus.values_mut()) {
            board.tracker.end_of_input(t_ms);
        }
    }

    /// Time passes with no traffic (drives the codec's timers and the
    /// trackers' hold timers): every board's tracker is ticked.
    pub fn tick(&mut self, t_ms: Millis, out: &mut Vec<Stamped>) {
        // Ten ticks a second per port, nearly all with nothing to do: what
        // is not needed (the codec's observations, the bus) is not set up.
        self.observed.clear();
        self.codec.tick(t_ms, &mut self.observed);
        if !self.observed.is_empty() {
            let mut observed = std::mem::take(&mut self.observed);
            for o in observed.drain(..) {
                self.observe(t_ms, o, out);
            }
            self.observed = observed;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let bus = (!self.bus.is_empty()).then_some(self.bus.values_mut());
        for board in std::iter::once(&mut self.single).chain(bus.into_iter().flatten()) {
            scratch.clear();
            board.tracker.tick(t_ms, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
        }
        self.scratch = scratch;
    }

    fn sync_stats(&mut self) {
        let c = self.codec.stats();
        self.stats.frames = c.frames;
        self.stats.host_frames = c.host_frames;
        self.stats.host_errors = c.host_errors;
        if self.stats.decode_errors != c.decode_errors {
            self.stats.decode_errors = c.decode_errors;
            self.stats
                .last_decode_error
                .clone_from(&c.last_decode_error);
        }
    }

    fn board(&mut self, id: BoardId) -> &mut BoardState {
        match id {
            BoardId::Single => &mut self.single,
            BoardId::Bus(address) => {
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

    fn observe(&mut self, t_ms: Millis, o: Observed, out: &mut Vec<Stamped>) {
        let id = o.board;
        match o.what {
            Observation::Picture(p) => {
                let board = self.board(id);
                board.picture = p;
                board.info.has_picture = true;
                self.picture_changed(id, t_ms, out);
            }
            Observation::Square { square, sensed } => {
                self.board(id).picture.set(square, sensed);
                self.picture_changed(id, t_ms, out);
            }
            Observation::Squares(squares) => {
                let board = self.board(id);
                let before = board.picture.clone();
                for (square, sensed) in squares {
                    board.picture.set(square, sensed);
                }
                if board.picture != before {
                    self.picture_changed(id, t_ms, out);
                }
            }
            Observation::Clock(reading) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let board = self.board(id);
                board.info.no_clock = false;
                board.tracker.clock(t_ms, &reading, &mut scratch);
                stamp(board, t_ms, &mut scratch, out);
                self.scratch = scratch;
            }
            Observation::NoClock => self.board(id).info.no_clock = true,
            Observation::Fact(fact) => {
                let info = &mut self.board(id).info;
                match fact {
                    BoardFact::Serial(s) => info.serial = Some(s),
                    BoardFact::LongSerial(s) => info.long_serial = Some(s),
                    BoardFact::Version(a, b) => info.version = Some((a, b)),
                    BoardFact::Model(s) => info.model = Some(s),
                    BoardFact::Battery(p) => info.battery_percent = Some(p),
                    BoardFact::BusAddress(a) => info.bus_address = Some(a),
                }
            }
            Observation::ScanEnded => self.scan_ended(id, t_ms, out),
            Observation::Paused(paused) => {
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                let board = self.board(id);
                board.tracker.paused(t_ms, paused, &mut scratch);
                stamp(board, t_ms, &mut scratch, out);
                self.scratch = scratch;
            }
            Observation::Ack(_) => self.board(id).info.acks += 1,
            Observation::Heard => {
                self.board(id);
            }
            Observation::Setting { key, value } => {
                self.board(id);
                self.learned.push((key, value));
            }
        }
    }

    /// The board's scan is over (a bus report's records are whole scans): the
    /// tracker reads it as such at once instead of waiting for time to pass.
    fn scan_ended(&mut self, id: BoardId, t_ms: Millis, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let board = self.board(id);
        board.tracker.scan_ended(t_ms, &mut scratch);
        stamp(board, t_ms, &mut scratch, out);
        self.scratch = scratch;
    }

    fn picture_changed(&mut self, id: BoardId, t_ms: Millis, out: &mut Vec<Stamped>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let board = self.board(id);
        if board.info.has_picture {
            board.tracker.picture(t_ms, &board.picture, &mut scratch);
            stamp(board, t_ms, &mut scratch, out);
            self.stats.pictures += 1;
        } else {
            self.stats.updates_before_dump += 1;
        }
        self.scratch = scratch;
    }
}

/// Stamps the tracker's events with board, ply and time, moving them to `out`.
fn stamp(board: &BoardState, t_ms: Millis, events: &mut Vec<TrackerEvent>, out: &mut Vec<Stamped>) {
    if events.is_empty() {
        // Most ticks: nothing to stamp.
        return;
    }
    let plies = board.tracker.ply();
    if board.inactive {
        // An inactive board is nobody's game: nothing to alert arbiters about.
        events.retain(|e| !matches!(e, TrackerEvent::Alert(_) | TrackerEvent::Resolved(_)));
    }
    out.extend(events.drain(..).map(|event| {
        let ply = match &event {
            TrackerEvent::Game(GameEvent::Move(m)) => m.ply,
            TrackerEvent::Game(GameEvent::MoveClock { ply, .. }) => *ply,
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
