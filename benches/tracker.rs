//! Tracker speed: every game of the index played by the deterministic hand of the
//! games test; reports the tracker's own time per picture change (clock readings
//! and ticks included in the time, counted against pictures only).
//!
//! `cargo bench --bench tracker` (optionally `-- <max games>`). Target: ≤ 20 µs
//! average per picture change.

#[path = "../tests/support/games.rs"]
mod games;
#[path = "../tests/support/hand.rs"]
mod hand;

use std::time::Duration;

fn main() {
    let max: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let all = games::load();
    let mut pictures = 0usize;
    let mut busy = Duration::ZERO;
    let mut played = 0usize;
    let mut plies = 0usize;
    let mut mismatched = Vec::new();
    for (idx, g) in all.iter().enumerate().take(max) {
        let ucis: Vec<&str> = g.uci.iter().map(String::as_str).collect();
        let style = hand::HandStyle {
            rotated: idx % 3 == 1,
            white_right: idx % 2 == 1,
            seed: idx,
            occupancy: false,
        };
        let d = hand::drive_game(&g.start_fen, &ucis, style);
        // A fast tracker that loses moves is no use: count what was followed.
        let verified = d
            .events
            .iter()
            .filter(|e| {
                matches!(e, eboard_bridge::events::TrackerEvent::Game(
                    eboard_bridge::events::GameEvent::Move(m)) if m.verified)
            })
            .count();
        if verified != d.expected_sans.len() {
            mismatched.push(format!("{}#{}", g.file, g.game));
        }
        pictures += d.pictures;
        busy += d.busy;
        played += 1;
        plies += ucis.len();
    }
    let per = busy.as_secs_f64() * 1e6 / pictures.max(1) as f64;
    println!(
        "tracker: {played} games, {plies} plies, {pictures} picture changes, {:.3} s in the tracker, {per:.2} µs per picture change",
        busy.as_secs_f64()
    );
    if !mismatched.is_empty() {
        println!(
            "{} games with a different number of verified moves: {}",
            mismatched.len(),
            mismatched.join(", ")
        );
    }
}
