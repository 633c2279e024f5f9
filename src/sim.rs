//! Simulated captures: a game played by the hand model on a virtual DGT board,
//! recorded byte for byte as the daemon would have seen it.
//!
//! No sleeping and no I/O: the virtual board is a time-injected state machine, so
//! a whole game takes milliseconds and the accuracy benchmark can run thousands.

use eboard_protocols::dgt::virtual_board::{VirtualBoard, VirtualBoardConfig};
use eboard_protocols::dgt::virtual_clock::{ClockConfig, PressRecord};
use eboard_protocols::hand::{self, HandConfig, HandScript, PhysicalBoard};
use shakmaty::Position;

use crate::capture::{Chunk, Direction};
use crate::games::Game;

/// The bytes the daemon sends when it opens a DGT board: reset, serial number,
/// version, board dump, update-nice mode, clock.
pub const DAEMON_START_UP: [u8; 6] = [0x40, 0x45, 0x4d, 0x42, 0x4b, 0x41];

/// How a game is simulated.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Seeds the board and the hands (their own seeds are derived from it).
    pub seed: u64,
    pub hand: HandConfig,
    pub board: VirtualBoardConfig,
    /// When the host starts talking to the board.
    pub host_start_ms: u64,
    /// Gap between two start-up commands.
    pub host_gap_ms: u64,
    /// How long the recording goes on after the last action.
    pub tail_ms: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 0,
            hand: HandConfig {
                start_ms: 2_000,
                ..HandConfig::default()
            },
            board: VirtualBoardConfig {
                clock: ClockConfig::default(),
                ..VirtualBoardConfig::default()
            },
            host_start_ms: 200,
            host_gap_ms: 30,
            tail_ms: 3_000,
        }
    }
}

/// A simulated game: the capture and the hands' script that produced it.
#[derive(Clone, Debug)]
pub struct SimRun {
    pub chunks: Vec<Chunk>,
    pub script: HandScript,
    /// The virtual clock's own record of every press that completed a move (the
    /// `k`-th after ply `k`): what a verified move's `[%clk]` must show.
    pub presses: Vec<PressRecord>,
}

/// Plays `game` on a virtual DGT board and records both directions.
pub fn simulate(game: &Game, opts: &SimOptions) -> SimRun {
    let hand_cfg = HandConfig {
        seed: opts.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0068_616e_6400, // "hand": the hands get their own stream
        ..opts.hand.clone()
    };
    let script = hand::play(&game.start, &game.moves, &hand_cfg);
    simulate_script(game, opts, script)
}

/// Plays `script` (lifts, placements and presses for `game`, in the board's
/// frame, from any hand model) on a virtual DGT board set up with `game`'s start
/// and records both directions. `opts.hand.rotated` says how the board stands.
pub fn simulate_script(game: &Game, opts: &SimOptions, script: HandScript) -> SimRun {
    let board_cfg = VirtualBoardConfig {
        seed: opts.seed,
        ..opts.board.clone()
    };
    let pieces = PhysicalBoard::from_board(game.start.board(), opts.hand.rotated);
    let mut board = VirtualBoard::new(board_cfg, pieces);

    let mut chunks = Vec::new();
    let mut end = send_start_up(&mut board, opts, &mut chunks);
    for a in &script.actions {
        // The script comes from legal moves, so every action is possible; the
        // hand model's own tests hold it to that.
        board
            .apply(a.t_ms, a.action)
            .expect("the hand model produced a physically impossible action");
        end = end.max(a.t_ms);
    }
    board.advance(end + opts.tail_ms);
    for (t_ms, bytes) in board.take_output() {
        chunks.push(Chunk {
            t_ms,
            dir: Direction::In,
            bytes,
        });
    }
    // Host bytes were pushed first, so a stable sort keeps a command ahead of an
    // answer stamped the same millisecond.
    chunks.sort_by_key(|c| c.t_ms);
    SimRun {
        chunks,
        script,
        presses: board.clock().presses().to_vec(),
    }
}

/// Sends the daemon's start-up sequence to `board` from `opts.host_start_ms`,
/// one byte every `opts.host_gap_ms`, recording each as a host chunk. Returns
/// the time after the last byte.
pub fn send_start_up(board: &mut VirtualBoard, opts: &SimOptions, chunks: &mut Vec<Chunk>) -> u64 {
    let mut t = opts.host_start_ms;
    for &b in &DAEMON_START_UP {
        board.receive_host(t, &[b]);
        chunks.push(Chunk {
            t_ms: t,
            dir: Direction::Out,
            bytes: vec![b],
        });
        t += opts.host_gap_ms;
    }
    t
}

/// Plays `game` on a virtual DGT board and returns the capture.
pub fn dgt_capture(game: &Game, opts: &SimOptions) -> Vec<Chunk> {
    simulate(game, opts).chunks
}

/// How the daemon's bus link polls, for [`simulate_bus`]: the same schedule as
/// `device::run_dgt_bus_link` (SEND_CHANGES to every board each round, SEND_CLK
/// after it when a clock round is due), with the host's own delays made explicit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusPolling {
    /// A round of SEND_CHANGES starts this often.
    pub poll_ms: u64,
    /// SEND_CLK follows a board's SEND_CHANGES when this long has passed since
    /// the last clock round.
    pub clock_every_ms: u64,
    /// From a reply's arrival to the host's next command (decoding, a task
    /// switch, the pty).
    pub turnaround_ms: u64,
    /// How long every board takes to answer a ping to all (discovery).
    pub ping_window_ms: u64,
}

impl Default for BusPolling {
    /// The daemon's defaults (`[device]` in the configuration).
    fn default() -> Self {
        BusPolling {
            poll_ms: 300,
            clock_every_ms: 2_000,
            turnaround_ms: 1,
            ping_window_ms: 1_300,
        }
    }
}

/// Board `index` of a virtual bus: `cfg` with seed `seed` and serial number
/// (so bus address) `cfg.serial + index`, its pieces set up for `game`.
pub fn bus_board(
    cfg: &VirtualBoardConfig,
    seed: u64,
    index: usize,
    game: &Game,
    rotated: bool,
) -> VirtualBoard {
    VirtualBoard::new(
        VirtualBoardConfig {
            seed,
            serial: cfg.serial.wrapping_add(index as u16),
            ..cfg.clone()
        },
        PhysicalBoard::from_board(game.start.board(), rotated),
    )
}

/// Games played on virtual boards sharing one bus line, as the daemon's bus
/// link would have recorded them.
#[derive(Clone, Debug)]
pub struct BusSimRun {
    /// Both directions, in time order, as one capture of the port.
    pub chunks: Vec<Chunk>,
    /// Board `i`'s bus address (its serial number: `opts.board.serial + i`).
    pub addresses: Vec<u16>,
    /// Board `i`'s clock's own record of each press that completed a move.
    pub presses: Vec<Vec<PressRecord>>,
}

/// Plays `games[i]` on board `i` of a virtual bus and polls the line the way
/// the daemon's bus link does, with time simulated: board `i` has serial number
/// `opts.board.serial + i` and seed `opts.seed + i`. Hands act between the
/// host's commands exactly when their script says, so a press can land between
/// a board's change report and its clock reading, as on a real line. Returns
/// once every script has played and `opts.tail_ms` has passed.
pub fn simulate_bus(games: &[Game], opts: &SimOptions, polling: &BusPolling) -> BusSimRun {
    use eboard_protocols::dgt::virtual_board::VirtualBus;
    use eboard_protocols::dgt::{BusCommand, BusCommandKind, Command};

    let mut boards = Vec::with_capacity(games.len());
    let mut actions = Vec::new();
    for (i, game) in games.iter().enumerate() {
        let seed = opts.seed.wrapping_add(i as u64);
        let hand_cfg = HandConfig {
            seed: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0068_616e_6400,
            ..opts.hand.clone()
        };
        let script = hand::play(&game.start, &game.moves, &hand_cfg);
        actions.extend(script.actions.into_iter().map(|a| (a.t_ms, i, a.action)));
        boards.push(bus_board(&opts.board, seed, i, game, hand_cfg.rotated));
    }
    // Stable: one board's actions keep their order at equal times.
    actions.sort_by_key(|&(t, i, _)| (t, i));
    let addresses: Vec<u16> = boards.iter().map(|b| b.address()).collect();
    let end = actions.last().map_or(0, |a| a.0) + opts.tail_ms;

    let mut line = BusLine {
        bus: VirtualBus::new(boards),
        actions: actions.into_iter(),
        next: None,
        pending: Vec::new(),
        chunks: Vec::new(),
    };
    line.next = line.actions.next();
    let encode = |kind: BusCommandKind, address: u16| {
        let mut b = Vec::new();
        BusCommand { kind, address }.encode(&mut b);
        b
    };
    // The link's start: every board to bus mode, one ping round (the boards
    // answer at random within the window), then a dump and a clock per board.
    let mut t = opts.host_start_ms;
    let mut to_bus = Vec::new();
    Command::ToBusMode.encode(&mut to_bus);
    t = line.ask(t, to_bus, None, polling.turnaround_ms);
    t = line.ask(
        t,
        encode(BusCommandKind::Ping, 0),
        None,
        polling.ping_window_ms,
    );
    let reply_wait = 250;
    for &a in &addresses {
        t = line.ask(t, encode(BusCommandKind::SendBoard, a), Some(a), reply_wait);
        t += polling.turnaround_ms;
        t = line.ask(t, encode(BusCommandKind::SendClock, a), Some(a), reply_wait);
        t += polling.turnaround_ms;
    }
    let mut last_clock = t;
    while t < end {
        let round = t;
        let clocks = round >= last_clock + polling.clock_every_ms;
        for &a in &addresses {
            t = line.ask(
                t,
                encode(BusCommandKind::SendChanges, a),
                Some(a),
                reply_wait,
            );
            t += polling.turnaround_ms;
            if clocks {
                t = line.ask(t, encode(BusCommandKind::SendClock, a), Some(a), reply_wait);
                t += polling.turnaround_ms;
            }
        }
        if clocks {
            last_clock = t;
        }
        t = t.max(round + polling.poll_ms);
    }
    let presses = line
        .bus
        .boards
        .iter()
        .map(|b| b.clock().presses().to_vec())
        .collect();
    BusSimRun {
        chunks: line.chunks,
        addresses,
        presses,
    }
}

/// The hands and boards on one simulated bus line, and what the host recorded.
struct BusLine {
    bus: eboard_protocols::dgt::virtual_board::VirtualBus,
    actions: std::vec::IntoIter<(u64, usize, hand::PhysicalAction)>,
    next: Option<(u64, usize, hand::PhysicalAction)>,
    /// Board output already taken from the boards, not yet on the line.
    pending: Vec<(u64, Vec<u8>)>,
    chunks: Vec<Chunk>,
}

impl BusLine {
    /// Runs the hands and the boards up to `t`.
    fn until(&mut self, t: u64) {
        while let Some((at, i, action)) = self.next.filter(|a| a.0 <= t) {
            self.bus
                .apply(i, at, action)
                .expect("the hand model produced a physically impossible action");
            self.next = self.actions.next();
        }
        self.bus.advance(t);
        self.pending.extend(self.bus.take_output());
        self.pending.sort_by_key(|(at, _)| *at);
    }

    /// Sends `bytes` at `t`, then records what the boards say until `wait` has
    /// passed or, with `address`, until that board's first reply is complete.
    /// Returns the time the host has everything it waited for.
    fn ask(&mut self, t: u64, bytes: Vec<u8>, address: Option<u16>, wait: u64) -> u64 {
        self.until(t);
        self.bus.receive_host(t, &bytes);
        self.chunks.push(Chunk {
            t_ms: t,
            dir: Direction::Out,
            bytes,
        });
        let deadline = t + wait;
        let mut now = t;
        loop {
            self.until(now);
            let due = self.pending.iter().take_while(|(at, _)| *at <= now).count();
            let mut answered = false;
            for (at, bytes) in self.pending.drain(..due) {
                answered |= address.is_some_and(|a| is_reply_from(&bytes, a));
                self.chunks.push(Chunk {
                    t_ms: at,
                    dir: Direction::In,
                    bytes,
                });
            }
            if answered || now >= deadline {
                return now;
            }
            // Next: the next queued reply, or a board's next event (a ping
            // answer it schedules itself), within the wait.
            let board_next = self
                .bus
                .boards
                .iter()
                .map(|b| b.next_event_at())
                .min()
                .unwrap_or(u64::MAX);
            let queued = self.pending.first().map_or(u64::MAX, |(at, _)| *at);
            now = queued.min(board_next).clamp(now + 1, deadline);
        }
    }
}

/// Whether `bytes` (one encoded bus message) come from the board at `address`.
fn is_reply_from(bytes: &[u8], address: u16) -> bool {
    bytes.len() >= 5 && ((u16::from(bytes[3]) << 7) | u16::from(bytes[4])) == address
}
