//! Hostile input, as a habit: the checks the `cargo fuzz` targets in `fuzz/`
//! run on every input, kept here so that the test suite runs the very same
//! checks over a seed corpus and its mutations (`tests/fuzz_smoke.rs`) on
//! every `cargo test`, without libFuzzer or a nightly toolchain.
//!
//! * [`capture_reader`]: any bytes as a capture file, read line by line and
//!   replayed through a session to the end, as `replay` and crash recovery do.
//! * [`operator_api`]: any bytes as a request to the operator API (path,
//!   method and `Content-Type` chosen by the first bytes, the rest the body),
//!   answered by the real router.
//!
//! Each panics (the fuzzer's finding) when an invariant breaks.

use std::io::Cursor;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;

use crate::daemon::hub::Hub;
use crate::events::{GameEvent, Stamped, TrackerEvent};
use crate::http::{router, FeedConfig};
use crate::pgn::GameRecord;
use crate::session::capture::{CaptureError, CaptureReader, Record};
use crate::session::replay::{replay, ReplaySink};
use crate::tracker::TrackerConfig;

/// Reads `data` as a capture, then replays it through a session. Invariants:
/// no panic; the reader stops at its first error and names a line it has
/// read; chunk and operator times never go back; a replay of the same bytes
/// ends the same way the reader did.
pub fn capture_reader(data: &[u8]) {
    let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let read_error = match CaptureReader::new(Cursor::new(data)) {
        Err(e) => Some(e),
        Ok(mut reader) => {
            let mut last_t = 0;
            loop {
                match reader.next_record() {
                    Ok(Some(Record::Chunk(c))) => {
                        assert!(c.t_ms >= last_t, "chunk time went back: {c:?}");
                        last_t = c.t_ms;
                    }
                    Ok(Some(Record::Operator(op))) => {
                        assert!(op.t_ms >= last_t, "operator time went back: {op:?}");
                        last_t = op.t_ms;
                    }
                    Ok(None) => break None,
                    Err(e) => {
                        // After an error the reader is finished.
                        assert!(matches!(reader.next_record(), Ok(None)));
                        break Some(e);
                    }
                }
            }
        }
    };
    if let Some(e) = &read_error {
        assert!(
            e.line() <= lines,
            "error on line {} of {lines}: {e}",
            e.line()
        );
        assert!(!e.to_string().is_empty());
    }
    let result = replay(
        Cursor::new(data),
        1,
        &TrackerConfig::default(),
        &mut Discard,
    );
    match (&read_error, &result) {
        (
            None,
            Err(
                crate::session::replay::ReplayError::UnsupportedProtocol(..)
                | crate::session::replay::ReplayError::Settings(_),
            ),
        ) => {}
        (None, Err(e)) => panic!("the reader took the capture, replay refused it: {e}"),
        (Some(_), Ok(_)) => panic!("replay took a capture the reader refused: {read_error:?}"),
        (Some(CaptureError::Empty), Err(_)) | (Some(_), Err(_)) | (None, Ok(_)) => {}
    }
}

/// A replay sink that keeps nothing.
struct Discard;

impl ReplaySink for Discard {
    fn event(&mut self, _: &Stamped) -> std::io::Result<()> {
        Ok(())
    }
    fn game(&mut self, game: &GameRecord) -> std::io::Result<()> {
        // The record a replay prints must be writable as PGN.
        let _ = game.to_pgn();
        Ok(())
    }
    fn warning(&mut self, _: &str) {}
}

/// The token the fuzzed router takes.
const TOKEN: &str = "fuzzing-token-0123456789";

/// The paths requests go to: every operator action, the reading paths, and
/// a few that exist nowhere.
const PATHS: [&str; 17] = [
    "/arbiter/api/ack",
    "/arbiter/api/resolve",
    "/arbiter/api/result",
    "/arbiter/api/retraction",
    "/arbiter/api/pairing",
    "/arbiter/api/swap",
    "/arbiter/api/start-fen",
    "/arbiter/api/active",
    "/arbiter/api/clock",
    "/arbiter/api/state",
    "/arbiter/api/board/1",
    "/arbiter/api/board/99999999999",
    "/arbiter/api/board/x%00",
    "/arbiter/api/board/%FF%FE",
    "/arbiter/api/nothing",
    "/arbiter/",
    "/metrics",
];

const CONTENT_TYPES: [Option<&str>; 5] = [
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("text/plain"),
    Some("application/x-www-form-urlencoded"),
    None,
];

/// One runtime and one router for every input (building them per input
/// would leave the fuzzer measuring start-up).
fn harness() -> &'static (tokio::runtime::Runtime, Router) {
    static HARNESS: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the fuzzed router");
        let app = runtime.block_on(async {
            let hub = Arc::new(Hub::new());
            hub.register(1, "/dev/fuzz");
            hub.apply(
                &Stamped {
                    board: 1,
                    ply: 0,
                    t_ms: 0,
                    event: TrackerEvent::Game(GameEvent::GameStart {
                        fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
                        chess960: Some(518),
                        rotated: false,
                    }),
                },
                true,
            );
            router(
                hub,
                FeedConfig {
                    arbiter_token: TOKEN.into(),
                    ..FeedConfig::default()
                },
            )
        });
        (runtime, app)
    })
}

/// Sends `data` to the operator API: byte 0 picks the path, byte 1 the
/// method (bit 0: GET or POST) and the `Content-Type` (the rest), the other
/// bytes are the body. Invariants: no panic; the status is one the API
/// documents; every answer is a JSON object with `ok`, and an error has a
/// sentence in `error`; the arbiter side never answers with a CORS header or
/// a cacheable answer.
pub fn operator_api(data: &[u8]) {
    use tower::ServiceExt;
    let (runtime, app) = harness();
    let path = PATHS[usize::from(data.first().copied().unwrap_or(0)) % PATHS.len()];
    let control = data.get(1).copied().unwrap_or(0);
    let method = if control & 1 == 0 {
        Method::POST
    } else {
        Method::GET
    };
    let content_type = CONTENT_TYPES[usize::from(control >> 1) % CONTENT_TYPES.len()];
    let body = data.get(2..).unwrap_or_default().to_vec();
    let mut request = Request::builder()
        .method(method.clone())
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
    if let Some(ct) = content_type {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let request = request
        .body(Body::from(body))
        .expect("a request from fixed parts");
    let response = runtime
        .block_on(app.clone().oneshot(request))
        .expect("the router never fails");
    let status = response.status();
    let documented = [
        StatusCode::OK,
        StatusCode::BAD_REQUEST,
        StatusCode::NOT_FOUND,
        StatusCode::METHOD_NOT_ALLOWED,
        StatusCode::CONFLICT,
        StatusCode::PAYLOAD_TOO_LARGE,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        StatusCode::SERVICE_UNAVAILABLE,
    ];
    assert!(
        documented.contains(&status),
        "{method} {path}: undocumented status {status}"
    );
    let headers = response.headers();
    assert!(
        headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "{method} {path}: a CORS header on the arbiter side"
    );
    assert_eq!(
        headers
            .get(header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok()),
        Some("no-store"),
        "{method} {path}: a cacheable arbiter answer"
    );
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if path.starts_with("/arbiter/api/") {
        assert!(is_json, "{method} {path}: {status} is not JSON");
    }
    if !is_json {
        return;
    }
    let bytes = runtime
        .block_on(axum::body::to_bytes(response.into_body(), 1 << 24))
        .expect("the answer is read whole");
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{method} {path}: {status} answer is not JSON ({e})"));
    // The reading paths answer their data, without `ok`, when all is well.
    if (path == "/arbiter/api/state" || path == "/arbiter/api/board/1") && status == StatusCode::OK
    {
        return;
    }
    match v.get("ok") {
        Some(serde_json::Value::Bool(true)) => {
            assert!(
                status.is_success(),
                "{method} {path}: ok with {status}: {v}"
            )
        }
        Some(serde_json::Value::Bool(false)) => {
            let sentence = v.get("error").and_then(|e| e.as_str()).unwrap_or_default();
            assert!(
                sentence.len() > 10,
                "{method} {path}: an error without a sentence: {v}"
            );
            assert!(
                !status.is_success(),
                "{method} {path}: not ok with {status}"
            );
        }
        _ => panic!("{method} {path}: {status} answer without `ok`: {v}"),
    }
}
