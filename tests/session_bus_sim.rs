//! Boards in bus mode, polled on the daemon's schedule with time simulated:
//! the hand model plays real games on virtual boards sharing one line, the host
//! asks each board for its changes every 300 ms and for its clock every 2 s, and
//! the recorded line goes through `Session` as the daemon's loop would feed
//! it. Hands act between the host's commands exactly when their scripts say, so
//! every race the real line has (a press between a board's change report and
//! its clock reading, both players pressing between two polls) comes up here,
//! reproducibly, across many seeds, without the minutes a pty test would take.

use std::collections::BTreeMap;
use std::path::PathBuf;

use eboard_bridge::events::{GameEvent, Severity, Stamped, TrackerEvent};
use eboard_bridge::session::{CaptureDriver, Session};
use eboard_bridge::sim::games::{load_index, Game};
use eboard_bridge::sim::{simulate_bus, SimOptions};
use eboard_bridge::tracker::{start_number, TrackerConfig};
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;
use eboard_protocols::ClockSide;
use shakmaty::Position;

/// Standard-start games from the data set, `count` of them, every `step`-th.
fn games(count: usize, step: usize) -> Vec<Game> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    index
        .iter()
        .step_by(step)
        .filter_map(|e| e.game.clone())
        .filter(|g| {
            !g.moves.is_empty()
                && g.chess960.is_none()
                && start_number(g.start.board()) == Some(518)
                && g.start.turn() == shakmaty::Color::White
        })
        .take(count)
        .collect()
}

/// Plays `games` on one bus (one board per game) and returns, per board, what
/// went wrong: a differing move line, retractions, warning or error alerts.
fn play_bus(
    games: &[Game],
    seed: u64,
    think: f64,
    hand_speed: f64,
    clock_right: bool,
) -> Vec<String> {
    let mut opts = SimOptions {
        seed,
        ..SimOptions::default()
    };
    // Thinking compressed, hands as given: the races are in the hands.
    opts.hand.speed = think;
    opts.hand.hand_speed = hand_speed;
    // The players sit down once the link has found the boards.
    opts.hand.start_ms = 3_000;
    opts.hand.white_clock = if clock_right {
        ClockSide::Right
    } else {
        ClockSide::Left
    };
    let run = simulate_bus(games, &opts);
    let session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut events: Vec<Stamped> = Vec::new();
    // The daemon's loop: the trackers ticked on the 100 ms grid between chunks.
    let mut driver = CaptureDriver::new(session);
    for chunk in &run.chunks {
        driver.chunk(chunk, &mut events);
    }
    driver.finish(10_000, &mut events);

    // Unconfigured bus boards are numbered by their address.
    let mut lines: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for e in &events {
        let line = lines.entry(e.board).or_default();
        match &e.event {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                line.truncate(m.ply as usize - 1);
                line.push(m.uci.clone());
            }
            TrackerEvent::Game(GameEvent::Retraction { from_ply, .. }) => {
                problems.push(format!(
                    "board {} (seed {seed}): retraction from ply {from_ply} at {} ms",
                    e.board, e.t_ms
                ));
                line.truncate(*from_ply as usize - 1);
            }
            TrackerEvent::Alert(a) if a.severity >= Severity::Warning => problems.push(format!(
                "board {} (seed {seed}) ply {} at {} ms: {} {} {:?} {}",
                e.board, e.ply, e.t_ms, a.article, a.kind, a.squares, a.message
            )),
            _ => {}
        }
    }
    for (game, address) in games.iter().zip(&run.addresses) {
        let want = game.uci_moves();
        let got = lines.remove(&u32::from(*address)).unwrap_or_default();
        if got != want {
            let first = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            problems.push(format!(
                "board {address} (seed {seed}, hand speed {hand_speed}, clock right {clock_right}): \
                 differs at ply {} of {}: got {:?}, want {:?}",
                first + 1,
                want.len(),
                got.get(first),
                want.get(first)
            ));
        }
    }
    problems
}

fn check(think: f64, hand_speed: f64, buses: usize, per_bus: usize) {
    let all = games(buses * per_bus, 7);
    let mut problems = Vec::new();
    for (n, chunk) in all.chunks(per_bus).enumerate() {
        problems.extend(play_bus(
            chunk,
            1_000 + n as u64,
            think,
            hand_speed,
            n % 2 == 1,
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problems over {} boards:\n{}",
        problems.len(),
        all.len(),
        problems.join("\n")
    );
}

#[test]
fn bus_boards_at_human_hand_speed_are_followed_exactly() {
    check(0.02, 1.0, 40, 4);
}

#[test]
fn bus_boards_at_three_times_human_hand_speed_are_followed_exactly() {
    check(0.1, 1.0 / 3.0, 6, 4);
}
