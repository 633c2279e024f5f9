//! The journal: every byte every board sent or was sent, and every event, on
//! disk before anyone else hears of it, so a crash loses nothing the daemon
//! published. Layout and policy are documented in `docs/journal.md`:
//!
//! ```text
//! <data_dir>/journal/captures/<port key>/<run>.jsonl   one capture per port per run
//! <data_dir>/journal/events/board-<N>.jsonl            every event of board N, appended
//! <data_dir>/games/board-<N>.pgn                       board N's games, rewritten atomically
//! ```
//!
//! The captures are the source of truth: on start the daemon replays a port's
//! captures, oldest run first, through a fresh session, which rebuilds games,
//! plies, clocks and open alerts exactly as the tracker saw them, and then
//! continues that same session with the live port. The event log is the audit
//! trail of what was published; it is never replayed.
//!
//! Ordering is what makes "nothing lost, nothing duplicated" hold across
//! `kill -9`: a chunk that caused events reaches the operating system (write,
//! not yet fsync) before any of those events is logged or published. So every
//! published event is re-derived on recovery, and recovery publishes nothing.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::events::{GameEvent, Stamped, TrackerEvent};
use crate::pgn::GameRecord;
use crate::session::capture::{
    CaptureHeader, CaptureReader, CaptureWriter, Chunk, OperatorLine, PortMode, Record,
};
use eboard_protocols::family::Settings;

/// Captures and event logs are fsynced at least this often when written to.
pub const SYNC_INTERVAL: Duration = Duration::from_millis(200);

/// Why the journal cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot create {path}: {source}. Check that data_dir exists or can be created and is writable by the daemon's user")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}. The disk may be full or read-only; free space or fix data_dir")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the journal {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    DataDir(#[from] crate::files::DataDirError),
}

/// Milliseconds since the Unix epoch, now.
pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// RFC 3339 UTC time of `unix_ms` (`2026-11-22T14:05:00.123Z`).
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        unix_ms % 1000
    )
}

/// The directory name of a port's captures: its path with `/` turned into `_`
/// and anything unusual into `-`, so `/dev/serial/by-id/usb-DGT_x-if00` is
/// `dev_serial_by-id_usb-DGT_x-if00`.
pub fn port_key(path: &Path) -> String {
    path.to_string_lossy()
        .trim_start_matches('/')
        .chars()
        .map(|c| match c {
            '/' => '_',
            c if c.is_ascii_alphanumeric() || "._-".contains(c) => c,
            _ => '-',
        })
        .collect()
}

/// What a port's capture header records about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortHeader {
    pub port: PathBuf,
    /// The board's number, for a single-board port.
    pub board: Option<u32>,
    /// The board family (the header's `protocol`).
    pub protocol: &'static str,
    pub mode: PortMode,
    /// What the family's codec starts with (the header's `settings`).
    pub settings: Settings,
}

impl PortHeader {
    /// A header for `port` with no settings.
    pub fn new(port: &Path, board: Option<u32>, protocol: &'static str, mode: PortMode) -> Self {
        PortHeader {
            port: port.to_owned(),
            board,
            protocol,
            mode,
            settings: Settings::new(),
        }
    }
}

/// One earlier run's traffic on a port, read back.
#[derive(Debug)]
pub struct RecordedRun {
    pub file: PathBuf,
    /// The board family the run's header names.
    pub protocol: String,
    /// The settings the run's codec started with.
    pub settings: Settings,
    /// When the run started (header field `started_unix_ms`).
    pub started_unix_ms: u64,
    pub chunks: Vec<Chunk>,
    /// Arbiters' commands, each with the number of chunks that came before it.
    pub operators: Vec<(usize, OperatorLine)>,
    /// The last line was cut (the daemon died while writing it): ignored.
    pub torn_tail: bool,
}

struct OpenCapture {
    path: PathBuf,
    writer: CaptureWriter<BufWriter<File>>,
    /// A second descriptor of the same file, for fsync (the writer owns the first).
    sync_handle: File,
    dirty: bool,
}

struct EventLog {
    path: PathBuf,
    out: BufWriter<File>,
    dirty: bool,
    /// The last `board_seq` given in each stream (see [`LogStream`]).
    last_seq: [u64; 2],
}

/// The two numberings of a board's logged events: public game events and
/// arbiter-only alerts each count 1, 2, 3… per board, across runs, in the
/// `board_seq` field of their log line. Two counters, not one, so that a reader
/// of the public events sees no gap where an alert was (Article 12.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogStream {
    Public,
    Arbiter,
}

impl LogStream {
    /// The stream of `event`.
    pub fn of(event: &TrackerEvent) -> LogStream {
        match event {
            TrackerEvent::Game(_) => LogStream::Public,
            TrackerEvent::Alert(_) | TrackerEvent::Resolved(_) => LogStream::Arbiter,
        }
    }

    /// The stream of a logged line, from its `type`.
    pub fn of_type(kind: &str) -> LogStream {
        match kind {
            "alert" | "alert_resolved" => LogStream::Arbiter,
            _ => LogStream::Public,
        }
    }

    fn index(self) -> usize {
        match self {
            LogStream::Public => 0,
            LogStream::Arbiter => 1,
        }
    }

    /// `"public"` or `"arbiter"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Public => "public",
            LogStream::Arbiter => "arbiter",
        }
    }
}

/// Called with a board's number each time an event line of that board reached
/// the operating system (see [`Journal::set_appended_hook`]).
pub type AppendedHook = Box<dyn Fn(u32) + Send + Sync>;

/// The stream and `board_seq` of one event log line, found as bytes (the
/// logs are serde_json objects, where a quote inside a string is escaped, so
/// `"board_seq":` and `"type":"` can only be keys); `None` for a daemon note
/// or a line without a number.
pub fn logged_identity(line: &[u8]) -> Option<(LogStream, u64)> {
    const SEQ: &[u8] = b"\"board_seq\":";
    const TYPE: &[u8] = b"\"type\":\"";
    let at = memchr::memmem::find(line, SEQ)? + SEQ.len();
    let n = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    let seq = std::str::from_utf8(&line[at..at + n])
        .ok()?
        .parse::<u64>()
        .ok()
        .filter(|&s| s > 0)?;
    let t = memchr::memmem::find(line, TYPE)? + TYPE.len();
    let kind = &line[t..];
    let kind = &kind[..memchr::memchr(b'"', kind)?];
    Some((LogStream::of_type(std::str::from_utf8(kind).ok()?), seq))
}

/// The last `board_seq` of each stream in an event log's text, and whether
/// the text ends in a line cut by a crash (no newline at the end).
pub fn last_board_seqs(text: &[u8]) -> ([u64; 2], bool) {
    let mut last = [0u64; 2];
    let mut found = [false; 2];
    let cut = !text.is_empty() && !text.ends_with(b"\n");
    let mut lines = text.split(|&b| b == b'\n');
    if cut {
        // Not a whole line: never logged.
        let _ = lines.next_back();
    }
    for line in lines.rev() {
        let Some((stream, seq)) = logged_identity(line) else {
            continue;
        };
        if !found[stream.index()] {
            found[stream.index()] = true;
            last[stream.index()] = seq;
        }
        if found[0] && found[1] {
            break;
        }
    }
    (last, cut)
}

impl OpenCapture {
    /// Hands the buffered chunks to the OS and returns a descriptor to fsync
    /// (on the journal's thread, so the caller never waits for the disk).
    fn flush_for_sync(&mut self) -> Result<(PathBuf, File), JournalError> {
        let err = |source| JournalError::Write {
            path: self.path.clone(),
            source,
        };
        self.writer.flush().map_err(err)?;
        let handle = self.sync_handle.try_clone().map_err(err)?;
        self.dirty = false;
        Ok((self.path.clone(), handle))
    }
}

impl EventLog {
    /// Hands the buffered events to the OS and returns a descriptor to fsync.
    fn flush_for_sync(&mut self) -> Result<(PathBuf, File), JournalError> {
        let err = |source| JournalError::Write {
            path: self.path.clone(),
            source,
        };
        self.out.flush().map_err(err)?;
        let handle = self.out.get_ref().try_clone().map_err(err)?;
        self.dirty = false;
        Ok((self.path.clone(), handle))
    }
}

/// Work for the journal's background thread: fsyncs and game files, done in
/// the order given.
type BackgroundJob = Box<dyn FnOnce() + Send>;

/// The journal of one daemon run.
pub struct Journal {
    data_dir: PathBuf,
    run_unix_ms: u64,
    captures: std::collections::HashMap<String, OpenCapture>,
    events: std::collections::BTreeMap<u32, EventLog>,
    last_sync: Instant,
    /// The thread that fsyncs the batches (see [`Journal::sync_if_due`]),
    /// started on first use.
    syncer: Option<std::sync::mpsc::Sender<BackgroundJob>>,
    /// Told of every event line written (the MQTT publisher reads them back).
    appended: Option<AppendedHook>,
}

fn create_dir(path: &Path) -> Result<(), JournalError> {
    crate::files::create_dir_all(path).map_err(|source| JournalError::Create {
        path: path.to_owned(),
        source,
    })
}

impl Journal {
    /// Opens (creating) the journal under `data_dir` for a run starting now.
    pub fn open(data_dir: &Path) -> Result<Journal, JournalError> {
        crate::files::prepare_data_dir(data_dir)?;
        for sub in ["journal/captures", "journal/events", "games"] {
            create_dir(&data_dir.join(sub))?;
        }
        Ok(Journal {
            data_dir: data_dir.to_owned(),
            run_unix_ms: unix_ms_now(),
            captures: Default::default(),
            events: Default::default(),
            last_sync: Instant::now(),
            syncer: None,
            appended: None,
        })
    }

    /// Has `hook` called with the board's number after each event line of
    /// that board is handed to the operating system: a reader of the log
    /// (the MQTT publisher, `docs/mqtt.md`) then finds the whole line there.
    pub fn set_appended_hook(&mut self, hook: AppendedHook) {
        self.appended = Some(hook);
    }

    /// Board `board`'s event log.
    pub fn event_log_path(data_dir: &Path, board: u32) -> PathBuf {
        data_dir
            .join("journal/events")
            .join(format!("board-{board}.jsonl"))
    }

    /// When this run started.
    pub fn run_unix_ms(&self) -> u64 {
        self.run_unix_ms
    }

    /// The file where port `key`'s board keeps its family's settings between
    /// runs (Certabo: the calibration of piece ids).
    pub fn board_settings_path(&self, key: &str) -> PathBuf {
        self.data_dir.join("boards").join(format!("{key}.json"))
    }

    /// Port `key`'s board's saved settings (empty when none were saved). A
    /// file that cannot be read gives empty settings and the reason, for the
    /// log: the board then learns them again (Certabo: calibrates again from
    /// the start position).
    pub fn load_board_settings(&self, key: &str) -> (Settings, Option<String>) {
        let path = self.board_settings_path(key);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Settings::new(), None),
            Err(e) => {
                return (
                    Settings::new(),
                    Some(format!("cannot read {}: {e}", path.display())),
                )
            }
        };
        match serde_json::from_str::<Settings>(&text) {
            Ok(s) => (s, None),
            Err(e) => (
                Settings::new(),
                Some(format!(
                    "{} is not a JSON object of strings: {e}",
                    path.display()
                )),
            ),
        }
    }

    /// Saves port `key`'s board's settings, replacing the file atomically.
    pub fn save_board_settings(&self, key: &str, settings: &Settings) -> Result<(), JournalError> {
        let path = self.board_settings_path(key);
        let dir = self.data_dir.join("boards");
        create_dir(&dir)?;
        let tmp = dir.join(format!(".{key}.json.tmp"));
        let err = |source| JournalError::Write {
            path: path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(settings).map_err(|e| err(std::io::Error::other(e)))?;
        let mut f = crate::files::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)?;
        f.sync_all().map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)?;
        Ok(())
    }

    fn captures_dir(&self, key: &str) -> PathBuf {
        self.data_dir.join("journal/captures").join(key)
    }

    /// The earlier runs recorded for port `key`, oldest first. A cut last line
    /// (a crash mid-write) is dropped; anything else malformed stops that file
    /// there with the chunks before it kept.
    pub fn recorded_runs(&self, key: &str) -> Result<Vec<RecordedRun>, JournalError> {
        let dir = self.captures_dir(key);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(JournalError::Read { path: dir, source }),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        // Run files are named by zero-padded start time, so names sort by age.
        files.sort();
        let mut runs = Vec::new();
        for file in files {
            if self.captures.values().any(|c| c.path == file) {
                continue;
            }
            let f = File::open(&file).map_err(|source| JournalError::Read {
                path: file.clone(),
                source,
            })?;
            let Ok(mut reader) = CaptureReader::new(BufReader::new(f)) else {
                // A header cut by a crash right after creating the file.
                continue;
            };
            let protocol = reader.header().protocol.clone();
            let settings = reader.header().settings.clone();
            let started_unix_ms = reader
                .header()
                .extra
                .get("started_unix_ms")
                .and_then(|v| v.as_u64())
                .unwrap_or(0);
            let mut chunks = Vec::new();
            let mut operators = Vec::new();
            let mut torn_tail = false;
            loop {
                match reader.next_record() {
                    Ok(Some(Record::Chunk(c))) => chunks.push(c),
                    Ok(Some(Record::Operator(op))) => operators.push((chunks.len(), op)),
                    Ok(None) => break,
                    Err(_) => {
                        torn_tail = true;
                        break;
                    }
                }
            }
            runs.push(RecordedRun {
                file,
                protocol,
                settings,
                started_unix_ms,
                chunks,
                operators,
                torn_tail,
            });
        }
        Ok(runs)
    }

    /// Records one chunk of port `key` (capture created on first use).
    pub fn record_chunk(
        &mut self,
        key: &str,
        header: &PortHeader,
        chunk: &Chunk,
    ) -> Result<(), JournalError> {
        self.open_capture(key, header)?;
        let c = self.captures.get_mut(key).expect("inserted above");
        c.writer
            .write_chunk(chunk)
            .map_err(|e| JournalError::Write {
                path: c.path.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
        c.dirty = true;
        Ok(())
    }

    /// Records an arbiter's command in port `key`'s capture, at `op.t_ms` or
    /// the last line's time if that is later (times never go back in a
    /// capture), and hands it to the OS at once: the command is applied right
    /// after, and what is applied must be in the journal. Returns the time
    /// written, at which the command must be applied.
    pub fn record_operator(
        &mut self,
        key: &str,
        header: &PortHeader,
        op: &OperatorLine,
    ) -> Result<u64, JournalError> {
        self.open_capture(key, header)?;
        let c = self.captures.get_mut(key).expect("inserted above");
        let op = OperatorLine {
            t_ms: op.t_ms.max(c.writer.last_t_ms()),
            ..op.clone()
        };
        let err = |source| JournalError::Write {
            path: c.path.clone(),
            source,
        };
        c.writer
            .write_operator(&op)
            .map_err(|e| err(std::io::Error::other(e.to_string())))?;
        c.writer.flush().map_err(err)?;
        c.dirty = true;
        Ok(op.t_ms)
    }

    fn open_capture(&mut self, key: &str, port: &PortHeader) -> Result<(), JournalError> {
        if !self.captures.contains_key(key) {
            let dir = self.captures_dir(key);
            create_dir(&dir)?;
            let path = dir.join(format!("{:013}.jsonl", self.run_unix_ms));
            let file = crate::files::options()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&path)
                .map_err(|source| JournalError::Create {
                    path: path.clone(),
                    source,
                })?;
            let mut header = CaptureHeader::new(port.protocol);
            header.started = Some(rfc3339(self.run_unix_ms));
            header.port = Some(port.port.display().to_string());
            header.board = port.board.map(|b| b.to_string());
            header.mode = Some(port.mode);
            header.settings = port.settings.clone();
            header
                .extra
                .insert("started_unix_ms".into(), self.run_unix_ms.into());
            let sync_handle = file.try_clone().map_err(|source| JournalError::Create {
                path: path.clone(),
                source,
            })?;
            let writer = CaptureWriter::new(BufWriter::new(file), &header).map_err(|source| {
                JournalError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
            self.captures.insert(
                key.to_owned(),
                OpenCapture {
                    path,
                    writer,
                    sync_handle,
                    dirty: true,
                },
            );
        }
        Ok(())
    }

    /// Hands port `key`'s buffered chunks to the operating system (no fsync):
    /// called before publishing events those chunks caused.
    pub fn flush_port(&mut self, key: &str) -> Result<(), JournalError> {
        if let Some(c) = self.captures.get_mut(key) {
            c.writer.flush().map_err(|source| JournalError::Write {
                path: c.path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Appends one event to its board's log. Returns whether it must be made
    /// durable now (verified moves, results, alerts): the caller then calls
    /// [`Journal::sync`].
    pub fn record_event(
        &mut self,
        stamped: &Stamped,
        seq: Option<u64>,
    ) -> Result<bool, JournalError> {
        let log = match self.events.entry(stamped.board) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let path = self
                    .data_dir
                    .join("journal/events")
                    .join(format!("board-{}.jsonl", stamped.board));
                let mut file = crate::files::options()
                    .create(true)
                    .append(true)
                    .read(true)
                    .open(&path)
                    .map_err(|source| JournalError::Create {
                        path: path.clone(),
                        source,
                    })?;
                // The numbering goes on from the last run's, and a line a
                // crash cut is ended, so the next line is whole on its own.
                let text = std::fs::read(&path).map_err(|source| JournalError::Read {
                    path: path.clone(),
                    source,
                })?;
                let (last_seq, cut) = last_board_seqs(&text);
                if cut {
                    file.write_all(b"\n")
                        .map_err(|source| JournalError::Write {
                            path: path.clone(),
                            source,
                        })?;
                }
                v.insert(EventLog {
                    path,
                    out: BufWriter::new(file),
                    dirty: false,
                    last_seq,
                })
            }
        };
        let stream = LogStream::of(&stamped.event);
        log.last_seq[stream.index()] += 1;
        let board_seq = log.last_seq[stream.index()];
        let mut v = stamped.to_json();
        if let (Some(seq), serde_json::Value::Object(map)) = (seq, &mut v) {
            map.insert("seq".into(), seq.into());
        }
        if let serde_json::Value::Object(map) = &mut v {
            map.insert("run".into(), self.run_unix_ms.into());
            map.insert("board_seq".into(), board_seq.into());
            map.insert("unix_ms".into(), unix_ms_now().into());
        }
        let mut line = v.to_string();
        line.push('\n');
        log.out
            .write_all(line.as_bytes())
            .and_then(|()| log.out.flush())
            .map_err(|source| JournalError::Write {
                path: log.path.clone(),
                source,
            })?;
        log.dirty = true;
        if let Some(hook) = &self.appended {
            hook(stamped.board);
        }
        Ok(match &stamped.event {
            TrackerEvent::Game(GameEvent::Move(m)) => m.verified,
            TrackerEvent::Game(
                GameEvent::Result { .. }
                | GameEvent::Retraction { .. }
                | GameEvent::MoveClock { .. },
            ) => true,
            TrackerEvent::Alert(_) | TrackerEvent::Resolved(_) => true,
            TrackerEvent::Game(_) => false,
        })
    }

    /// What recovery needs from board `board`'s event log, read in one pass
    /// (at 500 boards the logs hold millions of lines, mostly clock events).
    pub fn event_log_summary(&self, board: u32) -> EventLogSummary {
        let path = self
            .data_dir
            .join("journal/events")
            .join(format!("board-{board}.jsonl"));
        let mut summary = EventLogSummary::default();
        let Ok(text) = std::fs::read(path) else {
            return summary;
        };
        // The keys are found as bytes rather than by parsing every line: the
        // logs are written by `record_event`/`record_note` as serde_json
        // objects, where a quote inside a string is always escaped, so
        // `"t_ms":` can only be a key. A line cut by a crash (no newline at
        // the end of the file) does not count: it was never logged whole.
        let t_key = memchr::memmem::Finder::new(b"\"t_ms\":");
        let run_key = memchr::memmem::Finder::new(b"\"run\":");
        let ply_key = memchr::memmem::Finder::new(b"\"ply\":");
        let number_after = |line: &[u8], at: usize| -> Option<u64> {
            let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&line[at..at + digits])
                .ok()?
                .parse()
                .ok()
        };
        let mut lines = text.split(|&b| b == b'\n');
        // What follows the last newline is a cut line, or nothing.
        let _ = lines.next_back();
        for line in lines {
            let Some(t) = t_key
                .find(line)
                .and_then(|i| number_after(line, i + t_key.needle().len()))
            else {
                continue;
            };
            if let Some(run) = run_key
                .find(line)
                .and_then(|i| number_after(line, i + run_key.needle().len()))
            {
                let last = summary.last_t_by_run.entry(run).or_insert(t);
                *last = (*last).max(t);
            }
            if ply_key.find(line).is_some() {
                summary.tail = match summary.tail {
                    Some((last, n)) if last == t => Some((t, n + 1)),
                    Some((last, n)) if last > t => Some((last, n)),
                    _ => Some((t, 1)),
                };
            }
        }
        summary
    }

    /// The latest `t_ms` among the events of board `board` logged by the run
    /// that started at `run_unix_ms` (the run's last published moment).
    pub fn last_event_t(&self, board: u32, run_unix_ms: u64) -> Option<u64> {
        self.event_log_summary(board)
            .last_t_by_run
            .get(&run_unix_ms)
            .copied()
    }

    /// How far board `board`'s tracker events were logged: see
    /// [`EventLogSummary::tail`].
    pub fn logged_tail(&self, board: u32) -> Option<(u64, usize)> {
        self.event_log_summary(board).tail
    }

    /// Appends a daemon line (start, recovery summary, board offline) to board
    /// `board`'s event log.
    pub fn record_note(&mut self, board: u32, note: serde_json::Value) -> Result<(), JournalError> {
        let stamped_path = self
            .data_dir
            .join("journal/events")
            .join(format!("board-{board}.jsonl"));
        let mut line = note.to_string();
        line.push('\n');
        let mut f = crate::files::options()
            .create(true)
            .append(true)
            .open(&stamped_path)
            .map_err(|source| JournalError::Create {
                path: stamped_path.clone(),
                source,
            })?;
        // Go through the board's open log if there is one, so lines stay in order.
        if let Some(log) = self.events.get_mut(&board) {
            log.out.flush().map_err(|source| JournalError::Write {
                path: log.path.clone(),
                source,
            })?;
        }
        f.write_all(line.as_bytes())
            .map_err(|source| JournalError::Write {
                path: stamped_path,
                source,
            })
    }

    /// Flushes and fsyncs everything written since the last sync, after the
    /// background thread has finished what it was given (so at a stop no game
    /// file or batch is left half done).
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.syncer.is_some() {
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            self.in_background(Box::new(move || {
                let _ = done_tx.send(());
            }));
            let _ = done_rx.recv();
        }
        for c in self.captures.values_mut().filter(|c| c.dirty) {
            let path = c.path.clone();
            let err = |source| JournalError::Write {
                path: path.clone(),
                source,
            };
            c.writer.flush().map_err(err)?;
            c.sync_handle.sync_data().map_err(err)?;
            c.dirty = false;
        }
        for log in self.events.values_mut().filter(|l| l.dirty) {
            let path = log.path.clone();
            log.out
                .flush()
                .and_then(|()| log.out.get_ref().sync_data())
                .map_err(|source| JournalError::Write { path, source })?;
            log.dirty = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Hands port `key`'s capture and the event logs of `boards` to the OS
    /// now and has them fsynced at once on the journal's thread: what a
    /// durable event (verified move, result, alert) needs. Fsyncing in the
    /// caller, or every dirty file, would hold the daemon's loop for one or
    /// more disk flushes per verified move, which at a thousand boards is
    /// seconds of delay for every board.
    pub fn sync_only(
        &mut self,
        key: Option<&str>,
        boards: &std::collections::BTreeSet<u32>,
    ) -> Result<(), JournalError> {
        let mut batch = Vec::new();
        if let Some(c) = key
            .and_then(|k| self.captures.get_mut(k))
            .filter(|c| c.dirty)
        {
            batch.push(c.flush_for_sync()?);
        }
        for b in boards {
            if let Some(log) = self.events.get_mut(b).filter(|l| l.dirty) {
                batch.push(log.flush_for_sync()?);
            }
        }
        self.fsync_in_background(batch);
        Ok(())
    }

    fn fsync_in_background(&mut self, batch: Vec<(PathBuf, File)>) {
        if batch.is_empty() {
            return;
        }
        self.in_background(Box::new(move || {
            for (path, file) in batch {
                if let Err(e) = file.sync_data() {
                    tracing::error!(
                        "cannot fsync {}: {e}. The disk may be failing or full",
                        path.display()
                    );
                }
            }
        }));
    }

    /// The batched sync: fsyncs if [`SYNC_INTERVAL`] has passed.
    ///
    /// The daemon's loop calls this: the buffers reach the OS here, and the
    /// fsyncs run on a thread of their own, on duplicated descriptors. With a
    /// thousand boards a batch is a thousand fsyncs, which would otherwise hold
    /// the loop (and every board's moves) for as long as the disk takes. Only
    /// power-loss durability waits for that thread; the ordering "chunk at the
    /// OS before its events" never depended on fsync.
    pub fn sync_if_due(&mut self) -> Result<(), JournalError> {
        if self.last_sync.elapsed() < SYNC_INTERVAL {
            return Ok(());
        }
        self.last_sync = Instant::now();
        let mut batch = Vec::new();
        for c in self.captures.values_mut().filter(|c| c.dirty) {
            batch.push(c.flush_for_sync()?);
        }
        for log in self.events.values_mut().filter(|l| l.dirty) {
            batch.push(log.flush_for_sync()?);
        }
        self.fsync_in_background(batch);
        Ok(())
    }

    /// Runs `job` on the journal's own thread (started on first use), after
    /// the jobs handed over before it; in the caller if the thread is gone.
    fn in_background(&mut self, job: BackgroundJob) {
        let syncer = self.syncer.get_or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<BackgroundJob>();
            // If the thread cannot start, the send below fails and jobs run here.
            let _ = std::thread::Builder::new()
                .name("journal-sync".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            tx
        });
        if let Err(std::sync::mpsc::SendError(job)) = syncer.send(job) {
            self.syncer = None;
            job();
        }
    }

    /// [`Journal::write_games`] on the journal's thread: the file is replaced
    /// atomically as before, but the fsync no longer holds the daemon's loop
    /// (one per verified move, which at a thousand boards is the loop's whole
    /// time). Writes of one board land in the order they were asked for.
    pub fn write_games_later(&mut self, board: u32, games: Vec<GameRecord>) {
        let data_dir = self.data_dir.clone();
        self.in_background(Box::new(move || {
            let j = Journal {
                data_dir,
                run_unix_ms: 0,
                captures: Default::default(),
                events: Default::default(),
                last_sync: Instant::now(),
                syncer: None,
                appended: None,
            };
            if let Err(e) = j.write_games(board, &games) {
                tracing::error!("{e}");
            }
        }));
    }

    /// Rewrites `games/board-N.pgn` with `games` (write to a temporary file,
    /// fsync, rename), so a reader never sees half a file.
    pub fn write_games(&self, board: u32, games: &[GameRecord]) -> Result<(), JournalError> {
        let dir = self.data_dir.join("games");
        let path = dir.join(format!("board-{board}.pgn"));
        let tmp = dir.join(format!(".board-{board}.pgn.tmp"));
        let mut text = String::new();
        for g in games {
            text.push_str(&g.to_pgn());
            text.push('\n');
        }
        let err = |source| JournalError::Write {
            path: path.clone(),
            source,
        };
        let mut f = crate::files::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&tmp)
            .map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)?;
        f.sync_data().map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }
}

/// One board's event log as recovery reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventLogSummary {
    /// Per run (its start time), the latest `t_ms` it logged: that run's last
    /// published moment.
    pub last_t_by_run: std::collections::BTreeMap<u64, u64>,
    /// How far the board's tracker events (lines with a `ply`; daemon notes
    /// have none) were logged, over all runs: the latest session `t_ms` and
    /// how many events carry it. Tracker events are logged in time order, so a
    /// rebuilt event earlier than that, or among the first `count` at that
    /// time, was logged (and published); any later one was derived from a
    /// chunk a crashed run journaled but never got to log or publish.
    pub tail: Option<(u64, usize)>,
}

/// Session time of each recorded run and of the live one: runs follow each
/// other on one time line, run `k` starting where the wall clock says (but never
/// before the previous run's last chunk), so trackers see time that never goes
/// back and whose gaps are the real ones. Returns the offsets of the `runs` and
/// the offset for the live run starting at `live_unix_ms`.
pub fn run_offsets(runs: &[RecordedRun], live_unix_ms: u64) -> (Vec<u64>, u64) {
    let Some(first) = runs.first() else {
        return (Vec::new(), 0);
    };
    let base = first.started_unix_ms;
    let mut offsets = Vec::with_capacity(runs.len());
    let mut end = 0u64;
    for r in runs {
        let wall = r.started_unix_ms.saturating_sub(base);
        let off = if offsets.is_empty() {
            0
        } else {
            wall.max(end + 1)
        };
        offsets.push(off);
        end = off + r.chunks.last().map_or(0, |c| c.t_ms);
    }
    let live = live_unix_ms.saturating_sub(base).max(end + 1);
    (offsets, live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::AlertKind;
    use crate::session::capture::Direction;

    #[test]
    fn rfc3339_is_utc_civil_time() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_355_100_123), "2026-11-22T13:45:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn event_log_summary_reads_runs_and_the_logged_tail() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let lines = [
            r#"{"board":3,"ply":1,"run":10,"t_ms":500,"type":"move","san":"e4"}"#,
            r#"{"board":3,"port":"x","reason":"unplugged","run":10,"type":"board_offline"}"#,
            r#"{"board":3,"ply":1,"run":10,"t_ms":900,"type":"clock","message":"a \"t_ms\":77 quote"}"#,
            r#"{"board":3,"ply":2,"run":10,"t_ms":900,"type":"move"}"#,
            r#"{"recovered_chunks":4,"run":20,"type":"daemon_start","verified_plies":2}"#,
            r#"{"board":3,"ply":2,"run":20,"t_ms":1200,"type":"clock"}"#,
            // Cut by a crash: not a whole line.
            r#"{"board":3,"ply":3,"run":20,"t_ms":1500,"ty"#,
        ];
        std::fs::write(
            dir.path().join("journal/events/board-3.jsonl"),
            lines.join("\n"),
        )
        .unwrap();
        let s = j.event_log_summary(3);
        assert_eq!(s.tail, Some((1200, 1)));
        assert_eq!(
            s.last_t_by_run.into_iter().collect::<Vec<_>>(),
            vec![(10, 900), (20, 1200)]
        );
        assert_eq!(j.event_log_summary(4), EventLogSummary::default());
    }

    #[test]
    fn port_keys_are_flat_names() {
        assert_eq!(
            port_key(Path::new("/dev/serial/by-id/usb-DGT_x-if00")),
            "dev_serial_by-id_usb-DGT_x-if00"
        );
        assert_eq!(port_key(Path::new("/tmp/a b")), "tmp_a-b");
    }

    fn run(started: u64, last_t: u64) -> RecordedRun {
        RecordedRun {
            file: PathBuf::new(),
            protocol: "dgt".into(),
            settings: Settings::new(),
            started_unix_ms: started,
            chunks: vec![Chunk {
                t_ms: last_t,
                dir: Direction::In,
                bytes: vec![],
            }],
            operators: Vec::new(),
            torn_tail: false,
        }
    }

    #[test]
    fn runs_follow_each_other_on_one_time_line() {
        let (offs, live) = run_offsets(&[run(1_000, 500), run(10_000, 100)], 20_000);
        assert_eq!(offs, vec![0, 9_000]);
        assert_eq!(live, 19_000);
        // A wall clock set back still never makes time go back.
        let (offs, live) = run_offsets(&[run(1_000, 5_000), run(2_000, 100)], 1_500);
        assert_eq!(offs, vec![0, 5_001]);
        assert_eq!(live, 5_102);
    }

    #[test]
    fn board_seq_goes_on_per_stream_across_runs_and_a_cut_line() {
        use crate::events::{Alert, AlertResolved, Severity};
        let dir = tempfile::tempdir().unwrap();
        let clock = |t| Stamped {
            board: 4,
            ply: 0,
            t_ms: t,
            event: TrackerEvent::Game(GameEvent::Clock {
                white_ms: t,
                black_ms: t,
                running: None,
            }),
        };
        // An alert whose message holds what a key looks like: escaped in
        // the log, it must not be taken for one.
        let alert = |t| Stamped {
            board: 4,
            ply: 0,
            t_ms: t,
            event: TrackerEvent::Alert(Alert {
                id: 1,
                kind: AlertKind::IllegalMove,
                article: "7.5.1".into(),
                severity: Severity::Error,
                squares: Vec::new(),
                message: r#"says "board_seq":99 and "type":"move""#.into(),
                penalty: None,
            }),
        };
        let resolved = |t| Stamped {
            board: 4,
            ply: 0,
            t_ms: t,
            event: TrackerEvent::Resolved(AlertResolved {
                id: 1,
                kind: AlertKind::IllegalMove,
                reason: "put right".into(),
            }),
        };
        let mut j = Journal::open(dir.path()).unwrap();
        for s in [clock(1), alert(2), clock(3), resolved(4)] {
            j.record_event(&s, None).unwrap();
        }
        j.sync().unwrap();
        drop(j);
        let path = Journal::event_log_path(dir.path(), 4);
        // A crash cut the next line: it was never logged.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"board":4,"board_seq":3,"type":"cl"#)
            .unwrap();
        let text = std::fs::read(&path).unwrap();
        assert_eq!(last_board_seqs(&text), ([2, 2], true));
        let mut j = Journal::open(dir.path()).unwrap();
        for s in [alert(5), clock(6)] {
            j.record_event(&s, None).unwrap();
        }
        j.sync().unwrap();
        let text = std::fs::read(&path).unwrap();
        let ids: Vec<Option<(LogStream, u64)>> =
            text.split(|&b| b == b'\n').map(logged_identity).collect();
        use LogStream::{Arbiter, Public};
        assert_eq!(
            ids,
            [
                Some((Public, 1)),
                Some((Arbiter, 1)),
                Some((Public, 2)),
                Some((Arbiter, 2)),
                None, // the cut line, ended so the next one is whole
                Some((Arbiter, 3)),
                Some((Public, 3)),
                None, // after the last newline
            ]
        );
        assert_eq!(last_board_seqs(&text), ([3, 3], false));
        assert_eq!(logged_identity(br#"{"board_seq":0,"type":"move"}"#), None);
        assert_eq!(
            logged_identity(br#"{"board":4,"type":"board_offline"}"#),
            None
        );
    }

    #[test]
    fn a_crash_mid_line_loses_only_that_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path()).unwrap();
        let chunk = |t| Chunk {
            t_ms: t,
            dir: Direction::In,
            bytes: vec![0x8e, 0, 5, 9, 1],
        };
        let header = PortHeader::new(Path::new("/p"), Some(1), "dgt", PortMode::Single);
        j.record_chunk("p", &header, &chunk(5)).unwrap();
        j.record_chunk("p", &header, &chunk(9)).unwrap();
        j.sync().unwrap();
        let file = j.captures["p"].path.clone();
        drop(j);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(b"{\"t_ms\":12,\"dir\":\"in\",\"he").unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let runs = j.recorded_runs("p").unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].chunks.len(), 2);
        assert!(runs[0].torn_tail);
    }
}
