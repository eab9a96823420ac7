//! checks/signals.yaml against real k3s logs: every excerpt in tests/fixtures/real-k3s/ (copied
//! unaltered from public issues, pull requests and docs) goes through the code `repro run` uses
//! to decide a signal from a boot's lines (`observe::eval_log`), and each signal must conclude
//! what a careful reader of the excerpt concludes, as its sidecar `NAME.yaml` records.
//!
//! An excerpt is a boot seen from outside, so two of the runner's rules are applied as a reader
//! of a pasted log must apply them:
//! - `boot-end: died` — the excerpt shows the process ending (a fatal line, systemd's exit):
//!   the boot is given a death, so `on-death` applies as in a run;
//! - `boot-end: cut` — the log goes on past the excerpt: settle windows never pass inside it
//!   (no `down` from the settle rule, only from a `down` line), so an undecided state signal
//!   is `unknown`. Not even a line k3s orders after the feature's own decides here: a pasted
//!   excerpt may leave lines out, so the runner's margin is set beyond the excerpt. Value signals read the lines there are: `none` means no line shows one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::Deserialize;

use repro::run::observe::{self, Eval};
use repro::run::watch::{Boot, Ended as BootEnd, LogLine};
use repro::scenario::{Signal, Signals};
use repro::version::K3sVersion;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-k3s")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Sidecar {
    /// Where the lines were copied from (an issue, pull request, gist or docs page).
    source: String,
    /// Which part of the source, and what was left out.
    excerpt: String,
    /// The k3s version as the source states it (free text when it is not a release).
    k3s_version: String,
    format: String,
    /// What the node was (role, config) as the source tells it.
    node: String,
    boot_end: EndKind,
    /// What a careful reader concludes, in words.
    conclusion: String,
    /// signal -> what it must observe: up, down, unknown, or a value (`none` for no value).
    signals: IndexMap<String, String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum EndKind {
    Died,
    Cut,
}

fn load_signals() -> Signals {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("checks/signals.yaml");
    let text = std::fs::read_to_string(&path).expect("read checks/signals.yaml");
    repro::load::signals(&path, &text)
        .unwrap_or_else(|d| panic!("checks/signals.yaml does not load: {d:?}"))
}

/// The excerpts, by name (file stem), each with its sidecar.
fn corpus() -> Vec<(String, Vec<String>, Sidecar)> {
    let dir = corpus_dir();
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(&dir).expect("read tests/fixtures/real-k3s") {
        let p = e.expect("dir entry").path();
        match p.extension().and_then(|x| x.to_str()) {
            Some("log") | Some("yaml") => {
                if let Some(stem) = p.file_stem() {
                    names.insert(stem.to_string_lossy().into_owned());
                }
            }
            _ => {}
        }
    }
    names
        .into_iter()
        .map(|name| {
            let log = dir.join(format!("{name}.log"));
            let side = dir.join(format!("{name}.yaml"));
            let text = std::fs::read_to_string(&log).unwrap_or_else(|e| {
                panic!(
                    "{name}: every sidecar needs its excerpt {}: {e}",
                    log.display()
                )
            });
            let side_text = std::fs::read_to_string(&side).unwrap_or_else(|e| {
                panic!(
                    "{name}: every excerpt needs a sidecar {}: {e}",
                    side.display()
                )
            });
            let sidecar: Sidecar = serde_saphyr::from_str(&side_text)
                .unwrap_or_else(|e| panic!("{}: {e}", side.display()));
            let lines = text.lines().map(str::to_string).collect();
            (name, lines, sidecar)
        })
        .collect()
}

/// What `sig` observes on these lines, through the runner's own decision code.
fn observe_excerpt(
    sig: &Signal,
    ready: &Signal,
    lines: &[String],
    end: EndKind,
    v: &K3sVersion,
) -> (String, Vec<String>) {
    let now = Instant::now();
    let ts = chrono::Utc::now();
    let lines: Vec<LogLine> = lines
        .iter()
        .map(|text| LogLine {
            ts,
            seen: now,
            text: text.clone(),
        })
        .collect();
    let ready_at = lines
        .iter()
        .position(|l| ready.up.iter().any(|p| p.regex.is_match(&l.text)));
    let end = match end {
        EndKind::Died => Some(BootEnd::Died {
            exit_code: None,
            at: String::new(),
            oom: false,
        }),
        // Value signals are read once the boot is over; for an excerpt that is its last line.
        EndKind::Cut if sig.is_value() => Some(BootEnd::Stopped { at: String::new() }),
        EndKind::Cut => None,
    };
    let boot = Boot {
        number: 1,
        step: 0,
        started_at: ts,
        lines,
        ready: ready_at,
        end,
        log_path: PathBuf::new(),
        write_error: None,
    };
    // A margin no excerpt outlasts: no settled-by line decides inside an excerpt.
    let beyond = observe::Settle {
        margin: Some(Duration::from_secs(86_400)),
    };
    match observe::eval_log(sig, &boot, v, beyond, now) {
        Eval::Decided(o) => (o.observed, o.evidence.into_iter().map(|e| e.text).collect()),
        Eval::Pending { .. } => ("unknown".into(), Vec::new()),
    }
}

/// The version the excerpt's patterns are judged for (`since`/`until` on a pattern). Sources
/// that name no release (CI builds, "n/a") are judged as the newest line.
fn judge_version(side: &Sidecar) -> K3sVersion {
    side.k3s_version
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| "v1.34.1+k3s1".parse().expect("fallback version"))
}

#[test]
fn signals_conclude_what_a_reader_of_each_real_excerpt_concludes() {
    let signals = load_signals();
    let ready = signals.get("ready").expect("signals.yaml defines `ready`");
    let corpus = corpus();
    assert!(
        corpus.len() >= 12,
        "the real-k3s corpus has {} excerpts; it must keep at least 12",
        corpus.len()
    );
    let mut problems = Vec::new();
    for (name, lines, side) in &corpus {
        let v = judge_version(side);
        for sig_name in signals.by_name.keys() {
            if !side.signals.contains_key(sig_name) {
                problems.push(format!(
                    "{name}.yaml: says nothing about signal `{sig_name}`; every signal of signals.yaml needs a conclusion"
                ));
            }
        }
        for (sig_name, want) in &side.signals {
            let Some(sig) = signals.get(sig_name) else {
                problems.push(format!(
                    "{name}.yaml: `{sig_name}` is not a signal of signals.yaml"
                ));
                continue;
            };
            let (got, evidence) = observe_excerpt(sig, ready, lines, side.boot_end, &v);
            if &got != want {
                problems.push(format!(
                    "{name}: `{sig_name}` observed `{got}`, the sidecar concludes `{want}`\n    evidence: {evidence:?}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_excerpt_is_described_and_indexed() {
    let readme =
        std::fs::read_to_string(corpus_dir().join("README.md")).expect("README.md of the corpus");
    for (name, lines, side) in corpus() {
        assert!(
            side.source.starts_with("https://"),
            "{name}.yaml: `source` must be the URL the lines were copied from"
        );
        for (what, text) in [
            ("excerpt", &side.excerpt),
            ("k3s-version", &side.k3s_version),
            ("format", &side.format),
            ("node", &side.node),
            ("conclusion", &side.conclusion),
        ] {
            assert!(!text.trim().is_empty(), "{name}.yaml: `{what}` is empty");
        }
        assert!(
            lines.iter().any(|l| !l.trim().is_empty()),
            "{name}.log has no lines"
        );
        assert!(
            readme.contains(&format!("{name}.log")) && readme.contains(&side.source),
            "tests/fixtures/real-k3s/README.md must index {name}.log with its source {}",
            side.source
        );
    }
}

/// The stand-in must print what the signals match: the boots of a stored stand-in run
/// (tests/fixtures/run-etcd-split-buggy, Docker-timestamped lines) give each node its role.
#[test]
fn stand_in_boots_give_the_roles_and_version_of_their_nodes() {
    let signals = load_signals();
    let ready = signals.get("ready").expect("signals.yaml defines `ready`");
    let nodes =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy/nodes");
    let v: K3sVersion = "v1.33.4+k3s1".parse().expect("version");
    for (node, role) in [
        ("etcd-1", "etcd"),
        ("etcd-2", "etcd"),
        ("etcd-3", "etcd"),
        ("cp-1", "control-plane"),
    ] {
        let text = std::fs::read_to_string(nodes.join(node).join("boot-1.log")).expect("boot log");
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| repro::run::watch::parse_line(l.as_bytes()))
            .map(|l| l.text)
            .collect();
        assert!(!lines.is_empty(), "{node}: no Docker-timestamped lines");
        for (signal, want) in [
            ("roles", role),
            ("version", "v1.33.4+k3s1"),
            ("config-mismatch", "none"),
        ] {
            let sig = signals.get(signal).expect("signal");
            let (got, _) = observe_excerpt(sig, ready, &lines, EndKind::Cut, &v);
            assert_eq!(got, want, "{node} boot 1: `{signal}`");
        }
    }
}
