//! Fuzzes the DGT decoders with arbitrary bytes in arbitrary chunkings.
//!
//! Input layout: byte 0 picks the mode (bit 0: bus) and the chunk size (bits 1..7,
//! plus one), the rest is the byte stream. Checked on every input: no panic, every
//! call to `next` either yields or returns `None` within a bounded number of calls,
//! and every decoded frame re-encodes to bytes that decode to the same frame.

#![no_main]

use eboard_protocols::dgt::{Decoder, Frame, HostDecoder, Mode};
use libfuzzer_sys::fuzz_target;

fn reencode(frame: &Frame, mode: Mode) {
    let mut bytes = Vec::new();
    match frame {
        Frame::Single(m) => m.encode(&mut bytes),
        Frame::Bus(m) => m.encode(&mut bytes),
    }
    let mut d = Decoder::new(mode);
    d.push(&bytes);
    match d.next() {
        Some(Ok(again)) => assert_eq!(&again, frame, "re-encoded frame decodes differently"),
        other => panic!("re-encoded {frame:?} as {bytes:02x?}, which decodes as {other:?}"),
    }
    assert!(d.next().is_none(), "re-encoded frame left bytes behind");
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    let mode = if control & 1 == 0 { Mode::Single } else { Mode::Bus };
    let chunk = usize::from(control >> 1) + 1;

    let mut d = Decoder::new(mode);
    let mut host = HostDecoder::new();
    for piece in stream.chunks(chunk) {
        d.push(piece);
        // Each result consumes at least one byte or clears a pending report.
        let mut budget = stream.len() + 2;
        while let Some(r) = d.next() {
            budget = budget.checked_sub(1).expect("decoder yields without consuming");
            if let Ok(frame) = r {
                reencode(&frame, mode);
            }
        }
        host.push(piece);
        let mut budget = stream.len() + 2;
        while host.next().is_some() {
            budget = budget.checked_sub(1).expect("host decoder yields without consuming");
        }
    }
});
