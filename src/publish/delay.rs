//! Broadcast delay: public feeds may lag the boards by a fixed time (anti-cheating
//! measure many organisers require), while arbiters always see the live hub.
//!
//! The delayed view is a second [`Hub`] fed with the live hub's public events
//! once each is `delay` old, so every public feed (PGN, JSON, the event stream
//! and the file sink) works the same on either hub.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::daemon::hub::{game_round, Hub, PublicEvent};
use crate::events::{GameEvent, MoveEvent, ResultReason, Stamped, TrackerEvent};

/// Longest delay accepted (FIDE events use at most 15–30 minutes; an hour is plenty).
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// The hub public feeds should read: `live` itself without delay, else a hub
/// that replays `live`'s public events `delay` later (capped at [`MAX_DELAY`]).
///
/// Games already in `live` (recovered from the journal) are copied at once:
/// they are at least as old as the restart, and hiding them would blank the
/// broadcast for the length of the delay.
pub fn delayed(live: Arc<Hub>, delay: Duration) -> Arc<Hub> {
    if delay.is_zero() {
        return live;
    }
    let delay = delay.min(MAX_DELAY);
    let out = Arc::new(Hub::new());
    // Subscribe before copying so nothing falls between the copy and the stream.
    let mut rx = live.subscribe_public();
    let mut rounds = live.watch_round();
    if let Some(r) = *rounds.borrow_and_update() {
        out.adopt_round(r);
    }
    seed(&live, &out);
    let target = Arc::clone(&out);
    tokio::spawn(async move {
        // Events wait here, not in the broadcast channel: a delay of minutes
        // holds far more events than the channel's capacity.
        let mut queue: VecDeque<(Instant, Arc<PublicEvent>)> = VecDeque::new();
        let mut rounds_open = true;
        loop {
            let next_due = queue.front().map(|(due, _)| *due);
            tokio::select! {
                got = rx.recv() => match got {
                    Ok(ev) => queue.push_back((Instant::now() + delay, ev)),
                    Err(RecvError::Lagged(n)) => {
                        eprintln!("publish: the delayed feed missed {n} events (the daemon is overloaded); they will not be published");
                    }
                    Err(RecvError::Closed) => return,
                },
                // Which round is current is not secret (pairings are public
                // ahead of time): the public side learns it at once. Each
                // delayed event still carries its own game's round.
                changed = rounds.changed(), if rounds_open => match changed {
                    Ok(()) => {
                        if let Some(r) = *rounds.borrow_and_update() {
                            target.set_round(r);
                        }
                    }
                    // The live hub is gone: events still queued come out below.
                    Err(_) => rounds_open = false,
                },
                () = sleep_until_opt(next_due) => {
                    let now = Instant::now();
                    while queue.front().is_some_and(|(due, _)| *due <= now) {
                        if let Some((_, ev)) = queue.pop_front() {
                            target.apply_in_round(&to_stamped(&ev), ev.round, true);
                        }
                    }
                    if Arc::strong_count(&target) == 1 {
                        return;
                    }
                }
            }
        }
    });
    out
}

async fn sleep_until_opt(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn to_stamped(ev: &PublicEvent) -> Stamped {
    let ply = match &ev.event {
        GameEvent::Move(m) => m.ply,
        GameEvent::MoveClock { ply, .. } => *ply,
        GameEvent::Retraction { from_ply, .. } => from_ply.saturating_sub(1),
        _ => 0,
    };
    Stamped {
        board: ev.board,
        ply,
        t_ms: ev.t_ms,
        event: TrackerEvent::Game(ev.event.clone()),
    }
}

/// Copies `live`'s games and clocks into `out` without broadcasting.
fn seed(live: &Hub, out: &Hub) {
    for b in live.public_snapshot() {
        let mut games = live.games(b.number);
        if let Some(g) = b.game.filter(|g| !g.is_started()) {
            games.push(g);
        }
        if let Some(d) = games.iter().find_map(|g| g.info.date.clone()) {
            out.set_date(Some(d));
        }
        let current = live.round();
        // Without a round on the live hub (feeds built on a hub nobody gave a
        // round), games carry none here either.
        let push = |event: GameEvent, round: Option<u32>| {
            let stamped = Stamped {
                board: b.number,
                ply: 0,
                t_ms: 0,
                event: TrackerEvent::Game(event),
            };
            match round {
                Some(r) => out.apply_in_round(&stamped, r, false),
                None => out.apply(&stamped, false),
            };
        };
        for g in games {
            // Each game keeps the round it was played in.
            let round = current.map(|c| game_round(&g, c));
            let push = |event: GameEvent| push(event, round);
            push(GameEvent::GameStart {
                fen: g.start_fen.clone(),
                chess960: g.chess960,
                rotated: g.rotated,
            });
            for m in &g.moves {
                push(GameEvent::Move(MoveEvent {
                    ply: m.ply,
                    san: m.san.clone(),
                    uci: m.uci.clone(),
                    fen: String::new(),
                    verified: true,
                    clock_ms: m.clock_ms,
                    emt_ms: m.emt_ms,
                    reconstructed: false,
                    corrected: false,
                }));
            }
            if let Some(result) = g.result {
                push(GameEvent::Result {
                    result,
                    reason: g.result_reason.unwrap_or(ResultReason::Arbiter),
                });
            }
        }
        let board_round = live.board_round(b.number);
        if let Some(c) = b.clock {
            push(
                GameEvent::Clock {
                    white_ms: c.white_ms,
                    black_ms: c.black_ms,
                    running: c.running,
                },
                board_round,
            );
        }
        if let Some(r) = board_round.filter(|&r| Some(r) != out.board_round(b.number)) {
            out.set_board_round(b.number, r);
        }
    }
}
