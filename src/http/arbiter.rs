//! The arbiter dashboard and operator API. Every route here sits behind the
//! token check; this is the only module that may read alerts (Article 12.6).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;

use super::{arbiter_json, AppState, MAX_BODY_BYTES};
use crate::operator::{
    check_fen, parse_clock_time, parse_result, AlertRuling, AssignedPairing, ClockSetting,
    OperatorError, RulingAction, TrackerCommand,
};
use crate::publish::{feeds, Player};

const PAGE: &str = include_str!("../../assets/arbiter/index.html");
const STYLE: &str = include_str!("../../assets/arbiter/style.css");
const SCRIPT: &str = include_str!("../../assets/arbiter/app.js");

/// The operator actions, for the dashboard's help and for API clients: name,
/// path and what it does.
const ACTIONS: [(&str, &str, &str); 10] = [
    ("acknowledge", "/arbiter/api/ack", "Mark an alert as seen; it stays listed until resolved."),
    ("resolve", "/arbiter/api/resolve", "Close an alert or notice the arbiter dealt with."),
    ("set_result", "/arbiter/api/result", "Enter the game's result (1-0, 0-1, 1/2-1/2) with a reason."),
    (
        "retraction",
        "/arbiter/api/retraction",
        "Accept the last retraction, or reject it: the withdrawn moves stand and the board must be put back.",
    ),
    ("set_pairing", "/arbiter/api/pairing", "Assign the players of a board for a round."),
    ("swap_colours", "/arbiter/api/swap", "Article 7.3: the players sat on the wrong colours; swap the names for this game."),
    ("set_start_fen", "/arbiter/api/start-fen", "Games on the board start from this position."),
    ("set_active", "/arbiter/api/active", "An inactive board raises no alerts and is left out of the round's feeds."),
    (
        "set_clock",
        "/arbiter/api/clock",
        "Set the clock's times for White and Black (H:MM:SS), e.g. to add the two minutes of a 7.5.5 penalty; answered once the clock has acked them.",
    ),
    ("board", "/arbiter/api/board/{n}", "A board's full record and timeline (GET)."),
];

pub(crate) fn routes(state: AppState) -> Router<AppState> {
    // Every API answer is JSON, a wrong method included (axum's own 405 has
    // no body).
    let wrong_method = || async {
        error(
            StatusCode::METHOD_NOT_ALLOWED,
            "this path does not take that method: actions are POSTed, the state and a board's \
             record are read with GET; see docs/arbiter-api.md",
        )
    };
    Router::new()
        .route("/arbiter", get(page).fallback(wrong_method))
        .route("/arbiter/", get(page).fallback(wrong_method))
        .route(
            "/arbiter/api/state",
            get(board_state).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/board/{board}",
            get(board_record).fallback(wrong_method),
        )
        .route("/arbiter/api/ack", post(acknowledge).fallback(wrong_method))
        .route("/arbiter/api/resolve", post(resolve).fallback(wrong_method))
        .route(
            "/arbiter/api/result",
            post(set_result).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/retraction",
            post(retraction).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/pairing",
            post(set_pairing).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/swap",
            post(swap_colours).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/start-fen",
            post(set_start_fen).fallback(wrong_method),
        )
        .route(
            "/arbiter/api/active",
            post(set_active).fallback(wrong_method),
        )
        .route("/arbiter/api/clock", post(set_clock).fallback(wrong_method))
        .route(
            "/arbiter/api/lichess",
            get(lichess_push).fallback(wrong_method),
        )
        // Unknown paths under /arbiter/ are 401 without the token too, so a
        // prober learns nothing about which exist.
        .route(
            "/arbiter/{*rest}",
            any(|| async {
                error(
                    StatusCode::NOT_FOUND,
                    "no such arbiter page or action; the actions are listed in \
                     /arbiter/api/state (`actions`) and docs/arbiter-api.md",
                )
            }),
        )
        .route_layer(middleware::from_fn_with_state(state, require_token))
}

/// Equal-time comparison of a presented token with the real one: the time
/// taken depends only on the length of what was presented, never on how much
/// of it was right nor on the real token's length (no early return when the
/// lengths differ).
fn same(given: &[u8], token: &[u8]) -> bool {
    if token.is_empty() {
        return false;
    }
    let mut diff = u8::from(given.len() != token.len());
    for (i, g) in given.iter().enumerate() {
        // Cycling through the token keeps one comparison per presented byte
        // whatever the lengths; a length mismatch is already in `diff`.
        diff |= g ^ token[i % token.len()];
    }
    std::hint::black_box(diff) == 0
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
        [
            (header::WWW_AUTHENTICATE, "Bearer realm=\"eboard-bridge arbiter\""),
            (header::CACHE_CONTROL, "no-store"),
        ],
        "arbiter token required: send `Authorization: Bearer <token>` or open /arbiter/?token=<token>; \
         the token is [http] arbiter_token, EBOARD_BRIDGE_ARBITER_TOKEN, or the file arbiter-token \
         in the data directory\n",
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

/// An API error: the status and a sentence for the arbiter.
pub(crate) fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    let mut r = arbiter_json(&json!({ "ok": false, "error": message.to_string() }));
    *r.status_mut() = status;
    r
}

fn operator_error(e: &OperatorError) -> Response {
    let status = match e {
        OperatorError::BadResult(_)
        | OperatorError::BadFen { .. }
        | OperatorError::BadField { .. }
        | OperatorError::UnknownBoard(_) => StatusCode::BAD_REQUEST,
        OperatorError::NoGame(_) | OperatorError::NoRetraction(_) => StatusCode::CONFLICT,
        OperatorError::NoDaemon | OperatorError::DaemonGone => StatusCode::SERVICE_UNAVAILABLE,
        OperatorError::ClockOnBus(_)
        | OperatorError::ClockSidesUnknown(_)
        | OperatorError::NoClockCommands { .. } => StatusCode::CONFLICT,
        // The board or its clock, beyond this server, did not do it.
        OperatorError::BoardOffline(_) | OperatorError::ClockFailed { .. } => {
            StatusCode::BAD_GATEWAY
        }
        OperatorError::Persist { .. }
        | OperatorError::LoadPairings { .. }
        | OperatorError::SaveRuling { .. }
        | OperatorError::Journal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, e)
}

/// A JSON body of type `T`, or a 400 that says what is wrong with it. Axum's
/// own `Json` rejection answers in plain text with serde's words; arbiters get
/// one JSON shape for every error instead. The size limit is the router's
/// (`MAX_BODY_BYTES`, 413 beyond it).
struct Body<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // A body that is not declared JSON is not read as JSON: a form or a
        // plain-text post (what a cross-site page can send without asking)
        // never becomes an action.
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" {
            let given = if content_type.is_empty() {
                "none".to_string()
            } else {
                format!("{content_type:?}")
            };
            return Err(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "the request body must be JSON, sent with `Content-Type: application/json` \
                     (the request said {given}); see docs/arbiter-api.md"
                ),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                error(
                    status,
                    format!(
                        "the request body is over {MAX_BODY_BYTES} bytes: operator actions are small JSON objects"
                    ),
                )
            } else {
                error(status, e.body_text())
            }
        })?;
        serde_json::from_slice(&bytes).map(Body).map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                format!("the request body is not a valid action: {e}; see docs/arbiter-api.md"),
            )
        })
    }
}

/// Who acted, for the timeline: the name the dashboard sends, or "arbiter".
fn who(by: &Option<String>) -> Result<String, OperatorError> {
    match by.as_deref().map(str::trim) {
        None | Some("") => Ok("arbiter".into()),
        Some(name) => {
            crate::names::check_name(name, 80).map_err(|problem| OperatorError::BadField {
                field: "by",
                problem,
            })
        }
    }
}

/// Free text from an arbiter (a note): see [`crate::names::check_text`].
fn clean_text(field: &'static str, text: &str, max: usize) -> Result<String, OperatorError> {
    crate::names::check_text(text, max)
        .map_err(|problem| OperatorError::BadField { field, problem })
}

/// Board numbers the request may name: boards the daemon follows or the
/// current round pairs. Checked before touching the hub, which would
/// otherwise create the board.
fn known_board(s: &AppState, board: u32) -> Result<(), OperatorError> {
    let t = s.tournament();
    if s.live.public_board(board).is_some()
        || t.pairing(feeds::current_round(&s.live, &t), board)
            .is_some()
    {
        Ok(())
    } else {
        Err(OperatorError::UnknownBoard(board))
    }
}

fn ok(v: serde_json::Value) -> Response {
    let mut v = v;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("ok".into(), true.into());
    }
    arbiter_json(&v)
}

fn player_json(p: &Player) -> serde_json::Value {
    json!({
        "name": p.name,
        "title": p.title,
        "rating": p.rating,
        "fide_id": p.fide_id,
        "federation": p.federation,
    })
}

/// Every board as arbiters see it, live (never delayed).
/// The Lichess push client's state: the last answer per game (`moves` or
/// `error`), failures and back-off; `{"enabled": false}` without one.
async fn lichess_push(State(s): State<AppState>) -> Response {
    match &s.lichess {
        Some(status) => {
            let mut v = serde_json::to_value(status.report()).unwrap_or_default();
            if let serde_json::Value::Object(m) = &mut v {
                m.insert("enabled".into(), true.into());
            }
            arbiter_json(&v)
        }
        None => arbiter_json(&json!({ "enabled": false })),
    }
}

async fn board_state(State(s): State<AppState>) -> Response {
    let t = s.tournament();
    let round = feeds::current_round(&s.live, &t);
    let swapped = s.desk.overrides().swapped;
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
                .map(|g| {
                    let r = crate::daemon::hub::game_round(&g, round);
                    feeds::with_tournament(g, &t, r, n)
                });
            let pairing = t.pairing(round, n);
            let open: Vec<_> = b
                .open
                .iter()
                .map(|e| {
                    let mut v = serde_json::to_value(e).unwrap_or_default();
                    if let serde_json::Value::Object(m) = &mut v {
                        m.insert("state".into(), json!(b.state_of(e.seq)));
                    }
                    v
                })
                .collect();
            json!({
                "board": n,
                "online": b.public.online,
                "active": !t.inactive.contains(&n),
                "port": b.port,
                "family": b.family,
                "white": pairing.map(|p| &p.0.name),
                "black": pairing.map(|p| &p.1.name),
                "players": pairing.map(|p| json!({"white": player_json(&p.0), "black": player_json(&p.1)})),
                "swapped": swapped.contains(&(round, n)),
                "fen": game.as_ref().map(feeds::current_fen),
                "last_move": game.as_ref().and_then(|g| g.moves.last()).map(|m| json!({"ply": m.ply, "san": m.san})),
                "plies": game.as_ref().map_or(0, |g| g.moves.len()),
                "result": game.as_ref().map(|g| g.result_token()),
                "clock": b.public.clock,
                "open": open,
            })
        })
        .collect();
    let actions: Vec<_> = ACTIONS
        .iter()
        .map(|(name, path, help)| json!({"name": name, "path": path, "help": help}))
        .collect();
    arbiter_json(&json!({
        "round": round,
        "delay_secs": t.config.delay_secs,
        "boards": boards,
        "actions": actions,
    }))
}

/// One board's full record (every game, PGN and moves) and its arbiter timeline.
async fn board_record(
    State(s): State<AppState>,
    board: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Response {
    // A path that is not even UTF-8 gets the same JSON answer as any bad number.
    let board = board.map_or_else(|_| "?".to_string(), |Path(b)| b);
    let Ok(board) = board.parse::<u32>() else {
        return operator_error(&OperatorError::BadField {
            field: "board",
            problem: format!(
                "{board:?} is not a board number: use /arbiter/api/board/<number>, e.g. /arbiter/api/board/1"
            ),
        });
    };
    if s.live.public_board(board).is_none() {
        return operator_error(&OperatorError::UnknownBoard(board));
    }
    let t = s.tournament();
    let round = feeds::current_round(&s.live, &t);
    let games: Vec<_> = s
        .live
        .games(board)
        .into_iter()
        .map(|g| {
            // Games of earlier rounds carry their own round's pairing.
            let r = crate::daemon::hub::game_round(&g, round);
            feeds::with_tournament(g, &t, r, board)
        })
        .map(|g| {
            json!({
                "pgn": g.to_pgn(),
                "start_fen": g.start_fen,
                "result": g.result_token(),
                "result_reason": g.result_reason,
                "moves": g.moves.iter().map(|m| json!({
                    "ply": m.ply, "san": m.san, "uci": m.uci,
                    "clock_ms": m.clock_ms, "emt_ms": m.emt_ms,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    arbiter_json(&json!({
        "board": board,
        "round": round,
        "games": games,
        "timeline": s.live.timeline(board),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoticeRef {
    board: u32,
    seq: u64,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

async fn acknowledge(State(s): State<AppState>, Body(req): Body<NoticeRef>) -> Response {
    if let Err(e) = known_board(&s, req.board) {
        return operator_error(&e);
    }
    let by = match who(&req.by) {
        Ok(by) => by,
        Err(e) => return operator_error(&e),
    };
    // An alert's ruling is saved first: one the arbiter saw accepted must
    // survive a restart. Other notices (offline, operator actions) are not
    // rebuilt from the journal, so there is nothing to keep for them.
    if let Some(alert) = s.live.open_alert_id(req.board, req.seq) {
        let ruling = AlertRuling {
            board: req.board,
            alert,
            action: RulingAction::Acknowledge,
            reason: None,
            by: by.clone(),
        };
        if let Err(e) = s.desk.record_ruling(&ruling) {
            return operator_error(&e);
        }
    }
    if s.live.acknowledge(req.board, req.seq) {
        s.live.operator_notice(
            req.board,
            None,
            "acknowledge",
            &format!("notice {} acknowledged by {by}", req.seq),
        );
        ok(
            json!({"acknowledged": true, "board": req.board, "seq": req.seq, "state": "acknowledged"}),
        )
    } else {
        error(
            StatusCode::NOT_FOUND,
            format!(
                "board {} has no open notice {}: it was already resolved or never existed; reload the dashboard",
                req.board, req.seq
            ),
        )
    }
}

async fn resolve(State(s): State<AppState>, Body(req): Body<NoticeRef>) -> Response {
    if let Err(e) = known_board(&s, req.board) {
        return operator_error(&e);
    }
    let (by, reason) = match (
        who(&req.by),
        clean_text("reason", req.reason.as_deref().unwrap_or(""), 300),
    ) {
        (Ok(by), Ok(reason)) => (by, reason),
        (Err(e), _) | (_, Err(e)) => return operator_error(&e),
    };
    let reason = if reason.is_empty() {
        format!("resolved by {by}")
    } else {
        format!("resolved by {by}: {reason}")
    };
    if let Some(alert) = s.live.open_alert_id(req.board, req.seq) {
        let ruling = AlertRuling {
            board: req.board,
            alert,
            action: RulingAction::Resolve,
            reason: Some(reason.clone()),
            by: by.clone(),
        };
        if let Err(e) = s.desk.record_ruling(&ruling) {
            return operator_error(&e);
        }
    }
    match s.live.resolve(req.board, req.seq, &reason) {
        Some(e) => ok(json!({"resolved": true, "board": req.board, "seq": req.seq, "notice": e})),
        None => error(
            StatusCode::NOT_FOUND,
            format!(
                "board {} has no open notice {}: it was already resolved or never existed; reload the dashboard",
                req.board, req.seq
            ),
        ),
    }
}

/// Sends a board command to the daemon and answers with its outcome.
async fn board_command(s: &AppState, board: u32, command: TrackerCommand, by: &str) -> Response {
    if let Err(e) = known_board(s, board) {
        return operator_error(&e);
    }
    let action = command.action();
    let detail = command.describe();
    match s.desk.send(board, by, command).await {
        Ok(()) => {
            tracing::info!(board, action, by, "operator: {detail}");
            ok(json!({"board": board, "action": action, "done": detail, "by": by}))
        }
        Err(e) => operator_error(&e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultReq {
    board: u32,
    result: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

async fn set_result(State(s): State<AppState>, Body(req): Body<ResultReq>) -> Response {
    let checked = (|| {
        let result = parse_result(&req.result)?;
        // The arbiter's notes: journaled with the command and shown on the
        // timeline; the public result says only that an arbiter entered it.
        let reason = clean_text("reason", req.reason.as_deref().unwrap_or(""), 200)?;
        let by = who(&req.by)?;
        Ok::<_, OperatorError>((result, reason, by))
    })();
    match checked {
        Ok((result, reason, by)) => {
            board_command(
                &s,
                req.board,
                TrackerCommand::SetResult { result, reason },
                &by,
            )
            .await
        }
        Err(e) => operator_error(&e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetractionReq {
    board: u32,
    /// `"accept"` or `"reject"`.
    decision: String,
    #[serde(default)]
    by: Option<String>,
}

async fn retraction(State(s): State<AppState>, Body(req): Body<RetractionReq>) -> Response {
    let command = match req.decision.as_str() {
        "accept" => TrackerCommand::AcceptRetraction,
        "reject" => TrackerCommand::RejectRetraction,
        other => {
            return operator_error(&OperatorError::BadField {
                field: "decision",
                problem: format!("{other:?} is neither \"accept\" nor \"reject\""),
            })
        }
    };
    let by = match who(&req.by) {
        Ok(by) => by,
        Err(e) => return operator_error(&e),
    };
    // The tracker resolves its takeback alert itself: the ruling is journaled,
    // so a restart resolves it again.
    board_command(&s, req.board, command, &by).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FenReq {
    board: u32,
    fen: String,
    #[serde(default)]
    by: Option<String>,
}

async fn set_start_fen(State(s): State<AppState>, Body(req): Body<FenReq>) -> Response {
    let checked = check_fen(&req.fen).and_then(|fen| Ok((fen, who(&req.by)?)));
    match checked {
        Ok((fen, by)) => {
            board_command(&s, req.board, TrackerCommand::SetStartFen { fen }, &by).await
        }
        Err(e) => operator_error(&e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActiveReq {
    board: u32,
    active: bool,
    #[serde(default)]
    by: Option<String>,
}

async fn set_active(State(s): State<AppState>, Body(req): Body<ActiveReq>) -> Response {
    let by = match who(&req.by) {
        Ok(by) => by,
        Err(e) => return operator_error(&e),
    };
    let r = board_command(
        &s,
        req.board,
        TrackerCommand::SetActive { active: req.active },
        &by,
    )
    .await;
    if !r.status().is_success() {
        return r;
    }
    // The tracker took it (and journaled it); the feeds follow the desk.
    match s.desk.change(|o| {
        if req.active {
            o.inactive.remove(&req.board);
        } else {
            o.inactive.insert(req.board);
        }
    }) {
        Ok(()) => r,
        Err(e) => operator_error(&e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairingReq {
    board: u32,
    #[serde(default)]
    round: Option<u32>,
    white: Player,
    black: Player,
    #[serde(default)]
    by: Option<String>,
}

/// Titles FIDE awards (the same list the tournament loader keeps).
const TITLES: [&str; 8] = ["GM", "IM", "FM", "CM", "WGM", "WIM", "WFM", "WCM"];

fn check_player(side: &'static str, p: &Player) -> Result<Player, OperatorError> {
    let bad = |problem: String| OperatorError::BadField {
        field: side,
        problem,
    };
    let name = crate::names::check_name(&p.name, 100).map_err(|problem| {
        bad(if p.name.trim().is_empty() {
            "the player needs a name (\"Surname, Given name\")".into()
        } else {
            format!("name {problem}")
        })
    })?;
    let title = match p.title.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => {
            let t = t.to_ascii_uppercase();
            if !TITLES.contains(&t.as_str()) {
                return Err(bad(format!(
                    "{t:?} is not a FIDE title (GM, IM, FM, CM, WGM, WIM, WFM, WCM)"
                )));
            }
            Some(t)
        }
    };
    if p.rating.is_some_and(|r| r > 3500) {
        return Err(bad("the rating is above 3500".into()));
    }
    if p.fide_id.is_some_and(|id| id == 0 || id > 999_999_999) {
        return Err(bad("a FIDE id is a number of up to 9 digits".into()));
    }
    let federation = match p.federation.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(f) if f.len() == 3 && f.chars().all(|c| c.is_ascii_alphabetic()) => {
            Some(f.to_ascii_uppercase())
        }
        Some(f) => return Err(bad(format!("{f:?} is not a three-letter federation code"))),
    };
    Ok(Player {
        name,
        title,
        rating: p.rating,
        fide_id: p.fide_id,
        federation,
    })
}

fn check_round(s: &AppState, round: Option<u32>) -> Result<u32, OperatorError> {
    let round = round.unwrap_or_else(|| feeds::current_round(&s.live, &s.tournament()));
    if !(1..=999).contains(&round) {
        return Err(OperatorError::BadField {
            field: "round",
            problem: format!("{round} is not a round number (1 to 999)"),
        });
    }
    Ok(round)
}

fn check_board_number(board: u32) -> Result<(), OperatorError> {
    if (1..=9999).contains(&board) {
        Ok(())
    } else {
        Err(OperatorError::BadField {
            field: "board",
            problem: format!("{board} is not a board number (1 to 9999)"),
        })
    }
}

async fn set_pairing(State(s): State<AppState>, Body(req): Body<PairingReq>) -> Response {
    let checked = (|| {
        check_board_number(req.board)?;
        let round = check_round(&s, req.round)?;
        let white = check_player("white", &req.white)?;
        let black = check_player("black", &req.black)?;
        Ok::<_, OperatorError>((round, white, black, who(&req.by)?))
    })();
    let (round, white, black, by) = match checked {
        Ok(v) => v,
        Err(e) => return operator_error(&e),
    };
    let detail = format!(
        "round {round}: {} – {} assigned by {by}",
        white.name, black.name
    );
    let changed = s.desk.change(|o| {
        o.assigned
            .retain(|a| (a.round, a.board) != (round, req.board));
        // A new pairing is entered with the colours as they are meant.
        o.swapped.remove(&(round, req.board));
        o.assigned.push(AssignedPairing {
            round,
            board: req.board,
            white,
            black,
        });
    });
    if let Err(e) = changed {
        return operator_error(&e);
    }
    if s.live.public_board(req.board).is_some() {
        s.live
            .operator_notice(req.board, None, "set_pairing", &detail);
    }
    ok(json!({"board": req.board, "round": round, "done": detail}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SwapReq {
    board: u32,
    #[serde(default)]
    round: Option<u32>,
    #[serde(default)]
    by: Option<String>,
}

async fn swap_colours(State(s): State<AppState>, Body(req): Body<SwapReq>) -> Response {
    let checked = (|| {
        check_board_number(req.board)?;
        Ok::<_, OperatorError>((check_round(&s, req.round)?, who(&req.by)?))
    })();
    let (round, by) = match checked {
        Ok(v) => v,
        Err(e) => return operator_error(&e),
    };
    if s.tournament().pairing(round, req.board).is_none() {
        return operator_error(&OperatorError::BadField {
            field: "board",
            problem: format!(
                "board {} has no pairing in round {round}: assign one before swapping colours",
                req.board
            ),
        });
    }
    // Swapping is its own undo: a second swap restores the pairing.
    let mut now_swapped = false;
    if let Err(e) = s.desk.change(|o| {
        now_swapped = o.swapped.insert((round, req.board));
        if !now_swapped {
            o.swapped.remove(&(round, req.board));
        }
    }) {
        return operator_error(&e);
    }
    let t = s.tournament();
    let (w, b) = t.pairing(round, req.board).expect("checked above");
    let detail = format!(
        "Article 7.3: colours swapped by {by} for round {round}; White {}, Black {}",
        w.name, b.name
    );
    if s.live.public_board(req.board).is_some() {
        s.live
            .operator_notice(req.board, None, "swap_colours", &detail);
    }
    ok(
        json!({"board": req.board, "round": round, "swapped": now_swapped, "white": w.name, "black": b.name}),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockReq {
    board: u32,
    white: String,
    black: String,
    /// The clock runs after the set (the default) or stays paused.
    #[serde(default = "runs")]
    run: bool,
    #[serde(default)]
    by: Option<String>,
}

fn runs() -> bool {
    true
}

async fn set_clock(State(s): State<AppState>, Body(req): Body<ClockReq>) -> Response {
    if let Err(e) = known_board(&s, req.board) {
        return operator_error(&e);
    }
    let checked = (|| {
        Ok::<_, OperatorError>((
            who(&req.by)?,
            ClockSetting {
                white_ms: parse_clock_time("white", &req.white)?,
                black_ms: parse_clock_time("black", &req.black)?,
                run: req.run,
            },
        ))
    })();
    let (by, setting) = match checked {
        Ok(v) => v,
        Err(e) => return operator_error(&e),
    };
    match s.desk.set_clock(req.board, &by, setting).await {
        Ok(()) => ok(json!({
            "board": req.board,
            "set": true,
            "done": format!("{}, acked by the clock", setting.describe()),
            "white_ms": setting.white_ms,
            "black_ms": setting.black_ms,
            "run": setting.run,
        })),
        Err(e) => operator_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::same;
    use std::time::{Duration, Instant};

    #[test]
    fn tokens_compare_by_content() {
        assert!(same(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!same(b"0123456789abcdef0", b"0123456789abcdef"));
        // The presented token repeating the real one is not the real one.
        assert!(!same(b"abab", b"ab"));
        assert!(!same(b"", b"ab"));
        assert!(!same(b"", b""));
    }

    /// The fastest of `runs` comparisons (the least disturbed by other work).
    fn fastest(runs: usize, f: impl Fn() -> bool) -> Duration {
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .min()
            .unwrap()
    }

    #[test]
    fn a_wrong_length_takes_as_long_as_a_wrong_byte() {
        // A guess of the right length and one byte longer must take the same
        // time: an early return on a length mismatch tells an attacker the
        // token's length, then lets the content be timed.
        let token = vec![b'k'; 64 * 1024];
        let mut right_length = token.clone();
        right_length[0] = b'x';
        let mut wrong_length = token.clone();
        wrong_length.push(b'k');
        let equal = fastest(25, || same(&right_length, &token));
        let longer = fastest(25, || same(&wrong_length, &token));
        assert!(
            longer * 4 > equal,
            "a length mismatch is answered much faster ({longer:?} vs {equal:?})"
        );
    }
}
