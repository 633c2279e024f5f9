//! Occupancy-only boards: a reading that the frames cannot decide is recorded
//! after a while, and its rivals are kept to correct it.
//!
//! A board that sees only which squares hold a piece cannot tell Rc7xa7 from
//! Rc7xc5 when both squares stay occupied: the captured piece leaves as the
//! capturing one arrives. The matcher follows every candidate line
//! (`MoveState::ambiguous_lines`) until a later picture fits one only. Often
//! none ever does: the rest of the game reads the same on every line. Waiting
//! for a decision that never comes stopped the game's record there (1,939
//! games, own hands at normal pace: 210 of the 357 games whose record went
//! wrong or stopped).
//!
//! So an ambiguity is *committed* once it has been followed for
//! [`COMMIT_PLIES`] plies, or its lines all end on the same position (move
//! orders no frame can tell apart), or the board has stood still on a
//! position that ends the game on one of the lines, or for
//! [`COMMIT_STILL_MS`]: one line is recorded, an 8.4 `moves_uncertain` note
//! names the others, and the others are kept as *rivals*. Each rival replays
//! the recorded plies after the commit square by square (the piece on a
//! square may differ between lines, the hand's from and to do not). When a
//! still picture fits the recorded line no more but fits a rival, the record
//! is corrected to it: one `Retraction`, the rival's plies as `corrected`,
//! and a note. If several rivals fit, the first is recorded and the others
//! are kept as its rivals, with another `moves_uncertain` note.

use shakmaty::{uci::UciMove, Chess, Move, Position};

use super::search::{self, Target};
use super::sensing::captures_seen_emptied;
use super::{Resolution, Tracker};
use crate::events::{Millis, TrackerEvent};

/// An ambiguity followed this many plies past the picture that raised it,
/// every candidate still fitting, is committed. Four plies give the capturing
/// piece's owner two moves to show which square it took on, which is when a
/// later move most often decides; longer only delays the record.
pub(super) const COMMIT_PLIES: usize = 4;
/// An ambiguity on a board that has stood still this long is committed (a
/// long think, or a game over by a resignation the board cannot see).
pub(super) const COMMIT_STILL_MS: Millis = 120_000;
/// An ambiguity one of whose lines ends the game (checkmate, stalemate) is
/// committed, that line first, once the board has stood still this long: the
/// players have stopped.
pub(super) const COMMIT_GAME_OVER_MS: Millis = 8_000;
/// At most this many rivals are kept per reading.
const MOST_RIVALS: usize = 8;
/// At most this many readings keep their rivals.
const MOST_READINGS: usize = 4;

/// Lines that fitted the frames as well as the recorded one (see the module doc).
#[derive(Debug, Clone)]
pub(super) struct Rivals {
    /// The game's ply (verified plies counted from the start) where the lines
    /// part: each line leads from the position after it.
    pub(super) at: usize,
    /// The line recorded.
    pub(super) chosen: Vec<Move>,
    /// The others.
    pub(super) lines: Vec<Vec<Move>>,
}

impl Tracker {
    /// Whether the ambiguity being followed is to be committed at `t`.
    pub(super) fn ambiguity_due(&self, t: Millis) -> bool {
        let Some((since_t, base_len)) = self.current.ambiguous_started else {
            return false;
        };
        let lines = &self.current.ambiguous_lines;
        if lines.is_empty() {
            return false;
        }
        let followed = lines
            .iter()
            .map(|(_, l)| l.len())
            .min()
            .unwrap_or(0)
            .saturating_sub(base_len);
        if followed >= COMMIT_PLIES || self.ambiguous_lines_meet() {
            return true;
        }
        let still = t.saturating_sub(self.last_change_t.max(since_t));
        still >= COMMIT_STILL_MS
            || (still >= COMMIT_GAME_OVER_MS && self.ambiguous_game_over_line().is_some())
    }

    /// The position each candidate line ends on (`None` for a line whose
    /// prefix the game no longer holds).
    fn ambiguous_ends(&self) -> Vec<Option<Chess>> {
        let Some(game) = self.game.as_ref() else {
            return Vec::new();
        };
        self.current
            .ambiguous_lines
            .iter()
            .map(|(j, line)| {
                (*j <= game.pending.len()).then(|| {
                    let mut pos = game.pos_at(*j).clone();
                    for &m in line {
                        pos.play_unchecked(m);
                    }
                    pos
                })
            })
            .collect()
    }

    /// Whether every candidate line ends on the same position (two moves of
    /// one side made in either order inside one frame): no later picture can
    /// tell them apart, so there is nothing to wait for.
    fn ambiguous_lines_meet(&self) -> bool {
        let ends = self.ambiguous_ends();
        let Some(Some(first)) = ends.first() else {
            return false;
        };
        ends.iter().all(|p| p.as_ref() == Some(first))
    }

    /// The first candidate line that ends the game, as an index into
    /// `ambiguous_lines`.
    fn ambiguous_game_over_line(&self) -> Option<usize> {
        self.ambiguous_ends().iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.is_checkmate() || p.is_stalemate())
        })
    }

    /// Records one candidate line of the ambiguity, names the others in an
    /// 8.4 note and keeps them as rivals. A line that ends the game (the
    /// board standing still on it) comes first; else the search's first.
    pub(super) fn commit_ambiguity(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        self.commit_ambiguity_as(t, true, out);
    }

    /// [`Tracker::commit_ambiguity`]; without `game_over_first`, a line that
    /// ends the game comes last (the game ended otherwise: the arbiter's
    /// result, or the board set up again).
    fn commit_ambiguity_as(
        &mut self,
        t: Millis,
        game_over_first: bool,
        out: &mut Vec<TrackerEvent>,
    ) {
        let Some(game) = self.game.as_ref() else {
            return;
        };
        let lines = &self.current.ambiguous_lines;
        if lines.iter().any(|(j, _)| *j > game.pending.len()) {
            self.current.ambiguous_lines.clear();
            self.current.ambiguous_started = None;
            return;
        }
        let Some(j) = lines.iter().map(|(j, _)| *j).min() else {
            return;
        };
        // Every line from the same point: the pending plies each kept first.
        let full: Vec<Vec<Move>> = lines
            .iter()
            .map(|(k, line)| {
                let mut l: Vec<Move> = game.pending[j..*k].iter().map(|s| s.mv).collect();
                l.extend(line.iter().copied());
                l
            })
            .collect();
        let first = if game_over_first {
            self.ambiguous_game_over_line().unwrap_or(0)
        } else {
            self.ambiguous_ends()
                .iter()
                .position(|p| {
                    p.as_ref()
                        .is_some_and(|p| !p.is_checkmate() && !p.is_stalemate())
                })
                .unwrap_or(0)
        };
        let chosen = full[first].clone();
        // The plies every line shares, up to where they part.
        let shared = full
            .iter()
            .map(|l| l.iter().zip(&chosen).take_while(|(a, b)| a == b).count())
            .min()
            .unwrap_or(0);
        let mut rivals: Vec<Vec<Move>> = Vec::new();
        for l in full.into_iter().filter(|l| *l != chosen) {
            if !rivals.contains(&l) && rivals.len() < MOST_RIVALS {
                rivals.push(l);
            }
        }
        let at = game.moves.len() + j;
        out.push(super::follow::uncertain_alert(
            game.pos_at(j),
            &chosen,
            &rivals,
        ));
        // None of them, last: the ply where they part may not be complete at
        // all (a piece held over the board reads as each capture it could
        // make, and a capture that mates is recorded first).
        rivals.push(chosen[..shared].to_vec());
        self.current.ambiguous_lines.clear();
        self.current.ambiguous_alerted = None;
        self.current.ambiguous_started = None;
        self.extend_line(j, chosen.clone());
        self.keep_rivals(at, chosen, rivals);
        self.current.resolution = Resolution::Explained;
        self.current.unexplained_since = None;
        self.current.unexplained_alerted = false;
        self.settle(t, out);
    }

    /// The game ends while a capture is undecided (the arbiter enters the
    /// result of a resignation, or the board is set up for the next game):
    /// no later move will decide it, and waiting for the board to stand
    /// still would lose it with the game. It is committed as above, a line
    /// that mates or stalemates last (the game ended off the board: a result
    /// read from the board would contradict the arbiter's), and the plies the
    /// board showed are verified before the game closes.
    pub(super) fn commit_before_the_end(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        if self.current.ambiguous_lines.is_empty() || self.evidence.is_some() {
            return;
        }
        self.commit_ambiguity_as(t, false, out);
        while self.phase == super::Phase::Playing
            && self.game.as_ref().is_some_and(|g| !g.pending.is_empty())
        {
            self.verify_first(None, out);
        }
    }

    /// The game's line from ply `at`: verified plies, then pending ones.
    fn line_from(&self, at: usize) -> Option<(Chess, Vec<Move>)> {
        let game = self.game.as_ref()?;
        let n = game.moves.len();
        if at <= n {
            let mut line = game.moves[at..].to_vec();
            line.extend(game.pending.iter().map(|s| s.mv));
            Some((game.history[at].clone(), line))
        } else {
            let j = at - n;
            (j <= game.pending.len()).then(|| {
                (
                    game.pos_at(j).clone(),
                    game.pending[j..].iter().map(|s| s.mv).collect(),
                )
            })
        }
    }

    /// Keeps `lines` as the rivals of `chosen`, recorded from ply `at`.
    pub(super) fn keep_rivals(&mut self, at: usize, chosen: Vec<Move>, lines: Vec<Vec<Move>>) {
        let kept = &mut self.current.rivals;
        // A reading recorded again from the same ply replaces the earlier one.
        kept.retain(|r| r.at != at);
        if kept.len() >= MOST_READINGS {
            kept.remove(0);
        }
        kept.push(Rivals { at, chosen, lines });
    }

    /// A still picture the recorded line does not explain: for the latest
    /// reading recorded over others that any of them explains (with the plies
    /// recorded since replayed on it), the record is corrected to the first
    /// that does, the others kept as its rivals. Returns whether it was.
    pub(super) fn correct_from_rivals(
        &mut self,
        t: Millis,
        target: Target<'_>,
        out: &mut Vec<TrackerEvent>,
    ) -> bool {
        let mut kept = std::mem::take(&mut self.current.rivals);
        let mut found = None;
        // Readings whose lines the game no longer holds (taken back, or
        // corrected before the point where they part) are dropped.
        kept.retain_mut(|r| self.still_rivals(r));
        for (i, r) in kept.iter().enumerate().rev() {
            let mut fits = self.rivals_explaining(r, target);
            if !fits.is_empty() {
                let new = fits.remove(0);
                found = Some((i, new, fits));
                break;
            }
        }
        let Some((i, new, others)) = found else {
            self.current.rivals = kept;
            return false;
        };
        let at = kept[i].at;
        // Readings from this ply on are void with the line they were on.
        kept.retain(|r| r.at < at);
        self.current.rivals = kept;
        let (base, line) = self.line_from(at).expect("checked");
        let withdrawn = super::follow::sans(&base, &line);
        self.replace_from(at, &withdrawn, &new, out);
        if !others.is_empty() {
            // More than one of them fits: the first is recorded, the others
            // kept as its rivals, and the arbiters told.
            if let Some((base, _)) = self.line_from(at) {
                out.push(super::follow::uncertain_alert(&base, &new, &others));
            }
            self.keep_rivals(at, new, others);
        }
        self.settle(t, out);
        true
    }

    /// Whether `r`'s lines may still be the game's: the game's line from
    /// `r.at` still begins with the reading recorded; rivals that cannot
    /// replay the plies recorded since are dropped.
    fn still_rivals(&self, r: &mut Rivals) -> bool {
        let Some((base, line)) = self.line_from(r.at) else {
            return false;
        };
        if !line.starts_with(&r.chosen) {
            return false;
        }
        let mode = self.game.as_ref().expect("playing").mode;
        let since = &line[r.chosen.len()..];
        r.lines.retain(|l| replay(&base, l, since, mode).is_some());
        !r.lines.is_empty()
    }

    /// Whether a line kept as a rival leads, with the plies recorded since,
    /// to a position where the game goes on (the recorded one having ended
    /// it).
    pub(super) fn rivals_play_on(&self) -> bool {
        let Some(game) = self.game.as_ref() else {
            return false;
        };
        self.current.rivals.iter().any(|r| {
            let Some((base, line)) = self.line_from(r.at) else {
                return false;
            };
            let Some(since) = line.strip_prefix(r.chosen.as_slice()) else {
                return false;
            };
            r.lines
                .iter()
                .any(|l| replay(&base, l, since, game.mode).is_some_and(|(p, _)| !p.is_game_over()))
        })
    }

    /// The lines of `r` that explain `target`: each rival's plies, those
    /// recorded since replayed on it, and the plies that reach the picture.
    fn rivals_explaining(&self, r: &Rivals, target: Target<'_>) -> Vec<Vec<Move>> {
        let mut fits: Vec<Vec<Move>> = Vec::new();
        let Some((base, line)) = self.line_from(r.at) else {
            return fits;
        };
        let since = &line[r.chosen.len()..];
        let Some(game) = self.game.as_ref() else {
            return fits;
        };
        let emptied = self.sensing.seen.emptied();
        for rival in &r.lines {
            let Some((pos, replayed)) = replay(&base, rival, since, game.mode) else {
                continue;
            };
            for depth in 1..=2 {
                let mut ext = search::sequences(&pos, target, depth, MOST_RIVALS, None);
                if !self.sensing.lenient {
                    ext.retain(|l| captures_seen_emptied(l, emptied));
                }
                if ext.is_empty() {
                    continue;
                }
                for e in ext {
                    let mut full = rival.clone();
                    full.extend(replayed.iter().copied());
                    full.extend(e);
                    if !fits.contains(&full) && fits.len() < MOST_RIVALS {
                        fits.push(full);
                    }
                }
                break;
            }
        }
        fits
    }
}

/// `rival` played from `base`, then `since` square by square: the position
/// reached and the moves replayed, or `None` if one is not legal there.
fn replay(
    base: &Chess,
    rival: &[Move],
    since: &[Move],
    mode: shakmaty::CastlingMode,
) -> Option<(Chess, Vec<Move>)> {
    let mut pos = base.clone();
    for &m in rival {
        pos.play_unchecked(m);
    }
    let mut replayed = Vec::with_capacity(since.len());
    for &m in since {
        let uci = UciMove::from_move(m, mode);
        let mv = uci.to_move(&pos).ok()?;
        pos.play_unchecked(mv);
        replayed.push(mv);
    }
    Some((pos, replayed))
}
