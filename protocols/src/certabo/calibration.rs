//! Which RFID id is which piece: a Certabo board reports ids, and the host
//! owns the table (other_boards.md §2.3). It is learned once from the start
//! position (and spare queens on d3 and d6), kept with the board, and written
//! into every capture header so a replay reads ids exactly as the live run.

use std::collections::BTreeMap;

use shakmaty::{Color, Piece, Role, Square};

use super::lines::square_of;

/// A piece's RFID id: the five numbers a square reports. `[0; 5]`: nothing.
pub type Id = [u8; 5];

/// The settings key of the calibration.
pub const KEY: &str = "calibration";

/// Frames that must agree before a calibration is taken from them.
pub const FRAMES_TO_CALIBRATE: usize = 3;

/// The table of known ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calibration {
    ids: BTreeMap<Id, Piece>,
}

impl Calibration {
    /// No id known.
    pub fn new() -> Calibration {
        Calibration::default()
    }

    /// Whether no id is known.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The piece with id `id`, if known.
    pub fn piece(&self, id: &Id) -> Option<Piece> {
        self.ids.get(id).copied()
    }

    /// Adds (or replaces) one id.
    pub fn insert(&mut self, id: Id, piece: Piece) {
        self.ids.insert(id, piece);
    }

    /// How many ids are known.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// As kept: `K=3.0.84.252.153 Q=…`, one entry per id, separated by spaces.
    pub fn to_text(&self) -> String {
        let mut entries: Vec<String> = self
            .ids
            .iter()
            .map(|(id, p)| {
                format!(
                    "{}={}.{}.{}.{}.{}",
                    p.char(),
                    id[0],
                    id[1],
                    id[2],
                    id[3],
                    id[4]
                )
            })
            .collect();
        entries.sort();
        entries.join(" ")
    }

    /// Reads [`Calibration::to_text`]'s form; says what is wrong otherwise.
    pub fn parse(text: &str) -> Result<Calibration, String> {
        let mut c = Calibration::new();
        for entry in text.split_ascii_whitespace() {
            let (piece, id) = entry
                .split_once('=')
                .ok_or_else(|| format!("{entry:?} is not PIECE=N.N.N.N.N"))?;
            let mut chars = piece.chars();
            let (Some(ch), None) = (chars.next(), chars.next()) else {
                return Err(format!(
                    "{piece:?} is not one piece letter (KQRBNP, kqrbnp)"
                ));
            };
            let piece = Piece::from_char(ch)
                .ok_or_else(|| format!("{ch:?} is not a piece letter (KQRBNP, kqrbnp)"))?;
            let numbers: Vec<u8> = id
                .split('.')
                .map(|n| n.parse::<u8>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{id:?} is not five numbers 0..=255 joined by dots"))?;
            let id: Id = numbers
                .try_into()
                .map_err(|_| format!("{id:?} is not five numbers 0..=255 joined by dots"))?;
            if id == [0; 5] {
                return Err("0.0.0.0.0 means an empty square, not a piece".into());
            }
            if let Some(other) = c.ids.insert(id, piece) {
                if other != piece {
                    return Err(format!(
                        "id {} is given as {} and as {}",
                        entry.split_once('=').map_or("", |(_, i)| i),
                        other.char(),
                        piece.char()
                    ));
                }
            }
        }
        Ok(c)
    }

    /// The calibration `frames` (the last few, each 64 ids) show, if they all
    /// show the start position with White on ranks 1 and 2 (as the board sees
    /// them) and agree: 32 distinct ids on ranks 1, 2, 7 and 8, assigned by
    /// square, and the ids on d3 and d6, when those squares hold one in every
    /// frame, as White's and Black's spare queens.
    pub fn from_start(frames: &[[Id; 64]]) -> Option<Calibration> {
        let first = frames.first()?;
        if frames.len() < FRAMES_TO_CALIBRATE {
            return None;
        }
        let back = [
            Role::Rook,
            Role::Knight,
            Role::Bishop,
            Role::Queen,
            Role::King,
            Role::Bishop,
            Role::Knight,
            Role::Rook,
        ];
        let mut c = Calibration::new();
        for (index, id) in first.iter().enumerate() {
            let sq = square_of(index);
            let file = usize::from(u8::from(sq.file()));
            let role_color = match u8::from(sq.rank()) {
                0 => Some((back[file], Color::White)),
                1 => Some((Role::Pawn, Color::White)),
                6 => Some((Role::Pawn, Color::Black)),
                7 => Some((back[file], Color::Black)),
                _ => None,
            };
            let spare = match sq {
                Square::D3 => Some((Role::Queen, Color::White)),
                Square::D6 => Some((Role::Queen, Color::Black)),
                _ => None,
            };
            let steady = frames.iter().all(|f| f[index] == *id);
            match (role_color, spare) {
                (Some((role, color)), _) => {
                    if *id == [0; 5] || !steady || c.ids.contains_key(id) {
                        return None;
                    }
                    c.insert(*id, Piece { color, role });
                }
                (None, Some((role, color))) => {
                    if *id != [0; 5] && steady && !c.ids.contains_key(id) {
                        c.insert(*id, Piece { color, role });
                    }
                }
                (None, None) => {}
            }
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_errors_say_what_is_wrong() {
        let mut c = Calibration::new();
        c.insert([3, 0, 84, 252, 153], Piece::from_char('K').unwrap());
        c.insert([3, 0, 85, 0, 104], Piece::from_char('q').unwrap());
        let text = c.to_text();
        assert_eq!(text, "K=3.0.84.252.153 q=3.0.85.0.104");
        assert_eq!(Calibration::parse(&text), Ok(c));
        assert!(Calibration::parse("X=1.2.3.4.5")
            .unwrap_err()
            .contains("piece letter"));
        assert!(Calibration::parse("K=1.2.3.4")
            .unwrap_err()
            .contains("five numbers"));
        assert!(Calibration::parse("K=1.2.3.4.5 Q=1.2.3.4.5")
            .unwrap_err()
            .contains("as K and as Q"));
    }
}
