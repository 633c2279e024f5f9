//! The DGT board protocol family: single boards on serial/USB/Bluetooth, boards in
//! bus mode, and the DGT XL / DGT 3000 clock reached through the board.
//!
//! Sans-IO: nothing in this module reads or writes a port. The types here are the
//! vocabulary; encoders and decoders turn them into bytes and back.
//!
//! Choices where the sources disagree (see `reference/dgt.md` §7) are recorded on
//! the item they affect, with the evidence used, and summarised in
//! `docs/dgt-codec.md`.

pub mod clock_queue;
pub mod codes;
mod decode;
mod encode;
mod host;
mod types;
pub mod virtual_board;
pub mod virtual_clock;

pub use decode::{DecodeError, Decoder, Frame, Mode, BUFFER_CAP};
pub use encode::{bus_checksum, bus_id, MAX_MESSAGE_LEN};
pub use host::{HostDecodeError, HostDecoder, HOST_BUFFER_CAP};
pub use types::*;
