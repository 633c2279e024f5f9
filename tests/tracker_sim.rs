//! The tracker behind the real session, fed by the vboard helper's hand model on
//! the virtual DGT board: realistic hands (slides with pauses, early replies,
//! adjustments, knocked pieces, hovering, changed moves), scan timing and clock.

use std::path::PathBuf;

use eboard_bridge::events::{GameEvent, Severity, Stamped, TrackerEvent};
use eboard_bridge::session::Session;
use eboard_bridge::sim::games::load_index;
use eboard_bridge::sim::{simulate, SimOptions};
use eboard_bridge::tracker::{start_number, TrackerConfig};
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;
use eboard_protocols::ClockSide;
use shakmaty::Position;

struct Tally {
    games: usize,
    exact: usize,
    retractions: usize,
    serious: Vec<String>,
    wrong: Vec<String>,
    /// Games whose start was seen with the board turned 180°.
    rotated_starts: usize,
}

fn run(step: usize, rotated: bool, clock_right: bool, stress: bool) -> Tally {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    let mut tally = Tally {
        games: 0,
        exact: 0,
        retractions: 0,
        serious: Vec::new(),
        wrong: Vec::new(),
        rotated_starts: 0,
    };
    for (i, entry) in index.iter().enumerate().filter(|(i, _)| i % step == 0) {
        let Some(game) = entry.game.as_ref() else {
            continue;
        };
        if game.moves.is_empty()
            || start_number(game.start.board()).is_none()
            || game.start.turn() != shakmaty::Color::White
        {
            continue;
        }
        let mut opts = SimOptions {
            seed: i as u64,
            ..SimOptions::default()
        };
        opts.hand.speed = 0.02;
        if stress {
            // Fast, careless hands: every irregular habit far more often.
            opts.hand.hand_speed = 0.5;
            opts.hand.slide = 0.4;
            opts.hand.slide_pause = 0.5;
            opts.hand.adjust = 0.2;
            opts.hand.early_reply = 0.3;
            opts.hand.retract = 0.1;
            opts.hand.knock = 0.1;
            opts.hand.hover = 0.1;
        }
        opts.hand.rotated = rotated;
        opts.hand.white_clock = if clock_right {
            ClockSide::Right
        } else {
            ClockSide::Left
        };
        let run = simulate(game, &opts);
        let mut session = Session::new(1, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
        let mut events: Vec<Stamped> = Vec::new();
        let mut last = 0;
        for chunk in &run.chunks {
            session.feed(chunk, &mut events);
            last = chunk.t_ms;
        }
        session.tick(last + 10_000, &mut events);
        let mut line: Vec<String> = Vec::new();
        for e in &events {
            match &e.event {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => line.push(m.uci.clone()),
                TrackerEvent::Game(GameEvent::GameStart { rotated: true, .. }) => {
                    tally.rotated_starts += 1
                }
                TrackerEvent::Game(GameEvent::Retraction { from_ply, .. }) => {
                    tally.retractions += 1;
                    tally.wrong.push(format!(
                        "{}#{}: retraction from ply {from_ply} at {} ms",
                        entry.file, entry.index, e.t_ms
                    ));
                    line.truncate(*from_ply as usize - 1);
                }
                TrackerEvent::Alert(a) if a.severity >= Severity::Warning => {
                    tally.serious.push(format!(
                        "{}#{}: {} {} {:?} {}",
                        entry.file, entry.index, a.kind, a.article, a.squares, a.message
                    ));
                }
                _ => {}
            }
        }
        let mode = if game.chess960.is_some() {
            shakmaty::CastlingMode::Chess960
        } else {
            shakmaty::CastlingMode::Standard
        };
        let want: Vec<String> = game
            .moves
            .iter()
            .map(|m| m.to_uci(mode).to_string())
            .collect();
        tally.games += 1;
        if line == want {
            tally.exact += 1;
        } else {
            let first = line
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(line.len().min(want.len()));
            tally.wrong.push(format!(
                "{}#{} differs at ply {} of {} (got {} plies): got {:?} want {:?}",
                entry.file,
                entry.index,
                first + 1,
                want.len(),
                line.len(),
                line.get(first),
                want.get(first)
            ));
        }
    }
    tally
}

fn report(name: &str, t: &Tally) {
    eprintln!(
        "{name}: {} games, {} exact, {} retractions, {} serious alerts",
        t.games,
        t.exact,
        t.retractions,
        t.serious.len()
    );
    for w in t.wrong.iter().take(10) {
        eprintln!("  {w}");
    }
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for s in &t.serious {
        let kind = s
            .split(": ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap_or("");
        *kinds.entry(kind.to_string()).or_default() += 1;
    }
    eprintln!("  alert kinds: {kinds:?}");
    for s in t.serious.iter().take(10) {
        eprintln!("  {s}");
    }
}

/// Every 40th game by default; `TRACKER_SIM_STEP=1` plays them all.
#[test]
fn realistic_hands_through_the_session() {
    let step = std::env::var("TRACKER_SIM_STEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    for (name, rotated, right) in [
        ("normal", false, false),
        ("rotated", true, false),
        ("clock right", false, true),
    ] {
        let t = run(step, rotated, right, false);
        report(name, &t);
        assert!(t.games > 40, "{name}: a real sample was played");
        let want_rotated = if rotated { t.games } else { 0 };
        assert_eq!(
            t.rotated_starts, want_rotated,
            "{name}: orientation found from the start"
        );
        assert_eq!(t.exact, t.games, "{name}: every game followed exactly");
        assert_eq!(t.retractions, 0, "{name}: no retraction in normal play");
        // Alerts are for arbiters: false alarms must stay rare (under 2% of games).
        assert!(
            t.serious.len() * 50 <= t.games,
            "{name}: {} serious alerts",
            t.serious.len()
        );
    }
}

/// The same with fast, careless hands (every habit 5-10 times as often).
#[test]
fn careless_fast_hands_through_the_session() {
    let step = std::env::var("TRACKER_SIM_STEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let t = run(step, false, false, true);
    report("careless", &t);
    assert!(t.games > 40);
    // Not every careless habit can be read back (two presses inside one clock
    // report, a knocked piece left on a square where the move would be legal); the
    // floor keeps what is reached.
    assert!(
        t.exact * 100 >= t.games * 95,
        "{} of {} games exact",
        t.exact,
        t.games
    );
    assert!(
        t.retractions * 100 <= t.games,
        "{} retractions",
        t.retractions
    );
}
