//! Fuzzes the capture reader and `replay` with arbitrary bytes as a capture
//! file. The checks are `eboard_bridge::sim::fuzzing::capture_reader`'s, which the
//! test suite also runs over `fuzz/seeds/capture_reader` (tests/fuzz_smoke.rs).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    eboard_bridge::sim::fuzzing::capture_reader(data);
});
