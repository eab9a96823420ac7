//! The scenario loader: arbitrary bytes as a topology, check or signals file next to the
//! built-in ones (see `repro::fuzzing::scenario`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    repro::fuzzing::scenario(data);
});
