//! Fuzzes the operator API's request parsing: byte 0 picks the path, byte 1
//! the method and the Content-Type, the rest is the body, answered by the real
//! router in-process. The checks are `eboard_bridge::sim::fuzzing::operator_api`'s,
//! which the test suite also runs over `fuzz/seeds/operator_api`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    eboard_bridge::sim::fuzzing::operator_api(data);
});
