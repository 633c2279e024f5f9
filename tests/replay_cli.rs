//! `eboard-bridge replay` as a user runs it: the real binary on capture files.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use eboard_bridge::session::capture::{import, CaptureHeader, CaptureWriter, PortMode};
use pgn_reader::{Reader, SanPlus, Visitor};
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Position};

fn shared(path: &str) -> PathBuf {
    PathBuf::from(format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR")))
}

/// The dgtdriver recording (a real board and clock, 29 moves) as a capture file.
fn recording_capture(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(shared("eboard/dgtdriver-recordings/1.inbytes")).unwrap();
    let chunks = import::dgtdriver_inbytes(&text).unwrap();
    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Single);
    header.started = Some("2019-03-14T18:00:00Z".into());
    let path = dir.join("recording.capture.jsonl");
    let mut w = CaptureWriter::new(std::fs::File::create(&path).unwrap(), &header).unwrap();
    for c in &chunks {
        w.write_chunk(c).unwrap();
    }
    w.flush().unwrap();
    path
}

fn expected_ucis() -> Vec<String> {
    std::fs::read_to_string(shared("eboard/dgtdriver-recordings/1.uci"))
        .unwrap()
        .split_whitespace()
        .filter(|t| !t.ends_with('.') && *t != "*")
        .map(str::to_string)
        .collect()
}

fn replay(args: &[&Path], events: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"));
    cmd.arg("replay");
    if let Some(e) = events {
        cmd.arg("--events").arg(e);
    }
    cmd.args(args).output().expect("the binary runs")
}

/// Every game of a PGN text as UCI moves (replayed with shakmaty from the start).
fn games_as_uci(pgn: &str) -> Vec<Vec<String>> {
    struct Sans;
    impl Visitor for Sans {
        type Tags = ();
        type Movetext = Vec<String>;
        type Output = Vec<String>;
        fn begin_tags(&mut self) -> ControlFlow<Vec<String>> {
            ControlFlow::Continue(())
        }
        fn begin_movetext(&mut self, _: ()) -> ControlFlow<Vec<String>, Vec<String>> {
            ControlFlow::Continue(Vec::new())
        }
        fn san(&mut self, m: &mut Vec<String>, san: SanPlus) -> ControlFlow<Vec<String>> {
            m.push(san.to_string());
            ControlFlow::Continue(())
        }
        fn end_game(&mut self, m: Vec<String>) -> Vec<String> {
            m
        }
    }
    let mut reader = Reader::new(std::io::Cursor::new(pgn.as_bytes()));
    let mut games = Vec::new();
    while let Some(sans) = reader.read_game(&mut Sans).unwrap() {
        let mut pos = Chess::default();
        let ucis = sans
            .iter()
            .map(|s| {
                let m = s.parse::<SanPlus>().unwrap().san.to_move(&pos).unwrap();
                let u = UciMove::from_move(m, CastlingMode::Standard).to_string();
                pos.play_unchecked(m);
                u
            })
            .collect();
        games.push(ucis);
    }
    games
}

#[test]
fn real_recording_replays_to_its_moves_with_one_verified_move_event_per_ply() {
    let dir = tempfile::tempdir().unwrap();
    let capture = recording_capture(dir.path());
    let events = dir.path().join("events.jsonl");
    let out = replay(&[&capture], Some(&events));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stdout.contains("[Date \"2019.03.14\"]"), "{stdout}");
    let games = games_as_uci(&stdout);
    assert_eq!(
        games,
        vec![expected_ucis()],
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // A clock was connected all game: every move carries its clock time.
    assert_eq!(
        stdout.matches("[%clk ").count(),
        expected_ucis().len(),
        "{stdout}"
    );

    let text = std::fs::read_to_string(&events).unwrap();
    let mut verified = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["board"], 1, "{line}");
        assert!(v["t_ms"].is_u64() && v["ply"].is_u64(), "{line}");
        assert!(v["type"].is_string(), "{line}");
        if v["type"] == "move" && v["verified"] == true {
            verified.push((
                v["ply"].as_u64().unwrap(),
                v["t_ms"].as_u64().unwrap(),
                v["uci"].clone(),
            ));
        }
        if v["type"] == "alert" {
            for field in ["article", "severity", "squares", "message"] {
                assert!(!v[field].is_null(), "alert without {field}: {line}");
            }
        }
    }
    let plies: Vec<u64> = verified.iter().map(|v| v.0).collect();
    assert_eq!(
        plies,
        (1..=expected_ucis().len() as u64).collect::<Vec<_>>()
    );
    assert!(
        verified.windows(2).all(|w| w[0].1 < w[1].1),
        "t_ms increases: {verified:?}"
    );
    let ucis: Vec<String> = verified
        .iter()
        .map(|v| v.2.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ucis, expected_ucis());
}

#[test]
fn a_malformed_capture_is_reported_and_the_good_one_still_printed() {
    let dir = tempfile::tempdir().unwrap();
    let good = recording_capture(dir.path());
    let bad = dir.path().join("bad.capture.jsonl");
    std::fs::write(
        &bad,
        "{\"capture\":\"eboard-bridge\",\"version\":1,\"protocol\":\"dgt\"}\n\
         {\"t_ms\":0,\"dir\":\"out\",\"hex\":\"42\"}\n\
         {\"t_ms\":5,\"dir\":\"in\",\"hex\":\"8g\"}\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.capture.jsonl");
    let out = replay(&[&bad, &missing, &good], None);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a failed capture makes the exit status non-zero"
    );
    assert!(
        stderr.contains(&format!("{}: line 3: field `hex`", bad.display())),
        "stderr names the file and line: {stderr}"
    );
    assert!(
        stderr.contains(&format!("{}: cannot open", missing.display())),
        "{stderr}"
    );
    assert_eq!(
        games_as_uci(&stdout),
        vec![expected_ucis()],
        "stdout:\n{stdout}"
    );
}

#[test]
fn not_a_capture_at_all_is_an_error_naming_line_1() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = shared("games/python-chess-molinari-bordais-1979.pgn");
    let pgn = if pgn.exists() {
        pgn
    } else {
        shared("eboard/dgtdriver-recordings/1.uci")
    };
    let out = replay(&[&pgn], Some(&dir.path().join("ev.jsonl")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("{}: line 1: ", pgn.display())),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unwritable_events_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let capture = recording_capture(dir.path());
    let events = dir.path().join("no/such/dir/events.jsonl");
    let out = replay(&[&capture], Some(&events));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot create the events file"), "{stderr}");
}

#[test]
fn a_cut_capture_prints_the_game_so_far_and_names_the_cut_line() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read_to_string(recording_capture(dir.path())).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    // Keep the first 300 lines whole and half of line 301, as a recorder killed
    // mid-write leaves it.
    let mut cut = lines[..300].join("\n");
    cut.push('\n');
    cut.push_str(&lines[300][..lines[300].len() / 2]);
    let path = dir.path().join("cut.capture.jsonl");
    std::fs::write(&path, cut).unwrap();
    let out = replay(&[&path], None);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("{}: line 301: not JSON", path.display())),
        "{stderr}"
    );
    let games = games_as_uci(&stdout);
    assert_eq!(
        games.len(),
        1,
        "the game up to the cut is printed: {stdout}"
    );
    let played = &games[0];
    assert!(played.len() > 20, "{played:?}");
    assert_eq!(played[..], expected_ucis()[..played.len()]);
}

#[test]
fn a_directory_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let out = replay(&[dir.path()], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("{}: ", dir.path().display())),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// The recording with its start (everything up to and including the first
/// board dump) merged into one chunk, followed in that chunk by `padding`
/// bytes of harmless version replies: a capture another tool wrote, or one
/// merged by hand. The format allows lines up to 1 MiB.
fn merged_start_capture(dir: &Path, padding: usize) -> PathBuf {
    let text = std::fs::read_to_string(shared("eboard/dgtdriver-recordings/1.inbytes")).unwrap();
    let chunks = import::dgtdriver_inbytes(&text).unwrap();
    let dump = chunks
        .iter()
        .position(|c| c.bytes.first() == Some(&0x86))
        .expect("the recording has a board dump");
    let mut first = chunks[dump].clone();
    first.bytes = chunks[..=dump]
        .iter()
        .flat_map(|c| c.bytes.iter().copied())
        .collect();
    // VERSION replies (id 0x93, length 5, version 1.2): read and kept aside by
    // the session, no effect on the game.
    for _ in 0..padding / 5 {
        first
            .bytes
            .extend_from_slice(&[0x93, 0x00, 0x05, 0x01, 0x02]);
    }
    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Single);
    let path = dir.join(format!("merged-{padding}.capture.jsonl"));
    let mut w = CaptureWriter::new(std::fs::File::create(&path).unwrap(), &header).unwrap();
    w.write_chunk(&first).unwrap();
    for c in &chunks[dump + 1..] {
        w.write_chunk(c).unwrap();
    }
    w.flush().unwrap();
    path
}

#[test]
fn a_chunk_over_64_kib_loses_none_of_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // 70 KB and 900 KB of padding: more than the decoder buffers at once,
    // less than the format's 1 MiB line limit (hex doubles the size).
    for padding in [70_000, 450_000] {
        let capture = merged_start_capture(dir.path(), padding);
        let line = std::fs::read_to_string(&capture).unwrap();
        assert!(line.lines().nth(1).unwrap().len() > 2 * padding);
        let out = replay(&[&capture], None);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stderr: {stderr}");
        assert!(!stderr.contains("no game found"), "{stderr}");
        assert_eq!(
            games_as_uci(&stdout),
            vec![expected_ucis()],
            "padding {padding}: stderr:\n{stderr}"
        );
    }
}

#[test]
fn the_events_file_may_not_be_one_of_the_captures() {
    let dir = tempfile::tempdir().unwrap();
    let capture = recording_capture(dir.path());
    let before = std::fs::read(&capture).unwrap();
    // The same file under another name too: a link is the same file.
    let alias = dir.path().join("alias.capture.jsonl");
    std::fs::hard_link(&capture, &alias).unwrap();
    for events in [&capture, &alias] {
        let out = replay(&[&capture], Some(events));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains("is also a capture to replay") && stderr.contains("--events"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read(&capture).unwrap(),
            before,
            "the capture is untouched"
        );
    }
}

#[test]
fn a_game_start_without_moves_is_not_called_no_game() {
    let dir = tempfile::tempdir().unwrap();
    // The recording up to its first board dump: the start position is seen
    // (a `game_start` is written), no move is made.
    let full = std::fs::read_to_string(recording_capture(dir.path())).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let dump = lines
        .iter()
        .position(|l| l.contains("\"hex\":\"86"))
        .unwrap();
    let end = dump + 1;
    let path = dir.path().join("start-only.capture.jsonl");
    std::fs::write(&path, lines[..end].join("\n") + "\n").unwrap();
    let events = dir.path().join("events.jsonl");
    let out = replay(&[&path], Some(&events));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&events).unwrap();
    if text.contains("\"type\":\"game_start\"") && !text.contains("\"type\":\"move\"") {
        assert!(!stderr.contains("no game found"), "{stderr}");
        assert!(stderr.contains("no move"), "{stderr}");
    } else {
        panic!("the cut capture should start a game and make no move:\n{text}");
    }
}
