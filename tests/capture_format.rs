//! The capture format contract: every reader error names its line, the writer's
//! output reads back to the same chunks, and the documented example is valid.

use eboard_bridge::session::capture::{
    CaptureError, CaptureHeader, CaptureReader, CaptureWriteError, CaptureWriter, Chunk, Direction,
    PortMode, MAX_LINE_BYTES,
};
use proptest::prelude::*;

const HEADER: &str = r#"{"capture":"eboard-bridge","version":1,"protocol":"dgt"}"#;

/// Reads `text` to the end; the first error, or the chunks.
fn read(text: &str) -> Result<Vec<Chunk>, CaptureError> {
    let reader = CaptureReader::new(text.as_bytes())?;
    reader.collect()
}

/// A capture whose line 3 is `bad` (line 2 is a good chunk).
fn with_bad_line_3(bad: &str) -> String {
    format!("{HEADER}\n{{\"t_ms\":10,\"dir\":\"in\",\"hex\":\"8e\"}}\n{bad}\n")
}

fn err_at_line_3(bad: &str) -> CaptureError {
    let e = read(&with_bad_line_3(bad)).expect_err(bad);
    assert_eq!(e.line(), 3, "{bad}: {e}");
    assert!(e.to_string().starts_with("line 3: "), "{e}");
    e
}

#[test]
fn not_json_names_the_line() {
    let e = err_at_line_3(r#"{"t_ms":12,"dir":"in","hex":"8e"#);
    assert!(matches!(e, CaptureError::NotJson { .. }), "{e:?}");
    assert!(
        e.to_string().contains("cut last line"),
        "says what to do: {e}"
    );
}

#[test]
fn non_object_names_the_line() {
    let e = err_at_line_3("[12, \"in\", \"8e\"]");
    assert!(matches!(e, CaptureError::NotObject { .. }), "{e:?}");
}

#[test]
fn each_missing_field_is_named() {
    for (line, field) in [
        (r#"{"dir":"in","hex":"8e"}"#, "t_ms"),
        (r#"{"t_ms":12,"hex":"8e"}"#, "dir"),
        (r#"{"t_ms":12,"dir":"in"}"#, "hex"),
    ] {
        match err_at_line_3(line) {
            CaptureError::MissingField { field: f, .. } => assert_eq!(f, field),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn mistyped_fields_are_named() {
    for (line, field) in [
        (r#"{"t_ms":"12","dir":"in","hex":"8e"}"#, "t_ms"),
        (r#"{"t_ms":-1,"dir":"in","hex":"8e"}"#, "t_ms"),
        (r#"{"t_ms":1.5,"dir":"in","hex":"8e"}"#, "t_ms"),
        (r#"{"t_ms":12,"dir":"up","hex":"8e"}"#, "dir"),
    ] {
        match err_at_line_3(line) {
            CaptureError::BadField { field: f, .. } => assert_eq!(f, field, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn bad_hex_names_the_line() {
    for line in [
        r#"{"t_ms":12,"dir":"in","hex":"8e0"}"#,
        r#"{"t_ms":12,"dir":"in","hex":"8g"}"#,
        r#"{"t_ms":12,"dir":"in","hex":12}"#,
    ] {
        let e = err_at_line_3(line);
        assert!(matches!(e, CaptureError::BadHex { .. }), "{line}: {e:?}");
    }
}

#[test]
fn time_going_backwards_names_the_line() {
    let e = err_at_line_3(r#"{"t_ms":9,"dir":"in","hex":"8e"}"#);
    match e {
        CaptureError::TimeBackwards { t_ms, previous, .. } => assert_eq!((t_ms, previous), (9, 10)),
        other => panic!("{other:?}"),
    }
    // Equal times are fine: two reads can complete in the same millisecond.
    assert!(read(&with_bad_line_3(r#"{"t_ms":10,"dir":"out","hex":"42"}"#)).is_ok());
}

#[test]
fn wrong_headers_are_refused_at_line_1() {
    let cases = [
        (
            r#"{"capture":"something-else","version":1,"protocol":"dgt"}"#,
            "not an eboard-bridge capture",
        ),
        (r#"{"version":1,"protocol":"dgt"}"#, "`capture` is missing"),
        (
            r#"{"t_ms":0,"dir":"in","hex":"8e"}"#,
            "header line is missing",
        ),
        (
            r#"{"capture":"eboard-bridge","protocol":"dgt"}"#,
            "`version` is missing",
        ),
        (
            r#"{"capture":"eboard-bridge","version":1}"#,
            "`protocol` is missing",
        ),
        (
            r#"{"capture":"eboard-bridge","version":1,"protocol":"dgt","mode":"ring"}"#,
            "`mode`",
        ),
        ("not json", "not JSON"),
    ];
    for (line, needle) in cases {
        let text = format!("{line}\n");
        let e = match CaptureReader::new(text.as_bytes()) {
            Ok(_) => panic!("{line} accepted"),
            Err(e) => e,
        };
        assert_eq!(e.line(), 1, "{line}");
        assert!(e.to_string().contains(needle), "{line}: {e}");
    }
}

#[test]
fn unknown_versions_are_refused() {
    let text = r#"{"capture":"eboard-bridge","version":2,"protocol":"dgt"}"#;
    let e = CaptureReader::new(text.as_bytes())
        .err()
        .expect("version 2 refused");
    assert!(
        matches!(e, CaptureError::UnsupportedVersion { line: 1, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("version 2"), "{e}");
}

#[test]
fn empty_file_is_an_error() {
    let e = CaptureReader::new(&b""[..]).err().expect("empty refused");
    assert!(matches!(e, CaptureError::Empty), "{e:?}");
}

#[test]
fn overlong_lines_are_refused_without_reading_them_whole() {
    let mut text = format!("{HEADER}\n{{\"t_ms\":1,\"dir\":\"in\",\"hex\":\"");
    text.push_str(&"0".repeat(MAX_LINE_BYTES + 10));
    let e = read(&text).expect_err("overlong line");
    assert!(matches!(e, CaptureError::LineTooLong { line: 2 }), "{e:?}");
}

#[test]
fn the_reader_stops_after_an_error() {
    let text = format!(
        "{}{{\"t_ms\":20,\"dir\":\"in\",\"hex\":\"41\"}}\n",
        with_bad_line_3("oops")
    );
    let mut r = CaptureReader::new(text.as_bytes()).unwrap();
    assert!(r.next().unwrap().is_ok());
    assert!(r.next().unwrap().is_err());
    assert!(r.next().is_none(), "nothing after the bad line is trusted");
}

#[test]
fn unknown_fields_are_ignored_and_the_header_is_read() {
    let text = r#"{"capture":"eboard-bridge","version":1,"protocol":"dgt","started":"2026-11-22T14:05:00Z","board":"7","port":"/dev/ttyUSB0","serial":"25805","mode":"single","recorder":{"v":"9.9"}}
{"t_ms":3,"dir":"out","hex":"42","why":"dump please"}
{"t_ms":40,"dir":"in","hex":"8600"}
"#;
    let mut r = CaptureReader::new(text.as_bytes()).unwrap();
    let h = r.header().clone();
    assert_eq!(h.protocol, "dgt");
    assert_eq!(h.started.as_deref(), Some("2026-11-22T14:05:00Z"));
    assert_eq!(h.board.as_deref(), Some("7"));
    assert_eq!(h.port.as_deref(), Some("/dev/ttyUSB0"));
    assert_eq!(h.serial.as_deref(), Some("25805"));
    assert_eq!(h.mode, Some(PortMode::Single));
    assert!(h.extra.contains_key("recorder"));
    let chunks: Vec<Chunk> = r.by_ref().map(Result::unwrap).collect();
    assert_eq!(
        chunks,
        vec![
            Chunk {
                t_ms: 3,
                dir: Direction::Out,
                bytes: vec![0x42]
            },
            Chunk {
                t_ms: 40,
                dir: Direction::In,
                bytes: vec![0x86, 0x00]
            },
        ]
    );
}

#[test]
fn the_writer_refuses_time_going_backwards() {
    let mut w = CaptureWriter::new(Vec::new(), &CaptureHeader::new("dgt")).unwrap();
    w.write(5, Direction::In, &[1]).unwrap();
    let e = w.write(4, Direction::In, &[2]).unwrap_err();
    assert!(matches!(
        e,
        CaptureWriteError::TimeBackwards {
            t_ms: 4,
            previous: 5
        }
    ));
    let text = String::from_utf8(w.into_inner()).unwrap();
    assert_eq!(
        text.lines().count(),
        2,
        "nothing written for the refused chunk"
    );
}

#[test]
fn the_writer_writes_the_documented_form() {
    let mut header = CaptureHeader::new("dgt");
    header.mode = Some(PortMode::Bus);
    header.port = Some("/dev/tty\"odd\"".into());
    let mut w = CaptureWriter::new(Vec::new(), &header).unwrap();
    w.write(0, Direction::Out, &[0x40]).unwrap();
    w.write(17, Direction::In, &[0x8e, 0x00, 0x05, 0x34, 0xAB])
        .unwrap();
    let text = String::from_utf8(w.into_inner()).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"capture":"eboard-bridge","version":1,"protocol":"dgt","port":"/dev/tty\"odd\"","mode":"bus"}"#,
            "\n",
            r#"{"t_ms":0,"dir":"out","hex":"40"}"#,
            "\n",
            r#"{"t_ms":17,"dir":"in","hex":"8e000534ab"}"#,
            "\n"
        )
    );
}

#[test]
fn the_documented_example_is_a_valid_capture() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/capture-format.md"
    ))
    .unwrap();
    let block = doc
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/capture-format.md has a ```json example");
    let mut r = CaptureReader::new(block.as_bytes()).unwrap();
    assert_eq!(r.header().mode, Some(PortMode::Single));
    let chunks: Vec<Chunk> = r.by_ref().collect::<Result<_, _>>().unwrap();
    let board_bytes: usize = chunks
        .iter()
        .filter(|c| c.dir == Direction::In)
        .map(|c| c.bytes.len())
        .sum();
    // Serial number (8) + board dump (67) + two field updates (5 each).
    assert_eq!(board_bytes, 8 + 67 + 5 + 5);
}

fn arb_chunk() -> impl Strategy<Value = (u64, bool, Vec<u8>)> {
    (
        0u64..5_000,
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..80),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever chunks are written (times made non-decreasing by summing the
    /// generated gaps), the reader gives back exactly those chunks.
    #[test]
    fn writer_output_reads_back(chunks in prop::collection::vec(arb_chunk(), 0..40), mode in any::<bool>()) {
        let mut header = CaptureHeader::new("dgt");
        header.mode = Some(if mode { PortMode::Bus } else { PortMode::Single });
        let mut w = CaptureWriter::new(Vec::new(), &header).unwrap();
        let mut t = 0u64;
        let mut written = Vec::new();
        for (gap, inbound, bytes) in chunks {
            t += gap;
            let chunk = Chunk { t_ms: t, dir: if inbound { Direction::In } else { Direction::Out }, bytes };
            w.write_chunk(&chunk).unwrap();
            written.push(chunk);
        }
        let text = w.into_inner();
        let mut r = CaptureReader::new(&text[..]).unwrap();
        prop_assert_eq!(r.header(), &header);
        let read: Vec<Chunk> = r.by_ref().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(read, written);
    }

    /// Arbitrary bytes after a valid header never panic the reader and always end.
    #[test]
    fn garbage_never_panics(tail in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut text = format!("{HEADER}\n").into_bytes();
        text.extend_from_slice(&tail);
        if let Ok(r) = CaptureReader::new(&text[..]) {
            let n = r.count();
            prop_assert!(n <= tail.len() + 1);
        }
    }
}

#[test]
fn a_byte_order_mark_before_the_header_is_accepted() {
    let text = format!("\u{feff}{HEADER}\n{{\"t_ms\":1,\"dir\":\"in\",\"hex\":\"8e\"}}\n");
    assert_eq!(read(&text).unwrap().len(), 1);
}
