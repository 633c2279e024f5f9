//! `eboard-bridge doctor`: what an operator runs when a board does not show up.
//!
//! Each check looks at one thing the daemon needs from the machine (the
//! configuration, the serial devices and who holds them, permissions, the data
//! directory, the HTTP address, the system clock) and says what it found and,
//! when something is wrong, what to do. A [`Level::Fail`] is something that stops
//! boards from being followed or games from being kept; the command then exits
//! non-zero. A [`Level::Warn`] is worth fixing before the round but blocks nothing.
//!
//! Every place the checks read from (`/dev`, `/sys`, `/proc`, where the unit and
//! the udev rules are installed, the kernel's clock state) is a field of
//! [`System`], so tests point them at directories and pseudo-terminals of their
//! own. Only [`probe_board`] talks to a board, and only on a port no other
//! program holds: it asks for the serial number and version (single board) or
//! pings the bus, which changes nothing on the board.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use eboard_protocols::dgt::{
    BusCommand, BusCommandKind, BusReply, Command, Decoder, Frame, Message, Mode,
};

use crate::config::{looks_like_dgt, Config, Protocol};

/// The configuration file the packaged service reads (its unit passes
/// `${CONFIGURATION_DIRECTORY}/eboard-bridge.toml`).
pub const SERVICE_CONFIG: &str = "/etc/eboard-bridge/eboard-bridge.toml";

/// Less free space than this in the data directory stops a tournament: the
/// journal keeps every byte of every board (about 1 MB per board and hour).
pub const MIN_FREE_BYTES: u64 = 200 * 1024 * 1024;
/// Less than this is worth a warning: a day of a large event.
pub const LOW_FREE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

/// One thing the doctor found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub level: Level,
    /// What was checked: `configuration`, `serial`, `/dev/ttyUSB0`, `http`, …
    pub topic: String,
    /// What happened, in a sentence.
    pub what: String,
    /// What to do about it (every warning and failure has one).
    pub fix: Option<String>,
}

/// Everything the doctor found, in the order it looked.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    fn ok(&mut self, topic: impl Into<String>, what: impl Into<String>) {
        self.push(Level::Ok, topic, what, None);
    }

    fn warn(&mut self, topic: impl Into<String>, what: impl Into<String>, fix: impl Into<String>) {
        self.push(Level::Warn, topic, what, Some(fix.into()));
    }

    fn fail(&mut self, topic: impl Into<String>, what: impl Into<String>, fix: impl Into<String>) {
        self.push(Level::Fail, topic, what, Some(fix.into()));
    }

    fn push(
        &mut self,
        level: Level,
        topic: impl Into<String>,
        what: impl Into<String>,
        fix: Option<String>,
    ) {
        self.findings.push(Finding {
            level,
            topic: topic.into(),
            what: what.into(),
            fix,
        });
    }

    /// Whether something blocks a tournament.
    pub fn blocking(&self) -> bool {
        self.count(Level::Fail) > 0
    }

    pub fn count(&self, level: Level) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }

    /// The findings about `topic`.
    pub fn about(&self, topic: &str) -> impl Iterator<Item = &Finding> + '_ {
        let topic = topic.to_owned();
        self.findings.iter().filter(move |f| f.topic == topic)
    }

    /// The report as the command prints it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            let tag = match f.level {
                Level::Ok => "[ok]  ",
                Level::Warn => "[warn]",
                Level::Fail => "[FAIL]",
            };
            // A quoted parser message may run over several lines: keep them indented.
            let what = f.what.trim_end().replace('\n', "\n       ");
            let _ = writeln!(out, "{tag} {}: {what}", f.topic);
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "       fix: {fix}");
            }
        }
        let (fails, warns) = (self.count(Level::Fail), self.count(Level::Warn));
        let _ = writeln!(out);
        if fails == 0 {
            let _ = writeln!(
                out,
                "Nothing blocks a tournament ({warns} warning{}).",
                if warns == 1 { "" } else { "s" }
            );
        } else {
            let _ = writeln!(
                out,
                "{fails} problem{} block{} a tournament, {warns} warning{}: fix the [FAIL] lines above, then run `eboard-bridge doctor` again.",
                if fails == 1 { "" } else { "s" },
                if fails == 1 { "s" } else { "" },
                if warns == 1 { "" } else { "s" }
            );
        }
        out
    }
}

/// The kernel's view of the system clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockSync {
    /// Disciplined by NTP (or PTP); `max_error_us` is the kernel's bound.
    Synchronised { max_error_us: i64 },
    /// Nobody keeps the clock right: it is whatever it was set to.
    Unsynchronised,
    /// The state could not be read.
    Unknown(String),
}

/// Where the checks look. [`System::real`] is this machine; tests replace parts.
#[derive(Clone, Debug)]
pub struct System {
    /// `/dev`: `ttyUSB*` and `ttyACM*` nodes are looked for here.
    pub dev: PathBuf,
    /// `/sys`: USB vendor, product and manufacturer of each tty.
    pub sys: PathBuf,
    /// `/proc`: running programs and the ports and sockets they hold.
    pub proc: PathBuf,
    /// Where an installed `eboard-bridge.service` may be.
    pub unit_dirs: Vec<PathBuf>,
    /// Where an installed `60-eboard-bridge.rules` may be.
    pub rules_dirs: Vec<PathBuf>,
    /// The configuration read when no `--config` is given and the file exists.
    pub service_config: PathBuf,
    /// The kernel's clock state.
    pub clock: fn() -> ClockSync,
    /// How long a board has to answer.
    pub answer_timeout: Duration,
}

impl System {
    /// This machine.
    pub fn real() -> System {
        System {
            dev: "/dev".into(),
            sys: "/sys".into(),
            proc: "/proc".into(),
            unit_dirs: [
                "/etc/systemd/system",
                "/usr/lib/systemd/system",
                "/lib/systemd/system",
            ]
            .map(PathBuf::from)
            .to_vec(),
            rules_dirs: [
                "/etc/udev/rules.d",
                "/usr/lib/udev/rules.d",
                "/lib/udev/rules.d",
            ]
            .map(PathBuf::from)
            .to_vec(),
            service_config: SERVICE_CONFIG.into(),
            clock: kernel_clock,
            answer_timeout: Duration::from_millis(2_000),
        }
    }

    fn unit_installed(&self) -> Option<PathBuf> {
        self.unit_dirs
            .iter()
            .map(|d| d.join("eboard-bridge.service"))
            .find(|p| p.exists())
    }

    fn rules_installed(&self) -> Option<PathBuf> {
        self.rules_dirs
            .iter()
            .map(|d| d.join("60-eboard-bridge.rules"))
            .find(|p| p.exists())
    }
}

/// The system clock's state from `adjtimex(2)` (read only: no mode bit is set),
/// the flag `timedatectl` reports as "System clock synchronized".
pub fn kernel_clock() -> ClockSync {
    // SAFETY: `timex` is plain data for which all-zero is a valid value, and with
    // `modes == 0` adjtimex only fills it in.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut t) };
    if state == -1 {
        return ClockSync::Unknown(std::io::Error::last_os_error().to_string());
    }
    if state == libc::TIME_ERROR || t.status & libc::STA_UNSYNC != 0 {
        ClockSync::Unsynchronised
    } else {
        ClockSync::Synchronised {
            max_error_us: t.maxerror as i64,
        }
    }
}

/// `eboard-bridge doctor [--config FILE]`: prints the report; exit status 1 when
/// something blocks a tournament.
pub fn run_cli(config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let report = check(config, |k| std::env::var(k).ok(), &System::real());
    print!("{}", report.render());
    Ok(if report.blocking() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs every check. `config`: the file given with `--config`; without one the
/// service's file is read when it exists, else the defaults apply, as for `run`.
/// `env` gives the `EBOARD_BRIDGE_*` variables (normally `std::env::var`).
pub fn check(config: Option<&Path>, env: impl Fn(&str) -> Option<String>, sys: &System) -> Report {
    let mut r = Report::default();
    let config = check_config(&mut r, config, env, sys);
    let ports = check_devices(&mut r, &config, sys);
    for port in &ports {
        check_port(&mut r, port, sys);
    }
    check_grabbers(&mut r, sys);
    check_data_dir(&mut r, &config.storage.data_dir, sys);
    check_http(&mut r, config.http.listen, sys);
    check_clock(&mut r, sys);
    r
}

fn check_config(
    r: &mut Report,
    given: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
    sys: &System,
) -> Config {
    let path = given.map(Path::to_path_buf).or_else(|| {
        sys.service_config
            .exists()
            .then(|| sys.service_config.clone())
    });
    let loaded = match &path {
        Some(p) => Config::from_file(p),
        None => Ok(Config::default()),
    };
    let named = path.as_ref().map_or_else(
        || {
            format!(
                "the defaults (no --config given, no {})",
                sys.service_config.display()
            )
        },
        |p| p.display().to_string(),
    );
    let mut config = match loaded {
        Ok(c) => c,
        Err(e) => {
            r.fail(
                "configuration",
                format!("{named} cannot be used: {e}"),
                "correct the file as the message says: the daemon refuses to start with it (`eboard-bridge print-config` prints every key with its default and a comment). The checks below use the defaults",
            );
            return Config::default();
        }
    };
    let from_file = config.clone();
    if let Err(e) = config.apply_env(env) {
        r.fail(
            "configuration",
            format!("{named} is valid, but the environment is not: {e}"),
            "unset the variable or give it a value as the message says (for the service: `systemctl edit eboard-bridge`). The checks below use the file without it",
        );
        return from_file;
    }
    let boards = config.boards.len();
    r.ok(
        "configuration",
        format!(
            "{named}: valid, {boards} board{} listed, discovery {}",
            if boards == 1 { "" } else { "s" },
            if config.discovery.enabled {
                format!("on in {}", config.discovery.dir.display())
            } else {
                "off".to_string()
            }
        ),
    );
    config
}

/// A port the daemon will open, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardPort {
    pub path: PathBuf,
    /// `board 3` (configured) or `discovered`.
    pub label: String,
    pub bus: bool,
}

/// A `ttyUSB`/`ttyACM` node and what USB says about it.
#[derive(Clone, Debug, Default)]
struct UsbSerial {
    node: PathBuf,
    vendor: Option<String>,
    product_id: Option<String>,
    manufacturer: Option<String>,
    product: Option<String>,
}

impl UsbSerial {
    /// The udev rules' test: manufacturer "Digital Game Technology" or a
    /// product name starting with "DGT".
    fn is_dgt(&self) -> bool {
        self.manufacturer.as_deref() == Some("Digital Game Technology")
            || self
                .product
                .as_deref()
                .is_some_and(|p| p.starts_with("DGT"))
    }

    fn describe(&self) -> String {
        let id = match (&self.vendor, &self.product_id) {
            (Some(v), Some(p)) => format!("USB {v}:{p}"),
            _ => "no USB information".to_string(),
        };
        let names: Vec<&str> = [self.manufacturer.as_deref(), self.product.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if names.is_empty() {
            id
        } else {
            format!("{id}, {}", names.join(" "))
        }
    }
}

fn read_attr(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The `ttyUSB*`/`ttyACM*` nodes under `sys.dev`, with their USB attributes
/// (from the USB device above `/sys/class/tty/NAME/device`).
fn usb_serials(sys: &System) -> Vec<UsbSerial> {
    let Ok(entries) = std::fs::read_dir(&sys.dev) else {
        return Vec::new();
    };
    let mut found: Vec<UsbSerial> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("ttyUSB") || n.starts_with("ttyACM")
        })
        .map(|e| {
            let name = e.file_name();
            let mut s = UsbSerial {
                node: e.path(),
                ..UsbSerial::default()
            };
            let device = sys.sys.join("class/tty").join(&name).join("device");
            let mut dir = std::fs::canonicalize(&device).ok();
            while let Some(d) = dir {
                if d.join("idVendor").exists() {
                    s.vendor = read_attr(&d, "idVendor");
                    s.product_id = read_attr(&d, "idProduct");
                    s.manufacturer = read_attr(&d, "manufacturer");
                    s.product = read_attr(&d, "product");
                    break;
                }
                if d == sys.sys || !d.starts_with(&sys.sys) {
                    break;
                }
                dir = d.parent().map(Path::to_path_buf);
            }
            s
        })
        .collect();
    found.sort_by(|a, b| a.node.cmp(&b.node));
    found
}

/// Serial devices: which exist, which look like DGT boards, which the daemon
/// will open. Returns the ports to check further.
fn check_devices(r: &mut Report, config: &Config, sys: &System) -> Vec<BoardPort> {
    let serials = usb_serials(sys);
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut ports: Vec<BoardPort> = Vec::new();
    let mut covered: BTreeSet<PathBuf> = BTreeSet::new();

    // Configured boards (a bus port is listed once per board: check it once).
    for b in &config.boards {
        if ports.iter().any(|p| p.path == b.port) {
            continue;
        }
        let bus = b.effective_protocol() == Protocol::DgtBus;
        let label = match (bus, b.number) {
            (true, _) => "bus".to_string(),
            (false, Some(n)) => format!("board {n}"),
            (false, None) => "board".to_string(),
        };
        if !b.port.exists() {
            let hint = if serials.is_empty() {
                "no ttyUSB/ttyACM device exists at all: plug the board's USB cable in (a DGT board is powered through it) and watch `dmesg -w` for a new device".to_string()
            } else {
                format!(
                    "serial devices present: {}; plug the board in, or correct `port` in its [[board]] table (a /dev/serial/by-id/ name stays the same when the board is replugged)",
                    serials.iter().map(|s| s.node.display().to_string()).collect::<Vec<_>>().join(", ")
                )
            };
            r.fail(
                b.port.display().to_string(),
                format!("the configured port of {label} does not exist"),
                hint,
            );
            continue;
        }
        covered.insert(canonical(&b.port));
        ports.push(BoardPort {
            path: b.port.clone(),
            label,
            bus,
        });
    }

    // What discovery would follow.
    let by_id: Vec<PathBuf> = std::fs::read_dir(&config.discovery.dir)
        .map(|d| {
            let mut v: Vec<PathBuf> = d.filter_map(Result::ok).map(|e| e.path()).collect();
            v.sort();
            v
        })
        .unwrap_or_default();
    let mut dgt_by_id = Vec::new();
    for p in &by_id {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let target = canonical(p);
        if looks_like_dgt(&name) {
            dgt_by_id.push(target.clone());
            if covered.contains(&target) {
                continue;
            }
            if config.discovery.enabled {
                covered.insert(target);
                ports.push(BoardPort {
                    path: p.clone(),
                    label: "discovered".to_string(),
                    bus: false,
                });
            } else {
                r.warn(
                    p.display().to_string(),
                    "looks like a DGT board, but discovery is off and no [[board]] lists it: it will not be followed",
                    format!("add a [[board]] table with port = \"{}\", or set [discovery] enabled = true", p.display()),
                );
            }
        }
    }

    // USB serial nodes that are not covered: DGT-looking by USB but without a
    // by-id name discovery would take, or other adapters.
    for s in &serials {
        let node = canonical(&s.node);
        if covered.contains(&node) {
            continue;
        }
        if s.is_dgt() && !dgt_by_id.contains(&node) {
            r.warn(
                s.node.display().to_string(),
                format!("is a DGT board ({}), but discovery does not see it in {}", s.describe(), config.discovery.dir.display()),
                format!("list it: [[board]] port = \"{}\" (better: its /dev/chessboard/ name from the udev rules), or point [discovery] dir at /dev/serial/by-id", s.node.display()),
            );
        } else if !s.is_dgt() {
            r.ok(
                s.node.display().to_string(),
                format!(
                    "a serial adapter that is not a DGT board by its USB names ({}): not followed, since other devices use the same chips. If a board (or a bus line) is on it, list it in a [[board]] table",
                    s.describe()
                ),
            );
        }
    }

    if ports.is_empty() {
        let fix = if serials.is_empty() {
            "plug a board in: its USB cable powers it. Then `ls -l /dev/serial/by-id/` should show a name with DGT or Digital_Game_Technology; if nothing appears, try another cable or USB socket and look at `dmesg -w` while plugging".to_string()
        } else {
            "none of the serial devices above looks like a DGT board: if a board is on one of them, list it in a [[board]] table with its port".to_string()
        };
        r.fail(
            "serial",
            format!(
                "no board to follow: {}{}",
                if config.boards.is_empty() {
                    "no [[board]] is configured"
                } else {
                    "no configured [[board]] port exists"
                },
                if config.discovery.enabled {
                    format!(
                        " and nothing DGT-like is in {}",
                        config.discovery.dir.display()
                    )
                } else {
                    " and discovery is off".to_string()
                }
            ),
            fix,
        );
    } else {
        r.ok(
            "serial",
            format!(
                "{} port{} to follow: {}",
                ports.len(),
                if ports.len() == 1 { "" } else { "s" },
                ports
                    .iter()
                    .map(|p| format!("{} ({})", p.path.display(), p.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    ports
}

/// A running program.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Proc {
    pid: u32,
    comm: String,
}

fn processes(sys: &System) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir(&sys.proc) else {
        return Vec::new();
    };
    let mut out: Vec<Proc> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some(Proc {
                pid,
                comm: comm.trim().to_string(),
            })
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}

/// Programs with an open descriptor that `opens` accepts (its link target in
/// `/proc/PID/fd`). Programs of other users are invisible to a non-root doctor.
fn holders(sys: &System, opens: impl Fn(&Path) -> bool) -> Vec<Proc> {
    processes(sys)
        .into_iter()
        .filter(|p| {
            std::fs::read_dir(sys.proc.join(p.pid.to_string()).join("fd")).is_ok_and(|fds| {
                fds.filter_map(Result::ok)
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| opens(&l)))
            })
        })
        .collect()
}

const GRABBERS: [(&str, &str); 2] = [
    (
        "ModemManager",
        "ModemManager takes serial devices for modems and sends them AT commands: the installed udev rule (60-eboard-bridge.rules) tells it to leave DGT boards alone; with an adapter the rule cannot recognise, `sudo systemctl disable --now ModemManager` (a tournament machine needs no modem)",
    ),
    (
        "brltty",
        "brltty takes USB serial adapters (CP210x, FTDI, …) for braille displays and keeps them open: if no braille display is used, `sudo systemctl mask --now brltty.service brltty-udev.service` or `sudo apt remove brltty`, then replug the board",
    ),
];

fn check_port(r: &mut Report, port: &BoardPort, sys: &System) {
    let topic = port.path.display().to_string();
    let node = match std::fs::canonicalize(&port.path) {
        Ok(n) => n,
        Err(e) => {
            r.fail(
                topic,
                format!("cannot be resolved ({e})"),
                "replug the board; if the name is a stale symlink, remove it",
            );
            return;
        }
    };
    let meta = match std::fs::metadata(&node) {
        Ok(m) => m,
        Err(e) => {
            r.fail(
                topic,
                format!("{} cannot be read ({e})", node.display()),
                "replug the board and run doctor again",
            );
            return;
        }
    };
    if !meta.file_type().is_char_device() {
        r.fail(
            topic,
            format!("{} is not a serial device (not a character device)", node.display()),
            "point the [[board]] port at the board's device (/dev/serial/by-id/…, /dev/ttyACM0, /dev/ttyUSB0)",
        );
        return;
    }
    let pty = node.starts_with("/dev/pts");
    let usb = node.file_name().is_some_and(|n| {
        n.to_string_lossy().starts_with("ttyUSB") || n.to_string_lossy().starts_with("ttyACM")
    });

    // Who else has it open (a pseudo-terminal's other side is its program: expected).
    if !pty {
        let me = std::process::id();
        let held: Vec<Proc> = holders(sys, |l| l == node)
            .into_iter()
            .filter(|p| p.pid != me)
            .collect();
        for h in &held {
            if let Some((_, fix)) = GRABBERS.iter().find(|(name, _)| h.comm == *name) {
                r.fail(
                    topic.clone(),
                    format!("is held open by {} (PID {}): the board's bytes go to it, not to eboard-bridge", h.comm, h.pid),
                    *fix,
                );
                return;
            }
        }
        if let Some(h) = held.iter().find(|h| h.comm == "eboard-bridge") {
            r.ok(
                topic,
                format!("in use by eboard-bridge (PID {}), the service or a `run`: not probed, so as not to take its bytes", h.pid),
            );
            return;
        }
        if let Some(h) = held.first() {
            r.fail(
                topic,
                format!("is held open by {} (PID {}): a serial port can be read by one program only", h.comm, h.pid),
                format!("close that program (`kill {}` if it is a leftover terminal such as screen or minicom), then start eboard-bridge", h.pid),
            );
            return;
        }
    }

    // Permissions: the user running doctor, and the service's group.
    check_permissions(r, &topic, &node, &meta, usb, pty, sys);

    match probe_board(&node, port.bus, sys.answer_timeout) {
        Ok(answer) => r.ok(topic, format!("{} ({}) answers: {answer}", node.display(), port.label)),
        Err(ProbeError::Busy) => r.ok(
            topic,
            format!("{} is locked by another program (eboard-bridge locks the ports it reads): not probed", node.display()),
        ),
        Err(ProbeError::Open(e)) if e.kind() == ErrorKind::PermissionDenied => {
            // Reported by check_permissions.
        }
        Err(ProbeError::Open(e)) => r.fail(
            topic,
            format!("{} cannot be opened: {e}", node.display()),
            "replug the board; if the error stays, look at `dmesg` for USB errors (a bad cable or a USB hub without power)",
        ),
        Err(ProbeError::Io(e)) => r.fail(
            topic,
            format!("talking to {} failed: {e}", node.display()),
            "replug the board and run doctor again; `dmesg` says whether the USB device went away",
        ),
        Err(ProbeError::Silent) => {
            let fix = if port.bus {
                "check the bus line: the boards are chained and powered through the adapter; if this is a single board, write protocol = \"dgt\" in its [[board]] table"
            } else {
                "a DGT board answers at once when powered: replug its USB cable (it powers the board), try another cable or socket; if it is a bus line, write protocol = \"dgt-bus\" and its boards' serials in [[board]] tables"
            };
            r.fail(
                topic,
                format!(
                    "{} opened, but no board answered within {} ms",
                    node.display(),
                    sys.answer_timeout.as_millis()
                ),
                fix,
            );
        }
    }
}

fn check_permissions(
    r: &mut Report,
    topic: &str,
    node: &Path,
    meta: &std::fs::Metadata,
    usb: bool,
    pty: bool,
    sys: &System,
) {
    use nix::unistd::{access, AccessFlags, Gid, Group, Uid, User};
    let group = Group::from_gid(Gid::from_raw(meta.gid()))
        .ok()
        .flatten()
        .map_or_else(|| meta.gid().to_string(), |g| g.name);
    let owner = User::from_uid(Uid::from_raw(meta.uid()))
        .ok()
        .flatten()
        .map_or_else(|| meta.uid().to_string(), |u| u.name);
    let mode = meta.mode() & 0o777;
    if access(node, AccessFlags::R_OK | AccessFlags::W_OK).is_err() {
        let me = User::from_uid(Uid::current())
            .ok()
            .flatten()
            .map_or_else(|| Uid::current().to_string(), |u| u.name);
        let fix = if mode & 0o060 == 0o060 {
            format!(
                "add yourself to group {group}: `sudo usermod -aG {group} {me}`, then log out and in again (the service needs nothing: it runs in group dialout)"
            )
        } else {
            format!("the node is mode {mode:o}: give its group read and write with a udev rule (MODE=\"0660\", GROUP=\"dialout\"), or run as root")
        };
        r.fail(
            topic.to_string(),
            format!("{} (owner {owner}, group {group}, mode {mode:o}) cannot be read and written by user {me}", node.display()),
            fix,
        );
    }
    if sys.unit_installed().is_some() {
        if pty || !usb {
            r.warn(
                topic.to_string(),
                format!(
                    "{} is not a ttyUSB/ttyACM device: the service's device policy (DevicePolicy=closed with DeviceAllow=char-ttyUSB and char-ttyACM) will refuse it",
                    node.display()
                ),
                "fine for `eboard-bridge run` by hand; for the service, add DeviceAllow= for this device in `systemctl edit eboard-bridge`",
            );
        } else if group != "dialout" || mode & 0o060 != 0o060 {
            r.warn(
                topic.to_string(),
                format!(
                    "{} is group {group}, mode {mode:o}: the service reaches serial ports only as group dialout (SupplementaryGroups=dialout) with group read and write",
                    node.display()
                ),
                "add a udev rule setting GROUP=\"dialout\", MODE=\"0660\" for it (Arch-family systems use group uucp: change SupplementaryGroups= with `systemctl edit eboard-bridge`)",
            );
        }
    }
}

/// Why a board gave no answer.
#[derive(Debug)]
pub enum ProbeError {
    /// Another program holds the port's lock (eboard-bridge itself does).
    Busy,
    Open(std::io::Error),
    Io(std::io::Error),
    /// Nothing came back in time.
    Silent,
}

/// Asks the board on `path` who it is: serial number and version (single
/// board) or a bus ping (every board on the line answers with its address).
/// Changes nothing on the board. Returns a description of the answer.
pub fn probe_board(path: &Path, bus: bool, timeout: Duration) -> Result<String, ProbeError> {
    let mut port = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .map_err(ProbeError::Open)?;
    // eboard-bridge (through the serialport crate) holds an exclusive flock on
    // the ports it reads: never take bytes from under it.
    match nix::fcntl::Flock::lock(
        port.try_clone().map_err(ProbeError::Open)?,
        nix::fcntl::FlockArg::LockExclusiveNonblock,
    ) {
        Ok(lock) => drop(lock),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Err(ProbeError::Busy),
        Err((_, e)) => return Err(ProbeError::Open(e.into())),
    }
    set_raw_9600(&port).map_err(ProbeError::Io)?;
    let mut out = Vec::new();
    if bus {
        BusCommand {
            kind: BusCommandKind::Ping,
            address: 0,
        }
        .encode(&mut out);
    } else {
        Command::ReturnSerialNumber.encode(&mut out);
        Command::SendVersion.encode(&mut out);
    }
    port.write_all(&out).map_err(ProbeError::Io)?;
    let mut decoder = Decoder::new(if bus { Mode::Bus } else { Mode::Single });
    let (mut serial, mut version, mut addresses) = (None, None, BTreeSet::new());
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 256];
    loop {
        let now = Instant::now();
        // A bus line is listened to for the whole time: every board answers.
        let done = if bus {
            false
        } else {
            serial.is_some() && version.is_some()
        };
        if done || now >= deadline {
            break;
        }
        let wait = (deadline - now).as_millis().min(u128::from(u16::MAX)) as u16;
        let mut fds = [nix::poll::PollFd::new(
            port.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(wait)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(ProbeError::Io(e.into())),
        }
        let n = match port.read(&mut buf) {
            Ok(0) => {
                return Err(ProbeError::Io(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "the port was closed",
                )))
            }
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                continue
            }
            Err(e) => return Err(ProbeError::Io(e)),
        };
        decoder.push(&buf[..n]);
        while let Some(frame) = decoder.next() {
            match frame {
                Ok(Frame::Single(Message::SerialNumber(s))) => serial = Some(s),
                Ok(Frame::Single(Message::LongSerialNumber(s))) => serial = Some(s),
                Ok(Frame::Single(Message::Version { major, minor })) => {
                    version = Some((major, minor))
                }
                Ok(Frame::Bus(m)) if m.reply == BusReply::Ping => {
                    addresses.insert(m.address);
                }
                _ => {}
            }
        }
    }
    if bus {
        if addresses.is_empty() {
            return Err(ProbeError::Silent);
        }
        return Ok(format!(
            "{} board{} on the bus, addresses {}",
            addresses.len(),
            if addresses.len() == 1 { "" } else { "s" },
            addresses
                .iter()
                .map(|a| format!("{a:05}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match (serial, version) {
        (None, None) => Err(ProbeError::Silent),
        (s, v) => Ok(format!(
            "DGT board, serial {}, version {}",
            s.as_deref().unwrap_or("not sent"),
            v.map_or("not sent".to_string(), |(a, b)| format!("{a}.{b}"))
        )),
    }
}

fn set_raw_9600(port: &File) -> std::io::Result<()> {
    use nix::sys::termios::{cfmakeraw, cfsetspeed, tcgetattr, tcsetattr, BaudRate, SetArg};
    let mut t = tcgetattr(port)?;
    cfmakeraw(&mut t);
    cfsetspeed(&mut t, BaudRate::B9600)?;
    tcsetattr(port, SetArg::TCSANOW, &t)?;
    Ok(())
}

/// ModemManager and brltty, whatever they hold now: both take serial ports
/// that appear, so a board plugged in later can be grabbed.
fn check_grabbers(r: &mut Report, sys: &System) {
    let procs = processes(sys);
    let rules = sys.rules_installed();
    for (name, fix) in GRABBERS {
        let Some(p) = procs.iter().find(|p| p.comm == name) else {
            continue;
        };
        match (name, &rules) {
            ("ModemManager", Some(rules)) => r.ok(
                "ModemManager",
                format!(
                    "runs (PID {}); {} tells it to leave DGT boards alone",
                    p.pid,
                    rules.display()
                ),
            ),
            _ => r.warn(
                name,
                format!(
                    "runs (PID {}) and may take a board's serial port as soon as it is plugged in",
                    p.pid
                ),
                fix,
            ),
        }
    }
}

/// The nearest existing directory at or above `dir`.
fn existing_ancestor(dir: &Path) -> Option<&Path> {
    dir.ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.symlink_metadata().is_ok())
}

fn check_data_dir(r: &mut Report, dir: &Path, sys: &System) {
    let topic = "data directory";
    let Some(base) = existing_ancestor(dir) else {
        r.fail(
            topic,
            format!("{}: no part of the path exists", dir.display()),
            "set [storage] data_dir to an absolute path on a local disk",
        );
        return;
    };
    if !base.is_dir() {
        r.fail(
            topic,
            format!(
                "{} cannot be a directory: {} exists and is not one",
                dir.display(),
                base.display()
            ),
            "set [storage] data_dir (or EBOARD_BRIDGE_DATA_DIR) to a directory, or move that file away",
        );
        return;
    }
    let service_dir = dir == Path::new("/var/lib/eboard-bridge") && sys.unit_installed().is_some();
    let is_root = nix::unistd::Uid::effective().is_root();
    // Write a file where the daemon writes: in the directory, or where it will be created.
    let probe = base.join(format!(".eboard-bridge-doctor-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"doctor\n").and_then(|()| f.sync_all()));
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::PermissionDenied && service_dir && !is_root => {
            r.warn(
                topic,
                format!("{} belongs to the service (systemd's StateDirectory=), so this user cannot check it", dir.display()),
                "run `sudo eboard-bridge doctor` to check it as the service would",
            );
        }
        Err(e) => {
            let what = if base == dir {
                format!("{} is not writable: {e}", dir.display())
            } else {
                format!(
                    "{} does not exist and cannot be created in {}: {e}",
                    dir.display(),
                    base.display()
                )
            };
            let fix = if e.raw_os_error() == Some(libc::EROFS) {
                "the file system is read-only: remount it read-write, or set [storage] data_dir (or EBOARD_BRIDGE_DATA_DIR) to a directory on a writable disk".to_string()
            } else if e.raw_os_error() == Some(libc::ENOSPC) {
                "the disk is full: free space, or set [storage] data_dir to another disk"
                    .to_string()
            } else {
                format!(
                    "give the user that runs eboard-bridge write access (`sudo chown`), or set [storage] data_dir (or EBOARD_BRIDGE_DATA_DIR) to a directory it can write{}",
                    if service_dir { "; the service's own /var/lib/eboard-bridge is made by systemd and needs nothing" } else { "" }
                )
            };
            r.fail(topic, what, fix);
            return;
        }
    }
    match nix::sys::statvfs::statvfs(base) {
        Ok(st) => {
            let free = st.blocks_available().saturating_mul(st.fragment_size());
            let mib = free / (1024 * 1024);
            if free < MIN_FREE_BYTES {
                r.fail(
                    topic,
                    format!("only {mib} MiB free for {}: the journal keeps every byte of every board (about 1 MB per board and hour)", dir.display()),
                    format!("free at least {} MiB there, or set [storage] data_dir to a larger disk", MIN_FREE_BYTES / (1024 * 1024)),
                );
            } else if free < LOW_FREE_BYTES {
                r.warn(
                    topic,
                    format!(
                        "{mib} MiB free for {}: enough for a round, short for a long event",
                        dir.display()
                    ),
                    "free space or move [storage] data_dir to a larger disk before the event",
                );
            } else {
                r.ok(
                    topic,
                    if base == dir {
                        format!("{} is writable, {mib} MiB free", dir.display())
                    } else {
                        format!(
                            "{} will be created in {} (writable), {mib} MiB free",
                            dir.display(),
                            base.display()
                        )
                    },
                );
            }
        }
        Err(e) => r.warn(
            topic,
            format!("free space of {} cannot be read: {e}", base.display()),
            "check it with `df -h`",
        ),
    }
}

/// The `LISTEN` sockets on `addr`'s port in `/proc/net/tcp{,6}`: their inodes.
fn listening_inodes(sys: &System, port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for file in ["net/tcp", "net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(sys.proc.join(file)) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != "0A" {
                continue;
            }
            let local_port = f[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                if let Ok(inode) = f[9].parse() {
                    out.push(inode);
                }
            }
        }
    }
    out
}

fn socket_owner(sys: &System, inodes: &[u64]) -> Option<Proc> {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    holders(sys, |l| wanted.iter().any(|w| l.as_os_str() == w.as_str()))
        .into_iter()
        .next()
}

fn check_http(r: &mut Report, addr: SocketAddr, sys: &System) {
    let topic = "http";
    let change = format!(
        "set [http] listen (or EBOARD_BRIDGE_HTTP_LISTEN) to a free address, e.g. {}:{}",
        addr.ip(),
        addr.port().wrapping_add(1).max(1024)
    );
    match TcpListener::bind(addr) {
        Ok(l) => {
            drop(l);
            let reach = if addr.ip().is_loopback() {
                " (this machine only; 0.0.0.0 lets other machines in the hall reach it)"
            } else {
                ""
            };
            r.ok(
                topic,
                format!("{addr} is free{reach}: the feeds will be at http://{addr}/games.pgn, the arbiter dashboard at http://{addr}/arbiter/"),
            );
        }
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            let owner = socket_owner(sys, &listening_inodes(sys, addr.port()));
            match owner {
                Some(p) if p.comm == "eboard-bridge" => r.ok(
                    topic,
                    format!("{addr} is served by the running eboard-bridge (PID {}): dashboard at http://{addr}/arbiter/", p.pid),
                ),
                Some(p) => r.fail(
                    topic,
                    format!("{addr} is already in use by {} (PID {}): eboard-bridge could not serve its feeds and dashboard", p.comm, p.pid),
                    format!("stop that program, or {change}"),
                ),
                None => r.fail(
                    topic,
                    format!("{addr} is already in use by another program (run doctor with sudo to see which)"),
                    format!("if it is the eboard-bridge service, all is well (`systemctl status eboard-bridge`); otherwise stop that program, or {change}"),
                ),
            }
        }
        Err(e) if e.kind() == ErrorKind::AddrNotAvailable => r.fail(
            topic,
            format!("{addr} is not an address of this machine: {e}"),
            format!("use 127.0.0.1:{0} (this machine only) or 0.0.0.0:{0} (every network of the machine)", addr.port()),
        ),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => r.fail(
            topic,
            format!("{addr} may not be bound: {e}"),
            "ports below 1024 need privileges the service does not have: use 8080 or another port above 1023",
        ),
        Err(e) => r.fail(topic, format!("{addr} cannot be bound: {e}"), change),
    }
}

fn check_clock(r: &mut Report, sys: &System) {
    let topic = "clock";
    match (sys.clock)() {
        ClockSync::Synchronised { max_error_us } => r.ok(
            topic,
            format!("the system clock is synchronised (the kernel's error bound: {} ms)", max_error_us / 1000),
        ),
        ClockSync::Unsynchronised => r.warn(
            topic,
            "the system clock is not synchronised (the kernel reports it unsynchronised): the games' dates, the journal's run times and the event times in the feeds come from it",
            "turn on time synchronisation (`sudo timedatectl set-ntp true`, or chrony) and check `timedatectl` says \"System clock synchronized: yes\"; in a hall without internet, set it by hand before the round (`sudo date -s 'YYYY-MM-DD HH:MM'`)",
        ),
        ClockSync::Unknown(e) => r.warn(
            topic,
            format!("the system clock's state cannot be read: {e}"),
            "check `timedatectl` says \"System clock synchronized: yes\"",
        ),
    }
}
