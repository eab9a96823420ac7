//! Secrets learned by knowledge (issue #24): what a scenario gives under a secret-looking key is
//! a secret whole, whatever characters it holds, so it is learned before any output is written
//! or printed — by a run, and by `repro plan` — and no shape rule decides where it ends.
//!
//! Learned whole: a config key's value (`token`, `etcd-s3-secret-key`), a registries.yaml
//! `auth` entry (`password`, `auth`, `identitytoken`), a node env value (`DB_PASS`,
//! `SECRETS_ENCRYPTION_KEY`), a Kubernetes `name`/`value` pair, and the content of a file a
//! `*-file` key names (`token-file: /etc/k3s/token`, `K3S_TOKEN_FILE`) when the scenario's
//! `files:` gives it. The path itself is a location and stays readable.

use indexmap::IndexMap;
use serde_json::Value;

use super::{env_entry, is_secret_key, is_secret_pair, is_weak_key, Redactor};

/// Everything a scenario sets, by where it sits.
#[derive(Default)]
pub(crate) struct Scenario<'a> {
    /// (name, value) of every node's env.
    pub(crate) env: Vec<(&'a str, &'a str)>,
    /// (path, content) of every file written on any node, configs included, each version.
    pub(crate) files: Vec<(&'a str, &'a str)>,
    /// Free text (descriptions, notes, step names): read by shape only.
    pub(crate) prose: Vec<&'a str>,
}

/// Learns every secret of a scenario: by knowledge first (keys, env names, `*-file` keys and
/// their files), then by shape, so the shapes only add what knowledge did not give.
pub(crate) fn learn_scenario(r: &mut Redactor, s: &Scenario<'_>) {
    let mut contents: IndexMap<&str, Vec<&str>> = IndexMap::new();
    for (path, content) in &s.files {
        contents.entry(path).or_default().push(content);
    }
    // Paths named by a `*-file` key, whose content is a secret.
    let mut secret_files: Vec<String> = Vec::new();
    for (k, v) in &s.env {
        pair(r, k, v, &mut secret_files);
    }
    for (path, content) in &s.files {
        if let Some(doc) = parse(path, content) {
            walk(r, &doc, &mut secret_files);
        }
    }
    for named in &secret_files {
        for (path, versions) in &contents {
            if same_path(path, named) {
                for content in versions {
                    learn_file_content(r, content);
                }
            }
        }
    }
    // Shapes after knowledge: what the scenario says in words, and files that do not parse.
    for (k, v) in &s.env {
        r.learn_text(&format!("{k}={v}"));
    }
    for (path, content) in &s.files {
        r.learn_file(path, content);
    }
    for p in &s.prose {
        r.learn_text(p);
    }
}

/// Learns the secrets of one scenario file as written (a topology or check that may not
/// validate, so there is no plan): by knowledge over its YAML document when it parses, then by
/// shape. The content of files its `files:` maps give under a path a `*-file` key names is
/// learned too.
pub(crate) fn learn_source(r: &mut Redactor, path: &str, text: &str) {
    let doc = parse(path, text).or_else(|| serde_saphyr::from_str::<Value>(text).ok());
    if let Some(doc) = &doc {
        let mut secret_files = Vec::new();
        walk(r, doc, &mut secret_files);
        let mut files = Vec::new();
        file_maps(doc, &mut files);
        for named in &secret_files {
            for (p, content) in &files {
                if same_path(p, named) {
                    learn_file_content(r, content);
                }
            }
        }
    }
    r.learn_text(text);
}

/// Every `files:` map of a scenario document: (path, content).
fn file_maps<'v>(v: &'v Value, out: &mut Vec<(&'v str, &'v str)>) {
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                if let (true, Value::Object(files)) = (k == "files", item) {
                    out.extend(
                        files
                            .iter()
                            .filter_map(|(p, c)| c.as_str().map(|c| (p.as_str(), c))),
                    );
                }
                file_maps(item, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| file_maps(i, out)),
        _ => {}
    }
}

/// A path as a `*-file` key names it and as `files:` gives it (relative to the config folder).
fn same_path(a: &str, b: &str) -> bool {
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// A secret file's content: whole (trimmed), and each of its lines.
fn learn_file_content(r: &mut Redactor, content: &str) {
    r.learn_whole(content);
    let lines: Vec<&str> = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > 1 {
        for l in lines {
            r.learn_whole(l);
        }
    }
}

/// One `key: value`: a secret key's value is learned whole; a `*-file` key whose stem is a
/// secret (`token-file`, `K3S_TOKEN_FILE`, `token-auth-file`) names a secret file.
fn pair(r: &mut Redactor, key: &str, value: &str, secret_files: &mut Vec<String>) {
    // A user name is hidden where it stands, never hunted bare: the shape pass learns it so.
    if is_weak_key(key) {
        return;
    }
    if is_secret_pair(key, value) {
        r.learn_whole(value);
    } else if is_secret_file_key(key) && !value.trim().is_empty() {
        secret_files.push(value.trim().to_string());
    }
}

fn is_secret_file_key(key: &str) -> bool {
    let k = key
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace(['_', '.'], "-");
    k.strip_suffix("-file")
        .is_some_and(|stem| is_secret_key(stem) || stem.contains("token"))
}

/// A YAML or JSON file of the scenario, as a document (config.yaml, its drop-ins,
/// registries.yaml, a kubeconfig, a docker config.json).
fn parse(path: &str, content: &str) -> Option<Value> {
    if path.ends_with(".json") {
        return serde_json::from_str(content).ok();
    }
    if path.ends_with(".yaml") || path.ends_with(".yml") || path.ends_with("/config") {
        return serde_saphyr::from_str::<Value>(content).ok();
    }
    None
}

fn walk(r: &mut Redactor, v: &Value, secret_files: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let (Some(Value::String(name)), Some(Value::String(value))) =
                (map.get("name"), map.get("value"))
            {
                pair(r, name, value, secret_files);
            }
            for (k, item) in map {
                match item {
                    Value::String(s) => pair(r, k, s, secret_files),
                    // `password: [a, b]`: every item is a secret.
                    Value::Array(items) if is_secret_key(k) => {
                        for s in items.iter().filter_map(Value::as_str) {
                            pair(r, k, s, secret_files);
                        }
                    }
                    other => walk(r, other, secret_files),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item.as_str() {
                    // `kube-apiserver-arg: [token-auth-file=/x]`, `--token=…`, `NAME=value`.
                    Some(s) => {
                        let s = s.trim_start_matches('-');
                        if let Some((k, v)) = s.split_once('=') {
                            pair(r, k, v, secret_files);
                        } else if let Some((k, v)) = env_entry(s) {
                            pair(r, k, v, secret_files);
                        }
                    }
                    None => walk(r, item, secret_files),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(s: &Scenario<'_>) -> Redactor {
        let mut r = Redactor::new(&[]);
        learn_scenario(&mut r, s);
        r
    }

    #[test]
    fn env_values_with_separators_are_learned_whole() {
        let s = Scenario {
            env: vec![
                ("PASSWORD", "a,b\"c&d-tail"),
                ("SECRETS_ENCRYPTION_KEY", "enc,key&1"),
            ],
            ..Default::default()
        };
        let mut r = ctx(&s);
        // As docker inspect shows them, and as a log line would.
        let out = r.redact_text("[\"PASSWORD=a,b\\\"c&d-tail\"] SECRETS_ENCRYPTION_KEY=enc,key&1");
        assert!(!out.contains("tail") && !out.contains("key&1"), "{out}");
        let j = r.redact_json(&serde_json::json!({"Env": ["PASSWORD=a,b\"c&d-tail"]}));
        assert_eq!(j["Env"][0], "PASSWORD=<REDACTED-1>");
    }

    #[test]
    fn token_file_content_is_learned_but_not_its_path() {
        let config = "token-file: /etc/k3s/token\nagent-token-file: /etc/k3s/agent\n";
        let s = Scenario {
            env: vec![("K3S_TOKEN_FILE", "/run/secrets/t")],
            files: vec![
                ("/etc/rancher/k3s/config.yaml", config),
                ("/etc/k3s/token", "tf-content-0001\n"),
                ("/etc/k3s/agent", "  tf-agent-0002  "),
                ("/run/secrets/t", "tf-env-0003"),
                ("/etc/motd", "hello"),
            ],
            ..Default::default()
        };
        let mut r = ctx(&s);
        let out = r.redact_text(
            "read tf-content-0001, tf-agent-0002 and tf-env-0003 from /etc/k3s/token; hello",
        );
        for secret in ["tf-content-0001", "tf-agent-0002", "tf-env-0003"] {
            assert!(!out.contains(secret), "{secret}: {out}");
        }
        assert!(out.contains("/etc/k3s/token; hello"), "{out}");
    }

    #[test]
    fn config_and_registries_values_are_learned_whole() {
        let config = "etcd-s3-secret-key: \"s3,key&x\"\nkube-apiserver-arg:\n  - token-auth-file=/x/tokens.csv\n";
        let registries = "configs:\n  reg:5000:\n    auth:\n      username: reguser\n      password: 'reg pass,1'\n      identitytoken: id&tok\n";
        let s = Scenario {
            files: vec![
                ("/etc/rancher/k3s/config.yaml", config),
                ("/etc/rancher/k3s/registries.yaml", registries),
                ("/x/tokens.csv", "csvtoken123,admin,1\n"),
            ],
            ..Default::default()
        };
        let mut r = ctx(&s);
        let out = r.redact_text("s3,key&x reg pass,1 id&tok csvtoken123,admin,1");
        assert_eq!(out, "<REDACTED-1> <REDACTED-2> <REDACTED-3> <REDACTED-4>");
    }

    #[test]
    fn kubernetes_env_pairs_in_a_manifest() {
        let manifest = "env:\n  - name: AWS_SECRET_ACCESS_KEY\n    value: \"k8s,secret\"\n";
        let s = Scenario {
            files: vec![("/var/lib/rancher/k3s/server/manifests/app.yaml", manifest)],
            ..Default::default()
        };
        assert_eq!(ctx(&s).redact_text("k8s,secret"), "<REDACTED-1>");
    }
}
