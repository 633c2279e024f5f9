//! Simulated captures decode into the game: the dump plus the field updates give
//! the final position, and the clock reports every lever change.

use std::path::PathBuf;
use std::time::Instant;

use eboard_bridge::capture::Direction;
use eboard_bridge::games::load_index;
use eboard_bridge::sim::{simulate, SimOptions, DAEMON_START_UP};
use eboard_protocols::dgt::{Decoder, Frame, Message, Mode};
use eboard_protocols::hand::PhysicalBoard;
use eboard_protocols::Picture;
use shakmaty::Position;

fn index_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/expected/games-index.jsonl")
}

#[test]
fn captures_replay_to_the_final_position() {
    let index = load_index(&index_path()).unwrap();
    let games: Vec<_> = index
        .iter()
        .filter_map(|e| e.game.as_ref())
        .step_by(10)
        .collect();
    let started = Instant::now();
    let mut bytes_in = 0;
    for (n, game) in games.iter().enumerate() {
        let mut opts = SimOptions {
            seed: n as u64,
            ..SimOptions::default()
        };
        opts.hand.rotated = n % 4 == 3;
        let run = simulate(game, &opts);
        let out: Vec<u8> = run
            .chunks
            .iter()
            .filter(|c| c.dir == Direction::Out)
            .flat_map(|c| c.bytes.clone())
            .collect();
        assert_eq!(out, DAEMON_START_UP);
        let mut d = Decoder::new(Mode::Single);
        let mut picture: Option<Picture> = None;
        let mut levers = Vec::new();
        for c in run.chunks.iter().filter(|c| c.dir == Direction::In) {
            bytes_in += c.bytes.len();
            d.push(&c.bytes);
            while let Some(f) = d.next() {
                match f.unwrap_or_else(|e| panic!("game {n}: {e}")) {
                    Frame::Single(Message::BoardDump(p)) => picture = Some(p),
                    Frame::Single(Message::FieldUpdate { square, sensed }) => {
                        picture.as_mut().expect("dump first").set(square, sensed)
                    }
                    Frame::Single(Message::Clock(t)) => {
                        if t.running && levers.last() != Some(&t.lever_right_high) {
                            levers.push(t.lever_right_high);
                        }
                    }
                    Frame::Single(_) => {}
                    Frame::Bus(m) => panic!("bus frame in single mode: {m:?}"),
                }
            }
        }
        let want = PhysicalBoard::from_board(game.final_position().board(), opts.hand.rotated)
            .to_board()
            .unwrap();
        assert_eq!(picture.unwrap(), Picture::from_board(&want), "game {n}");
        // Each move flips the lever; the clock report may merge two flips that
        // happen within one scan (a reply before the press), never more.
        assert!(
            levers.len() + 2 >= game.moves.len() && levers.len() <= game.moves.len() + 1,
            "game {n}: {} lever positions for {} moves",
            levers.len(),
            game.moves.len()
        );
    }
    eprintln!(
        "{} games simulated in {:?} ({} bytes from the boards)",
        games.len(),
        started.elapsed(),
        bytes_in
    );
}
