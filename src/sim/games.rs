//! Loading games: PGN files and the expected-results index.
//!
//! Games are the input of the simulator, the emulator and the accuracy tests, so
//! the loader is lenient about the file (BOM, Latin-1, comments, variations) and
//! strict about chess: every move kept is legal in the position it is played
//! from, replayed with `shakmaty`. A game whose move text stops being legal (a
//! null move, an illegal or unreadable SAN) keeps the moves before that point and
//! records why it stopped in [`Game::stopped`].

use std::ops::ControlFlow;
use std::path::Path;

use pgn_reader::{Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, EnPassantMode, Move, Position};

/// Why games could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum GamesError {
    // The I/O error is part of the message rather than a `source`, so that
    // error chains do not print it twice.
    #[error("cannot read {path}: {error}; check that the file exists and is readable")]
    Io { path: String, error: std::io::Error },
    #[error("game {game}: the FEN tag {fen:?} is not a legal position ({reason}); fix or remove the tag")]
    BadFen {
        game: usize,
        fen: String,
        reason: String,
    },
    #[error(
        "game {game}: variant {variant:?} is not supported (only standard chess and Chess960 are)"
    )]
    UnsupportedVariant { game: usize, variant: String },
    #[error(
        "{path} line {line}: {reason}; the index must be JSON Lines as written by the data tools"
    )]
    BadIndexLine {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("{path} line {line}: move {ply} ({uci}) is not legal in the indexed game; the index and the shakmaty rules disagree")]
    IllegalIndexMove {
        path: String,
        line: usize,
        ply: usize,
        uci: String,
    },
}

/// One game: where it starts and the legal moves played from there.
#[derive(Clone, Debug)]
pub struct Game {
    /// The PGN tag pairs, in file order.
    pub headers: Vec<(String, String)>,
    /// The start position, with the castling mode of the game (Chess960 games use
    /// [`CastlingMode::Chess960`] so that castling moves are king-takes-rook).
    pub start: Chess,
    /// `Some` for Chess960 games: the Scharnagl number (0..960) of the start
    /// array when the game starts from a Chess960 initial position, `Some(u32::MAX)`
    /// when it is Chess960 from a later position.
    pub chess960: Option<u32>,
    /// The moves, each legal in the position reached by the ones before it.
    pub moves: Vec<Move>,
    /// Why the move list ends before the move text did (null move, illegal or
    /// unreadable move), or `None` when every move of the main line was kept.
    pub stopped: Option<String>,
}

impl Game {
    /// The value of the tag `name` (case-sensitive, as PGN tags are).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The castling mode of the game.
    pub fn castling_mode(&self) -> CastlingMode {
        if self.chess960.is_some() {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        }
    }

    /// The position after all moves.
    pub fn final_position(&self) -> Chess {
        let mut pos = self.start.clone();
        for m in &self.moves {
            pos.play_unchecked(*m);
        }
        pos
    }

    /// The moves as UCI strings in the game's castling mode.
    pub fn uci_moves(&self) -> Vec<String> {
        let mode = self.castling_mode();
        self.moves
            .iter()
            .map(|m| m.to_uci(mode).to_string())
            .collect()
    }
}

/// Whether a `[Variant]` value names Chess960. Files spell it many ways
/// ("Chess960", "chess 960", "chess-960", "Fischerandom", "FischerRandom").
fn is_chess960_variant(v: &str) -> bool {
    let v = v.to_ascii_lowercase();
    v.contains("960") || v.contains("fischer")
}

/// Whether a `[Variant]` value names plain chess.
fn is_standard_variant(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    matches!(
        v.as_str(),
        "" | "standard" | "chess" | "normal" | "from position" | "fromposition"
    )
}

/// Turns raw file bytes into text: strips a UTF-8 BOM, and decodes files that
/// are not UTF-8 as Latin-1 (old PGN files often are), so that no byte is lost.
pub fn decode_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// Loads every game of a PGN file (any encoding, see [`decode_text`]).
pub fn load_pgn_file(path: &Path) -> Result<Vec<Game>, GamesError> {
    let bytes = std::fs::read(path).map_err(|error| GamesError::Io {
        path: path.display().to_string(),
        error,
    })?;
    load_pgn(&decode_text(&bytes))
}

/// Loads every game of a PGN text, main lines only.
pub fn load_pgn(text: &str) -> Result<Vec<Game>, GamesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = mark_uci_tokens(text);
    let mut reader = Reader::new(text.as_bytes());
    let mut visitor = Loader { index: 0 };
    let mut games = Vec::new();
    loop {
        match reader.read_game(&mut visitor) {
            Ok(Some(game)) => games.push(game?),
            Ok(None) => break,
            // Reading from a byte slice cannot fail; keep the error honest anyway.
            Err(error) => {
                return Err(GamesError::Io {
                    path: "<text>".into(),
                    error,
                })
            }
        }
        visitor.index += 1;
    }
    Ok(games)
}

/// Starts the comment that carries a UCI move token (see [`mark_uci_tokens`]).
/// A control character cannot occur in a real PGN comment.
const UCI_MARK: &str = "\u{1}uci:";

/// Whether `tok` is a UCI move (`e2e4`, `e7e8q`).
fn is_uci_token(tok: &str) -> bool {
    let b = tok.as_bytes();
    let sq = |f: u8, r: u8| (b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r);
    (b.len() == 4 || (b.len() == 5 && b"qrbnQRBN".contains(&b[4])))
        && sq(b[0], b[1])
        && sq(b[2], b[3])
}

/// Some engine tools write PGN move text in UCI notation. pgn-reader silently
/// skips tokens that are not SAN, so each UCI token of the move text is wrapped
/// into a marked comment that [`Loader::comment`] replays as a move. Tag lines,
/// comments and `;` rest-of-line comments are left alone.
fn mark_uci_tokens(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .lines()
        .any(|l| !l.trim_start().starts_with('[') && l.split_whitespace().any(is_uci_token))
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut in_brace = false;
    for line in text.split_inclusive('\n') {
        if !in_brace && line.trim_start().starts_with('[') {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while !rest.is_empty() {
            if in_brace {
                match rest.find('}') {
                    Some(i) => {
                        out.push_str(&rest[..=i]);
                        rest = &rest[i + 1..];
                        in_brace = false;
                    }
                    None => {
                        out.push_str(rest);
                        rest = "";
                    }
                }
                continue;
            }
            let c = rest.chars().next().unwrap_or(' ');
            if c == '{' {
                in_brace = true;
                out.push('{');
                rest = &rest[1..];
            } else if c == ';' {
                out.push_str(rest);
                rest = "";
            } else if c.is_whitespace() || c == '(' || c == ')' {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            } else {
                let end = rest
                    .find(|ch: char| ch.is_whitespace() || "(){};".contains(ch))
                    .unwrap_or(rest.len());
                let tok = &rest[..end];
                if is_uci_token(tok) {
                    out.push('{');
                    out.push_str(UCI_MARK);
                    out.push_str(tok);
                    out.push('}');
                } else {
                    out.push_str(tok);
                }
                rest = &rest[end..];
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

struct Loader {
    index: usize,
}

struct Building {
    game: Game,
    pos: Chess,
}

impl Loader {
    fn start_of(&self, headers: &[(String, String)]) -> Result<(Chess, Option<u32>), GamesError> {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim())
        };
        let variant = get("Variant").unwrap_or("");
        let is960 = is_chess960_variant(variant);
        if !is960 && !is_standard_variant(variant) {
            return Err(GamesError::UnsupportedVariant {
                game: self.index,
                variant: variant.to_owned(),
            });
        }
        let mode = if is960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let (pos, mode) = match get("FEN") {
            None => (Chess::default(), mode),
            Some(fen_text) => {
                let bad = |reason: String| GamesError::BadFen {
                    game: self.index,
                    fen: fen_text.to_owned(),
                    reason,
                };
                let fen: Fen = fen_text.parse().map_err(|e| bad(format!("{e}")))?;
                match fen.clone().into_position::<Chess>(mode) {
                    Ok(p) => (p, mode),
                    // A FEN whose castling rights only make sense in Chess960
                    // (Shredder letters, rooks not in the corners) without a
                    // Variant tag: read it as Chess960 rather than reject it.
                    Err(e) if mode == CastlingMode::Standard => {
                        match fen.into_position::<Chess>(CastlingMode::Chess960) {
                            Ok(p) => (p, CastlingMode::Chess960),
                            Err(_) => return Err(bad(format!("{e}"))),
                        }
                    }
                    Err(e) => return Err(bad(format!("{e}"))),
                }
            }
        };
        let chess960 = match mode {
            CastlingMode::Chess960 => {
                Some(crate::chess960::start_number(pos.board()).unwrap_or(u32::MAX))
            }
            CastlingMode::Standard => None,
        };
        Ok((pos, chess960))
    }
}

impl Visitor for Loader {
    type Tags = Vec<(String, String)>;
    type Movetext = Result<Building, GamesError>;
    type Output = Result<Game, GamesError>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(Vec::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        tags.push((
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        ));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let built = self.start_of(&tags).map(|(start, chess960)| Building {
            pos: start.clone(),
            game: Game {
                headers: tags,
                start,
                chess960,
                moves: Vec::new(),
                stopped: None,
            },
        });
        ControlFlow::Continue(built)
    }

    fn san(
        &mut self,
        movetext: &mut Self::Movetext,
        san_plus: SanPlus,
    ) -> ControlFlow<Self::Output> {
        let Ok(b) = movetext else {
            return ControlFlow::Continue(());
        };
        if b.game.stopped.is_some() {
            return ControlFlow::Continue(());
        }
        let ply = b.game.moves.len() + 1;
        match san_plus.san.to_move(&b.pos) {
            Ok(m) => {
                b.pos.play_unchecked(m);
                b.game.moves.push(m);
            }
            Err(_) => {
                let what = if matches!(san_plus.san, shakmaty::san::San::Null) {
                    "null move"
                } else {
                    "illegal or ambiguous move"
                };
                b.game.stopped = Some(format!("{what} {san_plus} at ply {ply}"));
            }
        }
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        movetext: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        let Some(uci) = comment.as_bytes().strip_prefix(UCI_MARK.as_bytes()) else {
            return ControlFlow::Continue(());
        };
        let Ok(b) = movetext else {
            return ControlFlow::Continue(());
        };
        if b.game.stopped.is_some() {
            return ControlFlow::Continue(());
        }
        let text = String::from_utf8_lossy(uci).into_owned();
        match text
            .parse::<UciMove>()
            .ok()
            .and_then(|u| u.to_move(&b.pos).ok())
        {
            Some(m) => {
                b.pos.play_unchecked(m);
                b.game.moves.push(m);
            }
            None => {
                let ply = b.game.moves.len() + 1;
                b.game.stopped = Some(format!("illegal move {text} at ply {ply}"));
            }
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(
        &mut self,
        _movetext: &mut Self::Movetext,
    ) -> ControlFlow<Self::Output, Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn outcome(
        &mut self,
        _movetext: &mut Self::Movetext,
        _outcome: Outcome,
    ) -> ControlFlow<Self::Output> {
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, movetext: Self::Movetext) -> Self::Output {
        movetext.map(|b| b.game)
    }
}

/// One line of `data/expected/games-index.jsonl`.
#[derive(Clone, Debug)]
pub struct IndexedGame {
    /// The PGN file, relative to the data directory (`games/...`).
    pub file: String,
    /// The game's position in that file, from 0.
    pub index: usize,
    /// `"ok"` when the game is usable; otherwise why the index left it out.
    pub status: String,
    /// The final position as FEN, for usable games.
    pub final_fen: Option<String>,
    /// Game-ending or claimable states at the end (`"checkmate"`, `"stalemate"`, ...).
    pub final_state: Vec<String>,
    /// The game, for usable games.
    pub game: Option<Game>,
}

#[derive(serde::Deserialize)]
struct IndexLine {
    file: String,
    game: usize,
    status: String,
    #[serde(default)]
    start_fen: Option<String>,
    #[serde(default)]
    chess960: bool,
    #[serde(default)]
    uci: Option<String>,
    #[serde(default)]
    final_fen: Option<String>,
    #[serde(default)]
    final_state: Vec<String>,
    #[serde(default)]
    white: Option<String>,
    #[serde(default)]
    black: Option<String>,
    #[serde(default)]
    result_tag: Option<String>,
}

/// Reads the games index (JSON Lines: start FEN and UCI moves of every game of
/// the data set).
pub fn load_index(path: &Path) -> Result<Vec<IndexedGame>, GamesError> {
    let text = std::fs::read_to_string(path).map_err(|error| GamesError::Io {
        path: path.display().to_string(),
        error,
    })?;
    let p = path.display().to_string();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| GamesError::BadIndexLine {
            path: p.clone(),
            line: i + 1,
            reason,
        };
        let l: IndexLine = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let game = match (&l.start_fen, &l.uci) {
            (Some(fen), Some(uci)) if l.status == "ok" => {
                let mode = if l.chess960 {
                    CastlingMode::Chess960
                } else {
                    CastlingMode::Standard
                };
                let start: Chess = fen
                    .parse::<Fen>()
                    .map_err(|e| bad(format!("start_fen: {e}")))?
                    .into_position(mode)
                    .map_err(|e| bad(format!("start_fen: {e}")))?;
                let mut pos = start.clone();
                let mut moves = Vec::new();
                for (ply, u) in uci.split_whitespace().enumerate() {
                    let illegal = || GamesError::IllegalIndexMove {
                        path: p.clone(),
                        line: i + 1,
                        ply: ply + 1,
                        uci: u.to_owned(),
                    };
                    let m = u
                        .parse::<UciMove>()
                        .map_err(|_| illegal())?
                        .to_move(&pos)
                        .map_err(|_| illegal())?;
                    pos.play_unchecked(m);
                    moves.push(m);
                }
                let mut headers = Vec::new();
                for (k, v) in [
                    ("White", &l.white),
                    ("Black", &l.black),
                    ("Result", &l.result_tag),
                ] {
                    if let Some(v) = v {
                        headers.push((k.to_owned(), v.clone()));
                    }
                }
                headers.push(("FEN".to_owned(), fen.clone()));
                let chess960 = l
                    .chess960
                    .then(|| crate::chess960::start_number(start.board()).unwrap_or(u32::MAX));
                Some(Game {
                    headers,
                    start,
                    chess960,
                    moves,
                    stopped: None,
                })
            }
            _ => None,
        };
        out.push(IndexedGame {
            file: l.file,
            index: l.game,
            status: l.status,
            final_fen: l.final_fen,
            final_state: l.final_state,
            game,
        });
    }
    Ok(out)
}

/// The FEN of a position (board, turn, castling, en passant only when legal, clocks).
pub fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_move_stops_the_game() {
        let games = load_pgn("[Event \"x\"]\n\n1. e4 e5 2. -- Nc6 3. Nf3 *\n").unwrap();
        assert_eq!(games.len(), 1);
        assert_eq!(games[0].moves.len(), 2);
        assert!(games[0].stopped.as_deref().unwrap().contains("null"));
    }

    #[test]
    fn variations_and_comments_are_skipped() {
        let games = load_pgn(
            "1. e4 {best} (1. d4 d5) 1... e5 (1... c5 2. Nf3) 2. Nf3 $1 Nc6 1-0\n\n1. d4 *",
        )
        .unwrap();
        assert_eq!(games.len(), 2);
        assert_eq!(games[0].uci_moves(), ["e2e4", "e7e5", "g1f3", "b8c6"]);
        assert_eq!(games[1].uci_moves(), ["d2d4"]);
    }

    #[test]
    fn latin1_and_bom_are_decoded() {
        let mut bytes = b"\xef\xbb\xbf[White \"Caf".to_vec();
        bytes.extend_from_slice(b"\"]\n\n1. e4 *");
        assert!(decode_text(&bytes).starts_with("[White"));
        let latin1 = b"[White \"M\xfcller\"]\n\n1. e4 *";
        let games = load_pgn(&decode_text(latin1)).unwrap();
        assert_eq!(games[0].header("White"), Some("M\u{fc}ller"));
    }

    #[test]
    fn chess960_variant_uses_chess960_castling() {
        let pgn = "[Variant \"fischerandom\"]\n[SetUp \"1\"]\n[FEN \"bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1\"]\n\n1. Nd3 Nd6 *";
        let games = load_pgn(pgn).unwrap();
        assert_eq!(games[0].chess960, Some(0));
        assert_eq!(games[0].moves.len(), 2);
        // King on g1 with the h-rook: O-O leaves the king where it is.
        let pgn = "[Variant \"Chess960\"]\n[FEN \"bbqnn1kr/pppppppp/8/8/8/8/PPPPPPPP/BBQNN1KR w Hh - 0 1\"]\n\n1. O-O O-O *";
        let g = &load_pgn(pgn).unwrap()[0];
        assert_eq!(g.chess960, Some(u32::MAX));
        assert!(matches!(g.moves[0], Move::Castle { .. }));
        assert_eq!(g.uci_moves(), ["g1h1", "g8h8"]);
    }

    #[test]
    fn uci_move_text_is_read() {
        let games = load_pgn("[Event \"e1g1\"]\n\n1. e2e4 {e7e5 is a comment} e7e5 2. g1f3 b8c6 3. f1c4 g8f6 4. e1g1 *").unwrap();
        assert_eq!(games[0].header("Event"), Some("e1g1"));
        assert_eq!(games[0].moves.len(), 7);
        assert!(matches!(games[0].moves[6], Move::Castle { .. }));
    }

    #[test]
    fn unknown_variant_is_an_error() {
        let err = load_pgn("[Variant \"Crazyhouse\"]\n\n1. e4 *").unwrap_err();
        assert!(matches!(err, GamesError::UnsupportedVariant { .. }));
    }
}
