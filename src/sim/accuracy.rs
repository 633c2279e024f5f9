//! The accuracy harness: real games played by a hand model on a family's
//! virtual board (DGT unless said otherwise), recorded as bytes, and read back
//! through the session and tracker exactly as the daemon reads a port. What
//! comes out is compared with the source.
//!
//! The benchmark (`cargo bench --bench accuracy`) runs every game of the data set
//! three ways; the test suite runs a sample. Both use this one function, so the
//! figures in BENCHMARKS.md and the tests measure the same thing.

use std::time::Duration;

use eboard_protocols::family::{PortMode, Sensing};
use eboard_protocols::ClockSide;
use shakmaty::Position;

use crate::events::{GameEvent, GameResult, Millis, Severity, TrackerEvent};
use crate::session::{CaptureDriver, Session};
use crate::sim::games::Game;
use crate::sim::{simulate, simulate_script, SimOptions, SimRun};
use crate::tracker::{start_number, TrackerConfig};
use eboard_protocols::blind_hand::{self, BlindConfig, Pace as BlindPace};
use eboard_protocols::dgt::virtual_clock::PressRecord;
use eboard_protocols::family::VirtualSpec;
use eboard_protocols::hand::HandScript;

/// How the board and clock stand in the hall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Setup {
    /// White at the connector side, White's clock on the left.
    Normal,
    /// The board turned 180°: White sits at the far side from the connector.
    Rotated,
    /// White's clock on the right.
    ClockRight,
}

impl Setup {
    /// All three set-ups the acceptance criteria name.
    pub const ALL: [Setup; 3] = [Setup::Normal, Setup::Rotated, Setup::ClockRight];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Setup::Normal => "normal",
            Setup::Rotated => "turned 180°",
            Setup::ClockRight => "White's clock right",
        }
    }
}

/// What reading one simulated game back gave.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The verified moves, in UCI, as the tracker published them (retractions applied).
    pub verified: Vec<String>,
    /// The source's moves in UCI.
    pub expected: Vec<String>,
    pub retractions: usize,
    /// Alerts of severity warning or error, as `article kind: message`.
    pub serious_alerts: Vec<String>,
    /// Alerts of severity info.
    pub info_alerts: usize,
    /// Their texts, as `ply N t=T kind: message`.
    pub info_messages: Vec<String>,
    /// Every event the session gave, for a closer look at one game.
    pub events: Vec<crate::events::Stamped>,
    /// See [`run_game_traced`].
    pub trace: Vec<String>,
    /// Length of the simulated game (board time).
    pub board_time: Duration,
    /// Time spent in the session and tracker (decoding and reconstruction only).
    pub reconstruction: Duration,
    /// Picture changes and clock readings fed to the tracker, roughly: frames decoded.
    pub frames: u64,
    /// Verified moves (of those equal to the source) whose `clock_ms` shows, to the
    /// second, what the virtual clock showed for the mover right after that move's press.
    pub clk_exact: usize,
    /// Verified moves equal to the source that had a press to compare with.
    pub clk_checked: usize,
    /// The first few that did not, as `ply N: published X s, clock showed Y s`.
    pub clk_mismatches: Vec<String>,
    /// Results published, with their reason and the ply of the last verified move
    /// before them.
    pub results: Vec<(GameResult, String, u32)>,
}

impl Outcome {
    /// The published game equals the source, with nothing retracted and no alert
    /// of warning or error severity.
    pub fn is_exact(&self) -> bool {
        self.verified == self.expected && self.retractions == 0 && self.serious_alerts.is_empty()
    }

    /// Whether the first ply published wrong was named to the arbiters as
    /// uncertain: an 8.4 note whose readings include the moves played there
    /// (the board's reports fit both, and the note says which were recorded).
    /// `start`: the game's start position, to write the moves played in SAN
    /// as the note does.
    pub fn named_uncertain(&self, start: &shakmaty::Chess) -> bool {
        let Some(first) = self.first_difference() else {
            return false;
        };
        let mut pos = start.clone();
        let mut played = Vec::with_capacity(self.expected.len());
        for uci in &self.expected {
            let Some(m) = uci
                .parse::<shakmaty::uci::UciMove>()
                .ok()
                .and_then(|u| u.to_move(&pos).ok())
            else {
                break;
            };
            played.push(
                shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, m).to_string(),
            );
        }
        self.info_messages
            .iter()
            .filter(|m| m.contains("moves_uncertain"))
            .filter_map(|m| m.split_once(" fit ")?.1.split_once(": the pieces"))
            .flat_map(|(lines, _)| lines.split(" as well as ").flat_map(|l| l.split(" or ")))
            .any(|line| {
                let alt: Vec<&str> = line.split(' ').collect();
                (0..first).any(|k| {
                    first <= k + alt.len()
                        && played
                            .get(k..k + alt.len())
                            .is_some_and(|w| w.iter().zip(&alt).all(|(a, b)| a == b))
                })
            })
    }

    /// Why a game is not exact, or `None` if it is. `occupancy_only`: the
    /// board senses only which squares are occupied, so two lines whose
    /// positions occupy the same squares ply by ply look alike at rest.
    pub fn inexact_kind(&self, start: &shakmaty::Chess, occupancy_only: bool) -> Option<Inexact> {
        if self.is_exact() {
            return None;
        }
        if self.verified == self.expected {
            return Some(if self.retractions > 0 {
                Inexact::Corrected
            } else {
                Inexact::Alerted
            });
        }
        if self.expected.starts_with(&self.verified) {
            return Some(Inexact::Stopped);
        }
        let (Some(read), Some(played)) = (
            boards_after(start, &self.verified),
            boards_after(start, &self.expected),
        ) else {
            return Some(Inexact::Wrong);
        };
        let alike = read.len() == played.len()
            && read.iter().zip(&played).all(|(a, b)| {
                if occupancy_only {
                    a.occupied() == b.occupied()
                } else {
                    a == b
                }
            });
        Some(if alike {
            Inexact::SameAtRest
        } else {
            Inexact::Wrong
        })
    }

    /// The first ply (1-based) where the published moves differ from the source.
    pub fn first_difference(&self) -> Option<usize> {
        let n = self
            .verified
            .iter()
            .zip(&self.expected)
            .take_while(|(a, b)| a == b)
            .count();
        (n < self.verified.len().max(self.expected.len())).then_some(n + 1)
    }
}

/// Why a game did not come out exact (see [`Outcome::inexact_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Inexact {
    /// The record is the game played, but a wrong reading was published and
    /// corrected in the open (a `Retraction`) on the way.
    Corrected,
    /// The record is the game played, with a warning or error alert raised.
    Alerted,
    /// The record differs from the game played, yet the two occupy the same
    /// squares after every ply: no picture of the board at rest tells them
    /// apart (on an identity board, the same pieces on the same squares).
    SameAtRest,
    /// Every published ply is right, but the record stops short of the game.
    Stopped,
    /// Moves published that were not played, and a picture at rest shows it.
    Wrong,
}

impl Inexact {
    /// Every kind, in report order.
    pub const ALL: [Inexact; 5] = [
        Inexact::Corrected,
        Inexact::Alerted,
        Inexact::SameAtRest,
        Inexact::Stopped,
        Inexact::Wrong,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Inexact::Corrected => "corrected in the open",
            Inexact::Alerted => "right, with an alert",
            Inexact::SameAtRest => "alike at rest",
            Inexact::Stopped => "stopped short",
            Inexact::Wrong => "wrong moves",
        }
    }
}

/// The board after each ply of `uci` played from `start`, or `None` if a move
/// does not parse or is not legal there.
fn boards_after(start: &shakmaty::Chess, uci: &[String]) -> Option<Vec<shakmaty::Board>> {
    let mut pos = start.clone();
    uci.iter()
        .map(|u| {
            let m = u
                .parse::<shakmaty::uci::UciMove>()
                .ok()?
                .to_move(&pos)
                .ok()?;
            pos.play_unchecked(m);
            Some(pos.board().clone())
        })
        .collect()
}

/// How fast the players move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pace {
    /// Tournament thinking times (seconds to minutes), careful hands.
    Normal,
    /// Time trouble: a move every second or so, quick hands, replies that come
    /// before the opponent has pressed.
    TimeTrouble,
}

impl Pace {
    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Pace::Normal => "normal pace",
            Pace::TimeTrouble => "time trouble",
        }
    }
}

/// Which hand model plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    /// `eboard_protocols::hand`, written beside the tracker.
    Own,
    /// `eboard_protocols::blind_hand`, written blind to the tracker from the
    /// Laws and the reference notes only: a second opinion that does not share
    /// the tracker's assumptions.
    Blind,
}

impl Model {
    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Model::Own => "own",
            Model::Blind => "blind",
        }
    }
}

/// The players' hands for one run: whose model, how fast, and how often a
/// press is forgotten.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hands {
    pub model: Model,
    pub pace: Pace,
    /// Chance per move that the mover never presses the clock.
    pub forget_press: f64,
}

impl Default for Hands {
    fn default() -> Self {
        Hands {
            model: Model::Own,
            pace: Pace::Normal,
            forget_press: 0.0,
        }
    }
}

/// The simulation options for `setup`, with sensor noise and realistic hands.
pub fn sim_options(setup: Setup, seed: u64, noise: bool) -> SimOptions {
    sim_options_for(setup, seed, noise, Hands::default())
}

/// [`sim_options`] with the given hands.
pub fn sim_options_for(setup: Setup, seed: u64, noise: bool, hands: Hands) -> SimOptions {
    let mut opts = SimOptions {
        seed,
        ..SimOptions::default()
    };
    opts.hand.forget_press = hands.forget_press;
    if hands.pace == Pace::TimeTrouble {
        // Mean thinking 1 s (0.3 s in the opening), hands a third quicker, and
        // one reply in ten made before the opponent's press.
        opts.hand.speed = 0.05;
        opts.hand.hand_speed = 0.65;
        opts.hand.early_reply = 0.1;
        opts.hand.hover = 0.002;
    }
    opts.hand.rotated = setup == Setup::Rotated;
    opts.hand.white_clock = if setup == Setup::ClockRight {
        ClockSide::Right
    } else {
        ClockSide::Left
    };
    if noise {
        opts.board.noise.flicker_empty = 1e-4;
        opts.board.noise.misread = 5e-5;
    }
    opts
}

/// Plays `game` with `opts` and reads it back; see [`Outcome`].
pub fn run_game(game: &Game, opts: &SimOptions) -> Outcome {
    run_game_as(game, opts, Model::Own)
}

/// Plays `game` with the hands of `model` on the board `opts` describes: the
/// pace and forgotten presses of `opts.hand`; see [`simulate_as`].
pub fn run_game_as(game: &Game, opts: &SimOptions, model: Model) -> Outcome {
    run_game_traced(game, opts, model, None)
}

/// [`run_game_as`], and between the two times of `window` (ms of board time)
/// a line in [`Outcome::trace`] for every chunk: the squares the picture
/// changed and the readings the tracker then held. For finding out why a game
/// went wrong; nothing is traced without a window.
pub fn run_game_traced(
    game: &Game,
    opts: &SimOptions,
    model: Model,
    window: Option<(Millis, Millis)>,
) -> Outcome {
    let run = simulate_as(game, opts, model);
    let settings = (opts.family.kept_settings)(&VirtualSpec {
        seed: opts.seed,
        ..opts.board.clone()
    });
    let mut session = Session::for_family(
        opts.family,
        1,
        PortMode::Single,
        &settings,
        TrackerConfig::default(),
    )
    .expect("a virtual board's kept settings suit its own codec");
    let occupancy_only = (opts.family.capabilities)(PortMode::Single).sensing == Sensing::Occupancy;
    let standard = game.start.board() == shakmaty::Chess::default().board();
    if start_number(game.start.board()).is_none() || (occupancy_only && !standard) {
        // A set position: the operator gives it, as an arbiter would for an
        // adjourned or composed game. The start-picture detection cannot know it.
        // Nor can a board that senses occupancy only tell one Chess960 start from
        // another: the arbiter of a Chess960 event gives the drawn position
        // (docs/boards.md).
        let fen = crate::sim::games::fen_of(&game.start);
        session
            .set_start_fen(&fen)
            .expect("the game's own start position is legal");
    }
    let mut events = Vec::new();
    let started = thread_cpu_time();
    // The same loop as `replay` and the daemon: ticks on the grid between chunks.
    let mut driver = CaptureDriver::new(session);
    let mut trace = Vec::new();
    // The picture before each chunk, kept only when tracing: the loop is timed.
    let mut shown = window.map(|_| driver.session.picture().clone());
    // How many readings each traced picture lists (`SHOW_N`, default 6).
    let shown_readings = std::env::var("SHOW_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6);
    for chunk in &run.chunks {
        driver.chunk(chunk, &mut events);
        let (Some((a, b)), Some(before)) = (window, shown.as_mut()) else {
            continue;
        };
        let now = driver.session.picture().clone();
        if (a..=b).contains(&chunk.t_ms) {
            let changed: Vec<String> = now
                .diff(before)
                .into_iter()
                .map(|sq| format!("{sq}={}", now.get(sq).char()))
                .collect();
            let (anchor, readings) = driver.session.readings();
            trace.push(format!(
                "{:>8} [{}] from ply {anchor}:\n{}",
                chunk.t_ms,
                changed.join(" "),
                readings
                    .iter()
                    .take(shown_readings)
                    .map(|r| format!("           {r}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
        *before = now;
    }
    driver.finish(
        crate::session::replay::end_grace_ms(&TrackerConfig::default()),
        &mut events,
    );
    let ended = events
        .iter()
        .any(|e| matches!(e.event, TrackerEvent::Game(GameEvent::Result { .. })));
    if opts.arbiter_result && !ended {
        // Which result does not matter here: the arbiter's is not scored.
        let command = crate::operator::TrackerCommand::SetResult {
            result: GameResult::Draw,
            reason: String::new(),
        };
        let at = driver.last_t() + 1;
        // A board whose game never started has no game to end.
        let _ = driver.operator(at, 1, &command, &mut events);
    }
    let end = driver.last_t();
    let session = driver.session;
    let reconstruction = thread_cpu_time().saturating_sub(started);

    let mut out = Outcome {
        expected: game.uci_moves(),
        board_time: Duration::from_millis(end),
        reconstruction,
        frames: session.stats().frames,
        trace,
        ..Outcome::default()
    };
    score(&mut out, events, None, &run.script.pressed, &run.presses);
    out
}

/// Fills `out` from the session's `events` (those of `board` only, when the
/// line has several): the verified line, retractions, alerts, results, and
/// each verified move's `[%clk]` against the clock's record of the presses
/// (`pressed` says which plies' presses moved the lever).
fn score(
    out: &mut Outcome,
    events: Vec<crate::events::Stamped>,
    board: Option<u32>,
    pressed: &[bool],
    presses: &[PressRecord],
) {
    let events: Vec<_> = events
        .into_iter()
        .filter(|e| board.is_none_or(|b| e.board == b))
        .collect();
    let mut clocks: Vec<Option<u64>> = Vec::new();
    let mut last_ply = 0;
    for stamped in &events {
        match &stamped.event {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                let ply = m.ply as usize;
                out.verified.truncate(ply.saturating_sub(1));
                out.verified.push(m.uci.clone());
                clocks.truncate(ply.saturating_sub(1));
                clocks.push(m.clock_ms);
                last_ply = m.ply;
            }
            TrackerEvent::Game(GameEvent::MoveClock { ply, clock_ms, .. }) => {
                if let Some(c) = (*ply as usize)
                    .checked_sub(1)
                    .and_then(|i| clocks.get_mut(i))
                {
                    *c = Some(*clock_ms);
                }
            }
            TrackerEvent::Game(GameEvent::Retraction { from_ply, .. }) => {
                out.retractions += 1;
                out.verified
                    .truncate((*from_ply as usize).saturating_sub(1));
                clocks.truncate((*from_ply as usize).saturating_sub(1));
                out.results.retain(|r| r.2 < *from_ply);
                last_ply = from_ply.saturating_sub(1);
            }
            TrackerEvent::Alert(a) if a.severity >= Severity::Warning => {
                out.serious_alerts.push(format!(
                    "ply {} t={}ms {} {}: {}",
                    stamped.ply, stamped.t_ms, a.article, a.kind, a.message
                ));
            }
            TrackerEvent::Alert(a) => {
                out.info_alerts += 1;
                out.info_messages.push(format!(
                    "ply {} t={}ms {}: {}",
                    stamped.ply, stamped.t_ms, a.kind, a.message
                ));
            }
            TrackerEvent::Game(GameEvent::Result { reason, .. })
                if *reason == crate::events::ResultReason::Arbiter => {}
            TrackerEvent::Game(GameEvent::Result { result, reason }) => {
                out.results.push((*result, reason.to_string(), last_ply));
            }
            TrackerEvent::Game(_) | TrackerEvent::Resolved(_) => {}
        }
    }
    out.events = events;
    // The clock records only the presses that moved its lever: the k-th of them
    // completes the k-th ply whose mover's press moved it (a forgotten press, and
    // the opponent's press on the side already down, record nothing).
    let mut press_of = vec![None; out.expected.len()];
    let mut records = presses.iter();
    for (i, &moved) in pressed.iter().enumerate() {
        if moved {
            if let Some(slot) = press_of.get_mut(i) {
                *slot = records.next();
            }
        }
    }
    for (i, ((got, want), clock)) in out
        .verified
        .iter()
        .zip(&out.expected)
        .zip(&clocks)
        .enumerate()
    {
        let Some(press) = press_of.get(i).copied().flatten() else {
            continue;
        };
        if got != want {
            continue;
        }
        out.clk_checked += 1;
        if clock.map(|ms| ms / 1000) == Some(press.shown_seconds()) {
            out.clk_exact += 1;
        } else if out.clk_mismatches.len() < 5 {
            // A press and the next one inside one clock report: the board
            // never showed the first presser's stopped display, only one that
            // ran since the second press (a second less, now and then).
            let next_t = presses
                .iter()
                .find(|p| p.t_ms > press.t_ms)
                .map_or(u64::MAX, |p| p.t_ms);
            let reported = out.events.iter().any(|e| {
                matches!(e.event, TrackerEvent::Game(GameEvent::Clock { .. }))
                    && (press.t_ms..next_t).contains(&e.t_ms)
            });
            out.clk_mismatches.push(format!(
                "ply {}: published {:?} s, clock showed {} s{}",
                i + 1,
                clock.map(|ms| ms / 1000),
                press.shown_seconds(),
                if reported {
                    ""
                } else {
                    " (never reported: the next press came first)"
                }
            ));
        }
    }
}

/// Plays `games[i]` on board `i` of one bus line of DGT boards, with the
/// project's own hands as `opts.hand` sets them (see
/// [`crate::sim::simulate_bus`]), and reads the whole line back through one
/// session in bus mode, as the daemon reads a daisy chain: an outcome per
/// board. The reconstruction time is the whole line's, given to the first
/// board; the board time is each game's.
pub fn run_bus(games: &[&Game], opts: &SimOptions) -> Vec<Outcome> {
    let owned: Vec<Game> = games.iter().map(|g| (*g).clone()).collect();
    let run = crate::sim::simulate_bus(&owned, opts);
    let settings = (opts.family.kept_settings)(&VirtualSpec {
        seed: opts.seed,
        ..opts.board.clone()
    });
    let session = Session::for_family(
        opts.family,
        1,
        PortMode::Bus,
        &settings,
        TrackerConfig::default(),
    )
    .expect("a virtual board's kept settings suit its own codec");
    let mut events = Vec::new();
    let started = thread_cpu_time();
    let mut driver = CaptureDriver::new(session);
    for chunk in &run.chunks {
        driver.chunk(chunk, &mut events);
    }
    driver.finish(
        crate::session::replay::end_grace_ms(&TrackerConfig::default()),
        &mut events,
    );
    let end = driver.last_t();
    let reconstruction = thread_cpu_time().saturating_sub(started);
    let frames = driver.session.stats().frames;
    owned
        .iter()
        .enumerate()
        .map(|(i, game)| {
            let mut out = Outcome {
                expected: game.uci_moves(),
                board_time: Duration::from_millis(end),
                reconstruction: if i == 0 {
                    reconstruction
                } else {
                    Duration::ZERO
                },
                frames: if i == 0 { frames } else { 0 },
                ..Outcome::default()
            };
            score(
                &mut out,
                events.clone(),
                Some(u32::from(run.addresses[i])),
                &run.pressed[i],
                &run.presses[i],
            );
            out
        })
        .collect()
}

/// Plays `game` on the virtual board with the hands of `model`. The blind
/// model is given the same seed, board orientation, clock side, start time and
/// rate of forgotten presses as `opts.hand`, and time trouble when `opts.hand`
/// thinks twenty times faster than at normal pace or more.
pub fn simulate_as(game: &Game, opts: &SimOptions, model: Model) -> SimRun {
    match model {
        Model::Own => simulate(game, opts),
        Model::Blind => {
            let cfg = BlindConfig {
                seed: opts.seed ^ 0x626c_696e_6400, // "blind": its own stream
                pace: if opts.hand.speed <= 0.05 {
                    BlindPace::TimeTrouble
                } else {
                    BlindPace::Normal
                },
                forget_press: opts.hand.forget_press,
                rotated: opts.hand.rotated,
                white_clock: opts.hand.white_clock,
                start_ms: opts.hand.start_ms,
            };
            let script = blind_hand::play(&game.start, &game.moves, &cfg);
            let made_at = script
                .plies
                .iter()
                .map(|p| (p.released_ms, p.press_ms.unwrap_or(p.released_ms)))
                .collect();
            let pressed = script.plies.iter().map(|p| p.press_ms.is_some()).collect();
            simulate_script(
                game,
                opts,
                HandScript {
                    actions: script.actions,
                    made_at,
                    pressed,
                },
            )
        }
    }
}

/// The result the Laws give without a claim for a game whose index entry lists
/// `final_state` (python-chess's reading of the final position), with its reason as
/// the tracker words it and the ply where it first held: the last ply for mate and
/// stalemate, the first ply that reached a dead position, a fifth repetition or 75
/// moves otherwise (the source may play on past them). `None` when the game ends
/// without one (or only with a claimable draw). Computed here with shakmaty, apart
/// from the tracker, for the benchmark and the tests to compare with.
pub fn expected_result(
    game: &Game,
    final_state: &[String],
) -> Option<(GameResult, &'static str, u32)> {
    let has = |s: &str| final_state.iter().any(|f| f == s);
    let n = game.moves.len() as u32;
    if has("checkmate") {
        let last_mover = if n % 2 == 1 {
            game.start.turn()
        } else {
            !game.start.turn()
        };
        return Some((GameResult::win_for(last_mover), "checkmate", n));
    }
    if has("stalemate") {
        return Some((GameResult::Draw, "stalemate", n));
    }
    let mut history = vec![game.start.clone()];
    for (i, m) in game.moves.iter().enumerate() {
        let mut next = history.last().expect("start").clone();
        next.play_unchecked(*m);
        let ply = i as u32 + 1;
        let reason = if next.is_insufficient_material() {
            Some("dead position")
        } else if history.iter().filter(|p| **p == next).count() >= 4 {
            Some("fivefold repetition")
        } else if next.halfmoves() >= 150 && !next.is_checkmate() {
            Some("75-move rule")
        } else {
            None
        };
        history.push(next);
        if let Some(r) = reason {
            return Some((GameResult::Draw, r, ply));
        }
    }
    None
}

/// CPU time this thread has used: what reconstruction costs, whatever else
/// shares the machine (wall time counts the other processes' turns too).
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is
    // supported by Linux, the only platform this daemon targets.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The game e4 a6 e5 f5 exf6 (en passant) Nxf6, published with f6 for
    /// f5: the board never showed where the black pawn went, as with b5
    /// axb6 read for b6 axb6 in the bench's blind time trouble.
    fn outcome(note: &str) -> Outcome {
        let uci = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        Outcome {
            expected: uci("e2e4 a7a6 e4e5 f7f5 e5f6 g8f6"),
            verified: uci("e2e4 a7a6 e4e5 f7f6 e5f6 g8f6"),
            info_messages: vec![note.to_string()],
            ..Outcome::default()
        }
    }

    #[test]
    fn a_wrong_ply_is_named_only_by_a_note_whose_readings_hold_the_moves_played() {
        let start = shakmaty::Chess::default();
        let named = outcome(
            "ply 5 t=9000ms moves_uncertain: The board's reports fit f6 exf6 Nxf6 as well as \
             f5 exf6 Nxf6: the pieces were never seen in between. f6 is recorded; check the \
             scoresheets if it matters.",
        );
        assert_eq!(named.first_difference(), Some(4));
        assert!(named.named_uncertain(&start));
        let other = outcome(
            "ply 5 t=9000ms moves_uncertain: The board's reports fit f6 exf6 Nxf6 as well as \
             Nh6 exf6: the pieces were never seen in between. f6 is recorded; check the \
             scoresheets if it matters.",
        );
        assert!(!other.named_uncertain(&start));
        let exact = Outcome {
            verified: named.expected.clone(),
            ..named.clone()
        };
        assert!(!exact.named_uncertain(&start));
    }
}
