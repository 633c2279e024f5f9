//! What the board's sensors do that is not play: squares reported one scan
//! late or one at a time, pieces lifted in the same scan (a hint of two
//! hands, 7.5.4), occupancy-only boards that cannot tell a capture from a
//! piece held over the board, frames sent at a period, a replay's input that
//! ends. Each quirk is kept here so that the picture matcher and the proofs of
//! completion can ask about it without knowing how the board reports.

use eboard_protocols::Picture;
use shakmaty::{Board, Chess, Move, Position, Square};

use super::{search, Tracker};
use crate::events::Millis;

/// What the tracker remembers about how the board reported.
#[derive(Clone, Debug)]
pub(super) struct Sensing {
    /// What each square showed since the last explained picture.
    pub(super) seen: search::Seen,
    /// Accept what the squares did not show: captures whose square was never seen
    /// empty (occupancy-only), two-ply bursts with an unseen middle (identity).
    pub(super) lenient: bool,
    /// The picture (by its change time) a lenient reading was tried for.
    pub(super) lenient_tried: Option<Millis>,
    /// Occupancy-only boards: the ply of the latest capture read from a still
    /// picture without its square seen empty, which a hand holding the piece
    /// also shows (see `UNSEEN_CAPTURE_HOLD_MS`).
    pub(super) unseen_capture_ply: Option<usize>,
    /// The unexplained episode (by its `unexplained_since`) seen as a move under way.
    pub(super) under_way_episode: Option<Millis>,
    /// Squares emptied in the latest board scan, and when that scan began.
    pub(super) scan_lifts: (shakmaty::Bitboard, Millis),
    /// Squares that left the board together with another in one scan since the
    /// last explained picture (7.5.4), and when the latest such scan came.
    pub(super) same_scan_lifts: shakmaty::Bitboard,
    pub(super) same_scan_lifts_t: Millis,
    /// The plies of this game whose two pieces (castling, capture) left the
    /// board in one scan, per mover: 7.5.4 is told once there are
    /// [`TWO_HANDS_REPEATS`] of them.
    pub(super) two_hands_plies: shakmaty::ByColor<Vec<u32>>,
    /// The input ended here (the end of a capture being replayed): what the
    /// board showed after it is unknown, so no picture is reported as displaced
    /// for a stillness that only the missing input made long enough.
    pub(super) input_end: Option<Millis>,
    /// When each square (in the game's frame) last showed something new: a
    /// takeback undoes the last ply first, the same plies played again come
    /// in their own order.
    pub(super) square_changed: [Millis; 64],
    /// The raw picture before the latest change, and since when it had been
    /// steady: a change the next scan undoes was a flicker (see
    /// [`FLICKER_MS`]).
    pub(super) before_change: Option<(Picture, Millis)>,
    /// Since when the picture has been the same but for flickers: what the
    /// holds that verify a move without a press count (see
    /// [`Tracker::steady_since_after`]).
    pub(super) steady_since: Millis,
    /// The latest two instants at which the board said a scan of it was over
    /// (a DGT bus board answering a poll), latest first. A report read at an
    /// earlier instant than now is whole: the picture it left stood until
    /// then, and nothing is known of the time since. One read at this very
    /// instant may still have changes to come (a report holds several
    /// scans). Empty on boards that report each change as it comes, whose
    /// silence is stillness.
    pub(super) scans_reported: (Option<Millis>, Option<Millis>),
}

impl Default for Sensing {
    // By hand only because arrays longer than 32 have no `Default`.
    fn default() -> Self {
        Sensing {
            seen: search::Seen::default(),
            lenient: false,
            lenient_tried: None,
            unseen_capture_ply: None,
            under_way_episode: None,
            scan_lifts: (shakmaty::Bitboard::EMPTY, 0),
            same_scan_lifts: shakmaty::Bitboard::EMPTY,
            same_scan_lifts_t: 0,
            two_hands_plies: shakmaty::ByColor::default(),
            input_end: None,
            square_changed: [0; 64],
            before_change: None,
            steady_since: 0,
            scans_reported: (None, None),
        }
    }
}

/// A picture that lasted at most this long and gave way to the one before it
/// was a flicker (a sensor misread for a scan, a piece lifted and put straight
/// back): the stillness before it goes on. Two scans of a board that reports
/// every change.
pub(super) const FLICKER_MS: Millis = 500;

/// Two squares emptied this close together were reported in one board scan.
const SAME_SCAN_MS: Millis = 50;

/// Two hands move both pieces in one motion: lifted in one scan and the move
/// complete this soon after. One hand that grabs both quickly still needs time
/// to put them down one after the other.
pub(super) const TWO_HANDS_MOVE_MS: Millis = 400;

/// A quick hand takes the captured piece and its own within one scan too, as
/// it often does in time trouble: the arbiters hear of a player's moves that
/// look two-handed once there are this many in the game (and at each further
/// this many), not of every one.
pub(super) const TWO_HANDS_REPEATS: usize = 3;

/// Occupancy-only boards: a capture read from a still picture without its
/// square seen empty looks exactly like the piece held in the hand over the
/// board, which players do for several seconds: without a reply it is
/// verified only after the picture has been still this long.
pub(super) const UNSEEN_CAPTURE_HOLD_MS: Millis = 8_000;

/// Whether a picture showing `mv` played from `before` could be a partial report
/// of another legal move: one whose changed squares strictly include `mv`'s and
/// agree with `mv`'s result on them (occupancy only, so that boards which cannot
/// tell pieces apart are covered too). The board reports one scan's changes one
/// square at a time, so such a picture may be followed at once by the rest of
/// the bigger move (h1-f1 seen before e1-g1 completes O-O).
pub(super) fn may_grow(before: &Chess, mv: Move) -> bool {
    let changed = |after: &Board| -> shakmaty::Bitboard {
        Square::ALL
            .into_iter()
            .filter(|&sq| before.board().piece_at(sq) != after.piece_at(sq))
            .collect()
    };
    let mut after = before.clone();
    after.play_unchecked(mv);
    let mine = changed(after.board());
    before.legal_moves().into_iter().any(|other| {
        if other == mv {
            return false;
        }
        let mut pos = before.clone();
        pos.play_unchecked(other);
        let theirs = changed(pos.board());
        mine != theirs
            && (mine & !theirs).is_empty()
            && mine.into_iter().all(|sq| {
                pos.board().occupied().contains(sq) == after.board().occupied().contains(sq)
            })
    })
}

/// Occupancy-only boards: whether every capture of `line` (en passant aside)
/// took on a square seen empty, the captured piece off first. Otherwise the
/// picture is also a piece lifted and held.
pub(super) fn captures_seen_emptied(line: &[Move], emptied: shakmaty::Bitboard) -> bool {
    line.iter()
        .all(|m| m.capture().is_none() || m.is_en_passant() || emptied.contains(m.to()))
}

impl Tracker {
    /// Records which squares were emptied in the same board scan as another
    /// (before `last_raw` is replaced by `picture`): one hand lifts pieces one
    /// after the other, so two pieces of one move gone in one scan hint at two
    /// hands (7.5.4). A board that sends whole frames at a period shows only
    /// that both squares emptied within one period, which one hand does too: it
    /// gives no such hint.
    pub(super) fn note_lifts(&mut self, t: Millis, picture: &Picture) {
        if let eboard_protocols::family::Reporting::Frames { .. } = self.config.sensor.reporting {
            return;
        }
        let Some(prev) = self.last_raw.as_ref() else {
            return;
        };
        let before = self.orientation.apply(prev).occupied();
        let now = self.orientation.apply(picture).occupied();
        let emptied = before & !now;
        if emptied.is_empty() {
            return;
        }
        if t.saturating_sub(self.sensing.scan_lifts.1) > SAME_SCAN_MS {
            self.sensing.scan_lifts = (shakmaty::Bitboard::EMPTY, t);
        }
        self.sensing.scan_lifts.0 = (self.sensing.scan_lifts.0 | emptied) & !now;
        if self.sensing.scan_lifts.0.count() >= 2 {
            self.sensing.same_scan_lifts |= self.sensing.scan_lifts.0;
            self.sensing.same_scan_lifts_t = t;
        }
    }

    /// Occupancy-only boards that send whole frames: a picture is known to
    /// have stayed only once a later frame shows it again (the next frame may
    /// show it gone, a hand that lifted a piece or took a move back up to a
    /// period before), so the holds that read a still picture are one period
    /// longer.
    pub(super) fn occupancy_frame_margin(&self) -> Millis {
        if self.last_board.is_none() {
            self.frame_period()
        } else {
            0
        }
    }

    /// Since when the picture has been steady once `picture` comes at `t`
    /// after `previous` (before `last_change_t` moves on to it). A picture that
    /// only flickered away and back is steady since before the flicker: a
    /// one-scan misread is no reason to wait longer before verifying a move
    /// without a press (DGT, blind hands: a pawn on f5 misread for 240 ms put
    /// the unpressed hold of a game's last move past the end of the
    /// recording). Other timings (a press on a still picture, a reply's
    /// start) still count from the latest change. Boards that send frames
    /// are left alone: there a flicker lasts a whole period.
    pub(super) fn steady_since_after(
        &mut self,
        t: Millis,
        picture: &Picture,
        previous: Option<Picture>,
    ) -> Millis {
        let flicker = self.frame_period() == 0
            && t.saturating_sub(self.last_change_t) <= FLICKER_MS
            && self
                .sensing
                .before_change
                .as_ref()
                .is_some_and(|(p, _)| p == picture);
        let steady = match self.sensing.before_change.take() {
            Some((_, since)) if flicker => since,
            _ => t,
        };
        if let Some(raw) = previous {
            self.sensing.before_change = Some((raw, self.sensing.steady_since));
        }
        steady
    }

    /// The period of a board that sends a whole picture every so often
    /// (identities or occupancy), 0 for one that reports every change.
    pub(super) fn frame_period(&self) -> Millis {
        match self.config.sensor.reporting {
            eboard_protocols::family::Reporting::Frames { period_ms } => period_ms,
            eboard_protocols::family::Reporting::EveryChange { .. } => 0,
        }
    }

    /// Whether an occupancy picture has been still long enough (or pressed for) to
    /// read a capture from it without having seen the captured piece leave.
    pub(super) fn occupancy_capture_due(&self, t: Millis) -> bool {
        let hold = self.config.press_settle_ms * 2 + self.occupancy_frame_margin();
        let still = t.saturating_sub(self.last_change_t) >= hold;
        let pressed = self.current.press.as_ref().is_some_and(|p| {
            t.saturating_sub(p.t.max(self.last_change_t)) >= self.config.press_settle_ms
        });
        still || pressed
    }
}
