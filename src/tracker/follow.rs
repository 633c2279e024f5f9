//! How the tracker follows a board that reports piece identities: the
//! provisional line, what may be verified and what must be corrected all come
//! from the evidence engine (`evidence.rs`), which reads every picture and
//! press in the order they came.
//!
//! - The provisional line is the cheapest reading that keeps every verified
//!   ply ([`Tracker::follow_evidence`]).
//! - A ply is verified only when every close reading that keeps the verified
//!   plies agrees on it ([`Tracker::may_verify`]); the usual proofs of
//!   completion (press, reply, hold) still decide *when*.
//! - When every close reading contradicts a verified ply and the board is at
//!   rest, the verified line is corrected in the open
//!   ([`Tracker::correct_from_evidence`]): one `Retraction`, the corrected plies,
//!   an info alert.
//! - Readings the board can never tell apart (a pawn's double step taken en
//!   passant before any scan saw it land, and the single step taken normally,
//!   leave the same squares) would hold the record back for ever: after
//!   [`UNDECIDED_MS`] the cheapest is published and the arbiters are told what
//!   else it may have been.

use shakmaty::{san::SanPlus, Bitboard, Move, Position, Square};

use super::evidence::{Evidence, Hyp};
use super::takeback::{ANCHOR_BEHIND_KEPT, ANCHOR_BEHIND_MOST, UNCERTAIN_KEPT_PLIES};
use super::{Resolution, Tracker};
use crate::events::{Alert, AlertKind, Millis, Severity, TrackerEvent};

/// Readings costing at most this much more than the cheapest are possible.
const MARGIN: u32 = 5;
/// A verified line is withdrawn once every reading that keeps it costs this
/// much more than the cheapest.
const REFUTED: u32 = 10;
/// A reading that needs more squares than this taken as noise is not followed:
/// a knocked piece or two leave play readable, a board turned or set up anew
/// does not.
const MOST_NOISE_FOLLOWED: u32 = 2;
/// A published ply is corrected only once the board has shown the other
/// reading this long (or a press came since it did).
const CORRECT_STILL_MS: Millis = 1_000;
/// A board back on an earlier position through unpressed plies is a takeback
/// when reading it forward needed noise this recently (pieces put back in the
/// reverse order of the moves).
const TAKEBACK_NOISE_MS: Millis = 3_000;
/// Close readings that keep disagreeing this long about the next ply to verify
/// are ones the board cannot tell apart.
pub(super) const UNDECIDED_MS: Millis = 4_000;
/// Readings this much dearer than the cheapest, beyond [`MARGIN`], that read
/// the next ply another way (made, or another move in the hand) hold its
/// verification for [`BRIEF_WAIT_MS`] once the cheapest reading has the reply
/// begun: in fast play the picture that tells them apart (the reply's next
/// square, a piece seen again) is usually a scan or two away. A move pressed
/// and at rest waits for nothing. After the wait the cheapest is verified;
/// the arbiters hear of such a reading only if it ends on the same position
/// (the board can then never tell them apart).
const WIDE_MARGIN: u32 = 8;
/// See [`WIDE_MARGIN`].
const BRIEF_WAIT_MS: Millis = 1_000;

impl Tracker {
    /// Starts the engine afresh from the verified position (and the provisional
    /// plies, which it takes as made), for boards that report identities.
    pub(super) fn reset_evidence(&mut self) {
        self.evidence = None;
        self.undecided = None;
        let Some(game) = self.game.as_ref() else {
            return;
        };
        if self.last_board.is_none() {
            // Occupancy-only boards keep the picture matcher.
            return;
        }
        let line: Vec<Move> = game.pending.iter().map(|s| s.mv).collect();
        let mut ev = Evidence::with_line(game.verified().clone(), &line);
        ev.set_played_before(&game.moves);
        // A clock mapped with no press yet was seen started (6.6).
        if game.moves.is_empty()
            && self.clock.white_side.is_some()
            && self.clock.presses_in_game == 0
        {
            ev.clock_started();
        }
        // The board's frame period is fixed: told once, kept when the anchor moves.
        ev.set_frame_period(Some(self.frame_period()).filter(|&p| p > 0));
        self.evidence = Some(ev);
        self.anchor_ply = game.moves.len();
    }

    /// The verified plies since the engine's anchor.
    fn verified_since_anchor(&self) -> &[Move] {
        let game = self.game.as_ref().expect("playing");
        &game.moves[self.anchor_ply.min(game.moves.len())..]
    }

    /// The cheapest reading within `margin` that keeps every verified ply.
    fn published_reading(&self, margin: u32) -> Option<&Hyp> {
        let ev = self.evidence.as_ref()?;
        let verified = self.verified_since_anchor();
        ev.viable(margin).find(|h| h.line.starts_with(verified))
    }

    /// Brings the provisional line in line with the evidence after a picture,
    /// a press or time passing, and says how the board reads now: explained
    /// (at rest on the line), or not (a move under way, or noise: a piece
    /// knocked, an illegal move, a takeback).
    pub(super) fn follow_evidence(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) -> Resolution {
        self.reading_is_play = false;
        let Some(ev) = self.evidence.as_ref() else {
            return self.current.resolution;
        };
        let best = ev.best();
        let (moving, noisy) = (best.moving(), best.noisy());
        let k = self.verified_since_anchor().len();
        let shown = self.last_board.clone();
        let game_moves = self.game.as_ref().map_or(&[][..], |g| &g.moves[..]);
        let reading = self.published_reading(REFUTED).map(|h| {
            // Pieces put back are read as moves only with noise on the way
            // (the last move undone first is out of turn), on the squares of
            // the plies back to the earlier position the board shows; a
            // repetition played without presses reads clean, and so does one
            // with a flicker elsewhere on the board (a Chessnut frame with
            // Bc4 and Rd7 both made, an f7 pawn read empty a second before).
            // The game's history is searched only when there was noise.
            let noise_since = self.last_change_t.saturating_sub(TAKEBACK_NOISE_MS);
            let played = h.marks[k.min(h.marks.len())..]
                .iter()
                .any(|m| m.press.is_some())
                || !h.noisy_since(noise_since)
                || self.earlier_position_shown().is_none_or(|b| {
                    let since_back = game_moves[b.min(game_moves.len())..]
                        .iter()
                        .chain(&h.line[k.min(h.line.len())..])
                        .fold(Bitboard::EMPTY, |acc, &m| acc | super::search::touched(m));
                    !h.noisy_on_since(noise_since, since_back)
                        || self.others_moved_since(b, &h.line[k.min(h.line.len())..])
                });
            let noise = shown
                .as_ref()
                .map_or(0, |b| h.noise_squares(b, ev.sparse()));
            (h.line.clone(), h.moving(), h.noisy(), played, noise)
        });
        if let Some((_, _, _, _, noise)) = &reading {
            if *noise > MOST_NOISE_FOLLOWED {
                // Not this game's board as it stands (turned, set up anew,
                // scrambled): the picture matcher's checks decide.
                return Resolution::Unexplained;
            }
        }
        // The board back on an earlier position of the game, reached by plies
        // nobody pressed for and read only with noise just before: pieces put
        // back (a takeback, 7.1), not moves played. The takeback hold decides.
        if let Some((line, moving, _, false, _)) = &reading {
            // One legal move onto an earlier position is a repetition, not a
            // takeback: only readings of two plies or more are suspect.
            let plies = line.len() + usize::from(*moving);
            if plies >= k + 2 {
                if let Some(back) = self
                    .earlier_position_shown()
                    .filter(|&back| !self.replayed_in_order(back))
                {
                    if self.current.takeback.is_none_or(|(b, _)| b != back) {
                        self.current.takeback = Some((back, t));
                    }
                    self.current.passed_back = Some(back);
                    return Resolution::Unexplained;
                }
            }
        }
        let reading = reading.map(|(line, m, n, _, _)| (line, m, n));
        let Some((line, h_moving, h_noisy)) = reading else {
            // Every reading that keeps the verified line is far worse than the
            // best: once the board is at rest, correct the record. Not when
            // the board went back to a position of the game (or went on from
            // one): that is a takeback (7.1), for the arbiters to rule on.
            // And not on a glimpse: a piece adjusted or a move changed in the
            // hand shows another legal position for a moment. The board must
            // stay so, or a press must come since it changed.
            let settled = t.saturating_sub(self.last_change_t) >= CORRECT_STILL_MS
                || self
                    .clock
                    .last_press_t
                    .is_some_and(|p| p > self.last_change_t);
            if !moving
                && !noisy
                && settled
                && !self.went_back()
                && self.correct_from_evidence(t, out)
            {
                return Resolution::Explained;
            }
            return Resolution::Unexplained;
        };
        let new: Vec<Move> = line[k..].to_vec();
        let game = self.game.as_ref().expect("playing");
        let old: Vec<Move> = game.pending.iter().map(|s| s.mv).collect();
        let j = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        if j < old.len() || new.len() > old.len() {
            if j < old.len() && new.len() == j {
                self.withdrawn_provisional = Some((game.moves.len() + j, old[j]));
            }
            self.extend_line(j, new[j..].to_vec());
            if new.is_empty() && !h_moving {
                // The move was undone on the board: a press made for it is void.
                self.current.press = None;
            }
        }
        self.reading_is_play = !h_noisy;
        if h_moving || h_noisy {
            Resolution::Unexplained
        } else {
            Resolution::Explained
        }
    }

    /// A press or time passing made the board read as at rest on the line:
    /// the episode of an unexplained picture is over.
    pub(super) fn engine_resolution(&mut self, r: Resolution) {
        if r == Resolution::Explained && self.current.resolution != Resolution::Explained {
            self.current.resolution = Resolution::Explained;
            self.current.unexplained_since = None;
            self.current.unexplained_alerted = false;
            self.current.takeback = None;
            self.current.passed_back = None;
            self.current.displaced = None;
        }
    }

    /// [`Tracker::follow_evidence`] would change nothing: the reading the
    /// record follows is at rest on the verified line, with no more noise
    /// than it follows, and the last follow said so of it.
    pub(super) fn follow_settled(&self) -> bool {
        let Some(h) = self.published_reading(REFUTED) else {
            return false;
        };
        let k = self.verified_since_anchor().len();
        let noise = self.last_board.as_ref().map_or(0, |b| {
            h.noise_squares(b, self.evidence.as_ref().is_some_and(|ev| ev.sparse()))
        });
        h.line.len() == k
            && !h.moving()
            && noise <= MOST_NOISE_FOLLOWED
            && self.reading_is_play != h.noisy()
    }

    /// The press the reading the line follows gives the next ply to verify.
    pub(super) fn evidence_press_for_next(&self) -> Option<u32> {
        let h = self.published_reading(REFUTED)?;
        let k = self.verified_since_anchor().len();
        h.marks.get(k).and_then(|m| m.press)
    }

    /// The press to publish the first provisional ply with: the one the
    /// evidence gives it (the pending press if it is that one), else the
    /// pending press when `for_mover` and the evidence does not give it to a
    /// later ply.
    pub(super) fn press_for_first(&mut self, for_mover: bool) -> Option<super::Press> {
        if self.evidence.is_none() {
            return if for_mover {
                self.current.press.take()
            } else {
                None
            };
        }
        match self.evidence_press_for_next() {
            Some(id) if self.current.press.as_ref().is_some_and(|p| p.id == id) => {
                self.current.press.take()
            }
            Some(id) => self.clock.press_log.iter().find(|p| p.id == id).cloned(),
            None => {
                // Only a later ply made or under way takes the press from this
                // one. A reading that keeps it as an early press for the
                // mover's next ply has not yet been charged for this ply's
                // press being forgotten (that comes plies later): the mover's
                // own press, after this ply and before his next began, is
                // this ply's ([%emt], [%clk]).
                let later = self.current.press.as_ref().is_some_and(|p| {
                    self.published_reading(REFUTED).is_some_and(|h| {
                        let k = self.verified_since_anchor().len();
                        h.marks.iter().skip(k + 1).any(|m| m.press == Some(p.id))
                            || h.holds_press_under_way(p.id)
                    })
                });
                if for_mover && !later {
                    self.current.press.take()
                } else {
                    None
                }
            }
        }
    }

    /// The cheapest reading gives press `id` to a ply (made, under way, or
    /// about to be shown): it was pressed for a move.
    pub(super) fn evidence_owns(&self, id: u32) -> bool {
        self.evidence
            .as_ref()
            .is_some_and(|ev| ev.best().owns_press(id))
    }

    /// The cheapest reading explains the board with legal play alone and has
    /// `presser`'s move complete (only the opponent may be moving): his press
    /// completed a legal move, whatever the picture when it came. `press`
    /// (its number) is cleared too when that reading has it on a ply it has
    /// complete.
    pub(super) fn evidence_clears_press(
        &self,
        presser: Option<shakmaty::Color>,
        press: Option<u32>,
    ) -> bool {
        // The cheapest reading at rest, or any close one in which the
        // presser's opponent is at work: a replier who lifts the piece just
        // captured reads, until his own piece leaves, as well as the mover
        // lifting his capturing piece again, and a 7.5.1 alert carries a
        // penalty.
        let board = self.last_board.as_ref();
        self.evidence.as_ref().is_some_and(|ev| {
            let best = ev.best();
            // Noise that is only a piece read as another of its colour, away
            // from the move (a pawn read as a king for a scan as a hand passes
            // over it), is the sensor's and makes no move illegal; a pawn left
            // on its last rank, read as a promotion with a misread, does (7.5.2).
            let noisy = |h: &Hyp| h.noisy() && !board.is_some_and(|b| h.misread_away_from_play(b));
            // The reply's own squares show the hand: its piece gone, or the
            // piece it takes lifted.
            let at_work = |h: &Hyp| {
                h.under_way_best().zip(board).is_some_and(|(m, b)| {
                    super::search::touched(m)
                        .into_iter()
                        .any(|sq| b.piece_at(sq) != h.pos().board().piece_at(sq))
                })
            };
            let replying = |h: &Hyp| {
                !noisy(h)
                    && h.moving()
                    && presser.is_some_and(|c| h.pos().turn() != c)
                    && at_work(h)
            };
            // Or any close reading at rest on legal play with the presser's
            // move the last made: the cheapest may still hold that move in
            // the hand (a rook set down on a square it could slide on from)
            // until a moment of stillness tells, and a 7.5.1 alert is not for
            // a press the board may have explained legally all along.
            let at_rest_after_presser =
                |h: &Hyp| !noisy(h) && !h.moving() && presser.is_some_and(|c| h.pos().turn() != c);
            // Or the cheapest reading reads the board as legal play without
            // noise and gives the press to a ply it has complete: a published
            // ply it contradicts is what is wrong (it is corrected once the
            // board is still), not the player's move.
            let owned = press
                .is_some_and(|id| !noisy(best) && best.marks.iter().any(|m| m.press == Some(id)));
            // Or a close reading without noise gives the press to a ply and
            // has the reply to it made: the presser's move stands answered,
            // whatever holds it back from being verified (another close
            // reading of it), and his next move may be under way.
            let answered = |h: &Hyp| {
                press.is_some_and(|id| {
                    !noisy(h)
                        && h.marks
                            .iter()
                            .position(|m| m.press == Some(id))
                            .is_some_and(|i| h.line.len() > i + 1)
                })
            };
            // Or a close reading, noise and all, gives the press to the
            // presser's last ply, at rest and standing where it went: what the
            // noise shows happened after the move was made. A bus reads the
            // clock every 2 s, so a press comes in late: a black pawn knocked
            // onto g8 by White's hand after Nf6 was made and pressed is a
            // displaced piece (7.4, should it stay), not Black's illegal move.
            // The cheapest reading may still hold the move in the hand, the
            // knocked piece read as where it went (board 332 of a bus line:
            // Bg2 pressed, then Black's hand knocks the bishop on c1 onto c2).
            // A piece taken on to a square of no legal move leaves the
            // square it went to, and still reads as an illegal move.
            // Another reading than the cheapest counts only with its noise
            // off the move's own squares: a captured pawn left on d5 after
            // exd6 e.p. is the move made wrong (7.5.2), not noise after it.
            let landed = |h: &Hyp, cheapest: bool| {
                press.is_some_and(|id| {
                    let (Some(mark), Some(&last), Some(shown)) =
                        (h.marks.last(), h.line.last(), board)
                    else {
                        return false;
                    };
                    let after = h.pos().board();
                    let went = super::search::touched(last) & after.occupied();
                    let own_squares_clean = cheapest
                        || (super::search::diff(after, shown) & super::search::touched(last))
                            .is_empty();
                    mark.press == Some(id)
                        && !h.moving()
                        && presser.is_some_and(|c| h.pos().turn() != c)
                        && !went.is_empty()
                        && went
                            .into_iter()
                            .all(|sq| shown.piece_at(sq) == after.piece_at(sq))
                        && own_squares_clean
                })
            };
            (!noisy(best) && !best.moving())
                || owned
                || landed(best, true)
                || ev.viable(MARGIN).any(|h| {
                    replying(h) || at_rest_after_presser(h) || answered(h) || landed(h, false)
                })
        })
    }

    /// The move after the only provisional one, under way in the reading the
    /// line follows (the opponent's hand at work): its cheapest candidate.
    pub(super) fn reply_under_way(&self) -> Option<Move> {
        let game = self.game.as_ref()?;
        let h = self.published_reading(REFUTED)?;
        let k = self.verified_since_anchor().len();
        if game.pending.len() != 1 || h.line.len() != k + 1 || !h.moving() || h.noisy() {
            return None;
        }
        // The replier's own piece has left its square: his hand is at work.
        // A piece of the mover merely gone from a square the reply could
        // capture on may be the mover taking his move back.
        let reply = h.under_way_best()?;
        let board = self.last_board.as_ref()?;
        let from = match reply {
            Move::Castle { king, .. } => king,
            m => m.from()?,
        };
        // A reply taking the moved piece where no picture ever showed it
        // (its square unchanged since the piece left its own) proves nothing:
        // that reading is a guess (a piece landed and was taken within one
        // scan), and a piece in the hand with a flicker nearby reads the same.
        if let Move::Normal {
            from: m_from,
            to: m_to,
            ..
        } = game.pending[0].mv
        {
            let taken_on = match reply {
                Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
                m if m.is_capture() => Some(m.to()),
                _ => None,
            };
            let changed = &self.sensing.square_changed;
            if taken_on == Some(m_to) && changed[m_to as usize] <= changed[m_from as usize] {
                return None;
            }
        }
        (board.piece_at(from) != h.pos().board().piece_at(from)).then_some(reply)
    }

    /// The plies `reading` moved pieces the plies since `back` never touched,
    /// and every square of theirs changed after the squares of those plies
    /// began to: another piece made a trip of its own on the way back to the
    /// earlier position, which pieces put back cannot show (a repetition
    /// played quickly on a board without a clock, Qb5 then Rc5 Qb8 Rc8, the
    /// queen's lift read with noise: not Qb5 taken back). Pieces put back
    /// leave the other pieces where they stood.
    fn others_moved_since(&self, back: usize, reading: &[Move]) -> bool {
        let Some(game) = self.game.as_ref() else {
            return false;
        };
        let touched = |plies: &[Move]| {
            plies
                .iter()
                .fold(Bitboard::EMPTY, |acc, &m| acc | super::search::touched(m))
        };
        let undone = touched(&game.moves[back.min(game.moves.len())..]);
        let others = touched(reading) & !undone;
        let changed = &self.sensing.square_changed;
        let Some(began) = undone.into_iter().map(|sq| changed[sq as usize]).min() else {
            return false;
        };
        !others.is_empty() && others.into_iter().all(|sq| changed[sq as usize] > began)
    }

    /// The cheapest reading reads the board as play without noise, and no
    /// close reading keeps the verified line: a ply was published wrong and
    /// is corrected once the board rests, not displaced pieces (7.4). In
    /// fast play on a board without a clock it may not rest for seconds
    /// (Chessnut, blind hands in time trouble, game 219: b6 was published
    /// for b5, and a 7.4 listing sixteen squares came 2 s before the
    /// correction).
    pub(super) fn another_line_reads_clean(&self) -> bool {
        self.evidence.as_ref().is_some_and(|ev| !ev.best().noisy())
            && self.published_reading(REFUTED).is_none()
    }

    /// The cheapest reading reads the board without noise (a ply under way),
    /// and a close reading that keeps the verified line stands at rest on
    /// exactly what the board shows: no piece is displaced. On a board
    /// without a clock a piece read as held in the hand costs nothing however
    /// long the board stands still, so that reading may tie with the one of
    /// the piece gone (Certabo, blind hands at normal pace: a queen taken on
    /// c4 slid off by b4 and a4, read as Qa4 and lifted again, raised a 7.4
    /// for a4 ten seconds into the opponent's think). A cheapest reading
    /// that needs noise is another matter: the pieces disagree with it,
    /// and the arbiters hear of it.
    pub(super) fn a_close_reading_shows_the_board(&self) -> bool {
        let (Some(ev), Some(board)) = (self.evidence.as_ref(), self.last_board.as_ref()) else {
            return false;
        };
        if ev.best().noisy() {
            return false;
        }
        let verified = self.verified_since_anchor();
        ev.viable(MARGIN)
            .any(|h| !h.moving() && h.line.starts_with(verified) && h.pos().board() == board)
    }

    /// The board shows, or showed since the last explained picture, an earlier
    /// position of the game.
    fn went_back(&self) -> bool {
        self.current.passed_back.is_some() || self.shows_earlier_position()
    }

    /// The board shows an earlier position of the game than the verified one.
    fn shows_earlier_position(&self) -> bool {
        self.earlier_position_shown().is_some()
    }

    /// The latest earlier position of the game the board shows (its ply).
    /// Whether the board came back to the position after ply `back` by the
    /// plies since being played again, in their order: the squares of each
    /// changed last after those of the ply before it (Bd7 Qb3 Be6 Qa4, then
    /// Bd7 and Qb3 again, one press forgotten). A takeback undoes the last
    /// ply first.
    fn replayed_in_order(&self, back: usize) -> bool {
        let Some(game) = self.game.as_ref() else {
            return false;
        };
        let plies = &game.moves[back.min(game.moves.len())..];
        let last_change = |m: &Move| {
            super::search::touched(*m)
                .into_iter()
                .map(|sq| self.sensing.square_changed[sq as usize])
                .max()
                .unwrap_or(0)
        };
        plies.len() >= 2
            && plies
                .windows(2)
                .all(|w| last_change(&w[0]) < last_change(&w[1]))
    }

    fn earlier_position_shown(&self) -> Option<usize> {
        let (Some(game), Some(board)) = (self.game.as_ref(), self.last_board.as_ref()) else {
            return None;
        };
        let n = game.history.len() - 1;
        (0..n).rev().find(|&k| game.history[k].board() == board)
    }

    /// The board shows the line's position except on squares already reported
    /// displaced (7.4) and still showing what they showed then: a move made
    /// around them is complete all the same.
    pub(super) fn only_displaced_noise(&self) -> bool {
        let (Some(_), Some((mask, snapshot)), Some(board), Some(game)) = (
            self.evidence.as_ref(),
            self.current.displaced.as_ref(),
            self.last_board.as_ref(),
            self.game.as_ref(),
        ) else {
            return false;
        };
        if self.evidence.as_ref().is_some_and(|ev| ev.best().moving()) {
            return false;
        }
        let off = super::search::diff(game.tip().board(), board);
        (off & !*mask).is_empty()
            && off
                .into_iter()
                .all(|sq| board.piece_at(sq) == snapshot.piece_at(sq))
    }

    /// Whether the first provisional ply may be verified: every close reading
    /// that keeps the verified line has made it. Readings that stay divided for
    /// [`UNDECIDED_MS`] are ones the board cannot tell apart: the cheapest is
    /// taken, and the arbiters get an info alert naming the other.
    pub(super) fn may_verify(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) -> bool {
        let Some(ev) = self.evidence.as_ref() else {
            return true;
        };
        let game = self.game.as_ref().expect("playing");
        let Some(next) = game.pending.first().map(|s| s.mv) else {
            return false;
        };
        let verified = self.verified_since_anchor();
        let k = verified.len();
        // The line followed must itself be a close reading: one kept only
        // because it agrees with what is published is not proof of more.
        let followed_is_close = ev
            .viable(MARGIN)
            .any(|h| h.line.starts_with(verified) && h.line.get(k) == Some(&next));
        if !followed_is_close {
            return false;
        }
        // A reading that has not completed the ply yet but may be making it
        // (the piece still in the hand) is no rival: when the ply is complete
        // is for the press and the holds to say, not which move it is.
        let mut others: Vec<Vec<Move>> = Vec::new();
        for h in ev.viable(MARGIN).filter(|h| h.line.starts_with(verified)) {
            let agrees = match h.line.get(k) {
                Some(&m) => m == next,
                None => h.moving() && h.may_be_making(next, MARGIN),
            };
            if !agrees {
                others.push(h.claimed()[k..].to_vec());
            }
        }
        let ply = game.moves.len();
        if others.is_empty() {
            // A reading just outside the margin that reads the ply another
            // way holds it briefly, once the cheapest has the reply begun.
            let replying = |h: &Hyp| h.line.len() > k + 1 || (h.line.len() == k + 1 && h.moving());
            let best = ev.best();
            let wide: Vec<&Hyp> = if replying(best) {
                ev.viable(WIDE_MARGIN)
                    .filter(|h| {
                        h.line.starts_with(verified)
                            && match h.line.get(k) {
                                Some(&m) => m != next,
                                // Still making the ply, with another move in
                                // the hand (a bishop crossing b5 to take on
                                // e2, pressed on the way).
                                None => h.moving() && h.under_way_best() != Some(next),
                            }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let since = match self.undecided {
                Some((since, p)) if p == ply => since,
                _ if !wide.is_empty() => {
                    self.undecided = Some((t, ply));
                    t
                }
                _ => t,
            };
            if !wide.is_empty() && t.saturating_sub(since) < BRIEF_WAIT_MS {
                return false;
            }
            // Still there after the wait and on the same position as the
            // cheapest: a single step against a double step taken en passant,
            // a piece put down on one square or another and taken on from it.
            // No later picture can tell them apart, so the arbiters hear of it.
            let same_end: Vec<Vec<Move>> = wide
                .iter()
                .filter(|h| {
                    h.line.len() == best.line.len() && h.pos().board() == best.pos().board()
                })
                .map(|h| h.claimed()[k..].to_vec())
                .collect();
            if !same_end.is_empty() {
                let chosen: Vec<Move> = game.pending.iter().map(|s| s.mv).collect();
                out.push(uncertain_alert(game.verified(), &chosen, &same_end));
                self.keep_readings_from(ply, &chosen, &same_end);
            }
            self.undecided = None;
            return true;
        }
        let since = match self.undecided {
            Some((since, p)) if p == ply => since,
            _ => {
                self.undecided = Some((t, ply));
                t
            }
        };
        // Only readings that completed the ply another way count as a rival:
        // one still under way is not a reading of what was played.
        let rivals: Vec<Vec<Move>> = others.into_iter().filter(|l| !l.is_empty()).collect();
        if t.saturating_sub(since) < UNDECIDED_MS {
            return false;
        }
        self.undecided = None;
        let chosen: Vec<Move> = game.pending.iter().map(|s| s.mv).collect();
        out.push(uncertain_alert(game.verified(), &chosen, &rivals));
        self.keep_readings_from(ply, &chosen, &rivals);
        true
    }

    /// Ply `ply` is published though another reading fits as well: the
    /// engine's anchor stays before it until a few plies (see
    /// [`super::takeback::UNCERTAIN_KEPT_PLIES`]) past the last ply where
    /// `chosen` and `rivals` differ. A reading several plies long counts
    /// from its end: Rab8 Nb1 Rbc8 Nc3 against Rac8 (a rook slid a8-b8-c8
    /// and a flicker on c3, Certabo, own hands at normal pace, game 1720)
    /// used up the plies kept by itself, and White's next move, which only
    /// Rac8 explains, found no rival left: seven false 7.4 alerts followed.
    fn keep_readings_from(&mut self, ply: usize, chosen: &[Move], rivals: &[Vec<Move>]) {
        let rivals: Vec<&Vec<Move>> = rivals.iter().filter(|l| l.as_slice() != chosen).collect();
        let end = ply + differing_plies(chosen, &rivals);
        let r = &mut self.retractions;
        match r.uncertain_ply {
            Some(u) => {
                r.uncertain_ply = Some(u.min(ply));
                r.uncertain_until = r.uncertain_until.max(end);
            }
            None => {
                r.uncertain_ply = Some(ply);
                r.uncertain_until = end;
            }
        }
    }

    /// Every close reading contradicts a verified ply and the board is at rest
    /// on the cheapest: the plies from the first contradicted one are withdrawn
    /// (one `Retraction`), the cheapest reading's plies follow as `corrected`
    /// provisional moves (verified as any move is), and the arbiters are told.
    pub(super) fn correct_from_evidence(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) -> bool {
        let Some(ev) = self.evidence.as_ref() else {
            return false;
        };
        let line = ev.best().line.clone();
        let verified = self.verified_since_anchor().to_vec();
        let common = line
            .iter()
            .zip(&verified)
            .take_while(|(a, b)| a == b)
            .count();
        if common == verified.len() {
            return false;
        }
        let k = self.anchor_ply + common;
        let game = self.game.as_ref().expect("playing");
        let withdrawn = sans(&game.history[k], &game.moves[k..]);
        self.replace_from(k, &withdrawn, &line[common..], out);
        self.undecided = None;
        self.settle(t, out);
        true
    }

    /// In play that never rests (time trouble on a board that sends a frame
    /// a second), the anchor follows the verified plies
    /// [`ANCHOR_BEHIND_KEPT`] behind, once they are
    /// [`ANCHOR_BEHIND_MOST`] ahead of it, keeping the readings of the
    /// published line.
    /// Readings that differ only far back (a pawn's single or double step,
    /// two independent moves in either order) otherwise multiply: each such
    /// old doubt doubles the readings of every recent one, and the beam is
    /// filled with copies while the recent doubt that matters falls out of it
    /// (Certabo, blind hands in time trouble: a game read to ply 49 of 139,
    /// then never again, its readings 80 plies long). Self-correction still
    /// goes back over the plies kept, and an earlier ply published as
    /// uncertain keeps its rivals for [`UNCERTAIN_KEPT_PLIES`] plies as
    /// before.
    pub(super) fn anchor_behind(&mut self) {
        let (Some(ev), Some(game)) = (self.evidence.as_ref(), self.game.as_ref()) else {
            return;
        };
        let n = game.moves.len();
        if n < self.anchor_ply + ANCHOR_BEHIND_MOST {
            return;
        }
        let target = n - ANCHOR_BEHIND_KEPT;
        let target = match self.retractions.uncertain_ply {
            // Counted from the uncertain ply itself, not from the end of its
            // stretch as when the board rests: in play that never rests,
            // keeping a long reading's rivals too crowds the beam (Certabo,
            // blind hands in time trouble: 115 plies more lost, 6 more 7.4s).
            Some(u) if target < u + UNCERTAIN_KEPT_PLIES => u,
            _ => target,
        };
        if target <= self.anchor_ply {
            return;
        }
        // The record is what the readings behind it are cut to: a reading
        // of another line there was named when its ply was published
        // (8.4), and is dropped now.
        let moves = &game.moves[self.anchor_ply..target];
        if !ev.viable(u32::MAX).any(|h| h.line.starts_with(moves)) {
            return;
        }
        if self.retractions.uncertain_ply.is_some_and(|u| u < target) {
            self.retractions.uncertain_ply = None;
        }
        self.advance_anchor(target);
    }

    /// Moves the engine's anchor to verified ply `certain`: what the board has
    /// shown still for long is never searched again.
    pub(super) fn advance_anchor(&mut self, certain: usize) {
        if self.evidence.is_none() || certain <= self.anchor_ply {
            return;
        }
        let game = self.game.as_ref().expect("playing");
        let moves = game.moves[self.anchor_ply..certain.min(game.moves.len())].to_vec();
        let ev = self.evidence.as_mut().expect("checked");
        ev.advance_anchor(&moves);
        self.anchor_ply += moves.len();
    }
}

/// The SAN of `moves` played from `pos`.
pub(super) fn sans(pos: &shakmaty::Chess, moves: &[Move]) -> Vec<String> {
    let mut pos = pos.clone();
    moves
        .iter()
        .map(|&m| {
            let san = SanPlus::from_move(pos.clone(), m).to_string();
            pos.play_unchecked(m);
            san
        })
        .collect()
}

/// How many plies of `chosen`, from its first, differ from some reading of
/// `rivals`: the plies every reading ends with alike are not counted (one
/// ply at least is).
fn differing_plies(chosen: &[Move], rivals: &[&Vec<Move>]) -> usize {
    let alike = rivals
        .iter()
        .map(|l| {
            let same = l
                .iter()
                .rev()
                .zip(chosen.iter().rev())
                .take_while(|(a, b)| a == b);
            same.count().min(l.len().saturating_sub(1))
        })
        .min()
        .unwrap_or(0)
        .min(chosen.len().saturating_sub(1));
    chosen.len() - alike
}

/// Article 8.4 as an info: the board could not tell `chosen` from `rivals`.
pub(super) fn uncertain_alert(
    base: &shakmaty::Chess,
    chosen: &[Move],
    rivals: &[Vec<Move>],
) -> TrackerEvent {
    let rivals: Vec<&Vec<Move>> = rivals.iter().filter(|l| l.as_slice() != chosen).collect();
    // The plies every reading ends with alike are left out: the readings
    // differ before them, and a note that spells out fifty plies of the same
    // game after each reading hides the one ply that matters.
    let alike = chosen.len() - differing_plies(chosen, &rivals);
    let chosen = &chosen[..chosen.len() - alike];
    // Hypotheses that differ only in their presses read the same.
    let mut others: Vec<String> = Vec::new();
    for l in rivals {
        let line = sans(base, &l[..l.len() - alike]).join(" ");
        if !others.contains(&line) {
            others.push(line);
        }
    }
    let squares = chosen
        .first()
        .map(|m| Alert::square_names(super::search::touched(*m)))
        .unwrap_or_default();
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::MovesUncertain,
        article: "8.4".into(),
        severity: Severity::Info,
        squares,
        message: format!(
            "The board's reports fit {} as well as {}: the pieces were never seen in between. {} is recorded; check the scoresheets if it matters.",
            sans(base, chosen).join(" "),
            if others.is_empty() {
                "another reading".to_string()
            } else {
                others.join(" or ")
            },
            sans(base, &chosen[..1]).join(" ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{uci::UciMove, Chess, Position};

    fn line(ucis: &str) -> Vec<Move> {
        let mut pos = Chess::default();
        ucis.split(' ')
            .map(|u| {
                let m = u.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
                pos.play_unchecked(m);
                m
            })
            .collect()
    }

    fn message(e: TrackerEvent) -> String {
        match e {
            TrackerEvent::Alert(a) => a.message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_note_names_the_plies_where_the_readings_differ_not_the_game_after() {
        let chosen = line("e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6");
        let rivals = [
            line("g1f3 b8c6 e2e4 e7e5 f1b5 a7a6 b5a4 g8f6"),
            line("g1f3 e7e5 e2e4 b8c6 f1b5 a7a6 b5a4 g8f6"),
        ];
        let text = message(uncertain_alert(&Chess::default(), &chosen, &rivals));
        assert!(
            text.starts_with(
                "The board's reports fit e4 e5 Nf3 Nc6 as well as Nf3 Nc6 e4 e5 or Nf3 e5 e4 Nc6: "
            ),
            "{text}"
        );
        // A reading shorter than the rest keeps a ply of its own.
        let text = message(uncertain_alert(
            &Chess::default(),
            &line("g1f3 g8f6 f3g1 f6g8 e2e4"),
            &[line("e2e4")],
        ));
        assert!(
            text.starts_with("The board's reports fit Nf3 Nf6 Ng1 Ng8 e4 as well as e4: "),
            "{text}"
        );
    }
}
