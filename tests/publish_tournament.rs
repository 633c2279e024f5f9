//! Tournament data: configuration tables and FIDE TRF pairings.

use eboard_bridge::publish::tournament::parse_trf;
use eboard_bridge::publish::{
    PairingConfig, Player, Tournament, TournamentConfig, TournamentError,
};

/// A `001` line with the TRF-16 column layout.
#[allow(clippy::too_many_arguments)]
fn line(
    rank: u32,
    title: &str,
    name: &str,
    rating: u32,
    fed: &str,
    id: u64,
    rounds: &[(u32, char, char)],
) -> String {
    let mut s = format!(
        "001 {rank:>4} m{title:>3} {name:<33} {rating:>4} {fed:<3} {id:>11} {:<10} {:>4} {:>4}",
        "1990/01/01", "1.0", rank
    );
    for (opp, colour, result) in rounds {
        let opp = if *opp == 0 {
            "0000".to_string()
        } else {
            format!("{opp:>4}")
        };
        s.push_str(&format!("  {opp} {colour} {result}"));
    }
    s
}

fn trf() -> String {
    [
        "012 Test Open".to_string(),
        "042 2026/11/20".to_string(),
        // Round 1: 1-3 (1 wins), 2-4 (draw). Round 2: 4 (0.5) - 1 (1.0) and 3 (0) - 2 (0.5).
        line(
            1,
            "GM",
            "Alpha, Anna",
            2600,
            "NOR",
            1000001,
            &[(3, 'w', '1'), (4, 'b', ' ')],
        ),
        line(
            2,
            "g",
            "Beta, Bo",
            2500,
            "SWE",
            1000002,
            &[(4, 'w', '='), (3, 'b', ' ')],
        ),
        line(
            3,
            "",
            "Gamma, Gil",
            2400,
            "DEN",
            0,
            &[(1, 'b', '0'), (2, 'w', ' ')],
        ),
        line(
            4,
            "IM",
            "Delta, Di",
            2300,
            "FIN",
            1000004,
            &[(2, 'b', '='), (1, 'w', ' ')],
        ),
    ]
    .join("\n")
}

#[test]
fn trf_rounds_become_pairings_in_board_order() {
    let p = parse_trf(&trf()).unwrap();
    let names = |r, b| {
        let (w, k) = &p[&(r, b)];
        (w.name.as_str(), k.name.as_str())
    };
    assert_eq!(names(1, 1), ("Alpha, Anna", "Gamma, Gil"));
    assert_eq!(names(1, 2), ("Beta, Bo", "Delta, Di"));
    // Round 2: the leader's game (Alpha, 1 point) is board 1.
    assert_eq!(names(2, 1), ("Delta, Di", "Alpha, Anna"));
    assert_eq!(names(2, 2), ("Gamma, Gil", "Beta, Bo"));
    assert_eq!(p.len(), 4);
    let (alpha, gamma) = &p[&(1, 1)];
    assert_eq!(alpha.title.as_deref(), Some("GM"));
    assert_eq!(alpha.rating, Some(2600));
    assert_eq!(alpha.fide_id, Some(1000001));
    assert_eq!(alpha.federation.as_deref(), Some("NOR"));
    assert_eq!(gamma.fide_id, None, "0 means no FIDE id");
    assert_eq!(gamma.title, None);
    assert_eq!(
        p[&(1, 2)].0.title.as_deref(),
        Some("GM"),
        "TRF's short title `g`"
    );
}

#[test]
fn a_bye_pairs_nobody() {
    let text = [
        line(1, "", "One, A", 2000, "GER", 1, &[(2, 'w', '1')]),
        line(2, "", "Two, B", 1900, "GER", 2, &[(1, 'b', '0')]),
        line(3, "", "Three, C", 1800, "GER", 3, &[(0, '-', 'U')]),
    ]
    .join("\n");
    let p = parse_trf(&text).unwrap();
    assert_eq!(p.len(), 1);
}

#[test]
fn a_broken_trf_line_is_reported_with_its_number() {
    let text = format!(
        "012 X\n{}\n001 abcd",
        line(1, "", "One, A", 2000, "GER", 1, &[])
    );
    match parse_trf(&text) {
        Err(TournamentError::Trf { line, what }) => {
            assert_eq!(line, 3);
            assert!(what.contains("starting rank"), "{what}");
        }
        other => panic!("expected a TRF error, got {other:?}"),
    }
}

#[test]
fn configured_pairings_win_over_the_trf() {
    let cfg: toml::Table = toml::from_str(
        r#"
        [tournament]
        name = "Test Open"
        rounds = 9
        current_round = 2
        delay_secs = 900

        [[pairing]]
        board = 1
        white = { name = "Override, Olga", title = "wgm", rating = 2350 }
        black = { name = "Alpha, Anna" }
        "#,
    )
    .unwrap();
    let config: TournamentConfig = cfg["tournament"].clone().try_into().unwrap();
    let pairings: Vec<PairingConfig> = cfg["pairing"].clone().try_into().unwrap();
    let mut t = Tournament::new(config, &pairings).unwrap();
    t.add_trf(&trf()).unwrap();
    assert_eq!(t.config.rounds, 9);
    assert_eq!(t.config.delay_secs, 900);
    let (w, _) = t.pairing(2, 1).unwrap();
    assert_eq!(w.name, "Override, Olga");
    assert_eq!(w.title.as_deref(), Some("WGM"));
    assert_eq!(
        t.pairing(2, 2).unwrap().0.name,
        "Gamma, Gil",
        "the TRF fills the rest"
    );
    assert_eq!(t.boards(2).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn bad_pairing_tables_are_refused_with_the_reason() {
    let p: Vec<PairingConfig> = toml::from_str::<toml::Table>(
        "[[pairing]]\nboard = 1\nwhite = { name = \"A\" }\nblack = { name = \"B\" }\n\
         [[pairing]]\nboard = 1\nwhite = { name = \"C\" }\nblack = { name = \"D\" }\n",
    )
    .unwrap()["pairing"]
        .clone()
        .try_into()
        .unwrap();
    let err = Tournament::new(TournamentConfig::default(), &p).unwrap_err();
    assert!(
        err.to_string().contains("round 1 board 1 is given twice"),
        "{err}"
    );
    let unnamed: Vec<PairingConfig> = vec![PairingConfig {
        round: Some(1),
        board: 2,
        white: Default::default(),
        black: Default::default(),
    }];
    let err = Tournament::new(TournamentConfig::default(), &unnamed).unwrap_err();
    assert!(err.to_string().contains("need a name"), "{err}");
    // The one name rule: a right-to-left override would turn the name round
    // in every PGN viewer.
    let reversed: Vec<PairingConfig> = vec![PairingConfig {
        round: Some(1),
        board: 2,
        white: Player {
            name: "Doe\u{202E}enaJ".into(),
            ..Default::default()
        },
        black: Player {
            name: "Roe, Rick".into(),
            ..Default::default()
        },
    }];
    let err = Tournament::new(TournamentConfig::default(), &reversed).unwrap_err();
    assert!(
        err.to_string().contains("white.name") && err.to_string().contains("U+202E"),
        "{err}"
    );
}

#[test]
fn a_windows_1252_trf_file_keeps_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let text = [
        line(1, "", "Sørensen, Åse", 2200, "DEN", 5, &[(2, 'w', '1')]),
        line(2, "", "Müller, Jörg", 2100, "GER", 6, &[(1, 'b', '0')]),
    ]
    .join("\r\n");
    // Swiss-Manager's Windows-1252: these letters are one byte each.
    let bytes: Vec<u8> = text
        .chars()
        .map(|c| u8::try_from(u32::from(c)).unwrap())
        .collect();
    let path = dir.path().join("open.trf");
    std::fs::write(&path, bytes).unwrap();
    let t = Tournament::load(
        TournamentConfig {
            trf: Some(path),
            ..TournamentConfig::default()
        },
        &[],
    )
    .unwrap();
    let (w, b) = t.pairing(1, 1).unwrap();
    assert_eq!(w.name, "Sørensen, Åse");
    assert_eq!(w.rating, Some(2200));
    assert_eq!(w.federation.as_deref(), Some("DEN"));
    assert_eq!(b.name, "Müller, Jörg");
    assert_eq!(b.fide_id, Some(6));
}

#[test]
fn a_missing_trf_file_and_a_too_long_delay_are_explained() {
    let err = Tournament::load(
        TournamentConfig {
            trf: Some("/nonexistent/open.trf".into()),
            ..TournamentConfig::default()
        },
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/open.trf"), "{err}");
    let err = Tournament::new(
        TournamentConfig {
            delay_secs: 7200,
            ..TournamentConfig::default()
        },
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("maximum of 3600"), "{err}");
}
