//! What the tracker knows about the moves in progress and the alerts they
//! raised since the game started from its current position: how the latest
//! picture was read, the press waiting for its move, the takeback being held,
//! the ambiguity being followed, the displaced pieces, the draw claims noted.
//!
//! A game that starts afresh from a new position (a new game, or the position
//! an illegal move left standing, A.4.2) forgets all of it at once
//! ([`super::Tracker::clear_move_state`]): one struct, so that a field added
//! later cannot be cleared in one place and not the other. What must outlive
//! that (the clock's sides, the alert numbering, the start watch) lives in the
//! other parts.

use shakmaty::{Board, Chess, Color, Move};

use super::{Press, Resolution};
use crate::events::Millis;

/// The moves in progress and the alerts they raised (see the module doc).
#[derive(Clone, Debug, Default)]
pub(super) struct MoveState {
    /// How the latest picture was read.
    pub(super) resolution: Resolution,
    /// Since when the board has shown no picture the game explains, and
    /// whether the arbiters were told.
    pub(super) unexplained_since: Option<Millis>,
    pub(super) unexplained_alerted: bool,
    /// The plies (verified and provisional) the record held when that began.
    pub(super) unexplained_plies: usize,
    /// An earlier position of the game the board shows (the verified plies to
    /// keep), and since when: held for `takeback_hold_ms`, it is a takeback.
    pub(super) takeback: Option<(usize, Millis)>,
    /// An earlier position of the game the board showed since the last explained
    /// picture (the start of a takeback).
    pub(super) passed_back: Option<usize>,
    /// The clock press waiting for its move.
    pub(super) press: Option<Press>,
    /// The candidate lines last reported as ambiguous.
    pub(super) ambiguous_alerted: Option<Vec<Vec<Move>>>,
    /// The candidate lines of an unresolved ambiguity (prefix kept, moves).
    pub(super) ambiguous_lines: Vec<(usize, Vec<Move>)>,
    /// Occupancy-only boards: when the ambiguity began, and its lines' length
    /// then (see `rivals.rs`).
    pub(super) ambiguous_started: Option<(Millis, usize)>,
    /// Occupancy-only boards: readings recorded over others that fitted as
    /// well, with those others (see `rivals.rs`), the latest last.
    pub(super) rivals: Vec<super::rivals::Rivals>,
    /// The ply at which the Laws ended this game without a claim (5.1.1, 5.2,
    /// 9.6), once a `Result` was published for it.
    pub(super) result_ply: Option<u32>,
    /// Squares reported displaced (Article 7.4) and what they showed then: while they
    /// still show that, moves elsewhere are matched as if they were in place.
    pub(super) displaced: Option<(shakmaty::Bitboard, Board)>,
    /// Repeated positions already reported as a 9.2 claim, and whether the 9.3
    /// claim was reported for the current run of moves without pawn move or capture.
    pub(super) claims_noted: Vec<Chess>,
    pub(super) fifty_noted: bool,
    /// Under A.4.2 (rapid/blitz without adequate supervision): the board an
    /// uncorrected illegal move left, and its mover. If the opponent moves on from
    /// it, the illegal move stands.
    pub(super) illegal_stand: Option<(Board, Color)>,
    /// Occupancy-only boards: the frames since the last explained one and
    /// the lines that read them (see `catch_up.rs`).
    pub(super) catch_up: super::catch_up::CatchUp,
}
