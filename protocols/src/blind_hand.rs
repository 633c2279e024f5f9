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
//! | think, press → first touch | plies 0–15: 600~8000; later 12 % 1500..6000, else 5000~240000 | 35 % 20..120 after the opponent's press (he lifts while the press is still going on; never before the last piece of the previous move is released + 20), else 250~1800 |
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
//! | after a forgotten press: opponent waits / the forgetful player notices during the opponent's think | 20 % / 60 %, after 2000~40000 | 5 % / 15 %, after 300~2500 |
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
pub const TT_PRESS_TO_RELEASE_MS: (u64, u64) = (70, 5_000);

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
                    self.log_range(250, 1_800)
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
            t += self.range(self.h.slide_step);
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
