//! Sans-IO codecs for electronic chess boards, one module per board family, and a
//! faithful virtual board for each.
//!
//! Nothing in this crate does I/O or reads the time: bytes go in, typed values
//! come out, and the caller owns ports and clocks. That keeps every codec testable
//! with plain byte vectors and lets the daemon, the `replay` command and the
//! virtual boards share one implementation.

pub mod blind_hand;
pub mod clock;
pub mod dgt;
pub mod hand;
pub mod picture;

pub use clock::{ClockReading, ClockSide, SideTime};
pub use picture::{MagicPiece, Picture, Sensed};
