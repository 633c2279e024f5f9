//! Chess960 start positions (Guideline II of the Laws) and their numbering.
//!
//! The numbering is Scharnagl's, the one FIDE's Chess960 rules and PGN tools use:
//! 518 is the standard start. Both directions live here so that the game loader,
//! the tracker's start detection and the publishers agree on every number.

use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, File, FromSetup, Rank, Role, Setup, Square,
};

/// Chess960 number of the standard start (Guideline II numbering).
pub const STANDARD_START: u32 = 518;

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
    fn known_arrays() {
        // 518 is the classical array; 0 is BBQNNRKR (Scharnagl's table).
        let name = |n| -> String {
            back_rank_of(n)
                .expect("a number below 960")
                .iter()
                .map(|r| r.upper_char())
                .collect()
        };
        assert_eq!(name(518), "RNBQKBNR");
        assert_eq!(name(0), "BBQNNRKR");
        assert_eq!(back_rank_of(960), None);
    }
}
