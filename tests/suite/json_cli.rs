//! `--format json` on the commands that print a result (#32 item 6): stdout is one JSON document
//! a script reads whatever happened (the lines for people on stderr), with the exit code the
//! text form has; and the flags of one vocabulary echo the name typed. No Docker.

use serde_json::Value;

use crate::fixtures::write_result;
use crate::repro::{Output, Repro};
use crate::util::copy_dir;

const BUGGY: &str = "tests/fixtures/run-etcd-split-buggy";
const FIXED: &str = "tests/fixtures/run-etcd-split-fixed";

fn doc(out: &Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`{}`: stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            out.command, out.stdout, out.stderr
        )
    })
}

#[test]
fn validate_as_json_lists_every_problem_with_its_place() {
    let ok = Repro::new().args(["validate", "--format", "json"]).run();
    ok.code(0);
    let v = doc(&ok);
    assert_eq!(v["kind"], "repro-validate");
    assert_eq!(v["valid"], true);
    assert_eq!(v["problems"], Value::Array(Vec::new()));
    assert!(
        v["summary"].as_str().is_some_and(|s| s.starts_with("ok: ")),
        "{v}"
    );

    let file = "tests/broken/checks/bad-state.yaml";
    let bad = Repro::new()
        .args(["validate", "--format", "json", file])
        .run();
    bad.code(2);
    let v = doc(&bad);
    assert_eq!(v["valid"], false);
    let problems = v["problems"].as_array().expect("problems");
    assert!(!problems.is_empty(), "{v}");
    for p in problems {
        assert_eq!(p["file"], file, "{p}");
        assert!(p["line"].as_u64().is_some_and(|l| l > 0), "{p}");
        assert!(p["column"].as_u64().is_some_and(|c| c > 0), "{p}");
        // The text form says the same problem at the same place, on stderr.
        let at = format!(
            "{file}:{}:{}: error: {}",
            p["line"],
            p["column"],
            p["message"].as_str().expect("message")
        );
        assert!(bad.stderr.contains(&at), "{at}\n{}", bad.stderr);
    }
    assert_eq!(
        v["summary"],
        format!(
            "{} problem{} found",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        )
    );
}

#[test]
fn report_as_json_names_the_files_and_the_verdict() {
    let tmp = tempfile::tempdir().expect("tmp");
    copy_dir(&crate::util::root().join(BUGGY), tmp.path());
    let dir = tmp.path().to_string_lossy().into_owned();
    let out = Repro::new()
        .args(["report", "--format", "json", &dir])
        .run();
    out.code(0);
    let v = doc(&out);
    assert_eq!(v["kind"], "repro-report");
    assert_eq!(v["results"], dir.as_str());
    assert_eq!(v["verdict"], "reproduced");
    assert_eq!(v["exit_code"], 0);
    for f in v["wrote"].as_array().expect("wrote") {
        let f = f.as_str().expect("a name");
        assert!(tmp.path().join(f).is_file(), "{f} listed but not written");
    }
    assert!(out.stderr.contains("wrote junit.xml"), "{}", out.stderr);
    // Not with --github-annotations, which prints its own lines.
    Repro::new()
        .args(["report", "--format", "json", "--github-annotations", &dir])
        .run()
        .code(2);
}

#[test]
fn validation_as_json_carries_the_comment() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED, "--format", "json"])
        .run();
    out.code(0);
    let v = doc(&out);
    assert_eq!(v["kind"], "repro-validation");
    assert_eq!(v["validated"], true);
    assert_eq!(v["buggy"], BUGGY);
    assert_eq!(v["fixed"], FIXED);
    assert_eq!(v["out"], Value::Null);
    let text = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED])
        .run();
    assert_eq!(
        v["comment"].as_str().expect("comment").trim_end(),
        text.stdout.trim_end()
    );
    // Swapped: exit 2 and no document (the error is on stderr).
    let swapped = Repro::new()
        .args(["report", "--validation", FIXED, BUGGY, "--format", "json"])
        .run();
    swapped.code(2);
    assert!(swapped.stdout.is_empty(), "{}", swapped.stdout);
    assert!(
        swapped.stderr.starts_with("error: swapped runs"),
        "{}",
        swapped.stderr
    );
}

#[test]
fn merge_as_json_is_the_summary_document() {
    let tmp = tempfile::tempdir().expect("tmp");
    let runs = tmp.path().join("runs");
    write_result(
        &runs.join("a"),
        "id-a",
        "v1.33.4+k3s1",
        "reproduced",
        Some("reproduced"),
    );
    write_result(
        &runs.join("b"),
        "id-b",
        "v1.33.5+k3s1",
        "fixed",
        Some("reproduced"),
    );
    let merged = tmp.path().join("merged");
    let out = Repro::new()
        .args(["merge", "--format", "json", "--out"])
        .arg(&merged)
        .arg(&runs)
        .run();
    out.code(1);
    let v = doc(&out);
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(merged.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    assert_eq!(v, written);
    assert_eq!(v["kind"], "repro-matrix-summary");
    assert_eq!(v["exit_code"], 1);
    // The table for people went to stderr.
    assert!(out.stderr.contains("REGRESSION"), "{}", out.stderr);
}

/// A malformed version entry names the flag as typed: the new `--versions`, its `--version`
/// alias, or the older `--k3s-versions`; all three are the one flag. Refused before Docker.
#[test]
fn matrix_versions_flags_echo_the_name_typed() {
    for flag in ["--versions", "--version", "--k3s-versions"] {
        let out = Repro::new()
            .args(["matrix", "--sim", flag, "v1.33.4+k3s1,banana"])
            .run();
        out.code(2);
        assert!(
            out.stderr.starts_with(&format!("error: {flag}: ")),
            "{flag}: {}",
            out.stderr
        );
    }
    // The older name is hidden from help, the new ones shown.
    let help = Repro::new().args(["matrix", "--help"]).run();
    help.code(0);
    assert!(
        help.stdout.contains("--versions <VERSIONS>"),
        "{}",
        help.stdout
    );
    assert!(!help.stdout.contains("[aliases: --k3s"), "{}", help.stdout);
    let run_help = Repro::new().args(["run", "--help"]).run();
    assert!(
        !run_help.stdout.contains("k3s-version]"),
        "{}",
        run_help.stdout
    );
    // Bisect takes --progress now.
    assert!(Repro::new()
        .args(["bisect", "--help"])
        .run()
        .stdout
        .contains("--progress <PROGRESS>"));
}

/// Every error starts with `error: ` (as clap's and the file diagnostics do), whatever command
/// and layer it comes from: a bad flag, a missing folder, bad input found by a command, a file
/// problem, Docker unreachable.
#[test]
fn one_error_prefix() {
    let tmp = tempfile::tempdir().expect("tmp");
    let missing = tmp.path().join("missing");
    let m = missing.to_string_lossy().into_owned();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["run", "--nope"], 2),
        (vec!["report", &m], 2),
        (vec!["redact", &m], 2),
        (vec!["clean"], 2),
        (vec!["validate", "tests/broken/checks/bad-state.yaml"], 2),
        (vec!["clean", "--run", "abc"], 3),
        (vec!["run", "etcd-split", "--sim", "--results", &m], 3),
    ];
    for (args, code) in cases {
        let out = Repro::new()
            .args(&args)
            .env("DOCKER_HOST", "unix:///nonexistent/repro-test/docker.sock")
            .run();
        out.code(code);
        let first_error = out
            .stderr
            .lines()
            .find(|l| l.contains("error: "))
            .unwrap_or_else(|| panic!("{args:?}: no error line:\n{}", out.stderr));
        let head = first_error.split("error: ").next().unwrap_or_default();
        // `error: …`, or a diagnostic's `file:line:col: error: …`.
        assert!(
            head.is_empty() || head.starts_with("tests/broken/"),
            "{args:?}: {first_error}"
        );
        assert!(
            !out.stderr
                .lines()
                .any(|l| l.starts_with("repro: ") && l.contains("cannot")),
            "{args:?}: {}",
            out.stderr
        );
    }
}
