//! `--version` with the commit, shell completions, man pages, help and `list --format json`:
//! the real binary, no Docker.

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

/// `repro completions SHELL` prints the script that calls repro back for each TAB
/// (`COMPLETE=SHELL repro -- …`), so names are completed from what is there at the time.
#[test]
fn completion_scripts_call_repro_back_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Repro::new().args(["completions", shell]).run();
        out.code(0);
        assert!(out.stdout.contains("COMPLETE"), "{shell}: {}", out.stdout);
        assert!(out.stdout.contains("repro"), "{shell}: {}", out.stdout);
    }
    Repro::new().args(["completions", "tcsh"]).run().code(2);
}

/// What a shell gets for the words typed so far (fish's protocol: one candidate a line, the
/// last word is the one completed), run in `dir`.
fn complete(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let out = crate::util::repro()
        .current_dir(dir)
        .env("COMPLETE", "fish")
        .arg("--")
        .args(words)
        .output()
        .expect("run repro");
    assert!(out.status.success(), "{}", crate::util::text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect()
}

/// Check, topology and results-folder names are completed, and `--topology <TAB>` offers the
/// names and the YAML files it takes, not every file (#32 item 7).
#[test]
fn completion_offers_checks_topologies_yaml_files_and_results_folders() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    std::fs::write(dir.join("two-etcd.yaml"), "name: two-etcd\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a topology\n").unwrap();
    let run = dir.join("results/etcd-split-v1.33.4-k3s1-20261203T114858Z-3e593824");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("result.json"), "{}").unwrap();
    std::fs::create_dir_all(dir.join("results/not-a-run")).unwrap();

    let topo = complete(dir, &["repro", "run", "etcd-split", "--topology", ""]);
    for want in ["etcd-split", "etcd-split-2cp", "rke2-8465", "two-etcd.yaml"] {
        assert!(topo.iter().any(|c| c == want), "{want} not in {topo:?}");
    }
    assert!(!topo.iter().any(|c| c == "notes.txt"), "{topo:?}");
    assert_eq!(
        complete(
            dir,
            &["repro", "run", "etcd-split", "--topology", "etcd-split-"]
        ),
        ["etcd-split-2cp", "etcd-split-agent"]
    );

    let checks = complete(dir, &["repro", "plan", "metrics"]);
    assert_eq!(checks, ["metrics-order", "metrics-right-order"]);
    let list = complete(
        dir,
        &["repro", "matrix", "--checks", "etcd-split,metrics-r"],
    );
    assert_eq!(list, ["etcd-split,metrics-right-order"]);

    let folders = complete(dir, &["repro", "report", "results/"]);
    let run_folder = "results/etcd-split-v1.33.4-k3s1-20261203T114858Z-3e593824";
    assert_eq!(
        folders.first().map(String::as_str),
        Some(run_folder),
        "{folders:?}"
    );
    let flags = complete(dir, &["repro", "run", "etcd-split", "--top"]);
    assert_eq!(flags, ["--topology"]);
    // The vocabulary of #32: `--versions` is offered, the older `--k3s-versions` (a hidden
    // alias) works but is not.
    let flags = complete(dir, &["repro", "matrix", "--"]);
    assert!(flags.iter().any(|f| f == "--versions"), "{flags:?}");
    assert!(!flags.iter().any(|f| f == "--k3s-versions"), "{flags:?}");
}

#[test]
fn man_pages_for_the_tool_and_every_command() {
    let out = Repro::new().arg("man").run();
    out.code(0);
    out.stdout_has(".TH repro 1");
    out.stdout_has("nightly\\-issues");
    let tmp = tempfile::tempdir().expect("tmp");
    Repro::new()
        .args(["man", "--out"])
        .arg(tmp.path())
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
    // Every page has the tool's contract: its examples, the exit-code table and the
    // environment (#32 item 7), and the preamble once.
    for page in std::fs::read_dir(tmp.path()).expect("pages") {
        let path = page.expect("page").path();
        let text = std::fs::read_to_string(&path).expect("page text");
        for section in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT"] {
            assert!(text.contains(section), "{}: no {section}", path.display());
        }
        assert_eq!(text.matches(".el .ds Aq").count(), 1, "{}", path.display());
        assert!(
            text.contains("\n.TP\n\\fB130\\fR\ninterrupted: "),
            "{}",
            path.display()
        );
        assert!(text.contains("\\fBDOCKER_HOST\\fR"), "{}", path.display());
    }
    assert!(
        run.contains(".SH EXAMPLES\n.PP\nreal k3s: reproduce #12753 on v1.33.4"),
        "{run}"
    );
    assert!(run.contains("\\fBrepro run etcd\\-split \\-\\-version v1.33.4+k3s1\\fR"));
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

/// repro's long help: the examples, the exit-code table and the environment, globals under
/// their own heading (#32 item 7).
#[test]
fn help_has_examples_exit_status_and_environment() {
    let out = Repro::new().arg("--help").run();
    out.code(0);
    snap!("help-long", out);
    let short = Repro::new().args(["run", "-h"]).run();
    short.code(0);
    snap!("help-run-short", short);
}

/// `repro init NAME` starts a check of one's own that `repro validate` accepts and `repro plan`
/// plans in that folder, never overwrites, and refuses a name it could not use (#32 item 3).
#[test]
fn init_writes_a_starter_that_validates_and_plans() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let init = Repro::new().args(["init", "my-bug"]).current_dir(dir).run();
    init.code(0);
    for f in [
        "checks/my-bug.yaml",
        "topologies/my-bug.yaml",
        "checks/signals.yaml",
    ] {
        assert!(dir.join(f).is_file(), "{f}: {}", init.stderr);
    }
    let check = std::fs::read_to_string(dir.join("checks/my-bug.yaml")).unwrap();
    assert!(
        check.contains("name: my-bug\ntopology: my-bug\n"),
        "{check}"
    );
    Repro::new().arg("validate").current_dir(dir).run().code(0);
    let plan = Repro::new().args(["plan", "my-bug"]).current_dir(dir).run();
    plan.code(0);
    assert!(
        plan.stdout.starts_with("Plan for check `my-bug`"),
        "{}",
        plan.stdout
    );
    let again = Repro::new().args(["init", "my-bug"]).current_dir(dir).run();
    again.code(2);
    assert!(again.stderr.contains("already exist"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("checks/my-bug.yaml")).unwrap(),
        check,
        "nothing overwritten"
    );
    let bad = Repro::new().args(["init", "../x"]).current_dir(dir).run();
    bad.code(2);
    assert!(bad.stderr.contains("is not a check name"), "{}", bad.stderr);
}
