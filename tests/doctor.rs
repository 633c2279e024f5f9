//! `eboard-bridge doctor` against real things: a virtual DGT board on a
//! pseudo-terminal (a working serial device), a pty nobody answers on, a broken
//! configuration, a data directory that cannot be written, an HTTP port already
//! bound, programs that grab serial ports, and a healthy machine that passes;
//! and the other families: a virtual Millennium board configured as the wrong
//! family and found by its `/dev/chessboard/` link, and a Chessnut's hidraw
//! nodes (with a CP210x adapter and a keyboard beside them) in a /dev and /sys
//! of the test's own.

mod child_guard;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use child_guard::ChildGuard;
use eboard_bridge::cli::doctor::{check, ClockSync, Level, Report, System};
use eboard_bridge::cli::emulate::{load_game, serve_pty, EmulateOptions, EmulatorHandle};
use eboard_protocols::family::Family;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"));
    // The doctor reads these like `run`: the test's own environment must not leak in.
    for var in [
        "EBOARD_BRIDGE_HTTP_LISTEN",
        "EBOARD_BRIDGE_DATA_DIR",
        "EBOARD_BRIDGE_DISCOVERY",
        "EBOARD_BRIDGE_ARBITER_TOKEN",
    ] {
        c.env_remove(var);
    }
    c
}

/// A virtual DGT board (with its clock) on a pty, linked at `link`.
fn board(link: &Path) -> EmulatorHandle {
    board_of(&eboard_protocols::dgt::FAMILY, link)
}

/// A virtual board of `family` on a pty, linked at `link`.
fn board_of(family: &'static Family, link: &Path) -> EmulatorHandle {
    let game = load_game(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/games/python-chess-molinari-bordais-1979.pgn"),
        1,
    )
    .unwrap();
    serve_pty(
        &game,
        &EmulateOptions {
            family,
            seed: 3,
            // The game waits for the host; the doctor only asks who the board is.
            start_after_host: Some(60_000),
            link: Some(link.to_owned()),
            ..EmulateOptions::default()
        },
    )
    .unwrap()
}

/// A port nothing is listening on.
fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

struct Setup {
    dir: tempfile::TempDir,
    by_id: PathBuf,
    /// Discovery's `links_dir` (the udev rules' `/dev/chessboard/`).
    links: PathBuf,
    data: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let by_id = dir.path().join("by-id");
    std::fs::create_dir(&by_id).unwrap();
    let links = dir.path().join("chessboard");
    std::fs::create_dir(&links).unwrap();
    let data = dir.path().join("data");
    Setup {
        dir,
        by_id,
        links,
        data,
    }
}

impl Setup {
    fn config(&self, extra: &str, listen: &str) -> PathBuf {
        let path = self.dir.path().join("eboard-bridge.toml");
        std::fs::write(
            &path,
            format!(
                "[http]\nlisten = \"{listen}\"\n[storage]\ndata_dir = {:?}\n[discovery]\ndir = {:?}\nlinks_dir = {:?}\n{extra}",
                self.data, self.by_id, self.links
            ),
        )
        .unwrap();
        path
    }

    /// Where the checks look: this machine, with no service installed and the
    /// clock as given.
    fn system(&self, clock: fn() -> ClockSync) -> System {
        let none = self.dir.path().join("not-installed");
        System {
            unit_dirs: vec![none.clone()],
            rules_dirs: vec![none.clone()],
            service_config: none.join("eboard-bridge.toml"),
            clock,
            answer_timeout: Duration::from_millis(1_500),
            ..System::real()
        }
    }
}

fn synced() -> ClockSync {
    ClockSync::Synchronised {
        max_error_us: 16_000,
    }
}

fn unsynced() -> ClockSync {
    ClockSync::Unsynchronised
}

fn run(config: &Path) -> (Output, String) {
    let out = bin()
        .arg("doctor")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    (out, text)
}

fn fails(r: &Report) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| f.level == Level::Fail)
        .map(|f| format!("{}: {}", f.topic, f.what))
        .collect()
}

#[test]
fn a_healthy_machine_with_a_board_on_a_pty_passes() {
    let s = setup();
    let link = s
        .by_id
        .join("usb-Digital_Game_Technology_DGT_Board_01025-if00");
    let _board = board(&link);
    let config = s.config("", &free_addr());
    let (out, text) = run(&config);
    assert!(out.status.success(), "exit {:?}:\n{text}", out.status);
    assert!(!text.contains("[FAIL]"), "{text}");
    assert!(
        text.contains(&format!(
            "[ok]   serial: 1 port to follow: {} (discovered)",
            link.display()
        )),
        "{text}"
    );
    assert!(text.contains("answers: DGT board, serial "), "{text}");
    assert!(
        text.contains(&format!(
            "[ok]   data directory: {} will be created in",
            s.data.display()
        )),
        "{text}"
    );
    assert!(text.contains("Nothing blocks a tournament"), "{text}");
}

#[test]
fn a_configured_board_is_asked_who_it_is_and_a_silent_port_fails() {
    let s = setup();
    let link = s.dir.path().join("board-7");
    let _board = board(&link);
    // A pty whose other side never answers: a board switched off behind a cable.
    let silent = nix::pty::openpty(None, None).unwrap();
    let silent_path = nix::unistd::ttyname(&silent.slave).unwrap();
    let config = s.config(
        &format!(
            "[[board]]\nport = {link:?}\nnumber = 7\n[[board]]\nport = {silent_path:?}\nnumber = 8\n"
        ),
        &free_addr(),
    );
    let r = check(Some(&config), |_| None, &s.system(synced));
    let answered: Vec<_> = r.about(&link.display().to_string()).collect();
    assert_eq!(answered.len(), 1, "{}", r.render());
    assert_eq!(answered[0].level, Level::Ok);
    assert!(
        answered[0]
            .what
            .contains("(board 7) answers: DGT board, serial"),
        "{}",
        answered[0].what
    );
    let silent_finding: Vec<_> = r.about(&silent_path.display().to_string()).collect();
    assert_eq!(silent_finding.len(), 1, "{}", r.render());
    assert_eq!(silent_finding[0].level, Level::Fail);
    assert!(
        silent_finding[0]
            .what
            .ends_with("opened, but no board answered within 1500 ms"),
        "{}",
        silent_finding[0].what
    );
    assert!(silent_finding[0]
        .fix
        .as_deref()
        .unwrap()
        .contains("replug its USB cable"));
    assert!(r.blocking());
    assert_eq!(fails(&r).len(), 1, "{}", r.render());
}

#[test]
fn a_broken_configuration_fails_and_names_the_key() {
    let s = setup();
    let config = s.dir.path().join("broken.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"/tmp/x\"\nrecovr = true\n").unwrap();
    let (out, text) = run(&config);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The finding runs to the next line that starts a finding.
    let start = text
        .find("[FAIL] configuration:")
        .unwrap_or_else(|| panic!("no configuration failure:\n{text}"));
    let block = &text[start..];
    let block = &block[..block[1..].find("\n[").map_or(block.len(), |i| i + 1)];
    assert!(block.contains("unknown field `recovr`"), "{block}");
    assert!(
        text.contains("`eboard-bridge print-config` prints every key"),
        "{text}"
    );
    // The other checks still ran, on the defaults.
    assert!(text.contains("http: 127.0.0.1:8080"), "{text}");

    // A bad value from the environment is reported as such.
    let good = s.config("", &free_addr());
    let r = check(
        Some(&good),
        |k| (k == "EBOARD_BRIDGE_HTTP_LISTEN").then(|| "localhost".to_string()),
        &s.system(synced),
    );
    let f = r.about("configuration").next().unwrap();
    assert_eq!(f.level, Level::Fail);
    assert!(f.what.contains("EBOARD_BRIDGE_HTTP_LISTEN"), "{}", f.what);
}

#[test]
fn a_data_directory_that_cannot_be_written_fails() {
    let s = setup();
    // A file where a directory of the path should be: no user can create it.
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let config = s.dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\ndata_dir = {:?}\n[http]\nlisten = \"{}\"\n",
            file.join("data"),
            free_addr()
        ),
    )
    .unwrap();
    let r = check(Some(&config), |_| None, &s.system(synced));
    let f = r.about("data directory").next().unwrap();
    assert_eq!(f.level, Level::Fail, "{}", r.render());
    assert_eq!(
        f.what,
        format!(
            "{} cannot be a directory: {} exists and is not one",
            file.join("data").display(),
            file.display()
        )
    );

    // A directory the user may not write to (root may write anywhere, so a
    // root test run checks it as user nobody, through setpriv).
    let locked = s.dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(s.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = s.dir.path().join("locked.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\ndata_dir = {locked:?}\n[http]\nlisten = \"{}\"\n[discovery]\nenabled = false\n",
            free_addr()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = if nix::unistd::Uid::effective().is_root() {
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_eboard-bridge"))
            .arg("doctor")
            .arg("--config")
            .arg(&config)
            .output()
            .expect("setpriv (util-linux) runs the doctor as user nobody")
    } else {
        bin()
            .arg("doctor")
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap()
    };
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "[FAIL] data directory: {} is not writable: Permission denied",
            locked.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("fix: give the user that runs eboard-bridge write access"),
        "{text}"
    );
}

#[test]
fn an_http_port_already_bound_fails_and_names_the_program() {
    let s = setup();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let config = s.config("", &addr.to_string());
    let r = check(Some(&config), |_| None, &s.system(synced));
    let f = r.about("http").next().unwrap();
    assert_eq!(f.level, Level::Fail, "{}", r.render());
    assert!(
        f.what.starts_with(&format!("{addr} is already in use by ")),
        "{}",
        f.what
    );
    if nix::unistd::Uid::effective().is_root() {
        // Root sees every program's sockets: the holder is this test.
        assert!(
            f.what.contains(&format!("(PID {})", std::process::id())),
            "{}",
            f.what
        );
    }
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .contains("set [http] listen (or EBOARD_BRIDGE_HTTP_LISTEN) to a free address"),
        "{:?}",
        f.fix
    );
    drop(taken);
    let r = check(Some(&config), |_| None, &s.system(synced));
    assert_eq!(r.about("http").next().unwrap().level, Level::Ok);
}

/// A real process whose name is `name` (a copy of `sleep`); with `stdin`
/// `Stdio::null()` it holds `/dev/null` open.
fn impostor(dir: &Path, name: &str, stdin: Stdio) -> ChildGuard {
    let exe = dir.join(name);
    std::fs::copy("/bin/sleep", &exe).unwrap();
    let child = ChildGuard::new(Command::new(&exe).arg("60").stdin(stdin).spawn().unwrap());
    // Its /proc entry names it once exec is done.
    let comm = PathBuf::from(format!("/proc/{}/comm", child.id()));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&comm)
        .map(|c| c.trim().to_string())
        .ok()
        .as_deref()
        != Some(name)
    {
        assert!(std::time::Instant::now() < deadline, "{name} never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

#[test]
fn a_port_held_by_brltty_fails_and_modemmanager_is_explained() {
    let s = setup();
    let _brltty = impostor(s.dir.path(), "brltty", Stdio::null());
    let _mm = impostor(s.dir.path(), "ModemManager", Stdio::piped());
    // /dev/null stands for the board's node: a character device brltty holds.
    let config = s.config(
        "[[board]]\nport = \"/dev/null\"\nnumber = 1\n",
        &free_addr(),
    );
    let r = check(Some(&config), |_| None, &s.system(synced));
    let f = r.about("/dev/null").next().unwrap();
    assert_eq!(f.level, Level::Fail, "{}", r.render());
    assert!(
        f.what.starts_with("is held open by brltty (PID "),
        "{}",
        f.what
    );
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("systemctl mask --now brltty.service"));
    let brltty = r.about("brltty").next().unwrap();
    assert_eq!(brltty.level, Level::Warn);
    let mm = r.about("ModemManager").next().unwrap();
    assert_eq!(mm.level, Level::Warn, "{}", r.render());
    assert!(mm
        .fix
        .as_deref()
        .unwrap()
        .contains("60-eboard-bridge.rules"));

    // With the udev rule installed, ModemManager is told to keep off DGT boards.
    let rules = s.dir.path().join("rules.d");
    std::fs::create_dir(&rules).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/60-eboard-bridge.rules"),
        rules.join("60-eboard-bridge.rules"),
    )
    .unwrap();
    let mut sys = s.system(synced);
    sys.rules_dirs = vec![rules];
    let r = check(Some(&config), |_| None, &sys);
    assert_eq!(r.about("ModemManager").next().unwrap().level, Level::Ok);
}

#[test]
fn an_unsynchronised_clock_warns_but_blocks_nothing() {
    let s = setup();
    let link = s.by_id.join("usb-DGT_DGT_Board_01026-if00");
    let _board = board(&link);
    let config = s.config("", &free_addr());
    let r = check(Some(&config), |_| None, &s.system(unsynced));
    let f = r.about("clock").next().unwrap();
    assert_eq!(f.level, Level::Warn);
    assert!(f
        .fix
        .as_deref()
        .unwrap()
        .contains("timedatectl set-ntp true"));
    assert!(!r.blocking(), "{}", r.render());
    let r = check(Some(&config), |_| None, &s.system(synced));
    assert_eq!(r.about("clock").next().unwrap().level, Level::Ok);
    // (Other warnings may come from programs the other tests start meanwhile.)
    assert!(!r.blocking(), "{}", r.render());
}

#[test]
fn a_missing_board_and_usb_names_from_sysfs_are_explained() {
    let s = setup();
    // A machine with one USB serial adapter: a DGT board by its USB names, which
    // has no by-id name discovery would see (a minimal /dev and /sys of its own).
    let pty = nix::pty::openpty(None, None).unwrap();
    let pty_path = nix::unistd::ttyname(&pty.slave).unwrap();
    let root = std::fs::canonicalize(s.dir.path()).unwrap();
    let dev = root.join("dev");
    std::fs::create_dir(&dev).unwrap();
    std::os::unix::fs::symlink(&pty_path, dev.join("ttyACM0")).unwrap();
    let sysfs = root.join("sys");
    let usb = sysfs.join("devices/pci0000:00/usb1/1-2");
    std::fs::create_dir_all(usb.join("1-2:1.0")).unwrap();
    for (name, value) in [
        ("idVendor", "045b"),
        ("idProduct", "81c6"),
        ("manufacturer", "Digital Game Technology"),
        ("product", "DGT Board"),
    ] {
        std::fs::write(usb.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::create_dir_all(sysfs.join("class/tty/ttyACM0")).unwrap();
    std::os::unix::fs::symlink(usb.join("1-2:1.0"), sysfs.join("class/tty/ttyACM0/device"))
        .unwrap();
    let missing = s.dir.path().join("gone");
    let config = s.config(
        &format!("[[board]]\nport = {missing:?}\nnumber = 2\n"),
        &free_addr(),
    );
    let sys = System {
        dev,
        sys: sysfs,
        ..s.system(synced)
    };
    let r = check(Some(&config), |_| None, &sys);
    let gone = r.about(&missing.display().to_string()).next().unwrap();
    assert_eq!(gone.level, Level::Fail);
    assert_eq!(gone.what, "the configured port of board 2 does not exist");
    assert!(
        gone.fix.as_deref().unwrap().contains("ttyACM0"),
        "{:?}",
        gone.fix
    );
    let acm = r
        .findings
        .iter()
        .find(|f| f.topic.ends_with("dev/ttyACM0"))
        .unwrap_or_else(|| panic!("{}", r.render()));
    assert_eq!(acm.level, Level::Warn);
    assert!(
        acm.what
            .contains("is a DGT board (USB 045b:81c6, Digital Game Technology DGT Board)"),
        "{}",
        acm.what
    );
    let serial = r.about("serial").next().unwrap();
    assert_eq!(serial.level, Level::Fail);
    assert_eq!(
        serial.what,
        format!(
            "no board to follow: no configured [[board]] port exists and discovery finds no board in {} or {}",
            s.by_id.display(),
            s.links.display()
        )
    );
}

/// The udev rules of the source tree, installed in a rules directory of the test's own.
fn installed_rules(s: &Setup) -> PathBuf {
    let rules = s.dir.path().join("rules.d");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/60-eboard-bridge.rules"),
        rules.join("60-eboard-bridge.rules"),
    )
    .unwrap();
    rules
}

#[test]
fn a_millennium_board_is_asked_its_version_and_named_when_configured_as_another_family() {
    let s = setup();
    let link = s.dir.path().join("chesslink");
    let _board = board_of(&eboard_protocols::millennium::FAMILY, &link);

    // Configured without a protocol (DGT, the default): the DGT request goes
    // unanswered, Millennium's version request is answered.
    let config = s.config(
        &format!("[[board]]\nport = {link:?}\nnumber = 3\n"),
        &free_addr(),
    );
    let r = check(Some(&config), |_| None, &s.system(synced));
    let found: Vec<_> = r.about(&link.display().to_string()).collect();
    assert_eq!(found.len(), 1, "{}", r.render());
    assert_eq!(found[0].level, Level::Fail, "{}", r.render());
    assert!(
        found[0].what.contains(
            "(board 3, configured as \"dgt\") was asked who it is as a DGT board, and no DGT board answered within 1500 ms; then it answers: Millennium ChessLink board, version "
        ),
        "{}",
        found[0].what
    );
    assert!(
        found[0]
            .what
            .ends_with(": a Millennium ChessLink board is on it"),
        "{}",
        found[0].what
    );
    assert_eq!(
        found[0].fix.as_deref(),
        Some("write protocol = \"millennium\" in its [[board]] table")
    );

    // Configured as what it is: asked its version, and it answers.
    let config = s.config(
        &format!("[[board]]\nport = {link:?}\nnumber = 3\nprotocol = \"millennium\"\n"),
        &free_addr(),
    );
    let r = check(Some(&config), |_| None, &s.system(synced));
    let found: Vec<_> = r.about(&link.display().to_string()).collect();
    assert_eq!(found.len(), 1, "{}", r.render());
    assert_eq!(found[0].level, Level::Ok, "{}", r.render());
    assert!(
        found[0]
            .what
            .contains("(board 3) answers: Millennium ChessLink board, version "),
        "{}",
        found[0].what
    );
    assert!(!r.blocking(), "{}", r.render());

    // Found by discovery through a `millennium-…` link in /dev/chessboard/,
    // with ModemManager running: the udev rule keeps it off DGT boards only,
    // and a Millennium board is followed here, so it is a warning.
    let discovered = s.links.join("millennium-1");
    std::os::unix::fs::symlink(&link, &discovered).unwrap();
    let _mm = impostor(s.dir.path(), "ModemManager", Stdio::null());
    let config = s.config("", &free_addr());
    let mut sys = s.system(synced);
    sys.rules_dirs = vec![installed_rules(&s)];
    let r = check(Some(&config), |_| None, &sys);
    let serial = r.about("serial").next().unwrap();
    assert_eq!(
        serial.what,
        format!(
            "1 port to follow: {} (discovered) as millennium",
            discovered.display()
        )
    );
    let found = r.about(&discovered.display().to_string()).next().unwrap();
    assert_eq!(found.level, Level::Ok, "{}", r.render());
    assert!(
        found
            .what
            .contains("(discovered) answers: Millennium ChessLink board, version "),
        "{}",
        found.what
    );
    let mm = r.about("ModemManager").next().unwrap();
    assert_eq!(mm.level, Level::Warn, "{}", r.render());
    assert!(
        mm.what.contains(
            "tells it to leave DGT boards alone, but has no such line for Millennium ChessLink boards, which are followed here"
        ),
        "{}",
        mm.what
    );
    assert!(
        mm.fix
            .as_deref()
            .unwrap()
            .contains("sudo systemctl disable --now ModemManager"),
        "{:?}",
        mm.fix
    );
}

/// A USB device under `sysfs` with these attributes, its interface `:1.<n>`
/// holding `node` (of `class`: `tty` or `hidraw`), a HID report descriptor
/// given for hidraw nodes.
fn usb_device(
    sysfs: &Path,
    port: &str,
    attrs: &[(&str, &str)],
    class: &str,
    node: &str,
    interface: u8,
    descriptor: Option<&[u8]>,
) {
    let usb = sysfs.join("devices/pci0000:00/usb1").join(port);
    std::fs::create_dir_all(&usb).unwrap();
    for (name, value) in attrs {
        std::fs::write(usb.join(name), format!("{value}\n")).unwrap();
    }
    let mut device = usb.join(format!("{port}:1.{interface}"));
    if let Some(d) = descriptor {
        device = device.join(format!("0003:2D80:8002.000{interface}"));
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(device.join("report_descriptor"), d).unwrap();
    }
    std::fs::create_dir_all(&device).unwrap();
    let class_dir = sysfs.join("class").join(class).join(node);
    std::fs::create_dir_all(&class_dir).unwrap();
    std::os::unix::fs::symlink(&device, class_dir.join("device")).unwrap();
}

#[test]
fn a_chessnut_hidraw_node_is_named_with_its_permissions_and_the_udev_rule() {
    let s = setup();
    // A machine with a Chessnut (two HID interfaces: the vendor one, usage
    // page FF00, and another), a CP210x serial adapter and a keyboard, in a
    // /dev and /sys of its own (pseudo-terminals stand for the nodes).
    let ptys: Vec<_> = (0..4)
        .map(|_| nix::pty::openpty(None, None).unwrap())
        .collect();
    let root = std::fs::canonicalize(s.dir.path()).unwrap();
    let dev = root.join("dev");
    std::fs::create_dir(&dev).unwrap();
    for (name, pty) in ["hidraw0", "hidraw1", "hidraw2", "ttyUSB0"]
        .iter()
        .zip(&ptys)
    {
        std::os::unix::fs::symlink(nix::unistd::ttyname(&pty.slave).unwrap(), dev.join(name))
            .unwrap();
    }
    let sysfs = root.join("sys");
    let chessnut = [
        ("idVendor", "2d80"),
        ("idProduct", "8002"),
        ("manufacturer", "Chessnut"),
        ("product", "Chessnut Air"),
    ];
    // Usage Page (Vendor FF00), …; Usage Page (Generic Desktop), ….
    let vendor_page: &[u8] = &[0x06, 0x00, 0xff, 0x09, 0x01, 0xa1, 0x01];
    let desktop_page: &[u8] = &[0x05, 0x01, 0x09, 0x06, 0xa1, 0x01];
    usb_device(
        &sysfs,
        "1-1",
        &chessnut,
        "hidraw",
        "hidraw0",
        0,
        Some(vendor_page),
    );
    usb_device(
        &sysfs,
        "1-1",
        &chessnut,
        "hidraw",
        "hidraw1",
        1,
        Some(desktop_page),
    );
    usb_device(
        &sysfs,
        "1-2",
        &[
            ("idVendor", "046d"),
            ("idProduct", "c31c"),
            ("product", "USB Keyboard"),
        ],
        "hidraw",
        "hidraw2",
        0,
        Some(desktop_page),
    );
    usb_device(
        &sysfs,
        "1-3",
        &[
            ("idVendor", "10c4"),
            ("idProduct", "ea60"),
            ("manufacturer", "Silicon Labs"),
            ("product", "CP2102 USB to UART Bridge Controller"),
        ],
        "tty",
        "ttyUSB0",
        0,
        None,
    );
    let config = s.config("", &free_addr());
    let sys = System {
        dev: dev.clone(),
        sys: sysfs,
        ..s.system(synced)
    };

    // No udev rule, so no /dev/chessboard/ link: the board is not followed.
    let r = check(Some(&config), |_| None, &sys);
    let topic = |name: &str| dev.join(name).display().to_string();
    let hid = r
        .about(&topic("hidraw0"))
        .next()
        .unwrap_or_else(|| panic!("{}", r.render()));
    assert_eq!(hid.level, Level::Warn, "{}", r.render());
    assert!(
        hid.what.starts_with(
            "is a Chessnut board (USB 2d80:8002, Chessnut Chessnut Air): its USB ids say so, but discovery finds it neither in "
        ),
        "{}",
        hid.what
    );
    assert!(
        hid.what
            .contains(&format!("; {} is owner ", dev.join("hidraw0").display())),
        "{}",
        hid.what
    );
    assert!(hid.what.contains(", mode "), "{}", hid.what);
    let fix = hid.fix.as_deref().unwrap();
    assert!(
        fix.starts_with(&format!(
            "List it in a [[board]] table: port = \"{}\", protocol = \"chessnut\"",
            dev.join("hidraw0").display()
        )),
        "{fix}"
    );
    assert!(
        fix.contains("install the udev rule (the package puts it in /usr/lib/udev/rules.d/60-eboard-bridge.rules"),
        "{fix}"
    );
    assert!(
        fix.contains("which links it as /dev/chessboard/usb-2d80-…"),
        "{fix}"
    );
    // Its other interface, and the keyboard, are not boards to follow.
    let other = r.about(&topic("hidraw1")).next().unwrap();
    assert_eq!(other.level, Level::Ok);
    assert!(
        other
            .what
            .starts_with("the other HID interface of a Chessnut board (USB 2d80:8002"),
        "{}",
        other.what
    );
    assert_eq!(r.about(&topic("hidraw2")).count(), 0, "{}", r.render());
    // The CP210x may be a board of the Certabo dialect: listened to only
    // through the rule's link.
    let cp = r.about(&topic("ttyUSB0")).next().unwrap();
    assert_eq!(cp.level, Level::Ok);
    assert!(
        cp.what.starts_with(
            "may be a Certabo or occupancy (Certabo dialect) board (USB 10c4:ea60, Silicon Labs CP2102 USB to UART Bridge Controller): its USB ids say so, but other devices use the same ids"
        ),
        "{}",
        cp.what
    );
    assert!(
        cp.what
            .contains("protocol = \"certabo\" or \"occupancy\"; or install the udev rule"),
        "{}",
        cp.what
    );
    assert!(
        cp.what.contains(
            "which links it as /dev/chessboard/usb-10c4-ea60-… for discovery to listen to"
        ),
        "{}",
        cp.what
    );
    let serial = r.about("serial").next().unwrap();
    assert_eq!(serial.level, Level::Fail, "{}", r.render());

    // With the rule's link, discovery follows it as a Chessnut board, which
    // doctor says it found by its link and did not ask.
    let link = s.links.join("usb-2d80-8002-hidraw0");
    std::os::unix::fs::symlink(dev.join("hidraw0"), &link).unwrap();
    let r = check(Some(&config), |_| None, &sys);
    let serial = r.about("serial").next().unwrap();
    assert_eq!(
        serial.what,
        format!(
            "1 port to follow: {} (discovered) as chessnut",
            link.display()
        )
    );
    let found = r.about(&link.display().to_string()).next().unwrap();
    assert_eq!(found.level, Level::Ok, "{}", r.render());
    assert!(
        found.what.contains(&format!(
            "(discovered) is a Chessnut board by its link in {}; not asked who it is: this project knows no Chessnut request that only asks that",
            s.links.display()
        )),
        "{}",
        found.what
    );
    assert_eq!(r.about(&topic("hidraw0")).count(), 0, "{}", r.render());
}
