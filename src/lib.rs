//! eboard-bridge: the daemon that reads electronic chess boards and publishes
//! verified games.
//!
//! Data flows one way: bytes → protocol frames (`eboard_protocols`) → sensor
//! pictures and clock readings ([`session`]) → the per-board [`tracker`] → game
//! events ([`events`]) → the [`daemon`]'s journal → publishers ([`pgn`],
//! [`publish`], [`http`], [`ebapi`], [`mqtt`]). Only the device layer
//! ([`daemon::device`]) does I/O on boards; only publishers know output formats.

// Bytes in, tracker calls out: the session, the capture format, `replay`.
pub mod session;

// The pure core: the tracker and what it says.
pub mod events;
pub mod tracker;

// The running daemon: its loop, configuration, ports, journal and hub.
pub mod daemon;

// Publishers.
pub mod ebapi;
pub mod http;
pub mod mqtt;
pub mod pgn;
pub mod publish;

// Vocabulary and rules the stages share (the tracker imports operator, pgn,
// chess960 and timecontrol).
pub mod chess960;
pub mod files;
pub mod names;
pub mod operator;
pub mod timecontrol;

// Commands other than `run` and `replay`, and the simulated input of tests,
// benchmarks and fuzzing.
pub mod cli;
pub mod sim;
