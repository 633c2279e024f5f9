//! Operator commands through a DGT session: an inactive board raises no
//! alerts, and a command for a board the session does not have is refused.

mod child_guard;
mod live_daemon;

use eboard_bridge::events::{Stamped, TrackerEvent};
use eboard_bridge::operator::{OperatorError, TrackerCommand};
use eboard_bridge::session::Session;
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::dgt::DgtCodec;
use eboard_protocols::dgt::Mode;

/// The capture with White's illegal queen move, through a session numbered 4
/// (ticked every 100 ms, as the daemon does); `before` is applied first.
fn run(before: Option<TrackerCommand>) -> Vec<Stamped> {
    let mut session = Session::new(4, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut out = Vec::new();
    if let Some(c) = before {
        session.operator(0, 4, &c, &mut out).unwrap();
    }
    let mut next_tick = 100;
    for chunk in live_daemon::game_capture(live_daemon::Then::IllegalMove) {
        while next_tick <= chunk.t_ms {
            session.tick(next_tick, &mut out);
            next_tick += 100;
        }
        session.feed(&chunk, &mut out);
    }
    out
}

fn alerts(events: &[Stamped]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            TrackerEvent::Alert(a) => Some(a.kind.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_inactive_board_raises_no_alerts_but_keeps_its_record() {
    let active = run(None);
    assert!(
        alerts(&active).contains(&"illegal_move".to_string()),
        "{:?}",
        alerts(&active)
    );
    let inactive = run(Some(TrackerCommand::SetActive { active: false }));
    assert!(alerts(&inactive).is_empty(), "{:?}", alerts(&inactive));
    // The game itself is still followed: the same public events.
    let public = |events: &[Stamped]| -> Vec<Stamped> {
        events
            .iter()
            .filter(|e| matches!(e.event, TrackerEvent::Game(_)))
            .cloned()
            .collect()
    };
    assert_eq!(public(&active), public(&inactive));
}

#[test]
fn a_command_for_another_board_is_refused() {
    let mut session = Session::new(4, DgtCodec::boxed(Mode::Single), TrackerConfig::default());
    let mut out = Vec::new();
    assert_eq!(
        session.operator(0, 9, &TrackerCommand::SetActive { active: false }, &mut out),
        Err(OperatorError::UnknownBoard(9))
    );
    assert_eq!(
        session.operator(
            0,
            4,
            &TrackerCommand::SetResult {
                result: eboard_bridge::events::GameResult::Draw,
                reason: "agreed".into()
            },
            &mut out
        ),
        Err(OperatorError::NoGame(4))
    );
    assert!(out.is_empty());
}
