//! Pushing the round's PGN to a Lichess broadcast round
//! (`POST /api/broadcast/round/{id}/push`, token scope `study:write`): the
//! whole round on every change, bursts coalesced, at most
//! [`MAX_GAMES_PER_PUSH`] games per request, backing off on 429 and 5xx.
//! Lichess matches games by their `GameId` tag, so pushing the whole round
//! again (after a failure, a reconnect, a restart) is harmless.
//!
//! The body is the round's public PGN ([`super::feeds::round_pgn`], from the
//! public — possibly delayed — view): no arbiter data (Article 12.6). What
//! Lichess answered per game (`moves` or `error`) is kept in
//! [`LichessStatus`] for the arbiters' dashboard.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::daemon::config::LichessConfig;
use crate::daemon::hub::Hub;
use crate::events::GameEvent;
use crate::operator::Desk;
use crate::publish::feeds;

/// Lichess reads at most this many games from one push.
pub const MAX_GAMES_PER_PUSH: usize = 100;
/// Changes within this time go out in one push.
pub const COALESCE: Duration = Duration::from_millis(1_000);
/// First wait after a failure; doubled on each one after, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(2);
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// Wait after a 429 without a `Retry-After` (Lichess asks for a minute).
pub const RATE_LIMITED: Duration = Duration::from_secs(60);

/// How this program introduces itself (Lichess counts pushes per client).
pub const USER_AGENT: &str = concat!(
    "eboard-bridge/",
    env!("CARGO_PKG_VERSION"),
    " (DGT e-board relay; broadcast push)"
);

/// What Lichess said about one pushed game.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GameReply {
    pub game_id: Option<String>,
    pub round: Option<String>,
    pub white: Option<String>,
    pub black: Option<String>,
    /// Moves Lichess took.
    pub moves: Option<u64>,
    /// Why Lichess refused the game.
    pub error: Option<String>,
}

/// The push client's state, for the dashboard.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PushReport {
    pub round_id: String,
    /// The tournament round pushed (`[lichess] round`, else the current round at start).
    pub round: Option<u32>,
    /// Requests answered 200.
    pub pushes: u64,
    /// Requests that failed (network, 4xx, 5xx).
    pub failures: u64,
    /// Unix ms of the last answered push.
    pub last_push_ms: Option<u64>,
    /// The last failure, in words, with what to do; cleared by a success.
    pub last_error: Option<String>,
    /// Seconds until the next try, while backing off.
    pub retry_in_secs: Option<u64>,
    /// Lichess's answer per game, from the last pushes (every request of the round).
    pub games: Vec<GameReply>,
}

/// Shared between the push task and the dashboard.
#[derive(Debug, Default)]
pub struct LichessStatus {
    report: Mutex<PushReport>,
}

impl LichessStatus {
    pub fn report(&self) -> PushReport {
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut PushReport)) {
        f(&mut self.report.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Why the push client cannot start.
#[derive(Debug, thiserror::Error)]
pub enum LichessError {
    #[error(
        "cannot read the Lichess token from {path}: {source}; write the token (scope \
         study:write) alone in that file, readable by the service, or remove [lichess] round_id"
    )]
    Token {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("the Lichess token file {0} is empty; write the token (scope study:write) in it")]
    EmptyToken(std::path::PathBuf),
    #[error("cannot make the HTTPS client for Lichess: {0}")]
    Client(String),
}

/// The token, trimmed, from `path`.
pub fn read_token(path: &Path) -> Result<String, LichessError> {
    let text = std::fs::read_to_string(path).map_err(|source| LichessError::Token {
        path: path.to_owned(),
        source,
    })?;
    let token = text.trim().to_owned();
    if token.is_empty() {
        return Err(LichessError::EmptyToken(path.to_owned()));
    }
    Ok(token)
}

/// Splits a round's PGN into chunks of at most `max` games (games are
/// separated by a blank line before a tag line).
pub fn chunks(pgn: &str, max: usize) -> Vec<String> {
    let mut games: Vec<String> = Vec::new();
    for line in pgn.split_inclusive('\n') {
        let starts_game = line.starts_with('[')
            && games
                .last()
                .is_none_or(|g| g.ends_with("\n\n") || g.is_empty());
        if starts_game || games.is_empty() {
            games.push(String::new());
        }
        if let Some(g) = games.last_mut() {
            g.push_str(line);
        }
    }
    games.chunks(max.max(1)).map(|c| c.concat()).collect()
}

/// Starts the push client when `[lichess] round_id` is set; `Ok(None)` when it
/// is not. Fails at once when the token cannot be read.
pub fn start(
    config: &LichessConfig,
    public: Arc<Hub>,
    desk: Arc<Desk>,
) -> Result<Option<Arc<LichessStatus>>, LichessError> {
    let Some(round_id) = config.round_id.clone() else {
        return Ok(None);
    };
    let token = match &config.token_file {
        Some(path) => read_token(path)?,
        None => return Ok(None),
    };
    let client = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| LichessError::Client(e.to_string()))?;
    // A Lichess round is one tournament round: pushing the next round's games
    // into it would mix two rounds, so the round is fixed at start.
    let round = config
        .round
        .unwrap_or_else(|| feeds::current_round(&public, &desk.tournament()));
    let status = Arc::new(LichessStatus::default());
    status.update(|r| {
        r.round_id = round_id.clone();
        r.round = Some(round);
    });
    let push = Pusher {
        round,
        client,
        url: format!("{}/api/broadcast/round/{round_id}/push", config.url),
        token,
        status: Arc::clone(&status),
    };
    tokio::spawn(push.run(public, desk));
    Ok(Some(status))
}

struct Pusher {
    /// The tournament round pushed.
    round: u32,
    client: reqwest::Client,
    url: String,
    token: String,
    status: Arc<LichessStatus>,
}

/// How one push went.
enum Outcome {
    Done,
    /// Try again after this long.
    Retry(Duration),
    /// Lichess refused the body or the token: nothing changes by trying the
    /// same again; the next change is pushed.
    Refused,
}

impl Pusher {
    async fn run(self, public: Arc<Hub>, desk: Arc<Desk>) {
        let mut events = public.subscribe_public();
        let mut changes = desk.subscribe();
        let mut rounds = public.watch_round();
        let mut last_pushed: Option<String> = None;
        let mut backoff = FIRST_BACKOFF;
        // Push once at start: the round as it stands (after a restart, too).
        let mut pending = true;
        loop {
            if !pending {
                tokio::select! {
                    e = events.recv() => match e {
                        // A clock reading alone waits for the next change: the
                        // PGN's clock tags go with it.
                        Ok(e) if matches!(e.event, GameEvent::Clock { .. }) => continue,
                        Ok(_) | Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => return,
                    },
                    c = changes.changed() => if c.is_err() { return },
                    c = rounds.changed() => if c.is_err() { return },
                }
            }
            // Coalesce a burst (several boards' moves, a move and its clock).
            tokio::time::sleep(COALESCE).await;
            while let Ok(_) | Err(TryRecvError::Lagged(_)) = events.try_recv() {}
            pending = false;
            let body = feeds::round_pgn(&public, &desk.tournament(), self.round);
            if last_pushed.as_deref() == Some(body.as_str()) || body.is_empty() {
                continue;
            }
            match self.push_round(&body).await {
                Outcome::Done => {
                    last_pushed = Some(body);
                    backoff = FIRST_BACKOFF;
                }
                Outcome::Refused => last_pushed = Some(body),
                Outcome::Retry(wait) => {
                    let wait = wait.max(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    self.status
                        .update(|r| r.retry_in_secs = Some(wait.as_secs()));
                    tokio::time::sleep(wait).await;
                    self.status.update(|r| r.retry_in_secs = None);
                    // The whole round again, whatever changed meanwhile.
                    pending = true;
                }
            }
        }
    }

    /// Every chunk of the round; the first failure decides.
    async fn push_round(&self, body: &str) -> Outcome {
        let mut replies = Vec::new();
        for chunk in chunks(body, MAX_GAMES_PER_PUSH) {
            match self.push(&chunk).await {
                Ok(mut games) => replies.append(&mut games),
                Err(outcome) => return outcome,
            }
        }
        self.status.update(|r| {
            r.pushes += 1;
            r.last_push_ms = Some(crate::daemon::journal::unix_ms_now());
            r.last_error = None;
            r.games = replies;
        });
        Outcome::Done
    }

    async fn push(&self, chunk: &str) -> Result<Vec<GameReply>, Outcome> {
        let sent = self
            .client
            .post(&self.url)
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(chunk.to_owned())
            .send()
            .await;
        let res = match sent {
            Ok(r) => r,
            Err(e) => {
                return Err(self.failed(
                    format!("cannot reach Lichess ({e}); retrying: check the network"),
                    Outcome::Retry(FIRST_BACKOFF),
                ))
            }
        };
        let code = res.status();
        let retry_after = res
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = res.text().await.unwrap_or_default();
        let lichess_error = || {
            serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("error").map(|e| e.to_string()))
                .unwrap_or_else(|| text.chars().take(200).collect())
        };
        match code.as_u16() {
            200 => Ok(parse_replies(&text)),
            429 => Err(self.failed(
                "Lichess asks to slow down (429); waiting before pushing the round again".into(),
                Outcome::Retry(retry_after.unwrap_or(RATE_LIMITED)),
            )),
            401 | 403 => Err(self.failed(
                format!(
                    "Lichess refused the token ({code}: {}); make a token with the study:write \
                     scope, put it in [lichess] token_file and restart",
                    lichess_error()
                ),
                Outcome::Refused,
            )),
            s if s >= 500 => Err(self.failed(
                format!("Lichess failed ({code}); retrying"),
                Outcome::Retry(retry_after.unwrap_or(FIRST_BACKOFF)),
            )),
            _ => Err(self.failed(
                format!(
                    "Lichess refused the push ({code}: {}); check [lichess] round_id (the \
                     round must exist and have no source URL)",
                    lichess_error()
                ),
                Outcome::Refused,
            )),
        }
    }

    fn failed(&self, why: String, outcome: Outcome) -> Outcome {
        tracing::warn!("lichess push: {why}");
        self.status.update(|r| {
            r.failures += 1;
            r.last_error = Some(why);
        });
        outcome
    }
}

/// `{"games":[{"tags":{…},"moves":n} | {"tags":{…},"error":"…"}]}`.
fn parse_replies(text: &str) -> Vec<GameReply> {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let tag = |g: &Value, name: &str| g["tags"][name].as_str().map(str::to_owned);
    v["games"]
        .as_array()
        .map(|games| {
            games
                .iter()
                .map(|g| GameReply {
                    game_id: tag(g, "GameId"),
                    round: tag(g, "Round"),
                    white: tag(g, "White"),
                    black: tag(g, "Black"),
                    moves: g["moves"].as_u64(),
                    error: g["error"].as_str().map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_split_between_games() {
        let game = |n: u32| {
            format!("[Event \"E\"]\n[Round \"1.{n}\"]\n\n1. e4 {{ [%clk 1:30:00] }} *\n\n")
        };
        let pgn: String = (1..=250).map(game).collect();
        let parts = chunks(&pgn, 100);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.concat(), pgn, "nothing lost or added");
        assert_eq!(parts[0].matches("[Event").count(), 100);
        assert_eq!(parts[2].matches("[Event").count(), 50);
        assert!(parts[1].starts_with("[Event \"E\"]\n[Round \"1.101\"]"));
        assert!(chunks("", 100).is_empty());
    }

    #[test]
    fn replies_per_game() {
        let r = parse_replies(
            r#"{"games":[{"tags":{"GameId":"a","White":"W"},"moves":3},{"tags":{"GameId":"b"},"error":"Illegal move"}]}"#,
        );
        assert_eq!(r[0].moves, Some(3));
        assert_eq!(r[0].white.as_deref(), Some("W"));
        assert_eq!(r[1].error.as_deref(), Some("Illegal move"));
    }
}
