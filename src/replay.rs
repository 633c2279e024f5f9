//! `eboard-bridge replay` (being written).
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Entry point of `eboard-bridge replay`.
pub fn run_cli(events: Option<&Path>, captures: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let _ = (events, captures);
    anyhow::bail!("replay is not built yet")
}
