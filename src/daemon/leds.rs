//! What a board's LEDs show: the last verified move, or the squares of the
//! open alerts that ask for pieces to be put right (a wrong set-up, displaced
//! pieces) until they are resolved.
//!
//! Pure bookkeeping over the tracker's events, in the game's frame; the
//! daemon turns the squares into the board's own frame (the board may stand
//! turned) and hands them to the board's driver, which knows the LED format.
//! Lights are off by default in tournament mode (see `[leds]` in
//! `docs/configuration.md`), where they would disturb the players.

use std::collections::BTreeMap;

use shakmaty::{Bitboard, Square};

use crate::events::{GameEvent, Stamped, TrackerEvent};

/// Alert kinds whose squares are lit: both ask the players to put pieces
/// right, and the board then shows which. Rulings (an illegal move) are the
/// arbiter's, not the board's, to show.
pub const LIT_ALERTS: [&str; 2] = ["wrong_initial_position", "displaced_pieces"];

/// One board's lights.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leds {
    /// The squares of the last verified move.
    last_move: Bitboard,
    /// Open alerts' squares, by alert id.
    alerts: BTreeMap<u32, Bitboard>,
    /// What was last sent to the board (its own frame); `None`: unknown.
    sent: Option<Bitboard>,
}

impl Leds {
    /// Takes the board's events, in order.
    pub fn events<'a>(&mut self, events: impl IntoIterator<Item = &'a Stamped>) {
        for e in events {
            match &e.event {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                    self.last_move = uci_squares(&m.uci);
                }
                TrackerEvent::Game(GameEvent::Retraction { .. })
                | TrackerEvent::Game(GameEvent::GameStart { .. }) => {
                    self.last_move = Bitboard::EMPTY;
                }
                TrackerEvent::Alert(a) if LIT_ALERTS.contains(&a.kind.as_str()) => {
                    let squares = a
                        .squares
                        .iter()
                        .filter_map(|s| s.parse::<Square>().ok())
                        .collect();
                    self.alerts.insert(a.id, squares);
                }
                TrackerEvent::Resolved(r) => {
                    self.alerts.remove(&r.id);
                }
                _ => {}
            }
        }
    }

    /// Keeps only the lit alerts `open` says are still open (an arbiter may
    /// have resolved one on the dashboard).
    pub fn keep_open(&mut self, open: impl Fn(u32) -> bool) {
        self.alerts.retain(|&id, _| open(id));
    }

    /// The squares to light, in the game's frame: the open alerts' squares
    /// when there are any, else the last verified move.
    pub fn wanted(&self) -> Bitboard {
        if self.alerts.is_empty() {
            self.last_move
        } else {
            self.alerts
                .values()
                .fold(Bitboard::EMPTY, |acc, &b| acc | b)
        }
    }

    /// What was last sent, if known.
    pub fn sent(&self) -> Option<Bitboard> {
        self.sent
    }

    /// `squares` (board frame) were sent.
    pub fn mark_sent(&mut self, squares: Bitboard) {
        self.sent = Some(squares);
    }

    /// The board lost its lights (reset, unplugged): send again.
    pub fn forget_sent(&mut self) {
        self.sent = None;
    }
}

/// The from and to squares of a UCI move (`e2e4`, `e7e8q`, `e1h1`).
fn uci_squares(uci: &str) -> Bitboard {
    let sq = |r: std::ops::Range<usize>| uci.get(r).and_then(|s| s.parse::<Square>().ok());
    [sq(0..2), sq(2..4)].into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::AlertKind;
    use crate::events::{Alert, AlertResolved, MoveEvent, Severity};

    fn at(event: TrackerEvent) -> Stamped {
        Stamped {
            board: 1,
            ply: 1,
            t_ms: 0,
            event,
        }
    }

    fn mv(uci: &str) -> Stamped {
        at(TrackerEvent::Game(GameEvent::Move(MoveEvent {
            ply: 1,
            san: String::new(),
            uci: uci.into(),
            fen: String::new(),
            verified: true,
            clock_ms: None,
            emt_ms: None,
            reconstructed: false,
            corrected: false,
        })))
    }

    fn alert(id: u32, kind: &str, squares: &[&str]) -> Stamped {
        at(TrackerEvent::Alert(Alert {
            id,
            kind: AlertKind::from_name(kind),
            article: "7.4".into(),
            severity: Severity::Warning,
            squares: squares.iter().map(|s| s.to_string()).collect(),
            message: String::new(),
            penalty: None,
        }))
    }

    #[test]
    fn the_last_move_then_an_open_alert_until_it_is_resolved() {
        let mut l = Leds::default();
        l.events([&mv("e2e4")]);
        assert_eq!(
            l.wanted(),
            Bitboard::from(Square::E2) | Bitboard::from(Square::E4)
        );
        l.events([&alert(3, "displaced_pieces", &["d1", "h5"])]);
        assert_eq!(
            l.wanted(),
            Bitboard::from(Square::D1) | Bitboard::from(Square::H5)
        );
        // Other alerts light nothing.
        l.events([&alert(4, "illegal_move", &["a1"])]);
        assert_eq!(
            l.wanted(),
            Bitboard::from(Square::D1) | Bitboard::from(Square::H5)
        );
        l.events([&at(TrackerEvent::Resolved(AlertResolved {
            id: 3,
            kind: AlertKind::DisplacedPieces,
            reason: String::new(),
        }))]);
        assert_eq!(
            l.wanted(),
            Bitboard::from(Square::E2) | Bitboard::from(Square::E4)
        );
        l.events([&alert(5, "wrong_initial_position", &["e1"])]);
        l.keep_open(|_| false);
        assert_eq!(
            l.wanted(),
            Bitboard::from(Square::E2) | Bitboard::from(Square::E4)
        );
    }
}
