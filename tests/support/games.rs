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

/// Plays game `i` of [`bench_games`] on a `family` board with `hands`, the
/// board set up exactly as the accuracy bench sets it (normal set-up, sensor
/// noise, the game's number as the seed, a clock present where the family
/// reads one), so that `show=I` and the test see the same run.
#[allow(dead_code)]
pub fn play_as_bench(
    games: &[(String, eboard_bridge::sim::games::Game)],
    i: usize,
    family: &'static eboard_protocols::family::Family,
    hands: eboard_bridge::sim::accuracy::Hands,
) -> eboard_bridge::sim::accuracy::Outcome {
    play_as_bench_in(
        games,
        i,
        family,
        hands,
        eboard_bridge::sim::accuracy::Setup::Normal,
    )
}

/// [`play_as_bench`] in another set-up (`setup=turned|right` of the bench).
#[allow(dead_code)]
pub fn play_as_bench_in(
    games: &[(String, eboard_bridge::sim::games::Game)],
    i: usize,
    family: &'static eboard_protocols::family::Family,
    hands: eboard_bridge::sim::accuracy::Hands,
    setup: eboard_bridge::sim::accuracy::Setup,
) -> eboard_bridge::sim::accuracy::Outcome {
    use eboard_bridge::sim::accuracy::{run_game_as, sim_options_for};
    let mut opts = sim_options_for(setup, i as u64, true, hands);
    opts.family = family;
    opts.board.clock.present = true;
    run_game_as(&games[i].1, &opts, hands.model)
}
