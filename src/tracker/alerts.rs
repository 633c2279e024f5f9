//! The alerts' bookkeeping: each alert gets its per-board number when it
//! leaves the tracker, the ones whose condition may go away stay open until
//! the board shows it gone (the lifecycle of `docs/alerts.md`), illegal moves
//! are counted per player (7.5.5); and the builders of the alerts the tracker
//! raises about how moves were made (the Laws' own texts are `laws.rs`'s).

use shakmaty::{san::SanPlus, Board, Chess, Color, Move, Position, Square};

use super::search::{self, Target};
use super::{laws, side_color, Game, Phase, Resolution, Tracker};
use crate::events::{Alert, AlertKind, AlertResolved, Millis, Severity, TrackerEvent};
use crate::timecontrol::{Category, Regime, TimeControl};

/// The alerts raised on this board and what they still wait for.
#[derive(Clone, Debug, Default)]
pub(super) struct AlertBook {
    /// Alerts numbered so far (the last [`Alert::id`] given).
    pub(super) alerts_raised: u32,
    /// The alert that reported the last retraction (id, kind): an arbiter's
    /// ruling resolves it.
    pub(super) withdrawn_alert: Option<(u32, AlertKind)>,
    /// Alerts raised whose condition may still go away (see `laws::resolvable`).
    pub(super) open_alerts: Vec<laws::OpenAlert>,
    /// Games begun on this board (alerts remember which game they belong to).
    pub(super) game_no: u32,
    /// Completed illegal moves in this game, White's and Black's (7.5.5).
    pub(super) illegal_counts: [u32; 2],
}

pub(super) fn quarter_turn_alert() -> TrackerEvent {
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::BoardRotated90,
        article: "7.2.2".into(),
        severity: Severity::Warning,
        squares: Vec::new(),
        message: "The board is turned by 90 degrees (dark square in the players' right-hand corner): transfer the position to a correctly placed board. The game is still being followed.".into(),
    })
}

pub(super) fn rook_first_alert(rook: Square) -> TrackerEvent {
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::RookFirstCastling,
        article: "4.4.2".into(),
        severity: Severity::Info,
        squares: Alert::square_names([rook]),
        message: format!(
            "Castling was made rook first (rook from {rook}); recorded as castling. Relevant only if the opponent claims."
        ),
    })
}

pub(super) fn default_promotion_alert(to: Square) -> TrackerEvent {
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::PromotionPieceUnknown,
        article: "3.7.5".into(),
        severity: Severity::Warning,
        squares: Alert::square_names([to]),
        message: format!(
            "A pawn promoted on {to}; this board cannot see which piece was put there, so a queen is recorded: check the piece on {to}."
        ),
    })
}

pub(super) fn rook_promotion_alert(to: Square) -> TrackerEvent {
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::PromotionToRook,
        article: "3.7.5".into(),
        severity: Severity::Info,
        squares: Alert::square_names([to]),
        message: format!(
            "A pawn promoted to a rook on {to}. If the player meant a queen (an upside-down rook), it is still a rook: confirm with the players."
        ),
    })
}

pub(super) fn ambiguous_alert(
    base: &Chess,
    target: Target<'_>,
    sols: &[Vec<Move>],
) -> TrackerEvent {
    let lines: Vec<String> = sols
        .iter()
        .map(|line| {
            let mut pos = base.clone();
            line.iter()
                .map(|&m| SanPlus::from_move_and_play_unchecked(&mut pos, m).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::AmbiguousMoves,
        article: "8.4".into(),
        severity: Severity::Warning,
        squares: Alert::square_names(target.diff(base.board())),
        message: format!(
            "Several move orders lead to the position on the board: {}. Nothing is published until the moves that follow show which was played; if they do not, restore the position after the last published move (7.4) and replay the moves from the scoresheets.",
            lines.join(" | ")
        ),
    })
}

/// A press after what is one square from a legal move (a captured piece left on
/// the board, a piece not released on its square: 4.7): the move was made but not
/// finished, which the arbiter looks at without counting it as an illegal move.
/// `None` when the picture is not that close to a legal move, or shows a pawn of
/// the mover on its last rank (7.5.2 then applies).
fn irregular_alert(tip: &Chess, board: &Board) -> Option<TrackerEvent> {
    let mover = tip.turn();
    let last_rank = match mover {
        Color::White => shakmaty::Rank::Eighth,
        Color::Black => shakmaty::Rank::First,
    };
    let pawn_on_last =
        (board.pawns() & board.by_color(mover) & shakmaty::Bitboard::from_rank(last_rank)).any();
    if pawn_on_last {
        return None;
    }
    let to_tip = search::diff(tip.board(), board);
    let (d, m) = tip
        .legal_moves()
        .into_iter()
        .map(|m| {
            let mut p = tip.clone();
            p.play_unchecked(m);
            (search::diff(p.board(), board), m)
        })
        .min_by_key(|(d, _)| d.count())?;
    if d.count() != 1 || d.count() >= to_tip.count() {
        return None;
    }
    let san = SanPlus::from_move(tip.clone(), m).to_string();
    let squares: Vec<Square> = d.into_iter().collect();
    Some(TrackerEvent::Alert(Alert {
        id: 0,
        penalty: None,
        kind: AlertKind::IrregularPosition,
        article: "7.5.1".into(),
        severity: Severity::Error,
        squares: Alert::square_names(squares.iter().copied()),
        message: format!(
            "The clock was pressed after what looks like {san}, but {} does not match it: the move is not complete.",
            names(&squares)
        ),
    }))
}

pub(super) fn names(squares: &[Square]) -> String {
    squares
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Tracker {
    /// Gives the alerts just emitted their per-board numbers (see [`Alert::id`]).
    /// Done here, at the public entry points, so that every place that builds an
    /// alert can leave `id: 0` and the numbering cannot skip or repeat.
    pub(super) fn number_alerts(&mut self, events: &mut [TrackerEvent]) {
        for e in events {
            if let TrackerEvent::Alert(a) = e {
                if a.id == 0 {
                    self.alerts.alerts_raised += 1;
                    a.id = self.alerts.alerts_raised;
                    if matches!(a.kind, AlertKind::Takeback | AlertKind::RollbackToStart) {
                        self.alerts.withdrawn_alert = Some((a.id, a.kind.clone()));
                    }
                    if laws::resolvable(&a.kind) {
                        self.alerts.open_alerts.push(laws::OpenAlert {
                            id: a.id,
                            kind: a.kind.clone(),
                            game_no: self.alerts.game_no,
                            ply: self.game.as_ref().map_or(0, Game::ply),
                        });
                    }
                    self.clock_laws.numbered(a);
                }
            }
        }
    }

    /// Resolves the open alerts whose condition is gone (the lifecycle of
    /// `docs/alerts.md`): checked after every input, from the tracker's state, so
    /// that however the board got back in order (a correction, a takeback, the
    /// next move, a new game) the alert is closed exactly once.
    pub(super) fn review_alerts(&mut self, out: &mut Vec<TrackerEvent>) {
        if self.alerts.open_alerts.is_empty() {
            return;
        }
        // The newest wrong set-up alert replaces older ones: the pieces moved on.
        let newest_start = self
            .alerts
            .open_alerts
            .iter()
            .rev()
            .find(|a| a.kind == AlertKind::WrongInitialPosition)
            .map(|a| a.id);
        let open = std::mem::take(&mut self.alerts.open_alerts);
        for a in open {
            match self.alert_gone(&a, newest_start) {
                Some(reason) => out.push(TrackerEvent::Resolved(AlertResolved {
                    id: a.id,
                    kind: a.kind,
                    reason,
                })),
                None => self.alerts.open_alerts.push(a),
            }
        }
    }

    /// Why the condition behind an open alert is gone, if it is.
    fn alert_gone(&self, a: &laws::OpenAlert, newest_start: Option<u32>) -> Option<String> {
        if a.game_no != self.alerts.game_no {
            return Some(if a.kind == AlertKind::WrongInitialPosition {
                "the game started from a correct initial position".into()
            } else {
                "a new game started on the board".into()
            });
        }
        let game = self.game.as_ref();
        let ply = game.map_or(0, Game::ply);
        match &a.kind {
            AlertKind::WrongInitialPosition => newest_start
                .filter(|&n| n != a.id)
                .map(|n| format!("the set-up changed; alert {n} describes the board now")),
            AlertKind::BoardRotated90 => (!self.orientation.is_quarter_turn())
                .then(|| "the board is placed correctly (2.1) again".into()),
            // The arbiter is asked to check the piece, game over or not; the
            // moves after it can show it was not a queen (a knight's move,
            // a king stepping where a queen would give check), and the
            // record is corrected to that.
            AlertKind::PromotionPieceUnknown => {
                let g = game?;
                let i = a.ply.checked_sub(1)? as usize;
                let m = *g.moves.get(i)?;
                let role = m.promotion().filter(|&r| r != shakmaty::Role::Queen)?;
                Some(format!(
                    "the moves since show the pawn became a {}: {}",
                    laws::role_name(role),
                    SanPlus::from_move(g.history[i].clone(), m)
                ))
            }
            _ if self.phase == Phase::Over => Some("the game ended".into()),
            AlertKind::AmbiguousMoves => (self.current.ambiguous_lines.is_empty()
                && self.current.resolution != Resolution::Ambiguous)
                .then(|| "the moves that followed showed which order was played".into()),
            AlertKind::ClockPressedWithoutMove => {
                let to_move = game.map(|g| g.verified().turn());
                let running = self
                    .clock
                    .white_side
                    .zip(self.clock.last_reading.and_then(|r| r.running_side()))
                    .map(|(w, s)| side_color(s, w));
                if ply > a.ply {
                    Some("a move was made since".into())
                } else if running.is_some() && running == to_move {
                    let c = to_move.expect("checked");
                    Some(format!(
                        "the clock runs again for {}, the player to move",
                        laws::color_name(c)
                    ))
                } else {
                    None
                }
            }
            AlertKind::IllegalMove | AlertKind::IrregularPosition | AlertKind::DisplacedPieces => {
                if self.phase != Phase::Playing
                    || self.current.resolution != Resolution::Explained
                    || self.current.displaced.is_some()
                {
                    return None;
                }
                let unchanged = ply == a.ply && game.is_some_and(|g| g.pending.is_empty());
                Some(if ply < a.ply {
                    "the board was put back to an earlier position of the game".into()
                } else if unchanged && a.kind == AlertKind::DisplacedPieces {
                    "the pieces are back on their squares".into()
                } else if unchanged {
                    "the board shows the position before the illegal move again".into()
                } else {
                    "the board shows a legal continuation of the game".into()
                })
            }
            _ => None,
        }
    }

    pub(super) fn resolve_withdrawn_alert(&mut self, reason: &str, out: &mut Vec<TrackerEvent>) {
        if let Some((id, kind)) = self.alerts.withdrawn_alert.take() {
            out.push(TrackerEvent::Resolved(AlertResolved {
                id,
                kind,
                reason: reason.to_owned(),
            }));
        }
    }

    /// The alert for a press the board shows no legal move for (7.5.1, 7.5.2), with
    /// the mover's count of completed illegal moves and the penalty the Laws
    /// suggest. `None` while an alert for the same illegal move is still open (the
    /// player pressed again on the uncorrected position: still one illegal move).
    pub(super) fn illegal_press_alert(
        &mut self,
        board: Option<&Board>,
        presser: Option<Color>,
    ) -> Option<TrackerEvent> {
        let game = self.game.as_ref()?;
        let open = |kind: AlertKind| {
            self.alerts
                .open_alerts
                .iter()
                .any(|a| a.game_no == self.alerts.game_no && a.kind == kind)
        };
        if open(AlertKind::IllegalMove) || open(AlertKind::IrregularPosition) {
            return None;
        }
        // The position the presser moved from: before his own move, if the
        // line already holds it unverified (the press is what it waited for).
        let n = game.pending.len();
        let tip = match presser {
            Some(c) if n > 0 && game.tip().turn() != c => game.pos_at(n - 1).clone(),
            _ => game.tip().clone(),
        };
        if let Some(alert) = board.and_then(|b| irregular_alert(&tip, b)) {
            return Some(alert);
        }
        let mover = tip.turn();
        let count = self.count_illegal(mover);
        let tc = self.config.time_control.as_ref();
        Some(match board {
            Some(b) => {
                let alert = laws::illegal_move_alert(&tip, b, count, tc, self.config.regime);
                let rapid_or_blitz = matches!(
                    tc.and_then(TimeControl::category),
                    Some(Category::Rapid | Category::Blitz)
                );
                let stands_if_answered = self.config.regime == Regime::Unsupervised
                    && rapid_or_blitz
                    && matches!(&alert, TrackerEvent::Alert(a) if a.article == "7.5.1");
                if stands_if_answered {
                    self.current.illegal_stand = Some((b.clone(), mover));
                }
                alert
            }
            // Occupancy only: which piece went where cannot be told.
            None => TrackerEvent::Alert(Alert {
                id: 0,
                kind: AlertKind::IllegalMove,
                article: "7.5.1".into(),
                severity: Severity::Error,
                squares: Vec::new(),
                message: format!(
                    "The clock was pressed but the board shows no legal move: check the board. \
                     If {} made an illegal move, it is the completed illegal move number {count} \
                     by {} in this game.",
                    laws::color_name(mover),
                    laws::color_name(mover)
                ),
                penalty: Some(laws::penalty(tc, self.config.regime, count)),
            }),
        })
    }

    /// Counts one more completed illegal move by `c` (7.5.5) and returns the count.
    pub(super) fn count_illegal(&mut self, c: Color) -> u32 {
        let n = &mut self.alerts.illegal_counts[usize::from(c == Color::Black)];
        *n += 1;
        *n
    }

    /// Occupancy-only boards: an ambiguity followed long enough without a
    /// frame deciding it is committed (see `rivals.rs`).
    pub(super) fn ambiguity_undecided(&mut self, t: Millis, out: &mut Vec<TrackerEvent>) {
        if self.ambiguity_due(t) {
            self.commit_ambiguity(t, out);
        }
    }
}
