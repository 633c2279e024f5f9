//! The games loader against the data set: every usable game of the index loads
//! and replays legally, and the PGN files give the same move lists as the index.

use std::collections::HashMap;
use std::path::PathBuf;

use eboard_bridge::sim::games::{fen_of, load_index, load_pgn_file, Game};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

#[test]
fn index_games_replay_and_match_the_pgn_files() {
    let index = load_index(&data_dir().join("expected/games-index.jsonl")).unwrap();
    let ok: Vec<_> = index.iter().filter(|g| g.status == "ok").collect();
    assert!(
        ok.len() > 1900,
        "only {} usable games in the index",
        ok.len()
    );

    let mut files: HashMap<&str, Vec<Game>> = HashMap::new();
    let mut compared = 0;
    for entry in &ok {
        let game = entry.game.as_ref().expect("usable games carry their moves");
        // The index's own final FEN is what replaying its moves gives.
        let final_fen = fen_of(&game.final_position());
        let want = entry.final_fen.as_deref().unwrap();
        // Compare board, turn and castling: the index may write en passant squares
        // differently (pseudo-legal vs legal).
        // Castling letters differ between KQkq and Shredder style, so compare the
        // board and the side to move.
        let head = |f: &str| f.split(' ').take(2).collect::<Vec<_>>().join(" ");
        assert_eq!(
            head(&final_fen),
            head(want),
            "{} game {}",
            entry.file,
            entry.index
        );

        let loaded = files
            .entry(entry.file.as_str())
            .or_insert_with(|| load_pgn_file(&data_dir().join(&entry.file)).unwrap());
        // The tool that wrote the index reads a UTF-8 BOM as an extra empty game
        // in front of the first one; this loader strips the BOM. Align the two.
        let in_index = index.iter().filter(|g| g.file == entry.file).count();
        let phantom = in_index - loaded.len();
        if phantom > 0 {
            let raw = std::fs::read(data_dir().join(&entry.file)).unwrap();
            assert!(
                raw.starts_with(b"\xef\xbb\xbf"),
                "{}: game count differs",
                entry.file
            );
            if entry.index < phantom {
                assert!(game.moves.is_empty());
                compared += 1;
                continue;
            }
        }
        let from_pgn = loaded
            .get(entry.index - phantom)
            .unwrap_or_else(|| panic!("{} has no game {}", entry.file, entry.index));
        assert_eq!(
            from_pgn.uci_moves(),
            game.uci_moves(),
            "{} game {}",
            entry.file,
            entry.index
        );
        assert_eq!(from_pgn.chess960.is_some(), game.chess960.is_some());
        assert_eq!(
            from_pgn.start, game.start,
            "{} game {}",
            entry.file, entry.index
        );
        compared += 1;
    }
    assert_eq!(compared, ok.len());
}

#[test]
fn the_null_move_game_stops_at_the_null_move() {
    let games = load_pgn_file(&data_dir().join("games/python-chess-anastasian-lewis-nullmove.pgn"))
        .unwrap();
    assert_eq!(games[0].moves.len(), 81);
    assert!(games[0].stopped.is_some());
}

#[test]
fn chess960_numbers_match_the_scharnagl_table() {
    let table = std::fs::read_to_string(
        data_dir().join("reference/kokopu-scharnagl-chess960-start-positions.tsv"),
    )
    .unwrap();
    let mut rows = 0;
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let n: u32 = cols[0].parse().unwrap();
        let scheme: String = eboard_bridge::chess960::back_rank_of(n)
            .expect("numbers below 960 have an array")
            .iter()
            .map(|r| r.char())
            .collect();
        assert_eq!(scheme, cols[1], "position {n}");
        rows += 1;
    }
    assert_eq!(rows, 960);
    // Chess960 games of the data set carry their start number.
    let games = load_pgn_file(&data_dir().join("games/kokopu-chess960-database.pgn")).unwrap();
    assert!(games.iter().all(|g| g.chess960.is_some()));
    assert!(games.iter().any(|g| g.chess960.is_some_and(|n| n < 960)));
}
