//! The hand model: how human hands turn a game into physical actions on a board.
//!
//! A move on an electronic board is not one event but a sequence of lifts and
//! placements (Article 4: the move is made when the hand releases the piece, and
//! Article 4.6 lets a promotion happen in any order), followed by a clock press
//! (Article 6). Trackers must reconstruct moves from exactly these sequences, so
//! the simulator produces them the way players do, with the orders and
//! hesitations listed in `reference/reconstruction.md` §4, seeded so a failure can
//! be replayed.
//!
//! Everything here is in *game* terms until the last step: squares are mapped to
//! the board's own frame ([`HandConfig::rotated`]) and colours to clock sides
//! ([`HandConfig::white_clock`]) when an action is emitted.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shakmaty::{attacks, Bitboard, Board, Chess, Color, Move, Piece, Position, Role, Square};

use crate::clock::ClockSide;

/// One thing a hand does to the board or the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhysicalAction {
    /// `piece` is taken off `square` (and held or put aside).
    Lift { square: Square, piece: Piece },
    /// `piece` is put down on `square`.
    Place { square: Square, piece: Piece },
    /// The player on `side` presses the clock button: that side goes down, the
    /// other side's time runs. The first press starts a waiting clock.
    PressClock(ClockSide),
}

/// An action at a moment (milliseconds since the simulation started).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimedAction {
    pub t_ms: u64,
    pub action: PhysicalAction,
}

/// A physically impossible action (a bug in whatever generated it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PhysicalError {
    #[error("cannot lift {piece:?} from {square}: it is not there")]
    NotThere { square: Square, piece: Piece },
    #[error("cannot place {piece:?} on {square}: two pieces already stand there")]
    SquareFull { square: Square, piece: Piece },
}

/// What really stands on each square. A square can briefly hold two pieces
/// (a capturing piece put down before the captured one is removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalBoard {
    squares: [[Option<Piece>; 2]; 64],
}

impl Default for PhysicalBoard {
    fn default() -> Self {
        PhysicalBoard {
            squares: [[None; 2]; 64],
        }
    }
}

impl PhysicalBoard {
    /// The pieces of `board`, one per square, in the board's own frame: with
    /// `rotated`, White sits at the far side (square `s` of the game stands on
    /// the board's square `s.rotate_180()`).
    pub fn from_board(board: &Board, rotated: bool) -> PhysicalBoard {
        let mut p = PhysicalBoard::default();
        for (sq, piece) in board.clone() {
            let sq = if rotated { sq.rotate_180() } else { sq };
            p.squares[usize::from(sq)][0] = Some(piece);
        }
        p
    }

    /// The pieces standing on `sq` (bottom first).
    pub fn pieces_on(&self, sq: Square) -> impl Iterator<Item = Piece> + '_ {
        self.squares[usize::from(sq)].iter().flatten().copied()
    }

    /// The piece on `sq` when exactly one stands there.
    pub fn single(&self, sq: Square) -> Option<Piece> {
        match self.squares[usize::from(sq)] {
            [Some(p), None] => Some(p),
            _ => None,
        }
    }

    /// Whether any square holds two pieces.
    pub fn has_stack(&self) -> bool {
        self.squares.iter().any(|s| s[1].is_some())
    }

    /// The position as a `shakmaty` board if no square holds two pieces.
    pub fn to_board(&self) -> Option<Board> {
        if self.has_stack() {
            return None;
        }
        let mut b = Board::empty();
        for sq in Square::ALL {
            if let Some(p) = self.single(sq) {
                b.set_piece_at(sq, p);
            }
        }
        Some(b)
    }

    /// Applies a board action; clock presses do not touch the board.
    pub fn apply(&mut self, action: PhysicalAction) -> Result<(), PhysicalError> {
        match action {
            PhysicalAction::Lift { square, piece } => {
                let slot = &mut self.squares[usize::from(square)];
                // Take the top one when both match: it was put down last.
                let i = if slot[1] == Some(piece) {
                    1
                } else if slot[0] == Some(piece) {
                    0
                } else {
                    return Err(PhysicalError::NotThere { square, piece });
                };
                slot[i] = None;
                if slot[0].is_none() {
                    slot[0] = slot[1].take();
                }
                Ok(())
            }
            PhysicalAction::Place { square, piece } => {
                let slot = &mut self.squares[usize::from(square)];
                if slot[0].is_none() {
                    slot[0] = Some(piece);
                } else if slot[1].is_none() {
                    slot[1] = Some(piece);
                } else {
                    return Err(PhysicalError::SquareFull { square, piece });
                }
                Ok(())
            }
            PhysicalAction::PressClock(_) => Ok(()),
        }
    }
}

/// Relative weights of the ways a capture is done.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaptureOrder {
    /// The captured piece is taken off first, then the capturing piece moves in.
    pub captured_first: f64,
    /// The capturing piece is lifted and held, the captured piece removed, then
    /// the capturing piece put down.
    pub captured_last: f64,
    /// The capturing piece is put down on the captured one (two pieces on one
    /// square for a moment), which is then swept off.
    pub swept: f64,
}

/// Relative weights of the ways castling is done.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CastlingOrder {
    pub king_first: f64,
    pub rook_first: f64,
    /// Both pieces in the air together, put down in either order.
    pub both_lifted: f64,
}

/// Relative weights of the ways en passant is done.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnPassantOrder {
    pub captured_first: f64,
    /// The capturing pawn is put down diagonally, then the captured pawn removed.
    pub captured_last: f64,
    /// The capturing pawn is held while the captured pawn is removed.
    pub captured_between: f64,
}

/// Relative weights of the Article 4.6 promotion orders.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PromotionOrder {
    /// The pawn is taken off, the new piece put on the promotion square.
    pub pawn_never_on_last_rank: f64,
    /// The pawn is put on the promotion square, then exchanged.
    pub pawn_then_exchanged: f64,
    /// The new piece is put down before the pawn is removed.
    pub new_piece_first: f64,
}

/// How the hands behave. Times are milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct HandConfig {
    pub seed: u64,
    /// Mean thinking time per move at `speed` 1 (opening moves are quicker).
    pub think_ms: u64,
    /// Thinking-time factor: 1 is real time, 0.01 a hundred times faster.
    pub speed: f64,
    /// Hand-motion factor: 1 is a human hand, below 1 faster.
    pub hand_speed: f64,
    /// When the clock is started (the player not to move presses).
    pub start_ms: u64,
    pub capture: CaptureOrder,
    pub castling: CastlingOrder,
    pub en_passant: EnPassantOrder,
    pub promotion: PromotionOrder,
    /// Chance that a Chess960 castling is done with the king taken off the board
    /// while the rook is moved.
    pub chess960_king_off: f64,
    /// Chance that a rook, bishop, queen or pawn is slid over the squares between.
    pub slide: f64,
    /// Chance, per intermediate square of a slide that would itself be a legal
    /// destination, of a pause there (under a second).
    pub slide_pause: f64,
    /// Chance per move of adjusting one of one's own pieces before moving.
    pub adjust: f64,
    /// Chance that the opponent replies before the mover presses the clock.
    pub early_reply: f64,
    /// Chance that the mover never presses the clock for a move (time trouble).
    /// The opponent plays on; his own press then does nothing (his side is
    /// already down) and the clock changes only at the next real press.
    pub forget_press: f64,
    /// Chance per move of first making another quiet move and taking it back
    /// before the real one (a move changed before the clock press).
    pub retract: f64,
    /// Chance per move of knocking a piece onto a neighbouring empty square and
    /// putting it back a moment later.
    pub knock: f64,
    /// Chance per move of holding the piece in the air for several seconds.
    pub hover: f64,
    /// White sits at the far side from the connector (the board turned 180°).
    pub rotated: bool,
    /// The side of the clock White uses.
    pub white_clock: ClockSide,
}

impl Default for HandConfig {
    /// Realistic tournament play: careful hands, most captures and castlings
    /// done the textbook way, occasional slides and adjustments.
    fn default() -> Self {
        HandConfig {
            seed: 0,
            think_ms: 20_000,
            speed: 1.0,
            hand_speed: 1.0,
            start_ms: 1_000,
            capture: CaptureOrder {
                captured_first: 0.55,
                captured_last: 0.35,
                swept: 0.10,
            },
            castling: CastlingOrder {
                king_first: 0.75,
                rook_first: 0.10,
                both_lifted: 0.15,
            },
            en_passant: EnPassantOrder {
                captured_first: 0.3,
                captured_last: 0.4,
                captured_between: 0.3,
            },
            promotion: PromotionOrder {
                pawn_never_on_last_rank: 0.5,
                pawn_then_exchanged: 0.35,
                new_piece_first: 0.15,
            },
            chess960_king_off: 0.5,
            slide: 0.08,
            slide_pause: 0.15,
            adjust: 0.03,
            early_reply: 0.01,
            forget_press: 0.0,
            retract: 0.002,
            knock: 0.002,
            hover: 0.02,
            rotated: false,
            white_clock: ClockSide::Left,
        }
    }
}

/// What [`play`] produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandScript {
    /// All actions, in time order.
    pub actions: Vec<TimedAction>,
    /// For each move, the time its last piece was released (the move is *made*,
    /// Article 4.7) and the time of the mover's clock press (the release time
    /// again when he never pressed).
    pub made_at: Vec<(u64, u64)>,
    /// For each move, whether the mover's own press moved the clock's lever (a
    /// forgotten press, or a press on the side already down after the opponent
    /// forgot, did not).
    pub pressed: Vec<bool>,
}

/// Picks an index by weights (all-zero weights pick the first).
fn pick(rng: &mut SmallRng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().map(|w| w.max(0.0)).sum();
    if total <= 0.0 {
        return 0;
    }
    let mut x = rng.random_range(0.0..total);
    for (i, w) in weights.iter().enumerate() {
        let w = w.max(0.0);
        if x < w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

struct Hands<'a> {
    cfg: &'a HandConfig,
    rng: SmallRng,
    t: u64,
    out: Vec<TimedAction>,
}

impl Hands<'_> {
    fn sq(&self, sq: Square) -> Square {
        if self.cfg.rotated {
            sq.rotate_180()
        } else {
            sq
        }
    }

    fn side(&self, c: Color) -> ClockSide {
        if c == Color::White {
            self.cfg.white_clock
        } else {
            self.cfg.white_clock.other()
        }
    }

    /// A hand motion of `lo..hi` ms at human speed.
    fn wait(&mut self, lo: u64, hi: u64) {
        let ms = self.rng.random_range(lo..=hi) as f64 * self.cfg.hand_speed;
        self.t += (ms.round() as u64).max(1);
    }

    fn emit(&mut self, action: PhysicalAction) {
        self.out.push(TimedAction {
            t_ms: self.t,
            action,
        });
    }

    fn lift(&mut self, sq: Square, piece: Piece) {
        let square = self.sq(sq);
        self.emit(PhysicalAction::Lift { square, piece });
    }

    fn place(&mut self, sq: Square, piece: Piece) {
        let square = self.sq(sq);
        self.emit(PhysicalAction::Place { square, piece });
    }

    fn think(&mut self, ply: usize) {
        // Exponential thinking times, quicker in the opening.
        let u: f64 = self.rng.random_range(f64::EPSILON..1.0);
        let mut ms = -u.ln() * self.cfg.think_ms as f64;
        if ply < 16 {
            ms *= 0.3;
        }
        let ms = (ms * self.cfg.speed).max(0.0);
        self.t += ms.round() as u64;
        // Whatever the speed, a move starts a little after the last event.
        self.wait(150, 400);
    }

    /// Moves `piece` from `from` to `to` with the piece lifted already or not.
    /// With a slide the piece touches the squares between.
    fn carry(&mut self, pos: &Chess, piece: Piece, from: Square, to: Square, slide: bool) {
        if slide {
            let mut mids: Vec<Square> = attacks::between(from, to).into_iter().collect();
            mids.sort_by_key(|s| s.distance(from));
            for mid in mids {
                self.wait(60, 180);
                self.place(mid, piece);
                let legal_here = pos.legal_moves().iter().any(
                    |m| matches!(m, Move::Normal { from: f, to: t, .. } if *f == from && *t == mid),
                );
                if legal_here && self.rng.random_bool(self.cfg.slide_pause) {
                    self.wait(250, 950);
                } else {
                    self.wait(40, 120);
                }
                self.lift(mid, piece);
            }
            self.wait(60, 180);
        } else if self.rng.random_bool(self.cfg.hover) {
            self.wait(2_000, 8_000);
        } else {
            self.wait(250, 800);
        }
    }

    /// Another quiet move made and taken back before the real move.
    fn retract(&mut self, pos: &Chess, m: &Move) {
        let quiet: Vec<Move> = pos
            .legal_moves()
            .into_iter()
            .filter(|x| {
                x != m
                    && matches!(
                        x,
                        Move::Normal {
                            capture: None,
                            promotion: None,
                            ..
                        }
                    )
            })
            .collect();
        if quiet.is_empty() {
            return;
        }
        let alt = quiet[self.rng.random_range(0..quiet.len())];
        let (Some(from), to) = (alt.from(), alt.to()) else {
            return;
        };
        let piece = Piece {
            color: pos.turn(),
            role: alt.role(),
        };
        self.lift(from, piece);
        self.wait(250, 800);
        self.place(to, piece);
        self.wait(500, 2_500);
        self.lift(to, piece);
        self.wait(250, 800);
        self.place(from, piece);
        self.wait(500, 2_000);
    }

    /// A piece knocked onto a neighbouring empty square and put back.
    fn knock(&mut self, pos: &Chess) {
        let board = pos.board();
        let candidates: Vec<(Square, Square)> = board
            .occupied()
            .into_iter()
            .flat_map(|sq| {
                (attacks::king_attacks(sq) & !board.occupied())
                    .into_iter()
                    .map(move |to| (sq, to))
            })
            .collect();
        if candidates.is_empty() {
            return;
        }
        let (sq, to) = candidates[self.rng.random_range(0..candidates.len())];
        let Some(piece) = board.piece_at(sq) else {
            return;
        };
        self.lift(sq, piece);
        self.wait(40, 150);
        self.place(to, piece);
        self.wait(500, 3_000);
        self.lift(to, piece);
        self.wait(200, 600);
        self.place(sq, piece);
        self.wait(300, 1_000);
    }

    fn wants_slide(&mut self, role: Role, from: Square, to: Square) -> bool {
        let slider = matches!(role, Role::Rook | Role::Bishop | Role::Queen)
            || (role == Role::Pawn && from.distance(to) == 2 && from.file() == to.file());
        slider && !attacks::between(from, to).is_empty() && self.rng.random_bool(self.cfg.slide)
    }

    /// A quiet or capturing move of one piece, with an optional promotion.
    fn normal(
        &mut self,
        pos: &Chess,
        from: Square,
        to: Square,
        capture: Option<Role>,
        promotion: Option<Role>,
    ) {
        let us = pos.turn();
        let piece = Piece {
            color: us,
            role: pos.board().role_at(from).unwrap_or(Role::Pawn),
        };
        let captured = capture.map(|role| Piece { color: !us, role });
        let slide = self.wants_slide(piece.role, from, to);
        let Some(new_role) = promotion else {
            self.move_piece(pos, piece, from, to, captured, slide);
            return;
        };
        let new_piece = Piece {
            color: us,
            role: new_role,
        };
        let o = self.cfg.promotion;
        match pick(
            &mut self.rng,
            &[
                o.pawn_never_on_last_rank,
                o.pawn_then_exchanged,
                o.new_piece_first,
            ],
        ) {
            0 => {
                // The pawn goes off the board; the new piece is what lands.
                self.move_piece_as(pos, piece, new_piece, from, to, captured, false);
            }
            1 => {
                self.move_piece(pos, piece, from, to, captured, false);
                self.wait(300, 900);
                self.lift(to, piece);
                self.wait(300, 1200);
                self.place(to, new_piece);
            }
            _ => {
                if let Some(c) = captured {
                    self.lift(to, c);
                    self.wait(300, 800);
                }
                self.place(to, new_piece);
                self.wait(200, 700);
                self.lift(from, piece);
            }
        }
    }

    fn move_piece(
        &mut self,
        pos: &Chess,
        piece: Piece,
        from: Square,
        to: Square,
        captured: Option<Piece>,
        slide: bool,
    ) {
        self.move_piece_as(pos, piece, piece, from, to, captured, slide);
    }

    /// Lifts `piece` from `from` and puts `lands` (the same piece, or the new
    /// piece of a promotion) on `to`, removing `captured` in one of the orders.
    #[allow(clippy::too_many_arguments)]
    fn move_piece_as(
        &mut self,
        pos: &Chess,
        piece: Piece,
        lands: Piece,
        from: Square,
        to: Square,
        captured: Option<Piece>,
        slide: bool,
    ) {
        let Some(c) = captured else {
            self.lift(from, piece);
            self.carry(pos, piece, from, to, slide);
            self.place(to, lands);
            return;
        };
        let o = self.cfg.capture;
        match pick(&mut self.rng, &[o.captured_first, o.captured_last, o.swept]) {
            0 => {
                self.lift(to, c);
                self.wait(200, 700);
                self.lift(from, piece);
                self.carry(pos, piece, from, to, slide);
                self.place(to, lands);
            }
            1 => {
                self.lift(from, piece);
                self.carry(pos, piece, from, to, slide);
                self.lift(to, c);
                self.wait(150, 600);
                self.place(to, lands);
            }
            _ => {
                self.lift(from, piece);
                self.carry(pos, piece, from, to, slide);
                self.place(to, lands);
                self.wait(80, 400);
                self.lift(to, c);
            }
        }
    }

    fn en_passant(&mut self, pos: &Chess, from: Square, to: Square) {
        let us = pos.turn();
        let pawn = us.pawn();
        let victim_sq = Square::from_coords(to.file(), from.rank());
        let victim = (!us).pawn();
        let o = self.cfg.en_passant;
        match pick(
            &mut self.rng,
            &[o.captured_first, o.captured_last, o.captured_between],
        ) {
            0 => {
                self.lift(victim_sq, victim);
                self.wait(200, 700);
                self.lift(from, pawn);
                self.wait(250, 700);
                self.place(to, pawn);
            }
            1 => {
                self.lift(from, pawn);
                self.wait(250, 700);
                self.place(to, pawn);
                self.wait(200, 900);
                self.lift(victim_sq, victim);
            }
            _ => {
                self.lift(from, pawn);
                self.wait(150, 500);
                self.lift(victim_sq, victim);
                self.wait(150, 500);
                self.place(to, pawn);
            }
        }
    }

    fn castle(&mut self, pos: &Chess, king_sq: Square, rook_sq: Square, chess960: bool) {
        let us = pos.turn();
        let side = if rook_sq.file() > king_sq.file() {
            shakmaty::CastlingSide::KingSide
        } else {
            shakmaty::CastlingSide::QueenSide
        };
        let king_to = side.king_to(us);
        let rook_to = side.rook_to(us);
        let king = us.king();
        let rook = us.rook();
        // Pieces that actually move (in Chess960 one of them may stay put).
        let mut parts: Vec<(Piece, Square, Square)> = Vec::new();
        if king_sq != king_to {
            parts.push((king, king_sq, king_to));
        }
        if rook_sq != rook_to {
            parts.push((rook, rook_sq, rook_to));
        }
        if parts.len() == 1 {
            let (p, f, t) = parts[0];
            self.lift(f, p);
            self.wait(250, 800);
            self.place(t, p);
            return;
        }
        // When one piece's destination is the other's origin both must be in
        // the air (or one off the board) before anything is put down.
        let conflict = king_to == rook_sq || rook_to == king_sq;
        let king_off = chess960 && self.rng.random_bool(self.cfg.chess960_king_off);
        let o = self.cfg.castling;
        let order = if conflict || king_off {
            3
        } else {
            pick(&mut self.rng, &[o.king_first, o.rook_first, o.both_lifted])
        };
        match order {
            0 | 1 => {
                let (a, b) = if order == 0 { (0, 1) } else { (1, 0) };
                for (p, f, t) in [parts[a], parts[b]] {
                    self.lift(f, p);
                    self.wait(250, 800);
                    self.place(t, p);
                    self.wait(150, 500);
                }
            }
            2 => {
                self.lift(king_sq, king);
                self.wait(100, 400);
                self.lift(rook_sq, rook);
                self.wait(250, 700);
                let first_king = self.rng.random_bool(0.5);
                let seq = if first_king {
                    [(king, king_to), (rook, rook_to)]
                } else {
                    [(rook, rook_to), (king, king_to)]
                };
                for (p, t) in seq {
                    self.place(t, p);
                    self.wait(100, 400);
                }
            }
            _ => {
                // The king leaves the board, the rook goes across, the king comes back.
                self.lift(king_sq, king);
                self.wait(200, 500);
                self.lift(rook_sq, rook);
                self.wait(250, 700);
                self.place(rook_to, rook);
                self.wait(200, 600);
                self.place(king_to, king);
            }
        }
    }

    /// Lift-and-put-back of one of the mover's pieces not involved in the move.
    fn adjust(&mut self, pos: &Chess, m: &Move) {
        let ours: Vec<Square> = (pos.board().by_color(pos.turn()) & !Bitboard::from_iter(m.from()))
            .into_iter()
            .collect();
        if ours.is_empty() {
            return;
        }
        let sq = ours[self.rng.random_range(0..ours.len())];
        if let Some(p) = pos.board().piece_at(sq) {
            self.lift(sq, p);
            self.wait(150, 500);
            self.place(sq, p);
            self.wait(300, 1500);
        }
    }

    fn make_move(&mut self, pos: &Chess, m: &Move, chess960: bool) {
        match *m {
            Move::Normal {
                from,
                to,
                capture,
                promotion,
                ..
            } => self.normal(pos, from, to, capture, promotion),
            Move::EnPassant { from, to } => self.en_passant(pos, from, to),
            Move::Castle { king, rook } => self.castle(pos, king, rook, chess960),
            // Drops do not exist in chess; nothing to do with the hands.
            Move::Put { .. } => {}
        }
    }
}

/// Plays `moves` from `start` with human hands: the clock is started at
/// [`HandConfig::start_ms`] by the player not to move, then each move is thought
/// about, made and followed by the mover's clock press. Every move must be legal
/// in turn (as a loaded [`Game`](../../eboard_bridge/games/struct.Game.html)'s are);
/// an illegal move ends the script there.
pub fn play(start: &Chess, moves: &[Move], cfg: &HandConfig) -> HandScript {
    let chess960 = start.castles().mode() == shakmaty::CastlingMode::Chess960;
    let mut h = Hands {
        cfg,
        rng: SmallRng::seed_from_u64(cfg.seed),
        t: cfg.start_ms,
        out: Vec::new(),
    };
    let mut made_at = Vec::with_capacity(moves.len());
    let mut pressed = Vec::with_capacity(moves.len());
    let starter = h.side(!start.turn());
    h.emit(PhysicalAction::PressClock(starter));
    // The side whose button is down (its clock stands): a press there does nothing.
    let mut down = starter;
    let mut press = |h: &mut Hands<'_>, side: ClockSide| -> bool {
        h.emit(PhysicalAction::PressClock(side));
        let moved = side != down;
        down = side;
        moved
    };
    let mut pos = start.clone();
    // A press held back because the opponent replied first: (side, index in made_at).
    let mut pending_press: Option<(ClockSide, usize)> = None;
    for (ply, m) in moves.iter().enumerate() {
        if !pos.is_legal(*m) {
            break;
        }
        let mover = pos.turn();
        if pending_press.is_some() {
            // Replying at once, before the opponent has pressed.
            h.wait(300, 900);
        } else {
            h.think(ply);
        }
        if h.rng.random_bool(cfg.knock) {
            h.knock(&pos);
        }
        if h.rng.random_bool(cfg.adjust) {
            h.adjust(&pos, m);
        }
        if h.rng.random_bool(cfg.retract) {
            h.retract(&pos, m);
        }
        h.make_move(&pos, m, chess960);
        let made = h.t;
        made_at.push((made, made));
        pressed.push(false);
        pos.play_unchecked(*m);
        let is_last = ply + 1 == moves.len();
        if let Some((side, i)) = pending_press.take() {
            // The forgetful player presses now, then the replier.
            h.wait(200, 600);
            pressed[i] = press(&mut h, side);
            made_at[i].1 = h.t;
        } else if !is_last && cfg.forget_press > 0.0 && h.rng.random_bool(cfg.forget_press) {
            // (No draw without forgotten presses: seeded scripts stay as they were.)
            // Never pressed: the opponent plays on with this clock still running.
            continue;
        } else if !is_last && h.rng.random_bool(cfg.early_reply) {
            pending_press = Some((h.side(mover), ply));
            continue;
        }
        h.wait(200, 700);
        let side = h.side(mover);
        pressed[ply] = press(&mut h, side);
        made_at[ply].1 = h.t;
    }
    let mut actions = h.out;
    // Hand times only grow, but keep the promise explicit.
    actions.sort_by_key(|a| a.t_ms);
    HandScript {
        actions,
        made_at,
        pressed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn moves(start: &Chess, uci: &str) -> Vec<Move> {
        let mut pos = start.clone();
        uci.split_whitespace()
            .map(|u| {
                let m = u.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
                pos.play_unchecked(m);
                m
            })
            .collect()
    }

    fn replay(start: &Chess, script: &HandScript, rotated: bool) -> PhysicalBoard {
        let mut b = PhysicalBoard::from_board(start.board(), rotated);
        for a in &script.actions {
            b.apply(a.action).unwrap();
        }
        b
    }

    #[test]
    fn every_order_reaches_the_final_position() {
        let start = Chess::default();
        // Captures, castling both ways, en passant, promotion with capture.
        let ms = moves(
            &start,
            "e2e4 d7d5 e4d5 c7c5 d5c6 d8d2 b1d2 e7e5 g1f3 f8d6 f1c4 g8f6 e1g1 e8g8 c6b7 c8d7 b7a8q b8c6",
        );
        let mut fin = start.clone();
        for m in &ms {
            fin.play_unchecked(*m);
        }
        for seed in 0..200 {
            for rotated in [false, true] {
                let cfg = HandConfig {
                    seed,
                    rotated,
                    slide: 0.5,
                    adjust: 0.3,
                    early_reply: 0.2,
                    castling: CastlingOrder {
                        king_first: 1.0,
                        rook_first: 1.0,
                        both_lifted: 1.0,
                    },
                    capture: CaptureOrder {
                        captured_first: 1.0,
                        captured_last: 1.0,
                        swept: 1.0,
                    },
                    en_passant: EnPassantOrder {
                        captured_first: 1.0,
                        captured_last: 1.0,
                        captured_between: 1.0,
                    },
                    promotion: PromotionOrder {
                        pawn_never_on_last_rank: 1.0,
                        pawn_then_exchanged: 1.0,
                        new_piece_first: 1.0,
                    },
                    ..HandConfig::default()
                };
                let script = play(&start, &ms, &cfg);
                assert_eq!(script.made_at.len(), ms.len());
                let b = replay(&start, &script, rotated);
                let want = PhysicalBoard::from_board(fin.board(), rotated);
                assert_eq!(b, want, "seed {seed} rotated {rotated}");
                let presses = script
                    .actions
                    .iter()
                    .filter(|a| matches!(a.action, PhysicalAction::PressClock(_)))
                    .count();
                assert_eq!(presses, ms.len() + 1);
            }
        }
    }

    #[test]
    fn presses_alternate_sides_and_white_starts_after_black_presses() {
        let start = Chess::default();
        let ms = moves(&start, "e2e4 e7e5 g1f3");
        let script = play(
            &start,
            &ms,
            &HandConfig {
                early_reply: 0.0,
                ..HandConfig::default()
            },
        );
        let sides: Vec<ClockSide> = script
            .actions
            .iter()
            .filter_map(|a| match a.action {
                PhysicalAction::PressClock(s) => Some(s),
                _ => None,
            })
            .collect();
        use ClockSide::*;
        assert_eq!(sides, [Right, Left, Right, Left]);
    }

    #[test]
    fn lifting_a_missing_piece_is_refused() {
        let mut b = PhysicalBoard::from_board(Chess::default().board(), false);
        let err = b
            .apply(PhysicalAction::Lift {
                square: Square::E4,
                piece: Color::White.pawn(),
            })
            .unwrap_err();
        assert!(matches!(err, PhysicalError::NotThere { .. }));
        for _ in 0..2 {
            b.apply(PhysicalAction::Place {
                square: Square::E4,
                piece: Color::White.queen(),
            })
            .unwrap();
        }
        assert!(b
            .apply(PhysicalAction::Place {
                square: Square::E4,
                piece: Color::White.queen()
            })
            .is_err());
        assert!(b.has_stack());
    }

    #[test]
    fn chess960_castling_with_swapped_squares() {
        // King b1, rook c1: O-O-O puts the king on c1 and the rook on d1... here
        // king f1, rook g1 short castle: king to g1 (the rook's square), rook to f1
        // (the king's square): both must be in the air.
        let start: Chess = "4k3/8/8/8/8/8/8/5KR1 w G - 0 1"
            .parse::<shakmaty::fen::Fen>()
            .unwrap()
            .into_position(shakmaty::CastlingMode::Chess960)
            .unwrap();
        let ms = moves(&start, "f1g1");
        assert!(matches!(ms[0], Move::Castle { .. }));
        for seed in 0..50 {
            let script = play(
                &start,
                &ms,
                &HandConfig {
                    seed,
                    ..HandConfig::default()
                },
            );
            let b = replay(&start, &script, false);
            let mut fin = start.clone();
            fin.play_unchecked(ms[0]);
            assert_eq!(b.to_board().unwrap(), *fin.board());
        }
    }
}
