//! What a virtual board's sensor matrix reads, shared by the virtual boards of
//! the families written after DGT's (whose own scanning is older and kept as it
//! is, so its simulated captures stay byte for byte the same).
//!
//! The pieces really standing on the board ([`PhysicalBoard`]) are read square
//! by square at a scan: two pieces on one square read as either, and
//! [`SensorNoise`] makes an occupied square read empty, or another piece of its
//! colour, for one scan. Deterministic: randomness comes from a seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shakmaty::{Piece, Role, Square};

use crate::family::SensorNoise;
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::picture::{Picture, Sensed};

/// A board's pieces and the sensors under them.
#[derive(Clone, Debug)]
pub struct Sensors {
    physical: PhysicalBoard,
    rng: SmallRng,
    noise: SensorNoise,
}

impl Sensors {
    /// Sensors under `pieces`, their faults drawn from `seed`.
    pub fn new(pieces: PhysicalBoard, noise: SensorNoise, seed: u64) -> Sensors {
        Sensors {
            physical: pieces,
            rng: SmallRng::seed_from_u64(seed),
            noise,
        }
    }

    /// What really stands on the board.
    pub fn physical(&self) -> &PhysicalBoard {
        &self.physical
    }

    /// A hand lifts or places a piece (clock presses change nothing here).
    pub fn apply(&mut self, action: PhysicalAction) -> Result<(), PhysicalError> {
        self.physical.apply(action)
    }

    /// The randomness of this board, for faults of its own (a family's
    /// sensor quirks beyond [`SensorNoise`]).
    pub fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }

    /// The piece the sensor of `sq` finds at this scan before noise, if any:
    /// of two pieces on one square, either.
    pub fn piece_on(&mut self, sq: Square) -> Option<Piece> {
        let mut on = self.physical.pieces_on(sq);
        match (on.next(), on.next()) {
            (None, _) => None,
            (Some(p), None) => Some(p),
            (Some(a), Some(b)) => Some(if self.rng.random_bool(0.5) { a } else { b }),
        }
    }

    /// What the sensor of `sq` reads at this scan, noise included.
    pub fn sense(&mut self, sq: Square) -> Sensed {
        let Some(piece) = self.piece_on(sq) else {
            return Sensed::Empty;
        };
        let noise = self.noise;
        if noise.flicker_empty > 0.0 && self.rng.random_bool(noise.flicker_empty.min(1.0)) {
            return Sensed::Empty;
        }
        if noise.misread > 0.0 && self.rng.random_bool(noise.misread.min(1.0)) {
            let others: Vec<Role> = Role::ALL.into_iter().filter(|&r| r != piece.role).collect();
            let role = others[self.rng.random_range(0..others.len())];
            return Sensed::Piece(Piece {
                color: piece.color,
                role,
            });
        }
        Sensed::Piece(piece)
    }

    /// One scan of all 64 squares.
    pub fn scan(&mut self) -> Picture {
        let mut p = Picture::empty();
        for sq in Square::ALL {
            p.set(sq, self.sense(sq));
        }
        p
    }

    /// Whether a fault of probability `p` happens now.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }
}

/// Line time of `bytes` at `baud` (10 bits a byte), in whole milliseconds,
/// at least 1.
pub fn line_ms(bytes: usize, baud: u32) -> u64 {
    (bytes as u64 * 10_000)
        .div_ceil(u64::from(baud.max(1)))
        .max(1)
}

/// Output of a virtual board on a line: messages start when the line is free.
#[derive(Clone, Debug, Default)]
pub struct LineOut {
    free_at: u64,
    out: Vec<(u64, Vec<u8>)>,
}

impl LineOut {
    /// Sends `bytes` at `t`, or once the line is free, at `baud`.
    pub fn send(&mut self, t: u64, bytes: Vec<u8>, baud: u32) {
        let start = t.max(self.free_at);
        self.free_at = start + line_ms(bytes.len(), baud);
        self.out.push((start, bytes));
    }

    /// Takes what was sent so far.
    pub fn take(&mut self) -> Vec<(u64, Vec<u8>)> {
        std::mem::take(&mut self.out)
    }

    /// Forgets what is queued and frees the line (a reset).
    pub fn clear(&mut self) {
        self.out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::Board;

    #[test]
    fn a_quiet_board_reads_what_stands_on_it() {
        let mut s = Sensors::new(
            PhysicalBoard::from_board(&Board::default(), false),
            SensorNoise::default(),
            1,
        );
        assert_eq!(s.scan(), Picture::from_board(&Board::default()));
        assert_eq!(line_ms(67, 38_400), 18);
        assert_eq!(line_ms(1, 38_400), 1);
    }
}
