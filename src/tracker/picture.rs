//! Which moves explain a picture (reconstruction.md §5): every picture is
//! matched against the positions reachable from the last verified position
//! through the provisional line, keeping as much of the line as the picture
//! allows, then replacing its tail by a sibling. A picture nothing explains is
//! read for what else it may be (a result gesture, a turned board, an illegal
//! move left standing, a takeback, another game's start). On identity boards
//! [`Tracker::play_picture`] hands the picture to the evidence engine
//! (`follow.rs`); the matcher here ([`Tracker::resolve`]) reads occupancy-only
//! boards, and any board after a link gap.

use eboard_protocols::{MagicPiece, Picture};
use shakmaty::{Board, Chess, Color, Move, Position, Role, Square};

use super::alerts::{
    ambiguous_alert, default_promotion_alert, quarter_turn_alert, rook_first_alert,
    rook_promotion_alert,
};
use super::search::{self, Target};
use super::sensing::{captures_seen_emptied, TWO_HANDS_MOVE_MS};
use super::start::Orientation;
use super::{laws, Phase, Resolution, Step, Tracker};
use crate::events::{GameResult, Millis, ResultReason, TrackerEvent};

/// Whether the piece on `from` has a legal capture on `to` in `pos`: an
/// occupancy board showing `to` emptied and that piece off its square may be
/// showing that capture under way (the captured piece off first).
fn may_take(pos: &Chess, from: Option<Square>, to: Square) -> bool {
    pos.legal_moves()
        .iter()
        .any(|m| m.is_capture() && m.from() == from && m.to() == to)
}

/// Occupancy-only boards: whether `line`, two captures from `pos` neither
/// seen with its square empty, shows the same squares as the first ply's
/// piece taking the piece the second ply moved, both still in the hand.
fn capture_in_the_hand(pos: &Chess, line: &[Move], emptied: shakmaty::Bitboard) -> bool {
    let [first, reply] = line else {
        return false;
    };
    let unseen =
        |m: &Move| m.is_capture() && !captures_seen_emptied(std::slice::from_ref(m), emptied);
    unseen(first)
        && unseen(reply)
        && reply
            .from()
            .is_some_and(|sq| may_take(pos, first.from(), sq))
}

/// How long a still picture read as two captures nobody saw made waits
/// because it is also a capture held in the hand (see `capture_in_the_hand`):
/// as long as a move under way waits for its 7.4. Own hands, normal pace:
/// 6 s read a pawn held seven seconds over its capture as two other
/// captures (game 819); 10 s loses 154 plies fewer than 6 s over the 1,939
/// games, 20 s no fewer again.
const HELD_CAPTURE_MS: Millis = super::HOVER_ALERT_MS;

/// The DGT result convention (dgt.md §1.5): both kings on the four centre squares,
/// which two kings can never reach by legal play (those squares all touch).
pub(super) fn result_gesture(board: &Board) -> Option<GameResult> {
    let centre = [Square::D4, Square::D5, Square::E4, Square::E5];
    let white = board.king_of(Color::White)?;
    let black = board.king_of(Color::Black)?;
    if !centre.contains(&white) || !centre.contains(&black) {
        return None;
    }
    let light = |sq: Square| sq.is_light();
    Some(match (light(white), light(black)) {
        (true, true) => GameResult::WhiteWins,
        (false, false) => GameResult::BlackWins,
        _ => GameResult::Draw,
    })
}

impl Tracker {
    /// Reads a picture of the game: a result piece ends it, the evidence engine
    /// or the matcher reads the rest, then [`Tracker::after_resolution`].
    pub(super) fn play_picture(&mut self, t: Millis, raw: &Picture, out: &mut Vec<TrackerEvent>) {
        let norm = self.orientation.apply(raw);
        if let Some((_, magic)) = norm.magic_pieces().next() {
            let result = match magic {
                MagicPiece::Draw => GameResult::Draw,
                MagicPiece::WhiteWins => GameResult::WhiteWins,
                MagicPiece::BlackWins => GameResult::BlackWins,
            };
            self.end_game(result, ResultReason::ResultPiece, out);
            return;
        }
        // Identity boards give a board; occupancy-only boards only which squares
        // hold something.
        let board = norm.to_board();
        let occupancy = norm.occupied();
        let target = match &board {
            Some(b) => Target::Board(b),
            None => Target::Occupancy(occupancy),
        };
        if let (Some(new), Some(old)) = (&board, &self.last_board) {
            for sq in search::diff(old, new) {
                self.sensing.square_changed[sq as usize] = t;
            }
        }
        self.last_board = board.clone();
        // What each square showed matters to the picture matcher only; the
        // engine reads every picture itself.
        if self.evidence.is_none() || self.gap {
            self.sensing.seen.add(target);
        }
        let clocked = !self.clockless();
        let engine = match (&board, self.evidence.as_mut()) {
            (Some(b), Some(ev)) => {
                ev.set_clocked(clocked);
                ev.picture(t, b);
                true
            }
            _ => false,
        };
        let mut resolution = if engine && self.gap {
            // Changes were missed while the link was down: the engine saw no
            // hand at work. The picture matcher reaches the board (or says it
            // cannot), and the engine starts again from what it finds.
            let old = self.resolve(t, target, out);
            if old == Resolution::Explained {
                // The board shows the game exactly: any displaced piece is back.
                self.current.displaced = None;
                self.reset_evidence();
            }
            return self.after_resolution(t, raw, board.as_ref(), target, old, out);
        } else if engine {
            let r = self.follow_evidence(t, out);
            // A reply read around a displaced piece still proves the move
            // before it (6.2.1): settle whatever the picture's reading.
            self.current.resolution = r;
            self.settle(t, out);
            r
        } else if let Target::Occupancy(occ) = target {
            self.catch_up_root();
            let r = self.resolve(t, target, out);
            if r != Resolution::Explained && !self.gap {
                // Fast play: the frames since the last explained one, read
                // together (see `catch_up.rs`); what they agree on is
                // recorded only where the matcher reads nothing.
                let decide = r == Resolution::Unexplained;
                let c = self.catch_up_frame(t, occ, decide, out);
                if decide {
                    c
                } else {
                    r
                }
            } else {
                r
            }
        } else {
            self.resolve(t, target, out)
        };
        if resolution == Resolution::Explained {
            // The board shows the game exactly: any displaced piece is back.
            self.current.displaced = None;
        } else if engine {
            // The engine reads play around a displaced piece by itself.
        } else if let (Some(b), Some((mask, snapshot))) = (&board, &self.current.displaced) {
            // Play went on around a displaced piece (7.4): read the move relative to
            // the last good position, as if the displaced squares were in order.
            let tip = self.game.as_ref().expect("playing").tip().board().clone();
            let mut corrected = b.clone();
            for sq in *mask {
                if b.piece_at(sq) == snapshot.piece_at(sq) {
                    match tip.piece_at(sq) {
                        Some(p) => corrected.set_piece_at(sq, p),
                        None => corrected.discard_piece_at(sq),
                    }
                }
            }
            if &corrected != b {
                resolution = self.resolve(t, Target::Board(&corrected), out);
            }
        }
        self.after_resolution(t, raw, board.as_ref(), target, resolution, out);
    }

    /// What follows from how a picture was read: an explained one clears the
    /// episode; an unexplained one may be a result gesture, a turned board, an
    /// illegal move standing, a takeback, or another game's start.
    fn after_resolution(
        &mut self,
        t: Millis,
        raw: &Picture,
        board: Option<&Board>,
        target: Target<'_>,
        resolution: Resolution,
        out: &mut Vec<TrackerEvent>,
    ) {
        self.current.resolution = resolution;
        if resolution == Resolution::Explained {
            self.sensing.seen.reset(target);
            self.gap = false;
            self.sensing.same_scan_lifts = shakmaty::Bitboard::EMPTY;
            self.current.catch_up.clear();
        }
        if resolution != Resolution::Unexplained {
            self.current.unexplained_since = None;
            self.current.unexplained_alerted = false;
            self.current.takeback = None;
            self.current.passed_back = None;
            return;
        }
        if board.is_none() && self.try_turn_occupancy(t, raw, out) {
            return;
        }
        if let Some(b) = board {
            if result_gesture(b).is_some() {
                // Kings passing through the centre on their way (one put
                // down a moment on a square next to the other) are no
                // result: the gesture counts once it stays, see
                // `RESULT_GESTURE_HOLD_MS`. Until then, no other reading.
                return;
            }
            if self.try_reorient(raw, out) {
                return;
            }
            if self.try_illegal_stands(t, raw, b, out) {
                return;
            }
        }
        let game = self.game.as_ref().expect("playing");
        let n = game.history.len() - 1;
        // A board the evidence reads as legal play going on (a repetition, a
        // move under way) is no takeback, whatever position it shows.
        let earlier = if self.evidence.is_some() && self.reading_is_play {
            None
        } else {
            (0..n)
                .rev()
                .find(|&k| target.matches(game.history[k].board()))
        };
        self.current.takeback = match (earlier, self.current.takeback) {
            (Some(k), Some((k0, since))) if k == k0 => Some((k, since)),
            (Some(k), _) => Some((k, t)),
            (None, _) => None,
        };
        if earlier.is_some() {
            self.current.passed_back = earlier;
        } else if let Some(k) = self.current.passed_back.filter(|&k| k < n) {
            // The board went back to an earlier position and a move was made from
            // there before the takeback hold ran out (a move taken back and another
            // played at once): the takeback is proven by the new move.
            if search::sequences(&game.history[k], target, 1, 2, None).len() == 1 {
                self.current.passed_back = None;
                self.take_back(t, k, out);
                if self.phase == Phase::Playing {
                    self.last_raw = None;
                    self.play_picture(t, raw, out);
                }
                return;
            }
        }
        // Another start altogether (the next round's Chess960 start, ...).
        self.start.start_candidate = match earlier {
            None => self.detect_start(raw).map(|mut c| {
                c.since = t;
                c
            }),
            Some(_) => None,
        };
        // Play the engine reads going on is no displaced piece, however long
        // no picture is at rest: on a board that sends a frame a second, fast
        // play shows a hand at work in every frame (Certabo, blind hands in
        // time trouble: 7.4 alerts raised after six seconds of moves read
        // one after the other). An episode is measured from the last ply
        // the reading gained.
        let plies = self
            .game
            .as_ref()
            .map_or(0, |g| g.moves.len() + g.pending.len());
        let playing_on = self.evidence.is_some()
            && self.reading_is_play
            && plies > self.current.unexplained_plies;
        if self.current.unexplained_since.is_none() || playing_on {
            self.current.unexplained_since = Some(t);
            self.current.unexplained_plies = plies;
        }
    }

    /// Matches a picture against the current line; updates the line.
    pub(super) fn resolve(
        &mut self,
        t: Millis,
        target: Target<'_>,
        out: &mut Vec<TrackerEvent>,
    ) -> Resolution {
        let press_boundary = self.pressed_in_episode();
        let game = self.game.as_mut().expect("playing");
        if target.matches(game.tip().board()) {
            self.current.ambiguous_lines.clear();
            self.current.ambiguous_alerted = None;
            // A press may have waited for this picture (a flicker ended).
            self.current.resolution = Resolution::Explained;
            self.settle(t, out);
            return Resolution::Explained;
        }
        let seen = (!self.gap && !self.sensing.lenient).then_some(&self.sensing.seen);
        // An ambiguity is resolved when the play that follows fits one candidate only.
        // The line under the candidates may have changed since (a takeback, a
        // verification): candidates hanging off a prefix that is gone are void.
        if self
            .current
            .ambiguous_lines
            .iter()
            .any(|(j, _)| *j > game.pending.len())
        {
            self.current.ambiguous_lines.clear();
        }
        if !self.current.ambiguous_lines.is_empty() {
            let mut fits = Vec::new();
            // The candidates as they stand first; then without their last
            // ply or two, which the board has taken back or slid on: a rook
            // put on c6 for a frame and back on c8 (own hands, normal pace,
            // game 1737), h2-h3 seen in passing on the way to h4 (game 1718).
            // Else the picture fits none of them, and the line under them is
            // read again as if no capture were undecided.
            let emptied = self.sensing.seen.emptied();
            for back in 0..=2 {
                for (j, line) in &self.current.ambiguous_lines {
                    if back > 0 && back >= line.len() {
                        continue;
                    }
                    let (kept, dropped) = line.split_at(line.len() - back);
                    // A capture undone shows as much as a capture made unseen
                    // elsewhere: only a piece put down and lifted on again is
                    // a ply withdrawn here.
                    if dropped.iter().any(|m| m.is_capture()) {
                        continue;
                    }
                    let mut pos = game.pos_at(*j).clone();
                    for &m in kept {
                        pos.play_unchecked(m);
                    }
                    if target.matches(pos.board()) {
                        if back == 0 {
                            // Back to the ambiguous picture: still undecided.
                            return Resolution::Ambiguous;
                        }
                        fits.push((*j, kept.to_vec(), vec![Vec::new()]));
                        continue;
                    }
                    for depth in 1..=2 {
                        let mut ext = search::sequences(&pos, target, depth, 4, seen);
                        if !self.sensing.lenient && matches!(target, Target::Occupancy(_)) {
                            // As below: a capture whose square was never seen
                            // empty is a piece in the hand until the picture is
                            // still. Else a lifted piece of one candidate's
                            // position reads as a capture that decides for it.
                            ext.retain(|line| captures_seen_emptied(line, emptied));
                        }
                        if !ext.is_empty() {
                            fits.push((*j, kept.to_vec(), ext));
                            break;
                        }
                    }
                }
                if !fits.is_empty() {
                    break;
                }
            }
            if fits.len() == 1 && fits[0].2.len() == 1 && fits[0].2[0].len() == 1 {
                let (j, mut line, ext) = fits.pop().expect("one");
                line.extend(ext.into_iter().next().expect("one"));
                self.current.ambiguous_lines.clear();
                self.current.ambiguous_alerted = None;
                self.extend_line(j, line);
                self.current.resolution = Resolution::Explained;
                self.settle(t, out);
                return Resolution::Explained;
            }
            if !fits.is_empty() {
                // Every candidate still fits: follow each of them until one fails.
                let followed: Vec<(usize, Vec<Move>)> = fits
                    .into_iter()
                    .flat_map(|(j, line, exts)| {
                        exts.into_iter().map(move |ext| {
                            let mut l = line.clone();
                            l.extend(ext);
                            (j, l)
                        })
                    })
                    .take(16)
                    .collect();
                self.current.ambiguous_lines = followed;
                self.current.ambiguous_lines.dedup();
                // Every line made a move (or withdrew one): what the squares
                // showed before it says nothing of the next (a square emptied
                // before a pawn came to it is no captured piece taken off when
                // a flicker empties the square of a piece that could take it).
                self.sensing.seen.reset(target);
                if matches!(target, Target::Occupancy(_)) && self.ambiguity_due(t) {
                    self.commit_ambiguity(t, out);
                    return self.current.resolution;
                }
                return Resolution::Ambiguous;
            }
        }
        // Occupancy alone cannot support long bursts: too many sequences give the
        // same squares. Such boards follow at most two plies per picture (two
        // quick moves, or a capture and its recapture, inside one frame), three
        // where four squares or more changed from the line's tip (time trouble
        // on a frame a second: own hands, 2 %, 367 -> 467 games of 1,939
        // exact; at normal pace too a little better, for 13-28 % more CPU).
        let max = match target {
            // Without the check against what the squares showed, two plies at most.
            Target::Board(_) if self.sensing.lenient => self.config.max_burst_plies.clamp(1, 2),
            Target::Board(_) => self.config.max_burst_plies.max(1),
            Target::Occupancy(_) => {
                let most = if target.diff(game.tip().board()).count() >= 4 {
                    3
                } else {
                    2
                };
                self.config.max_burst_plies.clamp(1, most)
            }
        };
        let mut found: Option<(usize, Vec<Vec<Move>>)> = None;
        // Fewest plies from the last verified position first (a slide's square seen
        // in passing is not a move of its own); among equals, keep the longest part
        // of the line the pictures already showed.
        let len = game.pending.len();
        // A move the board showed and the opponent then answered on the board
        // (his move seen as a picture of its own) was made: the hand let go of
        // it. Later pictures may extend the line or change its last move (a slide
        // going on), never rewrite answered moves into fewer plies. Without this a
        // piece that moves twice in one unpressed stretch (Kg7 ... Kh8 around the
        // opponent's Qg4) reads as one move, and the opponent's move with it.
        let answered = game
            .pending
            .iter()
            .rposition(|s| !s.reconstructed)
            .unwrap_or(0);
        // After a clock press in this episode the board should show made moves:
        // then one piece may have gone unseen on its square (a capture answered
        // within one board scan), if nothing fully seen explains the picture.
        let tolerances: &[usize] = if press_boundary && seen.is_some() {
            &[0, 1]
        } else {
            &[0]
        };
        // Occupancy-only boards: a capture never seen emptied, answered by
        // the opponent's move in the same picture. The reply proves the hand
        // let go (6.2.1); read only when nothing strict explains the picture,
        // as in fast play a still picture may never come to allow it.
        let mut answered_capture: Option<(usize, Vec<Vec<Move>>)> = None;
        'tolerance: for &unseen in tolerances {
            for (lo, hi) in [(0, 2.min(max)), (3, max.max(2))] {
                for total in lo..=len + hi {
                    for j in (answered..=len.min(total)).rev() {
                        let depth = total - j;
                        // The unseen piece is a capture answered at once: a
                        // two-ply burst, no longer.
                        if depth < lo || depth > hi || (unseen > 0 && depth > 2) {
                            continue;
                        }
                        let base = game.pos_at(j);
                        let sols = if depth == 0 {
                            if target.matches(base.board()) {
                                vec![Vec::new()]
                            } else {
                                Vec::new()
                            }
                        } else {
                            let mut sols =
                                search::sequences_with_unseen(base, target, depth, 6, seen, unseen);
                            if self.sensing.lenient && matches!(target, Target::Board(_)) {
                                // Unseen middles only where the squares say so: a square
                                // both plies touched must show the change. A capture and a
                                // same-piece recapture leave their square as it was, exactly
                                // like a capture in progress (capturer and captured piece
                                // both in the hand): that is never read without seeing it.
                                let changed = target.diff(base.board());
                                sols.retain(|line| {
                                    line.iter()
                                        .all(|&m| (search::touched(m) & !changed).is_empty())
                                });
                            }
                            if self.sensing.lenient
                                && matches!(target, Target::Occupancy(_))
                                && t.saturating_sub(self.last_change_t) < HELD_CAPTURE_MS
                            {
                                // A capture in progress, the captured piece off and
                                // the capturer still in the hand, shows exactly as
                                // the capturer having taken elsewhere and the piece
                                // it takes having taken elsewhere in reply, when
                                // neither capture's square was seen empty (Nf6xg4
                                // held: Nxd5 gxf5, own hands, normal pace, game
                                // 1082). Hands hold such a capture for seconds; two
                                // captures each made inside one frame and then left
                                // still are rarer. Read them only once the hold is
                                // long.
                                let emptied = self.sensing.seen.emptied();
                                sols.retain(|line| !capture_in_the_hand(base, line, emptied));
                            }
                            if !self.sensing.lenient && matches!(target, Target::Occupancy(_)) {
                                // A board that cannot tell pieces apart shows a piece
                                // lifted off its square exactly as a capture by it. A
                                // capture counts at once only when its square was seen
                                // empty (the captured piece taken off first); otherwise
                                // it waits for a still picture or a press (`lenient`).
                                let emptied = self.sensing.seen.emptied();
                                if answered_capture.is_none() && depth == 2 && j == len {
                                    // Not when the capturer could be taking the
                                    // piece the "reply" moved instead: the
                                    // captured piece off first, the capturer
                                    // caught on its way (Bf5xd3 read as Bxh3
                                    // and Bd3-e4 from a frame with the bishop
                                    // crossing e4).
                                    let answered: Vec<Vec<Move>> = sols
                                        .iter()
                                        .filter(|l| captures_seen_emptied(&l[1..], emptied))
                                        .filter(|l| {
                                            l[1].from()
                                                .is_none_or(|sq| !may_take(base, l[0].from(), sq))
                                        })
                                        .cloned()
                                        .collect();
                                    if !answered.is_empty() {
                                        answered_capture = Some((j, answered));
                                    }
                                }
                                sols.retain(|line| captures_seen_emptied(line, emptied));
                            }
                            sols
                        };
                        if !sols.is_empty() {
                            found = Some((j, sols));
                            break 'tolerance;
                        }
                    }
                }
            }
        }
        let found = found.or(answered_capture);
        let Some((j, mut sols)) = found else {
            // A still picture the recorded line cannot explain may be what a
            // line recorded over an undecided one explains (see `rivals.rs`).
            if matches!(target, Target::Occupancy(_))
                && self.sensing.lenient
                && self.correct_from_rivals(t, target, out)
            {
                return Resolution::Explained;
            }
            // In fast play a frame often catches the next mover's piece in
            // the hand, after plies the frames before never showed at rest.
            if let Target::Occupancy(occ) = target {
                if !self.sensing.lenient {
                    if let Some(line) = self.plies_before_a_lift(occ) {
                        let len = self.game.as_ref().map_or(0, |g| g.pending.len());
                        self.extend_line(len, line);
                    }
                }
            }
            return Resolution::Unexplained;
        };
        // Several plies at once that lead back to a position the game already had
        // are a takeback, not moves played backwards: in play every ply shows as its
        // own picture, while a hand putting pieces back jumps over them
        // (Nf3 Nc6 undone reads as "Ng1 Nb8" otherwise).
        if sols[0].len() >= 2 {
            let n = game.history.len() - 1;
            if game.history[..n].iter().any(|p| target.matches(p.board())) {
                return Resolution::Unexplained;
            }
        }
        let mut default_promotion = None;
        // Readings recorded over others that fit as well, kept to correct the
        // record by (see `rivals.rs`).
        let mut rivals_here: Vec<Vec<Move>> = Vec::new();
        if sols.len() > 1 {
            // Occupancy-only boards: a capture square is known when the captured
            // piece was seen taken off first.
            let emptied = self.sensing.seen.emptied();
            let captured_first: Vec<Vec<Move>> = sols
                .iter()
                .filter(|line| {
                    line.iter().all(|m| {
                        m.capture().is_none() || m.is_en_passant() || emptied.contains(m.to())
                    })
                })
                .cloned()
                .collect();
            if !captured_first.is_empty() && captured_first.len() < sols.len() {
                sols = captured_first;
            }
        }
        if sols.len() > 1 && sols.iter().all(|l| l.iter().any(|m| m.is_promotion())) {
            // Lines that differ only in the pieces pawns were promoted to (a
            // promotion alone, or taken at once in the same frame).
            let first = &sols[0];
            let same_squares = sols.iter().all(|l| {
                l.len() == first.len()
                    && l.iter()
                        .zip(first)
                        .all(|(a, b)| a.from() == b.from() && a.to() == b.to())
            });
            if same_squares {
                // Occupancy-only: the new piece cannot be seen. Queen, flagged (3.7.5).
                if let Some(q) = sols.iter().find(|l| {
                    l.iter()
                        .all(|m| !m.is_promotion() || m.promotion() == Some(Role::Queen))
                }) {
                    let at = q
                        .iter()
                        .position(|m| m.is_promotion())
                        .expect("a promotion");
                    default_promotion = Some((q.len() - at, q[at].to()));
                    // The other pieces stay readings (a knight's move from
                    // the promotion square, or a king stepping where a queen
                    // would give check, shows it was one of them): a knight
                    // first, then a rook, a bishop last, the under-promotions
                    // players make, most common first.
                    let q = q.clone();
                    let mut others: Vec<Vec<Move>> = sols.into_iter().filter(|l| *l != q).collect();
                    others.sort_by_key(|l| match l.iter().find_map(|m| m.promotion()) {
                        Some(Role::Knight) => 0,
                        Some(Role::Rook) => 1,
                        _ => 2,
                    });
                    rivals_here.extend(others);
                    sols = vec![q];
                }
            }
        }
        if sols.len() > 1 && self.current.ambiguous_alerted.as_ref() != Some(&sols) {
            if matches!(target, Target::Occupancy(_)) {
                // Later frames usually decide; if they do not, one line is
                // recorded and the others kept (see `rivals.rs`).
                if self.current.ambiguous_lines.is_empty() {
                    let len = sols.iter().map(Vec::len).min().unwrap_or(0);
                    self.current.ambiguous_started = Some((t, len));
                }
            } else {
                let base = game.pos_at(j).clone();
                if same_position_after(&base, &sols) {
                    // Move orders that reach the same position (after a
                    // link gap: Nf3 e5 e4 or e4 e5 Nf3): no later picture
                    // can ever tell them apart, and waiting for one left
                    // the rest of the game unpublished. One is recorded,
                    // the arbiters are told the others (8.4).
                    let chosen = sols.remove(0);
                    out.push(super::follow::uncertain_alert(&base, &chosen, &sols));
                    sols = vec![chosen];
                } else {
                    out.push(ambiguous_alert(&base, target, &sols));
                }
            }
            if sols.len() > 1 {
                self.current.ambiguous_alerted = Some(sols.clone());
            }
        }
        if sols.len() > 1 {
            self.current.ambiguous_lines = sols.into_iter().map(|l| (j, l)).collect();
            return Resolution::Ambiguous;
        }
        self.current.ambiguous_alerted = None;
        self.current.ambiguous_lines.clear();
        let moves = sols.into_iter().next().expect("one solution");
        if self.sensing.lenient && matches!(target, Target::Occupancy(_)) {
            let emptied = self.sensing.seen.emptied();
            let unseen = moves.iter().rposition(|m| {
                m.capture().is_some() && !m.is_en_passant() && !emptied.contains(m.to())
            });
            if let Some(i) = unseen {
                self.sensing.unseen_capture_ply = Some(game.history.len() + j + i);
                // The capturing piece may as well be in the hand still: if a
                // later still picture shows it put down elsewhere, that reading
                // replaces this one (see `rivals.rs`).
                rivals_here.push(moves[..i].to_vec());
            }
        }
        if !rivals_here.is_empty() {
            let at = game.moves.len() + j;
            self.keep_rivals(at, moves.clone(), rivals_here);
        }
        self.extend_line(j, moves);
        if let Some((back, sq)) = default_promotion {
            let game = self.game.as_mut().expect("playing");
            let at = game.pending.len().saturating_sub(back);
            if let Some(step) = game.pending.get_mut(at) {
                step.notes.push(default_promotion_alert(sq));
            }
        }
        let game = self.game.as_ref().expect("playing");
        if game.pending.is_empty() {
            // The line was undone on the board: a press made for it is void.
            self.current.press = None;
        }
        self.current.resolution = Resolution::Explained;
        self.settle(t, out);
        Resolution::Explained
    }

    /// Occupancy-only boards: the plies from the line's tip that explain
    /// `occ` with one piece of the next mover lifted off its square, if
    /// exactly one line of one or two plies does. A frame a second in fast
    /// play catches a hand at work more often than a board at rest: without
    /// this, a move and the reply's lift (d2-d3 with the bishop off c8) read
    /// as nothing, and the plies after them outgrow what one picture is
    /// searched for.
    fn plies_before_a_lift(&self, occ: shakmaty::Bitboard) -> Option<Vec<Move>> {
        let game = self.game.as_ref()?;
        let tip = game.tip();
        let lifted = tip.board().occupied() & !occ;
        if lifted.is_empty() || lifted.count() > 4 {
            return None;
        }
        let emptied = self.sensing.seen.emptied();
        let mut found: Vec<Vec<Move>> = Vec::new();
        for sq in lifted {
            let target = Target::Occupancy(occ | shakmaty::Bitboard::from_square(sq));
            for depth in 1..=2 {
                let lines = search::sequences(tip, target, depth, 2, Some(&self.sensing.seen));
                let lines: Vec<Vec<Move>> = lines
                    .into_iter()
                    .filter(|l| captures_seen_emptied(l, emptied))
                    .filter(|l| {
                        let mut pos = tip.clone();
                        let mut before_last = tip.clone();
                        for (i, &m) in l.iter().enumerate() {
                            if i + 1 == l.len() {
                                before_last = pos.clone();
                            }
                            pos.play_unchecked(m);
                        }
                        // Not when the last ply's piece could be taking on
                        // that square: the captured piece off first, the
                        // capturer caught on a square it crosses (Rf8xf3
                        // with a frame on the rook at f6).
                        let last_from = l.last().and_then(|m| m.from());
                        let taking = may_take(&before_last, last_from, sq);
                        pos.board().color_at(sq) == Some(pos.turn())
                            && !l.iter().any(|m| m.to() == sq)
                            && !taking
                    })
                    .collect();
                if !lines.is_empty() {
                    found.extend(lines);
                    break;
                }
            }
            if found.len() > 1 {
                return None;
            }
        }
        match found.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    }

    /// Keeps the line's first `j` moves and appends `moves`.
    pub(super) fn extend_line(&mut self, j: usize, moves: Vec<Move>) {
        let lifted = if self
            .last_change_t
            .saturating_sub(self.sensing.same_scan_lifts_t)
            <= TWO_HANDS_MOVE_MS
        {
            self.sensing.same_scan_lifts
        } else {
            shakmaty::Bitboard::EMPTY
        };
        let game = self.game.as_mut().expect("playing");
        let ply = game.moves.len() + j;
        // A provisional move withdrawn while the reading waited (the rook of a
        // castling read as a move of its own, then the king lifted) is still
        // what the castling replaced.
        let replaced_first = game.pending.get(j).map(|s| s.mv).or(self
            .withdrawn_provisional
            .filter(|(p, _)| *p == ply)
            .map(|(_, m)| m));
        game.pending.truncate(j);
        let burst = moves.len() >= 2;
        for (i, &mv) in moves.iter().enumerate() {
            let mut pos = game.tip().clone();
            pos.play_unchecked(mv);
            let mut notes = Vec::new();
            if i == 0 {
                if let (
                    Move::Castle { rook, .. },
                    Some(Move::Normal {
                        role: Role::Rook,
                        from,
                        ..
                    }),
                ) = (mv, replaced_first)
                {
                    if from == rook {
                        notes.push(rook_first_alert(rook));
                    }
                }
            }
            if let Move::Normal {
                promotion: Some(Role::Rook),
                to,
                ..
            } = mv
            {
                notes.push(rook_promotion_alert(to));
            }
            // 7.5.4: both pieces of a castling or a capture left in one scan, and
            // the move was complete right after.
            let pair = match mv {
                Move::Castle { king, rook } => Some((king, rook, true)),
                Move::EnPassant { from, to } => {
                    Some((from, Square::from_coords(to.file(), from.rank()), false))
                }
                Move::Normal {
                    from,
                    to,
                    capture: Some(_),
                    ..
                } => Some((from, to, false)),
                _ => None,
            };
            if let Some((a, b, castling)) = pair {
                if lifted.contains(a) && lifted.contains(b) {
                    let mover = game.tip().turn();
                    notes.push(laws::two_hands_alert(mover, a, b, castling));
                }
            }
            game.pending.push(Step {
                mv,
                pos,
                reconstructed: burst,
                corrected: false,
                notes,
            });
        }
    }

    /// A picture that makes sense only with the board turned: the board was turned
    /// or power-cycled (and lost its own orientation handling).
    fn try_reorient(&mut self, raw: &Picture, out: &mut Vec<TrackerEvent>) -> bool {
        let game = self.game.as_ref().expect("playing");
        let tip = game.tip().board();
        if raw.occupied().count() != tip.occupied().count() {
            return false;
        }
        for o in Orientation::ALL {
            if o == self.orientation {
                continue;
            }
            if o.apply(raw).to_board().as_ref() == Some(tip) {
                let was_quarter = self.orientation.is_quarter_turn();
                self.orientation = o;
                self.last_board = Some(tip.clone());
                self.reset_evidence();
                self.current.resolution = Resolution::Explained;
                self.current.unexplained_since = None;
                self.current.takeback = None;
                if o.is_quarter_turn() && !was_quarter {
                    out.push(quarter_turn_alert());
                }
                return true;
            }
        }
        false
    }

    /// Occupancy-only boards: a start looks the same with the board either way
    /// round, so the game begins with the board taken as built, and the first
    /// move tells which way it stands (White's first move seen from the other
    /// side is a move of Black's pieces, never legal). A picture before any
    /// move that only the board turned 180° explains turns it, as does one in
    /// which it reads plies and the next mover's piece lifted.
    fn try_turn_occupancy(
        &mut self,
        t: Millis,
        raw: &Picture,
        out: &mut Vec<TrackerEvent>,
    ) -> bool {
        let game = self.game.as_ref().expect("playing");
        let start = game.history[0].board().occupied();
        if game.history.len() > 1
            || !game.pending.is_empty()
            || !self.current.ambiguous_lines.is_empty()
            || self.orientation.is_quarter_turn()
            || start.rotate_180() != start
        {
            return false;
        }
        // A trial: reading the picture the other way round notes what the
        // squares showed and may follow readings before it fails; a failed
        // trial leaves the tracker as it was, not only its orientation.
        let was = self.clone();
        self.orientation = self.orientation.turned_180();
        let occupancy = self.orientation.apply(raw).occupied();
        let target = Target::Occupancy(occupancy);
        self.sensing.seen.reset(Target::Occupancy(start));
        self.sensing.seen.add(target);
        let mut heard = Vec::new();
        let r = self.resolve(t, target, &mut heard);
        // Plies read before the next mover's piece was lifted (White's first
        // move and Black's hand already at work, in one frame) prove the turn
        // as well as a board at rest.
        let read_plies = self.game.as_ref().is_some_and(|g| !g.pending.is_empty());
        if r == Resolution::Unexplained && !read_plies {
            *self = was;
            return false;
        }
        out.append(&mut heard);
        self.after_resolution(t, raw, None, target, r, out);
        true
    }
}

/// Whether every line of `lines` leads from `base` to the same position (the
/// move counters aside): move orders no later picture can tell apart.
fn same_position_after(base: &Chess, lines: &[Vec<Move>]) -> bool {
    let ends: Vec<String> = lines
        .iter()
        .map(|line| {
            let mut pos = base.clone();
            for &m in line {
                pos.play_unchecked(m);
            }
            shakmaty::fen::Epd::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string()
        })
        .collect();
    ends.windows(2).all(|w| w[0] == w[1])
}
