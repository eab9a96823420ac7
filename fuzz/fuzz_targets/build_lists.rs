//! The sums files and commit lists of builds under test (see `repro::fuzzing::build_lists`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    repro::fuzzing::build_lists(data);
});
