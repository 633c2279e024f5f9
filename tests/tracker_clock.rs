//! Clock Laws at the tracker: `[%clk]` against the virtual DGT 3000's own record.

use std::path::PathBuf;

use eboard_bridge::accuracy::{run_game, sim_options, Setup};
use eboard_bridge::games::load_index;

/// Every verified move carries the mover's time after its press, to the second:
/// real games played by the hand model on the virtual board and clock, read back
/// through the session and tracker, compared with the clock's own press record.
#[test]
fn every_verified_move_carries_the_clock_to_the_second() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    let (mut checked, mut exact, mut games) = (0, 0, 0);
    let mut wrong = Vec::new();
    for (i, entry) in index.iter().enumerate().filter(|(i, _)| i % 40 == 3) {
        let Some(game) = entry.game.as_ref() else {
            continue;
        };
        let setup = Setup::ALL[i % 3];
        let out = run_game(game, &sim_options(setup, i as u64, true));
        games += 1;
        checked += out.clk_checked;
        exact += out.clk_exact;
        if !out.clk_mismatches.is_empty() {
            wrong.push(format!(
                "{}#{} [{}]: {:?}",
                entry.file,
                entry.index,
                setup.name(),
                out.clk_mismatches
            ));
        }
    }
    assert!(games >= 40, "only {games} games sampled");
    assert!(checked > 2_000, "only {checked} moves compared");
    assert!(
        wrong.is_empty(),
        "{exact}/{checked} exact; {} games wrong: {wrong:#?}",
        wrong.len()
    );
}
