//! Public, read-only feeds. Handlers here use `state.public` only.

use std::convert::Infallible;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use super::stream::{subscribe, Resume};
use super::{json_body, AppState};
use crate::publish::feeds;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/games.pgn", get(games_pgn))
        .route("/round/{round}/game/{file}", get(game_pgn))
        .route("/round/{round}/games.pgn", get(round_games_pgn))
        .route("/tournament.json", get(tournament_json))
        .route("/{dir}/{file}", get(lcc_round_file))
        .route("/snapshot.json", get(snapshot))
        .route("/events", get(sse))
        .route("/ws", get(ws))
}

fn pgn(body: String) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                "application/x-chess-pgn; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-cache"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        body,
    )
        .into_response()
}

fn not_found(what: String) -> Response {
    (StatusCode::NOT_FOUND, what).into_response()
}

async fn games_pgn(State(s): State<AppState>) -> Response {
    pgn(feeds::games_pgn(&s.public, &s.tournament()))
}

/// `/round/{r}/games.pgn`: every game of round `r`, by board number (the URL
/// a Lichess broadcast round polls; the order never changes as games end).
async fn round_games_pgn(State(s): State<AppState>, Path(round): Path<String>) -> Response {
    let t = s.tournament();
    let current = feeds::current_round(&s.public, &t);
    match round.parse::<u32>() {
        Ok(r) if (1..=t.config.rounds.max(current)).contains(&r) => {
            pgn(feeds::round_pgn(&s.public, &t, r))
        }
        _ => not_found(format!(
            "no round {round:?}: use /round/<round>/games.pgn with a round from 1 to {}\n",
            t.config.rounds.max(current)
        )),
    }
}

/// `/round/{r}/game/{b}.pgn`.
async fn game_pgn(
    State(s): State<AppState>,
    Path((round, file)): Path<(String, String)>,
) -> Response {
    let board = file
        .strip_suffix(".pgn")
        .and_then(|b| b.parse::<u32>().ok());
    let (Ok(round), Some(board)) = (round.parse::<u32>(), board) else {
        return not_found(
            "no such game: use /round/<round>/game/<board>.pgn with numbers\n".into(),
        );
    };
    match feeds::board_game_in(&s.public, &s.tournament(), round, board) {
        Some(g) => pgn(g.to_pgn()),
        None => not_found(format!("board {board} has no game in round {round}\n")),
    }
}

async fn tournament_json(State(s): State<AppState>) -> Response {
    json_body(&feeds::lcc_tournament(&s.public, &s.tournament()))
}

/// `/round-{r}/index.json` and `/round-{r}/game-{b}.json` (`?poll` ignored).
async fn lcc_round_file(
    State(s): State<AppState>,
    Path((dir, file)): Path<(String, String)>,
) -> Response {
    let Some(round) = dir
        .strip_prefix("round-")
        .and_then(|r| r.parse::<u32>().ok())
    else {
        return not_found("not found\n".into());
    };
    if file == "index.json" {
        return match feeds::lcc_round(&s.public, &s.tournament(), round) {
            Some(v) => json_body(&v),
            None => not_found(format!("round {round} is not known\n")),
        };
    }
    let Some(board) = file
        .strip_prefix("game-")
        .and_then(|f| f.strip_suffix(".json"))
        .and_then(|b| b.parse::<u32>().ok())
    else {
        return not_found("not found\n".into());
    };
    match feeds::lcc_game(&s.public, &s.tournament(), round, board) {
        Some(v) => json_body(&v),
        None => not_found(format!("board {board} has no game in round {round}\n")),
    }
}

/// Everything a stream client needs to start over: the boards and the sequence
/// number to resume from.
async fn snapshot(State(s): State<AppState>) -> Response {
    // Read the sequence number first: events after it may already be in the
    // boards below, and replaying them is harmless (moves are keyed by ply).
    let seq = s.history.last_seq();
    let round = feeds::current_round(&s.public, &s.tournament());
    let boards: Vec<_> = feeds::round_boards_in(&s.public, &s.tournament(), round)
        .into_iter()
        .filter_map(|b| {
            let g = feeds::board_game_in(&s.public, &s.tournament(), round, b)?;
            let clock = s.public.public_board(b).and_then(|p| p.clock);
            Some(json!({
                "board": b,
                "white": g.info.white,
                "black": g.info.black,
                "start_fen": g.start_fen,
                "fen": feeds::current_fen(&g),
                "moves": g.moves.iter().map(|m| &m.san).collect::<Vec<_>>(),
                "result": g.result_token(),
                "clock": clock,
            }))
        })
        .collect();
    json_body(&json!({ "seq": seq, "round": round, "boards": boards }))
}

#[derive(Deserialize)]
struct ResumeQuery {
    last_event_id: Option<String>,
}

/// Where the client asks to resume: the `Last-Event-ID` header (what a
/// browser's `EventSource` sends), else `?last_event_id=`. A value that is
/// not a sequence number is answered the same way from either: the stream
/// starts with a `reset`, so the client reloads the snapshot.
fn resume_point(headers: &HeaderMap, q: &ResumeQuery) -> Resume {
    match headers.get("last-event-id") {
        Some(v) => v.to_str().map_or(Resume::Unreadable, Resume::parse),
        None => q
            .last_event_id
            .as_deref()
            .map_or(Resume::Now, Resume::parse),
    }
}

/// Whether board `board`'s events go out on the public streams: not while an
/// arbiter has marked it inactive (it is not part of the round).
fn streamed(s: &AppState) -> impl Fn(u32) -> bool + Send + 'static {
    let desk = std::sync::Arc::clone(&s.desk);
    move |board| !desk.is_inactive(board)
}

/// How often an idle stream gets a comment line, so proxies and browsers keep
/// the connection open.
const SSE_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// `/events`. The body is the subscriber's stream of ready-made SSE messages
/// (see [`super::stream::Item::sse_message`]): at a thousand subscribers, building each
/// message once instead of once per subscriber is what keeps delivery fast.
async fn sse(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ResumeQuery>,
) -> Response {
    let from = resume_point(&headers, &q);
    let events = Box::pin(subscribe(&s.public, s.history.clone(), from, streamed(&s)));
    let mut keep_alive =
        tokio::time::interval_at(tokio::time::Instant::now() + SSE_KEEP_ALIVE, SSE_KEEP_ALIVE);
    keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let body =
        futures_util::stream::unfold((events, keep_alive), |(mut events, mut ka)| async move {
            let bytes = tokio::select! {
                item = events.next() => match item {
                    Some(item) => {
                        ka.reset();
                        item.sse_message()
                    }
                    None => return None,
                },
                _ = ka.tick() => axum::body::Bytes::from_static(b":\n\n"),
            };
            Some((Ok::<_, Infallible>(bytes), (events, ka)))
        });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

async fn ws(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ResumeQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let from = resume_point(&headers, &q);
    upgrade
        .max_message_size(super::MAX_BODY_BYTES)
        .on_upgrade(move |socket| ws_session(socket, s, from))
}

/// How often an idle WebSocket is pinged.
const WS_PING: std::time::Duration = std::time::Duration::from_secs(15);
/// A WebSocket client that answered nothing (not even a pong) for this long
/// is gone: its session ends and its connection is closed.
const WS_SILENCE: std::time::Duration = std::time::Duration::from_secs(45);

async fn ws_session(mut socket: WebSocket, s: AppState, from: Resume) {
    let visible = streamed(&s);
    let mut events = Box::pin(subscribe(&s.public, s.history.clone(), from, visible));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + WS_PING, WS_PING);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard = std::time::Instant::now();
    loop {
        tokio::select! {
            item = events.next() => {
                let Some(item) = item else { return };
                let text = item.text().into_owned();
                if socket.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                // The feed is read-only: client messages are ignored, but a
                // close or an error ends the session.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => heard = std::time::Instant::now(),
            },
            _ = ping.tick() => {
                // Clients answer pings by themselves (browsers do): silence
                // means the client is gone without closing.
                if heard.elapsed() >= WS_SILENCE {
                    return;
                }
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
        }
    }
}
