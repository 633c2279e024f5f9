//! The `eboard-bridge` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "eboard-bridge",
    version,
    about = "Bridge electronic chess boards to broadcasts and arbiters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: follow the boards, journal everything, publish the games.
    Run {
        /// Configuration file (TOML); without it the defaults apply (see print-config).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Print the default configuration as a commented TOML file.
    PrintConfig,
    /// Check this machine for a tournament: serial devices and who holds them,
    /// permissions, the data directory, the HTTP port, the clock, the
    /// configuration. Exits non-zero when something blocks a tournament.
    Doctor {
        /// Configuration file to check; without it the service's
        /// /etc/eboard-bridge/eboard-bridge.toml when it exists, else the defaults.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Decode captures, reconstruct the games and print them as PGN.
    Replay {
        /// Write the game events (moves, alerts, clocks, results) as JSON Lines to FILE.
        #[arg(long, value_name = "FILE")]
        events: Option<PathBuf>,
        /// Capture files (JSON Lines, see docs/capture-format.md).
        #[arg(required = true, value_name = "CAPTURE")]
        captures: Vec<PathBuf>,
    },
    /// Run a virtual board on a pseudo-terminal, playing a game from a PGN file.
    Emulate {
        /// The board family: dgt, millennium, certabo, chessnut or occupancy.
        #[arg(long, value_name = "NAME", default_value = "dgt")]
        protocol: String,
        /// The game to play (the first game of the file unless --game is given).
        #[arg(long, value_name = "FILE")]
        pgn: PathBuf,
        /// Create a symlink to the pseudo-terminal at PATH.
        #[arg(long, value_name = "PATH")]
        link: Option<PathBuf>,
        /// Which game of the file to play, from 1.
        #[arg(long, value_name = "N", default_value_t = 1)]
        game: usize,
        /// Divide thinking time by X (10 = ten times faster than real players).
        #[arg(long, value_name = "X", default_value_t = 1.0)]
        speed: f64,
        /// Seed of the hands and the sensors (same seed, same byte stream).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// White sits at the far side from the board's connector.
        #[arg(long)]
        rotated: bool,
        /// White's clock is on the right.
        #[arg(long)]
        clock_right: bool,
    },
    /// Virtual boards playing real games through the whole pipeline.
    Demo {
        /// Number of virtual boards.
        #[arg(long, default_value_t = 8)]
        boards: usize,
        /// Only boards of this family (dgt, millennium, certabo, chessnut,
        /// occupancy); by default the boards take every family in turn.
        #[arg(long, value_name = "NAME")]
        protocol: Option<String>,
        /// Thinking time is divided by this (hands still move at human speed).
        #[arg(long, default_value_t = 30.0)]
        speed: f64,
        /// Seed of the hand model, for a reproducible run.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Stop after this many seconds even if games are still running.
        #[arg(long, value_name = "SECONDS")]
        max_seconds: Option<u64>,
        /// The daemon's data directory (journal, captures, PGN files); a fresh
        /// temporary directory when not given.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Address for the feeds and the arbiter dashboard (a free port is taken
        /// when this one is busy).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { config } => eboard_bridge::daemon::run_cli(config.as_deref()),
        Command::PrintConfig => {
            print!("{}", eboard_bridge::daemon::config::DEFAULT_CONFIG_TOML);
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor { config } => eboard_bridge::cli::doctor::run_cli(config.as_deref()),
        Command::Replay { events, captures } => {
            eboard_bridge::session::replay::run_cli(events.as_deref(), &captures)
        }
        Command::Emulate {
            protocol,
            pgn,
            link,
            game,
            speed,
            seed,
            rotated,
            clock_right,
        } => eboard_bridge::cli::emulate::run_cli(&eboard_bridge::cli::emulate::EmulateArgs {
            protocol,
            pgn,
            link,
            game,
            speed,
            seed,
            rotated,
            clock_right,
        }),
        Command::Demo {
            boards,
            protocol,
            speed,
            seed,
            max_seconds,
            data_dir,
            listen,
        } => eboard_bridge::cli::demo::run_cli(&eboard_bridge::cli::demo::DemoOptions {
            boards,
            protocol,
            speed,
            seed,
            max_duration: max_seconds.map(std::time::Duration::from_secs),
            data_dir,
            listen,
        }),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("eboard-bridge: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line. Many of our errors already quote their
/// cause in their own sentence (so that logs read well), so a cause whose text is
/// already there is not repeated.
fn describe(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
