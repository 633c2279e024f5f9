//! The hub: the daemon's in-memory state, read by publishers and the HTTP side.
//!
//! Per board number it keeps whether the board is online, its last sensor
//! picture, the game record so far, the last clock and the open arbiter notices,
//! and it fans events out on two broadcast channels, each with its own strictly
//! increasing sequence number (for SSE `Last-Event-ID` resumption):
//!
//! * the **public** channel carries [`GameEvent`]s only;
//! * the **arbiter** channel carries [`ArbiterEvent`]s: alerts and device notices.
//!
//! Article 12.6 is kept by type, as in `events.rs`: [`PublicBoard`] and
//! [`PublicEvent`] have no field that could hold an [`Alert`], and the only way
//! to see alerts is [`Hub::arbiter_snapshot`] / [`Hub::subscribe_arbiter`].
//!
//! **Rounds.** Every game is stamped with the round it was played in when it
//! starts ([`GameRecord::round`]), so a round change ([`Hub::set_round`] after a
//! configuration reload or an arbiter's assignment, [`Hub::set_board_round`] for
//! one board) never moves a game already begun: the previous round's games stay
//! listed under their round. A board's game that has not begun (pieces set up,
//! no move, no result) follows the change: it is the next round's game.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use eboard_protocols::Picture;
use serde::Serialize;
use tokio::sync::{broadcast, watch};

use crate::daemon::metrics::Metrics;
use crate::events::{Alert, AlertResolved, ColorName, GameEvent, Millis, Stamped, TrackerEvent};
use crate::pgn::{GameInfo, GameRecord, GameRecorder};

/// How many events a slow subscriber may fall behind before it misses some
/// (it then resumes from a snapshot).
pub const CHANNEL_CAPACITY: usize = 4096;

/// The last clock reading, as the tracker mapped it to colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ClockState {
    pub white_ms: u64,
    pub black_ms: u64,
    pub running: Option<ColorName>,
}

/// A public event with its place in the public stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PublicEvent {
    pub seq: u64,
    pub board: u32,
    /// The round of the game the event belongs to (the hub's round when no
    /// round was ever set: see [`Hub::round`]).
    pub round: u32,
    pub t_ms: Millis,
    pub event: GameEvent,
    /// The event's stream JSON, made once by the first subscriber that sends
    /// it and shared by the others (a thousand subscribers must not serialise
    /// every event a thousand times).
    #[serde(skip)]
    pub(crate) json: JsonCache,
}

/// Text forms of an event made once, on first use, and shared by every
/// subscriber (the stream JSON, and the whole SSE message around it); never
/// part of an event's identity.
#[derive(Clone, Debug, Default)]
pub(crate) struct JsonCache {
    pub(crate) json: std::sync::OnceLock<String>,
    pub(crate) sse: std::sync::OnceLock<axum::body::Bytes>,
}

impl PartialEq for JsonCache {
    fn eq(&self, _: &JsonCache) -> bool {
        true
    }
}

impl Eq for JsonCache {}

/// What only arbiters see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ArbiterNotice {
    /// An alert from the tracker (Article 12.6: never public).
    Alert(Alert),
    /// The tracker saw alert `id` corrected; it is no longer open.
    AlertResolved(AlertResolved),
    /// The board stopped answering (unplugged, cable, power): its moves are not
    /// being followed until it is back.
    BoardOffline { port: String, reason: String },
    /// The board answers again; its position is resynchronised from a fresh dump.
    BoardOnline { port: String },
    /// An arbiter acted on the board through the dashboard (who did what, for
    /// the timeline). `action` is the operator API's name (`set_result`, ...).
    Operator { action: String, detail: String },
}

/// Where an open notice stands in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeState {
    /// Raised, nobody has looked at it yet.
    Raised,
    /// An arbiter saw it; it stays listed until it is resolved.
    Acknowledged,
}

/// How many arbiter events a board's timeline keeps (oldest dropped first): a
/// long game raises far fewer, and the bound keeps a broken board from growing
/// the hub without limit.
pub const TIMELINE_LEN: usize = 2000;

/// An arbiter notice with its place in the arbiter stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ArbiterEvent {
    pub seq: u64,
    pub board: u32,
    pub t_ms: Millis,
    pub notice: ArbiterNotice,
}

/// What a board says about itself (its DGT serial and battery messages) and
/// the device it is read through. Public: LiveChess's local API lists it for
/// every e-board, and it says nothing of the game or of arbiters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoardIdentity {
    /// The serial number the board reported: the ten digits of `0xa2` when it
    /// sent them, else the five of `0x91`.
    pub serial: Option<String>,
    /// The device's name, e.g. `ttyACM0` (a `/dev/serial/by-id/` link resolved).
    pub source: Option<String>,
    /// Battery charge in percent (Bluetooth boards, `0xa0`).
    pub battery_percent: Option<u8>,
}

/// A board as the public may see it.
#[derive(Clone, Debug, PartialEq)]
pub struct PublicBoard {
    pub number: u32,
    pub online: bool,
    pub identity: BoardIdentity,
    pub picture: Option<Picture>,
    /// The game in progress (or the last one), moves as published.
    pub game: Option<GameRecord>,
    /// Games a later game start closed, oldest first.
    pub finished: Vec<GameRecord>,
    pub clock: Option<ClockState>,
}

/// A board as arbiters see it: the public view plus what is open for them.
#[derive(Clone, Debug, PartialEq)]
pub struct ArbiterBoard {
    pub public: PublicBoard,
    pub port: Option<String>,
    /// The board's family ("DGT", "Certabo", …), once a port follows it.
    pub family: Option<String>,
    /// Notices not yet resolved: alerts until the tracker or an arbiter resolves
    /// them (acknowledged ones stay), "offline" until the board is back.
    pub open: Vec<ArbiterEvent>,
    /// Sequence numbers of the open notices an arbiter acknowledged.
    pub acknowledged: Vec<u64>,
}

impl ArbiterBoard {
    /// The lifecycle state of open notice `seq`.
    pub fn state_of(&self, seq: u64) -> NoticeState {
        if self.acknowledged.contains(&seq) {
            NoticeState::Acknowledged
        } else {
            NoticeState::Raised
        }
    }
}

#[derive(Debug)]
struct BoardSlot {
    number: u32,
    port: Option<String>,
    family: Option<String>,
    online: bool,
    identity: BoardIdentity,
    picture: Option<Picture>,
    recorder: GameRecorder,
    finished: Vec<GameRecord>,
    clock: Option<ClockState>,
    open: Vec<ArbiterEvent>,
    acknowledged: Vec<u64>,
    /// Every arbiter event of the board, oldest first (bounded by [`TIMELINE_LEN`]).
    timeline: std::collections::VecDeque<ArbiterEvent>,
    /// Time of the latest tracker event: arbiters' actions taken from the HTTP
    /// side are placed there on the board's time line.
    last_t: Millis,
    /// The round this board plays when it differs from the hub's
    /// ([`Hub::set_board_round`]); cleared by [`Hub::set_round`].
    round: Option<u32>,
}

impl BoardSlot {
    fn new(number: u32, date: Option<String>) -> BoardSlot {
        BoardSlot {
            number,
            port: None,
            family: None,
            online: false,
            identity: BoardIdentity::default(),
            picture: None,
            recorder: GameRecorder::new(GameInfo {
                board: Some(number),
                date,
                ..GameInfo::default()
            }),
            finished: Vec::new(),
            clock: None,
            open: Vec::new(),
            acknowledged: Vec::new(),
            timeline: std::collections::VecDeque::new(),
            last_t: 0,
            round: None,
        }
    }

    fn remember(&mut self, e: &ArbiterEvent) {
        if self.timeline.len() == TIMELINE_LEN {
            self.timeline.pop_front();
        }
        self.timeline.push_back(e.clone());
    }

    /// Drops open notices matching `gone`, and their acknowledgements.
    fn close(&mut self, gone: impl Fn(&ArbiterEvent) -> bool) {
        let seqs: Vec<u64> = self
            .open
            .iter()
            .filter(|e| gone(e))
            .map(|e| e.seq)
            .collect();
        self.open.retain(|e| !seqs.contains(&e.seq));
        self.acknowledged.retain(|s| !seqs.contains(s));
    }

    /// Makes games that begin from now on (and the one not begun yet) games of `round`.
    fn enter_round(&mut self, round: Option<u32>) {
        self.recorder.set_round(round);
    }

    fn public(&self) -> PublicBoard {
        PublicBoard {
            number: self.number,
            online: self.online,
            identity: self.identity.clone(),
            picture: self.picture.clone(),
            game: self
                .recorder
                .current()
                .cloned()
                .or_else(|| self.finished.last().cloned()),
            finished: self.finished.clone(),
            clock: self.clock,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    boards: BTreeMap<u32, BoardSlot>,
    public_seq: u64,
    arbiter_seq: u64,
    /// PGN date of games of boards registered from now on.
    date: Option<String>,
    /// The round being played; `None` until [`Hub::set_round`] or
    /// [`Hub::adopt_round`] says (games started meanwhile carry no round and
    /// count as the current round's).
    round: Option<u32>,
    /// Whether the round was set by [`Hub::set_round`] (not only adopted from
    /// the configuration).
    round_set: bool,
}

impl State {
    /// The round board `number` plays now, if known.
    fn board_round(&self, number: u32) -> Option<u32> {
        self.boards
            .get(&number)
            .and_then(|b| b.round)
            .or(self.round)
    }

    fn slot(&mut self, number: u32) -> &mut BoardSlot {
        let date = &self.date;
        let round = self.round;
        self.boards.entry(number).or_insert_with(|| {
            let mut slot = BoardSlot::new(number, date.clone());
            slot.enter_round(round);
            slot
        })
    }
}

/// The shared state. Cheap to read; every write takes one short lock.
#[derive(Debug)]
pub struct Hub {
    state: Mutex<State>,
    metrics: Metrics,
    /// Events are shared, not copied, per subscriber.
    public_tx: broadcast::Sender<Arc<PublicEvent>>,
    arbiter_tx: broadcast::Sender<ArbiterEvent>,
    /// The hub's round, for hubs that follow this one (the public delay).
    round_tx: watch::Sender<Option<u32>>,
    /// Counts changes of what boards show outside the event stream: pictures,
    /// online state, identity (the EBAPI sends one message per change).
    boards_tx: watch::Sender<u64>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        Hub {
            state: Mutex::new(State::default()),
            metrics: Metrics::new(),
            public_tx: broadcast::channel(CHANNEL_CAPACITY).0,
            arbiter_tx: broadcast::channel(CHANNEL_CAPACITY).0,
            round_tx: watch::channel(None).0,
            boards_tx: watch::channel(0).0,
        }
    }

    /// Told after every change of a board's picture, online state or identity
    /// (changes that are not events): readers compare what they sent.
    pub fn watch_boards(&self) -> watch::Receiver<u64> {
        self.boards_tx.subscribe()
    }

    fn boards_changed(&self) {
        self.boards_tx.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// What board `number` says about itself (see [`BoardIdentity`]).
    pub fn set_identity(&self, number: u32, identity: BoardIdentity) {
        let mut s = self.lock();
        let slot = s.slot(number);
        if slot.identity != identity {
            slot.identity = identity;
            drop(s);
            self.boards_changed();
        }
    }

    /// The daemon's metrics (`GET /metrics`).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data, still consistent
        // per field; keep serving rather than poison every reader.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Public events from now on.
    pub fn subscribe_public(&self) -> broadcast::Receiver<Arc<PublicEvent>> {
        self.public_tx.subscribe()
    }

    /// Arbiter events from now on.
    pub fn subscribe_arbiter(&self) -> broadcast::Receiver<ArbiterEvent> {
        self.arbiter_tx.subscribe()
    }

    /// The PGN `Date` (`2026.11.22`) of the games of boards first heard of from now on.
    pub fn set_date(&self, date: Option<String>) {
        self.lock().date = date;
    }

    /// The round being played, once [`Hub::adopt_round`] or [`Hub::set_round`]
    /// said; `None` before (publishers then take the configured current round,
    /// and every game recorded counts as that round's).
    pub fn round(&self) -> Option<u32> {
        self.lock().round
    }

    /// The round board `number` plays now: its own ([`Hub::set_board_round`]) or the hub's.
    pub fn board_round(&self, number: u32) -> Option<u32> {
        self.lock().board_round(number)
    }

    /// The hub's round as it changes (`None` until first set), for a hub that
    /// mirrors this one.
    pub fn watch_round(&self) -> watch::Receiver<Option<u32>> {
        self.round_tx.subscribe()
    }

    /// Takes the configured current round unless [`Hub::set_round`] already
    /// chose one: games recorded so far (rebuilt from the journal before the
    /// feeds started) are games of that round. The HTTP router calls this.
    pub fn adopt_round(&self, round: u32) {
        let mut s = self.lock();
        if s.round_set || s.round == Some(round) {
            return;
        }
        s.round = Some(round);
        for b in s.boards.values_mut() {
            b.recorder.restamp_all(Some(round));
            for g in &mut b.finished {
                g.round = Some(round);
            }
            b.enter_round(b.round.or(Some(round)));
        }
        self.round_tx.send_replace(Some(round));
    }

    /// The tournament moves on to `round` (a configuration reload, an arbiter's
    /// decision). Games already begun keep their round and stay listed under it;
    /// every board's next game (and one set up but not begun) is a game of
    /// `round`. Clears the boards' own rounds ([`Hub::set_board_round`]).
    /// Rounds count from 1; 0 is taken as 1. The hub must know the round it
    /// leaves ([`Hub::adopt_round`], which the HTTP router and the daemon call
    /// with the configured round); without it, games so far are taken as round 1's.
    pub fn set_round(&self, round: u32) {
        let round = round.max(1);
        let mut s = self.lock();
        // Games that began before any round was known belong to the round that
        // was current then: stamp them so the change does not carry them along.
        let before = s.round.unwrap_or(1);
        s.round = Some(round);
        s.round_set = true;
        for b in s.boards.values_mut() {
            b.recorder.stamp_unset(before);
            for g in &mut b.finished {
                g.round.get_or_insert(before);
            }
            b.round = None;
            b.enter_round(Some(round));
        }
        self.round_tx.send_replace(Some(round));
    }

    /// Board `number` alone plays `round` from now on (a postponed game, an
    /// arbiter assigning it a pairing of another round); its game begun before
    /// keeps its round. [`Hub::set_round`] puts every board back on the hub's round.
    pub fn set_board_round(&self, number: u32, round: u32) {
        let round = round.max(1);
        let mut s = self.lock();
        let before = s.board_round(number).unwrap_or(1);
        let slot = s.slot(number);
        slot.recorder.stamp_unset(before);
        for g in &mut slot.finished {
            g.round.get_or_insert(before);
        }
        slot.round = Some(round);
        slot.enter_round(Some(round));
    }

    /// Makes board `number` known (listed even before it says anything).
    pub fn register(&self, number: u32, port: &str) {
        let mut s = self.lock();
        s.slot(number).port = Some(port.to_owned());
    }

    /// Says which family board `number` is ("DGT", "Certabo", …), for the
    /// arbiters' dashboard.
    pub fn set_family(&self, number: u32, family: &str) {
        let mut s = self.lock();
        s.slot(number).family = Some(family.to_owned());
    }

    /// Takes one tracker event. With `publish = false` (rebuilding from the
    /// journal) the state changes but nothing is broadcast and no sequence
    /// number is used: subscribers saw those events in the previous run.
    /// Returns the event's sequence number in its stream, when published.
    pub fn apply(&self, stamped: &Stamped, publish: bool) -> Option<u64> {
        self.apply_inner(stamped, None, publish)
    }

    /// [`Hub::apply`] for a hub that mirrors another (the public delay): the
    /// event belongs to a game of `round`, whatever this hub's round is now.
    pub fn apply_in_round(&self, stamped: &Stamped, round: u32, publish: bool) -> Option<u64> {
        self.apply_inner(stamped, Some(round), publish)
    }

    fn apply_inner(&self, stamped: &Stamped, round: Option<u32>, publish: bool) -> Option<u64> {
        if publish {
            self.metrics.count_event(&stamped.event);
        }
        let mut s = self.lock();
        let slot = s.slot(stamped.board);
        slot.last_t = slot.last_t.max(stamped.t_ms);
        match &stamped.event {
            TrackerEvent::Game(event) => {
                let hub_round = s.round;
                let slot = s.slot(stamped.board);
                if let Some(r) = round {
                    if slot.round.or(hub_round) != Some(r) {
                        slot.round = Some(r);
                        slot.enter_round(Some(r));
                    }
                }
                if let GameEvent::Clock {
                    white_ms,
                    black_ms,
                    running,
                } = event
                {
                    slot.clock = Some(ClockState {
                        white_ms: *white_ms,
                        black_ms: *black_ms,
                        running: *running,
                    });
                }
                // A record error means the tracker and the recorder disagree;
                // the event still goes out, the record keeps what it could.
                let _ = slot.recorder.push(event);
                let done = slot.recorder.take_finished();
                slot.finished.extend(done);
                let game_round = slot
                    .recorder
                    .current()
                    .and_then(|g| g.round)
                    .or(slot.round)
                    .or(hub_round)
                    .unwrap_or(1);
                if publish {
                    s.public_seq += 1;
                    let e = PublicEvent {
                        seq: s.public_seq,
                        board: stamped.board,
                        round: game_round,
                        t_ms: stamped.t_ms,
                        event: event.clone(),
                        json: JsonCache::default(),
                    };
                    let _ = self.public_tx.send(Arc::new(e));
                    return Some(s.public_seq);
                }
                None
            }
            TrackerEvent::Alert(alert) => {
                s.arbiter_seq += 1;
                let e = ArbiterEvent {
                    seq: s.arbiter_seq,
                    board: stamped.board,
                    t_ms: stamped.t_ms,
                    notice: ArbiterNotice::Alert(alert.clone()),
                };
                let slot = s.slot(stamped.board);
                slot.open.push(e.clone());
                slot.remember(&e);
                if publish {
                    let _ = self.arbiter_tx.send(e);
                }
                Some(s.arbiter_seq)
            }
            TrackerEvent::Resolved(resolved) => {
                s.slot(stamped.board)
                    .close(|e| matches!(&e.notice, ArbiterNotice::Alert(a) if a.id == resolved.id));
                s.arbiter_seq += 1;
                let e = ArbiterEvent {
                    seq: s.arbiter_seq,
                    board: stamped.board,
                    t_ms: stamped.t_ms,
                    notice: ArbiterNotice::AlertResolved(resolved.clone()),
                };
                s.slot(stamped.board).remember(&e);
                if publish {
                    let _ = self.arbiter_tx.send(e);
                }
                Some(s.arbiter_seq)
            }
        }
    }

    /// Board `number`'s games of `round`: finished ones, then the one in progress
    /// (a game that carries no round counts as round `current`'s).
    pub fn round_games(&self, number: u32, round: u32, current: u32) -> Vec<GameRecord> {
        let s = self.lock();
        let Some(b) = s.boards.get(&number) else {
            return Vec::new();
        };
        b.finished
            .iter()
            .chain(b.recorder.current().filter(|g| g.is_started()))
            .filter(|g| game_round(g, current) == round)
            .cloned()
            .collect()
    }

    /// Board `number`'s game set up for `round` with no move yet, if any (a
    /// game that carries no round counts as round `current`'s).
    pub fn waiting_game(&self, number: u32, round: u32, current: u32) -> Option<GameRecord> {
        let s = self.lock();
        s.boards
            .get(&number)?
            .recorder
            .current()
            .filter(|g| !g.is_started() && game_round(g, current) == round)
            .cloned()
    }

    /// Whether board `number` answers and the port it is registered on;
    /// `None` for a board the hub has never heard of.
    pub fn board_presence(&self, number: u32) -> Option<(bool, Option<String>)> {
        let s = self.lock();
        s.boards.get(&number).map(|b| (b.online, b.port.clone()))
    }

    /// The round of board `number`'s current game (or of its next one, not
    /// begun), as its public events carry it.
    pub fn game_round(&self, number: u32) -> u32 {
        let s = self.lock();
        let hub_round = s.round;
        s.boards
            .get(&number)
            .and_then(|b| b.recorder.current().and_then(|g| g.round).or(b.round))
            .or(hub_round)
            .unwrap_or(1)
    }

    /// Every board number known, ascending.
    pub fn board_numbers(&self) -> Vec<u32> {
        self.lock().boards.keys().copied().collect()
    }

    /// Boards with a game of `round`, begun or set up (ascending; a game that
    /// carries no round counts as round `current`'s).
    pub fn boards_in_round(&self, round: u32, current: u32) -> Vec<u32> {
        let s = self.lock();
        s.boards
            .values()
            .filter(|b| {
                b.finished
                    .iter()
                    .chain(b.recorder.current())
                    .any(|g| game_round(g, current) == round)
            })
            .map(|b| b.number)
            .collect()
    }

    /// Board `number`'s games: finished ones, then the one in progress.
    pub fn games(&self, number: u32) -> Vec<GameRecord> {
        let s = self.lock();
        let Some(b) = s.boards.get(&number) else {
            return Vec::new();
        };
        let mut games = b.finished.clone();
        games.extend(b.recorder.current().filter(|g| g.is_started()).cloned());
        games
    }

    /// The board's latest sensor picture.
    pub fn set_picture(&self, number: u32, picture: &Picture) {
        let mut s = self.lock();
        let slot = s.slot(number);
        if slot.picture.as_ref() != Some(picture) {
            slot.picture = Some(picture.clone());
            drop(s);
            self.boards_changed();
        }
    }

    /// The board went offline or came back; an offline notice stays open until
    /// the board is back. Returns the notice sent, if the state changed.
    pub fn set_online(
        &self,
        number: u32,
        online: bool,
        t_ms: Millis,
        reason: &str,
    ) -> Option<ArbiterEvent> {
        let mut s = self.lock();
        let slot = s.slot(number);
        if slot.online == online {
            return None;
        }
        slot.online = online;
        let port = slot.port.clone().unwrap_or_default();
        let notice = if online {
            slot.close(|e| matches!(e.notice, ArbiterNotice::BoardOffline { .. }));
            ArbiterNotice::BoardOnline { port }
        } else {
            ArbiterNotice::BoardOffline {
                port,
                reason: reason.to_owned(),
            }
        };
        s.arbiter_seq += 1;
        let e = ArbiterEvent {
            seq: s.arbiter_seq,
            board: number,
            t_ms,
            notice,
        };
        let slot = s.slot(number);
        if !online {
            slot.open.push(e.clone());
        }
        slot.remember(&e);
        let _ = self.arbiter_tx.send(e.clone());
        drop(s);
        self.boards_changed();
        Some(e)
    }

    /// An arbiter saw notice `seq` of board `number`: it stays open, marked
    /// acknowledged, until it is resolved. Returns whether it was open (an
    /// already acknowledged notice counts: acknowledging twice is harmless).
    pub fn acknowledge(&self, number: u32, seq: u64) -> bool {
        let mut s = self.lock();
        let Some(slot) = s.boards.get_mut(&number) else {
            return false;
        };
        if !slot.open.iter().any(|e| e.seq == seq) {
            return false;
        }
        if !slot.acknowledged.contains(&seq) {
            slot.acknowledged.push(seq);
        }
        true
    }

    /// The tracker's id of the alert that is open notice `seq` of board
    /// `number`; `None` when that notice is not open or is not an alert.
    pub fn open_alert_id(&self, number: u32, seq: u64) -> Option<u32> {
        let s = self.lock();
        s.boards
            .get(&number)?
            .open
            .iter()
            .find(|e| e.seq == seq)
            .and_then(|e| match &e.notice {
                ArbiterNotice::Alert(a) => Some(a.id),
                _ => None,
            })
    }

    /// The notice number of board `number`'s open alert `id` (the tracker's
    /// id, which a rebuild from the journal gives again); `None` once resolved.
    pub fn open_alert_seq(&self, number: u32, id: u32) -> Option<u64> {
        let s = self.lock();
        s.boards
            .get(&number)?
            .open
            .iter()
            .find(|e| matches!(&e.notice, ArbiterNotice::Alert(a) if a.id == id))
            .map(|e| e.seq)
    }

    /// An arbiter closes open notice `seq` of board `number` (`reason` says how it
    /// was dealt with). An alert closed this way goes out as
    /// [`ArbiterNotice::AlertResolved`], like one the tracker saw corrected; it
    /// is stamped with the board's latest event time. Returns the event sent,
    /// `None` when no such notice is open.
    pub fn resolve(&self, number: u32, seq: u64, reason: &str) -> Option<ArbiterEvent> {
        let mut s = self.lock();
        let slot = s.boards.get_mut(&number)?;
        let t_ms = slot.last_t;
        let closed = slot.open.iter().find(|e| e.seq == seq)?.clone();
        slot.close(|e| e.seq == seq);
        let notice = match closed.notice {
            ArbiterNotice::Alert(a) => ArbiterNotice::AlertResolved(AlertResolved {
                id: a.id,
                kind: a.kind,
                reason: reason.to_owned(),
            }),
            other => ArbiterNotice::Operator {
                action: "resolve".into(),
                detail: format!("{}: {reason}", notice_name(&other)),
            },
        };
        Some(self.push_arbiter(&mut s, number, t_ms, notice))
    }

    /// Logs an operator action on board `number` in the arbiter stream and the
    /// board's timeline, at `t_ms` on the board's time line (the daemon knows
    /// it), or else at the board's latest event time.
    pub fn operator_notice(
        &self,
        number: u32,
        t_ms: Option<Millis>,
        action: &str,
        detail: &str,
    ) -> ArbiterEvent {
        let mut s = self.lock();
        let t_ms = t_ms.unwrap_or_else(|| s.slot(number).last_t);
        let notice = ArbiterNotice::Operator {
            action: action.to_owned(),
            detail: detail.to_owned(),
        };
        self.push_arbiter(&mut s, number, t_ms, notice)
    }

    fn push_arbiter(
        &self,
        s: &mut State,
        number: u32,
        t_ms: Millis,
        notice: ArbiterNotice,
    ) -> ArbiterEvent {
        s.arbiter_seq += 1;
        let e = ArbiterEvent {
            seq: s.arbiter_seq,
            board: number,
            t_ms,
            notice,
        };
        s.slot(number).remember(&e);
        let _ = self.arbiter_tx.send(e.clone());
        e
    }

    /// Board `number`'s arbiter events, oldest first (the dashboard's timeline).
    pub fn timeline(&self, number: u32) -> Vec<ArbiterEvent> {
        self.lock()
            .boards
            .get(&number)
            .map_or_else(Vec::new, |b| b.timeline.iter().cloned().collect())
    }

    /// Every board, public view.
    pub fn public_snapshot(&self) -> Vec<PublicBoard> {
        self.lock().boards.values().map(BoardSlot::public).collect()
    }

    /// One board, public view.
    pub fn public_board(&self, number: u32) -> Option<PublicBoard> {
        self.lock().boards.get(&number).map(BoardSlot::public)
    }

    /// Every board, arbiter view.
    pub fn arbiter_snapshot(&self) -> Vec<ArbiterBoard> {
        self.lock()
            .boards
            .values()
            .map(|b| ArbiterBoard {
                public: b.public(),
                port: b.port.clone(),
                family: b.family.clone(),
                open: b.open.clone(),
                acknowledged: b.acknowledged.clone(),
            })
            .collect()
    }

    /// Verified plies of the board's current game (records hold verified moves only).
    pub fn verified_plies(&self, number: u32) -> usize {
        self.lock()
            .boards
            .get(&number)
            .and_then(|b| b.recorder.current())
            .map_or(0, |g| g.moves.len())
    }

    /// Board count, online boards, games in progress: for the service status line.
    pub fn counts(&self) -> (usize, usize, usize) {
        let s = self.lock();
        let online = s.boards.values().filter(|b| b.online).count();
        let games = s
            .boards
            .values()
            .filter(|b| {
                b.recorder
                    .current()
                    .is_some_and(|g| !g.moves.is_empty() && g.result.is_none())
            })
            .count();
        (s.boards.len(), online, games)
    }
}

fn notice_name(n: &ArbiterNotice) -> &'static str {
    match n {
        ArbiterNotice::Alert(_) => "alert",
        ArbiterNotice::AlertResolved(_) => "alert resolved",
        ArbiterNotice::BoardOffline { .. } => "board offline",
        ArbiterNotice::BoardOnline { .. } => "board online",
        ArbiterNotice::Operator { .. } => "operator action",
    }
}

/// The round `game` was played in; `current` for a game that carries none.
pub fn game_round(game: &GameRecord, current: u32) -> u32 {
    game.round.unwrap_or(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::AlertKind;
    use crate::events::{MoveEvent, Severity};

    fn stamped(board: u32, event: TrackerEvent) -> Stamped {
        Stamped {
            board,
            ply: 0,
            t_ms: 10,
            event,
        }
    }

    fn start() -> TrackerEvent {
        TrackerEvent::Game(GameEvent::GameStart {
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            chess960: Some(518),
            rotated: false,
        })
    }

    fn e4(verified: bool) -> TrackerEvent {
        TrackerEvent::Game(GameEvent::Move(MoveEvent {
            ply: 1,
            san: "e4".into(),
            uci: "e2e4".into(),
            fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
            verified,
            clock_ms: None,
            emt_ms: None,
            reconstructed: false,
            corrected: false,
        }))
    }

    #[test]
    fn public_stream_is_numbered_and_alerts_stay_apart() {
        let hub = Hub::new();
        let mut public = hub.subscribe_public();
        let mut arbiter = hub.subscribe_arbiter();
        hub.apply(&stamped(1, start()), true);
        hub.apply(&stamped(1, e4(true)), true);
        let alert = Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::DisplacedPieces,
            article: "7.4".into(),
            severity: Severity::Warning,
            squares: vec!["e4".into()],
            message: "a piece stands between squares".into(),
        };
        hub.apply(&stamped(1, TrackerEvent::Alert(alert.clone())), true);
        assert_eq!(public.try_recv().unwrap().seq, 1);
        assert_eq!(public.try_recv().unwrap().seq, 2);
        assert!(public.try_recv().is_err(), "the alert is not public");
        let a = arbiter.try_recv().unwrap();
        assert_eq!(a.notice, ArbiterNotice::Alert(alert));
        assert_eq!(hub.verified_plies(1), 1);
        let arb = hub.arbiter_snapshot();
        assert_eq!(arb[0].open.len(), 1);
        assert!(hub.acknowledge(1, a.seq));
        let arb = hub.arbiter_snapshot();
        assert_eq!(arb[0].open.len(), 1, "acknowledged alerts stay open");
        assert_eq!(arb[0].state_of(a.seq), NoticeState::Acknowledged);
        let closed = hub.resolve(1, a.seq, "checked on the board").unwrap();
        assert_eq!(closed.t_ms, 10, "at the board's latest event");
        assert!(
            matches!(closed.notice, ArbiterNotice::AlertResolved(ref r) if r.id == 0 && r.reason == "checked on the board")
        );
        assert_eq!(arbiter.try_recv().unwrap(), closed);
        assert!(hub.arbiter_snapshot()[0].open.is_empty());
        assert!(hub.arbiter_snapshot()[0].acknowledged.is_empty());
        assert!(hub.resolve(1, a.seq, "again").is_none(), "resolved once");
        assert!(!hub.acknowledge(1, a.seq));
        assert_eq!(hub.timeline(1).len(), 2, "raised, resolved");
    }

    #[test]
    fn the_tracker_resolving_an_acknowledged_alert_closes_it() {
        let hub = Hub::new();
        let alert = Alert {
            id: 3,
            penalty: None,
            kind: AlertKind::DisplacedPieces,
            article: "7.4".into(),
            severity: Severity::Warning,
            squares: vec!["e4".into()],
            message: "restore e4".into(),
        };
        let seq = hub
            .apply(&stamped(1, TrackerEvent::Alert(alert)), true)
            .unwrap();
        assert!(hub.acknowledge(1, seq));
        hub.apply(
            &stamped(
                1,
                TrackerEvent::Resolved(AlertResolved {
                    id: 3,
                    kind: AlertKind::DisplacedPieces,
                    reason: "restored".into(),
                }),
            ),
            true,
        );
        let b = &hub.arbiter_snapshot()[0];
        assert!(b.open.is_empty() && b.acknowledged.is_empty());
    }

    #[test]
    fn rebuilding_changes_state_without_broadcasting() {
        let hub = Hub::new();
        let mut public = hub.subscribe_public();
        hub.apply(&stamped(2, start()), false);
        hub.apply(&stamped(2, e4(true)), false);
        assert!(public.try_recv().is_err());
        assert_eq!(hub.verified_plies(2), 1);
        hub.apply(&stamped(2, e4(true)), true);
        assert_eq!(public.try_recv().unwrap().seq, 1, "numbering starts at 1");
    }

    #[test]
    fn offline_stays_open_until_the_board_is_back() {
        let hub = Hub::new();
        hub.register(3, "/dev/x");
        assert!(hub.set_online(3, true, 0, "").is_some());
        assert!(
            hub.set_online(3, true, 1, "").is_none(),
            "no change, no notice"
        );
        hub.set_online(3, false, 2, "end of file").unwrap();
        assert_eq!(hub.arbiter_snapshot()[0].open.len(), 1);
        assert!(!hub.public_board(3).unwrap().online);
        hub.set_online(3, true, 3, "").unwrap();
        assert!(hub.arbiter_snapshot()[0].open.is_empty());
    }

    #[test]
    fn games_keep_the_round_they_began_in() {
        let hub = Hub::new();
        hub.apply(&stamped(1, start()), false);
        hub.apply(&stamped(1, e4(true)), false);
        hub.apply(&stamped(2, start()), false);
        hub.adopt_round(3);
        assert_eq!(hub.round(), Some(3));
        // Board 2 has only set its pieces up: its game is the next round's.
        hub.set_round(4);
        hub.adopt_round(9);
        assert_eq!(
            hub.round(),
            Some(4),
            "an explicit round wins over the configured one"
        );
        assert_eq!(hub.round_games(1, 3, 4).len(), 1);
        assert!(hub.round_games(1, 4, 4).is_empty());
        assert!(hub.waiting_game(2, 4, 4).is_some());
        assert_eq!(hub.boards_in_round(3, 4), vec![1]);
        assert_eq!(hub.boards_in_round(4, 4), vec![2]);
        // A board put on another round alone; its next game follows.
        hub.set_board_round(1, 2);
        let mut public = hub.subscribe_public();
        hub.apply(&stamped(1, start()), true);
        assert_eq!(public.try_recv().unwrap().round, 2);
        assert_eq!(hub.boards_in_round(2, 4), vec![1]);
        hub.set_round(5);
        assert_eq!(hub.board_round(1), Some(5));
    }
}
