//! A faithful virtual Certabo board: a set of pieces each carrying an RFID
//! id (spares in the box: two queens, a rook, a bishop and a knight of each
//! colour), antennas that read the id of the piece on each square once a
//! frame, empty squares that now and then read a random id (as real boards
//! do), and 8-byte LED commands. The ids follow the pieces: a knight lifted
//! from g1 and put on f3 reads there with its own id.
//!
//! Time-injected and seeded: the set's ids come from the spec's seed alone,
//! so [`kept_calibration`] is the table the daemon would have learned.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shakmaty::{Bitboard, Color, Piece, Role, Square};

use super::calibration::{Calibration, Id};
use super::lines::{encode_line, square_of, LedCommands};
use crate::family::{SensorNoise, VirtualDevice, VirtualSpec};
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::sensors::LineOut;

const BAUD: u32 = 38_400;

/// A frame every second, as the official simulator sends them (no figure for
/// real boards is published: docs/boards.md).
pub const FRAME_MS: u64 = 1_000;

/// Chance per empty square per frame that its antenna reads a random id.
pub const EMPTY_GARBAGE: f64 = 0.02;

/// The pieces of one set with their ids: the 32 of the start position, then
/// the spares.
pub fn piece_set(seed: u64) -> Vec<(Piece, Id)> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5246_4944); // "RFID"
    let mut roles = vec![Role::King, Role::Queen];
    roles.extend([Role::Rook; 2]);
    roles.extend([Role::Bishop; 2]);
    roles.extend([Role::Knight; 2]);
    roles.extend([Role::Pawn; 8]);
    // Spares in the box.
    roles.extend([
        Role::Queen,
        Role::Queen,
        Role::Rook,
        Role::Bishop,
        Role::Knight,
    ]);
    let mut set: Vec<(Piece, Id)> = Vec::new();
    for color in [Color::White, Color::Black] {
        for &role in &roles {
            loop {
                let id: Id = [
                    rng.random_range(1..=9),
                    rng.random(),
                    rng.random(),
                    rng.random(),
                    rng.random(),
                ];
                if !set.iter().any(|(_, other)| *other == id) {
                    set.push((Piece { color, role }, id));
                    break;
                }
            }
        }
    }
    set
}

/// The calibration a board built from `spec` keeps once set up: every id of
/// its set, spares included.
pub fn kept_calibration(spec: &VirtualSpec) -> Calibration {
    let mut c = Calibration::new();
    for (piece, id) in piece_set(spec.seed) {
        c.insert(id, piece);
    }
    c
}

/// One virtual Certabo board.
#[derive(Clone, Debug)]
pub struct VirtualCertabo {
    set: Vec<(Piece, Id)>,
    /// Ids on each square, bottom first (indices into `set`).
    squares: Vec<Vec<usize>>,
    /// Pieces off the board, most recent last: in hands, captured.
    off: Vec<usize>,
    /// Spares not yet used.
    spare_box: Vec<usize>,
    rng: SmallRng,
    noise: SensorNoise,
    frame_ms: u64,
    next_frame: u64,
    leds: LedCommands,
    out: LineOut,
}

impl VirtualCertabo {
    /// A board switched on at time 0 with `pieces` on it.
    pub fn new(spec: &VirtualSpec, pieces: &PhysicalBoard) -> VirtualCertabo {
        let set = piece_set(spec.seed);
        let mut free: Vec<usize> = (0..set.len()).collect();
        let mut b = VirtualCertabo {
            squares: vec![Vec::new(); 64],
            off: Vec::new(),
            spare_box: Vec::new(),
            rng: SmallRng::seed_from_u64(spec.seed),
            noise: spec.noise,
            frame_ms: spec.frame_ms.unwrap_or(FRAME_MS).max(1),
            next_frame: 0,
            leds: LedCommands::default(),
            out: LineOut::default(),
            set,
        };
        for sq in Square::ALL {
            for piece in pieces.pieces_on(sq) {
                let i = match free.iter().position(|&i| b.set[i].0 == piece) {
                    Some(k) => free.remove(k),
                    None => b.mint(piece),
                };
                b.squares[usize::from(sq)].push(i);
            }
        }
        b.spare_box = free;
        b.next_frame = b.rng.random_range(0..b.frame_ms);
        b
    }

    /// A piece with an id nobody calibrated (a piece from another set).
    fn mint(&mut self, piece: Piece) -> usize {
        let id = self.garbage_id();
        self.set.push((piece, id));
        self.set.len() - 1
    }

    fn garbage_id(&mut self) -> Id {
        loop {
            let id: Id = [
                self.rng.random_range(10..=255),
                self.rng.random(),
                self.rng.random(),
                self.rng.random(),
                self.rng.random(),
            ];
            if !self.set.iter().any(|(_, s)| *s == id) {
                return id;
            }
        }
    }

    /// The ids read at one frame, square 0 = a8.
    fn read(&mut self) -> [Id; 64] {
        let mut ids = [[0u8; 5]; 64];
        for (index, slot) in ids.iter_mut().enumerate() {
            let sq = square_of(index);
            let stack = &self.squares[usize::from(sq)];
            let piece = match stack.len() {
                0 => None,
                1 => Some(stack[0]),
                _ => Some(stack[self.rng.random_range(0..stack.len())]),
            };
            *slot = match piece {
                None if self.rng.random_bool(EMPTY_GARBAGE) => self.garbage_id(),
                None => [0; 5],
                Some(i) => {
                    let noise = self.noise;
                    if noise.flicker_empty > 0.0
                        && self.rng.random_bool(noise.flicker_empty.min(1.0))
                    {
                        [0; 5]
                    } else if noise.misread > 0.0 && self.rng.random_bool(noise.misread.min(1.0)) {
                        self.garbage_id()
                    } else {
                        self.set[i].1
                    }
                }
            };
        }
        ids
    }

    fn frame(&mut self, t: u64) {
        self.next_frame = t + self.frame_ms;
        let ids = self.read();
        let numbers: Vec<u8> = ids.iter().flatten().copied().collect();
        self.out.send(t, encode_line(&numbers), BAUD);
    }
}

impl VirtualDevice for VirtualCertabo {
    fn apply(
        &mut self,
        _board: usize,
        t_ms: u64,
        action: PhysicalAction,
    ) -> Result<(), PhysicalError> {
        self.advance(t_ms);
        match action {
            PhysicalAction::Lift { square, piece } => {
                let stack = &mut self.squares[usize::from(square)];
                let k = stack
                    .iter()
                    .rposition(|&i| self.set[i].0 == piece)
                    .ok_or(PhysicalError::NotThere { square, piece })?;
                let i = stack.remove(k);
                self.off.push(i);
            }
            PhysicalAction::Place { square, piece } => {
                if self.squares[usize::from(square)].len() >= 2 {
                    return Err(PhysicalError::SquareFull { square, piece });
                }
                let i = if let Some(k) = self.off.iter().rposition(|&i| self.set[i].0 == piece) {
                    self.off.remove(k)
                } else if let Some(k) = self.spare_box.iter().position(|&i| self.set[i].0 == piece)
                {
                    self.spare_box.remove(k)
                } else {
                    self.mint(piece)
                };
                self.squares[usize::from(square)].push(i);
            }
            PhysicalAction::PressClock(_) => {}
        }
        Ok(())
    }

    fn receive_host(&mut self, t_ms: u64, bytes: &[u8]) {
        self.advance(t_ms);
        self.leds.push(bytes);
    }

    fn advance(&mut self, t_ms: u64) {
        while self.next_frame <= t_ms {
            let t = self.next_frame;
            self.frame(t);
        }
    }

    fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.out.take()
    }

    fn next_event_at(&self) -> u64 {
        self.next_frame
    }

    fn leds(&self, _board: usize) -> Option<Bitboard> {
        Some(self.leds.squares())
    }

    fn describe(&self) -> String {
        "virtual Certabo board".to_string()
    }
}

/// One virtual Certabo board (the protocol has no shared line).
pub fn virtual_device(spec: &VirtualSpec, pieces: Vec<PhysicalBoard>) -> Box<dyn VirtualDevice> {
    let p = pieces.into_iter().next().unwrap_or_default();
    Box::new(VirtualCertabo::new(spec, &p))
}
