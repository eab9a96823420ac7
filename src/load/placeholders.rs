//! Placeholders in checks/signals.yaml: `{binary}`, `{ready_line}`, `{kubectl}`, … stand for a
//! fact of the distribution (`distro::Facts`), so one pattern or probe serves every
//! distribution and the data spells no distribution's binary, path, port or line. A pattern
//! with one is filled once per distribution (its `distribution:`, else every one) and the copy
//! is that distribution's; in a regex the fact is escaped (it is a literal). The names are
//! documented in docs/file-formats.md ("Placeholders").

use distro::{Distro, Facts};

use crate::diag::{Diagnostics, FileDiag};
use serde_saphyr::Spanned;

/// Every placeholder's name, in the order help lines list them (docs/file-formats.md says
/// what each stands for).
pub(crate) const PLACEHOLDERS: &[&str] = &[
    "binary",
    "banner",
    "ready_line",
    "agent_ready_line",
    "kubectl",
    "kubeconfig",
    "supervisor_port",
    "data_dir",
];

/// The words placeholder `name` stands for on `facts` (kubectl may be several), or `None`
/// when it names no fact.
fn fact(facts: &Facts, name: &str) -> Option<Vec<String>> {
    let one = |s: &str| Some(vec![s.to_string()]);
    match name {
        "binary" => one(facts.binary),
        "banner" => one(facts.banner_prefix),
        "ready_line" => one(facts.ready_line),
        "agent_ready_line" => one(facts.agent_ready_line),
        "kubectl" => Some(facts.kubectl.iter().map(|w| w.to_string()).collect()),
        "kubeconfig" => one(facts.kubeconfig_path),
        "supervisor_port" => one(&facts.supervisor_port.to_string()),
        "data_dir" => one(facts.data_dir),
        _ => None,
    }
}

/// The placeholders of `text` as (start, end, name): `{` and a lower-case name and `}`, not
/// after a `\` (an escaped brace) — a regex's repetition (`{2}`, `{1,3}`) is no name.
fn find(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' && (i == 0 || b[i - 1] != b'\\') {
            let name_len = b[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_lowercase() || **c == b'_')
                .count();
            let end = i + 1 + name_len;
            if name_len > 0 && b[i + 1].is_ascii_lowercase() && b.get(end) == Some(&b'}') {
                out.push((i, end + 1, &text[i + 1..end]));
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Whether `text` has a placeholder (known or not).
pub(crate) fn any(text: &str) -> bool {
    !find(text).is_empty()
}

/// Checks that every placeholder of `text` names a fact; an unknown one is an error at `at`
/// listing the valid names. False when there was one.
pub(crate) fn check<T>(d: &FileDiag, at: &Spanned<T>, text: &str, out: &mut Diagnostics) -> bool {
    let facts = Distro::default().facts();
    let mut ok = true;
    for (_, _, name) in find(text) {
        if fact(facts, name).is_none() {
            ok = false;
            let names: Vec<String> = PLACEHOLDERS.iter().map(|n| format!("{{{n}}}")).collect();
            out.push(
                d.span(at, format!("`{{{name}}}` in `{text}` is not a placeholder repro knows"))
                    .help(format!(
                        "use one of {} (each a fact of the distribution, docs/file-formats.md), or write `\\{{` for a literal brace in a regex",
                        names.join(", ")
                    )),
            );
        }
    }
    ok
}

/// `text` with every placeholder replaced by its fact on `facts` (several words joined by a
/// space); `regex`: the fact regex-escaped, as a pattern needs it. Unknown names stay as
/// written (`check` reports them).
pub(crate) fn fill(text: &str, facts: &Facts, regex: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, name) in find(text) {
        let Some(words) = fact(facts, name) else {
            continue;
        };
        out.push_str(&text[at..start]);
        let value = words.join(" ");
        out.push_str(&if regex { regex::escape(&value) } else { value });
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// A command with its placeholders filled from `facts`: a word that is one placeholder
/// becomes the fact's words (`{kubectl}` → `k3s`, `kubectl`), others are filled in place.
pub(crate) fn fill_command(words: &[String], facts: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        match find(w).as_slice() {
            [(0, end, name)] if *end == w.len() => match fact(facts, name) {
                Some(fact) => out.extend(fact),
                None => out.push(w.clone()),
            },
            _ => out.push(fill(w, facts, false)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_names_a_fact_of_every_distribution() {
        for d in Distro::ALL {
            for name in PLACEHOLDERS {
                assert!(fact(d.facts(), name).is_some(), "{d}: {name}");
            }
        }
    }

    #[test]
    fn placeholders_are_names_in_braces_not_repetitions_or_escapes() {
        fn names(t: &str) -> Vec<&str> {
            find(t).into_iter().map(|(_, _, n)| n).collect()
        }
        assert_eq!(names("{banner}(agent )?v\\d{1,3}"), vec!["banner"]);
        assert_eq!(
            names("a{2} \\{binary} {Binary} {} {_x} {x"),
            Vec::<&str>::new()
        );
        assert_eq!(names("{binary}{nope}"), vec!["binary", "nope"]);
    }

    #[test]
    fn filling_escapes_in_regexes_and_splits_commands() {
        let k3s = Distro::K3s.facts();
        let rke2 = Distro::Rke2.facts();
        assert_eq!(fill("^{binary} version", rke2, true), "^rke2 version");
        assert_eq!(
            fill("{kubeconfig}$", k3s, true),
            "/etc/rancher/k3s/k3s\\.yaml$"
        );
        assert_eq!(
            fill("{kubeconfig}", k3s, false),
            "/etc/rancher/k3s/k3s.yaml"
        );
        assert_eq!(fill("{what} {binary}", k3s, false), "{what} k3s");
        let cmd: Vec<String> = ["{kubectl}", "get", "https://127.0.0.1:{supervisor_port}"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            fill_command(&cmd, k3s),
            ["k3s", "kubectl", "get", "https://127.0.0.1:6443"]
        );
        assert_eq!(
            fill_command(&cmd, rke2),
            [
                "/var/lib/rancher/rke2/bin/kubectl",
                "get",
                "https://127.0.0.1:9345"
            ]
        );
    }
}
