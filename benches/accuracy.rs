//! Accuracy benchmark: every usable game of `../shared/data` played by the hand
//! model on the virtual DGT board with sensor noise on, three ways (normal board,
//! board turned 180°, White's clock on the right), read back through the session
//! and tracker. Reports exact games, retractions, serious alerts and the verified
//! moves whose `[%clk]` shows the virtual clock's time after the press, and the
//! games whose published result (5.1.1, 5.2, 9.6) is the one the Laws give at the
//! right ply, per set-up, and the cost of reconstruction per board-hour.
//!
//! `cargo bench --bench accuracy` (append `-- N` to play only the first N games).

use std::path::Path;
use std::time::Duration;

use eboard_bridge::accuracy::{expected_result, run_game, sim_options, Setup};
use eboard_bridge::games::load_index;

fn main() {
    let max: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let index =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/expected/games-index.jsonl");
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

    println!("{} games, sensor noise on", games.len());
    println!(
        "| set-up | games | exact | plies | retractions | warning/error alerts | info alerts | clk exact | results right |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut board_time = Duration::ZERO;
    let mut busy = Duration::ZERO;
    let mut runs = 0usize;
    let mut failures = Vec::new();
    for setup in Setup::ALL {
        let (mut exact, mut plies, mut retractions, mut serious, mut info) = (0, 0, 0, 0, 0);
        let (mut clk_exact, mut clk_checked, mut results_right) = (0, 0, 0);
        for (i, (name, game, expected)) in games.iter().enumerate() {
            let out = run_game(
                game,
                &sim_options(setup, i as u64, std::env::var_os("NO_NOISE").is_none()),
            );
            runs += 1;
            board_time += out.board_time;
            busy += out.reconstruction;
            plies += out.expected.len();
            retractions += out.retractions;
            serious += out.serious_alerts.len();
            info += out.info_alerts;
            let published: Vec<_> = out
                .results
                .iter()
                .map(|(r, why, ply)| (*r, why.as_str(), *ply))
                .collect();
            let wanted: Vec<_> = expected.iter().copied().collect();
            if published == wanted {
                results_right += 1;
            } else {
                failures.push(format!(
                    "{} [{}]: results {published:?}, the Laws give {wanted:?}",
                    name,
                    setup.name()
                ));
            }
            clk_exact += out.clk_exact;
            clk_checked += out.clk_checked;
            if !out.clk_mismatches.is_empty() {
                failures.push(format!(
                    "{} [{}]: [%clk] differs from the clock: {:?}",
                    name,
                    setup.name(),
                    out.clk_mismatches
                ));
            }
            if out.is_exact() {
                exact += 1;
            } else {
                failures.push(format!(
                    "{} [{}]: first difference at ply {:?}, {} retractions, alerts {:?}",
                    name,
                    setup.name(),
                    out.first_difference(),
                    out.retractions,
                    out.serious_alerts.iter().take(2).collect::<Vec<_>>()
                ));
            }
        }
        println!(
            "| {} | {} | {} ({:.2} %) | {} | {} | {} | {} | {clk_exact}/{clk_checked} | {results_right}/{} |",
            setup.name(),
            games.len(),
            exact,
            100.0 * exact as f64 / games.len().max(1) as f64,
            plies,
            retractions,
            serious,
            info,
            games.len()
        );
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
        for f in failures.iter().take(40) {
            println!("  {f}");
        }
    }
}
