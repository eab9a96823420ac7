//! report.md for a k3s maintainer: evidence in words, the timeline as Mermaid, `k3s -v` in full,
//! and the logs of the boots that matter inline (redacted, trimmed).

use super::tests::{as_fixed, edit_result, fixture_copy, render_fixture};
use super::*;

#[test]
fn evidence_reads_in_words_naming_node_boot_and_lines() {
    let md = render_fixture().report;
    // The settle rule in words: what was missing, where, how much log there was, how far it got.
    assert!(
        md.contains(
            "etcd-2 `embedded-registry` **down** (expected up — the documented bug): no `Starting distributed registry mirror at https://` line in etcd-2 boot 2 (12 lines), which reached `Running kubelet` at 09:01:45 and went on past the 3s settle window."
        ),
        "{md}"
    );
    // An `up` line is quoted as k3s wrote it (its msg), not as a regex.
    assert!(
        md.contains("`Starting distributed registry mirror at https://172.28.0.2:6443/v2 for registries [docker.io]` in etcd-1 boot 2 at 09:02:24"),
        "{md}"
    );
    // No repro jargon in the sentences.
    let words: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("- etcd-") || l.starts_with("- cp-"))
        .collect();
    assert_eq!(words.len(), 13, "one sentence per observation");
    for l in words {
        assert!(!l.contains("settle rule:") && !l.contains("(?i)"), "{l}");
    }
}

/// A `down` by the after-feature rule (the stand-in's and real k3s's usual case for the
/// registry) is an absence in words too, bounded by the line k3s prints after the feature's own
/// (#32: it was the kubelet command line, cut mid-flag).
#[test]
fn an_after_feature_down_reads_as_what_was_absent_before_which_line() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        for s in v["steps"].as_array_mut().expect("steps") {
            for o in s["observations"].as_array_mut().expect("observations") {
                if o["observed"] == "down" {
                    o["rule"] = "after-feature".into();
                    o["reason"] = "k3s prints this line after the feature's own, and no `up` line came before it".into();
                }
            }
        }
    });
    let folder = load(tmp.path()).expect("loads");
    let md = render(&folder, &[]).expect("renders").report;
    assert!(
        md.contains(
            "etcd-2 `embedded-registry` **down** (expected up — the documented bug): no `Starting distributed registry mirror at https://` line in etcd-2 boot 2 (12 lines) before `Running kubelet` at 09:01:45, which k3s prints after the feature's own."
        ),
        "{md}"
    );
    assert!(!md.contains("`Running kubelet --"), "{md}");
}

#[test]
fn the_full_k3s_version_output_is_quoted_or_the_banner_says_where_it_came_from() {
    let md = render_fixture().report;
    assert!(
        md.contains("```\n$ k3s -v\nk3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n```"),
        "{md}"
    );
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["k3s"]
            .as_object_mut()
            .expect("k3s")
            .remove("version_output");
    });
    let md = render(&load(tmp.path()).expect("load"), &[])
        .expect("render")
        .report;
    assert!(
        md.contains("```\nk3s version v1.33.4+k3s1 (abcdef12)\n```\n\n(from the first boot's log banner: this run did not record `k3s -v`)"),
        "{md}"
    );
}

/// A build under test is named with its version and sha256, and its version heads the report.
#[test]
fn a_build_under_test_is_named_with_its_version_and_sum() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), |v| {
        v["build"] = serde_json::json!({
            "source": "commit",
            "path": "/cache/repro/builds/48a3b849/k3s",
            "commit": "48a3b849aabbccddeeff00112233445566778899",
            "url": "https://k3s-ci-builds.s3.amazonaws.com/k3s-48a3b849aabbccddeeff00112233445566778899",
            "sha256": "ab".repeat(32),
            "size": 1,
            "reported": "v1.33.5+k3s-48a3b849",
            "installed_at": "/bin/k3s"
        });
    });
    let md = render(&load(tmp.path()).expect("load"), &[])
        .expect("render")
        .report;
    assert!(md.contains("on k3s v1.33.5+k3s-48a3b849 — "), "{md}");
    assert!(
        md.contains(&format!(
            "Build under test: the CI build of commit `48a3b849aabbccddeeff00112233445566778899`, reporting `v1.33.5+k3s-48a3b849` (sha256 `{}`), copied to `/bin/k3s`",
            "ab".repeat(32)
        )),
        "{md}"
    );
}

/// Every line of the Mermaid block is one GitHub's Mermaid reads as Gantt syntax: a keyword line
/// or `name :data` with times in epoch milliseconds, the end never before the start.
#[test]
fn the_timeline_is_a_well_formed_mermaid_gantt() {
    let md = render_fixture().report;
    let start = md.find("```mermaid\n").expect("a mermaid block");
    let block = &md[start + "```mermaid\n".len()..];
    let block = &block[..block.find("```").expect("closed")];
    let mut lines = block.lines();
    assert_eq!(lines.next(), Some("gantt"));
    let mut sections = Vec::new();
    let mut tasks = 0;
    for l in lines {
        let l = l.trim();
        if let Some(s) = l.strip_prefix("section ") {
            sections.push(s.to_string());
            continue;
        }
        if ["title ", "dateFormat ", "axisFormat ", "todayMarker "]
            .iter()
            .any(|k| l.starts_with(k))
        {
            continue;
        }
        let (name, data) = l
            .split_once(" :")
            .unwrap_or_else(|| panic!("not a task: {l:?}"));
        assert!(
            !name.contains(':') && !name.contains('#') && !name.contains(';'),
            "{l}"
        );
        let parts: Vec<&str> = data.split(", ").collect();
        let nums: Vec<&str> = parts
            .iter()
            .copied()
            .filter(|p| !["crit", "milestone", "done", "active"].contains(p))
            .collect();
        assert_eq!(nums.len(), 2, "{l}");
        let a: i64 = nums[0].parse().unwrap_or_else(|_| panic!("start: {l}"));
        if nums[1] != "1s" {
            let b: i64 = nums[1].parse().unwrap_or_else(|_| panic!("end: {l}"));
            assert!(b >= a, "{l}");
        }
        tasks += 1;
    }
    assert_eq!(sections, ["steps", "etcd-1", "etcd-2", "etcd-3", "cp-1"]);
    // 4 step bars, 9 boots, 2 bug milestones per bug node (merged across steps 1 and 2).
    assert_eq!(tasks, 4 + 9 + 2, "{block}");
    assert!(block.contains("step 1+2 embedded-registry down - the bug :crit, milestone, "));
}

#[test]
fn logs_of_the_boots_that_matter_are_inline_and_others_are_not() {
    let md = render_fixture().report;
    let summaries: Vec<&str> = md
        .lines()
        .filter(|l| {
            l.starts_with("<details><summary>etcd-") || l.starts_with("<details><summary>cp-")
        })
        .collect();
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    assert!(summaries[0]
        .starts_with("<details><summary>etcd-2 boot 2 (step 1, 12 lines, stopped by repro)"));
    assert!(summaries[1].starts_with("<details><summary>etcd-3 boot 2 "));
    assert_eq!(
        md.matches("</details>").count(),
        md.matches("<details>").count()
    );
    // The log is k3s's own lines, without Docker's timestamps.
    assert!(
        md.contains("\ntime=\"2026-11-30T09:01:43Z\" level=info msg=\"k3s is up and running\"\n")
    );
}

/// A long boot log is trimmed to its start, the evidence with a few lines around it and its
/// end, saying how much was left out; a huge one is left to the bundle.
#[test]
fn long_logs_are_trimmed_around_the_evidence() {
    let tmp = fixture_copy();
    let log = tmp.path().join("nodes/etcd-2/boot-2.log");
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    let filler =
        "2026-11-30T09:01:40.000000000Z time=\"2026-11-30T09:01:40Z\" level=info msg=\"filler\"";
    let mut long = lines[..10].to_vec();
    long.extend(std::iter::repeat_n(filler, 300));
    long.extend(lines[10..].iter());
    long.extend(std::iter::repeat_n(filler, 100));
    std::fs::write(&log, long.join("\n") + "\n").expect("write");
    let md = render(&load(tmp.path()).expect("load"), &[])
        .expect("render")
        .report;
    let start = md
        .find("<details><summary>etcd-2 boot 2 (step 1, 412 lines")
        .unwrap_or_else(|| panic!("{md}"));
    let block = &md[start..start + md[start..].find("</details>").expect("end")];
    assert!(
        block.contains("… (") && block.contains(" lines left out)"),
        "{block}"
    );
    assert!(
        block.contains("msg=\"Running kubelet"),
        "the evidence line stays: {block}"
    );
    assert!(block.lines().count() < 100, "{block}");
    assert!(md.contains("in etcd-2 boot 2 (412 lines), which reached `Running kubelet`"));
}

/// A run where everything held (a fixed k3s) still shows the boots where the bug would have
/// shown, so a validation reader sees the feature come up.
#[test]
fn a_fixed_run_shows_the_boots_the_bug_would_change() {
    let tmp = fixture_copy();
    edit_result(tmp.path(), as_fixed);
    let md = render(&load(tmp.path()).expect("load"), &[])
        .expect("render")
        .report;
    assert!(md.contains("<details><summary>etcd-2 boot 2 "), "{md}");
}
