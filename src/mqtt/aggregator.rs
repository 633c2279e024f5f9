//! The subscribing side: the venue's aggregator builds its hub from every
//! host's events.
//!
//! Each board's events come from one host, numbered per stream (public,
//! arbiter) 1, 2, 3… An event is applied when it is the next one of its
//! stream; one already applied (QoS 1 sends some twice, a replay overlaps
//! live traffic) is dropped, and one that comes early waits while the missing
//! ones are asked for again on the host's replay topic. The retained board
//! states say how far each stream goes, so an aggregator that starts late, or
//! missed messages in an outage, asks for what it lacks: everything since seq 1
//! for a board it has never heard of.
//!
//! Event times are put on this daemon's clock: each host's heartbeat says its
//! wall clock, the difference is added to the host's times, and a board's
//! times never go back. A host whose clock is off by more than
//! `clock_tolerance_ms` is reported. A board number that two hosts report
//! raises an alert; the second host's events for it are not applied.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::{Event, Packet, QoS};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::{
    connect_options, unix_ms, ArbiterEventBody, ArbiterMessage, BoardState, HostStatus, LogStream,
    LogStreamName, MqttError, PublicMessage, ReplayRequest, Session, Topics,
};
use crate::daemon::config::Config;
use crate::daemon::hub::Hub;
use crate::events::{Alert, AlertKind, Severity, Stamped, TrackerEvent};

/// Events that came early wait here, at most, per board and stream.
const WAITING_MAX: usize = 20_000;
/// A gap is asked for once it has lasted this long (live events may still be
/// on their way), then again this often while it lasts.
const GAP_GRACE: Duration = Duration::from_millis(700);
const ASK_AGAIN: Duration = Duration::from_secs(3);
/// How often gaps are looked for.
const TICK: Duration = Duration::from_millis(250);
/// Alert ids the aggregator gives its own alerts (clashes), above any tracker's.
const OWN_ALERT_IDS: u32 = 0x4000_0000;

/// The running aggregator.
pub struct AggregatorHandle {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl AggregatorHandle {
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(3), self.task).await;
    }
}

/// Starts taking every host's boards from the broker into `hub`.
pub fn start(config: &Config, host: &str, hub: Arc<Hub>) -> Result<AggregatorHandle, MqttError> {
    let opts = connect_options(
        &config.mqtt,
        &format!("eboard-bridge-{host}-aggregator"),
        None,
    )?;
    let local: BTreeSet<u32> = config.boards.iter().filter_map(|b| b.number).collect();
    let mut a = Aggregator {
        own_host: host.to_owned(),
        publishes_too: config.mqtt.publish,
        topics: Topics::new(&config.mqtt.event),
        broker: config.mqtt.broker.clone(),
        tolerance_ms: config.mqtt.clock_tolerance_ms as i64,
        hub,
        local,
        boards: BTreeMap::new(),
        hosts: BTreeMap::new(),
        epoch_unix_ms: unix_ms(),
        clashes: BTreeSet::new(),
        next_alert: OWN_ALERT_IDS,
        session: None,
    };
    let (stop_tx, stop_rx) = oneshot::channel();
    let task = tokio::spawn(async move { a.run(opts, stop_rx).await });
    Ok(AggregatorHandle {
        stop: stop_tx,
        task,
    })
}

/// One stream of one board, as received.
#[derive(Default)]
struct StreamIn {
    /// Events 1..=applied are in the hub.
    applied: u64,
    /// The last seq the host says it has (its state, or an event seen).
    known: u64,
    /// Events that came before the ones they follow.
    waiting: BTreeMap<u64, Waiting>,
    /// Since when a gap is seen, and when it was last asked for.
    gap_since: Option<Instant>,
    asked: Option<Instant>,
}

enum Waiting {
    Public(PublicMessage),
    Arbiter(ArbiterMessage),
}

/// A board followed by another host.
struct Remote {
    host: String,
    streams: [StreamIn; 2],
    /// The latest time given to the board's events, on this daemon's time line.
    last_t: u64,
    port: Option<String>,
}

fn index(stream: LogStream) -> usize {
    match stream {
        LogStream::Public => 0,
        LogStream::Arbiter => 1,
    }
}

/// What this daemon knows of a host.
#[derive(Default)]
struct HostInfo {
    online: bool,
    /// Add to the host's wall clock to get this daemon's (ms).
    offset_ms: i64,
    /// The offset last reported as too large, to report a change once.
    reported: Option<i64>,
}

struct Aggregator {
    own_host: String,
    /// This daemon publishes its own boards: its own messages come back and
    /// are not applied twice.
    publishes_too: bool,
    topics: Topics,
    broker: String,
    tolerance_ms: i64,
    hub: Arc<Hub>,
    /// Boards on this daemon's own ports.
    local: BTreeSet<u32>,
    boards: BTreeMap<u32, Remote>,
    hosts: BTreeMap<String, HostInfo>,
    /// This daemon's time line starts here (Unix ms).
    epoch_unix_ms: u64,
    /// (board, host) clashes already alerted.
    clashes: BTreeSet<(u32, String)>,
    next_alert: u32,
    session: Option<Session>,
}

enum Step {
    Event(Option<Result<Event, rumqttc::ConnectionError>>),
    Tick,
    Stop,
}

impl Aggregator {
    async fn run(&mut self, opts: rumqttc::MqttOptions, mut stop: oneshot::Receiver<()>) {
        let mut reconnects = super::Reconnects::new(&self.broker);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.session = Some(Session::start(opts.clone()));
            loop {
                let step = {
                    let Some(session) = self.session.as_mut() else {
                        break;
                    };
                    tokio::select! {
                        ev = session.events.recv() => Step::Event(ev),
                        _ = tick.tick() => Step::Tick,
                        _ = &mut stop => Step::Stop,
                    }
                };
                match step {
                    Step::Event(Some(Ok(Event::Incoming(Packet::ConnAck(_))))) => {
                        reconnects.accepted(
                            || {
                                format!(
                                    "following the venue's hosts through the MQTT broker {}",
                                    self.broker
                                )
                            },
                            "asking the hosts for what was missed",
                        );
                        self.subscribe();
                    }
                    Step::Event(Some(Ok(Event::Incoming(Packet::Publish(p))))) => {
                        self.on_message(&p.topic, &p.payload, p.retain);
                    }
                    Step::Event(Some(Ok(_))) => {}
                    Step::Event(last) => {
                        let wait = reconnects.ended(
                            last,
                            "the venue's other boards are not updated until it is back",
                        );
                        self.session = None;
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = &mut stop => return,
                        }
                        break;
                    }
                    Step::Tick => self.ask_for_gaps(),
                    Step::Stop => {
                        if let Some(s) = self.session.take() {
                            let _ = s.client.try_disconnect();
                        }
                        return;
                    }
                }
            }
        }
    }

    fn subscribe(&self) {
        let Some(s) = &self.session else { return };
        for topic in [
            self.topics.all_host_status(),
            self.topics.all_boards(LogStream::Public),
            self.topics.all_boards(LogStream::Arbiter),
        ] {
            if let Err(e) = s.client.try_subscribe(topic.clone(), QoS::AtLeastOnce) {
                warn!("cannot subscribe to {topic} ({e}); reconnecting may help");
            }
        }
    }

    fn on_message(&mut self, topic: &str, payload: &[u8], retained: bool) {
        if topic.ends_with("/status") {
            match serde_json::from_slice::<HostStatus>(payload) {
                Ok(s) => self.on_status(s, retained),
                Err(e) => warn!("a host status on {topic} is not understood ({e}); ignored"),
            }
            return;
        }
        let Some((stream, board, kind)) = self.topics.parse_board_topic(topic) else {
            return;
        };
        match (stream, kind) {
            (_, "state") => match serde_json::from_slice::<BoardState>(payload) {
                Ok(s) if s.board == board => self.on_state(stream, s),
                Ok(_) => warn!("a board state on {topic} names another board; ignored"),
                Err(e) => warn!("a board state on {topic} is not understood ({e}); ignored"),
            },
            (LogStream::Public, "events") => match serde_json::from_slice::<PublicMessage>(payload)
            {
                Ok(m) if m.board == board => self.on_event(Waiting::Public(m)),
                Ok(_) => warn!("an event on {topic} names another board; ignored"),
                Err(e) => warn!("an event on {topic} is not understood ({e}); ignored"),
            },
            (LogStream::Arbiter, "events") => {
                match serde_json::from_slice::<ArbiterMessage>(payload) {
                    Ok(m) if m.board == board => self.on_event(Waiting::Arbiter(m)),
                    Ok(_) => warn!("an alert on {topic} names another board; ignored"),
                    Err(e) => warn!("an alert on {topic} is not understood ({e}); ignored"),
                }
            }
            _ => {}
        }
    }

    fn is_own(&self, host: &str) -> bool {
        self.publishes_too && host == self.own_host
    }

    fn on_status(&mut self, s: HostStatus, retained: bool) {
        if self.is_own(&s.host) {
            return;
        }
        let info = self.hosts.entry(s.host.clone()).or_default();
        let online = s.state == "online";
        if online != info.online {
            info!(host = %s.host, "host {}", if online { "online" } else { "offline" });
        }
        info.online = online;
        // A retained status may be old: only one sent just now tells the
        // host's clock.
        if let (Some(t), false) = (s.unix_ms, retained) {
            let offset = unix_ms() as i64 - t as i64;
            info.offset_ms = offset;
            let off = offset.abs() > self.tolerance_ms;
            let changed = info
                .reported
                .is_none_or(|r| (r - offset).abs() > self.tolerance_ms);
            if off && changed {
                warn!(
                    host = %s.host,
                    "host {}'s clock is {} ms {} this daemon's (more than mqtt.clock_tolerance_ms = {}); \
                     its event times are moved onto this daemon's clock. Run NTP (or chrony) on every \
                     host of the venue",
                    s.host,
                    offset.abs(),
                    if offset < 0 { "ahead of" } else { "behind" },
                    self.tolerance_ms
                );
                info.reported = Some(offset);
            } else if !off {
                info.reported = None;
            }
        }
        if !online {
            let now = self.now_t();
            let boards: Vec<u32> = self
                .boards
                .iter()
                .filter(|(_, r)| r.host == s.host)
                .map(|(&n, _)| n)
                .collect();
            for n in boards {
                self.hub.set_online(
                    n,
                    false,
                    now,
                    &format!(
                        "host {} left the MQTT broker (stopped, or its network is down)",
                        s.host
                    ),
                );
            }
        }
    }

    /// This daemon's time line now (ms since the aggregator started).
    fn now_t(&self) -> u64 {
        unix_ms().saturating_sub(self.epoch_unix_ms)
    }

    /// The board `board` as followed from `host`; `None` (after an alert,
    /// once) when another host or this daemon already has that number.
    fn remote(&mut self, board: u32, host: &str) -> Option<&mut Remote> {
        let owner = if self.local.contains(&board) {
            Some(self.own_host.clone())
        } else {
            self.boards.get(&board).map(|r| r.host.clone())
        };
        if let Some(owner) = owner.filter(|o| o != host) {
            if self.clashes.insert((board, host.to_owned())) {
                self.clash(board, &owner, host);
            }
            return None;
        }
        Some(self.boards.entry(board).or_insert_with(|| Remote {
            host: host.to_owned(),
            streams: Default::default(),
            last_t: 0,
            port: None,
        }))
    }

    /// Board `board` is reported by two hosts: an alert the arbiters see at
    /// once, naming both and what to change.
    fn clash(&mut self, board: u32, owner: &str, other: &str) {
        self.next_alert += 1;
        let message = format!(
            "Board number {board} is used by two hosts: {owner} and {other}. Only {owner}'s board \
             {board} is shown here; {other}'s is not. Give the board on {other} a number of its \
             own in its configuration ([[board]] number) and restart that host."
        );
        warn!("{message}");
        let t = self.now_t();
        let t = self.boards.get(&board).map_or(t, |r| r.last_t.max(t));
        self.hub.apply(
            &Stamped {
                board,
                ply: 0,
                t_ms: t,
                event: TrackerEvent::Alert(Alert {
                    id: self.next_alert,
                    kind: AlertKind::BoardNumberClash,
                    article: "-".into(),
                    severity: Severity::Error,
                    squares: Vec::new(),
                    message,
                    penalty: None,
                }),
            },
            true,
        );
    }

    fn on_state(&mut self, stream: LogStream, s: BoardState) {
        if self.is_own(&s.host) {
            return;
        }
        let hub = self.hub.clone();
        let now = self.now_t();
        let Some(r) = self.remote(s.board, &s.host) else {
            return;
        };
        let st = &mut r.streams[index(stream)];
        st.known = st.known.max(s.seq);
        if stream == LogStream::Public {
            let port = format!(
                "{} (host {})",
                s.port.as_deref().unwrap_or("no port"),
                s.host
            );
            if r.port.as_deref() != Some(&port) {
                hub.register(s.board, &port);
                r.port = Some(port);
            }
            if let Some(online) = s.online {
                let reason = format!("the board does not answer its host {}", s.host);
                hub.set_online(s.board, online, r.last_t.max(now), &reason);
            }
        }
    }

    fn on_event(&mut self, msg: Waiting) {
        let (host, board, seq, stream) = match &msg {
            Waiting::Public(m) => (m.host.clone(), m.board, m.seq, LogStream::Public),
            Waiting::Arbiter(m) => (m.host.clone(), m.board, m.seq, LogStream::Arbiter),
        };
        if self.is_own(&host) {
            return;
        }
        let Some(r) = self.remote(board, &host) else {
            return;
        };
        let st = &mut r.streams[index(stream)];
        st.known = st.known.max(seq);
        if seq <= st.applied {
            self.hub.metrics().mqtt_duplicates.inc();
            return;
        }
        if seq > st.applied + 1 {
            if st.waiting.len() < WAITING_MAX {
                st.waiting.insert(seq, msg);
            }
            return;
        }
        self.apply(msg);
        // What waited behind it.
        loop {
            let Some(r) = self.boards.get_mut(&board) else {
                return;
            };
            let st = &mut r.streams[index(stream)];
            let next = st.applied + 1;
            let Some(m) = st.waiting.remove(&next) else {
                break;
            };
            self.apply(m);
        }
        if let Some(r) = self.boards.get_mut(&board) {
            let st = &mut r.streams[index(stream)];
            // Anything now applied that waited is dropped.
            let applied = st.applied;
            st.waiting.retain(|&s, _| s > applied);
            if st.applied >= st.known {
                st.gap_since = None;
            }
        }
    }

    /// Applies the next event of its stream to the hub.
    fn apply(&mut self, msg: Waiting) {
        let (host, board, unix, stream) = match &msg {
            Waiting::Public(m) => (m.host.clone(), m.board, m.unix_ms, LogStream::Public),
            Waiting::Arbiter(m) => (m.host.clone(), m.board, m.unix_ms, LogStream::Arbiter),
        };
        let offset = self.hosts.get(&host).map_or(0, |h| h.offset_ms);
        let epoch = self.epoch_unix_ms as i64;
        let Some(r) = self.boards.get_mut(&board) else {
            return;
        };
        // The host's time, on this daemon's clock; never back in one board's game.
        let t = (unix as i64 + offset - epoch).max(0) as u64;
        let t = t.max(r.last_t);
        r.last_t = t;
        r.streams[index(stream)].applied += 1;
        match msg {
            Waiting::Public(m) => {
                let stamped = Stamped {
                    board,
                    ply: m.ply,
                    t_ms: t,
                    event: TrackerEvent::Game(m.event),
                };
                self.hub.apply_in_round(&stamped, m.round.max(1), true);
            }
            Waiting::Arbiter(m) => {
                let event = match m.event {
                    ArbiterEventBody::Alert(a) => TrackerEvent::Alert(a),
                    ArbiterEventBody::AlertResolved(r) => TrackerEvent::Resolved(r),
                };
                self.hub.apply(
                    &Stamped {
                        board,
                        ply: m.ply,
                        t_ms: t,
                        event,
                    },
                    true,
                );
            }
        }
        self.hub.metrics().mqtt_applied.inc();
    }

    /// Asks the hosts for what is missing: the gap before the first event
    /// that waits, or up to what the host's state says it has.
    fn ask_for_gaps(&mut self) {
        let Some(session) = &self.session else { return };
        let now = Instant::now();
        let mut asks = Vec::new();
        for (&board, r) in &mut self.boards {
            for stream in [LogStream::Public, LogStream::Arbiter] {
                let st = &mut r.streams[index(stream)];
                let end = match st.waiting.keys().next() {
                    Some(&first) => first - 1,
                    None => st.known,
                };
                if end <= st.applied {
                    st.gap_since = None;
                    continue;
                }
                let since = *st.gap_since.get_or_insert(now);
                if now.duration_since(since) < GAP_GRACE {
                    continue;
                }
                if st.asked.is_some_and(|a| now.duration_since(a) < ASK_AGAIN) {
                    continue;
                }
                st.asked = Some(now);
                asks.push((
                    r.host.clone(),
                    ReplayRequest {
                        board,
                        stream: LogStreamName::from(stream),
                        from: st.applied + 1,
                        to: end,
                    },
                ));
            }
        }
        for (host, req) in asks {
            let payload = serde_json::to_vec(&req).expect("a request serialises");
            if session
                .client
                .try_publish(self.topics.replay(&host), QoS::AtLeastOnce, false, payload)
                .is_ok()
            {
                self.hub.metrics().mqtt_replays_asked.inc();
            }
        }
    }
}
