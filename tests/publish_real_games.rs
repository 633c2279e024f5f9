//! Real games from the data set go through the hub and come back out of the
//! round's PGN feed move for move, Chess960 included.

use std::path::PathBuf;

use eboard_bridge::chess960::start_number;
use eboard_bridge::daemon::hub::Hub;
use eboard_bridge::events::{GameEvent, MoveEvent, Stamped, TrackerEvent};
use eboard_bridge::publish::feeds::games_pgn;
use eboard_bridge::publish::{Tournament, TournamentConfig};
use eboard_bridge::sim::games::{load_index, load_pgn};
use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::EnPassantMode;
use shakmaty::Position as _;

fn index() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/expected/games-index.jsonl")
}

#[test]
fn indexed_games_round_trip_through_the_round_pgn() {
    let games = load_index(&index()).unwrap();
    let chosen: Vec<_> = games
        .iter()
        .filter(|g| g.status == "ok")
        .filter_map(|g| g.game.as_ref().map(|game| (g, game)))
        .filter(|(_, game)| game.chess960.is_some())
        .chain(
            games
                .iter()
                .filter(|g| g.status == "ok")
                .filter_map(|g| g.game.as_ref().map(|game| (g, game)))
                .filter(|(_, game)| game.chess960.is_none())
                .step_by(40),
        )
        .collect();
    assert!(chosen.iter().filter(|(_, g)| g.chess960.is_some()).count() >= 5);
    assert!(chosen.len() > 50);

    let hub = Hub::new();
    for (i, (_, game)) in chosen.iter().enumerate() {
        let board = i as u32 + 1;
        let mode = game.castling_mode();
        let mut pos = game.start.clone();
        let stamp = |ply, event| Stamped {
            board,
            ply,
            t_ms: u64::from(ply) * 1000,
            event: TrackerEvent::Game(event),
        };
        hub.apply(
            &stamp(
                0,
                GameEvent::GameStart {
                    fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                    chess960: start_number(pos.board()),
                    rotated: false,
                },
            ),
            true,
        );
        for (n, m) in game.moves.iter().enumerate() {
            let ply = n as u32 + 1;
            let uci = UciMove::from_move(*m, mode).to_string();
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string();
            hub.apply(
                &stamp(
                    ply,
                    GameEvent::Move(MoveEvent {
                        ply,
                        san,
                        uci,
                        fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                        verified: true,
                        clock_ms: Some(60_000 + u64::from(ply)),
                        emt_ms: None,
                        reconstructed: false,
                        corrected: false,
                    }),
                ),
                true,
            );
        }
    }
    let t = Tournament::new(
        TournamentConfig {
            name: Some("Data set".into()),
            current_round: 1,
            ..TournamentConfig::default()
        },
        &[],
    )
    .unwrap();
    let pgn = games_pgn(&hub, &t);
    let back = load_pgn(&pgn).unwrap();
    assert_eq!(back.len(), chosen.len());
    for (i, ((indexed, game), out)) in chosen.iter().zip(&back).enumerate() {
        let what = format!("{} game {}", indexed.file, indexed.index);
        assert_eq!(
            out.header("Round"),
            Some(format!("1.{}", i + 1).as_str()),
            "{what}"
        );
        assert_eq!(out.uci_moves(), game.uci_moves(), "{what}");
        assert_eq!(out.moves.len(), game.moves.len(), "{what}");
        let fen = Fen::from_position(&out.final_position(), EnPassantMode::Legal).to_string();
        let want = indexed.final_fen.as_deref().unwrap();
        // The index's FEN may spell the en passant square differently; the
        // placement, side and castling must agree.
        let head = |f: &str| f.split(' ').take(3).collect::<Vec<_>>().join(" ");
        assert_eq!(head(&fen), head(want), "{what}");
        if game.chess960.is_some() {
            assert_eq!(out.header("Variant"), Some("Chess960"), "{what}");
            assert!(
                out.header("FEN").is_some() && out.header("SetUp") == Some("1"),
                "{what}"
            );
        }
    }
    assert_eq!(
        pgn.matches("[%clk ").count(),
        chosen.iter().map(|(_, g)| g.moves.len()).sum::<usize>()
    );
}
