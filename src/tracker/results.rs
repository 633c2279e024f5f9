//! Results the Laws give without a claim (Articles 5.1.1, 5.2.1, 5.2.2, 9.6).
//!
//! Checked after every verified move, in the order the Laws rank them: a mate on
//! the move that also completes 75 moves or a fifth repetition stands (9.6), and
//! checkmate or stalemate leave no legal move to play on.
//!
//! Approximation: a dead position (5.2.2) is recognised by shakmaty's
//! `is_insufficient_material` (neither side has mating material: bare kings, a
//! single minor piece, bishops all on one colour). Positions dead for other
//! reasons (locked pawn chains) need a search and are left to the arbiter.

use shakmaty::{Chess, Color, Position};

use crate::events::{GameResult, ResultReason};

/// A game-ending condition found after a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// 5.1.1: the player who moved checkmated the opponent.
    Checkmate { winner: Color },
    /// 5.2.1: the player to move has no legal move and is not in check.
    Stalemate,
    /// 5.2.2: neither side can checkmate (see the module's approximation).
    DeadPosition,
    /// 9.6.1: the same position for the fifth time (FIDE equality, 9.2).
    Fivefold,
    /// 9.6.2: 75 moves by each side without a pawn move or a capture.
    SeventyFive,
}

impl Ending {
    /// The result the Laws give.
    pub fn result(self) -> GameResult {
        match self {
            Ending::Checkmate { winner } => GameResult::win_for(winner),
            _ => GameResult::Draw,
        }
    }

    /// The reason published with the result (`GameEvent::Result::reason`).
    pub fn reason(self) -> ResultReason {
        match self {
            Ending::Checkmate { .. } => ResultReason::Checkmate,
            Ending::Stalemate => ResultReason::Stalemate,
            Ending::DeadPosition => ResultReason::DeadPosition,
            Ending::Fivefold => ResultReason::FivefoldRepetition,
            Ending::SeventyFive => ResultReason::SeventyFiveMoves,
        }
    }

    /// The Article that ends the game.
    pub fn article(self) -> &'static str {
        match self {
            Ending::Checkmate { .. } => "5.1.1",
            Ending::Stalemate => "5.2.1",
            Ending::DeadPosition => "5.2.2",
            Ending::Fivefold => "9.6.1",
            Ending::SeventyFive => "9.6.2",
        }
    }

    /// A plain description for the arbiter's message.
    pub fn description(self) -> &'static str {
        match self {
            Ending::Checkmate { .. } => "checkmate",
            Ending::Stalemate => "stalemate",
            Ending::DeadPosition => "dead position: neither side can mate",
            Ending::Fivefold => "the same position for the fifth time",
            Ending::SeventyFive => "75 moves by each side without a pawn move or capture",
        }
    }

    /// Whether no legal move is left (the game cannot go on on the board either).
    pub fn is_final(self) -> bool {
        matches!(self, Ending::Checkmate { .. } | Ending::Stalemate)
    }
}

/// The ending reached by the last position of `history` (`history[0]` the start,
/// each later one the position after a verified ply), if any.
pub fn ending(history: &[Chess]) -> Option<Ending> {
    let pos = history.last()?;
    if pos.is_checkmate() {
        return Some(Ending::Checkmate {
            winner: !pos.turn(),
        });
    }
    if pos.is_stalemate() {
        return Some(Ending::Stalemate);
    }
    if pos.is_insufficient_material() {
        return Some(Ending::DeadPosition);
    }
    // Repetition needs a position seen five times, which is impossible across an
    // irreversible move: look back only over the reversible plies.
    let reversible = pos.halfmoves() as usize;
    let from = history.len().saturating_sub(reversible + 1);
    if history[from..].iter().filter(|p| *p == pos).count() >= 5 {
        return Some(Ending::Fivefold);
    }
    if pos.halfmoves() >= 150 {
        return Some(Ending::SeventyFive);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{fen::Fen, uci::UciMove, CastlingMode};

    fn history(fen: &str, uci: &str) -> Vec<Chess> {
        let setup: Fen = fen.parse().expect("fen");
        let mut pos: Chess = setup.into_position(CastlingMode::Standard).expect("legal");
        let mut h = vec![pos.clone()];
        for u in uci.split_whitespace() {
            let m = u.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
            h.push(pos.clone());
        }
        h
    }

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

    #[test]
    fn fools_mate_is_a_win_for_black() {
        let h = history(START, "f2f3 e7e5 g2g4 d8h4");
        assert_eq!(
            ending(&h),
            Some(Ending::Checkmate {
                winner: Color::Black
            })
        );
        assert_eq!(ending(&h).unwrap().result(), GameResult::BlackWins);
        assert_eq!(ending(&h[..4]), None);
    }

    #[test]
    fn knights_shuffled_back_four_times_make_the_fifth_occurrence() {
        let cycle = "g1f3 g8f6 f3g1 f6g8 ";
        let h = history(START, &cycle.repeat(4));
        assert_eq!(ending(&h), Some(Ending::Fivefold));
        assert_eq!(ending(&h[..h.len() - 1]), None);
    }

    #[test]
    fn halfmove_clock_at_150_ends_the_game_unless_it_is_mate() {
        let h = history("8/8/8/4k3/8/8/8/R3K2R w - - 149 100", "a1a2");
        assert_eq!(ending(&h), Some(Ending::SeventyFive));
        let h = history("8/8/8/4k3/8/8/8/R3K2R w - - 148 100", "a1a2");
        assert_eq!(ending(&h), None);
        // Mate on the 150th reversible ply takes precedence (9.6).
        let h = history("7k/8/6K1/8/8/8/8/R7 w - - 149 100", "a1a8");
        assert_eq!(
            ending(&h),
            Some(Ending::Checkmate {
                winner: Color::White
            })
        );
    }

    #[test]
    fn bare_kings_and_a_lone_knight_are_dead() {
        let h = history("8/8/8/4k3/8/8/3n4/4K3 w - - 0 60", "e1d2");
        assert_eq!(ending(&h), Some(Ending::DeadPosition));
        let h = history("8/8/8/4k3/8/8/3n4/4KN2 w - - 0 60", "f1e3");
        assert_eq!(ending(&h), None, "a knight each can still mate");
    }
}
