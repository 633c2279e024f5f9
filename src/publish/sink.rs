//! File sink: `games.pgn` and `game-N.pgn` in a per-round folder, what the
//! Lichess broadcaster app watches. Every file is replaced atomically (temp file
//! in the same folder, fsync, rename), so a watcher never reads half a file.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use super::feeds::{board_game_in, current_round, round_boards_in};
use super::tournament::Tournament;
use crate::daemon::hub::Hub;

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
        let mut f = crate::files::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&tmp)?;
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

/// Writes the current round's folder (see [`write_round_in`]).
pub fn write_round(dir: &Path, hub: &Hub, t: &Tournament) -> Result<PathBuf, SinkError> {
    write_round_in(dir, hub, t, current_round(hub, t))
}

/// Writes `<dir>/round-<r>/games.pgn` and one `game-<board>.pgn` per board of
/// round `r`. Returns the round folder.
pub fn write_round_in(
    dir: &Path,
    hub: &Hub,
    t: &Tournament,
    round: u32,
) -> Result<PathBuf, SinkError> {
    let folder = dir.join(format!("round-{round}"));
    crate::files::create_dir_all(&folder).map_err(|source| SinkError {
        path: folder.clone(),
        source,
    })?;
    let mut all = String::new();
    for b in round_boards_in(hub, t, round) {
        if let Some(g) = board_game_in(hub, t, round, b) {
            let text = g.to_pgn();
            write_atomic(&folder.join(format!("game-{b}.pgn")), text.as_bytes())?;
            all.push_str(&text);
        }
    }
    write_atomic(&folder.join("games.pgn"), all.as_bytes())?;
    Ok(folder)
}

/// Rewrites the round's files after every public event of `hub` (pass the
/// delayed hub when the broadcast is delayed). Runs until the hub is dropped.
/// Bursts are coalesced: one rewrite covers every event already queued. The
/// current round's folder is rewritten each time, and an earlier round's when
/// an event belongs to one of its games (a game still going on after the round
/// changed, a result entered late), so finished rounds keep their files.
pub async fn run(dir: PathBuf, hub: Arc<Hub>, t: Arc<Tournament>) {
    // A tournament that never changes: a watch whose sender is dropped at once
    // never reports a change.
    let (_, unchanged) = tokio::sync::watch::channel(());
    run_following(dir, hub, move || Arc::clone(&t), unchanged).await
}

/// [`run`] for tournament data that changes while the daemon runs (arbiters
/// assign pairings, swap colours, mark boards inactive): `tournament` gives the
/// data now, and a change on `changed` rewrites every round's files at once, so
/// the broadcast shows the new names without waiting for the next move.
pub async fn run_following(
    dir: PathBuf,
    hub: Arc<Hub>,
    tournament: impl Fn() -> Arc<Tournament>,
    mut changed: tokio::sync::watch::Receiver<()>,
) {
    use tokio::sync::broadcast::error::TryRecvError;
    let mut rx = hub.subscribe_public();
    let write = |hub: &Hub, t: &Tournament, rounds: &BTreeSet<u32>| {
        for &r in rounds {
            if let Err(e) = write_round_in(&dir, hub, t, r) {
                eprintln!("publish: {e}");
            }
        }
    };
    // Every round with a game or a pairing: after a restart (or a pairing
    // change) the folders of earlier rounds are as complete as the current one's.
    let all_rounds = |hub: &Hub, t: &Tournament| -> BTreeSet<u32> {
        let current = current_round(hub, t);
        (1..=t.config.rounds.max(current))
            .filter(|&r| r == current || !round_boards_in(hub, t, r).is_empty())
            .collect()
    };
    let t = tournament();
    write(&hub, &t, &all_rounds(&hub, &t));
    let mut watching = true;
    loop {
        let mut rounds = BTreeSet::new();
        tokio::select! {
            got = rx.recv() => match got {
                Ok(ev) => {
                    rounds.insert(ev.round);
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            c = changed.changed(), if watching => match c {
                Ok(()) => rounds = all_rounds(&hub, &tournament()),
                // The data can no longer change: events alone drive the rewrites.
                Err(_) => {
                    watching = false;
                    continue;
                }
            },
        }
        loop {
            match rx.try_recv() {
                Ok(ev) => {
                    rounds.insert(ev.round);
                }
                Err(TryRecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
        let t = tournament();
        rounds.insert(current_round(&hub, &t));
        write(&hub, &t, &rounds);
    }
}
