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
//! own.
//!
//! Nothing here names a board family: every family comes from the
//! registration table (`eboard_protocols::FAMILIES`), with the USB ids and
//! `/dev/serial/by-id/` names it is found by, how its boards are opened, and
//! how they are asked who they are. Only [`probe_board`] and [`listen_board`]
//! talk to a board, and only on a port no other program holds: the first sends
//! the family's identify request (a DGT board's serial number and version or a
//! bus ping, a Millennium board's version), the second only listens, as
//! discovery does; neither changes anything on the board. What the udev rules
//! do for each family is read from the rules themselves.

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

use eboard_protocols::family::{
    BoardFact, BoardId, CodecSetup, DriverSetup, Family, Observation, Parity, PortMode, Reporting,
    SerialSettings, Transport,
};

use crate::daemon::config::Config;

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
    let rules = Rules::of(sys);
    let ports = check_devices(&mut r, &config, sys, &rules);
    for port in &ports {
        check_port(&mut r, port, sys, &rules);
    }
    check_grabbers(&mut r, sys, &ports, &rules);
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
    /// `board 3` or `bus` (configured), or `discovered`.
    pub label: String,
    /// The families it may be: one, or several that share USB ids, told
    /// apart by listening (as discovery does).
    pub families: Vec<&'static Family>,
    pub mode: PortMode,
    /// How its family was found: `configured as "dgt"`, `its name in
    /// /dev/serial/by-id`, ….
    pub found: String,
}

impl BoardPort {
    fn configured(&self) -> bool {
        self.label != "discovered"
    }
}

/// What the kernel calls a board's device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeKind {
    /// `ttyUSB*`, `ttyACM*`: a serial port.
    Tty,
    /// `hidraw*`: a HID device, read report by report.
    Hidraw,
}

/// A `ttyUSB`/`ttyACM`/`hidraw` node and what USB says about it.
#[derive(Clone, Debug)]
struct UsbNode {
    node: PathBuf,
    kind: NodeKind,
    vendor: Option<String>,
    product_id: Option<String>,
    manufacturer: Option<String>,
    product: Option<String>,
}

impl UsbNode {
    fn name(&self) -> String {
        self.node
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }

    fn ids(&self) -> Option<(u16, u16)> {
        let hex = |s: &Option<String>| u16::from_str_radix(s.as_deref()?, 16).ok();
        Some((hex(&self.vendor)?, hex(&self.product_id)?))
    }

    /// The name systemd's 60-serial.rules gives the device under
    /// `/dev/serial/by-id/` (`usb-<manufacturer>_<product>_…`), without the
    /// serial and interface: what a family's `by_id_name` reads.
    fn usb_names(&self) -> Option<String> {
        let names: Vec<&str> = [self.manufacturer.as_deref(), self.product.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        (!names.is_empty()).then(|| format!("usb-{}", names.join("_").replace(' ', "_")))
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

/// How a family's boards are opened, whatever its driver does later.
fn transport_of(family: &Family, mode: PortMode) -> Transport {
    (family.driver)(&DriverSetup {
        mode,
        ..DriverSetup::default()
    })
    .transport()
}

fn reads_hidraw(family: &Family) -> bool {
    matches!(
        transport_of(family, PortMode::Single),
        Transport::Hidraw { .. }
    )
}

/// The `ttyUSB*`/`ttyACM*` nodes under `sys.dev` and, when a registered
/// family is read through hidraw, the `hidraw*` nodes, with their USB
/// attributes (from the USB device above `/sys/class/<tty|hidraw>/NAME/device`).
fn usb_nodes(sys: &System) -> Vec<UsbNode> {
    let Ok(entries) = std::fs::read_dir(&sys.dev) else {
        return Vec::new();
    };
    let hidraw = eboard_protocols::families().iter().any(|f| reads_hidraw(f));
    let mut found: Vec<UsbNode> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let kind = if n.starts_with("ttyUSB") || n.starts_with("ttyACM") {
                NodeKind::Tty
            } else if hidraw && n.starts_with("hidraw") {
                NodeKind::Hidraw
            } else {
                return None;
            };
            let mut s = UsbNode {
                node: e.path(),
                kind,
                vendor: None,
                product_id: None,
                manufacturer: None,
                product: None,
            };
            let class = match kind {
                NodeKind::Tty => "class/tty",
                NodeKind::Hidraw => "class/hidraw",
            };
            let device = sys.sys.join(class).join(&n).join("device");
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
            Some(s)
        })
        .collect();
    found.sort_by(|a, b| a.node.cmp(&b.node));
    found
}

/// Why a device looks like one family's board.
#[derive(Clone, Debug)]
struct Look {
    family: &'static Family,
    /// `its USB names`, `its USB ids`, `its name in /dev/serial/by-id`.
    why: String,
    /// Found by USB ids other devices use too.
    shared: bool,
    /// Found by USB ids, but the HID interface the family does not read.
    other_interface: bool,
}

/// The families `node` looks like, from the registration table: by a
/// `/dev/serial/by-id/` name pointing at it, by its USB names, by its USB
/// ids. A family read through hidraw is only looked for among hidraw nodes,
/// the others only among serial ones.
fn looks_like(node: &UsbNode, by_id: &[(String, PathBuf)], sys: &System) -> Vec<Look> {
    let target = canonical(&node.node);
    let mut looks = Vec::new();
    for &family in eboard_protocols::families() {
        if reads_hidraw(family) != (node.kind == NodeKind::Hidraw) {
            continue;
        }
        let look = |why: String, shared, other_interface| Look {
            family,
            why,
            shared,
            other_interface,
        };
        if let Some((name, _)) = by_id
            .iter()
            .find(|(name, p)| canonical(p) == target && (family.by_id_name)(name))
        {
            looks.push(look(format!("its by-id name {name}"), false, false));
        } else if node.usb_names().is_some_and(|n| (family.by_id_name)(&n)) {
            looks.push(look("its USB names".to_string(), false, false));
        } else if let Some(m) = node
            .ids()
            .and_then(|(vendor, product)| family.matches_usb(vendor, product))
        {
            let other_interface = node.kind == NodeKind::Hidraw
                && !crate::daemon::config::hid_interface_is_read(family, &node.name(), &sys.sys);
            looks.push(look("its USB ids".to_string(), m.shared, other_interface));
        }
    }
    looks
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `"certabo" or "occupancy"`.
fn quoted_names(families: &[&Family]) -> String {
    or_list(families.iter().map(|f| format!("\"{}\"", f.name)))
}

/// `Certabo or occupancy (Certabo dialect)`.
fn titles(families: &[&Family]) -> String {
    or_list(families.iter().map(|f| f.title.to_string()))
}

fn or_list(items: impl Iterator<Item = String>) -> String {
    join_list(items, "or")
}

fn and_list(items: impl Iterator<Item = String>) -> String {
    join_list(items, "and")
}

fn join_list(items: impl Iterator<Item = String>, word: &str) -> String {
    let items: Vec<String> = items.collect();
    match items.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} {word} {last}", rest.join(", ")),
    }
}

/// `; /dev/hidraw0 is owner root, group root, mode 600, which user alice cannot
/// read and write`.
fn permissions_clause(node: &Path) -> String {
    let Ok(meta) = std::fs::metadata(node) else {
        return String::new();
    };
    let (owner, group, mode) = owner_group_mode(&meta);
    let me = current_user();
    let access = nix::unistd::access(
        node,
        nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::W_OK,
    )
    .is_ok();
    format!(
        "; {} is owner {owner}, group {group}, mode {mode:o}{}",
        node.display(),
        if access {
            format!(", which user {me} can read and write")
        } else {
            format!(", which user {me} cannot read and write")
        }
    )
}

fn owner_group_mode(meta: &std::fs::Metadata) -> (String, String, u32) {
    use nix::unistd::{Gid, Group, Uid, User};
    let group = Group::from_gid(Gid::from_raw(meta.gid()))
        .ok()
        .flatten()
        .map_or_else(|| meta.gid().to_string(), |g| g.name);
    let owner = User::from_uid(Uid::from_raw(meta.uid()))
        .ok()
        .flatten()
        .map_or_else(|| meta.uid().to_string(), |u| u.name);
    (owner, group, meta.mode() & 0o777)
}

fn current_user() -> String {
    use nix::unistd::{Uid, User};
    User::from_uid(Uid::current())
        .ok()
        .flatten()
        .map_or_else(|| Uid::current().to_string(), |u| u.name)
}

/// Board devices: which exist, which family each looks like, which the daemon
/// will open. Returns the ports to check further.
fn check_devices(r: &mut Report, config: &Config, sys: &System, rules: &Rules) -> Vec<BoardPort> {
    let nodes = usb_nodes(sys);
    let dir = &config.discovery.dir;
    let links_dir = &config.discovery.links_dir;
    let by_id: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|d| {
            let mut v: Vec<(String, PathBuf)> = d
                .filter_map(Result::ok)
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect();
            v.sort();
            v
        })
        .unwrap_or_default();
    let looks: Vec<(PathBuf, &UsbNode, Vec<Look>)> = nodes
        .iter()
        .map(|n| (canonical(&n.node), n, looks_like(n, &by_id, sys)))
        .collect();
    let looks_at = |p: &Path| -> Option<(&UsbNode, &[Look])> {
        let target = canonical(p);
        looks
            .iter()
            .find(|(t, _, _)| *t == target)
            .map(|(_, n, l)| (*n, l.as_slice()))
    };
    let mut ports: Vec<BoardPort> = Vec::new();
    let mut covered: BTreeSet<PathBuf> = BTreeSet::new();

    // Configured boards (a bus port is listed once per board: check it once).
    for b in &config.boards {
        if ports.iter().any(|p| p.path == b.port) {
            continue;
        }
        let protocol = b.effective_protocol();
        let bus = protocol.is_bus();
        let label = match (bus, b.number) {
            (true, _) => "bus".to_string(),
            (false, Some(n)) => format!("board {n}"),
            (false, None) => "board".to_string(),
        };
        if !b.port.exists() {
            let hint = if nodes.is_empty() {
                format!("no board device ({}) exists at all: plug the board's USB cable in, switch the board on, and watch `dmesg -w` for a new device", device_kinds())
            } else {
                format!(
                    "devices present: {}; plug the board in, or correct `port` in its [[board]] table (a /dev/serial/by-id/ or /dev/chessboard/ name stays the same when the board is replugged)",
                    nodes.iter().map(|s| s.node.display().to_string()).collect::<Vec<_>>().join(", ")
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
        // The device may tell which family it is: say so when it is not the
        // configured one.
        if let Some((node, l)) = looks_at(&b.port) {
            let sure: Vec<&Look> = l
                .iter()
                .filter(|l| !l.shared && !l.other_interface)
                .collect();
            if let [look] = sure.as_slice() {
                if look.family != protocol.family {
                    r.warn(
                        b.port.display().to_string(),
                        format!(
                            "is a {} board by {} ({}), but its [[board]] table ({label}) says protocol = \"{}\": the daemon would read it as a {} board",
                            look.family.title,
                            look.why,
                            node.describe(),
                            protocol.name(),
                            protocol.family.title
                        ),
                        format!(
                            "write protocol = \"{}\" in its [[board]] table",
                            look.family.name
                        ),
                    );
                }
            }
        }
        ports.push(BoardPort {
            path: b.port.clone(),
            label,
            families: vec![protocol.family],
            mode: protocol.mode,
            found: format!("configured as \"{}\"", protocol.name()),
        });
    }

    // What discovery would follow (the same search as the daemon's).
    let mut discovered: BTreeSet<PathBuf> = BTreeSet::new();
    for f in crate::daemon::config::discover_in(dir, links_dir, &sys.sys) {
        let target = canonical(&f.path);
        discovered.insert(target.clone());
        if covered.contains(&target) {
            continue;
        }
        let found = if f.path.starts_with(links_dir) {
            if f.probe {
                format!("its link in {}, by USB ids other devices share (discovery listens before it follows)", links_dir.display())
            } else {
                format!("its link in {}", links_dir.display())
            }
        } else {
            format!("its name in {}", dir.display())
        };
        if config.discovery.enabled {
            covered.insert(target);
            ports.push(BoardPort {
                path: f.path.clone(),
                label: "discovered".to_string(),
                families: f.families.clone(),
                mode: PortMode::Single,
                found,
            });
        } else {
            r.warn(
                f.path.display().to_string(),
                format!(
                    "looks like a {} board by {found}, but discovery is off and no [[board]] lists it: it will not be followed",
                    titles(&f.families)
                ),
                format!(
                    "add a [[board]] table with port = \"{}\" and protocol = {}, or set [discovery] enabled = true",
                    f.path.display(),
                    quoted_names(&f.families)
                ),
            );
        }
    }

    // Devices that are not covered: boards by their USB names or ids that
    // discovery does not see, a board's other HID interface, other adapters.
    for (target, node, l) in &looks {
        if covered.contains(target) || discovered.contains(target) {
            continue;
        }
        let topic = node.node.display().to_string();
        let perms = permissions_clause(&node.node);
        let read: Vec<&Look> = l.iter().filter(|l| !l.other_interface).collect();
        if l.is_empty() {
            if node.kind == NodeKind::Tty {
                r.ok(
                    topic,
                    format!(
                        "a serial adapter that is no registered board family's by its USB names or ids ({}): not followed, since other devices use the same chips. If a board (or a bus line) is on it, list it in a [[board]] table with its port and protocol (one of {})",
                        node.describe(),
                        crate::daemon::config::Protocol::names()
                    ),
                );
            }
        } else if read.is_empty() {
            let f = l[0].family;
            r.ok(
                topic,
                format!(
                    "the other HID interface of a {} board ({}): its report descriptor does not declare the usage page the {} driver reads, so it is not read; nothing to do",
                    f.title,
                    node.describe(),
                    f.name
                ),
            );
        } else if read.len() > 1 || read[0].shared {
            let families: Vec<&'static Family> = read.iter().map(|l| l.family).collect();
            r.ok(
                topic,
                format!(
                    "may be a {} board ({}): its USB ids say so, but other devices use the same ids{perms}. Not followed as it is: {}",
                    titles(&families),
                    node.describe(),
                    discovery_advice(node, &families, config, rules, true)
                ),
            );
        } else {
            let look = read[0];
            r.warn(
                topic,
                format!(
                    "is a {} board ({}): {} say so, but discovery finds it neither in {} nor in {}{perms}",
                    look.family.title,
                    node.describe(),
                    look.why,
                    dir.display(),
                    links_dir.display()
                ),
                discovery_advice(node, &[look.family], config, rules, false),
            );
        }
    }

    if ports.is_empty() {
        let fix = if nodes.is_empty() {
            format!("plug a board in and switch it on. Then `ls -l {} {}` should show it; if nothing appears, try another cable or USB socket and look at `dmesg -w` while plugging", dir.display(), links_dir.display())
        } else {
            format!("none of the devices above is a board discovery follows: if a board is on one of them, list it in a [[board]] table with its port and protocol (one of {})", crate::daemon::config::Protocol::names())
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
                        " and discovery finds no board in {} or {}",
                        dir.display(),
                        links_dir.display()
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
                    .map(|p| format!(
                        "{} ({}) as {}",
                        p.path.display(),
                        p.label,
                        or_list(p.families.iter().map(|f| f.name.to_string()))
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    ports
}

/// What makes the daemon follow `node`, a board of one of `families` that
/// discovery does not see: a `[[board]]` table, or the names discovery
/// searches (systemd's by-id names, the udev rule's links).
fn discovery_advice(
    node: &UsbNode,
    families: &[&'static Family],
    config: &Config,
    rules: &Rules,
    shared: bool,
) -> String {
    let mut ways = vec![format!(
        "list it in a [[board]] table: port = \"{}\", protocol = {}",
        node.node.display(),
        quoted_names(families)
    )];
    if !config.discovery.enabled {
        ways.push("set [discovery] enabled = true".to_string());
    }
    let mut links: Vec<String> = Vec::new();
    for link in families.iter().flat_map(|f| rules.cover(f).links) {
        if !links.contains(&link) {
            links.push(link);
        }
    }
    let by_names = node
        .usb_names()
        .is_some_and(|n| families.iter().any(|f| (f.by_id_name)(&n)));
    if by_names && config.discovery.dir != Path::new("/dev/serial/by-id") {
        ways.push(
            "point [discovery] dir at /dev/serial/by-id, where systemd names it by its USB names"
                .to_string(),
        );
    }
    if !links.is_empty() {
        let links = or_list(links.into_iter());
        if rules.installed.is_some() {
            if config.discovery.links_dir != Path::new("/dev/chessboard") {
                ways.push(format!("point [discovery] links_dir at /dev/chessboard, where the installed udev rule links it as {links}"));
            } else {
                ways.push(format!("replug it so that the installed udev rule links it as {links} (or run `sudo udevadm trigger`)"));
            }
        } else {
            ways.push(format!(
                "install the udev rule ({}), which links it as {links}{}",
                Rules::INSTALL,
                if shared {
                    " for discovery to listen to"
                } else {
                    ""
                }
            ));
        }
    }
    // Each way may hold an "or" of its own: the ways are told apart by "; or".
    let ways = ways.join("; or ");
    if shared {
        format!("if a board is on it, {ways}")
    } else {
        let mut first = ways[..1].to_uppercase();
        first.push_str(&ways[1..]);
        first
    }
}

fn device_kinds() -> String {
    if eboard_protocols::families().iter().any(|f| reads_hidraw(f)) {
        "ttyUSB, ttyACM or a board's hidraw".to_string()
    } else {
        "ttyUSB or ttyACM".to_string()
    }
}

/// What the udev rules (`60-eboard-bridge.rules`) do for each family: read
/// from the installed file, or from the one the package installs.
struct Rules {
    /// The installed file, if any.
    installed: Option<PathBuf>,
    text: String,
}

/// What the udev rules do for one family's boards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RuleCover {
    /// The links they make (`/dev/chessboard/dgt-…`).
    links: Vec<String>,
    /// They tell ModemManager to leave the boards alone.
    modem_manager: bool,
    /// The group and mode they give the node.
    group: Option<String>,
    mode: Option<String>,
}

/// The rules the package installs (`systemd/60-eboard-bridge.rules`).
const PACKAGED_RULES: &str = include_str!("../../systemd/60-eboard-bridge.rules");

impl Rules {
    const INSTALL: &'static str = "the package puts it in /usr/lib/udev/rules.d/60-eboard-bridge.rules; from a source tree copy systemd/60-eboard-bridge.rules there, then `sudo udevadm control --reload && sudo udevadm trigger`";

    fn of(sys: &System) -> Rules {
        let installed = sys.rules_installed();
        let text = installed
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_else(|| PACKAGED_RULES.to_string());
        Rules { installed, text }
    }

    /// `the installed /etc/udev/rules.d/60-eboard-bridge.rules` or `the udev
    /// rule 60-eboard-bridge.rules (not installed)`.
    fn named(&self) -> String {
        match &self.installed {
            Some(p) => format!("the installed {}", p.display()),
            None => "the udev rule 60-eboard-bridge.rules (not installed)".to_string(),
        }
    }

    /// What the rules do for `family`'s boards: the rule lines that match
    /// its USB ids, and the lines of the block its name selects
    /// (`ENV{EBOARD_BRIDGE_KIND}!="<name>", GOTO=…` up to the next `GOTO` or
    /// `LABEL`).
    fn cover(&self, family: &Family) -> RuleCover {
        let mut cover = RuleCover::default();
        let mut block: Option<String> = None;
        for line in self.text.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if l.starts_with("LABEL=") || l.starts_with("GOTO=") {
                block = None;
                continue;
            }
            if let Some(rest) = l.strip_prefix("ENV{EBOARD_BRIDGE_KIND}!=\"") {
                block = rest.split('"').next().map(str::to_string);
                continue;
            }
            let by_ids = family.usb.iter().any(|m| {
                l.contains(&format!("ATTRS{{idVendor}}==\"{:04x}\"", m.vendor))
                    && m.product
                        .is_none_or(|p| l.contains(&format!("ATTRS{{idProduct}}==\"{p:04x}\"")))
            });
            if !(by_ids || block.as_deref() == Some(family.name)) {
                continue;
            }
            if l.contains("ENV{ID_MM_DEVICE_IGNORE}=\"1\"") {
                cover.modem_manager = true;
            }
            if let Some(link) = assigned(l, "SYMLINK+=") {
                let stem = link.split(['$', '%']).next().unwrap_or(link);
                let link = format!("/dev/{stem}…");
                if !cover.links.contains(&link) {
                    cover.links.push(link);
                }
            }
            if let Some(g) = assigned(l, "GROUP=") {
                cover.group = Some(g.to_string());
            }
            if let Some(m) = assigned(l, "MODE=") {
                cover.mode = Some(m.to_string());
            }
        }
        cover
    }

    /// What the rules do for `family`, in words: `links DGT boards as
    /// /dev/chessboard/dgt-… and tells ModemManager to leave them alone`.
    fn says(&self, family: &Family) -> String {
        let c = self.cover(family);
        let mut parts = Vec::new();
        if !c.links.is_empty() {
            parts.push(format!(
                "links {} boards as {}",
                family.title,
                or_list(c.links.iter().cloned())
            ));
        }
        match (&c.group, &c.mode) {
            (Some(g), Some(m)) => parts.push(format!("gives them group {g}, mode {m}")),
            (Some(g), None) => parts.push(format!("gives them group {g}")),
            (None, Some(m)) => parts.push(format!("gives them mode {m}")),
            (None, None) => {}
        }
        if c.modem_manager {
            parts.push("tells ModemManager to leave them alone".to_string());
        }
        if parts.is_empty() {
            format!("does nothing for {} boards", family.title)
        } else {
            and_list(parts.into_iter())
        }
    }
}

/// The value of `key"…"` in a udev rule line.
fn assigned<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line
        .match_indices(key)
        // `GROUP=` must not match inside `…GROUP==`: an assignment only.
        .find(|(i, _)| !line[i + key.len()..].starts_with('='))?
        .0
        + key.len();
    let rest = line[start..].strip_prefix('"')?;
    rest.split('"').next()
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

/// ModemManager's advice: what the udev rules keep it from, per family.
fn modem_manager_fix(rules: &Rules) -> String {
    let serial: Vec<&'static Family> = eboard_protocols::families()
        .iter()
        .copied()
        .filter(|f| !reads_hidraw(f))
        .collect();
    let (kept, not_kept): (Vec<&Family>, Vec<&Family>) =
        serial.iter().partition(|f| rules.cover(f).modem_manager);
    let mut fix =
        "ModemManager takes serial devices for modems and sends them AT commands".to_string();
    if !kept.is_empty() {
        let _ = write!(
            fix,
            ": {} tells it to leave {} boards alone",
            rules.named(),
            titles(&kept)
        );
        if rules.installed.is_none() {
            let _ = write!(fix, " once installed ({})", Rules::INSTALL);
        }
    }
    if !not_kept.is_empty() {
        let _ = write!(
            fix,
            "; it has no such line for {} boards (nor for an adapter it cannot recognise): if one is used, `sudo systemctl disable --now ModemManager` (a tournament machine needs no modem)",
            titles(&not_kept)
        );
    }
    fix
}

const BRLTTY_FIX: &str = "brltty takes USB serial adapters (CP210x, FTDI, …) for braille displays and keeps them open, and 60-eboard-bridge.rules does not keep it away: if no braille display is used, `sudo systemctl mask --now brltty.service brltty-udev.service` or `sudo apt remove brltty`, then replug the board";

/// Programs that take serial ports as they appear.
const GRABBERS: [&str; 2] = ["ModemManager", "brltty"];

fn grabber_fix(name: &str, rules: &Rules) -> String {
    if name == "ModemManager" {
        modem_manager_fix(rules)
    } else {
        BRLTTY_FIX.to_string()
    }
}

fn check_port(r: &mut Report, port: &BoardPort, sys: &System, rules: &Rules) {
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
            format!("{} is not a board's device (not a character device)", node.display()),
            "point the [[board]] port at the board's device (/dev/serial/by-id/…, /dev/chessboard/…, /dev/ttyACM0, /dev/ttyUSB0, /dev/hidraw0)",
        );
        return;
    }
    let pty = node.starts_with("/dev/pts");
    let usb = node.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with("ttyUSB") || n.starts_with("ttyACM") || n.starts_with("hidraw")
    });

    // Who else has it open (a pseudo-terminal's other side is its program: expected).
    if !pty {
        let me = std::process::id();
        let held: Vec<Proc> = holders(sys, |l| l == node)
            .into_iter()
            .filter(|p| p.pid != me)
            .collect();
        for h in &held {
            if GRABBERS.contains(&h.comm.as_str()) {
                r.fail(
                    topic.clone(),
                    format!("is held open by {} (PID {}): the board's bytes go to it, not to eboard-bridge", h.comm, h.pid),
                    grabber_fix(&h.comm, rules),
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
                format!("is held open by {} (PID {}): a board's device can be read by one program only", h.comm, h.pid),
                format!("close that program (`kill {}` if it is a leftover terminal such as screen or minicom), then start eboard-bridge", h.pid),
            );
            return;
        }
    }

    // Permissions: the user running doctor, and the service's group.
    check_permissions(r, &topic, &node, &meta, usb, pty, sys, port, rules);

    let timeout = sys.answer_timeout;
    let family = port.families[0];
    let outcome = if port.families.len() == 1 && family.identify.is_some() {
        probe_board(&node, family, port.mode, timeout).map(|answer| format!("answers: {answer}"))
    } else if port.families.iter().any(|f| f.recognise.is_some()) {
        listen_board(&node, &port.families, timeout).map(|(f, n)| {
            format!(
                "sent, unasked, what a {} board sends ({n} bytes in {} ms, nothing written){}",
                f.title,
                timeout.as_millis(),
                if port.families.len() > 1 {
                    format!(": discovery follows it as \"{}\"", f.name)
                } else {
                    String::new()
                }
            )
        })
    } else {
        r.ok(
            topic,
            format!(
                "{} ({}) is a {} board by {}; not asked who it is: this project knows no {} request that only asks that and changes nothing on the board, so what doctor can tell ends here. `eboard-bridge run` logs the board's first position when it reads one",
                node.display(),
                port.label,
                titles(&port.families),
                port.found,
                titles(&port.families)
            ),
        );
        return;
    };
    match outcome {
        Ok(answer) => r.ok(topic, format!("{} ({}) {answer}", node.display(), port.label)),
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
        Err(e @ (ProbeError::Silent | ProbeError::Unrecognised(_) | ProbeError::NoRequest)) => {
            not_answered(r, topic, &node, port, timeout, &e)
        }
    }
}

/// The board did not answer as its family: is it another family's? Asks
/// (or listens for) every other registered family read the same way, and
/// says which answered, or what to check.
fn not_answered(
    r: &mut Report,
    topic: String,
    node: &Path,
    port: &BoardPort,
    timeout: Duration,
    error: &ProbeError,
) {
    let expected = titles(&port.families);
    let ms = timeout.as_millis();
    // A shared-ids port that sent something else: another device on the same
    // chip, which discovery leaves alone.
    if let (ProbeError::Unrecognised(n), false) = (error, port.configured()) {
        r.ok(
            topic,
            format!(
                "{} ({}) sent {n} bytes in {ms} ms, none of them what a {expected} board sends: another device on the same USB chip, which discovery leaves alone",
                node.display(),
                port.label
            ),
        );
        return;
    }
    let hidraw = port.families.iter().any(|f| reads_hidraw(f));
    let others: Vec<&'static Family> = eboard_protocols::families()
        .iter()
        .copied()
        .filter(|f| !port.families.contains(f) && reads_hidraw(f) == hidraw)
        .filter(|f| f.identify.is_some() || f.recognise.is_some())
        .collect();
    let mut asked = Vec::new();
    let mut heard = Vec::new();
    let mut answer = None;
    for f in others.iter().filter(|f| f.identify.is_some()) {
        asked.push(f.name.to_string());
        if let Ok(a) = probe_board(node, f, PortMode::Single, timeout) {
            answer = Some((*f, format!("answers: {a}")));
            break;
        }
    }
    if answer.is_none() {
        // One listen for the families that share a transport.
        let mut listeners: Vec<&'static Family> = others
            .iter()
            .copied()
            .filter(|f| f.identify.is_none() && f.recognise.is_some())
            .collect();
        while let Some(first) = listeners.first().copied() {
            let transport = transport_of(first, PortMode::Single);
            let group: Vec<&'static Family> = listeners
                .iter()
                .copied()
                .filter(|f| transport_of(f, PortMode::Single) == transport)
                .collect();
            listeners.retain(|f| !group.contains(f));
            heard.extend(group.iter().map(|f| f.name.to_string()));
            if let Ok((f, n)) = listen_board(node, &group, timeout) {
                answer = Some((
                    f,
                    format!("sent, unasked, what a {} board sends ({n} bytes)", f.title),
                ));
                break;
            }
        }
    }
    let first = match error {
        ProbeError::Unrecognised(n) => {
            format!("sent {n} bytes, none of them what a {expected} board sends")
        }
        _ if port.families.iter().all(|f| f.identify.is_some()) => {
            format!("was asked who it is as a {expected} board")
        }
        _ => format!("was listened to as a {expected} board"),
    };
    if let Some((f, what)) = answer {
        let fix = if port.configured() {
            format!("write protocol = \"{}\" in its [[board]] table", f.name)
        } else {
            format!(
                "it was found as a {expected} board by {}: list it in a [[board]] table with port = \"{}\" and protocol = \"{}\"",
                port.found,
                port.path.display(),
                f.name
            )
        };
        r.fail(
            topic,
            format!(
                "{} ({}, {}) {first}, and no {expected} board answered within {ms} ms; then it {what}: a {} board is on it",
                node.display(),
                port.label,
                port.found,
                f.title
            ),
            fix,
        );
        return;
    }
    let mut tried = Vec::new();
    if !asked.is_empty() {
        tried.push(format!("asked as {}", and_list(asked.into_iter())));
    }
    if !heard.is_empty() {
        tried.push(format!("listened to as {}", and_list(heard.into_iter())));
    }
    let tried = if tried.is_empty() {
        String::new()
    } else {
        format!(", then {}", and_list(tried.into_iter()))
    };
    let family = port.families[0];
    let fix = if port.mode == PortMode::Bus {
        format!(
            "check the bus line: every board chained, the adapter plugged in and powered; if this is a single board, write protocol = \"{}\" in its [[board]] table",
            family.name
        )
    } else {
        let sends = match (family.capabilities)(port.mode).reporting {
            Reporting::Frames { period_ms } if family.identify.is_none() => {
                format!(
                    "a {} board sends a frame every {period_ms} ms on its own once it is on",
                    family.title
                )
            }
            _ => format!("a {} board answers at once when it is on", family.title),
        };
        let bus = if (family.capabilities)(PortMode::Bus).bus && port.configured() {
            format!(
                "; if it is a bus line, write protocol = \"{}-bus\" and its boards' serials in [[board]] tables",
                family.name
            )
        } else {
            String::new()
        };
        format!(
            "{sends}: switch the board on, replug its USB cable, try another cable or socket (`dmesg -w` shows whether a device comes){bus}"
        )
    };
    r.fail(
        topic,
        format!(
            "{} ({}, {}) {first}{tried}: opened, but no board answered within {ms} ms",
            node.display(),
            port.label,
            port.found
        ),
        fix,
    );
}

#[allow(clippy::too_many_arguments)]
fn check_permissions(
    r: &mut Report,
    topic: &str,
    node: &Path,
    meta: &std::fs::Metadata,
    usb: bool,
    pty: bool,
    sys: &System,
    port: &BoardPort,
    rules: &Rules,
) {
    use nix::unistd::{access, AccessFlags};
    let (owner, group, mode) = owner_group_mode(meta);
    // What the udev rules do for these boards, and what else to do.
    let rule = |what: &str| -> String {
        let says: Vec<String> = port.families.iter().map(|f| rules.says(f)).collect();
        let gives = port.families.iter().any(|f| rules.cover(f).group.is_some());
        if gives {
            format!(
                "{} {}{}: replug the board after installing it",
                rules.named(),
                and_list(says.into_iter()),
                if rules.installed.is_none() {
                    format!(" ({})", Rules::INSTALL)
                } else {
                    String::new()
                }
            )
        } else {
            format!(
                "add a udev rule of your own setting {what} for this device ({} {})",
                rules.named(),
                and_list(says.into_iter())
            )
        }
    };
    if access(node, AccessFlags::R_OK | AccessFlags::W_OK).is_err() {
        let me = current_user();
        let fix = if mode & 0o060 == 0o060 {
            format!(
                "add yourself to group {group}: `sudo usermod -aG {group} {me}`, then log out and in again (the service needs nothing: it runs in group dialout)"
            )
        } else {
            format!(
                "the node is mode {mode:o}: give its group read and write: {}; or run as root",
                rule("MODE=\"0660\", GROUP=\"dialout\"")
            )
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
                    "{} is not a ttyUSB/ttyACM/hidraw device: the service's device policy (DevicePolicy=closed with DeviceAllow=char-ttyUSB, char-ttyACM and char-hidraw) will refuse it",
                    node.display()
                ),
                "fine for `eboard-bridge run` by hand; for the service, add DeviceAllow= for this device in `systemctl edit eboard-bridge`",
            );
        } else if group != "dialout" || mode & 0o060 != 0o060 {
            r.warn(
                topic.to_string(),
                format!(
                    "{} is group {group}, mode {mode:o}: the service reaches boards' devices only as group dialout (SupplementaryGroups=dialout) with group read and write",
                    node.display()
                ),
                format!(
                    "{} (Arch-family systems use group uucp: change SupplementaryGroups= with `systemctl edit eboard-bridge`)",
                    rule("GROUP=\"dialout\", MODE=\"0660\"")
                ),
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
    /// Bytes came, but not what the family's boards send (a listening probe).
    Unrecognised(usize),
    /// The family has no request that asks a board who it is.
    NoRequest,
}

/// Opens `path` for a probe as `transport` says, unless another program
/// holds its lock.
fn open_for_probe(path: &Path, transport: Transport) -> Result<File, ProbeError> {
    let port = OpenOptions::new()
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
    if let Transport::Serial(settings) = transport {
        set_line(&port, settings).map_err(ProbeError::Io)?;
    }
    Ok(port)
}

/// Reads `port` until `take` (given the milliseconds since the start and the
/// bytes read) says it has what it wanted, or `timeout` has passed.
fn read_until(
    port: &mut File,
    timeout: Duration,
    mut take: impl FnMut(u64, &[u8]) -> bool,
) -> Result<(), ProbeError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut buf = [0u8; 256];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(());
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
        if take(start.elapsed().as_millis() as u64, &buf[..n]) {
            return Ok(());
        }
    }
}

/// Asks the board on `path` who it is with its family's request
/// ([`Family::identify`]: a DGT board's serial number and version, a bus
/// ping that every board on the line answers, a Millennium board's version),
/// reading the answers with the family's codec. Changes nothing on the
/// board. Returns a description of the answer.
pub fn probe_board(
    path: &Path,
    family: &Family,
    mode: PortMode,
    timeout: Duration,
) -> Result<String, ProbeError> {
    let identify = family.identify.ok_or(ProbeError::NoRequest)?;
    let mut codec = (family.codec)(&CodecSetup {
        mode,
        ..CodecSetup::default()
    })
    .map_err(|e| ProbeError::Io(std::io::Error::other(e)))?;
    let mut port = open_for_probe(path, transport_of(family, mode))?;
    let request = (identify.request)(mode);
    let mut out = Vec::new();
    codec.host_bytes(0, &request, &mut out);
    out.clear();
    port.write_all(&request).map_err(ProbeError::Io)?;
    let mut facts: Vec<BoardFact> = Vec::new();
    let mut addresses = BTreeSet::new();
    read_until(&mut port, timeout, |t, bytes| {
        codec.board_bytes(t, bytes, &mut out);
        for o in out.drain(..) {
            match (o.board, o.what) {
                (BoardId::Bus(a), _) => {
                    addresses.insert(a);
                }
                (BoardId::Single, Observation::Fact(f)) if !facts.contains(&f) => facts.push(f),
                _ => {}
            }
        }
        // A bus line is listened to for the whole time: every board answers.
        mode == PortMode::Single && facts.len() >= identify.facts
    })?;
    if mode == PortMode::Bus {
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
    if facts.is_empty() {
        return Err(ProbeError::Silent);
    }
    facts.sort_by_key(fact_rank);
    let mut answer = format!("{} board", family.title);
    for f in &facts {
        let _ = match f {
            BoardFact::Serial(s) | BoardFact::LongSerial(s) => write!(answer, ", serial {s}"),
            BoardFact::Version(a, b) => write!(answer, ", version {a}.{b}"),
            BoardFact::Model(m) => write!(answer, ", model {m}"),
            BoardFact::Battery(p) => write!(answer, ", battery {p}%"),
            BoardFact::BusAddress(a) => write!(answer, ", bus address {a:05}"),
        };
    }
    if facts.len() < identify.facts {
        let _ = write!(answer, " (nothing more within {} ms)", timeout.as_millis());
    }
    Ok(answer)
}

fn fact_rank(f: &BoardFact) -> u8 {
    match f {
        BoardFact::Serial(_) | BoardFact::LongSerial(_) => 0,
        BoardFact::Version(..) => 1,
        BoardFact::Model(_) => 2,
        BoardFact::Battery(_) => 3,
        BoardFact::BusAddress(_) => 4,
    }
}

/// Listens to the board on `path` without writing, for `timeout` or until
/// one of `families` recognises what it sent ([`Family::recognise`], as
/// discovery does for ports on shared USB ids). All of `families` are read
/// the same way. Returns the family and how many bytes it took.
pub fn listen_board(
    path: &Path,
    families: &[&'static Family],
    timeout: Duration,
) -> Result<(&'static Family, usize), ProbeError> {
    let first = families.first().ok_or(ProbeError::NoRequest)?;
    let mut port = open_for_probe(path, transport_of(first, PortMode::Single))?;
    let mut heard = Vec::new();
    let mut found = None;
    read_until(&mut port, timeout, |_, bytes| {
        if heard.len() < 64 * 1024 {
            heard.extend_from_slice(bytes);
        }
        found = families
            .iter()
            .copied()
            .find(|f| f.recognise.is_some_and(|recognise| recognise(&heard)));
        found.is_some()
    })?;
    match found {
        Some(f) => Ok((f, heard.len())),
        None if heard.is_empty() => Err(ProbeError::Silent),
        None => Err(ProbeError::Unrecognised(heard.len())),
    }
}

/// Raw mode with the family's line settings.
fn set_line(port: &File, s: SerialSettings) -> std::io::Result<()> {
    use nix::sys::termios::{
        cfmakeraw, cfsetspeed, tcgetattr, tcsetattr, BaudRate, ControlFlags, SetArg,
    };
    let mut t = tcgetattr(port)?;
    cfmakeraw(&mut t);
    let rate = match s.baud {
        9_600 => BaudRate::B9600,
        19_200 => BaudRate::B19200,
        38_400 => BaudRate::B38400,
        57_600 => BaudRate::B57600,
        115_200 => BaudRate::B115200,
        other => {
            return Err(std::io::Error::new(
                ErrorKind::InvalidInput,
                format!("{other} baud is not a rate doctor can set"),
            ))
        }
    };
    cfsetspeed(&mut t, rate)?;
    let c = &mut t.control_flags;
    c.remove(
        ControlFlags::CSIZE | ControlFlags::PARENB | ControlFlags::PARODD | ControlFlags::CSTOPB,
    );
    c.insert(if s.data_bits == 7 {
        ControlFlags::CS7
    } else {
        ControlFlags::CS8
    });
    match s.parity {
        Parity::None => {}
        Parity::Odd => c.insert(ControlFlags::PARENB | ControlFlags::PARODD),
        Parity::Even => c.insert(ControlFlags::PARENB),
    }
    if s.stop_bits == 2 {
        c.insert(ControlFlags::CSTOPB);
    }
    c.insert(ControlFlags::CREAD | ControlFlags::CLOCAL);
    tcsetattr(port, SetArg::TCSANOW, &t)?;
    Ok(())
}

/// ModemManager and brltty, whatever they hold now: both take serial ports
/// that appear, so a board plugged in later can be grabbed.
fn check_grabbers(r: &mut Report, sys: &System, ports: &[BoardPort], rules: &Rules) {
    let procs = processes(sys);
    for name in GRABBERS {
        let Some(p) = procs.iter().find(|p| p.comm == name) else {
            continue;
        };
        if name == "ModemManager" {
            if let Some(installed) = &rules.installed {
                // The serial families followed here that the rules keep it from, or not.
                let mut followed: Vec<&'static Family> = Vec::new();
                for f in ports.iter().flat_map(|p| p.families.iter().copied()) {
                    if !reads_hidraw(f) && !followed.contains(&f) {
                        followed.push(f);
                    }
                }
                let (kept, not_kept): (Vec<&Family>, Vec<&Family>) =
                    followed.iter().partition(|f| rules.cover(f).modem_manager);
                let every_kept: Vec<&Family> = eboard_protocols::families()
                    .iter()
                    .copied()
                    .filter(|f| !reads_hidraw(f) && rules.cover(f).modem_manager)
                    .collect();
                if not_kept.is_empty() {
                    r.ok(
                        "ModemManager",
                        format!(
                            "runs (PID {}); {} tells it to leave {} boards alone{}",
                            p.pid,
                            installed.display(),
                            titles(&every_kept),
                            if kept.is_empty() {
                                String::new()
                            } else {
                                ", which are the serial boards followed here".to_string()
                            }
                        ),
                    );
                } else {
                    r.warn(
                        "ModemManager",
                        format!(
                            "runs (PID {}); {} tells it to leave {} boards alone, but has no such line for {} boards, which are followed here: it may open their ports and send them AT commands",
                            p.pid,
                            installed.display(),
                            titles(&every_kept),
                            titles(&not_kept)
                        ),
                        "`sudo systemctl disable --now ModemManager` (a tournament machine needs no modem), or a udev rule of your own setting ENV{ID_MM_DEVICE_IGNORE}=\"1\" for those boards' devices, then replug them",
                    );
                }
                continue;
            }
        }
        r.warn(
            name,
            format!(
                "runs (PID {}) and may take a board's serial port as soon as it is plugged in",
                p.pid
            ),
            grabber_fix(name, rules),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn packaged() -> Rules {
        Rules {
            installed: None,
            text: PACKAGED_RULES.to_string(),
        }
    }

    #[test]
    fn what_the_packaged_udev_rules_do_is_read_family_by_family() {
        let rules = packaged();
        let cover = |name: &str| rules.cover(eboard_protocols::family(name).unwrap());
        assert_eq!(
            cover("dgt"),
            RuleCover {
                links: vec!["/dev/chessboard/dgt-…".to_string()],
                modem_manager: true,
                group: None,
                mode: None,
            }
        );
        for name in ["certabo", "occupancy"] {
            assert_eq!(
                cover(name),
                RuleCover {
                    links: vec!["/dev/chessboard/usb-10c4-ea60-…".to_string()],
                    ..RuleCover::default()
                },
                "{name}"
            );
        }
        assert_eq!(
            cover("chessnut"),
            RuleCover {
                links: vec!["/dev/chessboard/usb-2d80-…".to_string()],
                modem_manager: false,
                group: Some("dialout".to_string()),
                mode: Some("0660".to_string()),
            }
        );
        assert_eq!(cover("millennium"), RuleCover::default());
        assert_eq!(
            rules.says(&eboard_protocols::chessnut::FAMILY),
            "links Chessnut boards as /dev/chessboard/usb-2d80-… and gives them group dialout, mode 0660"
        );
        assert_eq!(
            rules.says(&eboard_protocols::millennium::FAMILY),
            "does nothing for Millennium ChessLink boards"
        );
    }

    #[test]
    fn modem_manager_advice_names_the_families_the_rules_keep_it_from_and_not() {
        let fix = modem_manager_fix(&packaged());
        assert!(
            fix.contains("the udev rule 60-eboard-bridge.rules (not installed) tells it to leave DGT boards alone once installed"),
            "{fix}"
        );
        assert!(
            fix.contains("it has no such line for Millennium ChessLink, Certabo or occupancy (Certabo dialect) boards"),
            "{fix}"
        );
    }

    #[test]
    fn a_udev_assignment_is_not_a_comparison() {
        let line = r#"SUBSYSTEMS=="usb", ATTRS{idVendor}=="2d80", GROUP=="x", GROUP="dialout""#;
        assert_eq!(assigned(line, "GROUP="), Some("dialout"));
        assert_eq!(assigned(line, "MODE="), None);
    }
}
