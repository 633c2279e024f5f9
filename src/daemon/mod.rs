//! `eboard-bridge run`: the daemon.
//!
//! One supervisor task per port (see [`crate::daemon::device::supervise`]) moves bytes;
//! everything else happens in one loop that owns the sessions and the journal,
//! so the order "chunk journaled → events derived → events journaled → events
//! published" holds without locks. The loop also ticks the trackers, fsyncs the
//! journal in batches, looks for newly plugged boards and pings the systemd
//! watchdog — from the loop itself, so a stalled loop trips the watchdog.
//!
//! At start each port's earlier captures are replayed through a fresh session
//! (see [`crate::daemon::journal`]), which rebuilds the hub; the live port then continues
//! that same session. A board that comes back (after a crash, an unplug, or a
//! restart) sends a fresh dump of a position the tracker already knows, which
//! produces nothing new: no move is lost or published twice.
//!
//! Beside the loop live the parts of the running daemon it drives: its
//! [`config`]uration and discovery, the [`device`] layer (the only code that
//! opens ports), the [`journal`], the [`hub`] publishers read with its
//! [`metrics`], the boards' [`leds`], the descriptor budget ([`limits`]) and
//! the assembly of the HTTP side ([`service`]).

pub mod config;
pub mod device;
pub mod hub;
pub mod journal;
pub mod leds;
pub mod limits;
pub mod metrics;
pub mod service;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eboard_protocols::family::{
    ClockLink, DriverCommand, DriverSetup, DriverTimings, Family, PortMode, Settings,
};
use eboard_protocols::ClockSide;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use crate::daemon::config::{discover, next_free, Config, PortPlan, Protocol};
use crate::daemon::device::{supervise, LinkEvent};
use crate::daemon::hub::Hub;
use crate::daemon::journal::{port_key, run_offsets, Journal, JournalError, PortHeader};
use crate::daemon::leds::Leds;
use crate::events::{GameEvent, Stamped, TrackerEvent};
use crate::operator::{
    load_rulings, rulings_path, AlertRuling, BoardCommand, BoardRequest, ClockSetting,
    OperatorError, RulingAction, TrackerCommand, CLOCK_MAX_MS,
};
use crate::session::capture::{Chunk, OperatorLine};
use crate::session::{Session, TickGrid};

/// How long discovery listens to a port found by shared USB ids.
const PROBE_LISTEN: Duration = Duration::from_millis(3_000);
/// Bytes enough to recognise a board's protocol (a few frames).
const PROBE_ENOUGH: usize = 4_096;

/// How often the loop ticks the trackers, syncs the journal and pings the watchdog.
const LOOP_TICK: Duration = Duration::from_millis(crate::session::TICK_MS);
/// How far behind the wall clock the loop ticks the trackers' grid (see
/// `Daemon::tick`): longer than a chunk takes from the port to the loop.
const TICK_LAG_MS: u64 = 50;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("the [tournament] or [[pairing]] configuration is unusable: {0}")]
    Tournament(#[from] crate::publish::TournamentError),
    #[error(transparent)]
    Mqtt(#[from] crate::mqtt::MqttError),
    #[error("could not start the thread that reads the boards' ports ({0}); the system may be out of threads or memory: check `ulimit -u` and free memory, then start the daemon again")]
    IoThread(std::io::Error),
}

/// The runtime the ports are read on: a thread of its own, so that a board's
/// bytes are read, and stamped, when they come, however long the loop takes
/// over a picture. On the loop's own runtime a port's reader could wait behind
/// that work: on a loaded host seconds of play then came in one read with one
/// time, and the tracker took them as one instant (false 7.4, 7.1 and 7.5.1
/// alerts with 64 boards and 200 busy processes on the daemon's core,
/// `benches/daemon_load.rs`). Shut down without waiting when the daemon stops,
/// whichever way it stops.
struct IoRuntime(Option<tokio::runtime::Runtime>);

impl IoRuntime {
    fn start() -> Result<Self, DaemonError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("eboard-ports")
            .enable_all()
            .build()
            .map(|rt| IoRuntime(Some(rt)))
            .map_err(DaemonError::IoThread)
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("running until dropped")
            .handle()
            .clone()
    }
}

impl Drop for IoRuntime {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which an async context must not do.
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// One port being followed.
struct Port {
    path: PathBuf,
    /// The device's own name (`ttyACM0`), the path's link resolved when the
    /// board was last seen plugged in: what the EBAPI calls the source.
    source: String,
    key: String,
    protocol: Protocol,
    /// Single mode: the board's number.
    number: u32,
    /// Bus mode: numbers by address, from the configuration.
    bus_numbers: BTreeMap<u16, u32>,
    session: Session,
    /// What the port's captures say in their header (settings kept current).
    header: PortHeader,
    /// The tick grid points this port's session has been ticked at.
    grid: TickGrid,
    /// The supervisor: it reads the port and sends its reports to the loop.
    supervisor: JoinHandle<()>,
    /// Session time of this run's chunk time 0 (after the recovered runs).
    base_ms: u64,
    /// Latest session time fed, so time never goes back for the trackers.
    last_t: u64,
    /// Why the link last went down: an absent board fails the same way every
    /// few seconds, which is logged once, not every time.
    last_down: Option<String>,
    /// The board answers on the link now (between `Up` and `Down`).
    answering: bool,
    /// Commands for the board's driver (clock settings, LEDs), by id.
    commands: mpsc::Sender<(u64, DriverCommand)>,
    /// Clock settings sent to the driver and not yet answered, by command id.
    clock_jobs: BTreeMap<u64, ClockJob>,
    /// What the board's LEDs show, when it has LEDs and they are on.
    leds: Option<Leds>,
}

/// An arbiter's clock setting on its way to a clock.
#[derive(Debug)]
struct ClockJob {
    by: String,
    setting: ClockSetting,
    reply: oneshot::Sender<Result<(), OperatorError>>,
}

impl Port {
    fn bus(&self) -> bool {
        self.protocol.is_bus()
    }

    /// The board numbers on this port (bus: those heard from or configured).
    fn numbers(&self) -> Vec<u32> {
        if self.bus() {
            let mut n: BTreeSet<u32> = self.bus_numbers.values().copied().collect();
            n.extend(self.session.bus_boards().map(|(_, number, _)| number));
            n.into_iter().collect()
        } else {
            vec![self.number]
        }
    }

    fn bus_number(&self, address: u16) -> u32 {
        self.bus_numbers
            .get(&address)
            .copied()
            .unwrap_or(u32::from(address))
    }
}

/// A listening probe's verdict on a port: the family it speaks, if any.
type Probed = (PathBuf, Option<&'static Family>);

/// The daemon's loop state.
struct Daemon {
    config: Config,
    hub: Arc<Hub>,
    journal: Journal,
    ports: Vec<Port>,
    epoch: Instant,
    /// Where the ports' supervisors run (see [`IoRuntime`]).
    io: tokio::runtime::Handle,
    tx: mpsc::UnboundedSender<(usize, LinkEvent)>,
    used_numbers: BTreeSet<u32>,
    events: Vec<Stamped>,
    /// Event data and pairings, for the tags of the PGN files under `games/`.
    tournament: crate::publish::Tournament,
    /// The next driver command's id.
    next_command: u64,
    /// Listening probes under way (ports found by shared USB ids), by path.
    probing: BTreeSet<PathBuf>,
    /// Ports a probe found to speak no board protocol: not probed again
    /// while they stay plugged in.
    not_boards: BTreeSet<PathBuf>,
    /// Probes' verdicts: the port, and the family it speaks if any.
    probes: (mpsc::Sender<Probed>, mpsc::Receiver<Probed>),
    /// Whether the loop has said it is behind its boards (see `link_event`).
    behind: bool,
}

/// A loop taking bytes this long after they were read is behind its boards:
/// said once in the log and the service status, until it catches up.
const BEHIND_MS: u64 = 2_000;
/// Caught up again: the bytes taken are this fresh.
const CAUGHT_UP_MS: u64 = 250;

/// Runs the daemon until `stop` completes, then flushes the journal. `ready` is
/// called once every configured port has a supervisor (boards may still be
/// absent: that is a normal state, reported per board).
pub async fn run(
    config: Config,
    hub: Arc<Hub>,
    stop: impl Future<Output = ()>,
    ready: impl FnOnce(),
) -> Result<(), DaemonError> {
    run_with_commands(config, hub, None, stop, ready).await
}

/// [`run`], also taking arbiters' board commands from `commands` (the
/// dashboard's operator API): each is journaled in its board's capture and
/// applied in order with the board's bytes, and the sender gets the outcome.
pub async fn run_with_commands(
    config: Config,
    hub: Arc<Hub>,
    mut commands: Option<mpsc::Receiver<BoardRequest>>,
    stop: impl Future<Output = ()>,
    ready: impl FnOnce(),
) -> Result<(), DaemonError> {
    let mut journal = Journal::open(&config.storage.data_dir)?;
    // [mqtt]: the publisher reads back what the journal logs; the aggregator
    // feeds the hub with the other hosts' boards (docs/mqtt.md).
    let mqtt = match crate::mqtt::start(&config, &hub)? {
        Some((mqtt, hook)) => {
            if let Some(hook) = hook {
                journal.set_appended_hook(hook);
            }
            Some(mqtt)
        }
        None => None,
    };
    let io = IoRuntime::start()?;
    // Unbounded, as every hop from a port to here: see `run_link`.
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, LinkEvent)>();
    let used_numbers = config.boards.iter().filter_map(|b| b.number).collect();
    let tournament = crate::publish::Tournament::load(config.tournament.clone(), &config.pairings)?;
    // Games rebuilt below belong to the configured round unless the round was
    // already changed on the hub (the HTTP side adopts the same round).
    hub.adopt_round(tournament.config.current_round);
    let mut d = Daemon {
        hub,
        journal,
        ports: Vec::new(),
        epoch: Instant::now(),
        io: io.handle(),
        tx,
        used_numbers,
        events: Vec::new(),
        tournament,
        config,
        next_command: 1,
        probing: BTreeSet::new(),
        not_boards: BTreeSet::new(),
        probes: mpsc::channel(16),
        behind: false,
    };
    info!(
        data_dir = %d.config.storage.data_dir.display(),
        "journal opened; run {}",
        d.journal.run_unix_ms()
    );
    d.hub.set_date(crate::pgn::GameInfo::date_from_rfc3339(
        &crate::daemon::journal::rfc3339(d.journal.run_unix_ms()),
    ));
    let plans = d.config.port_plans();
    d.add_ports(plans)?;
    d.rescan()?;
    ready();
    let watchdog = watchdog_interval();
    let mut last_watchdog = Instant::now();
    let mut last_rescan = Instant::now();
    let mut last_status = String::new();
    let mut tick = tokio::time::interval(LOOP_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            msg = rx.recv() => {
                // The loop holds a sender itself, so the channel never closes here.
                let Some((index, event)) = msg else { break };
                d.link_event(index, event);
            }
            Some((path, family)) = d.probes.1.recv() => d.probed(path, family),
            req = next_command(&mut commands) => match req.command {
                BoardCommand::Tracker(command) => {
                    // The command goes after what the boards said before it.
                    d.take_queued(&mut rx);
                    let outcome = d.operator(req.board, &req.by, &command);
                    let _ = req.reply.send(outcome);
                }
                BoardCommand::SetClock(setting) => {
                    d.set_clock(req.board, req.by, setting, req.reply);
                }
            },
            _ = tick.tick() => {
                // The time first, then what is queued: every chunk read before
                // `now` is fed before the ticks up to it. On a loaded host the
                // queue may hold seconds of reports; ticking first would take
                // them as late as the loop, not when the boards sent them.
                let now = d.epoch.elapsed().as_millis() as u64;
                d.take_queued(&mut rx);
                d.tick(now);
                if let Err(e) = d.journal.sync_if_due() {
                    journal_failed(&d.hub, &e);
                }
                if d.config.discovery.enabled
                    && last_rescan.elapsed() >= Duration::from_millis(d.config.discovery.rescan_ms)
                {
                    last_rescan = Instant::now();
                    if let Err(e) = d.rescan() {
                        error!("{e}");
                    }
                }
                if let Some(every) = watchdog {
                    if last_watchdog.elapsed() >= every {
                        last_watchdog = Instant::now();
                        let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
                    }
                }
                let (boards, online, games) = d.hub.counts();
                let mut status = format!("{boards} boards, {online} online, {games} games in progress");
                if d.behind {
                    status.push_str(", behind the boards (see the log)");
                }
                if status != last_status {
                    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Status(&status)]);
                    last_status = status;
                }
            }
            () = &mut stop => break,
        }
    }
    info!("stopping: flushing the journal");
    // Closing the ports now: a supervisor would otherwise notice only at its
    // next read timeout or backoff.
    for port in &d.ports {
        port.supervisor.abort();
    }
    drop(io);
    // Take what is already queued: it was read from the boards, so it belongs
    // in the journal.
    while let Ok((index, event)) = rx.try_recv() {
        d.link_event(index, event);
    }
    d.journal.sync()?;
    if let Some(mqtt) = mqtt {
        mqtt.stop().await;
    }
    Ok(())
}

/// The next board command; never ready without a channel, or once every
/// sender is gone (a closed channel would otherwise be ready forever).
async fn next_command(rx: &mut Option<mpsc::Receiver<BoardRequest>>) -> BoardRequest {
    loop {
        match rx {
            Some(r) => match r.recv().await {
                Some(req) => return req,
                None => *rx = None,
            },
            None => std::future::pending::<()>().await,
        }
    }
}

/// A journal write or sync failed: the daemon goes on following the boards
/// (the record in memory and the feeds stay right), the log says what failed
/// and the metric lets an operator's alerting see it.
fn journal_failed(hub: &Hub, e: &dyn std::fmt::Display) {
    hub.metrics().journal_errors.inc();
    error!("{e}");
}

/// Half the watchdog interval systemd asked for, if it asked.
fn watchdog_interval() -> Option<Duration> {
    let mut usec = 0u64;
    sd_notify::watchdog_enabled(false, &mut usec).then(|| Duration::from_micros(usec / 2))
}

impl Daemon {
    /// Starts following `plan`'s port: rebuilds its boards from the journal,
    /// then spawns its supervisor.
    fn add_port(&mut self, plan: PortPlan) -> Result<(), DaemonError> {
        self.add_ports(vec![plan])
    }

    /// Starts following several ports at once. Their journals are replayed in
    /// parallel (each port's captures through its own session: nothing shared
    /// but the read-only journal), then applied to the hub one port after the
    /// other, in order. With 500 boards' games that is what keeps a restart
    /// under a second.
    fn add_ports(&mut self, plans: Vec<PortPlan>) -> Result<(), DaemonError> {
        let first = self.ports.len();
        let mut ports: Vec<Port> = plans
            .into_iter()
            .enumerate()
            .map(|(i, plan)| self.open_port(plan, first + i))
            .collect();
        let replayed = if self.config.storage.recover {
            replay_all(&self.journal, &mut ports)?
        } else {
            ports.iter().map(|_| None).collect()
        };
        let rulings = if replayed.iter().any(Option::is_some) {
            self.load_rulings()
        } else {
            Vec::new()
        };
        for (mut port, r) in ports.into_iter().zip(replayed) {
            if let Some(r) = r {
                self.apply_replayed(&mut port, r, &rulings);
            }
            for n in port.numbers() {
                self.hub.register(n, &port.path.display().to_string());
                self.hub.set_family(n, port.protocol.family.title);
            }
            info!(
                port = %port.path.display(),
                "following {} ({})",
                if port.bus() {
                    format!("a {} bus", port.protocol.family.title)
                } else {
                    format!("{} board {}", port.protocol.family.title, port.number)
                },
                port.key
            );
            self.ports.push(port);
        }
        Ok(())
    }

    /// The port's session and supervisor; `index` is its place in `ports`.
    fn open_port(&mut self, plan: PortPlan, index: usize) -> Port {
        // Descriptors for this port and its journal, out of the HTTP side's reach.
        crate::daemon::limits::budget().reserve_port();
        let key = port_key(&plan.path);
        let family = plan.protocol.family;
        let mode = plan.protocol.mode;
        // What the board's codec learned in earlier runs (Certabo: its
        // calibration); the journal's runs, replayed next, each restore what
        // their header says.
        let (settings, problem) = self.journal.load_board_settings(&key);
        if let Some(problem) = problem {
            warn!(port = %plan.path.display(), "{problem}; the board starts without its saved settings (a Certabo board calibrates again from the start position)");
        }
        let mut session = match Session::for_family(
            family,
            plan.number,
            mode,
            &settings,
            self.config.tracker_config(),
        ) {
            Ok(s) => s,
            Err(e) => {
                warn!(port = %plan.path.display(), "{e}; the board starts without its saved settings");
                Session::for_family(
                    family,
                    plan.number,
                    mode,
                    &Settings::new(),
                    self.config.tracker_config(),
                )
                .expect("every family's codec starts without settings")
            }
        };
        for (&address, &number) in &plan.bus_numbers {
            session.set_bus_board_number(address, number);
        }
        let tx = self.tx.clone();
        let path = plan.path.clone();
        let setup = DriverSetup {
            mode,
            timings: DriverTimings {
                probe_ms: self.config.device.probe_ms,
                silence_ms: self.config.device.silence_timeout_ms,
                poll_ms: self.config.device.bus_poll_ms,
            },
        };
        let epoch = self.epoch;
        // The link's first reports wait in the channel until the loop runs,
        // after the journal has been replayed.
        let (commands, commands_rx) = mpsc::channel::<(u64, DriverCommand)>(16);
        let supervisor = self.io.spawn(supervise(
            path,
            family,
            setup,
            epoch,
            (index, tx),
            commands_rx,
        ));
        let capabilities = (family.capabilities)(mode);
        let leds = (capabilities.leds && self.config.leds_for(&plan.path)).then(Leds::default);
        let header = PortHeader {
            port: plan.path.clone(),
            board: (mode == PortMode::Single).then_some(plan.number),
            protocol: family.name,
            mode,
            settings: session.settings(),
        };
        Port {
            source: device_name(&plan.path),
            path: plan.path,
            key,
            protocol: plan.protocol,
            number: plan.number,
            bus_numbers: plan.bus_numbers,
            session,
            header,
            grid: TickGrid::default(),
            supervisor,
            base_ms: 0,
            last_t: 0,
            last_down: None,
            answering: false,
            commands,
            clock_jobs: BTreeMap::new(),
            leds,
        }
    }

    /// Applies a port's replayed journal to the hub (nothing published:
    /// subscribers saw those events when they happened), publishes what the
    /// previous run derived but never published, and places this run after
    /// the recorded ones on the session's time line.
    /// The arbiters' rulings on alerts, from the rulings file. A file that
    /// cannot be read costs the rulings, not the restart: the alerts then show
    /// as raised again, and the log says why.
    fn load_rulings(&self) -> Vec<AlertRuling> {
        let path = rulings_path(&self.config.storage.data_dir);
        match load_rulings(&path) {
            Ok((rulings, bad)) => {
                for line in bad {
                    warn!("an arbiter's ruling could not be read and is skipped: {line}");
                }
                rulings
            }
            Err(e) => {
                error!(
                    file = %path.display(),
                    "the arbiters' rulings on alerts cannot be read ({e}); alerts they acknowledged or resolved show as raised again; check the file's permissions"
                );
                Vec::new()
            }
        }
    }

    /// Applies the arbiters' rulings to board `board`'s alerts just rebuilt
    /// from the journal, in the order they were made.
    fn restore_rulings(&self, board: u32, rulings: &[AlertRuling]) {
        for r in rulings.iter().filter(|r| r.board == board) {
            let Some(seq) = self.hub.open_alert_seq(board, r.alert) else {
                // Resolved since, by the board or by an earlier ruling.
                continue;
            };
            match r.action {
                RulingAction::Acknowledge => {
                    self.hub.acknowledge(board, seq);
                }
                RulingAction::Resolve => {
                    let reason = r.reason.as_deref().unwrap_or("resolved by an arbiter");
                    self.hub.resolve(board, seq, reason);
                }
            }
        }
    }

    fn apply_replayed(&mut self, port: &mut Port, r: Replayed, rulings: &[AlertRuling]) {
        for file in &r.torn {
            warn!(file = %file.display(), "the last line was cut by a crash; ignored");
        }
        port.base_ms = r.live;
        port.last_t = r.live;
        for (board, t, action, text) in r.operator_notices {
            self.hub.operator_notice(board, Some(t), action, &text);
        }
        // What the board's LEDs show follows from the games rebuilt.
        let number = port.number;
        if let Some(leds) = port.leds.as_mut() {
            leds.events(r.events.iter().filter(|e| e.board == number));
        }
        // The last pictures seen, until the boards send fresh ones.
        show_boards(&self.hub, port);
        // What the journal shows was logged (and so published) is applied
        // quietly; the rest was derived from chunks a crashed run journaled but
        // did not get to log or publish (the chunk reaches the OS first): it
        // is published now, once, so no verified move stays unpublished.
        let mut boards = BTreeSet::new();
        let mut at_tail: BTreeMap<u32, usize> = BTreeMap::new();
        let mut late = Vec::new();
        for e in r.events {
            let tail = r.tails.get(&e.board).copied().flatten();
            let logged = match tail {
                None => false,
                Some((t, _)) if e.t_ms < t => true,
                Some((t, n)) if e.t_ms == t => {
                    let seen = at_tail.entry(e.board).or_insert(0);
                    *seen += 1;
                    *seen <= n
                }
                Some(_) => false,
            };
            boards.insert(e.board);
            if logged {
                self.hub.apply(&e, false);
            } else {
                late.push(e);
            }
        }
        if !late.is_empty() {
            warn!(
                port = %port.path.display(),
                "publishing {} events the previous run derived but had not published before it stopped",
                late.len()
            );
            self.events = late;
            let key = port.key.clone();
            self.publish(Some(&key));
        }
        for b in boards {
            self.restore_rulings(b, rulings);
            self.write_games(b);
            let note = serde_json::json!({
                "type": "daemon_start",
                "run": self.journal.run_unix_ms(),
                "recovered_chunks": r.chunks,
                "verified_plies": self.hub.verified_plies(b),
            });
            if let Err(e) = self.journal.record_note(b, note) {
                journal_failed(&self.hub, &e);
            }
            info!(
                board = b,
                "rebuilt from the journal: {} verified plies",
                self.hub.verified_plies(b)
            );
        }
    }

    /// Adds the boards that appeared under the discovery directories: at
    /// once when their names or USB ids say which family they are, after a
    /// listening probe when their USB ids are shared with other devices.
    fn rescan(&mut self) -> Result<(), DaemonError> {
        if !self.config.discovery.enabled {
            return Ok(());
        }
        let followed: BTreeSet<PathBuf> = self
            .ports
            .iter()
            .flat_map(|p| [p.path.clone(), canonical(&p.path)])
            .collect();
        let found = discover(&self.config.discovery.dir, &self.config.discovery.links_dir);
        // A port that went away may come back as anything: probe it again.
        self.not_boards
            .retain(|p| found.iter().any(|f| &f.path == p));
        for f in found {
            let path = f.path;
            if followed.contains(&path)
                || followed.contains(&canonical(&path))
                || self.probing.contains(&path)
                || self.not_boards.contains(&path)
            {
                continue;
            }
            // A board already taken by an earlier link under another name.
            if self
                .ports
                .iter()
                .any(|p| canonical(&p.path) == canonical(&path))
            {
                continue;
            }
            if f.probe {
                self.probe(path, f.families);
                continue;
            }
            let Some(&family) = f.families.first() else {
                continue;
            };
            self.follow_found(path, family)?;
        }
        Ok(())
    }

    fn follow_found(&mut self, path: PathBuf, family: &'static Family) -> Result<(), DaemonError> {
        let number = next_free(&mut self.used_numbers);
        info!(port = %path.display(), "found a {} board; numbering it {number}", family.title);
        self.add_port(PortPlan {
            path,
            protocol: Protocol::single(family),
            number,
            bus_numbers: BTreeMap::new(),
        })
    }

    /// Listens to `path` (found by USB ids other devices share) without
    /// writing, and follows it if what it sends is one of `families`'.
    fn probe(&mut self, path: PathBuf, families: Vec<&'static Family>) {
        let Some(transport) = families
            .first()
            .map(|f| (f.driver)(&DriverSetup::default()).transport())
        else {
            return;
        };
        self.probing.insert(path.clone());
        let tx = self.probes.0.clone();
        tokio::spawn(async move {
            let heard =
                crate::daemon::device::listen(&path, transport, PROBE_LISTEN, PROBE_ENOUGH).await;
            let family = match heard {
                Ok(bytes) => families
                    .into_iter()
                    .find(|f| f.recognise.is_some_and(|r| r(&bytes))),
                Err(e) => {
                    tracing::debug!(port = %path.display(), "probe: {e}");
                    None
                }
            };
            let _ = tx.send((path, family)).await;
        });
    }

    /// A probe ended: follow the port, or leave it alone while it stays.
    fn probed(&mut self, path: PathBuf, family: Option<&'static Family>) {
        self.probing.remove(&path);
        match family {
            Some(f) => {
                if let Err(e) = self.follow_found(path, f) {
                    error!("{e}");
                }
            }
            None => {
                info!(port = %path.display(), "not followed: it uses a USB chip some boards use, but sent nothing a board sends (list it in a [[board]] table if a board is on it)");
                self.not_boards.insert(path);
            }
        }
    }

    fn link_event(&mut self, index: usize, event: LinkEvent) {
        let now = self.epoch.elapsed().as_millis() as u64;
        let Some(port) = self.ports.get_mut(index) else {
            return;
        };
        match event {
            LinkEvent::Chunk(chunk) => {
                let lag_ms = now.saturating_sub(chunk.t_ms);
                self.hub
                    .metrics()
                    .reading_lag
                    .observe(lag_ms as f64 / 1000.0);
                if lag_ms >= BEHIND_MS && !self.behind {
                    self.behind = true;
                    warn!(
                        "the daemon is {:.1} s behind its boards: it takes their reports later than they came, so moves and alerts are published that much late (their times stay right). The host is overloaded: stop what else runs on it, or follow fewer boards with it",
                        lag_ms as f64 / 1000.0
                    );
                } else if lag_ms <= CAUGHT_UP_MS && self.behind {
                    self.behind = false;
                    info!("the daemon has caught up with its boards");
                }
                // Chunk times are whole milliseconds; the latency histogram
                // resolves tenths, so it starts from the loop taking the chunk.
                let arrived = Instant::now();
                // A chunk that reached the loop after its session's clock had
                // ticked past its read time (a loaded host) is taken at the
                // session's time, and journaled at that time: replay feeds it
                // after the same ticks, so it rebuilds the same events.
                let t = (port.base_ms + chunk.t_ms).max(port.last_t);
                port.last_t = t;
                let journaled = Chunk {
                    t_ms: t - port.base_ms,
                    ..chunk
                };
                if let Err(e) = self
                    .journal
                    .record_chunk(&port.key, &port.header, &journaled)
                {
                    journal_failed(&self.hub, &e);
                }
                let fed = Chunk {
                    t_ms: t,
                    ..journaled
                };
                let (frames, errors) = {
                    let st = port.session.stats();
                    (st.frames, st.decode_errors)
                };
                port.grid.tick_until(&mut port.session, t, &mut self.events);
                port.session.feed(&fed, &mut self.events);
                let learned = port.session.take_settings();
                if !learned.is_empty() {
                    // Kept with the board for the next run, and in the header
                    // of the next capture (this one's header has what the
                    // codec started with; the bytes since teach it the rest).
                    port.header.settings = port.session.settings();
                    let keys: Vec<&str> = learned.iter().map(|(k, _)| k.as_str()).collect();
                    info!(port = %port.path.display(), "the board's {} learned; kept with the board", keys.join(", "));
                    if let Err(e) = self
                        .journal
                        .save_board_settings(&port.key, &port.header.settings)
                    {
                        error!("{e}; the board learns them again when the daemon restarts");
                    }
                }
                let metrics = self.hub.metrics();
                metrics.frames.inc_by(port.session.stats().frames - frames);
                metrics
                    .decode_errors
                    .inc_by(port.session.stats().decode_errors - errors);
                let completes_move = self.events.iter().any(
                    |e| matches!(&e.event, TrackerEvent::Game(GameEvent::Move(m)) if m.verified),
                );
                show_boards(&self.hub, port);
                let key = port.key.clone();
                self.update_leds(index, false);
                self.publish(Some(&key));
                if completes_move {
                    let waited = arrived.elapsed().as_secs_f64();
                    self.hub.metrics().move_latency.observe(waited);
                }
            }
            LinkEvent::Up => {
                self.hub.metrics().resyncs.inc();
                port.source = device_name(&port.path);
                port.last_down = None;
                port.answering = true;
                info!(port = %port.path.display(), "board answers; resynchronising from what it sends");
                if !port.bus() {
                    let number = port.number;
                    self.online(number, true, now, "");
                }
                // A board that was off has its lights off: show them again.
                self.update_leds(index, true);
            }
            LinkEvent::Down(reason) => {
                if port.last_down.as_ref() != Some(&reason) {
                    warn!(port = %port.path.display(), "{reason}");
                    port.last_down = Some(reason.clone());
                } else {
                    tracing::debug!(port = %port.path.display(), "{reason}");
                }
                port.answering = false;
                if let Some(leds) = port.leds.as_mut() {
                    leds.forget_sent();
                }
                let number = port.number;
                // A command resent to a board plugged back in minutes later
                // would set times that are no longer right: each ends here.
                for (_, job) in std::mem::take(&mut port.clock_jobs) {
                    let _ = job.reply.send(Err(OperatorError::ClockFailed {
                        board: number,
                        reason: eboard_protocols::family::COMMAND_LINK_LOST.to_string(),
                    }));
                }
                for n in port.numbers() {
                    self.online(n, false, now, &reason);
                }
            }
            LinkEvent::BusBoard { address, present } => {
                let number = port.bus_number(address);
                let path = port.path.display().to_string();
                let family = port.protocol.family.title;
                self.hub.register(number, &path);
                self.hub.set_family(number, family);
                let reason = if present {
                    String::new()
                } else {
                    format!("bus board {address} stopped answering polls")
                };
                self.online(number, present, now, &reason);
            }
            LinkEvent::CommandDone { id, outcome } => {
                let number = port.number;
                let Some(job) = port.clock_jobs.remove(&id) else {
                    // LEDs and beeps are not answered.
                    if let Err(reason) = outcome {
                        tracing::debug!(board = number, "board command {id}: {reason}");
                    }
                    return;
                };
                let result = match outcome {
                    Ok(attempts) => {
                        self.hub.operator_notice(
                            number,
                            None,
                            "set_clock",
                            &format!(
                                "{} (by {}; acked by the clock{})",
                                job.setting.describe(),
                                job.by,
                                if attempts > 1 {
                                    " at the second try"
                                } else {
                                    ""
                                }
                            ),
                        );
                        Ok(())
                    }
                    Err(reason) => {
                        warn!(board = number, "clock command failed: {reason}");
                        Err(OperatorError::ClockFailed {
                            board: number,
                            reason,
                        })
                    }
                };
                let _ = job.reply.send(result);
            }
        }
    }

    /// Sends port `index`'s board the LEDs its events call for (the events
    /// in `self.events`, not yet published), or again what it should show
    /// when `resend` (the board came back).
    fn update_leds(&mut self, index: usize, resend: bool) {
        let port = &mut self.ports[index];
        let Some(leds) = port.leds.as_mut() else {
            return;
        };
        let number = port.number;
        leds.events(self.events.iter().filter(|e| e.board == number));
        if resend {
            leds.forget_sent();
        }
        if !port.answering {
            return;
        }
        let Some(want) = port.session.board_frame(number, leds.wanted()) else {
            return;
        };
        if leds.sent() == Some(want) {
            return;
        }
        let id = self.next_command;
        self.next_command += 1;
        if port
            .commands
            .try_send((id, DriverCommand::Leds(want)))
            .is_ok()
        {
            leds.mark_sent(want);
        }
    }

    /// An arbiter's command for board `board`: journaled in the board's
    /// capture first (it is an input, replayed after a crash), then applied to
    /// the session at the same time, then its events published as any others.
    fn operator(
        &mut self,
        board: u32,
        by: &str,
        command: &TrackerCommand,
    ) -> Result<(), OperatorError> {
        let now = self.epoch.elapsed().as_millis() as u64;
        let index = self
            .ports
            .iter()
            .position(|p| p.numbers().contains(&board))
            .ok_or(OperatorError::UnknownBoard(board))?;
        let port = &mut self.ports[index];
        let line = OperatorLine {
            // Not before the session's clock: replay applies the command
            // after the same ticks the live run had made (see link_event).
            t_ms: now.max(port.last_t.saturating_sub(port.base_ms)),
            board,
            by: Some(by.to_owned()),
            command: command.clone(),
        };
        let written = self
            .journal
            .record_operator(&port.key, &port.header, &line)
            .map_err(|e| OperatorError::Journal(e.to_string()))?;
        let t = (port.base_ms + written).max(port.last_t);
        port.last_t = t;
        port.grid.tick_until(&mut port.session, t, &mut self.events);
        let outcome = port.session.operator(t, board, command, &mut self.events);
        let key = port.key.clone();
        self.update_leds(index, false);
        self.publish(Some(&key));
        if outcome.is_ok() {
            self.hub.operator_notice(
                board,
                Some(t),
                command.action(),
                &format!("{} (by {by})", command.describe()),
            );
        }
        outcome
    }

    /// An arbiter's clock setting for board `board`: White's and Black's
    /// times mapped to the clock's sides as the tracker learned them, sent to
    /// the board's driver as one command, and answered once the clock acks
    /// it or the driver gives up (see `ClockQueue` for DGT).
    fn set_clock(
        &mut self,
        board: u32,
        by: String,
        setting: ClockSetting,
        reply: oneshot::Sender<Result<(), OperatorError>>,
    ) {
        let Some(index) = self.ports.iter().position(|p| p.numbers().contains(&board)) else {
            let _ = reply.send(Err(OperatorError::UnknownBoard(board)));
            return;
        };
        let port = &mut self.ports[index];
        let family = port.protocol.family;
        let settable = matches!(
            (family.capabilities)(port.protocol.mode).clock,
            ClockLink::ThroughBoard { settable: true }
        );
        let refused = if port.bus() {
            Some(OperatorError::ClockOnBus(board))
        } else if !settable {
            Some(OperatorError::NoClockCommands {
                board,
                family: family.title,
            })
        } else if !port.answering {
            Some(OperatorError::BoardOffline(board))
        } else {
            None
        };
        if let Some(e) = refused {
            let _ = reply.send(Err(e));
            return;
        }
        let (Some(white), lever) = port.session.clock_sides() else {
            let _ = reply.send(Err(OperatorError::ClockSidesUnknown(board)));
            return;
        };
        let (left_ms, right_ms) = match white {
            ClockSide::Left => (setting.white_ms, setting.black_ms),
            ClockSide::Right => (setting.black_ms, setting.white_ms),
        };
        let command = DriverCommand::SetClock {
            left_ms: left_ms.min(CLOCK_MAX_MS),
            right_ms: right_ms.min(CLOCK_MAX_MS),
            // The side the lever lets run counts down (the player to move).
            running: lever.unwrap_or(white),
            run: setting.run,
        };
        let id = self.next_command;
        self.next_command += 1;
        let job = ClockJob { by, setting, reply };
        if port.commands.try_send((id, command)).is_err() {
            let _ = job.reply.send(Err(OperatorError::ClockFailed {
                board,
                reason: "the board's link is busy with earlier commands; wait for them to be \
                         answered, then try again"
                    .to_string(),
            }));
            return;
        }
        port.clock_jobs.insert(id, job);
    }

    fn online(&mut self, number: u32, online: bool, t_ms: u64, reason: &str) {
        if let Some(e) = self.hub.set_online(number, online, t_ms, reason) {
            if !online {
                self.hub.metrics().link_down.inc();
            }
            let mut note = serde_json::to_value(&e.notice).unwrap_or_default();
            if let serde_json::Value::Object(map) = &mut note {
                map.insert("board".into(), number.into());
                map.insert("seq".into(), e.seq.into());
                map.insert("run".into(), self.journal.run_unix_ms().into());
            }
            if let Err(e) = self.journal.record_note(number, note) {
                journal_failed(&self.hub, &e);
            }
        }
    }

    /// Journals and publishes the events in `self.events`. The chunks that
    /// caused them reach the OS first (see the module docs of `journal`).
    fn publish(&mut self, key: Option<&str>) {
        if self.events.is_empty() {
            return;
        }
        if let Some(key) = key {
            if let Err(e) = self.journal.flush_port(key) {
                journal_failed(&self.hub, &e);
            }
        }
        let mut durable = BTreeSet::new();
        let mut games = BTreeSet::new();
        for stamped in std::mem::take(&mut self.events) {
            let seq = self.hub.apply(&stamped, true);
            match self.journal.record_event(&stamped, seq) {
                Ok(true) => {
                    durable.insert(stamped.board);
                }
                Ok(false) => {}
                Err(e) => journal_failed(&self.hub, &e),
            }
            match &stamped.event {
                TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                    info!(board = stamped.board, ply = m.ply, "{}", m.san);
                    games.insert(stamped.board);
                }
                TrackerEvent::Game(
                    GameEvent::Result { .. }
                    | GameEvent::Retraction { .. }
                    | GameEvent::MoveClock { .. }
                    | GameEvent::GameStart { .. },
                ) => {
                    games.insert(stamped.board);
                }
                TrackerEvent::Alert(a) => {
                    warn!(board = stamped.board, article = %a.article, kind = %a.kind, "{}", a.message);
                }
                TrackerEvent::Resolved(r) => {
                    info!(board = stamped.board, alert = r.id, kind = %r.kind, "resolved: {}", r.reason);
                }
                TrackerEvent::Game(_) => {}
            }
        }
        if !durable.is_empty() {
            if let Err(e) = self.journal.sync_only(key, &durable) {
                journal_failed(&self.hub, &e);
            }
        }
        for b in games {
            self.write_games(b);
        }
    }

    /// The board's games with the event data and their round's pairing (player
    /// names, ratings, `Round` as round.board), like the public feeds.
    fn write_games(&mut self, board: u32) {
        let current = self
            .hub
            .round()
            .unwrap_or(self.tournament.config.current_round);
        let games = self
            .hub
            .games(board)
            .into_iter()
            .map(|g| {
                let round = crate::daemon::hub::game_round(&g, current);
                crate::publish::feeds::with_tournament(g, &self.tournament, round, board)
            })
            .collect();
        self.journal.write_games_later(board, games);
    }

    /// Feeds the link events queued by now; not those that come meanwhile,
    /// so that a loop slower than its boards still gets round to its ticks
    /// and the watchdog.
    fn take_queued(&mut self, rx: &mut mpsc::UnboundedReceiver<(usize, LinkEvent)>) {
        for _ in 0..rx.len() {
            let Ok((index, event)) = rx.try_recv() else {
                break;
            };
            self.link_event(index, event);
        }
    }

    /// Time passes: trackers' hold timers run. Ticks every port's session up
    /// to `now` (daemon time), less the time a chunk may still be on its way.
    fn tick(&mut self, now: u64) {
        for i in 0..self.ports.len() {
            let port = &mut self.ports[i];
            // Grid points a little behind now: a chunk read just before a grid
            // point may still be on its way from the supervisor, and a replay
            // feeds it before that point's tick.
            let t = (port.base_ms + now).saturating_sub(TICK_LAG_MS);
            if t > port.last_t {
                port.last_t = t;
                port.grid.tick_until(&mut port.session, t, &mut self.events);
            }
            // An alert an arbiter resolved on the dashboard no longer lights
            // the board.
            let number = self.ports[i].number;
            let hub = &self.hub;
            if let Some(leds) = self.ports[i].leds.as_mut() {
                leds.keep_open(|id| hub.open_alert_seq(number, id).is_some());
            }
            if !self.events.is_empty() || self.ports[i].leds.is_some() {
                self.update_leds(i, false);
            }
            if !self.events.is_empty() {
                let key = self.ports[i].key.clone();
                self.publish(Some(&key));
            }
        }
    }
}

/// Hands the hub what the port's boards show and say about themselves: their
/// pictures (once a dump came) and their identity (serial numbers, battery,
/// the device), which the hub passes on only when they change.
fn show_boards(hub: &Hub, port: &Port) {
    let source = Some(port.source.clone());
    let identity = |info: &crate::session::BoardInfo| crate::daemon::hub::BoardIdentity {
        serial: info.long_serial.clone().or_else(|| info.serial.clone()),
        source: source.clone(),
        battery_percent: info.battery_percent,
    };
    if port.bus() {
        for (a, n, info) in port.session.bus_boards() {
            if let (true, Some(p)) = (info.has_picture, port.session.bus_picture(a)) {
                hub.set_picture(n, p);
            }
            hub.set_identity(n, identity(info));
        }
    } else {
        let info = port.session.board_info();
        if info.has_picture {
            hub.set_picture(port.number, port.session.picture());
        }
        hub.set_identity(port.number, identity(info));
    }
}

/// A port's journal replayed through its session, not yet applied to the hub.
struct Replayed {
    /// Every event the recorded runs derive, in order.
    events: Vec<Stamped>,
    chunks: usize,
    /// Session time of this run's start (see [`run_offsets`]).
    live: u64,
    /// Per board, how far its events were logged (see [`crate::daemon::journal::EventLogSummary`]).
    tails: BTreeMap<u32, Option<(u64, usize)>>,
    /// Captures whose last line a crash cut.
    torn: Vec<PathBuf>,
    /// Arbiters' commands the runs applied, for the boards' timelines:
    /// (board, time, action, description).
    operator_notices: Vec<(u32, u64, &'static str, String)>,
}

/// Replays every port's journal, on as many threads as there are cores.
fn replay_all(journal: &Journal, ports: &mut [Port]) -> Result<Vec<Option<Replayed>>, DaemonError> {
    if ports.is_empty() {
        return Ok(Vec::new());
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(ports.len());
    let per_thread = ports.len().div_ceil(threads);
    let results: Vec<Result<Vec<Option<Replayed>>, DaemonError>> = std::thread::scope(|s| {
        let handles: Vec<_> = ports
            .chunks_mut(per_thread)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter_mut()
                        .map(|port| replay_port(journal, port).map(Some))
                        .collect::<Result<Vec<_>, DaemonError>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a journal replay thread panicked"))
            .collect()
    });
    let mut out = Vec::with_capacity(ports.len());
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// Replays the port's earlier captures through its session, oldest run first.
fn replay_port(journal: &Journal, port: &mut Port) -> Result<Replayed, DaemonError> {
    let runs = journal.recorded_runs(&port.key)?;
    let (offsets, live) = run_offsets(&runs, journal.run_unix_ms());
    let mut summaries: BTreeMap<u32, crate::daemon::journal::EventLogSummary> = BTreeMap::new();
    let mut events = Vec::new();
    let mut chunks = 0usize;
    let mut torn = Vec::new();
    let mut operator_notices = Vec::new();
    for (run, off) in runs.iter().zip(offsets) {
        if run.torn_tail {
            torn.push(run.file.clone());
        }
        if run.protocol != port.protocol.family.name {
            // The port was followed as another family then (a changed
            // [[board]] protocol): those bytes mean nothing to this codec.
            warn!(
                file = %run.file.display(),
                "recorded as {:?} but the port is now read as {:?}: not replayed",
                run.protocol,
                port.protocol.family.name
            );
            continue;
        }
        if let Err(e) = port.session.restore_settings(&run.settings) {
            warn!(file = %run.file.display(), "{e}; replayed with the settings the board has now");
        }
        // The live run ticked its trackers on the grid of session time
        // (`TickGrid`), and some events (a hold expiring) came from those ticks,
        // not from a chunk. Ticking on the same grid, up to the last event that
        // run logged, makes the rebuilt state include them at the same times, so
        // they are not published again when the board comes back. Never beyond:
        // a move that run had not verified is not verified here either.
        // Arbiters' commands were applied in order with the bytes: each sits
        // before the chunk index it was journaled in front of.
        let mut operators = run.operators.iter().peekable();
        for (i, c) in run.chunks.iter().enumerate() {
            while let Some((_, op)) = operators.next_if(|(before, _)| *before <= i) {
                replay_operator(port, off + op.t_ms, op, &mut events, &mut operator_notices);
            }
            let chunk = Chunk {
                t_ms: off + c.t_ms,
                dir: c.dir,
                bytes: c.bytes.clone(),
            };
            port.grid
                .tick_until(&mut port.session, chunk.t_ms, &mut events);
            port.session.feed(&chunk, &mut events);
            chunks += 1;
        }
        for (_, op) in operators {
            replay_operator(port, off + op.t_ms, op, &mut events, &mut operator_notices);
        }
        let last_chunk = off + run.chunks.last().map_or(0, |c| c.t_ms);
        let last_logged = port
            .numbers()
            .into_iter()
            .filter_map(|n| {
                summaries
                    .entry(n)
                    .or_insert_with(|| journal.event_log_summary(n))
                    .last_t_by_run
                    .get(&run.started_unix_ms)
                    .copied()
            })
            .max();
        if let Some(end) = last_logged.filter(|&end| end > last_chunk) {
            port.grid.tick_until(&mut port.session, end, &mut events);
        }
    }
    let mut tails = BTreeMap::new();
    for e in &events {
        tails.entry(e.board).or_insert_with(|| {
            summaries
                .entry(e.board)
                .or_insert_with(|| journal.event_log_summary(e.board))
                .tail
        });
    }
    Ok(Replayed {
        events,
        chunks,
        live,
        tails,
        torn,
        operator_notices,
    })
}

/// Applies a journaled arbiter's command during replay, as the live run did.
fn replay_operator(
    port: &mut Port,
    t: u64,
    op: &OperatorLine,
    events: &mut Vec<Stamped>,
    notices: &mut Vec<(u32, u64, &'static str, String)>,
) {
    port.grid.tick_until(&mut port.session, t, events);
    if port
        .session
        .operator(t, op.board, &op.command, events)
        .is_ok()
    {
        let text = match &op.by {
            Some(by) => format!("{} (by {by})", op.command.describe()),
            None => op.command.describe(),
        };
        notices.push((op.board, t, op.command.action(), text));
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The name of the device `path` leads to, as under `/dev`: `ttyACM0` for a
/// by-id link, `pts/3` for a pseudo-terminal; other paths by their last part.
fn device_name(path: &Path) -> String {
    let dev = canonical(path);
    match dev.strip_prefix("/dev") {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        _ => dev.file_name().map_or_else(
            || dev.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    }
}

/// Entry point of `eboard-bridge run`: configuration, logging, runtime,
/// signals, systemd notifications.
pub fn run_cli(config_path: Option<&Path>) -> anyhow::Result<std::process::ExitCode> {
    use anyhow::Context;
    let mut config = match config_path {
        Some(p) => Config::from_file(p)?,
        None => Config::default(),
    };
    config.apply_env(|k| std::env::var(k).ok())?;
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let hub = Arc::new(Hub::new());
    runtime.block_on(async move {
        // The handlers are installed now, not when `stop` is first polled: a
        // SIGTERM that comes right after "running" (systemd stopping a unit that
        // just started) must still flush the journal, not kill the process.
        use tokio::signal::unix::{signal, SignalKind};
        let signals = signal(SignalKind::terminate())
            .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)));
        let stop = async move {
            match signals {
                Ok((mut term, mut interrupt)) => tokio::select! {
                    _ = term.recv() => info!("SIGTERM"),
                    _ = interrupt.recv() => info!("interrupted"),
                },
                Err(e) => {
                    error!("cannot listen for SIGTERM or SIGINT ({e}); stop with Ctrl-C");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
        };
        // The listener is bound before READY: a unit that says it is ready
        // serves its feeds.
        let (commands_tx, commands_rx) = mpsc::channel(64);
        let http = crate::daemon::service::start_http_with_commands(
            &config,
            config.http.listen,
            hub.clone(),
            Some(commands_tx),
        )
        .await?;
        info!(
            "feeds on http://{addr}/games.pgn, http://{addr}/events; arbiter dashboard on \
             http://{addr}/arbiter/ ({})",
            if config.http.arbiter_token.is_some() {
                "token from the configuration".to_string()
            } else {
                format!(
                    "token in {}",
                    crate::daemon::service::token_path(&config.storage.data_dir).display()
                )
            },
            addr = http.addr
        );
        if let Some(addr) = http.ebapi {
            info!("LiveChess-compatible API on http://{addr}/api/v1.0 (WebSocket ws://{addr}/api/v1.0)");
        }
        let ready = || {
            info!("running");
            let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
        };
        run_with_commands(config, hub, Some(commands_rx), stop, ready).await?;
        anyhow::Ok(())
    })?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Logs for journald when run by systemd (no timestamps or colours: journald
/// adds its own), human logs on a terminal. `RUST_LOG` filters (default `info`).
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let under_journald = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = if under_journald {
        builder.without_time().with_ansi(false).try_init()
    } else {
        builder.try_init()
    };
}
