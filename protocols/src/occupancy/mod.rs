//! Occupancy-only boards in the Certabo dialect (Tabutronic Sentio style):
//! the board senses whether a square is occupied, not by what, and pushes a
//! line of 8 numbers, one bit mask per rank, about once a second
//! (other_boards.md §2.6). LEDs take the dialect's 8-byte commands; there is
//! no clock.
//!
//! Everything but the frame is the dialect's (`certabo::lines`,
//! `certabo::driver`): this module is the frame, the family record and the
//! virtual board.

use std::any::Any;

use rand::Rng;

use shakmaty::{Bitboard, File, Rank, Square};

use crate::certabo::{self, lines};
use crate::family::{
    BoardId, Capabilities, ClockLink, Codec, CodecSetup, CodecStats, Family, Observation, Observed,
    PortMode, Reporting, Sensing, Settings, VirtualDevice, VirtualSpec,
};
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::picture::{Picture, Sensed};
use crate::sensors::{LineOut, Sensors};

/// Numbers in a line: one per rank.
pub const FIELDS: usize = 8;

/// A frame every second, the dialect's one published rate (docs/boards.md).
pub const FRAME_MS: u64 = 1_000;

/// What an occupancy board can do.
pub fn capabilities(_mode: PortMode) -> Capabilities {
    Capabilities {
        sensing: Sensing::Occupancy,
        reporting: Reporting::Frames {
            period_ms: FRAME_MS,
        },
        clock: ClockLink::None,
        leds: true,
        beep: false,
        bus: false,
    }
}

/// The family record.
pub const FAMILY: Family = Family {
    name: "occupancy",
    title: "occupancy (Certabo dialect)",
    capabilities,
    codec: |_: &CodecSetup| Ok(Box::new(OccupancyCodec::default())),
    driver: certabo::driver::driver,
    virtual_device,
    kept_settings: |_| Settings::new(),
    usb: &[certabo::CP210X],
    by_id_name: |_| false,
    recognise: Some(|bytes| lines::has_line_of(bytes, FIELDS)),
    // Certabo's dialect: no command but LEDs, nothing to ask.
    identify: None,
};

/// The frame of `p`: number `k` is rank `8 - k`, bit 7 = file a.
pub fn frame(p: &Picture) -> [u8; 8] {
    let mut b = [0u8; 8];
    for sq in p.occupied() {
        let row = 7 - usize::from(u8::from(sq.rank()));
        b[row] |= 0x80 >> u8::from(sq.file());
    }
    b
}

/// The occupancy picture of a frame.
pub fn picture(frame: &[u8]) -> Picture {
    let mut p = Picture::empty();
    for (row, &byte) in frame.iter().take(8).enumerate() {
        for file in 0..8u32 {
            if byte & (0x80 >> file) != 0 {
                p.set(
                    Square::from_coords(File::new(file), Rank::new(7 - row as u32)),
                    Sensed::Occupied,
                );
            }
        }
    }
    p
}

/// The lines of one occupancy board, as observations.
#[derive(Debug, Default)]
pub struct OccupancyCodec {
    framer: lines::LineFramer,
    stats: CodecStats,
    host: lines::LedCommands,
}

impl Codec for OccupancyCodec {
    fn capabilities(&self) -> Capabilities {
        capabilities(PortMode::Single)
    }

    fn board_bytes(&mut self, _t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for n in self.framer.read(bytes, &mut self.stats) {
            if n.len() != FIELDS {
                self.stats
                    .error(lines::LineError::FieldCount { got: n.len() });
                continue;
            }
            self.stats.frames += 1;
            out.push(Observed {
                board: BoardId::Single,
                what: Observation::Picture(picture(&n)),
            });
        }
    }

    fn host_bytes(&mut self, _t_ms: u64, bytes: &[u8], _out: &mut Vec<Observed>) {
        self.stats.host_frames += self.host.push(bytes) as u64;
    }

    fn tick(&mut self, _t_ms: u64, _out: &mut Vec<Observed>) {}

    fn stats(&self) -> &CodecStats {
        &self.stats
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One virtual occupancy board: the sensors read once a frame, whether a
/// square is occupied (two pieces on one read as one), and the LEDs.
#[derive(Clone, Debug)]
pub struct VirtualOccupancy {
    sensors: Sensors,
    frame_ms: u64,
    next_frame: u64,
    leds: lines::LedCommands,
    out: LineOut,
}

impl VirtualOccupancy {
    /// A board switched on at time 0 with `pieces` on it.
    pub fn new(spec: &VirtualSpec, pieces: PhysicalBoard) -> VirtualOccupancy {
        let mut sensors = Sensors::new(pieces, spec.noise, spec.seed);
        let frame_ms = spec.frame_ms.unwrap_or(FRAME_MS).max(1);
        // Switched on at a moment of its own: the first frame comes within
        // one period.
        let next_frame = sensors.rng().random_range(0..frame_ms);
        VirtualOccupancy {
            sensors,
            frame_ms,
            next_frame,
            leds: lines::LedCommands::default(),
            out: LineOut::default(),
        }
    }
}

impl VirtualDevice for VirtualOccupancy {
    fn apply(
        &mut self,
        _board: usize,
        t_ms: u64,
        action: PhysicalAction,
    ) -> Result<(), PhysicalError> {
        self.advance(t_ms);
        self.sensors.apply(action)
    }

    fn receive_host(&mut self, t_ms: u64, bytes: &[u8]) {
        self.advance(t_ms);
        self.leds.push(bytes);
    }

    fn advance(&mut self, t_ms: u64) {
        while self.next_frame <= t_ms {
            let t = self.next_frame;
            self.next_frame = t + self.frame_ms;
            let seen = self.sensors.scan();
            self.out.send(t, lines::encode_line(&frame(&seen)), 38_400);
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
        "virtual occupancy board".to_string()
    }
}

/// One virtual occupancy board (no shared line).
pub fn virtual_device(spec: &VirtualSpec, pieces: Vec<PhysicalBoard>) -> Box<dyn VirtualDevice> {
    let p = pieces.into_iter().next().unwrap_or_default();
    Box::new(VirtualOccupancy::new(spec, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use shakmaty::Board;

    #[test]
    fn the_start_position_is_the_reference_line() {
        let p = Picture::occupancy_of(&Board::default());
        assert_eq!(frame(&p), [255, 255, 0, 0, 0, 0, 255, 255]);
        let mut c = OccupancyCodec::default();
        let mut out = Vec::new();
        c.board_bytes(0, b":255 255 0 0 0 0 255 255 \r\n", &mut out);
        assert_eq!(out[0].what, Observation::Picture(p));
        // A Certabo line is not this board's.
        c.board_bytes(1, &lines::encode_line(&[0; 320]), &mut out);
        assert_eq!(c.stats().decode_errors, 1);
    }

    proptest! {
        #[test]
        fn frames_round_trip(b in any::<u64>()) {
            let mut p = Picture::empty();
            for sq in Bitboard(b) {
                p.set(sq, Sensed::Occupied);
            }
            prop_assert_eq!(picture(&frame(&p)), p);
        }
    }
}
