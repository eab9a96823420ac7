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
