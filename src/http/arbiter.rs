//! The arbiter dashboard and operator API. Every route here sits behind the
//! token check; this is the only module that may read alerts (Article 12.6).

use std::collections::HashMap;

use axum::extract::{Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::{json_body, AppState};
use crate::publish::feeds;

const PAGE: &str = include_str!("../../assets/arbiter/index.html");
const STYLE: &str = include_str!("../../assets/arbiter/style.css");
const SCRIPT: &str = include_str!("../../assets/arbiter/app.js");

/// Operator actions and whether this build offers them (the hub offers
/// acknowledging only; the others are listed so arbiters know what to expect).
const ACTIONS: [(&str, bool, &str); 4] = [
    ("acknowledge", true, "Mark an alert as dealt with."),
    (
        "set_result",
        false,
        "The hub has no operator result entry yet.",
    ),
    (
        "take_back",
        false,
        "Correct the position on the board instead.",
    ),
    (
        "set_pairing",
        false,
        "Edit [[pairing]] in the configuration and restart.",
    ),
];

pub(crate) fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/arbiter", get(page))
        .route("/arbiter/", get(page))
        .route("/arbiter/api/state", get(board_state))
        .route("/arbiter/api/ack", post(acknowledge))
        // Unknown paths under /arbiter/ are 401 without the token too, so a
        // prober learns nothing about which exist.
        .route("/arbiter/{*rest}", any(|| async { StatusCode::NOT_FOUND }))
        .route_layer(middleware::from_fn_with_state(state, require_token))
}

/// Equal-time comparison: the time taken does not tell how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn presented_token(req: &Request) -> Option<String> {
    if let Some(v) = req.headers().get(header::AUTHORIZATION) {
        let v = v.to_str().ok()?;
        let (scheme, token) = v.split_once(' ')?;
        // The scheme name is case-insensitive (RFC 9110 §11.1).
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_string());
    }
    let Query(q) = Query::<HashMap<String, String>>::try_from_uri(req.uri()).ok()?;
    q.get("token").cloned()
}

pub(crate) async fn require_token(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let given = presented_token(&req);
    let ok = !s.token.is_empty() && given.is_some_and(|g| same(g.as_bytes(), s.token.as_bytes()));
    if ok {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer realm=\"eboard-bridge arbiter\"")],
        "arbiter token required: send `Authorization: Bearer <token>` or open /arbiter/?token=<token> \
         (the token is set in the configuration; an empty token disables the arbiter side)\n",
    )
        .into_response()
}

async fn page() -> Response {
    let html = PAGE
        .replace("/*STYLE*/", STYLE)
        .replace("/*SCRIPT*/", SCRIPT);
    (
        [
            (header::CACHE_CONTROL, "no-store"),
            // Only the page's own inline code runs; no remote resource is loaded.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'",
            ),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(html),
    )
        .into_response()
}

/// Every board as arbiters see it, live (never delayed).
async fn board_state(State(s): State<AppState>) -> Response {
    let round = s.tournament.config.current_round;
    let boards: Vec<_> = s
        .live
        .arbiter_snapshot()
        .into_iter()
        .map(|b| {
            let n = b.public.number;
            let game = b
                .public
                .game
                .clone()
                .map(|g| feeds::with_tournament(g, &s.tournament, round, n));
            let pairing = s.tournament.pairing(round, n);
            json!({
                "board": n,
                "online": b.public.online,
                "port": b.port,
                "white": pairing.map(|p| &p.0.name),
                "black": pairing.map(|p| &p.1.name),
                "fen": game.as_ref().map(feeds::current_fen),
                "last_move": game.as_ref().and_then(|g| g.moves.last()).map(|m| json!({"ply": m.ply, "san": m.san})),
                "plies": game.as_ref().map_or(0, |g| g.moves.len()),
                "result": game.as_ref().map(|g| g.result_token()),
                "clock": b.public.clock,
                "open": b.open,
            })
        })
        .collect();
    let actions: Vec<_> = ACTIONS
        .iter()
        .map(|(name, available, help)| json!({"name": name, "available": available, "help": help}))
        .collect();
    json_body(&json!({
        "round": round,
        "delay_secs": s.tournament.config.delay_secs,
        "boards": boards,
        "actions": actions,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ack {
    board: u32,
    seq: u64,
}

async fn acknowledge(State(s): State<AppState>, Json(ack): Json<Ack>) -> Response {
    // Asking the hub about an unknown board would create it: answer here.
    if s.live.public_board(ack.board).is_none() {
        let mut r = json_body(&json!({
            "acknowledged": false,
            "error": format!("there is no board {}: check the board number", ack.board),
        }));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return r;
    }
    if s.live.acknowledge(ack.board, ack.seq) {
        json_body(&json!({"acknowledged": true, "board": ack.board, "seq": ack.seq}))
    } else {
        let mut r = json_body(&json!({
            "acknowledged": false,
            "error": format!("board {} has no open notice {}: it was already acknowledged or never existed; reload the dashboard", ack.board, ack.seq),
        }));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    }
}
