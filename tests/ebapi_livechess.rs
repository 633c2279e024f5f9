//! The PyPI `livechess` operator tool (0.1.0, Python ≥ 3.12, `click<8.2`)
//! against the real daemon's LiveChess-compatible API: `tournaments`,
//! `tournament`, `eboards` and `events` print the tables an operator expects.
//! The client builds every object with `Dataclass(**json)`, so a missing or
//! extra key fails it; it asks for rounds by 0-based index and only talks to
//! port 1982, so the daemon gets a loopback address of its own on that port.
//!
//! Built only with `--features livechess-tests`; `.ci/run` installs the client
//! into `target/livechess-venv`. Without it this test fails and says how to
//! install it.

mod child_guard;
mod live_daemon;

use std::path::PathBuf;
use std::process::Command;

use eboard_bridge::publish::ids::{game_id, tournament_id};
use live_daemon::{game_capture_on, leave_capture, port, write_config, Daemon, Then};
use serde_json::Value;

fn livechess() -> PathBuf {
    let candidates: Vec<PathBuf> = std::env::var_os("LIVECHESS_BIN")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/livechess-venv/bin/livechess")
        ])
        .collect();
    for c in &candidates {
        if Command::new(c)
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c.clone();
        }
    }
    panic!(
        "the PyPI livechess client is not installed (tried {candidates:?}): run `bash .ci/run`, or \
         `python3.12 -m venv target/livechess-venv && target/livechess-venv/bin/pip install \
         livechess==0.1.0 'click<8.2'`"
    );
}

/// The rows of the tables the client printed (rich's `│`-separated cells).
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.contains('│'))
        .map(|l| {
            let cells: Vec<String> = l.split('│').map(|c| c.trim().to_owned()).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .collect()
}

fn run(host: &str, args: &[&str]) -> String {
    let out = Command::new(livechess())
        .args(args)
        .env("LIVECHESS_HOST", host)
        .env("COLUMNS", "200")
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "livechess {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn get(base: &str, path: &str) -> Value {
    reqwest::blocking::get(format!("{base}/api/v1.0/{path}"))
        .unwrap()
        .json()
        .unwrap()
}

/// `timedelta` as Python prints it: `1:28:00`.
fn td(seconds: u64) -> String {
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The client's clock cell: `● 1:25:00 - 1:28:00  ` and the like.
fn clock_cell(c: &Value) -> String {
    let run = &c["run"];
    format!(
        "{} {} {} {} {}",
        if run == true { "●" } else { " " },
        td(c["white"].as_u64().unwrap()),
        if run.is_null() { "‖" } else { "-" },
        td(c["black"].as_u64().unwrap()),
        if run == false { "○" } else { " " },
    )
    .trim()
    .to_owned()
}

#[test]
fn the_pypi_livechess_client_reads_tournaments_boards_rounds_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Board 1 plays on; board 2's clock was stopped with White to move.
    leave_capture(
        &data,
        &port(dir.path(), 1),
        1,
        &game_capture_on(Then::Nothing, 1025),
    );
    leave_capture(
        &data,
        &port(dir.path(), 2),
        2,
        &game_capture_on(Then::ClockPaused, 1026),
    );
    let config = write_config(
        dir.path(),
        2,
        "[[pairing]]\nboard = 1\nwhite = { name = \"Molinari, Carlos\", fide_id = 3400000 }\n\
         black = { name = \"Bordais, Jean\" }\n\
         [[pairing]]\nboard = 2\nwhite = { name = \"Doe, Jane\", title = \"WIM\" }\n\
         black = { name = \"Roe, Richard\" }\n",
    );
    // The client only talks to port 1982: a loopback address of this test's own.
    let pid = std::process::id();
    let host = format!(
        "127.{}.{}.{}",
        10 + pid % 200,
        (pid >> 8) % 250 + 1,
        pid % 250 + 2
    );
    let daemon = Daemon::start_with_ebapi(&config, &format!("{host}:1982"));
    let base = daemon
        .ebapi
        .clone()
        .unwrap_or_else(|| panic!("the EBAPI did not listen:\n{}", daemon.log_text()));
    assert_eq!(base, format!("http://{host}:1982"));
    let uuid = tournament_id(Some("Operator Open"));

    assert_eq!(
        rows(&run(&host, &["tournaments"])),
        [vec![uuid.clone(), "Operator Open".to_string(), "1".into()]]
    );

    let boards = get(&base, "eboards");
    let clock = |n: usize| boards[n]["clock"].clone();
    let eboards = rows(&run(&host, &["eboards"]));
    assert_eq!(
        eboards,
        [
            vec![
                "01025".to_string(),
                "port-1".into(),
                "NOTRESPONDING".into(),
                boards[0]["board"].as_str().unwrap().into(),
                clock_cell(&clock(0)),
            ],
            vec![
                "01026".to_string(),
                "port-2".into(),
                "NOTRESPONDING".into(),
                boards[1]["board"].as_str().unwrap().into(),
                clock_cell(&clock(1)),
            ],
        ]
    );
    assert_eq!(
        boards[0]["board"], "r1bqkb1r/pp1ppppp/5n2/2p5/1nP1P3/2N5/PP1PNPPP/R1BQKB1R",
        "the final picture"
    );
    assert_eq!(clock(1)["run"], Value::Null, "board 2's clock is paused");
    assert_eq!(
        (clock(1)["white"].clone(), clock(1)["black"].clone()),
        (5100.into(), 5280.into())
    );

    let game = |b: u32| {
        get(
            &base,
            &format!("game/{}", game_id(Some("Operator Open"), 1, b)),
        )
    };
    let table = rows(&run(&host, &["tournament", &uuid]));
    assert_eq!(
        table,
        [
            vec![
                "1".to_string(),
                "1".into(),
                "Carlos Molinari".into(),
                "Jean Bordais".into(),
                "".into(),
                clock_cell(&game(1)["clock"]),
                "4... Nb4".into(),
            ],
            vec![
                "1".to_string(),
                "2".into(),
                "Jane Doe".into(),
                "Richard Roe".into(),
                "".into(),
                clock_cell(&game(2)["clock"]),
                "4... Nb4".into(),
            ],
        ]
    );
    let moves = game(1)["moves"].clone();
    assert_eq!(moves.as_array().unwrap().len(), 8);
    assert!(moves[0].as_str().unwrap().starts_with("e4 "), "{moves}");

    assert_eq!(
        rows(&run(&host, &["events", &uuid])),
        [vec!["1".to_string(), "2".into(), "Clock paused".into()]],
        "board 2's stopped clock in a game under way is what an operator is told"
    );
    daemon.stop();
}
