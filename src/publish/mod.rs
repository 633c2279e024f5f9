//! Publishing verified games: tournament data, feed bodies (PGN, LiveChess
//! Cloud JSON), the PGN file sink and the broadcast delay.
//!
//! Everything here reads the hub's public side only (Article 12.6).

pub mod delay;
pub mod feeds;
pub mod ids;
pub mod lichess;
pub mod sink;
pub mod tournament;

pub use tournament::{PairingConfig, Player, Tournament, TournamentConfig, TournamentError};
