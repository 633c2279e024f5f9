//! Games as PGN.
//!
//! [`GameRecord`] is the one place a game's record is assembled from tracker
//! events: the start position, the verified moves with their clock times, what
//! retractions took back, and the result. [`GameRecorder`] splits one board's
//! event stream into games. [`GameRecord::to_pgn`] writes the export form that
//! broadcast consumers read (reconstruction.md §3): the Seven Tag Roster with
//! `Round` as `round.board`, FEN/SetUp for any start that is not the standard
//! one, `Variant "Chess960"`, SAN moves with move numbers, `{ [%clk h:mm:ss] }` on
//! every move whose clock time is known (a missing `%clk` makes broadcasts drop
//! the clocks), lines of at most 80 characters, and the result token.

use std::fmt;

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Color, Setup};

use crate::events::{GameEvent, GameResult, MoveEvent, ResultReason};

/// Longest movetext line written (the PGN export format's limit).
pub const MAX_LINE: usize = 80;

/// Chess960 start-position number of the standard start.
const STANDARD_CHESS960_ID: u32 = 518;

/// What is known about a game besides its moves (from the pairing, the
/// configuration or the capture header). Unknown values are written as `?`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameInfo {
    pub event: Option<String>,
    pub site: Option<String>,
    /// `YYYY.MM.DD` (parts may be `??`).
    pub date: Option<String>,
    /// Round number or name; with a board number it becomes `round.board`.
    pub round: Option<String>,
    /// Board number in the round.
    pub board: Option<u32>,
    pub white: Option<String>,
    pub black: Option<String>,
    /// More tags, written after the Seven Tag Roster in this order (e.g.
    /// `WhiteElo`, `TimeControl`).
    pub extra_tags: Vec<(String, String)>,
}

impl GameInfo {
    /// PGN date (`2026.11.22`) from the start of an RFC 3339 time, if it has one.
    pub fn date_from_rfc3339(time: &str) -> Option<String> {
        let d = time.get(..10)?.as_bytes();
        let digits = |r: std::ops::Range<usize>| d[r].iter().all(u8::is_ascii_digit);
        if digits(0..4) && d[4] == b'-' && digits(5..7) && d[7] == b'-' && digits(8..10) {
            Some(format!("{}.{}.{}", &time[0..4], &time[5..7], &time[8..10]))
        } else {
            None
        }
    }

    /// The `Round` tag value.
    pub fn round_tag(&self) -> String {
        match (&self.round, self.board) {
            (Some(r), Some(b)) => format!("{r}.{b}"),
            (Some(r), None) => r.clone(),
            (None, _) => "?".into(),
        }
    }
}

/// One verified move as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedMove {
    /// 1-based ply from the game's start position.
    pub ply: u32,
    pub san: String,
    pub uci: String,
    /// The mover's clock after the move, in ms.
    pub clock_ms: Option<u64>,
    /// Time the mover used, in ms.
    pub emt_ms: Option<u64>,
}

impl From<&MoveEvent> for RecordedMove {
    fn from(m: &MoveEvent) -> RecordedMove {
        RecordedMove {
            ply: m.ply,
            san: m.san.clone(),
            uci: m.uci.clone(),
            clock_ms: m.clock_ms,
            emt_ms: m.emt_ms,
        }
    }
}

/// Why an event could not be applied to a record, or a record does not replay.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error(
        "verified move for ply {got} arrived while the record has {have} plies; the moves \
         in between were never verified, so the record stops before the gap (tracker bug)"
    )]
    Gap { have: u32, got: u32 },
    #[error("the start position {fen:?} is not a legal position: {detail}")]
    BadStart { fen: String, detail: String },
    #[error("ply {ply} ({uci}, {san}): {detail}")]
    BadMove {
        ply: u32,
        uci: String,
        san: String,
        detail: String,
    },
}

/// A game's record: tags, start, moves, result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameRecord {
    pub info: GameInfo,
    /// FEN of the start position.
    pub start_fen: String,
    /// Chess960 start number, when the start is one (518 = standard chess).
    pub chess960: Option<u32>,
    /// Verified moves, ply 1 first.
    pub moves: Vec<RecordedMove>,
    pub result: Option<GameResult>,
    /// Why the game ended, as the tracker said it (public words only).
    pub result_reason: Option<ResultReason>,
    /// The tournament round the game was played in, as the hub stamped it when
    /// it began (`None`: no round was known). Publishers turn it into the
    /// `Round` tag with the tournament data; it is not written by itself.
    pub round: Option<u32>,
    /// The board is used turned 180° (White at the connector's right), as the
    /// tracker found at the start: what turns a sensor picture into the game's
    /// frame (the EBAPI's `board`). Not written to PGN.
    pub rotated: bool,
}

impl GameRecord {
    /// An empty game from `start_fen`.
    pub fn new(info: GameInfo, start_fen: impl Into<String>, chess960: Option<u32>) -> GameRecord {
        GameRecord {
            info,
            start_fen: start_fen.into(),
            chess960,
            moves: Vec::new(),
            result: None,
            result_reason: None,
            round: None,
            rotated: false,
        }
    }

    /// Whether anything happened after the start (a move or a result).
    pub fn is_started(&self) -> bool {
        !self.moves.is_empty() || self.result.is_some()
    }

    /// Applies one event of this game. `GameStart` is the recorder's business
    /// and ignored here; provisional moves and clock readings change nothing;
    /// a late press re-times a recorded move (`MoveClock`).
    pub fn apply(&mut self, event: &GameEvent) -> Result<(), RecordError> {
        match event {
            GameEvent::Move(m) if m.verified => {
                let have = self.moves.len() as u32;
                if m.ply == 0 || m.ply > have + 1 {
                    return Err(RecordError::Gap { have, got: m.ply });
                }
                // A verified move for a ply already recorded replaces it and all
                // after it: the tracker's word on a ply is its latest one.
                self.moves.truncate(m.ply as usize - 1);
                self.moves.push(RecordedMove::from(m));
                Ok(())
            }
            GameEvent::Retraction { from_ply, .. } => {
                self.moves.truncate(from_ply.saturating_sub(1) as usize);
                // Taking moves back reopens a finished game (an arbiter correcting
                // the position after a wrong result gesture, say).
                self.result = None;
                self.result_reason = None;
                Ok(())
            }
            GameEvent::Result { result, reason } => {
                self.result = Some(*result);
                self.result_reason = Some(*reason);
                Ok(())
            }
            GameEvent::MoveClock {
                ply,
                clock_ms,
                emt_ms,
            } => {
                // A ply the record no longer has (withdrawn since) keeps
                // nothing of it.
                if let Some(m) = ply
                    .checked_sub(1)
                    .and_then(|i| self.moves.get_mut(i as usize))
                {
                    m.clock_ms = Some(*clock_ms);
                    if emt_ms.is_some() {
                        m.emt_ms = *emt_ms;
                    }
                }
                Ok(())
            }
            GameEvent::Move(_) | GameEvent::Clock { .. } | GameEvent::GameStart { .. } => Ok(()),
        }
    }

    /// Whether the game is Chess960 (any start but the standard one, 518).
    pub fn is_chess960(&self) -> bool {
        self.chess960.is_some_and(|n| n != STANDARD_CHESS960_ID)
    }

    fn start_setup(&self) -> Option<Setup> {
        self.start_fen.parse::<Fen>().ok().map(Setup::from)
    }

    /// Whether the start is the standard start position (no FEN tag needed).
    pub fn is_standard_start(&self) -> bool {
        !self.is_chess960() && self.start_setup() == Some(Setup::default())
    }

    /// Replays the moves from the start with the rules of chess and checks that
    /// every UCI move is legal and its SAN is the one recorded. Consumers refuse
    /// a PGN with an illegal move outright, so a publisher checks before sending.
    pub fn check_moves(&self) -> Result<(), RecordError> {
        let mode = if self.is_chess960() {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let bad_start = |detail: String| RecordError::BadStart {
            fen: self.start_fen.clone(),
            detail,
        };
        let fen: Fen = self
            .start_fen
            .parse()
            .map_err(|e| bad_start(format!("{e}")))?;
        let mut pos: Chess = fen
            .into_position(mode)
            .map_err(|e| bad_start(format!("{e}")))?;
        for m in &self.moves {
            let bad = |detail: String| RecordError::BadMove {
                ply: m.ply,
                uci: m.uci.clone(),
                san: m.san.clone(),
                detail,
            };
            let uci: UciMove = m.uci.parse().map_err(|e| bad(format!("not UCI: {e}")))?;
            let mv = uci.to_move(&pos).map_err(|e| bad(format!("{e}")))?;
            let san = shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, mv);
            if san.to_string() != m.san {
                return Err(bad(format!("the move is {san}, not {}", m.san)));
            }
        }
        Ok(())
    }

    /// The tags in the order written: the Seven Tag Roster, then the extra tags,
    /// then what the start position requires.
    pub fn tags(&self) -> Vec<(String, String)> {
        let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        let mut tags = vec![
            ("Event".to_string(), or_unknown(&self.info.event)),
            ("Site".to_string(), or_unknown(&self.info.site)),
            (
                "Date".to_string(),
                self.info
                    .date
                    .clone()
                    .unwrap_or_else(|| "????.??.??".into()),
            ),
            ("Round".to_string(), self.info.round_tag()),
            ("White".to_string(), or_unknown(&self.info.white)),
            ("Black".to_string(), or_unknown(&self.info.black)),
            ("Result".to_string(), self.result_token().to_string()),
        ];
        if self.info.round.is_none() {
            if let Some(b) = self.info.board {
                // Keeps the board number when no round is known ("?.5" is not a
                // round); consumers that do not know the tag ignore it.
                tags.push(("Board".into(), b.to_string()));
            }
        }
        tags.extend(self.info.extra_tags.iter().cloned());
        if self.is_chess960() {
            tags.push(("Variant".into(), "Chess960".into()));
        }
        if !self.is_standard_start() {
            tags.push(("SetUp".into(), "1".into()));
            tags.push(("FEN".into(), self.start_fen.clone()));
        }
        tags
    }

    /// `1-0`, `0-1`, `1/2-1/2` or `*` (unfinished).
    pub fn result_token(&self) -> &'static str {
        self.result.map_or("*", GameResult::as_pgn)
    }

    /// The game in PGN export form, ending with a blank line so games can be
    /// concatenated.
    pub fn to_pgn(&self) -> String {
        let mut out = String::new();
        self.write_pgn(&mut out)
            .expect("writing to a String cannot fail");
        out
    }

    /// Writes [`GameRecord::to_pgn`] to `out`.
    pub fn write_pgn(&self, out: &mut impl fmt::Write) -> fmt::Result {
        for (name, value) in self.tags() {
            writeln!(
                out,
                "[{} \"{}\"]",
                tag_name(&name),
                escape_tag_value(&value)
            )?;
        }
        out.write_char('\n')?;
        let mut line = LineWrapper::new(out);
        let (mut turn, mut number) = match self.start_setup() {
            Some(s) => (s.turn, s.fullmoves.get()),
            None => (Color::White, 1),
        };
        let mut need_number = true;
        for m in &self.moves {
            // The move number and its move stay on one line: a number at the end of
            // a line with its move on the next reads badly and some tools choke.
            match turn {
                Color::White => line.token(&format!("{number}. {}", m.san))?,
                Color::Black if need_number => line.token(&format!("{number}... {}", m.san))?,
                Color::Black => line.token(&m.san)?,
            }
            need_number = false;
            if let Some(comment) = clock_comment(m) {
                line.token(&comment)?;
                // After a comment the reader has lost the move number: repeat it.
                need_number = true;
            }
            if turn == Color::Black {
                number += 1;
            }
            turn = !turn;
        }
        line.token(self.result_token())?;
        line.finish()?;
        out.write_char('\n')
    }
}

/// `{ [%clk 0:03:01] [%emt 0:00:02] }`, or nothing when no time is known.
fn clock_comment(m: &RecordedMove) -> Option<String> {
    let mut parts = Vec::with_capacity(2);
    if let Some(c) = m.clock_ms {
        parts.push(format!("[%clk {}]", hms(c)));
    }
    if let Some(e) = m.emt_ms {
        parts.push(format!("[%emt {}]", hms(e)));
    }
    (!parts.is_empty()).then(|| format!("{{ {} }}", parts.join(" ")))
}

/// Milliseconds as `h:mm:ss`, rounded down (DGT clocks show whole seconds, and a
/// clock showing 0:00:01 has not yet fallen).
pub fn hms(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Tag names are symbols: letters, digits and `_` only. Anything else is
/// replaced so a configured name can never break the tag line.
fn tag_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".into()
    } else {
        cleaned
    }
}

/// A tag value with `\` and `"` escaped; line breaks and other control characters
/// become spaces, since a tag must stay on one line.
pub fn escape_tag_value(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            c if c.is_control() => s.push(' '),
            c => s.push(c),
        }
    }
    s
}

/// Joins tokens with single spaces into lines of at most [`MAX_LINE`] characters.
/// Tokens are never split (a clock comment stays whole); a token longer than a
/// line gets a line of its own.
struct LineWrapper<'a, W: fmt::Write> {
    out: &'a mut W,
    len: usize,
}

impl<'a, W: fmt::Write> LineWrapper<'a, W> {
    fn new(out: &'a mut W) -> Self {
        LineWrapper { out, len: 0 }
    }

    fn token(&mut self, t: &str) -> fmt::Result {
        let width = t.chars().count();
        if self.len > 0 && self.len + 1 + width > MAX_LINE {
            self.out.write_char('\n')?;
            self.len = 0;
        }
        if self.len > 0 {
            self.out.write_char(' ')?;
            self.len += 1;
        }
        self.out.write_str(t)?;
        self.len += width;
        Ok(())
    }

    fn finish(self) -> fmt::Result {
        self.out.write_char('\n')
    }
}

/// Splits one board's event stream into games.
///
/// A `GameStart` after a move or a result opens a new game; a `GameStart` before
/// any move replaces the pending start (the pieces were set up again). Events
/// before the first `GameStart` belong to no game and are ignored.
#[derive(Debug)]
pub struct GameRecorder {
    info: GameInfo,
    /// Round of the games that start from now on.
    round: Option<u32>,
    current: Option<GameRecord>,
    finished: Vec<GameRecord>,
}

impl GameRecorder {
    /// `info` is copied into every game of the board.
    pub fn new(info: GameInfo) -> GameRecorder {
        GameRecorder {
            info,
            round: None,
            current: None,
            finished: Vec::new(),
        }
    }

    /// Takes one event.
    pub fn push(&mut self, event: &GameEvent) -> Result<(), RecordError> {
        if let GameEvent::GameStart {
            fen,
            chess960,
            rotated,
        } = event
        {
            if let Some(done) = self.current.take().filter(GameRecord::is_started) {
                self.finished.push(done);
            }
            let mut game = GameRecord::new(self.info.clone(), fen.clone(), *chess960);
            game.round = self.round;
            game.rotated = *rotated;
            self.current = Some(game);
            return Ok(());
        }
        match self.current.as_mut() {
            Some(game) => game.apply(event),
            None => Ok(()),
        }
    }

    /// Games that start from now on are games of `round`; so is the current
    /// game if it has not begun (no move, no result). A game begun keeps its
    /// round: a round change never moves a game already played.
    pub fn set_round(&mut self, round: Option<u32>) {
        if let Some(g) = self.current.as_mut().filter(|g| !g.is_started()) {
            g.round = round;
        }
        self.round = round;
    }

    /// Every game held, begun or not, and the games to come are games of `round`.
    pub fn restamp_all(&mut self, round: Option<u32>) {
        for g in self.current.iter_mut().chain(self.finished.iter_mut()) {
            g.round = round;
        }
        self.round = round;
    }

    /// Games held that carry no round get `round`.
    pub fn stamp_unset(&mut self, round: u32) {
        for g in self.current.iter_mut().chain(self.finished.iter_mut()) {
            g.round.get_or_insert(round);
        }
    }

    /// The game in progress, if any.
    pub fn current(&self) -> Option<&GameRecord> {
        self.current.as_ref()
    }

    /// Games that a later `GameStart` closed, oldest first (removed from the recorder).
    pub fn take_finished(&mut self) -> Vec<GameRecord> {
        std::mem::take(&mut self.finished)
    }

    /// All remaining games, including the one in progress if it has started.
    pub fn finish(mut self) -> Vec<GameRecord> {
        let mut games = std::mem::take(&mut self.finished);
        games.extend(self.current.take().filter(GameRecord::is_started));
        games
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hms_rounds_down() {
        assert_eq!(hms(0), "0:00:00");
        assert_eq!(hms(181_999), "0:03:01");
        assert_eq!(hms(5_400_000), "1:30:00");
        assert_eq!(hms(36_000_000), "10:00:00");
    }

    #[test]
    fn tag_values_are_escaped() {
        assert_eq!(escape_tag_value(r#"a "b" \c"#), r#"a \"b\" \\c"#);
        assert_eq!(escape_tag_value("x\ny"), "x y");
        assert_eq!(tag_name("White Elo"), "White_Elo");
    }

    #[test]
    fn dates_come_from_rfc3339() {
        assert_eq!(
            GameInfo::date_from_rfc3339("2026-11-22T14:05:00Z").as_deref(),
            Some("2026.11.22")
        );
        assert_eq!(GameInfo::date_from_rfc3339("yesterday"), None);
        assert_eq!(GameInfo::date_from_rfc3339(""), None);
    }
}
