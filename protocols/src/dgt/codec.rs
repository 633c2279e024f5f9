//! The DGT family's [`Codec`]: the bytes of one port, both ways, turned into
//! protocol-neutral observations.
//!
//! Board → host bytes go through the [`Decoder`]; host → board bytes are parsed
//! only to follow the port's mode: `0x4a` or any bus command puts the boards in
//! bus mode, any other single-board command takes them out of it (dgt.md §3),
//! and the decoder must know which, because bus reply ids overlap single-board
//! ids.
//!
//! A board dump is a [`Observation::Picture`], a field update a
//! [`Observation::Square`]; a bus board's change report gives one square
//! change per field record, in the board's order, and its history since the
//! start tag ([`BusReply::FromStart`]) one [`Observation::Squares`] (the board
//! as it is now, not every step back to the start, which would look like a
//! takeback).
//!
//! Bus clock records become presses, held until the board has scanned after
//! them (see [`DgtCodec::ee_press`]): that is DGT timing knowledge, so it lives
//! here, not in the neutral session.

use std::any::Any;
use std::collections::BTreeMap;

use super::{
    BusCommand, BusCommandKind, BusMessage, BusReply, BwTime, Command, Decoder, EeRecord, Frame,
    HostDecoder, HostFrame, Message, Mode, BUFFER_CAP, HOST_BUFFER_CAP,
};
use crate::clock::{ClockReading, ClockSide};
use crate::family::{
    BoardFact, BoardId, Capabilities, ClockLink, Codec, CodecStats, CommandAck, Observation,
    Observed, PortMode, Reporting, Sensing,
};

/// Counters only DGT traffic has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DgtStats {
    /// All-zero BWTIME readings ignored (dgt.md §1.6).
    pub blank_clock_readings: u64,
    /// BWTIME readings saying "no clock".
    pub no_clock_readings: u64,
    /// EEPROM records that carry no picture and no press (EE_MOVES history,
    /// tags, clock records that tell nothing new), not used for tracking.
    pub ee_records_unused: u64,
    /// Bus clock records turned into presses, in their place among the field
    /// changes.
    pub ee_presses: u64,
    /// Times the port's mode was switched by a host command.
    pub mode_switches: u64,
}

/// A bus press waiting for the board's next scan.
#[derive(Clone, Copy, Debug)]
struct HeldPress {
    reading: ClockReading,
    since: u64,
    /// A change report was read after the one holding the record.
    report_after: bool,
    /// Seen first by a clock poll, not yet by the board's clock record: the
    /// record, in its place among the squares, is what says when it happened.
    from_poll: bool,
    /// A field record came after the clock record: the scan after the press
    /// is being read, and the next scan begins after it.
    scan_after: bool,
}

/// A held bus press is given anyway after this long without a change report
/// (the board stopped answering polls): later is better than never.
const HELD_PRESS_MAX_MS: u64 = 1_000;

/// A bus board's reading is paused this long at most: past it, a board that
/// still sent no report is not answering, and its silence is read as usual.
const PAUSE_MAX_MS: u64 = 5_000;

/// What the codec remembers of one board.
#[derive(Clone, Debug, Default)]
struct BoardClock {
    /// The last clock reading given (bus mode builds presses from the board's
    /// clock records on top of it).
    reading: Option<ClockReading>,
    held_press: Option<HeldPress>,
    /// Bus mode: since when the host polls nobody (it listens for new boards),
    /// until this board's next report (see [`DgtCodec::host_frame`]).
    paused_since: Option<u64>,
}

/// The DGT protocol of one port (single board or bus).
#[derive(Debug)]
pub struct DgtCodec {
    decoder: Decoder,
    host: HostDecoder,
    stats: CodecStats,
    dgt: DgtStats,
    boards: BTreeMap<BoardId, BoardClock>,
    /// Some board may be paused or hold a press: set wherever one is, cleared
    /// by a tick that finds none. Ten ticks a second per port, nearly all
    /// with nothing waiting, need not look through the boards.
    waiting: bool,
}

/// The DGT family's capabilities on a port used in `mode`.
pub fn capabilities(mode: PortMode) -> Capabilities {
    Capabilities {
        sensing: Sensing::Identity,
        reporting: Reporting::EveryChange {
            scan_ms: (200, 250),
        },
        clock: ClockLink::ThroughBoard {
            // The bus protocol has no clock commands.
            settable: mode == PortMode::Single,
        },
        leds: false,
        beep: mode == PortMode::Single,
        bus: true,
    }
}

impl DgtCodec {
    /// A codec for a port starting in `mode`.
    pub fn new(mode: Mode) -> DgtCodec {
        DgtCodec {
            decoder: Decoder::new(mode),
            host: HostDecoder::new(),
            stats: CodecStats::default(),
            dgt: DgtStats::default(),
            boards: BTreeMap::new(),
            waiting: false,
        }
    }

    /// [`DgtCodec::new`], boxed.
    pub fn boxed(mode: Mode) -> Box<dyn Codec> {
        Box::new(DgtCodec::new(mode))
    }

    /// The decoder's current mode.
    pub fn dgt_mode(&self) -> Mode {
        self.decoder.mode()
    }

    /// The DGT-only counters.
    pub fn dgt_stats(&self) -> &DgtStats {
        &self.dgt
    }

    fn state(&mut self, board: BoardId) -> &mut BoardClock {
        self.boards.entry(board).or_default()
    }

    /// Follows the port's mode from what the host says (dgt.md §3): `0x4a` or
    /// any bus command switches to bus mode, except END_BUSMODE, which leaves
    /// it; any other single-board command switches back too.
    ///
    /// A bus host looking for new boards (IGNORE_NEXT_PING to the known ones,
    /// then a ping to all) polls nobody until every board had the time to
    /// answer, over a second (dgt.md §3): the boards keep their changes for
    /// the next poll, so their silence meanwhile is not stillness. Each board
    /// heard from is paused until its next report has been read.
    fn host_frame(&mut self, t_ms: u64, frame: &HostFrame, out: &mut Vec<Observed>) {
        if let HostFrame::Bus(BusCommand {
            kind: BusCommandKind::IgnoreNextBusPing | BusCommandKind::Ping,
            ..
        }) = frame
        {
            for (&board, state) in self.boards.iter_mut() {
                if matches!(board, BoardId::Bus(_)) && state.paused_since.is_none() {
                    state.paused_since = Some(t_ms);
                    self.waiting = true;
                    out.push(Observed {
                        board,
                        what: Observation::Paused(true),
                    });
                }
            }
        }
        let mode = match frame {
            HostFrame::Bus(BusCommand {
                kind: BusCommandKind::EndBusMode,
                ..
            }) => Mode::Single,
            HostFrame::Single(Command::ToBusMode) | HostFrame::Bus(_) => Mode::Bus,
            HostFrame::Single(_) => Mode::Single,
        };
        if self.decoder.mode() != mode {
            self.decoder.set_mode(mode);
            self.dgt.mode_switches += 1;
            if mode == Mode::Single {
                let paused: Vec<BoardId> = self
                    .boards
                    .iter()
                    .filter(|(_, s)| s.paused_since.is_some())
                    .map(|(&b, _)| b)
                    .collect();
                for b in paused {
                    self.resume(b, out);
                }
            }
        }
    }

    /// Ends a pause of `board`'s reading (see [`DgtCodec::host_frame`]).
    fn resume(&mut self, board: BoardId, out: &mut Vec<Observed>) {
        if self.state(board).paused_since.take().is_some() {
            out.push(Observed {
                board,
                what: Observation::Paused(false),
            });
        }
    }

    fn frame(&mut self, t_ms: u64, frame: Frame, out: &mut Vec<Observed>) {
        match frame {
            Frame::Single(m) => self.message(t_ms, m, out),
            Frame::Bus(b) => self.bus_message(t_ms, b, out),
        }
    }

    fn message(&mut self, t_ms: u64, m: Message, out: &mut Vec<Observed>) {
        let board = BoardId::Single;
        let mut push = |what| out.push(Observed { board, what });
        match m {
            Message::BoardDump(p) => push(Observation::Picture(p)),
            Message::FieldUpdate { square, sensed } => push(Observation::Square { square, sensed }),
            Message::Clock(bw) => self.clock(board, t_ms, &bw, out),
            Message::ClockAck(ack) => push(Observation::Ack(CommandAck::Clock {
                accepted: ack.bytes[0] != 0x40,
            })),
            Message::EeMoves(records) => {
                // The EEPROM log is history from before this session; the
                // tracker follows the live board only.
                self.dgt.ee_records_unused += records.len() as u64;
            }
            Message::BusAddress(a) => push(Observation::Fact(BoardFact::BusAddress(a))),
            Message::SerialNumber(s) => push(Observation::Fact(BoardFact::Serial(s))),
            Message::LongSerialNumber(s) => push(Observation::Fact(BoardFact::LongSerial(s))),
            Message::Trademark(s) => push(Observation::Fact(BoardFact::Model(s))),
            Message::Version { major, minor } => {
                push(Observation::Fact(BoardFact::Version(major, minor)))
            }
            Message::BatteryStatus(b) => {
                if let Some(p) = b.percent() {
                    push(Observation::Fact(BoardFact::Battery(p)));
                }
            }
            Message::Draughts50 { .. } | Message::Unknown { .. } => {}
        }
    }

    fn bus_message(&mut self, t_ms: u64, b: BusMessage, out: &mut Vec<Observed>) {
        let board = BoardId::Bus(b.address);
        match b.reply {
            BusReply::BoardDump(p) => {
                out.push(Observed {
                    board,
                    what: Observation::Picture(p),
                });
                self.resume(board, out);
            }
            BusReply::Clock(bw) => self.clock(board, t_ms, &bw, out),
            BusReply::ClockAck(ack) => out.push(Observed {
                board,
                what: Observation::Ack(CommandAck::Clock {
                    accepted: ack.bytes[0] != 0x40,
                }),
            }),
            BusReply::Changes(records) => {
                out.push(Observed {
                    board,
                    what: Observation::Heard,
                });
                // A press held from an earlier report is released after this
                // report's field records: they hold the scan after it.
                if let Some(h) = self.state(board).held_press.as_mut() {
                    h.report_after = true;
                }
                // New changes since the last poll, oldest first: each one is a
                // picture the board showed, and the order matters to the tracker.
                for r in records {
                    match r {
                        EeRecord::Field {
                            square,
                            sensed,
                            recent,
                        } => {
                            // Records come in the order the board scanned
                            // them, all at the poll's time: one not flagged as
                            // close to the one before begins a new scan.
                            if !recent {
                                out.push(Observed {
                                    board,
                                    what: Observation::ScanEnded,
                                });
                                // The scan after a press record is read: the
                                // press comes before the next one. Held to the
                                // end of the report, it came after moves made
                                // later (a catch-up holding Qa4, the press, Qe7
                                // and a knight set down and taken back: the
                                // press read as the knight's, and the knight
                                // going back as a takeback, 7.1).
                                if self
                                    .state(board)
                                    .held_press
                                    .is_some_and(|h| h.scan_after && !h.from_poll)
                                {
                                    self.release_press(board, t_ms, out);
                                }
                            }
                            if let Some(h) = self.state(board).held_press.as_mut() {
                                h.scan_after = true;
                            }
                            out.push(Observed {
                                board,
                                what: Observation::Square { square, sensed },
                            });
                        }
                        // The board writes a clock record at each lever change,
                        // in order with the field records. It is the only
                        // place a bus host learns *when* a press came relative
                        // to the pieces: BUS_SEND_CLK readings are polled far
                        // less often, so a press seen only through them comes
                        // after pictures of the next move, or not at all if
                        // both players pressed between two polls.
                        EeRecord::Clock {
                            left,
                            hours,
                            minutes,
                            seconds,
                        } => {
                            let halted = if left {
                                ClockSide::Left
                            } else {
                                ClockSide::Right
                            };
                            let ms = (u64::from(hours) * 3_600
                                + u64::from(minutes) * 60
                                + u64::from(seconds))
                                * 1_000;
                            self.ee_press(board, t_ms, halted, ms, out);
                        }
                        _ => self.dgt.ee_records_unused += 1,
                    }
                }
                // The report holds whole scans: the last one is complete.
                out.push(Observed {
                    board,
                    what: Observation::ScanEnded,
                });
                if self.state(board).held_press.is_some_and(|h| h.report_after) {
                    self.release_press(board, t_ms, out);
                }
                // A pause's catch-up is read: time counts again.
                self.resume(board, out);
            }
            BusReply::FromStart(records) => {
                // Everything since the start tag, which the tracker has mostly
                // seen already: replaying it picture by picture would walk the
                // board back to the start position and look like a takeback.
                // Only the resulting picture (the board as it is now) is
                // passed on.
                let mut squares = Vec::new();
                for r in records {
                    match r {
                        EeRecord::Field { square, sensed, .. } => squares.push((square, sensed)),
                        _ => self.dgt.ee_records_unused += 1,
                    }
                }
                out.push(Observed {
                    board,
                    what: Observation::Squares(squares),
                });
            }
            BusReply::Version { major, minor } => out.push(Observed {
                board,
                what: Observation::Fact(BoardFact::Version(major, minor)),
            }),
            BusReply::Ping
            | BusReply::StartGameWritten
            | BusReply::Draughts50(_)
            | BusReply::Unknown { .. } => out.push(Observed {
                board,
                what: Observation::Heard,
            }),
        }
    }

    fn clock(&mut self, board: BoardId, t_ms: u64, bw: &BwTime, out: &mut Vec<Observed>) {
        if bw.is_blank() {
            // Bluetooth firmware sends these after clock commands (dgt.md §1.6).
            self.dgt.blank_clock_readings += 1;
            return;
        }
        if bw.no_clock {
            self.dgt.no_clock_readings += 1;
            out.push(Observed {
                board,
                what: Observation::NoClock,
            });
            return;
        }
        let reading = ClockReading::from(bw);
        if let Some(h) = self.state(board).held_press.as_mut() {
            if reading.lever_high == h.reading.lever_high && reading.running == h.reading.running {
                // The poll shows the held press: it waits with it, with the
                // clock's newer times, so the press is not seen early.
                h.reading = reading;
                out.push(Observed {
                    board,
                    what: Observation::Heard,
                });
                return;
            }
            // The lever moved again since: the held press comes first.
            self.release_press(board, t_ms, out);
        }
        // A bus board's lever change (or its clock starting or stopping) seen
        // first by a poll happened somewhere since the last change report, so
        // the squares around it are not all read yet, and its clock record,
        // which places it among them, is still in the board. Given now, a
        // press would land before the last squares of its move, and a start
        // could be read after a press it hides. It waits for the next report:
        // the record there takes its place (see `ee_press`), and without one
        // it is given after that report's squares.
        let changed = self
            .state(board)
            .reading
            .is_some_and(|r| r.lever_high != reading.lever_high || r.running != reading.running);
        if matches!(board, BoardId::Bus(_)) && changed {
            self.waiting = true;
            self.state(board).held_press = Some(HeldPress {
                reading,
                since: t_ms,
                report_after: false,
                from_poll: true,
                scan_after: false,
            });
            out.push(Observed {
                board,
                what: Observation::Heard,
            });
            return;
        }
        self.give_clock(board, reading, out);
    }

    /// A bus clock record: the `halted` side's clock stopped at `ms`, so that
    /// side pressed and the other side's clock runs now. The press is the
    /// last full reading with the lever moved and the halted display set; the
    /// other display stays as last polled until the next BUS_SEND_CLK. A
    /// poll that showed this lever first is waiting (see `clock`): the record
    /// takes its place. A record that changes nothing the tracker knows (no
    /// reading yet to build on, or a running clock already given with this
    /// lever) is not passed on, so one press is never seen twice.
    ///
    /// The board writes the record the moment the lever moves, but a square
    /// only at its next scan (every 200-250 ms): a piece put down just before
    /// the press is logged after the record. Given at once, the press would
    /// find the picture one scan old, and the tracker takes a press on a shown
    /// move as proof the move is complete (a pawn seen on c3 on its way to c4
    /// would be verified as c3). So the press is held for the scan after it:
    /// given before the records of the next scan after that one, or, if the
    /// records run out first, after the squares of the change report after
    /// the one holding the record (it holds the scan after the press).
    fn ee_press(
        &mut self,
        board: BoardId,
        t_ms: u64,
        halted: ClockSide,
        ms: u64,
        out: &mut Vec<Observed>,
    ) {
        if let Some(h) = self.state(board).held_press {
            if h.from_poll && h.reading.lever_high == Some(halted.other()) {
                // The record of the lever change a poll showed first: the
                // press now waits from here, its place among the squares.
                self.start_unseen(board, halted, out);
                if let Some(h) = self.state(board).held_press.as_mut() {
                    h.since = t_ms;
                    h.report_after = false;
                    h.from_poll = false;
                    h.scan_after = false;
                }
                self.dgt.ee_presses += 1;
                return;
            }
            // A second press before the first was given, or a poll's change
            // that came before this record: the earlier one's squares are in
            // what was read so far (the record order is the board's).
            self.release_press(board, t_ms, out);
        }
        let Some(last) = self.state(board).reading.filter(|r| r.lever_high.is_some()) else {
            self.dgt.ee_records_unused += 1;
            return;
        };
        if last.running && last.lever_high == Some(halted.other()) {
            self.dgt.ee_records_unused += 1;
            return;
        }
        let last = self.start_unseen(board, halted, out).unwrap_or(last);
        let mut reading = last;
        reading.lever_high = Some(halted.other());
        match halted {
            ClockSide::Left => reading.left.millis = ms,
            ClockSide::Right => reading.right.millis = ms,
        }
        self.waiting = true;
        self.state(board).held_press = Some(HeldPress {
            reading,
            since: t_ms,
            report_after: false,
            from_poll: false,
            scan_after: false,
        });
        self.dgt.ee_presses += 1;
    }

    /// A press record while the last reading given shows the clock stopped:
    /// the clock was started since, and the start left no record (it
    /// completes no move) and fell between two polls. The `halted` side's
    /// clock ran up to this press, so that is the start to give first: the
    /// tracker maps the clock's sides from it (Article 6.6) before it sees the
    /// press. Returns the start reading given, if one was.
    fn start_unseen(
        &mut self,
        board: BoardId,
        halted: ClockSide,
        out: &mut Vec<Observed>,
    ) -> Option<ClockReading> {
        let last = self.state(board).reading.filter(|r| !r.running)?;
        let mut start = last;
        start.running = true;
        start.lever_high = Some(halted);
        self.give_clock(board, start, out);
        Some(start)
    }

    /// Gives the press held for `board`, if any.
    fn release_press(&mut self, board: BoardId, _t_ms: u64, out: &mut Vec<Observed>) {
        if let Some(h) = self.state(board).held_press.take() {
            self.give_clock(board, h.reading, out);
        }
    }

    fn give_clock(&mut self, board: BoardId, reading: ClockReading, out: &mut Vec<Observed>) {
        self.state(board).reading = Some(reading);
        out.push(Observed {
            board,
            what: Observation::Clock(reading),
        });
    }
}

impl Codec for DgtCodec {
    fn capabilities(&self) -> Capabilities {
        capabilities(self.mode())
    }

    /// The decoder keeps a bounded buffer of unread bytes ([`BUFFER_CAP`]) and
    /// drops the oldest beyond it, so bytes are handed to it in pieces of half
    /// that size, each decoded before the next: a capture line may hold up to
    /// 1 MiB, and none of its bytes may be lost.
    fn board_bytes(&mut self, t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for piece in bytes.chunks(BUFFER_CAP / 2) {
            self.decoder.push(piece);
            while let Some(result) = self.decoder.next() {
                match result {
                    Ok(frame) => {
                        self.stats.frames += 1;
                        self.frame(t_ms, frame, out);
                    }
                    Err(e) => self.stats.error(e),
                }
            }
        }
    }

    fn host_bytes(&mut self, t_ms: u64, bytes: &[u8], out: &mut Vec<Observed>) {
        for piece in bytes.chunks(HOST_BUFFER_CAP / 2) {
            self.host.push(piece);
            while let Some(result) = self.host.next() {
                match result {
                    Ok(frame) => {
                        self.stats.host_frames += 1;
                        self.host_frame(t_ms, &frame, out);
                    }
                    Err(_) => self.stats.host_errors += 1,
                }
            }
        }
    }

    fn tick(&mut self, t_ms: u64, out: &mut Vec<Observed>) {
        if !self.waiting {
            return;
        }
        if !self
            .boards
            .values()
            .any(|s| s.paused_since.is_some() || s.held_press.is_some())
        {
            self.waiting = false;
            return;
        }
        let silent: Vec<BoardId> = self
            .boards
            .iter()
            .filter(|(_, s)| {
                s.paused_since
                    .is_some_and(|since| t_ms.saturating_sub(since) >= PAUSE_MAX_MS)
            })
            .map(|(&b, _)| b)
            .collect();
        for b in silent {
            self.resume(b, out);
        }
        // A paused board's held press waits for the catch-up report: that
        // holds the scan after the press.
        let stale: Vec<BoardId> = self
            .boards
            .iter()
            .filter(|(b, s)| {
                matches!(b, BoardId::Bus(_))
                    && s.paused_since.is_none()
                    && s.held_press
                        .is_some_and(|h| t_ms.saturating_sub(h.since) >= HELD_PRESS_MAX_MS)
            })
            .map(|(&b, _)| b)
            .collect();
        for b in stale {
            self.release_press(b, t_ms, out);
        }
    }

    fn stats(&self) -> &CodecStats {
        &self.stats
    }

    fn mode(&self) -> PortMode {
        match self.decoder.mode() {
            Mode::Single => PortMode::Single,
            Mode::Bus => PortMode::Bus,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::Sensed;
    use shakmaty::Square;

    fn report(address: u16, records: Vec<EeRecord>) -> Vec<u8> {
        let mut v = Vec::new();
        BusMessage {
            address,
            reply: BusReply::Changes(records),
        }
        .encode(&mut v);
        v
    }

    fn command(kind: BusCommandKind, address: u16) -> Vec<u8> {
        let mut v = Vec::new();
        BusCommand { kind, address }.encode(&mut v);
        v
    }

    fn what(out: &mut Vec<Observed>) -> Vec<Observation> {
        out.drain(..).map(|o| o.what).collect()
    }

    #[test]
    fn a_discovery_pauses_each_bus_board_until_its_catch_up_is_read() {
        let mut c = DgtCodec::new(Mode::Bus);
        let mut out = Vec::new();
        c.board_bytes(1_000, &report(77, Vec::new()), &mut out);
        out.clear();
        c.host_bytes(
            1_300,
            &command(BusCommandKind::IgnoreNextBusPing, 77),
            &mut out,
        );
        c.host_bytes(1_310, &command(BusCommandKind::Ping, 0), &mut out);
        assert_eq!(what(&mut out), vec![Observation::Paused(true)]);
        // The ping window is no reason to give up on the board.
        c.tick(2_700, &mut out);
        assert!(out.is_empty(), "{out:?}");
        let field = EeRecord::Field {
            square: Square::E4,
            sensed: Sensed::Piece(shakmaty::Color::White.pawn()),
            recent: false,
        };
        c.board_bytes(2_800, &report(77, vec![field]), &mut out);
        let got = what(&mut out);
        assert_eq!(got.last(), Some(&Observation::Paused(false)), "{got:?}");
        assert!(got.contains(&Observation::Square {
            square: Square::E4,
            sensed: Sensed::Piece(shakmaty::Color::White.pawn())
        }));
        // A board that never reports again is read as usual after a while.
        c.host_bytes(4_000, &command(BusCommandKind::Ping, 0), &mut out);
        assert_eq!(what(&mut out), vec![Observation::Paused(true)]);
        c.tick(9_000, &mut out);
        assert_eq!(what(&mut out), vec![Observation::Paused(false)]);
    }
}
