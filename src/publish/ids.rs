//! Stable ids for what the feeds publish: the same event, round and board give
//! the same id in every run, on every machine, so a consumer that matches games
//! by id (Lichess by the PGN `GameId` tag, LiveChess clients by the EBAPI game
//! `uuid`) keeps following a game across updates and daemon restarts.
//!
//! The ids are name-based UUIDs (RFC 9562 version 5: SHA-1 of a namespace and
//! a name), written in the usual lowercase 8-4-4-4-12 form, because the
//! LiveChess tools parse tournament ids as UUIDs.

use sha1::{Digest, Sha1};

/// The namespace of every id this program makes (a random UUID, fixed forever).
const NAMESPACE: [u8; 16] = [
    0x5e, 0x0b, 0x3c, 0x1a, 0x8f, 0x47, 0x4d, 0x2e, 0x9a, 0x61, 0x0c, 0xd4, 0x73, 0x28, 0xb5, 0xe9,
];

/// The version-5 UUID of `name` in this program's namespace.
pub fn uuid_v5(name: &str) -> String {
    uuid_v5_in(&NAMESPACE, name)
}

fn uuid_v5_in(namespace: &[u8; 16], name: &str) -> String {
    let mut h = Sha1::new();
    h.update(namespace);
    h.update(name.as_bytes());
    let digest = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The tournament's id, from its configured name (`None`: no name configured).
pub fn tournament_id(event: Option<&str>) -> String {
    uuid_v5(&format!("tournament\n{}", event.unwrap_or("")))
}

/// The id of the game of `event`, `round`, `board`: the PGN `GameId` and the
/// EBAPI game `uuid`. A game replayed on the same board in the same round (an
/// armageddon, a restart) keeps it: the feeds show one game per board and round.
pub fn game_id(event: Option<&str>, round: u32, board: u32) -> String {
    uuid_v5(&format!("game\n{}\n{round}\n{board}", event.unwrap_or("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_version_5_uuids() {
        let a = game_id(Some("Hometown Open"), 3, 12);
        assert_eq!(a, game_id(Some("Hometown Open"), 3, 12));
        assert_ne!(a, game_id(Some("Hometown Open"), 3, 13));
        assert_ne!(a, game_id(Some("Hometown Open"), 4, 12));
        assert_ne!(a, game_id(Some("Other"), 3, 12));
        assert_ne!(game_id(None, 1, 1), tournament_id(None));
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('5'), "version 5: {a}");
        assert!(
            matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
            "RFC variant: {a}"
        );
        assert!(a
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
    }

    #[test]
    fn the_rfc_example_comes_out() {
        // RFC 9562 Appendix A.4: www.example.com in the DNS namespace.
        let dns = [
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8,
        ];
        assert_eq!(
            uuid_v5_in(&dns, "www.example.com"),
            "2ed6657d-e927-568b-95e1-2665a8aea6a2"
        );
    }
}
