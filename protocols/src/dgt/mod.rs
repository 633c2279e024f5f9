//! The DGT board protocol family: single boards on serial/USB/Bluetooth, boards in
//! bus mode, and the DGT XL / DGT 3000 clock reached through the board.
//!
//! Sans-IO: nothing in this module reads or writes a port. The types here are the
//! vocabulary; encoders and decoders turn them into bytes and back.
//!
//! Choices where the sources disagree (see `reference/dgt.md` §7) are recorded on
//! the item they affect, with the evidence used.

mod types;
pub mod virtual_clock;

pub use types::*;
