//! Going back on verified moves: a takeback (the board put back to an earlier
//! position of the game and held there, 7.1), the self-correction that
//! withdraws plies the board since contradicts ([`Tracker::resync`]), and the
//! arbiter's ruling on the last retraction (accept it, or reinstate the
//! withdrawn moves).

use shakmaty::fen::Fen;
use shakmaty::{san::SanPlus, Board, Chess, EnPassantMode, Move, Position, Square};

use super::alerts::names;
use super::search::{self, Target};
use super::{laws, Game, Resolution, Step, Tracker};
use crate::events::{Alert, AlertKind, GameEvent, Millis, MoveEvent, Severity, TrackerEvent};
use crate::operator::Refusal;

/// What the tracker keeps to go back on verified moves.
#[derive(Clone, Debug, Default)]
pub(super) struct Retractions {
    /// Verified plies the board has shown still for `CERTAIN_STILL_MS` with
    /// nothing pending: self-correction never goes back before them.
    pub(super) certain_ply: usize,
    /// The picture (by its change time) a self-correction was tried for.
    pub(super) resync_tried: Option<Millis>,
    /// The verified plies before the earliest ply published with a note that
    /// the board could not tell it from another reading: the engine keeps
    /// reading from there for [`UNCERTAIN_KEPT_PLIES`] more plies, so that a
    /// later move that only the other reading explains corrects the record.
    pub(super) uncertain_ply: Option<usize>,
    /// With `uncertain_ply`: where the plies the board could not decide end
    /// (the plies before the last of them), readings being kept until
    /// [`UNCERTAIN_KEPT_PLIES`] plies past it.
    pub(super) uncertain_until: usize,
    /// The last retraction, for an arbiter to rule on: the ply it went back to,
    /// the FEN there (to know it is still the same game) and the positions withdrawn.
    pub(super) withdrawn: Option<(usize, String, Vec<Chess>)>,
}

/// A position the board shows this long with nothing pending is certain:
/// self-correction never withdraws it.
pub(super) const CERTAIN_STILL_MS: Millis = 2_000;

/// An unexplained picture still this long (a board scan: the squares of a move
/// come at most one scan apart) is matched against the lines that withdraw the
/// last uncertain plies or catch up on the line (self-correction).
pub(super) const RESYNC_STILL_MS: Millis = 250;

/// Without a clock press since the last explained picture (a slide pausing on
/// its way, a hand about to finish a capture: both look like other lines), the
/// picture must be still this long before self-correction reads it: as long
/// as the displaced-pieces alert waits, which it then replaces.
pub(super) const RESYNC_QUIET_MS: Millis = 6_000;

/// How many plies after one published as uncertain the engine keeps its
/// other readings: on a board without a clock, a slide read as two moves (Rb6
/// Kg6 Rb7 for Rb7 Kg6) leaves the same squares but the wrong side to move,
/// which the next move or two shows.
pub(super) const UNCERTAIN_KEPT_PLIES: usize = 4;

/// Verified plies the engine reads behind the newest at most...
pub(super) const ANCHOR_BEHIND_MOST: usize = 16;
/// ...and how many it keeps reading behind it when the anchor moves on: a
/// board never still for long with nothing pending (a Certabo's frames in
/// time trouble) would otherwise keep the whole game's readings.
pub(super) const ANCHOR_BEHIND_KEPT: usize = 8;

/// Most verified plies a self-correction withdraws, and most plies it finds.
const RESYNC_MAX_BACK: usize = 4;
const RESYNC_MAX_PLIES: usize = 6;

/// Whether a move of `line` puts a piece back on a square an earlier move of
/// the line took it from.
fn has_return(line: &[Move]) -> bool {
    line.iter().enumerate().any(|(i, a)| {
        a.from().is_some_and(|from| {
            line[i + 1..]
                .iter()
                .any(|b| b.to() == from && b.role() == a.role() && b.from() == Some(a.to()))
        })
    })
}

/// What a retraction back to ply `k` withdraws, for the arbiter to rule on.
fn withdrawn_from(game: &Game, k: usize) -> (usize, String, Vec<Chess>) {
    (k, fen_of(&game.history[k]), game.history[k + 1..].to_vec())
}

fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

impl Tracker {
    /// The arbiter lets the last retraction stand: there is nothing left to rule
    /// on, and the alert that reported it is resolved.
    pub fn operator_accept_retraction(
        &mut self,
        out: &mut Vec<TrackerEvent>,
    ) -> Result<(), Refusal> {
        self.idle_until = None;
        self.current_withdrawn()?;
        self.resolve_withdrawn_alert("the arbiter accepted the retraction", out);
        Ok(())
    }

    /// The arbiter voids the last retraction (Article 7: the withdrawn moves were
    /// completed and stand). They are reinstated as verified moves (any move
    /// played since is withdrawn first), and the board, which still shows the
    /// earlier position, must be put back: the squares that differ are reported
    /// displaced (7.4) and stay so until the board shows the game again.
    pub fn operator_reject_retraction(
        &mut self,
        t_ms: Millis,
        out: &mut Vec<TrackerEvent>,
    ) -> Result<(), Refusal> {
        self.idle_until = None;
        let first = out.len();
        let (k, positions) = self.current_withdrawn()?;
        self.resolve_withdrawn_alert(
            "the arbiter rejected the retraction: the withdrawn moves stand",
            out,
        );
        let game = self.game.as_mut().ok_or(Refusal::NoRetraction)?;
        let now = game.history.len() - 1;
        if now > k {
            game.truncate(k);
            out.push(TrackerEvent::Game(GameEvent::Retraction {
                from_ply: (k + 1) as u32,
                plies: ((k + 1) as u32..=now as u32).collect(),
            }));
        }
        game.pending.clear();
        for next in positions {
            let before = game.verified().clone();
            let target = fen_of(&next);
            let found = before.legal_moves().into_iter().find(|m| {
                let mut p = before.clone();
                p.play_unchecked(*m);
                fen_of(&p) == target
            });
            // Positions come from this game's own history, so each follows from
            // the one before by a legal move; stop rather than invent one if not.
            let Some(mv) = found else { break };
            let san = SanPlus::from_move(before, mv).to_string();
            let uci = mv.to_uci(game.mode).to_string();
            game.history.push(next);
            game.moves.push(mv);
            out.push(TrackerEvent::Game(GameEvent::Move(MoveEvent {
                ply: game.ply(),
                san,
                uci,
                fen: target,
                verified: true,
                clock_ms: None,
                emt_ms: None,
                reconstructed: false,
                corrected: false,
            })));
        }
        self.current.takeback = None;
        self.current.passed_back = None;
        self.current.press = None;
        self.current.ambiguous_lines.clear();
        self.reset_evidence();
        let game = self.game.as_ref().expect("checked above");
        let tip = game.verified().board().clone();
        let ply = game.ply();
        let squares: Vec<Square> = match &self.last_board {
            Some(b) => search::diff(&tip, b).into_iter().collect(),
            None => {
                let shown = self
                    .last_raw
                    .as_ref()
                    .map(|r| self.orientation.apply(r).occupied())
                    .unwrap_or_default();
                (tip.occupied() ^ shown).into_iter().collect()
            }
        };
        if !squares.is_empty() {
            // The board still shows the earlier position, which no hand made
            // from the reinstated moves: read it as after a link gap. The
            // engine, with no picture, would take the board as at rest on the
            // tip and close the 7.4 at the next tick; fed this picture, it
            // would read the withdrawn moves' way back as new legal moves
            // (Nf3 Nc6 then Ng1 Nb8). The picture matcher waits for the board
            // to show the game, and the engine starts again from there.
            self.gap = true;
            self.current.resolution = Resolution::Unexplained;
            self.current.unexplained_since = Some(t_ms);
            self.current.unexplained_alerted = true;
            if let Some(b) = &self.last_board {
                self.current.displaced = Some((search::diff(&tip, b), b.clone()));
                self.sensing.seen.reset(Target::Board(b));
            }
            out.push(TrackerEvent::Alert(Alert {
                id: 0,
                penalty: None,
                kind: AlertKind::DisplacedPieces,
                article: "7.4".into(),
                severity: Severity::Warning,
                squares: Alert::square_names(squares.iter().copied()),
                message: format!(
                    "The retraction was rejected and the moves up to ply {ply} stand: put the pieces back on {}.",
                    names(&squares)
                ),
            }));
        }
        self.number_alerts(&mut out[first..]);
        Ok(())
    }

    /// The last retraction, when it belongs to the game on the board now.
    fn current_withdrawn(&mut self) -> Result<(usize, Vec<Chess>), Refusal> {
        let (k, fen, positions) = self
            .retractions
            .withdrawn
            .take()
            .ok_or(Refusal::NoRetraction)?;
        let same_game = self
            .game
            .as_ref()
            .and_then(|g| g.history.get(k))
            .is_some_and(|p| fen_of(p) == fen);
        if same_game {
            Ok((k, positions))
        } else {
            Err(Refusal::NoRetraction)
        }
    }

    /// The board held the position after verified ply `k` for `takeback_hold_ms`:
    /// the plies after it are withdrawn and the arbiters asked to confirm (7.1);
    /// back at the start with the clock stopped, the next game begins instead.
    pub(super) fn take_back(&mut self, t: Millis, k: usize, out: &mut Vec<TrackerEvent>) {
        let clock_running =
            !self.config.no_clock && self.clock.last_reading.is_some_and(|r| r.running);
        if k == 0 && !clock_running {
            // Back to the start with the clock stopped: the players set up the next
            // game after one that ended off the board (resignation, agreed draw).
            // Withdrawing the finished game would be wrong; a silent new game too.
            if let Some(cand) = self.last_raw.as_ref().and_then(|r| self.detect_start(r)) {
                self.restart(t, cand, out);
                return;
            }
        }
        let game = self.game.as_ref().expect("playing");
        let n = game.history.len() - 1;
        self.retractions.withdrawn = Some(withdrawn_from(game, k));
        self.retract_to(k, out);
        self.game.as_mut().expect("playing").pending.clear();
        let (kind, message) = if k == 0 {
            (
                AlertKind::RollbackToStart,
                format!(
                    "All {n} moves were taken back to the start position in a live game: confirm whether this is a correction or a new game."
                ),
            )
        } else {
            (
                AlertKind::Takeback,
                format!(
                    "The board went back to the position after ply {k}; plies {}..{n} were withdrawn: confirm the correction was authorised.",
                    k + 1
                ),
            )
        };
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind,
            article: "7.1".into(),
            severity: Severity::Warning,
            squares: Vec::new(),
            message,
        }));
        self.current.takeback = None;
        self.current.press = None;
        self.current.ambiguous_lines.clear();
        self.current.resolution = Resolution::Explained;
        self.current.unexplained_since = None;
        self.current.unexplained_alerted = false;
        self.reset_evidence();
    }

    /// Self-correction: the board shows a position no legal continuation of the
    /// published line explains, still for `RESYNC_STILL_MS`. Look for the one
    /// line that does, going back over at most `RESYNC_MAX_BACK` verified plies
    /// (never before `certain_ply`) and forward at most `RESYNC_MAX_PLIES`,
    /// fewest withdrawn plies first, then fewest new ones, with every piece the
    /// line puts down on the way seen there. Exactly one such line: the wrong
    /// plies are withdrawn by one `Retraction`, the line's plies follow as
    /// `corrected` (pending: they are verified as any move is), the alerts the
    /// wrong reading raised resolve as the board now agrees with the game, and
    /// the arbiters get an info alert saying what was corrected. Two or more:
    /// nothing is published yet, later pictures decide.
    pub(super) fn resync(&mut self, t: Millis, board: &Board, out: &mut Vec<TrackerEvent>) -> bool {
        let Some(game) = self.game.as_ref() else {
            return false;
        };
        let n = game.history.len() - 1;
        let target = Target::Board(board);
        if game.history.iter().any(|p| target.matches(p.board())) {
            // An earlier position of the game: a takeback, not a misreading.
            return false;
        }
        let shown = board.occupied();
        if laws::move_under_way(game.tip(), Some(board), shown) {
            // A hand holding the mover's piece: the move is not made yet.
            return false;
        }
        let max_back = n
            .saturating_sub(self.retractions.certain_ply)
            .min(RESYNC_MAX_BACK);
        let mut found = None;
        // Every piece the line puts down on the way must have been seen there;
        // then one may not have been: a capture answered within one board scan
        // never showed its piece on the square. Withdrawing verified plies needs
        // the strict reading; the lenient one only catches up on the line.
        let seen = (!self.gap).then_some(&self.sensing.seen);
        // The lenient reading only at a ply boundary (a press since the last
        // explained picture): before it, a capture under way looks the same.
        let tolerances: &[usize] = if self.pressed_in_episode() {
            &[0, 1]
        } else {
            &[0]
        };
        'search: for &unseen in tolerances {
            let max_back = if unseen == 0 { max_back } else { 0 };
            for back in 0..=max_back {
                let base = &game.history[n - back];
                for depth in 1..=RESYNC_MAX_PLIES {
                    let mut sols =
                        search::sequences_with_unseen(base, target, depth, 3, seen, unseen);
                    // No piece that goes back to a square it left: tempo moves
                    // that make any transient picture (a castling half made)
                    // reachable in a few plies.
                    sols.retain(|line| !has_return(line));
                    match sols.len() {
                        0 => continue,
                        1 => {
                            found = sols.into_iter().next().map(|line| (back, line));
                            break 'search;
                        }
                        _ => return false,
                    }
                }
            }
            if seen.is_none() {
                break;
            }
        }
        let Some((back, line)) = found else {
            return false;
        };
        let k = n - back;
        let game = self.game.as_mut().expect("playing");
        let withdrawn_sans: Vec<String> = (k..n)
            .map(|i| {
                let before = game.history[i].clone();
                let after = &game.history[i + 1];
                before
                    .legal_moves()
                    .into_iter()
                    .find(|m| {
                        let mut p = before.clone();
                        p.play_unchecked(*m);
                        p == *after
                    })
                    .map(|m| SanPlus::from_move(before, m).to_string())
                    .unwrap_or_else(|| "?".into())
            })
            .collect();
        if back > 0 {
            self.retract_to(k, out);
        }
        let game = self.game.as_mut().expect("playing");
        game.pending.clear();
        let mut pos = game.verified().clone();
        let mut sans = Vec::new();
        for &mv in &line {
            sans.push(SanPlus::from_move(pos.clone(), mv).to_string());
            pos.play_unchecked(mv);
            game.pending.push(Step {
                mv,
                pos: pos.clone(),
                reconstructed: line.len() >= 2,
                corrected: back > 0,
                notes: Vec::new(),
            });
        }
        let message = if back > 0 {
            format!(
                "Corrected from ply {}: {} was read, the board since shows {} was played; plies {}..{n} were withdrawn and replaced.",
                k + 1,
                withdrawn_sans.join(" "),
                sans.join(" "),
                k + 1
            )
        } else {
            format!(
                "Caught up after ply {n}: the board shows {} played while no picture showed each move on its own.",
                sans.join(" ")
            )
        };
        self.corrected_in_the_open(message, out);
        self.sensing.seen.reset(target);
        self.gap = false;
        self.settle(t, out);
        true
    }

    /// Replaces the line from ply `k` by `new` in the open: the verified plies
    /// from `k` are withdrawn (one `Retraction`), `new` follows as corrected
    /// provisional plies (verified as any move is), and the arbiters are told
    /// what was read (`withdrawn`, in SAN) and what the board since shows.
    pub(super) fn replace_from(
        &mut self,
        k: usize,
        withdrawn: &[String],
        new: &[Move],
        out: &mut Vec<TrackerEvent>,
    ) {
        let n = self.game.as_ref().expect("playing").moves.len();
        if k < n {
            self.retract_to(k, out);
        }
        let game = self.game.as_mut().expect("playing");
        game.pending.truncate(k.saturating_sub(game.moves.len()));
        let base = game.tip().clone();
        let mut pos = base.clone();
        for &mv in new {
            pos.play_unchecked(mv);
            game.pending.push(Step {
                mv,
                pos: pos.clone(),
                reconstructed: false,
                corrected: true,
                notes: Vec::new(),
            });
        }
        let replacing = super::follow::sans(&base, new);
        let message = if k < n {
            format!(
                "Corrected from ply {}: {} was read, the board since shows {} was played; plies {}..{n} were withdrawn and replaced.",
                k + 1,
                withdrawn.join(" "),
                replacing.join(" "),
                k + 1
            )
        } else {
            format!(
                "Corrected from ply {}: the board since shows {} was played, not {}.",
                k + 1,
                replacing.join(" "),
                withdrawn.join(" "),
            )
        };
        self.corrected_in_the_open(message, out);
    }

    /// Tells the arbiters what a self-correction changed (an 8.4 info) and
    /// ends the episode it closes: the board reads as the corrected line, so
    /// no press, takeback, ambiguity or displaced squares of the wrong
    /// reading are still waiting.
    pub(super) fn corrected_in_the_open(&mut self, message: String, out: &mut Vec<TrackerEvent>) {
        out.push(TrackerEvent::Alert(Alert {
            id: 0,
            penalty: None,
            kind: AlertKind::MovesCorrected,
            article: "8.4".into(),
            severity: Severity::Info,
            squares: Vec::new(),
            message,
        }));
        self.current.press = None;
        self.current.takeback = None;
        self.current.passed_back = None;
        self.current.ambiguous_lines.clear();
        self.current.ambiguous_alerted = None;
        self.current.displaced = None;
        self.current.resolution = Resolution::Explained;
        self.current.unexplained_since = None;
        self.current.unexplained_alerted = false;
    }

    /// Withdraws the verified plies after ply `k` in the open: one
    /// `Retraction` naming them, and the game open again if its result came
    /// at one of them (a publisher drops the result with the retraction).
    pub(super) fn retract_to(&mut self, k: usize, out: &mut Vec<TrackerEvent>) {
        if self.current.result_ply.is_some_and(|p| p as usize > k) {
            self.current.result_ply = None;
            self.clock_laws.reopen();
        }
        if self.retractions.uncertain_ply.is_some_and(|u| u >= k) {
            self.retractions.uncertain_ply = None;
        }
        let game = self.game.as_mut().expect("playing");
        let n = game.history.len() - 1;
        game.truncate(k);
        if n > k {
            out.push(TrackerEvent::Game(GameEvent::Retraction {
                from_ply: (k + 1) as u32,
                plies: ((k + 1) as u32..=n as u32).collect(),
            }));
        }
    }
}
