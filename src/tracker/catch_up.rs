//! Occupancy-only boards in fast play: the lines of play that explain the
//! frames since the last one the game explained, all of them together.
//!
//! The picture matcher (`picture.rs`) reads one frame at a time against the
//! line's tip, a few plies deep. In time trouble a frame a second holds two or
//! three plies and a hand at work, and once one frame is not read, the next is
//! further away still: the record stopped there for good, with a 7.4 asking
//! the arbiters to restore a position the players had long left (blind hands,
//! time trouble: 1,331 of 1,939 games stopped short).
//!
//! Here every frame since the last explained one is kept, and once the
//! matcher has failed on a few of them a small beam of readings goes through
//! them in order. Each reading is a line of legal plies from the last
//! verified position: the unverified plies as the matcher read them, or,
//! dearer, read again (a wrong unverified reading is otherwise "undone" by
//! plies nobody played). Each frame must show the position after some plies
//! more, with at most two pieces in the hand (the mover's piece, and the
//! piece it takes, or the king and rook of a castling), or one piece the
//! plies did not touch read empty (a flicker). A frame a reading does not
//! explain (a piece put down on a square it crosses) costs it but does not
//! end it. Fewer plies and fewer pieces in the hand are cheaper; a piece
//! going straight back where it came from is dearer.
//!
//! What every close reading agrees on is recorded, once the best reading
//! was already best before the latest frame (a piece put down for a moment
//! is explained by plies nobody played as readily as by a hand); a frame at
//! rest that one line explains records it whole and hands the board back to
//! the matcher. Readings that end on the same position in other orders, or
//! that part for [`PART_PLIES`] plies and never meet, are recorded as one
//! with an 8.4 note naming the others, as the matcher does.

use std::collections::HashMap;

use shakmaty::zobrist::Zobrist64;
use shakmaty::{Bitboard, Chess, EnPassantMode, Move, Position, Role};

use super::search::touched;
use super::{Resolution, Tracker};
use crate::events::{Millis, TrackerEvent};

/// Plies one frame may add to a reading (a frame a second in time trouble).
const MOST_PLIES: usize = 3;
/// Squares a frame may show emptied by hands at work.
const MOST_LIFTED: usize = 2;
/// A ply.
const PLY: u32 = 2;
/// A piece in the hand.
const LIFTED: u32 = 1;
/// A frame read with one square misread (a flicker).
const NOISE: u32 = 3;
/// A frame the reading does not explain.
const SKIPPED: u32 = 7;
/// A piece going back to the square it came from on its previous move.
const RETURN: u32 = 4;
/// Reading the line's unverified plies again from the last verified
/// position.
const REREAD: u32 = 5;
/// Readings kept.
const BEAM: usize = 24;
/// Readings costing more than the best by this are dropped.
const DROP: u32 = 14;
/// Readings within this of the best must agree for a ply to be recorded.
const AGREE: u32 = 5;
/// Readings that part this many plies back and never meet are recorded as
/// one, with an 8.4 note.
const PART_PLIES: usize = 4;
/// Other orders kept per reading.
const MOST_ALTS: usize = 3;
/// Frames since the last explained one before the catch-up begins.
const START_FRAMES: usize = 3;
/// Squares the frame must differ by from the last explained one for the
/// catch-up to begin: a move under way differs by one or two (a capture).
const START_AWAY: usize = 3;
/// Frames kept.
const MOST_FRAMES: usize = 64;

#[derive(Clone, Debug)]
struct Reading {
    /// Plies since the root.
    line: Vec<Move>,
    pos: Chess,
    key: u64,
    cost: u32,
    /// Squares the latest frame showed emptied by hands at work.
    lifted: Bitboard,
    /// A square the latest frame misread (a flicker), which no hand explains.
    noise: Bitboard,
    /// Frames in a row this reading did not explain.
    skipped: usize,
    /// Other lines to the same position that cost little more: the frames
    /// did not tell the orders apart.
    alts: Vec<Vec<Move>>,
}

/// The frames since the last explained one, and the readings of them.
#[derive(Clone, Debug, Default)]
pub(super) struct CatchUp {
    /// The ply (counted from the start) and position the readings begin
    /// at: the last verified one when the last explained frame was read.
    root: Option<(usize, Chess)>,
    /// The unverified plies the line held then, and the position after them.
    seed: Vec<Move>,
    seed_tip: Option<Chess>,
    frames: Vec<Bitboard>,
    readings: Vec<Reading>,
    /// The best reading's line before the latest frame.
    before: Vec<Move>,
    /// Frames the readings went through.
    read: usize,
}

impl CatchUp {
    /// Forget everything: a frame was explained.
    pub(super) fn clear(&mut self) {
        *self = CatchUp::default();
    }

    /// Whether the latest frame reads as legal play from the last explained
    /// one (no 7.4 for a board that only runs ahead of the record).
    pub(super) fn follows(&self) -> bool {
        self.readings.first().is_some_and(|r| r.skipped == 0)
    }

    fn start(&mut self) {
        let Some((_, root)) = &self.root else {
            return;
        };
        let at_root = Reading {
            line: Vec::new(),
            key: key(root),
            pos: root.clone(),
            cost: 0,
            lifted: Bitboard::EMPTY,
            noise: Bitboard::EMPTY,
            skipped: 0,
            alts: Vec::new(),
        };
        self.readings = match &self.seed_tip {
            // The line as the matcher read it, and, dearer, read again from
            // the last verified position: a wrong unverified reading is
            // otherwise followed by plies nobody played that undo it.
            Some(tip) if !self.seed.is_empty() => vec![
                Reading {
                    line: self.seed.clone(),
                    key: key(tip),
                    pos: tip.clone(),
                    ..at_root.clone()
                },
                Reading {
                    cost: REREAD,
                    ..at_root
                },
            ],
            _ => vec![at_root],
        };
        self.read = 0;
    }

    /// Takes the readings through the frames they have not read yet.
    fn read_frames(&mut self) {
        while self.read < self.frames.len() {
            let f = self.frames[self.read];
            self.step(f);
            self.read += 1;
        }
    }

    /// Every reading, each taken on by the plies that explain `frame`.
    fn step(&mut self, frame: Bitboard) {
        self.before = self
            .readings
            .first()
            .map(|r| r.line.clone())
            .unwrap_or_default();
        // Two plies a frame first: only a frame that no reading shows at
        // rest is looked at deeper (fast play), which costs ten times more.
        let next = self.step_to(frame, MOST_PLIES - 1);
        let next = if next.iter().any(Reading::at_rest) {
            next
        } else {
            self.step_to(frame, MOST_PLIES)
        };
        self.readings = next;
    }

    fn step_to(&self, frame: Bitboard, most: usize) -> Vec<Reading> {
        let mut next = Next::default();
        let cheapest = self.readings.first().map_or(0, |r| r.cost);
        // Readings of one position differ only in their hands and past: the
        // plies from it are looked for once.
        let mut memo: HashMap<(u64, usize), Vec<Found>> = HashMap::new();
        for r in &self.readings {
            // A reading that missed a frame may be a ply further behind;
            // looked for only from the cheapest of them.
            let behind = r.skipped > 0 && r.cost <= cheapest + SKIPPED;
            // Deeper only from the readings close to the best.
            let depth = if r.cost <= cheapest + AGREE {
                most + usize::from(behind)
            } else {
                1
            };
            let found = memo.entry((r.key, depth)).or_insert_with(|| {
                let mut found = Vec::new();
                explain(&r.pos, frame, depth, &mut Vec::new(), &mut found);
                found
            });
            for (plies, pos, lifted, noise) in found.iter().cloned() {
                let mut line = r.line.clone();
                let mut returns = 0;
                for &m in &plies {
                    returns += u32::from(goes_back(&line, m));
                    line.push(m);
                }
                let alts = r
                    .alts
                    .iter()
                    .map(|a| {
                        let mut a = a.clone();
                        a.extend(plies.iter().copied());
                        a
                    })
                    .collect();
                let cost = r.cost
                    + PLY * (line.len() - r.line.len()) as u32
                    + LIFTED * lifted.count() as u32
                    + NOISE * noise.count() as u32
                    + RETURN * returns;
                next.add(Reading {
                    line,
                    key: key(&pos),
                    pos,
                    cost,
                    lifted,
                    noise,
                    skipped: 0,
                    alts,
                });
            }
            next.add(Reading {
                cost: r.cost + SKIPPED,
                skipped: r.skipped + 1,
                ..r.clone()
            });
        }
        let mut next = next.readings;
        next.sort_by_key(|r| (r.cost, r.line.len()));
        let best = next.first().map_or(0, |r| r.cost);
        next.retain(|r| r.cost <= best + DROP);
        next.truncate(BEAM);
        next
    }

    /// The plies every close reading agrees on, from the root.
    fn agreed(&self) -> Vec<Move> {
        let Some(best) = self.readings.first() else {
            return Vec::new();
        };
        let close = self
            .readings
            .iter()
            .filter(|r| r.cost <= best.cost + AGREE && r.skipped == 0);
        let n = close
            .flat_map(|r| std::iter::once(&r.line).chain(&r.alts))
            .map(|line| common(line, &best.line))
            .min()
            .unwrap_or(0);
        best.line[..n].to_vec()
    }

    /// Takes `plies` as recorded: the root moves past them, readings that
    /// do not begin with them go.
    fn advance(&mut self, plies: &[Move]) {
        let Some((ply, pos)) = self.root.as_mut() else {
            return;
        };
        for &m in plies {
            pos.play_unchecked(m);
        }
        *ply += plies.len();
        self.seed.clear();
        self.seed_tip = None;
        self.frames.clear();
        self.read = 0;
        if self.before.starts_with(plies) {
            self.before.drain(..plies.len());
        } else {
            self.before.clear();
        }
        self.readings.retain(|r| r.line.starts_with(plies));
        for r in &mut self.readings {
            r.line.drain(..plies.len());
            r.alts.retain(|a| a.starts_with(plies));
            for a in &mut r.alts {
                a.drain(..plies.len());
            }
        }
    }
}

/// Whether every close reading that parts from `best` is one of its other
/// orders to the same position.
fn only_orders(readings: &[Reading], best: &Reading) -> bool {
    !best.alts.is_empty()
        && readings
            .iter()
            .skip(1)
            .filter(|r| r.cost <= best.cost + AGREE && r.skipped == 0)
            .all(|r| r.line.starts_with(&best.line))
}

/// The number of plies two lines begin with alike.
fn common(a: &[Move], b: &[Move]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Reading {
    /// The latest frame shows this reading's position, nothing in the hands.
    fn at_rest(&self) -> bool {
        self.skipped == 0 && self.lifted.is_empty() && self.noise.is_empty()
    }
}

fn key(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// A line of plies, the position after it, the squares in the hands and
/// the square misread.
type Found = (Vec<Move>, Chess, Bitboard, Bitboard);

/// The readings of the next frame, one per position and hands.
#[derive(Default)]
struct Next {
    readings: Vec<Reading>,
    index: HashMap<(u64, u64, usize), usize>,
}

impl Next {
    /// Keeps the cheaper of two readings of the same position and hands,
    /// the other as one of its orders if it costs little more.
    fn add(&mut self, r: Reading) {
        let k = (r.key, r.lifted.0 | r.noise.0, r.skipped);
        match self.index.get(&k) {
            Some(&i) => merge(&mut self.readings[i], r),
            None => {
                self.index.insert(k, self.readings.len());
                self.readings.push(r);
            }
        }
    }
}

fn merge(old: &mut Reading, r: Reading) {
    let other = if r.cost < old.cost {
        std::mem::replace(old, r)
    } else {
        r
    };
    if other.cost <= old.cost + AGREE {
        for line in std::iter::once(other.line).chain(other.alts) {
            if old.alts.len() < MOST_ALTS && line != old.line && !old.alts.contains(&line) {
                old.alts.push(line);
            }
        }
    }
}

/// Whether `m` takes its piece back to where it came from on the same
/// side's previous move.
fn goes_back(line: &[Move], m: Move) -> bool {
    line.len() >= 2 && {
        let prev = line[line.len() - 2];
        m.from() == Some(prev.to()) && prev.from() == Some(m.to())
    }
}

/// Every line of at most `left` plies from `pos` after which `frame` shows
/// the position with at most [`MOST_LIFTED`] pieces in the hands, or with
/// one piece the line did not touch read empty (a flicker).
fn explain(
    pos: &Chess,
    frame: Bitboard,
    left: usize,
    path: &mut Vec<Move>,
    found: &mut Vec<Found>,
) {
    let occ = pos.board().occupied();
    let extra = frame & !occ;
    let missing = occ & !frame;
    // A ply puts a piece on one empty square at most and empties one (one
    // castling or en passant in the line: two).
    let deeper = left > 0 && extra.count() <= left + 1 && missing.count() <= left + 1 + MOST_LIFTED;
    let legal = deeper.then(|| pos.legal_moves());
    if extra.is_empty()
        && missing.count() <= MOST_LIFTED
        && hands_at_work(pos, legal.as_ref(), missing)
    {
        found.push((path.clone(), pos.clone(), missing, Bitboard::EMPTY));
    } else if extra.is_empty()
        && missing.count() == 1
        && path.iter().all(|&m| (touched(m) & missing).is_empty())
    {
        // A piece the plies did not touch read empty: a flicker costs less
        // than a frame not read, so that no reading wins over another by
        // taking it for a hand at work.
        found.push((path.clone(), pos.clone(), Bitboard::EMPTY, missing));
    }
    let Some(legal) = legal else {
        return;
    };
    let differ = extra | missing;
    // No ply to spare: each must fill a square the frame shows filled, or
    // empty one it shows empty.
    let must_fill = extra.count() >= left;
    let must_empty = missing.count() >= left + MOST_LIFTED;
    for m in legal {
        let touched = touched(m);
        if (touched & differ).is_empty()
            || (must_fill && (lands(m, pos.turn()) & extra).is_empty())
            || (must_empty && (touched & missing).is_empty())
        {
            continue;
        }
        let mut next = pos.clone();
        next.play_unchecked(m);
        path.push(m);
        explain(&next, frame, left - 1, path, found);
        path.pop();
    }
}

/// The squares `m` puts a piece on (a castling's two).
fn lands(m: Move, mover: shakmaty::Color) -> Bitboard {
    match m.castling_side() {
        Some(side) => Bitboard::from(side.king_to(mover)) | Bitboard::from(side.rook_to(mover)),
        None => Bitboard::from(m.to()),
    }
}

/// Whether the squares `lifted` can be emptied by the hands of the player
/// to move: his piece, the piece it takes, or a castling's king and rook.
/// `legal`: the legal moves, if already known.
fn hands_at_work(pos: &Chess, legal: Option<&shakmaty::MoveList>, lifted: Bitboard) -> bool {
    if lifted.is_empty() {
        return true;
    }
    let board = pos.board();
    let mover = pos.turn();
    let ours = lifted & board.by_color(mover);
    let theirs = lifted & !board.by_color(mover);
    if ours.count() > 1 {
        // Both pieces of a castling.
        let king = board.king_of(mover);
        return ours.count() == 2
            && theirs.is_empty()
            && king.is_some_and(|k| ours.contains(k))
            && (ours & board.by_role(Role::Rook)).count() == 1;
    }
    // The piece taken off first: a legal capture of it (by the lifted piece,
    // if one is).
    if theirs.is_empty() {
        return true;
    }
    let computed;
    let legal = match legal {
        Some(l) => l,
        None => {
            computed = pos.legal_moves();
            &computed
        }
    };
    theirs.count() == 1
        && legal.iter().any(|m| {
            m.is_capture()
                && theirs.contains(m.to())
                && (ours.is_empty() || m.from().is_some_and(|f| ours.contains(f)))
        })
}

impl Tracker {
    /// Notes the position the next frames are read from, before the
    /// matcher reads one (it may take the line on without explaining it).
    pub(super) fn catch_up_root(&mut self) {
        if self.current.resolution == Resolution::Explained {
            // The latest frame was read (here, or on a still board by the
            // matcher): the next are read from the line it left.
            self.current.catch_up.clear();
        }
        if self.current.catch_up.root.is_some() {
            return;
        }
        if let Some(game) = self.game.as_ref() {
            let cu = &mut self.current.catch_up;
            cu.root = Some((game.moves.len(), game.verified().clone()));
            cu.seed = game.pending.iter().map(|s| s.mv).collect();
            cu.seed_tip = Some(game.tip().clone());
        }
    }

    /// A frame the matcher did not explain: kept with the frames before it.
    /// Where the matcher read nothing at all (`decide`; else it follows
    /// candidates of its own), the readings go through the frames and what
    /// they agree on is recorded; returns `Explained` when the frame shows
    /// the recorded line's position at rest.
    pub(super) fn catch_up_frame(
        &mut self,
        t: Millis,
        frame: Bitboard,
        decide: bool,
        out: &mut Vec<TrackerEvent>,
    ) -> Resolution {
        let Some(game) = self.game.as_ref() else {
            return Resolution::Unexplained;
        };
        // Before the first move the board may stand either way round: the
        // turned reading is tried first (`try_turn_occupancy`).
        if game.history.len() == 1 && game.pending.is_empty() {
            return Resolution::Unexplained;
        }
        let cu = &mut self.current.catch_up;
        if cu.root.is_none() {
            return Resolution::Unexplained;
        }
        if cu.frames.last() == Some(&frame) && cu.read == cu.frames.len() {
            return Resolution::Unexplained;
        }
        if cu.frames.last() != Some(&frame) {
            if cu.frames.len() >= MOST_FRAMES {
                cu.frames.remove(0);
                cu.read = cu.read.saturating_sub(1);
            }
            cu.frames.push(frame);
        }
        // Frames are read only where the matcher reads nothing: while it
        // follows candidates, most episodes end in a frame it explains.
        if !decide {
            return Resolution::Unexplained;
        }
        if cu.readings.is_empty() {
            // Not for a frame or two the matcher cannot read (a hand at
            // work, a flicker).
            let away = cu
                .seed_tip
                .as_ref()
                .map_or(0, |p| (p.board().occupied() ^ frame).count());
            if cu.frames.len() < START_FRAMES || away < START_AWAY {
                return Resolution::Unexplained;
            }
            cu.start();
        }
        cu.read_frames();
        // Nothing is recorded from a frame the best reading does not explain.
        let Some(best) = cu.readings.first().filter(|r| r.skipped == 0).cloned() else {
            return Resolution::Unexplained;
        };
        let agreed = cu.agreed();
        // A reading that only the latest frame made best is not taken yet:
        // a piece put down for a moment (the opponent's king tried on a
        // square and put back) is explained by plies nobody played.
        let steady = best.line.starts_with(&cu.before);
        let at_rest = steady && best.at_rest();
        let parted = best.line.len().saturating_sub(agreed.len());
        let (line, note) = if at_rest && agreed.len() == best.line.len() && !agreed.is_empty() {
            (agreed, None)
        } else if at_rest && agreed.len() < best.line.len() && only_orders(&cu.readings, &best) {
            // Orders that reach this same position: the frames between did not
            // tell them apart.
            let others: Vec<Vec<Move>> = best
                .alts
                .iter()
                .map(|a| a[agreed.len()..].to_vec())
                .collect();
            (best.line.clone(), Some((agreed.len(), others)))
        } else if at_rest && parted >= PART_PLIES {
            // Readings that part and never meet again: the best recorded,
            // the others named.
            let others: Vec<Vec<Move>> = cu
                .readings
                .iter()
                .filter(|r| r.cost <= best.cost + AGREE && r.skipped == 0 && r.line != best.line)
                .map(|r| r.line[agreed.len()..].to_vec())
                .take(3)
                .collect();
            (best.line.clone(), Some((agreed.len(), others)))
        } else if common(&agreed, &cu.before) > 1 {
            // The readings part after these: the ply where they do stays open.
            let n = common(&agreed, &cu.before) - 1;
            (agreed[..n].to_vec(), None)
        } else {
            return Resolution::Unexplained;
        };
        let (root_ply, root) = cu.root.clone().expect("checked");
        let game = self.game.as_ref().expect("checked");
        let verified = game.moves.len();
        // Plies verified since the root must be the readings' own.
        if verified > root_ply
            && !line.starts_with(&game.moves[root_ply..verified.min(root_ply + line.len())])
        {
            self.current.catch_up.clear();
            return Resolution::Unexplained;
        }
        if verified > root_ply + line.len() {
            return Resolution::Unexplained;
        }
        let skip = verified.saturating_sub(root_ply);
        let j = root_ply + skip - verified;
        // The matcher may have read the line back to fewer plies since.
        let mut base = root.clone();
        for &m in &line[..skip] {
            base.play_unchecked(m);
        }
        if j > game.pending.len() || key(game.pos_at(j)) != key(&base) {
            self.current.catch_up.clear();
            return Resolution::Unexplained;
        }
        if let Some((from, others)) = note.filter(|(_, others)| !others.is_empty()) {
            let mut base = root.clone();
            for &m in &line[..from] {
                base.play_unchecked(m);
            }
            let chosen = line[from..].to_vec();
            out.push(super::follow::uncertain_alert(&base, &chosen, &others));
            let rivals: Vec<Vec<Move>> = others;
            self.keep_rivals(root_ply + from, chosen, rivals);
        }
        // Candidates the matcher followed hang off the line it had.
        self.current.ambiguous_lines.clear();
        self.current.ambiguous_alerted = None;
        self.current.ambiguous_started = None;
        // Plies the line already holds stay as they are.
        let game = self.game.as_ref().expect("checked");
        let kept = game.pending[j..]
            .iter()
            .zip(&line[skip..])
            .take_while(|(s, m)| s.mv == **m)
            .count();
        let whole = line.len() == best.line.len();
        if kept < line.len() - skip || (whole && game.pending.len() > j + kept) {
            self.extend_line(j + kept, line[skip + kept..].to_vec());
        }
        self.current.catch_up.advance(&line);
        if whole && at_rest {
            self.current.catch_up.clear();
            self.current.resolution = Resolution::Explained;
            self.settle(t, out);
            return Resolution::Explained;
        }
        self.settle(t, out);
        Resolution::Unexplained
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play(pos: &mut Chess, uci: &str) -> Move {
        let m = uci
            .parse::<shakmaty::uci::UciMove>()
            .unwrap()
            .to_move(pos)
            .unwrap();
        pos.play_unchecked(m);
        m
    }

    fn uci(line: &[Move]) -> Vec<String> {
        line.iter()
            .map(|m| m.to_uci(shakmaty::CastlingMode::Standard).to_string())
            .collect()
    }

    #[test]
    fn frames_holding_several_plies_and_a_hand_at_work_read_as_one_line() {
        // 1. e4 e5 2. Nf3 Nf6 3. Nxe5 d6: frames a second apart catch the
        // knight of g1 in the hand, then Nxe5 made with d7 up.
        let root = Chess::default();
        let mut pos = root.clone();
        let mut frames = Vec::new();
        play(&mut pos, "e2e4");
        play(&mut pos, "e7e5");
        frames.push(pos.board().occupied() & !Bitboard::from(shakmaty::Square::G1));
        for u in ["g1f3", "g8f6", "f3e5"] {
            play(&mut pos, u);
        }
        frames.push(pos.board().occupied() & !Bitboard::from(shakmaty::Square::D7));
        play(&mut pos, "d7d6");
        frames.push(pos.board().occupied());
        let mut cu = CatchUp {
            root: Some((0, root)),
            frames,
            ..CatchUp::default()
        };
        cu.start();
        cu.read_frames();
        let best = cu.readings.first().unwrap();
        assert_eq!(
            uci(&best.line),
            ["e2e4", "e7e5", "g1f3", "g8f6", "f3e5", "d7d6"]
        );
        assert_eq!(cu.agreed().len(), 6);
    }

    #[test]
    fn a_frame_no_reading_explains_costs_but_does_not_end_the_reading() {
        let root = Chess::default();
        let mut pos = root.clone();
        play(&mut pos, "e2e4");
        // A flicker empties a1 and h8 at once: no hand can do that.
        let odd = pos.board().occupied()
            & !Bitboard::from(shakmaty::Square::A1)
            & !Bitboard::from(shakmaty::Square::H8);
        play(&mut pos, "e7e5");
        play(&mut pos, "g1f3");
        let mut cu = CatchUp {
            root: Some((0, root)),
            frames: vec![odd, pos.board().occupied()],
            ..CatchUp::default()
        };
        cu.start();
        cu.read_frames();
        assert_eq!(
            uci(&cu.readings[0].line),
            ["e2e4", "e7e5", "g1f3"],
            "{:?}",
            cu.readings
        );
    }
}
