//! Throughput of the board → host decoder on mixed DGT traffic.
//!
//! The stream imitates a tournament game in UPDATE mode: per move about ten BWTIME
//! messages (one a second), four field updates (lift, place, and the scan
//! artefacts of a capture) and the board dump the host asks for after the
//! updates settle. A second stream adds the EE_MOVES dump a host reads when it
//! connects. Both are fed in 64-byte chunks (a USB read) and 4 KiB chunks (a
//! backlog read in one go).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use eboard_protocols::dgt::{BwTime, Decoder, DgtSideTime, EeRecord, Frame, Message, Mode};
use eboard_protocols::picture::{Picture, Sensed};
use shakmaty::{Board, Color, Piece, Role, Square};

fn game_traffic(with_ee_dump: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let push = |m: Message, out: &mut Vec<u8>| m.encode(out);
    push(Message::SerialNumber("01025".into()), &mut out);
    push(Message::Version { major: 1, minor: 7 }, &mut out);
    if with_ee_dump {
        let mut records = Vec::new();
        for i in 0..3967u32 {
            records.push(EeRecord::Field {
                square: Square::new(i % 64),
                sensed: Sensed::Piece(Piece {
                    color: Color::White,
                    role: Role::Knight,
                }),
                recent: false,
            });
        }
        records.extend([EeRecord::Nop, EeRecord::Eof]);
        push(Message::EeMoves(records), &mut out);
    }
    let board = Picture::from_board(&Board::default());
    let mut secs: u32 = 5400;
    for mv in 0..80u32 {
        for _ in 0..10 {
            secs -= 1;
            let side = |s: u32| DgtSideTime {
                hours: (s / 3600) as u8,
                minutes: (s / 60 % 60) as u8,
                seconds: (s % 60) as u8,
                time_per_move: true,
                ..DgtSideTime::default()
            };
            push(
                Message::Clock(BwTime {
                    left: side(secs),
                    right: side(5400 - (mv * 7) % 600),
                    running: true,
                    left_turn: true,
                    ..BwTime::default()
                }),
                &mut out,
            );
        }
        for k in 0..4u32 {
            push(
                Message::FieldUpdate {
                    square: Square::new((mv * 5 + k * 11) % 64),
                    sensed: if k % 2 == 0 {
                        Sensed::Empty
                    } else {
                        Sensed::Piece(Piece {
                            color: Color::Black,
                            role: Role::Bishop,
                        })
                    },
                },
                &mut out,
            );
        }
        push(Message::BoardDump(board.clone()), &mut out);
    }
    out
}

fn decode_all(bytes: &[u8], chunk: usize) -> usize {
    let mut d = Decoder::new(Mode::Single);
    let mut frames = 0;
    for c in bytes.chunks(chunk) {
        d.push(c);
        loop {
            // Borrow the result where `next` built it: binding it by value would
            // copy the whole 136-byte frame, which is the consumer's cost.
            let r = d.next();
            let Some(r) = r.as_ref() else { break };
            black_box(r);
            frames += usize::from(matches!(r, Ok(Frame::Single(_))));
        }
    }
    frames
}

fn bench(c: &mut Criterion) {
    for (name, ee) in [("game", false), ("game+ee_dump", true)] {
        let bytes = game_traffic(ee);
        let mut g = c.benchmark_group(format!("dgt_decode/{name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        for chunk in [64usize, 4096] {
            g.bench_function(format!("chunk{chunk}"), |b| {
                b.iter(|| decode_all(black_box(&bytes), chunk))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
