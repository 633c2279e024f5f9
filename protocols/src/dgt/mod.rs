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
mod codec;
pub mod codes;
mod decode;
pub mod driver;
mod encode;
mod host;
mod types;
pub mod virtual_board;
pub mod virtual_clock;

pub use decode::{DecodeError, Decoder, Frame, Mode, BUFFER_CAP};
pub use encode::{bus_checksum, bus_id, MAX_MESSAGE_LEN};
pub use host::{HostDecodeError, HostDecoder, HOST_BUFFER_CAP};
pub use types::*;

pub use codec::{capabilities, DgtCodec, DgtStats};

use crate::family::{CodecSetup, Family, Identify, PortMode, SetupError};

/// The DGT family, for the registration table.
pub const FAMILY: Family = Family {
    name: "dgt",
    title: "DGT",
    capabilities,
    codec: codec_for,
    driver: driver::driver,
    virtual_device: virtual_board::virtual_device,
    kept_settings: |_| crate::family::Settings::new(),
    // DGT boards are found by their USB names, not by ids (the udev rules
    // match the manufacturer string; the chips are generic).
    usb: &[],
    by_id_name: looks_like_dgt,
    recognise: None,
    identify: Some(Identify {
        request: identify_request,
        facts: 2,
    }),
};

/// Who is there: the serial number and the version of a single board, or a
/// ping to every board of a bus line (each answers with its address). None
/// of them changes anything on a board.
fn identify_request(mode: PortMode) -> Vec<u8> {
    let mut out = Vec::new();
    match mode {
        PortMode::Single => {
            Command::ReturnSerialNumber.encode(&mut out);
            Command::SendVersion.encode(&mut out);
        }
        PortMode::Bus => BusCommand {
            kind: BusCommandKind::Ping,
            address: 0,
        }
        .encode(&mut out),
    }
    out
}

fn codec_for(setup: &CodecSetup) -> Result<Box<dyn crate::family::Codec>, SetupError> {
    Ok(DgtCodec::boxed(match setup.mode {
        PortMode::Single => Mode::Single,
        PortMode::Bus => Mode::Bus,
    }))
}

/// Whether a `/dev/serial/by-id/` name looks like a DGT board. DGT boards
/// identify as "Digital Game Technology" / "DGT"; generic USB-serial bridge
/// names are not claimed, since other devices use the same chips.
pub fn looks_like_dgt(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("digital_game_technology")
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "dgt")
}
