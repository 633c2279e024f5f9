//! The 59 scenarios of reconstruction.md §4, each driven through the tracker by a
//! scripted hand with realistic scan timing, asserting the verified move list and
//! the alerts.

mod support;

use eboard_bridge::events::{GameEvent, GameResult, Severity, TrackerEvent};
use eboard_bridge::tracker::TrackerConfig;
use eboard_protocols::{ClockSide, MagicPiece, Picture};
use shakmaty::Color;
use support::{Script, Turn};

const W: Color = Color::White;
const B: Color = Color::Black;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Standard start, then the Italian up to the point where White may castle.
fn italian() -> Script {
    let mut sc = Script::standard();
    for (i, m) in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]
        .iter()
        .enumerate()
    {
        sc.play(m, if i % 2 == 0 { W } else { B });
    }
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6"]));
    sc.clear();
    sc
}

fn fen(f: &str) -> Script {
    let mut sc = Script::from_fen(f);
    assert_eq!(sc.game_starts().len(), 1, "operator start accepted");
    sc.clear();
    sc
}

fn assert_quiet(sc: &Script) {
    assert!(
        sc.serious_alerts().is_empty(),
        "unexpected alerts: {:?}",
        sc.alerts()
    );
    assert!(sc.retractions().is_empty(), "unexpected retractions");
}

// ----- 4.1 castling -----------------------------------------------------------

#[test]
fn s01_castling_king_first() {
    let mut sc = italian();
    sc.lift("e1").place("g1", 'K');
    sc.wait(800);
    assert!(
        sc.sans().is_empty(),
        "the king on g1 alone publishes nothing"
    );
    sc.lift("h1").place("f1", 'R').wait(200).press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s02_castling_king_slid_with_pause_on_f1() {
    let mut sc = italian();
    sc.lift("e1").place("f1", 'K').wait(600);
    sc.lift("f1")
        .place("g1", 'K')
        .lift("h1")
        .place("f1", 'R')
        .press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    assert_quiet(&sc);
}

#[test]
fn s03_castling_rook_first_with_long_pause() {
    let mut sc = italian();
    sc.lift("h1").place("f1", 'R').wait(2_000);
    sc.lift("e1").place("g1", 'K').press(W);
    assert_eq!(sc.sans(), s(&["O-O"]));
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("rook_first_castling", "4.4.2")
    );
    assert_eq!(a[0].severity, Severity::Info);
    assert_eq!(a[0].squares, s(&["h1"]));
}

#[test]
fn s04_long_castling_rook_first() {
    let mut sc = fen("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1");
    sc.lift("a1")
        .place("d1", 'R')
        .wait(500)
        .lift("e1")
        .place("c1", 'K')
        .press(W);
    assert_eq!(sc.sans(), s(&["O-O-O"]));
    assert_eq!(sc.alert_kinds(), s(&["rook_first_castling"]));
}

#[test]
fn s05_castling_both_pieces_in_the_air_either_order() {
    for king_down_first in [true, false] {
        let mut sc = italian();
        sc.lift("e1").lift("h1");
        if king_down_first {
            sc.place("g1", 'K').place("f1", 'R');
        } else {
            sc.place("f1", 'R').place("g1", 'K');
        }
        sc.press(W);
        assert_eq!(sc.sans(), s(&["O-O"]));
        assert!(sc.alerts().is_empty());
    }
}

#[test]
fn s06_castling_without_the_right_is_an_illegal_move() {
    let mut sc = fen("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w kq - 0 1");
    sc.lift("e1")
        .place("g1", 'K')
        .lift("h1")
        .place("f1", 'R')
        .press(W)
        .wait(2_000);
    assert!(sc.sans().is_empty(), "no silent conversion into two moves");
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("illegal_move", "7.5.1")
    );
    assert_eq!(a[0].severity, Severity::Error);
    assert_eq!(a[0].squares, s(&["e1", "f1", "g1", "h1"]));
}

#[test]
fn s07_castling_through_an_attacked_square() {
    let mut sc = fen("4k3/8/8/8/8/8/5r2/4K2R w K - 0 1");
    sc.lift("e1")
        .place("g1", 'K')
        .lift("h1")
        .place("f1", 'R')
        .press(W)
        .wait(2_000);
    assert!(sc.sans().is_empty());
    assert_eq!(sc.alert_kinds(), s(&["illegal_move"]));
}

#[test]
fn s08_duplicate_reports_give_one_castling() {
    let mut sc = italian();
    sc.lift("e1").place("g1", 'K').lift("h1").place("f1", 'R');
    sc.send();
    sc.send();
    sc.press(W);
    sc.send();
    assert_eq!(sc.sans(), s(&["O-O"]));
}

// ----- 4.2 captures -----------------------------------------------------------

fn scandinavian() -> Script {
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("d7d5", B);
    sc.clear();
    sc
}

#[test]
fn s09_capture_captured_piece_removed_first() {
    let mut sc = scandinavian();
    sc.lift("d5").lift("e4").place("d5", 'P').press(W);
    assert_eq!(sc.sans(), s(&["exd5"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s10_capture_capturing_piece_held_first() {
    let mut sc = scandinavian();
    sc.lift("e4").lift("d5").wait(700).place("d5", 'P').press(W);
    assert_eq!(sc.sans(), s(&["exd5"]));
}

#[test]
fn s11_capture_swept_onto_the_square_with_flicker() {
    let mut sc = scandinavian();
    sc.lift("e4")
        .place("d5", 'P')
        .place("d5", 'p')
        .place("d5", 'P')
        .place("d5", 'p');
    assert!(sc.sans().is_empty());
    sc.place("d5", 'P').wait(400).press(W);
    assert_eq!(sc.sans(), s(&["exd5"]));
    assert_quiet(&sc);
}

#[test]
fn s12_capture_at_the_end_of_a_slide() {
    let mut sc = fen("n3k3/8/8/8/8/8/8/R3K3 w - - 0 1");
    sc.lift("a1");
    for sq in ["a2", "a3", "a4", "a5", "a6"] {
        sc.place(sq, 'R').lift(sq);
    }
    sc.place("a7", 'R')
        .lift("a8")
        .lift("a7")
        .place("a8", 'R')
        .press(W);
    assert_eq!(sc.sans(), s(&["Rxa8+"]));
    assert_quiet(&sc);
}

#[test]
fn s13_immediate_recapture_without_presses() {
    let mut sc = fen("r1bqkbnr/ppp2ppp/2np4/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 0 4");
    sc.lift("e5").lift("f3").place("e5", 'N');
    sc.lift("d6").lift("e5").place("e5", 'p');
    // White's clock still runs: the move waits `late_press_ms` for a late press,
    // whose time its [%clk] would carry, then the recapture proves it.
    sc.wait(2_000);
    assert_eq!(
        sc.sans(),
        s(&["Nxe5"]),
        "the recapture proves Nxe5 complete"
    );
    // White presses late (6.2.2), then Black completes the recapture.
    sc.press(W).press(B);
    assert_eq!(sc.sans(), s(&["Nxe5", "dxe5"]));
    assert!(sc.moves().iter().all(|m| !m.reconstructed));
    assert_quiet(&sc);
}

const FORK: &str = "rnbqkb1r/pppp1p1p/8/4p1p1/8/5N2/PPPPPPPP/RNBQKB1R w KQkq - 0 1";

fn occupancy(f: &str) -> Script {
    let mut sc = Script::occupancy_from_fen(f);
    assert_eq!(sc.game_starts().len(), 1, "occupancy start accepted");
    sc.clear();
    sc
}

#[test]
fn s14_occupancy_capture_square_from_the_lift_log() {
    // The captured pawn is taken off first: e5 was seen empty, so Nxe5, not Nxg5.
    let mut sc = occupancy(FORK);
    sc.lift("e5").lift("f3").place("e5", 'N').press(W);
    assert_eq!(sc.sans(), s(&["Nxe5"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s14b_occupancy_capture_without_log_needs_confirmation() {
    // Swept on: only f3 ever changes. Nxe5 and Nxg5 look the same: no guess,
    // both readings followed (a later move usually tells, so no alert yet).
    let mut sc = occupancy(FORK);
    sc.lift("f3").place("g5", 'N').press(W);
    assert!(sc.sans().is_empty());
    assert!(sc.alerts().is_empty());
    // Black's reply fits one of them only (the queen takes on g5): resolved
    // once the picture is still (g5 was never seen empty: the queen might
    // still be in the hand), and verified.
    sc.lift("d8").place("g5", 'q').press(B).wait(10_000);
    assert_eq!(sc.sans(), s(&["Nxg5", "Qxg5"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
}

#[test]
fn s14c_occupancy_capture_never_decided_is_recorded_and_named() {
    // Nothing tells Nxe5 from Nxg5 for two minutes: one reading is recorded
    // so the game is not left behind, and the arbiters hear of both.
    let mut sc = occupancy(FORK);
    sc.lift("f3").place("g5", 'N').press(W);
    sc.wait(119_000);
    assert!(sc.sans().is_empty(), "still watching: {:?}", sc.sans());
    sc.wait(2_000);
    let recorded = sc.sans();
    assert!(
        recorded == s(&["Nxe5"]) || recorded == s(&["Nxg5"]),
        "{recorded:?}"
    );
    let a = sc.alerts();
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].kind, "moves_uncertain");
    assert_eq!(a[0].severity, Severity::Info);
    assert!(a[0].message.contains("Nxe5") && a[0].message.contains("Nxg5"));
    assert!(a[0]
        .message
        .contains(&format!("{} is recorded", recorded[0])));
}

#[test]
fn s14d_occupancy_capture_recorded_then_decided_by_a_later_move_is_corrected() {
    // As s14c; then Black's queen takes on g5, which only Nxg5 explains (on
    // the other reading g5 holds Black's own pawn): the record is corrected
    // to Nxg5 Qxg5, without a warning.
    let mut sc = occupancy(FORK);
    sc.lift("f3").place("g5", 'N').press(W);
    sc.wait(121_000);
    // The search's first reading, the wrong one here: this test is about
    // correcting it.
    assert_eq!(sc.sans(), s(&["Nxe5"]));
    sc.lift("d8").place("g5", 'q').press(B).wait(10_000);
    assert_eq!(sc.sans(), s(&["Nxg5", "Qxg5"]), "{:?}", sc.alerts());
    assert!(sc.serious_alerts().is_empty(), "{:?}", sc.serious_alerts());
    assert_eq!(sc.retractions(), vec![(1, vec![1])]);
    let corrected: Vec<_> = sc
        .alerts()
        .into_iter()
        .filter(|a| a.kind == "moves_corrected")
        .collect();
    assert_eq!(corrected.len(), 1, "{:?}", sc.alerts());
    assert!(corrected[0].message.contains("Nxg5"), "{:?}", corrected[0]);
}

#[test]
fn s14e_occupancy_queen_held_over_a_mate_is_not_the_end_of_the_game() {
    // The queen lifted off h5 and held: still, the board reads as each capture
    // she could make (h5 emptied, the target occupied before and after).
    // Left so, Qxf7# is recorded first, as a game over on an occupancy board
    // would be, with its result; the game is still followed on the other
    // readings, and the queen put down on g4 corrects the record.
    let mut sc = occupancy("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4");
    sc.lift("h5").wait(12_000);
    assert_eq!(sc.sans(), s(&["Qxf7#"]), "{:?}", sc.alerts());
    assert_eq!(sc.results().len(), 1);
    sc.place("g4", 'Q').press(W).wait(10_000);
    assert_eq!(sc.sans(), s(&["Qg4"]), "{:?}", sc.alerts());
    assert_eq!(sc.retractions(), vec![(1, vec![1])]);
    assert!(sc.serious_alerts().is_empty(), "{:?}", sc.serious_alerts());
    // Black answers: the game goes on.
    sc.lift("h7").place("h6", 'p').wait(10_000);
    assert_eq!(sc.sans(), s(&["Qg4", "h6"]), "{:?}", sc.alerts());
}

#[test]
fn s14f_occupancy_capture_undecided_when_the_arbiter_enters_the_result() {
    // As s14c, but Black resigns 20 s later and the arbiter enters 1-0 at
    // once: the game is over, so nothing will decide the capture. It is
    // recorded with its note before the result, not dropped with the game.
    let mut sc = occupancy(FORK);
    sc.lift("f3").place("g5", 'N').press(W).wait(20_000);
    assert!(sc.sans().is_empty(), "still watching: {:?}", sc.sans());
    sc.arbiter_result(GameResult::WhiteWins);
    let recorded = sc.sans();
    assert!(
        recorded == s(&["Nxe5"]) || recorded == s(&["Nxg5"]),
        "{recorded:?}"
    );
    assert_eq!(sc.alert_kinds(), s(&["moves_uncertain"]));
    assert_eq!(sc.results().len(), 1);
    // The move comes before the result in the stream.
    let kinds: Vec<&str> = sc
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            TrackerEvent::Game(GameEvent::Move(_)) => Some("move"),
            TrackerEvent::Game(GameEvent::Result { .. }) => Some("result"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["move", "result"]);
}

#[test]
fn s14g_occupancy_capture_undecided_when_the_board_is_set_up_again() {
    // 3. exd5 or exf5: e4 emptied, d5 and f5 occupied before and after. 20 s
    // later the players stop the clock and set up the start for the next
    // game: the capture is recorded with its note in the game that ends,
    // not dropped with it.
    let mut sc =
        Script::occupancy_from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    sc.play("e2e4", W)
        .play("d7d5", B)
        .play("b1c3", W)
        .play("f7f5", B);
    sc.lift("e4").place("d5", 'P').press(W).wait(20_000);
    assert_eq!(sc.sans(), s(&["e4", "d5", "Nc3", "f5"]), "still watching");
    sc.clock.running = false;
    sc.report_clock();
    sc.wait(2_000);
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.wait(10_000);
    assert_eq!(sc.game_starts().len(), 2, "a new game: {:?}", sc.alerts());
    let recorded = sc.sans();
    assert!(
        recorded == s(&["e4", "d5", "Nc3", "f5", "exd5"])
            || recorded == s(&["e4", "d5", "Nc3", "f5", "exf5"]),
        "{recorded:?}"
    );
    assert!(
        sc.alert_kinds().contains(&"moves_uncertain".to_string()),
        "{:?}",
        sc.alerts()
    );
}

#[test]
fn s14h_occupancy_capture_undecided_at_the_arbiters_result_is_not_read_as_mate() {
    // Qxf7#, Qxe5+ or Qxh7: h5 emptied, the three targets occupied before
    // and after. The arbiter enters a result 3 s later. The board did not
    // end the game, the arbiter did: a reading that mates is not recorded
    // over one that does not, and no result but the arbiter's is published.
    let mut sc = occupancy("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4");
    sc.lift("h5").place("f7", 'Q').press(W).wait(3_000);
    sc.arbiter_result(GameResult::Draw);
    let recorded = sc.sans();
    assert!(
        recorded == s(&["Qxe5+"]) || recorded == s(&["Qxh7"]),
        "{recorded:?} {:?}",
        sc.alerts()
    );
    let results: Vec<_> = sc
        .results()
        .into_iter()
        .map(|r| match r {
            GameEvent::Result { result, .. } => *result,
            _ => unreachable!("results() returns results"),
        })
        .collect();
    assert_eq!(results, [GameResult::Draw]);
}

#[test]
fn s15_occupancy_touched_pawn_is_not_a_capture() {
    let mut sc =
        Script::occupancy_from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    sc.play("e2e4", W).play("e7e5", B);
    // Black's e5 pawn is lifted and put back; then White plays a quiet knight move.
    sc.lift("e5").place("e5", 'p').wait(300);
    sc.lift("g1").place("f3", 'N').press(W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3"]));
    assert_quiet(&sc);
}

#[test]
fn s26_occupancy_promotion_is_a_flagged_queen() {
    let mut sc = occupancy(PROMO);
    sc.lift("e7").place("e8", 'Q').press(W);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].squares.clone()),
        ("promotion_piece_unknown", s(&["e8"]))
    );
}

#[test]
fn s26b_occupancy_promotion_to_a_knight_is_corrected_by_the_moves_after() {
    // e8=N, recorded as a queen (with check) since the board cannot see the piece. Black's
    // Kg8 is illegal next to a queen on e8, legal beside a knight or a
    // bishop; Nf6+ is a knight's move. The record is corrected to the knight
    // in the open, and the game goes on.
    let mut sc = occupancy(PROMO);
    sc.lift("e7").place("e8", 'N').press(W).wait(2_000);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
    sc.lift("h8").place("g8", 'k').press(B).wait(2_000);
    sc.lift("e8").place("f6", 'N').press(W).wait(2_000);
    sc.lift("g8").place("g7", 'k').press(B).wait(5_000);
    assert_eq!(
        sc.sans(),
        s(&["e8=N", "Kg8", "Nf6+", "Kg7"]),
        "{:?}",
        sc.alerts()
    );
    assert_eq!(sc.retractions().len(), 1, "{:?}", sc.retractions());
    assert!(
        sc.alert_kinds().contains(&"moves_corrected".to_string()),
        "{:?}",
        sc.alerts()
    );
    // The queen's "check the piece" is over: the moves showed it.
    let unknown = sc
        .alerts()
        .into_iter()
        .find(|a| a.kind == "promotion_piece_unknown")
        .map(|a| a.id)
        .expect("the queen was flagged when recorded");
    let resolved = sc.resolved_ids();
    assert!(
        resolved.contains(&unknown),
        "{resolved:?} {:?}",
        sc.alerts()
    );
}

// ----- 4.3 en passant ---------------------------------------------------------

const EP: &str = "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3";

#[test]
fn s16_en_passant_captured_pawn_removed_last() {
    let mut sc = fen(EP);
    sc.lift("e5").place("d6", 'P').wait(500);
    assert!(sc.sans().is_empty());
    sc.lift("d5").press(W);
    assert_eq!(sc.sans(), s(&["exd6"]));
    assert_quiet(&sc);
}

#[test]
fn s17_en_passant_captured_pawn_removed_first() {
    let mut sc = fen(EP);
    sc.lift("d5").lift("e5").place("d6", 'P').press(W);
    assert_eq!(sc.sans(), s(&["exd6"]));
}

#[test]
fn s18_en_passant_captured_pawn_forgotten() {
    let mut sc = fen(EP);
    sc.lift("e5").place("d6", 'P').press(W).wait(2_000);
    assert!(sc.sans().is_empty());
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].kind, "irregular_position");
    assert_eq!(a[0].squares, s(&["d5"]));
    // The player completes the capture: the press already made counts.
    sc.lift("d5").wait(500);
    assert_eq!(sc.sans(), s(&["exd6"]));
    assert!(sc.moves()[0].clock_ms.is_some());
}

#[test]
fn s19_en_passant_motion_when_not_available() {
    let mut sc = fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq - 0 3");
    sc.lift("d5")
        .lift("e5")
        .place("d6", 'P')
        .press(W)
        .wait(2_000);
    assert!(sc.sans().is_empty());
    assert_eq!(sc.alert_kinds(), s(&["illegal_move"]));
    assert_eq!(sc.alerts()[0].severity, Severity::Error);
}

// ----- 4.4 promotion ----------------------------------------------------------

// (The black pawn keeps material on the board after an under-promotion.)
const PROMO: &str = "7k/4P3/8/8/8/8/7p/K7 w - - 0 1";

#[test]
fn s20_promotion_pawn_lifted_queen_placed() {
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'Q').press(W);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s21_promotion_pawn_pushed_then_swapped() {
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'P').wait(800);
    assert!(sc.sans().is_empty());
    sc.lift("e8").place("e8", 'Q').press(W);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
    assert_quiet(&sc);
}

#[test]
fn s22_capture_promotion_both_orders() {
    let f = "3r3k/4P3/8/8/8/8/8/K7 w - - 0 1";
    let mut first = fen(f);
    first.lift("d8").lift("e7").place("d8", 'Q').press(W);
    assert_eq!(first.sans(), s(&["exd8=Q+"]));
    let mut last = fen(f);
    last.lift("e7").place("d8", 'Q').press(W);
    assert_eq!(last.sans(), s(&["exd8=Q+"]));
    assert_quiet(&last);
}

#[test]
fn s23_under_promotion_to_knight() {
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'N').press(W);
    assert_eq!(sc.sans(), s(&["e8=N"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s24_upside_down_rook_is_a_rook() {
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'R').press(W);
    assert_eq!(sc.sans(), s(&["e8=R+"]));
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].squares.clone()),
        ("promotion_to_rook", s(&["e8"]))
    );
}

#[test]
fn s25_pawn_left_on_last_rank_and_pressed() {
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'P').press(W).wait(2_000);
    assert!(sc.sans().is_empty());
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("illegal_move", "7.5.2")
    );
}

// ----- 4.5 slides and noise ---------------------------------------------------

const ROOK: &str = "7k/8/8/8/8/8/8/R3K3 w - - 0 1";

fn rook_slide(pause_on_a3: u64) -> Script {
    let mut sc = fen(ROOK);
    sc.lift("a1");
    for sq in ["a2", "a3", "a4", "a5", "a6", "a7"] {
        sc.place(sq, 'R');
        if sq == "a3" {
            sc.wait(pause_on_a3);
        }
        sc.lift(sq);
    }
    sc.place("a8", 'R').press(W);
    sc
}

#[test]
fn s27_rook_slide_without_pause() {
    let sc = rook_slide(0);
    assert_eq!(sc.sans(), s(&["Ra8+"]));
    assert_quiet(&sc);
}

#[test]
fn s28_rook_slide_with_pause_on_a_legal_square() {
    let sc = rook_slide(600);
    assert_eq!(sc.sans(), s(&["Ra8+"]));
    assert_quiet(&sc);
    assert_eq!(sc.moves().len(), 1, "no provisional Ra3 was ever verified");
}

#[test]
fn s29_pawn_slid_through_e3() {
    let mut sc = Script::standard();
    sc.lift("e2")
        .place("e3", 'P')
        .wait(400)
        .lift("e3")
        .place("e4", 'P')
        .press(W);
    assert_eq!(sc.sans(), s(&["e4"]));
    assert_quiet(&sc);
}

#[test]
fn s30_knight_hop_is_verified_right_after_the_press() {
    let mut sc = Script::standard();
    sc.lift("g1").place("f3", 'N').press_only(W);
    let t_press = sc.t;
    sc.wait(1_000);
    let ev = sc
        .events
        .iter()
        .find(|(_, e)| {
            matches!(
                e,
                eboard_bridge::events::TrackerEvent::Game(GameEvent::Move(_))
            )
        })
        .expect("move published");
    // Verified once the press has settled (one board scan plus margin).
    assert!(
        ev.0 >= t_press && ev.0 <= t_press + 500,
        "verified {} ms after the press",
        ev.0 - t_press
    );
    assert_eq!(sc.sans(), s(&["Nf3"]));
}

#[test]
fn s31_single_scan_flicker_does_nothing() {
    let mut sc = Script::standard();
    sc.clear();
    sc.lift("c2").place("c2", 'P').wait(6_000);
    assert!(sc.events.iter().all(|(_, e)| !matches!(
        e,
        eboard_bridge::events::TrackerEvent::Game(GameEvent::Move(_))
    )));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s32_off_centre_misread_does_nothing() {
    let mut sc = Script::standard();
    sc.clear();
    sc.place("d2", 'B').place("d2", 'P').wait(3_000);
    sc.play("d2d4", W);
    assert_eq!(sc.sans(), s(&["d4"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s32b_misread_new_piece_is_replaced_before_verification() {
    // The new queen reads as a rook for one scan: a provisional e8=R that is never
    // verified, so no alert about it either.
    let mut sc = fen(PROMO);
    sc.lift("e7").place("e8", 'R').place("e8", 'Q').press(W);
    assert_eq!(sc.sans(), s(&["e8=Q+"]));
    assert!(sc.alerts().is_empty());
    assert_quiet(&sc);
}

#[test]
fn s33_undetected_pawn_is_reported_then_recovers() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.lift("a7").wait(9_000);
    assert!(sc.alerts().is_empty(), "no alert before the threshold");
    sc.wait(2_000);
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].squares.clone()),
        ("displaced_pieces", s(&["a7"]))
    );
    sc.place("a7", 'p').play("e7e5", B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
}

#[test]
fn s34_impossible_picture_is_noise() {
    let mut sc = Script::standard();
    sc.place("e4", 'K').lift("e4").play("e2e4", W);
    assert_eq!(sc.sans(), s(&["e4"]));
    assert!(sc.alerts().is_empty());
}

#[test]
fn s35_hovering_hand_gets_guidance_after_the_error_timer() {
    let mut sc = Script::standard();
    // A hand hovering for 8 s is normal; at 12 s the arbiter gets guidance.
    sc.lift("g1").wait(8_000);
    assert!(sc.alerts().is_empty());
    sc.wait(4_000);
    assert_eq!(sc.alert_kinds(), s(&["displaced_pieces"]));
    assert_eq!(sc.alerts()[0].squares, s(&["g1"]));
    sc.place("f3", 'N').press(W);
    assert_eq!(sc.sans(), s(&["Nf3"]));
}

// ----- 4.6 knocked and displaced pieces ---------------------------------------

#[test]
fn s36_knocked_piece_put_back_in_time() {
    let mut sc = Script::standard();
    sc.lift("b1")
        .place("a3", 'N')
        .wait(500)
        .lift("a3")
        .place("b1", 'N');
    sc.play("e2e4", W);
    assert_eq!(sc.sans(), s(&["e4"]));
    assert_quiet(&sc);
}

#[test]
fn s37_knocked_piece_restored_to_the_wrong_square() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    // Black's h8 rook is knocked over and put back on h6; nobody notices.
    sc.lift("h8").place("h6", 'r').wait(11_000);
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].kind, "displaced_pieces");
    assert_eq!(a[0].squares, s(&["h6", "h8"]));
    assert_eq!(sc.sans(), s(&["e4"]), "nothing wrong published");
    // The game goes on around it, read against the last good position.
    sc.play("e7e5", B).play("g1f3", W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3"]));
    // Restored later: nothing changes, and play continues.
    sc.lift("h6").place("h8", 'r').play("b8c6", B);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6"]));
    assert_eq!(sc.alerts().len(), 1);
    assert!(sc.retractions().is_empty());
}

#[test]
fn s38_scramble_unrecognisable_then_restored() {
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    for sq in ["d2", "c2", "f2", "g2"] {
        sc.lift(sq);
    }
    sc.wait(20_000);
    for sq in ["d2", "c2", "f2", "g2"] {
        sc.place(sq, 'P');
    }
    sc.play("g1f3", W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3"]));
    assert_eq!(sc.alert_kinds(), s(&["displaced_pieces"]), "one alert");
    assert_eq!(sc.game_starts().len(), 1, "no new game");
}

#[test]
fn s39_adjusting_on_the_opponents_time() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.lift("e4")
        .place("e4", 'P')
        .lift("d2")
        .place("d2", 'P')
        .wait(3_000);
    sc.play("e7e5", B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    assert_quiet(&sc);
}

// ----- 4.7 takebacks ----------------------------------------------------------

#[test]
fn s40_move_taken_back_before_the_press() {
    let mut sc = Script::standard();
    sc.lift("e2")
        .place("e4", 'P')
        .wait(500)
        .lift("e4")
        .place("e2", 'P');
    sc.play("d2d4", W);
    assert_eq!(sc.sans(), s(&["d4"]));
    assert_quiet(&sc);
}

#[test]
fn s41_illegal_move_restored_then_legal_move() {
    let mut sc = fen("4k3/8/8/8/8/8/5r2/4K2R w K - 0 1");
    sc.lift("e1")
        .place("g1", 'K')
        .lift("h1")
        .place("f1", 'R')
        .press(W)
        .wait(2_000);
    assert_eq!(sc.alert_kinds(), s(&["illegal_move"]));
    // The arbiter restores the position; the player moves the king instead.
    sc.lift("f1")
        .place("h1", 'R')
        .lift("g1")
        .place("e1", 'K')
        .arbiter_runs_clock_for(W)
        .wait(500);
    sc.lift("e1").place("d1", 'K').press(W);
    assert_eq!(sc.sans(), s(&["Kd1"]));
    assert!(
        sc.retractions().is_empty(),
        "the illegal move was never published"
    );
}

#[test]
fn s41b_verified_move_taken_back_and_replaced_at_once() {
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    // Black takes e5 back and plays d5 straight away, within the takeback hold.
    sc.lift("e5")
        .place("e7", 'p')
        .lift("d7")
        .place("d5", 'p')
        .arbiter_runs_clock_for(B);
    sc.press(B);
    assert_eq!(sc.retractions(), vec![(2, vec![2])]);
    assert_eq!(sc.sans(), s(&["e4", "d5"]));
    assert_eq!(sc.alert_kinds(), s(&["takeback"]));
}

#[test]
fn s42_two_ply_rollback() {
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
    assert_eq!(sc.alert_kinds(), s(&["takeback"]));
    sc.play("f1c4", W);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Bc4"]));
}

#[test]
fn s43_rollback_to_a_repeated_position_takes_the_latest() {
    let mut sc = Script::standard();
    for (m, c) in [
        ("g1f3", W),
        ("g8f6", B),
        ("f3g1", W),
        ("f6g8", B),
        ("g1f3", W),
        ("g8f6", B),
    ] {
        sc.play(m, c);
    }
    sc.lift("f6").place("g8", 'n').wait(4_000);
    assert_eq!(sc.retractions(), vec![(6, vec![6])]);
    assert_eq!(sc.sans().len(), 5);
}

fn show(sc: &mut Script, board_fen: &str) {
    let b: shakmaty::Board = board_fen.parse().unwrap();
    sc.t += 220;
    sc.board = Picture::from_board(&b);
    sc.send();
}

#[test]
fn s44_correction_five_moves_later() {
    let mut sc = Script::standard();
    let line = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "d2d3", "f8c5", "c2c3", "d7d6",
    ];
    for (i, m) in line.iter().enumerate() {
        sc.play(m, if i % 2 == 0 { W } else { B });
    }
    show(&mut sc, "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR");
    sc.wait(4_000);
    assert_eq!(sc.retractions(), vec![(3, (3..=10).collect())]);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
}

#[test]
fn s45_rollback_to_start_is_not_a_new_game() {
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    show(&mut sc, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.wait(4_000);
    assert_eq!(sc.retractions(), vec![(1, vec![1, 2])]);
    assert_eq!(sc.alert_kinds(), s(&["rollback_to_start"]));
    assert_eq!(sc.game_starts().len(), 1);
}

#[test]
fn s45b_reset_with_the_clock_stopped_starts_the_next_game() {
    // A game ended by resignation: nothing on the board says so, the clock is
    // stopped, and the pieces go back to the start for the next game.
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    sc.t += 100;
    sc.clock.running = false;
    let r = sc.clock;
    let mut out = Vec::new();
    sc.tracker.clock(sc.t, &r, &mut out);
    show(&mut sc, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.wait(4_000);
    assert!(
        sc.retractions().is_empty(),
        "the finished game is not withdrawn"
    );
    assert_eq!(sc.alert_kinds(), s(&["game_ended_without_result"]));
    assert_eq!(sc.game_starts().len(), 2);
    assert_eq!(sc.tracker.ply(), 0);
}

#[test]
fn s45c_next_round_chess960_start_after_an_unfinished_game() {
    let mut sc = Script::standard();
    sc.play("e2e4", W).play("e7e5", B);
    sc.t += 100;
    sc.clock.running = false;
    let r = sc.clock;
    let mut out = Vec::new();
    sc.tracker.clock(sc.t, &r, &mut out);
    show(&mut sc, "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR");
    sc.wait(1_500);
    assert_eq!(sc.alert_kinds(), s(&["game_ended_without_result"]));
    assert!(matches!(
        sc.game_starts()[1],
        GameEvent::GameStart {
            chess960: Some(0),
            ..
        }
    ));
}

// ----- 4.8 setup, orientation, start and end ----------------------------------

#[test]
fn s46_king_and_queen_swapped() {
    let mut sc = Script::empty(TrackerConfig::default());
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKQBNR");
    sc.wait(1_000);
    assert!(sc.game_starts().is_empty());
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("wrong_initial_position", "7.2.1")
    );
    assert_eq!(a[0].squares, s(&["d1", "e1"]));
    // Corrected: the game starts.
    sc.lift("d1")
        .lift("e1")
        .place("d1", 'Q')
        .place("e1", 'K')
        .wait(1_000);
    assert_eq!(sc.game_starts().len(), 1);
}

#[test]
fn s47_board_rotated_180_at_start() {
    let mut sc = Script::from_board_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", Turn::Half);
    assert!(matches!(
        sc.game_starts()[0],
        GameEvent::GameStart {
            rotated: true,
            chess960: Some(518),
            ..
        }
    ));
    sc.play("e2e4", W).play("c7c5", B).play("g1f3", W);
    assert_eq!(sc.sans(), s(&["e4", "c5", "Nf3"]));
    assert_quiet(&sc);
    assert!(sc.alerts().is_empty());
}

#[test]
fn s48_power_cycle_changes_orientation_mid_game() {
    let mut sc = Script::from_board_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", Turn::Half);
    sc.play("e2e4", W).play("e7e5", B);
    sc.turn = Turn::Normal;
    sc.send();
    sc.play("g1f3", W).play("b8c6", B);
    assert_eq!(sc.sans(), s(&["e4", "e5", "Nf3", "Nc6"]));
    assert!(sc.alerts().is_empty());
    assert!(sc.retractions().is_empty());
}

#[test]
fn s49_colours_found_from_the_clock_not_assumed() {
    // Sensors cannot see names; what the tracker can do is map the clock from how
    // it behaves. Here White sits at the clock's right.
    let mut sc = Script::empty(TrackerConfig::default());
    sc.white_side = ClockSide::Right;
    sc.setup("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR");
    sc.start_clock();
    sc.play("e2e4", W).play("e7e5", B);
    assert_eq!(sc.tracker.white_clock_side(), Some(ClockSide::Right));
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    let m = sc.moves();
    assert_eq!(m[0].clock_ms, Some(sc.clock.right.millis));
    assert_eq!(m[1].clock_ms, Some(sc.clock.left.millis));
    assert!(m[0].emt_ms.is_some_and(|e| e > 500 && e < 2_000));
}

#[test]
fn s50_board_rotated_90() {
    let mut sc =
        Script::from_board_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR", Turn::Quarter);
    assert_eq!(sc.game_starts().len(), 1);
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("board_rotated_90", "7.2.2")
    );
    assert_eq!(a[0].severity, Severity::Warning);
    sc.play("d2d4", W).play("d7d5", B);
    assert_eq!(sc.sans(), s(&["d4", "d5"]));
}

#[test]
fn s51_setting_up_starts_nothing() {
    let mut sc = Script::empty(TrackerConfig::default());
    // Leftovers of the last round, then pieces arriving one by one.
    show(&mut sc, "8/5k2/8/8/3K4/8/8/8");
    sc.wait(3_000);
    show(&mut sc, "8/pppppppp/8/8/8/8/PPPPPPPP/8");
    sc.wait(3_000);
    for (sqr, p) in [
        ("a1", 'R'),
        ("b1", 'N'),
        ("c1", 'B'),
        ("d1", 'Q'),
        ("e1", 'K'),
        ("f1", 'B'),
        ("g1", 'N'),
    ] {
        sc.place(sqr, p);
    }
    for (sqr, p) in [
        ("a8", 'r'),
        ("b8", 'n'),
        ("c8", 'b'),
        ("d8", 'q'),
        ("e8", 'k'),
        ("f8", 'b'),
        ("g8", 'n'),
        ("h8", 'r'),
    ] {
        sc.place(sqr, p);
    }
    sc.wait(2_000);
    assert!(sc.game_starts().is_empty());
    sc.place("h1", 'R').wait(1_000);
    assert_eq!(sc.game_starts().len(), 1);
    assert!(sc.sans().is_empty());
}

#[test]
fn s52_chess960_start_and_castling_with_the_king_off_the_board() {
    let rank: String = eboard_bridge::tracker::back_rank_of(0)
        .unwrap()
        .iter()
        .map(|r| r.char())
        .collect();
    let board_fen = format!("{}/pppppppp/8/8/8/8/PPPPPPPP/{}", rank, rank.to_uppercase());
    let mut sc = Script::from_board_fen(&board_fen, Turn::Normal);
    match sc.game_starts()[0] {
        GameEvent::GameStart { chess960, fen, .. } => {
            assert_eq!(*chess960, Some(0));
            assert!(fen.starts_with(&board_fen));
        }
        _ => unreachable!(),
    }
    sc.play("d1c3", W).play("d8c6", B);
    assert_eq!(sc.sans(), s(&["Nc3", "Nc6"]));
    // Castling per Guideline II: king off the board, rook, king.
    let mut c = fen("1k6/8/8/8/8/8/8/1K4R1 w G - 0 1");
    c.lift("b1")
        .wait(300)
        .lift("g1")
        .place("f1", 'R')
        .wait(300)
        .place("g1", 'K')
        .press(W);
    assert_eq!(c.sans(), s(&["O-O"]));
    assert_eq!(c.moves()[0].uci, "b1g1");
    assert!(c.alerts().is_empty());
}

#[test]
fn s53_result_gesture_is_a_result_not_a_move() {
    let mut sc = fen("7r/8/4k3/8/8/3K4/8/R7 w - - 0 1");
    sc.lift("d3")
        .place("d4", 'K')
        .lift("e6")
        .place("e5", 'k')
        .wait(3_000);
    assert!(sc.sans().is_empty());
    let r = sc.results();
    assert_eq!(r.len(), 1);
    assert!(matches!(
        r[0],
        GameEvent::Result {
            result: GameResult::BlackWins,
            ..
        }
    ));
}

#[test]
fn s53a_king_set_down_a_moment_in_the_centre_is_no_result() {
    // Time trouble: White's king, on its way f3-g4, is put down for a moment
    // on e4, next to Black's king on d5: both kings in the centre for 150 ms.
    let mut sc = fen("8/8/8/3k4/8/5K2/8/R7 w - - 0 1");
    sc.lift("f3")
        .place("e4", 'K')
        .wait(150)
        .lift("e4")
        .place("g4", 'K')
        .press(W)
        .wait(3_000);
    assert!(sc.results().is_empty(), "{:?}", sc.results());
    assert_eq!(sc.sans(), s(&["Kg4"]));
    assert!(sc.alerts().is_empty(), "{:?}", sc.alerts());
}

#[test]
fn s53b_magic_piece_is_a_result() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    sc.magic("e5", MagicPiece::Draw).wait(1_000);
    assert!(matches!(
        sc.results()[0],
        GameEvent::Result {
            result: GameResult::Draw,
            ..
        }
    ));
    assert_eq!(sc.sans(), s(&["e4"]));
}

#[test]
fn s54_mate_then_players_walk_away_and_reset() {
    let mut sc = Script::standard();
    sc.play("f2f3", W).play("e7e5", B).play("g2g4", W);
    sc.hand("d8h4").wait(3_000);
    assert_eq!(sc.sans(), s(&["f3", "e5", "g4", "Qh4#"]));
    assert!(matches!(
        sc.results()[0],
        GameEvent::Result {
            result: GameResult::BlackWins,
            ..
        }
    ));
    for sqr in ["h4", "g4", "f3", "e5", "a1", "h8"] {
        sc.lift(sqr);
    }
    sc.wait(3_000);
    assert_eq!(sc.sans().len(), 4);
    assert_eq!(sc.results().len(), 1);
}

// ----- 4.9 speed, bursts, connectivity ----------------------------------------

#[test]
fn s55_two_plies_in_one_picture() {
    let mut sc = Script::standard();
    sc.scan(&[
        ("e2", None),
        ("e4", Some('P')),
        ("e7", None),
        ("e5", Some('p')),
    ]);
    // One scan reports all four squares: only the last picture is whole. White's
    // clock still runs, so e4 waits `late_press_ms` for White's press first.
    sc.wait(2_000);
    assert_eq!(sc.sans(), s(&["e4"]));
    sc.wait(300).press(W).press(B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    assert_quiet(&sc);
}

fn offline_burst(moves: &[&str]) -> Script {
    let mut sc = Script::standard();
    let mut out = Vec::new();
    sc.tracker.connection(sc.t, false, &mut out);
    let (mut pos, mode) =
        support::position("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    for u in moves {
        let m = support::uci_move(&pos, u, mode);
        shakmaty::Position::play_unchecked(&mut pos, m);
    }
    sc.t += 20_000;
    sc.tracker.connection(sc.t, true, &mut out);
    show(&mut sc, &shakmaty::Position::board(&pos).to_string());
    sc.wait(500);
    sc
}

#[test]
fn s56_three_plies_missed_unique_is_reconstructed() {
    let sc = offline_burst(&["e2e4", "e7e5", "d1h5"]);
    // The opponent's replies prove the first two complete; the third waits for a press.
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    assert!(sc.moves().iter().all(|m| m.reconstructed));
    assert!(sc.alerts().is_empty());
}

/// Three plies made while the board was offline, in an order no picture can
/// tell (Nf3 e5 e4 and e4 e5 Nf3 reach the same position). Waiting for the
/// arbiter to confirm one, with no way to confirm it, left the rest of the
/// game unpublished: one order is recorded, an 8.4 note names the other, and
/// the game goes on.
#[test]
fn s56b_three_plies_missed_in_an_order_no_picture_tells_are_recorded_with_a_note() {
    let mut sc = offline_burst(&["g1f3", "e7e5", "e2e4"]);
    sc.play("b8c6", B);
    sc.play("f1c4", W);
    sc.play("g8f6", B);
    sc.wait(5_000);
    let sans = sc.sans();
    assert!(
        sans == s(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6"])
            || sans == s(&["Nf3", "e5", "e4", "Nc6", "Bc4", "Nf6"]),
        "{sans:?}"
    );
    let a = sc.alerts();
    assert_eq!(a.len(), 1, "{a:#?}");
    assert_eq!(
        (a[0].kind.as_str(), a[0].severity, a[0].article.as_str()),
        ("moves_uncertain", Severity::Info, "8.4")
    );
    assert!(
        a[0].message.contains("Nf3 e5 e4") && a[0].message.contains("e4 e5 Nf3"),
        "{}",
        a[0].message
    );
}

#[test]
fn s57_reconnect_with_unchanged_position() {
    let mut sc = Script::standard();
    sc.play("e2e4", W);
    let mut out = Vec::new();
    sc.tracker.connection(sc.t, false, &mut out);
    sc.t += 10_000;
    sc.tracker.connection(sc.t, true, &mut out);
    assert!(out.is_empty());
    sc.send();
    sc.send();
    sc.play("e7e5", B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    assert_quiet(&sc);
}

#[test]
fn s58_press_before_castling_is_finished() {
    let mut sc = italian();
    sc.lift("e1").place("g1", 'K').press_only(W);
    let pressed_at = sc.t;
    sc.lift("h1");
    assert!(sc.sans().is_empty(), "the rook is still in the hand");
    sc.place("f1", 'R');
    // The picture after the press completes a move no bigger move contains:
    // nothing of it is left in transit, it is verified at once.
    assert_eq!(sc.sans(), s(&["O-O"]));
    let published_at = sc
        .events
        .iter()
        .find(|(_, e)| {
            matches!(
                e,
                eboard_bridge::events::TrackerEvent::Game(GameEvent::Move(_))
            )
        })
        .map(|(t, _)| *t)
        .expect("published");
    assert!(published_at > pressed_at);
    assert!(sc.moves()[0].clock_ms.is_some());
    assert!(sc.alerts().is_empty());
}

/// After a press, one scan reports a castling rook's squares before its king's:
/// the picture in between shows a legal rook move, which is part of a bigger
/// move and must not be verified on its own.
#[test]
fn s58b_press_then_one_scan_reports_the_rook_before_the_king() {
    let mut sc = italian();
    sc.press_only(W);
    sc.lift("h1").place("f1", 'R');
    assert!(sc.sans().is_empty(), "Rf1 may be half of O-O");
    sc.lift("e1").place("g1", 'K');
    assert_eq!(sc.sans(), s(&["O-O"]), "complete: verified at once");
    assert!(sc.moves()[0].clock_ms.is_some());
    assert_quiet(&sc);
}

/// The press comes before the board reports the move (it scans every
/// 200-250 ms): the move is verified by the picture that completes it.
#[test]
fn s58c_press_before_the_scan_verifies_on_the_completing_picture() {
    let mut sc = italian();
    sc.lift("d2").press_only(W);
    assert!(sc.sans().is_empty());
    sc.place("d3", 'P');
    assert_eq!(sc.sans(), s(&["d3"]));
    assert_quiet(&sc);
}

#[test]
fn s59_opponent_moves_before_the_press() {
    let mut sc = Script::standard();
    sc.hand("e2e4").wait(300);
    sc.hand("e7e5");
    // White's clock still runs: e4 waits for White's late press (6.2.2) so that
    // its [%clk] is the time after the press...
    assert!(sc.sans().is_empty());
    sc.press(W);
    assert_eq!(sc.sans(), s(&["e4"]), "the late press completes e4");
    let clk = sc.moves()[0].clock_ms;
    assert_eq!(clk, Some(sc.clock.side(sc.side_of(W)).millis));
    sc.wait(200).press(B);
    assert_eq!(sc.sans(), s(&["e4", "e5"]));
    assert_quiet(&sc);
}

#[test]
fn s59_reply_proves_the_move_when_no_press_comes() {
    let mut sc = Script::standard();
    sc.hand("e2e4").wait(300);
    sc.hand("e7e5").wait(1_500);
    assert!(sc.sans().is_empty(), "waiting for White's late press");
    sc.wait(600);
    assert_eq!(sc.sans(), s(&["e4"]), "the reply proves e4 complete");
    sc.press(B);
    assert_eq!(sc.sans(), s(&["e4"]));
    assert_quiet(&sc);
}

// ----- beyond §4 --------------------------------------------------------------

#[test]
fn clockless_board_verifies_after_the_hold() {
    let mut sc = Script::clockless();
    assert_eq!(sc.game_starts().len(), 1);
    sc.hand("e2e4").wait(2_500);
    assert!(sc.sans().is_empty(), "a hand may still take it back");
    sc.wait(700);
    assert_eq!(sc.sans(), s(&["e4"]));
    assert_eq!(sc.moves()[0].clock_ms, None);
}

#[test]
fn automatic_draw_is_noted_and_the_record_goes_on() {
    let f = "4k3/8/8/8/8/5R2/3n4/4K3 b - - 0 1";
    let mut sc = Script::empty(TrackerConfig::default());
    sc.tracker.set_start_fen(f).unwrap();
    sc.setup(f.split(' ').next().unwrap());
    sc.start_clock_for(B);
    sc.lift("f3").lift("d2").place("f3", 'n').press(B);
    sc.play("e1e2", W);
    assert_eq!(sc.sans(), s(&["Nxf3+", "Ke2"]));
    assert_eq!(sc.tracker.white_clock_side(), Some(ClockSide::Left));
    let a = sc.alerts();
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].kind.as_str(), a[0].article.as_str()),
        ("automatic_draw", "5.2.2")
    );
    assert_eq!(a[0].severity, Severity::Info);
    // 5.2.2 ends the game at once: the draw is published at that ply, and the
    // board is still followed (players often play on until the arbiter comes).
    assert_eq!(
        sc.results(),
        vec![&GameEvent::Result {
            result: eboard_bridge::events::GameResult::Draw,
            reason: eboard_bridge::events::ResultReason::DeadPosition
        }]
    );
    sc.play("e8d7", B);
    assert_eq!(sc.sans(), s(&["Nxf3+", "Ke2", "Kd7"]));
    assert_eq!(sc.results().len(), 1, "the first ending stands");
}
