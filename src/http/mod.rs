//! The HTTP side: public feeds (PGN, LiveChess Cloud JSON, SSE, WebSocket) and
//! the arbiter dashboard with its operator API.
//!
//! Article 12.6 is kept by construction: public handlers read only the public
//! hub API (`public_board`, `games`, `subscribe_public`); only handlers behind
//! the token check call `arbiter_snapshot` or `acknowledge`. Public feeds read
//! the delayed hub when a broadcast delay is configured; arbiters read the live one.

mod arbiter;
mod metrics;
mod public;
pub mod server;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderValue};
use axum::Router;
use tokio::net::TcpListener;

use crate::daemon::hub::Hub;
use crate::operator::Desk;
use crate::publish::delay::delayed;
use crate::publish::lichess::LichessStatus;
use crate::publish::Tournament;
use stream::History;

/// Largest request body accepted (operator actions are a few bytes of JSON).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// What the HTTP side needs besides the hub.
#[derive(Clone, Debug, Default)]
pub struct FeedConfig {
    /// Arbiter token. Empty disables the arbiter side (every request gets 401):
    /// an empty token must never mean "no protection".
    pub arbiter_token: String,
    /// Event data, pairings and the public delay (`delay_secs`).
    pub tournament: Arc<Tournament>,
    /// Folder for the PGN file sink (`round-N/games.pgn`, `game-B.pgn`), fed
    /// from the same (delayed) public view as the HTTP feeds; `None`: no files.
    pub pgn_dir: Option<std::path::PathBuf>,
}

#[derive(Clone)]
pub(crate) struct AppState {
    /// Always live: arbiters.
    pub live: Arc<Hub>,
    /// What the public sees: `live`, or its delayed copy.
    pub public: Arc<Hub>,
    pub history: Arc<History>,
    /// The tournament as configured and amended by arbiters (pairings,
    /// colour swaps, inactive boards), and the way to the daemon.
    pub desk: Arc<Desk>,
    pub token: Arc<str>,
    /// The Lichess push client, when `[lichess]` configures one.
    pub lichess: Option<Arc<LichessStatus>>,
}

impl AppState {
    /// The tournament data now (a cheap snapshot: arbiters may amend it).
    pub fn tournament(&self) -> Arc<Tournament> {
        self.desk.tournament()
    }
}

/// The router, for embedding or tests. Spawns the delay and history tasks, so
/// it must run inside a Tokio runtime.
pub fn router(hub: Arc<Hub>, cfg: FeedConfig) -> Router {
    let desk = Arc::new(Desk::new((*cfg.tournament).clone()));
    router_with_desk(hub, cfg, desk)
}

/// [`router`] with the arbiters' desk: amended pairings kept in a file and board
/// commands sent to the daemon (what `run` and the demo serve). The desk's
/// tournament replaces `cfg.tournament`.
pub fn router_with_desk(hub: Arc<Hub>, cfg: FeedConfig, desk: Arc<Desk>) -> Router {
    let public = public_view(&hub, &cfg.tournament);
    router_with_public(hub, public, cfg, desk, None)
}

/// The hub public feeds read: `hub` itself, or its copy delayed by the
/// tournament's `delay_secs`. Games recorded so far (rebuilt from the journal)
/// are the configured round's, unless the round was already changed on the
/// hub. Spawns the delay task, so it must run inside a Tokio runtime.
pub fn public_view(hub: &Arc<Hub>, tournament: &Tournament) -> Arc<Hub> {
    let delay = Duration::from_secs(u64::from(tournament.config.delay_secs));
    hub.adopt_round(tournament.config.current_round);
    delayed(Arc::clone(hub), delay)
}

/// [`router_with_desk`] over a public view made by [`public_view`], for a
/// server that shares it with another publisher (the EBAPI).
/// `lichess` is the push client's state, shown on the dashboard.
pub fn router_with_public(
    hub: Arc<Hub>,
    public: Arc<Hub>,
    cfg: FeedConfig,
    desk: Arc<Desk>,
    lichess: Option<Arc<LichessStatus>>,
) -> Router {
    let history = History::follow(&public);
    if let Some(dir) = cfg.pgn_dir {
        let d = Arc::clone(&desk);
        tokio::spawn(crate::publish::sink::run_following(
            dir,
            Arc::clone(&public),
            move || d.tournament(),
            desk.subscribe(),
        ));
    }
    let state = AppState {
        live: hub,
        public,
        history,
        desk,
        token: Arc::from(cfg.arbiter_token.as_str()),
        lichess,
    };
    public::routes()
        .merge(arbiter::routes(state.clone()))
        .merge(metrics::routes(state.clone()))
        .with_state(state)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::map_response(security_headers))
}

async fn security_headers(mut res: axum::response::Response) -> axum::response::Response {
    let h = res.headers_mut();
    // Browsers must not guess a type: a PGN or JSON body with a player named
    // `<script>` must never be run as HTML.
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

/// Serves the feeds and the dashboard on `listener` until the task is
/// dropped, within the default [`server::ConnectionLimits`].
pub async fn serve(listener: TcpListener, hub: Arc<Hub>, cfg: FeedConfig) -> std::io::Result<()> {
    server::serve(
        listener,
        router(hub, cfg),
        server::ConnectionLimits::default(),
    )
    .await
}

/// [`serve`] with the arbiters' desk (see [`router_with_desk`]), within
/// `limits`: the connection cap and timeouts of [`server`], which keep the
/// descriptors the journal and the board ports need out of clients' reach.
pub async fn serve_with_desk(
    listener: TcpListener,
    hub: Arc<Hub>,
    cfg: FeedConfig,
    desk: Arc<Desk>,
    limits: server::ConnectionLimits,
) -> std::io::Result<()> {
    server::serve(listener, router_with_desk(hub, cfg, desk), limits).await
}

/// JSON text safe to embed anywhere: `<`, `>` and `&` become `\u003c`… (the
/// same string to any JSON parser), so no data can close a tag.
fn safe_json_text(v: &serde_json::Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A public feed's JSON: any site may read it (`Access-Control-Allow-Origin: *`),
/// caches revalidate (`no-cache`).
pub(crate) fn json_body(v: &serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        safe_json_text(v),
    )
        .into_response()
}

/// An arbiter API answer: what the public may not see (Article 12.6), so no
/// cache keeps it (`no-store`) and no other site's page may read it (no CORS
/// header: only the dashboard, served from the same origin, reads it).
pub(crate) fn arbiter_json(v: &serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        safe_json_text(v),
    )
        .into_response()
}
