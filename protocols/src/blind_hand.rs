//! An independent ("blind") model of two players' hands and a chess clock.
//!
//! It exists to test the move tracker from outside: it was written from the
//! Laws of Chess (Articles 4, 6 and 7) and from how people are seen to move on
//! electronic boards, *without* reading the tracker or the project's own hand
//! model, so that it does not share their blind spots. [`play`] turns a game
//! (a start position and its legal moves) into timed lifts, placements and
//! clock presses, in the board's frame, seeded and deterministic.
//!
//! # What the hands do
//!
//! Times below are milliseconds; "a..b" is drawn uniformly, "a~b" log-uniformly.
//!
//! | | `Normal` | `TimeTrouble` |
//! |---|---|---|
//! | think, press → first touch | plies 0–15: 600~8000; later 12 % 1500..6000, else 5000~240000 | 35 % 20..120 after the opponent's press (he lifts while the press is still going on; never before the last piece of the previous move is released + 20), else 250~2200 |
//! | carry (lift → place) | 250..600 + 40 per square | 50..150 + 10 per square |
//! | between two pieces (one hand, one after the other) | 200..700 | 30..120 |
//! | slide of the moving piece over the squares between | 15 %; each crossed square felt with p 0.8, for 150..600 | 30 %; p 0.4, for 30..220 |
//! | brushing a neighbour of the target while still holding the piece | 6 %, 100..300 | 8 %, 60..200 |
//! | a piece lifted and put back on its own square before the move | 5 %, held 300..2000 | 2 %, held 80..300 |
//! | press after the last release | 300..1500 | 75 % 30..200 after; 25 % 0..80 *before* |
//! | capture: captured off first / both held / capturer on top | 50 / 20 / 30 % | 35 / 20 / 45 % |
//! | captured piece slid off the board (off-first or on-top) | 12 % | 10 % |
//! | castling: king first / rook first / both lifted | 60 / 15 / 25 % | 50 / 20 / 30 % |
//! | en passant: captured first / pawn first / both held | 40 / 40 / 20 % | same |
//! | promotion: pawn on the last rank then swapped / pawn aside then new piece / new piece first | 40 / 35 / 25 % | 30 / 45 / 25 % |
//! | after a forgotten press: the opponent waits; else the forgetful player notices during the opponent's think (pressing only if that is ≥ 50 before the opponent's first touch) | 20 %; else 60 %, after 2000~40000 | 5 %; else 15 %, after 300~2500 |
//! | a waiting opponent is released by a late press after | 3000~60000 | 500~4000 |
//!
//! In time trouble the time from a press to the next release is within
//! [`TT_PRESS_TO_RELEASE_MS`] (the tests check it); most moves come
//! 0.1–2.5 s after the opponent's press.
//!
//! Other rules the hands keep:
//! - One hand: two board actions never share a millisecond; two lifts of
//!   different pieces are at least 30 ms apart (castling and capture
//!   sequences done one after another); a slide's steps are 10..80 apart.
//! - The opponent's first touch comes at least 20 ms after the last piece of
//!   the previous move was released, so the board never sees two moves
//!   interleaved, but presses and the next lift overlap freely.
//! - A slid piece crosses only empty squares; a slid-off captured piece goes
//!   by the shortest free straight way (at most 3 squares) to the nearest edge.
//! - Article 4.7: a piece is never *released* on a square and then moved on;
//!   touches of other squares are slides or brushes by a hand that has not let
//!   go. Adjustments (a piece lifted and put back on its own square) happen
//!   before the move.
//! - Chess960 castling lifts both pieces before placing whenever king and rook
//!   land on each other's squares; if the king does not move it is sometimes
//!   lifted off and put back (Guidelines II), else only the rook moves; if the
//!   rook does not move it is sometimes lifted and put back after the king.
//!
//! # The clock
//!
//! The clock is started at `start_ms` by a press on the side of the player
//! *not* to move (Article 6.6, the arbiter's start). Each mover then presses
//! his own side, except that with probability `forget_press` he forgets. The
//! lever model: a press on side `s` puts `s` down and runs the other side; a
//! press on the side already down changes nothing. What follows a forgotten
//! press, if the forgetful player's clock is still running:
//! - the opponent waits (he sees his own clock stopped and the move made);
//!   the forgetful player notices and presses late, then the opponent replies;
//! - or the opponent plays on. The forgetful player may notice and press late
//!   while the opponent is still thinking (never once the opponent's hand is on
//!   the board: 6.2.2 would allow it, but the running clock is then his own,
//!   so nobody does). Otherwise the opponent, after moving, presses his own
//!   side, which is already down: that press does nothing, and the clocks are
//!   right again (the mover's time runs).
//!
//! If the forgetful player's side is already down (the opponent forgot the ply
//! before), his clock is not running, nobody notices anything and nobody waits.
//! [`BlindPly::press_ms`] is the time of the mover's press for that ply *that
//! changed the lever* (a timely or a late one), `None` if he never pressed or
//! his press did nothing. A game-ending move is pressed like any other (habit).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shakmaty::{attacks, Chess, Color, File, Move, Piece, Position, Rank, Role, Square};

use crate::clock::ClockSide;
use crate::hand::{PhysicalAction, PhysicalBoard, TimedAction};

/// In time trouble, the time from a press that changed the clock to the
/// release of the opponent's next move is within this range (hard bounds).
pub const TT_PRESS_TO_RELEASE_MS: (u64, u64) = (50, 5_000);

/// How the two players behave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlindConfig {
    /// Seed of the random choices: the same seed gives the same script.
    pub seed: u64,
    /// How fast the players are.
    pub pace: Pace,
    /// Probability that a mover does not press the clock after a move.
    pub forget_press: f64,
    /// The board is turned 180°: game square `s` is board square `s.rotate_180()`.
    pub rotated: bool,
    /// The clock side of White's player.
    pub white_clock: ClockSide,
    /// When the arbiter starts the clock (the first action).
    pub start_ms: u64,
}

impl Default for BlindConfig {
    fn default() -> Self {
        BlindConfig {
            seed: 0,
            pace: Pace::Normal,
            forget_press: 0.0,
            rotated: false,
            white_clock: ClockSide::Left,
            start_ms: 0,
        }
    }
}

/// How fast the players move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Thinking for seconds to minutes, deliberate hands.
    Normal,
    /// Both players short of time: moves every fraction of a second to a few.
    TimeTrouble,
}

/// What happened for one ply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlindPly {
    /// When the last piece of the move was released (Article 4.7): the last
    /// board action of the ply.
    pub released_ms: u64,
    /// When the mover's own press for this ply changed the clock (`None` if he
    /// never pressed, or his press found his side already down).
    pub press_ms: Option<u64>,
}

/// The physical actions of a game, sorted by time, and what each ply did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlindScript {
    pub actions: Vec<TimedAction>,
    pub plies: Vec<BlindPly>,
}

/// Hand and clock habits of one pace (see the table in the module docs).
struct Habits {
    carry: (u64, u64),
    carry_per_square: u64,
    gap: (u64, u64),
    slide_prob: f64,
    slide_keep: f64,
    slide_step: (u64, u64),
    slide_dwell: (u64, u64),
    brush_prob: f64,
    brush_dwell: (u64, u64),
    fidget_prob: f64,
    fidget_hold: (u64, u64),
    fetch: (u64, u64),
    press_delay: (u64, u64),
    press_early_prob: f64,
    press_early: (u64, u64),
    capture_remove_first: f64,
    capture_hold_both: f64,
    slide_off_prob: f64,
    castle_king_first: f64,
    castle_rook_first: f64,
    promo_swap: f64,
    promo_direct: f64,
    opponent_waits: f64,
    wait_notice: (u64, u64),
    notice_prob: f64,
    notice_delay: (u64, u64),
}

const NORMAL: Habits = Habits {
    carry: (250, 600),
    carry_per_square: 40,
    gap: (200, 700),
    slide_prob: 0.15,
    slide_keep: 0.8,
    slide_step: (20, 80),
    slide_dwell: (150, 600),
    brush_prob: 0.06,
    brush_dwell: (100, 300),
    fidget_prob: 0.05,
    fidget_hold: (300, 2_000),
    fetch: (500, 2_500),
    press_delay: (300, 1_500),
    press_early_prob: 0.0,
    press_early: (0, 0),
    capture_remove_first: 0.5,
    capture_hold_both: 0.2,
    slide_off_prob: 0.12,
    castle_king_first: 0.6,
    castle_rook_first: 0.15,
    promo_swap: 0.4,
    promo_direct: 0.35,
    opponent_waits: 0.2,
    wait_notice: (3_000, 60_000),
    notice_prob: 0.6,
    notice_delay: (2_000, 40_000),
};

const TIME_TROUBLE: Habits = Habits {
    carry: (50, 150),
    carry_per_square: 10,
    gap: (30, 120),
    slide_prob: 0.3,
    slide_keep: 0.4,
    slide_step: (10, 40),
    slide_dwell: (30, 220),
    brush_prob: 0.08,
    brush_dwell: (60, 200),
    fidget_prob: 0.02,
    fidget_hold: (80, 300),
    fetch: (120, 500),
    press_delay: (30, 200),
    press_early_prob: 0.25,
    press_early: (0, 80),
    capture_remove_first: 0.35,
    capture_hold_both: 0.2,
    slide_off_prob: 0.1,
    castle_king_first: 0.5,
    castle_rook_first: 0.2,
    promo_swap: 0.3,
    promo_direct: 0.45,
    opponent_waits: 0.05,
    wait_notice: (500, 4_000),
    notice_prob: 0.15,
    notice_delay: (300, 2_500),
};

/// Least time between the last release of a move and the opponent's first touch.
const TURN_GAP_MS: u64 = 20;
/// Least time between two presses, and between a first touch and the press.
const PRESS_GAP_MS: u64 = 30;
/// A forgetful player presses late only this long before the opponent's first touch.
const LATE_PRESS_MARGIN_MS: u64 = 50;
/// Longest straight way a captured piece is slid off the board.
const SLIDE_OFF_MAX: usize = 3;

/// A move not yet pressed for.
struct Unpressed {
    ply: usize,
    side: ClockSide,
    released_ms: u64,
}

struct Hands<'a> {
    cfg: &'a BlindConfig,
    h: &'static Habits,
    rng: SmallRng,
    actions: Vec<TimedAction>,
    /// What stands on the board, in the game's frame, after the actions so far.
    board: PhysicalBoard,
    last_board_ms: u64,
    last_press_ms: Option<u64>,
    /// The side whose button is down (`None` before the clock is started).
    lever: Option<ClockSide>,
}

/// Plays `moves` (legal, in order, from `start`) with two players' hands and a
/// clock. See the module docs for the behaviour and its numbers.
///
/// The moves must be legal in turn (checked in debug builds only); the script
/// is the same for the same `start`, `moves` and `cfg` on a given platform.
pub fn play(start: &Chess, moves: &[Move], cfg: &BlindConfig) -> BlindScript {
    let h = match cfg.pace {
        Pace::Normal => &NORMAL,
        Pace::TimeTrouble => &TIME_TROUBLE,
    };
    let mut hands = Hands {
        cfg,
        h,
        rng: SmallRng::seed_from_u64(cfg.seed),
        actions: Vec::new(),
        board: PhysicalBoard::from_board(start.board(), false),
        last_board_ms: cfg.start_ms,
        last_press_ms: None,
        lever: None,
    };
    let mut pos = start.clone();
    let mut plies: Vec<BlindPly> = Vec::with_capacity(moves.len());

    // The arbiter starts the clock on the side of the player not to move.
    let waiting = hands.side(pos.turn()).other();
    hands.press(cfg.start_ms, waiting);
    let mut base = cfg.start_ms;
    let mut after_press = true;
    let mut unpressed: Option<Unpressed> = None;

    for (i, &m) in moves.iter().enumerate() {
        debug_assert!(pos.is_legal(m), "ply {i}: {m:?} is not legal");
        let color = pos.turn();
        let side = hands.side(color);

        let mut think = hands.think(i, after_press);
        let mut late_press_possible = None;
        if let Some(u) = unpressed.take() {
            // The forgetful player's clock still runs: something is visibly wrong.
            if hands.lever != Some(u.side) {
                if hands.chance(h.opponent_waits) {
                    let t = u.released_ms + hands.range(h.wait_notice);
                    let t = hands.press_after(t);
                    if hands.press(t, u.side) {
                        plies[u.ply].press_ms = Some(t);
                    }
                    base = t;
                    think = hands.think(i, true);
                } else if hands.chance(h.notice_prob) {
                    let t = u.released_ms + hands.range(h.notice_delay);
                    late_press_possible = Some((u, t));
                }
            }
        }

        let first_touch = (base + think).max(hands.last_board_ms + TURN_GAP_MS);
        if let Some((u, t)) = late_press_possible {
            let t = hands.press_after(t);
            if t + LATE_PRESS_MARGIN_MS <= first_touch && hands.press(t, u.side) {
                plies[u.ply].press_ms = Some(t);
            }
        }

        let t = hands.fidget(&pos, m, first_touch);
        hands.make_move(&pos, m, t);
        let released_ms = hands.last_board_ms;
        pos.play_unchecked(m);
        debug_assert_eq!(
            hands.board.to_board().as_ref(),
            Some(pos.board()),
            "ply {i}: the hands left a different board"
        );

        if hands.chance(cfg.forget_press) {
            plies.push(BlindPly {
                released_ms,
                press_ms: None,
            });
            unpressed = Some(Unpressed {
                ply: i,
                side,
                released_ms,
            });
            base = released_ms;
            after_press = false;
        } else {
            let t = if hands.chance(h.press_early_prob) {
                released_ms.saturating_sub(hands.range(h.press_early))
            } else {
                released_ms + hands.range(h.press_delay)
            };
            let t = hands.press_after(t.max(first_touch + PRESS_GAP_MS));
            let changed = hands.press(t, side);
            plies.push(BlindPly {
                released_ms,
                press_ms: changed.then_some(t),
            });
            base = t;
            after_press = true;
        }
    }

    let mut actions = hands.actions;
    actions.sort_by_key(|a| a.t_ms);
    BlindScript { actions, plies }
}

impl Hands<'_> {
    fn side(&self, color: Color) -> ClockSide {
        match color {
            Color::White => self.cfg.white_clock,
            Color::Black => self.cfg.white_clock.other(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        if p.is_nan() {
            return false;
        }
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    fn range(&mut self, (lo, hi): (u64, u64)) -> u64 {
        self.rng.random_range(lo..=hi)
    }

    fn log_range(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let x: f64 = self.rng.random_range(a..=b);
        (x.exp().round() as u64).clamp(lo, hi)
    }

    /// From the opponent's press (or his release if he did not press) to the
    /// mover's first touch.
    fn think(&mut self, ply: usize, after_press: bool) -> u64 {
        match self.cfg.pace {
            Pace::Normal => {
                if ply < 16 {
                    self.log_range(600, 8_000)
                } else if self.chance(0.12) {
                    self.range((1_500, 6_000))
                } else {
                    self.log_range(5_000, 240_000)
                }
            }
            Pace::TimeTrouble => {
                if after_press && self.chance(0.35) {
                    self.range((20, 120))
                } else {
                    self.log_range(250, 2_200)
                }
            }
        }
    }

    /// A press time no earlier than the previous press allows.
    fn press_after(&self, t: u64) -> u64 {
        match self.last_press_ms {
            Some(last) => t.max(last + PRESS_GAP_MS),
            None => t,
        }
    }

    /// Presses `side`; whether the lever moved.
    fn press(&mut self, t: u64, side: ClockSide) -> bool {
        debug_assert!(self.last_press_ms.is_none_or(|last| t > last));
        self.last_press_ms = Some(t);
        self.actions.push(TimedAction {
            t_ms: t,
            action: PhysicalAction::PressClock(side),
        });
        let changed = self.lever != Some(side);
        self.lever = Some(side);
        changed
    }

    fn emit(&mut self, t: u64, action: PhysicalAction) {
        debug_assert!(
            t > self.last_board_ms,
            "board actions at {t} after {}",
            self.last_board_ms
        );
        let applied = self.board.apply(action);
        debug_assert!(applied.is_ok(), "{action:?} at {t}: {applied:?}");
        self.last_board_ms = t;
        let to_board = |sq: Square| {
            if self.cfg.rotated {
                sq.rotate_180()
            } else {
                sq
            }
        };
        let action = match action {
            PhysicalAction::Lift { square, piece } => PhysicalAction::Lift {
                square: to_board(square),
                piece,
            },
            PhysicalAction::Place { square, piece } => PhysicalAction::Place {
                square: to_board(square),
                piece,
            },
            press => press,
        };
        self.actions.push(TimedAction { t_ms: t, action });
    }

    fn lift(&mut self, t: u64, square: Square, piece: Piece) {
        self.emit(t, PhysicalAction::Lift { square, piece });
    }

    fn place(&mut self, t: u64, square: Square, piece: Piece) {
        self.emit(t, PhysicalAction::Place { square, piece });
    }

    fn empty(&self, sq: Square) -> bool {
        self.board.pieces_on(sq).next().is_none()
    }

    fn gap(&mut self) -> u64 {
        self.range(self.h.gap)
    }

    fn carry_time(&mut self, from: Square, to: Square) -> u64 {
        self.range(self.h.carry) + self.h.carry_per_square * u64::from(from.distance(to))
    }

    /// Before the move: now and then a piece is lifted and put back on its own
    /// square (the piece about to move, or another one adjusted). Returns when
    /// the move itself begins.
    fn fidget(&mut self, pos: &Chess, m: Move, t: u64) -> u64 {
        if !self.chance(self.h.fidget_prob) {
            return t;
        }
        let own = pos.board().by_color(pos.turn());
        let sq = match m.from() {
            Some(from) if self.chance(0.6) => from,
            _ => {
                let squares: Vec<Square> = own.into_iter().collect();
                squares[self.rng.random_range(0..squares.len())]
            }
        };
        let Some(piece) = pos.board().piece_at(sq) else {
            return t;
        };
        self.lift(t, sq, piece);
        let t = t + self.range(self.h.fidget_hold);
        self.place(t, sq, piece);
        t + self.gap()
    }

    /// `piece` was lifted from `from` at `t`; the hand takes it to `to`, maybe
    /// sliding it over the squares between or brushing a neighbour of `to`
    /// without letting go. Returns when it is put down on `to`.
    fn travel(&mut self, t: u64, from: Square, to: Square, piece: Piece) -> u64 {
        let path: Vec<Square> = {
            let mut p: Vec<Square> = attacks::between(from, to).into_iter().collect();
            p.sort_by_key(|s| s.distance(from));
            p
        };
        let lifted = t;
        let mut t = t;
        if !path.is_empty() && path.iter().all(|&s| self.empty(s)) && self.chance(self.h.slide_prob)
        {
            for s in path {
                if self.chance(self.h.slide_keep) {
                    t += self.range(self.h.slide_step);
                    self.place(t, s, piece);
                    t += self.range(self.h.slide_dwell);
                    self.lift(t, s, piece);
                }
            }
            // A slide is never quicker than carrying the piece through the air.
            let carried = lifted + self.carry_time(from, to);
            t = (t + self.range(self.h.slide_step)).max(carried);
            self.place(t, to, piece);
            return t;
        }
        t += self.carry_time(from, to);
        if self.chance(self.h.brush_prob) {
            let near: Vec<Square> = attacks::king_attacks(to)
                .into_iter()
                .filter(|&s| self.empty(s))
                .collect();
            if !near.is_empty() {
                let s = near[self.rng.random_range(0..near.len())];
                self.place(t, s, piece);
                t += self.range(self.h.brush_dwell);
                self.lift(t, s, piece);
                t += self.range(self.h.slide_step);
            }
        }
        self.place(t, to, piece);
        t
    }

    /// Takes a captured `piece` off `sq` at `t`, maybe sliding it off the board
    /// across the free squares to the nearest edge. Returns the last action's time.
    fn remove(&mut self, t: u64, sq: Square, piece: Piece, may_slide: bool) -> u64 {
        self.lift(t, sq, piece);
        if !(may_slide && self.chance(self.h.slide_off_prob)) {
            return t;
        }
        let Some(way) = self.way_off(sq) else {
            return t;
        };
        let mut t = t;
        for s in way {
            if self.chance(self.h.slide_keep) {
                t += self.range(self.h.slide_step);
                self.place(t, s, piece);
                t += self.range(self.h.slide_dwell);
                self.lift(t, s, piece);
            }
        }
        t
    }

    /// The squares crossed by the shortest free straight way from `sq` off the
    /// board (empty when `sq` is on the edge), if one is short enough.
    fn way_off(&mut self, sq: Square) -> Option<Vec<Square>> {
        let mut best: Vec<Vec<Square>> = Vec::new();
        for (df, dr) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
            let mut way = Vec::new();
            let (mut f, mut r) = (sq.file().to_u32() as i32, sq.rank().to_u32() as i32);
            let mut free = true;
            loop {
                f += df;
                r += dr;
                if !(0..8).contains(&f) || !(0..8).contains(&r) {
                    break;
                }
                let s = Square::from_coords(File::new(f as u32), Rank::new(r as u32));
                if !self.empty(s) {
                    free = false;
                    break;
                }
                way.push(s);
            }
            if !free || way.len() > SLIDE_OFF_MAX {
                continue;
            }
            match best.first().map(Vec::len) {
                Some(n) if n < way.len() => {}
                Some(n) if n > way.len() => best = vec![way],
                _ => best.push(way),
            }
        }
        if best.is_empty() {
            None
        } else {
            let i = self.rng.random_range(0..best.len());
            Some(best.swap_remove(i))
        }
    }

    /// Makes `m` on the board, the first touch at `t`.
    fn make_move(&mut self, pos: &Chess, m: Move, t: u64) {
        let us = pos.turn();
        match m {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion: None,
            } => {
                let piece = role.of(us);
                match capture {
                    None => {
                        self.lift(t, from, piece);
                        self.travel(t, from, to, piece);
                    }
                    Some(captured) => self.capture(t, from, to, piece, captured.of(!us)),
                }
            }
            Move::Normal {
                from,
                capture,
                to,
                promotion: Some(new),
                ..
            } => self.promote(t, from, to, us, new, capture.map(|r| r.of(!us))),
            Move::EnPassant { from, to } => self.en_passant(t, from, to, us),
            Move::Castle { king, rook } => self.castle(t, king, rook, m, us),
            Move::Put { role, to } => self.place(t, to, role.of(us)),
        }
    }

    fn capture(&mut self, t: u64, from: Square, to: Square, piece: Piece, captured: Piece) {
        let x: f64 = self.rng.random();
        if x < self.h.capture_remove_first {
            // The captured piece off first, then an ordinary move onto the empty square.
            let t = self.remove(t, to, captured, true) + self.gap();
            self.lift(t, from, piece);
            self.travel(t, from, to, piece);
        } else if x < self.h.capture_remove_first + self.h.capture_hold_both {
            // Capturer in hand, captured piece picked up, capturer put down.
            self.lift(t, from, piece);
            let t = t + self.carry_time(from, to);
            self.lift(t, to, captured);
            let t = t + self.gap();
            self.place(t, to, piece);
        } else {
            // Capturer put down on top, then the captured piece taken away.
            self.lift(t, from, piece);
            let t = self.travel(t, from, to, piece) + self.gap();
            self.remove(t, to, captured, true);
        }
    }

    fn en_passant(&mut self, t: u64, from: Square, to: Square, us: Color) {
        let pawn = Role::Pawn.of(us);
        let victim = Role::Pawn.of(!us);
        let taken = Square::from_coords(to.file(), from.rank());
        let x: f64 = self.rng.random();
        if x < 0.4 {
            let t = self.remove(t, taken, victim, true) + self.gap();
            self.lift(t, from, pawn);
            self.travel(t, from, to, pawn);
        } else if x < 0.8 {
            self.lift(t, from, pawn);
            let t = self.travel(t, from, to, pawn) + self.gap();
            self.remove(t, taken, victim, true);
        } else {
            self.lift(t, from, pawn);
            let t = t + self.carry_time(from, taken);
            self.lift(t, taken, victim);
            let t = t + self.gap();
            self.place(t, to, pawn);
        }
    }

    fn promote(
        &mut self,
        t: u64,
        from: Square,
        to: Square,
        us: Color,
        new: Role,
        captured: Option<Piece>,
    ) {
        let pawn = Role::Pawn.of(us);
        let new = new.of(us);
        let mut t = t;
        let late = match captured {
            Some(c) if self.chance(0.6) => {
                t = self.remove(t, to, c, true) + self.gap();
                None
            }
            c => c,
        };
        let x: f64 = self.rng.random();
        if x < self.h.promo_swap {
            // The pawn goes to the last rank, then is exchanged.
            self.lift(t, from, pawn);
            t = self.travel(t, from, to, pawn);
            if let Some(c) = late {
                t += self.gap();
                t = self.remove(t, to, c, false);
            }
            if self.chance(0.7) {
                t += self.gap();
                self.lift(t, to, pawn);
                t += self.range(self.h.fetch);
                self.place(t, to, new);
            } else {
                t += self.range(self.h.fetch);
                self.place(t, to, new);
                t += self.gap();
                self.lift(t, to, pawn);
            }
        } else if x < self.h.promo_swap + self.h.promo_direct {
            // The pawn is put aside, then the new piece put down.
            self.lift(t, from, pawn);
            if let Some(c) = late {
                t += self.carry_time(from, to);
                self.lift(t, to, c);
            }
            t += self.range(self.h.fetch);
            self.place(t, to, new);
        } else {
            // The new piece (already in hand) first, then the pawn taken away.
            self.place(t, to, new);
            if let Some(c) = late {
                t += self.gap();
                self.lift(t, to, c);
            }
            t += self.gap();
            self.lift(t, from, pawn);
        }
    }

    fn castle(&mut self, t: u64, kf: Square, rf: Square, m: Move, us: Color) {
        let Some(side) = m.castling_side() else {
            return;
        };
        let king = Role::King.of(us);
        let rook = Role::Rook.of(us);
        let (kt, rt) = (side.king_to(us), side.rook_to(us));
        if kf == kt {
            // Chess960: the king stays. Guidelines II: king off, rook, king on.
            if self.chance(0.5) {
                self.lift(t, kf, king);
                let t = t + self.gap();
                self.lift(t, rf, rook);
                let t = self.travel(t, rf, rt, rook) + self.gap();
                self.place(t, kt, king);
            } else {
                self.lift(t, rf, rook);
                self.travel(t, rf, rt, rook);
            }
            return;
        }
        if rf == rt {
            // Chess960: the rook stays; it may be picked up and put back.
            self.lift(t, kf, king);
            let t = self.travel(t, kf, kt, king);
            if self.chance(0.3) {
                let t = t + self.gap();
                self.lift(t, rt, rook);
                let t = t + self.gap();
                self.place(t, rt, rook);
            }
            return;
        }
        let x: f64 = self.rng.random();
        if x < self.h.castle_king_first && kt != rf {
            self.lift(t, kf, king);
            let t = self.travel(t, kf, kt, king) + self.gap();
            self.lift(t, rf, rook);
            self.travel(t, rf, rt, rook);
        } else if x >= self.h.castle_king_first
            && x < self.h.castle_king_first + self.h.castle_rook_first
            && rt != kf
        {
            self.lift(t, rf, rook);
            let t = self.travel(t, rf, rt, rook) + self.gap();
            self.lift(t, kf, king);
            self.travel(t, kf, kt, king);
        } else {
            // Both lifted (king usually first), then put down in either order.
            let lifts = if self.chance(0.75) {
                [(kf, king), (rf, rook)]
            } else {
                [(rf, rook), (kf, king)]
            };
            self.lift(t, lifts[0].0, lifts[0].1);
            let t = t + self.gap();
            self.lift(t, lifts[1].0, lifts[1].1);
            let places = if self.chance(0.5) {
                [(kt, king), (rt, rook)]
            } else {
                [(rt, rook), (kt, king)]
            };
            let t = t + self.carry_time(kf, kt);
            self.place(t, places[0].0, places[0].1);
            let t = t + self.gap();
            self.place(t, places[1].0, places[1].1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::uci::UciMove;
    use shakmaty::{Board, CastlingMode};

    const CHESS960_SWAP: &str = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1";
    const CHESS960_KING_STAYS: &str = "nrbbqnkr/pppppppp/8/8/8/8/PPPPPPPP/NRBBQNKR w HBhb - 0 1";
    const CHESS960_ROOK_STAYS: &str = "bnqrkbnr/pppppppp/8/8/8/8/PPPPPPPP/BNQRKBNR w HDhd - 0 1";

    fn position(fen: Option<&str>, mode: CastlingMode) -> Chess {
        match fen {
            None => Chess::default(),
            Some(f) => f
                .parse::<Fen>()
                .expect("fen")
                .into_position(mode)
                .expect("position"),
        }
    }

    fn game(fen: Option<&str>, mode: CastlingMode, ucis: &str) -> (Chess, Vec<Move>) {
        let start = position(fen, mode);
        let mut pos = start.clone();
        let mut moves = Vec::new();
        for u in ucis.split_whitespace() {
            let m = u
                .parse::<UciMove>()
                .expect("uci")
                .to_move(&pos)
                .unwrap_or_else(|_| panic!("{u} is not legal"));
            pos.play_unchecked(m);
            moves.push(m);
        }
        (start, moves)
    }

    /// Hand-written games: captures, both castlings, en passant for both
    /// colours, promotions with and without capture (under-promotions
    /// included), and Chess960 castlings where king and rook swap, where they
    /// land on each other's squares, where the king stays and where the rook stays.
    fn written_games() -> Vec<(Chess, Vec<Move>)> {
        use CastlingMode::{Chess960, Standard};
        vec![
            game(
                None,
                Standard,
                "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5 d2d4 c7c6 g1f3 c8g4 f1e2 b8d7 e1g1 e8c8 \
                 c1d2 g4f3 e2f3 a5b6 d4d5 c6d5 c3d5 b6b2 d2c3 b2a2 a1a2",
            ),
            game(
                None,
                Standard,
                "e2e4 g8f6 e4e5 d7d5 e5d6 c7c5 h2h3 c5c4 b2b4 c4b3 a2b3 e7d6",
            ),
            game(
                Some("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1"),
                Standard,
                "b7a8n g2h1q e1e2 b2a1b g7h8q e8d7 h8d8 d7d8",
            ),
            game(
                Some("8/P3k2P/8/8/8/8/p3K2p/8 w - - 0 1"),
                Standard,
                "a7a8q h2h1r h7h8b a2a1n",
            ),
            game(
                Some(CHESS960_SWAP),
                Chess960,
                "f1g1 f8g8 e2e4 e7e5 g2g3 g7g6",
            ),
            game(
                Some(CHESS960_SWAP),
                Chess960,
                "c1b3 c8b6 e2e4 e7e5 d1e2 d8e7 f1e1 f8e8",
            ),
            game(Some(CHESS960_KING_STAYS), Chess960, "f1e3 f8e6 g1h1 g8h8"),
            game(
                Some(CHESS960_ROOK_STAYS),
                Chess960,
                "c2c3 c7c6 c1c2 c8c7 e1d1 e8d8",
            ),
        ]
    }

    /// A random legal game, preferring captures, promotions, castling and en
    /// passant when there are any, so that long runs see them all.
    fn random_game(start: &Chess, seed: u64, plies: usize) -> Vec<Move> {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
        let mut pos = start.clone();
        let mut moves = Vec::new();
        while moves.len() < plies && !pos.is_game_over() {
            let legal = pos.legal_moves();
            let special: Vec<Move> = legal
                .iter()
                .copied()
                .filter(|m| m.is_capture() || m.is_promotion() || m.is_castle())
                .collect();
            let m = if !special.is_empty() && rng.random_bool(0.5) {
                special[rng.random_range(0..special.len())]
            } else {
                legal[rng.random_range(0..legal.len())]
            };
            pos.play_unchecked(m);
            moves.push(m);
        }
        moves
    }

    fn random_games(seed: u64, plies: usize) -> Vec<(Chess, Vec<Move>)> {
        [
            position(None, CastlingMode::Standard),
            position(Some(CHESS960_SWAP), CastlingMode::Chess960),
            position(Some(CHESS960_KING_STAYS), CastlingMode::Chess960),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, start)| {
            let moves = random_game(&start, seed * 3 + i as u64, plies);
            (start, moves)
        })
        .collect()
    }

    fn config(seed: u64, pace: Pace, forget_press: f64) -> BlindConfig {
        BlindConfig {
            seed,
            pace,
            forget_press,
            rotated: seed % 2 == 1,
            white_clock: if seed.is_multiple_of(3) {
                ClockSide::Right
            } else {
                ClockSide::Left
            },
            start_ms: 1_000 + seed,
        }
    }

    fn side_of(cfg: &BlindConfig, color: Color) -> ClockSide {
        match color {
            Color::White => cfg.white_clock,
            Color::Black => cfg.white_clock.other(),
        }
    }

    fn in_frame(board: &Board, rotated: bool) -> Board {
        PhysicalBoard::from_board(board, rotated)
            .to_board()
            .expect("one piece a square")
    }

    /// Everything a script must satisfy, checked from the outside.
    fn check(start: &Chess, moves: &[Move], cfg: &BlindConfig, s: &BlindScript) {
        assert_eq!(s.plies.len(), moves.len());
        assert!(s.actions.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));

        let mut positions = vec![start.clone()];
        for &m in moves {
            let mut next = positions.last().expect("a position").clone();
            next.play_unchecked(m);
            positions.push(next);
        }
        let movers: Vec<ClockSide> = positions.iter().map(|p| side_of(cfg, p.turn())).collect();

        // The board: every action possible, stacks only in captures and
        // promotions, the right position at each release, one hand at a time.
        let mut board = PhysicalBoard::from_board(start.board(), cfg.rotated);
        let mut ply = 0;
        let mut last_board_ms: Option<u64> = None;
        let mut last_lift_ms: Option<u64> = None;
        for a in &s.actions {
            if matches!(a.action, PhysicalAction::PressClock(_)) {
                continue;
            }
            assert!(
                ply < moves.len(),
                "a board action after the last ply: {a:?}"
            );
            assert!(
                last_board_ms.is_none_or(|t| a.t_ms > t),
                "two board actions at {} ms",
                a.t_ms
            );
            last_board_ms = Some(a.t_ms);
            if let PhysicalAction::Place { square, piece } = a.action {
                if let Some(under) = board.single(square) {
                    let promotion_swap = under.color == piece.color
                        && (under.role == Role::Pawn) != (piece.role == Role::Pawn);
                    assert!(
                        under.color != piece.color || promotion_swap,
                        "{piece:?} put on {under:?} at {square} ({} ms)",
                        a.t_ms
                    );
                }
            }
            if let PhysicalAction::Lift { .. } = a.action {
                assert!(
                    last_lift_ms.is_none_or(|t| a.t_ms >= t + 30),
                    "two lifts within 30 ms at {} ms",
                    a.t_ms
                );
                last_lift_ms = Some(a.t_ms);
            }
            board
                .apply(a.action)
                .unwrap_or_else(|e| panic!("{e} at {} ms (ply {ply})", a.t_ms));
            if a.t_ms == s.plies[ply].released_ms {
                assert_eq!(
                    board.to_board(),
                    Some(in_frame(positions[ply + 1].board(), cfg.rotated)),
                    "ply {ply} released at {} ms on a wrong board",
                    a.t_ms
                );
                ply += 1;
                last_lift_ms = None;
            }
        }
        assert_eq!(ply, moves.len(), "not every release was a board action");
        assert!(!board.has_stack());
        assert_eq!(
            board.to_board(),
            Some(in_frame(
                positions.last().expect("a position").board(),
                cfg.rotated
            ))
        );
        assert!(s
            .plies
            .windows(2)
            .all(|w| w[0].released_ms < w[1].released_ms));

        // The clock: a tiny lever of our own.
        let mut lever: Option<ClockSide> = None;
        let mut changes: Vec<(u64, ClockSide)> = Vec::new();
        for a in &s.actions {
            if let PhysicalAction::PressClock(side) = a.action {
                if lever != Some(side) {
                    changes.push((a.t_ms, side));
                }
                lever = Some(side);
            }
        }
        assert_eq!(
            changes.first(),
            Some(&(cfg.start_ms, movers[0].other())),
            "the clock is started by the side not to move"
        );
        assert!(s.actions.first().is_some_and(|a| a.t_ms == cfg.start_ms));
        let mut claimed: Vec<(u64, ClockSide)> = s
            .plies
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.press_ms.map(|t| (t, movers[i])))
            .collect();
        claimed.sort_by_key(|c| c.0);
        assert_eq!(claimed, changes[1..], "press_ms disagrees with the lever");
    }

    fn scripts(seeds: std::ops::Range<u64>, plies: usize) -> usize {
        let mut checked = 0;
        for seed in seeds {
            let mut games = written_games();
            games.extend(random_games(seed, plies));
            for pace in [Pace::Normal, Pace::TimeTrouble] {
                for forget in [0.0, 0.02, 0.10] {
                    let cfg = config(seed, pace, forget);
                    for (start, moves) in &games {
                        let s = play(start, moves, &cfg);
                        check(start, moves, &cfg, &s);
                        checked += 1;
                    }
                }
            }
        }
        checked
    }

    #[test]
    fn blind_hand_scripts_are_physical_and_truthful() {
        assert!(scripts(0..24, 120) > 0);
    }

    #[test]
    fn blind_hand_written_games_cover_the_special_moves() {
        let (mut castles, mut swaps, mut en_passant, mut promotions, mut under_captures) =
            (0, 0, 0, 0, 0);
        for (start, moves) in written_games() {
            assert!(!moves.is_empty());
            let mut pos = start.clone();
            for m in moves {
                assert!(pos.is_legal(m));
                match m {
                    Move::Castle { king, rook } => {
                        castles += 1;
                        let side = m.castling_side().expect("castling");
                        let us = pos.turn();
                        if side.king_to(us) == rook && side.rook_to(us) == king {
                            swaps += 1;
                        }
                    }
                    Move::EnPassant { .. } => en_passant += 1,
                    Move::Normal {
                        promotion: Some(r),
                        capture,
                        ..
                    } => {
                        promotions += 1;
                        if r != Role::Queen && capture.is_some() {
                            under_captures += 1;
                        }
                    }
                    _ => {}
                }
                pos.play_unchecked(m);
            }
        }
        assert!(castles >= 8 && swaps >= 2 && en_passant >= 2);
        assert!(promotions >= 8 && under_captures >= 2);
    }

    #[test]
    fn blind_hand_is_deterministic() {
        let (start, moves) = &written_games()[0];
        let cfg = config(7, Pace::TimeTrouble, 0.1);
        assert_eq!(play(start, moves, &cfg), play(start, moves, &cfg));
        let other = BlindConfig { seed: 8, ..cfg };
        assert_ne!(play(start, moves, &cfg), play(start, moves, &other));
    }

    #[test]
    fn blind_hand_empty_game_only_starts_the_clock() {
        let cfg = config(3, Pace::Normal, 0.0);
        let s = play(&Chess::default(), &[], &cfg);
        assert!(s.plies.is_empty());
        assert_eq!(
            s.actions,
            vec![TimedAction {
                t_ms: cfg.start_ms,
                action: PhysicalAction::PressClock(cfg.white_clock.other()),
            }]
        );
    }

    /// Plies whose mover did not press at the usual moment (around the
    /// release): the forgotten presses, whether or not a late press followed.
    fn untimely(start: &Chess, cfg: &BlindConfig, s: &BlindScript) -> usize {
        let h = match cfg.pace {
            Pace::Normal => &NORMAL,
            Pace::TimeTrouble => &TIME_TROUBLE,
        };
        let mut turn = start.turn();
        let mut count = 0;
        for p in &s.plies {
            let side = side_of(cfg, turn);
            let from = p.released_ms.saturating_sub(h.press_early.1 + 20);
            let to = p.released_ms + h.press_delay.1;
            let pressed = s.actions.iter().any(|a| {
                a.action == PhysicalAction::PressClock(side) && (from..=to).contains(&a.t_ms)
            });
            if !pressed {
                count += 1;
            }
            turn = !turn;
        }
        count
    }

    #[test]
    fn blind_hand_forgets_at_the_configured_rate() {
        for pace in [Pace::Normal, Pace::TimeTrouble] {
            for forget in [0.0, 0.02, 0.10] {
                let (mut plies, mut missed) = (0usize, 0usize);
                for seed in 0..30 {
                    let cfg = config(seed, pace, forget);
                    for (start, moves) in random_games(seed + 1_000, 80) {
                        let s = play(&start, &moves, &cfg);
                        plies += moves.len();
                        missed += untimely(&start, &cfg, &s);
                    }
                }
                // Binomial mean ± 5 standard deviations.
                let n = plies as f64;
                let mean = n * forget;
                let band = 5.0 * (n * forget * (1.0 - forget)).sqrt();
                let missed = missed as f64;
                assert!(
                    (mean - band..=mean + band).contains(&missed),
                    "{pace:?} forget {forget}: {missed} of {plies} plies unpressed"
                );
            }
        }
    }

    #[test]
    fn blind_hand_time_trouble_gaps_are_in_range() {
        let (lo, hi) = TT_PRESS_TO_RELEASE_MS;
        let (mut gaps, mut brisk) = (0usize, 0usize);
        for seed in 0..30 {
            for forget in [0.0, 0.02, 0.10] {
                let cfg = config(seed, Pace::TimeTrouble, forget);
                let mut games = written_games();
                games.extend(random_games(seed + 2_000, 100));
                for (start, moves) in games {
                    let s = play(&start, &moves, &cfg);
                    for w in s.plies.windows(2) {
                        let Some(press) = w[0].press_ms else { continue };
                        let gap = w[1].released_ms - press;
                        assert!((lo..=hi).contains(&gap), "press → next release {gap} ms");
                        gaps += 1;
                        if (100..=2_500).contains(&gap) {
                            brisk += 1;
                        }
                    }
                }
            }
        }
        assert!(brisk * 10 >= gaps * 8, "{brisk} of {gaps} within 0.1–2.5 s");
    }

    /// Press → next release for one pace, opening plies and later ones.
    fn replies(pace: Pace) -> (Vec<u64>, Vec<u64>) {
        let (mut opening, mut later) = (Vec::new(), Vec::new());
        for seed in 0..20 {
            let cfg = config(seed, pace, 0.0);
            for (start, moves) in random_games(seed + 3_000, 60) {
                let s = play(&start, &moves, &cfg);
                for (i, w) in s.plies.windows(2).enumerate() {
                    if let Some(press) = w[0].press_ms {
                        let gap = w[1].released_ms - press;
                        if i < 14 {
                            opening.push(gap);
                        } else if i >= 20 {
                            later.push(gap);
                        }
                    }
                }
            }
        }
        opening.sort_unstable();
        later.sort_unstable();
        (opening, later)
    }

    fn median(v: &[u64]) -> u64 {
        v[v.len() / 2]
    }

    #[test]
    fn blind_hand_statistics() {
        // Normal pace: seconds in the opening, much longer later.
        let (opening, later) = replies(Pace::Normal);
        assert!((1_500..=6_000).contains(&median(&opening)));
        assert!(median(&later) >= 15_000);
        // Time trouble: well under two seconds.
        let (opening, later) = replies(Pace::TimeTrouble);
        assert!(median(&opening) <= 1_500 && median(&later) <= 1_500);

        // Habits seen from outside, over many games in time trouble with forgetting.
        let mut captures = 0usize;
        let mut stacked_captures = 0usize;
        let mut early_presses = 0usize;
        let mut presses = 0usize;
        let mut lifts_during_press = 0usize;
        let mut castlings = 0usize;
        let mut king_first = 0usize;
        let mut stray_places = 0usize;
        let mut late_presses = 0usize;
        let mut idle_presses = 0usize;
        for seed in 0..40 {
            let cfg = BlindConfig {
                rotated: false,
                ..config(seed, Pace::TimeTrouble, 0.10)
            };
            for (start, moves) in random_games(seed + 4_000, 100) {
                let s = play(&start, &moves, &cfg);
                let board_actions: Vec<&TimedAction> = s
                    .actions
                    .iter()
                    .filter(|a| !matches!(a.action, PhysicalAction::PressClock(_)))
                    .collect();
                let all_presses = s
                    .actions
                    .iter()
                    .filter(|a| matches!(a.action, PhysicalAction::PressClock(_)))
                    .count();
                idle_presses +=
                    all_presses - 1 - s.plies.iter().filter(|p| p.press_ms.is_some()).count();
                let mut pos = start.clone();
                let mut prev_release = 0;
                for (i, (&m, p)) in moves.iter().zip(&s.plies).enumerate() {
                    let mine: Vec<&&TimedAction> = board_actions
                        .iter()
                        .filter(|a| a.t_ms > prev_release && a.t_ms <= p.released_ms)
                        .collect();
                    let mut pb = PhysicalBoard::from_board(pos.board(), false);
                    for a in &mine {
                        if let PhysicalAction::Place { square, .. } = a.action {
                            if pb.pieces_on(square).next().is_some() && m.is_capture() {
                                stacked_captures += 1;
                            }
                            let dest = match m {
                                Move::Castle { .. } => true,
                                _ => square == m.to() || m.from() == Some(square),
                            };
                            if !dest {
                                stray_places += 1;
                            }
                        }
                        pb.apply(a.action).expect("physical");
                    }
                    if m.is_capture() {
                        captures += 1;
                    }
                    if let Move::Castle { king, .. } = m {
                        castlings += 1;
                        if matches!(mine[0].action, PhysicalAction::Lift { square, .. } if square == king)
                        {
                            king_first += 1;
                        }
                    }
                    if let Some(press) = p.press_ms {
                        presses += 1;
                        if press < p.released_ms {
                            early_presses += 1;
                        }
                        if press > p.released_ms + TIME_TROUBLE.press_delay.1 {
                            late_presses += 1;
                        }
                        if let Some(next) = s.plies.get(i + 1) {
                            let first_next = board_actions
                                .iter()
                                .find(|a| a.t_ms > p.released_ms)
                                .map(|a| a.t_ms)
                                .unwrap_or(next.released_ms);
                            if first_next <= press + 120 {
                                lifts_during_press += 1;
                            }
                        }
                    }
                    prev_release = p.released_ms;
                    pos.play_unchecked(m);
                }
            }
        }
        let frac = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        assert!((0.25..=0.75).contains(&frac(stacked_captures, captures)));
        assert!((0.12..=0.38).contains(&frac(early_presses, presses)));
        assert!((0.15..=0.5).contains(&frac(lifts_during_press, presses)));
        assert!(castlings > 20 && (0.4..=0.95).contains(&frac(king_first, castlings)));
        assert!(stray_places > 50, "slides and brushes: {stray_places}");
        assert!(late_presses > 0, "no late press");
        assert!(idle_presses > 0, "no press that did nothing");
    }
}
