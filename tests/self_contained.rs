//! The repository is self-contained: a clone with nothing beside it passes its
//! tests. No source, test, bench, script or manifest may refer to the
//! developers' data folder beside the checkout; test data lives in `tests/data`.

use std::path::{Path, PathBuf};

/// Built from pieces so that this file does not match itself.
fn needles() -> [String; 2] {
    let shared = ["sha", "red"].concat();
    [format!("../{shared}"), format!("{shared}/data")]
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // Build output, the test data itself and VCS metadata are not code.
            if name == "target" || name == ".git" || path.ends_with("tests/data") {
                continue;
            }
            files(&path, out);
        } else if ["rs", "toml", "sh", "md"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
            || ["run", "package", "postinst", "postrm"].contains(&name.as_str())
        {
            out.push(path);
        }
    }
}

#[test]
fn nothing_reads_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for dir in [
        "src",
        "tests",
        "benches",
        "protocols",
        "fuzz",
        ".ci",
        ".cargo",
        "docs",
        "packaging",
    ] {
        files(&root.join(dir), &mut all);
    }
    all.push(root.join("Cargo.toml"));
    all.push(root.join("README.md"));
    assert!(
        all.len() > 50,
        "the walk found the sources ({} files)",
        all.len()
    );
    let mut found = Vec::new();
    for path in &all {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if needles().iter().any(|n| line.contains(n.as_str())) {
                found.push(format!(
                    "{}:{}: {}",
                    path.strip_prefix(root).unwrap_or(path).display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines refer to data outside the repository; copy the data into tests/data \
         (with its source in tests/data/SOURCES.md) and point at it there:\n{}",
        found.join("\n")
    );
}
