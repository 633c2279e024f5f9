//! The arbiter's commands as the tracker takes them: entering a result, and
//! ruling on a retraction (accept: it stands; reject: the withdrawn moves are
//! reinstated and the board must be put back, Article 7.4).

mod support;

use eboard_bridge::events::{GameEvent, GameResult, ResultReason, TrackerEvent};
use eboard_bridge::operator::Refusal;
use eboard_bridge::tracker::TrackerConfig;
use shakmaty::Color;
use support::Script;

const W: Color = Color::White;
const B: Color = Color::Black;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// 1. e4 e5 2. Nf3 Nc6, then both knights go back: plies 3 and 4 withdrawn.
fn two_plies_taken_back() -> Script {
    let mut sc = Script::standard();
    for (m, c) in [("e2e4", W), ("e7e5", B), ("g1f3", W), ("b8c6", B)] {
        sc.play(m, c);
    }
    sc.lift("c6")
        .place("b8", 'n')
        .lift("f3")
        .place("g1", 'N')
        .wait(4_000);
    assert_eq!(sc.retractions(), vec![(3, vec![3, 4])]);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    sc
}

/// Ids of the alerts resolved in `events`.
fn resolved(events: &[TrackerEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            TrackerEvent::Resolved(r) => Some(r.id),
            _ => None,
        })
        .collect()
}

fn run(sc: &mut Script, f: impl FnOnce(&mut Script, &mut Vec<TrackerEvent>)) {
    let mut out = Vec::new();
    f(sc, &mut out);
    let t = sc.t;
    sc.events.extend(out.into_iter().map(|e| (t, e)));
}

#[test]
fn a_rejected_retraction_reinstates_the_moves_and_wants_the_board_back() {
    let mut sc = two_plies_taken_back();
    let before = sc.alerts().len();
    let takeback = sc.alerts().last().unwrap().id;
    run(&mut sc, |sc, out| {
        let t = sc.t;
        sc.tracker.operator_reject_retraction(t, out).unwrap();
        assert_eq!(resolved(out), vec![takeback]);
    });
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6"]));
    assert_eq!(sc.tracker.ply(), 4);
    let displaced = &sc.alerts()[before..];
    assert_eq!(displaced.len(), 1, "{displaced:?}");
    assert_eq!(displaced[0].kind, "displaced_pieces");
    assert_eq!(displaced[0].article, "7.4");
    let mut squares = displaced[0].squares.clone();
    squares.sort();
    assert_eq!(squares, s(&["b8", "c6", "f3", "g1"]));
    assert!(displaced[0].id > 0, "numbered like any alert");
    let displaced_id = displaced[0].id;
    // Nobody touches the board for a while: it still shows the earlier
    // position, so the alert stays open however long the hands stay away.
    sc.wait(10_000);
    let all: Vec<TrackerEvent> = sc.events.iter().map(|(_, e)| e.clone()).collect();
    assert!(
        !resolved(&all).contains(&displaced_id),
        "the knights are still back, the alert must stay open: {:?}",
        sc.events
    );
    assert_eq!(
        sc.sans(),
        s(&["e4", "e5", "Nf3", "Nc6"]),
        "no move was made"
    );
    // The ruling is spent: it cannot be given twice.
    run(&mut sc, |sc, out| {
        let t = sc.t;
        assert_eq!(
            sc.tracker.operator_reject_retraction(t, out),
            Err(Refusal::NoRetraction)
        );
    });
    // The players put the knights back; play goes on from the reinstated moves.
    sc.lift("g1")
        .place("f3", 'N')
        .lift("b8")
        .place("c6", 'n')
        .wait(1_000);
    assert_eq!(
        sc.retractions().len(),
        1,
        "restoring is not a new retraction"
    );
    let all: Vec<TrackerEvent> = sc.events.iter().map(|(_, e)| e.clone()).collect();
    assert!(
        resolved(&all).contains(&displaced_id),
        "the board shows the game again: the displaced-pieces alert is resolved"
    );
    sc.play("f1c4", W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6", "Bc4"]));
}

#[test]
fn rejecting_after_a_new_move_withdraws_that_move_first() {
    let mut sc = two_plies_taken_back();
    sc.play("f1c4", W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Bc4"]));
    run(&mut sc, |sc, out| {
        let t = sc.t;
        sc.tracker.operator_reject_retraction(t, out).unwrap();
    });
    assert_eq!(sc.retractions().last(), Some(&(3, vec![3])));
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6"]));
}

#[test]
fn an_accepted_retraction_stands_and_is_ruled_on_once() {
    let mut sc = two_plies_taken_back();
    let takeback = sc.alerts().last().map(|a| (a.id, a.kind.clone())).unwrap();
    assert_eq!(takeback.1, "takeback");
    let mut out = Vec::new();
    assert_eq!(sc.tracker.operator_accept_retraction(&mut out), Ok(()));
    // The alert that reported the retraction is resolved by the ruling.
    assert_eq!(resolved(&out), vec![takeback.0]);
    let mut out = Vec::new();
    assert_eq!(
        sc.tracker.operator_accept_retraction(&mut out),
        Err(Refusal::NoRetraction)
    );
    assert!(out.is_empty());
    run(&mut sc, |sc, out| {
        let t = sc.t;
        assert_eq!(
            sc.tracker.operator_reject_retraction(t, out),
            Err(Refusal::NoRetraction)
        );
    });
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
}

#[test]
fn no_retraction_no_ruling() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    assert_eq!(
        sc.tracker.operator_accept_retraction(&mut Vec::new()),
        Err(Refusal::NoRetraction)
    );
}

#[test]
fn the_arbiter_enters_and_corrects_a_result() {
    let mut empty = Script::empty(TrackerConfig::default());
    let mut out = Vec::new();
    assert_eq!(
        empty.tracker.operator_result(0, GameResult::Draw, &mut out),
        Err(Refusal::NoGame)
    );
    assert!(out.is_empty());

    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    run(&mut sc, |sc, out| {
        sc.tracker
            .operator_result(sc.t, GameResult::WhiteWins, out)
            .unwrap();
    });
    assert!(!sc.tracker.in_game(), "the game is over");
    run(&mut sc, |sc, out| {
        sc.tracker
            .operator_result(sc.t, GameResult::Draw, out)
            .unwrap();
    });
    let results: Vec<_> = sc
        .results()
        .into_iter()
        .map(|r| match r {
            GameEvent::Result { result, reason } => (*result, *reason),
            _ => unreachable!("results() returns results"),
        })
        .collect();
    assert_eq!(
        results,
        vec![
            (GameResult::WhiteWins, ResultReason::Arbiter),
            (GameResult::Draw, ResultReason::Arbiter)
        ]
    );
}

#[test]
fn a_start_fen_is_checked_and_starts_a_board_already_showing_it() {
    let mut sc = Script::empty(TrackerConfig::default());
    let t = sc.t;
    assert!(matches!(
        sc.tracker
            .operator_start_fen(t, "8/8/8/8/8/8/8/KK5k w - - 0 1"),
        Err(Refusal::BadFen(_))
    ));
    let fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1";
    sc.setup("4k3/8/8/8/8/8/4P3/4K3");
    sc.wait(1_000);
    assert!(sc.game_starts().is_empty(), "not a start position yet");
    sc.tracker.operator_start_fen(sc.t, fen).unwrap();
    sc.wait(1_500);
    assert_eq!(sc.game_starts().len(), 1, "{:?}", sc.events);
}
