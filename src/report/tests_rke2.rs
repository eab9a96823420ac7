//! report.md for an RKE2 run follows rancher/rke2's bug template (docs/rke2-bug-template.md):
//! rendered from `tests/fixtures/run-rke2-etcd-split-buggy` (etcd-split on v1.32.5+rke2r1,
//! made by tests/fixtures/tools/make-rke2-fixtures.py), snapshot-tested, with no k3s spelling
//! left in what RKE2 maintainers read.

use std::path::{Path, PathBuf};

use super::*;

pub(super) fn rke2_fixture(which: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/run-rke2-etcd-split-{which}"))
}

pub(super) fn render_rke2(which: &str) -> Rendered {
    let folder = load(&rke2_fixture(which)).expect("rke2 fixture loads");
    render(&folder, &[]).expect("rke2 fixture renders")
}

#[test]
fn snapshot_rke2_report_md() {
    insta::assert_snapshot!("rke2-report.md", render_rke2("buggy").report);
}

#[test]
fn rke2_report_follows_the_rke2_bug_template() {
    let md = render_rke2("buggy").report;
    // rancher/rke2 .github/ISSUE_TEMPLATE/bug_report.md, in its order.
    let headings = [
        "**Environmental Info:**",
        "RKE2 Version:",
        "Node(s) CPU architecture, OS, and Version:",
        "Cluster Configuration:",
        "**Describe the bug:**",
        "**Steps To Reproduce:**",
        "- Installed RKE2:",
        "**Expected behavior:**",
        "**Actual behavior:**",
        "**Additional context / logs:**",
    ];
    super::tests::assert_in_order(&md, &headings);
    // `rke2 -v` as #8465's reporter pasted it: both lines, the full 40-hex commit.
    assert!(
        md.contains("```\n$ rke2 -v\nrke2 version v1.32.5+rke2r1 (96e5d2054ec1ecbe9799514eddbeab58579b93e5)\ngo version go1.23.8 X:boringcrypto\n```"),
        "{md}"
    );
    assert!(md.contains("INSTALL_RKE2_ARTIFACT_PATH"), "{md}");
    assert!(md.contains("the cluster token in `RKE2_TOKEN`"), "{md}");
    assert!(md.contains("`https://etcd-1:9345`"), "{md}");
    assert!(md.contains("logged `rke2 is up and running`"), "{md}");
    assert!(md.contains("— (creates the cluster)"), "{md}");
    assert!(md.contains("journalctl -u rke2-server"), "{md}");
    assert!(md.contains("on rke2 v1.32.5+rke2r1 — **reproduced**: rke2 showed the documented bug"));
    // Nothing of k3s's template or paths in an RKE2 report (the check's own text aside: it
    // names k3s's PR and issue, where the fix lives).
    for k3s in [
        "K3s Version:",
        "Installed K3s",
        "$ k3s -v",
        "/etc/rancher/k3s",
        "cluster-init",
        "K3S_TOKEN",
        "k3s is up and running",
        "as k3d runs k3s",
        "official k3s image",
        "own k3s log",
        "k3s's own lines",
    ] {
        assert!(!md.contains(k3s), "`{k3s}` in an rke2 report:\n{md}");
    }
}

#[test]
fn a_k3s_run_keeps_k3s_s_template() {
    let md = super::tests::render_fixture().report;
    assert!(md.contains("K3s Version:") && md.contains("- Installed K3s:"));
    for rke2 in [
        "RKE2 Version",
        "Installed RKE2",
        "rke2 -v",
        "/etc/rancher/rke2",
        ":9345",
    ] {
        assert!(!md.contains(rke2), "`{rke2}` in a k3s report:\n{md}");
    }
}

#[test]
fn an_rke2_stand_in_run_says_it_is_not_real_rke2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    super::tests::copy_dir(&rke2_fixture("buggy"), tmp.path());
    super::tests::edit_result(tmp.path(), |v| {
        v["k3s"]["stand_in"] = serde_json::Value::Bool(true);
        v["k3s"]["image"] = serde_json::Value::from("repro.local/k3s-sim:v1.32.5-rke2r1");
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    assert!(
        r.report.contains("repro's rke2 **stand-in**"),
        "{}",
        r.report
    );
    assert!(r.report.contains("**not real rke2**"), "{}", r.report);
    assert!(r
        .report
        .contains("Confirm the result on `repro.local/rke2-node:v1.32.5-rke2r1`"));
    assert!(r.report.contains("repro's stand-in image, not real rke2"));
}

#[test]
fn rke2_fixtures_match_the_schema_and_say_rke2() {
    for which in ["buggy", "fixed"] {
        let text = std::fs::read_to_string(rke2_fixture(which).join(RESULT_FILE)).expect("read");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            super::tests::schema_errors(&v),
            Vec::<String>::new(),
            "{which}"
        );
        assert_eq!(v["distribution"], "rke2", "{which}");
        let r = render_rke2(which);
        assert_eq!(r.result.distribution, distro::Distro::Rke2);
        // Every generated result.json (the redacted copy in the bundle) matches as well.
        let redacted: serde_json::Value = serde_json::to_value(&r.result).expect("serialise");
        assert_eq!(super::tests::schema_errors(&redacted), Vec::<String>::new());
    }
}

// ---------------------------------------------------------------- the validation comment

#[test]
fn snapshot_rke2_validation_comment() {
    let (text, outcome) = validation::render(&render_rke2("buggy"), &render_rke2("fixed"));
    assert_eq!(outcome, validation::Outcome::Validated);
    insta::assert_snapshot!("rke2-validation.md", text);
}

/// RKE2 QA's shape (rancher/rke2#8875, #8876): `# Validated on <rc>`, `Steps:`, `### Validation`
/// with `$ rke2 -v` and both its lines, the node list with kubectl's roles, then the results.
#[test]
fn rke2_validation_comment_has_rke2_qa_s_shape() {
    let (text, _) = validation::render(&render_rke2("buggy"), &render_rke2("fixed"));
    let body: Vec<&str> = text.lines().skip(1).collect(); // the `<!-- Written by … -->` line
    assert_eq!(body[0], "# Validated on v1.32.9-rc1+rke2r1", "{text}");
    assert!(
        body[2].starts_with(
            "Steps: https://github.com/k3s-io/k3s/issues/12753 — repro check `etcd-split`"
        ),
        "{text}"
    );
    let order = [
        "### Validation\n```\n$ rke2 -v\nrke2 version v1.32.9-rc1+rke2r1 (e6934a48249709f918e7cf793fb3016b0c29f3d9)\ngo version go1.23.12 X:boringcrypto\n```\n",
        "- Cluster status (repro topology `etcd-split`",
        "NAME     ROLES                    BOOTS  LAST BOOT\n",
        "etcd-1   etcd                     2      ready, still running when the run ended\n",
        "cp-1     control-plane,master     1      ready, still running when the run ended\n",
        "- Environment (every node a privileged container on one host)\n```\nreplication: x86_64, Debian GNU/Linux 13 (trixie)",
        "- Steps\n\n- Installed RKE2:",
        "- Results\n\n**Replication on v1.32.5+rke2r1:**\n```\n$ rke2 -v\nrke2 version v1.32.5+rke2r1 (96e5d2054ec1ecbe9799514eddbeab58579b93e5)\n",
        "**Validation on v1.32.9-rc1+rke2r1:**\n```\n$ rke2 -v\n",
        "**Observations:**",
        "**Re-run:**\n\n```sh\nrepro run etcd-split --version v1.32.5+rke2r1 --expect reproduced\nrepro run etcd-split --version v1.32.9-rc1+rke2r1 --expect fixed\n```",
    ];
    super::tests::assert_in_order(&text, &order);
    // k3s QA's long form is not what RKE2 QA posts.
    for k3s in [
        "## Environment Details",
        "### Validated on",
        "$ k3s -v",
        "K3s",
    ] {
        assert!(
            !text.contains(k3s),
            "`{k3s}` in an rke2 validation:\n{text}"
        );
    }
}

#[test]
fn a_pair_that_does_not_validate_says_why_in_the_heading() {
    // The fixed run given as the buggy one: nothing was replicated.
    let (text, outcome) = validation::render(&render_rke2("fixed"), &render_rke2("fixed"));
    assert_eq!(outcome, validation::Outcome::NotValidated);
    assert!(
        text.contains("# Not validated on v1.32.9-rc1+rke2r1: the run on v1.32.9-rc1+rke2r1 did not reproduce the bug (fixed)"),
        "{text}"
    );
}

/// The fixture's inspect.json carries a fake cluster token as `RKE2_TOKEN=`: no output of the
/// render may hold it, whether or not the run's token is handed to the redactor.
#[test]
fn the_rke2_token_never_reaches_an_output() {
    let token = super::tests::RUN_TOKEN;
    for secrets in [vec![], vec![token.to_string()]] {
        let r = render(&load(&rke2_fixture("buggy")).expect("load"), &secrets).expect("render");
        for (name, data) in &r.bundle {
            assert!(
                !String::from_utf8_lossy(data).contains(token),
                "{name} holds the token (secrets given: {})",
                secrets.len()
            );
        }
        for text in [&r.report, &r.junit, &r.timeline] {
            assert!(!text.contains(token));
        }
    }
}

#[test]
fn timeline_junit_and_chart_name_rke2() {
    let r = render_rke2("buggy");
    assert!(
        r.timeline
            .contains("<title>etcd-split on rke2 v1.32.5+rke2r1 — reproduced"),
        "{}",
        &r.timeline[..400]
    );
    assert!(
        r.junit
            .contains(r#"name="etcd-split (rke2 v1.32.5+rke2r1)""#),
        "{}",
        &r.junit[..600]
    );
    assert!(r
        .report
        .contains("    title etcd-split on rke2 v1.32.5+rke2r1 - reproduced"));
    // Asked for `fixed`, the bug's cases fail and each becomes an annotation titled with rke2.
    let tmp = tempfile::tempdir().expect("tempdir");
    super::tests::copy_dir(&rke2_fixture("buggy"), tmp.path());
    super::tests::edit_result(tmp.path(), |v| {
        v["expect"] = serde_json::Value::from("fixed")
    });
    let r = render(&load(tmp.path()).expect("load"), &[]).expect("render");
    let annotations = super::github_annotations(&r.result);
    assert!(!annotations.is_empty());
    for a in &annotations {
        assert!(a.contains("repro etcd-split on rke2 v1.32.5+rke2r1"), "{a}");
    }
}
