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
    let board_cfg = VirtualBoardConfig {
        seed: opts.seed,
        ..opts.board.clone()
    };
    let script = hand::play(&game.start, &game.moves, &hand_cfg);
    let pieces = PhysicalBoard::from_board(game.start.board(), hand_cfg.rotated);
    let mut board = VirtualBoard::new(board_cfg, pieces);

    let mut chunks = Vec::new();
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
    let mut end = t;
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

/// Plays `game` on a virtual DGT board and returns the capture.
pub fn dgt_capture(game: &Game, opts: &SimOptions) -> Vec<Chunk> {
    simulate(game, opts).chunks
}
