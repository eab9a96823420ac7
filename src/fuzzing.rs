//! Entry points for the fuzz targets (`fuzz/`, cargo-fuzz on nightly) and the stable,
//! deterministic mutation loop (`tests/fuzz_stable.rs`): each takes arbitrary bytes and runs
//! one of the parsers repro feeds with input it does not control. Not an API: `#[doc(hidden)]`.
//!
//! Each must never panic, whatever the bytes; the fuzzers report a panic as a crash.

use std::io::Cursor;
use std::path::PathBuf;

use crate::catalog::{self, Catalog, Source};
use crate::inspect::formats::{self, Normaliser};
use crate::inspect::reader::BoundedLines;
use crate::redact::Redactor;

/// The scenario loader: the bytes as one more scenario file next to the built-in ones (a
/// topology, check or signals file by its content), validated; every check that loads is
/// planned, and the diagnostics are rendered (positions into odd UTF-8 must not panic).
pub fn scenario(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let Ok(mut sources) = catalog::sources(None) else {
        return;
    };
    // As the signals file too, half the time, so its own rules are reached.
    let as_signals = data.first().is_some_and(|b| b & 1 == 1);
    if as_signals {
        sources.retain(|s| !s.path.ends_with("checks/signals.yaml"));
    }
    sources.push(Source {
        path: PathBuf::from(if as_signals {
            "checks/signals.yaml"
        } else {
            "fuzz.yaml"
        }),
        text,
    });
    match Catalog::from_sources("<fuzz>".into(), sources) {
        Ok(cat) => {
            for (c, _) in &cat.checks {
                if let Ok(sc) = cat.scenario(&c.name, None) {
                    let v = sc.topology.default_version.clone();
                    let _ = crate::plan::plan(&sc, &v, "fuzz");
                }
            }
        }
        Err(d) => {
            let _ = d.to_string();
        }
    }
}

/// `repro inspect`'s line reader and format normaliser: lines cut at a small bound (so long
/// lines are exercised), formats detected on a sample, every line classified and joined, and
/// the k3s line inside each entry parsed.
pub fn log_lines(data: &[u8]) {
    let mut lines = BoundedLines::new(Cursor::new(data), 4096);
    let mut buf = Vec::new();
    let mut all = Vec::new();
    while let Ok(Some(info)) = lines.next_line(&mut buf) {
        all.push((buf.clone(), info));
    }
    let stats = formats::detect(all.iter().take(200).map(|(l, _)| l.as_slice()));
    let _ = formats::looks_binary(data);
    let mut n = Normaliser::new(stats.dominant());
    let mut out = Vec::new();
    for (l, info) in &all {
        n.push(l, *info, &mut out);
    }
    n.finish(&mut out);
    for e in &out {
        let _ = formats::inner_form(&e.text);
    }
    let _ = n.stats.describe();
}

/// The parsers of build inputs (`--artifacts`, `--k3s-commit`, `bisect --commits`): a
/// `sha256sum` file searched for each name it may list (a byte-order mark, `*` binary names,
/// CRLF lines), and a commit list with its diagnostics rendered.
pub fn build_lists(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let k3s = distro::Distro::K3s.facts().binary;
    for name in ["rke2.linux-amd64.tar.gz", k3s, "sha256sum-amd64.txt", ""] {
        if let Some(sum) = crate::builds::fetch::sum_for(&text, name) {
            assert!(sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
    match crate::builds::commits::parse(std::path::Path::new("fuzz.txt"), &text) {
        Ok(list) => assert!(list.iter().all(|c| c.len() == 40)),
        Err(d) => {
            let _ = d.to_string();
        }
    }
}

/// The redactor over a file's text: learns what the file names as secrets, then redacts it.
/// Returns the redacted text (the stable loop checks planted secrets are gone).
pub fn redact(name: &str, data: &[u8], extra_secrets: &[String]) -> String {
    let text = String::from_utf8_lossy(data);
    let mut r = Redactor::new(extra_secrets);
    r.learn_file(name, &text);
    let mut out = r.redact_file(name, &text);
    out.push_str(&r.scrub(&text, true));
    out
}
