//! A campaign folder read back — `--recheck`, `--resume`, `--emit github-matrix`, the merge of
//! downloaded matrix cells — is hostile input (#42): it may come from a CI artifact or an issue.
//! campaign.json is checked against the grammar of what repro writes there before anything in
//! it is used (ids, versions, keys, node names, paths of runs and minimal checks); files are read
//! only inside the folder, regular, within their size limits (`safe_fs`); and what explore writes
//! from it (findings.json, findings.md, junit.xml) is redacted and free of control characters.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use serde_json::Value;

use super::findings::FindingsFile;
use super::{State, CHECKS_DIR};

/// The most sequences a campaign.json may list (a campaign plans a few hundred; the cap on
/// `--random` and the budget keep real ones far below it).
pub(crate) const MAX_SEQUENCES: usize = 100_000;
/// The longest id, name, key or value campaign.json may hold.
const MAX_WORD: usize = 128;

/// An id, name, key or node name as repro writes them: ASCII letters, digits, `.`, `_`, `-`
/// (not first), at most 128 characters — nothing a shell, a workflow's `run:`, YAML, Markdown or
/// a terminal reads as syntax.
pub(crate) fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_WORD
        && !s.starts_with(['-', '.'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A key's value as the flags table's `try:` gives them (`10.42.0.0/16`, `30000-32767`).
fn is_value(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_WORD
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | ','))
}

/// A relative path of words below the campaign folder (no `..`, no root, no link syntax).
pub(crate) fn is_inner_path(s: &str) -> bool {
    s.len() <= 1024
        && !s.is_empty()
        && Path::new(s)
            .components()
            .all(|c| matches!(c, Component::Normal(n) if n.to_str().is_some_and(is_word)))
}

/// `value` quoted for an error message: escaped (`{:?}`), cut to 80 characters.
fn shown(value: &str) -> String {
    let s = format!("{value:?}");
    if s.chars().count() > 80 {
        format!("{}…\"", s.chars().take(78).collect::<String>())
    } else {
        s
    }
}

fn bad(path: &Path, field: &str, value: &str, valid: &str) -> String {
    format!(
        "{}: {field}: {} is not valid: {valid} (campaign.json is read as repro wrote it; a changed one is refused)",
        path.display(),
        shown(value)
    )
}

const WORD: &str = "letters, digits, `.`, `_` and `-`, at most 128";

/// Checks a campaign.json read from `path` before anything in it is used.
pub(crate) fn validate(s: &State, path: &Path) -> Result<(), String> {
    let word = |field: &str, v: &str| {
        if is_word(v) {
            Ok(())
        } else {
            Err(bad(path, field, v, WORD))
        }
    };
    word("name", &s.name)?;
    word("topology", &s.topology)?;
    if s.versions.is_empty() {
        return Err(bad(path, "versions", "", "at least one version"));
    }
    for v in &s.versions {
        v.parse::<distro::Version>()
            .map_err(|e| bad(path, "versions", v, &e.to_string()))?;
    }
    distinct(path, "versions", &s.versions)?;
    // A lifecycle campaign edits no key; a config one searches at least one.
    if s.keys.is_empty() && s.strategy == super::Strategy::Config {
        return Err(bad(path, "keys", "", "at least one key"));
    }
    if let Some(v) = &s.upgrade_to {
        v.parse::<distro::Version>()
            .map_err(|e| bad(path, "upgrade_to", v, &e.to_string()))?;
    }
    for k in &s.keys {
        word("keys", k)?;
    }
    distinct(path, "keys", &s.keys)?;
    sequences(s, path)?;
    for cell in &s.merged_cells {
        if !is_inner_path(cell) {
            return Err(bad(
                path,
                "merged_cells",
                cell,
                "a folder inside the campaign folder",
            ));
        }
    }
    for (id, d) in &s.causes {
        if !id.split('/').all(is_word) || id.split('/').count() != 3 {
            return Err(bad(path, "causes", id, "class/key/role, each a word"));
        }
        for w in [&d.node, &d.key] {
            word(&format!("causes.{id}"), w)?;
        }
        if let Some(run) = d
            .probes
            .iter()
            .find_map(|p| p.run.as_ref().filter(|r| !is_inner_path(r)))
        {
            return Err(bad(
                path,
                &format!("causes.{id}.probes.run"),
                run,
                "a folder inside the campaign folder (runs/<run>)",
            ));
        }
    }
    for (id, m) in &s.minimal {
        if !id.split('/').all(is_word) || id.split('/').count() != 3 {
            return Err(bad(path, "minimal", id, "class/key/role, each a word"));
        }
        let ok = m
            .check
            .strip_prefix(&format!("{CHECKS_DIR}/"))
            .and_then(|f| f.strip_suffix(".yaml"))
            .is_some_and(is_word);
        if !ok {
            return Err(bad(
                path,
                &format!("minimal.{id}.check"),
                &m.check,
                "a file of the campaign's checks/ folder (checks/<id>.yaml)",
            ));
        }
    }
    Ok(())
}

fn distinct(path: &Path, field: &str, items: &[String]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    match items.iter().find(|i| !seen.insert(i.as_str())) {
        Some(dup) => Err(bad(path, field, dup, "each listed once")),
        None => Ok(()),
    }
}

/// Every sequence record: its id, version, steps and run folder.
fn sequences(s: &State, path: &Path) -> Result<(), String> {
    if s.sequences.len() > MAX_SEQUENCES {
        return Err(bad(
            path,
            "sequences",
            &s.sequences.len().to_string(),
            &format!("at most {MAX_SEQUENCES}"),
        ));
    }
    let mut seen = BTreeSet::new();
    for r in &s.sequences {
        let id = &r.sequence.id;
        let f = |what: &str| format!("sequences.{id}.{what}");
        if !is_word(id) {
            return Err(bad(path, "sequences.id", id, WORD));
        }
        if !seen.insert((id.as_str(), r.version.as_str())) {
            return Err(bad(path, "sequences.id", id, "each once per version"));
        }
        if !s.versions.contains(&r.version) {
            return Err(bad(path, &f("version"), &r.version, "one of `versions`"));
        }
        for step in &r.sequence.steps {
            if !is_word(&step.node) {
                return Err(bad(path, &f("steps.node"), &step.node, WORD));
            }
            for (k, v) in &step.set {
                if !is_word(k) || !s.keys.contains(k) {
                    return Err(bad(path, &f("steps.set"), k, "one of `keys`"));
                }
                if !is_value(v) {
                    return Err(bad(
                        path,
                        &f("steps.set"),
                        v,
                        "a value of the flags table's `try:` (letters, digits, `.`, `_`, `-`, `/`, `:`, `,`)",
                    ));
                }
            }
        }
        if let Some(run) = &r.run {
            if !is_inner_path(run) {
                return Err(bad(
                    path,
                    &f("run"),
                    run,
                    "a folder inside the campaign folder (runs/<run>)",
                ));
            }
        }
    }
    Ok(())
}

/// The minimal check `rel` (validated: `checks/<id>.yaml`) of the campaign folder `dir`: read
/// inside the folder only, a regular file within the scenario limit, UTF-8.
pub(crate) fn read_check(dir: &Path, rel: &str) -> Result<String, String> {
    if !is_inner_path(rel) {
        return Err(format!(
            "{}: {}: not a file of the campaign folder",
            dir.display(),
            shown(rel)
        ));
    }
    let path = dir.join(rel);
    let bytes = crate::safe_fs::read_in(dir, &path, crate::safe_fs::SCENARIO_LIMIT)
        .map_err(|e| format!("{}: {e:#}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// The findings and minimal checks as written: every secret the runs' result.json files or
/// the checks know, or that the redaction rules find, replaced; every control character but a
/// line break written as `\uXXXX` (as the terminal shows it).
pub(crate) fn redacted(
    file: FindingsFile,
    results: &[Value],
    checks: BTreeMap<String, String>,
) -> Result<(FindingsFile, BTreeMap<String, String>), String> {
    let texts: Vec<String> = results.iter().map(Value::to_string).collect();
    let mut ctx = crate::redact::Redactor::after_placeholders(
        &[],
        texts
            .iter()
            .map(String::as_str)
            .chain(checks.values().map(String::as_str)),
    );
    for r in results {
        ctx.learn_json(r);
    }
    for (name, text) in &checks {
        ctx.learn_file(name, text);
    }
    let mut v = serde_json::to_value(&file).map_err(|e| e.to_string())?;
    v = ctx.redact_json(&v);
    sanitize(&mut v);
    let file: FindingsFile = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let checks = checks
        .into_iter()
        .map(|(name, text)| {
            let t = ctx.redact_file(&name, &text);
            (name, crate::term::sanitize(&t).into_owned())
        })
        .collect();
    Ok((file, checks))
}

fn sanitize(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(t) = crate::term::sanitize(s) {
                *s = t;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(sanitize),
        Value::Object(o) => o.values_mut().for_each(sanitize),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_inner_paths() {
        for ok in ["o1-embedded-registry", "v1.33.4-k3s1", "r12", "a_b"] {
            assert!(is_word(ok), "{ok}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "a b",
            "a\nb",
            "a\u{1b}[2J",
            "$(id)",
            "a,b",
            "a/b",
            &"x".repeat(129),
        ] {
            assert!(!is_word(bad), "{bad:?}");
        }
        assert!(is_inner_path("runs/a-1"));
        for bad in [
            "/etc/passwd",
            "../../etc/passwd",
            "runs/../x",
            "",
            "runs//x\n",
        ] {
            assert!(!is_inner_path(bad), "{bad:?}");
        }
    }
}
