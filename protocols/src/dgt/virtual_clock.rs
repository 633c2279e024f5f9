//! A DGT 3000 clock as the board sees it: two displays, a lever, per-move time.
//!
//! Sans-IO and time-injected like the board that hosts it. Sides are physical
//! (left / right seen from the clock's front); colours are nobody's business here.

use crate::clock::ClockSide;

use super::types::{BwTime, ClockAck, ClockCommand, DgtSideTime, Hms};

/// Time added per move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerMove {
    /// Sudden death.
    None,
    /// Fischer: the increment is added when the player presses (and once at the
    /// start, as the DGT 3000 shows base + increment before the first move).
    Fischer { increment_ms: u64 },
    /// Bronstein: time used on a move is given back, up to the delay.
    Bronstein { delay_ms: u64 },
}

/// How the clock is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockConfig {
    /// Base time for each side.
    pub base_ms: u64,
    pub per_move: PerMove,
    /// `false`: no clock is connected to the board (BWTIME says so, no acks).
    pub present: bool,
    /// Main and sub version reported in the version ack (2.x = DGT 3000).
    pub version: (u8, u8),
    /// Delay between a clock command and its ack (the board polls the clock
    /// two or three times a second).
    pub ack_delay_ms: u64,
    /// How the clock takes commands from the host.
    pub commands: CommandHandling,
}

/// How a clock takes the host's commands, for testing hosts against the ways
/// a real one fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommandHandling {
    /// Carried out and acked.
    #[default]
    Ack,
    /// Not in mode 23: set-and-run is answered with an error ack (ack0
    /// `0x40`) and the times stay; other commands are carried out and acked.
    NotMode23,
    /// The clock's cable to the board is loose: commands never reach it and
    /// no ack comes, while the board still reports the last times it read.
    Unreachable,
}

impl Default for ClockConfig {
    /// 90 minutes + 30 seconds per move, the usual FIDE rate.
    fn default() -> Self {
        ClockConfig {
            base_ms: 90 * 60_000,
            per_move: PerMove::Fischer {
                increment_ms: 30_000,
            },
            present: true,
            version: (2, 1),
            ack_delay_ms: 250,
            commands: CommandHandling::Ack,
        }
    }
}

/// The buttons of the DGT 3000 front, with the codes its button acks carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockButton {
    Back = 0x31,
    Plus = 0x32,
    Run = 0x33,
    Minus = 0x34,
    Ok = 0x35,
}

/// One completed press, as the clock itself knows it: the ground truth a
/// reader's `[%clk]` is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PressRecord {
    /// When the lever changed.
    pub t_ms: u64,
    /// The side that pressed (its time stopped).
    pub side: ClockSide,
    /// The presser's remaining time right after the press, per-move time included.
    pub remaining_ms: u64,
}

impl PressRecord {
    /// What the display shows for [`PressRecord::remaining_ms`], in whole seconds
    /// (rounded up, as the DGT 3000 shows it).
    pub fn shown_seconds(&self) -> u64 {
        self.remaining_ms.div_ceil(1000)
    }
}

/// The state of a virtual DGT 3000.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    cfg: ClockConfig,
    /// Remaining time of each side at `last_t`.
    left_ms: u64,
    right_ms: u64,
    left_flag: bool,
    right_flag: bool,
    /// Counting (not paused, not waiting for the first press).
    running: bool,
    /// The lever's right side is up: the right clock is the one that runs.
    lever_right_high: bool,
    last_t: u64,
    /// When the running side's current move began (for Bronstein).
    move_started: u64,
    /// Acks waiting to be sent: (due time, ack).
    acks: Vec<(u64, ClockAck)>,
    /// Every press that moved the lever, oldest first (not the starting press).
    presses: Vec<PressRecord>,
}

fn split_ms(ms: u64) -> (u8, u8, u8) {
    // Displays show whole seconds, rounded up: 0:00 appears when time is out.
    let s = ms.div_ceil(1000).min(9 * 3600 + 59 * 60 + 59);
    ((s / 3600) as u8, ((s / 60) % 60) as u8, (s % 60) as u8)
}

fn hms_ms(h: Hms) -> u64 {
    (u64::from(h.hours) * 3600 + u64::from(h.minutes) * 60 + u64::from(h.seconds)) * 1000
}

impl VirtualClock {
    /// A clock set to `cfg`, waiting for the first press, with the left side up
    /// (the left player's time will run first).
    pub fn new(cfg: ClockConfig) -> VirtualClock {
        let start = cfg.base_ms
            + match cfg.per_move {
                PerMove::Fischer { increment_ms } => increment_ms,
                _ => 0,
            };
        VirtualClock {
            cfg,
            left_ms: start,
            right_ms: start,
            left_flag: false,
            right_flag: false,
            running: false,
            lever_right_high: false,
            last_t: 0,
            move_started: 0,
            acks: Vec::new(),
            presses: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ClockConfig {
        &self.cfg
    }

    /// Whether a clock is connected at all.
    pub fn present(&self) -> bool {
        self.cfg.present
    }

    /// The side whose time runs (or would run once started).
    pub fn lever_high(&self) -> ClockSide {
        if self.lever_right_high {
            ClockSide::Right
        } else {
            ClockSide::Left
        }
    }

    /// Whether time is counting.
    pub fn running(&self) -> bool {
        self.running
    }

    /// Every press that completed a move (moved the lever while running), oldest
    /// first: the `k`-th is the press after ply `k` when every move is pressed.
    pub fn presses(&self) -> &[PressRecord] {
        &self.presses
    }

    /// Remaining time of `side` in ms at the last advance.
    pub fn remaining_ms(&self, side: ClockSide) -> u64 {
        match side {
            ClockSide::Left => self.left_ms,
            ClockSide::Right => self.right_ms,
        }
    }

    /// Counts time up to `t_ms`; a side reaching zero has its flag fall and is
    /// blocked there.
    pub fn advance(&mut self, t_ms: u64) {
        if t_ms <= self.last_t {
            return;
        }
        let dt = t_ms - self.last_t;
        self.last_t = t_ms;
        if !self.running || !self.cfg.present {
            return;
        }
        let (ms, flag) = if self.lever_right_high {
            (&mut self.right_ms, &mut self.right_flag)
        } else {
            (&mut self.left_ms, &mut self.left_flag)
        };
        *ms = ms.saturating_sub(dt);
        if *ms == 0 {
            *flag = true;
        }
    }

    /// The player on `side` presses the lever. Returns the side whose clock was
    /// halted and its remaining time when the lever actually changed, which is
    /// what the board logs (EE clock record).
    pub fn press(&mut self, t_ms: u64, side: ClockSide) -> Option<(ClockSide, u64)> {
        self.advance(t_ms);
        if !self.cfg.present {
            return None;
        }
        let goes_high = side.other();
        if !self.running {
            // The first press starts the clock with the other side running.
            self.running = true;
            self.lever_right_high = goes_high == ClockSide::Right;
            self.move_started = t_ms;
            return None;
        }
        if self.lever_high() != side {
            // That side is already down: nothing moves.
            return None;
        }
        // The mover completes a move: per-move time, then the other side runs.
        let used = t_ms.saturating_sub(self.move_started);
        let (ms, flag) = match side {
            ClockSide::Left => (&mut self.left_ms, self.left_flag),
            ClockSide::Right => (&mut self.right_ms, self.right_flag),
        };
        if !flag {
            *ms += match self.cfg.per_move {
                PerMove::None => 0,
                PerMove::Fischer { increment_ms } => increment_ms,
                PerMove::Bronstein { delay_ms } => used.min(delay_ms),
            };
        }
        let halted = (side, *ms);
        self.presses.push(PressRecord {
            t_ms,
            side,
            remaining_ms: *ms,
        });
        self.lever_right_high = goes_high == ClockSide::Right;
        self.move_started = t_ms;
        Some(halted)
    }

    /// Start/stop: pauses or resumes the count.
    pub fn toggle_pause(&mut self, t_ms: u64) {
        self.advance(t_ms);
        self.running = !self.running;
        self.move_started = t_ms;
    }

    /// A button on the clock's front: produces the auto-generated button ack.
    pub fn button(&mut self, t_ms: u64, button: ClockButton) {
        if self.cfg.present {
            self.acks.push((
                t_ms + 20,
                ClockAck {
                    bytes: [0x10, 0x88, 0x00, button as u8],
                },
            ));
        }
    }

    /// A clock command from the host; its ack becomes due after the ack delay.
    pub fn command(&mut self, t_ms: u64, cmd: &ClockCommand) {
        self.advance(t_ms);
        if !self.cfg.present || self.cfg.commands == CommandHandling::Unreachable {
            return;
        }
        let mut ack = [0x10, 0, 0, 0];
        match cmd {
            ClockCommand::Display { .. } => ack[1] = 0x01,
            ClockCommand::Icons { .. } => ack[1] = 0x02,
            ClockCommand::End => ack[1] = 0x03,
            ClockCommand::Button => ack[1] = 0x08,
            ClockCommand::Version => {
                ack[1] = 0x09;
                ack[2] = (self.cfg.version.0 << 4) | (self.cfg.version.1 & 0x0f);
            }
            ClockCommand::SetAndRun { .. } if self.cfg.commands == CommandHandling::NotMode23 => {
                ack = [0x40, 0x0a, 0, 0];
            }
            ClockCommand::SetAndRun { left, right, flags } => {
                ack[1] = 0x0a;
                self.left_ms = hms_ms(*left);
                self.right_ms = hms_ms(*right);
                self.left_flag = self.left_ms == 0;
                self.right_flag = self.right_ms == 0;
                if flags & 0x02 != 0 {
                    self.lever_right_high = true;
                } else if flags & 0x01 != 0 {
                    self.lever_right_high = false;
                }
                self.running = flags & 0x04 == 0 && flags & 0x03 != 0;
                self.move_started = t_ms;
            }
            ClockCommand::Beep { .. } => ack[1] = 0x0b,
            ClockCommand::Ascii { .. } => ack[1] = 0x0c,
            ClockCommand::Rev2Ascii { .. } => ack[1] = 0x0d,
        }
        self.acks
            .push((t_ms + self.cfg.ack_delay_ms, ClockAck { bytes: ack }));
    }

    /// Acks due by `t_ms`, oldest first.
    pub fn take_acks(&mut self, t_ms: u64) -> Vec<(u64, ClockAck)> {
        let (due, later): (Vec<_>, Vec<_>) = self.acks.drain(..).partition(|(t, _)| *t <= t_ms);
        self.acks = later;
        due
    }

    /// The earliest pending ack time.
    pub fn next_ack_at(&self) -> Option<u64> {
        self.acks.iter().map(|(t, _)| *t).min()
    }

    /// What BWTIME reports now.
    pub fn reading(&self) -> BwTime {
        if !self.cfg.present {
            return BwTime {
                no_clock: true,
                ..BwTime::default()
            };
        }
        let per_move = self.cfg.per_move != PerMove::None;
        let side = |ms: u64, flag: bool| {
            let (hours, minutes, seconds) = split_ms(ms);
            DgtSideTime {
                hours,
                minutes,
                seconds,
                flag_fallen: flag,
                time_per_move: per_move,
                flag_shown: flag,
            }
        };
        BwTime {
            right: side(self.right_ms, self.right_flag),
            left: side(self.left_ms, self.left_flag),
            running: self.running,
            lever_right_high: self.lever_right_high,
            battery_low: false,
            // As in the real recording: bit 3 follows the left side being up.
            left_turn: !self.lever_right_high,
            right_turn: self.lever_right_high,
            no_clock: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blitz() -> VirtualClock {
        VirtualClock::new(ClockConfig {
            base_ms: 180_000,
            per_move: PerMove::Fischer {
                increment_ms: 2_000,
            },
            ..ClockConfig::default()
        })
    }

    #[test]
    fn first_press_starts_the_other_side() {
        let mut c = blitz();
        let r = c.reading();
        assert_eq!((r.left.minutes, r.left.seconds), (3, 2));
        assert!(!r.running && r.left_turn);
        // The right player (Black) starts White's clock on the left.
        assert_eq!(c.press(1000, ClockSide::Right), None);
        c.advance(2500);
        let r = c.reading();
        assert!(r.running && !r.lever_right_high);
        assert_eq!((r.left.minutes, r.left.seconds), (3, 1));
        assert_eq!((r.right.minutes, r.right.seconds), (3, 2));
        // White moves and presses: increment, right runs.
        let halted = c.press(11_000, ClockSide::Left).unwrap();
        assert_eq!(halted, (ClockSide::Left, 182_000 - 10_000 + 2_000));
        assert!(c.reading().lever_right_high);
        // Pressing again on the same side does nothing.
        assert_eq!(c.press(12_000, ClockSide::Left), None);
    }

    #[test]
    fn set_and_run_outside_mode_23_is_refused_and_an_unreachable_clock_is_silent() {
        let hms = |minutes| Hms {
            hours: 0,
            minutes,
            seconds: 0,
        };
        let set = ClockCommand::SetAndRun {
            left: hms(5),
            right: hms(7),
            flags: 0x01,
        };
        let mut c = VirtualClock::new(ClockConfig {
            commands: CommandHandling::NotMode23,
            ..ClockConfig::default()
        });
        let before = c.reading();
        c.command(1_000, &set);
        assert_eq!(
            c.take_acks(2_000),
            vec![(
                1_250,
                ClockAck {
                    bytes: [0x40, 0x0a, 0, 0]
                }
            )]
        );
        assert_eq!(c.reading(), before, "the times stay");
        c.command(3_000, &ClockCommand::Beep { duration: 1 });
        assert_eq!(c.take_acks(4_000)[0].1.bytes, [0x10, 0x0b, 0, 0]);

        let mut c = VirtualClock::new(ClockConfig {
            commands: CommandHandling::Unreachable,
            ..ClockConfig::default()
        });
        c.command(1_000, &set);
        assert!(c.take_acks(10_000).is_empty());
        assert_eq!(c.reading(), before);

        let mut c = VirtualClock::new(ClockConfig::default());
        c.command(1_000, &set);
        assert_eq!(c.take_acks(2_000)[0].1.bytes, [0x10, 0x0a, 0, 0]);
        let r = c.reading();
        assert_eq!((r.left.minutes, r.right.minutes), (5, 7));
    }

    #[test]
    fn flag_falls_and_blocks_at_zero() {
        let mut c = VirtualClock::new(ClockConfig {
            base_ms: 5_000,
            per_move: PerMove::None,
            ..ClockConfig::default()
        });
        c.press(0, ClockSide::Right);
        c.advance(7_000);
        let r = c.reading();
        assert!(r.left.flag_fallen && r.left.flag_shown);
        assert_eq!((r.left.minutes, r.left.seconds), (0, 0));
        assert!(!r.left.time_per_move);
    }

    #[test]
    fn bronstein_gives_back_at_most_the_delay() {
        let mut c = VirtualClock::new(ClockConfig {
            base_ms: 60_000,
            per_move: PerMove::Bronstein { delay_ms: 5_000 },
            ..ClockConfig::default()
        });
        c.press(0, ClockSide::Right);
        assert_eq!(
            c.press(3_000, ClockSide::Left),
            Some((ClockSide::Left, 60_000))
        );
        assert_eq!(
            c.press(13_000, ClockSide::Right),
            Some((ClockSide::Right, 55_000))
        );
    }

    #[test]
    fn setnrun_and_acks() {
        let mut c = blitz();
        let hms = |m| Hms {
            hours: 0,
            minutes: m,
            seconds: 0,
        };
        c.command(
            100,
            &ClockCommand::SetAndRun {
                left: hms(5),
                right: hms(4),
                flags: 0x02,
            },
        );
        c.command(100, &ClockCommand::Version);
        assert!(c.take_acks(200).is_empty());
        let acks = c.take_acks(400);
        assert_eq!(acks.len(), 2);
        assert_eq!(acks[0].1.bytes[..2], [0x10, 0x0a]);
        assert_eq!(acks[1].1.bytes[..3], [0x10, 0x09, 0x21]);
        c.advance(1_100);
        let r = c.reading();
        assert!(r.running && r.lever_right_high);
        assert_eq!((r.right.minutes, r.right.seconds), (3, 59));
        assert_eq!((r.left.minutes, r.left.seconds), (5, 0));
    }

    #[test]
    fn no_clock_reports_so_and_never_acks() {
        let mut c = VirtualClock::new(ClockConfig {
            present: false,
            ..ClockConfig::default()
        });
        c.command(0, &ClockCommand::Beep { duration: 1 });
        assert!(c.take_acks(10_000).is_empty());
        assert!(c.reading().no_clock);
    }
}
