//! Game events: what the tracker says happened on a board.
//!
//! Article 12.6 of the Laws forbids letting the public see arbiter business, so the
//! split is in the types: a [`GameEvent`] may go to public feeds, an [`Alert`] may
//! not, and [`TrackerEvent`] is the union only the journal and the arbiter side see.
//! A publisher's input type is `GameEvent`; there is no conversion from `Alert`.

use serde::{Deserialize, Serialize};
use shakmaty::{Color, Square};

/// Milliseconds since the start of the capture (replay) or of the daemon's clock.
pub type Millis = u64;

/// One move of the game, as published.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveEvent {
    /// 1-based half-move number counted from the game's start position.
    pub ply: u32,
    /// Standard algebraic notation with check/mate suffix, e.g. `Nxe5+`, `O-O`, `e8=Q#`.
    pub san: String,
    /// UCI notation (`e1g1` for castling in standard chess, king-takes-rook in Chess960).
    pub uci: String,
    /// FEN of the position after the move.
    pub fen: String,
    /// `true` once the move's completion is proven (clock press, opponent's next
    /// move, or the hold on clockless boards); provisional moves may still change.
    pub verified: bool,
    /// The mover's remaining clock time after the move, when a clock is connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_ms: Option<u64>,
    /// Time the mover used for this move, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emt_ms: Option<u64>,
    /// The move was inferred from a burst of several plies (no picture showed it alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconstructed: bool,
    /// The move replaces moves published earlier and withdrawn by the
    /// `Retraction` just before it: later pictures were explained only by this
    /// line (the tracker's self-correction).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corrected: bool,
}

/// How a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GameResult {
    #[serde(rename = "1-0")]
    WhiteWins,
    #[serde(rename = "0-1")]
    BlackWins,
    #[serde(rename = "1/2-1/2")]
    Draw,
}

impl GameResult {
    /// PGN result token.
    pub fn as_pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
        }
    }

    /// The result in which `winner` wins.
    pub fn win_for(winner: Color) -> GameResult {
        match winner {
            Color::White => GameResult::WhiteWins,
            Color::Black => GameResult::BlackWins,
        }
    }
}

/// Events that may be published (Article 12.6: nothing here is arbiter business).
/// They are read back from JSON too (the MQTT aggregator, `docs/mqtt.md`):
/// the serialised form is the contract both ways.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GameEvent {
    /// A game starts from `fen` (standard start, a Chess960 start, or a set position).
    GameStart {
        fen: String,
        /// Chess960 start-position number (518 = standard chess), when the start is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        chess960: Option<u32>,
        /// The board is used turned 180° (White at the connector's right).
        rotated: bool,
    },
    /// A move was made (see [`MoveEvent::verified`]).
    Move(MoveEvent),
    /// Moves from `from_ply` onwards are withdrawn (board put back to an earlier
    /// position, or a provisional move replaced). `plies` lists the plies withdrawn.
    Retraction { from_ply: u32, plies: Vec<u32> },
    /// The clock of verified ply `ply`, known only now: its mover pressed the
    /// clock after the move had been verified without a press (it stood long
    /// enough, 4.7). `clock_ms` and `emt_ms` replace the move's: until the
    /// press the mover's clock was still running, and the move carried the
    /// time it showed then. Only the game's latest verified ply is ever
    /// re-timed, before the opponent's reply is verified.
    MoveClock {
        ply: u32,
        clock_ms: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        emt_ms: Option<u64>,
    },
    /// Clock times, White's and Black's, as mapped by the tracker.
    Clock {
        white_ms: u64,
        black_ms: u64,
        /// The side whose time runs; `None` when stopped.
        #[serde(skip_serializing_if = "Option::is_none")]
        running: Option<ColorName>,
    },
    /// The game ended. `reason` is one of a closed list of public words: an
    /// arbiter's name or notes cannot be put here (Article 12.6); they go on
    /// the board's timeline only.
    Result {
        result: GameResult,
        reason: ResultReason,
    },
}

/// Why a game ended, as the public may read it. A closed list on purpose: a
/// [`GameEvent`] is public, so nothing typed by a person (an arbiter's name,
/// the notes with a result) can travel in one. An arbiter's result is
/// published as [`ResultReason::Arbiter`]; what the arbiter wrote stays on the
/// board's timeline and in the capture's operator line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResultReason {
    /// Article 5.1.1.
    Checkmate,
    /// Article 5.2.1.
    Stalemate,
    /// Article 5.2.2.
    DeadPosition,
    /// Article 9.6.1.
    FivefoldRepetition,
    /// Article 9.6.2.
    SeventyFiveMoves,
    /// A result piece (DGT "magic piece") was put on the board.
    ResultPiece,
    /// The kings were put in the centre of the board.
    ResultGesture,
    /// An arbiter entered the result on the dashboard.
    Arbiter,
}

impl ResultReason {
    /// The words published (`"reason"` in the stream, the record's reason).
    pub fn as_str(self) -> &'static str {
        match self {
            ResultReason::Checkmate => "checkmate",
            ResultReason::Stalemate => "stalemate",
            ResultReason::DeadPosition => "dead position",
            ResultReason::FivefoldRepetition => "fivefold repetition",
            ResultReason::SeventyFiveMoves => "75-move rule",
            ResultReason::ResultPiece => "result piece put on the board",
            ResultReason::ResultGesture => "kings put in the centre (result gesture)",
            ResultReason::Arbiter => "entered by the arbiter",
        }
    }
}

impl std::fmt::Display for ResultReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl ResultReason {
    /// Every reason, for reading the published words back.
    pub const ALL: [ResultReason; 8] = [
        ResultReason::Checkmate,
        ResultReason::Stalemate,
        ResultReason::DeadPosition,
        ResultReason::FivefoldRepetition,
        ResultReason::SeventyFiveMoves,
        ResultReason::ResultPiece,
        ResultReason::ResultGesture,
        ResultReason::Arbiter,
    ];
}

impl<'de> Deserialize<'de> for ResultReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ResultReason, D::Error> {
        let text = String::deserialize(d)?;
        ResultReason::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("{text:?} is not a published result reason"))
            })
    }
}

/// A colour, serialised as `"white"` / `"black"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorName {
    White,
    Black,
}

impl From<Color> for ColorName {
    fn from(c: Color) -> ColorName {
        match c {
            Color::White => ColorName::White,
            Color::Black => ColorName::Black,
        }
    }
}

/// How serious an alert is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing to rule on (rook-first castling, a draw claim available).
    Info,
    /// The arbiter should look (displaced pieces, moves that had to be reconstructed).
    Warning,
    /// An irregularity the Laws require the arbiter to act on (illegal move completed).
    Error,
}

/// What an alert is about. Its name (`illegal_move`, `displaced_pieces`, …)
/// is what the journal, the feeds and the dashboard carry, so it never
/// changes; a name this version does not know (a newer host's, over MQTT) is
/// kept as it came.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AlertKind {
    /// A completed move that is not legal (7.5.1).
    IllegalMove,
    /// A position that cannot arise in the game (7.5.1, A.4.2).
    IrregularPosition,
    /// The clock pressed without a move made (7.5.3).
    ClockPressedWithoutMove,
    /// The board does not show the game's position (7.4).
    DisplacedPieces,
    /// Several moves fit the board; nothing is published until told (8.4).
    AmbiguousMoves,
    /// The board stands turned a quarter (7.2).
    BoardRotated90,
    /// The pieces were not set up right at the start (7.2).
    WrongInitialPosition,
    /// A draw could be claimed (9.2, 9.3).
    DrawClaimAvailable,
    /// A move looked made with two hands, repeatedly (7.5.4).
    TwoHandsSuspected,
    /// An illegal move was left standing and the game went on from it.
    IllegalMoveStands,
    /// A game in progress whose position the operator has to give.
    GameInProgressPositionUnknown,
    /// Published moves were read wrong and are corrected.
    MovesCorrected,
    /// The board's reports fit more than one reading; one is recorded.
    MovesUncertain,
    /// The game is drawn by the Laws themselves (9.6).
    AutomaticDraw,
    /// The game ended off the board, without a result seen.
    GameEndedWithoutResult,
    /// Castling made with the rook first (4.4.2).
    RookFirstCastling,
    /// A promotion whose new piece the board cannot see.
    PromotionPieceUnknown,
    /// A pawn promoted to a rook (told in case of a claim).
    PromotionToRook,
    /// Two hosts report the same board number.
    BoardNumberClash,
    /// A flag fell (6.9).
    FlagFall,
    /// The clock did not add a time control's time (6.10).
    ControlTimeNotAdded,
    /// Moves made while the clock was stopped.
    ClockStoppedMoves,
    /// The board went back to an earlier position of the game (7.1).
    Takeback,
    /// Every move was taken back to the start position in a live game (7.1).
    RollbackToStart,
    /// A kind this version does not know, by its name.
    Other(String),
}

impl AlertKind {
    /// Every kind this version raises.
    pub const KNOWN: [AlertKind; 24] = [
        AlertKind::IllegalMove,
        AlertKind::IrregularPosition,
        AlertKind::ClockPressedWithoutMove,
        AlertKind::DisplacedPieces,
        AlertKind::AmbiguousMoves,
        AlertKind::BoardRotated90,
        AlertKind::WrongInitialPosition,
        AlertKind::DrawClaimAvailable,
        AlertKind::TwoHandsSuspected,
        AlertKind::IllegalMoveStands,
        AlertKind::GameInProgressPositionUnknown,
        AlertKind::MovesCorrected,
        AlertKind::MovesUncertain,
        AlertKind::AutomaticDraw,
        AlertKind::GameEndedWithoutResult,
        AlertKind::RookFirstCastling,
        AlertKind::PromotionPieceUnknown,
        AlertKind::PromotionToRook,
        AlertKind::BoardNumberClash,
        AlertKind::FlagFall,
        AlertKind::ControlTimeNotAdded,
        AlertKind::ClockStoppedMoves,
        AlertKind::Takeback,
        AlertKind::RollbackToStart,
    ];

    /// The kind's stable name.
    pub fn as_str(&self) -> &str {
        match self {
            AlertKind::IllegalMove => "illegal_move",
            AlertKind::IrregularPosition => "irregular_position",
            AlertKind::ClockPressedWithoutMove => "clock_pressed_without_move",
            AlertKind::DisplacedPieces => "displaced_pieces",
            AlertKind::AmbiguousMoves => "ambiguous_moves",
            AlertKind::BoardRotated90 => "board_rotated_90",
            AlertKind::WrongInitialPosition => "wrong_initial_position",
            AlertKind::DrawClaimAvailable => "draw_claim_available",
            AlertKind::TwoHandsSuspected => "two_hands_suspected",
            AlertKind::IllegalMoveStands => "illegal_move_stands",
            AlertKind::GameInProgressPositionUnknown => "game_in_progress_position_unknown",
            AlertKind::MovesCorrected => "moves_corrected",
            AlertKind::MovesUncertain => "moves_uncertain",
            AlertKind::AutomaticDraw => "automatic_draw",
            AlertKind::GameEndedWithoutResult => "game_ended_without_result",
            AlertKind::RookFirstCastling => "rook_first_castling",
            AlertKind::PromotionPieceUnknown => "promotion_piece_unknown",
            AlertKind::PromotionToRook => "promotion_to_rook",
            AlertKind::BoardNumberClash => "board_number_clash",
            AlertKind::FlagFall => "flag_fall",
            AlertKind::ControlTimeNotAdded => "control_time_not_added",
            AlertKind::ClockStoppedMoves => "clock_stopped_moves",
            AlertKind::Takeback => "takeback",
            AlertKind::RollbackToStart => "rollback_to_start",
            AlertKind::Other(name) => name,
        }
    }

    /// The kind named `name` (`Other` if this version does not know it).
    pub fn from_name(name: &str) -> AlertKind {
        AlertKind::KNOWN
            .into_iter()
            .find(|k| k.as_str() == name)
            .unwrap_or_else(|| AlertKind::Other(name.to_string()))
    }
}

impl std::fmt::Display for AlertKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for AlertKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for AlertKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for AlertKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AlertKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(AlertKind::from_name(&name))
    }
}

/// An arbiter-only message (Article 12.6: never published).
///
/// Lifecycle: the tracker raises an alert with a per-board `id`; an arbiter may
/// acknowledge it (the hub keeps that); it is resolved either by the tracker, with
/// an [`AlertResolved`] naming the same `id` when the board returns to a legal
/// continuation, or by an arbiter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alert {
    /// Number of the alert on its board, 1-based, in the order raised; the tracker
    /// assigns it (alerts built with `id: 0` are numbered when the tracker emits
    /// them). Replaying the same input gives the same numbers, so ids survive a
    /// restart that rebuilds state from the journal.
    pub id: u32,
    /// What it is about.
    pub kind: AlertKind,
    /// Article of the Laws of Chess (2018 numbering), e.g. `"7.5.1"`.
    pub article: String,
    pub severity: Severity,
    /// Squares involved, lowercase names (`"e4"`).
    pub squares: Vec<String>,
    /// A plain sentence an arbiter understands without knowing the software.
    pub message: String,
    /// What the Laws suggest under the configured regime (e.g. 7.5.5: two minutes
    /// added to the opponent's time), when there is a penalty to consider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub penalty: Option<String>,
}

/// An alert the tracker saw corrected (the board returned to a legal
/// continuation, the displaced pieces were put back, ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertResolved {
    /// The [`Alert::id`] resolved.
    pub id: u32,
    /// The alert's kind, repeated so a reader of the log needs no lookup.
    pub kind: AlertKind,
    /// Why it is resolved, in a plain sentence.
    pub reason: String,
}

impl Alert {
    /// Square names in the form alerts carry them.
    pub fn square_names(squares: impl IntoIterator<Item = Square>) -> Vec<String> {
        squares.into_iter().map(|s| s.to_string()).collect()
    }
}

/// Everything the tracker emits: public game events and arbiter-only alerts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrackerEvent {
    Game(GameEvent),
    Alert(Alert),
    /// An alert raised earlier is resolved (arbiter-only, like the alert).
    Resolved(AlertResolved),
}

/// A tracker event stamped with where and when it happened, for the journal and
/// `replay --events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    /// Board number (configured board number, or 1-based capture index in replay).
    pub board: u32,
    /// Ply the event refers to: the move's ply, or the number of plies played so far.
    pub ply: u32,
    /// Capture time of the input that caused the event.
    pub t_ms: Millis,
    pub event: TrackerEvent,
}

impl Stamped {
    /// The JSON object written to `replay --events` and the journal: the event's own
    /// fields plus `board`, `ply` and `t_ms`; alerts get `"type":"alert"`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = match &self.event {
            TrackerEvent::Game(g) => serde_json::to_value(g),
            TrackerEvent::Alert(a) => serde_json::to_value(a),
            TrackerEvent::Resolved(r) => serde_json::to_value(r),
        }
        .expect("events serialise to JSON objects");
        if let serde_json::Value::Object(map) = &mut v {
            match self.event {
                TrackerEvent::Alert(_) => {
                    map.insert("type".into(), "alert".into());
                }
                TrackerEvent::Resolved(_) => {
                    map.insert("type".into(), "alert_resolved".into());
                }
                TrackerEvent::Game(_) => {}
            }
            map.insert("board".into(), self.board.into());
            map.insert("t_ms".into(), self.t_ms.into());
            map.entry("ply").or_insert(self.ply.into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind has one name, reads back from it, and is documented for the
    /// people who filter on it.
    #[test]
    fn every_alert_kind_is_named_once_and_documented() {
        let docs = [
            include_str!("../docs/alerts.md"),
            include_str!("../docs/alerts-clock.md"),
            include_str!("../docs/mqtt.md"),
        ]
        .concat();
        let mut names = std::collections::HashSet::new();
        for k in AlertKind::KNOWN {
            assert!(names.insert(k.as_str().to_string()), "{k} named twice");
            assert_eq!(AlertKind::from_name(k.as_str()), k);
            assert!(docs.contains(&format!("`{k}`")), "{k} is not documented");
        }
    }

    /// The name is what goes on the wire; a name from a newer version is kept.
    #[test]
    fn alert_kinds_travel_as_their_names() {
        let json = serde_json::to_string(&AlertKind::TwoHandsSuspected).unwrap();
        assert_eq!(json, "\"two_hands_suspected\"");
        let back: AlertKind = serde_json::from_str(&json).unwrap();
        assert_eq!(back, AlertKind::TwoHandsSuspected);
        let newer: AlertKind = serde_json::from_str("\"lever_stuck\"").unwrap();
        assert_eq!(newer, AlertKind::Other("lever_stuck".into()));
        assert_eq!(serde_json::to_string(&newer).unwrap(), "\"lever_stuck\"");
    }
}
