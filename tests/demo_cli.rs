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
        let replay = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .arg("replay")
            .arg(&capture)
            .output()
            .unwrap();
        assert!(
            replay.status.success(),
            "{}",
            String::from_utf8_lossy(&replay.stderr)
        );
        let pgn = String::from_utf8_lossy(&replay.stdout);
        assert!(pgn.contains("1. "), "replayed capture has moves: {pgn}");
    }
    // The operator is told where the feeds and the dashboard are.
    assert!(stdout.contains("/games.pgn"), "{stdout}");
    assert!(stdout.contains("/arbiter/?token="), "{stdout}");
    // Board 3 has White's clock on the right; it was still followed (checked above).
    assert!(stdout.contains("White's clock on the right"));
}
