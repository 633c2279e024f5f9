//! The clock side of the Laws (Article 6), watched from the clock readings.
//!
//! The tracker owns one [`ClockLaws`] per board and calls it at a few points: every
//! clock reading, every picture that moved the game forward, every verified move and
//! every game start. What it decides:
//!
//! - **6.9 flag fall.** A display blocked at zero (the DGT flag bit, or zero shown
//!   on a side that had time) raises an `flag_fall` alert (error) naming the
//!   player and the result the Laws give: a loss, or a draw when the opponent cannot
//!   checkmate by any series of legal moves. The tracker does **not** publish that
//!   result: under 6.8 a flag has fallen only when the arbiter observes it or a
//!   player claims it validly, and the arbiter may first have to correct a clock set
//!   wrongly (6.10.2). The result reaches the public when the arbiter enters it or
//!   the players show it on the board (result pieces, kings in the centre).
//!   "Cannot checkmate by any series of legal moves" is approximated by shakmaty's
//!   `has_insufficient_material` for the opponent: a lone king, king and one minor
//!   piece, or only bishops on one colour. Blocked-pawn fortresses and other dead
//!   positions that need search are not recognised, which errs towards "loses".
//! - **Both flags.** A digital clock stops only the side that ran; the other flag
//!   can fall only later, after the clock ran on unattended. The first fall is the
//!   one the Laws look at, so a second `flag_fall` alert says so (info).
//! - **6.10.2 control-move time.** With a configured time control whose period has
//!   a move count, the press of the control move must add the next period's time.
//!   Once the clock has had [`CONTROL_SETTLE_MS`] to show it, a mover's display that
//!   did not grow by the next period's base (within [`CONTROL_TOLERANCE_MS`]) raises
//!   a `control_time_not_added` alert with the expected and shown times.
//! - **6.11 clock stopped while the game goes on.** Once the clock has run in a game
//!   (6.6: before the first start nothing is wrong), a move made while the clock is
//!   paused raises one `clock_stopped_moves` warning per pause; it is resolved when
//!   the clock runs again. Nothing is raised after the game's result is known or
//!   after a flag fell.

use eboard_protocols::{ClockReading, ClockSide};
use shakmaty::{Chess, Color, Position};

use crate::events::{Alert, AlertKind, AlertResolved, Millis, Severity, TrackerEvent};
use crate::pgn::hms;
use crate::timecontrol::TimeControl;

/// How long after the control move's press the clock may take to show the next
/// period (the board reports the clock two or three times a second, DGT clocks
/// whole seconds).
pub const CONTROL_SETTLE_MS: Millis = 1_500;
/// How far below the expected time the display may be at the check: the seconds
/// that ran between the last reading before the press and the press itself, and
/// the display's rounding.
pub const CONTROL_TOLERANCE_MS: u64 = 3_000;

/// What the tracker tells [`ClockLaws`] about the game at a reading.
#[derive(Clone, Copy, Debug)]
pub(super) struct GameView<'a> {
    /// The position after the last verified move.
    pub pos: &'a Chess,
    /// Verified plies so far.
    pub ply: u32,
    /// Which clock side is White's, once known.
    pub white_side: Option<ClockSide>,
}

/// A control move's press waiting for the clock to show the next period.
#[derive(Clone, Copy, Debug)]
struct ControlCheck {
    ply: u32,
    mover: Color,
    side: ClockSide,
    press_t: Millis,
    /// The mover's display on the last reading before the press.
    before_ms: u64,
    /// What the next period and the increment add.
    added_ms: u64,
}

/// A pause of the clock during a game.
#[derive(Clone, Copy, Debug, Default)]
struct Pause {
    /// A move was made during it and the alert raised (its id once numbered).
    alerted: bool,
    alert_id: Option<u32>,
}

/// State of the clock Laws for the game being followed.
#[derive(Clone, Debug, Default)]
pub(super) struct ClockLaws {
    /// The clock has run during this game (Article 6.6: before that, a stopped
    /// clock is the normal state).
    started: bool,
    /// Each physical side has shown time above zero this game: a zero shown by a
    /// clock never set is not a flag fall.
    had_time: [bool; 2],
    /// The colours whose flag fall was reported, in order.
    flags: Vec<Color>,
    control: Option<ControlCheck>,
    pause: Option<Pause>,
    /// The game's result is known (mate, stalemate, automatic draw): the clock is
    /// no longer the arbiter's concern for this game.
    over: bool,
}

fn side_index(side: ClockSide) -> usize {
    match side {
        ClockSide::Left => 0,
        ClockSide::Right => 1,
    }
}

fn colour_name(c: Color) -> &'static str {
    match c {
        Color::White => "White",
        Color::Black => "Black",
    }
}

impl ClockLaws {
    /// A new game starts; `running` says whether the clock already runs. A pause
    /// alert of the previous game still open is resolved: that game is done.
    pub fn begin_game(&mut self, running: bool, out: &mut Vec<TrackerEvent>) {
        if let Some(id) = self.pause.and_then(|p| p.alert_id) {
            out.push(TrackerEvent::Resolved(AlertResolved {
                id,
                kind: AlertKind::ClockStoppedMoves,
                reason: "A new game started on the board.".into(),
            }));
        }
        *self = ClockLaws {
            started: running,
            ..ClockLaws::default()
        };
    }

    /// The game's result is known: no more clock alerts for it.
    pub fn game_over(&mut self) {
        self.over = true;
        self.control = None;
    }

    /// Takes back [`ClockLaws::game_over`] (moves withdrawn behind the result).
    pub fn reopen(&mut self) {
        self.over = false;
    }

    /// The id the tracker gave an alert raised here (alerts are numbered at the
    /// tracker's entry points, after they are built).
    pub fn numbered(&mut self, alert: &Alert) {
        if alert.kind == AlertKind::ClockStoppedMoves {
            if let Some(p) = self.pause.as_mut() {
                p.alert_id = Some(alert.id);
            }
        }
    }

    /// A clock reading during a game. `prev` is the reading before it.
    pub fn reading(
        &mut self,
        t: Millis,
        reading: &ClockReading,
        prev: Option<&ClockReading>,
        game: GameView<'_>,
        out: &mut Vec<TrackerEvent>,
    ) {
        for side in [ClockSide::Left, ClockSide::Right] {
            if reading.side(side).millis > 0 {
                self.had_time[side_index(side)] = true;
            }
        }
        if reading.running {
            self.started = true;
            if let Some(p) = self.pause.take() {
                if let Some(id) = p.alert_id {
                    out.push(TrackerEvent::Resolved(AlertResolved {
                        id,
                        kind: AlertKind::ClockStoppedMoves,
                        reason: "The clock runs again.".into(),
                    }));
                }
            }
        } else if self.started && prev.is_some_and(|p| p.running) && self.pause.is_none() {
            self.pause = Some(Pause::default());
        }
        if self.over {
            return;
        }
        self.check_control(t, reading, out);
        if let Some(white) = game.white_side {
            self.check_flags(reading, white, game, out);
        }
    }

    /// No check waits for time to pass: [`ClockLaws::tick`] does nothing until
    /// the next input.
    pub fn quiet(&self) -> bool {
        self.control.is_none()
    }

    /// Time passes: a control check whose settle delay ran out is decided.
    pub fn tick(&mut self, t: Millis, last: Option<&ClockReading>, out: &mut Vec<TrackerEvent>) {
        if let (Some(r), false) = (last, self.over) {
            self.check_control(t, r, out);
        }
    }

    /// The game moved forward on the board (a new move appeared).
    pub fn moved(&mut self, clock_in_use: bool, ply: u32, out: &mut Vec<TrackerEvent>) {
        // After a flag fall the arbiter is already called and clocks stop
        // themselves; a stopped clock then says nothing new.
        if !clock_in_use || !self.started || self.over || !self.flags.is_empty() {
            return;
        }
        let Some(p) = self.pause.as_mut() else {
            return;
        };
        if p.alerted {
            return;
        }
        p.alerted = true;
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::ClockStoppedMoves,
            article: "6.11".into(),
            severity: Severity::Warning,
            squares: Vec::new(),
            message: format!(
                "A move was made after ply {ply} while the clock is stopped: if the arbiter did not stop it, restart the clock and check the times."
            ),
        }));
    }

    /// A move was verified with the mover's press. `fullmove` is the move's number
    /// in the game (the FEN move counter before it), `before_ms` the mover's display
    /// on the last reading before the press.
    #[allow(clippy::too_many_arguments)]
    pub fn pressed_move(
        &mut self,
        tc: Option<&TimeControl>,
        ply: u32,
        mover: Color,
        fullmove: u32,
        side: ClockSide,
        press_t: Millis,
        before_ms: Option<u64>,
    ) {
        let (Some(tc), Some(before_ms)) = (tc, before_ms) else {
            return;
        };
        if !tc.is_control_move(fullmove) {
            return;
        }
        let Some((_, now)) = tc.period_after(fullmove - 1) else {
            return;
        };
        let Some((_, next)) = tc.period_after(fullmove) else {
            return;
        };
        self.control = Some(ControlCheck {
            ply,
            mover,
            side,
            press_t,
            before_ms,
            added_ms: (next.base_s + now.increment_s) * 1000,
        });
    }

    fn check_control(&mut self, t: Millis, reading: &ClockReading, out: &mut Vec<TrackerEvent>) {
        let Some(c) = self.control else {
            return;
        };
        let shown = reading.side(c.side).millis;
        let expected = c.before_ms + c.added_ms;
        if shown + CONTROL_TOLERANCE_MS >= expected {
            self.control = None;
            return;
        }
        if t < c.press_t + CONTROL_SETTLE_MS {
            return;
        }
        self.control = None;
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::ControlTimeNotAdded,
            article: "6.10.2".into(),
            severity: Severity::Error,
            squares: Vec::new(),
            message: format!(
                "{} completed the time control with ply {} but the clock shows {} instead of about {}: the next period's time was not added; correct the clock's time and move counter.",
                colour_name(c.mover),
                c.ply,
                hms(shown),
                hms(expected)
            ),
        }));
    }

    fn check_flags(
        &mut self,
        reading: &ClockReading,
        white: ClockSide,
        game: GameView<'_>,
        out: &mut Vec<TrackerEvent>,
    ) {
        for side in [ClockSide::Left, ClockSide::Right] {
            let shown = reading.side(side);
            let fallen =
                shown.flag_fallen || (shown.millis == 0 && self.had_time[side_index(side)]);
            let colour = if side == white {
                Color::White
            } else {
                Color::Black
            };
            if !fallen || self.flags.contains(&colour) {
                continue;
            }
            let first = self.flags.first().copied();
            self.flags.push(colour);
            out.push(flag_alert(colour, first, game));
        }
    }
}

/// The result Article 6.9 gives when `loser`'s flag falls in `pos`.
pub fn flag_fall_result(pos: &Chess, loser: Color) -> crate::events::GameResult {
    if pos.has_insufficient_material(!loser) {
        crate::events::GameResult::Draw
    } else {
        crate::events::GameResult::win_for(!loser)
    }
}

fn flag_alert(loser: Color, first: Option<Color>, game: GameView<'_>) -> TrackerEvent {
    let who = colour_name(loser);
    let opp = colour_name(!loser);
    let (severity, message) = match first {
        Some(f) => (
            Severity::Info,
            format!(
                "{who}'s flag fell too, after ply {}, but {}'s fell first: the first flag fall is the one to rule on (6.9).",
                game.ply,
                colour_name(f)
            ),
        ),
        None => {
            let result = flag_fall_result(game.pos, loser);
            let ruling = match result {
                crate::events::GameResult::Draw => format!(
                    "the game is drawn, as {opp} cannot checkmate by any series of legal moves"
                ),
                _ => format!("{opp} wins ({})", result.as_pgn()),
            };
            (
                Severity::Error,
                format!(
                    "{who}'s flag fell after ply {}: under 6.9 {ruling}, once the arbiter observes it or a player claims it. Check the clock was set right (6.10.2) before ruling.",
                    game.ply
                ),
            )
        }
    };
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::FlagFall,
        article: "6.9".into(),
        severity,
        squares: Vec::new(),
        message,
    })
}
