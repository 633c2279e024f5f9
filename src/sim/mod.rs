//! Simulated captures: a game played by a hand model on a family's virtual
//! board, with the family's real driver as the host, recorded byte for byte as
//! the daemon would have seen it.
//!
//! No sleeping and no I/O: the virtual board and the driver are time-injected
//! state machines, run here on one simulated time line ([`run_line`]), so a
//! whole game takes milliseconds and the accuracy benchmark can run thousands.
//! The driver is the daemon's own: what it writes (DGT's start-up sequence,
//! its probes, the bus schedule, Millennium's settings, …) is what the
//! daemon would write, at the times it would.
//!
//! Beside the simulator live what runs the bridge on made-up or hostile
//! input rather than a hall's boards: [`games`], the loader of the games it
//! plays (PGN files and the data index), [`accuracy`], the harness that reads
//! simulated games back through the session and tracker and compares them
//! with the source, and [`fuzzing`], the checks the fuzz targets and
//! `tests/fuzz_smoke.rs` run on every input.

pub mod accuracy;
pub mod fuzzing;
pub mod games;

use eboard_protocols::dgt::virtual_clock::PressRecord;
use eboard_protocols::family::{
    ClockLink, Driver, DriverSetup, DriverTimings, Family, PortMode, Reporting, VirtualDevice,
    VirtualSpec,
};
use eboard_protocols::hand::{self, HandConfig, HandScript, PhysicalAction, PhysicalBoard};
use shakmaty::Position;

use crate::session::capture::{Chunk, Direction};
use crate::sim::games::Game;

/// How a game is simulated.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Seeds the board and the hands (their own seeds are derived from it).
    pub seed: u64,
    /// The board family played on.
    pub family: &'static Family,
    pub hand: HandConfig,
    /// The virtual board's build (its seed is replaced by `seed`).
    pub board: VirtualSpec,
    /// When the host opens the port.
    pub host_start_ms: u64,
    /// How long the recording goes on after the last action.
    pub tail_ms: u64,
    /// The host's link timings (the daemon's defaults).
    pub timings: DriverTimings,
    /// Once the recording ends, the arbiter enters the result of a game the
    /// board did not end (a resignation, an agreed draw), as arbiters do at a
    /// tournament. The accuracy runs only: the result is not scored.
    pub arbiter_result: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 0,
            family: &eboard_protocols::dgt::FAMILY,
            hand: HandConfig {
                start_ms: 2_000,
                ..HandConfig::default()
            },
            board: VirtualSpec::default(),
            host_start_ms: 200,
            tail_ms: 3_000,
            timings: DriverTimings::default(),
            arbiter_result: false,
        }
    }
}

/// How long the recording of one board goes on after the hands' last action.
/// The daemon goes on reading the board while the players sign the
/// scoresheets. A last move without a clock is proven only by its picture
/// staying (the clockless hold, a period and a half more on a frame board),
/// and a last move whose press was forgotten by standing for the unpressed
/// hold: the recording covers that. Cut sooner, a one-scan misread in its
/// last scan stands for good, and the last move is never verified (DGT,
/// blind hands in time trouble on a turned board: 2 games in 1,939).
fn recording_tail_ms(opts: &SimOptions) -> u64 {
    let config = crate::tracker::TrackerConfig::default();
    let caps = (opts.family.capabilities)(PortMode::Single);
    let covered = match (caps.clock, caps.reporting) {
        (ClockLink::ThroughBoard { .. }, _) => config.unpressed_hold_ms + 2_000,
        (ClockLink::None, Reporting::Frames { period_ms }) => {
            config.clockless_hold_ms + 3 * period_ms
        }
        // Changes are reported within a scan: the recording's own tail is
        // longer than the clockless hold.
        (ClockLink::None, Reporting::EveryChange { .. }) => 0,
    };
    // A board left showing what the record does not explain gets a 7.4 once
    // the picture has stood for the displaced alert's time (longer when a
    // frame caught the mover's piece in the hand), and a board that sends
    // frames goes on sending them while the players sign. Cut sooner, a game
    // whose end the tracker lost reads as quiet (Certabo, blind hands in time
    // trouble: the mate of game 27 never published, and no alert).
    let alerted = match caps.reporting {
        Reporting::Frames { period_ms } => {
            config
                .displaced_alert_ms
                .max(crate::tracker::HOVER_ALERT_MS)
                + 2 * period_ms
        }
        Reporting::EveryChange { .. } => 0,
    };
    opts.tail_ms.max(covered).max(alerted)
}

/// A simulated game: the capture and the hands' script that produced it.
#[derive(Clone, Debug)]
pub struct SimRun {
    pub chunks: Vec<Chunk>,
    pub script: HandScript,
    /// The virtual clock's own record of every press that completed a move (the
    /// `k`-th after ply `k`): what a verified move's `[%clk]` must show. Empty
    /// for families without a clock.
    pub presses: Vec<PressRecord>,
}

/// The hands' seed for a board seeded `seed`: their own stream.
fn hand_seed(seed: u64) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0068_616e_6400 // "hand"
}

/// Plays `game` on a virtual board of `opts.family` and records both directions.
pub fn simulate(game: &Game, opts: &SimOptions) -> SimRun {
    let hand_cfg = HandConfig {
        seed: hand_seed(opts.seed),
        ..opts.hand.clone()
    };
    let script = hand::play(&game.start, &game.moves, &hand_cfg);
    simulate_script(game, opts, script)
}

/// Plays `script` (lifts, placements and presses for `game`, in the board's
/// frame, from any hand model) on a virtual board of `opts.family` set up with
/// `game`'s start and records both directions. `opts.hand.rotated` says how
/// the board stands.
pub fn simulate_script(game: &Game, opts: &SimOptions, script: HandScript) -> SimRun {
    let spec = VirtualSpec {
        seed: opts.seed,
        ..opts.board.clone()
    };
    let pieces = PhysicalBoard::from_board(game.start.board(), opts.hand.rotated);
    let mut device = (opts.family.virtual_device)(&spec, vec![pieces]);
    let mut driver = (opts.family.driver)(&DriverSetup {
        mode: PortMode::Single,
        timings: opts.timings,
    });
    let actions: Vec<(u64, usize, PhysicalAction)> = script
        .actions
        .iter()
        .map(|a| (a.t_ms, 0, a.action))
        .collect();
    let chunks = run_line(
        device.as_mut(),
        driver.as_mut(),
        &actions,
        opts.host_start_ms,
        recording_tail_ms(opts),
    );
    SimRun {
        chunks,
        script,
        presses: device.presses(0),
    }
}

/// Plays `game` on a virtual board and returns the capture.
pub fn capture(game: &Game, opts: &SimOptions) -> Vec<Chunk> {
    simulate(game, opts).chunks
}

/// [`capture`] on a DGT board (the default family).
pub fn dgt_capture(game: &Game, opts: &SimOptions) -> Vec<Chunk> {
    capture(game, opts)
}

/// Runs `driver` as the host of `device` on one simulated time line, from
/// `start_ms` (the port is opened) until `tail_ms` after the last of
/// `actions` (hands acting on board `i` at `t`), and returns what went over
/// the line, both ways, in time order. Board output reaches the driver when
/// it starts on the line; what the driver writes reaches the boards at once.
pub fn run_line(
    device: &mut dyn VirtualDevice,
    driver: &mut dyn Driver,
    actions: &[(u64, usize, PhysicalAction)],
    start_ms: u64,
    tail_ms: u64,
) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut t = start_ms;
    let end = actions.last().map_or(start_ms, |a| a.0).max(start_ms) + tail_ms;
    let mut next_action = 0;
    let mut pending: std::collections::VecDeque<(u64, Vec<u8>)> = Default::default();
    driver.start(t);
    loop {
        while let Some(bytes) = driver.poll_transmit(t) {
            device.receive_host(t, &bytes);
            chunks.push(Chunk {
                t_ms: t,
                dir: Direction::Out,
                bytes,
            });
        }
        // The simulation needs no link supervision: a driver's verdicts
        // (a board gone silent) are for the daemon.
        while driver.poll_event().is_some() {}
        let candidates = [
            actions.get(next_action).map(|a| a.0),
            Some(device.next_event_at()),
            driver.next_deadline(),
            pending.front().map(|p| p.0),
        ];
        let next = candidates.into_iter().flatten().min().unwrap_or(u64::MAX);
        // Time always moves on: every candidate at `t` was dealt with above.
        let next = next.max(t + 1);
        if next > end {
            break;
        }
        t = next;
        while let Some(&(at, board, action)) = actions.get(next_action).filter(|a| a.0 <= t) {
            // The script comes from legal moves, so every action is possible;
            // the hand models' own tests hold them to that.
            device
                .apply(board, at, action)
                .expect("the hand model produced a physically impossible action");
            next_action += 1;
        }
        device.advance(t);
        let mut out = device.take_output();
        if !out.is_empty() {
            pending.extend(out.drain(..));
            pending.make_contiguous().sort_by_key(|(at, _)| *at);
        }
        while let Some((at, bytes)) = pending.pop_front() {
            if at > t {
                pending.push_front((at, bytes));
                break;
            }
            driver.board_bytes(at, &bytes);
            chunks.push(Chunk {
                t_ms: at,
                dir: Direction::In,
                bytes,
            });
        }
    }
    // Whatever the boards still said until the end, unanswered.
    for &(at, board, action) in &actions[next_action..] {
        device
            .apply(board, at, action)
            .expect("the hand model produced a physically impossible action");
    }
    device.advance(end);
    pending.extend(device.take_output());
    for (at, bytes) in pending {
        chunks.push(Chunk {
            t_ms: at,
            dir: Direction::In,
            bytes,
        });
    }
    // Stable: a command stays ahead of an answer stamped the same millisecond.
    chunks.sort_by_key(|c| c.t_ms);
    chunks
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
    /// Board `i`'s hands: whether each ply's press moved the lever.
    pub pressed: Vec<Vec<bool>>,
}

/// Plays `games[i]` on board `i` of a virtual bus of `opts.family` (DGT) and
/// polls the line with the family's bus driver, the daemon's, with time
/// simulated: board `i` has serial number `opts.board.serial + i` and seed
/// `opts.seed + i`. Hands act between the host's commands exactly when their
/// script says, so a press can land between a board's change report and its
/// clock reading, as on a real line. Returns once every script has played and
/// `opts.tail_ms` has passed.
pub fn simulate_bus(games: &[Game], opts: &SimOptions) -> BusSimRun {
    let mut pieces = Vec::with_capacity(games.len());
    let mut actions = Vec::new();
    let mut pressed = Vec::with_capacity(games.len());
    for (i, game) in games.iter().enumerate() {
        let seed = opts.seed.wrapping_add(i as u64);
        let hand_cfg = HandConfig {
            seed: hand_seed(seed),
            ..opts.hand.clone()
        };
        let script = hand::play(&game.start, &game.moves, &hand_cfg);
        pressed.push(script.pressed.clone());
        actions.extend(script.actions.into_iter().map(|a| (a.t_ms, i, a.action)));
        pieces.push(PhysicalBoard::from_board(
            game.start.board(),
            hand_cfg.rotated,
        ));
    }
    // Stable: one board's actions keep their order at equal times.
    actions.sort_by_key(|&(t, i, _)| (t, i));
    let spec = VirtualSpec {
        seed: opts.seed,
        ..opts.board.clone()
    };
    let mut device = (opts.family.virtual_device)(&spec, pieces);
    let mut driver = (opts.family.driver)(&DriverSetup {
        mode: PortMode::Bus,
        timings: opts.timings,
    });
    let chunks = run_line(
        device.as_mut(),
        driver.as_mut(),
        &actions,
        opts.host_start_ms,
        opts.tail_ms,
    );
    let addresses = (0..games.len())
        .map(|i| opts.board.serial.wrapping_add(i as u16) & 0x3fff)
        .collect();
    let presses = (0..games.len()).map(|i| device.presses(i)).collect();
    BusSimRun {
        chunks,
        addresses,
        presses,
        pressed,
    }
}
