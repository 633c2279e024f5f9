//! The virtual board on a pseudo-terminal, driven by a host exactly as the daemon
//! drives a real board: tokio-serial at 9600 baud, the start-up commands, then a
//! whole real game arriving as field updates and clock messages.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use eboard_bridge::cli::emulate::{load_game, serve_bus_pty, serve_pty, EmulateOptions};
use eboard_protocols::dgt::{bus_checksum, BusReply, Decoder, Frame, Message, Mode};
use eboard_protocols::Picture;
use shakmaty::Position;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_serial::SerialPortBuilderExt;

fn game_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/games/python-chess-molinari-bordais-1979.pgn")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_receives_a_whole_game_over_a_pty() {
    let game = load_game(&game_file(), 1).unwrap();
    assert_eq!(game.moves.len(), 10);
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("dgt0");
    let opts = EmulateOptions {
        seed: 7,
        speed: 1000.0,
        hand_speed: 3.0,
        start_after_host: Some(500),
        link: Some(link.clone()),
        ..EmulateOptions::default()
    };
    let handle = serve_pty(&game, &opts).unwrap();
    assert_eq!(std::fs::read_link(&link).unwrap(), handle.path());

    let mut port = tokio_serial::new(link.to_string_lossy(), 9600)
        .open_native_async()
        .expect("open the pty as a serial port");
    // Start-up as the daemon does it: reset, serial, version, dump, update-nice.
    for b in [0x40u8, 0x45, 0x4d, 0x42, 0x4b] {
        port.write_all(&[b]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let want = Picture::from_board(game.final_position().board());
    let mut decoder = Decoder::new(Mode::Single);
    let mut picture: Option<Picture> = None;
    let (mut serial, mut version, mut updates, mut clocks, mut running) = (None, None, 0, 0, 0);
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut buf = [0u8; 256];
    while Instant::now() < deadline {
        let n = match tokio::time::timeout(Duration::from_millis(200), port.read(&mut buf)).await {
            Ok(r) => r.unwrap(),
            Err(_) => 0,
        };
        decoder.push(&buf[..n]);
        while let Some(frame) = decoder.next() {
            match frame.unwrap() {
                Frame::Single(Message::SerialNumber(s)) => serial = Some(s),
                Frame::Single(Message::Version { major, minor }) => version = Some((major, minor)),
                Frame::Single(Message::BoardDump(p)) => picture = Some(p),
                Frame::Single(Message::FieldUpdate { square, sensed }) => {
                    picture
                        .as_mut()
                        .expect("the dump comes first")
                        .set(square, sensed);
                    updates += 1;
                }
                Frame::Single(Message::Clock(t)) => {
                    clocks += 1;
                    running += usize::from(t.running);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        if handle.game_over() && picture.as_ref() == Some(&want) && n == 0 {
            break;
        }
    }
    assert_eq!(serial.as_deref(), Some("01025"));
    assert_eq!(version, Some((1, 7)));
    assert_eq!(
        picture.as_ref(),
        Some(&want),
        "dump + field updates = final position"
    );
    assert!(updates >= 20, "two or more field updates a move: {updates}");
    assert!(
        clocks >= 2 && running >= 1,
        "{clocks} clock messages, {running} running"
    );
    assert_eq!(handle.dropped_bytes(), 0);

    drop(port);
    handle.stop().unwrap();
    assert!(
        std::fs::symlink_metadata(&link).is_err(),
        "the link is removed"
    );
}

#[test]
fn clear_errors_for_missing_files_and_games() {
    let err = load_game(std::path::Path::new("/nonexistent/x.pgn"), 1).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/x.pgn"), "{err}");
    let err = load_game(&game_file(), 5).unwrap_err();
    assert!(err.to_string().contains("--game 1..=1"), "{err}");
}

fn bus_frame(kind: u8, address: u16) -> Vec<u8> {
    let mut f = vec![kind, ((address >> 7) & 0x7f) as u8, (address & 0x7f) as u8];
    f.push(bus_checksum(&f));
    f
}

/// Reads bus replies for `ms` milliseconds.
async fn bus_replies(
    port: &mut tokio_serial::SerialStream,
    d: &mut Decoder,
    ms: u64,
) -> Vec<(u16, BusReply)> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let until = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < until {
        if let Ok(r) = tokio::time::timeout(Duration::from_millis(50), port.read(&mut buf)).await {
            d.push(&buf[..r.unwrap()]);
        }
        while let Some(f) = d.next() {
            match f.unwrap() {
                Frame::Bus(m) => got.push((m.address, m.reply)),
                other => panic!("single-board frame on the bus: {other:?}"),
            }
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_boards_share_one_line_in_bus_mode() {
    let game = load_game(&game_file(), 1).unwrap();
    let opts = EmulateOptions {
        seed: 11,
        speed: 1000.0,
        hand_speed: 3.0,
        start_after_host: Some(300),
        ..EmulateOptions::default()
    };
    let games = vec![game.clone(), game.clone(), game.clone()];
    let handle = serve_bus_pty(&games, &opts).unwrap();
    let mut port = tokio_serial::new(handle.path().to_string_lossy(), 9600)
        .open_native_async()
        .unwrap();
    let mut d = Decoder::new(Mode::Bus);

    // Discovery: every board answers an address-0 ping within 1100 ms.
    port.write_all(&bus_frame(0x87, 0)).await.unwrap();
    let mut pings: Vec<u16> = bus_replies(&mut port, &mut d, 1_500)
        .await
        .into_iter()
        .map(|(a, r)| {
            assert_eq!(r, BusReply::Ping);
            a
        })
        .collect();
    pings.sort();
    assert_eq!(pings, [1025, 1026, 1027]);

    // Wait for the games to end, then ask each board for its board.
    let deadline = Instant::now() + Duration::from_secs(40);
    while !handle.game_over() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(handle.game_over());
    // The hands are done; a board's sensors report the last piece set down one
    // scan later. Ask each board until its dump shows the final position.
    let want = Picture::from_board(game.final_position().board());
    for address in [1025u16, 1026, 1027] {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            port.write_all(&bus_frame(0x82, address)).await.unwrap();
            let got = bus_replies(&mut port, &mut d, 300).await;
            assert_eq!(got.len(), 1, "only board {address} answers: {got:?}");
            assert_eq!(got[0].0, address);
            let BusReply::BoardDump(picture) = &got[0].1 else {
                panic!("board {address} answered BUS_SEND_BRD with {:?}", got[0].1);
            };
            if *picture == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "board {address} never showed the final position: {picture:?}"
            );
        }
    }
    // A wrong checksum gets no answer at all.
    let mut bad = bus_frame(0x82, 1025);
    bad[3] ^= 0x01;
    port.write_all(&bad).await.unwrap();
    assert!(bus_replies(&mut port, &mut d, 300).await.is_empty());
    drop(port);
    handle.stop().unwrap();
}
