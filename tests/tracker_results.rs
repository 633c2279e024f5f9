//! Results the Laws give without a claim (5.1.1, 5.2.1, 5.2.2, 9.6.1, 9.6.2),
//! checked against every usable game of the index: the tracker must publish the
//! result the index's `final_state` names, at the ply where it first happened,
//! and no result for games that end without one (or only with a claimable draw).

use std::path::PathBuf;

use eboard_bridge::events::{GameEvent, GameResult, Millis, TrackerEvent};
use eboard_bridge::sim::accuracy::expected_result;
use eboard_bridge::sim::games::{fen_of, load_index};
use eboard_bridge::tracker::{start_number, Tracker, TrackerConfig};
use eboard_protocols::{ClockReading, ClockSide, Picture, SideTime};
use shakmaty::{Chess, Color, Move, Position};

/// What the tracker published as the game's result, and when.
#[derive(Debug, PartialEq, Eq)]
struct Published {
    result: GameResult,
    reason: String,
    /// Ply of the last verified move before the result.
    ply: u32,
    /// Time from the picture that showed the ending move to the result event.
    delay_ms: Millis,
}

/// Plays `moves` with one picture per ply and the mover's press 300 ms later: the
/// cheapest input that still goes through picture matching and press handling.
fn play(start: &Chess, moves: &[Move]) -> (Vec<Published>, usize) {
    let mut tracker = Tracker::new(TrackerConfig::default());
    if start_number(start.board()).is_none() || start.turn() == Color::Black {
        tracker
            .set_start_fen(&fen_of(start))
            .expect("the index's start is legal");
    }
    let white = ClockSide::Left;
    let side = |c: Color| {
        if c == Color::White {
            white
        } else {
            white.other()
        }
    };
    let mut reading = ClockReading {
        left: SideTime {
            millis: 5_400_000,
            ..SideTime::default()
        },
        right: SideTime {
            millis: 5_400_000,
            ..SideTime::default()
        },
        running: false,
        lever_high: Some(side(start.turn())),
        battery_low: false,
    };
    let mut out = Vec::new();
    let mut t = 1_000;
    tracker.clock(t, &reading, &mut out);
    tracker.picture(t, &Picture::from_board(start.board()), &mut out);
    t += 1_000;
    tracker.tick(t, &mut out);
    reading.running = true;
    tracker.clock(t, &reading, &mut out);
    let mut pos = start.clone();
    let mut published = Vec::new();
    let mut last_ply = 0;
    let mut shown_at = t;
    let mut collect = |out: &mut Vec<TrackerEvent>, t: Millis, shown_at: Millis| {
        for e in out.drain(..) {
            match e {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => last_ply = m.ply,
                TrackerEvent::Game(GameEvent::Result { result, reason }) => {
                    published.push(Published {
                        result,
                        reason: reason.to_string(),
                        ply: last_ply,
                        delay_ms: t - shown_at,
                    })
                }
                _ => {}
            }
        }
    };
    collect(&mut out, t, shown_at);
    for m in moves {
        let mover = pos.turn();
        pos.play_unchecked(*m);
        t += 1_500;
        shown_at = t;
        tracker.picture(t, &Picture::from_board(pos.board()), &mut out);
        collect(&mut out, t, shown_at);
        t += 300;
        reading.lever_high = Some(side(mover).other());
        tracker.clock(t, &reading, &mut out);
        collect(&mut out, t, shown_at);
        t += 500;
        tracker.tick(t, &mut out);
        collect(&mut out, t, shown_at);
    }
    t += 10_000;
    tracker.tick(t, &mut out);
    collect(&mut out, t, shown_at);
    (published, tracker.ply() as usize)
}

/// The first ply at which `pred` holds for the history so far (an independent
/// reading of the Laws with shakmaty, not the tracker's code).
fn first_ply(start: &Chess, moves: &[Move], pred: impl Fn(&[Chess]) -> bool) -> Option<u32> {
    let mut history = vec![start.clone()];
    for (i, m) in moves.iter().enumerate() {
        let mut next = history.last().expect("start").clone();
        next.play_unchecked(*m);
        history.push(next);
        if pred(&history) {
            return Some(i as u32 + 1);
        }
    }
    None
}

#[test]
fn automatic_results_match_the_index_at_the_right_ply() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut played = 0;
    for (i, entry) in index.iter().enumerate() {
        let Some(game) = entry.game.as_ref().filter(|_| entry.status == "ok") else {
            continue;
        };
        let states: Vec<&str> = entry.final_state.iter().map(String::as_str).collect();
        let has = |s: &str| states.contains(&s);
        // Games without any ending: only every 8th, to keep the test short; all
        // games with a final state are played.
        let ends = has("checkmate")
            || has("stalemate")
            || has("insufficient_material")
            || has("fivefold_repetition")
            || has("seventyfive_moves");
        if !ends && i % 8 != 0 {
            continue;
        }
        played += 1;
        let moves = &game.moves;
        let n = moves.len() as u32;
        let fivefold = first_ply(&game.start, moves, |h| {
            let last = h.last().expect("non-empty");
            h.iter().filter(|p| *p == last).count() >= 5
        });
        let seventy_five = first_ply(&game.start, moves, |h| {
            let last = h.last().expect("non-empty");
            last.halfmoves() >= 150 && !last.is_checkmate()
        });
        let dead = first_ply(&game.start, moves, |h| {
            h.last().expect("non-empty").is_insufficient_material()
        });
        let last_mover = if n % 2 == 1 {
            game.start.turn()
        } else {
            !game.start.turn()
        };
        // What the Laws give, and at which ply: the first automatic ending.
        let expected: Option<(GameResult, &str, u32)> = if has("checkmate") {
            Some((GameResult::win_for(last_mover), "checkmate", n))
        } else if has("stalemate") {
            Some((GameResult::Draw, "stalemate", n))
        } else {
            [
                (dead, "dead position"),
                (fivefold, "fivefold repetition"),
                (seventy_five, "75-move rule"),
            ]
            .into_iter()
            .filter_map(|(p, r)| p.map(|p| (GameResult::Draw, r, p)))
            .min_by_key(|(_, _, p)| *p)
        };
        // The accuracy bench's own reading must agree with this one.
        if expected_result(game, &entry.final_state) != expected {
            failures.push(format!(
                "{}#{}: accuracy::expected_result disagrees with {expected:?}",
                entry.file, entry.index
            ));
        }
        if has("insufficient_material") && dead.is_none() {
            failures.push(format!(
                "{}#{}: index says dead, shakmaty never",
                entry.file, entry.index
            ));
        }
        if has("fivefold_repetition") && fivefold.is_none() {
            failures.push(format!(
                "{}#{}: index says fivefold",
                entry.file, entry.index
            ));
        }
        if has("seventyfive_moves") && seventy_five.is_none() {
            failures.push(format!(
                "{}#{}: index says 75 moves",
                entry.file, entry.index
            ));
        }
        let (published, plies) = play(&game.start, moves);
        if plies != moves.len() {
            failures.push(format!(
                "{}#{}: only {plies} of {} plies verified",
                entry.file,
                entry.index,
                moves.len()
            ));
            continue;
        }
        let got: Vec<(GameResult, &str, u32)> = published
            .iter()
            .map(|p| (p.result, p.reason.as_str(), p.ply))
            .collect();
        let want: Vec<(GameResult, &str, u32)> = expected.into_iter().collect();
        if got != want {
            failures.push(format!(
                "{}#{} {:?}: published {got:?}, expected {want:?}",
                entry.file, entry.index, states
            ));
        }
        for p in &published {
            *counts
                .entry(match p.reason.as_str() {
                    "checkmate" => "checkmate",
                    "stalemate" => "stalemate",
                    "dead position" => "dead position",
                    "fivefold repetition" => "fivefold",
                    "75-move rule" => "75 moves",
                    _ => "other",
                })
                .or_default() += 1;
            if p.delay_ms > 1_000 {
                failures.push(format!(
                    "{}#{}: result {} ms after the picture that showed it",
                    entry.file, entry.index, p.delay_ms
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(played > 400, "played {played}");
    // Every kind the index holds was seen.
    for kind in [
        "checkmate",
        "stalemate",
        "dead position",
        "fivefold",
        "75 moves",
    ] {
        assert!(
            counts.get(kind).is_some_and(|&c| c > 0),
            "no {kind} in {counts:?}"
        );
    }
    eprintln!(
        "{played} games, results {counts:?}, {:?}",
        started.elapsed()
    );
}
