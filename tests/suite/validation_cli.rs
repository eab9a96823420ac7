//! `repro report --validation <buggy-run> <fixed-run>`: the comment k3s QA posts when closing an
//! issue, from the two fixture runs (etcd-split on v1.33.4+k3s1 reproduced, on v1.33.5+k3s1 fixed).

use crate::repro::Repro;
use crate::util::{copy_dir, root};

const BUGGY: &str = "tests/fixtures/run-etcd-split-buggy";
const FIXED: &str = "tests/fixtures/run-etcd-split-fixed";

#[test]
fn validation_comment_of_a_buggy_and_a_fixed_run() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED])
        .run();
    out.code(0);
    snap!("validation-etcd-split", out);
}

/// The sections QA's validation comments have (k3s #12816, #12817), in their order.
#[test]
fn validation_comment_has_the_qa_sections_in_order() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED])
        .run();
    out.code(0);
    let mut at = 0;
    for heading in [
        "### Validated on v1.33.5+k3s1\n",
        "## Environment Details\n",
        "*Infrastructure*\n",
        "*Node(s) CPU architecture, OS, and Version:*\n",
        "*Cluster Configuration:*\n",
        "*Config.yaml:*",
        "## Testing Steps\n",
        "**Replication Results:**\n- k3s version used for replication:\n\n```\n$ k3s -v\nk3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n```",
        "**Validation Results:**\n- k3s version used for validation:\n\n```\n$ k3s -v\nk3s version v1.33.5+k3s1 (fedcba98)\n",
        "**Observations:**\n",
        "**Re-run:**\n\n```sh\nrepro run etcd-split --k3s-version v1.33.4+k3s1 --expect reproduced\nrepro run etcd-split --k3s-version v1.33.5+k3s1 --expect fixed\n```",
    ] {
        let found = out.stdout[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("{heading:?} missing after byte {at}:\n{}", out.stdout));
        at += found + heading.len();
    }
    // The observation that tells the two versions apart, side by side.
    assert!(out.stdout.contains(
        "| 1 | etcd-2 | embedded-registry | up | **down** (the bug, boot 2) | up (boot 2) |"
    ));
    // Every node's config.yaml, and no token.
    for node in [
        "# etcd-1\ncluster-init: true",
        "# etcd-2\nserver: \"https://etcd-1:6443\"",
        "# cp-1\n",
    ] {
        assert!(out.stdout.contains(node), "{node:?}");
    }
    assert!(!out.stdout.contains("9c1f2e7a4b8d3f60e5a2c7b91d4f8e03"));
}

/// Given the runs the wrong way round, the comment says it does not validate anything (exit 1).
#[test]
fn swapped_runs_do_not_validate_and_say_why() {
    let out = Repro::new()
        .args(["report", "--validation", FIXED, BUGGY])
        .run();
    out.code(1);
    assert!(out.stdout.starts_with("<!--"), "{}", out.stdout);
    assert!(
        out.stdout.contains(
            "### Not validated on v1.33.4+k3s1: the run on v1.33.5+k3s1 did not reproduce the bug (fixed); the run on v1.33.4+k3s1 was not fixed (reproduced)\n"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("does not validate the fix"),
        "{}",
        out.stderr
    );
}

#[test]
fn runs_of_different_checks_or_missing_folders_exit_2() {
    let tmp = tempfile::tempdir().expect("tmp");
    copy_dir(&root().join(FIXED), tmp.path());
    let path = tmp.path().join("result.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replacen("\"name\": \"etcd-split\"", "\"name\": \"metrics-order\"", 1),
    )
    .expect("write");
    let out = Repro::new()
        .args(["report", "--validation", BUGGY])
        .arg(tmp.path().to_string_lossy())
        .redact(tmp.path().to_string_lossy(), "[FIXED]")
        .run();
    out.code(2);
    assert!(
        out.stderr
            .contains("the runs are of different checks (`etcd-split` and `metrics-order`)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, "/nonexistent/run"])
        .run();
    out.code(2);
    assert!(
        out.stderr
            .contains("/nonexistent/run: not a results folder"),
        "{}",
        out.stderr
    );
    // One folder is not a pair.
    Repro::new()
        .args(["report", "--validation", BUGGY])
        .run()
        .code(2);
}

#[test]
fn out_writes_the_comment_to_a_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("comment.md");
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED, "--out"])
        .arg(file.to_string_lossy())
        .run();
    out.code(0);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("### Validated on v1.33.5+k3s1"));
}

/// An RKE2 pair (etcd-split on v1.32.5+rke2r1 and v1.32.9-rc1+rke2r1) gets RKE2 QA's comment
/// (rancher/rke2#8876: "# Validated on v1.32.9-rc1+rke2r1", `rke2 -v`, the node list), and the
/// reversed pair is not validated (exit 1).
#[test]
fn an_rke2_pair_gets_rke2_qa_s_comment() {
    const RKE2_BUGGY: &str = "tests/fixtures/run-rke2-etcd-split-buggy";
    const RKE2_FIXED: &str = "tests/fixtures/run-rke2-etcd-split-fixed";
    let out = Repro::new()
        .args(["report", "--validation", RKE2_BUGGY, RKE2_FIXED])
        .run();
    out.code(0);
    let o = &out.stdout;
    assert!(o.contains("\n# Validated on v1.32.9-rc1+rke2r1\n"), "{o}");
    assert!(o.contains("### Validation\n```\n$ rke2 -v\nrke2 version v1.32.9-rc1+rke2r1 (e6934a48249709f918e7cf793fb3016b0c29f3d9)\n"), "{o}");
    snap!("validation-rke2-etcd-split", out);
    let out = Repro::new()
        .args(["report", "--validation", RKE2_FIXED, RKE2_BUGGY])
        .run();
    out.code(1);
    assert!(
        out.stdout.contains("\n# Not validated on v1.32.5+rke2r1: "),
        "{}",
        out.stdout
    );
}
