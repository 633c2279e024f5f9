//! Bounded search for the legal move sequences that turn a position into the board
//! a picture shows.
//!
//! A hand changes squares one at a time, so most pictures are transients that no
//! sequence explains; the search must reject those cheaply. Two exact bounds do most
//! of the work: one ply changes between 2 and 4 squares, and one ply captures at most
//! one enemy piece. Deeper than one ply, a move is only tried if it leaves or enters a
//! square that still differs from the target: a piece that moves away and comes back
//! inside one burst is not worth the cost (and would be a guess anyway).

use shakmaty::{Bitboard, Board, Chess, Color, Move, Position};

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
pub fn sequences(pos: &Chess, target: &Board, depth: usize, limit: usize) -> Vec<Vec<Move>> {
    let mut out = Vec::new();
    let mut path = Vec::with_capacity(depth);
    dfs(pos, target, depth, limit, &mut path, &mut out);
    out
}

fn plausible(pos: &Chess, target: &Board, left: usize, d: Bitboard) -> bool {
    let n = d.count();
    if n > 4 * left || (left == 1 && n < 2) || (left == 2 && n < 3) {
        return false;
    }
    // Captures: each side loses at most one piece per enemy ply, and never gains one
    // (promotion changes a piece's role, not the count).
    let to_move = pos.turn();
    let (ours, theirs) = (left.div_ceil(2), left / 2);
    let board = pos.board();
    for (color, enemy_plies) in [(to_move, theirs), (!to_move, ours)] {
        let now = board.by_color(color).count();
        let then = target.by_color(color).count();
        if then > now || now - then > enemy_plies {
            return false;
        }
    }
    true
}

fn dfs(
    pos: &Chess,
    target: &Board,
    left: usize,
    limit: usize,
    path: &mut Vec<Move>,
    out: &mut Vec<Vec<Move>>,
) {
    let d = diff(pos.board(), target);
    if left == 0 {
        if d.is_empty() {
            out.push(path.clone());
        }
        return;
    }
    if !plausible(pos, target, left, d) {
        return;
    }
    for m in pos.legal_moves() {
        if out.len() >= limit {
            return;
        }
        if (touched(m) & d).is_empty() {
            continue;
        }
        let mut next = pos.clone();
        next.play_unchecked(m);
        path.push(m);
        dfs(&next, target, left - 1, limit, path, out);
        path.pop();
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
        assert_eq!(sequences(&start, one.board(), 1, 4).len(), 1);
        let two = after(&["e2e4", "e7e5"]);
        assert_eq!(sequences(&start, two.board(), 2, 4).len(), 1);
        let mut lifted = start.board().clone();
        lifted.discard_piece_at(shakmaty::Square::E2);
        for depth in 1..=4 {
            assert!(sequences(&start, &lifted, depth, 4).is_empty());
        }
        let fen = Fen::from_position(&two, EnPassantMode::Legal);
        assert!(fen.into_position::<Chess>(CastlingMode::Standard).is_ok());
    }

    #[test]
    fn transpositions_are_all_reported() {
        let start = Chess::default();
        let three = after(&["g1f3", "g8f6", "b1c3"]);
        assert_eq!(sequences(&start, three.board(), 3, 8).len(), 2);
    }
}
