//! Sans-IO codecs for electronic chess boards, one module per board family, and a
//! faithful virtual board for each.
//!
//! Nothing in this crate does I/O or reads the time: bytes go in, typed values
//! come out, and the caller owns ports and clocks. That keeps every codec testable
//! with plain byte vectors and lets the daemon, the `replay` command and the
//! virtual boards share one implementation.

pub mod blind_hand;
pub mod certabo;
pub mod chessnut;
pub mod clock;
pub mod dgt;
pub mod family;
pub mod hand;
pub mod millennium;
pub mod occupancy;
pub mod picture;
pub mod sensors;

use family::Family;

/// The registration table: every board family the project reads, and the only
/// place that lists them. Everything else (the daemon, `replay`, recovery,
/// `emulate`, the demo, the benches, the tests) finds families here.
pub static FAMILIES: &[&Family] = &[
    &dgt::FAMILY,
    &millennium::FAMILY,
    &certabo::FAMILY,
    &chessnut::FAMILY,
    &occupancy::FAMILY,
];

/// The registered families.
pub fn families() -> &'static [&'static Family] {
    FAMILIES
}

/// The family called `name` (a capture header's `protocol`).
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().copied().find(|f| f.name == name)
}

/// The registered families' names, for messages: `"dgt", "millennium", …`.
pub fn family_names() -> String {
    FAMILIES
        .iter()
        .map(|f| format!("{:?}", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

pub use clock::{ClockReading, ClockSide, SideTime};
pub use picture::{MagicPiece, Picture, Sensed};
