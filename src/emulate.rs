//! `eboard-bridge emulate` (being written).
use std::path::Path;
use std::process::ExitCode;

/// Entry point of `eboard-bridge emulate`.
pub fn run_cli(pgn: &Path, link: Option<&Path>) -> anyhow::Result<ExitCode> {
    let _ = (pgn, link);
    anyhow::bail!("emulate is not built yet")
}
