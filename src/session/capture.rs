//! Captures: exactly what a board said and what we said to it, with timings.
//!
//! The on-disk format is JSON Lines, a contract other tools rely on; it is specified
//! in `docs/capture-format.md`. In short:
//!
//! ```text
//! {"capture":"eboard-bridge","version":1,"protocol":"dgt","mode":"single"}
//! {"t_ms":0,"dir":"out","hex":"42"}
//! {"t_ms":31,"dir":"in","hex":"860043"}
//! ```
//!
//! * line 1 is the header object: `capture` = `"eboard-bridge"`, `version` = 1,
//!   `protocol` (e.g. `"dgt"`), optional `started` (RFC 3339), `board`, `port`,
//!   `serial`, `mode` (`"single"` / `"bus"`), and any other fields;
//! * every further line is one chunk: `t_ms` (integer milliseconds since the capture
//!   started, never decreasing), `dir` (`"in"` = board → host, `"out"` = host →
//!   board) and `hex` (the bytes, lowercase hex when written, either case read);
//! * chunks split and join protocol frames anywhere: they are what one `read` or
//!   `write` on the port moved, nothing more;
//! * unknown fields anywhere are ignored (forward compatibility); lines holding only
//!   white space are skipped.
//!
//! [`CaptureReader`] streams a capture line by line in bounded memory and stops at
//! the first malformed line with a [`CaptureError`] naming the line.
//! [`CaptureWriter`] writes one; flushing is the caller's policy. [`import`] turns
//! two kinds of third-party recordings of real boards into captures.

use std::fmt::Write as _;
use std::io::{self, BufRead, Read, Write};

use serde_json::{Map, Value};

use crate::operator::TrackerCommand;
use eboard_protocols::family::Settings;

/// Value of the header's `capture` field.
pub const CAPTURE_MAGIC: &str = "eboard-bridge";
/// The format version this code reads and writes.
pub const CAPTURE_VERSION: u64 = 1;
/// Longest line accepted, in bytes. A DGT EE_MOVES dump, the longest DGT message,
/// is under 8 KiB (16 KiB of hex); a chunk is what one read returned, so 1 MiB is
/// far beyond any real line and keeps a corrupt file (say, a binary file with no
/// newline) from being read into memory whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Which way the bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Board → host (`"in"`).
    In,
    /// Host → board (`"out"`).
    Out,
}

impl Direction {
    /// The name used in captures.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
        }
    }
}

/// One chunk of bytes as read from or written to the port. Chunks may split or
/// join protocol frames anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Milliseconds since the capture started.
    pub t_ms: u64,
    pub dir: Direction,
    pub bytes: Vec<u8>,
}

/// How the port was used while recording (header field `mode`): `"single"`
/// (one board) or `"bus"` (several boards on one line, DGT bus mode).
pub use eboard_protocols::family::PortMode;

/// The name of `mode` in captures.
pub fn mode_name(mode: PortMode) -> &'static str {
    match mode {
        PortMode::Single => "single",
        PortMode::Bus => "bus",
    }
}

/// The first line of a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureHeader {
    /// Board protocol family spoken on the port, e.g. `"dgt"`.
    pub protocol: String,
    /// When recording started, RFC 3339 (`2026-11-22T14:05:00Z`).
    pub started: Option<String>,
    /// Board label or number as configured.
    pub board: Option<String>,
    /// Port the board was read from (`/dev/ttyUSB0`).
    pub port: Option<String>,
    /// Board serial number, when known before recording.
    pub serial: Option<String>,
    /// Single board or bus mode, when known.
    pub mode: Option<PortMode>,
    /// Family-specific state kept with the board that the codec starts with
    /// (Certabo: the calibration of piece ids), so a replay reads the bytes
    /// exactly as the live run did.
    pub settings: Settings,
    /// Fields this version does not know, kept so a rewrite loses nothing.
    pub extra: Map<String, Value>,
}

impl CaptureHeader {
    /// A header with only the required fields.
    pub fn new(protocol: impl Into<String>) -> CaptureHeader {
        CaptureHeader {
            protocol: protocol.into(),
            started: None,
            board: None,
            port: None,
            serial: None,
            mode: None,
            settings: Settings::new(),
            extra: Map::new(),
        }
    }

    /// The header as one JSON object, fields in a stable order (required first).
    pub fn to_json_line(&self) -> String {
        let mut s = String::with_capacity(96);
        s.push('{');
        push_field(&mut s, "capture", &Value::from(CAPTURE_MAGIC));
        push_field(&mut s, "version", &Value::from(CAPTURE_VERSION));
        push_field(&mut s, "protocol", &Value::from(self.protocol.as_str()));
        let optional = [
            ("started", self.started.as_deref()),
            ("board", self.board.as_deref()),
            ("port", self.port.as_deref()),
            ("serial", self.serial.as_deref()),
            ("mode", self.mode.map(mode_name)),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                push_field(&mut s, name, &Value::from(v));
            }
        }
        if !self.settings.is_empty() {
            let settings: Map<String, Value> = self
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            push_field(&mut s, "settings", &Value::Object(settings));
        }
        for (name, value) in &self.extra {
            if !KNOWN_HEADER_FIELDS.contains(&name.as_str()) {
                push_field(&mut s, name, value);
            }
        }
        s.push('}');
        s
    }

    /// Reads a header from a parsed first line.
    fn from_json(line: u64, v: Value) -> Result<CaptureHeader, CaptureError> {
        let Value::Object(mut map) = v else {
            return Err(CaptureError::NotCaptureHeader {
                line,
                problem: "the first line is JSON but not an object".into(),
            });
        };
        match map.remove("capture") {
            Some(Value::String(s)) if s == CAPTURE_MAGIC => {}
            Some(other) => {
                return Err(CaptureError::NotCaptureHeader {
                    line,
                    problem: format!("field `capture` is {other}, not \"{CAPTURE_MAGIC}\""),
                })
            }
            None => {
                let problem = if map.contains_key("t_ms") || map.contains_key("hex") {
                    "the first line is a chunk: the header line is missing".to_string()
                } else {
                    "field `capture` is missing".to_string()
                };
                return Err(CaptureError::NotCaptureHeader { line, problem });
            }
        }
        match map.remove("version") {
            Some(Value::Number(n)) if n.as_u64() == Some(CAPTURE_VERSION) => {}
            Some(other) => {
                return Err(CaptureError::UnsupportedVersion {
                    line,
                    version: other.to_string(),
                })
            }
            None => {
                return Err(CaptureError::MissingField {
                    line,
                    field: "version",
                })
            }
        }
        let protocol = match map.remove("protocol") {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(other) => {
                return Err(CaptureError::BadField {
                    line,
                    field: "protocol",
                    problem: format!("{other} is not a protocol name such as \"dgt\""),
                })
            }
            None => {
                return Err(CaptureError::MissingField {
                    line,
                    field: "protocol",
                })
            }
        };
        let mut text = |field: &'static str| -> Result<Option<String>, CaptureError> {
            match map.remove(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(CaptureError::BadField {
                    line,
                    field,
                    problem: format!("{other} is not a string"),
                }),
            }
        };
        let started = text("started")?;
        let board = text("board")?;
        let port = text("port")?;
        let serial = text("serial")?;
        let mode = match text("mode")?.as_deref() {
            None => None,
            Some("single") => Some(PortMode::Single),
            Some("bus") => Some(PortMode::Bus),
            Some(other) => {
                return Err(CaptureError::BadField {
                    line,
                    field: "mode",
                    problem: format!("\"{other}\" is neither \"single\" nor \"bus\""),
                })
            }
        };
        let settings = match map.remove("settings") {
            None | Some(Value::Null) => Settings::new(),
            Some(Value::Object(m)) => {
                let mut settings = Settings::new();
                for (k, v) in m {
                    let Value::String(v) = v else {
                        return Err(CaptureError::BadField {
                            line,
                            field: "settings",
                            problem: format!("the value of {k:?} is {v}, not a string"),
                        });
                    };
                    settings.insert(k, v);
                }
                settings
            }
            Some(other) => {
                return Err(CaptureError::BadField {
                    line,
                    field: "settings",
                    problem: format!("{other} is not an object of strings"),
                })
            }
        };
        Ok(CaptureHeader {
            protocol,
            started,
            board,
            port,
            serial,
            mode,
            settings,
            extra: map,
        })
    }
}

const KNOWN_HEADER_FIELDS: [&str; 9] = [
    "capture", "version", "protocol", "started", "board", "port", "serial", "mode", "settings",
];

fn push_field(s: &mut String, name: &str, value: &Value) {
    if !s.ends_with('{') {
        s.push(',');
    }
    // Names and values go through serde_json so that quotes and control
    // characters are escaped exactly as JSON requires.
    s.push_str(&Value::from(name).to_string());
    s.push(':');
    s.push_str(&value.to_string());
}

/// What is wrong with a capture, always with the 1-based line number.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("line {line}: cannot read the file: {source}")]
    Io {
        line: u64,
        #[source]
        source: io::Error,
    },
    #[error(
        "line {line}: not JSON ({detail}); every line of a capture is one JSON object \
         (a cut last line means the recorder stopped mid-write: delete that line)"
    )]
    NotJson { line: u64, detail: String },
    #[error(
        "line {line}: not a JSON object; every chunk line is {{\"t_ms\":..,\"dir\":..,\"hex\":..}}"
    )]
    NotObject { line: u64 },
    #[error(
        "line {line}: not an eboard-bridge capture header ({problem}); the first line must be \
         {{\"capture\":\"eboard-bridge\",\"version\":1,\"protocol\":\"dgt\"}}"
    )]
    NotCaptureHeader { line: u64, problem: String },
    #[error(
        "line {line}: capture format version {version} is not supported (this program reads \
         version {CAPTURE_VERSION}); use the eboard-bridge release that wrote the file"
    )]
    UnsupportedVersion { line: u64, version: String },
    #[error("line {line}: field `{field}` is missing; see docs/capture-format.md")]
    MissingField { line: u64, field: &'static str },
    #[error("line {line}: field `{field}`: {problem}; see docs/capture-format.md")]
    BadField {
        line: u64,
        field: &'static str,
        problem: String,
    },
    #[error("line {line}: field `hex`: {problem}; bytes are written as pairs of hex digits")]
    BadHex { line: u64, problem: String },
    #[error(
        "line {line}: t_ms goes backwards ({t_ms} after {previous}); chunks must be in time \
         order: the file was edited or two captures were concatenated"
    )]
    TimeBackwards { line: u64, t_ms: u64, previous: u64 },
    #[error(
        "line {line}: longer than {MAX_LINE_BYTES} bytes; this is not a capture (or it is \
         corrupt from here on)"
    )]
    LineTooLong { line: u64 },
    #[error("the file is empty; a capture starts with a header line")]
    Empty,
}

impl CaptureError {
    /// The 1-based line the error is on (0 for an empty file).
    pub fn line(&self) -> u64 {
        match self {
            CaptureError::Io { line, .. }
            | CaptureError::NotJson { line, .. }
            | CaptureError::NotObject { line }
            | CaptureError::NotCaptureHeader { line, .. }
            | CaptureError::UnsupportedVersion { line, .. }
            | CaptureError::MissingField { line, .. }
            | CaptureError::BadField { line, .. }
            | CaptureError::BadHex { line, .. }
            | CaptureError::TimeBackwards { line, .. }
            | CaptureError::LineTooLong { line } => *line,
            CaptureError::Empty => 0,
        }
    }
}

/// Streams a capture: the header when created, then one chunk at a time.
///
/// Memory stays bounded by [`MAX_LINE_BYTES`] whatever the file size. After the
/// first error the reader is finished: a malformed line means the rest cannot be
/// trusted to be in order.
pub struct CaptureReader<R> {
    input: R,
    header: CaptureHeader,
    line: u64,
    last_t_ms: u64,
    buf: Vec<u8>,
    failed: bool,
}

impl<R: BufRead> CaptureReader<R> {
    /// Reads and checks the header line.
    pub fn new(input: R) -> Result<CaptureReader<R>, CaptureError> {
        let mut reader = CaptureReader {
            input,
            header: CaptureHeader::new(""),
            line: 0,
            last_t_ms: 0,
            buf: Vec::with_capacity(256),
            failed: false,
        };
        let Some(line) = reader.next_line()? else {
            return Err(CaptureError::Empty);
        };
        // A byte-order mark is what some editors put before the first line when
        // a capture is saved by hand; it carries no meaning in UTF-8.
        let first = reader
            .buf
            .strip_prefix(b"\xef\xbb\xbf")
            .unwrap_or(&reader.buf);
        let value = parse_json(line, first)?;
        reader.header = CaptureHeader::from_json(line, value)?;
        Ok(reader)
    }

    /// The capture's header.
    pub fn header(&self) -> &CaptureHeader {
        &self.header
    }

    /// The number of the last line read (1-based).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next chunk, `Ok(None)` at the end of the file. Operator lines are
    /// skipped: a reader that only wants the port's bytes sees those alone.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, CaptureError> {
        loop {
            match self.next_record()? {
                Some(Record::Chunk(c)) => return Ok(Some(c)),
                Some(Record::Operator(_)) => {}
                None => return Ok(None),
            }
        }
    }

    /// The next line after the header, chunk or operator command, `Ok(None)`
    /// at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, CaptureError> {
        if self.failed {
            return Ok(None);
        }
        let result = self.read_record();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn read_record(&mut self) -> Result<Option<Record>, CaptureError> {
        let Some(line) = self.next_line()? else {
            return Ok(None);
        };
        // serde's derived struct reader also takes arrays (fields by position);
        // the format says objects, so anything else is refused up front.
        if self.buf.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(
                match serde_json::from_slice::<serde::de::IgnoredAny>(&self.buf) {
                    Ok(_) => CaptureError::NotObject { line },
                    Err(e) => CaptureError::NotJson {
                        line,
                        detail: json_detail(&e),
                    },
                },
            );
        }
        let raw: RawChunk = match serde_json::from_slice(&self.buf) {
            Ok(raw) => raw,
            Err(e) if e.classify() == serde_json::error::Category::Data => {
                return Err(CaptureError::NotObject { line })
            }
            Err(e) => {
                return Err(CaptureError::NotJson {
                    line,
                    detail: json_detail(&e),
                })
            }
        };
        let t_ms = match raw.t_ms {
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| CaptureError::BadField {
                line,
                field: "t_ms",
                problem: format!("{n} is not a whole number of milliseconds ≥ 0"),
            })?,
            Some(other) => {
                return Err(CaptureError::BadField {
                    line,
                    field: "t_ms",
                    problem: format!("{other} is not a number"),
                })
            }
            None => {
                return Err(CaptureError::MissingField {
                    line,
                    field: "t_ms",
                })
            }
        };
        if let Some(op) = raw.operator {
            let command: TrackerCommand =
                serde_json::from_value(op).map_err(|e| CaptureError::BadField {
                    line,
                    field: "operator",
                    problem: e.to_string(),
                })?;
            let board = match raw.board {
                Some(Value::Number(n)) => n.as_u64().and_then(|b| u32::try_from(b).ok()),
                _ => None,
            }
            .ok_or_else(|| CaptureError::BadField {
                line,
                field: "board",
                problem: "an operator line needs the board number it applies to".into(),
            })?;
            if t_ms < self.last_t_ms {
                return Err(CaptureError::TimeBackwards {
                    line,
                    t_ms,
                    previous: self.last_t_ms,
                });
            }
            self.last_t_ms = t_ms;
            let by = match raw.by {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s),
                Some(other) => {
                    return Err(CaptureError::BadField {
                        line,
                        field: "by",
                        problem: format!("{other} is not a string"),
                    })
                }
            };
            return Ok(Some(Record::Operator(OperatorLine {
                t_ms,
                board,
                by,
                command,
            })));
        }
        let dir = match raw.dir {
            Some(Value::String(s)) if s == "in" => Direction::In,
            Some(Value::String(s)) if s == "out" => Direction::Out,
            Some(other) => {
                return Err(CaptureError::BadField {
                    line,
                    field: "dir",
                    problem: format!("{other} is neither \"in\" nor \"out\""),
                })
            }
            None => return Err(CaptureError::MissingField { line, field: "dir" }),
        };
        let bytes = match raw.hex {
            Some(Value::String(s)) => {
                decode_hex(&s).map_err(|problem| CaptureError::BadHex { line, problem })?
            }
            Some(other) => {
                return Err(CaptureError::BadHex {
                    line,
                    problem: format!("{other} is not a string"),
                })
            }
            None => return Err(CaptureError::MissingField { line, field: "hex" }),
        };
        if t_ms < self.last_t_ms {
            return Err(CaptureError::TimeBackwards {
                line,
                t_ms,
                previous: self.last_t_ms,
            });
        }
        self.last_t_ms = t_ms;
        Ok(Some(Record::Chunk(Chunk { t_ms, dir, bytes })))
    }

    /// Reads the next line that is not blank into `self.buf` (without its line
    /// end) and returns its number.
    fn next_line(&mut self) -> Result<Option<u64>, CaptureError> {
        loop {
            self.buf.clear();
            self.line += 1;
            let line = self.line;
            let limit = MAX_LINE_BYTES as u64 + 1;
            let n = Read::take(&mut self.input, limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| CaptureError::Io { line, source })?;
            if n == 0 {
                return Ok(None);
            }
            if self.buf.last() == Some(&b'\n') {
                self.buf.pop();
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
            } else if n as u64 == limit {
                return Err(CaptureError::LineTooLong { line });
            }
            if !self.buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
    }
}

impl<R: BufRead> Iterator for CaptureReader<R> {
    type Item = Result<Chunk, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_chunk().transpose()
    }
}

/// A chunk line as parsed, before its fields are checked. Unknown fields are
/// ignored by serde; the known ones are kept as raw JSON values so each problem
/// can be reported by field name.
#[derive(serde::Deserialize)]
struct RawChunk {
    t_ms: Option<Value>,
    dir: Option<Value>,
    hex: Option<Value>,
    /// Present on operator lines only.
    operator: Option<Value>,
    board: Option<Value>,
    by: Option<Value>,
}

/// An arbiter's command journaled in a board's capture (an `operator` line):
/// an input like the bytes, applied at its place among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorLine {
    pub t_ms: u64,
    /// The board it applies to (a bus port carries several).
    pub board: u32,
    /// Who gave the command (the arbiter's name), for the timeline.
    pub by: Option<String>,
    pub command: TrackerCommand,
}

/// One line of a capture after the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Chunk(Chunk),
    Operator(OperatorLine),
}

fn parse_json(line: u64, bytes: &[u8]) -> Result<Value, CaptureError> {
    serde_json::from_slice(bytes).map_err(|e| CaptureError::NotJson {
        line,
        detail: json_detail(&e),
    })
}

/// serde_json's message with its position given as a column only: it parses one
/// line at a time, so its own "line 1" would contradict the file's line number.
fn json_detail(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    format!("{message} at column {}", e.column())
}

/// Hex text (either case) to bytes.
fn decode_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits = s.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "odd number of hex digits ({}), a byte is two digits",
            digits.len()
        ));
    }
    let nibble = |i: usize| -> Result<u8, String> {
        let c = digits[i];
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!(
                "character {:?} at position {} is not a hex digit",
                char::from(c),
                i + 1
            )),
        }
    };
    (0..digits.len() / 2)
        .map(|i| Ok(nibble(2 * i)? << 4 | nibble(2 * i + 1)?))
        .collect()
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Why a chunk could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CaptureWriteError {
    #[error("cannot write the capture: {0}")]
    Io(#[from] io::Error),
    #[error(
        "chunk at t_ms {t_ms} comes after one at {previous}: capture times must never go \
         backwards (use a monotonic clock for t_ms)"
    )]
    TimeBackwards { t_ms: u64, previous: u64 },
}

/// Writes a capture to any [`io::Write`]. Nothing is flushed here: the recorder
/// decides (flush per chunk so a crash loses at most the chunk being written).
pub struct CaptureWriter<W: Write> {
    out: W,
    last_t_ms: u64,
    line: Vec<u8>,
}

impl<W: Write> CaptureWriter<W> {
    /// Writes the header line.
    pub fn new(mut out: W, header: &CaptureHeader) -> io::Result<CaptureWriter<W>> {
        let mut line = header.to_json_line();
        line.push('\n');
        out.write_all(line.as_bytes())?;
        Ok(CaptureWriter {
            out,
            last_t_ms: 0,
            line: Vec::with_capacity(128),
        })
    }

    /// Writes one chunk line. Refuses (and writes nothing) if `t_ms` is earlier
    /// than the previous chunk's, since readers would reject the file there.
    pub fn write_chunk(&mut self, chunk: &Chunk) -> Result<(), CaptureWriteError> {
        self.write(chunk.t_ms, chunk.dir, &chunk.bytes)
    }

    /// [`CaptureWriter::write_chunk`] without building a [`Chunk`].
    pub fn write(
        &mut self,
        t_ms: u64,
        dir: Direction,
        bytes: &[u8],
    ) -> Result<(), CaptureWriteError> {
        if t_ms < self.last_t_ms {
            return Err(CaptureWriteError::TimeBackwards {
                t_ms,
                previous: self.last_t_ms,
            });
        }
        self.line.clear();
        let mut head = String::with_capacity(40);
        // Writing to a String cannot fail.
        let _ = write!(
            head,
            "{{\"t_ms\":{t_ms},\"dir\":\"{}\",\"hex\":\"",
            dir.as_str()
        );
        self.line.extend_from_slice(head.as_bytes());
        for &b in bytes {
            self.line.push(HEX_DIGITS[usize::from(b >> 4)]);
            self.line.push(HEX_DIGITS[usize::from(b & 0x0f)]);
        }
        self.line.extend_from_slice(b"\"}\n");
        self.out.write_all(&self.line)?;
        self.last_t_ms = t_ms;
        Ok(())
    }

    /// Writes one operator line, with the same time rule as chunks.
    pub fn write_operator(&mut self, op: &OperatorLine) -> Result<(), CaptureWriteError> {
        if op.t_ms < self.last_t_ms {
            return Err(CaptureWriteError::TimeBackwards {
                t_ms: op.t_ms,
                previous: self.last_t_ms,
            });
        }
        let mut line = serde_json::json!({
            "t_ms": op.t_ms,
            "board": op.board,
            "operator": op.command,
        });
        if let Some(by) = &op.by {
            line["by"] = by.as_str().into();
        }
        self.out.write_all(format!("{line}\n").as_bytes())?;
        self.last_t_ms = op.t_ms;
        Ok(())
    }

    /// The time of the last line written (operator lines must not go before it).
    pub fn last_t_ms(&self) -> u64 {
        self.last_t_ms
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Converters from third-party recordings of real boards to captures.
pub mod import {
    use base64::Engine as _;
    use eboard_protocols::dgt::{Decoder, Frame, Message, Mode};
    use eboard_protocols::ClockReading;

    use super::{Chunk, Direction};

    /// Why a recording could not be converted.
    #[derive(Debug, thiserror::Error)]
    pub enum ImportError {
        #[error(
            "line {line}: not base64 ({detail}); each line must be one base64-encoded message"
        )]
        Base64 { line: usize, detail: String },
        #[error("line {line}: cannot read {text:?} as a list of byte values 0..=255")]
        ByteList { line: usize, text: String },
    }

    /// Spacing of messages that no clock reading brackets (before the first or
    /// after the last reading): one board scan cycle, about 250 ms (dgt.md §1.5).
    pub const UNCLOCKED_STEP_MS: u64 = 250;
    /// Time given to a clock reading in which no running display went down: a
    /// lever press or an increment shows up within the running second, so half a
    /// second is the unbiased guess.
    pub const SAME_SECOND_STEP_MS: u64 = 500;
    /// Time given to a reading while the clock stands still: in UPDATE mode the
    /// board repeats the reading once a second.
    pub const STOPPED_STEP_MS: u64 = 1_000;

    /// Converts a `dgtdriver` recording (`*.inbytes`: one base64-encoded DGT
    /// message per line, as read from a real board, no timestamps) to capture
    /// chunks, one `in` chunk per message.
    ///
    /// Timestamps are derived from the clock: BWTIME readings come whenever a
    /// display changes (at least once a second in UPDATE mode), so the time from
    /// one reading to the next is the number of seconds the running display went
    /// down (the side that ran according to the earlier reading). A reading where
    /// no running display went down (lever press, increment added) is put
    /// [`SAME_SECOND_STEP_MS`] later, one on a stopped clock [`STOPPED_STEP_MS`]
    /// later. Messages between two readings are spread evenly between them;
    /// messages with no reading on one side are [`UNCLOCKED_STEP_MS`] apart. The
    /// result agrees with the clock's own seconds to within one second, which is
    /// what a DGT clock reports anyway.
    pub fn dgtdriver_inbytes(text: &str) -> Result<Vec<Chunk>, ImportError> {
        let engine = base64::engine::general_purpose::STANDARD;
        let mut messages = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let bytes = engine.decode(line).map_err(|e| ImportError::Base64 {
                line: i + 1,
                detail: e.to_string(),
            })?;
            messages.push(bytes);
        }
        // Clock readings by message index, decoded with the real codec so the
        // timing follows exactly what the session will see.
        let mut readings: Vec<(usize, ClockReading)> = Vec::new();
        let mut decoder = Decoder::new(Mode::Single);
        for (index, bytes) in messages.iter().enumerate() {
            decoder.push(bytes);
            while let Some(frame) = decoder.next() {
                if let Ok(Frame::Single(Message::Clock(bw))) = frame {
                    if !bw.is_blank() && !bw.no_clock {
                        readings.push((index, ClockReading::from(&bw)));
                    }
                }
            }
        }
        let mut times = vec![None; messages.len()];
        let mut t = 0u64;
        let mut previous: Option<&ClockReading> = None;
        for (index, reading) in &readings {
            if let Some(prev) = previous {
                t += step_between(prev, reading);
            } else {
                t = *index as u64 * UNCLOCKED_STEP_MS;
            }
            times[*index] = Some(t);
            previous = Some(reading);
        }
        fill_between(&mut times);
        Ok(messages
            .into_iter()
            .zip(times)
            .map(|(bytes, t)| Chunk {
                t_ms: t.unwrap_or(0),
                dir: Direction::In,
                bytes,
            })
            .collect())
    }

    /// Milliseconds from reading `a` to reading `b` (see [`dgtdriver_inbytes`]).
    fn step_between(a: &ClockReading, b: &ClockReading) -> u64 {
        let Some(side) = a.running_side() else {
            return STOPPED_STEP_MS;
        };
        let before = a.side(side).millis;
        let after = b.side(side).millis;
        if after < before {
            // Whole seconds the running display lost; a press made in the last of
            // them is inside that span already.
            before - after
        } else {
            SAME_SECOND_STEP_MS
        }
    }

    /// Gives every message without a time one between its clocked neighbours.
    fn fill_between(times: &mut [Option<u64>]) {
        let known: Vec<usize> = (0..times.len()).filter(|&i| times[i].is_some()).collect();
        let Some((&first, &last)) = known.first().zip(known.last()) else {
            for (i, t) in times.iter_mut().enumerate() {
                *t = Some(i as u64 * UNCLOCKED_STEP_MS);
            }
            return;
        };
        let t_first = times[first].unwrap_or(0);
        for (i, t) in times.iter_mut().enumerate().take(first) {
            *t = Some(t_first.saturating_sub((first - i) as u64 * UNCLOCKED_STEP_MS));
        }
        for pair in known.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (ta, tb) = (times[a].unwrap_or(0), times[b].unwrap_or(0));
            let gaps = (b - a) as u64;
            for (k, t) in times[a + 1..b].iter_mut().enumerate() {
                *t = Some(ta + (tb - ta) * (k as u64 + 1) / gaps);
            }
        }
        let t_last = times[last].unwrap_or(0);
        for (i, t) in times.iter_mut().enumerate().skip(last + 1) {
            *t = Some(t_last + (i - last) as u64 * UNCLOCKED_STEP_MS);
        }
    }

    /// Time between two consecutive chunks of a console log, which has no
    /// timestamps: about one 9600-baud byte time per chunk read, rounded up.
    pub const LOG_CHUNK_STEP_MS: u64 = 10;

    /// Converts a Node.js console log of a DGT session (as printed by the
    /// `dgt-chess-to-max` app) to capture chunks.
    ///
    /// Lines `[ 145, 0 ]` (or such an array spread over several lines, as Node
    /// prints arrays of more than six numbers) are chunks read from the board;
    /// `write ---------------------- [ Uint8Array(1) [ 64 ] ]` lines are chunks
    /// written to it. Everything else (the app's own messages, decoded position
    /// maps) is ignored. The log has no times: chunk `n` gets `t_ms` =
    /// `n × LOG_CHUNK_STEP_MS`.
    pub fn node_serial_log(text: &str) -> Result<Vec<Chunk>, ImportError> {
        let mut chunks = Vec::new();
        let mut pending: Option<(usize, String)> = None;
        let push = |dir: Direction, line: usize, list: &str, chunks: &mut Vec<Chunk>| {
            let bytes = parse_byte_list(list).ok_or_else(|| ImportError::ByteList {
                line,
                text: list.to_string(),
            })?;
            let t_ms = chunks.len() as u64 * LOG_CHUNK_STEP_MS;
            chunks.push(Chunk { t_ms, dir, bytes });
            Ok::<(), ImportError>(())
        };
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.trim();
            if let Some((start, acc)) = pending.as_mut() {
                if line == "]" {
                    let (start, acc) = (*start, std::mem::take(acc));
                    pending = None;
                    push(Direction::In, start, &acc, &mut chunks)?;
                } else {
                    acc.push_str(line);
                    acc.push(' ');
                }
                continue;
            }
            if line == "[" {
                pending = Some((line_no, String::new()));
            } else if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                push(Direction::In, line_no, inner, &mut chunks)?;
            } else if let Some(rest) = line.strip_prefix("write ") {
                // `write ---- [ Uint8Array(n) [ b0, b1 ] ]`: the bytes are inside
                // the innermost brackets.
                let open = rest.rfind('[');
                let close = rest.find(']');
                match open.zip(close) {
                    Some((o, c)) if o < c => {
                        push(Direction::Out, line_no, &rest[o + 1..c], &mut chunks)?
                    }
                    _ => {
                        return Err(ImportError::ByteList {
                            line: line_no,
                            text: line.to_string(),
                        })
                    }
                }
            }
        }
        if let Some((start, acc)) = pending {
            return Err(ImportError::ByteList {
                line: start,
                text: acc,
            });
        }
        Ok(chunks)
    }

    /// `" 1, 2,3 "` → `[1, 2, 3]`.
    fn parse_byte_list(list: &str) -> Option<Vec<u8>> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u8>().ok())
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use eboard_protocols::ClockSide;

        #[test]
        fn byte_lists_parse() {
            assert_eq!(parse_byte_list(" 145, 0 "), Some(vec![145, 0]));
            assert_eq!(parse_byte_list("256"), None);
            assert_eq!(parse_byte_list("x"), None);
        }

        #[test]
        fn node_log_reads_single_and_multi_line_arrays_and_writes() {
            let log = "junk\nwrite ---------------------- [ Uint8Array(1) [ 66 ] ]\n[ 134 ]\n[\n  0, 67,\n  8\n]\nPosition(64) [Map] {\n  'a8' => null,\n}\n";
            let chunks = node_serial_log(log).unwrap();
            let got: Vec<_> = chunks
                .iter()
                .map(|c| (c.t_ms, c.dir, c.bytes.clone()))
                .collect();
            assert_eq!(
                got,
                vec![
                    (0, Direction::Out, vec![66]),
                    (10, Direction::In, vec![134]),
                    (20, Direction::In, vec![0, 67, 8]),
                ]
            );
        }

        #[test]
        fn times_fill_evenly_between_known_points() {
            let mut t = vec![None, Some(1000), None, None, Some(4000), None];
            fill_between(&mut t);
            assert_eq!(
                t,
                vec![
                    Some(750),
                    Some(1000),
                    Some(2000),
                    Some(3000),
                    Some(4000),
                    Some(4250)
                ]
            );
        }

        #[test]
        fn clock_steps_follow_the_running_display() {
            let mut a = ClockReading {
                running: true,
                lever_high: Some(ClockSide::Left),
                ..ClockReading::default()
            };
            a.left.millis = 181_000;
            a.right.millis = 182_000;
            let mut b = a;
            b.left.millis = 180_000;
            assert_eq!(step_between(&a, &b), 1_000);
            // Lever press with an increment: the left display goes up.
            let mut c = b;
            c.left.millis = 182_000;
            c.lever_high = Some(ClockSide::Right);
            assert_eq!(step_between(&b, &c), SAME_SECOND_STEP_MS);
            let stopped = ClockReading::default();
            assert_eq!(step_between(&stopped, &a), STOPPED_STEP_MS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<(CaptureHeader, Vec<Chunk>), CaptureError> {
        let mut r = CaptureReader::new(text.as_bytes())?;
        let chunks = r.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok((r.header().clone(), chunks))
    }

    #[test]
    fn hex_decodes_either_case() {
        assert_eq!(decode_hex("8e0aFF"), Ok(vec![0x8e, 0x0a, 0xff]));
        assert_eq!(decode_hex(""), Ok(vec![]));
        assert!(decode_hex("8").is_err());
        assert!(decode_hex("zz").is_err());
    }

    #[test]
    fn header_keeps_unknown_fields_and_blank_lines_are_skipped() {
        let text = "{\"capture\":\"eboard-bridge\",\"version\":1,\"protocol\":\"dgt\",\"mode\":\"bus\",\"future\":[1]}\r\n\n{\"t_ms\":5,\"dir\":\"in\",\"hex\":\"40\",\"note\":\"x\"}\n";
        let (h, chunks) = read_all(text).unwrap();
        assert_eq!(h.mode, Some(PortMode::Bus));
        assert_eq!(h.extra.get("future"), Some(&serde_json::json!([1])));
        assert_eq!(
            chunks,
            vec![Chunk {
                t_ms: 5,
                dir: Direction::In,
                bytes: vec![0x40]
            }]
        );
        assert!(h.to_json_line().contains("\"future\":[1]"));
    }
}
