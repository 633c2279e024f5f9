//! A simple deterministic hand that plays a whole game on a virtual board and
//! feeds the tracker, varying the order of the hand's actions from ply to ply:
//! captures (captured piece first, capturer first, swept on), castling (king first,
//! rook first, both in the air), en passant (captured pawn first or last),
//! promotion (new piece put straight down, or the pawn pushed and swapped), slides
//! over the squares on the way (with pauses on legal squares), and
//! now and then a forgotten press completed late (Article 6.2.2) or a press that
//! reaches the host before the move's last square does. Shared by the
//! games test and the tracker benchmark (`#[path]`-included there).

use std::time::{Duration, Instant};

use eboard_bridge::events::{Millis, TrackerEvent};
use eboard_bridge::tracker::{start_number, Tracker, TrackerConfig};
use eboard_protocols::{ClockReading, ClockSide, Picture, Sensed, SideTime};
use shakmaty::{
    fen::Fen, uci::UciMove, CastlingMode, Chess, Color, FromSetup, Move, Position, Role, Square,
};

/// How one game is played.
#[derive(Clone, Copy, Debug)]
pub struct HandStyle {
    /// The board stands turned 180° (White at the connector's right).
    pub rotated: bool,
    /// White's display is the clock's right one.
    pub white_right: bool,
    /// Varies the orders used (ply index is mixed in).
    pub seed: usize,
    /// The board senses occupancy only; captured pieces are taken off first (the
    /// lift log is what tells the capture square on such boards).
    pub occupancy: bool,
}

/// What a driven game produced.
pub struct Driven {
    pub events: Vec<TrackerEvent>,
    /// Number of `picture` calls made.
    pub pictures: usize,
    /// Time spent inside the tracker's calls.
    pub busy: Duration,
    /// The SANs the source moves have, computed with shakmaty.
    pub expected_sans: Vec<String>,
}

/// One thing the hand does while making a move.
enum Action {
    Set(Square, Sensed),
    Wait(Millis),
}

struct Hand {
    queue: Vec<Action>,
    tracker: Tracker,
    board: Picture,
    t: Millis,
    rotated: bool,
    occupancy: bool,
    clock: ClockReading,
    clock_t: Millis,
    white_side: ClockSide,
    events: Vec<TrackerEvent>,
    pictures: usize,
    busy: Duration,
}

impl Hand {
    fn send(&mut self) {
        let mut raw = if self.rotated {
            self.board.rotated_180()
        } else {
            self.board.clone()
        };
        if self.occupancy {
            raw = raw.to_occupancy();
        }
        let start = Instant::now();
        self.tracker.picture(self.t, &raw, &mut self.events);
        self.busy += start.elapsed();
        self.pictures += 1;
    }

    /// Queues one square change of the move being made.
    fn set(&mut self, sq: Square, s: Sensed) {
        self.queue.push(Action::Set(sq, s));
    }

    /// Reports one square change after a scan cycle, varied a little.
    fn apply(&mut self, sq: Square, s: Sensed, scan: Millis) {
        self.t += scan + (self.t % 7) * 10;
        self.board.set(sq, s);
        self.send();
    }

    /// Reports the queued changes but the last, which is returned.
    fn run_queue(&mut self) -> Option<(Square, Sensed)> {
        let actions = std::mem::take(&mut self.queue);
        let mut last = None;
        for a in actions {
            if let Some((sq, s)) = last.take() {
                self.apply(sq, s, 200);
            }
            match a {
                Action::Set(sq, s) => last = Some((sq, s)),
                Action::Wait(ms) => self.wait(ms),
            }
        }
        last
    }

    fn wait(&mut self, ms: Millis) {
        let end = self.t + ms;
        while self.t < end {
            self.t = (self.t + 250).min(end);
            let start = Instant::now();
            self.tracker.tick(self.t, &mut self.events);
            self.busy += start.elapsed();
        }
    }

    fn send_clock(&mut self) {
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
        let start = Instant::now();
        self.tracker.clock(self.t, &r, &mut self.events);
        self.busy += start.elapsed();
    }

    fn press(&mut self, c: Color) {
        self.t += 120;
        let side = if c == Color::White {
            self.white_side
        } else {
            self.white_side.other()
        };
        self.clock.lever_high = Some(side.other());
        self.send_clock();
    }

    fn play(&mut self, pos: &Chess, m: Move, variant: usize) {
        let us = pos.turn();
        let put = |role: Role| Sensed::Piece(role.of(us));
        match m {
            Move::Normal {
                role,
                from,
                to,
                capture,
                promotion,
            } => {
                let landing = put(promotion.unwrap_or(role));
                let order = if self.occupancy { 0 } else { variant % 3 };
                match (capture.is_some(), promotion.is_some(), order) {
                    (true, _, 0) => {
                        self.set(to, Sensed::Empty);
                        self.set(from, Sensed::Empty);
                        self.set(to, landing);
                    }
                    (true, _, 1) => {
                        self.set(from, Sensed::Empty);
                        self.set(to, Sensed::Empty);
                        self.set(to, landing);
                    }
                    (true, _, _) => {
                        // Swept on: the square goes straight from one piece to the other.
                        self.set(from, Sensed::Empty);
                        self.set(to, landing);
                    }
                    (false, true, 1) => {
                        // Pawn pushed to the last rank, then swapped for the new piece.
                        self.set(from, Sensed::Empty);
                        self.set(to, put(Role::Pawn));
                        self.set(to, Sensed::Empty);
                        self.set(to, landing);
                    }
                    (false, false, _)
                        if variant % 4 == 2
                            && matches!(role, Role::Rook | Role::Bishop | Role::Queen) =>
                    {
                        // Slid over the squares on the way, sometimes pausing on
                        // one where the move would be legal too.
                        self.set(from, Sensed::Empty);
                        let mut path: Vec<Square> =
                            shakmaty::attacks::between(from, to).into_iter().collect();
                        path.sort_by_key(|sq| sq.distance(from));
                        for (k, sq) in path.into_iter().enumerate() {
                            self.set(sq, landing);
                            if k == 0 && variant % 8 == 2 {
                                self.queue.push(Action::Wait(700));
                            }
                            self.set(sq, Sensed::Empty);
                        }
                        self.set(to, landing);
                    }
                    (false, _, _) => {
                        self.set(from, Sensed::Empty);
                        self.set(to, landing);
                    }
                }
            }
            Move::EnPassant { from, to } => {
                let captured = Square::from_coords(to.file(), from.rank());
                if variant.is_multiple_of(2) {
                    self.set(captured, Sensed::Empty);
                    self.set(from, Sensed::Empty);
                    self.set(to, put(Role::Pawn));
                } else {
                    self.set(from, Sensed::Empty);
                    self.set(to, put(Role::Pawn));
                    self.set(captured, Sensed::Empty);
                }
            }
            Move::Castle { king, rook } => {
                let side = m.castling_side().expect("castle");
                let king_to = side.king_to(us);
                let rook_to = side.rook_to(us);
                let k = put(Role::King);
                let r = put(Role::Rook);
                let king_free = king_to == king || pos.board().piece_at(king_to).is_none();
                let rook_free = rook_to == rook || pos.board().piece_at(rook_to).is_none();
                match variant % 3 {
                    0 if king_free => {
                        // King first.
                        if king != king_to {
                            self.set(king, Sensed::Empty);
                            self.set(king_to, k);
                        }
                        if rook != rook_to {
                            if rook != king_to {
                                self.set(rook, Sensed::Empty);
                            }
                            self.set(rook_to, r);
                        }
                    }
                    1 if rook_free => {
                        // Rook first (Article 4.4.2 matter, noted as info).
                        if rook != rook_to {
                            self.set(rook, Sensed::Empty);
                            self.set(rook_to, r);
                        }
                        if king != king_to {
                            if king != rook_to {
                                self.set(king, Sensed::Empty);
                            }
                            self.set(king_to, k);
                        }
                    }
                    _ => {
                        // Both in the air (Guideline II: the king off the board).
                        self.set(king, Sensed::Empty);
                        self.set(rook, Sensed::Empty);
                        self.set(rook_to, r);
                        self.set(king_to, k);
                    }
                }
            }
            Move::Put { .. } => unreachable!("no drops in chess"),
        }
    }
}

/// Plays `ucis` from `start_fen` and returns what the tracker said.
pub fn drive_game(start_fen: &str, ucis: &[&str], style: HandStyle) -> Driven {
    let fen: Fen = start_fen.parse().expect("index FEN parses");
    let mode = CastlingMode::detect(fen.as_setup());
    let mut pos = Chess::from_setup(fen.into_setup(), mode).expect("index FEN is legal");
    let white_side = if style.white_right {
        ClockSide::Right
    } else {
        ClockSide::Left
    };
    let mut hand = Hand {
        queue: Vec::new(),
        tracker: Tracker::new(TrackerConfig::default()),
        board: Picture::from_board(pos.board()),
        t: 1_000,
        rotated: style.rotated,
        occupancy: style.occupancy,
        clock: ClockReading {
            left: SideTime {
                millis: 5_400_000,
                ..Default::default()
            },
            right: SideTime {
                millis: 5_400_000,
                ..Default::default()
            },
            running: false,
            lever_high: Some(white_side.other()),
            battery_low: false,
        },
        clock_t: 1_000,
        white_side,
        events: Vec::new(),
        pictures: 0,
        busy: Duration::ZERO,
    };
    // Identity boards recognise standard and Chess960 starts; anything else, and
    // any non-standard start on an occupancy board, is set by the operator.
    let recognised = match start_number(pos.board()) {
        Some(518) => true,
        Some(_) => !style.occupancy,
        None => false,
    };
    if !recognised || pos.turn() == Color::Black {
        hand.tracker
            .set_start_fen(start_fen)
            .expect("index FEN accepted");
    }
    hand.send_clock();
    hand.send();
    hand.wait(1_000);
    // The arbiter starts the clock of the side to move.
    hand.t += 100;
    hand.clock.running = true;
    hand.clock.lever_high = Some(if pos.turn() == Color::White {
        white_side
    } else {
        white_side.other()
    });
    hand.send_clock();

    let mut expected_sans = Vec::new();
    let mut forgot: Option<Color> = None;
    for (i, u) in ucis.iter().enumerate() {
        let m = u
            .parse::<UciMove>()
            .expect("index UCI parses")
            .to_move(&pos)
            .expect("index move is legal");
        let variant = style.seed.wrapping_mul(31).wrapping_add(i);
        let mover = pos.turn();
        hand.wait(400 + (variant % 5) as u64 * 300);
        hand.play(&pos, m, variant);
        expected_sans.push(shakmaty::san::SanPlus::from_move(pos.clone(), m).to_string());
        pos.play_unchecked(m);
        let (last_sq, last_s) = hand.run_queue().expect("a move changes squares");
        let forget = variant % 11 == 3 && i + 1 < ucis.len();
        if variant % 5 == 1 && !forget && forgot.is_none() {
            // The press reaches the host before the board reports the last square
            // of the move (the board is up to a scan behind).
            hand.press(mover);
            hand.apply(last_sq, last_s, 60);
            hand.wait(250);
            continue;
        }
        hand.apply(last_sq, last_s, 200);
        if let Some(late) = forgot.take() {
            // The opponent forgot to press: he presses late, after this reply.
            hand.press(late);
        }
        hand.wait(250);
        if forget {
            forgot = Some(mover);
        } else {
            hand.press(mover);
        }
    }
    hand.wait(3_000);
    Driven {
        events: hand.events,
        pictures: hand.pictures,
        busy: hand.busy,
        expected_sans,
    }
}
