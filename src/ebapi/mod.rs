//! A DGT LiveChess-compatible local API ("EBAPI"): REST and WebSocket under
//! `/api/v1.0` on one listener (port 1982 by default), so the programs that
//! talk to LiveChess — lichess.org's and chess.com's e-board pages, the PyPI
//! `livechess` operator tool, livechess-go — work with these boards unchanged
//! and get verified moves. Shapes, key sets and behaviours are in
//! `docs/ebapi.md`.
//!
//! Public-feed level (Article 12.6): everything here is built from the hub's
//! public side — [`crate::daemon::hub::PublicBoard`] and the public event channel —
//! of the public view (delayed when a broadcast delay is configured); the
//! live hub is read only for what boards say about themselves (serial number,
//! device, online), which the delay does not hide. No alert type is in reach.

mod model;
mod rest;
pub mod ws;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use crate::daemon::hub::Hub;
use crate::operator::Desk;
use crate::publish::{feeds, Tournament};
pub use model::{clock_json, fen_key, serial_of, BoardNow, EboardState, Feed, GameNow};

/// Browser origins of the known EBAPI clients (lichess.org's DGT page,
/// chess.com's e-board page); loopback pages are allowed too.
pub const KNOWN_ORIGINS: [&str; 4] = [
    "https://lichess.org",
    "https://www.chess.com",
    "https://chess.com",
    "https://www.lichess.org",
];

/// What the EBAPI reads.
#[derive(Clone, Debug)]
pub struct Ebapi {
    /// What boards say about themselves and whether they answer.
    live: Arc<Hub>,
    /// Games, pictures and clocks, as the public sees them.
    public: Arc<Hub>,
    /// The tournament as the arbiters amended it (pairings, inactive boards).
    desk: Arc<Desk>,
    /// Browser origins allowed besides [`KNOWN_ORIGINS`] and loopback.
    origins: Arc<[String]>,
    /// Per board, the last game replayed and what it was replayed from: every
    /// connection asks after each event, one replay serves them all.
    games: Arc<Mutex<GameCache>>,
}

/// Board number → (hash of the record replayed, the replay).
type GameCache = HashMap<u32, (u64, Arc<GameNow>)>;

impl Ebapi {
    pub fn new(live: Arc<Hub>, public: Arc<Hub>, desk: Arc<Desk>, origins: &[String]) -> Ebapi {
        Ebapi {
            live,
            public,
            desk,
            origins: origins.into(),
            games: Arc::default(),
        }
    }

    fn tournament(&self) -> Arc<Tournament> {
        self.desk.tournament()
    }

    /// Every e-board, in listing order (see [`model::sort_for_listing`]): the
    /// boards the daemon follows and the boards paired in the current round.
    pub fn boards(&self) -> Vec<BoardNow> {
        let t = self.tournament();
        let mut numbers = self.live.board_numbers();
        numbers.extend(self.public.board_numbers());
        numbers.extend(t.boards(feeds::current_round(&self.public, &t)));
        numbers.sort_unstable();
        numbers.dedup();
        let mut boards: Vec<BoardNow> = numbers.into_iter().map(|n| self.board(n, &t)).collect();
        model::sort_for_listing(&mut boards);
        boards
    }

    fn board(&self, number: u32, t: &Tournament) -> BoardNow {
        BoardNow::new(
            number,
            self.live.public_board(number).as_ref(),
            self.public.public_board(number).as_ref(),
            t,
            |record, game_number| {
                let mut h = DefaultHasher::new();
                (game_number, &record.start_fen, record.chess960).hash(&mut h);
                record.result.map(|r| r.as_pgn()).hash(&mut h);
                for m in &record.moves {
                    (&m.uci, &m.san).hash(&mut h);
                }
                let key = h.finish();
                let mut cache = self.games.lock().unwrap_or_else(|e| e.into_inner());
                match cache.get(&number) {
                    Some((k, g)) if *k == key => Arc::clone(g),
                    _ => {
                        let g = Arc::new(GameNow::from_record(record, game_number));
                        cache.insert(number, (key, Arc::clone(&g)));
                        g
                    }
                }
            },
        )
    }

    /// Board `number` now.
    pub fn board_now(&self, number: u32) -> BoardNow {
        self.board(number, &self.tournament())
    }

    /// The board listed under `serial`.
    pub fn find_serial(&self, serial: &str) -> Option<BoardNow> {
        self.boards().into_iter().find(|b| b.serial == serial)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        KNOWN_ORIGINS.contains(&origin)
            || self.origins.iter().any(|o| o == origin)
            || is_loopback_origin(origin)
    }
}

/// `http(s)://localhost…`, `http(s)://127.x.y.z…`, `http(s)://[::1]…`: a page
/// served on this machine.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The router: REST under `/api/v1.0/…`, the WebSocket on `/api/v1.0`.
pub fn router(api: Ebapi) -> Router {
    Router::new()
        .route("/api/v1.0", get(ws::upgrade))
        .route("/api/v1.0/", get(ws::upgrade))
        .merge(rest::routes())
        .fallback(|| async {
            rest::error(
                StatusCode::NOT_FOUND,
                "no such resource; this server answers /api/v1.0/eboards, /tournaments, \
                 /tournament/{uuid}, /round/{uuid}/{index}, /game/{uuid} and the WebSocket \
                 on /api/v1.0",
            )
        })
        .layer(middleware::from_fn_with_state(api.clone(), origins))
        .with_state(api)
}

/// Refuses browsers from other sites (a page anywhere on the web could
/// otherwise read the boards through a player's machine), lets the known
/// clients' pages in, and answers their preflights (Chrome asks before a
/// public page reaches a private address).
async fn origins(
    axum::extract::State(api): axum::extract::State<Ebapi>,
    req: Request,
    next: Next,
) -> Response {
    let Some(origin) = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        // Not a browser (curl, the PyPI client, livechess-go): nothing to check.
        return next.run(req).await;
    };
    if !api.origin_allowed(&origin) {
        return rest::error(
            StatusCode::FORBIDDEN,
            &format!(
                "pages from {origin} may not use this board server; add the origin to \
                 [ebapi] origins in the configuration to allow it"
            ),
        );
    }
    let preflight = req.method() == Method::OPTIONS;
    let mut res = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(req).await
    };
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    if preflight {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("content-type"),
        );
        h.insert(
            "access-control-allow-private-network",
            HeaderValue::from_static("true"),
        );
    }
    res
}

/// Connections the EBAPI takes at once, at most (its clients are a few
/// operator tools and home browsers; the public feeds are on the HTTP side).
pub const MAX_CONNECTIONS: usize = 256;

/// Serves the EBAPI on `listener` until the task is dropped, with the HTTP
/// side's default connection limits.
pub async fn serve(listener: TcpListener, api: Ebapi) -> std::io::Result<()> {
    let limits = crate::http::server::ConnectionLimits {
        max_connections: MAX_CONNECTIONS,
        ..Default::default()
    };
    serve_within(listener, api, limits).await
}

/// [`serve`] within `limits` (cap, request and idle timeouts: see
/// [`crate::http::server`]). WebSocket sessions ping every
/// [`ws::PING_EVERY`] so a quiet board does not count as an idle connection.
pub async fn serve_within(
    listener: TcpListener,
    api: Ebapi,
    limits: crate::http::server::ConnectionLimits,
) -> std::io::Result<()> {
    crate::http::server::serve(listener, router(api), limits).await
}

/// Milliseconds since the Unix epoch (the `time` of every message).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_pages_are_recognised() {
        for o in [
            "http://localhost:8080",
            "http://127.0.0.1",
            "https://127.0.0.2:9",
            "http://[::1]:3000",
            "http://LOCALHOST",
        ] {
            assert!(is_loopback_origin(o), "{o}");
        }
        for o in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://128.0.0.1",
            "null",
            "file://",
        ] {
            assert!(!is_loopback_origin(o), "{o}");
        }
    }
}
