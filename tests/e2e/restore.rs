//! `repro explore --restore` (#39) on real stand-in containers: the same campaign with and
//! without restoring a kept baseline gives the same findings (k3s and RKE2 topologies), a
//! restored run is judged like a fresh one, and a restored etcd member restarts as the member
//! it was (never added again), at the address it had; nothing is left afterwards, the kept
//! baseline included.

use std::path::{Path, PathBuf};

use crate::runs::{assert_no_leftovers, dirs, read_json as json, read_result, Run};

/// What a campaign found, in the terms that must not depend on how its clusters came up.
fn findings(dir: &Path) -> Vec<String> {
    let f = json(&dir.join("findings.json"));
    let mut out: Vec<String> = (f["findings"].as_array().unwrap().iter())
        .map(|x| {
            format!(
                "{} {} {} {} runs={} minimal={}",
                x["class"], x["key"], x["role"], x["source"], x["runs"], x["minimal"]
            )
        })
        .collect();
    out.sort();
    out
}

/// One campaign of two pinned sequences (and their minimisation and confirmation).
fn campaign(
    topology: &str,
    version: Option<&str>,
    restore: bool,
) -> (PathBuf, crate::runs::Results) {
    let mut run = Run::command(["explore", "--topology", topology])
        .args(["--keys", "embedded-registry"])
        .sim()
        .args(["--sequences", "o1-embedded-registry,o4-embedded-registry"])
        .args(["--confirm", "1"])
        .arg(if restore { "--restore" } else { "--no-restore" });
    if let Some(v) = version {
        run = run.version(v);
    }
    let (out, results) = run.output();
    out.code(0);
    (results.only_run_dir(), results)
}

/// Every run of a campaign folder, each checked to have left nothing under its run id.
fn runs(dir: &Path) -> Vec<PathBuf> {
    let runs = dirs(&dir.join("runs"), "");
    for r in &runs {
        assert_no_leftovers(read_result(r)["run_id"].as_str().unwrap());
    }
    runs
}

/// The kept baselines a campaign's runs restored from (their ids, from the runs' events).
fn baselines(runs: &[PathBuf]) -> std::collections::BTreeSet<String> {
    let marker = "restoring the cluster from baseline ";
    (runs.iter())
        .flat_map(|r| {
            let text = events(r);
            (text.lines())
                .filter_map(|l| l.split(marker).nth(1))
                .map(|t| t.chars().take_while(char::is_ascii_alphanumeric).collect())
                .collect::<Vec<String>>()
        })
        .collect()
}

fn events(run: &Path) -> String {
    std::fs::read_to_string(run.join("events.jsonl")).unwrap()
}

fn same_findings_with_and_without_restore(topology: &str, version: Option<&str>) {
    crate::docker::docker_ok();
    let (fresh, _f) = campaign(topology, version, false);
    let (restored, _r) = campaign(topology, version, true);
    let (a, b) = (findings(&fresh), findings(&restored));
    assert!(!a.is_empty(), "the campaign finds something to compare");
    assert_eq!(a, b, "findings differ with --restore");

    // Every run of the restored campaign restored the one baseline; none of the fresh one did.
    let restored_runs = runs(&restored);
    assert!(restored_runs.len() >= 3, "{restored_runs:?}");
    for r in &restored_runs {
        assert!(
            events(r).contains("restoring the cluster from baseline b"),
            "{}",
            r.display()
        );
    }
    for r in runs(&fresh) {
        let text = events(&r);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains("baseline")).collect();
        assert!(marked.is_empty(), "{}: {marked:?}", r.display());
    }
    // One baseline for the whole campaign (one slot, one version), gone with it: another
    // campaign on this engine may hold its own, so by its id. A baseline is made again only
    // when the run says why (`no longer fits`: e.g. the stand-in image rebuilt meanwhile by
    // another test on this engine); never silently.
    let kept = baselines(&restored_runs);
    let replaced: Vec<String> = (restored_runs.iter())
        .flat_map(|r| {
            (events(r).lines())
                .filter(|l| l.contains("no longer fits"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(kept.len(), 1 + replaced.len(), "{kept:?} {replaced:#?}");
    for id in &kept {
        assert_no_leftovers(id);
    }

    // A restored etcd member restarts as the member it was, at the address it had: etcd-2's
    // first boot of a fresh run joins; of a restored run it starts as an existing member.
    let first_boot =
        |r: &Path| std::fs::read_to_string(r.join("nodes/etcd-2/boot-1.log")).unwrap_or_default();
    let fresh_run = runs(&fresh).remove(0);
    let log = first_boot(&fresh_run);
    assert!(
        log.contains("Adding member") && !log.contains("existing cluster member"),
        "a fresh etcd-2 joins: {log}"
    );
    let node_ip = |log: &str| {
        let at = log.find("--node-ip=").expect("the kubelet's node address");
        log[at..].split_whitespace().next().unwrap().to_string()
    };
    let mut addresses = std::collections::BTreeSet::new();
    for r in &restored_runs {
        let log = first_boot(r);
        assert!(
            log.contains("Starting etcd for existing cluster member"),
            "{}: {log}",
            r.display()
        );
        assert!(!log.contains("Adding member"), "{}: re-added", r.display());
        addresses.insert(node_ip(&log));
    }
    // The etcd members restart together (a lone member of three has no quorum): etcd-2's
    // restored boot is started before etcd-1's is ready, where a fresh etcd-2 joins after it.
    // By the order of the run's own events (the boots' first lines race the engine).
    let order = |r: &Path| {
        let text = events(r);
        let at = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap();
        let started = at(r#""text":"starting etcd-2""#);
        let ready = at(r#""node":"etcd-1","state":"ready","boot":1"#);
        started < ready
    };
    for r in &restored_runs {
        assert!(order(r), "{}", r.display());
    }
    assert!(!order(&fresh_run), "{}", fresh_run.display());
    // The node keeps its address: one, the plan's .11 on the baseline's network, every run.
    assert_eq!(addresses.len(), 1, "{addresses:?}");
    assert!(
        addresses.iter().all(|a| a.ends_with(".11")),
        "{addresses:?}"
    );
}

#[test]
fn etcd_split_finds_the_same_with_and_without_restore() {
    same_findings_with_and_without_restore("etcd-split", Some("v1.33.4+k3s1"));
}

#[test]
fn rke2_8465_finds_the_same_with_and_without_restore() {
    same_findings_with_and_without_restore("rke2-8465", None);
}

/// The run ids of the kept baselines on the engine now (their containers, volumes, networks).
fn baseline_ids() -> std::collections::BTreeSet<String> {
    let mut ids = std::collections::BTreeSet::new();
    for kind in [&["ps", "-a"][..], &["volume", "ls"], &["network", "ls"]] {
        let out = std::process::Command::new("docker")
            .args(kind)
            .args(["--filter", "label=io.repro.baseline"])
            .args(["--format", "{{.Label \"io.repro.run\"}}"])
            .output()
            .unwrap();
        ids.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string),
        );
    }
    ids.retain(|i| !i.is_empty());
    ids
}

/// Ctrl-C while the campaign's baseline is being made: exit 130, and neither the run nor the
/// baseline leaves anything.
#[test]
fn an_interrupt_while_the_baseline_is_made_removes_it() {
    crate::docker::docker_ok();
    let before = baseline_ids();
    let results = tempfile::tempdir().unwrap();
    let mut c = crate::util::repro();
    c.args([
        "explore",
        "--topology",
        "etcd-split",
        "--keys",
        "embedded-registry",
    ])
    .args([
        "--version",
        "v1.33.4+k3s1",
        "--sim",
        "--restore",
        "--no-minimise",
    ])
    .args([
        "--sim-pace",
        "0.5",
        "--sequences",
        "o4-embedded-registry",
        "--results",
    ])
    .arg(results.path());
    let mut r = crate::running::Running::spawn(c);
    assert!(r.wait_line("campaign folder"), "{:?}", r.seen);
    // The baseline's first object, polled (an event on the engine, not a fixed sleep).
    let t = std::time::Instant::now();
    let new = loop {
        let now: Vec<String> = baseline_ids().difference(&before).cloned().collect();
        if !now.is_empty() {
            break now;
        }
        assert!(t.elapsed().as_secs() < 120, "no baseline was made");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    r.signal("INT");
    let (code, seen) = r.finish();
    assert_eq!(code, Some(130), "{seen}");
    for id in &new {
        assert_no_leftovers(id);
    }
}

/// The default: a stand-in config campaign restores from a kept baseline, on Docker and on
/// Podman alike (its kept network's keeper holds the network up between restored runs:
/// docs/podman.md), and never says it does not. One sequence, unpaced, no minimisation: `make
/// test-podman` runs it.
#[test]
fn explore_restores_by_default_on_docker_and_on_podman() {
    crate::docker::docker_ok();
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", "embedded-registry"])
        .sim()
        .version("v1.33.4+k3s1")
        .args(["--sequences", "o4-embedded-registry", "--no-minimise"])
        .output();
    out.code(0);
    let dir = results.only_run_dir();
    let runs = runs(&dir);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let restored = events(&runs[0]).contains("restoring the cluster from baseline");
    assert!(restored, "{out}");
    assert!(!out.stderr.contains("no --restore by default"), "{out}");
    for id in baselines(&runs) {
        assert_no_leftovers(&id);
    }
}
