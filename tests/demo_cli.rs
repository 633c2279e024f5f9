//! The README's first command, run for real: virtual boards on pseudo-terminals
//! followed by the daemon. The demo checks every verified move against the source
//! game itself and exits non-zero on any difference; this test also checks what an
//! operator sees and that the daemon's journal replays to the same games.

use std::process::Command;

#[test]
fn demo_reads_back_every_board_faithfully() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
        .args([
            "demo",
            "--boards",
            "3",
            "--speed",
            "1000",
            "--max-seconds",
            "25",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
    for board in 1..=3 {
        // Hands move at human speed (a second or two per move), so 25 s give each
        // board well over five verified moves.
        let moves = stdout
            .lines()
            .filter(|l| {
                l.contains(&format!("board {board}: ")) && l.contains("[") && l.contains(". ")
            })
            .count();
        assert!(
            moves >= 5,
            "board {board}: only {moves} moves read\n{stdout}"
        );
        assert!(
            stdout.contains(&format!("[Board \"{board}\"]")),
            "board {board}'s game is printed as PGN\n{stdout}"
        );
        // The daemon keeps each board's games as PGN in its data directory.
        let pgn = std::fs::read_to_string(dir.path().join(format!("games/board-{board}.pgn")))
            .expect("the daemon wrote the board's PGN file");
        assert!(
            pgn.contains("1. "),
            "board {board}'s PGN file has moves: {pgn}"
        );
    }
    // Every port's traffic was journaled as a capture, and replays to games.
    let captures: Vec<_> = std::fs::read_dir(dir.path().join("journal/captures"))
        .expect("the journal has a captures folder")
        .flat_map(|port| std::fs::read_dir(port.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(captures.len(), 3, "one capture per port: {captures:?}");
    for capture in captures {
        let events = dir.path().join("replayed-events.jsonl");
        let replay = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .arg("replay")
            .arg("--events")
            .arg(&events)
            .arg(&capture)
            .output()
            .unwrap();
        assert!(
            replay.status.success(),
            "{}",
            String::from_utf8_lossy(&replay.stderr)
        );
        // The capture's header names the board the daemon followed on that port.
        let header: serde_json::Value = serde_json::from_str(
            std::fs::read_to_string(&capture)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        let board: u32 = header["board"].as_str().unwrap().parse().unwrap();
        // Replay gives the events the live daemon logged, times included: one
        // loop from capture to events, one tick grid. The live run stopped at
        // its last tick; replay ticks on past the end (the end grace), so only
        // what it gave up to the live run's last event is compared.
        let live = tracker_events(
            &std::fs::read_to_string(
                dir.path()
                    .join(format!("journal/events/board-{board}.jsonl")),
            )
            .unwrap(),
        );
        let last_live = live
            .iter()
            .map(|e| e["t_ms"].as_u64().unwrap())
            .max()
            .unwrap();
        let replayed: Vec<_> = tracker_events(&std::fs::read_to_string(&events).unwrap())
            .into_iter()
            .filter(|e| e["t_ms"].as_u64().unwrap() <= last_live)
            .collect();
        assert!(
            live.len() > 10,
            "board {board}: {} events logged",
            live.len()
        );
        assert_eq!(
            replayed,
            live,
            "board {board}: replay of {} differs from the live daemon",
            capture.display()
        );
        // And the replayed game is the daemon's game, move for move. Replay may
        // go one step further: a last move on the board that the demo stopped
        // before it was pressed is verified by the unpressed hold, which only
        // the end grace reaches. Such moves are verified after the live run's
        // last event, and nothing else may differ.
        let replayed_pgn = String::from_utf8_lossy(&replay.stdout);
        let daemon_pgn =
            std::fs::read_to_string(dir.path().join(format!("games/board-{board}.pgn"))).unwrap();
        let (replayed_moves, daemon_moves) = (movetext(&replayed_pgn), movetext(&daemon_pgn));
        let late = tracker_events(&std::fs::read_to_string(&events).unwrap())
            .into_iter()
            .filter(|e| {
                e["t_ms"].as_u64().unwrap() > last_live
                    && e["type"] == "move"
                    && e["verified"] == true
            })
            .count();
        assert_eq!(
            replayed_moves[..replayed_moves.len() - late],
            daemon_moves[..],
            "board {board}: replayed PGN\n{replayed_pgn}\ndaemon's PGN\n{daemon_pgn}"
        );
    }
    // The operator is told where the feeds and the dashboard are.
    assert!(stdout.contains("/games.pgn"), "{stdout}");
    assert!(stdout.contains("/arbiter/?token="), "{stdout}");
    // Board 3 has White's clock on the right; it was still followed (checked above).
    assert!(stdout.contains("White's clock on the right"));
}

/// A board's tracker events (lines with a `ply`) as the comparison needs them:
/// without what only the journal adds (run, sequence numbers, wall clock,
/// port) and without
/// the board number (replay numbers a capture's board by its place on the
/// command line).
fn tracker_events(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("ply").is_some())
        .map(|mut v| {
            let o = v.as_object_mut().unwrap();
            for k in ["run", "seq", "board_seq", "unix_ms", "port", "board"] {
                o.remove(k);
            }
            v
        })
        .collect()
}

/// The moves of a PGN's first game, without move numbers, comments or result.
fn movetext(pgn: &str) -> Vec<String> {
    let body: String = pgn
        .lines()
        .skip_while(|l| l.starts_with('[') || l.trim().is_empty())
        .take_while(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join(" ");
    let mut plain = String::new();
    let mut depth = 0;
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split_whitespace()
        .filter(|t| !t.ends_with('.'))
        .filter(|t| !["1-0", "0-1", "1/2-1/2", "*"].contains(t))
        .map(str::to_string)
        .collect()
}
