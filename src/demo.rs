//! `eboard-bridge demo` (being written).
use std::process::ExitCode;

/// Entry point of `eboard-bridge demo`.
pub fn run_cli() -> anyhow::Result<ExitCode> {
    anyhow::bail!("demo is not built yet")
}
