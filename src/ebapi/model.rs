//! What the EBAPI says about boards, built from the hub's public side only: the
//! e-board objects of `eboards`, and the per-feed state behind `eboardevent`
//! messages (what each subscriber was sent, so only changes go out, and the
//! SAN list a client has after `setup`). Pure: the server feeds it snapshots.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{Board, CastlingMode, Chess, EnPassantMode, Position};

use crate::daemon::hub::{ClockState, PublicBoard};
use crate::events::ColorName;
use crate::pgn::GameRecord;
use crate::publish::Tournament;

/// The states LiveChess gives an e-board, as this daemon sees the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EboardState {
    /// The board answers.
    Active,
    /// An arbiter marked the board inactive (left out of the round's feeds).
    Inactive,
    /// The board does not answer (unplugged, powered off, never seen).
    NotResponding,
}

impl EboardState {
    pub fn as_str(self) -> &'static str {
        match self {
            EboardState::Active => "ACTIVE",
            EboardState::Inactive => "INACTIVE",
            EboardState::NotResponding => "NOTRESPONDING",
        }
    }
}

/// What a board shows now, for the EBAPI: identity and state (never delayed:
/// they say nothing about the game) and the public view of its game, picture
/// and clock (delayed when a broadcast delay is configured).
#[derive(Clone, Debug)]
pub struct BoardNow {
    pub number: u32,
    pub serial: String,
    pub source: Option<String>,
    pub state: EboardState,
    pub battery_percent: Option<u8>,
    /// The board turned 180° as the tracker found it (the default `flipped`).
    pub rotated: bool,
    /// Pieces in the game's frame: the sensor picture turned as the game is,
    /// or, with no usable picture (a delayed view has none), the published
    /// position.
    pub board: Option<Board>,
    pub clock: Option<ClockState>,
    pub game: Option<Arc<GameNow>>,
}

/// The board's current game as published (verified moves only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameNow {
    /// Which game this is on the board: a new game start changes it.
    pub key: (usize, String),
    pub sans: Vec<String>,
    /// Position keys (placement, side to move, castling) after 0, 1, … plies.
    pub positions: Vec<String>,
    /// Placements after 0, 1, … plies.
    pub placements: Vec<Board>,
    pub finished: bool,
}

/// The serial number a board is listed under: its own once it reported one,
/// else a stand-in naming the board number (a board never heard from).
pub fn serial_of(number: u32, reported: Option<&str>) -> String {
    match reported {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => format!("board-{number}"),
    }
}

/// The position key `setup` FENs are matched on: placement, side to move and
/// castling rights (en passant and counters vary between writers).
fn position_key(pos: &Chess) -> String {
    let fen = Fen::from_position(pos, EnPassantMode::Legal).to_string();
    fen.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

/// A client's FEN as a position key; `None` when it is not a legal position.
pub fn fen_key(fen: &str) -> Option<String> {
    let parsed: Fen = fen.trim().parse().ok()?;
    let pos: Chess = match parsed.clone().into_position(CastlingMode::Standard) {
        Ok(pos) => pos,
        Err(_) => parsed.into_position(CastlingMode::Chess960).ok()?,
    };
    Some(position_key(&pos))
}

impl GameNow {
    /// The record's moves replayed: a move that does not replay ends the line
    /// (publishers never show what cannot be played).
    pub fn from_record(record: &GameRecord, number: usize) -> GameNow {
        let mode = if record.is_chess960() {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let start: Option<Chess> = record
            .start_fen
            .parse::<Fen>()
            .ok()
            .and_then(|f| f.into_position(mode).ok());
        let mut game = GameNow {
            key: (number, record.start_fen.clone()),
            sans: Vec::new(),
            positions: Vec::new(),
            placements: Vec::new(),
            finished: record.result.is_some(),
        };
        let Some(mut pos) = start else {
            return game;
        };
        game.positions.push(position_key(&pos));
        game.placements.push(pos.board().clone());
        for m in &record.moves {
            let Some(mv) = m
                .uci
                .parse::<UciMove>()
                .ok()
                .and_then(|u| u.to_move(&pos).ok())
            else {
                break;
            };
            pos.play_unchecked(mv);
            game.sans.push(m.san.clone());
            game.positions.push(position_key(&pos));
            game.placements.push(pos.board().clone());
        }
        game
    }
}

impl BoardNow {
    /// Board `number` as the EBAPI reports it: `live` gives identity and
    /// online state, `public` the game, picture and clock.
    ///
    /// `replay` turns the board's game record into a [`GameNow`] (the server
    /// keeps the last one per board: many connections ask for the same).
    pub fn new(
        number: u32,
        live: Option<&PublicBoard>,
        public: Option<&PublicBoard>,
        tournament: &Tournament,
        replay: impl FnOnce(&GameRecord, usize) -> Arc<GameNow>,
    ) -> BoardNow {
        let identity = live.map(|b| b.identity.clone()).unwrap_or_default();
        let state = if tournament.inactive.contains(&number) {
            EboardState::Inactive
        } else if live.is_some_and(|b| b.online) {
            EboardState::Active
        } else {
            EboardState::NotResponding
        };
        let record = public.and_then(|b| b.game.as_ref());
        let rotated = record.is_some_and(|g| g.rotated);
        // The game on the board is numbered after the ones a new start closed.
        let game = public.and_then(|b| Some(replay(b.game.as_ref()?, b.finished.len())));
        let picture = public
            .and_then(|b| b.picture.as_ref())
            .map(|p| if rotated { p.rotated_180() } else { p.clone() })
            .and_then(|p| p.to_board());
        let board = picture.or_else(|| game.as_ref().and_then(|g| g.placements.last().cloned()));
        BoardNow {
            number,
            serial: serial_of(number, identity.serial.as_deref()),
            source: identity.source,
            state,
            battery_percent: identity.battery_percent,
            rotated,
            board,
            clock: public.and_then(|b| b.clock),
            game,
        }
    }

    /// The pieces as a client with `flipped` sees them: turned 180° from the
    /// game's frame when it asked for the other orientation than the board's.
    pub fn placement(&self, flipped: bool) -> Option<String> {
        let mut board = self.board.clone()?;
        if flipped != self.rotated {
            board.rotate_180();
        }
        Some(board.to_string())
    }

    /// The e-board object of `eboards` (exactly the eight keys clients read).
    pub fn eboard_json(&self, now_ms: u64) -> Value {
        json!({
            "serialnr": self.serial,
            "source": self.source,
            "state": self.state.as_str(),
            "battery": self.battery_percent.map(|p| format!("{p}%")),
            "comment": Value::Null,
            "board": self.placement(self.rotated),
            "flipped": self.rotated,
            "clock": self.clock.map(|c| clock_json(&c, now_ms)),
        })
    }
}

/// The order `eboards` lists boards in: the board a home user means first —
/// boards that answer, then those an arbiter set aside, then silent ones;
/// by board number within each.
pub fn sort_for_listing(boards: &mut [BoardNow]) {
    boards.sort_by_key(|b| (b.state, b.number));
}

/// `{"white": s, "black": s, "run": true|false|null, "time": ms}`: seconds
/// left (whole, as the clock shows), whose time runs (true: White's), and when
/// the server read it.
pub fn clock_json(c: &ClockState, now_ms: u64) -> Value {
    json!({
        "white": c.white_ms / 1000,
        "black": c.black_ms / 1000,
        "run": run_flag(c),
        "time": now_ms,
    })
}

fn run_flag(c: &ClockState) -> Option<bool> {
    c.running.map(|r| r == ColorName::White)
}

/// The part of a clock a change is measured on (the reading time is not).
type ClockKey = Option<(u64, u64, Option<bool>)>;

fn clock_key(c: Option<&ClockState>) -> ClockKey {
    c.map(|c| (c.white_ms / 1000, c.black_ms / 1000, run_flag(c)))
}

/// A client's `setup`: the position its SAN list starts from, where that
/// position is in the board's game, and the list the client has.
#[derive(Clone, Debug)]
struct Setup {
    fen: String,
    key: String,
    /// The game and the ply the setup position was found at.
    anchor: Option<((usize, String), usize)>,
    /// The SAN list this client was sent last (its view of the game).
    sent: Vec<String>,
}

impl Setup {
    /// The SAN lists to send now, oldest first, one per message.
    ///
    /// The list only grows, one verified move per message. A retraction is not
    /// passed on while the board's line is a prefix of what the client has: if
    /// the players replay the same moves the client never sees a change. It is
    /// passed on, as the whole corrected list in one message, once a different
    /// move stands at a ply the client has and the corrected list is at least
    /// as long as the client's (so a client that counts new entries, as
    /// lichess's does, keeps its count), or when the game ends.
    fn advance(&mut self, game: Option<&GameNow>) -> Vec<Vec<String>> {
        let Some(game) = game else {
            return Vec::new();
        };
        let mut lists = Vec::new();
        if self.anchor.as_ref().map(|a| &a.0) != Some(&game.key) {
            let found = game.positions.iter().rposition(|k| *k == self.key);
            self.anchor = found.map(|ply| (game.key.clone(), ply));
            if found.is_some() && !self.sent.is_empty() {
                // A new game from the setup position: the list starts again.
                self.sent.clear();
                lists.push(Vec::new());
            }
        }
        let Some((_, ply)) = self.anchor else {
            return lists;
        };
        let Some(line) = game.sans.get(ply..) else {
            // Taken back past the setup position: nothing to say until it is back.
            return lists;
        };
        if line.starts_with(&self.sent) {
            for san in &line[self.sent.len()..] {
                self.sent.push(san.clone());
                lists.push(self.sent.clone());
            }
        } else if (!self.sent.starts_with(line) && line.len() >= self.sent.len()) || game.finished {
            self.sent = line.to_vec();
            lists.push(self.sent.clone());
        }
        lists
    }

    /// Whether the board shows the position after the client's list.
    fn matches(&self, game: Option<&GameNow>, board: Option<&Board>) -> bool {
        let (Some(game), Some(board), Some((key, ply))) = (game, board, self.anchor.as_ref())
        else {
            return false;
        };
        if *key != game.key || game.sans.get(*ply..) != Some(&self.sent[..]) {
            return false;
        }
        game.placements.get(ply + self.sent.len()) == Some(board)
    }
}

/// One `eboardevent` subscription on one connection.
#[derive(Clone, Debug)]
pub struct Feed {
    pub board: u32,
    pub serial: String,
    /// The client's `flip`; until it sends one, the board's own orientation.
    flip: Option<bool>,
    setup: Option<Setup>,
    sent_board: Option<Option<String>>,
    sent_clock: Option<ClockKey>,
}

impl Feed {
    pub fn new(now: &BoardNow) -> Feed {
        Feed {
            board: now.number,
            serial: now.serial.clone(),
            flip: None,
            setup: None,
            sent_board: None,
            sent_clock: None,
        }
    }

    fn flipped(&self, now: &BoardNow) -> bool {
        self.flip.unwrap_or(now.rotated)
    }

    /// The message right after `subscribe`: the board and its clock as they
    /// are (`clock` present, null when no clock is known).
    pub fn snapshot(&mut self, now: &BoardNow, now_ms: u64) -> Value {
        self.message(now, now_ms, None, true)
    }

    /// `setup`: moves are reported from `fen` on. The next message carries
    /// `san: []`, then one message per move already played since that
    /// position. `Err` when the FEN is not a legal position.
    pub fn setup(&mut self, fen: &str, now: &BoardNow, now_ms: u64) -> Result<Vec<Value>, String> {
        let key = fen_key(fen).ok_or_else(|| {
            format!(
                "{fen:?} is not a legal position in FEN; send the full six-field FEN of the \
                 position moves should be reported from"
            )
        })?;
        self.setup = Some(Setup {
            fen: fen.trim().to_owned(),
            key,
            anchor: None,
            sent: Vec::new(),
        });
        let mut out = vec![self.message(now, now_ms, Some(Vec::new()), false)];
        out.extend(self.update(now, now_ms));
        Ok(out)
    }

    /// `flip`: the client says how the board is turned; one message when the
    /// picture it sees changes.
    pub fn flip(&mut self, flip: bool, now: &BoardNow, now_ms: u64) -> Vec<Value> {
        self.flip = Some(flip);
        self.update(now, now_ms)
    }

    /// The messages for what changed since the last one: one per verified
    /// move (see [`Setup::advance`]), else one for a changed picture or clock,
    /// else none.
    pub fn update(&mut self, now: &BoardNow, now_ms: u64) -> Vec<Value> {
        let lists = match self.setup.as_mut() {
            Some(s) => s.advance(now.game.as_deref()),
            None => Vec::new(),
        };
        let mut out: Vec<Value> = lists
            .into_iter()
            .map(|l| self.message(now, now_ms, Some(l), false))
            .collect();
        let board = self.placement(now);
        if out.is_empty()
            && (self.sent_board.as_ref() != Some(&board)
                || self.sent_clock != Some(clock_key(now.clock.as_ref())))
        {
            out.push(self.message(now, now_ms, None, false));
        }
        out
    }

    fn placement(&self, now: &BoardNow) -> Option<String> {
        now.placement(self.flipped(now))
    }

    fn message(
        &mut self,
        now: &BoardNow,
        now_ms: u64,
        san: Option<Vec<String>>,
        with_clock: bool,
    ) -> Value {
        let mut m = Map::new();
        m.insert("serialnr".into(), self.serial.clone().into());
        m.insert("flipped".into(), self.flipped(now).into());
        let board = self.placement(now);
        m.insert("board".into(), json!(board));
        self.sent_board = Some(board);
        let clock = clock_key(now.clock.as_ref());
        if with_clock || self.sent_clock != Some(clock) {
            m.insert(
                "clock".into(),
                json!(now.clock.map(|c| clock_json(&c, now_ms))),
            );
            self.sent_clock = Some(clock);
        }
        if let Some(setup) = &self.setup {
            if let Some(san) = san {
                m.insert("start".into(), setup.fen.clone().into());
                m.insert("san".into(), json!(san));
            }
            m.insert(
                "match".into(),
                setup
                    .matches(now.game.as_deref(), now.board.as_ref())
                    .into(),
            );
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgn::{GameInfo, RecordedMove};

    const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

    fn record(moves: &[(&str, &str)]) -> GameRecord {
        let mut g = GameRecord::new(GameInfo::default(), START, Some(518));
        for (i, (san, uci)) in moves.iter().enumerate() {
            g.moves.push(RecordedMove {
                ply: i as u32 + 1,
                san: (*san).into(),
                uci: (*uci).into(),
                clock_ms: None,
                emt_ms: None,
            });
        }
        g
    }

    fn now(moves: &[(&str, &str)], number: usize) -> BoardNow {
        let game = GameNow::from_record(&record(moves), number);
        BoardNow {
            number: 1,
            serial: "23946".into(),
            source: None,
            state: EboardState::Active,
            battery_percent: None,
            rotated: false,
            board: game.placements.last().cloned(),
            clock: None,
            game: Some(Arc::new(game)),
        }
    }

    fn sans(msgs: &[Value]) -> Vec<Option<Vec<String>>> {
        msgs.iter()
            .map(|m| {
                m.get("san")
                    .map(|s| serde_json::from_value(s.clone()).unwrap())
            })
            .collect()
    }

    const LINE: [(&str, &str); 4] = [
        ("e4", "e2e4"),
        ("e5", "e7e5"),
        ("Nf3", "g1f3"),
        ("Nc6", "b8c6"),
    ];

    #[test]
    fn setup_starts_empty_then_one_message_per_move() {
        let mut feed = Feed::new(&now(&[], 0));
        let snap = feed.snapshot(&now(&[], 0), 1);
        assert_eq!(snap["clock"], Value::Null);
        assert!(snap.get("san").is_none());
        let first = feed.setup(START, &now(&LINE[..1], 0), 2).unwrap();
        assert_eq!(sans(&first), [Some(vec![]), Some(vec!["e4".into()])]);
        assert_eq!(first[0]["start"], START);
        assert_eq!(first[1]["match"], true);
        let two = feed.update(&now(&LINE[..3], 0), 3);
        assert_eq!(
            sans(&two),
            [
                Some(vec!["e4".into(), "e5".into()]),
                Some(vec!["e4".into(), "e5".into(), "Nf3".into()])
            ]
        );
        assert!(
            feed.update(&now(&LINE[..3], 0), 4).is_empty(),
            "no change, no message"
        );
    }

    #[test]
    fn a_retraction_replayed_is_never_seen() {
        let mut feed = Feed::new(&now(&LINE, 0));
        feed.setup(START, &now(&LINE, 0), 1).unwrap();
        let back = feed.update(&now(&LINE[..3], 0), 2);
        assert_eq!(sans(&back), [None], "the picture changed, the list is held");
        assert_eq!(back[0]["match"], false);
        let again = feed.update(&now(&LINE, 0), 3);
        assert_eq!(sans(&again), [None]);
        assert_eq!(again[0]["match"], true);
    }

    #[test]
    fn a_correction_is_sent_whole_once_as_long() {
        let mut feed = Feed::new(&now(&LINE, 0));
        feed.setup(START, &now(&LINE, 0), 1).unwrap();
        let short = [LINE[0], LINE[1]];
        assert_eq!(sans(&feed.update(&now(&short, 0), 2)), [None]);
        let one = [LINE[0], LINE[1], ("Bc4", "f1c4")];
        assert_eq!(
            sans(&feed.update(&now(&one, 0), 3)),
            [None],
            "shorter: held"
        );
        let two = [LINE[0], LINE[1], ("Bc4", "f1c4"), ("Nc6", "b8c6")];
        let msgs = feed.update(&now(&two, 0), 4);
        assert_eq!(
            sans(&msgs),
            [Some(vec![
                "e4".into(),
                "e5".into(),
                "Bc4".into(),
                "Nc6".into()
            ])]
        );
        assert_eq!(msgs[0]["match"], true);
    }

    #[test]
    fn a_setup_position_found_later_or_in_a_new_game() {
        let after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
        let mut feed = Feed::new(&now(&[], 0));
        let msgs = feed.setup(after_e4, &now(&[], 0), 1).unwrap();
        assert_eq!(sans(&msgs), [Some(vec![])]);
        assert_eq!(msgs[0]["match"], false);
        assert_eq!(
            sans(&feed.update(&now(&LINE[..2], 0), 2)),
            [Some(vec!["e5".into()])]
        );
        // The pieces set up again: a new game, found again after its first move.
        assert_eq!(sans(&feed.update(&now(&[], 1), 3)), [None]);
        assert_eq!(
            sans(&feed.update(&now(&LINE[..1], 1), 4)),
            [Some(vec![])],
            "the list starts again"
        );
        assert!(fen_key("not a fen").is_none());
        assert!(feed
            .setup("8/8/8/8/8/8/8/8 w - - 0 1", &now(&[], 0), 5)
            .is_err());
    }

    #[test]
    fn flip_turns_the_picture_and_clock_goes_only_when_changed() {
        let mut n = now(&[], 0);
        let mut feed = Feed::new(&n);
        feed.snapshot(&n, 1);
        let msgs = feed.flip(true, &n, 2);
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["flipped"], true);
        assert_eq!(
            msgs[0]["board"],
            "RNBKQBNR/PPPPPPPP/8/8/8/8/pppppppp/rnbkqbnr"
        );
        assert!(msgs[0].get("clock").is_none());
        n.clock = Some(ClockState {
            white_ms: 5_400_900,
            black_ms: 5_400_000,
            running: Some(ColorName::White),
        });
        let m = feed.update(&n, 3);
        assert_eq!(m[0]["clock"]["white"], 5400);
        assert_eq!(m[0]["clock"]["run"], true);
        n.clock.as_mut().unwrap().white_ms = 5_400_100;
        assert!(feed.update(&n, 4).is_empty(), "the same second");
    }
}
