//! The Certabo serial dialect: text lines of decimal numbers, pushed by the
//! board unasked, and LED commands of 8 raw bytes (other_boards.md §2).
//!
//! A line is `:`, numbers 0..=255 separated by single spaces, then ` \r\n`:
//! 320 numbers (64 squares × a 5-byte RFID id) from a Certabo board, 8 (one
//! occupancy bit mask per rank) from an occupancy board in the same dialect.
//! Lines may arrive split across reads; bytes outside a `:` … `\n` line are
//! skipped (boards are reported to send tokens such as `L` or `D` there).
//! Shared by every family that speaks the dialect.

use std::fmt;

use shakmaty::{Bitboard, File, Rank, Square};

use crate::family::CodecStats;

/// The longest line kept: a 320-number line is at most 1,281 characters.
pub const MAX_LINE: usize = 2_048;

/// Why bytes formed no line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineError {
    /// A line longer than [`MAX_LINE`]: dropped up to the next `:`.
    TooLong,
    /// A field that is not a number 0..=255.
    BadNumber,
    /// A line with a number of fields this family does not read.
    FieldCount { got: usize },
    /// Bytes outside any line that are not the tokens boards send there.
    Garbage { count: usize },
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong => write!(f, "a line longer than {MAX_LINE} bytes was dropped"),
            LineError::BadNumber => write!(
                f,
                "a line with a field that is not a number 0..=255 was dropped"
            ),
            LineError::FieldCount { got } => {
                write!(
                    f,
                    "a line of {got} numbers was dropped (not this board's kind of line)"
                )
            }
            LineError::Garbage { count } => write!(f, "{count} byte(s) outside any line skipped"),
        }
    }
}

/// Splits a byte stream into `:` lines.
#[derive(Clone, Debug, Default)]
pub struct LineFramer {
    line: Vec<u8>,
    in_line: bool,
    too_long: bool,
    garbage: usize,
}

/// Tokens boards send between lines (an LED acknowledgement `L`, `D` for RGB
/// LEDs, `*`), and line ends: skipped without counting as garbage.
fn quiet_between_lines(b: u8) -> bool {
    matches!(b, b'L' | b'D' | b'*' | b'\r' | b'\n' | b' ')
}

impl LineFramer {
    /// Feeds `bytes`; `line` is called with each whole line's fields (the text
    /// between `:` and the line end), `error` with each problem.
    ///
    /// A board sends a 1,300-byte line a second, every second: the bytes are
    /// taken a run at a time between the `:` and `\n` that matter, not one
    /// by one (at normal pace reading them cost more than following the game).
    pub fn push(
        &mut self,
        bytes: &[u8],
        mut line: impl FnMut(&[u8]),
        mut error: impl FnMut(LineError),
    ) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let stop = if self.in_line {
                rest.iter().position(|&b| b == b':' || b == b'\n')
            } else {
                rest.iter().position(|&b| b == b':')
            };
            let (run, mark) = match stop {
                Some(i) => (&rest[..i], Some(rest[i])),
                None => (rest, None),
            };
            if self.in_line {
                self.keep(run);
            } else {
                self.garbage += run.iter().filter(|&&b| !quiet_between_lines(b)).count();
            }
            // On past the run and the byte that ended it.
            rest = &rest[stop.map_or(rest.len(), |i| i + 1)..];
            match mark {
                Some(b':') => {
                    if self.garbage > 0 {
                        error(LineError::Garbage {
                            count: std::mem::take(&mut self.garbage),
                        });
                    }
                    if self.too_long {
                        error(LineError::TooLong);
                    }
                    // A new line starts; an unfinished one is dropped (it was cut).
                    self.line.clear();
                    self.in_line = true;
                    self.too_long = false;
                }
                Some(_) => {
                    self.in_line = false;
                    if self.too_long {
                        self.too_long = false;
                        error(LineError::TooLong);
                    } else {
                        line(&self.line);
                    }
                    self.line.clear();
                }
                None => {}
            }
        }
    }

    /// Keeps `run` of the line under way, up to [`MAX_LINE`] bytes.
    fn keep(&mut self, run: &[u8]) {
        if self.too_long {
            return;
        }
        let room = MAX_LINE - self.line.len();
        if run.len() > room {
            self.line.extend_from_slice(&run[..room]);
            self.too_long = true;
        } else {
            self.line.extend_from_slice(run);
        }
    }
}

impl LineFramer {
    /// Feeds `bytes` and returns the numbers of each whole line; every
    /// problem is counted in `stats`.
    pub fn read(&mut self, bytes: &[u8], stats: &mut CodecStats) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        self.push(bytes, |l| lines.push(numbers(l)), |e| errors.push(e));
        for e in errors {
            stats.error(e);
        }
        lines
            .into_iter()
            .filter_map(|l| l.map_err(|e| stats.error(e)).ok())
            .collect()
    }
}

/// LED commands as the board takes them: 8 raw bytes, no header, so every
/// eighth byte ends one.
#[derive(Clone, Debug, Default)]
pub struct LedCommands {
    pending: Vec<u8>,
    last: [u8; 8],
}

impl LedCommands {
    /// Takes host bytes; returns how many commands they completed.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let mut done = 0;
        for &b in bytes {
            self.pending.push(b);
            if self.pending.len() == 8 {
                self.last.copy_from_slice(&self.pending);
                self.pending.clear();
                done += 1;
            }
        }
        done
    }

    /// The squares the last command lights.
    pub fn squares(&self) -> Bitboard {
        led_squares(&self.last)
    }
}

/// The numbers of a line (spaces and a final `\r` around them ignored).
pub fn numbers(line: &[u8]) -> Result<Vec<u8>, LineError> {
    let mut out = Vec::with_capacity(line.len() / 2 + 1);
    // The field under way: its value and how many digits it has.
    let (mut value, mut digits) = (0u16, 0usize);
    for &b in line {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                if digits > 3 {
                    return Err(LineError::BadNumber);
                }
                value = value * 10 + u16::from(b - b'0');
            }
            b' ' | b'\t' | b'\n' | b'\x0C' | b'\r' => {
                if digits > 0 {
                    out.push(u8::try_from(value).map_err(|_| LineError::BadNumber)?);
                    (value, digits) = (0, 0);
                }
            }
            _ => return Err(LineError::BadNumber),
        }
    }
    if digits > 0 {
        out.push(u8::try_from(value).map_err(|_| LineError::BadNumber)?);
    }
    Ok(out)
}

/// A line as the board writes it: `:`, the numbers, ` \r\n`.
pub fn encode_line(numbers: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(numbers.len() * 4 + 4);
    s.push(b':');
    for (i, &n) in numbers.iter().enumerate() {
        if i > 0 {
            s.push(b' ');
        }
        if n >= 100 {
            s.push(b'0' + n / 100);
        }
        if n >= 10 {
            s.push(b'0' + n / 10 % 10);
        }
        s.push(b'0' + n % 10);
    }
    s.extend_from_slice(b" \r\n");
    s
}

/// Square `index` of a line in the dialect's order: 0 = a8, a8…h8, a7…h1.
pub fn square_of(index: usize) -> Square {
    Square::from_coords(
        File::new((index % 8) as u32),
        Rank::new(7 - (index / 8) as u32),
    )
}

/// The LED command lighting `squares`: 8 bytes, rank 8 first, bit 0 = file a.
pub fn led_bytes(squares: Bitboard) -> [u8; 8] {
    let mut b = [0u8; 8];
    for sq in squares {
        let row = 7 - usize::from(u8::from(sq.rank()));
        b[row] |= 1 << u8::from(sq.file());
    }
    b
}

/// The squares an LED command lights.
pub fn led_squares(bytes: &[u8; 8]) -> Bitboard {
    let mut lit = Bitboard::EMPTY;
    for (row, &byte) in bytes.iter().enumerate() {
        for file in 0..8u32 {
            if byte & (1 << file) != 0 {
                lit.add(Square::from_coords(
                    File::new(file),
                    Rank::new(7 - row as u32),
                ));
            }
        }
    }
    lit
}

/// Whether `bytes` hold a whole line of `fields` numbers (discovery's probe).
pub fn has_line_of(bytes: &[u8], fields: usize) -> bool {
    let mut found = false;
    let mut framer = LineFramer::default();
    framer.push(
        bytes,
        |line| found |= numbers(line).is_ok_and(|n| n.len() == fields),
        |_| {},
    );
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn leds_are_rank_8_first_with_file_a_in_bit_0() {
        let e2e4 = Bitboard::from(Square::E2) | Bitboard::from(Square::E4);
        assert_eq!(led_bytes(e2e4), [0, 0, 0, 0, 0x10, 0, 0x10, 0]);
        assert_eq!(led_squares(&led_bytes(e2e4)), e2e4);
        assert_eq!(square_of(0), Square::A8);
        assert_eq!(square_of(63), Square::H1);
    }

    #[test]
    fn lines_split_anywhere_and_tokens_between_them_are_quiet() {
        let mut bytes = encode_line(&[255, 255, 0, 0, 0, 0, 255, 255]);
        bytes.extend(b"L\r\n");
        bytes.extend(encode_line(&[1, 2, 3]));
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        let mut f = LineFramer::default();
        for b in bytes.chunks(3) {
            f.push(b, |l| lines.push(numbers(l).unwrap()), |e| errors.push(e));
        }
        assert_eq!(
            lines,
            vec![vec![255, 255, 0, 0, 0, 0, 255, 255], vec![1, 2, 3]]
        );
        assert!(errors.is_empty(), "{errors:?}");
    }

    /// What the framer must do, one byte at a time: the specification the
    /// run-at-a-time [`LineFramer::push`] is held to.
    fn by_bytes(bytes: &[u8]) -> (Vec<Result<Vec<u8>, LineError>>, Vec<LineError>) {
        let (mut lines, mut errors) = (Vec::new(), Vec::new());
        let (mut line, mut in_line, mut too_long, mut garbage) = (Vec::new(), false, false, 0);
        for &b in bytes {
            if b == b':' {
                if garbage > 0 {
                    errors.push(LineError::Garbage { count: garbage });
                    garbage = 0;
                }
                if too_long {
                    errors.push(LineError::TooLong);
                }
                (in_line, too_long) = (true, false);
                line.clear();
            } else if !in_line {
                garbage += usize::from(!quiet_between_lines(b));
            } else if b == b'\n' {
                in_line = false;
                if std::mem::take(&mut too_long) {
                    errors.push(LineError::TooLong);
                } else {
                    // The field reading, as `str` would do it.
                    let fields = std::str::from_utf8(&line)
                        .map_err(|_| LineError::BadNumber)
                        .and_then(|text| {
                            text.split_ascii_whitespace()
                                .map(|f| {
                                    match f.len() <= 3 && f.bytes().all(|b| b.is_ascii_digit()) {
                                        true => f.parse::<u8>().map_err(|_| LineError::BadNumber),
                                        false => Err(LineError::BadNumber),
                                    }
                                })
                                .collect()
                        });
                    lines.push(fields);
                }
                line.clear();
            } else if line.len() >= MAX_LINE {
                too_long = true;
            } else {
                line.push(b);
            }
        }
        (lines, errors)
    }

    #[test]
    fn a_line_of_exactly_the_longest_length_is_kept() {
        for len in [MAX_LINE - 1, MAX_LINE, MAX_LINE + 1] {
            let mut bytes = vec![b':'];
            bytes.resize(1 + len, b' ');
            bytes.extend(b"\n:7 \r\n");
            for cut in [1, 7, len, len + 1, len + 2, bytes.len()] {
                let (mut lines, mut errors) = (Vec::new(), Vec::new());
                let mut f = LineFramer::default();
                for b in bytes.chunks(cut) {
                    f.push(b, |l| lines.push(numbers(l)), |e| errors.push(e));
                }
                assert_eq!((lines, errors), by_bytes(&bytes), "{len} bytes, cut {cut}");
            }
        }
    }

    proptest! {
        #[test]
        fn runs_read_as_bytes_one_at_a_time_do(
            parts in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..40),
                    proptest::collection::vec(any::<u8>(), 0..320).prop_map(|ns| encode_line(&ns)),
                    proptest::collection::vec(prop_oneof![Just(b' '), Just(b'9'), Just(b':'), Just(b'\n')], 0..2_200),
                ],
                0..8,
            ),
            cut in 1usize..400,
        ) {
            let bytes = parts.concat();
            let (mut lines, mut errors) = (Vec::new(), Vec::new());
            let mut f = LineFramer::default();
            for b in bytes.chunks(cut) {
                f.push(b, |l| lines.push(numbers(l)), |e| errors.push(e));
            }
            let (want_lines, want_errors) = by_bytes(&bytes);
            prop_assert_eq!(lines, want_lines);
            prop_assert_eq!(errors, want_errors);
        }

        #[test]
        fn lines_round_trip(ns in proptest::collection::vec(any::<u8>(), 0..330), cut in 1usize..50) {
            let bytes = encode_line(&ns);
            let mut got = Vec::new();
            let mut f = LineFramer::default();
            for b in bytes.chunks(cut) {
                f.push(b, |l| got.push(numbers(l).unwrap()), |e| panic!("{e}"));
            }
            prop_assert_eq!(got, vec![ns]);
        }

        #[test]
        fn led_bytes_round_trip(b in any::<u64>()) {
            let squares = Bitboard(b);
            prop_assert_eq!(led_squares(&led_bytes(squares)), squares);
        }

        #[test]
        fn the_framer_never_keeps_more_than_a_line(bytes in proptest::collection::vec(any::<u8>(), 0..5_000)) {
            let mut f = LineFramer::default();
            f.push(&bytes, |l| assert!(l.len() <= MAX_LINE), |_| {});
            prop_assert!(f.line.len() <= MAX_LINE);
        }
    }
}
