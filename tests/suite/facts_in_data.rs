//! A distribution's facts are spelled once, in `distro/` (issue #28): this reads `src/`,
//! `checks/` and `topologies/` for what each distribution of `Distro::ALL` would be recognised
//! by — its config and data folders, kubeconfig, kubectl, ready lines and banners, and its
//! binary as a command word — and fails listing every `file:line` that spells one. Data names
//! facts by placeholder (`{ready_line}`, docs/file-formats.md); code reads `distro::Facts`.
//!
//! Not read: comments, prose (a signal's `description:`, a check's `why:`, …, URLs: they cite
//! k3s's source and issues), test code (`#[cfg(test)]` onwards, test files, snapshots) and a
//! `distribution:` value (the distribution's name, which is how data chooses one).

use std::path::{Path, PathBuf};

use distro::Distro;

use crate::util::root;

/// The documented exceptions: (file, needle, why).
const ALLOWED: &[(&str, &str, &str)] = &[
    // result.json's `k3s` object is a field of the schema (schema/result.schema.json), named
    // before RKE2 existed; renaming it would break every results folder already written.
    (
        "src/inspect/sources.rs",
        "\"k3s\"",
        "result.json's `k3s` field",
    ),
];

/// Keys whose values are prose or links, in checks and topologies.
const PROSE_KEYS: &[&str] = &[
    "description",
    "summary",
    "why",
    "issue",
    "source",
    "sources",
    "bug-report",
];

/// What a distribution is recognised by, as text: folders, files, commands and lines.
fn needles(d: Distro) -> Vec<String> {
    let f = d.facts();
    let mut n = vec![
        f.config_dir.to_string(),
        f.data_dir.to_string(),
        f.kubeconfig_path.to_string(),
        f.kubectl.join(" "),
        f.ready_line.to_string(),
        f.agent_ready_line.to_string(),
        f.banner_prefix.trim_end().to_string(),
        f.agent_banner_prefix.trim_end().to_string(),
    ];
    n.sort();
    n.dedup();
    n
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            if name != "snapshots" {
                files(&p, ext, out);
            }
        } else if name.ends_with(ext) {
            out.push(p);
        }
    }
}

/// Whether a Rust file is test code as a whole.
fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().to_string());
    let name = name.unwrap_or_default();
    let stem = name.trim_end_matches(".rs");
    stem == "tests" || stem.ends_with("_tests") || stem.starts_with("tests_") || stem == "fake"
}

/// The lines of Rust code that count: no comment line, nothing from `#[cfg(test)]` on.
fn rust_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if !t.starts_with("//") {
            out.push((i + 1, l.to_string()));
        }
    }
    out
}

/// The lines of YAML data that count: no comment, no prose key's value (on its line or the
/// block under it), links and `distribution:` values taken out.
fn yaml_lines(text: &str) -> Vec<(usize, String)> {
    let url = regex::Regex::new(r"https?://\S+").expect("regex");
    let mut out = Vec::new();
    let mut prose_indent: Option<usize> = None;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        let indent = l.len() - t.len();
        if let Some(p) = prose_indent {
            if t.is_empty() || indent > p {
                continue;
            }
            prose_indent = None;
        }
        if t.starts_with('#') {
            continue;
        }
        let key = t.trim_start_matches("- ").split(':').next().unwrap_or("");
        if PROSE_KEYS.contains(&key) {
            prose_indent = Some(indent);
            continue;
        }
        let l = url.replace_all(l, "");
        let l = l.replace("distribution: ", "distribution:_");
        out.push((i + 1, l));
    }
    out
}

/// Whether `line` has `word` standing alone as a word of a command or pattern: not part of a
/// longer name (`k3s-io`, `+k3s1`, `/v1-k3s/`, `distribution:_k3s`, `k3s's`).
fn has_word(line: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || "_-+./:#".contains(c);
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let rest = &line[at + word.len()..];
        !before.is_some_and(part) && !rest.starts_with(part) && !rest.starts_with("'s")
    })
}

#[test]
fn no_distribution_fact_is_spelled_outside_distro() {
    let base = root();
    let mut found = Vec::new();
    let mut paths = Vec::new();
    files(&base.join("src"), ".rs", &mut paths);
    files(&base.join("checks"), ".yaml", &mut paths);
    files(&base.join("topologies"), ".yaml", &mut paths);
    paths.sort();
    for p in paths {
        let rel = p
            .strip_prefix(&base)
            .expect("under root")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&p).expect("readable");
        let rust = rel.ends_with(".rs");
        if rust && is_test_file(&p) {
            continue;
        }
        let lines = if rust {
            rust_lines(&text)
        } else {
            yaml_lines(&text)
        };
        for (n, line) in lines {
            for d in Distro::ALL {
                let b = d.facts().binary;
                let mut hits: Vec<String> = (needles(*d).into_iter())
                    .filter(|x| line.contains(x.as_str()))
                    .collect();
                // The binary as a command: a Rust string that is just it (a message's words
                // about k3s are prose), a word of YAML data.
                let quoted = format!("\"{b}\"");
                if rust && line.contains(&quoted) {
                    hits.push(quoted);
                }
                if !rust && has_word(&line, b) {
                    hits.push(b.to_string());
                }
                for h in hits {
                    let allowed = (ALLOWED.iter())
                        .any(|(f, x, _)| *f == rel && h.starts_with(x.trim_end_matches('"')));
                    if !allowed {
                        found.push(format!("{rel}:{n}: `{h}` ({d}): {}", line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a distribution's fact spelled outside distro/ (read it from `distro::Facts`, or name it \
         by placeholder in data: docs/file-formats.md):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_what_it_is_for() {
    let k3s = Distro::K3s.facts();
    assert!(has_word("command: [k3s, kubectl]", k3s.binary));
    assert!(has_word("- '^k3s version'", "k3s") && has_word("['k3s', x]", "k3s"));
    assert!(!has_word(
        "k3s-io/k3s#1 v1.33.4+k3s1 /v1-k3s/ distribution:_k3s k3s's",
        "k3s"
    ));
    let yaml = "a:\n  description: >-\n    k3s is up and running\n  up: ['k3s is up and running']\n# k3s kubectl\n";
    let lines = yaml_lines(yaml);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1].0, 4);
    let rust = "// \"k3s\"\nlet a = \"k3s\";\n#[cfg(test)]\nlet b = \"k3s\";\n";
    assert_eq!(rust_lines(rust), vec![(2, "let a = \"k3s\";".to_string())]);
    assert!(needles(Distro::Rke2).contains(&"rke2 is up and running".to_string()));
}
