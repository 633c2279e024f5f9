//! Feed bodies built from the hub's public view: PGN for Lichess broadcasts and
//! LiveChess-Cloud-style JSON (dgt.md §4.2). Only public types are read here
//! ([`PublicBoard`], [`GameRecord`]): no alert can reach a feed (Article 12.6).

use serde_json::{json, Value};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

use super::ids::game_id;
use super::tournament::{Player, Tournament};
use crate::daemon::hub::{ClockState, Hub};
use crate::events::GameResult;
use crate::pgn::{hms, GameInfo, GameRecord, RecordError};

const STANDARD_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The round being played now: the hub's, which follows round changes (the
/// hub adopts `[tournament] current_round` when the feeds start), else the
/// configured one.
pub fn current_round(hub: &Hub, t: &Tournament) -> u32 {
    hub.round().unwrap_or(t.config.current_round)
}

/// The game shown for `board` in the current round (see [`board_game_in`]).
pub fn board_game(hub: &Hub, t: &Tournament, board: u32) -> Option<GameRecord> {
    board_game_in(hub, t, current_round(hub, t), board)
}

/// The game shown for `board` in `round`: the latest game of that round with a
/// move or a result, else a position set up for it with no move yet, else (when
/// the board is paired in that round) an empty game so the pairing is visible
/// before the first move. Games keep the round they were played in, so an
/// earlier round's games stay here after the round changes.
pub fn board_game_in(hub: &Hub, t: &Tournament, round: u32, board: u32) -> Option<GameRecord> {
    let current = current_round(hub, t);
    // A board an arbiter marked inactive is not part of the round being
    // played (as in `round_boards_in`): its game is not served on its own
    // either. Its games of earlier rounds stay.
    if round == current && t.inactive.contains(&board) {
        return None;
    }
    // A game that has begun wins over a fresh start with no move yet: players
    // setting the pieces up again after their result must not blank the
    // finished game in the round's feed.
    let game = hub
        .round_games(board, round, current)
        .pop()
        .or_else(|| hub.waiting_game(board, round, current));
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
    let mut game = with_tournament(legal_prefix(game), t, round, board);
    fill_clocks(&mut game);
    // The board's clock belongs to the game on it now, not to an earlier round's.
    let on_board = hub.board_round(board).unwrap_or(current);
    let clock = (round == on_board)
        .then(|| hub.public_board(board).and_then(|b| b.clock))
        .flatten();
    clock_tags(&mut game, clock);
    Some(game)
}

/// `game` without the moves from the first one that does not replay by the
/// rules of chess: Lichess rejects a whole PGN whose mainline has an illegal
/// move, which would stop the game's updates, result included. The arbiters'
/// alert is where such a move is dealt with (Article 12.6 keeps it there).
pub fn legal_prefix(mut game: GameRecord) -> GameRecord {
    if let Err(RecordError::BadMove { ply, .. }) = game.check_moves() {
        game.moves.truncate(ply.saturating_sub(1) as usize);
    }
    game
}

/// Gives every move a clock time when the game has any: a move the clock was
/// not read for (the sides not yet learned, a press not seen) gets the mover's
/// nearest reading, the one before else the one after. Lichess shows no clock
/// for a game with a move lacking `[%clk]`. A game with no reading at all (a
/// board without a clock) is left without.
pub fn fill_clocks(game: &mut GameRecord) {
    for mover in 0..2 {
        let plies: Vec<usize> = (mover..game.moves.len()).step_by(2).collect();
        let mut last: Option<u64> = None;
        for &i in &plies {
            match game.moves[i].clock_ms {
                Some(c) => last = Some(c),
                None => game.moves[i].clock_ms = last,
            }
        }
        let mut next: Option<u64> = None;
        for &i in plies.iter().rev() {
            match game.moves[i].clock_ms {
                Some(c) => next = Some(c),
                None => game.moves[i].clock_ms = next,
            }
        }
    }
}

/// `WhiteClock`/`BlackClock` (`h:mm:ss`): the clock as it reads now when the
/// game is the one on the board (`clock`), else each side's time after its
/// last move. Lichess applies them to the last plies and shows the clocks
/// between moves.
fn clock_tags(game: &mut GameRecord, clock: Option<ClockState>) {
    let last = |mover: usize| {
        game.moves
            .iter()
            .skip(mover)
            .step_by(2)
            .filter_map(|m| m.clock_ms)
            .fold(None, |_, c| Some(c))
    };
    // Who moved first depends on the start position.
    let black_first = game
        .start_fen
        .split_whitespace()
        .nth(1)
        .is_some_and(|turn| turn == "b");
    let (white_index, black_index) = if black_first { (1, 0) } else { (0, 1) };
    let (white, black) = match clock {
        Some(c) if game.result.is_none() => (Some(c.white_ms), Some(c.black_ms)),
        _ => (last(white_index), last(black_index)),
    };
    for (tag, ms) in [("WhiteClock", white), ("BlackClock", black)] {
        if let Some(ms) = ms {
            game.info.extra_tags.push((tag.into(), hms(ms)));
        }
    }
}

/// Boards of the current round: configured pairings and every board the hub knows.
pub fn round_boards(hub: &Hub, t: &Tournament) -> Vec<u32> {
    round_boards_in(hub, t, current_round(hub, t))
}

/// Boards of `round`: its pairings and the boards with a game of that round;
/// for the current round, every board the hub knows too (a board switched on
/// shows before its first move).
pub fn round_boards_in(hub: &Hub, t: &Tournament, round: u32) -> Vec<u32> {
    let mut boards: Vec<u32> = t.boards(round).collect();
    let current = current_round(hub, t);
    boards.extend(hub.boards_in_round(round, current));
    if round == current {
        boards.extend(hub.board_numbers());
    }
    boards.sort_unstable();
    boards.dedup();
    // A board an arbiter marked inactive is not part of the round being
    // played; the games it held in earlier rounds stay listed there.
    if round == current {
        boards.retain(|b| !t.inactive.contains(b));
    }
    boards
}

/// `game` with the event data and the pairing of `round`/`board` filled in.
pub fn with_tournament(mut game: GameRecord, t: &Tournament, round: u32, board: u32) -> GameRecord {
    let c = &t.config;
    let info = &mut game.info;
    info.event = c.name.clone().or(info.event.take());
    info.site = c.site.clone().or(info.site.take());
    // The configured date is the configured round's; other rounds keep the
    // date their games were recorded on.
    if let Some(d) = c.date.as_ref().filter(|_| round == c.current_round) {
        info.date = Some(d.replace('-', "."));
    }
    info.round = Some(round.to_string());
    game.round = Some(round);
    info.board = Some(board);
    // Lichess matches a game across updates by GameId first: one per event,
    // round and board, the EBAPI's game uuid too.
    let mut extra: Vec<(String, String)> = vec![
        ("Board".into(), board.to_string()),
        ("GameId".into(), game_id(c.name.as_deref(), round, board)),
    ];
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
    round_pgn(hub, t, current_round(hub, t))
}

/// Every game of `round` as one PGN file (one game per board, see [`board_game_in`]).
pub fn round_pgn(hub: &Hub, t: &Tournament, round: u32) -> String {
    round_boards_in(hub, t, round)
        .into_iter()
        .filter_map(|b| board_game_in(hub, t, round, b))
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
    let current = current_round(hub, t);
    let rounds: Vec<Value> = (1..=c.rounds.max(current))
        .map(|r| {
            let count = round_boards_in(hub, t, r).len();
            json!({ "count": count, "live": u32::from(r == current) })
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

/// A player as LiveChess writes one (`fname`, `mname`, `lname`, `title`,
/// `federation`, `gender`, `fideid`), all null for an unpaired side.
pub fn lcc_player(p: Option<&Player>) -> Value {
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
    let current = current_round(hub, t);
    let boards = round_boards_in(hub, t, round);
    if boards.is_empty() && !(1..=t.config.rounds.max(current)).contains(&round) {
        return None;
    }
    let mut date = t
        .config
        .date
        .clone()
        .filter(|_| round == t.config.current_round);
    let pairings: Vec<Value> = boards
        .iter()
        .map(|&b| {
            let pair = t.pairing(round, b);
            let game = board_game_in(hub, t, round, b);
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
    let game = board_game_in(hub, t, round, board)?;
    // The board's clock belongs to the game on it now, not to an earlier round's.
    let on_board = hub
        .board_round(board)
        .unwrap_or_else(|| current_round(hub, t));
    let clock = (round == on_board)
        .then(|| hub.public_board(board).and_then(|b| b.clock))
        .flatten();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{GameEvent, MoveEvent, Stamped, TrackerEvent};

    fn mv(ply: u32, san: &str, uci: &str, clock_ms: Option<u64>) -> TrackerEvent {
        TrackerEvent::Game(GameEvent::Move(MoveEvent {
            ply,
            san: san.into(),
            uci: uci.into(),
            fen: String::new(),
            verified: true,
            clock_ms,
            emt_ms: None,
            reconstructed: false,
            corrected: false,
        }))
    }

    /// A game from the standard start.
    fn start() -> TrackerEvent {
        TrackerEvent::Game(GameEvent::GameStart {
            fen: STANDARD_FEN.into(),
            chess960: Some(518),
            rotated: false,
        })
    }

    /// Applies `events` to board 1 of `hub`, a second apart.
    fn apply_all(hub: &Hub, events: impl IntoIterator<Item = TrackerEvent>) {
        for (i, event) in events.into_iter().enumerate() {
            let stamped = Stamped {
                board: 1,
                ply: i as u32,
                t_ms: i as u64 * 1000,
                event,
            };
            hub.apply(&stamped, false);
        }
    }

    #[test]
    fn an_illegal_tail_is_left_out_and_every_move_gets_a_clock() {
        let hub = Hub::new();
        let events = [
            start(),
            mv(1, "e4", "e2e4", None),
            mv(2, "e5", "e7e5", Some(5_395_000)),
            mv(3, "Nf3", "g1f3", Some(5_390_000)),
            // A record that ends in a move the rules do not allow (a rook
            // through its own pawn): Lichess would refuse the whole PGN.
            mv(4, "Ra6", "a8a6", Some(5_380_000)),
        ];
        apply_all(&hub, events);
        let t = Tournament::default();
        let game = board_game(&hub, &t, 1).unwrap();
        let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
        assert_eq!(sans, ["e4", "e5", "Nf3"]);
        // White's first move had no reading: White's next one is the nearest.
        assert_eq!(game.moves[0].clock_ms, Some(5_390_000));
        let pgn = games_pgn(&hub, &t);
        assert_eq!(pgn.matches("[%clk").count(), 3, "{pgn}");
        assert!(!pgn.contains("Ra6"), "{pgn}");
        assert!(
            pgn.contains("[Board \"1\"]") && pgn.contains("[GameId \""),
            "{pgn}"
        );
        assert!(pgn.contains("[WhiteClock \"1:29:50\"]"), "{pgn}");
        assert!(pgn.contains("[BlackClock \"1:29:55\"]"), "{pgn}");
    }

    #[test]
    fn a_late_press_re_times_the_move_in_every_feed() {
        let hub = Hub::new();
        let events = [
            start(),
            mv(1, "e4", "e2e4", Some(5_400_000)),
            mv(2, "e5", "e7e5", Some(5_395_000)),
            // Nf3 stood for the unpressed hold with White's clock running...
            mv(3, "Nf3", "g1f3", Some(5_300_000)),
            // ...and White pressed later, with the increment.
            TrackerEvent::Game(GameEvent::MoveClock {
                ply: 3,
                clock_ms: 5_311_000,
                emt_ms: Some(119_000),
            }),
            // A ply the record does not have changes nothing.
            TrackerEvent::Game(GameEvent::MoveClock {
                ply: 9,
                clock_ms: 1_000,
                emt_ms: None,
            }),
        ];
        apply_all(&hub, events);
        let t = Tournament::default();
        let pgn = games_pgn(&hub, &t);
        let flat = pgn.replace('\n', " ");
        assert!(
            flat.contains("Nf3 { [%clk 1:28:31] [%emt 0:01:59] }"),
            "{pgn}"
        );
        assert!(!pgn.contains("1:28:20"), "{pgn}");
        let round = current_round(&hub, &t);
        let lcc = lcc_game(&hub, &t, round, 1).expect("a game");
        assert_eq!(lcc["moves"][2], "Nf3 5311+119", "{lcc}");
        assert_eq!(lcc["moves"].as_array().map(Vec::len), Some(3), "{lcc}");
    }
}
