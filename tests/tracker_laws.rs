//! The Laws alerts (issue 4, alert side), one or more tests per Article, driven by
//! scripted pictures and clock presses with real scan timing: what is raised (kind,
//! Article, severity, squares, the words that matter, the penalty for the event's
//! category and regime), how soon, when it is resolved, and that the published game
//! afterwards is the game played. Negative tests check the normal flows stay quiet.

mod support;

use eboard_bridge::events::{Alert, AlertResolved, Millis, Severity, TrackerEvent};
use eboard_bridge::timecontrol::{Regime, TimeControl};
use eboard_bridge::tracker::TrackerConfig;
use shakmaty::Color;
use support::{Script, Turn};

const W: Color = Color::White;
const B: Color = Color::Black;
const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn config(time_control: &str, regime: Regime) -> TrackerConfig {
    TrackerConfig {
        time_control: Some(
            time_control
                .parse::<TimeControl>()
                .expect("test time control parses"),
        ),
        regime,
        ..TrackerConfig::default()
    }
}

/// A game from `fen` (an operator-set start, or the standard one when `None`)
/// under `config`, White's clock started, nothing recorded yet.
fn game(config: TrackerConfig, fen: Option<&str>) -> Script {
    let mut sc = Script::empty(config);
    match fen {
        Some(f) => {
            sc.tracker.set_start_fen(f).expect("test FEN is legal");
            sc.setup(f.split(' ').next().expect("board part"));
        }
        None => sc.setup(START),
    }
    // The arbiter starts the clock of the side to move (6.6).
    let to_move = match fen.and_then(|f| f.split(' ').nth(1)) {
        Some("b") => B,
        _ => W,
    };
    sc.start_clock_for(to_move);
    assert_eq!(sc.game_starts().len(), 1, "the game started");
    sc.clear();
    sc
}

/// The alerts of `kind`, with the time each was raised.
fn raised<'a>(sc: &'a Script, kind: &str) -> Vec<(Millis, &'a Alert)> {
    sc.events
        .iter()
        .filter_map(|(t, e)| match e {
            TrackerEvent::Alert(a) if a.kind == kind => Some((*t, a)),
            _ => None,
        })
        .collect()
}

fn resolved(sc: &Script) -> Vec<(Millis, &AlertResolved)> {
    sc.events
        .iter()
        .filter_map(|(t, e)| match e {
            TrackerEvent::Resolved(r) => Some((*t, r)),
            _ => None,
        })
        .collect()
}

/// Exactly one alert of `kind`, raised within `within` ms after `after`.
fn one_alert<'a>(sc: &'a Script, kind: &str, after: Millis, within: Millis) -> &'a Alert {
    let found = raised(sc, kind);
    assert_eq!(found.len(), 1, "one {kind} alert: {:?}", sc.alerts());
    let (t, a) = found[0];
    assert!(
        t >= after && t <= after + within,
        "{kind} raised {} ms after the reference, limit {within} ms",
        t as i64 - after as i64
    );
    a
}

// ----- 7.5.1 / 7.5.5 illegal move completed --------------------------------------

/// White's rook f1 cannot go to f3 (its own pawn on f2 is in the way).
const ROOK_BLOCKED: &str = "4k3/8/8/8/8/8/5P2/4KR2 w - - 0 1";

fn illegal_rook_move(sc: &mut Script) -> Millis {
    sc.lift("f1").place("f3", 'R').wait(300).press_only(W);
    let t_press = sc.t;
    sc.wait(2_000);
    t_press
}

#[test]
fn l7_5_1_illegal_move_named_counted_penalised_and_resolved() {
    let mut sc = game(config("5400+30", Regime::Supervised), Some(ROOK_BLOCKED));
    let t_press = illegal_rook_move(&mut sc);
    let a = one_alert(&sc, "illegal_move", t_press, 1_000).clone();
    assert_eq!(a.article, "7.5.1");
    assert_eq!(a.severity, Severity::Error);
    assert_eq!(a.squares, s(&["f1", "f3"]));
    assert!(
        a.message.contains(
            "White's rook on f1 was moved to f3, which is not a legal move; the clock was pressed"
        ),
        "{}",
        a.message
    );
    assert!(a.message.contains("White's first completed illegal move"));
    let p = a.penalty.as_deref().expect("a penalty");
    assert!(p.starts_with("7.5.5") && p.contains("two minutes"), "{p}");
    assert!(
        resolved(&sc).is_empty(),
        "not resolved while the rook is on f3"
    );

    // The arbiter has the position restored: resolved at once.
    sc.lift("f3").place("f1", 'R');
    let t_fixed = sc.t;
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].1.id, r[0].1.kind.as_str()), (a.id, "illegal_move"));
    assert_eq!(r[0].0, t_fixed);
    assert!(r[0].1.reason.contains("before the illegal move"));

    // Play goes on; a second illegal move by White is counted as the second.
    sc.arbiter_runs_clock_for(W).wait(500);
    sc.play("e1e2", W).play("e8d8", B);
    let t_press = illegal_rook_move(&mut sc);
    let second = raised(&sc, "illegal_move");
    assert_eq!(second.len(), 2);
    let (t2, a2) = second[1];
    assert!(t2 >= t_press && t2 <= t_press + 1_000);
    assert!(a2.id > a.id);
    assert!(a2.message.contains("White's second completed illegal move"));
    let p2 = a2.penalty.as_deref().expect("a penalty");
    assert!(
        p2.contains("lost") && p2.contains("cannot checkmate"),
        "{p2}"
    );
    // The published game is the game played: the illegal moves never were.
    assert_eq!(sc.sans(), s(&["Ke2", "Kd8"]));
    assert!(sc.retractions().is_empty());
}

#[test]
fn l7_5_1_illegal_move_corrected_by_a_legal_move_instead() {
    let mut sc = game(TrackerConfig::default(), Some(ROOK_BLOCKED));
    illegal_rook_move(&mut sc);
    let id = raised(&sc, "illegal_move")[0].1.id;
    // The rook goes to a legal square instead (touch-move: the same rook).
    sc.lift("f3").place("g1", 'R').wait(300).press(W);
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, id);
    assert!(
        r[0].1.reason.contains("legal continuation"),
        "{}",
        r[0].1.reason
    );
    assert_eq!(sc.sans(), s(&["Rg1"]));
}

#[test]
fn l7_5_1_a_second_press_on_the_same_illegal_move_is_not_counted_again() {
    let mut sc = game(TrackerConfig::default(), Some(ROOK_BLOCKED));
    illegal_rook_move(&mut sc);
    // Black presses back, White presses again on the uncorrected board.
    sc.press_only(B).wait(600).press_only(W).wait(2_000);
    assert_eq!(raised(&sc, "illegal_move").len(), 1);
}

#[test]
fn l7_5_5_penalty_wording_per_category_and_regime() {
    let cases = [
        ("5400+30", Regime::Supervised, "two minutes"),
        ("5400+30", Regime::Unsupervised, "two minutes"),
        ("900+10", Regime::Supervised, "two minutes"),
        ("900+10", Regime::Unsupervised, "A.4.2"),
        ("180+2", Regime::Supervised, "one minute (B.2)"),
        ("180+2", Regime::Unsupervised, "A.4.2"),
    ];
    for (tc, regime, words) in cases {
        let mut sc = game(config(tc, regime), Some(ROOK_BLOCKED));
        illegal_rook_move(&mut sc);
        let a = raised(&sc, "illegal_move");
        assert_eq!(a.len(), 1, "{tc} {regime:?}");
        let p = a[0].1.penalty.as_deref().expect("a penalty");
        assert!(p.contains(words), "{tc} {regime:?}: {p}");
    }
    // Without a configured time control the standard rules are quoted.
    let mut sc = game(TrackerConfig::default(), Some(ROOK_BLOCKED));
    illegal_rook_move(&mut sc);
    let p = raised(&sc, "illegal_move")[0].1.penalty.clone();
    assert!(p.expect("a penalty").contains("two minutes"));
}

#[test]
fn l7_5_1_black_illegal_capture_names_the_captured_piece() {
    // Black's bishop c8 cannot take on h3 through its own pawn on d7.
    let mut sc = game(
        config("180+2", Regime::Supervised),
        Some("rnbqkbnr/pppppppp/8/8/8/7N/PPPPPPPP/RNBQKB1R b KQkq - 1 1"),
    );
    sc.lift("h3")
        .lift("c8")
        .place("h3", 'b')
        .wait(300)
        .press_only(B);
    let t_press = sc.t;
    sc.wait(2_000);
    let a = one_alert(&sc, "illegal_move", t_press, 1_000);
    assert_eq!(a.squares, s(&["h3", "c8"]));
    assert!(
        a.message
            .contains("Black's bishop on c8 was moved to h3, capturing White's knight"),
        "{}",
        a.message
    );
    assert!(a
        .penalty
        .as_deref()
        .expect("penalty")
        .contains("one minute"));
}

// ----- 7.5.2 pawn left on the last rank -------------------------------------------

const PROMO: &str = "7k/4P3/8/8/8/8/7p/K7 w - - 0 1";

#[test]
fn l7_5_2_pawn_on_the_last_rank_then_replaced_by_a_queen() {
    let mut sc = game(config("900+10", Regime::Supervised), Some(PROMO));
    sc.lift("e7").place("e8", 'P').wait(300).press_only(W);
    let t_press = sc.t;
    sc.wait(2_000);
    let a = one_alert(&sc, "illegal_move", t_press, 1_000).clone();
    assert_eq!(a.article, "7.5.2");
    assert_eq!(a.severity, Severity::Error);
    assert_eq!(a.squares, s(&["e7", "e8"]));
    assert!(a.message.contains("White's pawn on e7 was moved to e8"));
    assert!(a.message.contains("replace the pawn by a queen"));
    assert!(a.message.contains("White's first completed illegal move"));
    assert!(a
        .penalty
        .as_deref()
        .expect("penalty")
        .contains("two minutes"));
    // The arbiter replaces the pawn by a queen, as 7.5.2 says.
    sc.lift("e8").place("e8", 'Q').wait(1_000);
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, a.id);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
}

// ----- 7.5.3 clock pressed without a move ---------------------------------------------

fn open_e4_e5() -> Script {
    let mut sc = game(config("5400+30", Regime::Supervised), None);
    sc.play("e2e4", W).play("e7e5", B);
    sc.clear();
    sc
}

#[test]
fn l7_5_3_press_without_a_move_is_raised_and_resolved_by_the_clock() {
    let mut sc = open_e4_e5();
    sc.wait(1_000).press_only(W);
    let t_press = sc.t;
    sc.wait(2_000);
    let a = one_alert(&sc, "clock_pressed_without_move", t_press, 1_000).clone();
    assert_eq!(a.article, "7.5.3");
    assert_eq!(a.severity, Severity::Warning);
    assert!(a.squares.is_empty());
    assert!(a
        .message
        .starts_with("White pressed the clock without making a move"));
    assert!(a.message.contains("counts as an illegal move"));
    assert!(a.message.contains("White's first completed illegal move"));
    assert!(a
        .penalty
        .as_deref()
        .expect("penalty")
        .contains("two minutes"));
    // The clock is set running for White again: resolved.
    sc.press_only(B);
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, a.id);
    assert_eq!(r[0].0, sc.t);
    assert!(r[0].1.reason.contains("runs again for White"));
    sc.wait(500).play("g1f3", W);
    assert_eq!(sc.sans(), s(&["Nf3"]), "after e4 e5");
}

#[test]
fn l7_5_3_counts_with_illegal_moves_and_resolves_with_the_next_move() {
    let mut sc = game(config("180+2", Regime::Supervised), Some(ROOK_BLOCKED));
    illegal_rook_move(&mut sc);
    sc.lift("f3").place("f1", 'R');
    sc.arbiter_runs_clock_for(W).wait(1_000);
    // White presses again without a move: his second illegal move (2018 Laws).
    sc.press_only(W).wait(2_000);
    let a = raised(&sc, "clock_pressed_without_move");
    assert_eq!(a.len(), 1);
    assert!(a[0]
        .1
        .message
        .contains("White's second completed illegal move"));
    assert!(a[0].1.penalty.as_deref().expect("penalty").contains("lost"));
    let id = a[0].1.id;
    // White moves (unpressed: his clock is not running); Black's reply proves it.
    sc.hand("e1d2");
    sc.wait(500);
    sc.hand("e8d8");
    sc.wait(500).press(B);
    assert_eq!(sc.sans(), s(&["Kd2", "Kd8"]));
    assert!(resolved(&sc).iter().any(|(_, r)| r.id == id));
}

#[test]
fn l7_5_3_not_raised_in_the_normal_flows() {
    // The first press of the game, before any move (the start procedure).
    let mut sc = game(TrackerConfig::default(), None);
    sc.press_only(W).wait(2_000);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    // A double press right after a move: the lever bounces back and forth.
    let mut sc = game(TrackerConfig::default(), None);
    sc.hand("e2e4");
    sc.wait(300).press_only(W);
    sc.t += 100;
    sc.press_only(B);
    sc.t += 100;
    sc.press_only(W);
    sc.wait(3_000);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    assert_eq!(sc.sans(), s(&["e4"]));
    // A press that reaches the host before the move's last square.
    let mut sc = open_e4_e5();
    sc.lift("g1").press_only(W);
    sc.t += 60;
    sc.place("f3", 'N').wait(2_000);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    assert_eq!(sc.sans(), s(&["Nf3"]), "after e4 e5");
    // A late press by the previous mover (6.2.2) after an unpressed move.
    let mut sc = open_e4_e5();
    sc.hand("g1f3");
    sc.wait(300);
    sc.hand("b8c6");
    sc.wait(300).press_only(W).wait(300).press(B).wait(2_000);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    assert_eq!(sc.sans(), s(&["Nf3", "Nc6"]), "after e4 e5");
}

// ----- 7.5.4 two hands (info) ----------------------------------------------------------

fn italian() -> Script {
    let mut sc = game(TrackerConfig::default(), None);
    for (i, m) in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]
        .iter()
        .enumerate()
    {
        sc.play(m, if i % 2 == 0 { W } else { B });
    }
    sc.clear();
    sc
}

#[test]
fn l7_5_4_king_and_rook_lifted_in_one_scan_once_is_no_alert() {
    // A quick hand takes both within one scan too: one such move tells nothing.
    let mut sc = italian();
    sc.scan(&[("e1", None), ("h1", None)]);
    sc.scan(&[("g1", Some('K')), ("f1", Some('R'))]);
    sc.wait(300).press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
}

/// White's capture on `to` from `from`, both pieces gone in one scan and the
/// capturing piece down at once; then Black's quiet reply `reply`.
fn swift_capture(sc: &mut Script, from: &str, to: &str, p: char, reply: &str) {
    sc.scan(&[(from, None), (to, None)]);
    sc.place(to, p).wait(300).press(W);
    sc.play(reply, B);
}

#[test]
fn l7_5_4_a_players_third_swift_capture_is_told_with_every_ply() {
    // 1.e4 d5 2.exd5 (swift) Nf6 3.d4 Nxd5 4.c4 Nb4 5.Qa4+ N8c6 6.Qxb4 (swift)
    // e6 7.Bg5 f6 8.Bxf6 (swift): White's third, at ply 15.
    let mut sc = game(TrackerConfig::default(), None);
    sc.play("e2e4", W).play("d7d5", B);
    swift_capture(&mut sc, "e4", "d5", 'P', "g8f6");
    sc.play("d2d4", W).play("f6d5", B);
    sc.play("c2c4", W).play("d5b4", B);
    sc.play("d1a4", W).play("b8c6", B);
    assert!(
        raised(&sc, "two_hands_suspected").is_empty(),
        "{:?}",
        sc.alerts()
    );
    swift_capture(&mut sc, "a4", "b4", 'Q', "e7e6");
    assert!(
        raised(&sc, "two_hands_suspected").is_empty(),
        "two such moves are still quiet: {:?}",
        sc.alerts()
    );
    sc.play("c1g5", W).play("f7f6", B);
    sc.clear();
    sc.scan(&[("g5", None), ("f6", None)]);
    sc.place("f6", 'B').wait(300).press(W);
    assert_eq!(sc.sans(), s(&["Bxf6"]));
    let a = raised(&sc, "two_hands_suspected");
    assert_eq!(a.len(), 1, "{:?}", sc.alerts());
    assert_eq!(a[0].1.article, "7.5.4");
    assert_eq!(a[0].1.severity, Severity::Info);
    assert_eq!(a[0].1.squares, s(&["g5", "f6"]));
    assert!(
        a[0].1.message.contains("capturing and the captured piece")
            && a[0].1.message.contains("third")
            && a[0].1.message.contains("plies 3, 11, 15"),
        "{}",
        a[0].1.message
    );
    assert!(sc.serious_alerts().is_empty());
}

#[test]
fn l7_5_4_one_hand_orders_are_quiet() {
    // Both castling pieces lifted in one scan, put down one after the other at
    // a hand's pace.
    let mut sc = italian();
    sc.scan(&[("e1", None), ("h1", None)]);
    sc.wait(300)
        .place("g1", 'K')
        .place("f1", 'R')
        .wait(300)
        .press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    // Both castling pieces in the air, lifted one after the other.
    let mut sc = italian();
    sc.lift("e1").lift("h1").place("g1", 'K').place("f1", 'R');
    sc.wait(300).press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    // Capturing piece held, then the captured piece taken.
    let mut sc = game(TrackerConfig::default(), None);
    sc.play("e2e4", W).play("d7d5", B);
    sc.lift("e4").lift("d5").place("d5", 'P').wait(300).press(W);
    assert_eq!(sc.sans(), s(&["e4", "d5", "exd5"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
}

// ----- 7.4 / 7.6 displaced pieces ----------------------------------------------------

#[test]
fn l7_4_knocked_piece_named_within_the_threshold_and_resolved() {
    let mut sc = open_e4_e5();
    let threshold = sc.tracker.config().displaced_alert_ms;
    assert!((1_000..=10_000).contains(&threshold));
    // Black's rook knocked from h8 to h6 while White thinks: the board is wrong
    // from the first square that changes.
    sc.lift("h8");
    let t_wrong = sc.t;
    sc.place("h6", 'r');
    sc.wait(threshold - 500);
    assert!(sc.alerts().is_empty(), "nothing before the threshold");
    sc.wait(1_500);
    let a = one_alert(&sc, "displaced_pieces", t_wrong + threshold, 1_000).clone();
    assert_eq!(a.article, "7.4");
    assert_eq!(a.severity, Severity::Warning);
    assert_eq!(a.squares, s(&["h6", "h8"]));
    assert!(
        a.message
            .contains("h6 holds Black's rook but should be empty"),
        "{}",
        a.message
    );
    assert!(a
        .message
        .contains("h8 should hold Black's rook but is empty"));
    // Put back: resolved, and the game goes on.
    sc.lift("h6").place("h8", 'r');
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].1.id, r[0].0), (a.id, sc.t));
    assert!(r[0].1.reason.contains("back on their squares"));
    sc.play("g1f3", W);
    assert_eq!(sc.sans(), s(&["Nf3"]), "after e4 e5");
}

#[test]
fn l7_6_piece_off_the_board_names_what_belongs_there() {
    let mut sc = game(TrackerConfig::default(), None);
    sc.play("e2e4", W);
    sc.clear();
    // White's e4 pawn falls off the board while Black is to move.
    sc.lift("e4");
    let t_off = sc.t;
    let threshold = sc.tracker.config().displaced_alert_ms;
    sc.wait(threshold + 1_000);
    let a = one_alert(&sc, "displaced_pieces", t_off + threshold, 1_000);
    assert_eq!(a.squares, s(&["e4"]));
    assert!(a
        .message
        .contains("e4 should hold White's pawn but is empty"));
    // Black plays on around it; the pawn is put back later.
    sc.play("e7e5", B);
    assert!(resolved(&sc).is_empty(), "e4 is still empty");
    sc.place("e4", 'P');
    assert_eq!(resolved(&sc).len(), 1);
    sc.play("g1f3", W);
    assert_eq!(sc.sans(), s(&["e5", "Nf3"]), "after e4");
}

#[test]
fn l7_4_a_hand_holding_a_piece_is_a_move_under_way() {
    let mut sc = game(TrackerConfig::default(), None);
    let threshold = sc.tracker.config().displaced_alert_ms;
    // The mover's knight in the hand for longer than the threshold: thinking.
    sc.lift("g1").wait(threshold + 2_000);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    sc.place("f3", 'N').press(W);
    assert_eq!(sc.sans(), s(&["Nf3"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn l7_4_displaced_alert_ms_is_configurable() {
    let mut sc = game(
        TrackerConfig {
            displaced_alert_ms: 2_000,
            ..TrackerConfig::default()
        },
        None,
    );
    sc.play("e2e4", W);
    // White's pawn pushed on to e5 by accident while Black thinks.
    sc.lift("e4");
    let t_wrong = sc.t;
    sc.place("e5", 'P');
    sc.wait(3_500);
    one_alert(&sc, "displaced_pieces", t_wrong + 2_000, 1_000);
}

// ----- 9.2 / 9.3 draw claims (info) ------------------------------------------------------

#[test]
fn l9_2_threefold_claim_available() {
    let mut sc = game(TrackerConfig::default(), None);
    let line = [
        "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
    ];
    for (i, m) in line.iter().enumerate() {
        sc.play(m, if i % 2 == 0 { W } else { B });
        let claims = raised(&sc, "draw_claim_available");
        // After ply 7 Black can claim by announcing Ng8 (9.2.1.1); after ply 8 the
        // same repetition has happened and is not reported twice.
        assert_eq!(claims.len(), usize::from(i >= 6), "after ply {}", i + 1);
    }
    let claims = raised(&sc, "draw_claim_available");
    let a = claims[0].1;
    assert_eq!((a.article.as_str(), a.severity), ("9.2", Severity::Info));
    assert!(
        a.message
            .contains("Black may claim a draw by announcing Ng8"),
        "{}",
        a.message
    );
    assert_eq!(sc.sans().len(), 8, "the game goes on");
    assert!(raised(&sc, "automatic_draw").is_empty());
}

#[test]
fn l9_3_fifty_move_claim_available() {
    let mut sc = game(
        TrackerConfig::default(),
        Some("8/8/8/4k3/8/8/8/R3K3 w - - 97 80"),
    );
    sc.play("a1a2", W);
    assert!(raised(&sc, "draw_claim_available").is_empty());
    sc.play("e5d5", B).play("a2a3", W).play("d5e5", B);
    let claims = raised(&sc, "draw_claim_available");
    assert_eq!(claims.len(), 1, "{:?}", sc.alerts());
    assert_eq!(claims[0].1.article, "9.3");
    assert!(claims[0].1.message.contains("White may claim a draw"));
    assert_eq!(sc.sans().len(), 4);
}

// ----- lifecycle of the set-up alerts (7.2.1, 7.2.2) ---------------------------------------

#[test]
fn l7_2_1_wrong_set_up_resolved_when_the_game_starts() {
    let mut sc = Script::empty(TrackerConfig::default());
    let t_shown = sc.t;
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKQBNR");
    // Raised while the wrong set-up stands, within its hold plus a second.
    let hold = sc.tracker.config().start_hold_ms;
    let a = one_alert(&sc, "wrong_initial_position", t_shown, hold + 1_000).clone();
    assert_eq!(
        (a.article.as_str(), a.severity),
        ("7.2.1", Severity::Warning)
    );
    assert_eq!(a.squares, s(&["d1", "e1"]));
    let id = a.id;
    sc.lift("d1")
        .lift("e1")
        .place("d1", 'Q')
        .place("e1", 'K')
        .wait(1_000);
    assert_eq!(sc.game_starts().len(), 1);
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, id);
    assert!(r[0].1.reason.contains("correct initial position"));
}

#[test]
fn l7_2_2_quarter_turn_resolved_when_the_board_is_turned_back() {
    let mut sc = Script::from_board_fen(START, Turn::Quarter);
    let a = raised(&sc, "board_rotated_90");
    assert_eq!(a.len(), 1);
    let id = a[0].1.id;
    sc.play("e2e4", W);
    assert!(resolved(&sc).is_empty());
    sc.turn = Turn::Normal;
    sc.t += 220;
    sc.send();
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, id);
    sc.play("e7e5", B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
}

// ----- the normal flow -----------------------------------------------------------------

#[test]
fn normal_games_raise_and_resolve_nothing() {
    let games = support::games::load();
    for (idx, g) in games.iter().enumerate().step_by(97).take(12) {
        let ucis: Vec<&str> = g.uci.iter().map(String::as_str).collect();
        let d = support::hand::drive_game(
            &g.start_fen,
            &ucis,
            support::hand::HandStyle {
                rotated: idx % 2 == 1,
                white_right: idx % 3 == 1,
                seed: idx,
                occupancy: false,
            },
        );
        for e in &d.events {
            match e {
                TrackerEvent::Resolved(r) => panic!("{}#{}: resolved {r:?}", g.file, g.game),
                TrackerEvent::Alert(a)
                    if a.severity >= Severity::Warning || a.kind == "two_hands_suspected" =>
                {
                    panic!("{}#{}: {a:?}", g.file, g.game)
                }
                _ => {}
            }
        }
    }
}

// ----- A.4.2 the illegal move stands (rapid/blitz without adequate supervision) ------

#[test]
fn la_4_2_unsupervised_blitz_illegal_move_answered_stands() {
    let mut sc = game(config("180+2", Regime::Unsupervised), Some(ROOK_BLOCKED));
    let t_press = illegal_rook_move(&mut sc);
    let illegal = one_alert(&sc, "illegal_move", t_press, 1_000).clone();
    assert!(illegal
        .penalty
        .as_deref()
        .expect("penalty")
        .contains("A.4.2"));
    // Black does not claim: he answers from the position on the board.
    sc.lift("e8").place("d7", 'k');
    let t_reply = sc.t;
    sc.wait(300).press(B);
    let stands = one_alert(&sc, "illegal_move_stands", t_reply, 0).clone();
    assert_eq!(
        (stands.article.as_str(), stands.severity),
        ("A.4.2", Severity::Warning)
    );
    assert_eq!(stands.squares, s(&["f1", "f3"]));
    assert!(stands
        .message
        .contains("Black answered White's illegal move"));
    assert!(stands
        .message
        .contains("White's rook on f1 was moved to f3"));
    assert!(stands.message.contains("Kd7"));
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, illegal.id);
    assert!(r[0].1.reason.contains("the illegal move stands (A.4.2)"));
    // The record restarts from the position the illegal move left.
    let starts = sc.game_starts();
    assert_eq!(starts.len(), 1);
    assert!(matches!(
        starts[0],
        eboard_bridge::events::GameEvent::GameStart { fen, .. }
            if fen == "4k3/8/8/8/8/5R2/5P2/4K3 b - - 0 1"
    ));
    // The game goes on from there.
    sc.play("e1e2", W).play("d7c6", B);
    assert_eq!(sc.sans(), s(&["Kd7", "Ke2", "Kc6"]));
    assert!(sc.retractions().is_empty());
}

#[test]
fn la_4_2_supervised_or_standard_keeps_waiting_for_the_correction() {
    for (tc, regime) in [
        ("180+2", Regime::Supervised),
        ("5400+30", Regime::Unsupervised),
    ] {
        let mut sc = game(config(tc, regime), Some(ROOK_BLOCKED));
        illegal_rook_move(&mut sc);
        sc.lift("e8")
            .place("d7", 'k')
            .wait(300)
            .press(B)
            .wait(2_000);
        assert!(
            raised(&sc, "illegal_move_stands").is_empty(),
            "{tc} {regime:?}"
        );
        assert!(sc.game_starts().is_empty());
        assert!(sc.sans().is_empty());
        assert!(resolved(&sc).is_empty(), "the illegal move is still open");
        // The arbiter restores the position before the illegal move.
        sc.lift("d7").place("e8", 'k').lift("f3").place("f1", 'R');
        assert_eq!(resolved(&sc).len(), 1);
        sc.arbiter_runs_clock_for(W).wait(500);
        sc.play("e1e2", W);
        assert_eq!(sc.sans(), s(&["Ke2"]));
    }
}

#[test]
fn la_4_2_the_record_splits_into_two_valid_games() {
    use eboard_bridge::events::GameEvent;
    use eboard_bridge::pgn::{GameInfo, GameRecorder};
    let mut sc = Script::empty(config("900+10", Regime::Unsupervised));
    sc.setup(START);
    sc.start_clock();
    sc.play("e2e4", W).play("e7e5", B);
    // White's knight jumps g1-g3 (not a knight move); Black replies Nc6.
    sc.lift("g1")
        .place("g3", 'N')
        .wait(300)
        .press_only(W)
        .wait(2_000);
    sc.lift("b8").place("c6", 'n').wait(300).press(B);
    sc.play("f1c4", W);
    let mut recorder = GameRecorder::new(GameInfo::default());
    for (_, e) in &sc.events {
        if let TrackerEvent::Game(g) = e {
            recorder.push(g).expect("the recorder takes every event");
        }
    }
    let current = recorder
        .current()
        .expect("the game from the stood position")
        .clone();
    let games = recorder.finish();
    assert_eq!(
        games.len(),
        2,
        "the moves before, and the game from the position"
    );
    for g in &games {
        g.check_moves().expect("each part is a valid game");
    }
    let before = games[0].to_pgn();
    assert!(
        before.contains("1. e4 ") && before.contains(" e5") && !before.contains("Ng3"),
        "{before}"
    );
    let after = current.to_pgn();
    assert!(
        after.contains("[FEN \"rnbqkbnr/pppp1ppp/8/4p3/4P3/6N1/PPPP1PPP/RNBQKB1R b KQkq - 0 2\"]"),
        "{after}"
    );
    assert!(
        after.contains("2... Nc6 ") && after.contains("3. Bc4"),
        "{after}"
    );
    let starts: Vec<_> = sc
        .events
        .iter()
        .filter(|(_, e)| matches!(e, TrackerEvent::Game(GameEvent::GameStart { .. })))
        .collect();
    assert_eq!(starts.len(), 2);
}

#[test]
fn la_4_2_an_illegal_move_leaving_the_own_king_in_check_cannot_stand() {
    // White's rook e2 is pinned by the rook on e8; moving it exposes White's king.
    let mut sc = game(
        config("180+2", Regime::Unsupervised),
        Some("4r1k1/8/8/8/8/8/4R3/4K3 w - - 0 1"),
    );
    sc.lift("e2").place("a2", 'R').wait(300).press_only(W);
    let t_press = sc.t;
    sc.wait(2_000);
    let a = one_alert(&sc, "illegal_move", t_press, 1_000).clone();
    assert!(a.message.contains("White's rook on e2 was moved to a2"));
    sc.lift("g8")
        .place("h8", 'k')
        .wait(300)
        .press(B)
        .wait(2_000);
    // No legal position to follow: the arbiter has to restore it.
    assert!(raised(&sc, "illegal_move_stands").is_empty());
    assert!(sc.game_starts().is_empty());
    assert!(resolved(&sc).is_empty());
}

#[test]
fn l7_5_1_occupancy_board_counts_without_naming_pieces() {
    let mut sc = Script::occupancy_from_fen(ROOK_BLOCKED);
    sc.clear();
    let t_press = illegal_rook_move(&mut sc);
    let a = one_alert(&sc, "illegal_move", t_press, 1_000).clone();
    assert_eq!((a.article.as_str(), a.severity), ("7.5.1", Severity::Error));
    assert!(
        a.message.contains("illegal move number 1 by White"),
        "{}",
        a.message
    );
    assert!(a
        .penalty
        .as_deref()
        .expect("penalty")
        .contains("two minutes"));
    // Restored: resolved.
    sc.lift("f3").place("f1", 'R');
    sc.wait(1_000);
    let r = resolved(&sc);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1.id, a.id);
}
