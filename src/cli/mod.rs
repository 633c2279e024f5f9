//! Commands that are not the daemon: each is what one `eboard-bridge`
//! subcommand runs, on top of the library (`run` is [`crate::daemon`],
//! `replay` is [`crate::session::replay`]).
//!
//! * [`demo`]: virtual boards of every family playing real games into the
//!   real daemon.
//! * [`doctor`]: checks of the machine, each with its fix.
//! * [`emulate`]: one virtual board on a pseudo-terminal.

pub mod demo;
pub mod doctor;
pub mod emulate;
