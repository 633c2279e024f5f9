//! The DGT family's live side: what a host writes to a DGT port and when.
//!
//! Two [`Driver`]s, sans-IO and time-injected:
//!
//! - [`SingleDriver`]: one board. Sends the start-up sequence, asks a quiet
//!   board for its clock (UPDATE_NICE sends nothing while nobody moves and no
//!   clock runs, so silence alone proves nothing), declares it gone after
//!   `silence_ms` without a byte, and sends clock commands one at a time with
//!   their acks ([`ClockQueue`]).
//! - [`BusDriver`]: several boards on one line (dgt.md §3). Discovers the
//!   boards, asks each for a dump and its clock, then polls changes on every
//!   board each `poll_ms` and the clock each `probe_ms`, repeats a garbled
//!   answer, resynchronises lost changes with a dump, reports boards that
//!   stop or start answering, and looks for new boards every 15 s.
//!
//! Both decode the board's bytes themselves (only for what they wait for:
//! acks, bus replies); the session decodes the same bytes independently.

use std::collections::{BTreeMap, VecDeque};

use super::clock_queue::{ClockOutcome, ClockQueue, QueueFull};
use super::{
    BusCommand, BusCommandKind, BusMessage, BusReply, ClockCommand, Command, Decoder, Frame, Hms,
    Message, Mode,
};
use crate::clock::ClockSide;
use crate::family::{
    CommandRefused, Driver, DriverCommand, DriverEvent, DriverSetup, DriverTimings, Parity,
    PortMode, SerialSettings, Transport,
};

/// DGT boards talk 9600 baud, 8N1, no flow control (dgt.md §1.1).
pub const TRANSPORT: Transport = Transport::Serial(SerialSettings {
    baud: 9600,
    data_bits: 8,
    parity: Parity::None,
    stop_bits: 1,
});

/// Clock commands a board may have waiting behind the one in flight.
pub const CLOCK_QUEUE: usize = 4;

/// The bytes a host sends to bring a DGT board into a known state: reset,
/// serial number, version, a full dump, then UPDATE_NICE (field updates plus
/// clock times when they change), then one clock reading. The dump comes
/// before the update mode so that every field update refers to a known
/// picture.
pub fn startup() -> Vec<u8> {
    let mut out = Vec::new();
    for cmd in [
        Command::Reset,
        Command::ReturnSerialNumber,
        Command::SendVersion,
        Command::SendBoard,
        Command::SendUpdateNice,
        Command::SendClock,
    ] {
        cmd.encode(&mut out);
    }
    out
}

/// The driver for a port used in `setup.mode`.
pub fn driver(setup: &DriverSetup) -> Box<dyn Driver> {
    match setup.mode {
        PortMode::Single => Box::new(SingleDriver::new(setup.timings)),
        PortMode::Bus => Box::new(BusDriver::new(setup.timings)),
    }
}

/// Why a quiet board is declared gone, worded for an operator.
fn silent(ms: u64) -> String {
    format!(
        "sent nothing for {ms} ms although it was asked for its clock; the board is unplugged, \
         switched off or its cable is loose"
    )
}

/// The set-and-run command for a [`DriverCommand::SetClock`]: times clamped
/// to what the clock shows (9:59:59), `running` counts down (dgt.md §2.2:
/// 0x01 left, 0x02 right), 0x04 pauses.
pub fn set_and_run(left_ms: u64, right_ms: u64, running: ClockSide, run: bool) -> ClockCommand {
    let hms = |ms: u64| {
        let s = ms.min(35_999_000) / 1000;
        Hms {
            hours: (s / 3600) as u8,
            minutes: ((s / 60) % 60) as u8,
            seconds: (s % 60) as u8,
        }
    };
    let mut flags = match running {
        ClockSide::Left => 0x01,
        ClockSide::Right => 0x02,
    };
    if !run {
        flags |= 0x04;
    }
    ClockCommand::SetAndRun {
        left: hms(left_ms),
        right: hms(right_ms),
        flags,
    }
}

/// One DGT board on its own port.
#[derive(Debug)]
pub struct SingleDriver {
    timings: DriverTimings,
    out: VecDeque<Vec<u8>>,
    started: bool,
    last_rx: u64,
    last_probe: u64,
    failed: bool,
    decoder: Decoder,
    clock: ClockQueue<u64>,
    events: VecDeque<DriverEvent>,
}

impl SingleDriver {
    pub fn new(timings: DriverTimings) -> SingleDriver {
        SingleDriver {
            timings,
            out: VecDeque::new(),
            started: false,
            last_rx: 0,
            last_probe: 0,
            failed: false,
            decoder: Decoder::new(Mode::Single),
            clock: ClockQueue::new(CLOCK_QUEUE),
            events: VecDeque::new(),
        }
    }

    fn outcomes(&mut self) {
        while let Some((id, outcome)) = self.clock.take_outcome() {
            let outcome = match (outcome, outcome.failure()) {
                (ClockOutcome::Acked { attempts }, _) => Ok(attempts),
                (_, Some(reason)) => Err(reason.to_owned()),
                (_, None) => Ok(1),
            };
            self.events
                .push_back(DriverEvent::CommandDone { id, outcome });
        }
    }
}

impl Driver for SingleDriver {
    fn transport(&self) -> Transport {
        TRANSPORT
    }

    fn start(&mut self, now_ms: u64) {
        self.started = true;
        self.last_rx = now_ms;
        self.last_probe = now_ms;
        self.out.push_back(startup());
    }

    fn board_bytes(&mut self, now_ms: u64, bytes: &[u8]) {
        self.last_rx = now_ms;
        self.decoder.push(bytes);
        while let Some(r) = self.decoder.next() {
            if let Ok(Frame::Single(Message::ClockAck(ack))) = r {
                self.clock.on_ack(&ack);
            }
        }
        self.outcomes();
    }

    fn command(
        &mut self,
        _now_ms: u64,
        id: u64,
        command: DriverCommand,
    ) -> Result<(), CommandRefused> {
        let clock = match command {
            DriverCommand::SetClock {
                left_ms,
                right_ms,
                running,
                run,
            } => set_and_run(left_ms, right_ms, running, run),
            DriverCommand::Beep { ms } => ClockCommand::Beep {
                duration: (ms / 64).clamp(1, 255) as u8,
            },
            DriverCommand::Leds(_) => return Err(CommandRefused::Unsupported("LEDs")),
        };
        self.clock
            .push(id, clock)
            .map_err(|(_, QueueFull(n))| CommandRefused::QueueFull(n))
    }

    fn poll_transmit(&mut self, now_ms: u64) -> Option<Vec<u8>> {
        if !self.started || self.failed {
            return None;
        }
        if let Some(b) = self.out.pop_front() {
            return Some(b);
        }
        let quiet = now_ms.saturating_sub(self.last_rx);
        if quiet >= self.timings.silence_ms {
            self.failed = true;
            self.clock.link_lost();
            self.outcomes();
            self.events.push_back(DriverEvent::Failed(silent(quiet)));
            return None;
        }
        if quiet >= self.timings.probe_ms
            && now_ms.saturating_sub(self.last_probe) >= self.timings.probe_ms
        {
            self.last_probe = now_ms;
            let mut probe = Vec::new();
            Command::SendClock.encode(&mut probe);
            return Some(probe);
        }
        let bytes = self.clock.poll_transmit(now_ms);
        self.outcomes();
        bytes
    }

    fn poll_event(&mut self) -> Option<DriverEvent> {
        self.events.pop_front()
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.started || self.failed {
            return None;
        }
        if !self.out.is_empty() {
            return Some(0);
        }
        let probe =
            (self.last_rx + self.timings.probe_ms).max(self.last_probe + self.timings.probe_ms);
        let mut t = probe.min(self.last_rx + self.timings.silence_ms);
        if let Some(c) = self.clock.next_deadline() {
            t = t.min(c);
        }
        Some(t)
    }
}

/// How long a bus board may take to answer one command: a few ms normally, up
/// to 20 ms while it writes its EEPROM (dgt.md §3), plus the reply's own time on
/// the wire at 9600 baud (a 70-byte board dump takes 73 ms).
pub const BUS_REPLY_TIMEOUT_MS: u64 = 250;
/// Every board answers an address-0 ping within 1100 ms (dgt.md §3).
pub const BUS_PING_WINDOW_MS: u64 = 1_300;
/// How often a garbled or missing change report is asked for again before the
/// board's picture is resynchronised from a full dump.
const BUS_REPEATS: u32 = 3;
/// A bus board that misses this many polls in a row is reported absent.
const BUS_MISSES_OFFLINE: u32 = 5;
/// How often to look for boards added to the bus.
const BUS_REDISCOVER_MS: u64 = 15_000;

/// What came back while waiting for one reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heard {
    Reply,
    BadFrame,
    Nothing,
}

/// What a reply must be to answer a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Ping,
    Dump,
    Changes,
    Clock,
}

impl Want {
    fn accepts(self, r: &BusReply) -> bool {
        match self {
            Want::Ping => matches!(r, BusReply::Ping),
            Want::Dump => matches!(r, BusReply::BoardDump(_)),
            Want::Changes => matches!(r, BusReply::Changes(_)),
            Want::Clock => matches!(r, BusReply::Clock(_) | BusReply::ClockAck(_)),
        }
    }
}

/// A decision point of the bus schedule, taken once the steps before it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    /// Starts a discovery round (IGNORE_NEXT_PING to the known boards, then a
    /// ping to all).
    Discover { initial: bool },
    /// The ping window closed.
    AfterPing { initial: bool },
    /// The first polling round starts.
    Begin,
    /// A polling round starts.
    Round,
    /// A board's change report (or its repeat) was waited for.
    AfterChanges { address: u16, repeats: u32 },
    /// A board's answer this round is known: count misses, poll its clock.
    Account { address: u16 },
    /// Every board was polled.
    RoundEnd,
}

/// One step of the bus schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Write a command and wait for a reply of kind `want` from `address`.
    Ask {
        kind: BusCommandKind,
        address: u16,
        want: Want,
    },
    /// Write a bus command, or the switch to bus mode, without waiting.
    ToBus,
    /// Ping every board and listen for the whole window.
    PingAll,
    /// The board at `address` answers: report it and ask for a dump.
    Present {
        address: u16,
    },
    /// Nothing until then.
    SleepUntil(u64),
    Then(Then),
}

/// What the driver waits for now.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Reply {
        address: u16,
        want: Want,
        deadline: u64,
    },
    Pings {
        deadline: u64,
    },
}

/// Several DGT boards on one line, polled in turn.
#[derive(Debug)]
pub struct BusDriver {
    timings: DriverTimings,
    started: bool,
    failed: bool,
    decoder: Decoder,
    steps: VecDeque<Step>,
    wait: Option<Wait>,
    heard: Heard,
    last_rx: u64,
    /// Boards found so far (discovery order).
    known: Vec<u16>,
    /// Found by the discovery under way.
    found: Vec<u16>,
    /// New answers to the ping under way.
    new: Vec<u16>,
    /// Missed polls in a row, per board being polled.
    misses: BTreeMap<u16, u32>,
    last_clock: u64,
    last_discovery: u64,
    round_start: u64,
    clocks_due: bool,
    events: VecDeque<DriverEvent>,
}

impl BusDriver {
    pub fn new(timings: DriverTimings) -> BusDriver {
        BusDriver {
            timings,
            started: false,
            failed: false,
            decoder: Decoder::new(Mode::Bus),
            steps: VecDeque::new(),
            wait: None,
            heard: Heard::Nothing,
            last_rx: 0,
            known: Vec::new(),
            found: Vec::new(),
            new: Vec::new(),
            misses: BTreeMap::new(),
            last_clock: 0,
            last_discovery: 0,
            round_start: 0,
            clocks_due: false,
            events: VecDeque::new(),
        }
    }

    fn encode(kind: BusCommandKind, address: u16) -> Vec<u8> {
        let mut out = Vec::new();
        BusCommand { kind, address }.encode(&mut out);
        out
    }

    fn fail(&mut self, reason: String) {
        self.failed = true;
        self.steps.clear();
        self.wait = None;
        self.events.push_back(DriverEvent::Failed(reason));
    }

    /// Puts `steps` first, in order.
    fn first(&mut self, steps: impl IntoIterator<Item = Step>) {
        let steps: Vec<Step> = steps.into_iter().collect();
        for s in steps.into_iter().rev() {
            self.steps.push_front(s);
        }
    }

    fn decide(&mut self, now: u64, then: Then) {
        match then {
            Then::Discover { initial } => {
                let mut steps: Vec<Step> = self
                    .known
                    .iter()
                    .map(|&address| Step::Ask {
                        kind: BusCommandKind::IgnoreNextBusPing,
                        address,
                        want: Want::Ping,
                    })
                    .collect();
                steps.push(Step::PingAll);
                steps.push(Step::Then(Then::AfterPing { initial }));
                self.first(steps);
            }
            Then::AfterPing { initial } => {
                let new = std::mem::take(&mut self.new);
                if new.is_empty() {
                    let found = std::mem::take(&mut self.found);
                    if initial {
                        if found.is_empty() {
                            self.fail(
                                "no board answered on the bus; check that bus-mode boards are \
                                 connected and powered"
                                    .to_string(),
                            );
                            return;
                        }
                        let mut steps = Vec::new();
                        for &address in &found {
                            self.misses.insert(address, 0);
                            steps.push(Step::Present { address });
                            steps.push(Step::Ask {
                                kind: BusCommandKind::SendClock,
                                address,
                                want: Want::Clock,
                            });
                        }
                        steps.push(Step::Then(Then::Begin));
                        self.first(steps);
                    } else {
                        let mut steps = Vec::new();
                        for &address in &found {
                            self.misses.insert(address, 0);
                            steps.push(Step::Present { address });
                        }
                        steps.push(Step::SleepUntil(self.round_start + self.timings.poll_ms));
                        steps.push(Step::Then(Then::Round));
                        self.first(steps);
                    }
                } else {
                    for a in new {
                        self.known.push(a);
                        self.found.push(a);
                    }
                    self.first([Step::Then(Then::Discover { initial })]);
                }
            }
            Then::Begin => {
                self.last_clock = now;
                self.last_discovery = now;
                self.first([Step::Then(Then::Round)]);
            }
            Then::Round => {
                self.round_start = now;
                self.clocks_due = now.saturating_sub(self.last_clock) >= self.timings.probe_ms;
                let mut steps = Vec::new();
                for &address in self.misses.keys() {
                    steps.push(Step::Ask {
                        kind: BusCommandKind::SendChanges,
                        address,
                        want: Want::Changes,
                    });
                    steps.push(Step::Then(Then::AfterChanges {
                        address,
                        repeats: 0,
                    }));
                }
                steps.push(Step::Then(Then::RoundEnd));
                self.first(steps);
            }
            Then::AfterChanges { address, repeats } => {
                if self.heard == Heard::Reply {
                    self.decide(now, Then::Account { address });
                } else if repeats < BUS_REPEATS {
                    // A garbled answer lost changes the board will not send
                    // again: ask for the same packet once more (dgt.md §3).
                    self.first([
                        Step::Ask {
                            kind: BusCommandKind::RepeatChanges,
                            address,
                            want: Want::Changes,
                        },
                        Step::Then(Then::AfterChanges {
                            address,
                            repeats: repeats + 1,
                        }),
                    ]);
                } else {
                    // The changes are lost for good; a full dump puts the
                    // picture right again (and proves the board is there).
                    self.first([
                        Step::Ask {
                            kind: BusCommandKind::SendBoard,
                            address,
                            want: Want::Dump,
                        },
                        Step::Then(Then::Account { address }),
                    ]);
                }
            }
            Then::Account { address } => {
                let mut steps = Vec::new();
                let m = self.misses.entry(address).or_insert(0);
                if self.heard == Heard::Reply {
                    if *m >= BUS_MISSES_OFFLINE {
                        steps.push(Step::Present { address });
                    }
                    *m = 0;
                } else {
                    *m += 1;
                    if *m == BUS_MISSES_OFFLINE {
                        self.events.push_back(DriverEvent::BoardPresent {
                            address,
                            present: false,
                        });
                    }
                }
                if self.clocks_due {
                    steps.push(Step::Ask {
                        kind: BusCommandKind::SendClock,
                        address,
                        want: Want::Clock,
                    });
                }
                self.first(steps);
            }
            Then::RoundEnd => {
                if self.clocks_due {
                    self.last_clock = now;
                }
                let quiet = now.saturating_sub(self.last_rx);
                if self.misses.values().all(|&m| m >= BUS_MISSES_OFFLINE)
                    && quiet >= self.timings.silence_ms
                {
                    self.fail(silent(quiet));
                    return;
                }
                if now.saturating_sub(self.last_discovery) >= BUS_REDISCOVER_MS {
                    self.last_discovery = now;
                    self.first([Step::Then(Then::Discover { initial: false })]);
                } else {
                    self.first([
                        Step::SleepUntil(self.round_start + self.timings.poll_ms),
                        Step::Then(Then::Round),
                    ]);
                }
            }
        }
    }

    /// Whether the wait under way is over at `now`.
    fn wait_over(&self, now: u64) -> bool {
        match self.wait {
            None => true,
            Some(Wait::Reply { deadline, .. }) => self.heard == Heard::Reply || now >= deadline,
            Some(Wait::Pings { deadline }) => now >= deadline,
        }
    }

    fn seen(&mut self, m: &BusMessage) {
        match self.wait {
            Some(Wait::Reply { address, want, .. })
                if m.address == address && want.accepts(&m.reply) =>
            {
                self.heard = Heard::Reply;
            }
            Some(Wait::Pings { .. })
                if matches!(m.reply, BusReply::Ping)
                    && !self.known.contains(&m.address)
                    && !self.new.contains(&m.address) =>
            {
                self.new.push(m.address);
            }
            _ => {}
        }
    }
}

impl Driver for BusDriver {
    fn transport(&self) -> Transport {
        TRANSPORT
    }

    fn start(&mut self, now_ms: u64) {
        self.started = true;
        self.last_rx = now_ms;
        // A board left in single-board mode (by other software, or a host that
        // spoke to it alone) would swallow the first bus command as its switch
        // back (dgt.md §3); 0x4a switches every board to bus mode silently.
        self.steps.push_back(Step::ToBus);
        self.steps
            .push_back(Step::Then(Then::Discover { initial: true }));
    }

    fn board_bytes(&mut self, now_ms: u64, bytes: &[u8]) {
        self.last_rx = now_ms;
        self.decoder.push(bytes);
        while let Some(r) = self.decoder.next() {
            match r {
                Ok(Frame::Bus(m)) => self.seen(&m),
                Ok(Frame::Single(_)) => {}
                Err(_) => {
                    if self.heard != Heard::Reply {
                        self.heard = Heard::BadFrame;
                    }
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
        // The bus protocol carries no clock commands and DGT boards have no
        // LEDs.
        Err(CommandRefused::Unsupported(command.name()))
    }

    fn poll_transmit(&mut self, now_ms: u64) -> Option<Vec<u8>> {
        if !self.started || self.failed {
            return None;
        }
        loop {
            if !self.wait_over(now_ms) {
                return None;
            }
            self.wait = None;
            let step = self.steps.pop_front()?;
            match step {
                Step::ToBus => {
                    let mut out = Vec::new();
                    Command::ToBusMode.encode(&mut out);
                    return Some(out);
                }
                Step::Ask {
                    kind,
                    address,
                    want,
                } => {
                    self.heard = Heard::Nothing;
                    self.wait = Some(Wait::Reply {
                        address,
                        want,
                        deadline: now_ms + BUS_REPLY_TIMEOUT_MS,
                    });
                    return Some(Self::encode(kind, address));
                }
                Step::PingAll => {
                    self.heard = Heard::Nothing;
                    self.new.clear();
                    self.wait = Some(Wait::Pings {
                        deadline: now_ms + BUS_PING_WINDOW_MS,
                    });
                    return Some(Self::encode(BusCommandKind::Ping, 0));
                }
                Step::Present { address } => {
                    self.events.push_back(DriverEvent::BoardPresent {
                        address,
                        present: true,
                    });
                    self.first([Step::Ask {
                        kind: BusCommandKind::SendBoard,
                        address,
                        want: Want::Dump,
                    }]);
                }
                Step::SleepUntil(t) => {
                    if now_ms < t {
                        self.steps.push_front(Step::SleepUntil(t));
                        return None;
                    }
                }
                Step::Then(then) => {
                    self.decide(now_ms, then);
                    if self.failed {
                        return None;
                    }
                }
            }
        }
    }

    fn poll_event(&mut self) -> Option<DriverEvent> {
        self.events.pop_front()
    }

    fn next_deadline(&self) -> Option<u64> {
        if !self.started || self.failed {
            return None;
        }
        match self.wait {
            Some(Wait::Reply { deadline, .. }) if self.heard != Heard::Reply => Some(deadline),
            Some(Wait::Pings { deadline }) => Some(deadline),
            _ => match self.steps.front() {
                Some(Step::SleepUntil(t)) => Some(*t),
                Some(_) => Some(0),
                None => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings() -> DriverTimings {
        DriverTimings {
            probe_ms: 200,
            silence_ms: 700,
            poll_ms: 100,
        }
    }

    #[test]
    fn startup_is_reset_serial_version_dump_nice_clock() {
        assert_eq!(startup(), vec![0x40, 0x45, 0x4d, 0x42, 0x4b, 0x41]);
    }

    #[test]
    fn a_quiet_single_board_is_probed_then_declared_gone() {
        let mut d = SingleDriver::new(timings());
        d.start(0);
        assert_eq!(d.poll_transmit(0), Some(startup()));
        assert_eq!(d.poll_transmit(0), None);
        assert_eq!(d.next_deadline(), Some(200));
        assert_eq!(d.poll_transmit(200), Some(vec![0x41]));
        d.board_bytes(300, &[]);
        assert_eq!(d.poll_transmit(450), None);
        assert_eq!(d.poll_transmit(500), Some(vec![0x41]));
        assert_eq!(d.poll_transmit(1_000), None);
        match d.poll_event() {
            Some(DriverEvent::Failed(r)) => assert!(r.contains("sent nothing for 700 ms"), "{r}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(d.next_deadline(), None);
    }

    #[test]
    fn bus_with_no_board_fails_after_the_ping_window() {
        let mut d = BusDriver::new(timings());
        d.start(0);
        assert_eq!(d.poll_transmit(0), Some(vec![0x4a]));
        let ping = d.poll_transmit(0).unwrap();
        assert_eq!(ping[0], BusCommandKind::Ping as u8);
        assert_eq!(d.next_deadline(), Some(BUS_PING_WINDOW_MS));
        assert_eq!(d.poll_transmit(BUS_PING_WINDOW_MS), None);
        match d.poll_event() {
            Some(DriverEvent::Failed(r)) => assert!(r.contains("no board answered"), "{r}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_bus_driver_refuses_clock_commands() {
        let mut d = BusDriver::new(timings());
        let cmd = DriverCommand::SetClock {
            left_ms: 1,
            right_ms: 1,
            running: ClockSide::Left,
            run: true,
        };
        assert_eq!(
            d.command(0, 1, cmd),
            Err(CommandRefused::Unsupported("set clock"))
        );
    }
}
