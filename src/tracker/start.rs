//! Start pictures: which orientation the board is used in, and whether a picture
//! is the standard start, one of the 960 Chess960 starts, or neither.
//!
//! Between games the tracker watches for a start ([`StartWatch`]): a start
//! picture held for `start_hold_ms`, or one that gave way before its hold but
//! is proven by the clock's start (6.6) or a legal first move, begins the game
//! ([`Tracker::begin_game`]); a set-up that is almost a start is reported as a
//! wrong initial position (7.2.1), a game in progress the tracker never saw
//! start as such (6.6).

use eboard_protocols::Picture;
use shakmaty::{
    fen::Fen, Bitboard, Board, CastlingMode, Chess, Color, EnPassantMode, Position, Rank, Square,
};

use super::alerts::{names, quarter_turn_alert};
use super::clock::color_side;
use super::search::{self, Target};
use super::{Game, Phase, Tracker};
use crate::events::{Alert, AlertKind, GameEvent, Millis, Severity, TrackerEvent};

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

/// A picture of a game in progress still this long, with no clock running,
/// before any game started: the board was joined mid-game (not a set-up going
/// on, which changes every few seconds).
pub(super) const POSITION_UNKNOWN_MS: Millis = 10_000;

/// What the tracker watches between games: the start position to expect, the
/// start picture waiting for its hold, and what was reported about set-ups that
/// are not a start. It outlives games: a game's start only drops the candidates.
#[derive(Clone, Debug, Default)]
pub(super) struct StartWatch {
    /// The operator's start position (`set_start_fen`), instead of a standard or
    /// Chess960 start picture.
    pub(super) custom_start: Option<(Chess, CastlingMode)>,
    /// A start picture waiting for its hold.
    pub(super) start_candidate: Option<StartCandidate>,
    /// A start picture that gave way before its hold (a daemon started, or a
    /// board plugged in, just as the round begins): it still starts the game
    /// if the clock is started (6.6) or a legal first move is made from it
    /// while the board stays within one move of it.
    pub(super) brief_start: Option<StartCandidate>,
    /// The board shows a game in progress the tracker never saw start (a daemon
    /// started late, a board swapped) and the arbiters were told.
    pub(super) unknown_alerted: bool,
    /// A set-up that looks like a wrong initial position (7.2.1): the picture,
    /// since when, and the squares that differ from the standard start.
    pub(super) wrong_start: Option<(Picture, Millis, Vec<Square>)>,
    /// The wrong set-up last reported.
    pub(super) wrong_start_alerted: Option<Picture>,
}

/// A start picture waiting for its hold.
#[derive(Clone, Debug)]
pub(super) struct StartCandidate {
    pub(super) raw: Picture,
    pub(super) since: Millis,
    pub(super) orientation: Orientation,
    pub(super) pos: Chess,
    pub(super) mode: CastlingMode,
    pub(super) chess960: Option<u32>,
}

impl Tracker {
    /// The start `raw` shows (the operator's, a standard or a Chess960 one) and
    /// the orientation it shows it in, if it is one.
    pub(super) fn detect_start(&self, raw: &Picture) -> Option<StartCandidate> {
        let pieces = match &self.start.custom_start {
            Some((pos, _)) => pos.board().occupied().count(),
            None => 32,
        };
        if raw.occupied().count() != pieces {
            return None;
        }
        if raw.magic_pieces().next().is_none() && raw.to_board().is_none() {
            return self.detect_occupancy_start(raw);
        }
        for o in Orientation::ALL {
            let Some(board) = o.apply(raw).to_board() else {
                continue;
            };
            let found = match &self.start.custom_start {
                Some((pos, mode)) => {
                    (pos.board() == &board).then(|| (pos.clone(), *mode, start_number(&board)))
                }
                None => start_number(&board).and_then(|n| {
                    start_position(&board, n).map(|(pos, mode)| (pos, mode, Some(n)))
                }),
            };
            if let Some((pos, mode, chess960)) = found {
                return Some(StartCandidate {
                    raw: raw.clone(),
                    since: 0,
                    orientation: o,
                    pos,
                    mode,
                    chess960,
                });
            }
        }
        None
    }

    /// Occupancy-only boards cannot tell a Chess960 start from the standard one, nor
    /// a board turned 180° from one used as built: the start must be the standard
    /// one or the operator's (`set_start_fen`), and the board is taken as built.
    /// A quarter turn still shows (files instead of ranks occupied).
    fn detect_occupancy_start(&self, raw: &Picture) -> Option<StartCandidate> {
        let (pos, mode) = match &self.start.custom_start {
            Some((pos, mode)) => (pos.clone(), *mode),
            None => (Chess::default(), CastlingMode::Standard),
        };
        let chess960 = start_number(pos.board());
        [
            Orientation::ALL[0],
            Orientation::ALL[2],
            Orientation::ALL[3],
        ]
        .into_iter()
        .find(|o| o.apply(raw).occupied() == pos.board().occupied())
        .map(|orientation| StartCandidate {
            raw: raw.clone(),
            since: 0,
            orientation,
            pos,
            mode,
            chess960,
        })
    }

    /// The brief start a picture proves: `picture` shows a legal first move
    /// made from it.
    pub(super) fn first_move_from_brief_start(
        &mut self,
        picture: &Picture,
    ) -> Option<StartCandidate> {
        let pending = self
            .start
            .start_candidate
            .as_ref()
            .or(self.start.brief_start.as_ref())?;
        if self.detect_start(picture).is_some() {
            return None;
        }
        let proven = pending
            .orientation
            .apply(picture)
            .to_board()
            .is_some_and(|board| {
                !search::sequences(&pending.pos, Target::Board(&board), 1, 1, None).is_empty()
            });
        if !proven {
            return None;
        }
        self.start
            .start_candidate
            .take()
            .or_else(|| self.start.brief_start.take())
    }

    /// Between games (or in a game, when the board shows something else): takes
    /// note of a start picture, keeps a brief start near the board, and of an
    /// almost-start that is a wrong set-up.
    pub(super) fn look_for_start(&mut self, t: Millis, raw: &Picture) {
        if let Some(mut cand) = self.detect_start(raw) {
            cand.since = t;
            self.start.start_candidate = Some(cand);
            self.start.brief_start = None;
            self.start.wrong_start = None;
            return;
        }
        // A start that gave way before its hold stays in mind while the board
        // is within one move of it (a piece in the hand: at most two squares
        // differ from the start; a move under way, four). Further away, pieces
        // are being set up or the board cleared.
        if let Some(cand) = self.start.start_candidate.take() {
            self.start.brief_start = Some(cand);
        }
        if let Some(cand) = &self.start.brief_start {
            let near = cand
                .orientation
                .apply(raw)
                .to_board()
                .is_some_and(|b| search::diff(&b, cand.pos.board()).count() <= 4);
            if !near {
                self.start.brief_start = None;
            }
        }
        self.start.start_candidate = None;
        self.start.wrong_start = None;
        if self.phase != Phase::WaitingStart {
            return;
        }
        for o in [Orientation::ALL[0], Orientation::ALL[1]] {
            if let Some(board) = o.apply(raw).to_board() {
                if looks_like_wrong_start(&board) {
                    let reference = Board::default();
                    let squares = search::diff(&board, &reference).into_iter().collect();
                    self.start.wrong_start = Some((raw.clone(), t, squares));
                    return;
                }
            }
        }
    }

    /// Begins a game from `cand`: everything about the previous game's moves is
    /// forgotten, the clock's sides are learned afresh.
    pub(super) fn begin_game(
        &mut self,
        t: Millis,
        cand: StartCandidate,
        out: &mut Vec<TrackerEvent>,
    ) {
        let fen = Fen::from_position(&cand.pos, EnPassantMode::Legal).to_string();
        self.orientation = cand.orientation;
        self.game = Some(Game {
            mode: cand.mode,
            chess960: cand.chess960,
            history: vec![cand.pos],
            moves: Vec::new(),
            pending: Vec::new(),
        });
        self.phase = Phase::Playing;
        self.clear_move_state();
        self.start.start_candidate = None;
        self.start.brief_start = None;
        self.start.unknown_alerted = false;
        self.retractions.certain_ply = 0;
        self.retractions.resync_tried = None;
        self.retractions.uncertain_ply = None;
        self.clock.late_press_wait = None;
        self.alerts.game_no += 1;
        self.alerts.illegal_counts = [0; 2];
        // Press ids start again at 1: a press of the game before, still in the
        // log, would otherwise answer for this game's press of the same id.
        self.clock.presses_in_game = 0;
        self.clock.press_log.clear();
        self.clock.last_press_t = None;
        self.sensing.two_hands_plies = shakmaty::ByColor::default();
        self.sensing.same_scan_lifts = shakmaty::Bitboard::EMPTY;
        self.sensing.unseen_capture_ply = None;
        self.last_board = cand.orientation.apply(&cand.raw).to_board();
        match &self.last_board {
            Some(b) => self.sensing.seen.reset(Target::Board(b)),
            None => self.sensing.seen.reset(Target::Occupancy(
                cand.orientation.apply(&cand.raw).occupied(),
            )),
        }
        self.gap = false;
        self.last_change_t = t;
        self.sensing.steady_since = t;
        // A new game may be played with the players on other sides of the clock.
        self.clock.white_side = None;
        self.clock.turn_started_t = None;
        self.clock.unpressed_ply = None;
        self.clock_laws
            .begin_game(self.clock.last_reading.is_some_and(|r| r.running), out);
        if let Some(r) = self.clock.last_reading {
            if r.running {
                let to_move = self.game.as_ref().expect("just set").verified().turn();
                self.clock.white_side = r.lever_high.map(|s| color_side(s, to_move));
                self.clock.turn_started_t = Some(t);
            }
        }
        self.reset_evidence();
        out.push(TrackerEvent::Game(GameEvent::GameStart {
            fen,
            chess960: cand.chess960,
            rotated: cand.orientation.is_rotated_180(),
        }));
        if cand.orientation.is_quarter_turn() {
            out.push(quarter_turn_alert());
        }
    }

    /// A start picture held with the clock stopped in a game that never reached a
    /// result on the board: it ended off the board, the next one begins.
    pub(super) fn restart(&mut self, t: Millis, cand: StartCandidate, out: &mut Vec<TrackerEvent>) {
        self.commit_before_the_end(t, out);
        let plies = self.ply();
        // A board without a clock has no stopped clock to speak of.
        let how = if self.clockless() {
            ""
        } else {
            " with the clock stopped"
        };
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::GameEndedWithoutResult,
            article: "5.1.2".into(),
            severity: Severity::Warning,
            squares: Vec::new(),
            message: format!(
                "The board was set up again{how} after {plies} plies: the previous game ended without a result on the board; enter its result. A new game starts."
            ),
        }));
        self.begin_game(t, cand, out);
    }

    /// Between games: a start picture held long enough begins the game; a board
    /// joined mid-game or set up wrongly is reported.
    pub(super) fn start_timers(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        if let Some(cand) = &self.start.start_candidate {
            if t.saturating_sub(cand.since) >= self.config.start_hold_ms {
                let cand = self.start.start_candidate.take().expect("checked");
                self.begin_game(t, cand, out);
                return;
            }
        }
        self.position_unknown_timer(t, out);
        if let Some((raw, since, squares)) = &self.start.wrong_start {
            if t.saturating_sub(*since) >= self.config.start_hold_ms
                && self.start.wrong_start_alerted.as_ref() != Some(raw)
            {
                out.push(TrackerEvent::Alert(Alert {
                    id: 0,
                    penalty: None,
                    kind: AlertKind::WrongInitialPosition,
                    article: "7.2.1".into(),
                    severity: Severity::Warning,
                    squares: Alert::square_names(squares.iter().copied()),
                    message: format!(
                        "The pieces are set up wrongly on {}: correct the initial position before the game starts.",
                        names(squares)
                    ),
                }));
                self.start.wrong_start_alerted = Some(raw.clone());
            }
        }
    }

    /// Before any game: a board showing a game in progress (both kings, no start
    /// position within one move) with the clock running, or still for
    /// [`POSITION_UNKNOWN_MS`], was joined mid-game. No move is guessed; the
    /// arbiters are told once, and the operator's FEN (with the side to move)
    /// starts following it (`operator_start_fen`).
    fn position_unknown_timer(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        if self.phase != Phase::WaitingStart
            || self.start.unknown_alerted
            || self.start.start_candidate.is_some()
            || self.start.brief_start.is_some()
            || self.start.wrong_start.is_some()
        {
            return;
        }
        let Some(raw) = &self.last_raw else {
            return;
        };
        if raw.count(Color::White.king()) != 1 || raw.count(Color::Black.king()) != 1 {
            return;
        }
        let running = !self.config.no_clock && self.clock.last_reading.is_some_and(|r| r.running);
        if !running && t.saturating_sub(self.last_change_t) < POSITION_UNKNOWN_MS {
            return;
        }
        self.start.unknown_alerted = true;
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::GameInProgressPositionUnknown,
            article: "6.6".into(),
            severity: Severity::Warning,
            squares: Vec::new(),
            message: "Game in progress, position unknown: this board shows a game that was never seen to start (the daemon started late, or the board was swapped), so no move is published. Give the position with the side to move (the start-FEN action) to follow it from there.".into(),
        }));
    }
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
