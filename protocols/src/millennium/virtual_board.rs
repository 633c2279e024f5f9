//! A faithful virtual ChessLink board: its sensor matrix scanned every scan
//! time, the E2ROM options that say when it reports (every scan, never, at a
//! period, on change, on change after 2-5 equal scans), its replies, its 81
//! LEDs, and reset. Time-injected and seeded like every virtual board.

use shakmaty::Bitboard;

use super::wire::{self, Command, Framer, Reply};
use crate::family::{VirtualDevice, VirtualSpec};
use crate::hand::{PhysicalAction, PhysicalBoard, PhysicalError};
use crate::picture::Picture;
use crate::sensors::{LineOut, Sensors};

const BAUD: u32 = 38_400;
/// A reset board scans again after this long.
const RESET_MS: u64 = 3_000;

/// One virtual ChessLink board.
#[derive(Clone, Debug)]
pub struct VirtualChessLink {
    sensors: Sensors,
    /// E2ROM option bytes 0..=7.
    e2rom: [u8; 8],
    version: (u8, u8),
    leds: [u8; 81],
    host: Framer,
    out: LineOut,
    now: u64,
    next_scan: u64,
    /// The last status reported (or asked for).
    reported: Option<Picture>,
    /// What the last scans read, and for how many scans in a row.
    candidate: Option<(Picture, u32)>,
    last_scan: Picture,
    next_periodic: u64,
    host_errors: usize,
}

impl VirtualChessLink {
    /// A board switched on at time 0 with `pieces` on it, options at their
    /// defaults (reports every scan, 40.96 ms scans).
    pub fn new(spec: &VirtualSpec, pieces: PhysicalBoard) -> VirtualChessLink {
        VirtualChessLink {
            sensors: Sensors::new(pieces, spec.noise, spec.seed),
            e2rom: [0, 20, 0, 0x40, 15, 0, 0, 0],
            version: (1, 3),
            leds: [0; 81],
            host: Framer::commands(),
            out: LineOut::default(),
            now: 0,
            next_scan: 0,
            reported: None,
            candidate: None,
            last_scan: Picture::empty(),
            next_periodic: 0,
            host_errors: 0,
        }
    }

    /// Scan period: E2ROM 01 × 2.048 ms (values under 15 mean 20).
    fn scan_ms(&self) -> u64 {
        let units = if self.e2rom[1] < 15 {
            20
        } else {
            self.e2rom[1]
        };
        (u64::from(units) * 2048).div_ceil(1000)
    }

    /// Host commands it could not read (bad checksums, garbage).
    pub fn host_errors(&self) -> usize {
        self.host_errors
    }

    /// The LEDs' patterns.
    pub fn led_patterns(&self) -> &[u8; 81] {
        &self.leds
    }

    fn report(&mut self, t: u64, p: Picture) {
        self.reported = Some(p.clone());
        self.out.send(t, Reply::Status(p).encode(), BAUD);
    }

    fn scan(&mut self, t: u64) {
        self.next_scan = t + self.scan_ms();
        let p = self.sensors.scan();
        self.last_scan = p.clone();
        let mode = self.e2rom[2] & 7;
        match mode {
            0 => self.report(t, p),
            1 => {}
            2 => {
                if t >= self.next_periodic {
                    let period = (u64::from(self.e2rom[3].max(1)) * 4096).div_ceil(1000);
                    self.next_periodic = t + period;
                    self.report(t, p);
                }
            }
            _ => {
                // On change; modes 4..7 need 2..5 equal scans first.
                let need = if mode == 3 { 1 } else { u32::from(mode) - 2 };
                let seen = match self.candidate.take() {
                    Some((c, n)) if c == p => n + 1,
                    _ => 1,
                };
                self.candidate = Some((p.clone(), seen));
                if seen >= need && self.reported.as_ref() != Some(&p) {
                    self.report(t, p);
                }
            }
        }
    }

    fn handle(&mut self, t: u64, c: Command) {
        let reply_at = t + 1;
        match c {
            Command::Status => {
                let p = self.last_scan.clone();
                self.report(reply_at, p);
            }
            Command::Version => {
                let (major, minor) = self.version;
                self.out
                    .send(reply_at, Reply::Version { major, minor }.encode(), BAUD);
            }
            Command::LedsOff => {
                self.leds = [0; 81];
                self.out.send(reply_at, Reply::LedsOff.encode(), BAUD);
            }
            Command::Leds { patterns, .. } => {
                self.leds = patterns;
                self.out.send(reply_at, Reply::LedsSet.encode(), BAUD);
            }
            Command::Write { addr, value } => {
                if let Some(b) = self.e2rom.get_mut(usize::from(addr)) {
                    *b = value;
                }
                self.candidate = None;
                self.out
                    .send(reply_at, Reply::Written { addr, value }.encode(), BAUD);
            }
            Command::Read { addr } => {
                let value = self.e2rom.get(usize::from(addr)).copied().unwrap_or(0);
                self.out
                    .send(reply_at, Reply::Read { addr, value }.encode(), BAUD);
            }
            Command::Reset => {
                self.leds = [0; 81];
                self.reported = None;
                self.candidate = None;
                self.out.clear();
                self.next_scan = t + RESET_MS;
            }
        }
    }
}

impl VirtualDevice for VirtualChessLink {
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
            // The board acts only on messages whose checksum is right.
            match r.and_then(|chars| wire::parse_command(&chars)) {
                Ok(c) => self.handle(t_ms, c),
                Err(_) => self.host_errors += 1,
            }
        }
    }

    fn advance(&mut self, t_ms: u64) {
        while self.next_scan <= t_ms {
            let t = self.next_scan;
            self.now = self.now.max(t);
            self.scan(t);
        }
        self.now = self.now.max(t_ms);
    }

    fn take_output(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.out.take()
    }

    fn next_event_at(&self) -> u64 {
        self.next_scan
    }

    fn leds(&self, _board: usize) -> Option<Bitboard> {
        Some(wire::lit_squares(&self.leds))
    }

    fn describe(&self) -> String {
        "virtual Millennium ChessLink board".to_string()
    }
}

/// One virtual ChessLink board (the protocol has no shared line: boards
/// beyond the first are not built).
pub fn virtual_device(spec: &VirtualSpec, pieces: Vec<PhysicalBoard>) -> Box<dyn VirtualDevice> {
    let p = pieces.into_iter().next().unwrap_or_default();
    Box::new(VirtualChessLink::new(spec, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hand::PhysicalAction;
    use shakmaty::{Board, Color, Piece, Role, Square};

    fn statuses(out: &[(u64, Vec<u8>)]) -> Vec<(u64, Picture)> {
        let mut f = Framer::replies();
        let mut v = Vec::new();
        for (t, b) in out {
            f.push(b);
            while let Some(Ok(chars)) = f.next() {
                if let Ok(Reply::Status(p)) = wire::parse_reply(&chars) {
                    v.push((*t, p));
                }
            }
        }
        v
    }

    #[test]
    fn on_change_with_debounce_reports_each_still_position_once() {
        let mut b = VirtualChessLink::new(
            &VirtualSpec::default(),
            PhysicalBoard::from_board(&Board::default(), false),
        );
        b.receive_host(0, &Command::Write { addr: 2, value: 4 }.encode());
        b.advance(500);
        let pawn = Piece {
            color: Color::White,
            role: Role::Pawn,
        };
        b.apply(
            0,
            1_000,
            PhysicalAction::Lift {
                square: Square::E2,
                piece: pawn,
            },
        )
        .unwrap();
        // Put down within one scan: never stable for two scans.
        b.apply(
            0,
            1_010,
            PhysicalAction::Place {
                square: Square::E4,
                piece: pawn,
            },
        )
        .unwrap();
        b.advance(2_000);
        let s = statuses(&b.take_output());
        assert_eq!(s.len(), 2, "the start position, then e4: {s:?}");
        assert_eq!(s[0].1, Picture::from_board(&Board::default()));
        assert_eq!(s[1].1.get(Square::E4), crate::picture::Sensed::Piece(pawn));
    }
}
