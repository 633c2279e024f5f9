//! File descriptors: the process's budget, and what is kept for the journal
//! and the board ports whatever the HTTP clients do.
//!
//! Every open file, port and connection costs one descriptor, and the
//! process may hold at most `RLIMIT_NOFILE` of them. HTTP clients are the
//! only users of descriptors the daemon does not choose, so the HTTP side may
//! only use what is left after a reserve: [`BASE_RESERVE`] for the process
//! itself and the journal (captures, event logs, PGN files written through
//! temporary files, fsyncs on duplicated descriptors), plus [`PER_PORT`] for
//! each board port followed (the port, its capture, its boards' event logs,
//! reopening after an unplug). The HTTP server refuses connections beyond
//! that (see `http::server`), so a board keeps being followed and the
//! journal keeps writing even with hundreds of idle clients connected.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Descriptors kept for the process and the journal, whatever the boards.
pub const BASE_RESERVE: usize = 24;
/// Descriptors kept for each board port followed.
pub const PER_PORT: usize = 8;

/// The process's descriptor budget (see the module documentation).
#[derive(Debug)]
pub struct FdBudget {
    limit: usize,
    reserved: AtomicUsize,
}

static BUDGET: OnceLock<FdBudget> = OnceLock::new();

/// The budget, read on first use. The soft limit is raised to the hard one
/// first (an unprivileged process may), so the daemon gets what the system
/// or the service unit's `LimitNOFILE=` allows.
pub fn budget() -> &'static FdBudget {
    BUDGET.get_or_init(|| {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let limit = match getrlimit(Resource::RLIMIT_NOFILE) {
            Ok((soft, hard)) => {
                if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                    hard
                } else {
                    soft
                }
            }
            // Unknown: assume the common default.
            Err(_) => 1024,
        };
        FdBudget {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            reserved: AtomicUsize::new(BASE_RESERVE),
        }
    })
}

impl FdBudget {
    /// The process's limit on open descriptors.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Descriptors kept out of the HTTP side's reach now.
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Keeps [`PER_PORT`] more descriptors for one more board port.
    pub fn reserve_port(&self) {
        self.reserved.fetch_add(PER_PORT, Ordering::Relaxed);
    }

    /// How many HTTP connections may be open at once: what the reserve
    /// leaves, at most `max` (the configured cap).
    pub fn http_connections(&self, max: usize) -> usize {
        self.limit.saturating_sub(self.reserved()).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_shrink_what_http_may_use() {
        let b = FdBudget {
            limit: 64,
            reserved: AtomicUsize::new(BASE_RESERVE),
        };
        assert_eq!(b.http_connections(4096), 64 - BASE_RESERVE);
        b.reserve_port();
        assert_eq!(b.http_connections(4096), 64 - BASE_RESERVE - PER_PORT);
        assert_eq!(b.http_connections(10), 10);
        for _ in 0..10 {
            b.reserve_port();
        }
        assert_eq!(b.http_connections(4096), 0);
    }
}
