//! Operator commands: what an arbiter asks for on the dashboard.
//!
//! Two kinds, kept apart because they are stored differently:
//!
//! * [`TrackerCommand`]s change what a board's tracker does (enter a result,
//!   reject a retraction, set a start position, switch the board off or on).
//!   They are *inputs*, like the board's bytes: the daemon journals each one in
//!   the board's capture stream at its time (an `operator` line, see
//!   `docs/capture-format.md`) and applies it in order with the bytes, so crash
//!   recovery and `eboard-bridge replay` rebuild exactly the same games.
//! * Pairing changes (assign a pairing, swap colours under Article 7.3) are
//!   tournament metadata: they change names on the feeds, never a move. The
//!   [`Desk`] keeps them, on top of the configured tournament, in
//!   `<data_dir>/operator/pairings.json`, rewritten atomically.
//!
//! The HTTP handler validates the request into one of these, so nothing
//! unchecked reaches the daemon's loop.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, FromSetup};
use tokio::sync::{mpsc, oneshot};

use crate::events::GameResult;
use crate::publish::{Player, Tournament};

/// Why an operator command was refused. The messages go to the arbiter as they
/// are, so each says what is wrong and what to do.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum OperatorError {
    #[error("{0:?} is not a result: use \"1-0\", \"0-1\" or \"1/2-1/2\"")]
    BadResult(String),
    #[error("start position {fen:?} is not usable: {reason}; give a legal FEN such as a PGN's FEN tag holds")]
    BadFen { fen: String, reason: String },
    #[error("there is no board {0}: check the board number on the dashboard")]
    UnknownBoard(u32),
    #[error("board {0} has no game yet: a result can be entered once the game has started")]
    NoGame(u32),
    #[error("board {0} has no retraction to accept or reject: only the last retraction of the current game can be ruled on")]
    NoRetraction(u32),
    #[error("{field}: {problem}")]
    BadField {
        field: &'static str,
        problem: String,
    },
    #[error("the command could not be journaled ({0}), so it was not applied; check the data directory's disk space and permissions")]
    Journal(String),
    #[error("this server has no daemon attached, so board commands cannot be applied; run `eboard-bridge run`")]
    NoDaemon,
    #[error("the daemon did not answer (it is stopping or overloaded); try again")]
    DaemonGone,
    #[error("board {0} is on a DGT bus, and the bus protocol cannot pass commands to a clock: set the times on the clock by hand")]
    ClockOnBus(u32),
    #[error("board {0}'s clock sides are not known yet (the daemon learns which side is White's when the clock is started or first pressed): set the times on the clock by hand, or start the clock and try again")]
    ClockSidesUnknown(u32),
    #[error("board {0} is not answering: check its cable, then try again")]
    BoardOffline(u32),
    #[error("board {board}'s clock was not set: {reason}")]
    ClockFailed { board: u32, reason: String },
    #[error(
        "cannot save the pairings to {path}: {problem}; check the data directory's permissions"
    )]
    Persist { path: PathBuf, problem: String },
    #[error(
        "cannot read the arbiters' pairing changes in {path}: {problem}; fix the file, or move it \
         away to start again from the configured pairings"
    )]
    LoadPairings { path: PathBuf, problem: String },
    #[error(
        "cannot save the ruling to {path}: {problem}; it was not applied, so the alert is as it was; check the data directory's disk space and permissions, then try again"
    )]
    SaveRuling { path: PathBuf, problem: String },
}

/// Why a tracker did not take an operator command (the session adds the board).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Refusal {
    #[error("no game has started")]
    NoGame,
    #[error("no retraction to rule on")]
    NoRetraction,
    #[error("{0}")]
    BadFen(String),
}

/// A result as the operator API spells it (the PGN tokens).
pub fn parse_result(text: &str) -> Result<GameResult, OperatorError> {
    match text.trim() {
        "1-0" => Ok(GameResult::WhiteWins),
        "0-1" => Ok(GameResult::BlackWins),
        "1/2-1/2" | "½-½" => Ok(GameResult::Draw),
        _ => Err(OperatorError::BadResult(text.to_owned())),
    }
}

/// Checks a start FEN with shakmaty: it must parse and be a legal position
/// (standard or Chess960 castling rights). Returns it trimmed.
pub fn check_fen(fen: &str) -> Result<String, OperatorError> {
    let fen = fen.trim();
    let bad = |reason: String| OperatorError::BadFen {
        fen: fen.to_owned(),
        reason,
    };
    let parsed: Fen = fen.parse().map_err(|e| bad(format!("{e}")))?;
    let mode = CastlingMode::detect(parsed.as_setup());
    Chess::from_setup(parsed.into_setup(), mode).map_err(|e| bad(format!("{e}")))?;
    Ok(fen.to_owned())
}

/// A command for one board's tracker, as journaled (the JSON of an `operator`
/// capture line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrackerCommand {
    /// The game ends with `result` (an arbiter's decision, a resignation or an
    /// agreed draw the board could not show). `reason` is the arbiter's note
    /// (may be empty): journaled and shown on the timeline, never published.
    SetResult {
        #[serde(with = "result_token")]
        result: GameResult,
        reason: String,
    },
    /// The last retraction stands (the correction was authorised).
    AcceptRetraction,
    /// The last retraction is void: the withdrawn moves stand, and the board
    /// must be put back to the position after them.
    RejectRetraction,
    /// Games on this board start from `fen`.
    SetStartFen { fen: String },
    /// An inactive board raises no alerts (a bye, an empty table, a board used
    /// for analysis) and is left out of the round's feeds.
    SetActive { active: bool },
}

impl TrackerCommand {
    /// The operator API's name for the command.
    pub fn action(&self) -> &'static str {
        match self {
            TrackerCommand::SetResult { .. } => "set_result",
            TrackerCommand::AcceptRetraction => "accept_retraction",
            TrackerCommand::RejectRetraction => "reject_retraction",
            TrackerCommand::SetStartFen { .. } => "set_start_fen",
            TrackerCommand::SetActive { .. } => "set_active",
        }
    }

    /// One line for the arbiters' timeline.
    pub fn describe(&self) -> String {
        match self {
            TrackerCommand::SetResult { result, reason } if reason.is_empty() => {
                format!("result {}", result.as_pgn())
            }
            TrackerCommand::SetResult { result, reason } => {
                format!("result {} ({reason})", result.as_pgn())
            }
            TrackerCommand::AcceptRetraction => "retraction accepted".into(),
            TrackerCommand::RejectRetraction => {
                "retraction rejected: the withdrawn moves stand".into()
            }
            TrackerCommand::SetStartFen { fen } => format!("start position {fen}"),
            TrackerCommand::SetActive { active: true } => "board marked active".into(),
            TrackerCommand::SetActive { active: false } => "board marked inactive".into(),
        }
    }
}

mod result_token {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::events::GameResult;

    pub fn serialize<S: Serializer>(r: &GameResult, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_pgn())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<GameResult, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_result(&text).map_err(serde::de::Error::custom)
    }
}

/// A tracker command on its way to the daemon's loop, with where to send the
/// answer (the HTTP handler waits for it, so the arbiter learns whether the
/// board took it).
#[derive(Debug)]
pub struct BoardRequest {
    pub board: u32,
    /// Who asked (the arbiter's name), journaled with the command.
    pub by: String,
    pub command: BoardCommand,
    pub reply: oneshot::Sender<Result<(), OperatorError>>,
}

/// How long an arbiter's clock setting may wait for the daemon's answer:
/// the commands queued before it plus its own two attempts, with room to spare.
const SET_CLOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What an arbiter asks of one board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardCommand {
    /// An input for the board's tracker (journaled, replayed).
    Tracker(TrackerCommand),
    /// Times for the board's clock, sent to the clock through the board. The
    /// bytes written are journaled in the capture like every other byte; the
    /// tracker sees the new times in the clock's next readings.
    SetClock(ClockSetting),
}

/// Times to put on a clock, by colour (the daemon knows which side is whose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSetting {
    pub white_ms: u64,
    pub black_ms: u64,
    /// Whether the clock runs after the set (for the side whose turn the
    /// lever shows), or stays paused.
    pub run: bool,
}

impl ClockSetting {
    /// How the timeline words it.
    pub fn describe(&self) -> String {
        format!(
            "clock set to White {}, Black {}{}",
            hms_text(self.white_ms),
            hms_text(self.black_ms),
            if self.run { "" } else { ", paused" }
        )
    }
}

/// `ms` as H:MM:SS.
fn hms_text(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// The most a DGT clock shows: 9:59:59.
pub const CLOCK_MAX_MS: u64 = (9 * 3600 + 59 * 60 + 59) * 1000;

/// Reads a clock time as an arbiter types it: `H:MM:SS`, `M:SS` or whole
/// seconds, at most 9:59:59 (what a DGT clock can show).
pub fn parse_clock_time(field: &'static str, text: &str) -> Result<u64, OperatorError> {
    let bad = |problem: String| OperatorError::BadField { field, problem };
    let text = text.trim();
    let parts: Vec<&str> = text.split(':').collect();
    let numbers: Option<Vec<u64>> = parts
        .iter()
        .map(|p| {
            (!p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect();
    let Some(numbers) = numbers else {
        return Err(bad(format!(
            "{text:?} is not a time: write H:MM:SS, M:SS or seconds, e.g. \"1:25:00\""
        )));
    };
    let seconds = match numbers.as_slice() {
        [s] => *s,
        [m, s] if *s < 60 => m * 60 + s,
        [h, m, s] if *m < 60 && *s < 60 => h * 3600 + m * 60 + s,
        _ => {
            return Err(bad(format!(
                "{text:?} is not a time: minutes and seconds go up to 59, e.g. \"1:25:00\""
            )))
        }
    };
    let ms = seconds * 1000;
    if ms > CLOCK_MAX_MS {
        return Err(bad(format!(
            "{text:?} is more than a DGT clock can show (9:59:59)"
        )));
    }
    Ok(ms)
}

/// The sending end the HTTP side holds.
pub type CommandSender = mpsc::Sender<BoardRequest>;

/// Pairing changes made on the dashboard, kept apart from the configuration so
/// the configured data stays the base and a reset is a file deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairingOverrides {
    /// Pairings assigned on the dashboard, replacing the configured ones.
    #[serde(default)]
    pub assigned: Vec<AssignedPairing>,
    /// (round, board) whose players sat on the wrong colours (Article 7.3):
    /// White and Black are swapped for that game.
    #[serde(default)]
    pub swapped: BTreeSet<(u32, u32)>,
    /// Boards marked inactive (left out of the round's feeds).
    #[serde(default)]
    pub inactive: BTreeSet<u32>,
}

/// One pairing assigned on the dashboard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssignedPairing {
    pub round: u32,
    pub board: u32,
    pub white: Player,
    pub black: Player,
}

/// Where the pairing overrides are kept under the data directory.
pub fn pairings_path(data_dir: &Path) -> PathBuf {
    data_dir.join("operator").join("pairings.json")
}

/// Where arbiters' rulings on alerts are kept: `<data_dir>/operator/alert-rulings.jsonl`.
pub fn rulings_path(data_dir: &Path) -> PathBuf {
    data_dir.join("operator").join("alert-rulings.jsonl")
}

/// What an arbiter did with an alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RulingAction {
    /// Seen; the alert stays open until resolved.
    Acknowledge,
    /// Dealt with; the alert is closed.
    Resolve,
}

/// An arbiter's ruling on one alert, as kept in the rulings file (one JSON
/// object per line). The alert is named by board and the tracker's alert id,
/// which a rebuild from the journal gives again, so that acknowledged and
/// resolved alerts stay so after a restart (the hub's notice numbers do not
/// survive one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRuling {
    pub board: u32,
    pub alert: u32,
    pub action: RulingAction,
    /// The text the resolution carries ("resolved by IA Example: ...").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub by: String,
}

/// Appends `ruling` to the rulings file and fsyncs it, so a ruling the
/// arbiter saw accepted survives a crash.
pub fn append_ruling(path: &Path, ruling: &AlertRuling) -> Result<(), OperatorError> {
    use std::io::Write;
    let persist = |problem: String| OperatorError::SaveRuling {
        path: path.to_owned(),
        problem,
    };
    if let Some(dir) = path.parent() {
        crate::files::create_dir_all(dir).map_err(|e| persist(e.to_string()))?;
    }
    let mut line = serde_json::to_vec(ruling).map_err(|e| persist(e.to_string()))?;
    line.push(b'\n');
    let mut file = crate::files::options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| persist(e.to_string()))?;
    file.write_all(&line)
        .and_then(|()| file.sync_data())
        .map_err(|e| persist(e.to_string()))
}

/// Reads the rulings file, oldest first. A missing file is no rulings. A line
/// that is not a ruling (a write cut short by a crash, a hand edit) is
/// skipped and reported in the second list with its line number, so one bad
/// line never costs the others.
pub fn load_rulings(path: &Path) -> std::io::Result<(Vec<AlertRuling>, Vec<String>)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut rulings = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => rulings.push(r),
            Err(e) => bad.push(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok((rulings, bad))
}

/// The tournament as the arbiters have amended it: the configured data plus
/// the overrides, rebuilt on every change so readers take a cheap snapshot.
#[derive(Debug)]
pub struct Desk {
    base: Tournament,
    file: Option<PathBuf>,
    /// The arbiters' rulings on alerts (see [`AlertRuling`]), when kept.
    rulings: Option<PathBuf>,
    inner: RwLock<(PairingOverrides, Arc<Tournament>)>,
    commands: Option<CommandSender>,
    /// Told after every change (the PGN file sink rewrites its files).
    changed: tokio::sync::watch::Sender<()>,
}

impl Desk {
    /// A desk over `base` with no overrides, no file and no daemon (tests, the
    /// router on its own).
    pub fn new(base: Tournament) -> Desk {
        let current = Arc::new(base.clone());
        Desk {
            base,
            file: None,
            rulings: None,
            inner: RwLock::new((PairingOverrides::default(), current)),
            commands: None,
            changed: tokio::sync::watch::channel(()).0,
        }
    }

    /// A desk that keeps its overrides in `file` (read now when it exists) and
    /// sends board commands to the daemon through `commands`.
    pub fn open(
        base: Tournament,
        file: PathBuf,
        commands: Option<CommandSender>,
    ) -> Result<Desk, OperatorError> {
        let overrides = match std::fs::read(&file) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| OperatorError::LoadPairings {
                    path: file.clone(),
                    problem: format!("it is not valid JSON of pairing changes ({e})"),
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => PairingOverrides::default(),
            Err(e) => {
                return Err(OperatorError::LoadPairings {
                    path: file,
                    problem: e.to_string(),
                })
            }
        };
        let current = Arc::new(amend(&base, &overrides));
        Ok(Desk {
            base,
            file: Some(file),
            rulings: None,
            inner: RwLock::new((overrides, current)),
            commands,
            changed: tokio::sync::watch::channel(()).0,
        })
    }

    /// Keeps the arbiters' rulings on alerts in `path` (appended, fsynced).
    pub fn with_rulings(mut self, path: PathBuf) -> Desk {
        self.rulings = Some(path);
        self
    }

    /// Saves an arbiter's ruling on an alert before it is applied, so that what
    /// the arbiter saw accepted survives a restart. Without a rulings file
    /// (tests, a server with no data directory) there is nothing to do.
    pub fn record_ruling(&self, ruling: &AlertRuling) -> Result<(), OperatorError> {
        match &self.rulings {
            Some(path) => append_ruling(path, ruling),
            None => Ok(()),
        }
    }

    /// The tournament as amended now.
    pub fn tournament(&self) -> Arc<Tournament> {
        Arc::clone(&self.inner.read().unwrap_or_else(|e| e.into_inner()).1)
    }

    /// The overrides now.
    pub fn overrides(&self) -> PairingOverrides {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Whether board `board` was marked inactive.
    pub fn is_inactive(&self, board: u32) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .inactive
            .contains(&board)
    }

    /// Changes the overrides with `f`, saves them, then makes them current. The
    /// file is written first: a change the arbiter saw accepted survives a restart.
    pub fn change(&self, f: impl FnOnce(&mut PairingOverrides)) -> Result<(), OperatorError> {
        let mut guard = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let mut next = guard.0.clone();
        f(&mut next);
        if let Some(file) = &self.file {
            let persist = |problem: String| OperatorError::Persist {
                path: file.clone(),
                problem,
            };
            if let Some(dir) = file.parent() {
                crate::files::create_dir_all(dir).map_err(|e| persist(e.to_string()))?;
            }
            let text = serde_json::to_vec_pretty(&next).map_err(|e| persist(e.to_string()))?;
            crate::publish::sink::write_atomic(file, &text).map_err(|e| persist(e.to_string()))?;
        }
        let current = Arc::new(amend(&self.base, &next));
        *guard = (next, current);
        drop(guard);
        self.changed.send_replace(());
        Ok(())
    }

    /// Reports every change from now on.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<()> {
        self.changed.subscribe()
    }

    /// Sends a board command to the daemon and waits for its answer.
    pub async fn send(
        &self,
        board: u32,
        by: &str,
        command: TrackerCommand,
    ) -> Result<(), OperatorError> {
        self.request(board, by, BoardCommand::Tracker(command))
            .await
    }

    /// Sets board `board`'s clock and waits until the clock has acked the
    /// times, or the daemon has given up (one resend, about 4 s at most).
    pub async fn set_clock(
        &self,
        board: u32,
        by: &str,
        setting: ClockSetting,
    ) -> Result<(), OperatorError> {
        // The daemon answers within two attempts' ack windows once the
        // command is sent; commands queued before it add theirs. Beyond this
        // the arbiter is told rather than left waiting.
        let request = self.request(board, by, BoardCommand::SetClock(setting));
        tokio::time::timeout(SET_CLOCK_WAIT, request)
            .await
            .map_err(|_| OperatorError::DaemonGone)?
    }

    async fn request(
        &self,
        board: u32,
        by: &str,
        command: BoardCommand,
    ) -> Result<(), OperatorError> {
        let tx = self.commands.as_ref().ok_or(OperatorError::NoDaemon)?;
        let (reply, answer) = oneshot::channel();
        tx.send(BoardRequest {
            board,
            by: by.to_owned(),
            command,
            reply,
        })
        .await
        .map_err(|_| OperatorError::DaemonGone)?;
        answer.await.map_err(|_| OperatorError::DaemonGone)?
    }
}

/// `base` with the overrides applied: assigned pairings replace configured ones,
/// then swapped games exchange their players.
fn amend(base: &Tournament, o: &PairingOverrides) -> Tournament {
    let mut t = base.clone();
    for a in &o.assigned {
        t.config.rounds = t.config.rounds.max(a.round);
        t.pairings
            .insert((a.round, a.board), (a.white.clone(), a.black.clone()));
    }
    for key in &o.swapped {
        if let Some((w, b)) = t.pairings.get_mut(key) {
            std::mem::swap(w, b);
        }
    }
    t.inactive = o.inactive.clone();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_fens_are_checked() {
        assert_eq!(parse_result("1-0").unwrap(), GameResult::WhiteWins);
        assert_eq!(parse_result("1/2-1/2").unwrap(), GameResult::Draw);
        let e = parse_result("2-0").unwrap_err();
        assert!(e.to_string().contains("\"1-0\""), "{e}");
        assert!(check_fen("8/8/8/8/8/8/8/K6k w - - 0 1").is_ok());
        let e = check_fen("8/8/8/8/8/8/8/KK5k w - - 0 1").unwrap_err();
        assert!(matches!(e, OperatorError::BadFen { .. }), "{e}");
        assert!(check_fen("not a fen").is_err());
    }

    #[test]
    fn commands_round_trip_as_journal_json() {
        let c = TrackerCommand::SetResult {
            result: GameResult::Draw,
            reason: "agreed".into(),
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"action":"set_result","result":"1/2-1/2","reason":"agreed"})
        );
        assert_eq!(serde_json::from_value::<TrackerCommand>(v).unwrap(), c);
        let bad = serde_json::json!({"action":"set_result","result":"3-0","reason":""});
        assert!(serde_json::from_value::<TrackerCommand>(bad).is_err());
        // A field this version does not know could change the meaning: refused.
        let extra = serde_json::json!({"action":"set_active","active":true,"only_for":"round 2"});
        assert!(serde_json::from_value::<TrackerCommand>(extra).is_err());
        let unknown = serde_json::json!({"action":"undo_everything"});
        assert!(serde_json::from_value::<TrackerCommand>(unknown).is_err());
    }

    #[test]
    fn overrides_swap_assign_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let file = pairings_path(dir.path());
        let p = |name: &str| Player {
            name: name.into(),
            ..Player::default()
        };
        let desk = Desk::open(Tournament::default(), file.clone(), None).unwrap();
        desk.change(|o| {
            o.assigned.push(AssignedPairing {
                round: 1,
                board: 2,
                white: p("A"),
                black: p("B"),
            });
            o.swapped.insert((1, 2));
            o.inactive.insert(5);
        })
        .unwrap();
        let (w, b) = desk.tournament().pairing(1, 2).cloned().unwrap();
        assert_eq!((w.name.as_str(), b.name.as_str()), ("B", "A"));
        let again = Desk::open(Tournament::default(), file, None).unwrap();
        assert_eq!(again.overrides(), desk.overrides());
        assert!(again.is_inactive(5));
        assert!(again.tournament().inactive.contains(&5));
    }

    #[test]
    fn a_corrupt_pairings_file_is_a_read_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pairings.json");
        std::fs::write(&file, "{\"assigned\": [").unwrap();
        let e = Desk::open(Tournament::default(), file.clone(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read") && e.contains("pairings.json"),
            "{e}"
        );
        assert!(!e.contains("save"), "reading, not saving: {e}");
        assert!(e.contains("move it away"), "{e}");
    }
}
