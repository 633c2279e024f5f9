//! File sink: `games.pgn` and `game-N.pgn` in a per-round folder, what the
//! Lichess broadcaster app watches. Every file is replaced atomically (temp file
//! in the same folder, fsync, rename), so a watcher never reads half a file.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::feeds::{board_game, games_pgn, round_boards};
use super::tournament::Tournament;
use crate::hub::Hub;

/// Errors writing the PGN files.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot write {path}: {source}; check that the folder exists and is writable by the daemon"
)]
pub struct SinkError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Replaces `path` with `contents` so readers see the old or the new file, never a mix.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), SinkError> {
    let err = |source| SinkError {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A dot name: watchers that pick up `*.pgn` ignore the temp file.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename itself is durable only once the folder is synced.
        fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Writes `<dir>/round-<r>/games.pgn` and one `game-<board>.pgn` per board.
/// Returns the round folder.
pub fn write_round(dir: &Path, hub: &Hub, t: &Tournament) -> Result<PathBuf, SinkError> {
    let folder = dir.join(format!("round-{}", t.config.current_round));
    fs::create_dir_all(&folder).map_err(|source| SinkError {
        path: folder.clone(),
        source,
    })?;
    for b in round_boards(hub, t) {
        if let Some(g) = board_game(hub, t, b) {
            write_atomic(&folder.join(format!("game-{b}.pgn")), g.to_pgn().as_bytes())?;
        }
    }
    write_atomic(&folder.join("games.pgn"), games_pgn(hub, t).as_bytes())?;
    Ok(folder)
}

/// Rewrites the round's files after every public event of `hub` (pass the
/// delayed hub when the broadcast is delayed). Runs until the hub is dropped.
/// Bursts are coalesced: one rewrite covers every event already queued.
pub async fn run(dir: PathBuf, hub: Arc<Hub>, t: Arc<Tournament>) {
    // A tournament that never changes: a watch whose sender is dropped at once
    // never reports a change.
    let (_, unchanged) = tokio::sync::watch::channel(());
    run_following(dir, hub, move || Arc::clone(&t), unchanged).await
}

/// [`run`] for tournament data that changes while the daemon runs (arbiters
/// assign pairings, swap colours, mark boards inactive): `tournament` gives the
/// data now, and a change on `changed` rewrites the files at once, so the
/// broadcast shows the new names without waiting for the next move.
pub async fn run_following(
    dir: PathBuf,
    hub: Arc<Hub>,
    tournament: impl Fn() -> Arc<Tournament>,
    mut changed: tokio::sync::watch::Receiver<()>,
) {
    let mut rx = hub.subscribe_public();
    let write = |hub: &Hub| {
        if let Err(e) = write_round(&dir, hub, &tournament()) {
            eprintln!("publish: {e}");
        }
    };
    write(&hub);
    let mut watching = true;
    loop {
        tokio::select! {
            got = rx.recv() => match got {
                Ok(_) | Err(RecvError::Lagged(_)) => {
                    while let Ok(_) | Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) =
                        rx.try_recv()
                    {}
                    write(&hub);
                }
                Err(RecvError::Closed) => return,
            },
            c = changed.changed(), if watching => match c {
                Ok(()) => write(&hub),
                // The data can no longer change: events alone drive the rewrites.
                Err(_) => watching = false,
            },
        }
    }
}
