//! The EBAPI's WebSocket (`/api/v1.0`): calls `eboards`, `subscribe` (feed
//! `eboardevent`), `unsubscribe` and `call` with the methods `setup`, `flip`
//! and `unsubscribe`. Ids are the client's, echoed as JSON numbers; feeds
//! belong to their connection (clients reuse the same ids on every
//! connection). Each connection follows the public event channel and the
//! hub's board changes, and sends each feed only what changed.

use std::collections::BTreeMap;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use super::{now_ms, Ebapi, Feed};

/// Largest message a client may send (calls are a few hundred bytes).
const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// A quiet session (a board with no clock running) is pinged this often, well
/// inside the HTTP side's idle timeout.
pub const PING_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

pub(super) async fn upgrade(State(api): State<Ebapi>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| session(socket, api))
}

/// One connection's subscriptions, by the client's feed id.
#[derive(Default)]
struct Connection {
    feeds: BTreeMap<i64, Feed>,
}

fn envelope(response: &str, id: Value, param: Value) -> Value {
    json!({ "response": response, "id": id, "param": param, "time": now_ms() })
}

fn error_reply(id: Value, message: String) -> Value {
    envelope("error", id, json!({ "message": message }))
}

/// The client's id as a JSON number (`"1"` is read as 1); `Null` when absent.
fn id_of(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::Number(n.clone()),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_or(Value::Null, |n| Value::Number(n.into())),
        _ => Value::Null,
    }
}

fn feed_id(v: Option<&Value>) -> Option<i64> {
    match id_of(v?) {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

impl Connection {
    /// The replies to one client message, in order.
    fn handle(&mut self, api: &Ebapi, text: &str) -> Vec<Value> {
        let request: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                return vec![error_reply(
                    Value::Null,
                    format!(
                        "the message is not JSON ({e}); send {{\"id\":1,\"call\":\"eboards\"}}"
                    ),
                )]
            }
        };
        let id = request.get("id").map_or(Value::Null, id_of);
        let param = request.get("param").unwrap_or(&Value::Null);
        let call = request.get("call").and_then(Value::as_str).unwrap_or("");
        match call {
            "eboards" => {
                let now = now_ms();
                let list: Vec<Value> = api.boards().iter().map(|b| b.eboard_json(now)).collect();
                vec![envelope("call", id, Value::Array(list))]
            }
            "subscribe" => self.subscribe(api, id, param),
            "unsubscribe" => self.unsubscribe(id, param),
            "call" => self.method(api, id, param),
            other => vec![error_reply(
                id,
                format!(
                    "unknown call {other:?}; this server answers eboards, subscribe, unsubscribe \
                     and call (methods setup, flip, unsubscribe)"
                ),
            )],
        }
    }

    fn subscribe(&mut self, api: &Ebapi, id: Value, param: &Value) -> Vec<Value> {
        let feed = param.get("feed").and_then(Value::as_str).unwrap_or("");
        if feed != "eboardevent" {
            return vec![error_reply(
                id,
                format!("unknown feed {feed:?}; subscribe to \"eboardevent\""),
            )];
        }
        let Some(fid) = feed_id(param.get("id")) else {
            return vec![error_reply(
                id,
                "subscribe needs param.id, the number the feed's messages will carry".into(),
            )];
        };
        let Some(serial) = param
            .get("param")
            .and_then(|p| p.get("serialnr"))
            .and_then(Value::as_str)
        else {
            return vec![error_reply(
                id,
                "subscribe needs param.param.serialnr, a serial number from the eboards call"
                    .into(),
            )];
        };
        let Some(now) = api.find_serial(serial) else {
            return vec![error_reply(
                id,
                format!("no e-board with serial number {serial:?}; the eboards call lists them"),
            )];
        };
        let mut feed = Feed::new(&now);
        let snapshot = feed.snapshot(&now, now_ms());
        self.feeds.insert(fid, feed);
        vec![
            envelope("call", id, Value::Null),
            envelope("feed", fid.into(), snapshot),
        ]
    }

    fn unsubscribe(&mut self, id: Value, param: &Value) -> Vec<Value> {
        match feed_id(param.get("id")) {
            Some(fid) if self.feeds.remove(&fid).is_some() => {
                vec![envelope("call", id, Value::Null)]
            }
            _ => vec![error_reply(
                id,
                "no such feed on this connection; param.id must be the id given to subscribe"
                    .into(),
            )],
        }
    }

    fn method(&mut self, api: &Ebapi, id: Value, param: &Value) -> Vec<Value> {
        let method = param.get("method").and_then(Value::as_str).unwrap_or("");
        if method == "unsubscribe" {
            return self.unsubscribe(id, param);
        }
        let Some(feed) =
            feed_id(param.get("id")).and_then(|f| self.feeds.get_mut(&f).map(|x| (f, x)))
        else {
            return vec![error_reply(
                id,
                "no such feed on this connection; param.id must be the id given to subscribe"
                    .into(),
            )];
        };
        let (fid, feed) = feed;
        let args = param.get("param").unwrap_or(&Value::Null);
        let now = api.board_now(feed.board);
        let t = now_ms();
        let fen = args.get("fen").and_then(Value::as_str);
        let flip = args.get("flip").and_then(Value::as_bool);
        let messages = match (method, fen, flip) {
            ("setup", Some(fen), _) => match feed.setup(fen, &now, t) {
                Ok(m) => m,
                Err(e) => return vec![error_reply(id, e)],
            },
            // livechess-go's flip call says "setup" with a flip argument.
            ("flip", _, Some(flip)) | ("setup", None, Some(flip)) => feed.flip(flip, &now, t),
            ("setup", None, None) => {
                return vec![error_reply(
                    id,
                    "setup needs param.param.fen, the position moves are reported from".into(),
                )]
            }
            ("flip", _, None) => {
                return vec![error_reply(
                    id,
                    "flip needs param.param.flip, true or false".into(),
                )]
            }
            (other, _, _) => {
                return vec![error_reply(
                    id,
                    format!("unknown method {other:?}; use setup, flip or unsubscribe"),
                )]
            }
        };
        let mut out = vec![envelope("call", id, Value::Null)];
        out.extend(
            messages
                .into_iter()
                .map(|m| envelope("feed", fid.into(), m)),
        );
        out
    }

    /// What changed for the feeds of `board` (every board when `None`).
    fn updates(&mut self, api: &Ebapi, board: Option<u32>) -> Vec<Value> {
        let mut out = Vec::new();
        let mut seen: BTreeMap<u32, super::BoardNow> = BTreeMap::new();
        for (fid, feed) in self.feeds.iter_mut() {
            if board.is_some_and(|b| b != feed.board) {
                continue;
            }
            let now = seen
                .entry(feed.board)
                .or_insert_with(|| api.board_now(feed.board));
            let t = now_ms();
            out.extend(
                feed.update(now, t)
                    .into_iter()
                    .map(|m| envelope("feed", (*fid).into(), m)),
            );
        }
        out
    }
}

async fn send_all(socket: &mut WebSocket, messages: Vec<Value>) -> bool {
    for m in messages {
        if socket
            .send(Message::Text(m.to_string().into()))
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}

async fn session(mut socket: WebSocket, api: Ebapi) {
    let mut conn = Connection::default();
    let mut events = api.public.subscribe_public();
    let mut live_boards = api.live.watch_boards();
    let mut public_boards = api.public.watch_boards();
    let mut desk = api.desk.subscribe();
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let replies = tokio::select! {
            _ = ping.tick() => {
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    return;
                }
                continue;
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => conn.handle(&api, &text),
                Some(Ok(Message::Binary(_))) => vec![error_reply(
                    Value::Null,
                    "binary messages are not understood; send JSON text".into(),
                )],
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => continue,
            },
            event = events.recv() => match event {
                Ok(e) if conn.feeds.values().any(|f| f.board == e.board) => {
                    conn.updates(&api, Some(e.board))
                }
                Ok(_) => continue,
                // Feeds compare states, so missed events cost nothing but a look.
                Err(RecvError::Lagged(_)) => conn.updates(&api, None),
                Err(RecvError::Closed) => return,
            },
            changed = live_boards.changed() => match changed {
                Ok(()) => conn.updates(&api, None),
                Err(_) => return,
            },
            changed = public_boards.changed() => match changed {
                Ok(()) => conn.updates(&api, None),
                Err(_) => return,
            },
            changed = desk.changed() => match changed {
                Ok(()) => conn.updates(&api, None),
                Err(_) => return,
            },
        };
        if !send_all(&mut socket, replies).await {
            return;
        }
    }
}
