//! The public event stream shared by SSE (`/events`) and the WebSocket (`/ws`):
//! a bounded history for `Last-Event-ID` resumption and a per-subscriber stream
//! that turns falling behind into an explicit `reset`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::stream::{self, Stream, StreamExt};
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::daemon::hub::{Hub, PublicEvent};

/// Events kept for resumption. A client that was away longer reloads the snapshot.
pub const HISTORY_CAP: usize = 4096;

/// The last [`HISTORY_CAP`] public events, in sequence order.
#[derive(Debug, Default)]
pub struct History {
    events: Mutex<VecDeque<Arc<PublicEvent>>>,
}

/// Why a subscriber must reload the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetReason {
    /// The `Last-Event-ID` is older than the history kept, or unknown
    /// (numbering restarts with the daemon).
    TooOld,
    /// The subscriber read too slowly and events were dropped for it.
    Lagged,
    /// The `Last-Event-ID` given is not a sequence number at all (a proxy or
    /// a client garbled it): where the client stands is unknown.
    Unreadable,
}

impl ResetReason {
    fn as_str(self) -> &'static str {
        match self {
            ResetReason::TooOld => "last_event_id_too_old",
            ResetReason::Lagged => "lagged",
            ResetReason::Unreadable => "last_event_id_unreadable",
        }
    }
}

/// One item of a subscriber's stream.
#[derive(Clone, Debug)]
pub enum Item {
    Event(Arc<PublicEvent>),
    Reset(ResetReason),
}

impl Item {
    /// The documented JSON text (docs/feeds.md). An event's text is made once
    /// and shared by every subscriber that sends it.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Item::Event(ev) => ev
                .json
                .json
                .get_or_init(|| event_json(ev).to_string())
                .into(),
            Item::Reset(_) => self.to_json().to_string().into(),
        }
    }

    /// The whole SSE message (`id:`/`event:`, `data:`, blank line). An event's
    /// message is built once and shared: sending it to a subscriber copies no
    /// byte (JSON text never holds a line break, so one `data:` line is right).
    pub fn sse_message(&self) -> axum::body::Bytes {
        match self {
            Item::Event(ev) => ev
                .json
                .sse
                .get_or_init(|| format!("id: {}\ndata: {}\n\n", ev.seq, self.text()).into())
                .clone(),
            Item::Reset(_) => format!("event: reset\ndata: {}\n\n", self.text()).into(),
        }
    }

    /// The documented JSON form (docs/feeds.md).
    pub fn to_json(&self) -> Value {
        match self {
            Item::Event(ev) => event_json(ev),
            Item::Reset(r) => serde_json::json!({
                "type": "reset",
                "reason": r.as_str(),
                "snapshot": "/snapshot.json",
            }),
        }
    }
}

/// `{"seq":…,"board":…,"round":…,"t_ms":…,"type":"move",…}`: the event's fields flattened.
pub fn event_json(ev: &PublicEvent) -> Value {
    let mut v = serde_json::to_value(&ev.event).expect("game events serialise");
    if let Value::Object(map) = &mut v {
        map.insert("seq".into(), ev.seq.into());
        map.insert("board".into(), ev.board.into());
        map.insert("round".into(), ev.round.into());
        map.insert("t_ms".into(), ev.t_ms.into());
    }
    v
}

impl History {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<PublicEvent>>> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `hub`'s public events from now on (a background task).
    pub fn follow(hub: &Hub) -> Arc<History> {
        let history = Arc::new(History::default());
        let mut rx = hub.subscribe_public();
        let h = Arc::clone(&history);
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => h.push(ev),
                    // Those events are lost for resumption; a client asking for
                    // them is told to reset (its gap check sees the hole).
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
                if Arc::strong_count(&h) == 1 {
                    return;
                }
            }
        });
        history
    }

    fn push(&self, ev: Arc<PublicEvent>) {
        let mut q = self.lock();
        if q.len() == HISTORY_CAP {
            q.pop_front();
        }
        q.push_back(ev);
    }

    /// Sequence number of the newest event kept (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.lock().back().map_or(0, |e| e.seq)
    }

    /// Events after `after` up to and including `upto`, if the history holds
    /// every one of them.
    fn range(&self, after: u64, upto: u64) -> Option<Vec<Arc<PublicEvent>>> {
        if after > upto {
            // An id from the future: the daemon restarted and numbering began
            // again, so the client's position means nothing now.
            return None;
        }
        let q = self.lock();
        let got: Vec<Arc<PublicEvent>> = q
            .iter()
            .filter(|e| e.seq > after && e.seq <= upto)
            .cloned()
            .collect();
        let complete = got.len() as u64 == upto.saturating_sub(after)
            && got.first().is_none_or(|e| e.seq == after + 1);
        complete.then_some(got)
    }
}

struct SubState {
    rx: broadcast::Receiver<Arc<PublicEvent>>,
    history: Arc<History>,
    backlog: VecDeque<Item>,
    /// Last sequence number delivered; `None` when the client has not said where it is.
    last: Option<u64>,
}

/// Where a subscriber asks to start (from `Last-Event-ID` or `?last_event_id=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// No position given: live events from now on.
    Now,
    /// Events after this sequence number.
    After(u64),
    /// A position was given but is not a sequence number: the stream starts
    /// with a `reset`, as for a position too old to resume from.
    Unreadable,
}

impl Resume {
    /// Reads a `Last-Event-ID` value: blank is no position.
    pub fn parse(text: &str) -> Resume {
        let text = text.trim();
        if text.is_empty() {
            return Resume::Now;
        }
        text.parse().map_or(Resume::Unreadable, Resume::After)
    }
}

/// The stream one subscriber reads: events after `from` (from the history),
/// then live events, with a `reset` whenever continuity is lost. Events of
/// boards for which `visible` says no (boards an arbiter marked inactive) are
/// left out; their sequence numbers are then skipped in the stream.
pub fn subscribe(
    hub: &Hub,
    history: Arc<History>,
    from: Resume,
    visible: impl Fn(u32) -> bool + Send + 'static,
) -> impl Stream<Item = Item> + Send + 'static {
    // Subscribe first: an event broadcast while the history is read is then
    // seen by the receiver, and duplicates are dropped by sequence number.
    let rx = hub.subscribe_public();
    let mut backlog = VecDeque::new();
    let last_event_id = match from {
        Resume::After(seq) => Some(seq),
        Resume::Now | Resume::Unreadable => None,
    };
    if from == Resume::Unreadable {
        backlog.push_back(Item::Reset(ResetReason::Unreadable));
    }
    let mut last = last_event_id;
    if let Some(after) = last_event_id {
        let upto = history.last_seq();
        match history.range(after, upto) {
            Some(events) => backlog.extend(events.into_iter().map(Item::Event)),
            None => {
                backlog.push_back(Item::Reset(ResetReason::TooOld));
                last = None;
            }
        }
        if let Some(Item::Event(e)) = backlog.back() {
            last = Some(e.seq);
        } else if last.is_some() {
            last = Some(upto.max(after));
        }
    }
    let state = SubState {
        rx,
        history,
        backlog,
        last,
    };
    let items = stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.backlog.pop_front() {
                return Some((item, s));
            }
            match s.rx.recv().await {
                Ok(ev) => {
                    let Some(last) = s.last else {
                        s.last = Some(ev.seq);
                        return Some((Item::Event(ev), s));
                    };
                    if ev.seq <= last {
                        continue;
                    }
                    if ev.seq > last + 1 {
                        // Events between were broadcast before we subscribed;
                        // the history has them unless it dropped them.
                        match s.history.range(last, ev.seq - 1) {
                            Some(gap) => s.backlog.extend(gap.into_iter().map(Item::Event)),
                            None => s.backlog.push_back(Item::Reset(ResetReason::TooOld)),
                        }
                    }
                    s.last = Some(ev.seq);
                    s.backlog.push_back(Item::Event(ev));
                }
                Err(RecvError::Lagged(_)) => {
                    s.last = None;
                    return Some((Item::Reset(ResetReason::Lagged), s));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    items.filter(move |item| {
        futures_util::future::ready(match item {
            Item::Event(ev) => visible(ev.board),
            Item::Reset(_) => true,
        })
    })
}
