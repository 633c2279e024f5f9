//! `GET /metrics`: the Prometheus exposition of the live hub's metrics.
//!
//! Behind the arbiter token, like the dashboard: alert counts by Article are
//! arbiter business (Article 12.6), and a public listener behind a reverse
//! proxy must not show them. Prometheus sends the token with
//! `authorization: { credentials: <token> }` in its scrape configuration.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{middleware, Router};

use super::arbiter::require_token;
use super::AppState;

pub(crate) fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route(
            "/metrics",
            get(metrics).fallback(|| async {
                super::arbiter::error(
                    axum::http::StatusCode::METHOD_NOT_ALLOWED,
                    "/metrics is read with GET (Prometheus scrapes it with the arbiter token)",
                )
            }),
        )
        .route_layer(middleware::from_fn_with_state(state, require_token))
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    let (boards, online, games) = s.live.counts();
    (
        [
            (
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
            // Alert counts are arbiter business: no cache keeps them.
            (header::CACHE_CONTROL, "no-store"),
        ],
        s.live.metrics().render(boards, online, games),
    )
}
