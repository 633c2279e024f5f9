//! The Certabo family: RFID boards that push a line of 320 numbers (the id of
//! the piece on each square) about once a second, and take 8-byte LED
//! commands (other_boards.md §2).
//!
//! The board reports ids, not pieces: the codec reads them through a
//! calibration ([`calibration`]), learned from the start position the first
//! time and then kept with the board (the daemon saves it, and every capture
//! header carries the one the codec started with, so a replay is exact). An
//! id the calibration does not know reads as an empty square: the antennas
//! of empty squares often pick up noise. Choices where the sources disagree
//! are in `docs/boards.md`.

use std::any::Any;
use std::collections::VecDeque;

use crate::family::{
    BoardId, Capabilities, ClockLink, Codec, CodecSetup, CodecStats, Family, Observation, Observed,
    PortMode, Reporting, Sensing, Settings, SetupError, UsbMatch, VirtualSpec,
};
use crate::picture::{Picture, Sensed};

pub mod calibration;
pub mod driver;
pub mod lines;
pub mod virtual_board;

use calibration::{Calibration, Id};
use lines::{LineError, LineFramer};

/// Numbers in a Certabo line: 64 squares × 5.
pub const FIELDS: usize = 320;

/// What a Certabo board can do.
pub fn capabilities(_mode: PortMode) -> Capabilities {
    Capabilities {
        sensing: Sensing::Identity,
        reporting: Reporting::Frames {
            period_ms: virtual_board::FRAME_MS,
        },
        clock: ClockLink::None,
        leds: true,
        beep: false,
        bus: false,
    }
}

/// The Silicon Labs CP210x USB-UART bridge the boards use: thousands of other
/// products use it too, so a port on it is listened to before it is followed.
pub const CP210X: UsbMatch = UsbMatch {
    vendor: 0x10c4,
    product: Some(0xea60),
    shared: true,
};

/// The family record.
pub const FAMILY: Family = Family {
    name: "certabo",
    title: "Certabo",
    capabilities,
    codec: codec_for,
    driver: driver::driver,
    virtual_device: virtual_board::virtual_device,
    kept_settings,
    usb: &[CP210X],
    by_id_name: |_| false,
    recognise: Some(|bytes| lines::has_line_of(bytes, FIELDS)),
    // The board takes no command but LEDs: nothing asks it who it is (its
    // lines come unasked; `recognise` listens for them).
    identify: None,
};

fn codec_for(setup: &CodecSetup) -> Result<Box<dyn Codec>, SetupError> {
    let mut c = CertaboCodec::new();
    c.restore(&setup.settings)?;
    Ok(Box::new(c))
}

fn kept_settings(spec: &VirtualSpec) -> Settings {
    Settings::from([(
        calibration::KEY.to_string(),
        virtual_board::kept_calibration(spec).to_text(),
    )])
}

/// The lines of one Certabo port, as observations.
#[derive(Debug, Default)]
pub struct CertaboCodec {
    framer: LineFramer,
    calibration: Option<Calibration>,
    /// The last frames while not calibrated.
    recent: VecDeque<[Id; 64]>,
    stats: CodecStats,
    /// The host's LED commands.
    host: lines::LedCommands,
}

impl CertaboCodec {
    /// A codec that calibrates from the first start position it sees.
    pub fn new() -> CertaboCodec {
        CertaboCodec::default()
    }

    /// The calibration in use, once there is one.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    fn line(&mut self, numbers: Vec<u8>, out: &mut Vec<Observed>) {
        if numbers.len() != FIELDS {
            self.stats
                .error(LineError::FieldCount { got: numbers.len() });
            return;
        }
        self.stats.frames += 1;
        let mut ids = [[0u8; 5]; 64];
        for (slot, chunk) in ids.iter_mut().zip(numbers.chunks_exact(5)) {
            slot.copy_from_slice(chunk);
        }
        let board = BoardId::Single;
        if self.calibration.is_none() {
            self.recent.push_back(ids);
            while self.recent.len() > calibration::FRAMES_TO_CALIBRATE {
                self.recent.pop_front();
            }
            let frames: Vec<[Id; 64]> = self.recent.iter().copied().collect();
            match Calibration::from_start(&frames) {
                Some(c) => {
                    out.push(Observed {
                        board,
                        what: Observation::Setting {
                            key: calibration::KEY.to_string(),
                            value: c.to_text(),
                        },
                    });
                    self.calibration = Some(c);
                    self.recent.clear();
                }
                None => {
                    // Until the start position has been seen, ids mean
                    // nothing: the board is there, that is all.
                    out.push(Observed {
                        board,
                        what: Observation::Heard,
                    });
                    return;
                }
            }
        }
        let Some(cal) = self.calibration.as_ref() else {
            return;
        };
        let mut p = Picture::empty();
        for (index, id) in ids.iter().enumerate() {
            if let Some(piece) = cal.piece(id) {
                p.set(lines::square_of(index), Sensed::Piece(piece));
            }
        }
        out.push(Observed {
            board,
            what: Observation::Picture(p),
        });
    }
}

impl Codec for CertaboCodec {
    fn capabilities(&self) -> Capabilities {
        capabilities(PortMode::Single)
    }

    fn board_bytes(&mut self, _t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for numbers in self.framer.read(bytes, &mut self.stats) {
            self.line(numbers, out);
        }
    }

    fn host_bytes(&mut self, _t_ms: u64, bytes: &[u8], _out: &mut Vec<Observed>) {
        self.stats.host_frames += self.host.push(bytes) as u64;
    }

    fn tick(&mut self, _t_ms: u64, _out: &mut Vec<Observed>) {}

    fn stats(&self) -> &CodecStats {
        &self.stats
    }

    fn settings(&self) -> Settings {
        match &self.calibration {
            Some(c) => Settings::from([(calibration::KEY.to_string(), c.to_text())]),
            None => Settings::new(),
        }
    }

    fn restore(&mut self, settings: &Settings) -> Result<(), SetupError> {
        self.recent.clear();
        self.calibration = match settings.get(calibration::KEY) {
            None => None,
            Some(text) => Some(Calibration::parse(text).map_err(|problem| SetupError {
                family: "certabo",
                key: calibration::KEY.to_string(),
                problem: format!(
                    "{problem}; remove the setting to calibrate again from the start position"
                ),
            })?),
        };
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::VirtualDevice;
    use crate::hand::PhysicalBoard;
    use shakmaty::Board;

    #[test]
    fn the_first_start_position_calibrates_and_then_pieces_read() {
        let spec = VirtualSpec::default();
        let mut board = virtual_board::VirtualCertabo::new(
            &spec,
            &PhysicalBoard::from_board(&Board::default(), false),
        );
        board.advance(5_000);
        let mut c = CertaboCodec::new();
        let mut out = Vec::new();
        for (t, bytes) in board.take_output() {
            c.board_bytes(t, &bytes, &mut out);
        }
        assert_eq!(c.stats().decode_errors, 0);
        let settings: Vec<_> = out
            .iter()
            .filter_map(|o| match &o.what {
                Observation::Setting { key, value } => Some((key.clone(), value.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(settings.len(), 1, "calibrated once");
        let learned = Calibration::parse(&settings[0].1).unwrap();
        assert_eq!(
            learned.len(),
            32,
            "the start position's pieces (no spares on d3/d6)"
        );
        let last = out.iter().rev().find_map(|o| match &o.what {
            Observation::Picture(p) => Some(p.clone()),
            _ => None,
        });
        assert_eq!(last, Some(Picture::from_board(&Board::default())));
        // What it learned is what the board's set says those pieces are.
        let kept = virtual_board::kept_calibration(&spec);
        for (id, piece) in [learned.to_text()]
            .iter()
            .flat_map(|t| t.split(' '))
            .map(|e| {
                let (p, id) = e.split_once('=').unwrap();
                (id.to_string(), p.chars().next().unwrap())
            })
        {
            let id: Vec<u8> = id.split('.').map(|n| n.parse().unwrap()).collect();
            let id: Id = id.try_into().unwrap();
            assert_eq!(kept.piece(&id).map(|p| p.char()), Some(piece));
        }
    }

    #[test]
    fn a_bad_calibration_setting_is_refused_with_what_to_do() {
        let e = (FAMILY.codec)(&CodecSetup {
            mode: PortMode::Single,
            settings: Settings::from([("calibration".to_string(), "K=1.2".to_string())]),
        })
        .unwrap_err();
        assert!(e.to_string().contains("calibrate again"), "{e}");
    }
}
