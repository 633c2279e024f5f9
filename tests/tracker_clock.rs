//! Clock Laws at the tracker: `[%clk]` against the virtual DGT 3000's own record.

use std::path::PathBuf;

use eboard_bridge::sim::accuracy::{run_game, sim_options, Setup};
use eboard_bridge::sim::games::load_index;

/// Every verified move carries the mover's time after its press, to the second:
/// real games played by the hand model on the virtual board and clock, read back
/// through the session and tracker, compared with the clock's own press record.
#[test]
fn every_verified_move_carries_the_clock_to_the_second() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    let (mut checked, mut exact, mut games) = (0, 0, 0);
    let mut wrong = Vec::new();
    for (i, entry) in index.iter().enumerate().filter(|(i, _)| i % 40 == 3) {
        let Some(game) = entry.game.as_ref() else {
            continue;
        };
        let setup = Setup::ALL[i % 3];
        let out = run_game(game, &sim_options(setup, i as u64, true));
        games += 1;
        checked += out.clk_checked;
        exact += out.clk_exact;
        if !out.clk_mismatches.is_empty() {
            wrong.push(format!(
                "{}#{} [{}]: {:?}",
                entry.file,
                entry.index,
                setup.name(),
                out.clk_mismatches
            ));
        }
    }
    assert!(games >= 40, "only {games} games sampled");
    assert!(checked > 2_000, "only {checked} moves compared");
    assert!(
        wrong.is_empty(),
        "{exact}/{checked} exact; {} games wrong: {wrong:#?}",
        wrong.len()
    );
}

/// A move left unpressed whose reply is still in the hand when the wait for
/// the late press would end: own hands in time trouble, game 49, a3 made
/// without a press, Black's queen held over the board for 3.7 s, White's press
/// 0.1 s after Qc7 landed. a3 was verified while the queen was in the air and
/// carried White's running clock, 28 s short of the 30 s increment the press
/// then added. It now waits for the press while the reply is under way (10 s
/// at most: game 90 at normal pace holds a rook 6.9 s).
#[test]
fn a_late_press_after_a_reply_held_long_gives_the_clock_after_it() {
    use eboard_bridge::sim::accuracy::{Hands, Model, Pace};
    let hands = Hands {
        model: Model::Own,
        pace: Pace::TimeTrouble,
        forget_press: 0.02,
    };
    let out = bench_game(49, hands);
    assert_eq!(out.verified, out.expected);
    assert!(out.clk_checked > 100, "{} compared", out.clk_checked);
    assert!(out.clk_mismatches.is_empty(), "{:?}", out.clk_mismatches);
}

/// Moves verified without a press, then pressed late, carry the time after
/// the press: blind hands at normal pace with one press in ten forgotten,
/// game 3, where five moves stood for the unpressed hold before their
/// player pressed (Kxb4 pressed 25 s after it was made). They carried the
/// clock as it ran when the hold ran out, up to 27 s off.
#[test]
fn moves_pressed_after_the_unpressed_hold_carry_the_clock_after_the_press() {
    use eboard_bridge::sim::accuracy::{Hands, Model, Pace};
    let hands = Hands {
        model: Model::Blind,
        pace: Pace::Normal,
        forget_press: 0.1,
    };
    let out = bench_game(3, hands);
    assert_eq!(out.verified, out.expected);
    assert!(out.clk_checked > 50, "{} compared", out.clk_checked);
    assert!(out.clk_mismatches.is_empty(), "{:?}", out.clk_mismatches);
}

/// Presses whose clock report comes in just after a scan of the board are
/// read as made after that scan as well as before it: blind hands in time
/// trouble, 2 % forgotten. Game 1690: White's press for 2. Nf3 and Black's
/// for 2...Nc6, both made with the piece in the hand, came in one clock report
/// 6 ms after the scan showing Black's knight lifted and White's on f3. Read only
/// before that scan, Black's press found no ply of his begun and went to
/// 1...e5, whose own press had been read as the start's, come late (though the
/// clock had been seen started): 1...e5 was published with 2...Nc6's clock,
/// an increment (30 s) too high. Game 1909: 13...Qb6, 14. Qg4 and 14...h6
/// carried 30, 59 and 29 s too much; game 335, ply 33, 60 s.
#[test]
fn presses_reported_just_after_a_scan_time_their_own_moves() {
    use eboard_bridge::sim::accuracy::{Hands, Model, Pace};
    let hands = Hands {
        model: Model::Blind,
        pace: Pace::TimeTrouble,
        forget_press: 0.02,
    };
    for i in [1909, 335, 1690] {
        let out = bench_game(i, hands);
        assert_eq!(out.verified, out.expected, "game {i}");
        assert!(
            out.clk_checked > 50,
            "game {i}: {} compared",
            out.clk_checked
        );
        assert!(
            out.clk_mismatches.is_empty(),
            "game {i}: {:?}",
            out.clk_mismatches
        );
    }
}

/// Game `i` of the data set played by `hands` on a DGT board, set-up normal,
/// as the accuracy bench plays it.
fn bench_game(
    i: usize,
    hands: eboard_bridge::sim::accuracy::Hands,
) -> eboard_bridge::sim::accuracy::Outcome {
    use eboard_bridge::sim::accuracy::{run_game_as, sim_options_for};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let index = load_index(&dir.join("expected/games-index.jsonl")).expect("index loads");
    let games: Vec<_> = index.iter().filter_map(|e| e.game.as_ref()).collect();
    run_game_as(
        games[i],
        &sim_options_for(Setup::Normal, i as u64, true, hands),
        hands.model,
    )
}

// ----- clock Laws on scripted readings ------------------------------------------

mod support;

use eboard_bridge::events::AlertKind;
use eboard_bridge::events::{Alert, GameEvent, Millis, Severity, TrackerEvent};
use eboard_bridge::timecontrol::TimeControl;
use eboard_bridge::tracker::TrackerConfig;
use shakmaty::Color::{Black as B, White as W};
use support::Script;

/// Alerts of `kind` with the time they were raised.
fn alerts_of(sc: &Script, kind: AlertKind) -> Vec<(Millis, &Alert)> {
    sc.events
        .iter()
        .filter_map(|(t, e)| match e {
            TrackerEvent::Alert(a) if a.kind == kind => Some((*t, a)),
            _ => None,
        })
        .collect()
}

/// The running side's display reaches zero: the DGT flag bit and 0:00.
fn flag(sc: &mut Script, c: shakmaty::Color) -> Millis {
    sc.t += 1_000;
    let side = sc.side_of(c);
    let st = match side {
        eboard_protocols::ClockSide::Left => &mut sc.clock.left,
        eboard_protocols::ClockSide::Right => &mut sc.clock.right,
    };
    st.millis = 0;
    st.flag_fallen = true;
    st.flag_shown = true;
    sc.report_clock();
    sc.t
}

#[test]
fn flag_fall_names_the_player_and_the_result_without_publishing_it() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    let shown_at = flag(&mut sc, B);
    sc.wait(500);
    let flags = alerts_of(&sc, AlertKind::FlagFall);
    assert_eq!(flags.len(), 1, "{:?}", sc.alerts());
    let (t, a) = flags[0];
    assert!(
        t - shown_at <= 1_000,
        "raised {} ms after the reading",
        t - shown_at
    );
    assert_eq!((a.article.as_str(), a.severity), ("6.9", Severity::Error));
    assert!(
        a.message.starts_with("Black's flag fell after ply 1"),
        "{}",
        a.message
    );
    assert!(a.message.contains("White wins (1-0)"), "{}", a.message);
    // 6.8: the flag counts once the arbiter observes it or a player claims it.
    assert!(sc.results().is_empty());
    // Readings that keep showing the fallen flag raise nothing new.
    sc.t += 1_000;
    sc.report_clock();
    assert_eq!(alerts_of(&sc, AlertKind::FlagFall).len(), 1);
}

#[test]
fn flag_fall_is_a_draw_when_the_opponent_cannot_mate_and_the_second_flag_is_info() {
    // Black has a bare king: White's flag falling draws (6.9).
    let mut sc = Script::from_fen("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1");
    sc.play("e2e4", W).play("e8d7", B);
    flag(&mut sc, W);
    let a = alerts_of(&sc, AlertKind::FlagFall);
    assert_eq!(a.len(), 1);
    assert!(a[0].1.message.contains("drawn"), "{}", a[0].1.message);
    assert!(a[0].1.message.contains("Black cannot checkmate"));
    // Nobody stopped the clock: Black's flag falls later too.
    flag(&mut sc, B);
    let a = alerts_of(&sc, AlertKind::FlagFall);
    assert_eq!(a.len(), 2);
    assert_eq!(a[1].1.severity, Severity::Info);
    assert!(
        a[1].1.message.contains("White's fell first"),
        "{}",
        a[1].1.message
    );
}

#[test]
fn a_clock_never_set_is_not_a_flag_fall() {
    let mut sc = Script::empty(TrackerConfig::default());
    sc.clock.left.millis = 0;
    sc.clock.right.millis = 0;
    sc.report_clock();
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.report_clock();
    sc.hand("e2e4").wait(3_000);
    assert!(alerts_of(&sc, AlertKind::FlagFall).is_empty());
    assert!(
        alerts_of(&sc, AlertKind::ClockStoppedMoves).is_empty(),
        "6.6: not started yet"
    );
}

fn with_time_control(tc: &str) -> Script {
    let mut sc = Script::empty(TrackerConfig {
        time_control: Some(tc.parse::<TimeControl>().expect("time control parses")),
        ..TrackerConfig::default()
    });
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.start_clock();
    sc
}

/// The player of `c` presses; the clock adds `added_ms` to his time with the press.
fn press_adding(sc: &mut Script, c: shakmaty::Color, added_ms: u64) -> Millis {
    sc.t += 150;
    sc.report_clock();
    let side = sc.side_of(c);
    sc.clock.lever_high = Some(side.other());
    match side {
        eboard_protocols::ClockSide::Left => sc.clock.left.millis += added_ms,
        eboard_protocols::ClockSide::Right => sc.clock.right.millis += added_ms,
    }
    sc.report_clock();
    sc.t
}

#[test]
fn control_move_without_the_next_period_raises_6_10_2() {
    // Two moves in 300 s, then 60 s for the rest: White's second move is a control.
    let mut sc = with_time_control("2/300:60");
    sc.play("e2e4", W).play("e7e5", B);
    sc.hand("g1f3").wait(300);
    let pressed = press_adding(&mut sc, W, 0);
    sc.wait(3_000);
    let a = alerts_of(&sc, AlertKind::ControlTimeNotAdded);
    assert_eq!(a.len(), 1, "{:?}", sc.alerts());
    let (t, alert) = a[0];
    assert_eq!(
        (alert.article.as_str(), alert.severity),
        ("6.10.2", Severity::Error)
    );
    assert!(
        t >= pressed && t - pressed <= 2_500,
        "raised {} ms after the press",
        t - pressed
    );
    assert!(alert
        .message
        .contains("White completed the time control with ply 3"));
    // The expected time is what White had plus the 60 s period.
    assert!(
        alert.message.contains("instead of about 0:05:"),
        "{}",
        alert.message
    );
    // Black's second move is a control too, and this time the clock is right.
    sc.hand("b8c6").wait(300);
    press_adding(&mut sc, B, 60_000);
    sc.wait(3_000);
    assert_eq!(alerts_of(&sc, AlertKind::ControlTimeNotAdded).len(), 1);
}

#[test]
fn control_move_with_the_period_added_is_quiet() {
    let mut sc = with_time_control("2/300+5:60+5");
    sc.play("e2e4", W).play("e7e5", B);
    sc.hand("g1f3").wait(300);
    press_adding(&mut sc, W, 65_000);
    sc.wait(3_000);
    sc.hand("b8c6").wait(300);
    press_adding(&mut sc, B, 65_000);
    sc.wait(3_000);
    assert!(
        alerts_of(&sc, AlertKind::ControlTimeNotAdded).is_empty(),
        "{:?}",
        sc.alerts()
    );
    // Not a control move: nothing is checked.
    sc.play("f1c4", W).play("g8f6", B);
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
    assert_eq!(sc.sans().len(), 6);
}

#[test]
fn moves_on_a_paused_clock_warn_once_and_resolve_when_it_runs() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.t += 100;
    sc.clock.running = false;
    sc.report_clock();
    sc.hand("e7e5");
    let shown_at = sc.t;
    sc.wait(500);
    sc.hand("g1f3").wait(500);
    let a = alerts_of(&sc, AlertKind::ClockStoppedMoves);
    assert_eq!(a.len(), 1, "once per pause: {:?}", sc.alerts());
    let (t, alert) = a[0];
    assert!(t - shown_at <= 1_000);
    assert_eq!(
        (alert.article.as_str(), alert.severity),
        ("6.11", Severity::Warning)
    );
    let id = alert.id;
    assert!(id > 0);
    sc.t += 100;
    sc.clock.running = true;
    sc.report_clock();
    let resolved: Vec<_> = sc
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            TrackerEvent::Resolved(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        (resolved[0].id, &resolved[0].kind),
        (id, &AlertKind::ClockStoppedMoves)
    );
    // A new pause is a new episode.
    sc.press(B).wait(100);
    sc.clock.running = false;
    sc.report_clock();
    sc.hand("b8c6").wait(500);
    assert_eq!(alerts_of(&sc, AlertKind::ClockStoppedMoves).len(), 2);
}

#[test]
fn no_clock_alert_after_the_game_has_ended() {
    // Fool's mate, then the players stop the clock and move pieces about.
    let mut sc = Script::standard();
    sc.play("f2f3", W)
        .play("e7e5", B)
        .play("g2g4", W)
        .play("d8h4", B);
    assert!(matches!(sc.results()[..], [GameEvent::Result { .. }]));
    sc.t += 100;
    sc.clock.running = false;
    sc.report_clock();
    sc.hand("h4e7").wait(1_000);
    flag(&mut sc, W);
    assert!(alerts_of(&sc, AlertKind::ClockStoppedMoves).is_empty());
    assert!(alerts_of(&sc, AlertKind::FlagFall).is_empty());
}

#[test]
fn two_presses_inside_one_report_still_give_each_mover_his_time() {
    // Black forgets to press after e5, White replies at once, then Black presses
    // late and White presses too, both between two clock reports: the lever is
    // back where it was, and only the increments show the presses.
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.hand("e7e5").wait(300);
    sc.hand("g1f3").wait(300);
    assert_eq!(sc.sans().len(), 1, "e5 waits for Black's late press");
    sc.t += 150;
    sc.report_clock();
    sc.t += 900;
    sc.clock.left.millis += 5_000;
    sc.clock.right.millis += 5_000;
    sc.report_clock();
    sc.wait(600);
    assert_eq!(sc.sans().len(), 3);
    let m = sc.moves();
    assert_eq!(m[1].clock_ms, Some(sc.clock.side(sc.side_of(B)).millis));
    assert_eq!(m[2].clock_ms, Some(sc.clock.side(sc.side_of(W)).millis));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
}

#[test]
fn a_pause_alert_still_open_is_resolved_when_the_next_game_starts() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.t += 100;
    sc.clock.running = false;
    sc.report_clock();
    sc.hand("e7e5").wait(500);
    let id = alerts_of(&sc, AlertKind::ClockStoppedMoves)[0].1.id;
    // The players set up the next game with the clock still stopped.
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.wait(4_000);
    assert_eq!(sc.game_starts().len(), 2, "{:?}", sc.events);
    assert_eq!(sc.resolved_ids(), vec![id]);
}

#[test]
fn a_clock_first_heard_after_the_first_press_is_mapped_by_its_increment() {
    // The arbiter starts White's clock without moving the lever, so the clock
    // says nothing; White plays e4 at once and presses. The first running
    // report comes after that press: the lever lets Black's side run, and
    // White's display has gained its increment. Left is White's, and the
    // change of lever is White's press for e4, not the start.
    let mut sc = Script::empty(TrackerConfig::default());
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.report_clock();
    sc.hand("e2e4");
    sc.t += 50;
    sc.clock.running = true;
    sc.clock.lever_high = Some(sc.side_of(B));
    sc.clock.left.millis += 30_000;
    sc.report_clock();
    replies_then_every_ply_has_its_movers_time(&mut sc);
}

#[test]
fn a_press_after_a_slow_reply_still_times_the_move() {
    // White plays c3 and does not press yet; Black castles at once but slowly
    // (king on g8, the rook follows 1.2 s later); White presses 0.7 s after
    // the rook stands and the clock reports it 0.15 s later: more than two
    // seconds after Black's hand began. c3 carries White's time after that
    // press, and its thinking time.
    let mut sc = Script::standard();
    for (i, m) in ["e2e4", "e7e5", "g1f3", "g8f6", "f1c4", "f8c5"]
        .iter()
        .enumerate()
    {
        sc.play(m, if i % 2 == 0 { W } else { B });
    }
    sc.hand("c2c3").wait(800);
    sc.lift("e8").wait(200);
    sc.place("g8", 'k').wait(1_000);
    sc.lift("h8").wait(200);
    sc.place("f8", 'r').wait(700);
    sc.t += 150;
    sc.clock.left.millis += 28_000;
    sc.clock.lever_high = Some(sc.side_of(B));
    sc.report_clock();
    let white = sc.clock.left.millis;
    sc.wait(600);
    assert_eq!(sc.sans()[6..], ["c3"]);
    assert_eq!(sc.moves()[6].clock_ms, Some(white), "c3 has White's time");
    assert!(sc.moves()[6].emt_ms.is_some(), "and its thinking time");
    assert!(sc.serious_alerts().is_empty(), "{:?}", sc.alerts());
}

#[test]
fn a_clock_first_heard_after_a_press_made_before_the_first_move_stands_is_mapped_by_its_increment()
{
    // As above, but White presses with the pawn still in the hand (time
    // trouble: the press comes before the release), and the clock's first
    // running report arrives before the pawn is down. Nothing is on the line
    // yet, yet the lever's change is still White's press, not the start:
    // White's display has gained its increment, the running one has not.
    let mut sc = Script::empty(TrackerConfig::default());
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.report_clock();
    sc.lift("e2");
    sc.t += 30;
    sc.clock.running = true;
    sc.clock.lever_high = Some(sc.side_of(B));
    sc.clock.left.millis += 30_000;
    sc.report_clock();
    sc.place("e4", 'P');
    replies_then_every_ply_has_its_movers_time(&mut sc);
}

/// After 1. e4 with White's first press read (White's display 300 s + 30 s):
/// e5 and Nf3 are pressed, and each ply carries its mover's time.
fn replies_then_every_ply_has_its_movers_time(sc: &mut Script) {
    sc.wait(400);
    sc.hand("e7e5");
    sc.t += 100;
    sc.clock.right.millis += 29_000;
    sc.clock.lever_high = Some(sc.side_of(W));
    sc.report_clock();
    let black = sc.clock.right.millis;
    sc.wait(400);
    sc.hand("g1f3");
    sc.t += 100;
    sc.clock.left.millis += 29_500;
    sc.clock.lever_high = Some(sc.side_of(B));
    sc.report_clock();
    let white = sc.clock.left.millis;
    sc.wait(600);
    assert_eq!(sc.sans(), ["e4", "e5", "Nf3"]);
    let m = sc.moves();
    assert_eq!(m[0].clock_ms, Some(300_000 + 30_000), "e4 has White's time");
    assert_eq!(m[1].clock_ms, Some(black), "e5 has Black's time");
    assert_eq!(m[2].clock_ms, Some(white), "Nf3 has White's time");
    assert!(sc.serious_alerts().is_empty(), "{:?}", sc.alerts());
}

/// The `MoveClock` events the tracker sent: (ply, clock_ms).
fn move_clocks(sc: &Script) -> Vec<(u32, u64)> {
    sc.events
        .iter()
        .filter_map(|(_, e)| match e {
            TrackerEvent::Game(GameEvent::MoveClock { ply, clock_ms, .. }) => {
                Some((*ply, *clock_ms))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_move_verified_unpressed_takes_the_time_of_its_movers_late_press() {
    // White plays Nf3 and thinks before pressing: the knight stands for the
    // unpressed hold and Nf3 is published with White's clock still running.
    // White presses 20 s after the move, with the increment: the record's
    // [%clk] is what the clock shows after that press, not what it showed
    // when the hold ran out.
    use eboard_bridge::pgn::{GameInfo, GameRecord};
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    sc.hand("g1f3").wait(9_000);
    sc.report_clock();
    assert_eq!(sc.sans(), ["e4", "e5", "Nf3"], "Nf3 stood for the hold");
    let held = sc.moves()[2].clock_ms.expect("a clock is connected");
    sc.wait(11_000);
    sc.t += 150;
    sc.report_clock();
    sc.clock.left.millis += 30_000;
    sc.clock.lever_high = Some(sc.side_of(B));
    sc.report_clock();
    let pressed = sc.clock.side(sc.side_of(W)).millis;
    sc.wait(600);
    assert!(
        pressed > held + 5_000,
        "{pressed} vs {held}: the test needs them apart"
    );
    assert_eq!(move_clocks(&sc), [(3, pressed)]);
    // A record built from the events carries the press's time.
    let mut record = GameRecord::new(
        GameInfo::default(),
        shakmaty::fen::Fen::default().to_string(),
        None,
    );
    for (_, e) in &sc.events {
        if let TrackerEvent::Game(g) = e {
            record.apply(g).expect("applies");
        }
    }
    assert_eq!(record.moves[2].clock_ms, Some(pressed));
    assert!(record.moves[2].emt_ms.is_some(), "and the time White used");
    // Black's reply is timed by his own press as usual; White's next press is
    // for his next move, not for Nf3 again.
    sc.play("b8c6", B).play("f1c4", W);
    assert_eq!(move_clocks(&sc), [(3, pressed)]);
    assert!(sc.serious_alerts().is_empty(), "{:?}", sc.alerts());
}

#[test]
fn a_press_before_the_next_move_is_seen_does_not_re_time_the_move_before() {
    // Nf3 verified unpressed; Black's Nc6 lands and White, in time trouble,
    // lifts his bishop at once and presses before letting go. The clock
    // reports the press before the board reports the lift: the board last
    // changed less than a scan earlier, so the press may be for the move
    // under way. It is (Bc4 lands a moment later), and Nf3 keeps its time.
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    sc.hand("g1f3").wait(9_000);
    assert_eq!(sc.sans().len(), 3, "Nf3 stood for the hold");
    let nf3 = sc.moves()[2].clock_ms;
    sc.hand("b8c6");
    sc.press_only(W);
    sc.wait(100);
    sc.lift("f1").wait(200);
    // Black's press was forgotten and White's came before his move showed:
    // both moves stand for the unpressed hold.
    sc.place("c4", 'B').wait(9_000);
    assert_eq!(sc.sans()[2..], ["Nf3", "Nc6", "Bc4"]);
    assert!(move_clocks(&sc).is_empty(), "{:?}", move_clocks(&sc));
    assert_eq!(sc.moves()[2].clock_ms, nf3);
    assert_eq!(
        sc.moves()[4].clock_ms,
        Some(sc.clock.side(sc.side_of(W)).millis),
        "the press times Bc4"
    );
}
