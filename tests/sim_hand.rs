//! The hand model against every usable game of the data set: the actions it
//! generates are physically possible one by one, the board shows each move's
//! position when the mover presses the clock, and the last position is the game's.

use std::path::PathBuf;

use eboard_bridge::sim::games::load_index;
use eboard_protocols::hand::{
    play, CaptureOrder, CastlingOrder, EnPassantOrder, HandConfig, PhysicalAction, PhysicalBoard,
    PromotionOrder,
};
use eboard_protocols::ClockSide;
use shakmaty::{Board, Chess, Color, Position};

fn index_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/expected/games-index.jsonl")
}

/// Every unusual order equally likely, so each game exercises many of them.
fn wild(seed: u64) -> HandConfig {
    HandConfig {
        seed,
        speed: 0.01,
        slide: 0.4,
        slide_pause: 0.5,
        adjust: 0.2,
        early_reply: 0.1,
        retract: 0.05,
        knock: 0.05,
        hover: 0.05,
        chess960_king_off: 0.5,
        rotated: seed % 2 == 1,
        white_clock: if seed.is_multiple_of(3) {
            ClockSide::Right
        } else {
            ClockSide::Left
        },
        capture: CaptureOrder {
            captured_first: 1.0,
            captured_last: 1.0,
            swept: 1.0,
        },
        castling: CastlingOrder {
            king_first: 1.0,
            rook_first: 1.0,
            both_lifted: 1.0,
        },
        en_passant: EnPassantOrder {
            captured_first: 1.0,
            captured_last: 1.0,
            captured_between: 1.0,
        },
        promotion: PromotionOrder {
            pawn_never_on_last_rank: 1.0,
            pawn_then_exchanged: 1.0,
            new_piece_first: 1.0,
        },
        ..HandConfig::default()
    }
}

fn framed(board: &Board, rotated: bool) -> Board {
    PhysicalBoard::from_board(board, rotated)
        .to_board()
        .unwrap()
}

#[test]
fn every_game_is_played_consistently_to_its_final_position() {
    let index = load_index(&index_path()).unwrap();
    let mut games = 0;
    let mut plies = 0;
    for (n, entry) in index.iter().enumerate() {
        let Some(game) = &entry.game else { continue };
        let cfg = wild(n as u64);
        let script = play(&game.start, &game.moves, &cfg);
        assert_eq!(
            script.made_at.len(),
            game.moves.len(),
            "{} {}",
            entry.file,
            entry.index
        );

        // Positions after each move, in the board's frame.
        let mut pos: Chess = game.start.clone();
        let mut after = Vec::new();
        for m in &game.moves {
            pos.play_unchecked(*m);
            after.push(framed(pos.board(), cfg.rotated));
        }

        let mut board = PhysicalBoard::from_board(game.start.board(), cfg.rotated);
        let mut presses = Vec::new();
        let mut last_t = 0;
        for a in &script.actions {
            assert!(a.t_ms >= last_t, "time goes forward");
            last_t = a.t_ms;
            board
                .apply(a.action)
                .unwrap_or_else(|e| panic!("{} game {}: {e}", entry.file, entry.index));
            if let PhysicalAction::PressClock(side) = a.action {
                presses.push((a.t_ms, side, board.to_board()));
            }
        }
        // One press starts the clock, then one per move by the mover.
        assert_eq!(presses.len(), game.moves.len() + 1);
        let white = cfg.white_clock;
        let first_mover = game.start.turn();
        for (i, (t, side, shown)) in presses.iter().skip(1).enumerate() {
            let _ = t;
            let ply = script
                .made_at
                .iter()
                .position(|&(_, pressed)| pressed == *t)
                .expect("each press belongs to a move");
            let mover = if ply % 2 == 0 {
                first_mover
            } else {
                !first_mover
            };
            let mover_side = if mover == Color::White {
                white
            } else {
                white.other()
            };
            assert_eq!(*side, mover_side, "press {i}: the mover presses");
            // Pressing after the move: the board shows this move's position, or
            // the next one when the opponent replied before the press.
            let shown = shown.as_ref().expect("no stacked pieces at a press");
            assert!(
                *shown == after[ply] || after.get(ply + 1) == Some(shown),
                "{} game {} ply {ply}: wrong position at the press",
                entry.file,
                entry.index
            );
        }
        let final_board = board.to_board().expect("a clean final position");
        let want = framed(game.final_position().board(), cfg.rotated);
        assert_eq!(final_board, want, "{} game {}", entry.file, entry.index);
        games += 1;
        plies += game.moves.len();
    }
    assert!(
        games > 1900 && plies > 100_000,
        "{games} games, {plies} plies"
    );
}
