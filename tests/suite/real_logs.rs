//! The machinery both real-log corpora share (tests/fixtures/real-k3s, tests/fixtures/real-rke2):
//! reading excerpts and their sidecars, and deciding a signal on an excerpt with the runner's own
//! code (`observe::eval_log`). What an excerpt is and how `boot-end` is read: `real_k3s.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::Deserialize;

use distro::Version;
use repro::run::observe::{self, Eval};
use repro::run::watch::{Boot, Ended as BootEnd, LogLine};
use repro::scenario::{Signal, Signals};

/// `tests/fixtures/<name>`.
pub(crate) fn corpus_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Sidecar {
    /// Where the lines were copied from (an issue, pull request, gist or docs page).
    pub(crate) source: String,
    /// Which part of the source, and what was left out.
    pub(crate) excerpt: String,
    /// The distribution's version as the source states it (free text when it is not a release):
    /// `k3s-version` in the k3s corpus, `rke2-version` in the RKE2 one.
    #[serde(alias = "k3s-version", alias = "rke2-version")]
    pub(crate) version: String,
    pub(crate) format: String,
    /// What the node was (role, config) as the source tells it.
    pub(crate) node: String,
    pub(crate) boot_end: EndKind,
    /// What a careful reader concludes, in words.
    pub(crate) conclusion: String,
    /// signal -> what it must observe: up, down, unknown, or a value (`none` for no value).
    pub(crate) signals: IndexMap<String, String>,
    /// RKE2 corpus: per signal, where k3s's wording of a pattern misses or still matches the
    /// RKE2 line. For people; the tests only require it to be text.
    #[serde(default)]
    pub(crate) k3s_patterns: IndexMap<String, String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum EndKind {
    Died,
    Cut,
}

pub(crate) fn load_signals() -> Signals {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("checks/signals.yaml");
    let text = std::fs::read_to_string(&path).expect("read checks/signals.yaml");
    repro::load::signals(&path, &text)
        .unwrap_or_else(|d| panic!("checks/signals.yaml does not load: {d:?}"))
}

/// The excerpts of `tests/fixtures/<name>`, by name (file stem), each with its sidecar.
pub(crate) fn corpus(name: &str) -> Vec<(String, Vec<String>, Sidecar)> {
    let dir = corpus_dir(name);
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if matches!(p.extension().and_then(|x| x.to_str()), Some("log" | "yaml")) {
            if let Some(stem) = p.file_stem() {
                names.insert(stem.to_string_lossy().into_owned());
            }
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
pub(crate) fn observe_excerpt(
    sig: &Signal,
    ready: &Signal,
    lines: &[String],
    end: EndKind,
    v: &Version,
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
    let ready_at = lines.iter().position(|l| {
        ready
            .up
            .iter()
            .any(|p| p.applies_to(v) && p.regex.is_match(&l.text))
    });
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
        Eval::Decided(o) => (
            o.observed.to_string(),
            o.evidence.into_iter().map(|e| e.text).collect(),
        ),
        Eval::Pending { .. } => ("unknown".into(), Vec::new()),
    }
}

/// Every excerpt of `tests/fixtures/<name>` (at least `min`), judged on the version
/// `judge_version` reads from its sidecar: every signal of signals.yaml concludes what the
/// sidecar records, and every sidecar names only signals that exist.
pub(crate) fn check_corpus(name: &str, min: usize, judge_version: fn(&Sidecar) -> Version) {
    let signals = load_signals();
    let ready = signals.get("ready").expect("signals.yaml defines `ready`");
    let corpus = corpus(name);
    assert!(
        corpus.len() >= min,
        "the {name} corpus has {} excerpts; it must keep at least {min}",
        corpus.len()
    );
    let mut problems = Vec::new();
    for (name, lines, side) in &corpus {
        let v = judge_version(side);
        // A signal read from the Kubernetes API during a run (`api:`) is in no log.
        let from_logs = (signals.by_name.iter()).filter(|(_, s)| s.in_logs());
        for (sig_name, _) in from_logs {
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

/// Every excerpt of `tests/fixtures/<name>` has a sidecar that says where it comes from and
/// what it is, lines, and a row in the corpus's README.md.
pub(crate) fn check_index(name: &str) {
    let readme = std::fs::read_to_string(corpus_dir(name).join("README.md"))
        .expect("README.md of the corpus");
    for (excerpt, lines, side) in corpus(name) {
        assert!(
            side.source.starts_with("https://"),
            "{excerpt}.yaml: `source` must be the URL the lines were copied from"
        );
        for (what, text) in [
            ("excerpt", &side.excerpt),
            ("version", &side.version),
            ("format", &side.format),
            ("node", &side.node),
            ("conclusion", &side.conclusion),
        ] {
            assert!(!text.trim().is_empty(), "{excerpt}.yaml: `{what}` is empty");
        }
        for (signal, note) in &side.k3s_patterns {
            assert!(
                !note.trim().is_empty(),
                "{excerpt}.yaml: `k3s-patterns.{signal}` is empty"
            );
        }
        assert!(
            lines.iter().any(|l| !l.trim().is_empty()),
            "{excerpt}.log has no lines"
        );
        assert!(
            readme.contains(&format!("{excerpt}.log")) && readme.contains(&side.source),
            "tests/fixtures/{name}/README.md must index {excerpt}.log with its source {}",
            side.source
        );
    }
}
