//! Bounded search for the legal move sequences that turn a position into the board
//! a picture shows.
//!
//! A hand changes squares one at a time, so most pictures are transients that no
//! sequence explains; the search must reject those cheaply. Two exact bounds do most
//! of the work: one ply changes between 2 and 4 squares, and one ply captures at most
//! one enemy piece. Deeper than one ply, a move is only tried if it leaves or enters a
//! square that still differs from the target: a piece that moves away and comes back
//! inside one burst is not worth the cost (and would be a guess anyway).
//!
//! While the board is online every square change is reported, so a piece that a
//! burst puts on a square on the way (the knight of `Nxe5 dxe5` on e5) must have been
//! seen there. [`Seen`] records what each square showed since the last explained
//! picture; without that rule a piece lifted off the board reads as "captured by a
//! piece that came and went" in three or four plies.

use shakmaty::{Bitboard, Board, Chess, Color, Move, Piece, Position};

/// What the squares showed since the last explained picture: which pieces each
/// square showed (one bit per colour and role), which squares showed anything
/// (occupancy-only boards), and which were seen empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pieces: [u16; 64],
    occupied: Bitboard,
    emptied: Bitboard,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            pieces: [0; 64],
            occupied: Bitboard::EMPTY,
            emptied: Bitboard::EMPTY,
        }
    }
}

impl Seen {
    fn bit(p: Piece) -> u16 {
        1 << (usize::from(p.color == Color::White) * 6 + usize::from(p.role as u8) - 1)
    }

    /// Forget everything but what `target` shows.
    pub fn reset(&mut self, target: Target<'_>) {
        *self = Seen::default();
        self.add(target);
        self.emptied = Bitboard::EMPTY;
    }

    /// Records what `target` shows.
    pub fn add(&mut self, target: Target<'_>) {
        let occupied = match target {
            Target::Board(board) => {
                for (sq, p) in board {
                    self.pieces[usize::from(sq)] |= Seen::bit(p);
                }
                board.occupied()
            }
            Target::Occupancy(occ) => occ,
        };
        self.occupied |= occupied;
        self.emptied |= !occupied;
    }

    /// Squares seen empty since the reset (a captured piece taken off first).
    pub fn emptied(&self) -> Bitboard {
        self.emptied
    }

    fn has(&self, sq: shakmaty::Square, p: Piece, identity: bool) -> bool {
        if identity {
            self.pieces[usize::from(sq)] & Seen::bit(p) != 0
        } else {
            self.occupied.contains(sq)
        }
    }
}

/// What a picture says about the board: every piece (identity boards) or only
/// which squares are occupied (occupancy-only boards).
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    Board(&'a Board),
    Occupancy(Bitboard),
}

impl Target<'_> {
    /// Squares where `board` disagrees with the picture.
    pub fn diff(&self, board: &Board) -> Bitboard {
        match self {
            Target::Board(t) => diff(board, t),
            Target::Occupancy(occ) => board.occupied() ^ *occ,
        }
    }

    /// Whether `board` is what the picture shows.
    pub fn matches(&self, board: &Board) -> bool {
        match self {
            Target::Board(t) => *t == board,
            Target::Occupancy(occ) => board.occupied() == *occ,
        }
    }
}

/// Squares whose content differs between two boards.
pub fn diff(a: &Board, b: &Board) -> Bitboard {
    let mut d = Bitboard::EMPTY;
    for role in shakmaty::Role::ALL {
        d |= a.by_role(role) ^ b.by_role(role);
    }
    d | (a.by_color(Color::White) ^ b.by_color(Color::White))
}

/// Squares a move touches (origin, destination, rook squares of a castling, the
/// captured pawn of an en passant).
pub fn touched(m: Move) -> Bitboard {
    match m {
        Move::Normal { from, to, .. } => Bitboard::from(from) | Bitboard::from(to),
        Move::EnPassant { from, to } => {
            let captured = shakmaty::Square::from_coords(to.file(), from.rank());
            Bitboard::from(from) | Bitboard::from(to) | Bitboard::from(captured)
        }
        Move::Castle { king, rook } => Bitboard::from(king) | Bitboard::from(rook),
        Move::Put { to, .. } => Bitboard::from(to),
    }
}

/// All sequences of exactly `depth` legal plies from `pos` reaching `target`,
/// at most `limit` of them.
/// With `seen`, every piece a sequence puts down before its last ply must have
/// been seen on that square.
pub fn sequences(
    pos: &Chess,
    target: Target<'_>,
    depth: usize,
    limit: usize,
    seen: Option<&Seen>,
) -> Vec<Vec<Move>> {
    sequences_with_unseen(pos, target, depth, limit, seen, 0)
}

/// [`sequences`], letting up to `unseen` pieces put down before the last ply go
/// unseen on their square, each only if the very next ply captures it there (a
/// capture answered within one board scan: the board never reported the
/// capturing piece on its square).
pub fn sequences_with_unseen(
    pos: &Chess,
    target: Target<'_>,
    depth: usize,
    limit: usize,
    seen: Option<&Seen>,
    unseen: usize,
) -> Vec<Vec<Move>> {
    Ctx {
        seen,
        unseen,
        ..Ctx::new(target, limit)
    }
    .run(pos, depth)
}

/// The lines [`sequences`] (no `seen`) finds once one ply may touch no square where the
/// position differs from `target`: a piece that goes out and comes back
/// (Nf5 f6 Nh4 between two frames a second apart), which only a line
/// longer by two plies can show.
pub fn sequences_with_tempo(
    pos: &Chess,
    target: Target<'_>,
    depth: usize,
    limit: usize,
) -> Vec<Vec<Move>> {
    Ctx {
        tempo: 1,
        spend_tempo: true,
        ..Ctx::new(target, limit)
    }
    .run(pos, depth)
}

struct Ctx<'a> {
    target: Target<'a>,
    limit: usize,
    seen: Option<&'a Seen>,
    /// Unseen placements still allowed on this path.
    unseen: usize,
    /// The square of an unseen placement: the next ply must capture there.
    must_capture: Option<shakmaty::Square>,
    /// Plies still allowed that touch no differing square.
    tempo: usize,
    /// Only lines that used that allowance are wanted (the others are
    /// [`sequences`]' own).
    spend_tempo: bool,
    out: Vec<Vec<Move>>,
}

impl<'a> Ctx<'a> {
    fn new(target: Target<'a>, limit: usize) -> Ctx<'a> {
        Ctx {
            target,
            limit,
            seen: None,
            unseen: 0,
            must_capture: None,
            tempo: 0,
            spend_tempo: false,
            out: Vec::new(),
        }
    }

    /// The lines of exactly `depth` plies from `pos`.
    fn run(mut self, pos: &Chess, depth: usize) -> Vec<Vec<Move>> {
        let mut path = Vec::with_capacity(depth);
        dfs(&mut self, pos, depth, &mut path);
        self.out
    }
}

fn plausible(pos: &Chess, target: Target<'_>, left: usize, d: Bitboard) -> bool {
    let n = d.count();
    if n > 4 * left {
        return false;
    }
    let board = pos.board();
    match target {
        Target::Board(target) => {
            // Two plies change at least two squares (`Nxe5 dxe5` leaves e5 as it was).
            if left <= 2 && n < 2 {
                return false;
            }
            // Captures: each side loses at most one piece per enemy ply, and never
            // gains one (promotion changes a piece's role, not the count).
            let to_move = pos.turn();
            let (ours, theirs) = (left.div_ceil(2), left / 2);
            for (color, enemy_plies) in [(to_move, theirs), (!to_move, ours)] {
                let now = board.by_color(color).count();
                let then = target.by_color(color).count();
                if then > now || now - then > enemy_plies {
                    return false;
                }
            }
            true
        }
        Target::Occupancy(occ) => {
            // A capture changes a single square's occupancy.
            let (now, then) = (board.occupied().count(), occ.count());
            n >= 1 && then <= now && now - then <= left
        }
    }
}

fn dfs(ctx: &mut Ctx<'_>, pos: &Chess, left: usize, path: &mut Vec<Move>) {
    let d = ctx.target.diff(pos.board());
    if left == 0 {
        if d.is_empty() && !(ctx.spend_tempo && ctx.tempo > 0) {
            ctx.out.push(path.clone());
        }
        return;
    }
    if !plausible(pos, ctx.target, left, d) {
        return;
    }
    let must_capture = ctx.must_capture.take();
    for m in pos.legal_moves() {
        if ctx.out.len() >= ctx.limit {
            break;
        }
        if let Some(sq) = must_capture {
            if m.capture().is_none() || m.to() != sq {
                continue;
            }
        }
        let touched = touched(m);
        let free = (touched & d).is_empty();
        if free && ctx.tempo == 0 {
            continue;
        }
        let mut next = pos.clone();
        next.play_unchecked(m);
        let mut spent = false;
        if left > 1 {
            if let Some(seen) = ctx.seen {
                let identity = matches!(ctx.target, Target::Board(_));
                let unseen = touched.into_iter().find(|&sq| {
                    next.board()
                        .piece_at(sq)
                        .is_some_and(|p| !seen.has(sq, p, identity))
                });
                if let Some(sq) = unseen {
                    if ctx.unseen == 0 {
                        continue;
                    }
                    ctx.unseen -= 1;
                    ctx.must_capture = Some(sq);
                    spent = true;
                }
            }
        }
        path.push(m);
        ctx.tempo -= usize::from(free);
        dfs(ctx, &next, left - 1, path);
        ctx.tempo += usize::from(free);
        path.pop();
        ctx.must_capture = None;
        if spent {
            ctx.unseen += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, CastlingMode, EnPassantMode};

    fn after(ucis: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for u in ucis {
            let m = u
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&pos)
                .unwrap();
            pos.play_unchecked(m);
        }
        pos
    }

    #[test]
    fn finds_single_and_double_plies_and_rejects_transients() {
        let start = Chess::default();
        let one = after(&["e2e4"]);
        assert_eq!(
            sequences(&start, Target::Board(one.board()), 1, 4, None).len(),
            1
        );
        let two = after(&["e2e4", "e7e5"]);
        assert_eq!(
            sequences(&start, Target::Board(two.board()), 2, 4, None).len(),
            1
        );
        let mut lifted = start.board().clone();
        lifted.discard_piece_at(shakmaty::Square::E2);
        for depth in 1..=4 {
            assert!(sequences(&start, Target::Board(&lifted), depth, 4, None).is_empty());
        }
        let fen = Fen::from_position(&two, EnPassantMode::Legal);
        assert!(fen.into_position::<Chess>(CastlingMode::Standard).is_ok());
    }

    #[test]
    fn a_piece_out_and_back_is_found_only_with_the_tempo_allowed() {
        // 1. e4, then e5, Nf3, d6, Ng1: only Black's pieces differ.
        let pos = after(&["e2e4"]);
        let target = after(&["e2e4", "e7e5", "g1f3", "d7d6", "f3g1"]);
        let t = Target::Board(target.board());
        for depth in 1..=4 {
            assert!(sequences(&pos, t, depth, 8, None).is_empty());
        }
        let lines = sequences_with_tempo(&pos, t, 4, 8);
        assert!(!lines.is_empty());
        for line in &lines {
            let mut p = pos.clone();
            for &m in line {
                p.play_unchecked(m);
            }
            assert_eq!(p.board(), target.board());
        }
        // A line that needs no tempo is not reported again.
        let two = after(&["e2e4", "e7e5", "g1f3"]);
        assert!(sequences_with_tempo(&pos, Target::Board(two.board()), 2, 8).is_empty());
    }

    #[test]
    fn transpositions_are_all_reported() {
        let start = Chess::default();
        let three = after(&["g1f3", "g8f6", "b1c3"]);
        assert_eq!(
            sequences(&start, Target::Board(three.board()), 3, 8, None).len(),
            2
        );
    }

    #[test]
    fn unseen_intermediate_pieces_rule_out_a_burst() {
        // Nf3xe5 d6xe5: the knight must have been seen on e5.
        let pos = "r1bqkbnr/ppp2ppp/2np4/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 0 4"
            .parse::<Fen>()
            .unwrap()
            .into_position::<Chess>(CastlingMode::Standard)
            .unwrap();
        let mut after = pos.clone();
        for u in ["f3e5", "d6e5"] {
            let m = u
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&after)
                .unwrap();
            after.play_unchecked(m);
        }
        let mut seen = Seen::default();
        seen.reset(Target::Board(pos.board()));
        seen.add(Target::Board(after.board()));
        assert!(sequences(&pos, Target::Board(after.board()), 2, 4, Some(&seen)).is_empty());
        let mut mid = pos.clone();
        mid.play_unchecked(
            "f3e5"
                .parse::<shakmaty::uci::UciMove>()
                .unwrap()
                .to_move(&pos)
                .unwrap(),
        );
        seen.add(Target::Board(mid.board()));
        assert_eq!(
            sequences(&pos, Target::Board(after.board()), 2, 4, Some(&seen)).len(),
            1
        );
    }
}
