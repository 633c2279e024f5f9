//! Time controls: what the event's regulations say about the clock, and what the
//! Laws then say about penalties.
//!
//! Notation is PGN's `TimeControl` (seconds; periods separated by `:`; `moves/seconds`,
//! `seconds+increment`, `*seconds` for a sandclock; `?` unknown, `-` none), which is
//! also how FIDE regulations are usually written for software (`40/5400+30:1800+30`).
//! Minutes and hours may be written with a unit (`90m+30`, `1h30m+30s`) for operators
//! who think in them; plain numbers are seconds, as in PGN.

use std::fmt;
use std::str::FromStr;

/// One period of a time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// Moves to make in this period (`None`: the rest of the game).
    pub moves: Option<u32>,
    /// Time for the period, in seconds.
    pub base_s: u64,
    /// Added after each move (Fischer increment), in seconds.
    pub increment_s: u64,
    /// A sandclock period (`*seconds`): time used by one player is added to the other's.
    pub sandclock: bool,
}

/// A whole time control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeControl {
    /// `?`: not known.
    Unknown,
    /// `-`: no time control.
    None,
    /// One or more periods, the last one for the rest of the game.
    Periods(Vec<Period>),
}

/// The categories of Article A.1 and B.1 (and the standard game).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// More than 60 minutes for 60 moves (base plus 60 increments).
    Standard,
    /// Rapid (A.1): more than 10 and less than 60 minutes.
    Rapid,
    /// Blitz (B.1): 10 minutes or less.
    Blitz,
}

/// How the event is run, which decides the rules for rapid and blitz (A.3/A.4, B.3/B.4).
/// Configured as `[tournament] regime = "supervised" | "unsupervised"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    /// The Competition Rules apply (standard games, and rapid/blitz with adequate
    /// supervision: A.3, B.3).
    #[default]
    Supervised,
    /// Rapid or blitz without adequate supervision (A.4, B.4).
    Unsupervised,
}

/// Why a time control did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "time control {text:?}: {reason}. Write it as PGN does, in seconds, e.g. \
     \"40/5400+30:1800+30\", \"5400+30\", \"180+2\", or with units, e.g. \"90m+30s\""
)]
pub struct TimeControlError {
    pub text: String,
    pub reason: String,
}

impl TimeControl {
    /// The category by Articles A.1 and B.1: the first period's time plus 60 times its
    /// increment. A first period with a move count (`40/5400`) is a standard game.
    pub fn category(&self) -> Option<Category> {
        let TimeControl::Periods(periods) = self else {
            return None;
        };
        let first = periods.first()?;
        if first.moves.is_some() {
            return Some(Category::Standard);
        }
        let for_60_moves = first.base_s + 60 * first.increment_s;
        Some(if for_60_moves <= 600 {
            Category::Blitz
        } else if for_60_moves < 3600 {
            Category::Rapid
        } else {
            Category::Standard
        })
    }

    /// The period in force after `moves_made` moves by one player, and the seconds
    /// that period adds when it begins (6.3: time saved carries over).
    pub fn period_after(&self, moves_made: u32) -> Option<(usize, &Period)> {
        let TimeControl::Periods(periods) = self else {
            return None;
        };
        let mut done = 0u32;
        for (i, p) in periods.iter().enumerate() {
            match p.moves {
                Some(n) if moves_made >= done + n && i + 1 < periods.len() => done += n,
                _ => return Some((i, p)),
            }
        }
        periods.last().map(|p| (periods.len() - 1, p))
    }

    /// Whether the move numbered `move_number` (1-based, one player's) completes a
    /// period with a move count: the clock must add the next period's time then
    /// (Article 6.10.2 asks the arbiter to check it did).
    pub fn is_control_move(&self, move_number: u32) -> bool {
        let TimeControl::Periods(periods) = self else {
            return false;
        };
        let mut done = 0u32;
        for p in &periods[..periods.len().saturating_sub(1)] {
            match p.moves {
                Some(n) => {
                    done += n;
                    if move_number == done {
                        return true;
                    }
                }
                None => return false,
            }
        }
        false
    }
}

/// Parses one duration: plain seconds, or with units `h`, `m`/`min`, `s`.
fn parse_duration(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err("a time is missing".into());
    }
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let mut total = 0u64;
    let mut number = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        let c = rest.chars().next().expect("not empty");
        if c.is_ascii_digit() {
            number.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit, len) = if rest.starts_with("min") {
            (60, 3)
        } else {
            match c {
                'h' => (3600, 1),
                'm' => (60, 1),
                's' => (1, 1),
                _ => return Err(format!("{c:?} is not a digit or a unit (h, m, s)")),
            }
        };
        let n: u64 = number
            .parse()
            .map_err(|_| format!("a number must come before the unit in {s:?}"))?;
        total += n * unit;
        number.clear();
        rest = &rest[len..];
    }
    if !number.is_empty() {
        return Err(format!("{s:?} mixes units and a bare number"));
    }
    Ok(total)
}

impl FromStr for TimeControl {
    type Err = TimeControlError;

    fn from_str(text: &str) -> Result<TimeControl, TimeControlError> {
        let err = |reason: String| TimeControlError {
            text: text.to_string(),
            reason,
        };
        let t = text.trim();
        match t {
            "?" => return Ok(TimeControl::Unknown),
            "-" => return Ok(TimeControl::None),
            "" => return Err(err("it is empty".into())),
            _ => {}
        }
        let mut periods = Vec::new();
        let fields: Vec<&str> = t.split(':').collect();
        for (i, field) in fields.iter().enumerate() {
            let field = field.trim();
            let last = i + 1 == fields.len();
            if let Some(sand) = field.strip_prefix('*') {
                let base_s = parse_duration(sand).map_err(&err)?;
                periods.push(Period {
                    moves: None,
                    base_s,
                    increment_s: 0,
                    sandclock: true,
                });
                continue;
            }
            let (moves, rest) = match field.split_once('/') {
                Some((m, rest)) => {
                    let m: u32 = m
                        .parse()
                        .map_err(|_| err(format!("{m:?} is not a number of moves")))?;
                    if m == 0 {
                        return Err(err("a period of 0 moves".into()));
                    }
                    (Some(m), rest)
                }
                None => (None, field),
            };
            if moves.is_none() && !last {
                return Err(err(format!(
                    "period {} has no move count but is not the last",
                    i + 1
                )));
            }
            let (base, inc) = match rest.split_once('+') {
                Some((b, inc)) => (b, Some(inc)),
                None => (rest, None),
            };
            let base_s = parse_duration(base).map_err(&err)?;
            let increment_s = inc
                .map(parse_duration)
                .transpose()
                .map_err(&err)?
                .unwrap_or(0);
            if base_s == 0 && increment_s == 0 {
                return Err(err(format!("period {} gives no time at all", i + 1)));
            }
            periods.push(Period {
                moves,
                base_s,
                increment_s,
                sandclock: false,
            });
        }
        Ok(TimeControl::Periods(periods))
    }
}

impl fmt::Display for TimeControl {
    /// PGN `TimeControl` notation (seconds).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeControl::Unknown => f.write_str("?"),
            TimeControl::None => f.write_str("-"),
            TimeControl::Periods(periods) => {
                for (i, p) in periods.iter().enumerate() {
                    if i > 0 {
                        f.write_str(":")?;
                    }
                    if p.sandclock {
                        write!(f, "*{}", p.base_s)?;
                        continue;
                    }
                    if let Some(m) = p.moves {
                        write!(f, "{m}/")?;
                    }
                    write!(f, "{}", p.base_s)?;
                    if p.increment_s > 0 {
                        write!(f, "+{}", p.increment_s)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// What the Laws suggest when a player completes an illegal move (Article 7.5.5,
/// B.2 for blitz, A.4.2/B.4 without supervision), for the arbiter's alert. The
/// arbiter decides (12.9); this is the text of the rule, not a ruling.
pub fn illegal_move_penalty(category: Option<Category>, regime: Regime, count: u32) -> String {
    let rapid_or_blitz = matches!(category, Some(Category::Rapid | Category::Blitz));
    if regime == Regime::Unsupervised && rapid_or_blitz {
        return "A.4.2: the illegal move loses if the arbiter sees it or the opponent claims \
                before making his own move; otherwise it stands and the game goes on"
            .into();
    }
    let minutes = if category == Some(Category::Blitz) {
        "one minute (B.2)"
    } else {
        "two minutes"
    };
    if count <= 1 {
        format!("7.5.5: first illegal move by this player: {minutes} added to the opponent's time")
    } else {
        "7.5.5: second illegal move by this player: the game is lost, unless the opponent \
         cannot checkmate by any series of legal moves (then a draw)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(s: &str) -> TimeControl {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn pgn_notation_parses_and_prints_back() {
        for s in [
            "40/5400+30:1800+30",
            "5400+30",
            "180+2",
            "300",
            "*60",
            "?",
            "-",
            "40/7200:3600",
        ] {
            assert_eq!(tc(s).to_string(), s);
        }
        assert_eq!(tc("90m+30s"), tc("5400+30"));
        assert_eq!(tc("1h30m+30"), tc("5400+30"));
        assert_eq!(tc("15min+10"), tc("900+10"));
    }

    #[test]
    fn bad_notation_says_what_to_write() {
        for bad in ["", "abc", "40/", "0/60", "5400:40/1800", "0", "90x"] {
            let e = bad.parse::<TimeControl>().unwrap_err().to_string();
            assert!(e.contains("e.g."), "{bad}: {e}");
        }
    }

    #[test]
    fn categories_follow_a1_and_b1() {
        assert_eq!(
            tc("40/5400+30:1800+30").category(),
            Some(Category::Standard)
        );
        assert_eq!(tc("5400+30").category(), Some(Category::Standard));
        // 15 + 10: 15 min + 60 × 10 s = 25 min: rapid.
        assert_eq!(tc("900+10").category(), Some(Category::Rapid));
        // 3 + 2: 3 min + 2 min = 5 min: blitz.
        assert_eq!(tc("180+2").category(), Some(Category::Blitz));
        // Exactly 10 minutes is blitz; exactly 60 is standard.
        assert_eq!(tc("600").category(), Some(Category::Blitz));
        assert_eq!(tc("3600").category(), Some(Category::Standard));
        assert_eq!(tc("3000+10").category(), Some(Category::Standard));
        assert_eq!(tc("?").category(), None);
    }

    #[test]
    fn control_moves_and_periods() {
        let t = tc("40/5400+30:20/3600+30:900+30");
        assert!(t.is_control_move(40));
        assert!(t.is_control_move(60));
        assert!(!t.is_control_move(80));
        assert_eq!(t.period_after(39).map(|(i, _)| i), Some(0));
        assert_eq!(t.period_after(40).map(|(i, _)| i), Some(1));
        assert_eq!(t.period_after(75).map(|(i, _)| i), Some(2));
        assert!(!tc("5400+30").is_control_move(40));
    }

    #[test]
    fn penalties_follow_7_5_5_b2_and_a4() {
        let std = Some(Category::Standard);
        assert!(illegal_move_penalty(std, Regime::Supervised, 1).contains("two minutes"));
        assert!(illegal_move_penalty(std, Regime::Supervised, 2).contains("lost"));
        let blitz = Some(Category::Blitz);
        assert!(illegal_move_penalty(blitz, Regime::Supervised, 1).contains("one minute"));
        assert!(illegal_move_penalty(blitz, Regime::Unsupervised, 1).contains("A.4.2"));
        // A standard game is never "unsupervised rapid".
        assert!(illegal_move_penalty(std, Regime::Unsupervised, 1).contains("two minutes"));
    }
}
