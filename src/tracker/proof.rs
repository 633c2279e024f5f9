//! When a move is proven (Article 6.2): the mover's clock press, the
//! opponent's next move seen on the board (6.2.1), or a still picture held
//! long enough (the hold timers are `mod.rs`'s `game_timers`). Only a proven
//! move is published, as verified; a provisional move that is replaced never
//! reaches the public. Verifying a move also notes the draws the player to
//! move may claim and the endings that need no claim.

use shakmaty::{fen::Fen, san::SanPlus, EnPassantMode, Position};

use super::clock::{color_side, Press};
use super::sensing::{may_grow, TWO_HANDS_REPEATS};
use super::{laws, results, Phase, Resolution, Tracker};
use crate::events::{
    Alert, AlertKind, GameEvent, GameResult, Millis, MoveEvent, ResultReason, Severity,
    TrackerEvent,
};

/// A frame period this long or longer is slower than any board scan (200-250
/// ms): a picture may catch a hand in the middle of its move.
const SLOW_FRAME_MS: Millis = 500;
/// On such a board, a provisional move the evidence engine reads this many
/// plies after is proven without the board standing still.
const PROVEN_BY_PLIES_READ: usize = 5;

impl Tracker {
    /// Verifies what is proven: every move followed by a later one (6.2.1), and the
    /// first move once its mover's press has settled. The board reports squares up
    /// to a scan (~250 ms) late, so a press can come before the last square of its
    /// move (the queen's last slide step, the rook of a castling): the line may still
    /// change for `press_settle_ms` after the press.
    pub(super) fn settle(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        while self.phase == Phase::Playing {
            let Some(game) = self.game.as_ref() else {
                return;
            };
            let Some(_) = game.pending.first() else {
                // Nothing on the board to complete. A press by the player not to move
                // (starting the opponent's clock, or pressing late, 6.2.2) is done
                // with; one by the player to move may be for a move still in the
                // hand, and is forgotten once the hand has had time to show one.
                let to_move = game.tip().turn();
                if let Some(side) = self.current.press.as_ref().map(|p| p.side) {
                    let by_mover = self.presser(side, to_move) == to_move;
                    let stale = self.current.press.as_ref().is_some_and(|p| {
                        self.current.resolution == Resolution::Explained
                            && t.saturating_sub(p.t) >= self.config.illegal_alert_ms
                    });
                    let without_move = self
                        .current
                        .press
                        .as_ref()
                        .is_some_and(|p| p.without_move && !self.evidence_owns(p.id));
                    if by_mover && stale && without_move {
                        // No move followed the press: 7.5.3.
                        let count = self.count_illegal(to_move);
                        out.push(laws::press_without_move_alert(
                            to_move,
                            count,
                            self.config.time_control.as_ref(),
                            self.config.regime,
                        ));
                    }
                    if !by_mover || stale {
                        self.current.press = None;
                    }
                }
                return;
            };
            let n = game.pending.len();
            let mover = game.verified().turn();
            let complete_reply = game.pending.get(1).map(|s| s.mv);
            // The opponent's reply made (6.2.1), or under way: his hand is on
            // the board, so the move before it was let go of. Without a clock
            // only a reply made: nothing else bounds the move, and a hand
            // sliding on through the square its move seemed to end on (a
            // queen brushing e5 on its way to take on f4) reads for a moment
            // as the move made and the opponent taking it.
            let reply = complete_reply.or_else(|| {
                if self.clockless() {
                    None
                } else {
                    self.reply_under_way()
                }
            });
            if n < 2 && reply.is_none() {
                // The reply is gone (taken back in the hand): a wait for the late
                // press starts afresh when it is made again.
                self.clock.late_press_wait = None;
            }
            let press_side = self.current.press.as_ref().map(|p| p.side);
            let for_mover = match press_side {
                Some(side) => self.presser(side, mover) == mover,
                None => false,
            };
            if press_side.is_some() && !for_mover {
                // A late press by the previous mover (6.2.2): it completes nothing new.
                self.current.press = None;
            }
            if let Some(reply) = reply {
                // A frame that shows a move and its reply may show neither: a
                // bishop set down on e3 on its way to take on f4 reads as Be3
                // and the f-pawn taking it, a queen crossing b5 to b4 while the
                // reply is made reads as Qb5. Only a later frame showing the
                // picture again proves the reply: on an occupancy board, and on
                // one whose frames are slower than a scan (a Chessnut's 200 ms
                // frame is as quick as a DGT scan, and waiting there lost more
                // than it saved: blind time trouble, 3 games fewer exact).
                let period = self.frame_period();
                let margin = if period >= SLOW_FRAME_MS {
                    period
                } else {
                    self.occupancy_frame_margin()
                };
                // A move followed by plies read after it is proven by them:
                // in fast play the board is never still that long. Two do on
                // an occupancy board. The evidence engine's readings may
                // still reorder a few plies a later frame decides (two proved
                // too few on a Certabo: about 17 games fewer exact in time
                // trouble, three 4), so there it takes five (Certabo, blind
                // hands in time trouble: 1,854 -> 1,513 plies lost, 236 ->
                // 195 inexact games with no 8.4 note naming the moves
                // played, one game fewer exact).
                let proven_on = match self.evidence {
                    None => n >= 3,
                    Some(_) => n > PROVEN_BY_PLIES_READ,
                };
                if margin > 0
                    && !proven_on
                    && t.saturating_sub(self.last_change_t) < margin + margin / 2
                {
                    return;
                }
                // No late press to wait for when the evidence has the move's
                // own press already.
                let pressed = self.evidence_press_for_next().is_some();
                if !for_mover && !pressed && self.awaits_late_press(t, mover, reply) {
                    return;
                }
                // A reply read from a scan whose reports are still coming in
                // may be a partial picture (one scan's squares come in any
                // order): the scan is read whole first.
                if self.evidence.as_ref().is_some_and(|ev| ev.scan_open(t)) {
                    return;
                }
                if !self.may_verify(t, out) {
                    return;
                }
                let press = self.press_for_first(for_mover);
                self.verify_first(press.as_ref(), out);
                continue;
            }
            if for_mover
                && (self.current.resolution == Resolution::Explained || self.only_displaced_noise())
            {
                // The press came first and this picture, seen after it, completes
                // the move: the board scanned it after the hand reached the clock,
                // so nothing of this move is still in transit, except the rest of
                // the same scan's squares (one field update each). Those can only
                // matter when another legal move touches a superset of this one's
                // squares (the rook of a castling reported before its king): then,
                // and only then, the picture must settle first.
                let complete_after_press = self.current.press.as_ref().is_some_and(|p| {
                    p.t <= self.last_change_t
                        && self
                            .game
                            .as_ref()
                            .is_some_and(|g| !may_grow(g.verified(), g.pending[0].mv))
                });
                let p = self.current.press.as_mut().expect("checked");
                p.matched = true;
                let settle = if p.on_still_move || complete_after_press {
                    0
                } else {
                    self.config.press_settle_ms
                };
                if t >= p.t.max(self.last_change_t) + settle && self.may_verify(t, out) {
                    let press = self.press_for_first(true);
                    self.verify_first(press.as_ref(), out);
                }
            }
            return;
        }
    }

    /// Publishes the first provisional move as verified.
    pub(super) fn verify_first(&mut self, press: Option<&Press>, out: &mut Vec<TrackerEvent>) {
        // The press the evidence gives this ply (a late one, or one read
        // before the move completed) when the caller has none at hand.
        let logged = match press {
            Some(_) => None,
            None => self
                .evidence_press_for_next()
                .and_then(|id| self.clock.press_log.iter().find(|p| p.id == id).cloned()),
        };
        let press = press.or(logged.as_ref());
        let white_side = self.clock.white_side;
        let last_reading = self.clock.last_reading;
        let game = self.game.as_mut().expect("playing");
        let step = game.pending.remove(0);
        let before = game.verified().clone();
        let mover = before.turn();
        let fullmove = before.fullmoves().get();
        let san = SanPlus::from_move(before, step.mv).to_string();
        let uci = step.mv.to_uci(game.mode).to_string();
        let fen = Fen::from_position(&step.pos, EnPassantMode::Legal).to_string();
        game.history.push(step.pos.clone());
        game.moves.push(step.mv);
        let ply = game.ply();
        let (clock_ms, emt_ms) = match press {
            Some(p) => (Some(p.clock_ms), p.emt_ms),
            None => (
                white_side
                    .zip(last_reading)
                    .map(|(w, r)| r.side(color_side(w, mover)).millis)
                    .filter(|_| !self.config.no_clock),
                None,
            ),
        };
        // A clock read while the mover's own still ran: his press may yet
        // come and re-time the move (see `Tracker::late_press_for_verified`).
        // So may a clock not read yet: a bus host reads it every 2 s, and a
        // first move verified before its first reading had no [%clk] at all
        // (own hands in time trouble on a bus: 96 games of 1,938).
        self.clock.unpressed_ply = match press {
            None if clock_ms.is_some() || !self.config.no_clock => Some(ply),
            _ => None,
        };
        for note in step.notes {
            match note {
                TrackerEvent::Alert(a) if a.kind == AlertKind::TwoHandsSuspected => {
                    let seen = self.sensing.two_hands_plies.get_mut(mover);
                    seen.retain(|&p| p < ply);
                    seen.push(ply);
                    if seen.len().is_multiple_of(TWO_HANDS_REPEATS) {
                        out.push(laws::two_hands_repeated(a, seen));
                    }
                }
                note => out.push(note),
            }
        }
        out.push(TrackerEvent::Game(GameEvent::Move(MoveEvent {
            ply,
            san,
            uci,
            fen,
            verified: true,
            clock_ms,
            emt_ms,
            reconstructed: step.reconstructed,
            corrected: step.corrected,
        })));
        if let Some(p) = press {
            self.clock_laws.pressed_move(
                self.config.time_control.as_ref(),
                ply,
                mover,
                fullmove,
                p.side,
                p.t,
                p.before_ms,
            );
        }
        let game = self.game.as_ref().expect("playing");
        // Draws the player to move may claim (9.2, 9.3): facts for the arbiter,
        // whether or not the position also ends the game.
        out.extend(laws::draw_claims(
            &game.history,
            game.verified(),
            ply,
            &mut self.current.claims_noted,
            &mut self.current.fifty_noted,
        ));
        let Some(ending) = results::ending(&game.history) else {
            return;
        };
        if ending.is_final() {
            // Mate and stalemate end the game (5.1.1, 5.2.1): no move is left anyway.
            // After an earlier automatic draw the first ending stands: the game is
            // over for the record, only the board stops here.
            if self.current.result_ply.is_some() {
                self.stop_following();
            } else if self.rivals_play_on() {
                // On an occupancy-only board, a line recorded over another
                // that fitted as well: on that one the game goes on. The
                // result is published and the board still followed; the
                // correction to that line withdraws the result with the plies.
                self.current.result_ply = Some(ply);
                self.clock_laws.game_over();
                out.push(TrackerEvent::Game(GameEvent::Result {
                    result: ending.result(),
                    reason: ending.reason(),
                }));
            } else {
                self.end_game(ending.result(), ending.reason(), out);
            }
            return;
        }
        // The other endings that need no claim (5.2.2, 9.6) end the game in law, so
        // the result is published at this ply; players often play on before the
        // arbiter steps in, and the record keeps following the board.
        if self.current.result_ply.is_none() {
            self.current.result_ply = Some(ply);
            self.clock_laws.game_over();
            out.push(TrackerEvent::Alert(Alert {
                id: 0,
                penalty: None,
                kind: AlertKind::AutomaticDraw,
                article: ending.article().into(),
                severity: Severity::Info,
                squares: Vec::new(),
                message: format!(
                    "After ply {ply}, {}: the game is drawn under the Laws; the moves are still recorded.",
                    ending.description()
                ),
            }));
            out.push(TrackerEvent::Game(GameEvent::Result {
                result: ending.result(),
                reason: ending.reason(),
            }));
        }
    }

    /// Publishes the game's result and stops following moves.
    pub(super) fn end_game(
        &mut self,
        result: GameResult,
        reason: ResultReason,
        out: &mut Vec<TrackerEvent>,
    ) {
        out.push(TrackerEvent::Game(GameEvent::Result { result, reason }));
        self.current.result_ply = Some(self.ply());
        self.clock_laws.game_over();
        self.stop_following();
    }

    /// The game is over on the board: nothing pending, no press or takeback
    /// waiting, no start being watched until the board is set up again.
    fn stop_following(&mut self) {
        self.phase = Phase::Over;
        self.current.press = None;
        self.current.takeback = None;
        self.start.start_candidate = None;
        if let Some(g) = self.game.as_mut() {
            g.pending.clear();
        }
    }
}
