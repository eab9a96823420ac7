//! What CI reads agrees with the exit code: `repro report` re-renders junit.xml from results
//! folders (the fixtures and variants of them), and an XML parser other than the writer's reads
//! each one. Failures and errors are 0 exactly when the run's exit code is 0 (README, "Exit
//! codes"), whatever text the folder holds (issue #24).

use std::path::Path;

use serde_json::Value;

use crate::util::{copy_dir, repro, root, text};

/// The exit code a run gives for its verdict and what it was asked (README's table): 0 when
/// they agree, 4 inconclusive, 1 another outcome, 3 no verdict.
fn exit_for(result: &Value) -> i64 {
    let asked = match result["expect"].as_str() {
        Some("inconclusive") => result["expected_for_version"].as_str().unwrap_or("fixed"),
        Some(a) => a,
        None => "fixed",
    };
    match result["verdict"]["outcome"].as_str() {
        None => 3,
        Some(got) if got == asked => 0,
        Some("inconclusive") => 4,
        Some(_) => 1,
    }
}

/// (failures, errors) of the one testsuite, checked against the cases it holds.
fn failures_and_errors(xml: &str) -> (usize, usize) {
    let doc = roxmltree::Document::parse(xml)
        .unwrap_or_else(|e| panic!("junit.xml does not parse: {e}\n{xml}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("a testsuite");
    let num = |a: &str| -> usize {
        suite
            .attribute(a)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("testsuite {a}"))
    };
    let with = |tag: &str| {
        suite
            .children()
            .filter(|c| c.has_tag_name("testcase"))
            .filter(|c| c.children().any(|x| x.has_tag_name(tag)))
            .count()
    };
    assert_eq!(
        (num("failures"), num("errors")),
        (with("failure"), with("error"))
    );
    (num("failures"), num("errors"))
}

fn edit(dir: &Path, f: impl FnOnce(&mut Value)) -> Value {
    let path = dir.join("result.json");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    f(&mut v);
    v["exit_code"] = Value::from(exit_for(&v));
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    v
}

type Edit = fn(&mut Value);

/// The registry of both joiners in step 3 of etcd-split is `bug: any`, observed `down`: what a
/// buggy joiner whose load balancer reached the other server shows.
fn any_observed_down(v: &mut Value) {
    let asked = if v["expect"] == "fixed" { "up" } else { "any" };
    for i in [1, 3] {
        let o = &mut v["steps"][2]["observations"][i];
        o["bug"] = Value::from("any");
        o["asked"] = Value::from(asked);
        o["observed"] = Value::from("down");
    }
}

#[test]
fn every_junit_xml_has_failures_exactly_when_the_exit_code_is_not_0() {
    let variants: &[(&str, &str, Edit)] = &[
        ("run-etcd-split-buggy", "as recorded", |_| {}),
        ("run-etcd-split-fixed", "as recorded", |_| {}),
        (
            "run-etcd-split-buggy",
            "--expect reproduced, bug: any observed down",
            |v| any_observed_down(v),
        ),
        (
            "run-etcd-split-buggy",
            "--expect auto on a buggy version, bug: any",
            |v| {
                v["expect"] = Value::from("inconclusive");
                v["expected_for_version"] = Value::from("reproduced");
                any_observed_down(v);
            },
        ),
        (
            "run-etcd-split-buggy",
            "--expect fixed on the buggy version",
            |v| {
                v["expect"] = Value::from("fixed");
                for s in v["steps"].as_array_mut().expect("steps") {
                    for o in s["observations"].as_array_mut().expect("observations") {
                        o["asked"] = o["expected"].clone();
                    }
                }
            },
        ),
        ("run-etcd-split-buggy", "inconclusive", |v| {
            v["steps"][2]["observations"][0]["observed"] = Value::from("unknown");
            v["verdict"]["outcome"] = Value::from("inconclusive");
        }),
        (
            "run-etcd-split-fixed",
            "--expect reproduced on the fixed version",
            |v| {
                v["expect"] = Value::from("reproduced");
            },
        ),
        ("run-etcd-split-buggy", "text XML cannot hold", |v| {
            let hostile = "name\u{fffe}\u{ffff}\u{1}\u{8}\nnext line";
            v["check"]["name"] = Value::from(hostile);
            v["steps"][0]["name"] = Value::from(hostile);
            v["steps"][0]["observations"][1]["reason"] = Value::from(hostile);
        }),
    ];
    for (fixture, what, f) in variants {
        let tmp = tempfile::tempdir().expect("tmp");
        copy_dir(&root().join("tests/fixtures").join(fixture), tmp.path());
        let result = edit(tmp.path(), f);
        let out = repro()
            .arg("report")
            .arg(tmp.path())
            .output()
            .expect("repro runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{fixture}, {what}: {}",
            text(&out)
        );
        let xml = std::fs::read_to_string(tmp.path().join("junit.xml")).expect("junit.xml");
        let (failures, errors) = failures_and_errors(&xml);
        let code = exit_for(&result);
        assert_eq!(
            failures + errors == 0,
            code == 0,
            "{fixture}, {what}: exit {code}, {failures} failures, {errors} errors:\n{xml}"
        );
    }
}

/// The one run folder under `results`.
fn run_folder(results: &Path) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(results)
        .expect("results folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().expect("one")
}

/// Docker unreachable (DOCKER_HOST at a socket that does not exist): the run stops before any
/// container, exit 3. What CI reads says so once (issue #32): junit.xml has one error (setup's,
/// with the cause) and every case the run never reached skipped; `--github-annotations` prints
/// one annotation, not one per case; the events (`--events -` on stdout, events.jsonl in the
/// folder) are the same lines, each valid by schema/events.schema.json, ending in the verdict
/// and the exit; and `$GITHUB_STEP_SUMMARY` gets the run's Markdown.
#[test]
fn docker_unreachable_is_one_error_one_annotation_and_the_events_say_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let results = tmp.path().join("results");
    let summary = tmp.path().join("step-summary.md");
    std::fs::write(&summary, "earlier step\n").expect("write");
    let out = repro()
        .args(["run", "etcd-split", "--sim", "--events", "-", "--results"])
        .arg(&results)
        .env("DOCKER_HOST", "unix:///nonexistent/repro-test/docker.sock")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("repro runs");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: cannot reach the Docker engine"),
        "{stderr}"
    );
    // The summary for people moved to stderr: stdout is the events alone.
    assert!(stderr.contains("verdict: none"), "{stderr}");
    let dir = run_folder(&results);

    // junit.xml: one error, the rest skipped, agreeing with exit 3.
    let xml = std::fs::read_to_string(dir.join("junit.xml")).expect("junit.xml");
    crate::junit::assert_agrees(&dir.join("junit.xml"), 3);
    let doc = roxmltree::Document::parse(&xml).expect("parses");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let with = |tag: &str| -> Vec<&str> {
        cases
            .iter()
            .filter(|c| c.children().any(|x| x.has_tag_name(tag)))
            .map(|c| c.attribute("name").unwrap_or_default())
            .collect()
    };
    assert_eq!(with("error"), vec!["setup"], "{xml}");
    assert!(with("failure").is_empty(), "{xml}");
    let skipped = with("skipped");
    assert_eq!(
        skipped.len(),
        cases.len() - 2,
        "all but setup and teardown: {xml}"
    );
    assert!(skipped.contains(&"verdict"), "{xml}");
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("suite");
    assert_eq!(
        suite.attribute("skipped"),
        Some(skipped.len().to_string().as_str())
    );
    assert!(
        xml.contains("never reached, the run stopped (the `setup` case has the error: cannot reach the Docker engine"),
        "{xml}"
    );

    // One annotation for the one cause.
    let a = repro()
        .args(["report", "--github-annotations"])
        .arg(&dir)
        .output()
        .expect("repro runs");
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let annotations = String::from_utf8_lossy(&a.stdout).into_owned();
    assert_eq!(annotations.lines().count(), 1, "{annotations}");
    assert!(
        annotations.starts_with("::error file=checks/etcd-split.yaml,line=1,title=repro etcd-split on k3s v1.33.4+k3s1%3A setup::the cluster did not come up: cannot reach the Docker engine"),
        "{annotations}"
    );

    // The events: the same lines on stdout and in the folder, each valid, in order.
    let parse = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    };
    let recorded = std::fs::read_to_string(dir.join("events.jsonl")).expect("events.jsonl");
    let lines = parse(&recorded);
    // Each stream stamps its own `time`; the rest is the same.
    let untimed = |mut v: Vec<Value>| -> Vec<Value> {
        v.iter_mut().for_each(|l| l["time"] = Value::Null);
        v
    };
    assert_eq!(
        untimed(parse(&String::from_utf8_lossy(&out.stdout))),
        untimed(lines.clone())
    );
    for l in &lines {
        crate::schema::assert_valid("schema/events.schema.json", l, "an event line");
    }
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(events, ["started", "verdict", "finished"], "{recorded}");
    assert_eq!(lines[0]["check"], "etcd-split");
    assert_eq!(lines[0]["results"], dir.display().to_string());
    assert_eq!(lines[1]["outcome"], Value::Null);
    assert!(lines[1]["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("cannot reach the Docker engine")));
    assert_eq!(lines[2]["exit_code"], 3);
    let ids: Vec<&str> = lines.iter().filter_map(|l| l["run_id"].as_str()).collect();
    assert!(ids.iter().all(|i| !i.is_empty() && *i == ids[0]), "{ids:?}");

    // The job summary: appended after what an earlier step wrote.
    let md = std::fs::read_to_string(&summary).expect("summary");
    assert!(
        md.starts_with("earlier step\n### ❌ repro run etcd-split on k3s v1.33.4+k3s1 (repro stand-in, not real k3s): no verdict"),
        "{md}"
    );
    assert!(
        md.contains("The run stopped before a verdict: cannot reach the Docker engine"),
        "{md}"
    );
    assert_eq!(md.matches("not reached").count(), cases.len() - 3, "{md}");
}

/// `--events -` takes stdout: with `--format json` (which wants it too) it is refused before
/// anything exists; a path that cannot be created is exit 2 naming it.
#[test]
fn events_flag_refusals() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (args, want) in [
        (
            vec!["--events", "-", "--format", "json"],
            "error: --events - and --format json both want stdout",
        ),
        (
            vec!["--events", "/nonexistent/dir/events.jsonl"],
            "error: --events /nonexistent/dir/events.jsonl: ",
        ),
    ] {
        let out = repro()
            .args(["run", "etcd-split", "--sim", "--results"])
            .arg(tmp.path())
            .args(&args)
            .env("DOCKER_HOST", "unix:///nonexistent/repro-test/docker.sock")
            .output()
            .expect("repro runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(want), "{args:?}: {stderr}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).expect("dir").count(),
            0,
            "nothing was created"
        );
    }
}
