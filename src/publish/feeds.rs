//! Feed bodies built from the hub's public view: PGN for Lichess broadcasts and
//! LiveChess-Cloud-style JSON (dgt.md §4.2). Only public types are read here
//! ([`PublicBoard`], [`GameRecord`]): no alert can reach a feed (Article 12.6).

use serde_json::{json, Value};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

use super::tournament::{Player, Tournament};
use crate::events::GameResult;
use crate::hub::{Hub, PublicBoard};
use crate::pgn::{GameInfo, GameRecord};

const STANDARD_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The game shown for `board` in the current round: the latest game with a
/// move or a result, else a started position with no move yet, else (when the board is paired) an empty game so the
/// pairing is visible before the first move.
pub fn board_game(hub: &Hub, t: &Tournament, board: u32) -> Option<GameRecord> {
    let round = t.config.current_round;
    // A game that has begun wins over a fresh start with no move yet: players
    // setting the pieces up again after their result must not blank the
    // finished game in the round's feed.
    let game = hub
        .games(board)
        .pop()
        .or_else(|| hub.public_board(board).and_then(|b| b.game));
    let game = match game {
        Some(g) => g,
        None if t.pairing(round, board).is_some() => GameRecord::new(
            GameInfo {
                board: Some(board),
                ..GameInfo::default()
            },
            STANDARD_FEN,
            None,
        ),
        None => return None,
    };
    Some(with_tournament(game, t, round, board))
}

/// Boards of the current round: configured pairings and boards the hub knows.
pub fn round_boards(hub: &Hub, t: &Tournament) -> Vec<u32> {
    let mut boards: Vec<u32> = t.boards(t.config.current_round).collect();
    boards.extend(hub.public_snapshot().iter().map(|b: &PublicBoard| b.number));
    boards.sort_unstable();
    boards.dedup();
    // An inactive board (marked by an arbiter) is not part of the round.
    boards.retain(|b| !t.inactive.contains(b));
    boards
}

/// `game` with the event data and the pairing of `round`/`board` filled in.
pub fn with_tournament(mut game: GameRecord, t: &Tournament, round: u32, board: u32) -> GameRecord {
    let c = &t.config;
    let info = &mut game.info;
    info.event = c.name.clone().or(info.event.take());
    info.site = c.site.clone().or(info.site.take());
    if let Some(d) = &c.date {
        info.date = Some(d.replace('-', "."));
    }
    info.round = Some(round.to_string());
    info.board = Some(board);
    let mut extra: Vec<(String, String)> = Vec::new();
    if let Some((w, b)) = t.pairing(round, board) {
        info.white = Some(w.name.clone());
        info.black = Some(b.name.clone());
        player_tags(&mut extra, "White", w);
        player_tags(&mut extra, "Black", b);
    }
    if let Some(tc) = &c.time_control {
        extra.push(("TimeControl".into(), tc.clone()));
    }
    // Tags the record already had (e.g. from a capture) stay unless replaced.
    for (k, v) in std::mem::take(&mut info.extra_tags) {
        if !extra.iter().any(|(e, _)| *e == k) {
            extra.push((k, v));
        }
    }
    info.extra_tags = extra;
    game
}

fn player_tags(out: &mut Vec<(String, String)>, side: &str, p: &Player) {
    if let Some(t) = &p.title {
        out.push((format!("{side}Title"), t.clone()));
    }
    if let Some(r) = p.rating {
        out.push((format!("{side}Elo"), r.to_string()));
    }
    if let Some(id) = p.fide_id {
        out.push((format!("{side}FideId"), id.to_string()));
    }
}

/// Every game of the current round as one PGN file.
pub fn games_pgn(hub: &Hub, t: &Tournament) -> String {
    round_boards(hub, t)
        .into_iter()
        .filter_map(|b| board_game(hub, t, b))
        .map(|g| g.to_pgn())
        .collect()
}

/// The position after the game's moves, as FEN (the start when a move does not replay).
pub fn current_fen(game: &GameRecord) -> String {
    let mode = if game.is_chess960() {
        CastlingMode::Chess960
    } else {
        CastlingMode::Standard
    };
    let Ok(fen) = game.start_fen.parse::<Fen>() else {
        return game.start_fen.clone();
    };
    let Ok(mut pos) = fen.into_position::<Chess>(mode) else {
        return game.start_fen.clone();
    };
    for m in &game.moves {
        let Ok(m) = m.uci.parse::<UciMove>().and_then(|u| {
            u.to_move(&pos)
                .map_err(|_| shakmaty::uci::ParseUciMoveError)
        }) else {
            break;
        };
        pos.play_unchecked(m);
    }
    Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string()
}

/// LCC `tournament.json`.
pub fn lcc_tournament(hub: &Hub, t: &Tournament) -> Value {
    let c = &t.config;
    let rounds: Vec<Value> = (1..=c.rounds)
        .map(|r| {
            let count = if r == c.current_round {
                round_boards(hub, t).len()
            } else {
                t.boards(r).count()
            };
            json!({ "count": count, "live": u32::from(r == c.current_round) })
        })
        .collect();
    json!({
        "id": Value::Null,
        "name": c.name,
        "location": c.site,
        "country": c.country,
        "website": c.website,
        "rules": "STANDARD",
        "chess960": "STANDARD",
        "timecontrol": c.time_control.as_deref().map(lcc_time_control),
        "rounds": rounds,
        "eboards": Vec::<String>::new(),
    })
}

/// `5400+30` → `90|30` (LCC writes minutes|increment).
fn lcc_time_control(pgn: &str) -> String {
    let (base, inc) = pgn.split_once('+').unwrap_or((pgn, "0"));
    match base.parse::<u64>() {
        Ok(s) if !base.contains('/') => format!("{}|{}", s / 60, inc),
        _ => pgn.to_string(),
    }
}

fn lcc_player(p: Option<&Player>) -> Value {
    let Some(p) = p else {
        return json!({ "fname": null, "mname": null, "lname": null, "title": null,
                       "federation": null, "gender": null, "fideid": null });
    };
    // FIDE writes `Surname, Given names`.
    let (lname, fname) = match p.name.split_once(',') {
        Some((l, f)) => (l.trim().to_string(), Some(f.trim().to_string())),
        None => (p.name.trim().to_string(), None),
    };
    json!({
        "fname": fname,
        "mname": null,
        "lname": lname,
        "title": p.title,
        "federation": p.federation,
        "gender": null,
        "fideid": p.fide_id,
    })
}

/// LCC `round-{r}/index.json`; `None` for a round with nothing known.
pub fn lcc_round(hub: &Hub, t: &Tournament, round: u32) -> Option<Value> {
    let live = round == t.config.current_round;
    let boards: Vec<u32> = if live {
        round_boards(hub, t)
    } else {
        t.boards(round).collect()
    };
    if boards.is_empty() && !(1..=t.config.rounds).contains(&round) {
        return None;
    }
    let mut date = t.config.date.clone();
    let pairings: Vec<Value> = boards
        .iter()
        .map(|&b| {
            let pair = t.pairing(round, b);
            let game = live.then(|| board_game(hub, t, b)).flatten();
            if date.is_none() {
                date = game
                    .as_ref()
                    .and_then(|g| g.info.date.as_ref())
                    .map(|d| d.replace('.', "-"));
            }
            json!({
                "white": lcc_player(pair.map(|p| &p.0)),
                "black": lcc_player(pair.map(|p| &p.1)),
                "result": game.as_ref().map_or("*", |g| g.result_token()),
                "live": game.as_ref().is_some_and(|g| g.result.is_none() && g.is_started()),
            })
        })
        .collect();
    Some(json!({ "date": date, "pairings": pairings }))
}

/// LCC `round-{r}/game-{b}.json`; `None` when the board has no game in that round.
pub fn lcc_game(hub: &Hub, t: &Tournament, round: u32, board: u32) -> Option<Value> {
    if round != t.config.current_round {
        return None;
    }
    let game = board_game(hub, t, board)?;
    let clock = hub.public_board(board).and_then(|b| b.clock);
    let moves: Vec<String> = game
        .moves
        .iter()
        .map(|m| {
            let mut s = m.san.clone();
            if let Some(c) = m.clock_ms {
                s.push_str(&format!(" {}", c / 1000));
            }
            if let Some(e) = m.emt_ms {
                s.push_str(&format!("+{}", e / 1000));
            }
            s
        })
        .collect();
    let result = match game.result {
        None => Value::Null,
        Some(GameResult::WhiteWins) => "WHITEWIN".into(),
        Some(GameResult::BlackWins) => "BLACKWIN".into(),
        Some(GameResult::Draw) => "DRAW".into(),
    };
    Some(json!({
        "live": game.result.is_none() && game.is_started(),
        "serialNr": Value::Null,
        "firstMove": Value::Null,
        "chess960": game.chess960.unwrap_or(518),
        "result": result,
        "comment": Value::Null,
        "clock": clock.map(|c| json!({
            "white": c.white_ms / 1000,
            "black": c.black_ms / 1000,
            "time": Value::Null,
        })),
        "moves": moves,
        "fen": current_fen(&game),
    }))
}
