//! DGT captures recorded before the family seam replay to the same events and
//! games, byte for byte, as the code of that time gave: `replay --events` on
//! each capture of `tests/data/captures/dgt-before-seam/` (simulated single
//! and bus games at normal pace, turned round, with White's clock on the
//! right and in time trouble with forgotten presses, and two imported real
//! recordings; `tests/data/SOURCES.md` says how they were made) against the
//! events and PGN stored beside it.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn dgt_captures_from_before_the_seam_replay_to_the_same_events_and_games() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures/dgt-before-seam");
    let out = tempfile::tempdir().unwrap();
    let mut captures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".capture.jsonl"))
        .collect();
    captures.sort();
    assert_eq!(captures.len(), 8, "{captures:?}");
    for capture in &captures {
        let name = capture.file_name().unwrap().to_string_lossy();
        let stem = name.trim_end_matches(".capture.jsonl");
        let events = out.path().join(format!("{stem}.events.jsonl"));
        let run = Command::new(env!("CARGO_BIN_EXE_eboard-bridge"))
            .arg("replay")
            .arg("--events")
            .arg(&events)
            .arg(capture)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let want = |ext: &str| std::fs::read_to_string(dir.join(format!("{stem}.{ext}"))).unwrap();
        let got = std::fs::read_to_string(&events).unwrap();
        let want_events = want("events.jsonl");
        assert!(want_events.lines().count() > 0, "{stem}: events stored");
        if let Some((i, (g, w))) = got
            .lines()
            .zip(want_events.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
        {
            panic!("{stem}: event {} differs:\n now    {g}\n before {w}", i + 1);
        }
        assert_eq!(
            got.lines().count(),
            want_events.lines().count(),
            "{stem}: as many events"
        );
        assert_eq!(
            String::from_utf8_lossy(&run.stdout),
            want("pgn"),
            "{stem}: the same games"
        );
    }
}
