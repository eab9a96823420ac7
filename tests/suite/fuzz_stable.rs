//! The fuzz targets of `fuzz/` on the stable toolchain: a bounded, deterministic mutation loop
//! (seeded PRNG, the corpus in `fuzz/corpus/<target>/`), so `make test` runs them everywhere.
//! cargo-fuzz (nightly, coverage-guided) goes deeper: see fuzz/README.md.
//!
//! Each target must not panic on any input; the redactor must never let the planted secret
//! through. Iterations per target: `REPRO_FUZZ_ITERS` (default below); a panicking input is
//! written to `target/fuzz-stable-crashes/` to replay.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const DEFAULT_ITERS: u64 = 1500;

/// A value only the planted spots hold; the redactor is told it, as `--secret` does.
const PLANTED: &str = "PlantedSecret0x5eed7f3a9c";

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes and tokens that reach the parsers' corners: YAML syntax, anchors and tags, numbers that
/// overflow, control and multi-byte characters, log prefixes, secrets' shapes.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\t",
    b" ",
    b": ",
    b"- ",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b"'",
    b"\"",
    b"#",
    b"&a ",
    b"*a",
    b"<<: *a",
    b"!!binary ",
    b"!!str ",
    b"? ",
    b"|\n",
    b">-\n",
    b"---\n",
    b"...\n",
    b"~",
    b"null",
    b"true",
    b"1e999",
    b"-9999999999999999999999",
    b"0x7fffffffffffffff",
    b"\x00",
    b"\x1b[2J",
    b"\x1b]0;t",
    b"\xc2\x9b",
    b"\xff\xfe",
    b"\xe2\x80\xa8",
    b"\xf0\x9f\x92\xa5",
    b"time=\"2026-11-30T09:00:00Z\" level=info msg=\"",
    b"2026-11-30T09:00:00.123456789Z ",
    b"Nov 30 09:00:00 host k3s[1]: ",
    b"I1130 09:00:00.000000       1 x.go:1] ",
    b"$ ",
    b"k3s is up and running",
    b"Starting k3s v1.33.4+k3s1 (abc)",
    b"Running kubelet",
    b"level=fatal msg=\"",
    b"name: ",
    b"nodes:",
    b"steps:",
    b"signals:",
    b"role: etcd",
    b"init: true",
    b"join: ",
    b"expect:",
    b"restart: [",
    b"config:",
    b"files:",
    b"env:",
    b"k3s-version: v1.33.4+k3s1",
    b"fixed-in: [v1.33.5+k3s1]",
    b"settle: 3s",
    b"token: ",
    b"password: ",
    b"auth: ",
    b"K3S_TOKEN=",
    b"Bearer ",
    b"-----BEGIN PRIVATE KEY-----",
    b"https://user:pa@ss@host/",
    b"client-key-data: ",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => v.insert(at, rng.next() as u8),
            2 if !v.is_empty() => {
                let end = (at + 1 + rng.below(32)).min(v.len());
                let start = at.min(end);
                v.drain(start..end);
            }
            3 if !v.is_empty() => {
                // Duplicate a range (repeats, deep nesting).
                let start = rng.below(v.len());
                let end = (start + 1 + rng.below(64)).min(v.len());
                let chunk = v[start..end].to_vec();
                for _ in 0..1 + rng.below(4) {
                    v.splice(at.min(v.len())..at.min(v.len()), chunk.iter().copied());
                }
            }
            4 => {
                // Splice in part of another corpus entry.
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let s = rng.below(other.len());
                    let e = (s + 1 + rng.below(256)).min(other.len());
                    v.splice(at..at, other[s..e].iter().copied());
                }
            }
            5 => v.truncate(at),
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
        }
    }
    v
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let out: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|p| {
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                std::fs::read(p).expect("corpus file"),
            )
        })
        .collect();
    assert!(!out.is_empty(), "{} is empty", dir.display());
    out
}

fn iterations() -> u64 {
    std::env::var("REPRO_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_ITERS)
}

thread_local! {
    /// Set while a target runs on this thread: its panics are counted, not printed.
    static IN_TARGET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One panic hook for the whole binary (tests run in parallel): silent inside a target, the
/// default one elsewhere (so a failing assertion still prints).
fn quiet_panics_in_targets() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_TARGET.with(|t| t.get()) {
                default(info);
            }
        }));
    });
}

/// Runs `f` on the corpus and `iterations()` mutants of it; returns the panicking inputs.
fn run(target: &str, seed: u64, f: &dyn Fn(&str, &[u8])) -> (u64, Vec<Vec<u8>>) {
    let seeds = corpus(target);
    let bytes: Vec<Vec<u8>> = seeds.iter().map(|(_, b)| b.clone()).collect();
    let mut rng = Rng(seed);
    let mut crashes = Vec::new();
    quiet_panics_in_targets();
    let mut runs = 0;
    let mut one = |name: &str, input: &[u8]| {
        runs += 1;
        IN_TARGET.with(|t| t.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| f(name, input)));
        IN_TARGET.with(|t| t.set(false));
        if result.is_err() {
            crashes.push(input.to_vec());
        }
    };
    for (name, b) in &seeds {
        one(name, b);
    }
    for _ in 0..iterations() {
        let i = rng.below(seeds.len());
        let m = mutate(&mut rng, &seeds[i].1, &bytes);
        one(&seeds[i].0, &m);
    }
    if !crashes.is_empty() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/fuzz-stable-crashes")
            .join(target);
        let _ = std::fs::create_dir_all(&dir);
        for (i, c) in crashes.iter().enumerate() {
            let _ = std::fs::write(dir.join(format!("crash-{i}")), c);
        }
    }
    eprintln!(
        "fuzz_stable {target}: {runs} inputs, {} panics",
        crashes.len()
    );
    (runs, crashes)
}

#[test]
fn scenario_loader_never_panics() {
    let (_, crashes) = run("scenario_loader", 0x5eed_0001, &|_, d| {
        repro::fuzzing::scenario(d)
    });
    assert!(crashes.is_empty(), "{} panicking inputs", crashes.len());
}

/// The sums files and commit lists of builds under test (`--artifacts`, `--k3s-commit`,
/// `bisect --commits`): no panic, and a sum found is always 64 hex digits, a commit 40.
#[test]
fn build_list_parsers_never_panic() {
    let (_, crashes) = run("build_lists", 0x5eed_0005, &|_, d| {
        repro::fuzzing::build_lists(d)
    });
    assert!(crashes.is_empty(), "{} panicking inputs", crashes.len());
}

#[test]
fn log_line_parser_never_panics() {
    let (_, crashes) = run("log_lines", 0x5eed_0002, &|_, d| {
        repro::fuzzing::log_lines(d)
    });
    assert!(crashes.is_empty(), "{} panicking inputs", crashes.len());
}

/// The redactor never panics and never lets the planted secret through, wherever the mutation
/// put it (it is inserted at a random place of every input).
#[test]
fn redactor_never_panics_nor_leaks() {
    let leaks = std::sync::Mutex::new(Vec::new());
    let rng = std::sync::Mutex::new(Rng(0x5eed_0004));
    let (_, crashes) = run("redactor", 0x5eed_0003, &|name, d| {
        let at = rng.lock().expect("rng").below(d.len() + 1);
        let mut input = d[..at].to_vec();
        input.extend_from_slice(PLANTED.as_bytes());
        input.extend_from_slice(&d[at..]);
        let out = repro::fuzzing::redact(name, &input, &[PLANTED.to_string()]);
        if out.contains(PLANTED) {
            leaks.lock().expect("leaks").push(input);
        }
    });
    assert!(crashes.is_empty(), "{} panicking inputs", crashes.len());
    let leaks = leaks.into_inner().expect("leaks");
    assert!(
        leaks.is_empty(),
        "{} inputs leaked the planted secret, first: {:?}",
        leaks.len(),
        String::from_utf8_lossy(&leaks[0])
    );
}
