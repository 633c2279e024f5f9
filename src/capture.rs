//! Captures: exactly what a board said and what we said to it, with timings.
//!
//! The on-disk format is JSON Lines, a contract other tools rely on; it is specified
//! in `docs/capture-format.md`. This module holds the in-memory vocabulary.

/// Which way the bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Board → host (`"in"`).
    In,
    /// Host → board (`"out"`).
    Out,
}

/// One chunk of bytes as read from or written to the port. Chunks may split or
/// join protocol frames anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Milliseconds since the capture started.
    pub t_ms: u64,
    pub dir: Direction,
    pub bytes: Vec<u8>,
}
