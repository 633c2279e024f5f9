//! ARCHITECTURE.md promises that the tracker never does I/O and never reads
//! the wall clock: time is an argument, so replay reproduces the daemon and a
//! debugging print left behind cannot slow a board or write to a service's
//! journal. This walks `src/tracker/` (outside its unit-test modules) for the
//! calls that would break that promise.

use std::path::Path;

/// Built from pieces so that this file does not match itself.
fn forbidden() -> Vec<String> {
    [
        ["print", "ln!"].concat(),
        ["eprint", "ln!"].concat(),
        ["print", "!("].concat(),
        ["dbg", "!("].concat(),
        ["std::", "fs"].concat(),
        ["std::", "env"].concat(),
        ["std::", "net"].concat(),
        ["std::", "io"].concat(),
        ["Instant", "::now"].concat(),
        ["SystemTime", "::now"].concat(),
        ["tokio", "::"].concat(),
    ]
    .to_vec()
}

#[test]
fn the_tracker_does_no_io_and_reads_no_clock() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tracker");
    let mut checked = 0;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/tracker exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        // Unit tests may print what they compare.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            for needle in forbidden() {
                if line.contains(&needle) {
                    found.push(format!("{}:{}: {needle}", path.display(), n + 1));
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 5, "the walk found the tracker ({checked} files)");
    assert!(found.is_empty(), "the tracker must stay pure: {found:#?}");
}
