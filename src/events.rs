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
    /// Stable machine-readable kind, e.g. `illegal_move`, `displaced_pieces`.
    pub kind: String,
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
    pub kind: String,
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
