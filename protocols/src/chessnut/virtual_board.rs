//! A faithful virtual Chessnut board: silent until the host asks for
//! real-time mode, then a position report every 200 ms whether anything
//! changed or not; an acknowledgement after the mode command and after every
//! LED command; 64 LEDs; a beeper; the battery on request. Reports are what
//! a hidraw node returns: 65 bytes, the message and zero padding.

use shakmaty::Bitboard;

use super::wire::{self, BoardMessage, Framer, HostCommand};
use crate::family::{VirtualDevice, VirtualSpec};
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::sensors::{LineOut, Sensors};

/// USB full speed: a report takes well under a millisecond; counted as one.
const REPORT_BAUD: u32 = 650_000;

/// One virtual Chessnut board.
#[derive(Clone, Debug)]
pub struct VirtualChessnut {
    sensors: Sensors,
    realtime: bool,
    next_frame: u64,
    frame_ms: u64,
    leds: Bitboard,
    beeps: Vec<(u64, u16)>,
    host: Framer,
    out: LineOut,
    host_errors: usize,
}

impl VirtualChessnut {
    /// A board switched on at time 0 with `pieces` on it.
    pub fn new(spec: &VirtualSpec, pieces: PhysicalBoard) -> VirtualChessnut {
        VirtualChessnut {
            sensors: Sensors::new(pieces, spec.noise, spec.seed),
            realtime: false,
            next_frame: u64::MAX,
            frame_ms: spec.frame_ms.unwrap_or(super::FRAME_MS).max(1),
            leds: Bitboard::EMPTY,
            beeps: Vec::new(),
            host: Framer::host(),
            out: LineOut::default(),
            host_errors: 0,
        }
    }

    /// Beeps heard: when, and how long.
    pub fn beeps(&self) -> &[(u64, u16)] {
        &self.beeps
    }

    fn send(&mut self, t: u64, m: &BoardMessage) {
        let bytes = match m {
            BoardMessage::Position(p) => wire::position_report(p),
            BoardMessage::Ack(ok) => wire::report(wire::ACK, &[u8::from(!ok)]),
            BoardMessage::Battery(p) => wire::report(wire::BATTERY, &[*p, 0]),
            BoardMessage::Other { kind, payload } => wire::report(*kind, payload),
        };
        self.out.send(t, bytes, REPORT_BAUD);
    }

    fn handle(&mut self, t: u64, c: HostCommand) {
        match c {
            HostCommand::Mode(m) => {
                self.realtime = m == 0;
                self.next_frame = if self.realtime { t + 1 } else { u64::MAX };
                self.send(t + 1, &BoardMessage::Ack(true));
            }
            HostCommand::Leds(squares) => {
                self.leds = squares;
                self.send(t + 1, &BoardMessage::Ack(true));
            }
            HostCommand::Beep { ms, .. } => self.beeps.push((t, ms)),
            HostCommand::Other { kind: 0x29, .. } => self.send(t + 1, &BoardMessage::Battery(100)),
            HostCommand::Other { .. } => {}
        }
    }
}

impl VirtualDevice for VirtualChessnut {
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
        self.host.push(bytes);
        while let Some(r) = self.host.next() {
            match r {
                Ok((k, p)) => {
                    let c = wire::parse_host(k, &p);
                    self.handle(t_ms, c);
                }
                Err(_) => self.host_errors += 1,
            }
        }
    }

    fn advance(&mut self, t_ms: u64) {
        while self.next_frame <= t_ms {
            let t = self.next_frame;
            self.next_frame = t + self.frame_ms;
            let p = self.sensors.scan();
            self.send(t, &BoardMessage::Position(p));
        }
    }

    fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.out.take()
    }

    fn next_event_at(&self) -> u64 {
        self.next_frame
    }

    fn leds(&self, _board: usize) -> Option<Bitboard> {
        Some(self.leds)
    }

    fn describe(&self) -> String {
        "virtual Chessnut board".to_string()
    }
}

/// One virtual Chessnut board (no shared line).
pub fn virtual_device(spec: &VirtualSpec, pieces: Vec<PhysicalBoard>) -> Box<dyn VirtualDevice> {
    let p = pieces.into_iter().next().unwrap_or_default();
    Box::new(VirtualChessnut::new(spec, p))
}
