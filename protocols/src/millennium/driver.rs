//! The live side of a ChessLink port.
//!
//! At start: the version (`V`), reports on every change with a two-scan
//! debounce (`W02` = 04), the default scan time (`W01` = 20, 40.96 ms), LEDs
//! off (`X`), then one status (`S`). One command at a time, each waiting for
//! its reply letter (replies are matched by letter: a status report may come
//! between a command and its answer) or 500 ms (Performance boards are
//! reported not to answer LED and option writes). A board that says nothing
//! for `probe_ms` is asked for its status; one silent for `silence_ms` is
//! declared gone. LED commands replace one not yet sent.

use std::collections::VecDeque;

use super::wire::{self, Command, Framer};
use crate::family::{
    CommandRefused, Driver, DriverCommand, DriverEvent, DriverSetup, DriverTimings, Liveness,
    Transport,
};

/// How long a command waits for its reply before the next goes out.
pub const REPLY_WAIT_MS: u64 = 500;
/// Automatic reports on every change with a two-scan debounce (E2ROM 02 = 4).
pub const REPORT_MODE: u8 = 4;
/// Scan time in 2.048 ms units (E2ROM 01): the board's default.
pub const SCAN_TIME: u8 = 20;
/// LED blink slot time, 4.096 ms units (the pattern is steady: any value).
const LED_SLOT: u8 = 0x20;

/// The driver.
pub fn driver(setup: &DriverSetup) -> Box<dyn Driver> {
    Box::new(ChessLinkDriver::new(setup.timings))
}

/// One ChessLink board.
#[derive(Debug)]
pub struct ChessLinkDriver {
    link: Liveness,
    queue: VecDeque<Command>,
    /// A newer LED command waits here until nothing is in flight.
    leds: Option<Command>,
    in_flight: Option<(u8, u64)>,
    framer: Framer,
    events: VecDeque<DriverEvent>,
}

impl ChessLinkDriver {
    pub fn new(timings: DriverTimings) -> ChessLinkDriver {
        ChessLinkDriver {
            link: Liveness::new(timings),
            queue: VecDeque::new(),
            leds: None,
            in_flight: None,
            framer: Framer::replies(),
            events: VecDeque::new(),
        }
    }

    fn send(&mut self, now: u64, c: Command) -> Vec<u8> {
        if let Some(letter) = c.reply_letter() {
            self.in_flight = Some((letter, now));
        }
        c.encode()
    }
}

impl Driver for ChessLinkDriver {
    fn transport(&self) -> Transport {
        super::TRANSPORT
    }

    fn start(&mut self, now_ms: u64) {
        self.link.start(now_ms);
        self.queue.extend([
            Command::Version,
            Command::Write {
                addr: 2,
                value: REPORT_MODE,
            },
            Command::Write {
                addr: 1,
                value: SCAN_TIME,
            },
            Command::LedsOff,
            Command::Status,
        ]);
    }

    fn board_bytes(&mut self, now_ms: u64, bytes: &[u8]) {
        self.link.heard(now_ms);
        self.framer.push(bytes);
        while let Some(r) = self.framer.next() {
            if let (Ok(chars), Some((letter, _))) = (r, self.in_flight) {
                if chars.first() == Some(&letter) {
                    self.in_flight = None;
                }
            }
        }
    }

    fn command(
        &mut self,
        _now_ms: u64,
        _id: u64,
        command: DriverCommand,
    ) -> Result<(), CommandRefused> {
        match command {
            DriverCommand::Leds(squares) => {
                self.leds = Some(if squares.is_empty() {
                    Command::LedsOff
                } else {
                    Command::Leds {
                        slot: LED_SLOT,
                        patterns: wire::led_patterns(squares),
                    }
                });
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
                "sent nothing for {quiet} ms although it was asked for its status; the board is \
                 unplugged, switched off or its cable is loose"
            )));
            return None;
        }
        if let Some((_, sent)) = self.in_flight {
            if now_ms < sent + REPLY_WAIT_MS {
                return None;
            }
            self.in_flight = None;
        }
        if let Some(c) = self.queue.pop_front() {
            return Some(self.send(now_ms, c));
        }
        if let Some(c) = self.leds.take() {
            return Some(self.send(now_ms, c));
        }
        if self.link.probe_due(now_ms) {
            return Some(self.send(now_ms, Command::Status));
        }
        None
    }

    fn poll_event(&mut self) -> Option<DriverEvent> {
        self.events.pop_front()
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.link.running() {
            return None;
        }
        let silence = self.link.silence_at();
        if let Some((_, sent)) = self.in_flight {
            return Some((sent + REPLY_WAIT_MS).min(silence));
        }
        if !self.queue.is_empty() || self.leds.is_some() {
            return Some(0);
        }
        Some(self.link.probe_at().min(silence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Bitboard, Square};

    #[test]
    fn start_up_waits_for_each_reply_by_letter() {
        let mut d = ChessLinkDriver::new(DriverTimings::default());
        d.start(0);
        assert_eq!(d.poll_transmit(0), Some(Command::Version.encode()));
        assert_eq!(d.poll_transmit(10), None, "waiting for v");
        // A status report in between answers nothing.
        d.board_bytes(
            20,
            &wire::Reply::Status(crate::picture::Picture::empty()).encode(),
        );
        assert_eq!(d.poll_transmit(20), None);
        d.board_bytes(30, &wire::Reply::Version { major: 1, minor: 3 }.encode());
        assert_eq!(
            d.poll_transmit(30),
            Some(Command::Write { addr: 2, value: 4 }.encode())
        );
        // No answer (a Performance board): the next goes out after 500 ms.
        assert_eq!(d.poll_transmit(529), None);
        assert_eq!(
            d.poll_transmit(530),
            Some(Command::Write { addr: 1, value: 20 }.encode())
        );
    }

    #[test]
    fn leds_replace_one_not_yet_sent_and_clocks_are_refused() {
        let mut d = ChessLinkDriver::new(DriverTimings::default());
        d.start(0);
        let e2 = Bitboard::from(Square::E2);
        d.command(0, 1, DriverCommand::Leds(e2)).unwrap();
        d.command(0, 2, DriverCommand::Leds(Bitboard::EMPTY))
            .unwrap();
        assert!(matches!(
            d.command(0, 3, DriverCommand::Beep { ms: 100 }),
            Err(CommandRefused::Unsupported(_))
        ));
        let mut sent = Vec::new();
        let mut t = 0;
        while t < 5_000 {
            if let Some(b) = d.poll_transmit(t) {
                sent.push(b);
            }
            t += 100;
        }
        let leds: Vec<&Vec<u8>> = sent
            .iter()
            .filter(|b| matches!(b[0] & 0x7f, b'L' | b'X'))
            .collect();
        assert_eq!(leds.len(), 2, "the start-up's X, then only the newest: X");
        assert_eq!(*leds[1], Command::LedsOff.encode());
    }
}
