//! Benchmark (not a test): the redactor on hostile lines up to inspect's line limit (256 KiB),
//! to show it takes time linear in the line's length (issue #24: `a=a=a=…` was quadratic,
//! 274 s at 64 KiB).
//!
//! Each shape is a line of 16, 64 and 256 KiB, redacted by the same code every error message,
//! log line and `repro redact` goes through (`repro::term::redacted`: a fresh context, shapes
//! only) and, for the last shape, by a context that already knows 200 secrets. For each it
//! prints the median wall time of 3 runs, the throughput, and the growth from 64 KiB to 256 KiB:
//! about 4× is linear, 16× would be quadratic.
//!
//! Run with `cargo run --release --example redact_bench` (also `make bench`). Prints figures;
//! asserts nothing. `REDACT_BENCH_RUNS` sets the repetitions (default 3).

use std::time::{Duration, Instant};

const KIB: usize = 1024;
const SIZES: [usize; 3] = [16 * KIB, 64 * KIB, 256 * KIB];

/// A line of exactly `len` bytes made of `unit` repeated (cut at a char boundary).
fn chain(unit: &str, len: usize) -> String {
    let mut s = unit.repeat(len / unit.len() + 1);
    s.truncate(len);
    s
}

/// Base64 text of `len` bytes from a fixed linear congruential sequence (no secret shape, so
/// every rule scans it to the end).
fn base64ish(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A hostile line's name and how to make one of a given length.
type Shape = (&'static str, Box<dyn Fn(usize) -> String>);

fn main() {
    let runs: usize = std::env::var("REDACT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let shapes: Vec<Shape> = vec![
        ("a=a=a=…", Box::new(|n| chain("a=", n))),
        (":@:@:@…", Box::new(|n| chain(":@", n))),
        (
            "a://a:@… (URL credentials)",
            Box::new(|n| chain("a://a:@", n)),
        ),
        ("--a --a … (flags)", Box::new(|n| chain("--a ", n))),
        (
            "msg=\\\"… (logrus escapes)",
            Box::new(|n| chain("msg=\\\"", n)),
        ),
        (
            "token=<base64> (one long value)",
            Box::new(|n| format!("token={}", base64ish(n - 6))),
        ),
        ("base64, no secret", Box::new(base64ish)),
        (
            "BEGIN PRIVATE KEY, END cut off",
            Box::new(|n| format!("-----BEGIN RSA PRIVATE KEY-----\\n{}", base64ish(n - 34))),
        ),
    ];
    println!(
        "redactor on hostile lines, median of {runs} runs ({} build)",
        build()
    );
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>9} {:>8}",
        "shape", "16 KiB", "64 KiB", "256 KiB", "MiB/s", "64→256"
    );
    for (name, make) in &shapes {
        let times: Vec<Duration> = SIZES
            .iter()
            .map(|&n| {
                let line = make(n);
                median(
                    (0..runs)
                        .map(|_| {
                            let t = Instant::now();
                            let out = repro::term::redacted(&line);
                            let took = t.elapsed();
                            std::hint::black_box(out);
                            took
                        })
                        .collect(),
                )
            })
            .collect();
        row(name, &times);
    }
    // A context that knows many secrets (a run's: the token, every scenario secret and their
    // derived forms) redacting a long line.
    let secrets: Vec<String> = (0..200).map(|i| format!("known-secret-{i:04}-x")).collect();
    let times: Vec<Duration> = SIZES
        .iter()
        .map(|&n| {
            let line = base64ish(n);
            median(
                (0..runs)
                    .map(|_| {
                        let t = Instant::now();
                        let out = repro::term::redacted_with(&secrets, &line);
                        let took = t.elapsed();
                        std::hint::black_box(out);
                        took
                    })
                    .collect(),
            )
        })
        .collect();
    row("base64, 200 secrets known", &times);
}

fn row(name: &str, times: &[Duration]) {
    let ms = |d: &Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    let mib_s = (SIZES[2] as f64 / (1024.0 * 1024.0)) / times[2].as_secs_f64().max(1e-9);
    let growth = times[2].as_secs_f64() / times[1].as_secs_f64().max(1e-9);
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>9.1} {:>7.1}×",
        name,
        ms(&times[0]),
        ms(&times[1]),
        ms(&times[2]),
        mib_s,
        growth
    );
}

fn build() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}
