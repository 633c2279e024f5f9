//! The clock as the tracker reads it: which side is White's, which presses
//! were made and for which move, and when a move proven by the reply waits
//! for its mover's late press.
//!
//! A press is a proof of completion (6.2.1) and carries the move's `[%clk]`
//! and `[%emt]`; the side it came from only means a colour once the clock's
//! sides are mapped (6.6: the display that stops when a player completes a
//! move is his). The Laws about the clock itself (flag fall, time control,
//! pauses) are `clock_laws.rs`'s.

use eboard_protocols::{ClockReading, ClockSide};
use shakmaty::{Color, Move, Position};

use super::{clock_laws, Phase, Resolution, Tracker};
use crate::events::{ColorName, GameEvent, Millis, TrackerEvent};

/// What the tracker knows about the clock and its presses.
#[derive(Clone, Debug, Default)]
pub(super) struct ClockState {
    /// A clock that reports its lever was seen: presses prove moves.
    pub(super) clock_seen: bool,
    /// The latest reading.
    pub(super) last_reading: Option<ClockReading>,
    /// The side of the clock White uses in this game, once learned.
    pub(super) white_side: Option<ClockSide>,
    /// When the player to move's clock started (for `[%emt]`).
    pub(super) turn_started_t: Option<Millis>,
    /// Clock presses seen in this game, and the time of the last one.
    pub(super) presses_in_game: u32,
    pub(super) last_press_t: Option<Millis>,
    /// The latest presses of the game, for the plies the evidence gives them to.
    pub(super) press_log: Vec<Press>,
    /// A reply proved the first pending move while the mover's clock still ran:
    /// (verified plies then, the reply, when first seen), to wait for a late press.
    pub(super) late_press_wait: Option<(u32, Move, Millis)>,
    /// The latest verified ply, when it was verified without a press (it
    /// stood for the unpressed hold) and carried the mover's running clock:
    /// a press by its mover before anything else happens re-times it.
    pub(super) unpressed_ply: Option<u32>,
}

/// A clock press whose move was still in the hand when it came.
#[derive(Clone, Debug)]
pub(super) struct Press {
    /// Its number in the game (the evidence engine's name for it).
    pub(super) id: u32,
    pub(super) side: ClockSide,
    pub(super) t: Millis,
    pub(super) clock_ms: u64,
    pub(super) emt_ms: Option<u64>,
    /// The presser's display on the last reading before the press (6.10.2 check).
    pub(super) before_ms: Option<u64>,
    pub(super) alerted: bool,
    /// The board showed the mover's move complete after the press: the press is
    /// fulfilled even if the opponent's hand moves in before it settles.
    pub(super) matched: bool,
    /// The board showed the move complete when the press arrived: nothing is in
    /// transit, the move is verified at once (a piece touched after the press,
    /// knocked or adjusted, is not a new version of the move: 4.7, 6.2.1).
    pub(super) on_still_move: bool,
    /// Pressed by the player to move with the board showing the position and no
    /// move under way, outside the start procedure and not a double press: if no
    /// move follows, Article 7.5.3.
    pub(super) without_move: bool,
}

/// A move proven by the reply waits for its mover's late press at least this
/// long after the board last changed (the reply's hand at work; the clock's
/// report of a press comes up to a second after the press)...
const LATE_PRESS_AFTER_REPLY_MS: Millis = 1_200;

/// ...but never longer than this after the reply was first seen.
const LATE_PRESS_WAIT_MOST_MS: Millis = 5_000;

/// While the reply is only under way (its piece in the hand), the wait lasts
/// this long after it began: players hover with a piece for seconds (own
/// hands at normal pace: a rook held 6.9 s, the late press 0.4 s after it
/// landed).
const LATE_PRESS_WHILE_HELD_MS: Millis = 10_000;

/// A picture at least this old when the clock is pressed shows a move complete:
/// longer than one board scan (200–250 ms).
const STILL_BEFORE_PRESS_MS: Millis = 300;

/// Presses kept for the evidence to give to plies.
const PRESS_LOG: usize = 16;

/// A press this soon after the previous one is a double press (a bounce, or both
/// players' hands on the clock), never a press without a move.
const DOUBLE_PRESS_MS: Millis = 500;

impl Tracker {
    /// A new clock reading ([`Tracker::clock`]): starts a game (6.6), maps the
    /// clock's sides, reads presses and hands the reading to the clock Laws.
    pub(super) fn clock_inner(
        &mut self,
        t_ms: Millis,
        reading: &ClockReading,
        out: &mut Vec<TrackerEvent>,
    ) {
        self.timers(t_ms, out);
        // Only a clock that reports its lever shows presses; without one, moves are
        // verified as on a board with no clock.
        if reading.lever_high.is_some() {
            self.clock.clock_seen = true;
        }
        let prev = self.clock.last_reading.replace(*reading);
        if self.phase != Phase::Playing {
            // Article 6.6: the clock started with a start position on the
            // board, however briefly it was still, starts the game.
            let started = reading.running && !prev.is_some_and(|p| p.running);
            if started {
                if let Some(cand) = self
                    .start
                    .start_candidate
                    .take()
                    .or_else(|| self.start.brief_start.take())
                {
                    self.begin_game(t_ms, cand, out);
                    // What the board shows now (a first move under way) is read
                    // as any picture of the game.
                    if let Some(raw) = self.last_raw.clone() {
                        self.play_picture(t_ms, &raw, out);
                    }
                }
            }
            return;
        }
        let ply0_idle = self
            .game
            .as_ref()
            .is_some_and(|g| g.ply() == 0 && g.pending.is_empty());
        // Article 6.6: at the start the arbiter starts the clock of the side to move
        // (White's, unless the operator set a position with Black to move). A
        // clock seen starting later than that, with the first move already on the
        // board (a bus board's clock is polled only every two seconds, and players
        // sometimes start the clock after the first move), was still started for
        // the player whose move is not yet verified: the lever's change is that
        // start, not a press, and the running side is that player's.
        let started = reading.running && prev.is_some_and(|p| !p.running);
        let mapped_by_start =
            self.clock.white_side.is_none() && reading.running && (ply0_idle || started);
        // Unless the clock was started earlier and its first report came only
        // after the first mover's press (a clock reports on a change, and the
        // start itself may not move the lever): then the stopped display has
        // gained its increment since the still clock's last report, while the
        // running one has not, and the lever's change is that press. That
        // holds with the first move still in the hand too (a press made
        // before the piece is released): the line is empty, the press is not.
        let pressed_since_start = mapped_by_start
            && prev.zip(reading.lever_high).is_some_and(|(p, running)| {
                let stopped = running.other();
                reading.side(stopped).millis > p.side(stopped).millis
                    && reading.side(running).millis <= p.side(running).millis
            });
        if mapped_by_start {
            if let (Some(side), Some(game)) = (reading.lever_high, self.game.as_ref()) {
                // The running side is the first mover's, or the opponent's if
                // the first mover has pressed already. Not the side to move in
                // the verified line: a move verified before the clock's first
                // report (a bus polls the clock every 2 s; the move read still
                // before the press) was made, not pressed, and its mover's
                // clock still runs. Mapped by the side to move, every [%clk]
                // of the game was the opponent's and a false 7.5.1 followed
                // (bus of 8, own hands at normal pace, 2-3 boards in 1,938).
                let first_mover = game.history[0].turn();
                let running_for = if pressed_since_start {
                    !first_mover
                } else {
                    first_mover
                };
                self.clock.white_side = Some(color_side(side, running_for));
                self.clock.turn_started_t = Some(t_ms);
                if !pressed_since_start {
                    if let Some(ev) = self.evidence.as_mut().filter(|_| game.moves.is_empty()) {
                        ev.clock_started();
                    }
                }
            }
        }
        if ply0_idle && reading.running && !prev.is_some_and(|p| p.running) {
            self.clock.turn_started_t = Some(t_ms);
        }
        // A press still waiting for its move: the mover's display is stopped now,
        // and the latest reading has any increment the clock added.
        if let Some(p) = self.current.press.as_mut() {
            if reading.lever_high == Some(p.side.other()) {
                p.clock_ms = reading.side(p.side).millis;
            }
        }
        // The side whose button went down pressed.
        if let (Some(old), Some(new)) = (prev.and_then(|p| p.lever_high), reading.lever_high) {
            if pressed_since_start {
                // The stopped side pressed, whether or not the start moved the
                // lever first (an arbiter's start on the side already down
                // does not, then the press moves it back).
                let side = new.other();
                let before_ms = prev.map(|p| p.side(side).millis);
                self.on_press(t_ms, side, before_ms, reading, out);
            } else if old != new && mapped_by_start && !ply0_idle {
                // The start itself (see above): nobody completed a move.
            } else if old != new {
                let before_ms = prev.map(|p| p.side(old).millis);
                self.on_press(t_ms, old, before_ms, reading, out);
            } else if let Some(p) = prev.filter(|p| p.running && reading.running) {
                // Two presses inside one report (the mover's late press, then the
                // opponent's for a reply already made) leave the lever where it
                // was; the increment each press added shows them. The running
                // side's display went up: it pressed first, then the other side.
                if reading.side(new).millis > p.side(new).millis
                    && reading.side(new.other()).millis >= p.side(new.other()).millis
                    && reading.side(new.other()).millis > 0
                {
                    let first_before = Some(p.side(new).millis);
                    self.on_press(t_ms, new, first_before, reading, out);
                    if self.phase == Phase::Playing {
                        let second_before = Some(p.side(new.other()).millis);
                        self.on_press(t_ms, new.other(), second_before, reading, out);
                    }
                }
            }
        }
        if self.phase == Phase::Playing && !self.config.no_clock {
            if let Some(game) = self.game.as_ref() {
                let view = clock_laws::GameView {
                    pos: game.verified(),
                    ply: game.ply(),
                    white_side: self.clock.white_side,
                };
                self.clock_laws
                    .reading(t_ms, reading, prev.as_ref(), view, out);
            }
        }
        if let Some(white) = self.clock.white_side {
            if prev.as_ref() != Some(reading) {
                let running = reading.running_side().map(|s| {
                    if s == white {
                        ColorName::White
                    } else {
                        ColorName::Black
                    }
                });
                out.push(TrackerEvent::Game(GameEvent::Clock {
                    white_ms: reading.side(white).millis,
                    black_ms: reading.side(white.other()).millis,
                    running,
                }));
            }
        }
    }

    /// No clock press proves moves on this board (none reports its lever, or
    /// the operator said so).
    pub(super) fn clockless(&self) -> bool {
        self.config.no_clock || !self.clock.clock_seen
    }

    /// The colour of the player who pressed on `side`; with no mapping yet, the
    /// press is taken as the mover's and maps the clock (6.6: the display that
    /// stops when a player completes a move is his).
    pub(super) fn presser(&mut self, side: ClockSide, mover: Color) -> Color {
        match self.clock.white_side {
            Some(w) => side_color(side, w),
            None => {
                self.clock.white_side = Some(color_side(side, mover));
                mover
            }
        }
    }

    /// Whether to hold the first pending move (proven by the reply) for its mover's
    /// press: the mover's clock still runs, so the press is still to come (6.2.2)
    /// and only it shows the time the record must carry. Held while the reply is
    /// the only move after it, for at most `late_press_ms`.
    pub(super) fn awaits_late_press(&mut self, t: Millis, mover: Color, reply: Move) -> bool {
        let running = self
            .clock
            .white_side
            .zip(self.clock.last_reading.and_then(|r| r.running_side()))
            .map(|(w, s)| side_color(s, w));
        let ply = self.ply();
        let n = self.game.as_ref().map_or(0, |g| g.pending.len());
        if n > 2 {
            self.clock.late_press_wait = None;
            return false;
        }
        if self.clockless() || running != Some(mover) {
            self.clock.late_press_wait = None;
            return false;
        }
        // The wait belongs to this reply: a reply changed or taken back and made
        // again starts it afresh.
        // A reply still under way may be read as another candidate move on the
        // next picture: the same reply, the wait goes on.
        let since = match self.clock.late_press_wait {
            Some((p, mv, since)) if p == ply && (mv == reply || n < 2) => since,
            _ => t,
        };
        self.clock.late_press_wait = Some((ply, reply, since));
        // A reply made slowly (a castling, a piece carried far) is still no
        // proof the press was forgotten: the mover may press once the reply
        // stands, and the clock reports the press up to a second later. So
        // the wait lasts until a while after the board last changed, within
        // a bound.
        // While the reply is only under way (a queen held over the board for
        // seconds), the mover may still press once it is let go: own hands in
        // time trouble, a3 unpressed, Qc7 held 3.7 s, White's press 0.1 s
        // after it landed. Verified before, a3 carried the running clock, 28 s
        // short of the increment the press added.
        let after_reply = if n < 2 {
            since + LATE_PRESS_WHILE_HELD_MS
        } else {
            // Complete now: as long again as after any reply, even if it
            // was held longer than the bound (a pawn held 7 s, the press
            // 0.4 s after it landed).
            let held = t.saturating_sub(since) > LATE_PRESS_WAIT_MOST_MS;
            let most = if held {
                LATE_PRESS_WHILE_HELD_MS + LATE_PRESS_AFTER_REPLY_MS
            } else {
                LATE_PRESS_WAIT_MOST_MS
            };
            (self.last_change_t + LATE_PRESS_AFTER_REPLY_MS).min(since + most)
        };
        t < (since + self.config.late_press_ms).max(after_reply)
    }

    /// A press by `side` (its display read `before_ms` before it): logged for the
    /// evidence, checked for 7.5.3, and kept waiting for its move.
    fn on_press(
        &mut self,
        t: Millis,
        side: ClockSide,
        before_ms: Option<u64>,
        reading: &ClockReading,
        out: &mut Vec<TrackerEvent>,
    ) {
        let press = Press {
            id: self.clock.presses_in_game + 1,
            side,
            t,
            clock_ms: reading.side(side).millis,
            emt_ms: self.clock.turn_started_t.map(|s| t.saturating_sub(s)),
            before_ms,
            alerted: false,
            matched: false,
            on_still_move: false,
            without_move: false,
        };
        // 7.5.3 is only considered for a press whose presser is known (the clock
        // mapped before it), that is not the game's first (the start procedure),
        // not a double press, with the clock running after it (not the arbiter
        // handling a stopped clock).
        let double = self
            .clock
            .last_press_t
            .is_some_and(|p| t.saturating_sub(p) < DOUBLE_PRESS_MS);
        let first = self.clock.presses_in_game == 0;
        self.clock.presses_in_game += 1;

        self.clock.last_press_t = Some(t);
        let candidate_7_5_3 = !double
            && !first
            && reading.running
            && self.clock.white_side.is_some_and(|w| {
                self.game
                    .as_ref()
                    .is_some_and(|g| side_color(side, w) == g.verified().turn())
            });
        self.clock.turn_started_t = Some(t);
        let game = self.game.as_ref().expect("playing");
        if game.ply() == 0
            && game.pending.is_empty()
            && self.clock.white_side.is_none()
            && self.current.resolution == Resolution::Explained
        {
            // The side not to move starts the opponent's clock (6.6).
            self.clock.white_side = Some(color_side(side, !game.verified().turn()));
        }
        // Logged before the engine reads it: the engine may verify the ply
        // this press ends right away, and the move takes its time and clock
        // ([%emt], [%clk]) from the log.
        self.clock.press_log.push(press.clone());
        if self.clock.press_log.len() > PRESS_LOG {
            self.clock.press_log.remove(0);
        }
        if let (Some(w), Some(ev)) = (self.clock.white_side, self.evidence.as_mut()) {
            ev.press(t, side_color(side, w), self.clock.presses_in_game);
            if !self.gap {
                let r = self.follow_evidence(t, out);
                self.engine_resolution(r);
            }
        }
        self.late_press_for_verified(t, side, &press, out);
        let mut press = press;
        press.matched = self.pressed_for_shown_move(side);
        // Still means still for a board scan: a picture that changed just before
        // the press may be a square the hand brushed on the way (a knight
        // touching d2 on its way to c3, the press made before the release), and
        // the board reports the rest a scan later.
        press.on_still_move = press.matched
            && (self.current.resolution == Resolution::Explained || self.only_displaced_noise())
            && t.saturating_sub(self.last_change_t) >= STILL_BEFORE_PRESS_MS;
        press.without_move = candidate_7_5_3
            && self.current.resolution == Resolution::Explained
            && self.game.as_ref().is_some_and(|g| g.pending.is_empty());
        if let Some(logged) = self
            .clock
            .press_log
            .iter_mut()
            .rev()
            .find(|p| p.id == press.id)
        {
            *logged = press.clone();
        }
        self.current.press = Some(press);
        self.settle(t, out);
    }

    /// A press by the mover of the latest verified ply, which was verified
    /// without one (it stood for the unpressed hold), before the opponent's
    /// reply is verified: the player pressed late (6.2.2), and only now does the clock show
    /// the time the move's `[%clk]` must carry (the increment added, the
    /// running clock stopped). Blind hands at normal pace, 10 % of presses
    /// forgotten: 4,964 of 137,251 moves carried the time their mover's clock
    /// showed when the hold ran out. The opponent's reply may stand on the
    /// board already (own hands: Rc3 verified by the hold, Kxh6 made, White's
    /// press reported 0.2 s before Black's), but only complete, alone and
    /// still for longer than a scan: with a piece in the hand (or lifted
    /// since the board's last scan), the press may as well be for the
    /// player's next move, made before its release.
    fn late_press_for_verified(
        &mut self,
        t: Millis,
        side: ClockSide,
        press: &Press,
        out: &mut Vec<TrackerEvent>,
    ) {
        let (Some(ply), Some(white)) = (self.clock.unpressed_ply, self.clock.white_side) else {
            return;
        };
        let Some(game) = self.game.as_ref() else {
            return;
        };
        let mover = side_color(side, white);
        let reply_alone = match game.pending.len() {
            0 => true,
            1 => {
                self.current.resolution == Resolution::Explained
                    && t.saturating_sub(self.last_change_t) >= STILL_BEFORE_PRESS_MS
            }
            _ => false,
        };
        if game.ply() != ply || !reply_alone || game.verified().turn() == mover {
            return;
        }
        self.clock.unpressed_ply = None;
        let fullmove = game.history[ply as usize - 1].fullmoves().get();
        out.push(TrackerEvent::Game(GameEvent::MoveClock {
            ply,
            clock_ms: press.clock_ms,
            emt_ms: press.emt_ms,
        }));
        self.clock_laws.pressed_move(
            self.config.time_control.as_ref(),
            ply,
            mover,
            fullmove,
            side,
            t,
            press.before_ms,
        );
    }

    /// The board has shown the presser's move complete (it is the line's first
    /// move): whatever the picture shows when the press arrives (the clock reports
    /// up to a second late, by when a hand may be moving again: the opponent's
    /// reply, an adjustment, a knocked piece), this press is not an illegal one.
    /// The move is still verified only on a settled picture or the opponent's move.
    fn pressed_for_shown_move(&mut self, side: ClockSide) -> bool {
        let Some(game) = self.game.as_ref() else {
            return false;
        };
        if game.pending.is_empty() {
            return false;
        }
        let mover = game.verified().turn();
        self.presser(side, mover) == mover
    }
}

pub(super) fn side_color(side: ClockSide, white: ClockSide) -> Color {
    if side == white {
        Color::White
    } else {
        Color::Black
    }
}

pub(super) fn color_side(side: ClockSide, color: Color) -> ClockSide {
    // `side` belongs to `color`: White's side is `side` or the other one.
    match color {
        Color::White => side,
        Color::Black => side.other(),
    }
}
