//! A small scripting helper for tracker tests: a virtual board driven by a hand
//! (lift, place, press, wait) producing the `picture` / `clock` / `tick` calls the
//! session would make, with realistic scan timing.

#![allow(dead_code)]

pub mod games;
pub mod hand;

use eboard_bridge::events::{
    Alert, GameEvent, GameResult, Millis, MoveEvent, Severity, TrackerEvent,
};
use eboard_bridge::tracker::{Tracker, TrackerConfig};
use eboard_protocols::{ClockReading, ClockSide, MagicPiece, Picture, Sensed, SideTime};
use shakmaty::{
    fen::Fen, uci::UciMove, CastlingMode, Chess, Color, FromSetup, Move, Piece, Square,
};

/// Time between two reported square changes (one DGT scan cycle).
pub const SCAN_MS: Millis = 220;

/// How the board stands relative to the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    Normal,
    Half,
    Quarter,
}

pub struct Script {
    pub tracker: Tracker,
    /// The board in the game frame (what a correctly placed board would show).
    pub board: Picture,
    pub t: Millis,
    pub events: Vec<(Millis, TrackerEvent)>,
    pub turn: Turn,
    /// Clock state; White's display is `white_side`.
    pub white_side: ClockSide,
    pub clock: ClockReading,
    clock_t: Millis,
    pub with_clock: bool,
    /// The board only senses occupancy (Sensed::Occupied).
    pub occupancy: bool,
    /// Verified plies before the last `clear()`.
    cleared_plies: usize,
}

pub fn sq(name: &str) -> Square {
    name.parse().unwrap_or_else(|_| panic!("bad square {name}"))
}

pub fn piece(c: char) -> Piece {
    Piece::from_char(c).unwrap_or_else(|| panic!("bad piece {c}"))
}

impl Script {
    /// A board with nothing on it and a tracker with the default settings.
    pub fn empty(config: TrackerConfig) -> Script {
        Script {
            tracker: Tracker::new(config),
            board: Picture::empty(),
            t: 1_000,
            events: Vec::new(),
            turn: Turn::Normal,
            white_side: ClockSide::Left,
            clock: ClockReading {
                left: SideTime {
                    millis: 300_000,
                    ..Default::default()
                },
                right: SideTime {
                    millis: 300_000,
                    ..Default::default()
                },
                running: false,
                lever_high: Some(ClockSide::Left),
                battery_low: false,
            },
            clock_t: 1_000,
            with_clock: true,
            cleared_plies: 0,
            occupancy: false,
        }
    }

    /// Standard start, clock started for White, game started.
    pub fn standard() -> Script {
        Script::from_board_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", Turn::Normal)
    }

    /// A start picture (standard or Chess960) shown and held, then White's clock started.
    pub fn from_board_fen(board_fen: &str, turn: Turn) -> Script {
        let mut s = Script::empty(TrackerConfig::default());
        s.turn = turn;
        s.setup(board_fen);
        s.start_clock();
        s
    }

    /// An operator-set start position.
    pub fn from_fen(fen: &str) -> Script {
        let mut s = Script::empty(TrackerConfig::default());
        s.tracker.set_start_fen(fen).expect("test FEN is legal");
        s.setup(fen.split(' ').next().expect("board part"));
        s.start_clock();
        s
    }

    /// A clockless board (no readings ever sent).
    pub fn clockless() -> Script {
        let mut s = Script::empty(TrackerConfig::default());
        s.with_clock = false;
        s.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
        s
    }

    /// Shows the whole picture at once (a board dump), without holding it.
    pub fn show(&mut self, board_fen: &str) {
        let b: shakmaty::Board = board_fen.parse().expect("board FEN");
        self.board = Picture::from_board(&b);
        self.send();
    }

    /// Shows the whole picture at once and holds it long enough to start.
    pub fn setup(&mut self, board_fen: &str) {
        let b: shakmaty::Board = board_fen.parse().expect("board FEN");
        self.board = Picture::from_board(&b);
        self.send();
        self.wait(1_000);
    }

    fn raw(&self) -> Picture {
        let p = match self.turn {
            Turn::Normal => self.board.clone(),
            Turn::Half => self.board.rotated_180(),
            Turn::Quarter => self.board.rotated_90(),
        };
        if self.occupancy {
            p.to_occupancy()
        } else {
            p
        }
    }

    /// An occupancy-only board from an operator-set position.
    pub fn occupancy_from_fen(fen: &str) -> Script {
        let mut s = Script::empty(TrackerConfig::default());
        s.occupancy = true;
        s.tracker.set_start_fen(fen).expect("test FEN is legal");
        s.setup(fen.split(' ').next().expect("board part"));
        s.start_clock();
        s
    }

    /// Sends the current picture (as the session does after a field update).
    pub fn send(&mut self) {
        let raw = self.raw();
        let mut out = Vec::new();
        self.tracker.picture(self.t, &raw, &mut out);
        self.record(out);
    }

    fn record(&mut self, out: Vec<TrackerEvent>) {
        for e in out {
            self.events.push((self.t, e));
        }
    }

    /// One square change, reported after a scan cycle.
    pub fn set(&mut self, square: &str, s: Sensed) -> &mut Self {
        self.t += SCAN_MS;
        self.board.set(sq(square), s);
        self.send();
        self
    }

    pub fn lift(&mut self, square: &str) -> &mut Self {
        self.set(square, Sensed::Empty)
    }

    pub fn place(&mut self, square: &str, p: char) -> &mut Self {
        self.set(square, Sensed::Piece(piece(p)))
    }

    pub fn magic(&mut self, square: &str, m: MagicPiece) -> &mut Self {
        self.set(square, Sensed::Magic(m))
    }

    /// Lift from `from` and place the same piece on `to`.
    pub fn slide(&mut self, from: &str, to: &str) -> &mut Self {
        let p = self.board.get(sq(from));
        self.lift(from);
        self.set(to, p)
    }

    /// Several changes reported in one scan (out of order within a scan).
    pub fn scan(&mut self, changes: &[(&str, Option<char>)]) -> &mut Self {
        self.t += SCAN_MS;
        for (square, p) in changes {
            let s = p.map_or(Sensed::Empty, |c| Sensed::Piece(piece(c)));
            self.board.set(sq(square), s);
            self.send();
        }
        self
    }

    /// Time passes; the tracker is ticked every 100 ms.
    /// The arbiter enters the game's result now.
    pub fn arbiter_result(&mut self, result: GameResult) -> &mut Self {
        let mut out = Vec::new();
        self.tracker
            .operator_result(self.t, result, &mut out)
            .expect("a game to end");
        self.record(out);
        self
    }

    pub fn wait(&mut self, ms: Millis) -> &mut Self {
        let end = self.t + ms;
        while self.t < end {
            self.t = (self.t + 100).min(end);
            let mut out = Vec::new();
            self.tracker.tick(self.t, &mut out);
            self.record(out);
        }
        self
    }

    fn send_clock(&mut self) {
        // The running side loses the time elapsed since the last reading.
        if self.clock.running {
            if let Some(side) = self.clock.lever_high {
                let el = self.t - self.clock_t;
                let st = match side {
                    ClockSide::Left => &mut self.clock.left,
                    ClockSide::Right => &mut self.clock.right,
                };
                st.millis = st.millis.saturating_sub(el);
            }
        }
        self.clock_t = self.t;
        let r = self.clock;
        let mut out = Vec::new();
        self.tracker.clock(self.t, &r, &mut out);
        self.record(out);
    }

    /// The clock reports its state now (after a test changed `clock`).
    pub fn report_clock(&mut self) -> &mut Self {
        self.send_clock();
        self
    }

    pub fn side_of(&self, c: Color) -> ClockSide {
        match c {
            Color::White => self.white_side,
            Color::Black => self.white_side.other(),
        }
    }

    /// The arbiter starts White's clock.
    pub fn start_clock(&mut self) -> &mut Self {
        if !self.with_clock {
            return self;
        }
        self.t += 50;
        self.clock.running = true;
        self.clock.lever_high = Some(self.white_side);
        self.send_clock();
        self
    }

    /// The arbiter starts the clock of `c` (a set position with Black to move).
    pub fn start_clock_for(&mut self, c: Color) -> &mut Self {
        self.t += 50;
        self.clock.running = true;
        self.clock.lever_high = Some(self.side_of(c));
        self.send_clock();
        self
    }

    /// The player of colour `c` presses his button; nothing else happens on the
    /// board for half a second (the tracker lets a press settle, see
    /// `press_settle_ms`).
    pub fn press(&mut self, c: Color) -> &mut Self {
        self.press_only(c);
        self.wait(500)
    }

    /// The arbiter sets the clock running for `c` (after restoring a position).
    pub fn arbiter_runs_clock_for(&mut self, c: Color) -> &mut Self {
        self.t += 150;
        self.send_clock();
        self.clock.lever_high = Some(self.side_of(c));
        self.send_clock();
        self
    }

    /// The press alone: the hand may go on at once.
    pub fn press_only(&mut self, c: Color) -> &mut Self {
        self.t += 150;
        self.send_clock();
        self.clock.lever_high = Some(self.side_of(c).other());
        self.send_clock();
        self
    }

    /// A plain move by hand, uci style (`e2e4`, `e7e8q`): captured piece removed
    /// first, then the piece lifted and put down.
    pub fn hand(&mut self, uci: &str) -> &mut Self {
        let from = &uci[0..2];
        let to = &uci[2..4];
        let p = match uci.chars().nth(4) {
            Some(pr) => {
                let pawn = self.board.get(sq(from)).piece().expect("pawn on from");
                let c = if pawn.color == Color::White {
                    pr.to_ascii_uppercase()
                } else {
                    pr
                };
                Sensed::Piece(piece(c))
            }
            None => self.board.get(sq(from)),
        };
        if self.board.get(sq(to)).is_occupied() {
            self.lift(to);
        }
        self.lift(from);
        self.set(to, p)
    }

    /// A move by hand followed by the mover's press.
    pub fn play(&mut self, uci: &str, c: Color) -> &mut Self {
        self.hand(uci);
        self.wait(300);
        self.press(c)
    }

    // ----- what came out ----------------------------------------------------

    pub fn moves(&self) -> Vec<&MoveEvent> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => Some(m),
                _ => None,
            })
            .collect()
    }

    /// Verified SAN list since the last `clear()`, with retractions applied.
    pub fn sans(&self) -> Vec<String> {
        let mut line: Vec<String> = vec![String::new(); self.cleared_plies];
        for (_, e) in &self.events {
            match e {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                    assert_eq!(
                        m.ply as usize,
                        line.len() + 1,
                        "plies are published in order"
                    );
                    line.push(m.san.clone());
                }
                TrackerEvent::Game(GameEvent::Retraction { from_ply, .. }) => {
                    line.truncate(*from_ply as usize - 1);
                }
                _ => {}
            }
        }
        line.split_off(self.cleared_plies.min(line.len()))
    }

    pub fn alerts(&self) -> Vec<&Alert> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Alert(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    pub fn alert_kinds(&self) -> Vec<String> {
        self.alerts().iter().map(|a| a.kind.to_string()).collect()
    }

    pub fn serious_alerts(&self) -> Vec<&Alert> {
        self.alerts()
            .into_iter()
            .filter(|a| a.severity >= Severity::Warning)
            .collect()
    }

    /// The ids of the alerts resolved so far, in order.
    pub fn resolved_ids(&self) -> Vec<u32> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Resolved(r) => Some(r.id),
                _ => None,
            })
            .collect()
    }

    pub fn retractions(&self) -> Vec<(u32, Vec<u32>)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Game(GameEvent::Retraction { from_ply, plies }) => {
                    Some((*from_ply, plies.clone()))
                }
                _ => None,
            })
            .collect()
    }

    pub fn game_starts(&self) -> Vec<&GameEvent> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Game(g @ GameEvent::GameStart { .. }) => Some(g),
                _ => None,
            })
            .collect()
    }

    pub fn results(&self) -> Vec<&GameEvent> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                TrackerEvent::Game(g @ GameEvent::Result { .. }) => Some(g),
                _ => None,
            })
            .collect()
    }

    /// Clears recorded events (to look at what a later phase emits).
    pub fn clear(&mut self) {
        self.cleared_plies = self.tracker.ply() as usize;
        self.events.clear();
    }
}

/// Parses a UCI move in `pos`.
pub fn uci_move(pos: &Chess, uci: &str, mode: CastlingMode) -> Move {
    let _ = mode;
    uci.parse::<UciMove>()
        .unwrap_or_else(|e| panic!("bad uci {uci}: {e}"))
        .to_move(pos)
        .unwrap_or_else(|e| panic!("illegal uci {uci}: {e}"))
}

/// A position from a FEN, with the castling mode the FEN implies.
pub fn position(fen: &str) -> (Chess, CastlingMode) {
    let f: Fen = fen.parse().expect("FEN");
    let mode = CastlingMode::detect(f.as_setup());
    (
        Chess::from_setup(f.into_setup(), mode).expect("legal FEN"),
        mode,
    )
}
