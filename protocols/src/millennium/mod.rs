//! The Millennium ChessLink family: the ChessLink module of the ChessGenius
//! Exclusive, the Performance and the eONE (other_boards.md §1).
//!
//! Serial at 38400 baud, ASCII messages with an XOR checksum and odd parity;
//! the board identifies pieces and reports its whole status (`s`), here on
//! every change after a two-scan debounce (see [`driver`]); 81 LEDs on the
//! square corners; no clock. Choices where the sources disagree are in
//! `docs/boards.md`.

use std::any::Any;

use crate::family::{
    BoardFact, BoardId, Capabilities, ClockLink, Codec, CodecSetup, CodecStats, CommandAck, Family,
    Identify, Observation, Observed, Parity, PortMode, Reporting, Sensing, SerialSettings,
    Settings, SetupError, Transport,
};

pub mod driver;
pub mod virtual_board;
pub mod wire;

use wire::{Framer, Reply};

/// 38400 baud. The specification says 7 data bits with odd parity; like the
/// open-source drivers, the port is opened 8N1 and parity is written into
/// bit 7 of every character (the same bits on the wire), so captures keep
/// the parity bits the board sent.
pub const TRANSPORT: Transport = Transport::Serial(SerialSettings {
    baud: 38_400,
    data_bits: 8,
    parity: Parity::None,
    stop_bits: 1,
});

/// The board's scan period with the scan time the driver sets (20 × 2.048
/// ms), and a change reported after two equal scans.
pub const SCAN_MS: u64 = 41;

/// What a ChessLink board can do.
pub fn capabilities(_mode: PortMode) -> Capabilities {
    Capabilities {
        sensing: Sensing::Identity,
        reporting: Reporting::EveryChange {
            scan_ms: (SCAN_MS, 2 * SCAN_MS),
        },
        clock: ClockLink::None,
        leds: true,
        beep: false,
        bus: false,
    }
}

/// The family record.
pub const FAMILY: Family = Family {
    name: "millennium",
    title: "Millennium ChessLink",
    capabilities,
    codec: |_: &CodecSetup| Ok(Box::new(MillenniumCodec::new())),
    driver: driver::driver,
    virtual_device: virtual_board::virtual_device,
    kept_settings: |_| Settings::new(),
    // No source gives the USB ids of a ChessLink module or an eONE: boards
    // are listed in [[board]] tables (docs/boards.md).
    usb: &[],
    by_id_name: |_| false,
    recognise: None,
    // The version (`V`, answered by `v`): what the driver asks first, and
    // the one request that changes nothing on the board.
    identify: Some(Identify {
        request: |_| wire::Command::Version.encode(),
        facts: 1,
    }),
};

/// Board replies of one port, as observations.
#[derive(Debug)]
pub struct MillenniumCodec {
    board: Framer,
    host: Framer,
    stats: CodecStats,
}

impl MillenniumCodec {
    pub fn new() -> MillenniumCodec {
        MillenniumCodec {
            board: Framer::replies(),
            host: Framer::commands(),
            stats: CodecStats::default(),
        }
    }

    /// Characters received with a wrong parity bit (counted, not dropped).
    pub fn parity_errors(&self) -> u64 {
        self.board.parity_errors
    }
}

impl Default for MillenniumCodec {
    fn default() -> Self {
        MillenniumCodec::new()
    }
}

impl Codec for MillenniumCodec {
    fn capabilities(&self) -> Capabilities {
        capabilities(PortMode::Single)
    }

    fn board_bytes(&mut self, _t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for piece in bytes.chunks(wire::BUFFER_CAP / 2) {
            self.board.push(piece);
            while let Some(r) = self.board.next() {
                let what = match r.and_then(|chars| wire::parse_reply(&chars)) {
                    Ok(Reply::Status(p)) => Observation::Picture(p),
                    Ok(Reply::Version { major, minor }) => {
                        Observation::Fact(BoardFact::Version(major, minor))
                    }
                    Ok(Reply::LedsSet | Reply::LedsOff) => Observation::Ack(CommandAck::Leds),
                    Ok(Reply::Written { .. }) => Observation::Ack(CommandAck::Setting),
                    Ok(Reply::Read { .. }) => Observation::Heard,
                    Err(e) => {
                        self.stats.error(e);
                        continue;
                    }
                };
                self.stats.frames += 1;
                out.push(Observed {
                    board: BoardId::Single,
                    what,
                });
            }
        }
    }

    fn host_bytes(&mut self, _t_ms: u64, bytes: &[u8], _out: &mut Vec<Observed>) {
        for piece in bytes.chunks(wire::BUFFER_CAP / 2) {
            self.host.push(piece);
            while let Some(r) = self.host.next() {
                match r.and_then(|chars| wire::parse_command(&chars)) {
                    Ok(_) => self.stats.host_frames += 1,
                    Err(_) => self.stats.host_errors += 1,
                }
            }
        }
    }

    fn tick(&mut self, _t_ms: u64, _out: &mut Vec<Observed>) {}

    fn stats(&self) -> &CodecStats {
        &self.stats
    }

    fn restore(&mut self, _settings: &Settings) -> Result<(), SetupError> {
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
