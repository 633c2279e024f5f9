//! The live side of a Chessnut board.
//!
//! At start: real-time mode (`21 01 00`: mandatory after every connection, no
//! positions otherwise) and LEDs off. Writes are spaced at least 200 ms, as
//! the official SDK spaces them; LED commands replace one not yet sent. A
//! board quiet for `probe_ms` is asked for real-time mode again (harmless,
//! and what brings back a board that reset); one quiet for `silence_ms` is
//! declared gone. Beeps are 1 kHz.

use std::collections::VecDeque;

use super::wire::{HostCommand, REALTIME};
use crate::family::{
    CommandRefused, Driver, DriverCommand, DriverEvent, DriverSetup, DriverTimings, Liveness,
    Transport,
};

/// Shortest gap between two writes.
pub const WRITE_GAP_MS: u64 = 200;

/// The driver.
pub fn driver(setup: &DriverSetup) -> Box<dyn Driver> {
    Box::new(ChessnutDriver::new(setup.timings))
}

/// One Chessnut board.
#[derive(Debug)]
pub struct ChessnutDriver {
    link: Liveness,
    queue: VecDeque<Vec<u8>>,
    leds: Option<Vec<u8>>,
    last_write: Option<u64>,
    events: VecDeque<DriverEvent>,
}

impl ChessnutDriver {
    pub fn new(timings: DriverTimings) -> ChessnutDriver {
        ChessnutDriver {
            link: Liveness::new(timings),
            queue: VecDeque::new(),
            leds: None,
            last_write: None,
            events: VecDeque::new(),
        }
    }

    fn may_write(&self, now: u64) -> bool {
        self.last_write.is_none_or(|t| now >= t + WRITE_GAP_MS)
    }
}

impl Driver for ChessnutDriver {
    fn transport(&self) -> Transport {
        super::TRANSPORT
    }

    fn start(&mut self, now_ms: u64) {
        self.link.start(now_ms);
        self.queue.push_back(REALTIME.to_vec());
        self.leds = Some(HostCommand::Leds(shakmaty::Bitboard::EMPTY).encode());
    }

    fn board_bytes(&mut self, now_ms: u64, _bytes: &[u8]) {
        self.link.heard(now_ms);
    }

    fn command(
        &mut self,
        _now_ms: u64,
        _id: u64,
        command: DriverCommand,
    ) -> Result<(), CommandRefused> {
        match command {
            DriverCommand::Leds(squares) => {
                self.leds = Some(HostCommand::Leds(squares).encode());
                Ok(())
            }
            DriverCommand::Beep { ms } => {
                self.queue.push_back(
                    HostCommand::Beep {
                        hz: 1_000,
                        ms: ms.min(u64::from(u16::MAX)) as u16,
                    }
                    .encode(),
                );
                Ok(())
            }
            other => Err(CommandRefused::Unsupported(other.name())),
        }
    }

    fn poll_transmit(&mut self, now_ms: u64) -> Option<Vec<u8>> {
        if !self.link.running() {
            return None;
        }
        if let Some(quiet) = self.link.silent(now_ms) {
            self.events.push_back(DriverEvent::Failed(format!(
                "sent nothing for {quiet} ms although it was asked for its position; the board \
                 is unplugged, switched off or its cable is loose"
            )));
            return None;
        }
        if !self.queue.contains(&REALTIME.to_vec()) && self.link.probe_due(now_ms) {
            self.queue.push_back(REALTIME.to_vec());
        }
        if !self.may_write(now_ms) {
            return None;
        }
        let bytes = self.queue.pop_front().or_else(|| self.leds.take())?;
        self.last_write = Some(now_ms);
        Some(bytes)
    }

    fn poll_event(&mut self) -> Option<DriverEvent> {
        self.events.pop_front()
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.link.running() {
            return None;
        }
        let mut t = self.link.silence_at().min(self.link.probe_at());
        if !self.queue.is_empty() || self.leds.is_some() {
            t = t.min(self.last_write.map_or(0, |w| w + WRITE_GAP_MS));
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_then_leds_two_hundred_ms_apart() {
        let mut d = ChessnutDriver::new(DriverTimings::default());
        d.start(0);
        assert_eq!(d.poll_transmit(0), Some(REALTIME.to_vec()));
        assert_eq!(d.poll_transmit(100), None);
        assert_eq!(d.next_deadline(), Some(200));
        assert_eq!(
            d.poll_transmit(200),
            Some(vec![0x0a, 0x08, 0, 0, 0, 0, 0, 0, 0, 0])
        );
        d.command(250, 1, DriverCommand::Beep { ms: 100 }).unwrap();
        assert_eq!(d.poll_transmit(300), None);
        assert_eq!(
            d.poll_transmit(400),
            Some(vec![0x0b, 0x04, 0x03, 0xe8, 0x00, 0x64])
        );
    }
}
