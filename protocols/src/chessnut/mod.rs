//! The Chessnut family (Air, Air+, Pro, Go) over USB: a HID device read
//! through its hidraw node, one report per message (other_boards.md §3).
//!
//! Once the host asks for real-time mode the board sends its whole position
//! about every 200 ms, changed or not; pieces are identified; LEDs (one per
//! square) and a beeper take commands; there is no clock. Choices where the
//! sources disagree are in `docs/boards.md`.

use std::any::Any;

use crate::family::{
    BoardFact, BoardId, Capabilities, ClockLink, Codec, CodecSetup, CodecStats, CommandAck, Family,
    Observation, Observed, PortMode, Reporting, Sensing, Settings, Transport, UsbMatch,
};

pub mod driver;
pub mod virtual_board;
pub mod wire;

use wire::{BoardMessage, Framer};

/// A position every 200 ms in real-time mode.
pub const FRAME_MS: u64 = 200;

/// The vendor interface (usage page FF00); the device has another (0001).
pub const TRANSPORT: Transport = Transport::Hidraw {
    usage_page: Some(0xff00),
};

/// What a Chessnut board can do.
pub fn capabilities(_mode: PortMode) -> Capabilities {
    Capabilities {
        sensing: Sensing::Identity,
        reporting: Reporting::Frames {
            period_ms: FRAME_MS,
        },
        clock: ClockLink::None,
        leds: true,
        beep: true,
        bus: false,
    }
}

/// The family record.
pub const FAMILY: Family = Family {
    name: "chessnut",
    title: "Chessnut",
    capabilities,
    codec: |_: &CodecSetup| Ok(Box::new(ChessnutCodec::new())),
    driver: driver::driver,
    virtual_device: virtual_board::virtual_device,
    kept_settings: |_| Settings::new(),
    // Chessnut's own vendor id; product ids vary by model and batch (the
    // official SDK takes 0x8000..=0x86ff).
    usb: &[UsbMatch {
        vendor: 0x2d80,
        product: None,
        shared: false,
    }],
    by_id_name: |_| false,
    recognise: None,
    // No request that only asks who the board is is known to this project
    // (positions come once real-time mode is switched on): found by its ids.
    identify: None,
};

/// The reports of one Chessnut board, as observations.
#[derive(Debug)]
pub struct ChessnutCodec {
    board: Framer,
    host: Framer,
    stats: CodecStats,
}

impl ChessnutCodec {
    pub fn new() -> ChessnutCodec {
        ChessnutCodec {
            board: Framer::board(),
            host: Framer::host(),
            stats: CodecStats::default(),
        }
    }
}

impl Default for ChessnutCodec {
    fn default() -> Self {
        ChessnutCodec::new()
    }
}

impl Codec for ChessnutCodec {
    fn capabilities(&self) -> Capabilities {
        capabilities(PortMode::Single)
    }

    fn board_bytes(&mut self, _t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for piece in bytes.chunks(wire::BUFFER_CAP / 2) {
            self.board.push(piece);
            while let Some(r) = self.board.next() {
                let what = match r.and_then(|(k, p)| wire::parse_board(k, &p)) {
                    Ok(BoardMessage::Position(p)) => Observation::Picture(p),
                    Ok(BoardMessage::Ack(_)) => Observation::Ack(CommandAck::Leds),
                    Ok(BoardMessage::Battery(percent)) => {
                        Observation::Fact(BoardFact::Battery(percent))
                    }
                    Ok(BoardMessage::Other { .. }) => Observation::Heard,
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
                match r {
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}
