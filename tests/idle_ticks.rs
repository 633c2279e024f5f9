//! The tracker skips the ticks that cannot change anything (a game at rest
//! while a player thinks: most of a board-hour). That is only an economy if
//! the events are exactly those of ticking every 100 ms: the same moves,
//! clocks, alerts and notes, at the same times. Real games played by both
//! hand models on every family that reads pieces are read twice through the
//! one capture-to-events loop, skipping and not, and compared event for event.

mod support;

use eboard_bridge::events::Stamped;
use eboard_bridge::session::replay::end_grace_ms;
use eboard_bridge::session::{CaptureDriver, Session, TICK_MS};
use eboard_bridge::sim::accuracy::{sim_options_for, simulate_as, Hands, Model, Pace, Setup};
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::family::{Family, PortMode, VirtualSpec};
use shakmaty::Position;

/// Plays `game` with `hands` on `family` and reads it twice, skipping idle
/// ticks and not, in step: the number of events, or where and how the two
/// first part (the events so far, or the readings the engine holds after a
/// tick or a chunk, which time alone also moves on: a board still for long
/// moves the engine's anchor, and that shows in events much later if ever).
fn part(
    game: &eboard_bridge::sim::games::Game,
    seed: u64,
    family: &'static Family,
    hands: Hands,
) -> Result<usize, String> {
    let mut opts = sim_options_for(Setup::Normal, seed, true, hands);
    opts.family = family;
    opts.board.clock.present = true;
    let run = simulate_as(game, &opts, hands.model);
    let settings = (family.kept_settings)(&VirtualSpec {
        seed,
        ..opts.board.clone()
    });
    let driver = |skip: bool| {
        let config = TrackerConfig {
            skip_idle_ticks: skip,
            ..TrackerConfig::default()
        };
        let session = Session::for_family(family, 1, PortMode::Single, &settings, config)
            .expect("a virtual board's kept settings suit its own codec");
        CaptureDriver::new(session)
    };
    let (mut skipping, mut every) = (driver(true), driver(false));
    let (mut a, mut b): (Vec<Stamped>, Vec<Stamped>) = (Vec::new(), Vec::new());
    let mut t = 0;
    for chunk in &run.chunks {
        // Every tick of the grid up to the chunk, the readings compared after
        // each: an input would do at once what a skipped tick left undone.
        while t + TICK_MS < chunk.t_ms {
            t += TICK_MS;
            skipping.tick_until(t, &mut a);
            every.tick_until(t, &mut b);
            if skipping.session.readings() != every.session.readings() {
                return Err(format!(
                    "at the tick at t={t} the readings: skipped {:?}, every tick {:?}",
                    skipping.session.readings(),
                    every.session.readings()
                ));
            }
        }
        skipping.chunk(chunk, &mut a);
        every.chunk(chunk, &mut b);
        if a != b {
            let k = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k));
            let k = k.expect("the two differ");
            return Err(format!(
                "at t={} event {k}: skipped {:?}, every tick {:?}",
                chunk.t_ms,
                a.get(k),
                b.get(k)
            ));
        }
        if skipping.session.readings() != every.session.readings() {
            return Err(format!(
                "at t={} the readings: skipped {:?}, every tick {:?}",
                chunk.t_ms,
                skipping.session.readings(),
                every.session.readings()
            ));
        }
    }
    let grace = end_grace_ms(&TrackerConfig::default());
    skipping.finish(grace, &mut a);
    every.finish(grace, &mut b);
    if a != b {
        return Err(format!(
            "after the end: {} events against {}",
            a.len(),
            b.len()
        ));
    }
    Ok(b.len())
}

#[test]
fn skipping_idle_ticks_gives_the_events_of_ticking_every_100_ms() {
    let games = support::games::bench_games();
    let standard = shakmaty::Chess::default();
    // Games from a standard start, spread over the data set; among them
    // 1569, where a press reads for a moment as a slide pressed early and
    // is corrected in the open: the engine's rarer paths.
    let picked: Vec<usize> = [3, 1569, 1800]
        .into_iter()
        .filter(|&i| games[i].1.start.board() == standard.board())
        .collect();
    assert!(
        picked.len() == 3,
        "the data set's standard games are missing"
    );
    let families: [&'static Family; 4] = [
        &eboard_protocols::dgt::FAMILY,
        &eboard_protocols::certabo::FAMILY,
        &eboard_protocols::chessnut::FAMILY,
        &eboard_protocols::millennium::FAMILY,
    ];
    let paces = [
        Hands {
            model: Model::Own,
            pace: Pace::Normal,
            forget_press: 0.02,
        },
        Hands {
            model: Model::Blind,
            pace: Pace::TimeTrouble,
            forget_press: 0.1,
        },
    ];
    let mut compared = 0;
    for family in families {
        for hands in paces {
            for &i in &picked {
                match part(&games[i].1, i as u64, family, hands) {
                    Ok(n) => compared += n,
                    Err(why) => panic!("{} on {} ({hands:?}): {why}", games[i].0, family.name),
                }
            }
        }
    }
    assert!(compared > 1_000, "too few events compared: {compared}");
}
