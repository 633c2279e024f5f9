//! Accuracy benchmark: every usable game of the data set played by a hand model
//! on the virtual DGT board with sensor noise on, three ways (normal board, board
//! turned 180°, White's clock on the right), read back through the session and
//! tracker. Reports exact games, plies lost (never published), retractions,
//! serious alerts, the verified moves whose `[%clk]` shows the virtual clock's
//! time after the press, and the games whose published result (5.1.1, 5.2, 9.6)
//! is the one the Laws give at the right ply, per hand model, pace, rate of
//! forgotten presses and set-up, and the cost of reconstruction per board-hour.
//!
//! `cargo bench --bench accuracy` runs every condition: both hand models (the
//! project's own, and one written blind to the tracker), normal pace with 0, 2
//! and 10 % forgotten presses, time trouble with 2 and 10 %. Arguments narrow
//! it: a number plays only the first N games, `own`/`blind` picks a model,
//! `normal`/`trouble` a pace, `forget=0.1` a rate of forgotten presses, `quick`
//! only the baseline (normal pace, no forgotten press); `show=I` prints game I
//! in detail (hands' script around the first difference) under each condition,
//! with `SHOW_T=A-B` the hands' actions between A and B ms of board time,
//! `SHOW_EVENTS=A-B` the tracker's events, `SHOW_HYPS=A-B` the readings the
//! evidence engine holds after each report (cost, plies with `*N` pressed by
//! press N and `+` forgotten, the candidates of the ply under way; the first
//! six, or `SHOW_N`), and `setup=turned` or
//! `setup=right` the game as that set-up plays it (without `show`, that
//! set-up's rows only);
//! `family=NAME` plays on that family's virtual board (default `dgt`);
//! `clock=off` unplugs the DGT board's clock (to compare with families that
//! have none); `arbiter=end` has the arbiter enter the result of a game the
//! board did not end once its recording ends (not scored); `frame=MS` sets a frame-reporting board's period; `bus=N` puts
//! N DGT boards on one daisy-chained line, polled by the daemon's bus driver
//! and read by one session (the own hands only). The runs
//! that are not exact are listed at the end, the first 400, or every one with
//! `list=all`; those whose first wrong ply an 8.4 `moves_uncertain` note named
//! (the moves played among its readings) are marked there and counted per row.

use std::path::Path;
use std::time::Duration;

use eboard_bridge::sim::accuracy::{
    expected_result, run_bus, run_game_as, sim_options_for, Hands, Inexact, Model, Outcome, Pace,
    Setup,
};
use eboard_bridge::sim::games::load_index;
use eboard_bridge::sim::SimOptions;
use eboard_bridge::tracker::start_number;
use shakmaty::Position;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let mut conditions = Vec::new();
    for model in [Model::Own, Model::Blind] {
        for (pace, forget_press) in [
            (Pace::Normal, 0.0),
            (Pace::Normal, 0.02),
            (Pace::Normal, 0.10),
            (Pace::TimeTrouble, 0.02),
            (Pace::TimeTrouble, 0.10),
        ] {
            conditions.push(Hands {
                model,
                pace,
                forget_press,
            });
        }
    }
    if args.iter().any(|a| a == "own") {
        conditions.retain(|h| h.model == Model::Own);
    }
    if args.iter().any(|a| a == "blind") {
        conditions.retain(|h| h.model == Model::Blind);
    }
    if args.iter().any(|a| a == "quick") {
        conditions.retain(|h| h.pace == Pace::Normal && h.forget_press == 0.0);
    }
    if args.iter().any(|a| a == "normal") {
        conditions.retain(|h| h.pace == Pace::Normal);
    }
    if args.iter().any(|a| a == "trouble") {
        conditions.retain(|h| h.pace == Pace::TimeTrouble);
    }
    if let Some(f) = args
        .iter()
        .find_map(|a| a.strip_prefix("forget=")?.parse::<f64>().ok())
    {
        conditions.retain(|h| (h.forget_press - f).abs() < 1e-9);
    }

    let family = match args.iter().find_map(|a| a.strip_prefix("family=")) {
        Some(name) => eboard_protocols::family(name).unwrap_or_else(|| {
            panic!(
                "family={name}: no such board family; use one of {}",
                eboard_protocols::family_names()
            )
        }),
        None => &eboard_protocols::dgt::FAMILY,
    };

    let clock_off = args.iter().any(|a| a == "clock=off");
    let arbiter = args.iter().any(|a| a == "arbiter=end");
    let frame_ms = args
        .iter()
        .find_map(|a| a.strip_prefix("frame=")?.parse::<u64>().ok());
    // `bus=N`: N boards on one daisy-chained line, polled by the daemon's bus
    // driver (DGT only; the project's own hands only, which play a whole line).
    let bus = args
        .iter()
        .find_map(|a| a.strip_prefix("bus=")?.parse::<usize>().ok())
        .filter(|&n| n > 0);
    if bus.is_some() {
        if family.name != "dgt" {
            eprintln!(
                "bus=N: only DGT boards are daisy-chained; leave out family={}",
                family.name
            );
            std::process::exit(2);
        }
        conditions.retain(|h| h.model == Model::Own);
        if conditions.is_empty() {
            eprintln!("bus=N: only the project's own hands play a bus line; leave out `blind`");
            std::process::exit(2);
        }
    }
    let board = |mut opts: SimOptions| {
        opts.family = family;
        opts.board.clock.present = !clock_off;
        opts.board.frame_ms = frame_ms;
        opts.arbiter_result = arbiter;
        opts
    };

    let index = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/expected/games-index.jsonl");
    let games: Vec<_> = load_index(&index)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", index.display()))
        .into_iter()
        .filter_map(|g| {
            let name = format!("{}#{}", g.file, g.index);
            let expected = g
                .game
                .as_ref()
                .and_then(|game| expected_result(game, &g.final_state));
            g.game.map(|game| (name, game, expected))
        })
        .take(max)
        .collect();

    let show = args
        .iter()
        .find_map(|a| a.strip_prefix("show=")?.parse::<usize>().ok());
    if let (Some(i), Some(n)) = (show, bus) {
        // One board of a bus line in detail: the line it was played on, again.
        let playable: Vec<usize> = (0..games.len())
            .filter(|&i| start_number(games[i].1.start.board()).is_some())
            .collect();
        let Some(line) = playable.chunks(n).find(|l| l.contains(&i)) else {
            eprintln!("show={i}: game {i} is not played on a bus (a set start position)");
            std::process::exit(2);
        };
        let setup = match args.iter().find_map(|a| a.strip_prefix("setup=")) {
            Some("turned") => Setup::Rotated,
            Some("right") => Setup::ClockRight,
            _ => Setup::Normal,
        };
        for hands in &conditions {
            let mut opts = board(sim_options_for(setup, line[0] as u64, noise_on(), *hands));
            opts.hand.start_ms = opts.hand.start_ms.max(BUS_START_MS);
            let played: Vec<_> = line.iter().map(|&j| &games[j].1).collect();
            let k = line.iter().position(|&j| j == i).expect("in the line");
            let out = &run_bus(&played, &opts)[k];
            println!(
                "{} {hands:?} on a bus of {}: exact {}",
                games[i].0,
                line.len(),
                out.is_exact()
            );
            println!("clk mismatches: {:?}", out.clk_mismatches);
            println!("alerts: {:#?}", out.serious_alerts);
            print_difference(out);
        }
        return;
    }
    if let Some(i) = show {
        // One game in detail, for finding out why it is not exact.
        let (name, game, _) = &games[i];
        for hands in &conditions {
            // `setup=turned` or `setup=right`: the game as the other set-ups play it.
            let setup = match args.iter().find_map(|a| a.strip_prefix("setup=")) {
                Some("turned") => Setup::Rotated,
                Some("right") => Setup::ClockRight,
                _ => Setup::Normal,
            };
            let opts = board(sim_options_for(setup, i as u64, noise_on(), *hands));
            // SHOW_HYPS=A-B: the engine's readings after each report between A and B ms.
            let hyps = window("SHOW_HYPS");
            let out = eboard_bridge::sim::accuracy::run_game_traced(game, &opts, hands.model, hyps);
            println!("{name} {hands:?}: exact {}", out.is_exact());
            for line in &out.trace {
                println!("{line}");
            }
            if out.is_exact() && std::env::var_os("SHOW_ALL").is_none() {
                continue;
            }
            println!(
                "clk exact {}/{}, mismatches: {:?}",
                out.clk_exact, out.clk_checked, out.clk_mismatches
            );
            let run = eboard_bridge::sim::accuracy::simulate_as(game, &opts, hands.model);
            let from = out.first_difference().unwrap_or(1).saturating_sub(3);
            println!("alerts: {:#?}", out.serious_alerts);
            println!("info: {:#?}", out.info_messages);
            print_difference(&out);
            let t0 = run
                .script
                .made_at
                .get(from)
                .map_or(0, |m| m.0.saturating_sub(3_000));
            for (k, (made, press)) in run.script.made_at.iter().enumerate().skip(from).take(8) {
                println!(
                    "ply {} made {made} press {press} pressed {}",
                    k + 1,
                    run.script.pressed[k]
                );
            }
            // SHOW_T=A-B prints the hands' actions between A and B ms instead.
            let acts = window("SHOW_T");
            let (from_t, to_t, most) = match acts {
                Some((a, b)) => (a, b, usize::MAX),
                None => (t0, u64::MAX, 60),
            };
            for a in run
                .script
                .actions
                .iter()
                .filter(|a| a.t_ms >= from_t && a.t_ms <= to_t)
                .take(most)
            {
                println!("  {:>8} {:?}", a.t_ms, a.action);
            }
        }
        return;
    }
    println!(
        "{} games, sensor noise on, {} boards{}{}{}",
        games.len(),
        family.title,
        bus.map_or(String::new(), |n| format!(
            ", {n} to a bus line (games with a set start position left out)"
        )),
        if clock_off { ", no clock" } else { "" },
        frame_ms.map_or(String::new(), |ms| format!(", a frame every {ms} ms"))
    );
    println!(
        "| hands | set-up | games | exact | plies lost | retractions /1000 games | warning/error alerts | info alerts | clk exact | results right |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut board_time = Duration::ZERO;
    let mut busy = Duration::ZERO;
    let mut runs = 0usize;
    let mut failures = Vec::new();
    let mut info_kinds = Vec::new();
    let mut named = Vec::new();
    let mut kinds = Vec::new();
    let occupancy_only = (family.capabilities)(eboard_protocols::family::PortMode::Single).sensing
        == eboard_protocols::family::Sensing::Occupancy;
    let noise = noise_on();
    // `setup=normal|turned|right`: that set-up's row only.
    let only_setup = args
        .iter()
        .find_map(|a| a.strip_prefix("setup="))
        .map(|s| match s {
            "turned" => Setup::Rotated,
            "right" => Setup::ClockRight,
            _ => Setup::Normal,
        });
    for hands in &conditions {
        let label = format!(
            "{}, {}, {:.0} % forgotten",
            hands.model.name(),
            hands.pace.name(),
            hands.forget_press * 100.0
        );
        for setup in Setup::ALL
            .into_iter()
            .filter(|s| only_setup.is_none_or(|o| o == *s))
        {
            let mut t = Tally::default();
            if let Some(n) = bus {
                // Games whose start the board shows (a set position needs the
                // operator's FEN, given per board): standard and Chess960.
                let playable: Vec<usize> = (0..games.len())
                    .filter(|&i| start_number(games[i].1.start.board()).is_some())
                    .collect();
                for line in playable.chunks(n) {
                    let mut opts = board(sim_options_for(setup, line[0] as u64, noise, *hands));
                    opts.hand.start_ms = opts.hand.start_ms.max(BUS_START_MS);
                    let played: Vec<_> = line.iter().map(|&i| &games[i].1).collect();
                    for (&i, out) in line.iter().zip(run_bus(&played, &opts)) {
                        runs += 1;
                        board_time += out.board_time;
                        busy += out.reconstruction;
                        let (name, game, expected) = &games[i];
                        let wanted: Vec<_> = expected.iter().copied().collect();
                        t.add(
                            &out,
                            &game.start,
                            &wanted,
                            &format!("{name} (show={i}) [{label}, {}, bus]", setup.name()),
                            (i, occupancy_only),
                        );
                    }
                }
                t.games = playable.len();
            }
            if bus.is_none() {
                t.games = games.len();
            }
            for (i, (name, game, expected)) in games.iter().enumerate().filter(|_| bus.is_none()) {
                let opts = board(sim_options_for(setup, i as u64, noise, *hands));
                let out = run_game_as(game, &opts, hands.model);
                runs += 1;
                board_time += out.board_time;
                busy += out.reconstruction;
                let wanted: Vec<_> = expected.iter().copied().collect();
                t.add(
                    &out,
                    &game.start,
                    &wanted,
                    &format!("{name} (show={i}) [{label}, {}]", setup.name()),
                    (i, occupancy_only),
                );
            }
            println!(
                "| {label} | {} | {} | {} ({:.2} %) | {} | {:.1} | {} | {} | {}/{} | {}/{} |",
                setup.name(),
                t.games,
                t.exact,
                100.0 * t.exact as f64 / t.games.max(1) as f64,
                t.plies_lost,
                1000.0 * t.retractions as f64 / t.games.max(1) as f64,
                t.serious,
                t.info,
                t.clk_exact,
                t.clk_checked,
                t.results_right,
                t.games
            );
            failures.append(&mut t.failures);
            info_kinds.push(format!("{label} [{}]: {:?}", setup.name(), t.info_kinds));
            named.push(format!(
                "{label} [{}]: {} of {}",
                setup.name(),
                t.named,
                t.games - t.exact
            ));
            kinds.push(format!(
                "{label} [{}]: {}",
                setup.name(),
                Inexact::ALL
                    .iter()
                    .map(|k| format!("{} {}", k.name(), t.kinds.get(k).map_or(0, Vec::len)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if let Some(alike) = t.kinds.get(&Inexact::SameAtRest) {
                kinds.push(format!("    alike at rest: show={alike:?}"));
            }
        }
    }
    println!();
    println!("info alerts by kind:");
    for line in &info_kinds {
        println!("  {line}");
    }
    println!();
    println!(
        "games not exact whose first wrong ply an 8.4 note named, the moves played among its readings:"
    );
    for line in &named {
        println!("  {line}");
    }
    println!();
    println!("games not exact, by why (alike at rest: every ply's position shows the same to this board):");
    for line in &kinds {
        println!("  {line}");
    }
    let hours = board_time.as_secs_f64() / 3600.0;
    println!();
    println!(
        "reconstruction: {:.3} s for {:.1} board-hours ({runs} games): {:.5} CPU-s per board-hour, {:.0} games/s",
        busy.as_secs_f64(),
        hours,
        busy.as_secs_f64() / hours.max(1e-9),
        runs as f64 / busy.as_secs_f64().max(1e-9)
    );
    if !failures.is_empty() {
        println!();
        println!(
            "{} runs not exact, with a wrong [%clk] or a wrong result:",
            failures.len()
        );
        let listed = if args.iter().any(|a| a == "list=all") {
            failures.len()
        } else {
            400
        };
        for f in failures.iter().take(listed) {
            println!("  {f}");
        }
    }
}

/// `VAR=A-B` in the environment: a window of board time, in ms.
fn window(var: &str) -> Option<(u64, u64)> {
    let w = std::env::var(var).ok()?;
    let (a, b) = w.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Where the published line first differs from the source, both from a few
/// plies before; with `SHOW_EVENTS=A-B`, the session's events in that window.
fn print_difference(out: &Outcome) {
    let from = out.first_difference().unwrap_or(1).saturating_sub(3);
    println!(
        "expected from ply {}: {:?}",
        from + 1,
        &out.expected[from..]
    );
    println!(
        "verified from ply {}: {:?}",
        from + 1,
        &out.verified[from.min(out.verified.len())..]
    );
    if let Some((a, b)) = window("SHOW_EVENTS") {
        for e in out.events.iter().filter(|e| e.t_ms >= a && e.t_ms <= b) {
            println!("  event {:>8} ply {} {:?}", e.t_ms, e.ply, e.event);
        }
    }
}

/// When the players on a bus line start: once the host has found the boards
/// and read their start positions (at 3 s, 22 of 1,938 boards had their first
/// move made before the host read them).
const BUS_START_MS: u64 = 10_000;

fn noise_on() -> bool {
    std::env::var_os("NO_NOISE").is_none()
}

/// One row of the table.
#[derive(Default)]
struct Tally {
    /// Games played in this row.
    games: usize,
    exact: usize,
    plies_lost: usize,
    retractions: usize,
    serious: usize,
    info: usize,
    /// Info alerts by kind: what arbiters would see scroll by.
    info_kinds: std::collections::BTreeMap<String, usize>,
    clk_exact: usize,
    clk_checked: usize,
    results_right: usize,
    /// Games not exact whose first wrong ply an 8.4 note named, with the
    /// moves played among its readings.
    named: usize,
    /// The games not exact by why (see `Inexact`), as the numbers `show=I` takes.
    kinds: std::collections::BTreeMap<Inexact, Vec<usize>>,
    failures: Vec<String>,
}

impl Tally {
    fn add(
        &mut self,
        out: &Outcome,
        start: &shakmaty::Chess,
        wanted: &[(eboard_bridge::events::GameResult, &str, u32)],
        name: &str,
        (i, occupancy_only): (usize, bool),
    ) {
        self.retractions += out.retractions;
        self.serious += out.serious_alerts.len();
        self.info += out.info_alerts;
        for m in &out.info_messages {
            // `ply N t=T kind: message`
            let kind = m.split(' ').nth(3).unwrap_or("?").trim_end_matches(':');
            *self.info_kinds.entry(kind.to_string()).or_default() += 1;
        }
        // Plies of the source never published (a game abandoned part-way).
        self.plies_lost += out.expected.len().saturating_sub(out.verified.len());
        let published: Vec<_> = out
            .results
            .iter()
            .map(|(r, why, ply)| (*r, why.as_str(), *ply))
            .collect();
        if published == wanted {
            self.results_right += 1;
        } else {
            self.failures.push(format!(
                "{name}: results {published:?}, the Laws give {wanted:?}"
            ));
        }
        self.clk_exact += out.clk_exact;
        self.clk_checked += out.clk_checked;
        if !out.clk_mismatches.is_empty() {
            self.failures.push(format!(
                "{name}: [%clk] differs from the clock: {:?}",
                out.clk_mismatches
            ));
        }
        let named = !out.is_exact() && out.named_uncertain(start);
        self.named += usize::from(named);
        let kind = out.inexact_kind(start, occupancy_only);
        if let Some(k) = kind {
            self.kinds.entry(k).or_default().push(i);
        }
        if out.is_exact() {
            self.exact += 1;
        } else {
            self.failures.push(format!(
                "{name}: {}: first difference at ply {:?} of {}, {} published, {} retractions{}, alerts {:?}",
                kind.map_or("?", Inexact::name),
                out.first_difference(),
                out.expected.len(),
                out.verified.len(),
                out.retractions,
                if named {
                    ", the moves played named in an 8.4 note"
                } else {
                    ""
                },
                out.serious_alerts.iter().take(3).collect::<Vec<_>>()
            ));
        }
    }
}
