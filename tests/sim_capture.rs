//! Simulated captures decode into the game: the dump plus the field updates give
//! the final position, and the clock reports every lever change.

use std::path::PathBuf;
use std::time::Instant;

use eboard_bridge::session::capture::Direction;
use eboard_bridge::sim::games::load_index;
use eboard_bridge::sim::{simulate, SimOptions};
use eboard_protocols::dgt::driver::startup;
use eboard_protocols::dgt::{Decoder, Frame, Message, Mode};
use eboard_protocols::hand::PhysicalBoard;
use eboard_protocols::Picture;
use shakmaty::Position;

fn index_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/expected/games-index.jsonl")
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
        // The daemon's start-up, then at most a clock probe now and then
        // (a quiet board is asked for its clock).
        assert_eq!(out[..6], startup()[..], "game {n}");
        assert!(out[6..].iter().all(|&b| b == 0x41), "game {n}: {out:02x?}");
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

#[test]
fn captures_are_deterministic_per_seed_and_noise_is_reported_back() {
    let index = load_index(&index_path()).unwrap();
    let game = index
        .iter()
        .filter_map(|e| e.game.as_ref())
        .find(|g| g.moves.len() > 40)
        .unwrap();
    let opts = SimOptions {
        seed: 3,
        ..SimOptions::default()
    };
    let a = simulate(game, &opts).chunks;
    let b = simulate(game, &opts).chunks;
    assert_eq!(a, b, "same seed, same bytes");
    let c = simulate(
        game,
        &SimOptions {
            seed: 4,
            ..opts.clone()
        },
    )
    .chunks;
    assert_ne!(a, c, "another seed, other hands");

    // With sensor noise the stream carries extra field updates, but the last
    // reading of every square is still the real piece.
    let mut noisy = opts.clone();
    noisy.board.noise.flicker_empty = 0.0005;
    noisy.board.noise.misread = 0.0005;
    let run = simulate(game, &noisy);
    let mut d = Decoder::new(Mode::Single);
    let mut picture: Option<Picture> = None;
    let mut updates = [0usize; 2];
    for (i, chunks) in [&a, &run.chunks].into_iter().enumerate() {
        for c in chunks.iter().filter(|c| c.dir == Direction::In) {
            d.push(&c.bytes);
            while let Some(f) = d.next() {
                match f.unwrap() {
                    Frame::Single(Message::BoardDump(p)) => picture = Some(p),
                    Frame::Single(Message::FieldUpdate { square, sensed }) => {
                        updates[i] += 1;
                        picture.as_mut().unwrap().set(square, sensed)
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(updates[1] > updates[0] + 10, "noise shows: {updates:?}");
    assert_eq!(
        picture.unwrap(),
        Picture::from_board(game.final_position().board())
    );
}
