//! The per-board tracker: sensor pictures and clock readings in, game events out.
//!
//! Pure and deterministic: time is an input (`t_ms` on every call), nothing here
//! does I/O, and the same inputs always give the same events. The daemon, `replay`
//! and the benchmarks all drive this one type.
//!
//! How a move is followed (Article 6.2, reconstruction.md §5):
//! - The *picture sequence* decides which moves were made and in what order. Every
//!   picture is matched against the positions reachable from the last verified
//!   position through the current provisional line: first by keeping as much of the
//!   line as the picture allows (so a reply extends it), then by replacing its tail
//!   by a sibling (a slide that paused on a legal square, rook-first castling).
//!   Pictures nothing explains are transients (a piece in the hand) and change nothing.
//! - *Proof of completion* decides when a move is final: the mover's clock press,
//!   the opponent's next move seen on the board (6.2.1), or on a board without a
//!   clock a still picture held for `clockless_hold_ms`. Only then is a move
//!   published, so a provisional move that is replaced never reaches the public.
//! - Verified moves are withdrawn only when the board is put back to an earlier
//!   position of the game and held there (takeback, arbiter correction).

mod alerts;
mod catch_up;
mod clock;
mod clock_laws;
mod evidence;
mod follow;
mod laws;
mod move_state;
mod picture;
mod proof;
mod results;
mod rivals;
mod search;
mod sensing;
mod start;
mod takeback;

use clock::{side_color, Press};
use picture::result_gesture;
use search::Target;
use sensing::UNSEEN_CAPTURE_HOLD_MS;
use takeback::{CERTAIN_STILL_MS, RESYNC_QUIET_MS, RESYNC_STILL_MS, UNCERTAIN_KEPT_PLIES};

use eboard_protocols::{ClockReading, ClockSide, Picture};
use shakmaty::{
    fen::Fen, san::SanPlus, Board, CastlingMode, Chess, Color, EnPassantMode, FromSetup, Move,
    Position,
};
use thiserror::Error;

use crate::events::{
    Alert, AlertKind, AlertResolved, GameEvent, GameResult, Millis, ResultReason, Severity,
    TrackerEvent,
};

use crate::operator::Refusal;
use crate::timecontrol::{Regime, TimeControl};

pub use clock_laws::{flag_fall_result, CONTROL_SETTLE_MS, CONTROL_TOLERANCE_MS};
pub use results::{ending, Ending};
pub use start::{back_rank_of, start_number, Orientation, STANDARD_START};

/// Settings a tracker is created with.
#[derive(Clone, Debug)]
pub struct TrackerConfig {
    /// On a board with no clock, a move is verified after the picture has been still
    /// this long (or once the reply is made). Three seconds: hands that set a
    /// move down and take it back for another leave it two seconds and more.
    /// A board that sends frames holds a period and a half more.
    pub clockless_hold_ms: Millis,
    /// Treat the board as having no clock even if readings arrive.
    pub no_clock: bool,
    /// A start picture must be still this long before a game starts (pieces being
    /// set up pass through nothing that is held).
    pub start_hold_ms: Millis,
    /// The board must show an earlier position of the game this long before the
    /// moves after it are withdrawn.
    pub takeback_hold_ms: Millis,
    /// After a clock press, the picture may stay unexplained this long (the hand
    /// finishing the move) before an illegal move is reported.
    pub illegal_alert_ms: Millis,
    /// A press that arrives while the move is still in transit (the board reports
    /// squares up to a scan late): the move is verified once the picture has been
    /// still this long after the press.
    pub press_settle_ms: Millis,
    /// An unexplained picture still this long is read as a two-ply burst even if the
    /// board never reported the piece the first ply put down.
    pub burst_hold_ms: Millis,
    /// With a clock, a move left still this long without a press is verified.
    pub unpressed_hold_ms: Millis,
    /// A picture no legal play explains is reported as displaced pieces (7.4, 7.6)
    /// after this long while no move is under way; a hand holding the mover's piece
    /// (a move under way) gets 10 s, or this if longer.
    pub displaced_alert_ms: Millis,
    /// Most plies searched for between two pictures (bursts, §4.9).
    pub max_burst_plies: usize,
    /// A move the opponent's reply proved complete (6.2.1) while the mover's clock
    /// still runs waits this long for the mover's late press (6.2.2), so that its
    /// `[%clk]` is the time after the press (increment included), not a running one.
    pub late_press_ms: Millis,
    /// The event's time control, when configured: decides the category (A.1/B.1),
    /// the control moves (6.10.2) and the penalties alerts suggest.
    pub time_control: Option<TimeControl>,
    /// Whether rapid/blitz games are adequately supervised (A.3/B.3) or not (A.4/B.4).
    pub regime: Regime,
    /// What the board's sensors can tell and how they report (identity or
    /// occupancy, every change or periodic frames, clock or none), from its
    /// family's capabilities. The default is a DGT board's.
    pub sensor: eboard_protocols::family::SensorProfile,
    /// Skip the ticks that cannot change anything (a game at rest while a
    /// player thinks; see `Tracker::idle_deadline`). On by default: the events
    /// are the same either way, and `tests/idle_ticks.rs` checks that they are.
    pub skip_idle_ticks: bool,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            clockless_hold_ms: 3_000,
            no_clock: false,
            start_hold_ms: 600,
            // Longer than a knocked piece lies on a square before it is put back.
            takeback_hold_ms: 3_500,
            // Within a second of the press (the arbiter's window), yet longer than
            // the board's one-scan lag behind the clock.
            illegal_alert_ms: 800,
            press_settle_ms: 400,
            unpressed_hold_ms: 8_000,
            burst_hold_ms: 500,
            // A piece knocked over is put back within a few seconds (the hand
            // model: under 4 s); one left wrong for 6 s was not noticed. Longer
            // than the 5 s a replay ticks past a capture's end, so a sensor glitch
            // in the last scan (never followed by the scan that clears it) is not
            // reported. A hand holding a piece (players do, for several seconds)
            // is a move under way and gets 10 s.
            displaced_alert_ms: 6_000,
            max_burst_plies: 4,
            // A player who forgot to press does so within a second of the reply.
            late_press_ms: 2_000,
            time_control: None,
            regime: Regime::default(),
            sensor: eboard_protocols::family::SensorProfile::default(),
            skip_idle_ticks: true,
        }
    }
}

/// What can go wrong when configuring a tracker.
#[derive(Debug, Error)]
pub enum TrackerError {
    /// The operator's start FEN does not parse or is not a legal position.
    #[error("start position {fen:?} is not usable: {reason}; give a legal FEN such as the one a PGN's FEN tag holds")]
    BadStartFen { fen: String, reason: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    WaitingStart,
    Playing,
    Over,
}

/// A provisional move of the current line.
#[derive(Clone, Debug)]
struct Step {
    mv: Move,
    pos: Chess,
    /// No picture showed this ply on its own (found inside a burst).
    reconstructed: bool,
    /// Replaces plies published earlier and withdrawn (self-correction).
    corrected: bool,
    /// Alerts about how the move was made, sent when it is verified (a provisional
    /// move that is replaced was never made).
    notes: Vec<TrackerEvent>,
}

#[derive(Clone, Debug)]
struct Game {
    mode: CastlingMode,
    /// The start's Chess960 number, as announced in `GameStart`.
    chess960: Option<u32>,
    /// `history[0]` is the start, `history[i]` the position after verified ply `i`.
    history: Vec<Chess>,
    /// `moves[i]` is verified ply `i + 1` (it leads from `history[i]`).
    moves: Vec<Move>,
    pending: Vec<Step>,
}

impl Game {
    fn verified(&self) -> &Chess {
        self.history.last().expect("history always holds the start")
    }

    fn pos_at(&self, j: usize) -> &Chess {
        if j == 0 {
            self.verified()
        } else {
            &self.pending[j - 1].pos
        }
    }

    fn tip(&self) -> &Chess {
        self.pos_at(self.pending.len())
    }

    fn ply(&self) -> u32 {
        (self.history.len() - 1) as u32
    }

    /// The position of the game the pieces are to be put back to when the
    /// board shows what no reading explains (7.4): of the verified position
    /// and those after each unverified ply, the one fewest squares away from
    /// the board, the earliest on a tie. An unverified ply is a reading of the
    /// board, and a displaced piece can make one: a pawn knocked from a2 to
    /// b3 on a Certabo, a frame catching it in the hand, read as a2-a4 made
    /// and moved on. The squares to restore are then a2 and b3, not a4.
    fn restore_target(&self, board: Option<&Board>, shown: shakmaty::Bitboard) -> &Chess {
        let away = |p: &Chess| match board {
            Some(b) => search::diff(p.board(), b).count(),
            None => (p.board().occupied() ^ shown).count(),
        };
        (0..=self.pending.len())
            .map(|j| self.pos_at(j))
            .min_by_key(|p| away(p))
            .expect("the verified position is always there")
    }

    /// Keeps the verified plies up to `k`.
    fn truncate(&mut self, k: usize) {
        self.history.truncate(k + 1);
        self.moves.truncate(k);
    }
}

/// What a picture turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Resolution {
    #[default]
    Explained,
    Ambiguous,
    Unexplained,
}

/// Follows one board's game.
#[derive(Clone, Debug)]
pub struct Tracker {
    config: TrackerConfig,
    phase: Phase,
    orientation: Orientation,
    game: Option<Game>,
    online: bool,
    /// The host stopped reading the board for a while, losing nothing (see
    /// [`Tracker::paused`]): no hold timer fires until its catch-up is read.
    paused: bool,
    /// The moves in progress and the alerts they raised: forgotten at once when
    /// a game starts afresh (see `move_state.rs`).
    current: move_state::MoveState,
    /// The clock's sides and presses (see `clock.rs`).
    clock: clock::ClockState,
    /// The start watched for between games (see `start.rs`).
    start: start::StartWatch,
    /// How the board reported: what squares showed, pieces lifted in one scan
    /// (see `sensing.rs`).
    sensing: sensing::Sensing,
    /// The alerts raised and still open, the illegal moves counted (see
    /// `alerts.rs`).
    alerts: alerts::AlertBook,
    /// What going back on verified moves needs (see `takeback.rs`).
    retractions: takeback::Retractions,

    last_raw: Option<Picture>,
    last_board: Option<Board>,
    last_change_t: Millis,
    clock_laws: clock_laws::ClockLaws,
    /// The link was down since the last explained picture: changes were missed,
    /// so bursts cannot be checked against what the squares showed.
    gap: bool,

    /// Identity boards: the lines of play that every picture and press since
    /// verified ply `anchor_ply` supports (see `evidence.rs`, `follow.rs`).
    evidence: Option<evidence::Evidence>,
    anchor_ply: usize,
    /// The latest picture reads as legal play (made or under way) with no
    /// suspicion of pieces being put back.
    reading_is_play: bool,
    /// The provisional move last withdrawn without a replacement, and its ply.
    withdrawn_provisional: Option<(usize, Move)>,
    /// The close readings disagree about the next ply to verify: since when,
    /// and for which ply.
    undecided: Option<(Millis, usize)>,
    /// The last tick found the game at rest with nothing waiting on time
    /// before this (see [`Tracker::idle_deadline`]): ticks before it change
    /// nothing, and are skipped. Every input clears it.
    idle_until: Option<Millis>,
}

/// A move under way (the mover's piece in the hand) is reported as displaced
/// pieces only after this long, or `displaced_alert_ms` if longer: players hover
/// with a piece for several seconds while they think.
pub(crate) const HOVER_ALERT_MS: Millis = 10_000;
/// A pressed move is judged illegal (7.5.1) only on a picture unchanged this
/// long: two board scans. On a board that reports whole scans when polled (a
/// DGT bus), as the board's own reports show it, not the host's silence.
const ILLEGAL_AT_REST_MS: Millis = 500;
/// Kings put in the centre end the game once they stay this long: a king
/// set down for a moment next to the other on its way is a hand at work.
const RESULT_GESTURE_HOLD_MS: Millis = 1_500;

impl Tracker {
    /// A tracker waiting for a start picture.
    pub fn new(config: TrackerConfig) -> Tracker {
        Tracker {
            config,
            phase: Phase::WaitingStart,
            orientation: Orientation::NORMAL,
            game: None,
            online: true,
            paused: false,
            current: move_state::MoveState::default(),
            clock: clock::ClockState::default(),
            start: start::StartWatch::default(),
            sensing: sensing::Sensing::default(),
            alerts: alerts::AlertBook::default(),
            retractions: takeback::Retractions::default(),
            last_raw: None,
            last_board: None,
            last_change_t: 0,
            clock_laws: clock_laws::ClockLaws::default(),
            gap: false,
            evidence: None,
            anchor_ply: 0,
            withdrawn_provisional: None,
            reading_is_play: false,
            undecided: None,
            idle_until: None,
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &TrackerConfig {
        &self.config
    }

    /// Games on this board start from `fen` (a position set by the operator) instead
    /// of a standard or Chess960 start picture.
    pub fn set_start_fen(&mut self, fen: &str) -> Result<(), TrackerError> {
        self.idle_until = None;
        let bad = |reason: String| TrackerError::BadStartFen {
            fen: fen.to_string(),
            reason,
        };
        let parsed: Fen = fen.parse().map_err(|e| bad(format!("{e}")))?;
        let mode = CastlingMode::detect(parsed.as_setup());
        let pos = Chess::from_setup(parsed.into_setup(), mode).map_err(|e| bad(format!("{e}")))?;
        self.start.custom_start = Some((pos, mode));
        Ok(())
    }

    /// The board's link went down (`online == false`) or came back. While offline no
    /// hold timer fires: silence is not stillness. On return the session sends a
    /// full picture, which is matched as any other.
    pub fn connection(&mut self, t_ms: Millis, online: bool, out: &mut Vec<TrackerEvent>) {
        self.idle_until = None;
        let first = out.len();
        self.connection_inner(t_ms, online, out);
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
    }

    fn connection_inner(&mut self, t_ms: Millis, online: bool, out: &mut Vec<TrackerEvent>) {
        if online {
            self.online = true;
            self.gap = true;
            // Time spent offline proves nothing about stillness.
            self.last_change_t = self.last_change_t.max(t_ms);
            self.sensing.steady_since = self.sensing.steady_since.max(t_ms);
        } else {
            self.timers(t_ms, out);
            self.online = false;
        }
    }

    /// The host stopped reading the board for a while (`paused`), though the
    /// board keeps every change for it (a DGT bus host listens for new boards
    /// for over a second between two polls), or it has read the catch-up
    /// since. While paused no hold timer fires and the engine counts no
    /// stillness: what the board did meanwhile is not known yet, so silence is
    /// not stillness. Unlike a link gap nothing was missed: the catch-up's
    /// changes are read as any others, in their order, and time counts again
    /// once they are in.
    pub fn paused(&mut self, t_ms: Millis, paused: bool, out: &mut Vec<TrackerEvent>) {
        self.idle_until = None;
        let first = out.len();
        if paused && !self.paused {
            // What was due before the pause is due.
            self.timers(t_ms, out);
        }
        self.paused = paused;
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
    }

    /// A new full sensor picture (after every square change, or a dump).
    pub fn picture(&mut self, t_ms: Millis, picture: &Picture, out: &mut Vec<TrackerEvent>) {
        self.idle_until = None;
        let first = out.len();
        self.picture_inner(t_ms, picture, out);
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
    }

    fn picture_inner(&mut self, t_ms: Millis, picture: &Picture, out: &mut Vec<TrackerEvent>) {
        self.timers(t_ms, out);
        if self.last_raw.as_ref() == Some(picture) {
            return;
        }
        if self.phase == Phase::Playing {
            self.note_lifts(t_ms, picture);
        }
        let previous = self.last_raw.replace(picture.clone());
        self.sensing.steady_since = self.steady_since_after(t_ms, picture, previous);
        self.last_change_t = t_ms;
        match self.phase {
            Phase::WaitingStart | Phase::Over => {
                if let Some(cand) = self.first_move_from_brief_start(picture) {
                    self.begin_game(t_ms, cand, out);
                    self.play_picture(t_ms, picture, out);
                } else {
                    self.look_for_start(t_ms, picture);
                }
            }
            Phase::Playing => {
                let before = self.line_len();
                self.play_picture(t_ms, picture, out);
                if self.phase == Phase::Playing && self.line_len() > before {
                    let clock_in_use = !self.clockless();
                    let ply = self.ply();
                    self.clock_laws.moved(clock_in_use, ply, out);
                }
            }
        }
    }

    /// Verified plies plus provisional ones: grows when a move is made.
    fn line_len(&self) -> usize {
        self.game
            .as_ref()
            .map_or(0, |g| g.history.len() + g.pending.len())
    }

    /// A new clock reading.
    pub fn clock(&mut self, t_ms: Millis, reading: &ClockReading, out: &mut Vec<TrackerEvent>) {
        let was_idle = self.idle_until.take().is_some();
        let first = out.len();
        self.clock_inner(t_ms, reading, out);
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
        // A clock reports every second: one that only showed the times go
        // down (no press, nothing said) leaves the board as idle as it was.
        if was_idle && out.len() == first {
            self.idle_until = self.idle_deadline(t_ms);
        }
    }

    /// The side of the clock White uses, once learned from the clock, and the
    /// side the lever lets run in the latest reading (running or paused).
    pub fn clock_sides(&self) -> (Option<ClockSide>, Option<ClockSide>) {
        (
            self.clock.white_side,
            self.clock.last_reading.and_then(|r| r.lever_high),
        )
    }

    /// The board's current scan is over (its reports came whole, as a bus
    /// report's do): what waited for the scan to be read whole is settled now.
    pub fn scan_ended(&mut self, t_ms: Millis, out: &mut Vec<TrackerEvent>) {
        self.idle_until = None;
        let first = out.len();
        let reported = &mut self.sensing.scans_reported;
        if reported.0 != Some(t_ms) {
            *reported = (Some(t_ms), reported.0);
        }
        if let Some(ev) = self.evidence.as_mut() {
            if ev.scan_open(t_ms) {
                ev.close_scan();
                if self.phase == Phase::Playing && !self.gap {
                    self.settle(t_ms, out);
                }
            }
        }
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
    }

    /// Time passes with no input (drives hold timers).
    pub fn tick(&mut self, t_ms: Millis, out: &mut Vec<TrackerEvent>) {
        if self.idle_until.is_some_and(|until| t_ms < until) {
            return;
        }
        let first = out.len();
        self.tick_inner(t_ms, out);
        self.number_alerts(&mut out[first..]);
        self.review_alerts(out);
        self.idle_until = if out.len() == first {
            self.idle_deadline(t_ms)
        } else {
            None
        };
    }

    /// After a tick at `t` that said nothing: the time before which no later
    /// tick can change anything (unless an input comes first), so ticks may
    /// be skipped until then. `Millis::MAX`: not before the next input.
    /// Most of a game is a board at rest while a player thinks, and a tick
    /// there re-read the evidence ten times a second for nothing (a third of
    /// the tracker's CPU at normal pace).
    ///
    /// What a tick does, and why each part has nothing left to do here:
    /// - the engine's own tick closes a scan (none is open) and charges
    ///   readings for a press that waited too long for its move or a piece
    ///   held one more stretch: the first such charge is a deadline;
    /// - following the evidence: the reading the record follows is at rest on
    ///   the verified line with what the last follow said of it, so it extends
    ///   nothing and raises no takeback;
    /// - the game's timers: nothing is provisional, no press, takeback or
    ///   ambiguity is pending and the anchor is not far behind; the one thing
    ///   left is the anchor moved on once the board has stood
    ///   [`CERTAIN_STILL_MS`], the deadline until then (after it, the anchor
    ///   was moved on this tick, from the same state the next would see);
    /// - the clock's laws: no control check waits;
    /// - the open alerts are reviewed from the state alone, which no tick
    ///   changes now.
    ///
    /// Every input clears this. Replay ticks on the same grid as the daemon,
    /// so both skip the same ticks and give the same events.
    fn idle_deadline(&self, t: Millis) -> Option<Millis> {
        if self.phase != Phase::Playing
            || !self.online
            || self.paused
            || self.gap
            || self.sensing.input_end.is_some()
        {
            return None;
        }
        let (ev, game) = (self.evidence.as_ref()?, self.game.as_ref()?);
        if !self.config.skip_idle_ticks {
            return None;
        }
        let quiet = self.current.resolution == Resolution::Explained
            && self.current.press.is_none()
            && self.current.takeback.is_none()
            && self.current.ambiguous_lines.is_empty()
            && game.pending.is_empty()
            && game.moves.len() < self.anchor_ply + takeback::ANCHOR_BEHIND_MOST
            && self.clock_laws.quiet()
            && self.follow_settled();
        if !quiet {
            return None;
        }
        let engine = ev.quiet_until()?;
        let certain = self.last_change_t.saturating_add(CERTAIN_STILL_MS);
        Some(engine.min(if t >= certain { Millis::MAX } else { certain }))
    }

    fn tick_inner(&mut self, t_ms: Millis, out: &mut Vec<TrackerEvent>) {
        if self.phase == Phase::Playing && self.online && !self.paused && !self.gap {
            if let Some(ev) = self.evidence.as_mut() {
                // A hand that has let go of its piece shows nothing new: time
                // alone can complete a move.
                ev.tick(t_ms);
                let r = self.follow_evidence(t_ms, out);
                self.engine_resolution(r);
            }
        }
        self.timers(t_ms, out);
    }

    /// No input comes after `t_ms` (a replayed capture ends there). Holds still
    /// run when time is ticked on (a last move left without a press is verified
    /// after `unpressed_hold_ms`), but a picture is reported as displaced only
    /// if it had been still long enough before the end: the board went on
    /// scanning after the recording stopped, and the next scan would have
    /// cleared a one-scan misread.
    pub fn end_of_input(&mut self, t_ms: Millis) {
        self.idle_until = None;
        self.sensing.input_end = Some(t_ms);
    }

    /// The number of verified plies so far.
    pub fn ply(&self) -> u32 {
        self.game.as_ref().map_or(0, Game::ply)
    }

    /// The position after the last verified move, once a game has started.
    pub fn position(&self) -> Option<&Chess> {
        self.game.as_ref().map(Game::verified)
    }

    /// The readings the evidence engine holds (see [`evidence::Evidence::describe`]),
    /// after the verified ply they start from. Diagnostics only: the accuracy
    /// bench prints them when asked why a game went wrong.
    #[doc(hidden)]
    pub fn readings(&self) -> (usize, Vec<String>) {
        (
            self.anchor_ply,
            self.evidence
                .as_ref()
                .map_or_else(Vec::new, |e| e.describe()),
        )
    }

    /// How the board is turned relative to the game (found from the pictures).
    pub fn orientation(&self) -> Orientation {
        self.orientation
    }

    /// Which clock side is White's, once the clock has shown it.
    pub fn white_clock_side(&self) -> Option<ClockSide> {
        self.clock.white_side
    }

    /// Whether a game is being followed (started and not finished).
    pub fn in_game(&self) -> bool {
        self.phase == Phase::Playing
    }

    // ----- operator commands ----------------------------------------------------
    //
    // An arbiter's decisions from the dashboard. The daemon journals each one in
    // the board's capture at its time and calls these in order with the board's
    // pictures, so a replay of the capture makes the same decisions at the same
    // points and the tracker stays a pure function of its inputs.

    /// The arbiter enters the game's result (a resignation, an agreed draw, a
    /// ruling): the game ends, or a result already given is corrected. The
    /// result is published as the arbiter's ([`ResultReason::Arbiter`]); what
    /// the arbiter wrote with it is arbiter business (Article 12.6) and stays
    /// in the journaled command and on the board's timeline. A capture still
    /// undecided on an occupancy-only board is recorded first, with its note
    /// (see `rivals.rs`): nothing after the game's end can decide it.
    pub fn operator_result(
        &mut self,
        t: Millis,
        result: GameResult,
        out: &mut Vec<TrackerEvent>,
    ) -> Result<(), Refusal> {
        self.idle_until = None;
        if self.game.is_none() {
            return Err(Refusal::NoGame);
        }
        if self.phase == Phase::Playing {
            self.commit_before_the_end(t, out);
        }
        if self.phase == Phase::Playing {
            self.end_game(result, ResultReason::Arbiter, out);
        } else {
            out.push(TrackerEvent::Game(GameEvent::Result {
                result,
                reason: ResultReason::Arbiter,
            }));
        }
        Ok(())
    }

    /// The operator sets the start position of this board's games (see
    /// [`Tracker::set_start_fen`]); a board already showing it starts a game.
    pub fn operator_start_fen(&mut self, t_ms: Millis, fen: &str) -> Result<(), Refusal> {
        self.idle_until = None;
        self.set_start_fen(fen)
            .map_err(|e| Refusal::BadFen(e.to_string()))?;
        if self.phase != Phase::Playing {
            if let Some(raw) = self.last_raw.clone() {
                self.look_for_start(t_ms, &raw);
            }
        }
        Ok(())
    }

    /// A.4.2 (rapid/blitz without adequate supervision): an illegal move that nobody
    /// claimed before the opponent moved on stands. When `board` is one legal move
    /// of the opponent from the position the illegal move left, the game is
    /// followed from that position: the moves before it are verified, the public
    /// record restarts from the position's FEN (a new `GameStart`: a PGN cannot hold
    /// an illegal move, a game from a set-up position can), the arbiter is told,
    /// and the picture is read again from there.
    fn try_illegal_stands(
        &mut self,
        t: Millis,
        raw: &Picture,
        board: &Board,
        out: &mut Vec<TrackerEvent>,
    ) -> bool {
        let Some((illegal, mover)) = self.current.illegal_stand.clone() else {
            return false;
        };
        let open = self
            .alerts
            .open_alerts
            .iter()
            .position(|a| a.game_no == self.alerts.game_no && a.kind == AlertKind::IllegalMove);
        let (Some(open), Some(game)) = (open, self.game.as_ref()) else {
            // Corrected (or the game moved on otherwise): nothing can stand.
            self.current.illegal_stand = None;
            return false;
        };
        let before = game.tip().clone();
        if before.turn() != mover {
            self.current.illegal_stand = None;
            return false;
        }
        // The position the illegal move left, the opponent to move; castling
        // rights as far as the kings and rooks still stand, no en passant.
        let mut setup = before.to_setup(EnPassantMode::Legal);
        setup.board = illegal.clone();
        setup.turn = !mover;
        setup.ep_square = None;
        setup.halfmoves = 0;
        if mover == Color::Black {
            setup.fullmoves = setup.fullmoves.saturating_add(1);
        }
        // A position with the mover's king left in check cannot be followed:
        // the arbiter has to step in anyway.
        let stood = match Chess::from_setup(setup, game.mode) {
            Ok(p) => p,
            Err(e) => match e.ignore_invalid_castling_rights() {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        let replies = search::sequences(&stood, Target::Board(board), 1, 6, None);
        let [reply] = replies.as_slice() else {
            return false;
        };
        let reply_san = SanPlus::from_move(stood.clone(), reply[0]).to_string();
        // The moves before the illegal one were completed by it (6.2.1).
        while self.game.as_ref().is_some_and(|g| !g.pending.is_empty()) {
            self.verify_first(None, out);
            if self.phase != Phase::Playing {
                return true;
            }
        }
        let game = self.game.as_mut().expect("playing");
        let plies = game.ply();
        let chess960 = game.chess960;
        game.history = vec![stood.clone()];
        game.moves.clear();
        let what = laws::describe_moves(before.board(), &illegal, mover)
            .unwrap_or_else(|| "the illegal move".into());
        let stood_alert = self.alerts.open_alerts.remove(open);
        out.push(TrackerEvent::Resolved(AlertResolved {
            id: stood_alert.id,
            kind: stood_alert.kind,
            reason: format!(
                "{} moved on ({reply_san}) without a claim: the illegal move stands (A.4.2)",
                laws::color_name(!mover)
            ),
        }));
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            kind: AlertKind::IllegalMoveStands,
            article: "A.4.2".into(),
            severity: Severity::Warning,
            squares: Alert::square_names(search::diff(before.board(), &illegal)),
            message: format!(
                "{} answered {}'s illegal move ({what}) with {reply_san} without claiming: \
                 without adequate supervision the illegal move stands (A.4.2) and the game is \
                 followed from the position on the board. The public record keeps the {plies} \
                 plies before it and continues as a game from that position (FEN).",
                laws::color_name(!mover),
                laws::color_name(mover),
            ),
            penalty: None,
        }));
        out.push(TrackerEvent::Game(GameEvent::GameStart {
            fen: Fen::from_position(&stood, EnPassantMode::Legal).to_string(),
            chess960,
            rotated: self.orientation.is_rotated_180(),
        }));
        self.clear_move_state();
        self.sensing.seen.reset(Target::Board(&illegal));
        self.last_board = Some(illegal.clone());
        self.reset_evidence();
        self.play_picture(t, raw, out);
        true
    }

    /// Forgets everything about moves in progress and the alerts they raised,
    /// for a game that starts afresh from a new position: a new game, or the
    /// position an illegal move left standing (A.4.2). One struct
    /// ([`move_state::MoveState`]), so that a field added later cannot be
    /// cleared in one place and not the other.
    fn clear_move_state(&mut self) {
        self.current = move_state::MoveState::default();
    }

    // ----- timers ---------------------------------------------------------------

    fn timers(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        if !self.online || self.paused {
            return;
        }
        match self.phase {
            Phase::WaitingStart | Phase::Over => self.start_timers(t, out),
            Phase::Playing => {
                self.game_timers(t, out);
                if self.phase == Phase::Playing && !self.config.no_clock {
                    let last = self.clock.last_reading;
                    self.clock_laws.tick(t, last.as_ref(), out);
                }
            }
        }
    }

    fn game_timers(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        let still = t.saturating_sub(self.last_change_t);
        self.ambiguity_undecided(t, out);
        self.anchor_behind();
        if self.current.resolution == Resolution::Unexplained && still >= RESULT_GESTURE_HOLD_MS {
            if let Some(result) = self.last_board.as_ref().and_then(result_gesture) {
                self.end_game(result, ResultReason::ResultGesture, out);
                return;
            }
        }
        if self.current.resolution != Resolution::Explained
            && (self.only_displaced_noise() || self.reply_under_way().is_some())
        {
            // A move made around displaced pieces settles as on a clean board;
            // one whose reply is under way is proven by it.
            self.settle(t, out);
            if self.phase != Phase::Playing {
                return;
            }
        }
        match self.current.resolution {
            Resolution::Explained => {
                self.settle(t, out);
                if self.phase != Phase::Playing {
                    return;
                }
                let game = self.game.as_ref().expect("playing");
                if game.pending.is_empty() && still >= CERTAIN_STILL_MS {
                    let n = game.history.len() - 1;
                    self.retractions.certain_ply = n;
                    // Readings other than the published one are kept a few
                    // plies past the plies the board could not decide.
                    let anchor = match self.retractions.uncertain_ply {
                        Some(u)
                            if n < self.retractions.uncertain_until.max(u)
                                + UNCERTAIN_KEPT_PLIES =>
                        {
                            u
                        }
                        _ => {
                            self.retractions.uncertain_ply = None;
                            n
                        }
                    };
                    self.advance_anchor(anchor);
                }
                let game = self.game.as_ref().expect("playing");
                // On a board that sends frames, a period and a half more: a
                // picture seen still for the hold may have stood a period less
                // (it came at most a period after the hand let go, its end is
                // seen at most a period late), and the frame that shows it a
                // last time (or shows it gone) is read first.
                let margin = self.frame_period();
                let mut hold = self.config.clockless_hold_ms + margin + margin / 2;
                if self
                    .sensing
                    .unseen_capture_ply
                    .is_some_and(|p| p >= game.history.len())
                {
                    hold = hold.max(UNSEEN_CAPTURE_HOLD_MS);
                }
                // Flickers since the move stood do not make it wait longer.
                let steady = t.saturating_sub(self.sensing.steady_since);
                if game.pending.is_empty() || steady < hold {
                    return;
                }
                // A move that ends the game is complete when made (6.2.1); the hold
                // only guards against a slide pausing on a mating square. With a
                // clock, a move left still for long was made (4.7) even if no press
                // was seen: two presses inside one clock report look like none, and
                // the last move of a game is often not pressed at all.
                let unpressed = steady >= self.config.unpressed_hold_ms;
                if self.clockless() || game.tip().is_game_over() || unpressed {
                    while self.phase == Phase::Playing
                        && self.game.as_ref().is_some_and(|g| !g.pending.is_empty())
                        && self.may_verify(t, out)
                    {
                        self.verify_first(None, out);
                    }
                }
            }
            Resolution::Ambiguous => {
                // Candidates followed for a while: the still picture may have
                // one explanation of its own from the verified line.
                if let Some(board) = self.last_board.clone() {
                    let boundary = self.pressed_in_episode() || still >= RESYNC_QUIET_MS;
                    if still >= RESYNC_STILL_MS
                        && boundary
                        && self.retractions.resync_tried != Some(self.last_change_t)
                    {
                        self.retractions.resync_tried = Some(self.last_change_t);
                        self.resync(t, &board, out);
                    }
                }
            }
            Resolution::Unexplained => {
                if let Some((k, since)) = self.current.takeback {
                    if t.saturating_sub(since) >= self.config.takeback_hold_ms {
                        self.take_back(t, k, out);
                        return;
                    }
                }
                if let Some(board) = self.last_board.clone().filter(|_| self.evidence.is_none()) {
                    // A burst whose middle the board never reported (a reply lifted
                    // the piece within one scan of its landing): once the picture is
                    // still, two plies are read without the check against what the
                    // squares showed. A hand holding a piece is still too, but one
                    // lifted piece is never two plies.
                    let still = t.saturating_sub(self.last_change_t);
                    if still >= self.config.burst_hold_ms
                        && self.sensing.lenient_tried != Some(self.last_change_t)
                    {
                        self.sensing.lenient_tried = Some(self.last_change_t);
                        self.sensing.lenient = true;
                        let r = self.resolve(t, Target::Board(&board), out);
                        self.sensing.lenient = false;
                        if r != Resolution::Unexplained {
                            self.current.resolution = r;
                            if r == Resolution::Explained {
                                self.sensing.seen.reset(Target::Board(&board));
                            }
                            self.current.unexplained_since = None;
                            self.current.unexplained_alerted = false;
                            self.current.takeback = None;
                            return;
                        }
                    }
                }
                if let Some(board) = self.last_board.clone().filter(|_| self.evidence.is_none()) {
                    let still = t.saturating_sub(self.last_change_t);
                    let boundary = self.pressed_in_episode() || still >= RESYNC_QUIET_MS;
                    if still >= RESYNC_STILL_MS
                        && boundary
                        && self.retractions.resync_tried != Some(self.last_change_t)
                        && self.current.takeback.is_none()
                    {
                        self.retractions.resync_tried = Some(self.last_change_t);
                        if self.resync(t, &board, out) {
                            return;
                        }
                    }
                }
                if self.last_board.is_none() && self.occupancy_capture_due(t) {
                    // Occupancy-only: a still picture (or a press) settles a
                    // capture the board could not see the captured piece leave for.
                    if let Some(raw) = self.last_raw.clone() {
                        let occupancy = self.orientation.apply(&raw).occupied();
                        self.sensing.lenient = true;
                        let r = self.resolve(t, Target::Occupancy(occupancy), out);
                        self.sensing.lenient = false;
                        if r != Resolution::Unexplained {
                            self.current.resolution = r;
                            if r == Resolution::Explained {
                                self.sensing.seen.reset(Target::Occupancy(occupancy));
                            }
                            self.current.unexplained_since = None;
                            self.current.unexplained_alerted = false;
                            self.current.takeback = None;
                            return;
                        }
                    }
                }
                let clock_running =
                    !self.config.no_clock && self.clock.last_reading.is_some_and(|r| r.running);
                // A start reached by legal play the engine reads clean, its
                // last piece not yet let go, is play: a quick repetition on a
                // board without a clock (knights back to g1 and g8 in time
                // trouble, blind hands on a Chessnut, game 1930) was taken for
                // the next game's set-up 600 ms after it, before the move's
                // stillness (800 ms) could complete it. Pieces put back after
                // a game read as legal moves just the same once let go; a
                // set-up that is no legal play needs noise.
                let play_under_way = self.evidence.as_ref().is_some_and(|ev| {
                    self.reading_is_play && ev.best().moving() && !ev.best().noisy()
                });
                if let Some(cand) = self
                    .start
                    .start_candidate
                    .as_ref()
                    .filter(|_| !play_under_way)
                {
                    if !clock_running && t.saturating_sub(cand.since) >= self.config.start_hold_ms {
                        let cand = self.start.start_candidate.take().expect("checked");
                        self.restart(t, cand, out);
                        return;
                    }
                }
                let board = self.last_board.clone();
                // With candidates pending (an ambiguity), the press was for one of them.
                let candidates = !self.current.ambiguous_lines.is_empty();
                // A legal move the evidence reads on the board (made, or still
                // under way) is no illegal move, whatever the press.
                let presser = self
                    .current
                    .press
                    .as_ref()
                    .zip(self.clock.white_side)
                    .map(|(p, w)| side_color(p.side, w));
                let id = self.current.press.as_ref().map(|p| p.id);
                let legal = self.evidence_clears_press(presser, id);
                if let Some(press) = self
                    .current
                    .press
                    .as_mut()
                    .filter(|p| !candidates && !p.matched && !legal)
                {
                    // An illegal move is judged on a picture at rest: one that
                    // changed within two scans is a hand still at work (a bus
                    // board's catch-up read while a pawn crosses d5 on its way
                    // from e2 to e4, the press reported with it). A bus board
                    // is heard from every half second or so: its picture is
                    // known to be still only as far as its latest report
                    // (board 31 of a bus line: White's e4 knocked onto d5 by
                    // Black's hand, reported with White's press, and put back
                    // 640 ms later, which the next report would have shown).
                    let seen_still_to = match self.sensing.scans_reported {
                        (Some(latest), _) if latest < t => latest,
                        (Some(_), earlier) => earlier.unwrap_or(0),
                        (None, _) => t,
                    };
                    let at_rest =
                        seen_still_to.saturating_sub(self.last_change_t) >= ILLEGAL_AT_REST_MS;
                    if !press.alerted
                        && at_rest
                        && t.saturating_sub(press.t) >= self.config.illegal_alert_ms
                    {
                        press.alerted = true;
                        out.extend(self.illegal_press_alert(board.as_ref(), presser));
                        self.current.unexplained_alerted = true;
                        return;
                    }
                }
                if let Some(since) = self.current.unexplained_since {
                    let game = self.game.as_ref().expect("playing");
                    let shown = self
                        .last_raw
                        .as_ref()
                        .map(|r| self.orientation.apply(r).occupied())
                        .unwrap_or_default();
                    // A hand holding the mover's piece (and perhaps the piece it
                    // captures) is a move under way: players think that way for a
                    // while, so it gets `HOVER_ALERT_MS`. Once seen, for the
                    // whole episode: a one-scan misread or flicker elsewhere while
                    // the hand hovers does not make the pieces displaced.
                    if laws::move_under_way(game.tip(), board.as_ref(), shown) {
                        self.sensing.under_way_episode = Some(since);
                    }
                    let threshold = if self.sensing.under_way_episode == Some(since) {
                        self.config.displaced_alert_ms.max(HOVER_ALERT_MS)
                    } else {
                        self.config.displaced_alert_ms
                    };
                    let seen_long_enough = self
                        .sensing
                        .input_end
                        .is_none_or(|end| end.saturating_sub(since) >= threshold);
                    if !self.current.unexplained_alerted
                        && t.saturating_sub(since) >= threshold
                        && seen_long_enough
                        && !self.another_line_reads_clean()
                        && !self.a_close_reading_shows_the_board()
                        && !self.current.catch_up.follows()
                    {
                        self.current.unexplained_alerted = true;
                        // Play around the displaced squares is read against the
                        // line's tip (see `only_displaced_noise`); the arbiters are
                        // told what to restore against the nearest position.
                        let restore = game.restore_target(board.as_ref(), shown);
                        if let Some(b) = &board {
                            let mask = search::diff(game.tip().board(), b);
                            self.current.displaced = Some((mask, b.clone()));
                        }
                        out.push(laws::displaced_alert(restore, board.as_ref(), shown));
                    }
                }
            }
        }
    }

    /// The clock was pressed since the board stopped showing the game (a ply
    /// boundary passed while the picture stayed unexplained or ambiguous): the
    /// board should show a made move then, not one under way.
    fn pressed_in_episode(&self) -> bool {
        match (self.clock.last_press_t, self.current.unexplained_since) {
            (Some(p), Some(u)) => p >= u,
            (Some(_), None) => self.current.resolution == Resolution::Ambiguous,
            _ => false,
        }
    }
}
