//! Reports rendered from the fixture results folder `tests/fixtures/run-etcd-split-buggy`
//! (etcd-split on v1.33.4+k3s1, verdict reproduced): snapshots of every output, the JSON schema,
//! JUnit structure, early-death and stand-in variants, and secrets planted everywhere.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::redact::redact_path;

pub(super) fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy")
}

/// The run token the fixture's inspect.json carries (the runner passes it to `render_all`).
pub(super) const RUN_TOKEN: &str = "9c1f2e7a4b8d3f60e5a2c7b91d4f8e03";

pub(super) fn render_fixture() -> Rendered {
    let folder = load(&fixture()).expect("fixture loads");
    render(&folder, &[RUN_TOKEN.to_string()]).expect("fixture renders")
}

/// A copy of the fixture in a temp dir, to change and render without touching the original.
pub(super) fn fixture_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture(), tmp.path());
    tmp
}

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

pub(super) fn edit_result(dir: &Path, f: impl FnOnce(&mut Value)) {
    let path = dir.join(RESULT_FILE);
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    f(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
}

/// A record as a fixed k3s's: every observation the expected one, the verdict `fixed`.
pub(super) fn as_fixed(v: &mut Value) {
    for step in v["steps"].as_array_mut().expect("steps") {
        for o in step["observations"].as_array_mut().expect("observations") {
            o["observed"] = o["expected"].clone();
        }
    }
    v["verdict"]["outcome"] = Value::from("fixed");
}

fn schema_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/result.schema.json"),
    )
    .expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::draft202012::new(&schema).expect("schema is valid draft 2020-12")
}

pub(super) fn schema_errors(v: &Value) -> Vec<String> {
    schema_validator()
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

// ---------------------------------------------------------------- snapshots

/// Fails unless every one of `parts` is in `text`, in that order.
pub(super) fn assert_in_order(text: &str, parts: &[&str]) {
    let mut at = 0;
    for part in parts {
        let i = text[at..]
            .find(part)
            .unwrap_or_else(|| panic!("{part:?} missing or out of order:\n{text}"));
        at += i + part.len();
    }
}

#[test]
fn snapshot_report_md() {
    insta::assert_snapshot!("report.md", render_fixture().report);
}

#[test]
fn snapshot_junit_xml() {
    insta::assert_snapshot!("junit.xml", render_fixture().junit);
}

#[test]
fn snapshot_timeline_html() {
    insta::assert_snapshot!("timeline.html", render_fixture().timeline);
}

#[test]
fn snapshot_bundle_listing_and_redacted_inspect() {
    let r = render_fixture();
    let names: Vec<&str> = r.bundle.iter().map(|(n, _)| n.as_str()).collect();
    insta::assert_snapshot!("bundle-entries", names.join("\n"));
    let inspect = r
        .bundle
        .iter()
        .find(|(n, _)| n.ends_with("nodes/etcd-2/inspect.json"))
        .map(|(_, d)| String::from_utf8_lossy(d).into_owned())
        .expect("inspect.json in bundle");
    insta::assert_snapshot!("bundle-etcd-2-inspect.json", inspect);
}

// ---------------------------------------------------------------- schema

#[test]
fn fixture_result_json_matches_the_schema() {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join(RESULT_FILE)).expect("read"))
            .expect("json");
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

/// What repro itself writes (the model serialised) must match the schema too, including the
/// redacted copy in the bundle.
#[test]
fn generated_result_json_matches_the_schema() {
    let r = render_fixture();
    let generated = serde_json::to_value(&r.result).expect("serialise");
    assert_eq!(schema_errors(&generated), Vec::<String>::new());
    let (_, bundled) = r
        .bundle
        .iter()
        .find(|(n, _)| n.ends_with("/result.json"))
        .expect("result.json in bundle");
    let bundled: Value = serde_json::from_slice(bundled).expect("bundled json");
    assert_eq!(schema_errors(&bundled), Vec::<String>::new());
}

#[test]
fn a_minimal_early_result_matches_the_schema() {
    // A run that died before any step: no verdict, no finish, no optional fields.
    let mut v: Value = serde_json::to_value(render_fixture().result).expect("serialise");
    let o = v.as_object_mut().expect("object");
    o.remove("planned_steps");
    o.remove("initial_files");
    o["steps"] = Value::Array(vec![]);
    o["verdict"] = Value::Null;
    o["finished_at"] = Value::Null;
    o["exit_code"] = Value::Null;
    o["error"] = Value::String("etcd-2 was not ready within 5m".into());
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    // and the model reads it
    serde_json::from_value::<crate::result::RunResult>(v).expect("model reads it");
}

#[test]
fn the_schema_rejects_drift() {
    let base: Value = serde_json::to_value(render_fixture().result).expect("serialise");
    // Each spoils a valid record one way: (what it makes, how).
    type Spoil = fn(&mut Value);
    let drifts: [(&str, Spoil); 5] = [
        ("an unknown top-level field", |v| {
            v["surprise"] = Value::Bool(true)
        }),
        ("schema_version 3", |v| v["schema_version"] = Value::from(3)),
        ("a version-2 record without `distribution`", |v| {
            v["schema_version"] = Value::from(2);
            v.as_object_mut().expect("object").remove("distribution");
        }),
        ("an unknown outcome", |v| {
            v["verdict"]["outcome"] = Value::from("maybe")
        }),
        ("a boot without log", |v| {
            v["boots"][0].as_object_mut().expect("boot").remove("log");
        }),
    ];
    for (what, spoil) in drifts {
        let mut v = base.clone();
        spoil(&mut v);
        assert!(!schema_errors(&v).is_empty(), "{what} accepted");
    }
}

// ---------------------------------------------------------------- junit

struct Junit {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    names: Vec<String>,
    failed: Vec<String>,
    errored: Vec<String>,
}

/// Parses junit.xml with an XML parser other than the writer's, as CI tools do.
fn parse_junit(xml: &str) -> Junit {
    let doc = roxmltree::Document::parse(xml).expect("junit.xml is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1, "one testsuite per run");
    let suite = suites[0];
    let num = |n: roxmltree::Node<'_, '_>, a: &str| -> usize {
        n.attribute(a)
            .unwrap_or_else(|| panic!("{a} attribute"))
            .parse()
            .expect("number")
    };
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let with = |tag: &str| -> Vec<String> {
        cases
            .iter()
            .filter(|c| c.children().any(|x| x.has_tag_name(tag)))
            .map(|c| c.attribute("name").unwrap_or_default().to_string())
            .collect()
    };
    let j = Junit {
        tests: num(suite, "tests"),
        failures: num(suite, "failures"),
        errors: num(suite, "errors"),
        skipped: num(suite, "skipped"),
        names: cases
            .iter()
            .map(|c| c.attribute("name").unwrap_or_default().to_string())
            .collect(),
        failed: with("failure"),
        errored: with("error"),
    };
    // The root's counts must agree with the suite's, and both with the cases.
    assert_eq!(num(root, "tests"), j.tests);
    assert_eq!(num(root, "failures"), j.failures);
    assert_eq!(num(root, "errors"), j.errors);
    assert_eq!(cases.len(), j.tests);
    assert_eq!(j.failed.len(), j.failures);
    assert_eq!(j.errored.len(), j.errors);
    assert_eq!(with("skipped").len(), j.skipped);
    j
}

#[test]
fn junit_has_one_case_per_expectation_plus_setup_teardown_verdict() {
    let r = render_fixture();
    let j = parse_junit(&r.junit);
    let expectations = r.result.verdict.as_ref().expect("verdict").expectations;
    assert_eq!(expectations, 13);
    assert_eq!(j.tests, expectations + 3);
    assert_eq!(j.names.first().map(String::as_str), Some("setup"));
    assert_eq!(&j.names[j.names.len() - 2..], ["teardown", "verdict"]);
    let step_cases: Vec<&String> = j.names.iter().filter(|n| n.starts_with("step-")).collect();
    assert_eq!(step_cases.len(), expectations);
    assert!(j
        .names
        .contains(&"step-1/etcd-2/embedded-registry".to_string()));
    // Asked for `reproduced` and got it (exit 0): the file has no failure and no error, and the
    // four cases that showed the bug passed with the observation kept as properties.
    assert_eq!(r.result.exit_code, Some(0));
    assert_eq!((j.failures, j.errors), (0, 0), "{}", r.junit);
    let doc = roxmltree::Document::parse(&r.junit).expect("xml");
    let prop = |case: &str, name: &str| -> Option<String> {
        let c = doc
            .descendants()
            .find(|n| n.attribute("name") == Some(case))
            .expect("case");
        c.descendants()
            .filter(|n| n.has_tag_name("property"))
            .find(|n| n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_string)
    };
    for case in [
        "step-1/etcd-2/embedded-registry",
        "step-1/etcd-3/embedded-registry",
        "step-2/etcd-2/embedded-registry",
        "step-2/etcd-3/embedded-registry",
    ] {
        assert_eq!(prop(case, "shows_bug").as_deref(), Some("true"), "{case}");
        assert_eq!(prop(case, "observed").as_deref(), Some("down"), "{case}");
        assert_eq!(prop(case, "expected").as_deref(), Some("up"), "{case}");
    }
    assert_eq!(
        prop("step-3/etcd-2/embedded-registry", "shows_bug").as_deref(),
        Some("false")
    );
}

/// The same run asked for `fixed` (a regression, exit 1): the bug's cases fail as the bug, with
/// expected vs observed and the evidence, and the verdict fails as a regression.
#[test]
fn junit_failures_carry_expected_observed_bug_and_evidence() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["expect"] = Value::from("fixed");
        v["exit_code"] = Value::from(1);
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    assert_eq!(
        j.failed,
        [
            "step-1/etcd-2/embedded-registry",
            "step-1/etcd-3/embedded-registry",
            "step-2/etcd-2/embedded-registry",
            "step-2/etcd-3/embedded-registry",
            "verdict"
        ]
    );
    assert_eq!(j.errors, 0);
    let doc = roxmltree::Document::parse(&r.junit).expect("xml");
    let failure_of = |name: &str| {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .expect("case")
            .children()
            .find(|n| n.has_tag_name("failure"))
            .expect("failure")
    };
    let failure = failure_of("step-2/etcd-3/embedded-registry");
    let message = failure.attribute("message").expect("message");
    assert!(
        message.contains("expected embedded-registry=up") && message.contains("observed down"),
        "{message}"
    );
    assert_eq!(failure.attribute("type"), Some("bug-reproduced"));
    let body = failure.text().expect("failure text");
    for want in [
        "expected: up",
        "observed: down",
        "bug:      down",
        "Running kubelet",
        "boot:     2",
    ] {
        assert!(
            body.contains(want),
            "{want:?} missing from failure text:\n{body}"
        );
    }
    assert_eq!(failure_of("verdict").attribute("type"), Some("regression"));
}

/// Asked for `reproduced` on a k3s that behaved correctly (an unexpected fix, exit 1): the cases
/// the bug would change fail as an unexpected fix; the others pass.
#[test]
fn junit_unexpected_fix_fails_the_bug_cases() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        as_fixed(v);
        v["exit_code"] = Value::from(1);
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    assert_eq!(j.failures, 5, "4 bug cases and the verdict: {:?}", j.failed);
    let doc = roxmltree::Document::parse(&r.junit).expect("xml");
    let types: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.attribute("type"))
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "unexpected-fix").count(), 5);
}

/// Whatever happened, junit.xml agrees with the exit code: no failure and no error exactly when
/// the run exited 0 (so a CI test-report step is green exactly when the job is).
#[test]
fn junit_reflects_the_exit_code() {
    type Edit = fn(&mut Value);
    let variants: [(&str, Edit); 8] = [
        ("as asked (0)", |_| {}),
        // Step 3 of etcd-split says `bug: any` for the joiners' registry: the bug world may show
        // either value there, so `--expect reproduced` passes it on `down` too (issue #24).
        ("bug: any observed down, asked any (0)", |v| {
            for i in [1, 3] {
                let o = &mut v["steps"][2]["observations"][i];
                o["bug"] = Value::from("any");
                o["asked"] = Value::from("any");
                o["observed"] = Value::from("down");
            }
        }),
        (
            "bug: any observed down, older result without asked (0)",
            |v| {
                let o = &mut v["steps"][2]["observations"][1];
                o["bug"] = Value::from("any");
                o["observed"] = Value::from("down");
            },
        ),
        ("bug: any undecided, asked any (0)", |v| {
            let o = &mut v["steps"][2]["observations"][3];
            o["bug"] = Value::from("any");
            o["asked"] = Value::from("any");
            o["observed"] = Value::from("unknown");
        }),
        ("auto on a buggy version, bug: any observed down (0)", |v| {
            v["expect"] = Value::from("inconclusive");
            v["expected_for_version"] = Value::from("reproduced");
            let o = &mut v["steps"][2]["observations"][1];
            o["bug"] = Value::from("any");
            o["observed"] = Value::from("down");
        }),
        ("regression (1)", |v| {
            v["expect"] = Value::from("fixed");
            v["exit_code"] = Value::from(1);
        }),
        ("inconclusive (4)", |v| {
            v["steps"][2]["observations"][0]["observed"] = Value::from("unknown");
            v["verdict"]["outcome"] = Value::from("inconclusive");
            v["exit_code"] = Value::from(4);
        }),
        ("infrastructure (3)", |v| {
            v["steps"].as_array_mut().expect("steps").truncate(1);
            v["verdict"] = Value::Null;
            v["exit_code"] = Value::from(3);
            v["error"] = Value::from("etcd-1 boot 2 was not ready within 5m0s");
        }),
    ];
    for (what, f) in variants {
        let tmp = fixture_copy();
        edit_result(tmp.path(), f);
        let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
        let j = parse_junit(&r.junit);
        let code = r.result.exit_code.expect("exit code");
        // The recorded code is the one `Exit` gives for the recorded verdict and ask.
        if let Some(v) = &r.result.verdict {
            let exit = crate::exit::Exit::of_outcome(v.outcome, super::junit::asked(&r.result));
            assert_eq!(exit.code(), code, "{what}: the variant's exit code");
        }
        assert_eq!(
            j.failures + j.errors == 0,
            code == 0,
            "{what}: exit {code}, failures {}, errors {}:\n{}",
            j.failures,
            j.errors,
            r.junit
        );
    }
}

/// Text no XML or HTML can hold (C0 controls, U+FFFE, U+FFFF) and newlines in result.json's
/// text still give a junit.xml that parses and a timeline without them raw (issue #24).
#[test]
fn junit_and_timeline_are_valid_for_any_text() {
    let hostile = "bad\u{fffe}\u{ffff}\u{1}\u{1b}[2J\u{7f}\u{85}\nsecond line & <b>";
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["steps"][0]["name"] = Value::from(hostile);
        v["check"]["name"] = Value::from(hostile);
        v["steps"][0]["observations"][1]["reason"] = Value::from(hostile);
        v["steps"][0]["observations"][1]["evidence"][0]["text"] = Value::from(hostile);
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    assert_eq!((j.failures, j.errors), (0, 0));
    for (name, doc) in [("junit.xml", &r.junit), ("timeline.html", &r.timeline)] {
        for bad in [
            '\u{fffe}', '\u{ffff}', '\u{1}', '\u{1b}', '\u{7f}', '\u{85}',
        ] {
            assert!(!doc.contains(bad), "{name} holds {:?} raw", bad);
        }
        assert!(
            doc.contains("bad\\ufffe\\uffff"),
            "{name} shows them escaped:\n{doc}"
        );
    }
}

/// A line break in result.json's text (a step name, a reason, an error, an evidence line)
/// cannot start a heading, list or table of its own in report.md (issue #24).
#[test]
fn newlines_in_result_text_do_not_inject_markdown() {
    let tmp = fixture_copy();
    let inject = "tail\n# INJECTED heading\r\n| INJECTED | row |\n- INJECTED item";
    edit_result(tmp.path(), |v| {
        v["check"]["summary"] = Value::from(format!("summary {inject}"));
        v["steps"][0]["name"] = Value::from(format!("step {inject}"));
        v["planned_steps"][0]["name"] = Value::from(format!("step {inject}"));
        v["steps"][0]["observations"][1]["reason"] = Value::from(format!("reason {inject}"));
        v["steps"][0]["observations"][2]["evidence"][0]["text"] =
            Value::from(format!("line {inject}"));
        v["verdict"]["reason"] = Value::from(format!("verdict {inject}"));
        v["error"] = Value::from(format!("error \u{1b}]0;title\u{7} {inject}"));
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    for line in r.report.lines() {
        assert!(
            !line.trim_start().starts_with("# INJECTED")
                && !line.trim_start().starts_with("| INJECTED")
                && !line.trim_start().starts_with("- INJECTED"),
            "a line of its own: {line:?}\n{}",
            r.report
        );
    }
    assert!(r.report.contains("INJECTED heading"), "{}", r.report);
    assert!(!r.report.contains('\u{1b}'), "ESC raw in report.md");
}

/// Every case carries a time and `file`/`line` into the check's YAML: the expectation's own line
/// (`etcd-2: {ready: up, embedded-registry: up}` is line 27 of checks/etcd-split.yaml).
#[test]
fn junit_cases_carry_time_file_and_line() {
    let r = render_fixture();
    let doc = roxmltree::Document::parse(&r.junit).expect("xml");
    let check = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("checks/etcd-split.yaml"),
    )
    .expect("check file");
    let lines: Vec<&str> = check.lines().collect();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let name = case.attribute("name").expect("name");
        let time: f64 = case
            .attribute("time")
            .unwrap_or_else(|| panic!("{name}: no time"))
            .parse()
            .expect("time is a number");
        assert!(time >= 0.0, "{name}");
        assert_eq!(
            case.attribute("file"),
            Some("checks/etcd-split.yaml"),
            "{name}"
        );
        let line: usize = case
            .attribute("line")
            .unwrap_or_else(|| panic!("{name}: no line"))
            .parse()
            .expect("line is a number");
        if let Some(rest) = name.strip_prefix("step-") {
            // step-N/node/signal: the line names the node and the signal.
            let mut parts = rest.split('/');
            let (_, node, signal) = (
                parts.next(),
                parts.next().expect("node"),
                parts.next().expect("signal"),
            );
            let text = lines[line - 1];
            assert!(
                text.trim_start().starts_with(&format!("{node}:")) && text.contains(signal),
                "{name} points at line {line}: {text:?}"
            );
            assert!(time > 0.0, "{name}: a step takes time");
        }
    }
    let case = doc
        .descendants()
        .find(|n| n.attribute("name") == Some("step-1/etcd-2/embedded-registry"))
        .expect("case");
    assert_eq!(case.attribute("line"), Some("27"));
}

/// One cause, one error (issue #32): the run that died in step 2 errors its `verdict` case with
/// the cause; the expectations it never reached and the teardown it never recorded are skipped,
/// pointing at that case.
#[test]
fn a_run_that_died_early_has_one_error_and_skips_the_rest() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        // Died during step 2: its last two observations and all of step 3 are missing.
        let steps = v["steps"].as_array_mut().expect("steps");
        steps.truncate(2);
        steps[1]["observations"]
            .as_array_mut()
            .expect("obs")
            .truncate(2);
        steps[1]["finished_at"] = Value::Null;
        v["verdict"] = Value::Null;
        v["finished_at"] = Value::Null;
        v["exit_code"] = Value::from(3);
        v["error"] = Value::from("etcd-1 boot 2 was not ready within 5m0s");
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    assert_eq!(j.tests, 13 + 3, "planned expectations still all listed");
    assert_eq!(j.errored, vec!["verdict".to_string()], "{}", r.junit);
    assert_eq!(j.errors, 1);
    // Step 2's missing two, step 3's four, and the teardown.
    assert_eq!(j.skipped, 2 + 4 + 1, "{}", r.junit);
    assert!(
        r.junit.contains("never reached, the run stopped (the `verdict` case has the error: etcd-1 boot 2 was not ready within 5m0s)"),
        "{}",
        r.junit
    );
    let annotations = super::github_annotations(&r.result);
    assert_eq!(annotations.len(), 1, "{annotations:?}");
    assert!(
        annotations[0].contains("verdict::no verdict: etcd-1 boot 2 was not ready"),
        "{annotations:?}"
    );
    assert!(
        r.report
            .contains("The run stopped early: etcd-1 boot 2 was not ready within 5m0s"),
        "{}",
        r.report
    );
    assert!(r.report.contains("not reached"));
    assert!(r.timeline.contains("The run stopped early"));
}

#[test]
fn a_cluster_that_never_came_up_errors_setup() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["steps"] = Value::Array(vec![]);
        let boots = v["boots"].as_array_mut().expect("boots");
        boots.truncate(2);
        boots[1]["ready_at"] = Value::Null;
        boots[1]["end"] = Value::from("exited");
        boots[1]["exit_code"] = Value::from(1);
        v["verdict"] = Value::Null;
        v["error"] = Value::from("etcd-2 exited during start-up (exit code 1)");
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    // The cause is setup's alone: every expectation and the verdict are skipped.
    assert_eq!(j.errored, vec!["setup".to_string()], "{}", r.junit);
    assert_eq!(j.skipped, 13 + 1, "{}", r.junit);
    // The exited boot's log tail is quoted in the report.
    assert!(
        r.report
            .contains("Last lines of etcd-2 boot 1 (it exited on its own with code 1)"),
        "{}",
        r.report
    );
}

#[test]
fn keep_skips_teardown_and_a_different_outcome_fails_the_verdict() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["command"]
            .as_array_mut()
            .expect("command")
            .push(Value::from("--keep"));
        v["expect"] = Value::from("fixed");
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let j = parse_junit(&r.junit);
    assert_eq!(j.skipped, 1);
    assert!(j.failed.contains(&"verdict".to_string()));
    assert!(r.report.contains("not what was asked: `--expect fixed`"));
}

// ---------------------------------------------------------------- report, timeline

#[test]
fn report_follows_the_k3s_bug_template() {
    let md = render_fixture().report;
    let headings = [
        "**Environmental Info:**",
        "K3s Version:",
        "Node(s) CPU architecture, OS, and Version:",
        "Cluster Configuration:",
        "**Describe the bug:**",
        "**Steps To Reproduce:**",
        "**Expected behavior:**",
        "**Actual behavior:**",
        "**Additional context / logs:**",
    ];
    assert_in_order(&md, &headings);
    assert!(md.contains("k3s version v1.33.4+k3s1 (abcdef12)"));
    assert!(md.contains("repro run etcd-split --k3s-version v1.33.4+k3s1 --expect reproduced"));
    assert!(
        !md.contains("stand-in**"),
        "real k3s run must not carry the stand-in warning"
    );
}

#[test]
fn stand_in_runs_say_so_everywhere() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["k3s"]["stand_in"] = Value::Bool(true);
        v["k3s"]["image"] = Value::from("repro.local/k3s-sim:v1.33.4-k3s1");
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    assert!(r.report.contains("**not real k3s**"), "{}", r.report);
    assert!(r.report.contains("repro's stand-in image, not real k3s"));
    assert!(r.timeline.contains("Stand-in, not real k3s"));
    assert!(r
        .junit
        .contains(r#"<property name="stand_in" value="true"/>"#));
}

#[test]
fn timeline_is_self_contained() {
    let html = render_fixture().timeline;
    assert!(html.starts_with("<!DOCTYPE html>"));
    for banned in [
        "<script src",
        "<link",
        "@import",
        "url(",
        "http://",
        "https://fonts",
    ] {
        // The SVG namespace URI is an identifier, not a fetch.
        let hits = html.matches(banned).count()
            - html.matches("http://www.w3.org/2000/svg").count() * usize::from(banned == "http://");
        assert_eq!(hits, 0, "timeline.html references {banned}");
    }
    assert!(
        html.contains("class=\"bad\""),
        "mismatch cells are highlighted"
    );
    assert_eq!(html.matches("<g class=\"sig differs\">").count(), 4);
    assert!(html.contains("<title>"), "hover text");
}

// ---------------------------------------------------------------- errors

#[test]
fn corrupt_result_json_names_file_line_and_column() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        tmp.path().join(RESULT_FILE),
        "{\n  \"schema_version\": 1,\n  \"run_id\": oops\n}\n",
    )
    .expect("write");
    let e = load(tmp.path()).expect_err("corrupt file");
    let msg = e.to_string();
    assert!(
        msg.contains("result.json:3:13: invalid result.json: expected value"),
        "{msg}"
    );

    // Valid JSON of the wrong shape: still the position of the problem.
    std::fs::write(
        tmp.path().join(RESULT_FILE),
        "{\n  \"schema_version\": 1,\n  \"run_id\": 7\n}\n",
    )
    .expect("write");
    let msg = load(tmp.path()).expect_err("wrong shape").to_string();
    assert!(
        msg.contains("result.json:3:") && msg.contains("invalid type"),
        "{msg}"
    );
}

#[test]
fn newer_schema_and_missing_folder_are_clear() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let msg = load(&tmp.path().join("nope"))
        .expect_err("missing")
        .to_string();
    assert!(msg.contains("not a results folder"), "{msg}");
    let msg = load(tmp.path()).expect_err("no result.json").to_string();
    assert!(msg.contains("has no result.json"), "{msg}");
    std::fs::write(tmp.path().join(RESULT_FILE), r#"{"schema_version": 9}"#).expect("write");
    let msg = load(tmp.path()).expect_err("newer").to_string();
    assert!(msg.contains("schema_version 9 is newer"), "{msg}");
}

// ---------------------------------------------------------------- secrets in the bundle

/// Secrets planted in every kind of file; each must be gone from every bundle entry.
const PLANTED: &[&str] = &[
    RUN_TOKEN,
    "cfg-token-7f1e2d",
    "cfg-agent-token-93ab",
    "s3-secret-key-55aa",
    "db-password-k8x",
    "env-foo-password-01",
    "cmd-token-flag-22",
    "K10d1f0e8c2b4a6978563412f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4::server:k10-pass-part-xyz",
    "k10-pass-part-xyz",
    "eyJhbGciOiJSUzI1NiJ9.bearer-payload.sig",
    "query-token-value-77",
    "file-content-secret-ab",
];

fn plant_secrets(dir: &Path) {
    let nodes = dir.join(NODES_DIR);
    // configs: YAML keys
    let cfg = nodes.join("etcd-2/config-step-1.yaml");
    let mut text = std::fs::read_to_string(&cfg).expect("config");
    text.push_str("token: cfg-token-7f1e2d\nagent-token: \"cfg-agent-token-93ab\"\netcd-s3-secret-key: s3-secret-key-55aa\nsecrets-encryption: true\ndatastore-endpoint: postgres://k3s:db-password-k8x@db:5432/k3s\n");
    std::fs::write(&cfg, text).expect("write config");
    // env and command line in docker inspect
    let insp = nodes.join("cp-1/inspect.json");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&insp).expect("inspect")).expect("json");
    v[0]["Config"]["Env"]
        .as_array_mut()
        .expect("env")
        .push(Value::from("FOO_PASSWORD=env-foo-password-01"));
    v[0]["Config"]["Cmd"] = serde_json::json!(["server", "--token", "cmd-token-flag-22"]);
    std::fs::write(&insp, serde_json::to_string_pretty(&v).expect("json")).expect("write inspect");
    // log lines
    let log = nodes.join("etcd-1/boot-2.log");
    let mut text = std::fs::read_to_string(&log).expect("log");
    text.push_str(&format!(
        "2026-11-30T09:02:29.000000001Z time=\"2026-11-30T09:02:29Z\" level=debug msg=\"joining with {} token\"\n\
         2026-11-30T09:02:29.000000002Z time=\"2026-11-30T09:02:29Z\" level=debug msg=\"password part k10-pass-part-xyz seen alone\"\n\
         2026-11-30T09:02:29.000000003Z time=\"2026-11-30T09:02:29Z\" level=debug msg=\"request\" header=\"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.bearer-payload.sig\"\n\
         2026-11-30T09:02:29.000000004Z time=\"2026-11-30T09:02:29Z\" level=debug msg=\"GET /v1-k3s/readyz?token=query-token-value-77\"\n\
         2026-11-30T09:02:29.000000005Z time=\"2026-11-30T09:02:29Z\" level=info msg=\"cluster token {RUN_TOKEN} printed bare\"\n",
        PLANTED[7]
    ));
    std::fs::write(&log, text).expect("write log");
    // another file a runner may leave under nodes/
    std::fs::write(
        nodes.join("etcd-3/extra-notes.txt"),
        "client_secret: file-content-secret-ab\n",
    )
    .expect("write");
    // and in result.json: an evidence line carrying the token
    edit_result(dir, |v| {
        v["steps"][0]["observations"][0]["evidence"][0]["text"] =
            Value::from(format!("time=\"2026-11-30T09:00:20Z\" level=info msg=\"K3S_TOKEN={RUN_TOKEN} leaked into a log\""));
    });
}

#[test]
fn no_planted_secret_survives_anywhere_in_the_bundle() {
    let tmp = fixture_copy();
    plant_secrets(tmp.path());
    render_all(tmp.path(), &[RUN_TOKEN.to_string()]).expect("render_all");

    let tgz = std::fs::read(tmp.path().join(BUNDLE_FILE)).expect("bundle written");
    let entries = bundle::read(&tgz).expect("bundle readable");
    assert!(entries.len() >= 34, "{} entries", entries.len());
    let mut all = String::new();
    for (name, data) in &entries {
        let text = String::from_utf8(data.clone()).unwrap_or_else(|_| panic!("{name} is not text"));
        for secret in PLANTED {
            assert!(
                !text.contains(secret),
                "{secret} survived in bundle entry {name}"
            );
        }
        all.push_str(&text);
    }
    // The outputs written next to the bundle are redacted too.
    for f in [JUNIT_FILE, REPORT_FILE, TIMELINE_FILE] {
        let text = std::fs::read_to_string(tmp.path().join(f)).expect("output");
        for secret in PLANTED {
            assert!(!text.contains(secret), "{secret} survived in {f}");
        }
    }
    // Keys stay; the run token is <REDACTED-1> in every file that had it; booleans stay.
    for kept in [
        "K3S_TOKEN=<REDACTED-1>",
        "cluster token <REDACTED-1> printed bare",
        "token: <REDACTED-",
        "agent-token: \"<REDACTED-",
        "etcd-s3-secret-key: <REDACTED-",
        "secrets-encryption: true",
        "postgres://k3s:<REDACTED-",
        "FOO_PASSWORD=<REDACTED-",
        "\"--token\",",
        "Authorization: Bearer <REDACTED-",
        "?token=<REDACTED-",
        "client_secret: <REDACTED-",
    ] {
        assert!(all.contains(kept), "{kept:?} missing from the bundle");
    }
    assert!(!all.contains("K10d1f0e8"), "K10 token survived");
    // One context for the whole bundle: a secret has one number everywhere.
    let inspect = entry(&entries, "nodes/cp-1/inspect.json");
    let log = entry(&entries, "nodes/etcd-1/boot-2.log");
    assert!(
        inspect.contains("K3S_TOKEN=<REDACTED-1>") && log.contains("token <REDACTED-1> printed")
    );
    let k10 = log
        .lines()
        .find(|l| l.contains("joining with"))
        .expect("k10 line");
    let k10_ph = k10
        .split("joining with ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .expect("placeholder");
    assert!(k10_ph.starts_with("<REDACTED-"));
    // Non-secrets untouched.
    assert!(all.contains("--tls-private-key-file=/var/lib/rancher/k3s/agent/serving-kubelet.key"));
    assert!(all.contains("--authentication-token-webhook=true"));
    assert!(all.contains("Starting distributed registry mirror at https://172.28.0.2:6443/v2 for registries [docker.io]"));
}

fn entry(entries: &[(String, Vec<u8>)], suffix: &str) -> String {
    entries
        .iter()
        .find(|(n, _)| n.ends_with(suffix))
        .map(|(_, d)| String::from_utf8_lossy(d).into_owned())
        .unwrap_or_else(|| panic!("{suffix} not in bundle"))
}

#[test]
fn rendering_twice_gives_the_same_bytes() {
    let tmp = fixture_copy();
    render_all(tmp.path(), &[]).expect("first");
    let first = std::fs::read(tmp.path().join(BUNDLE_FILE)).expect("bundle");
    render_all(tmp.path(), &[]).expect("second");
    assert_eq!(
        first,
        std::fs::read(tmp.path().join(BUNDLE_FILE)).expect("bundle")
    );
}

// ---------------------------------------------------------------- repro redact

#[test]
fn redact_path_in_place_on_a_folder() {
    let tmp = fixture_copy();
    plant_secrets(tmp.path());
    let s = redact_path(tmp.path(), None, &[]).expect("redact");
    assert!(s.files >= 30 && s.secrets >= 10, "{s:?}");
    for (name, text) in walk(tmp.path()) {
        for secret in PLANTED {
            assert!(!text.contains(secret), "{secret} survived in {name}");
        }
    }
    // result.json stays valid and readable after redaction.
    load(tmp.path()).expect("redacted folder still loads");
}

#[test]
fn redact_path_to_out_leaves_the_input_alone() {
    let tmp = fixture_copy();
    plant_secrets(tmp.path());
    let out = tempfile::tempdir().expect("out");
    let before = std::fs::read_to_string(tmp.path().join("nodes/cp-1/inspect.json")).expect("read");
    redact_path(tmp.path(), Some(&out.path().join("copy")), &[]).expect("redact");
    assert_eq!(
        before,
        std::fs::read_to_string(tmp.path().join("nodes/cp-1/inspect.json")).expect("read")
    );
    let copied =
        std::fs::read_to_string(out.path().join("copy/nodes/cp-1/inspect.json")).expect("copy");
    assert!(copied.contains("K3S_TOKEN=<REDACTED-1>") && !copied.contains(RUN_TOKEN));
}

#[test]
fn redact_path_on_a_single_file_and_a_bundle() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("config.yaml");
    std::fs::write(
        &f,
        "token: single-file-secret\nwrite-kubeconfig-mode: \"0644\"\n",
    )
    .expect("write");
    redact_path(&f, None, &[]).expect("redact");
    assert_eq!(
        std::fs::read_to_string(&f).expect("read"),
        "token: <REDACTED-1>\nwrite-kubeconfig-mode: \"0644\"\n"
    );

    let raw = bundle::build(
        &[("b/x.log".into(), b"K3S_TOKEN=tarred-secret-1 ok\n".to_vec())],
        0,
    )
    .expect("tar");
    let t = tmp.path().join("old-bundle.tar.gz");
    std::fs::write(&t, raw).expect("write");
    redact_path(&t, None, &["ok".to_string()]).expect("redact tar");
    let entries = bundle::read(&std::fs::read(&t).expect("read")).expect("tar");
    assert_eq!(
        String::from_utf8_lossy(&entries[0].1),
        "K3S_TOKEN=<REDACTED-2> <REDACTED-1>\n"
    );
}

fn walk(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if let Ok(t) = std::fs::read_to_string(&p) {
            out.push((p.display().to_string(), t));
        }
    }
    out
}

#[test]
fn a_secret_that_is_an_ordinary_word_is_still_hidden_and_markup_stays_valid() {
    let r = render(&load(&fixture()).expect("load"), &["kubelet".to_string()]).expect("render");
    for (name, text) in [
        ("junit", &r.junit),
        ("report", &r.report),
        ("timeline", &r.timeline),
    ] {
        assert!(!text.contains("kubelet"), "kubelet left in {name}");
    }
    parse_junit(&r.junit);
    assert!(r.timeline.contains("&lt;REDACTED-1&gt;") && !r.timeline.contains("<REDACTED-1>"));
}

#[test]
fn odd_values_degrade_instead_of_panicking() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["timings"]["teardown"] = Value::from(1e300);
        v["timings"]["cluster-up"] = Value::from(-5.0);
        v["started_at"] = Value::from("yesterday");
        v["steps"][0]["started_at"] = Value::from("1970-01-01T00:00:00Z");
        v["steps"][0]["observations"][0]["node"] = Value::from("no-such-node");
        v["steps"][0]["observations"][1]["evidence"] = Value::Array(vec![]);
        v["boots"][0]["log"] = Value::from("../../etc/passwd");
        v["boots"][1]["ended_at"] = Value::from("9999-12-31T23:59:59Z");
        v["configs"] = serde_json::json!({});
        v["topology"]["nodes"] = Value::Array(vec![]);
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    parse_junit(&r.junit);
    assert!(r.timeline.ends_with("</html>\n"));
}

/// #18: result.json went to schema_version 2 (`distribution`); a version-1 folder (the fixture
/// is one) still reads as a k3s run in `report`, `merge` and `inspect`.
#[test]
fn a_version_1_results_folder_reads_in_report_merge_and_inspect() {
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture().join(RESULT_FILE)).expect("read"))
            .expect("json");
    assert_eq!(raw["schema_version"], 1, "the fixture is a version-1 file");
    assert!(raw.get("distribution").is_none());

    // report
    load(&fixture()).expect("a version-1 folder loads");
    let r = render_fixture();
    assert_eq!(r.result.distribution, distro::Distro::K3s);
    assert!(r.report.contains("K3S_TOKEN"), "the k3s facts rendered");

    // merge
    let cell = crate::matrix::merge::cell_from_result(&fixture().join(RESULT_FILE))
        .expect("merge reads version 1");
    assert_eq!(cell.check, "etcd-split");

    // inspect
    let resolved = crate::inspect::sources::resolve(&[fixture()], &[], &[]).expect("resolve");
    assert_eq!(
        resolved.inputs[0].kind,
        crate::inspect::model::InputKind::ReproResults
    );
    let cat = crate::catalog::Catalog::load(None).expect("catalog");
    let opts = crate::inspect::Options {
        settle: None,
        excerpt: false,
        secrets: Vec::new(),
        progress: false,
    };
    let (rep, _) =
        crate::inspect::inspect(&resolved, &cat, &opts).expect("inspect reads version 1");
    assert!(!rep.inputs[0].nodes.is_empty());

    // What repro writes now is version 2 with the distribution.
    let now = serde_json::to_value(&r.result).expect("serialise");
    assert_eq!(now["distribution"], "k3s");
}
