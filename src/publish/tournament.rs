//! Tournament data: event, rounds and pairings, from the configuration
//! (`[tournament]` and `[[pairing]]` tables) and from a FIDE TRF file.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Errors reading tournament data.
#[derive(Debug, thiserror::Error)]
pub enum TournamentError {
    #[error("TRF line {line}: {what}; check that the file is a FIDE TRF export (Swiss-Manager: Export > TRF)")]
    Trf { line: usize, what: String },
    #[error("pairing for round {round} board {board} is given twice; keep one [[pairing]] table per board")]
    DuplicatePairing { round: u32, board: u32 },
    #[error("cannot read the TRF file {path}: {source}; check the [tournament] trf path")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("[tournament] delay_secs = {0} is over the maximum of 3600 (one hour)")]
    Delay(u32),
    #[error("pairing round {round} board {board}: {what}")]
    Pairing {
        round: u32,
        board: u32,
        what: String,
    },
}

/// `[tournament]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct TournamentConfig {
    /// Event name (PGN `Event`, LCC `name`).
    pub name: Option<String>,
    /// Place (PGN `Site`, LCC `location`).
    pub site: Option<String>,
    /// Two-letter country code (LCC `country`).
    pub country: Option<String>,
    pub website: Option<String>,
    /// PGN time control, e.g. `5400+30`, or `40/5400+30:1800+30` (checked at load:
    /// it decides the category and the penalties the arbiter alerts quote).
    pub time_control: Option<String>,
    /// Whether rapid/blitz games are adequately supervised (A.3/B.3, the default)
    /// or not (A.4/B.4: an illegal move stands unless claimed, A.4.2).
    pub regime: crate::timecontrol::Regime,
    /// Number of rounds (at least the current round).
    pub rounds: u32,
    /// The round the boards are playing now (games in the hub belong to it).
    pub current_round: u32,
    /// Date of the current round, `YYYY-MM-DD` (else the date of the games).
    pub date: Option<String>,
    /// Seconds public feeds lag behind the boards (0..=3600); arbiters are always live.
    pub delay_secs: u32,
    /// FIDE TRF file (Swiss-Manager export) to take pairings from.
    pub trf: Option<std::path::PathBuf>,
}

/// One player of a pairing.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Player {
    /// `Surname, Given name` as FIDE writes it.
    pub name: String,
    /// FIDE title: GM, IM, FM, CM, WGM, WIM, WFM, WCM.
    pub title: Option<String>,
    pub rating: Option<u32>,
    pub fide_id: Option<u64>,
    /// Three-letter federation code.
    pub federation: Option<String>,
}

/// `[[pairing]]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PairingConfig {
    /// Round; the current round when absent.
    #[serde(default)]
    pub round: Option<u32>,
    pub board: u32,
    pub white: Player,
    pub black: Player,
}

/// (round, board) → (white, black).
pub type Pairings = BTreeMap<(u32, u32), (Player, Player)>;

/// Event data and the pairings of every round known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tournament {
    pub config: TournamentConfig,
    /// (round, board) → (white, black).
    pub pairings: Pairings,
    /// Boards an arbiter marked inactive: left out of the round's feeds.
    pub inactive: std::collections::BTreeSet<u32>,
}

/// Titles FIDE awards; anything else in a title field is dropped rather than
/// published as a title.
const TITLES: [&str; 8] = ["GM", "IM", "FM", "CM", "WGM", "WIM", "WFM", "WCM"];

fn clean_title(t: &str) -> Option<String> {
    let t = t.trim().to_ascii_uppercase();
    // TRF writes titles as `g`, `m`, `f`, `c`, `wg`... in some exports.
    let t = match t.as_str() {
        "G" => "GM".to_string(),
        "M" => "IM".to_string(),
        "F" => "FM".to_string(),
        "C" => "CM".to_string(),
        "WG" => "WGM".to_string(),
        "WM" => "WIM".to_string(),
        "WF" => "WFM".to_string(),
        "WC" => "WCM".to_string(),
        _ => t,
    };
    TITLES.contains(&t.as_str()).then_some(t)
}

impl Tournament {
    /// The configured event and pairings. Pairings without a round belong to the current round.
    pub fn new(
        config: TournamentConfig,
        pairings: &[PairingConfig],
    ) -> Result<Tournament, TournamentError> {
        let mut t = Tournament {
            config,
            pairings: BTreeMap::new(),
            inactive: Default::default(),
        };
        if t.config.delay_secs > 3600 {
            return Err(TournamentError::Delay(t.config.delay_secs));
        }
        t.config.current_round = t.config.current_round.max(1);
        t.config.rounds = t.config.rounds.max(t.config.current_round);
        for p in pairings {
            let round = p.round.unwrap_or(t.config.current_round);
            let err = |what: &str| TournamentError::Pairing {
                round,
                board: p.board,
                what: what.into(),
            };
            if p.board == 0 || round == 0 {
                return Err(err("rounds and boards count from 1"));
            }
            if p.white.name.trim().is_empty() || p.black.name.trim().is_empty() {
                return Err(err("both players need a name"));
            }
            let mut white = p.white.clone();
            let mut black = p.black.clone();
            // The names go into PGN tags and feeds: the one name rule holds.
            for (side, player) in [("white", &mut white), ("black", &mut black)] {
                player.name = crate::names::check_name(&player.name, 100)
                    .map_err(|problem| err(&format!("{side}.name {problem}")))?;
            }
            white.title = white.title.as_deref().and_then(clean_title);
            black.title = black.title.as_deref().and_then(clean_title);
            if t.pairings
                .insert((round, p.board), (white, black))
                .is_some()
            {
                return Err(TournamentError::DuplicatePairing {
                    round,
                    board: p.board,
                });
            }
        }
        Ok(t)
    }

    /// [`Tournament::new`], then the pairings of the `trf` file when one is configured.
    pub fn load(
        config: TournamentConfig,
        pairings: &[PairingConfig],
    ) -> Result<Tournament, TournamentError> {
        let trf = config.trf.clone();
        let mut t = Tournament::new(config, pairings)?;
        if let Some(path) = trf {
            let bytes = std::fs::read(&path).map_err(|source| TournamentError::Io {
                path: path.clone(),
                source,
            })?;
            // Swiss-Manager writes Windows-1252 as often as UTF-8.
            t.add_trf(&crate::sim::games::decode_text(&bytes))?;
        }
        Ok(t)
    }

    /// Adds the pairings of a TRF file, for rounds and boards the configuration
    /// did not pair (explicit `[[pairing]]` tables win).
    pub fn add_trf(&mut self, trf: &str) -> Result<(), TournamentError> {
        let parsed = parse_trf(trf)?;
        for (key, pair) in parsed {
            self.pairings.entry(key).or_insert(pair);
            self.config.rounds = self.config.rounds.max(key.0);
        }
        Ok(())
    }

    /// White and Black on `board` in `round`.
    pub fn pairing(&self, round: u32, board: u32) -> Option<&(Player, Player)> {
        self.pairings.get(&(round, board))
    }

    /// Boards paired in `round`.
    pub fn boards(&self, round: u32) -> impl Iterator<Item = u32> + '_ {
        self.pairings
            .range((round, 0)..=(round, u32::MAX))
            .map(|((_, b), _)| *b)
    }
}

/// One `001` line.
#[derive(Debug)]
struct TrfPlayer {
    start_rank: u32,
    player: Player,
    /// Per round: (opponent start rank, colour char, result char).
    rounds: Vec<(Option<u32>, char, char)>,
}

/// Columns `from..=to`, 1-based as the TRF specification numbers them.
/// Columns count characters, not bytes: a name with `ø` read from UTF-8 (or
/// from Windows-1252, decoded) keeps the columns after it in place.
fn cols(line: &[char], from: usize, to: usize) -> String {
    line.iter()
        .skip(from - 1)
        .take(to + 1 - from)
        .collect::<String>()
        .trim()
        .to_string()
}

fn points(result: char) -> f32 {
    match result {
        '1' | '+' | 'W' | 'w' | 'F' | 'U' => 1.0,
        '=' | 'D' | 'd' | 'H' => 0.5,
        _ => 0.0,
    }
}

/// Pairings per round from the `001` lines of a FIDE TRF (TRF-16) file.
///
/// TRF does not store board numbers, so boards are numbered the way pairing
/// programs order them: by the higher score of the two players before the
/// round, then the lower score, then the better starting rank. Configure
/// `[[pairing]]` tables when the real board order differs.
pub fn parse_trf(trf: &str) -> Result<Pairings, TournamentError> {
    let mut players: BTreeMap<u32, TrfPlayer> = BTreeMap::new();
    for (i, line) in trf.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if !line.starts_with("001") {
            continue;
        }
        let line: Vec<char> = line.chars().collect();
        let line = line.as_slice();
        let lineno = i + 1;
        let err = |what: String| TournamentError::Trf { line: lineno, what };
        let start_rank: u32 = cols(line, 5, 8).parse().map_err(|_| {
            err(format!(
                "starting rank {:?} is not a number",
                cols(line, 5, 8)
            ))
        })?;
        let name = cols(line, 15, 47);
        if name.is_empty() {
            return Err(err("player name (columns 15-47) is empty".into()));
        }
        let name = crate::names::check_name(&name, 100)
            .map_err(|problem| err(format!("player name (columns 15-47) {problem}")))?;
        let rating = cols(line, 49, 52).parse().ok().filter(|&r| r > 0);
        let federation = Some(cols(line, 54, 56)).filter(|f| !f.is_empty());
        let fide_id = cols(line, 58, 68).parse().ok().filter(|&id| id > 0);
        let mut rounds = Vec::new();
        let mut c = 92;
        while line.len() >= c {
            let opp = cols(line, c, c + 3);
            let colour = line.get(c + 4).copied().unwrap_or(' ');
            let result = line.get(c + 6).copied().unwrap_or(' ');
            let opp = match opp.as_str() {
                "" | "0000" | "0" => None,
                o => Some(o.parse().map_err(|_| {
                    err(format!(
                        "round {} opponent {o:?} is not a number",
                        rounds.len() + 1
                    ))
                })?),
            };
            rounds.push((opp, colour, result));
            c += 10;
        }
        let player = Player {
            name,
            title: clean_title(&cols(line, 11, 13)),
            rating,
            fide_id,
            federation,
        };
        players.insert(
            start_rank,
            TrfPlayer {
                start_rank,
                player,
                rounds,
            },
        );
    }
    let max_round = players.values().map(|p| p.rounds.len()).max().unwrap_or(0);
    let mut out = BTreeMap::new();
    for r in 0..max_round {
        let score = |p: &TrfPlayer| -> f32 {
            p.rounds[..r.min(p.rounds.len())]
                .iter()
                .map(|x| points(x.2))
                .sum()
        };
        let mut games = Vec::new();
        for p in players.values() {
            let Some(&(Some(opp), colour, _)) = p.rounds.get(r) else {
                continue;
            };
            if !colour.eq_ignore_ascii_case(&'w') {
                continue;
            }
            let Some(o) = players.get(&opp) else {
                return Err(TournamentError::Trf {
                    line: 0,
                    what: format!(
                        "round {}: player {} meets unknown player {opp}",
                        r + 1,
                        p.start_rank
                    ),
                });
            };
            let (hi, lo) = {
                let (a, b) = (score(p), score(o));
                if a >= b {
                    (a, b)
                } else {
                    (b, a)
                }
            };
            games.push((hi, lo, p.start_rank.min(o.start_rank), p, o));
        }
        games.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then(a.2.cmp(&b.2))
        });
        for (i, (_, _, _, w, b)) in games.into_iter().enumerate() {
            out.insert(
                (r as u32 + 1, i as u32 + 1),
                (w.player.clone(), b.player.clone()),
            );
        }
    }
    Ok(out)
}
