//! Every registered board family through the real daemon, on
//! pseudo-terminals: each family's virtual board read by `eboard-bridge run`
//! (eight boards of mixed families at once, LEDs lit on the boards that have
//! them), every family unplugged and plugged back mid-game, boards found by
//! their USB ids (a port on an id other devices share is listened to first),
//! and a Chessnut read through the hidraw transport.
//!
//! Chessnut over hidraw: this machine's kernel has no uhid (no `/dev/uhid`,
//! no `uhid` in `/proc/misc`), so no real hidraw node can be made here. The
//! Chessnut board is served on a pseudo-terminal instead, with the same
//! report framing (65-byte input reports, the message then zero padding;
//! one command per output report), and the daemon opens it with the hidraw
//! transport (a plain non-blocking file, no line settings), as it opens
//! `/dev/hidrawN`. What the stand-in cannot show is the kernel's one report
//! per read; the codec does not rely on it (`docs/boards.md`).
//!
//! Occupancy-only boards are read by the tracker's picture matcher, which
//! does not follow every game at one frame a second (BENCHMARKS.md): for
//! them these tests require what the daemon guarantees, a published line
//! that is the game's own (never a wrong move), and a few plies of it.

mod child_guard;
mod daemon_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use child_guard::ChildGuard;
use daemon_common::*;
use eboard_bridge::cli::emulate::{serve_pty, EmulateOptions, EmulatorHandle};
use eboard_bridge::daemon::config::{BoardConfig, Protocol};
use eboard_bridge::daemon::journal::{port_key, Journal};
use eboard_bridge::sim::games::{load_pgn, Game};
use eboard_protocols::family::{Family, PortMode, Sensing, VirtualSpec};
use shakmaty::{Bitboard, Square};

fn identity(f: &Family) -> bool {
    (f.capabilities)(PortMode::Single).sensing == Sensing::Identity
}

/// A board of `family` on a new pty linked at `link`, playing `game`.
/// Players think a tenth of real time: frame-reporting boards see one move
/// at a time, as at a real tournament pace.
fn board(
    family: &'static Family,
    game: &Game,
    seed: u64,
    link: &Path,
    rotated: bool,
) -> EmulatorHandle {
    let opts = EmulateOptions {
        family,
        seed,
        speed: 10.0,
        hand_speed: 1.0,
        rotated,
        // The players sit down once a Certabo board has been calibrated from
        // the start position (three frames a second apart).
        start_after_host: Some(4_500),
        link: Some(link.to_owned()),
        ..EmulateOptions::default()
    };
    serve_pty(game, &opts).unwrap()
}

/// Leaves what the board on `port` keeps with it (a Certabo calibration), as
/// an earlier session would have.
fn keep(data: &Path, port: &Path, family: &Family, seed: u64) {
    let kept = (family.kept_settings)(&VirtualSpec {
        seed,
        ..VirtualSpec::default()
    });
    if !kept.is_empty() {
        let journal = Journal::open(data).unwrap();
        journal.save_board_settings(&port_key(port), &kept).unwrap();
    }
}

/// The verified moves in a board's PGN file, as UCI (empty if no file yet).
fn pgn_ucis(data: &Path, board: u32) -> Vec<String> {
    let path = data.join(format!("games/board-{board}.pgn"));
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    load_pgn(&text)
        .map(|g| g.last().map(Game::uci_moves).unwrap_or_default())
        .unwrap_or_default()
}

/// The board-frame squares of `uci`'s from and to squares.
fn squares(uci: &str, rotated: bool) -> Bitboard {
    [&uci[0..2], &uci[2..4]]
        .into_iter()
        .map(|s| s.parse::<Square>().unwrap())
        .map(|s| if rotated { s.rotate_180() } else { s })
        .collect()
}

#[test]
fn eight_boards_of_mixed_families_are_read_by_the_real_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let families = eboard_protocols::families();
    let games = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=32, 8);
    let mut boards = Vec::new();
    let mut text = format!(
        "[storage]\ndata_dir = {data:?}\n[discovery]\nenabled = false\n\
         [device]\nprobe_ms = 1000\nsilence_timeout_ms = 3000\n"
    );
    for (i, (game, want)) in games.iter().enumerate() {
        let family = families[i % families.len()];
        let link = dir.path().join(format!("board-{}", i + 1));
        // Boards turned round: one that finds out itself (Chessnut), and a
        // Certabo whose calibration, kept from an earlier session, lets it.
        let rotated = i == 3 || (family.name == "certabo" && i >= families.len());
        let seed = 40 + i as u64;
        if rotated {
            keep(&data, &link, family, seed);
        }
        boards.push((
            family,
            board(family, game, seed, &link, rotated),
            want.clone(),
            rotated,
        ));
        text.push_str(&format!(
            "[[board]]\nport = {link:?}\nprotocol = {:?}\nnumber = {}\n",
            family.name,
            i + 1
        ));
    }
    let config = dir.path().join("eboard-bridge.toml");
    std::fs::write(&config, text).unwrap();
    let log = dir.path().join("daemon.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let _daemon = ChildGuard::new(
        Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .env("EBOARD_BRIDGE_HTTP_LISTEN", "127.0.0.1:0")
            .env("RUST_LOG", "info")
            .arg("run")
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let done = boards.iter().enumerate().all(|(i, (f, e, want, _))| {
            let got = pgn_ucis(&data, i as u32 + 1);
            if identity(f) {
                got == *want
            } else {
                e.game_over() && got.len() >= 2
            }
        });
        if done {
            break;
        }
        if Instant::now() > deadline {
            let state: Vec<String> = boards
                .iter()
                .enumerate()
                .map(|(i, (f, _, want, _))| {
                    format!(
                        "board {} ({}): {:?} of {want:?}",
                        i + 1,
                        f.name,
                        pgn_ucis(&data, i as u32 + 1)
                    )
                })
                .collect();
            panic!(
                "timed out:\n{}\nlog:\n{}",
                state.join("\n"),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for (i, (family, emulator, want, rotated)) in boards.iter().enumerate() {
        let got = pgn_ucis(&data, i as u32 + 1);
        assert!(
            want.starts_with(&got),
            "board {} ({}): a published move differs from the game: {got:?} vs {want:?}",
            i + 1,
            family.name
        );
        // Boards with LEDs show the last verified move (lights are on
        // outside tournament mode), in their own frame.
        if (family.capabilities)(PortMode::Single).leds && identity(family) {
            let last = squares(want.last().unwrap(), *rotated);
            let deadline = Instant::now() + Duration::from_secs(5);
            while !emulator.leds(0).is_some_and(|l| l.is_superset(last)) {
                assert!(
                    Instant::now() < deadline,
                    "board {} ({}): LEDs {:?}, want {last:?}",
                    i + 1,
                    family.name,
                    emulator.leds(0)
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    // Each capture names its family, and replays to the daemon's games.
    for (i, (family, _, _, _)) in boards.iter().enumerate() {
        let port = dir.path().join(format!("board-{}", i + 1));
        let captures = data.join("journal/captures").join(port_key(&port));
        let file = std::fs::read_dir(&captures)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let header = std::fs::read_to_string(&file).unwrap();
        let first = header.lines().next().unwrap();
        assert!(
            first.contains(&format!("\"protocol\":\"{}\"", family.name)),
            "{first}"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .arg("replay")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let replayed = load_pgn(&String::from_utf8_lossy(&out.stdout)).unwrap();
        let live = pgn_ucis(&data, i as u32 + 1);
        let moves = replayed.last().map(Game::uci_moves).unwrap_or_default();
        assert!(
            moves.starts_with(&live),
            "board {} ({}): replay {moves:?}, live {live:?}",
            i + 1,
            family.name
        );
    }
}

/// The EBAPI's e-boards by their source, the device behind the port.
async fn eboards(
    addr: std::net::SocketAddr,
) -> std::collections::HashMap<String, serde_json::Value> {
    let list: serde_json::Value = reqwest::get(format!("http://{addr}/api/v1.0/eboards"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["source"].as_str().unwrap_or_default().to_owned(),
                b.clone(),
            )
        })
        .collect()
}

/// What the EBAPI calls the device `link` leads to (`pts/3`).
fn source(link: &Path) -> String {
    let dev = std::fs::canonicalize(link).unwrap();
    dev.strip_prefix("/dev").unwrap().display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_unplugged_and_replugged_continues_without_loss_or_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let families = eboard_protocols::families();
    let games = short_games(
        "games/gnuchess-book-1.02-shared.pgn",
        16..=24,
        families.len(),
    );
    let links: Vec<PathBuf> = families
        .iter()
        .map(|f| dir.path().join(format!("{}-board", f.name)))
        .collect();
    let mut first = Vec::new();
    let mut configs = Vec::new();
    for (i, f) in families.iter().enumerate() {
        first.push(board(f, &games[i].0, 60 + i as u64, &links[i], false));
        configs.push(BoardConfig {
            port: links[i].clone(),
            protocol: Protocol::single(f),
            bus: false,
            number: Some(i as u32 + 1),
            serial: None,
            leds: None,
        });
    }
    let mut c = config(&data, configs);
    c.ebapi.listen = "127.0.0.1:0".parse().unwrap();
    let d = start(c.clone());
    let hub = d.hub.clone();
    // The EBAPI lists every board, whatever its family, from what the
    // session learned of it.
    let http =
        eboard_bridge::daemon::service::start_http(&c, "127.0.0.1:0".parse().unwrap(), hub.clone())
            .await
            .unwrap();
    let ebapi = http.ebapi.expect("the EBAPI listens");
    let mut public = hub.subscribe_public();
    let mut verified = Vec::new();
    wait_for(
        "three verified moves on every board",
        Duration::from_secs(90),
        || (1..=families.len() as u32).all(|n| hub.verified_plies(n) >= 3),
    )
    .await;
    let listed = eboards(ebapi).await;
    for (i, f) in families.iter().enumerate() {
        let n = i as u32 + 1;
        let b = &listed[&source(&links[i])];
        assert_eq!(b["state"], "ACTIVE", "{}: {b}", f.name);
        // DGT boards say their serial number; the others send none and are
        // listed under the board's number.
        if f.name == "dgt" {
            assert_ne!(b["serialnr"], format!("board-{n}"), "{b}");
        } else {
            assert_eq!(b["serialnr"], format!("board-{n}"), "{b}");
        }
    }

    // Unplug every board: its pty disappears.
    for e in first {
        e.stop().unwrap();
    }
    wait_for(
        "every board reported offline",
        Duration::from_secs(15),
        || (1..=families.len() as u32).all(|n| !hub.public_board(n).unwrap().online),
    )
    .await;
    // A move made just before the unplug is still pending then, and its hold
    // may verify it while the board is away. The board plugged back stands
    // where the record stands once the public stream has carried no verified
    // move for 10 s (the longest hold is 8 s of a still picture); standing a
    // ply short of it would be a takeback, retracted in the open, not the
    // plain replug this test is about.
    let mut quiet_until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(quiet_until, public.recv()).await {
            Ok(Ok(e)) => {
                if let eboard_bridge::events::GameEvent::Move(m) = &e.event {
                    if m.verified {
                        verified.push((e.board, m.ply, m.uci.clone()));
                        quiet_until = tokio::time::Instant::now() + Duration::from_secs(10);
                    }
                }
            }
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(n))) => {
                panic!("the test fell {n} events behind the hub")
            }
            Ok(Err(_)) | Err(_) => break,
        }
    }
    let done: Vec<usize> = (1..=families.len() as u32)
        .map(|n| hub.verified_plies(n))
        .collect();
    let listed = eboards(ebapi).await;
    assert_eq!(listed.len(), families.len(), "{listed:?}");
    assert!(
        listed.values().all(|b| b["state"] == "NOTRESPONDING"),
        "every board, whatever its family, is listed as not responding: {listed:?}"
    );

    // Plug back: a board at the same path, standing where its game stood.
    let mut second = Vec::new();
    for (i, f) in families.iter().enumerate() {
        let rest = resumed(&games[i].0, done[i]);
        // The same board (the same set of pieces: a Certabo's ids are its
        // own), plugged back.
        second.push(board(f, &rest, 60 + i as u64, &links[i], false));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        drain_verified(&mut public, &mut verified);
        let finished = families.iter().enumerate().all(|(i, f)| {
            let got = ucis(&hub, i as u32 + 1);
            if identity(f) {
                got == games[i].1
            } else {
                second[i].game_over()
            }
        });
        if finished {
            break;
        }
        if Instant::now() > deadline {
            for (i, f) in families.iter().enumerate() {
                eprintln!(
                    "{}: {:?} of {:?}",
                    f.name,
                    ucis(&hub, i as u32 + 1),
                    games[i].1
                );
            }
            panic!("timed out after the replug");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drain_verified(&mut public, &mut verified);
    for (i, f) in families.iter().enumerate() {
        let n = i as u32 + 1;
        assert!(hub.public_board(n).unwrap().online, "{} is back", f.name);
        assert_eq!(
            eboards(ebapi).await[&source(&links[i])]["state"],
            "ACTIVE",
            "{} is back, on its new device",
            f.name
        );
        if identity(f) {
            assert_each_ply_once(&verified, n, &games[i].1);
        } else {
            // A reading the picture matcher withdraws (in the open, with a
            // retraction) may be published again: what stands is the game's.
            let got = ucis(&hub, n);
            assert!(games[i].1.starts_with(&got), "{}: {got:?}", f.name);
        }
    }
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_found_by_usb_ids_are_followed_after_a_listening_probe() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let by_id = dir.path().join("by-id");
    let links = dir.path().join("chessboard");
    std::fs::create_dir_all(&by_id).unwrap();
    std::fs::create_dir_all(&links).unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=20, 1).remove(0);
    let certabo = eboard_protocols::family("certabo").unwrap();
    let occupancy = eboard_protocols::family("occupancy").unwrap();
    let chessnut = eboard_protocols::family("chessnut").unwrap();
    // The emulators' own links are elsewhere; the udev rules' names point
    // at their ptys.
    let boards = [
        (certabo, "usb-10c4-ea60-ttyUSB0"),
        (occupancy, "usb-10c4-ea60-ttyUSB1"),
        (chessnut, "usb-2d80-8001-hidraw0"),
    ];
    let mut emulators = Vec::new();
    for (i, (f, name)) in boards.iter().enumerate() {
        let e = board(
            f,
            &game,
            80 + i as u64,
            &dir.path().join(format!("pty-{i}")),
            false,
        );
        std::os::unix::fs::symlink(e.path(), links.join(name)).unwrap();
        emulators.push(e);
    }
    // Another CP2102 gadget: it sends something, but no board's lines.
    let (other, master, _slave) = eboard_bridge::daemon::device::raw_pty().unwrap();
    std::os::unix::fs::symlink(&other, links.join("usb-10c4-ea60-ttyUSB2")).unwrap();
    let gadget = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        for _ in 0..40 {
            if std::io::Write::write_all(&mut f, b"T=21.5C\r\n").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        f
    });
    let mut c = config(&data, Vec::new());
    c.discovery.enabled = true;
    c.discovery.dir = by_id;
    c.discovery.links_dir = links.clone();
    c.discovery.rescan_ms = 200;
    let d = start(c);
    let hub = d.hub.clone();
    wait_for("three boards found", Duration::from_secs(30), || {
        hub.arbiter_snapshot().len() == 3
    })
    .await;
    let mut families: Vec<String> = hub
        .arbiter_snapshot()
        .iter()
        .filter_map(|b| b.family.clone())
        .collect();
    families.sort();
    let mut expected: Vec<String> = [certabo, chessnut, occupancy]
        .iter()
        .map(|f| f.title.to_string())
        .collect();
    expected.sort();
    assert_eq!(
        families, expected,
        "each by its family; the gadget is left alone"
    );
    wait_for(
        "the identity boards' games",
        Duration::from_secs(120),
        || {
            hub.arbiter_snapshot()
                .iter()
                .filter(|b| b.family.as_deref() != Some(occupancy.title))
                .all(|b| ucis(&hub, b.public.number) == want)
        },
    )
    .await;
    assert_eq!(
        hub.arbiter_snapshot().len(),
        3,
        "the gadget was never followed"
    );
    d.shutdown().await;
    drop(gadget.join());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chessnut_is_read_through_the_hidraw_transport_one_report_at_a_time() {
    use eboard_bridge::daemon::device::{run_link, LinkEvent};
    use eboard_bridge::session::capture::Direction;
    use eboard_protocols::chessnut::wire::{REALTIME, REPORT_LEN};
    use eboard_protocols::family::DriverSetup;

    let dir = tempfile::tempdir().unwrap();
    let chessnut = eboard_protocols::family("chessnut").unwrap();
    let (game, _) = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=20, 1).remove(0);
    let link = dir.path().join("hidraw-stand-in");
    let _board = board(chessnut, &game, 90, &link, false);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (_commands, mut commands_rx) = tokio::sync::mpsc::channel(4);
    let link_task = tokio::spawn(async move {
        run_link(
            &link,
            chessnut,
            &DriverSetup::default(),
            Instant::now(),
            tx,
            &mut commands_rx,
        )
        .await
    });
    let mut board_bytes = Vec::new();
    let mut host = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while board_bytes.len() < 10 * REPORT_LEN && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(2), rx.recv()).await {
            Ok(Some(LinkEvent::Chunk(c))) if c.dir == Direction::In => board_bytes.extend(c.bytes),
            Ok(Some(LinkEvent::Chunk(c))) => host.push(c.bytes),
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    link_task.abort();
    assert_eq!(
        host[0],
        REALTIME.to_vec(),
        "real-time mode first: {host:02x?}"
    );
    // What was read is whole reports, one after the other: each 65 bytes,
    // a message then zero padding.
    let whole = board_bytes.len() / REPORT_LEN * REPORT_LEN;
    assert!(whole >= 5 * REPORT_LEN, "{} bytes read", board_bytes.len());
    let mut positions = 0;
    for report in board_bytes[..whole].chunks(REPORT_LEN) {
        let len = usize::from(report[1]);
        assert!(
            report[2 + len..].iter().all(|&b| b == 0),
            "zero padding after the message: {report:02x?}"
        );
        positions += usize::from(report[..2] == [0x01, 0x3d]);
    }
    assert!(positions >= 4, "positions every 200 ms: {positions}");
}

#[test]
fn the_udev_rules_name_every_family_found_by_usb_ids() {
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/60-eboard-bridge.rules"),
    )
    .unwrap();
    for f in eboard_protocols::families() {
        for m in f.usb {
            let vendor = format!("ATTRS{{idVendor}}==\"{:04x}\"", m.vendor);
            assert!(rules.contains(&vendor), "{}: {vendor} in the rules", f.name);
            if let Some(p) = m.product {
                let product = format!("ATTRS{{idProduct}}==\"{p:04x}\"");
                assert!(rules.contains(&product), "{}: {product}", f.name);
                let link = format!("chessboard/usb-{:04x}-{p:04x}-%k", m.vendor);
                assert!(rules.contains(&link), "{}: {link}", f.name);
            } else {
                let link = format!("chessboard/usb-{:04x}-$attr{{idProduct}}-%k", m.vendor);
                assert!(rules.contains(&link), "{}: {link}", f.name);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leds_show_the_last_move_then_displaced_pieces_until_they_are_put_back() {
    use eboard_bridge::cli::emulate::serve_scripts_pty;
    use eboard_protocols::hand::{self, HandConfig, PhysicalAction, PhysicalBoard, TimedAction};
    use shakmaty::Position;

    let dir = tempfile::tempdir().unwrap();
    let chessnut = eboard_protocols::family("chessnut").unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=20, 1).remove(0);
    let hands = HandConfig {
        seed: 5,
        speed: 0.1,
        start_ms: 4_500,
        ..HandConfig::default()
    };
    let mut script = hand::play(&game.start, &game.moves, &hands).actions;
    // After the game a piece of the side not to move is knocked onto an
    // empty square (no move explains it), left there, then put back.
    let mut end = game.start.clone();
    for m in &game.moves {
        end.play_unchecked(*m);
    }
    let idle = !end.turn();
    let (from, piece) = end
        .board()
        .clone()
        .into_iter()
        .find(|(sq, p)| {
            p.color == idle
                && p.role != shakmaty::Role::King
                && sq.rank() != shakmaty::Rank::First
                && sq.rank() != shakmaty::Rank::Eighth
        })
        .or_else(|| {
            end.board()
                .clone()
                .into_iter()
                .find(|(_, p)| p.color == idle && p.role != shakmaty::Role::King)
        })
        .unwrap();
    let to = Square::ALL
        .into_iter()
        .find(|&s| end.board().piece_at(s).is_none() && s.distance(from) >= 3)
        .unwrap();
    let t = script.last().unwrap().t_ms + 4_000;
    for (dt, action) in [
        (
            0,
            PhysicalAction::Lift {
                square: from,
                piece,
            },
        ),
        (300, PhysicalAction::Place { square: to, piece }),
        (12_000, PhysicalAction::Lift { square: to, piece }),
        (
            12_300,
            PhysicalAction::Place {
                square: from,
                piece,
            },
        ),
    ] {
        script.push(TimedAction {
            t_ms: t + dt,
            action,
        });
    }
    let link = dir.path().join("chessnut");
    let opts = EmulateOptions {
        family: chessnut,
        seed: 5,
        start_after_host: Some(0),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let emulator = serve_scripts_pty(
        vec![(PhysicalBoard::from_board(game.start.board(), false), script)],
        &opts,
    )
    .unwrap();
    let mut board = BoardConfig {
        port: link,
        protocol: Protocol::single(chessnut),
        bus: false,
        number: Some(1),
        serial: None,
        leds: None,
    };
    // Tournament mode turns lights off by default; this board says on.
    let mut c = config(&dir.path().join("data"), Vec::new());
    c.tournament.name = Some("Open".into());
    board.leds = Some(true);
    c.boards = vec![board];
    let d = start(c);
    let hub = d.hub.clone();
    let last = squares(want.last().unwrap(), false);
    wait_for(
        "the game, and its last move lit",
        Duration::from_secs(120),
        || ucis(&hub, 1) == want && emulator.leds(0) == Some(last),
    )
    .await;
    let displaced = Bitboard::from(from) | Bitboard::from(to);
    wait_for("the displaced squares lit", Duration::from_secs(20), || {
        emulator.leds(0) == Some(displaced)
    })
    .await;
    wait_for(
        "the last move lit again once they are back",
        Duration::from_secs(20),
        || emulator.leds(0) == Some(last),
    )
    .await;
    assert_eq!(ucis(&hub, 1), want, "nothing published for the knock");
    d.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lights_stay_off_in_tournament_mode() {
    let dir = tempfile::tempdir().unwrap();
    let chessnut = eboard_protocols::family("chessnut").unwrap();
    let (game, want) = short_games("games/gnuchess-book-1.02-shared.pgn", 14..=20, 1).remove(0);
    let link = dir.path().join("chessnut");
    let emulator = board(chessnut, &game, 7, &link, false);
    let mut c = config(
        &dir.path().join("data"),
        vec![BoardConfig {
            port: link,
            protocol: Protocol::single(chessnut),
            bus: false,
            number: Some(1),
            serial: None,
            leds: None,
        }],
    );
    c.tournament.name = Some("Open".into());
    let d = start(c);
    let hub = d.hub.clone();
    wait_for("the game", Duration::from_secs(90), || {
        ucis(&hub, 1) == want
    })
    .await;
    assert_eq!(
        emulator.leds(0),
        Some(Bitboard::EMPTY),
        "only the start-up's all-off"
    );
    d.shutdown().await;
}
