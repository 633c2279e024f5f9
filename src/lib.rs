//! eboard-bridge: the daemon that reads electronic chess boards and publishes
//! verified games.
//!
//! Data flows one way: bytes → protocol frames (`eboard_protocols`) → sensor
//! pictures and clock readings ([`session`]) → the per-board [`tracker`] → game
//! events ([`events`]) → publishers ([`pgn`]). Only the device layer does I/O; only
//! publishers know output formats.

pub mod chess960;
pub mod daemon;
pub mod demo;
pub mod doctor;
pub mod ebapi;
pub mod emulate;
pub mod events;
pub mod files;
pub mod http;
pub mod mqtt;
pub mod names;
pub mod operator;
pub mod pgn;
pub mod publish;
pub mod session;
pub mod sim;
pub mod timecontrol;
pub mod tracker;
