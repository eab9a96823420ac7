//! `--version` with the commit, shell completions, man pages and `list --format json`: the real
//! binary, no Docker.

use crate::repro::Repro;

use serde_json::Value;

#[test]
fn version_names_the_commit_or_says_why_not() {
    let out = Repro::new().arg("--version").run();
    out.code(0);
    let line = out.stdout.trim();
    let rest = line
        .strip_prefix(&format!("repro {} (", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{line}"));
    let ok = match rest.strip_prefix("commit ") {
        Some("unknown: not built from a git checkout)") => true,
        Some(c) => {
            let hash = c.trim_end_matches(')');
            hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit())
        }
        None => false,
    };
    assert!(ok, "{line}");
}

/// `repro version` is `repro --version`'s line (the word `--version` after a command is the
/// distribution's version, #32), and a JSON object for scripts.
#[test]
fn version_subcommand_agrees_with_the_flag() {
    let flag = Repro::new().arg("--version").run();
    let cmd = Repro::new().arg("version").run();
    cmd.code(0);
    assert_eq!(cmd.stdout, flag.stdout);
    let json = Repro::new().args(["version", "--format", "json"]).run();
    json.code(0);
    let v: Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    assert_eq!(v["kind"], "repro-version");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    match v["commit"].as_str() {
        Some(c) => assert!(flag.stdout.contains(&format!("(commit {c})")), "{v}"),
        None => assert!(flag.stdout.contains("commit unknown"), "{v}"),
    }
}

#[test]
fn completions_for_every_shell_know_the_commands_and_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Repro::new().args(["completions", shell]).run();
        out.code(0);
        // Flag names without dashes: fish writes `-l versions`. The older `--k3s-version` is a
        // hidden alias since #32: it works, completion does not offer it.
        for word in [
            "nightly-issues",
            "versions",
            "events",
            "validation",
            "format",
        ] {
            assert!(out.stdout.contains(word), "{shell}: {word} missing");
        }
    }
    Repro::new().args(["completions", "tcsh"]).run().code(2);
}

#[test]
fn man_pages_for_the_tool_and_every_command() {
    let out = Repro::new().arg("man").run();
    out.code(0);
    assert!(out.stdout.contains(".TH repro 1"), "{}", out.stdout);
    assert!(out.stdout.contains("nightly\\-issues"), "{}", out.stdout);
    let tmp = tempfile::tempdir().expect("tmp");
    Repro::new()
        .args(["man", "--out"])
        .arg(tmp.path().to_string_lossy())
        .run()
        .code(0);
    for page in [
        "repro.1",
        "repro-run.1",
        "repro-report.1",
        "repro-merge.1",
        "repro-sim-build.1",
    ] {
        let text = std::fs::read_to_string(tmp.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie"), "{page}");
    }
    let run = std::fs::read_to_string(tmp.path().join("repro-run.1")).expect("run page");
    assert!(run.contains("\\-\\-expect"), "the run page lists its flags");
}

#[test]
fn list_as_json() {
    let out = Repro::new().args(["list", "--format", "json"]).run();
    out.code(0);
    let v: Value = serde_json::from_str(&out.stdout).expect("list --format json is JSON");
    let checks = v["checks"].as_array().expect("checks");
    let etcd = checks
        .iter()
        .find(|c| c["name"] == "etcd-split")
        .expect("etcd-split listed");
    assert_eq!(etcd["topology"], "etcd-split");
    assert_eq!(etcd["file"], "checks/etcd-split.yaml");
    assert!(etcd["fixed_in"]
        .as_array()
        .expect("fixed_in")
        .contains(&Value::from("v1.33.5+k3s1")));
    let topo = v["topologies"]
        .as_array()
        .expect("topologies")
        .iter()
        .find(|t| t["name"] == "etcd-split")
        .expect("topology");
    assert_eq!(topo["nodes"].as_array().expect("nodes").len(), 4);
    assert_eq!(topo["nodes"][0]["init"], true);
}
