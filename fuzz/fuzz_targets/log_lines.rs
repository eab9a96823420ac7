//! `repro inspect`'s line reader and format normaliser on arbitrary bytes (see
//! `repro::fuzzing::log_lines`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    repro::fuzzing::log_lines(data);
});
