//! The redactor: never panics, and a secret it was told never comes out (see
//! `repro::fuzzing::redact`). The first byte picks the file name (the redactor's rules depend
//! on it); the planted secret is inserted in the middle of the rest.
#![no_main]

use libfuzzer_sys::fuzz_target;

const PLANTED: &str = "PlantedSecret0x5eed7f3a9c";
const NAMES: [&str; 5] = [
    "config.yaml",
    "registries.yaml",
    "boot-1.log",
    "result.json",
    "kubeconfig",
];

fuzz_target!(|data: &[u8]| {
    let (name, rest) = match data.split_first() {
        Some((b, rest)) => (NAMES[usize::from(*b) % NAMES.len()], rest),
        None => (NAMES[0], data),
    };
    let mid = rest.len() / 2;
    let mut input = rest[..mid].to_vec();
    input.extend_from_slice(PLANTED.as_bytes());
    input.extend_from_slice(&rest[mid..]);
    let out = repro::fuzzing::redact(name, &input, &[PLANTED.to_string()]);
    assert!(!out.contains(PLANTED), "the planted secret came through");
});
