//! One validation for what people type that ends up in PGN tags, feeds and
//! logs: player names (configuration, TRF files, the dashboard), arbiters'
//! names and their notes.
//!
//! Refused everywhere: control characters (Unicode category Cc: line breaks,
//! tabs, escapes), line and paragraph separators (Zl, Zp), invisible format
//! characters (Cf: bidirectional overrides and isolates, zero-width spaces,
//! the byte-order mark, ...) except the zero-width joiner and non-joiner that
//! Persian and Indic names are written with, private-use code points (Co) and
//! noncharacters. Such characters cannot be part of a name: they only make
//! text display differently from what it is (U+202E turns `Doe` into `eoD`),
//! or break the one-line formats (PGN tags, log lines) names go into. A name
//! must also hold at least one letter, so a name of invisible characters
//! alone is refused.

/// Why a text was refused: a sentence that names the character and says what
/// to do (the caller adds which field).
pub type Problem = String;

/// Invisible format characters (Unicode 15.1, general category Cf), less
/// U+200C ZERO WIDTH NON-JOINER and U+200D ZERO WIDTH JOINER, which names in
/// several scripts need.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200B),
    (0x200E, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

fn is_format(c: char) -> bool {
    let c = u32::from(c);
    FORMAT.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

fn is_private_use_or_nonchar(c: char) -> bool {
    let c = u32::from(c);
    (0xE000..=0xF8FF).contains(&c)
        || (0xF0000..=0x10FFFF).contains(&c)
        || (0xFDD0..=0xFDEF).contains(&c)
        || (c & 0xFFFE) == 0xFFFE
}

/// What is wrong with `c` in a name or a note, if anything.
fn refused(c: char) -> Option<Problem> {
    let code = u32::from(c);
    if c.is_control() {
        return Some(format!(
            "contains control characters (line breaks, tabs...: U+{code:04X}); write it on one line"
        ));
    }
    if c == '\u{2028}' || c == '\u{2029}' {
        return Some(format!(
            "contains a line or paragraph separator (U+{code:04X}); write it on one line"
        ));
    }
    if is_format(c) {
        let what = match code {
            0x202A..=0x202E | 0x2066..=0x2069 | 0x200E | 0x200F | 0x061C => {
                "a bidirectional control, which changes how the text around it is displayed"
            }
            0x200B | 0x2060 | 0xFEFF => "a zero-width space",
            _ => "an invisible formatting character",
        };
        return Some(format!(
            "contains U+{code:04X}, {what}; retype it without that character"
        ));
    }
    if is_private_use_or_nonchar(c) {
        return Some(format!(
            "contains U+{code:04X}, a private-use code point or noncharacter that means nothing \
             outside one program; retype it"
        ));
    }
    None
}

/// Free text (an arbiter's note): trimmed, at most `max` characters, none of
/// the refused characters. May be empty.
pub fn check_text(text: &str, max: usize) -> Result<String, Problem> {
    let text = text.trim();
    let count = text.chars().count();
    if count > max {
        return Err(format!(
            "longer than {max} characters ({count}); shorten it"
        ));
    }
    if let Some(problem) = text.chars().find_map(refused) {
        return Err(problem);
    }
    Ok(text.to_owned())
}

/// A person's name (a player, an arbiter): [`check_text`], not empty, and
/// with at least one letter.
pub fn check_name(text: &str, max: usize) -> Result<String, Problem> {
    let name = check_text(text, max)?;
    if name.is_empty() {
        return Err("is empty; write the name (\"Surname, Given name\")".into());
    }
    if !name.chars().any(char::is_alphabetic) {
        return Err(format!(
            "{name:?} has no letter; a name is written with letters (\"Surname, Given name\")"
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_names_pass_in_any_script() {
        for name in [
            "Carlsen, Magnus",
            "Nepomniachtchi, Ian",
            "Ding, Liren",
            "丁立人",
            "Müller-Lüdenscheidt, Jürgen",
            "O'Brien, Seán",
            "Ghaem Maghami, Ehsan",
            // Persian with a zero-width non-joiner, as the name is written.
            "می\u{200C}خواهم",
            "Ramesh, R.B.",
        ] {
            assert_eq!(check_name(name, 100).as_deref(), Ok(name), "{name}");
        }
        assert_eq!(
            check_name("  Doe, Jane \t", 100).as_deref(),
            Ok("Doe, Jane")
        );
    }

    #[test]
    fn invisible_and_reordering_characters_are_refused() {
        for (text, says) in [
            ("Doe\u{202E}enaJ", "U+202E"),
            ("\u{200B}", "U+200B"),
            ("Doe\u{2028}Jane", "U+2028"),
            ("Doe\u{2029}Jane", "U+2029"),
            ("Doe\u{2066}x\u{2069}", "U+2066"),
            ("\u{FEFF}Doe", "U+FEFF"),
            ("Doe\nJane", "control"),
            ("Doe\u{E000}", "U+E000"),
            ("Doe\u{FFFF}", "U+FFFF"),
        ] {
            let e = check_name(text, 100).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        assert!(check_name("\u{200D}\u{200C}", 100)
            .unwrap_err()
            .contains("no letter"));
        assert!(check_name("   ", 100).unwrap_err().contains("empty"));
        assert!(check_name("1234", 100).unwrap_err().contains("no letter"));
        assert!(check_name(&"x".repeat(101), 100)
            .unwrap_err()
            .contains("longer than 100"));
    }

    #[test]
    fn notes_may_be_empty_but_not_invisible() {
        assert_eq!(check_text("", 10).as_deref(), Ok(""));
        assert_eq!(check_text(" 7.5.5 ", 10).as_deref(), Ok("7.5.5"));
        assert!(check_text("a\u{202E}b", 10).is_err());
    }
}
