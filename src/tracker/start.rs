//! Start pictures: which orientation the board is used in, and whether a picture
//! is the standard start, one of the 960 Chess960 starts, or neither.

use eboard_protocols::Picture;
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, File, FromSetup, Rank, Role, Setup, Square,
};

/// Chess960 number of the standard start (Guideline II numbering).
pub const STANDARD_START: u32 = 518;

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

    /// Turned 180°: White sits at the connector's right.
    pub fn is_rotated_180(self) -> bool {
        self.0 == 2
    }

    /// Turned by a quarter: the light corner is on the wrong side (Article 7.2.2).
    pub fn is_quarter_turn(self) -> bool {
        self.0 % 2 == 1
    }
}

/// Files of the two knights among the five squares left after bishops and queen,
/// indexed by the knight code of the Chess960 numbering.
const KNIGHT_CODES: [(usize, usize); 10] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 3),
    (2, 4),
    (3, 4),
];

/// The Chess960 number of a back rank (files a..h), if it is a valid start rank:
/// bishops on opposite colours, king between the rooks.
pub fn back_rank_number(roles: [Role; 8]) -> Option<u32> {
    let files_of = |role: Role| (0..8).filter(move |&f| roles[f] == role);
    let bishops: Vec<usize> = files_of(Role::Bishop).collect();
    if bishops.len() != 2 || bishops[0] % 2 == bishops[1] % 2 {
        return None;
    }
    // On the first rank, even files (a, c, e, g) are dark squares.
    let dark = bishops.iter().copied().find(|f| f % 2 == 0)?;
    let light = bishops.iter().copied().find(|f| f % 2 == 1)?;
    let rest: Vec<usize> = (0..8).filter(|f| !bishops.contains(f)).collect();
    let queens: Vec<usize> = (0..6).filter(|&i| roles[rest[i]] == Role::Queen).collect();
    if queens.len() != 1 {
        return None;
    }
    let q = queens[0];
    let rest5: Vec<usize> = (0..6).filter(|&i| i != q).map(|i| rest[i]).collect();
    let knights: Vec<usize> = (0..5)
        .filter(|&i| roles[rest5[i]] == Role::Knight)
        .collect();
    if knights.len() != 2 {
        return None;
    }
    let code = KNIGHT_CODES
        .iter()
        .position(|&(a, b)| a == knights[0] && b == knights[1])?;
    let rkr: Vec<Role> = (0..5)
        .filter(|i| !knights.contains(i))
        .map(|i| roles[rest5[i]])
        .collect();
    if rkr != [Role::Rook, Role::King, Role::Rook] {
        return None;
    }
    let n = ((code * 6 + q) * 4 + dark / 2) * 4 + (light - 1) / 2;
    Some(n as u32)
}

/// The back rank of Chess960 start `n` (0..960).
pub fn back_rank_of(n: u32) -> Option<[Role; 8]> {
    if n >= 960 {
        return None;
    }
    let n = n as usize;
    let mut roles: [Option<Role>; 8] = [None; 8];
    roles[(n % 4) * 2 + 1] = Some(Role::Bishop);
    roles[((n / 4) % 4) * 2] = Some(Role::Bishop);
    let free = |roles: &[Option<Role>; 8]| -> Vec<usize> {
        (0..8).filter(|&f| roles[f].is_none()).collect()
    };
    let q = (n / 16) % 6;
    let f = free(&roles)[q];
    roles[f] = Some(Role::Queen);
    let (a, b) = KNIGHT_CODES[n / 96];
    let rest = free(&roles);
    roles[rest[a]] = Some(Role::Knight);
    roles[rest[b]] = Some(Role::Knight);
    let rest = free(&roles);
    roles[rest[0]] = Some(Role::Rook);
    roles[rest[1]] = Some(Role::King);
    roles[rest[2]] = Some(Role::Rook);
    let mut out = [Role::Pawn; 8];
    for (o, r) in out.iter_mut().zip(roles) {
        *o = r?;
    }
    Some(out)
}

/// The Chess960 number if `board` is a start position (518 = standard).
pub fn start_number(board: &Board) -> Option<u32> {
    if board.occupied().count() != 32 {
        return None;
    }
    let mut roles = [Role::Pawn; 8];
    for (f, slot) in roles.iter_mut().enumerate() {
        let file = File::new(f as u32);
        let at = |rank: Rank| board.piece_at(Square::from_coords(file, rank));
        let white = at(Rank::First)?;
        if white.color != Color::White
            || at(Rank::Eighth)? != white.role.of(Color::Black)
            || at(Rank::Second)? != Role::Pawn.of(Color::White)
            || at(Rank::Seventh)? != Role::Pawn.of(Color::Black)
        {
            return None;
        }
        *slot = white.role;
    }
    back_rank_number(roles)
}

/// The position a start board begins: standard chess for 518, Chess960 rules otherwise.
pub fn start_position(board: &Board, number: u32) -> Option<(Chess, CastlingMode)> {
    if number == STANDARD_START {
        return Some((Chess::default(), CastlingMode::Standard));
    }
    let rooks = board.rooks();
    let setup = Setup {
        board: board.clone(),
        castling_rights: rooks
            & (Bitboard::from_rank(Rank::First) | Bitboard::from_rank(Rank::Eighth)),
        ..Setup::empty()
    };
    Chess::from_setup(setup, CastlingMode::Chess960)
        .ok()
        .map(|p| (p, CastlingMode::Chess960))
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

    #[test]
    fn numbering_round_trips_and_standard_is_518() {
        for n in 0..960 {
            let rank = back_rank_of(n).expect("every number has a rank");
            assert_eq!(back_rank_number(rank), Some(n));
        }
        assert_eq!(start_number(&Board::default()), Some(STANDARD_START));
    }

    #[test]
    fn swapped_king_and_queen_is_a_wrong_start() {
        let mut b = Board::default();
        b.set_piece_at(Square::D1, Role::King.of(Color::White));
        b.set_piece_at(Square::E1, Role::Queen.of(Color::White));
        assert!(looks_like_wrong_start(&b));
        assert!(!looks_like_wrong_start(&Board::default()));
    }
}
