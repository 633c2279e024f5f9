//! Start pictures: which orientation the board is used in, and whether a picture
//! is the standard start, one of the 960 Chess960 starts, or neither.

use eboard_protocols::Picture;
use shakmaty::{Bitboard, Board, Color, Rank};

pub use crate::chess960::{back_rank_of, start_number, start_position, STANDARD_START};

/// Quarter turns that bring a raw picture (board frame) into the game frame.
///
/// 0 = used as built, 2 = turned 180° (legal, only the connector side changes),
/// 1 and 3 = turned 90° (against Article 2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Orientation(u8);

impl Orientation {
    /// The board used as built.
    pub const NORMAL: Orientation = Orientation(0);

    /// Every orientation, most likely first (normal, then 180°, then the 90° ones).
    pub const ALL: [Orientation; 4] = [
        Orientation(0),
        Orientation(2),
        Orientation(1),
        Orientation(3),
    ];

    /// The raw picture seen in the game frame.
    pub fn apply(self, p: &Picture) -> Picture {
        match self.0 {
            0 => p.clone(),
            1 => p.rotated_90(),
            2 => p.rotated_180(),
            _ => p.rotated_90().rotated_180(),
        }
    }

    /// This orientation with the board turned half round.
    pub fn turned_180(self) -> Orientation {
        Orientation((self.0 + 2) % 4)
    }

    /// Turned 180°: White sits at the connector's right.
    pub fn is_rotated_180(self) -> bool {
        self.0 == 2
    }

    /// Turned by a quarter: the light corner is on the wrong side (Article 7.2.2).
    pub fn is_quarter_turn(self) -> bool {
        self.0 % 2 == 1
    }
}

/// The picture is "almost" a start: pawns and empty middle in place, eight white
/// pieces on the first rank and eight black on the last, but not a valid start.
/// That is a wrong initial position (Article 7.2.1) rather than pieces being set up.
pub fn looks_like_wrong_start(board: &Board) -> bool {
    if board.occupied().count() != 32 || start_number(board).is_some() {
        return false;
    }
    let rank = |r: Rank| Bitboard::from_rank(r);
    let white = board.by_color(Color::White);
    let black = board.by_color(Color::Black);
    let pawns = board.pawns();
    rank(Rank::Second) & white & pawns == rank(Rank::Second)
        && rank(Rank::Seventh) & black & pawns == rank(Rank::Seventh)
        && rank(Rank::First) & white == rank(Rank::First)
        && rank(Rank::Eighth) & black == rank(Rank::Eighth)
        && board.material_side(Color::White) == board.material_side(Color::Black)
        && board.kings().count() == 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Role, Square};

    #[test]
    fn swapped_king_and_queen_is_a_wrong_start() {
        let mut b = Board::default();
        b.set_piece_at(Square::D1, Role::King.of(Color::White));
        b.set_piece_at(Square::E1, Role::Queen.of(Color::White));
        assert!(looks_like_wrong_start(&b));
        assert!(!looks_like_wrong_start(&Board::default()));
    }
}
