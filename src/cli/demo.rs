//! `eboard-bridge demo`: virtual boards of every registered family on
//! pseudo-terminals playing real games into the real daemon.
//!
//! Nothing is short-circuited: each board is its family's virtual board on its own pty,
//! and the daemon (`daemon::run`, the same code as `eboard-bridge run`) opens the
//! ptys as serial ports, journals every byte, reconstructs the moves and fills the
//! hub that feeds are served from. The demo only watches the hub, prints what an
//! operator would want to see, and checks every verified move against the source
//! game. The games are public-domain games embedded in the binary, so the demo
//! needs no files on a fresh machine.
//!
//! Boards that report whole frames at a period (Certabo, Chessnut, occupancy
//! boards) see only the result of what happens between two frames; their
//! players think no faster than two frames a move on average, whatever
//! `--speed` says, so the demo shows them at a pace they are read at
//! (BENCHMARKS.md has what faster play costs).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::{broadcast, oneshot};

use crate::cli::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use crate::daemon::config::{BoardConfig, Config, Protocol};
use crate::daemon::hub::{ArbiterEvent, ArbiterNotice, Hub, PublicEvent};
use crate::daemon::service::start_http_with_commands;
use crate::events::GameEvent;
use crate::publish::{PairingConfig, Player};
use crate::sim::games::{load_pgn, Game};
use eboard_protocols::family::{PortMode, Reporting, VirtualSpec};
use eboard_protocols::hand::HandConfig;

/// The embedded games (public domain, from the GNU Chess opening book).
const DEMO_GAMES: &str = include_str!("../../assets/demo-games.pgn");

/// How the demo runs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Number of virtual boards.
    pub boards: usize,
    /// Only boards of this family; `None`: board `i` is of the `i`-th
    /// registered family, in turn.
    pub protocol: Option<String>,
    /// Thinking time is divided by this; hands move at human speed whatever it is.
    pub speed: f64,
    /// Seed of the hand model (each board adds its number).
    pub seed: u64,
    /// Stop after this long even if games are still running.
    pub max_duration: Option<Duration>,
    /// The daemon's data directory (journal, captures, PGN files). A fresh
    /// temporary directory when not given.
    pub data_dir: Option<PathBuf>,
    /// Where the feeds and the dashboard are served; when the port is taken, the
    /// demo takes a free one and says which.
    pub listen: std::net::SocketAddr,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            boards: 8,
            protocol: None,
            speed: 30.0,
            seed: 1,
            max_duration: None,
            data_dir: None,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 8080)),
        }
    }
}

/// One board of the demo: its emulator and what the daemon published for it.
struct DemoBoard {
    game: Game,
    emulator: EmulatorHandle,
    /// The source game's moves in UCI, to check every verified move against.
    expected: Vec<String>,
    /// Verified plies so far (retractions taken into account).
    verified: usize,
    /// Verified moves that differ from the source (must stay zero).
    mismatches: usize,
}

/// Entry point of `eboard-bridge demo`.
pub fn run_cli(opts: &DemoOptions) -> anyhow::Result<ExitCode> {
    if opts.boards == 0 {
        anyhow::bail!("--boards must be at least 1");
    }
    if let Some(name) = &opts.protocol {
        if eboard_protocols::family(name).is_none() {
            anyhow::bail!(
                "--protocol {name:?} is not a board family; write one of {}",
                eboard_protocols::family_names()
            );
        }
    }
    if !(opts.speed.is_finite() && opts.speed > 0.0) {
        anyhow::bail!(
            "--speed must be a positive number (e.g. 30 plays thirty times faster than humans think)"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let faithful = runtime.block_on(run(opts))?;
    Ok(if faithful {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A new folder of our own under `tmp` for a demo's data: made with
/// `mkdtemp` (an unpredictable name, created by this call, mode 0700), so a
/// folder another user prepared under a name we would pick (with an
/// `arbiter-token` of theirs in it) is never used.
pub fn fresh_data_dir(tmp: &std::path::Path) -> anyhow::Result<PathBuf> {
    let template = tmp.join("eboard-bridge-demo-XXXXXX");
    nix::unistd::mkdtemp(&template).with_context(|| {
        format!(
            "cannot create a data directory for the demo in {}; give one with --data-dir, \
             or set TMPDIR to a writable folder",
            tmp.display()
        )
    })
}

/// Runs the demo; returns whether every move the daemon published equals the
/// source game and every board was followed. Games cut short by `max_duration` or
/// Ctrl-C are not failures: what was published so far must still be right.
async fn run(opts: &DemoOptions) -> anyhow::Result<bool> {
    let games: Vec<Game> = load_pgn(DEMO_GAMES)
        .context("the embedded demo games do not parse")?
        .into_iter()
        .filter(|g| !g.moves.is_empty())
        .collect();
    anyhow::ensure!(!games.is_empty(), "the embedded demo games hold no moves");

    let data_dir = match &opts.data_dir {
        Some(dir) => {
            crate::files::prepare_data_dir(dir)?;
            dir.clone()
        }
        None => fresh_data_dir(&std::env::temp_dir())?,
    };

    let mut config = Config::default();
    config.storage.data_dir = data_dir.clone();
    // A demo shows this run only: no journal of an earlier demo is replayed, and
    // no real board plugged into this machine is picked up.
    config.storage.recover = false;
    config.discovery.enabled = false;
    config.tournament.name = Some("eboard-bridge demo".into());
    config.tournament.site = Some("virtual boards".into());
    config.tournament.time_control = Some("5400+30".into());

    let families: Vec<&'static eboard_protocols::family::Family> = match &opts.protocol {
        Some(name) => eboard_protocols::family(name).into_iter().collect(),
        None => eboard_protocols::families().to_vec(),
    };
    let mut boards: BTreeMap<u32, DemoBoard> = BTreeMap::new();
    for i in 0..opts.boards {
        let number = i as u32 + 1;
        let family = families[i % families.len()];
        let game = games[i % games.len()].clone();
        // Vary the set-up as a real hall does: every fourth board is turned round,
        // every third has White's clock on the right. The tracker must find both.
        let speed = match (family.capabilities)(PortMode::Single).reporting {
            Reporting::Frames { period_ms } => opts
                .speed
                .min(HandConfig::default().think_ms as f64 / (2.0 * period_ms as f64)),
            Reporting::EveryChange { .. } => opts.speed,
        };
        let emulator_opts = EmulateOptions {
            family,
            seed: opts.seed.wrapping_add(i as u64),
            speed,
            rotated: i % 4 == 3,
            clock_right: i % 3 == 2,
            start_after_host: Some(1_500),
            ..EmulateOptions::default()
        };
        let emulator = serve_pty(&game, &emulator_opts)
            .with_context(|| format!("cannot start virtual board {number}"))?;
        let capabilities = (family.capabilities)(PortMode::Single);
        println!(
            "board {number}: virtual {} board on {} ({} - {}{}{}{})",
            family.title,
            emulator.path().display(),
            game.header("White").unwrap_or("?"),
            game.header("Black").unwrap_or("?"),
            if emulator_opts.rotated {
                ", board turned round"
            } else {
                ""
            },
            if emulator_opts.clock_right
                && !matches!(
                    capabilities.clock,
                    eboard_protocols::family::ClockLink::None
                )
            {
                ", White's clock on the right"
            } else {
                ""
            },
            if speed < opts.speed {
                format!(", players think {speed:.0}× faster: the board reports frames")
            } else {
                String::new()
            },
        );
        let player = |tag: &str| Player {
            name: game.header(tag).unwrap_or("?").to_owned(),
            ..Player::default()
        };
        config.pairings.push(PairingConfig {
            round: None,
            board: number,
            white: player("White"),
            black: player("Black"),
        });
        // What the board keeps with it (a Certabo set's calibration), as an
        // earlier session would have left it: the demo's boards start
        // playing too soon after the daemon connects for a calibration from
        // the start position, and some of them stand turned round.
        let kept = (family.kept_settings)(&VirtualSpec {
            seed: emulator_opts.seed,
            ..emulator_opts.board.clone()
        });
        if !kept.is_empty() {
            keep_settings(&data_dir, emulator.path(), &kept)?;
        }
        config.boards.push(BoardConfig {
            port: emulator.path().to_owned(),
            protocol: Protocol::single(family),
            bus: false,
            number: Some(number),
            serial: None,
            leds: None,
        });
        boards.insert(
            number,
            DemoBoard {
                expected: game.uci_moves(),
                game,
                emulator,
                verified: 0,
                mismatches: 0,
            },
        );
    }
    println!(
        "data directory (journal, captures, PGN): {}",
        data_dir.display()
    );

    let hub = Arc::new(Hub::new());
    // The dashboard's operator actions reach the demo's daemon as they would
    // the real one's.
    let (commands_tx, commands_rx) = tokio::sync::mpsc::channel(64);
    let http = match start_http_with_commands(
        &config,
        opts.listen,
        hub.clone(),
        Some(commands_tx.clone()),
    )
    .await
    {
        Ok(http) => http,
        Err(e) if opts.listen.port() != 0 => {
            println!("({e:#}; using a free port instead)");
            let mut any = opts.listen;
            any.set_port(0);
            start_http_with_commands(&config, any, hub.clone(), Some(commands_tx)).await?
        }
        Err(e) => return Err(e),
    };
    let base = format!("http://{}", http.addr);
    println!();
    println!("public feeds (what broadcasts read):");
    println!("  {base}/games.pgn            every game of the round, Lichess-broadcast ready");
    println!("  {base}/tournament.json      LiveChess-Cloud style JSON (also /round-1/index.json, /round-1/game-1.json)");
    println!(
        "  {base}/events               live event stream (Server-Sent Events; WebSocket at /ws)"
    );
    if let Some(addr) = http.ebapi {
        println!(
            "  ws://{addr}/api/v1.0     LiveChess-compatible API (lichess.org/dgt, chess.com; REST at http://{addr}/api/v1.0/eboards)"
        );
    }
    println!("arbiter dashboard (private, Article 12.6):");
    println!("  {base}/arbiter/?token={}", http.token);
    println!();
    let mut public = hub.subscribe_public();
    let mut arbiter = hub.subscribe_arbiter();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let daemon = tokio::spawn(crate::daemon::run_with_commands(
        config,
        hub.clone(),
        Some(commands_rx),
        async {
            let _ = stop_rx.await;
        },
        || {},
    ));

    let epoch = Instant::now();
    let deadline = opts.max_duration.map(|d| epoch + d);
    let mut check = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            event = public.recv() => match event {
                Ok(e) => show_public(&mut boards, &e),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    println!("(the demo's display fell {n} events behind; the daemon lost nothing)");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            event = arbiter.recv() => {
                if let Ok(e) = event {
                    show_arbiter(&e);
                }
            }
            _ = check.tick() => {}
            _ = tokio::signal::ctrl_c() => {
                println!("interrupted: printing the games as far as they went");
                break;
            }
        }
        if daemon.is_finished() {
            break;
        }
        let done = boards.values().all(|b| {
            b.verified >= b.game.moves.len() || (b.emulator.game_over() && b.emulator.is_finished())
        });
        if done || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }

    let _ = stop_tx.send(());
    match daemon.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("the daemon stopped with an error: {e}"),
        Err(e) => eprintln!("the daemon task failed: {e}"),
    }

    println!();
    let mut faithful = true;
    for (number, board) in boards {
        if board.mismatches > 0 || board.verified == 0 {
            faithful = false;
            eprintln!(
                "board {number}: {} verified moves, {} of them different from the source game",
                board.verified, board.mismatches
            );
        }
        for record in hub.games(number) {
            println!("{}", record.to_pgn());
        }
        if let Err(e) = board.emulator.stop() {
            eprintln!("board {number}: the virtual board ended badly: {e}");
        }
    }
    Ok(faithful)
}

/// Leaves `settings` as what the board on `port` keeps (see
/// `docs/journal.md`, *Board settings*).
fn keep_settings(
    data_dir: &std::path::Path,
    port: &std::path::Path,
    settings: &eboard_protocols::family::Settings,
) -> anyhow::Result<()> {
    let journal = crate::daemon::journal::Journal::open(data_dir)?;
    journal.save_board_settings(&crate::daemon::journal::port_key(port), settings)?;
    Ok(())
}

/// Prints a public event the way an operator watching the demo wants it, and
/// checks a verified move against the source game.
fn show_public(boards: &mut BTreeMap<u32, DemoBoard>, e: &PublicEvent) {
    let n = e.board;
    let t = e.t_ms as f64 / 1000.0;
    let Some(board) = boards.get_mut(&n) else {
        return;
    };
    match &e.event {
        GameEvent::GameStart { fen, rotated, .. } => {
            println!(
                "[{t:7.1}s] board {n}: game starts from {fen}{}",
                if *rotated {
                    " (board turned round)"
                } else {
                    ""
                }
            );
        }
        GameEvent::Move(m) if m.verified => {
            board.verified = m.ply as usize;
            let expected = board.expected.get(m.ply as usize - 1);
            if expected != Some(&m.uci) {
                board.mismatches += 1;
                println!(
                    "[{t:7.1}s] board {n}: MISMATCH at ply {}: read {} but the game has {}",
                    m.ply,
                    m.uci,
                    expected.map_or("no move", String::as_str)
                );
            }
            let number = m.ply.div_ceil(2);
            let dots = if m.ply % 2 == 1 { "." } else { "..." };
            let clock = m
                .clock_ms
                .map(|c| format!("  [{}]", crate::pgn::hms(c)))
                .unwrap_or_default();
            println!("[{t:7.1}s] board {n}: {number}{dots} {}{clock}", m.san);
        }
        GameEvent::MoveClock { ply, clock_ms, .. } => {
            println!(
                "[{t:7.1}s] board {n}: ply {ply} pressed late: [{}]",
                crate::pgn::hms(*clock_ms)
            );
        }
        GameEvent::Move(_) | GameEvent::Clock { .. } => {}
        GameEvent::Retraction { from_ply, plies } => {
            board.verified = (*from_ply as usize).saturating_sub(1);
            println!(
                "[{t:7.1}s] board {n}: moves from ply {from_ply} withdrawn ({} plies)",
                plies.len()
            );
        }
        GameEvent::Result { result, reason } => {
            println!(
                "[{t:7.1}s] board {n}: result {} ({reason})",
                result.as_pgn()
            );
        }
    }
}

/// Prints an arbiter notice (in a real hall only the arbiters' screen shows these).
fn show_arbiter(e: &ArbiterEvent) {
    let t = e.t_ms as f64 / 1000.0;
    let n = e.board;
    match &e.notice {
        ArbiterNotice::Alert(a) => println!(
            "[{t:7.1}s] board {n}: ALERT (arbiters only) Article {} {:?}: {}",
            a.article, a.severity, a.message
        ),
        ArbiterNotice::BoardOffline { port, reason } => {
            println!("[{t:7.1}s] board {n}: OFFLINE ({port}): {reason}")
        }
        ArbiterNotice::BoardOnline { port } => println!("[{t:7.1}s] board {n}: online ({port})"),
        ArbiterNotice::AlertResolved(r) => {
            println!(
                "[{t:7.1}s] board {n}: alert {} resolved: {}",
                r.id, r.reason
            )
        }
        ArbiterNotice::Operator { action, detail } => {
            println!("[{t:7.1}s] board {n}: arbiter action {action}: {detail}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fresh_data_dir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_demo_never_takes_over_a_folder_someone_prepared() {
        let tmp = tempfile::tempdir().unwrap();
        // What another user could prepare under the name the demo used to pick.
        let planted = tmp
            .path()
            .join(format!("eboard-bridge-demo-{}", std::process::id()));
        std::fs::create_dir(&planted).unwrap();
        std::fs::write(planted.join("arbiter-token"), "planted-token-0123456789").unwrap();
        let a = fresh_data_dir(tmp.path()).unwrap();
        let b = fresh_data_dir(tmp.path()).unwrap();
        assert_ne!(a, planted);
        assert_ne!(a, b, "every demo gets a folder of its own");
        for dir in [&a, &b] {
            assert!(dir.starts_with(tmp.path()));
            assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0, "new and empty");
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }
}
