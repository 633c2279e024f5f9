//! The live side of a port in the Certabo dialect (Certabo boards, and
//! occupancy boards that speak the same lines).
//!
//! The board sends its squares unasked, about once a second, and takes no
//! command but LEDs: so the driver only switches the LEDs off at start, sends
//! LED commands (the newest only, at most one every 750 ms: the official
//! reader spaces them so, and the boards are reported to drop LED writes that
//! come faster), and declares the board gone after `silence_ms` without a line.

use crate::family::{
    CommandRefused, Driver, DriverCommand, DriverEvent, DriverSetup, DriverTimings, Liveness,
    Parity, SerialSettings, Transport,
};

use super::lines::led_bytes;

/// 38400 baud, 8N1 (other_boards.md §2.1).
pub const TRANSPORT: Transport = Transport::Serial(SerialSettings {
    baud: 38_400,
    data_bits: 8,
    parity: Parity::None,
    stop_bits: 1,
});

/// Shortest gap between two LED commands.
pub const LED_GAP_MS: u64 = 750;

/// The driver.
pub fn driver(setup: &DriverSetup) -> Box<dyn Driver> {
    Box::new(LineDriver::new(setup.timings))
}

/// A board that pushes lines and takes LED commands.
#[derive(Debug)]
pub struct LineDriver {
    link: Liveness,
    leds: Option<[u8; 8]>,
    last_led: Option<u64>,
    events: Vec<DriverEvent>,
}

impl LineDriver {
    pub fn new(timings: DriverTimings) -> LineDriver {
        LineDriver {
            link: Liveness::new(timings),
            leds: None,
            last_led: None,
            events: Vec::new(),
        }
    }
}

impl Driver for LineDriver {
    fn transport(&self) -> Transport {
        TRANSPORT
    }

    fn start(&mut self, now_ms: u64) {
        self.link.start(now_ms);
        // Whatever an earlier host left lit goes off.
        self.leds = Some([0; 8]);
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
                self.leds = Some(led_bytes(squares));
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
            self.events.push(DriverEvent::Failed(format!(
                "sent nothing for {quiet} ms, although the board sends its squares unasked every \
                 second; the board is unplugged, switched off or its cable is loose"
            )));
            return None;
        }
        if self.leds.is_some() && self.last_led.is_none_or(|t| now_ms >= t + LED_GAP_MS) {
            self.last_led = Some(now_ms);
            return self.leds.take().map(|b| b.to_vec());
        }
        None
    }

    fn poll_event(&mut self) -> Option<DriverEvent> {
        if self.events.is_empty() {
            None
        } else {
            Some(self.events.remove(0))
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.link.running() {
            return None;
        }
        let silence = self.link.silence_at();
        match (self.leds, self.last_led) {
            (Some(_), Some(t)) => Some((t + LED_GAP_MS).min(silence)),
            (Some(_), None) => Some(0),
            (None, _) => Some(silence),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Bitboard, Square};

    #[test]
    fn leds_are_spaced_and_only_the_newest_is_sent() {
        let mut d = LineDriver::new(DriverTimings::default());
        d.start(0);
        assert_eq!(d.poll_transmit(0), Some(vec![0; 8]), "all off at start");
        d.command(10, 1, DriverCommand::Leds(Bitboard::from(Square::A1)))
            .unwrap();
        d.command(20, 2, DriverCommand::Leds(Bitboard::from(Square::H8)))
            .unwrap();
        assert_eq!(d.poll_transmit(700), None);
        assert_eq!(d.next_deadline(), Some(750));
        assert_eq!(d.poll_transmit(750), Some(vec![0x80, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(d.poll_transmit(2_000), None);
        d.board_bytes(2_000, b":");
        assert_eq!(d.poll_transmit(7_999), None);
        assert_eq!(d.poll_transmit(8_000), None);
        assert!(matches!(d.poll_event(), Some(DriverEvent::Failed(_))));
    }
}
