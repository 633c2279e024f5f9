//! The per-board tracker: sensor pictures and clock readings in, game events out.
//!
//! Pure and deterministic: time is an input (`t_ms` on every call), nothing here
//! does I/O, and the same inputs always give the same events. The daemon, `replay`
//! and the benchmarks all drive this one type.

use eboard_protocols::{ClockReading, Picture};

use crate::events::{Millis, TrackerEvent};

/// Settings a tracker is created with.
#[derive(Clone, Debug)]
pub struct TrackerConfig {
    /// On a board with no clock, a move is verified after the picture has been still
    /// this long.
    pub clockless_hold_ms: Millis,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            clockless_hold_ms: 2_000,
        }
    }
}

/// Follows one board's game.
#[derive(Debug)]
pub struct Tracker {
    config: TrackerConfig,
}

impl Tracker {
    /// A tracker waiting for a start picture.
    pub fn new(config: TrackerConfig) -> Tracker {
        Tracker { config }
    }

    /// The settings in force.
    pub fn config(&self) -> &TrackerConfig {
        &self.config
    }

    /// A new full sensor picture (after every square change, or a dump).
    pub fn picture(&mut self, t_ms: Millis, picture: &Picture, out: &mut Vec<TrackerEvent>) {
        let _ = (t_ms, picture, out);
    }

    /// A new clock reading.
    pub fn clock(&mut self, t_ms: Millis, reading: &ClockReading, out: &mut Vec<TrackerEvent>) {
        let _ = (t_ms, reading, out);
    }

    /// Time passes with no input (drives hold timers).
    pub fn tick(&mut self, t_ms: Millis, out: &mut Vec<TrackerEvent>) {
        let _ = (t_ms, out);
    }

    /// The number of verified plies so far.
    pub fn ply(&self) -> u32 {
        0
    }
}
