//! The Laws alerts: how an irregularity is described to the arbiter, which penalty
//! the Laws suggest, and the open-alert book that lets the tracker say when the
//! condition behind an alert is gone (see `docs/alerts.md`).
//!
//! Everything here is pure description: the tracker decides *when* an alert is
//! raised or resolved; this module decides *what it says*.

use shakmaty::{san::SanPlus, Bitboard, Board, Chess, Color, Piece, Position, Role, Square};

use crate::events::{Alert, AlertKind, Severity, TrackerEvent};
use crate::timecontrol::{illegal_move_penalty, Regime, TimeControl};

/// Whether the tracker follows an alert of this kind until its condition is
/// gone and resolves it itself. Info alerts describe facts (a castling made
/// rook first, a draw claim that was available) and are never resolved;
/// warnings that ask the arbiter to confirm something that happened (a
/// takeback, a game ended off the board) neither.
pub fn resolvable(kind: &AlertKind) -> bool {
    matches!(
        kind,
        AlertKind::IllegalMove
            | AlertKind::IrregularPosition
            | AlertKind::ClockPressedWithoutMove
            | AlertKind::DisplacedPieces
            | AlertKind::AmbiguousMoves
            | AlertKind::BoardRotated90
            | AlertKind::WrongInitialPosition
            | AlertKind::GameInProgressPositionUnknown
            | AlertKind::PromotionPieceUnknown
    )
}

/// An alert raised and not yet resolved.
#[derive(Clone, Debug)]
pub struct OpenAlert {
    pub id: u32,
    pub kind: AlertKind,
    /// The game (counted per tracker) the alert belongs to.
    pub game_no: u32,
    /// Verified plies when it was raised.
    pub ply: u32,
}

/// "White's rook".
pub fn piece_name(p: Piece) -> String {
    format!("{} {}", color_possessive(p.color), role_name(p.role))
}

pub fn color_possessive(c: Color) -> &'static str {
    match c {
        Color::White => "White's",
        Color::Black => "Black's",
    }
}

pub fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "White",
        Color::Black => "Black",
    }
}

pub(super) fn role_name(r: Role) -> &'static str {
    match r {
        Role::Pawn => "pawn",
        Role::Knight => "knight",
        Role::Bishop => "bishop",
        Role::Rook => "rook",
        Role::Queen => "queen",
        Role::King => "king",
    }
}

fn ordinal(n: u32) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => {
            let suffix = match (n % 10, n % 100) {
                (_, 11..=13) => "th",
                (1, _) => "st",
                (2, _) => "nd",
                (3, _) => "rd",
                _ => "th",
            };
            format!("{n}{suffix}")
        }
    }
}

fn join_names(squares: impl IntoIterator<Item = Square>) -> String {
    squares
        .into_iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The penalty text for the configured event.
pub fn penalty(time_control: Option<&TimeControl>, regime: Regime, count: u32) -> String {
    illegal_move_penalty(time_control.and_then(TimeControl::category), regime, count)
}

/// What the mover's hand did between `before` and `after`, in words: each of the
/// mover's pieces that left a square paired with the square it (or, for a pawn on
/// its last rank, its replacement) arrived on, and what it captured. `None` when
/// the change cannot be read as pieces moved (pieces appeared from nowhere).
pub fn describe_moves(before: &Board, after: &Board, mover: Color) -> Option<String> {
    let ours_before = before.by_color(mover);
    let ours_after = after.by_color(mover);
    let mut from: Vec<(Square, Piece)> = Vec::new();
    let mut to: Vec<(Square, Piece)> = Vec::new();
    for sq in ours_before | ours_after {
        let (b, a) = (before.piece_at(sq), after.piece_at(sq));
        if b == a {
            continue;
        }
        if let Some(p) = b.filter(|p| p.color == mover) {
            from.push((sq, p));
        }
        if let Some(p) = a.filter(|p| p.color == mover) {
            to.push((sq, p));
        }
    }
    if from.is_empty() || from.len() != to.len() {
        return None;
    }
    let mut parts = Vec::new();
    let mut used = vec![false; to.len()];
    for &(f, p) in &from {
        // The same piece first; a pawn may arrive as another piece (promotion).
        let pick = (0..to.len())
            .find(|&i| !used[i] && to[i].1 == p)
            .or_else(|| (0..to.len()).find(|&i| !used[i] && p.role == Role::Pawn))?;
        used[pick] = true;
        let (t, arrived) = to[pick];
        let mut s = format!("{} on {f} was moved to {t}", piece_name(p));
        if arrived != p {
            s.push_str(&format!(" and became a {}", role_name(arrived.role)));
        }
        if let Some(c) = before.piece_at(t).filter(|c| c.color != mover) {
            s.push_str(&format!(", capturing {}", piece_name(c)));
        }
        parts.push(s);
    }
    // Opponent's pieces gone from squares the mover did not land on.
    let landed: Bitboard = to.iter().map(|&(s, _)| s).collect();
    for sq in before.by_color(!mover) & !after.occupied() & !landed {
        if let Some(c) = before.piece_at(sq) {
            parts.push(format!("{} on {sq} was taken off the board", piece_name(c)));
        }
    }
    Some(parts.join(" and "))
}

/// Article 7.5.1 / 7.5.2: an illegal move completed by the clock press.
pub fn illegal_move_alert(
    tip: &Chess,
    board: &Board,
    count: u32,
    time_control: Option<&TimeControl>,
    regime: Regime,
) -> TrackerEvent {
    let mover = tip.turn();
    let last_rank = Bitboard::from_rank(match mover {
        Color::White => shakmaty::Rank::Eighth,
        Color::Black => shakmaty::Rank::First,
    });
    let pawns_on_last = board.pawns() & board.by_color(mover) & last_rank;
    let squares = crate::tracker::search::diff(tip.board(), board);
    let what = describe_moves(tip.board(), board, mover).unwrap_or_else(|| {
        format!(
            "the board was changed on {} in a way no legal move explains",
            join_names(squares)
        )
    });
    let tally = format!(
        "this is {}'s {} completed illegal move in this game",
        color_name(mover),
        ordinal(count)
    );
    let (article, message) = if let Some(sq) = pawns_on_last.first() {
        (
            "7.5.2",
            format!(
                "{what}; the pawn was left on {sq}, its last rank, and the clock was pressed. \
                 The Laws make this an illegal move and replace the pawn by a queen of its \
                 colour; {tally}."
            ),
        )
    } else {
        (
            "7.5.1",
            format!(
                "{what}, which is not a legal move; the clock was pressed. Restore the position \
                 before it; {tally}."
            ),
        )
    };
    let mut message = message;
    if let Some(first) = message.get(..1) {
        let upper = first.to_uppercase();
        message.replace_range(..1, &upper);
    }
    TrackerEvent::Alert(Alert {
        id: 0,
        kind: AlertKind::IllegalMove,
        article: article.into(),
        severity: Severity::Error,
        squares: Alert::square_names(squares),
        message,
        penalty: Some(penalty(time_control, regime, count)),
    })
}

/// Article 7.5.3: the clock pressed with the board unchanged.
pub fn press_without_move_alert(
    mover: Color,
    count: u32,
    time_control: Option<&TimeControl>,
    regime: Regime,
) -> TrackerEvent {
    TrackerEvent::Alert(Alert {
        id: 0,
        kind: AlertKind::ClockPressedWithoutMove,
        article: "7.5.3".into(),
        severity: Severity::Warning,
        squares: Vec::new(),
        message: format!(
            "{} pressed the clock without making a move: the board still shows the position \
             with {} to move. Under the 2018 Laws this counts as an illegal move; this is {}'s \
             {} completed illegal move in this game. Set the clock running for {} again.",
            color_name(mover),
            color_name(mover),
            color_name(mover),
            ordinal(count),
            color_name(mover),
        ),
        penalty: Some(penalty(time_control, regime, count)),
    })
}

/// Articles 7.4 / 7.6: squares whose content differs from `game`'s position,
/// each named with what belongs there. `board` is `None` on occupancy-only boards,
/// where only `shown` (the occupied squares) is known.
///
/// When the board shows a legal move of the side not to move, the alert says
/// so: on a board that sends a picture a second, a move of each side made
/// within one picture leaves no trace (a knight out and back, a king there
/// and back), and the next move is then read out of turn. Only the
/// scoresheets tell that from pieces knocked over; the arbiters get both.
pub fn displaced_alert(game: &Chess, board: Option<&Board>, shown: Bitboard) -> TrackerEvent {
    let tip = game.board();
    let out_of_turn = board.and_then(|b| {
        let other = game.clone().swap_turn().ok()?;
        other.legal_moves().into_iter().find_map(|m| {
            let mut after = other.clone();
            after.play_unchecked(m);
            (after.board() == b).then(|| SanPlus::from_move(other.clone(), m))
        })
    });
    let squares = match board {
        Some(b) => crate::tracker::search::diff(tip, b),
        None => tip.occupied() ^ shown,
    };
    let parts: Vec<String> = squares
        .into_iter()
        .map(|sq| {
            let should = tip.piece_at(sq);
            let holds = match board {
                Some(b) => b.piece_at(sq).map(Some),
                // Occupancy only: something is there, which piece is unknown.
                None => shown.contains(sq).then_some(None),
            };
            let holds_text = match holds {
                None => "is empty".to_string(),
                Some(None) => "holds a piece".to_string(),
                Some(Some(p)) => format!("holds {}", piece_name(p)),
            };
            match should {
                Some(p) => format!("{sq} should hold {} but {holds_text}", piece_name(p)),
                None => format!("{sq} {holds_text} but should be empty"),
            }
        })
        .collect();
    TrackerEvent::Alert(Alert {
        id: 0,
        kind: AlertKind::DisplacedPieces,
        article: "7.4".into(),
        severity: Severity::Warning,
        squares: Alert::square_names(squares),
        message: match out_of_turn {
            None => format!(
                "The board does not show the game's position: {}. Restore the pieces (7.4, 7.6).",
                parts.join("; ")
            ),
            Some(san) => format!(
                "The board does not show the game's position: {}. That is {} {san} out of turn: \
                 if the scoresheets have a move of each side before it that the board did not \
                 show, correct the record (8.4); otherwise restore the pieces (7.4, 7.6).",
                parts.join("; "),
                color_possessive(!game.turn()),
            ),
        },
        penalty: None,
    })
}

/// Whether the picture is the position with some of the mover's pieces lifted (and
/// at most one enemy piece taken off for a capture), or with only the piece a
/// legal capture takes already off (the captured piece removed first): a move under
/// way, a hand holding a piece, rather than pieces displaced. `board` is `None` on
/// occupancy-only boards, where `shown` (the occupied squares) is all there is.
pub fn move_under_way(tip: &Chess, board: Option<&Board>, shown: Bitboard) -> bool {
    let diff = match board {
        Some(b) => crate::tracker::search::diff(tip.board(), b),
        None => tip.board().occupied() ^ shown,
    };
    let mover = tip.turn();
    // Only squares emptied: nothing put down where it does not belong.
    if diff.is_empty() || diff.count() > 3 || (shown & diff).any() {
        return false;
    }
    let ours = (diff & tip.board().by_color(mover)).count();
    let theirs = diff & tip.board().by_color(!mover);
    match (ours, theirs.count()) {
        (1.., 0 | 1) => true,
        (0, 1) => tip
            .legal_moves()
            .iter()
            .any(|m| m.is_capture() && theirs.contains(captured_square(m))),
        _ => false,
    }
}

/// The square of the piece `m` captures (the passed pawn's for en passant).
fn captured_square(m: &shakmaty::Move) -> Square {
    match *m {
        shakmaty::Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()),
        _ => m.to(),
    }
}

/// Article 7.5.4 as an info, once a player's moves that look two-handed come
/// to `plies` (one is no sign: a quick hand grabs both pieces within one scan
/// too): `latest`, the alert about the last of them, named with all of them.
pub fn two_hands_repeated(latest: Alert, plies: &[u32]) -> TrackerEvent {
    let list: Vec<String> = plies.iter().map(u32::to_string).collect();
    TrackerEvent::Alert(Alert {
        message: format!(
            "{} This is the {} such move of this player in the game (plies {}).",
            latest.message,
            ordinal(plies.len() as u32),
            list.join(", ")
        ),
        ..latest
    })
}

/// Article 7.5.4 as an info: the two pieces of one move were lifted in the same
/// board scan and the move was complete right after, which one hand hardly does.
pub fn two_hands_alert(mover: Color, a: Square, b: Square, castling: bool) -> TrackerEvent {
    let what = if castling {
        "the king and the rook of the castling"
    } else {
        "the capturing and the captured piece"
    };
    TrackerEvent::Alert(Alert {
        id: 0,
        kind: AlertKind::TwoHandsSuspected,
        article: "7.5.4".into(),
        severity: Severity::Info,
        squares: Alert::square_names([a, b]),
        message: format!(
            "{what} ({a}, {b}) left the board in the same scan and the move was complete right \
             after, while {} moved: two hands may have been used. The sensors cannot see hands; \
             relevant only if the opponent claims.",
            color_name(mover)
        ),
        penalty: None,
    })
}

/// The 9.2 / 9.3 draw claims open to the player to move in `pos` (after ply
/// `ply`), given the game's earlier positions. `noted` holds the repeated
/// positions already reported, `fifty_noted` whether the 50-move claim was.
pub fn draw_claims(
    history: &[Chess],
    pos: &Chess,
    ply: u32,
    noted: &mut Vec<Chess>,
    fifty_noted: &mut bool,
) -> Vec<TrackerEvent> {
    let mut out = Vec::new();
    let to_move = pos.turn();
    // Only positions since the last capture or pawn move can repeat.
    let window = (pos.halfmoves() as usize).min(history.len().saturating_sub(1));
    let earlier = &history[history.len() - 1 - window..history.len() - 1];
    let times = |p: &Chess| earlier.iter().filter(|q| *q == p).count() + 1;
    let mut repeated: Option<(Chess, String)> = None;
    if window >= 4 {
        if times(pos) >= 3 {
            repeated = Some((
                pos.clone(),
                format!(
                    "the position after ply {ply} has appeared for the third time (9.2): {} may claim a draw",
                    color_name(to_move)
                ),
            ));
        } else {
            // 9.2.1.1: the claim by writing a move that repeats a position a third
            // time. Cheap in the usual case: no earlier position with the opponent
            // to move occurs twice.
            let twice: Vec<&Chess> = earlier
                .iter()
                .filter(|q| q.turn() != to_move)
                .filter(|q| earlier.iter().filter(|r| r == q).count() >= 2)
                .collect();
            if !twice.is_empty() {
                for m in pos.legal_moves() {
                    if m.is_zeroing() {
                        continue;
                    }
                    let mut next = pos.clone();
                    next.play_unchecked(m);
                    if twice.iter().any(|q| **q == next) {
                        let san = shakmaty::san::San::from_move(pos, m);
                        repeated = Some((
                            next,
                            format!(
                                "after ply {ply}, {} may claim a draw by announcing {san}, which repeats a position for the third time (9.2)",
                                color_name(to_move)
                            ),
                        ));
                        break;
                    }
                }
            }
        }
    }
    if let Some((p, text)) = repeated {
        if !noted.contains(&p) {
            noted.push(p);
            out.push(draw_claim_alert("9.2", &text));
        }
    }
    if pos.halfmoves() >= 99 {
        if !*fifty_noted {
            *fifty_noted = true;
            let text = if pos.halfmoves() >= 100 {
                format!(
                    "after ply {ply}, the last 50 moves of each player were made without a pawn move or a capture (9.3): {} may claim a draw",
                    color_name(to_move)
                )
            } else {
                format!(
                    "after ply {ply}, {} may claim a draw by announcing a move that completes 50 moves each without a pawn move or a capture (9.3)",
                    color_name(to_move)
                )
            };
            out.push(draw_claim_alert("9.3", &text));
        }
    } else {
        *fifty_noted = false;
    }
    out
}

fn draw_claim_alert(article: &str, text: &str) -> TrackerEvent {
    let mut message = text.to_string();
    if let Some(first) = message.get(..1) {
        let upper = first.to_uppercase();
        message.replace_range(..1, &upper);
    }
    message.push_str(". Only the player can claim; the game goes on until then.");
    TrackerEvent::Alert(Alert {
        id: 0,
        kind: AlertKind::DrawClaimAvailable,
        article: article.into(),
        severity: Severity::Info,
        squares: Vec::new(),
        message,
        penalty: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(fen: &str) -> Board {
        fen.parse().expect("board FEN")
    }

    #[test]
    fn a_rook_moved_illegally_is_named_with_both_squares() {
        let before = board("4k3/8/8/8/8/8/5P2/4KR2");
        let after = board("4k3/8/8/8/8/5R2/5P2/4K3");
        assert_eq!(
            describe_moves(&before, &after, Color::White).as_deref(),
            Some("White's rook on f1 was moved to f3")
        );
    }

    #[test]
    fn a_capture_names_the_captured_piece() {
        let before = board("4k3/8/8/3p4/8/8/8/R3K3");
        let after = board("4k3/8/8/3R4/8/8/8/4K3");
        assert_eq!(
            describe_moves(&before, &after, Color::White).as_deref(),
            Some("White's rook on a1 was moved to d5, capturing Black's pawn")
        );
    }

    #[test]
    fn a_move_under_way_is_lifted_pieces_only() {
        let pos = Chess::default();
        let under_way = |fen: &str| {
            let b = board(fen);
            move_under_way(&pos, Some(&b), b.occupied())
        };
        assert!(under_way("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKB1R"));
        // A piece put down where it does not belong is not a hand holding one.
        assert!(!under_way("rnbqkbnr/pppppppp/8/8/4N3/8/PPPPPPPP/RNBQKB1R"));
        // The opponent's piece lifted alone is not the mover's move...
        assert!(!under_way("rnbqkbnr/ppppppp1/8/8/8/8/PPPPPPPP/RNBQKBNR"));
        // ...unless a legal capture takes it (the captured piece removed first).
        let pos: Chess = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
            .parse::<shakmaty::fen::Fen>()
            .expect("FEN")
            .into_position(shakmaty::CastlingMode::Standard)
            .expect("legal");
        let b = board("rnbqkbnr/ppp1pppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR");
        assert!(move_under_way(&pos, Some(&b), b.occupied()));
    }
}
