//! Builds under test on the stand-in (#20): a run on a release candidate expects, and gets,
//! the verdict the changes table's `rc:` evidence predicts.

use crate::sim_run as run;
use crate::util::text;

#[test]
fn runs_on_release_candidates_report_what_the_evidence_predicts() {
    for (rc, want) in [
        ("v1.33.5-rc1+k3s1", "fixed"),
        ("v1.33.4-rc1+k3s1", "reproduced"),
    ] {
        // No --expect: `auto` must predict the candidate's verdict for the run to exit 0.
        let (out, r, dir, _t) = run(&["etcd-split", "--k3s-version", rc]);
        assert_eq!(out.status.code(), Some(0), "{rc}: {}", text(&out));
        assert_eq!(r["verdict"]["outcome"], want, "{rc}");
        assert_eq!(r["expect"], want, "{rc}");
        assert_eq!(r["k3s"]["version"], rc);
        let tag = rc.replace('+', "-");
        assert_eq!(
            r["k3s"]["image"],
            format!("{}:{tag}", crate::util::sim_repo()),
            "{rc}"
        );
        let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
        assert!(v.starts_with(&format!("k3s version {rc}")), "{v:?}");
        let because = r["expect_because"].as_str().unwrap_or_default();
        assert!(because.contains("v1.33.5"), "{because}");
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains(rc), "report.md names {rc}");
    }
}

/// `repro sim binary` writes a stand-in that reports the version asked for and has the bug or
/// not as asked — the file decides, not an image's variable (run here on the host, no image).
#[test]
fn sim_binary_reports_its_version_and_its_fix() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, says) in [
        ("--buggy", "etcd-only bootstrap fix absent (buggy)"),
        ("--fixed", "etcd-only bootstrap fix present (fixed)"),
    ] {
        let file = tmp.path().join(format!("k3s{flag}"));
        let out = crate::util::repro()
            .args(["sim", "binary", "--version", "v1.33.5+k3s1", flag, "--out"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let v = std::process::Command::new(&file)
            .env_remove("REPRO_SIM_K3S_VERSION")
            .arg("-v")
            .output()
            .unwrap();
        let v = String::from_utf8_lossy(&v.stdout).into_owned();
        assert!(
            v.starts_with("k3s version v1.33.5+k3s1 (repro-sim)\n"),
            "{v:?}"
        );
        let help = std::process::Command::new(&file)
            .env("REPRO_SIM_K3S_VERSION", "v1.31.12+k3s1")
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        assert!(
            help.contains("Imitated k3s version: v1.33.5+k3s1 (from this binary's stamp)"),
            "{help}"
        );
        assert!(help.contains(says), "{help}");
    }
    let out = crate::util::repro()
        .args(["sim", "binary", "--version", "1.33", "--fixed", "--out"])
        .arg(tmp.path().join("bad"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`1.33` is not a k3s or rke2 version"),
        "{}",
        text(&out)
    );
}

/// Bisect over a list with release candidates: the first fixed one is the rc1 QA validated,
/// and fixed-in (through the changes table's `rc:`) agrees.
#[test]
fn bisect_over_candidates_names_the_first_fixed_candidate() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let list = tmp.path().join("k3s.yaml");
    std::fs::write(
        &list,
        "releases:\n  - v1.33.4+k3s1\n  - v1.33.5-rc1+k3s1\n  - v1.33.5+k3s1\n",
    )
    .unwrap();
    let results = tmp.path().join("results");
    let out = crate::util::repro()
        .args(["bisect", "etcd-split", "--good", "v1.33.5+k3s1", "--bad"])
        .args(["v1.33.4+k3s1", "--sim", "--versions"])
        .arg(&list)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("answer: v1.33.5-rc1+k3s1 is the first release showing `fixed`"),
        "{s}"
    );
    assert!(
        s.contains("fixed-in agrees: it names v1.33.5-rc1+k3s1 for 1.33"),
        "{s}"
    );
}
