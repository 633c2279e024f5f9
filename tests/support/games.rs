//! The real games of `tests/data/expected/games-index.jsonl`.

use serde_json::Value;

pub struct IndexGame {
    pub start_fen: String,
    pub uci: Vec<String>,
    pub file: String,
    pub game: u64,
}

pub fn index_path() -> String {
    format!(
        "{}/tests/data/expected/games-index.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every game of the index whose status is `ok`.
pub fn load() -> Vec<IndexGame> {
    let text = std::fs::read_to_string(index_path()).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (the test data lives in tests/data)",
            index_path()
        )
    });
    text.lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).expect("index line is JSON");
            if v["status"] != "ok" {
                return None;
            }
            Some(IndexGame {
                start_fen: v["start_fen"].as_str()?.to_string(),
                uci: v["uci"]
                    .as_str()?
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
                file: v["file"].as_str()?.to_string(),
                game: v["game"].as_u64()?,
            })
        })
        .collect()
}

/// The data set's usable games as the accuracy bench numbers them (`show=I`),
/// each with its name (`file#index`), parsed.
// The tracker bench includes this file too and does not use it.
#[allow(dead_code)]
pub fn bench_games() -> Vec<(String, eboard_bridge::sim::games::Game)> {
    let index = eboard_bridge::sim::games::load_index(std::path::Path::new(&index_path()))
        .expect("the data set's index loads");
    index
        .into_iter()
        .filter_map(|g| g.game.map(|game| (format!("{}#{}", g.file, g.index), game)))
        .collect()
}

/// One game of [`bench_games`] that once went wrong: its number (`show=I`),
/// the hands that played it (model, pace, rate of forgotten presses), the
/// set-up, and whether it must come out exact (`false`: only no warning or
/// error alert, and no ply left unpublished).
pub type BenchCase = (
    usize,
    eboard_bridge::sim::accuracy::Model,
    eboard_bridge::sim::accuracy::Pace,
    f64,
    eboard_bridge::sim::accuracy::Setup,
    bool,
);

/// Plays each case on a `family` board set up exactly as the accuracy bench
/// sets it (sensor noise, the game's number as the seed, a clock present
/// where the family reads one, the arbiter entering the result of a game the
/// board did not end), so that `show=I arbiter=end` and the test see the same
/// run; returns a line for each that is still wrong.
#[allow(dead_code)]
pub fn still_wrong(
    family: &'static eboard_protocols::family::Family,
    cases: &[BenchCase],
) -> Vec<String> {
    use eboard_bridge::sim::accuracy::{run_game_as, sim_options_for, Hands};
    let games = bench_games();
    let mut wrong = Vec::new();
    for &(i, model, pace, forget_press, setup, exact) in cases {
        let hands = Hands {
            model,
            pace,
            forget_press,
        };
        let mut opts = sim_options_for(setup, i as u64, true, hands);
        opts.family = family;
        opts.board.clock.present = true;
        // As at a tournament (and the bench's `arbiter=end`): the arbiter
        // enters the result of a game the board did not end.
        opts.arbiter_result = true;
        let out = run_game_as(&games[i].1, &opts, model);
        // A game followed to its end publishes at least its plies, even
        // where the board cannot tell which were played.
        let lost = out.expected.len().saturating_sub(out.verified.len());
        if (exact && !out.is_exact()) || !out.serious_alerts.is_empty() || lost > 0 {
            wrong.push(format!(
                "{} ({hands:?}, {}): first difference at ply {:?}, {lost} plies lost, alerts {:?}",
                games[i].0,
                setup.name(),
                out.first_difference(),
                out.serious_alerts
            ));
        }
    }
    wrong
}
