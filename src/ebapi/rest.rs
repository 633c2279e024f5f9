//! The EBAPI's REST side: exactly the keys LiveChess clients read (the PyPI
//! `livechess` client builds each object with `Dataclass(**json)`, so one
//! extra key makes it fail).

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::{clock_json, now_ms, Ebapi};
use crate::events::GameResult;
use crate::pgn::GameRecord;
use crate::publish::feeds::{self, lcc_player};
use crate::publish::ids::{game_id, tournament_id};
use crate::publish::Tournament;

pub(super) fn routes() -> Router<Ebapi> {
    Router::new()
        .route("/api/v1.0/eboards", get(eboards))
        .route("/api/v1.0/tournaments", get(tournaments))
        .route("/api/v1.0/tournament/{uuid}", get(tournament))
        .route("/api/v1.0/round/{uuid}/{index}", get(round))
        .route("/api/v1.0/game/{uuid}", get(game))
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        v.to_string(),
    )
        .into_response()
}

/// An error as LiveChess clients read one: `{"message": …}`.
pub(super) fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "message": message }))
}

async fn eboards(State(api): State<Ebapi>) -> Response {
    let now = now_ms();
    let list: Vec<Value> = api.boards().iter().map(|b| b.eboard_json(now)).collect();
    json_response(StatusCode::OK, &Value::Array(list))
}

/// The one tournament: the configured event.
fn summary(t: &Tournament) -> (String, String, u32) {
    let name = t
        .config
        .name
        .clone()
        .unwrap_or_else(|| "eboard-bridge".into());
    (
        tournament_id(t.config.name.as_deref()),
        name,
        t.config.rounds,
    )
}

async fn tournaments(State(api): State<Ebapi>) -> Response {
    let t = api.tournament();
    let (uuid, description, rounds) = summary(&t);
    let rounds = rounds.max(feeds::current_round(&api.public, &t));
    json_response(
        StatusCode::OK,
        &json!([{ "uuid": uuid, "description": description, "rounds": rounds }]),
    )
}

fn unknown_tournament(uuid: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!("no tournament {uuid}; GET /api/v1.0/tournaments lists the one this server has"),
    )
}

async fn tournament(State(api): State<Ebapi>, Path(uuid): Path<String>) -> Response {
    let t = api.tournament();
    let (id, name, rounds) = summary(&t);
    if uuid != id {
        return unknown_tournament(&uuid);
    }
    let boards = api.boards();
    // Index = board number − 1; a board number with no e-board gets its stand-in.
    let last = boards.iter().map(|b| b.number).max().unwrap_or(0);
    let serials: Vec<String> = (1..=last)
        .map(|n| {
            boards
                .iter()
                .find(|b| b.number == n)
                .map_or_else(|| super::serial_of(n, None), |b| b.serial.clone())
        })
        .collect();
    json_response(
        StatusCode::OK,
        &json!({
            "uuid": id,
            "name": name,
            "description": name,
            "location": t.config.site,
            "country": t.config.country,
            "rounds": rounds.max(feeds::current_round(&api.public, &t)),
            "eboards": serials,
        }),
    )
}

fn result_name(game: &GameRecord) -> Value {
    match game.result {
        None => Value::Null,
        Some(GameResult::WhiteWins) => "WHITEWIN".into(),
        Some(GameResult::BlackWins) => "BLACKWIN".into(),
        Some(GameResult::Draw) => "DRAW".into(),
    }
}

fn live(game: &GameRecord) -> bool {
    game.result.is_none() && game.is_started()
}

/// `round/{uuid}/{index}`: the index counts from 0, as the PyPI client sends
/// it (`range(rounds)`); the body's `nr` is the round number, from 1.
async fn round(State(api): State<Ebapi>, Path((uuid, index)): Path<(String, String)>) -> Response {
    let t = api.tournament();
    if uuid != summary(&t).0 {
        return unknown_tournament(&uuid);
    }
    let current = feeds::current_round(&api.public, &t);
    let rounds = t.config.rounds.max(current);
    let Some(nr) = index
        .parse::<u32>()
        .ok()
        .and_then(|i| i.checked_add(1))
        .filter(|nr| *nr <= rounds)
    else {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "no round at index {index:?}; indexes count from 0 (round 1) to {}",
                rounds.saturating_sub(1)
            ),
        );
    };
    let event = t.config.name.as_deref();
    let mut date = t
        .config
        .date
        .clone()
        .filter(|_| nr == t.config.current_round);
    let pairings: Vec<Value> = feeds::round_boards_in(&api.public, &t, nr)
        .into_iter()
        .filter_map(|b| {
            let game = feeds::board_game_in(&api.public, &t, nr, b)?;
            if date.is_none() {
                date = game.info.date.as_deref().and_then(iso_date);
            }
            let pair = t.pairing(nr, b);
            Some(json!({
                "nr": b,
                "uuid": game_id(event, nr, b),
                "white": lcc_player(pair.map(|p| &p.0)),
                "black": lcc_player(pair.map(|p| &p.1)),
                "live": live(&game),
                "result": result_name(&game),
            }))
        })
        .collect();
    json_response(
        StatusCode::OK,
        &json!({ "nr": nr, "date": date, "pairings": pairings }),
    )
}

/// `2026.11.22` → `2026-11-22`; `None` for a date with unknown parts.
fn iso_date(pgn: &str) -> Option<String> {
    let iso = pgn.replace('.', "-");
    (iso.len() == 10 && !iso.contains('?')).then_some(iso)
}

async fn game(State(api): State<Ebapi>, Path(uuid): Path<String>) -> Response {
    let t = api.tournament();
    let event = t.config.name.as_deref();
    let current = feeds::current_round(&api.public, &t);
    let found = (1..=t.config.rounds.max(current)).find_map(|r| {
        feeds::round_boards_in(&api.public, &t, r)
            .into_iter()
            .find(|&b| game_id(event, r, b) == uuid)
            .map(|b| (r, b))
    });
    let Some((round, board)) = found else {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "no game {uuid}; the games are listed by GET /api/v1.0/round/{{tournament}}/{{index}}"
            ),
        );
    };
    let Some(game) = feeds::board_game_in(&api.public, &t, round, board) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("board {board} has no game in round {round} any more"),
        );
    };
    let on_board = api.public.board_round(board).unwrap_or(current);
    let clock = (round == on_board)
        .then(|| api.public.public_board(board).and_then(|b| b.clock))
        .flatten();
    // `"<SAN> <seconds left>"`: the time is always there (a bare SAN is how
    // LiveChess marks a guessed move); 0 on a board without a clock.
    let moves: Vec<String> = game
        .moves
        .iter()
        .map(|m| format!("{} {}", m.san, m.clock_ms.unwrap_or(0) / 1000))
        .collect();
    json_response(
        StatusCode::OK,
        &json!({
            "chess960": game.chess960.unwrap_or(518),
            "result": result_name(&game),
            "comment": Value::Null,
            "clock": clock.map(|c| clock_json(&c, now_ms())),
            "moves": moves,
        }),
    )
}
