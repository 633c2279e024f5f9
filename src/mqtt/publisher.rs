//! The publishing side: a hall's daemon sends every event its journal logged.
//!
//! The journal is the only source. The daemon's loop logs an event, the
//! journal tells this task which board's log grew ([`Wakeups`]), and the task
//! reads the new whole lines back from `journal/events/board-N.jsonl`, keeping
//! where each line of each stream starts. It sends them in order, per board and
//! stream, at QoS 1, and moves that stream's *acknowledged* mark when the
//! broker acknowledges them; the marks are kept in `<data_dir>/mqtt/acked.json`
//! (written every half second and at a stop). A new session with the broker
//! starts again from the marks, reading the lines back from the journal: an
//! outage, a broker restart or a `kill -9` of this daemon loses nothing, and
//! what may be sent twice carries the same `(host, board, seq)`, which a
//! subscriber drops.
//!
//! The task also keeps, retained, the host's status (its Last Will says
//! `offline`) and each board's state (how far its events go, its port and
//! whether it answers), and answers replay requests from aggregators with
//! lines read back from the journal.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rumqttc::{Event, Outgoing, Packet, QoS};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;
use tracing::warn;

use super::{
    connect_options, unix_ms, ArbiterEventBody, ArbiterMessage, BoardState, HostStatus, LogStream,
    MqttError, PublicMessage, ReplayRequest, Session, Topics,
};
use crate::daemon::config::Config;
use crate::daemon::hub::Hub;
use crate::daemon::journal::{AppendedHook, Journal};
use crate::events::{Alert, AlertResolved, GameEvent};

/// Messages handed to the client and not yet written to the broker, at most:
/// the rest waits in the journal, not in memory.
const QUEUED: usize = 256;
/// Lines sent per board and stream before the next board gets its turn.
const BATCH: u64 = 32;
/// How often the acknowledged marks are saved, states refreshed and the host's
/// heartbeat (with its clock) sent.
const TICK: Duration = Duration::from_millis(500);
/// The host's status is sent again this often, so subscribers compare clocks.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// Events of one replay request sent, at most (an aggregator asks again).
const REPLAY_MAX: u64 = 5_000;
/// Replay requests waiting, at most (older ones are dropped: they are asked again).
const REPLAYS_WAITING: usize = 4_096;

/// Boards whose event logs grew, and a bell: what the journal's hook sets.
#[derive(Default)]
pub struct Wakeups {
    boards: Mutex<BTreeSet<u32>>,
    bell: Notify,
}

impl Wakeups {
    fn take(&self) -> BTreeSet<u32> {
        std::mem::take(&mut *self.boards.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The running publisher.
pub struct PublisherHandle {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl PublisherHandle {
    /// Says goodbye to the broker (status `offline`), saves the marks.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            warn!("the MQTT publisher did not stop within 5 s; its acknowledged marks may be up to 0.5 s old, which only means a few events are sent again");
        }
    }
}

/// Starts publishing this daemon's journal; returns the hook the journal
/// must call after each event line.
pub fn start(
    config: &Config,
    host: &str,
    hub: Arc<Hub>,
) -> Result<(PublisherHandle, AppendedHook), MqttError> {
    let topics = Topics::new(&config.mqtt.event);
    let offline = serde_json::to_vec(&HostStatus {
        host: host.to_owned(),
        state: "offline".into(),
        unix_ms: None,
        boards: Vec::new(),
    })
    .expect("a status serialises");
    let opts = connect_options(
        &config.mqtt,
        &format!("eboard-bridge-{host}-publisher"),
        Some((topics.host_status(host), offline)),
    )?;
    let wake = Arc::new(Wakeups::default());
    let data_dir = config.storage.data_dir.clone();
    let mut p = Publisher {
        host: host.to_owned(),
        topics,
        broker: config.mqtt.broker.clone(),
        hub,
        logs: BTreeMap::new(),
        marks: Marks::load(&data_dir),
        events_dir: data_dir.join("journal/events"),
        data_dir,
        sent: BTreeMap::new(),
        fifo: VecDeque::new(),
        inflight: HashMap::new(),
        acked_above: BTreeMap::new(),
        replays: VecDeque::new(),
        states_due: BTreeSet::new(),
        presence: BTreeMap::new(),
        connected: None,
        up: false,
    };
    let (stop_tx, stop_rx) = oneshot::channel();
    let bell = wake.clone();
    let task = tokio::spawn(async move { p.run(opts, bell, stop_rx).await });
    let hook: AppendedHook = Box::new(move |board| {
        wake.boards
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(board);
        wake.bell.notify_one();
    });
    Ok((
        PublisherHandle {
            stop: stop_tx,
            task,
        },
        hook,
    ))
}

/// Where a logged line of one stream is in its board's log.
#[derive(Clone, Copy, Debug)]
struct Entry {
    offset: u64,
    len: u32,
    /// The round of the board's game when the line was first read.
    round: u32,
}

/// One board's event log as far as it was read.
#[derive(Default)]
struct BoardLog {
    /// Bytes read: always the end of a whole line.
    read_to: u64,
    /// Entries of seq 1, 2, 3… per stream (index `seq - 1`).
    entries: [Vec<Option<Entry>>; 2],
}

fn index(stream: LogStream) -> usize {
    match stream {
        LogStream::Public => 0,
        LogStream::Arbiter => 1,
    }
}

/// The identity of an event as sent.
type Key = (u32, LogStream);

/// What the broker acknowledged, per board and stream, kept on disk.
struct Marks {
    path: PathBuf,
    acked: BTreeMap<Key, u64>,
    dirty: bool,
}

impl Marks {
    fn load(data_dir: &Path) -> Marks {
        let path = data_dir.join("mqtt/acked.json");
        let mut acked = BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(v) => {
                    for (board, streams) in v["boards"].as_object().into_iter().flatten() {
                        let Ok(board) = board.parse::<u32>() else {
                            continue;
                        };
                        for stream in [LogStream::Public, LogStream::Arbiter] {
                            if let Some(n) = streams[stream.as_str()].as_u64() {
                                acked.insert((board, stream), n);
                            }
                        }
                    }
                }
                Err(e) => warn!(
                    file = %path.display(),
                    "the MQTT acknowledged marks cannot be read ({e}); every event is sent again \
                     from the start of the journal (subscribers drop what they have)"
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warn!(
                file = %path.display(),
                "the MQTT acknowledged marks cannot be read ({e}); every event is sent again from \
                 the start of the journal. Check the file's permissions"
            ),
        }
        Marks {
            path,
            acked,
            dirty: false,
        }
    }

    fn get(&self, key: Key) -> u64 {
        self.acked.get(&key).copied().unwrap_or(0)
    }

    /// Writes the marks (a temporary file renamed over the old one).
    fn save(&mut self) {
        if !self.dirty {
            return;
        }
        let mut boards = serde_json::Map::new();
        for (&(board, stream), &n) in &self.acked {
            let entry = boards
                .entry(board.to_string())
                .or_insert_with(|| serde_json::json!({}));
            entry[stream.as_str()] = n.into();
        }
        let text = serde_json::json!({ "boards": boards }).to_string();
        let tmp = self.path.with_extension("json.tmp");
        let written = self
            .path
            .parent()
            .map_or(Ok(()), crate::files::create_dir_all)
            .and_then(|()| {
                use std::io::Write;
                let mut f = crate::files::options()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .open(&tmp)?;
                f.write_all(text.as_bytes())
            })
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        match written {
            Ok(()) => self.dirty = false,
            Err(e) => warn!(
                file = %self.path.display(),
                "cannot save the MQTT acknowledged marks ({e}); after a restart more events are \
                 sent again than needed. Check that data_dir is writable"
            ),
        }
    }
}

struct Publisher {
    host: String,
    topics: Topics,
    broker: String,
    hub: Arc<Hub>,
    data_dir: PathBuf,
    events_dir: PathBuf,
    logs: BTreeMap<u32, BoardLog>,
    marks: Marks,
    /// This session: the last seq handed to the client per board and stream.
    sent: BTreeMap<Key, u64>,
    /// This session: what each publish handed to the client is, in order
    /// (`None`: not an event: a status, a state, a replayed event).
    fifo: VecDeque<Option<(Key, u64)>>,
    /// This session: events written to the broker, by packet id, until acknowledged.
    inflight: HashMap<u16, (Key, u64)>,
    /// Acknowledged beyond the mark (the broker acknowledged out of order).
    acked_above: BTreeMap<Key, BTreeSet<u64>>,
    /// Replay requests waiting: (board, stream, from, to).
    replays: VecDeque<(u32, LogStream, u64, u64)>,
    /// Boards whose retained states are to be sent.
    states_due: BTreeSet<u32>,
    /// Per board, the presence last sent in its state.
    presence: BTreeMap<u32, (bool, Option<String>)>,
    /// The session with the broker.
    connected: Option<Session>,
    /// The broker accepted the session.
    up: bool,
}

/// What woke the publisher.
enum Step {
    Event(Option<Result<Event, rumqttc::ConnectionError>>),
    Wake,
    Tick,
    Stop,
}

impl Publisher {
    async fn run(
        &mut self,
        opts: rumqttc::MqttOptions,
        wake: Arc<Wakeups>,
        mut stop: oneshot::Receiver<()>,
    ) {
        self.read_all_logs();
        let mut reconnects = super::Reconnects::new(&self.broker);
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_heartbeat = Instant::now();
        loop {
            self.begin_session();
            self.connected = Some(Session::start(opts.clone()));
            loop {
                let step = {
                    let Some(session) = self.connected.as_mut() else {
                        break;
                    };
                    tokio::select! {
                        ev = session.events.recv() => Step::Event(ev),
                        _ = wake.bell.notified() => Step::Wake,
                        _ = tick.tick() => Step::Tick,
                        _ = &mut stop => Step::Stop,
                    }
                };
                match step {
                    Step::Event(Some(Ok(Event::Incoming(Packet::ConnAck(_))))) => {
                        reconnects.accepted(
                            || {
                                format!(
                                    "publishing to the MQTT broker {} as host {:?}",
                                    self.broker, self.host
                                )
                            },
                            "sending what it has not acknowledged",
                        );
                        self.up = true;
                        let replay = self.topics.replay(&self.host);
                        if let Some(s) = &self.connected {
                            if let Err(e) = s.client.try_subscribe(replay, QoS::AtLeastOnce) {
                                warn!("cannot ask the MQTT broker for replay requests ({e}); aggregators that start late will lack history until the next connection");
                            }
                        }
                        self.send_status("online");
                        last_heartbeat = Instant::now();
                        self.states_due.extend(self.known_boards());
                        self.pump();
                    }
                    Step::Event(Some(Ok(ev))) => {
                        if self.up {
                            self.on_event(ev);
                        }
                    }
                    Step::Event(last) => {
                        let wait =
                            reconnects.ended(last, "events wait in the journal until it is back");
                        self.connected = None;
                        self.up = false;
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = &mut stop => {
                                self.marks.save();
                                return;
                            }
                        }
                        break;
                    }
                    Step::Wake => {
                        let boards = wake.take();
                        self.read_logs(boards);
                        self.pump();
                    }
                    Step::Tick => {
                        self.marks.save();
                        if self.up {
                            self.check_presence();
                            if last_heartbeat.elapsed() >= HEARTBEAT {
                                last_heartbeat = Instant::now();
                                self.send_status("online");
                            }
                            self.pump();
                        }
                    }
                    Step::Stop => {
                        if self.up {
                            self.goodbye().await;
                        }
                        self.marks.save();
                        return;
                    }
                }
            }
        }
    }

    /// A new session: nothing of the last one is pending any more.
    fn begin_session(&mut self) {
        self.connected = None;
        self.up = false;
        self.fifo.clear();
        self.inflight.clear();
        self.acked_above.clear();
        self.sent = self.marks.acked.clone();
    }

    fn known_boards(&self) -> BTreeSet<u32> {
        let mut boards: BTreeSet<u32> = self.logs.keys().copied().collect();
        boards.extend(self.hub.board_numbers());
        boards
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Outgoing(Outgoing::Publish(pkid)) => {
                if let Some(Some(id)) = self.fifo.pop_front() {
                    self.inflight.insert(pkid, id);
                }
                self.pump();
            }
            Event::Incoming(Packet::PubAck(ack)) => {
                if let Some((key, seq)) = self.inflight.remove(&ack.pkid) {
                    self.acknowledged(key, seq);
                }
                self.pump();
            }
            Event::Incoming(Packet::Publish(p)) if p.topic == self.topics.replay(&self.host) => {
                match serde_json::from_slice::<ReplayRequest>(&p.payload) {
                    Ok(r) => {
                        if self.replays.len() >= REPLAYS_WAITING {
                            self.replays.pop_front();
                        }
                        let to = r.to.min(r.from.saturating_add(REPLAY_MAX - 1));
                        self.replays
                            .push_back((r.board, r.stream.into(), r.from.max(1), to));
                        self.pump();
                    }
                    Err(e) => warn!(
                        "a replay request on {} is not understood ({e}); ignored",
                        p.topic
                    ),
                }
            }
            _ => {}
        }
    }

    /// The broker has event `seq` of `key`: the mark moves over every
    /// acknowledged event that follows it without a gap.
    fn acknowledged(&mut self, key: Key, seq: u64) {
        let mark = self.marks.get(key);
        if seq <= mark {
            return;
        }
        let above = self.acked_above.entry(key).or_default();
        above.insert(seq);
        let mut m = mark;
        while above.remove(&(m + 1)) {
            m += 1;
        }
        if m > mark {
            self.marks.acked.insert(key, m);
            self.marks.dirty = true;
        }
    }

    /// Reads every board's log (at start: what earlier runs logged).
    fn read_all_logs(&mut self) {
        let boards: BTreeSet<u32> = std::fs::read_dir(&self.events_dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name();
                let name = name.to_str()?;
                name.strip_prefix("board-")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()
            })
            .collect();
        self.read_logs(boards);
    }

    /// Reads the new whole lines of the boards' logs.
    fn read_logs(&mut self, boards: BTreeSet<u32>) {
        for board in boards {
            let path = Journal::event_log_path(&self.data_dir, board);
            let round = self.hub.game_round(board);
            let log = self.logs.entry(board).or_default();
            match read_new_lines(&path, log, round) {
                Ok(true) => {
                    self.states_due.insert(board);
                }
                Ok(false) => {}
                Err(e) => warn!(
                    file = %path.display(),
                    "cannot read the event log back for MQTT ({e}); its new events are sent \
                     once it can be read. Check the file's permissions"
                ),
            }
        }
    }

    /// The last seq logged for `key`.
    fn logged(&self, (board, stream): Key) -> u64 {
        self.logs
            .get(&board)
            .map_or(0, |l| l.entries[index(stream)].len() as u64)
    }

    /// Hands the client what is due, oldest first per board, while it has room.
    fn pump(&mut self) {
        if !self.up {
            return;
        }
        // Live events: every board and stream in turn, a batch at a time.
        loop {
            let mut progressed = false;
            let keys: Vec<Key> = self
                .logs
                .keys()
                .flat_map(|&b| [(b, LogStream::Public), (b, LogStream::Arbiter)])
                .collect();
            for key in keys {
                let sent = self.sent.get(&key).copied().unwrap_or(0);
                let logged = self.logged(key);
                if sent >= logged {
                    continue;
                }
                let room = QUEUED.saturating_sub(self.fifo.len()) as u64;
                if room == 0 {
                    return;
                }
                let to = logged.min(sent + BATCH.min(room));
                let n = self.send_range(key, sent + 1, to, true);
                self.sent.insert(key, sent + n);
                progressed |= n > 0;
            }
            if !progressed {
                break;
            }
        }
        // Replays asked for.
        while let Some(&(board, stream, from, to)) = self.replays.front() {
            let room = QUEUED.saturating_sub(self.fifo.len()) as u64;
            if room == 0 {
                return;
            }
            let key = (board, stream);
            let to = to.min(self.logged(key));
            if from > to {
                self.replays.pop_front();
                continue;
            }
            let upto = to.min(from + room - 1);
            let n = self.send_range(key, from, upto, false);
            if n == 0 || upto == to {
                self.replays.pop_front();
            } else if let Some(front) = self.replays.front_mut() {
                front.2 = from + n;
            }
        }
        // Retained states.
        while let Some(board) = self.states_due.pop_first() {
            if QUEUED.saturating_sub(self.fifo.len()) < 2 {
                self.states_due.insert(board);
                return;
            }
            self.send_state(board);
        }
    }

    /// Sends events `from..=to` of `key` read back from the journal; `tracked`
    /// moves the acknowledged mark when the broker has them. Returns how many
    /// were handed over (fewer when the client is full or a line is unreadable).
    fn send_range(&mut self, key: Key, from: u64, to: u64, tracked: bool) -> u64 {
        let (board, stream) = key;
        let path = Journal::event_log_path(&self.data_dir, board);
        let Some(log) = self.logs.get(&board) else {
            return 0;
        };
        let entries: Vec<Option<Entry>> =
            log.entries[index(stream)][(from - 1) as usize..to as usize].to_vec();
        let lines = match read_entries(&path, &entries) {
            Ok(l) => l,
            Err(e) => {
                warn!(file = %path.display(), "cannot read the event log back for MQTT ({e}); retrying");
                return 0;
            }
        };
        let topic = self.topics.events(stream, board);
        let mut n = 0;
        for (i, (line, entry)) in lines.into_iter().zip(&entries).enumerate() {
            let seq = from + i as u64;
            let payload = match (line, entry) {
                (Some(line), Some(entry)) => self.message(stream, seq, entry.round, &line),
                _ => None,
            };
            let Some(client) = self.connected.as_ref().map(|s| &s.client) else {
                return n;
            };
            match payload {
                Some(payload) => {
                    if client
                        .try_publish(topic.clone(), QoS::AtLeastOnce, false, payload)
                        .is_err()
                    {
                        return n;
                    }
                    self.fifo.push_back(tracked.then_some((key, seq)));
                }
                None => {
                    // A line that is not an event of this stream cannot be
                    // sent; it counts as sent so the stream goes on.
                    warn!(
                        board,
                        seq,
                        stream = stream.as_str(),
                        "a logged event cannot be read back for MQTT; it is skipped"
                    );
                    if tracked {
                        self.acknowledged(key, seq);
                    }
                }
            }
            n += 1;
        }
        n
    }

    /// The message for a logged line: a public line becomes a
    /// [`PublicMessage`] only if it reads as a [`GameEvent`], an arbiter line
    /// an [`ArbiterMessage`] only if it reads as an alert or its resolution.
    fn message(&self, stream: LogStream, seq: u64, round: u32, line: &[u8]) -> Option<Vec<u8>> {
        let v: serde_json::Value = serde_json::from_slice(line).ok()?;
        let board = v["board"].as_u64()? as u32;
        let ply = v["ply"].as_u64().unwrap_or(0) as u32;
        let t_ms = v["t_ms"].as_u64()?;
        let unix_ms = v["unix_ms"].as_u64().unwrap_or(0);
        let kind = v["type"].as_str()?;
        if crate::daemon::journal::LogStream::of_type(kind) != stream {
            return None;
        }
        let bytes = match stream {
            LogStream::Public => serde_json::to_vec(&PublicMessage {
                host: self.host.clone(),
                board,
                seq,
                round,
                ply,
                t_ms,
                unix_ms,
                event: serde_json::from_value::<GameEvent>(v).ok()?,
            }),
            LogStream::Arbiter => {
                let event = if kind == "alert" {
                    ArbiterEventBody::Alert(serde_json::from_value::<Alert>(v).ok()?)
                } else {
                    ArbiterEventBody::AlertResolved(
                        serde_json::from_value::<AlertResolved>(v).ok()?,
                    )
                };
                serde_json::to_vec(&ArbiterMessage {
                    host: self.host.clone(),
                    board,
                    seq,
                    ply,
                    t_ms,
                    unix_ms,
                    event,
                })
            }
        };
        bytes.ok()
    }

    /// Publishes `payload` retained on `topic`, untracked.
    fn send_retained(&mut self, topic: String, payload: Vec<u8>) {
        let Some(s) = self.connected.as_ref().filter(|_| self.up) else {
            return;
        };
        if s.client
            .try_publish(topic, QoS::AtLeastOnce, true, payload)
            .is_ok()
        {
            self.fifo.push_back(None);
        }
    }

    fn send_status(&mut self, state: &str) {
        let status = HostStatus {
            host: self.host.clone(),
            state: state.into(),
            unix_ms: Some(unix_ms()),
            boards: self.known_boards().into_iter().collect(),
        };
        let payload = serde_json::to_vec(&status).expect("a status serialises");
        self.send_retained(self.topics.host_status(&self.host), payload);
    }

    /// The board's retained states: on the public tree how far its public
    /// events go, its port and whether it answers; on the arbiter tree how
    /// far its alerts go.
    fn send_state(&mut self, board: u32) {
        let presence = self.hub.board_presence(board).unwrap_or((false, None));
        self.presence.insert(board, presence.clone());
        let now = unix_ms();
        let public = BoardState {
            host: self.host.clone(),
            board,
            seq: self.logged((board, LogStream::Public)),
            port: presence.1,
            online: Some(presence.0),
            unix_ms: now,
        };
        let arbiter = BoardState {
            host: self.host.clone(),
            board,
            seq: self.logged((board, LogStream::Arbiter)),
            port: None,
            online: None,
            unix_ms: now,
        };
        for (stream, state) in [(LogStream::Public, public), (LogStream::Arbiter, arbiter)] {
            let payload = serde_json::to_vec(&state).expect("a state serialises");
            self.send_retained(self.topics.state(stream, board), payload);
        }
    }

    /// Boards whose presence changed since their state was sent get it sent again.
    fn check_presence(&mut self) {
        for board in self.hub.board_numbers() {
            let now = self.hub.board_presence(board).unwrap_or((false, None));
            if self.presence.get(&board) != Some(&now) {
                self.states_due.insert(board);
            }
        }
    }

    /// At a stop: status `offline` (retained, so subscribers know it is not a
    /// crash), then a clean disconnect, waiting a moment for both to go out.
    async fn goodbye(&mut self) {
        self.send_status("offline");
        let Some(mut session) = self.connected.take() else {
            return;
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        // Wait for what is in flight to be acknowledged, then disconnect.
        while !self.fifo.is_empty() || !self.inflight.is_empty() {
            match tokio::time::timeout_at(deadline, session.events.recv()).await {
                Ok(Some(Ok(Event::Outgoing(Outgoing::Publish(pkid))))) => {
                    if let Some(Some(id)) = self.fifo.pop_front() {
                        self.inflight.insert(pkid, id);
                    }
                }
                Ok(Some(Ok(Event::Incoming(Packet::PubAck(ack))))) => {
                    if let Some((key, seq)) = self.inflight.remove(&ack.pkid) {
                        self.acknowledged(key, seq);
                    }
                }
                Ok(Some(Ok(_))) => {}
                _ => break,
            }
        }
        let _ = session.client.try_disconnect();
        let _ = tokio::time::timeout_at(deadline, async {
            while let Some(Ok(_)) = session.events.recv().await {}
        })
        .await;
    }
}

/// Reads the whole lines added to `path` since `log.read_to` and indexes
/// them by stream and seq. Returns whether any event line was found.
fn read_new_lines(path: &Path, log: &mut BoardLog, round: u32) -> std::io::Result<bool> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    f.seek(SeekFrom::Start(log.read_to))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let Some(end) = memchr::memrchr(b'\n', &bytes) else {
        return Ok(false);
    };
    let mut found = false;
    let mut start = 0usize;
    for line in bytes[..end].split(|&b| b == b'\n') {
        let offset = log.read_to + start as u64;
        start += line.len() + 1;
        let Some((stream, seq)) = crate::daemon::journal::logged_identity(line) else {
            continue;
        };
        let entries = &mut log.entries[index(stream)];
        let i = (seq - 1) as usize;
        if entries.len() <= i {
            entries.resize(i + 1, None);
        }
        entries[i] = Some(Entry {
            offset,
            len: line.len() as u32,
            round,
        });
        found = true;
    }
    log.read_to += end as u64 + 1;
    Ok(found)
}

/// The lines at `entries` (in file order), `None` where there is none.
fn read_entries(path: &Path, entries: &[Option<Entry>]) -> std::io::Result<Vec<Option<Vec<u8>>>> {
    let present = entries.iter().flatten();
    let Some(first) = present.clone().map(|e| e.offset).min() else {
        return Ok(vec![None; entries.len()]);
    };
    let last = present
        .map(|e| e.offset + u64::from(e.len))
        .max()
        .unwrap_or(first);
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(first))?;
    let mut bytes = vec![0u8; (last - first) as usize];
    f.read_exact(&mut bytes)?;
    Ok(entries
        .iter()
        .map(|e| {
            e.map(|e| {
                let s = (e.offset - first) as usize;
                bytes[s..s + e.len as usize].to_vec()
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_indexed_by_stream_and_seq_and_cut_lines_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board-3.jsonl");
        let lines = [
            r#"{"board":3,"board_seq":1,"ply":0,"t_ms":5,"type":"game_start","fen":"x","rotated":false}"#,
            r#"{"board":3,"port":"p","type":"board_offline"}"#,
            r#"{"board":3,"board_seq":1,"ply":0,"t_ms":6,"type":"alert","id":1}"#,
            r#"{"board":3,"board_seq":2,"ply":1,"t_ms":7,"type":"move"}"#,
        ];
        let mut text = lines.join("\n");
        text.push('\n');
        text.push_str(r#"{"board":3,"board_seq":3,"pl"#);
        std::fs::write(&path, &text).unwrap();
        let mut log = BoardLog::default();
        assert!(read_new_lines(&path, &mut log, 1).unwrap());
        assert_eq!(log.entries[0].len(), 2);
        assert_eq!(log.entries[1].len(), 1);
        let got = read_entries(&path, &log.entries[0]).unwrap();
        assert_eq!(got[1].as_deref(), Some(lines[3].as_bytes()));
        let got = read_entries(&path, &log.entries[1]).unwrap();
        assert_eq!(got[0].as_deref(), Some(lines[2].as_bytes()));
        // The cut line is read once it is whole.
        std::fs::write(
            &path,
            format!("{text}y\":2,\"t_ms\":9,\"type\":\"move\"}}\n"),
        )
        .unwrap();
        assert!(read_new_lines(&path, &mut log, 1).unwrap());
        assert_eq!(log.entries[0].len(), 3);
        assert!(!read_new_lines(&path, &mut log, 1).unwrap());
    }
}
