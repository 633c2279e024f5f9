//! Journals as a daemon run leaves them, written without running one: the
//! capture of a simulated game in the journal's layout, with the events a
//! session derives from it (ticked every 100 ms, as the daemon's loop does).
//! Shared by the recovery tests and the restart bench (`#[path]`).

#![allow(dead_code)]

use std::path::Path;

use eboard_bridge::daemon::journal::{port_key, Journal, PortHeader};
use eboard_bridge::events::Stamped;
use eboard_bridge::session::capture::{Chunk, PortMode};
use eboard_bridge::session::Session;
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;

/// The daemon's loop tick, which recovery reproduces between chunks.
const TICK_MS: u64 = 100;

/// The events a single-board port's session derives from `chunks`.
pub fn derive(board: u32, chunks: &[Chunk]) -> Vec<Stamped> {
    let mut session = Session::new(
        board,
        DgtCodec::boxed(Mode::Single),
        TrackerConfig::default(),
    );
    let mut events = Vec::new();
    let mut next_tick = chunks.first().map_or(0, |c| c.t_ms) + TICK_MS;
    for c in chunks {
        while next_tick <= c.t_ms {
            session.tick(next_tick, &mut events);
            next_tick += TICK_MS;
        }
        session.feed(c, &mut events);
    }
    events
}

/// Journals `chunks` as the capture of single-board port `port` (board
/// `board`) and `events` in the board's event log, as one run of `journal`.
pub fn seed_port(
    journal: &mut Journal,
    port: &Path,
    board: u32,
    chunks: &[Chunk],
    events: &[Stamped],
) {
    let key = port_key(port);
    let header = PortHeader::new(port, Some(board), "dgt", PortMode::Single);
    for c in chunks {
        journal.record_chunk(&key, &header, c).unwrap();
    }
    for e in events {
        journal.record_event(e, None).unwrap();
    }
}
