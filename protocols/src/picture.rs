//! Sensor pictures: what a board's sensors report for its 64 squares.
//!
//! A [`Picture`] is in the *board's own frame*: squares are named as if the board
//! were set up normally (for DGT, field 0 = a8 with the connector at White's left).
//! Whether the players actually sit that way round is for the tracker to find out,
//! which is why [`Picture::rotated_180`] and [`Picture::rotated_90`] exist here and
//! nothing in this crate ever "corrects" a picture on its own.

use std::fmt;

use shakmaty::{Bitboard, Board, Color, File, Piece, Rank, Role, Square};

/// A result piece ("magic piece") a board can recognise. DGT codes 0x0d..0x0f.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MagicPiece {
    /// Put on the board to signal a draw.
    Draw,
    /// Put on the board to signal a win for White.
    WhiteWins,
    /// Put on the board to signal a win for Black.
    BlackWins,
}

/// What one square's sensor reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Sensed {
    /// Nothing on the square.
    #[default]
    Empty,
    /// A piece of known colour and role (identity boards: DGT, Millennium, ...).
    Piece(Piece),
    /// Something is on the square but the board cannot say what (occupancy-only boards).
    Occupied,
    /// A result piece.
    Magic(MagicPiece),
}

impl Sensed {
    /// Whether the sensor sees anything at all.
    pub fn is_occupied(self) -> bool {
        !matches!(self, Sensed::Empty)
    }

    /// The chess piece, if the sensor identified one.
    pub fn piece(self) -> Option<Piece> {
        match self {
            Sensed::Piece(p) => Some(p),
            _ => None,
        }
    }

    /// One character, FEN style: `.` empty, `?` occupied, `=`/`+`/`-` magic pieces.
    pub fn char(self) -> char {
        match self {
            Sensed::Empty => '.',
            Sensed::Piece(p) => p.char(),
            Sensed::Occupied => '?',
            Sensed::Magic(MagicPiece::Draw) => '=',
            Sensed::Magic(MagicPiece::WhiteWins) => '+',
            Sensed::Magic(MagicPiece::BlackWins) => '-',
        }
    }
}

impl From<Option<Piece>> for Sensed {
    fn from(p: Option<Piece>) -> Sensed {
        p.map_or(Sensed::Empty, Sensed::Piece)
    }
}

/// Maps a DGT-style field number (0 = a8, 7 = h8, 63 = h1) to a square.
pub fn field_to_square(field: u8) -> Square {
    debug_assert!(field < 64);
    let file = File::new(u32::from(field % 8));
    let rank = Rank::new(7 - u32::from(field / 8));
    Square::from_coords(file, rank)
}

/// Inverse of [`field_to_square`].
pub fn square_to_field(sq: Square) -> u8 {
    (7 - u8::from(sq.rank())) * 8 + u8::from(sq.file())
}

/// A full sensor picture of 64 squares, in the board's own frame.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Picture {
    squares: [Sensed; 64],
}

impl Default for Picture {
    fn default() -> Self {
        Picture::empty()
    }
}

impl Picture {
    /// No piece anywhere.
    pub const fn empty() -> Picture {
        Picture {
            squares: [Sensed::Empty; 64],
        }
    }

    /// The picture an identity board would show for `board`.
    pub fn from_board(board: &Board) -> Picture {
        let mut p = Picture::empty();
        for (sq, piece) in board.clone() {
            p.squares[usize::from(sq)] = Sensed::Piece(piece);
        }
        p
    }

    /// The picture an occupancy-only board would show for `board`.
    pub fn occupancy_of(board: &Board) -> Picture {
        let mut p = Picture::empty();
        for sq in board.occupied() {
            p.squares[usize::from(sq)] = Sensed::Occupied;
        }
        p
    }

    /// What the sensor on `sq` reports.
    pub fn get(&self, sq: Square) -> Sensed {
        self.squares[usize::from(sq)]
    }

    /// Sets what the sensor on `sq` reports.
    pub fn set(&mut self, sq: Square, s: Sensed) {
        self.squares[usize::from(sq)] = s;
    }

    /// Squares with anything on them.
    pub fn occupied(&self) -> Bitboard {
        Square::ALL
            .into_iter()
            .filter(|&sq| self.get(sq).is_occupied())
            .collect()
    }

    /// Squares whose reading differs between `self` and `other`.
    pub fn diff(&self, other: &Picture) -> Bitboard {
        Square::ALL
            .into_iter()
            .filter(|&sq| self.get(sq) != other.get(sq))
            .collect()
    }

    /// The board part of a position, if every square holds an identified chess
    /// piece or nothing (no magic pieces, no occupancy-only readings).
    pub fn to_board(&self) -> Option<Board> {
        let mut board = Board::empty();
        for sq in Square::ALL {
            match self.get(sq) {
                Sensed::Empty => {}
                Sensed::Piece(p) => board.set_piece_at(sq, p),
                Sensed::Occupied | Sensed::Magic(_) => return None,
            }
        }
        Some(board)
    }

    /// Number of squares reading as the given piece.
    pub fn count(&self, piece: Piece) -> usize {
        self.squares
            .iter()
            .filter(|&&s| s == Sensed::Piece(piece))
            .count()
    }

    /// Squares holding a magic piece.
    pub fn magic_pieces(&self) -> impl Iterator<Item = (Square, MagicPiece)> + '_ {
        Square::ALL.into_iter().filter_map(|sq| match self.get(sq) {
            Sensed::Magic(m) => Some((sq, m)),
            _ => None,
        })
    }

    /// The picture seen from the other side of the table (a1 <-> h8).
    pub fn rotated_180(&self) -> Picture {
        let mut p = Picture::empty();
        for sq in Square::ALL {
            p.set(sq.flip_vertical().flip_horizontal(), self.get(sq));
        }
        p
    }

    /// The picture turned a quarter turn clockwise (a1 goes to a8).
    pub fn rotated_90(&self) -> Picture {
        let mut p = Picture::empty();
        for sq in Square::ALL {
            // (file, rank) -> (rank, 7 - file): a1 (0,0) -> a8 (0,7), h1 (7,0) -> a1 (0,0).
            let file = u32::from(sq.file());
            let rank = u32::from(sq.rank());
            let to = Square::from_coords(File::new(rank), Rank::new(7 - file));
            p.set(to, self.get(sq));
        }
        p
    }

    /// The occupancy-only view of this picture.
    pub fn to_occupancy(&self) -> Picture {
        let mut p = Picture::empty();
        for sq in self.occupied() {
            p.set(sq, Sensed::Occupied);
        }
        p
    }

    /// Pieces of `color` on the picture.
    pub fn pieces_of(&self, color: Color) -> Bitboard {
        Square::ALL
            .into_iter()
            .filter(|&sq| matches!(self.get(sq), Sensed::Piece(p) if p.color == color))
            .collect()
    }

    /// Squares holding `role` of `color`.
    pub fn squares_of(&self, piece: Piece) -> Bitboard {
        Square::ALL
            .into_iter()
            .filter(|&sq| self.get(sq) == Sensed::Piece(piece))
            .collect()
    }

    /// Whether the picture holds a king of each colour and nothing unidentified.
    pub fn has_both_kings(&self) -> bool {
        self.count(Role::King.of(Color::White)) == 1 && self.count(Role::King.of(Color::Black)) == 1
    }
}

impl fmt::Display for Picture {
    /// Eight rows, rank 8 first, one character per square (see [`Sensed::char`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for rank in (0..8).rev() {
            for file in 0..8 {
                let sq = Square::from_coords(File::new(file), Rank::new(rank));
                write!(f, "{}", self.get(sq).char())?;
            }
            if rank > 0 {
                f.write_str("/")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Picture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Picture({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_numbering_follows_dgt() {
        assert_eq!(field_to_square(0), Square::A8);
        assert_eq!(field_to_square(7), Square::H8);
        assert_eq!(field_to_square(8), Square::A7);
        assert_eq!(field_to_square(63), Square::H1);
        for f in 0..64 {
            assert_eq!(square_to_field(field_to_square(f)), f);
        }
    }

    #[test]
    fn rotations_compose() {
        let p = Picture::from_board(&Board::default());
        assert_eq!(p.rotated_180().rotated_180(), p);
        assert_eq!(p.rotated_90().rotated_90(), p.rotated_180());
        assert_eq!(
            p.rotated_180().get(Square::A1),
            Sensed::Piece(Role::Rook.of(Color::Black))
        );
        // Turned round, the black king (e8) stands on d1 and the black queen (d8) on e1.
        assert_eq!(
            p.rotated_180().get(Square::D1),
            Sensed::Piece(Role::King.of(Color::Black))
        );
        assert_eq!(
            p.rotated_180().get(Square::E1),
            Sensed::Piece(Role::Queen.of(Color::Black))
        );
        assert_eq!(p.to_board(), Some(Board::default()));
    }
}
