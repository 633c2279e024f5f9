//! Protocol-neutral clock readings.
//!
//! Clocks know *left* and *right* (the sides as seen from the clock's front), never
//! White and Black: which display belongs to White is found by the tracker from how
//! the clock behaves (Article 6.6), so nothing here names a colour.

/// A physical side of the clock, seen from its front.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockSide {
    /// The left display and button.
    Left,
    /// The right display and button.
    Right,
}

impl ClockSide {
    /// The other side.
    pub fn other(self) -> ClockSide {
        match self {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        }
    }
}

/// One display of the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SideTime {
    /// Time shown, in milliseconds (DGT clocks report whole seconds).
    pub millis: u64,
    /// The flag has fallen and the display is blocked at zero.
    pub flag_fallen: bool,
    /// A flag symbol is shown (the clock may still run, e.g. into the next period).
    pub flag_shown: bool,
    /// A per-move time (increment or delay) indicator is on.
    pub time_per_move: bool,
}

/// What a clock reports at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClockReading {
    /// The left display.
    pub left: SideTime,
    /// The right display.
    pub right: SideTime,
    /// The clock is running (not paused with start/stop).
    pub running: bool,
    /// Which side's button is *up* (the lever is high on that side). The clock of
    /// the side whose button is up is the one that runs: the other player pressed.
    /// `None` when the protocol does not report the lever.
    pub lever_high: Option<ClockSide>,
    /// The battery low symbol is shown.
    pub battery_low: bool,
}

impl ClockReading {
    /// The side whose time is running, when the clock runs and reports its lever.
    pub fn running_side(&self) -> Option<ClockSide> {
        if self.running {
            self.lever_high
        } else {
            None
        }
    }

    /// The display of `side`.
    pub fn side(&self, side: ClockSide) -> &SideTime {
        match side {
            ClockSide::Left => &self.left,
            ClockSide::Right => &self.right,
        }
    }
}
