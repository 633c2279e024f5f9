//! Real games from the index, played by a deterministic hand with varied orders
//! (captures, castling, en passant, promotion, forgotten presses) and with the
//! board turned 180° for some: the verified moves must equal the source exactly,
//! with no retraction and no warning or error alert.

mod support;

use eboard_bridge::events::{GameEvent, Severity, TrackerEvent};
use support::hand::{drive_game, HandStyle};

fn check_game(idx: usize, g: &support::games::IndexGame, occupancy: bool) -> Result<usize, String> {
    let ucis: Vec<&str> = g.uci.iter().map(String::as_str).collect();
    let style = HandStyle {
        // An occupancy-only board cannot show that it is turned 180°.
        rotated: idx % 3 == 1 && !occupancy,
        white_right: idx % 2 == 1,
        seed: idx,
        occupancy,
    };
    let d = drive_game(&g.start_fen, &ucis, style);
    let mut sans = Vec::new();
    for e in &d.events {
        match e {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => sans.push(m.san.clone()),
            TrackerEvent::Game(GameEvent::Retraction { .. }) => {
                return Err(format!("{}#{}: retraction {e:?}", g.file, g.game));
            }
            // On occupancy boards every promotion is a queen flagged for checking,
            // and some Chess960 castlings look like a rook or king move until the
            // play that follows decides (the moves must still come out exact).
            TrackerEvent::Alert(a)
                if occupancy
                    && (a.kind == "promotion_piece_unknown" || a.kind == "ambiguous_moves") => {}
            TrackerEvent::Alert(a) if a.severity >= Severity::Warning => {
                return Err(format!(
                    "{}#{}: alert {a:?} after {} moves",
                    g.file,
                    g.game,
                    sans.len()
                ));
            }
            _ => {}
        }
    }
    if sans != d.expected_sans {
        let first = sans
            .iter()
            .zip(&d.expected_sans)
            .position(|(a, b)| a != b)
            .unwrap_or(sans.len().min(d.expected_sans.len()));
        return Err(format!(
            "{}#{} (style {style:?}): moves differ from ply {}: got {:?}, want {:?}",
            g.file,
            g.game,
            first + 1,
            &sans[first.min(sans.len())..(first + 3).min(sans.len())],
            &d.expected_sans[first..(first + 3).min(d.expected_sans.len())]
        ));
    }
    Ok(sans.len())
}

#[test]
fn sampled_real_games_are_followed_exactly() {
    let games = support::games::load();
    assert!(games.len() > 1_000, "the index holds the real games");
    let mut failures = Vec::new();
    let mut plies = 0;
    let mut played = 0;
    // Every 16th game by default; TRACKER_ALL_GAMES=1 plays them all.
    let step = if std::env::var_os("TRACKER_ALL_GAMES").is_some() {
        1
    } else {
        16
    };
    for (idx, g) in games.iter().enumerate().filter(|(i, _)| i % step == 0) {
        played += 1;
        match check_game(idx, g, false) {
            Ok(n) => plies += n,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {played} games failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(plies > 5_000, "a real sample was played ({plies} plies)");
}

#[test]
fn chess960_and_set_positions_from_the_index() {
    let games = support::games::load();
    let special: Vec<_> = games
        .iter()
        .enumerate()
        .filter(|(_, g)| {
            !g.start_fen
                .starts_with("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq")
        })
        .collect();
    assert!(!special.is_empty());
    let failures: Vec<String> = special
        .iter()
        .filter_map(|(idx, g)| check_game(*idx, g, false).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn occupancy_only_boards_follow_sampled_games() {
    // Occupancy boards see no piece identities: a start must be the standard one
    // (or set by the operator), and an under-promotion cannot be told from a queen.
    let games = support::games::load();
    let mut failures = Vec::new();
    let mut played = 0;
    let step = if std::env::var_os("TRACKER_ALL_GAMES").is_some() {
        1
    } else {
        29
    };
    for (idx, g) in games.iter().enumerate().filter(|(i, _)| i % step == 0) {
        let under = g.uci.iter().any(|u| u.len() == 5 && !u.ends_with('q'));
        if under {
            continue;
        }
        played += 1;
        if let Err(e) = check_game(idx, g, true) {
            failures.push(e);
        }
    }
    assert!(played > 50);
    assert!(
        failures.is_empty(),
        "{} of {played} games failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
