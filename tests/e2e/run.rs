//! End-to-end: the real `repro` binary against real Docker containers of the k3s stand-in.
//! These need a Docker engine; they fail (not skip) when there is none, so CI cannot pass
//! without running them. After every run, nothing labelled with its run id may be left.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::docker::docker_ok;
use crate::images::{docker, sim_build, sim_image, Image};
use crate::repro::{Output, Repro};
use crate::runs::{assert_no_leftovers, boot, clean, observation, read_result, KeptCluster, Run};
use crate::tcp_proxy::{docker_socket, TcpProxy};
use crate::util::{project, text};

use serde_json::Value;

/// `repro run <check> --sim --version <version>`, not run yet.
fn sim(check: &str, version: &str) -> Run {
    Run::check(check).sim().version(version)
}

#[test]
fn etcd_split_reproduces_on_buggy_version() {
    let run = sim("etcd-split", "v1.33.4+k3s1")
        .expect("reproduced")
        .finish();
    run.out.code(0);
    let r = &run.result;
    assert_eq!(run.outcome(), "reproduced");
    // `k3s -v` in full, asked of the init node, for the report's Environmental Info.
    let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
    assert!(v.starts_with("k3s version v1.33.4+k3s1"), "{v:?}");
    let md = run.file("report.md");
    assert!(
        md.contains(v.lines().next().unwrap()),
        "report.md quotes k3s -v"
    );
    let o = observation(r, 1, "etcd-2", "embedded-registry");
    assert_eq!(o["observed"], "down");
    assert!(
        !o["evidence"].as_array().unwrap().is_empty(),
        "down needs evidence: {o}"
    );
    // The kubelet line is ordered after the registry's line (the stand-in prints them in k3s's
    // order): it decides `down` with no settle window.
    assert_eq!(o["rule"], "after-feature", "{o}");
    assert_eq!(o["settle_ms"], 0, "{o}");
    assert!(o["evidence"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Running kubelet"));
    // Step 3: through its load balancer the buggy etcd-2 reads cp-1 (no registry); the
    // check marks this step `any` in the bug world, so the verdict stands either way.
    let o = observation(r, 3, "etcd-2", "embedded-registry");
    assert_eq!(o["observed"], "down");
    assert_eq!(o["bug"], "any");
    // The terminal summary labels that cell as not judged, not BUG (#32 item 8), and a pipe
    // gets no colour.
    let summary = &run.out.stdout;
    let step3 = summary
        .split("step 3:")
        .nth(1)
        .expect("step 3 in the summary");
    let row = step3
        .lines()
        .find(|l| l.contains("etcd-2") && l.contains("embedded-registry"))
        .expect("etcd-2's registry row in step 3");
    assert!(
        row.starts_with("  --  ") && row.contains("not judged"),
        "{row}"
    );
    assert!(
        summary.contains("  BUG etcd-2   embedded-registry"),
        "{summary}"
    );
    assert!(
        !summary.contains('\x1b'),
        "no colour in a pipe: {summary:?}"
    );
    // Every boot has its own log, and boot 2 of etcd-2 does not contain boot 1's lines.
    let b1 = run.boot_log("etcd-2", 1);
    let b2 = run.boot_log("etcd-2", 2);
    assert!(
        b1.contains("Starting etcd to join cluster") || b1.contains("Adding member"),
        "{b1}"
    );
    assert!(
        b2.contains("Managed etcd cluster bootstrap already complete"),
        "{b2}"
    );
    assert!(
        !b2.contains("Adding member"),
        "boot 2 log holds boot 1 lines"
    );
}

fn time(b: &Value, key: &str) -> chrono::DateTime<chrono::FixedOffset> {
    let t = b[key].as_str().unwrap_or_else(|| panic!("no {key}: {b}"));
    chrono::DateTime::parse_from_rfc3339(t).unwrap()
}

/// Issue #23's done-when is a paced run within 1.15x its critical path: `make bench` measures
/// that figure (a release binary's wall time, bench/src/main.rs `paced_section`). Here a debug
/// binary runs beside other tests, and the engine's start and stop calls on the path (13 in
/// etcd-split) slow down with the machine's load: this test measured 1.156 at load 4.5, where a
/// release binary measured 1.135-1.151 at load 2-3. So this test's bound has slack for load — a
/// regression of about 2 s on the path still fails it — and one run over it gets a second try.
const PACED_BOUND: f64 = 1.20;

/// Issue #23: with `--sim-pace 0.5` every phase of a stand-in boot takes half of what it takes
/// on real k3s, and the nodes start on the critical path (cp-1 beside etcd-2). The verdict is
/// the same as unpaced, and the run takes at most [`PACED_BOUND`] times the plan's critical
/// path: the run's own time (result.json, from its start to its conclusion — not this debug
/// binary's start-up or the test's checks after it).
#[test]
fn etcd_split_paced_starts_on_the_critical_path() {
    let path = paced_critical_path();
    let mut ratios = Vec::new();
    while ratios.len() < 2 {
        let ratio = paced_run_ratio(path);
        ratios.push(ratio);
        if ratio <= PACED_BOUND {
            break;
        }
    }
    assert!(
        ratios.iter().any(|r| *r <= PACED_BOUND),
        "paced etcd-split took {ratios:?} times its critical path {path:.2} s (bound {PACED_BOUND})"
    );
}

/// The plan's critical path of etcd-split at `--sim-pace 0.5`, in seconds.
fn paced_critical_path() -> f64 {
    let plan = Repro::new()
        .args([
            "plan",
            "etcd-split",
            "--k3s-version",
            "v1.33.4+k3s1",
            "--sim",
        ])
        .args(["--sim-pace", "0.5", "--format", "json"])
        .run();
    let plan = plan.code(0).json();
    let path = plan["critical_path"]["seconds"].as_f64().unwrap();
    assert!(path > 0.0, "{plan}");
    path
}

/// One paced run, checked as the test's doc says; returns its time over the critical path.
fn paced_run_ratio(path: f64) -> f64 {
    let t0 = std::time::Instant::now();
    let run = sim("etcd-split", "v1.33.4+k3s1")
        .expect("reproduced")
        .args(["--sim-pace", "0.5"])
        .finish();
    let wall = t0.elapsed().as_secs_f64();
    run.out.code(0);
    let r = &run.result;
    assert_eq!(run.outcome(), "reproduced");
    // The paced phases happened, in each boot's own log and in order. v1.33.4 has agent
    // startup sequencing (k3s f185f9e72, docs/k3s-behaviour.md §15): `PrepareServer` (the init
    // node's bootstrap), then `agent.Run`, then `StartServer` (etcd's join or restart, the
    // learner's promotion, the apiserver).
    let log = |node: &str, n: u64| run.boot_log(node, n);
    for (node, n, phases) in [
        ("etcd-1", 1, &["init", "agent"][..]),
        ("etcd-2", 1, &["agent", "join", "learner-promotion"][..]),
        ("cp-1", 1, &["agent", "join", "apiserver"][..]),
        ("etcd-2", 2, &["agent", "restart"][..]),
        ("etcd-1", 2, &["agent", "restart"][..]),
    ] {
        let text = log(node, n);
        let at: Vec<usize> = phases
            .iter()
            .map(|p| {
                text.find(&format!("repro-sim: paced {p} "))
                    .unwrap_or_else(|| panic!("{node} boot {n}: no paced {p}:\n{text}"))
            })
            .collect();
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "{node} boot {n}: {phases:?} out of order"
        );
        assert!(
            text.contains("(6.4s on real k3s x 0.5)") || !phases.contains(&"learner-promotion"),
            "{text}"
        );
    }
    // cp-1 started while etcd-2 was still joining (it needs only etcd-1), etcd-3 only after
    // etcd-2 was ready (one learner at a time).
    let (cp1, etcd2, etcd3) = (
        boot(r, "cp-1", 1),
        boot(r, "etcd-2", 1),
        boot(r, "etcd-3", 1),
    );
    assert!(
        time(cp1, "started_at") < time(etcd2, "ready_at"),
        "cp-1 waited for etcd-2: {cp1} {etcd2}"
    );
    assert!(
        time(etcd3, "started_at") >= time(etcd2, "ready_at"),
        "{etcd3} {etcd2}"
    );
    let recorded = (time(r, "finished_at") - time(r, "started_at")).num_milliseconds() as f64 / 1e3;
    eprintln!(
        "paced etcd-split: {wall:.2} s wall ({recorded:.2} s in result.json), critical path {path:.2} s, ratio {:.3} ({:.3} of the wall)",
        recorded / path,
        wall / path
    );
    recorded / path
}

/// A project folder with every shipped check, signal and topology, where every node runs with
/// `REPRO_SIM_CONFIG_SOURCE=<source>` (the stand-in's knob; node `env:` is how a topology
/// passes container environment).
fn all_checks_root(source: &str) -> tempfile::TempDir {
    let root = project(&["checks", "topologies"]);
    for entry in std::fs::read_dir(root.path().join("topologies")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| match l.strip_prefix("  - {name: ") {
                Some(rest) => format!(
                    "  - {{name: {}, env: {{REPRO_SIM_CONFIG_SOURCE: {source}}}}}",
                    rest.trim_end_matches('}')
                ),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("REPRO_SIM_CONFIG_SOURCE"),
            "{}",
            path.display()
        );
        std::fs::write(&path, text).unwrap();
    }
    root
}

/// Issue #9: every shipped check gets the same verdict whichever server a buggy etcd-only
/// joiner reads its config from — through its load balancer (k3s's code) or from the joined
/// node (#12753's steps) — and the verdict `fixed-in` predicts.
#[test]
fn every_shipped_check_has_one_verdict_under_both_config_sources() {
    // The verdicts `fixed-in` predicts on v1.33.4 (no fixed-in: `fixed` everywhere).
    let checks = [
        ("etcd-split", "reproduced"),
        ("metrics-order", "reproduced"),
        ("metrics-right-order", "fixed"),
        ("bootstrap-check", "fixed"),
    ];
    let mut verdicts = Vec::new();
    for source in ["load-balancer", "joined"] {
        let root = all_checks_root(source);
        for (check, expected) in checks {
            let run = sim(check, "v1.33.4+k3s1")
                .root(root.path())
                .expect(expected)
                .finish();
            assert_eq!(run.out.code, 0, "{check} with {source}: {}", run.out);
            // The knob reached the nodes: buggy joiners log where their config came from. By
            // boot 3 etcd-2 has saved cp-1's address (boot 2 may not have: k3s learns it from
            // etcd some time after cp-1 is up, and so does the stand-in).
            if check == "etcd-split" {
                let boot = run.boot_log("etcd-2", 3);
                assert_eq!(
                    boot.contains("@UNCHECKED->RECOVERING from successful dial"),
                    source == "load-balancer",
                    "{source}: {boot}"
                );
            }
            verdicts.push((source, check, run.outcome().as_str().unwrap().to_string()));
        }
    }
    let by = |source: &str| -> Vec<(&str, String)> {
        verdicts
            .iter()
            .filter(|(s, _, _)| *s == source)
            .map(|(_, c, v)| (*c, v.clone()))
            .collect()
    };
    assert_eq!(by("load-balancer"), by("joined"));
    assert_eq!(
        by("joined"),
        vec![
            ("etcd-split", "reproduced".to_string()),
            ("metrics-order", "reproduced".to_string()),
            ("metrics-right-order", "fixed".to_string()),
            ("bootstrap-check", "fixed".to_string()),
        ]
    );
}

#[test]
fn etcd_split_fixed_on_fixed_version() {
    let run = sim("etcd-split", "v1.33.5+k3s1").finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    assert_eq!(run.observed(1, "etcd-2", "embedded-registry"), "up");
}

/// Without --expect, a run expects what the check's fixed-in predicts: v1.33.4 predates the
/// fix, so reproducing the bug is the outcome asked for (exit 0), and result.json says so.
#[test]
fn default_expect_is_what_fixed_in_predicts() {
    let run = sim("etcd-split", "v1.33.4+k3s1").finish();
    run.out.code(0);
    let r = &run.result;
    assert_eq!(run.outcome(), "reproduced");
    assert_eq!(r["expect"], "reproduced");
    assert!(
        r["expect_because"]
            .as_str()
            .unwrap()
            .contains("v1.33.5+k3s1"),
        "{}",
        r["expect_because"]
    );
    assert!(r["rerun"]
        .as_str()
        .unwrap()
        .ends_with("--expect reproduced"));
    // Each observation says what the asked outcome wanted there: the bug's value.
    let o = observation(r, 1, "etcd-2", "embedded-registry");
    assert_eq!(
        (&o["expected"], &o["asked"]),
        (&"up".into(), &"down".into())
    );
    assert_eq!(o["asked"], o["observed"]);
}

#[test]
fn asking_for_the_wrong_outcome_exits_1() {
    let run = sim("etcd-split", "v1.33.5+k3s1")
        .expect("reproduced")
        .finish();
    run.out.code(1);
    assert_eq!(run.outcome(), "fixed");
}

#[test]
fn metrics_order_on_both_versions() {
    let run = sim("metrics-order", "v1.33.4+k3s1")
        .expect("reproduced")
        .finish();
    run.out.code(0);
    let o = observation(&run.result, 1, "etcd-2", "supervisor-metrics");
    assert_eq!(o["observed"], "down");
    assert!(
        o["evidence"][0]["text"]
            .as_str()
            .unwrap()
            .contains("apiserver disabled"),
        "{o}"
    );
    let run = sim("metrics-order", "v1.33.5+k3s1").finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    assert_eq!(run.observed(3, "cp-1", "ready"), "up");
}

#[test]
fn bootstrap_check_on_both_versions() {
    for v in ["v1.33.4+k3s1", "v1.33.5+k3s1"] {
        let run = sim("bootstrap-check", v).finish();
        run.out.code(0);
        let r = &run.result;
        assert_eq!(run.outcome(), "fixed");
        let o = observation(r, 2, "etcd-3", "fatal");
        assert_eq!(o["observed"], "up");
        let all: String = o["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["text"].as_str().unwrap_or(""))
            .collect();
        assert!(all.contains("critical configuration value mismatch"), "{o}");
        // The field the step changed, as k3s names it in its warning.
        let m = observation(r, 2, "etcd-3", "config-mismatch");
        assert_eq!(m["observed"], "disable-helm-controller", "{m}");
        assert!(
            m["evidence"][0]["text"]
                .as_str()
                .unwrap()
                .contains("critical configuration mismatched: disable-helm-controller"),
            "{m}"
        );
        // cp-1 dies of the mismatch: a death of its own, standing for `ready: down` because
        // the step expects that node to die.
        let dead = observation(r, 3, "cp-1", "ready");
        assert_eq!(dead["observed"], "dead", "{dead}");
        assert_eq!(dead["death"]["counts_as"], "down", "{dead}");
        assert_eq!(dead["death"]["expected"], true, "{dead}");
        assert_eq!(
            observation(r, 3, "cp-1", "config-mismatch")["observed"],
            "disable-helm-controller"
        );
        assert_eq!(observation(r, 4, "cp-1", "ready")["observed"], "up");
        assert_eq!(
            observation(r, 4, "cp-1", "config-mismatch")["observed"],
            "none"
        );
    }
}

/// `fatal: up` alone once let bootstrap-check pass on any fatal. Here the brand-new joiner dies
/// of something else (the stand-in's crash fault, before any config check): the check must not
/// call that `fixed`.
#[test]
fn bootstrap_check_is_not_fooled_by_an_unrelated_fatal() {
    let root = project(&[
        "checks/signals.yaml",
        "checks/bootstrap-check.yaml",
        "topologies/bootstrap-check.yaml",
    ]);
    let topo =
        std::fs::read_to_string(root.path().join("topologies/bootstrap-check.yaml")).unwrap();
    let joiner = "{name: etcd-3, role: etcd, join: etcd-1, deferred: true}";
    assert!(topo.contains(joiner), "topology changed: {topo}");
    let topo = topo.replace(
        joiner,
        "{name: etcd-3, role: etcd, join: etcd-1, deferred: true, env: {REPRO_SIM_CRASH_AT_BOOT: '1'}}",
    );
    std::fs::write(root.path().join("topologies/bootstrap-check.yaml"), topo).unwrap();
    let run = sim("bootstrap-check", "v1.33.4+k3s1")
        .root(root.path())
        .finish();
    assert_ne!(run.outcome(), "fixed", "{}", run.out);
    assert_eq!(run.observed(2, "etcd-3", "fatal"), "up");
    assert_eq!(run.observed(2, "etcd-3", "config-mismatch"), "none");
}

#[test]
fn two_control_plane_topology() {
    let run = sim("etcd-split", "v1.33.4+k3s1")
        .topology("etcd-split-2cp")
        .expect("reproduced")
        .finish();
    run.out.code(0);
    assert_eq!(run.result["topology"]["nodes"].as_array().unwrap().len(), 5);
    assert_eq!(run.outcome(), "reproduced");
}

/// A project folder with the shipped signals and one topology where `node` gets `env`.
fn faulty_root(node: &str, env: &str) -> tempfile::TempDir {
    faulty_root_many(&[(node, env)])
}

/// Like `faulty_root`, with a fault on each of several nodes.
fn faulty_root_many(faults: &[(&str, &str)]) -> tempfile::TempDir {
    project_root(
        |mut topo| {
            for (node, env) in faults {
                topo = topo.replace(
                    &format!("{{name: {node}, role: etcd, join: etcd-1}}"),
                    &format!("{{name: {node}, role: etcd, join: etcd-1, env: {{{env}}}}}"),
                );
                assert!(topo.contains(env), "fault not planted");
            }
            topo
        },
        &[],
    )
}

/// A project folder (`--root`) with the shipped signals, the etcd-split check, the etcd-split
/// topology as `edit_topology` changes it, and `extra` files (path relative to the root, text).
fn project_root(
    edit_topology: impl FnOnce(String) -> String,
    extra: &[(&str, &str)],
) -> tempfile::TempDir {
    let root = project(&[
        "checks/signals.yaml",
        "checks/etcd-split.yaml",
        "topologies/etcd-split.yaml",
    ]);
    let topo = root.path().join("topologies/etcd-split.yaml");
    std::fs::write(
        &topo,
        edit_topology(std::fs::read_to_string(&topo).unwrap()),
    )
    .unwrap();
    for (path, text) in extra {
        std::fs::write(root.path().join(path), text).unwrap();
    }
    root
}

#[test]
fn node_crashing_at_boot_is_inconclusive_with_evidence() {
    let root = faulty_root("etcd-2", "REPRO_SIM_CRASH_AT_BOOT: '1'");
    let run = sim("etcd-split", "v1.33.4+k3s1").root(root.path()).finish();
    // Inconclusive has its own exit code: not a finding about k3s.
    run.out.code(4);
    let r = &run.result;
    assert_eq!(r["exit_code"], 4);
    assert_eq!(run.outcome(), "inconclusive");
    assert!(
        r["error"].as_str().unwrap().contains("etcd-2 died"),
        "{}",
        r["error"]
    );
    assert_eq!(boot(r, "etcd-2", 1)["end"], "exited");
}

#[test]
fn node_never_ready_times_out_with_exit_3() {
    let root = faulty_root("etcd-3", "REPRO_SIM_NEVER_READY: '1'");
    let run = sim("etcd-split", "v1.33.4+k3s1")
        .root(root.path())
        .args(["--timeout", "4s"])
        .finish();
    run.out.code(3);
    let err = run.result["error"].as_str().unwrap();
    assert!(
        err.contains("etcd-3") && err.contains("last lines"),
        "{err}"
    );
    assert!(run.result["verdict"].is_null());
}

#[test]
fn interrupt_mid_run_cleans_up_and_exits_130() {
    let (mut child, results) = sim("etcd-split", "v1.33.4+k3s1").spawn();
    // Interrupt once the first step has begun: read progress lines as they come.
    use std::io::BufRead;
    let stderr = child.stderr.take().unwrap();
    let mut reader = std::io::BufReader::new(stderr);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("repro ended before step 1: {seen}");
        }
        seen.push_str(&line);
        if line.contains("step 1/") {
            break;
        }
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let mut rest = String::new();
    use std::io::Read;
    reader.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let out = Output::of(
        "repro run etcd-split",
        std::process::Output {
            status,
            stdout: Vec::new(),
            stderr: format!("{seen}{rest}").into_bytes(),
        },
    );
    out.code(130);
    let run = results.finished(out);
    assert_eq!(run.result["exit_code"], 130);
    assert!(
        run.dir.join("nodes/etcd-1/boot-1.log").exists(),
        "results written so far are kept"
    );
}

#[test]
fn two_runs_in_parallel_do_not_disturb_each_other() {
    let spawn = |v: &str, expect: &str| sim("etcd-split", v).expect(expect).spawn();
    let (a, ra) = spawn("v1.33.4+k3s1", "reproduced");
    let (b, rb) = spawn("v1.33.5+k3s1", "fixed");
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for (out, results) in [(oa, ra), (ob, rb)] {
        results
            .finished(Output::of("repro run etcd-split", out))
            .out
            .code(0);
    }
}

/// A run that broke before its cluster: exit 3 naming `needle` with a way out, and its
/// result.json says so too, so `merge` can show the cell.
fn assert_infra_result(run: Run, needle: &str, help: &[&str]) {
    let run = run.finish();
    run.out.code(3);
    assert!(
        run.out.stderr.contains(needle) && help.iter().all(|h| run.out.stderr.contains(h)),
        "{}",
        run.out
    );
    let r = &run.result;
    assert_eq!(r["exit_code"], 3, "{r}");
    assert!(r["verdict"].is_null(), "{r}");
    assert!(!r["finished_at"].is_null(), "{r}");
    let err = r["error"].as_str().unwrap();
    assert!(err.contains(needle), "{err}");
}

#[test]
fn unreachable_docker_exits_3_naming_the_endpoint() {
    let endpoint = "unix:///nonexistent/docker.sock";
    let run = Run::check("etcd-split").sim().env("DOCKER_HOST", endpoint);
    assert_infra_result(run, endpoint, &["help:"]);
}

#[test]
fn missing_image_offline_exits_3_with_ways_out() {
    let image = "repro.local/does-not-exist:v0";
    let run = Run::check("etcd-split").args(["--image", image]);
    assert_infra_result(run, image, &["--sim", "--image-archive"]);
}

/// After `--keep` on the stand-in (#32): the hint's commands are ones its image runs (no shell
/// to enter, its kubectl's one form, which answers), and it says the kubectl is the stand-in's.
/// The stand-in serves the node list (#40, `repro audit`), so a kubeconfig is written: 0600,
/// with an `http://` server and a bearer derived from the token (never the token itself; the
/// caller checks the folder for it).
fn kept_hint_works_on_the_stand_in(run: &crate::runs::Finished) -> Result<(), String> {
    let err = &run.out.stderr;
    let hint: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.contains("--keep: the cluster is still running"))
        .take_while(|l| !l.starts_with("and remove it with"))
        .collect();
    if hint.is_empty() || hint.iter().any(|l| l.ends_with(" sh")) {
        return Err(format!("no hint, or one that enters a shell:\n{err}"));
    }
    let kubeconfig = std::fs::read_to_string(run.dir.join("kubeconfig.yaml")).unwrap_or_default();
    if !err.contains("the stand-in's kubectl")
        || !kubeconfig.contains("server: http://")
        || !kubeconfig.contains("token: repro-sim-admin.")
    {
        return Err(format!(
            "the stand-in's kubectl is not said, or no kubeconfig with a derived bearer was written:\n{err}\n{kubeconfig}"
        ));
    }
    let commands = hint.iter().filter(|l| {
        let l = l.trim_start();
        l.starts_with("docker ") || l.starts_with("repro ")
    });
    for line in commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        let program = match words[0] {
            "repro" => env!("CARGO_BIN_EXE_repro"),
            other => other,
        };
        let o = Command::new(program).args(&words[1..]).output().unwrap();
        if !o.status.success() {
            return Err(format!(
                "`{}` failed: {}",
                line.trim(),
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    Ok(())
}

/// Issue 5: secrets planted in configs, env, file contents and log lines of a real stand-in
/// run appear nowhere in the bundle (nor in our own output), while their keys remain.
#[test]
fn bundle_of_a_real_run_carries_no_secret() {
    const CFG: &str = "PLANTED-cfg-secret-7f3a";
    const ENV: &str = "PLANTED-env-password-91bc";
    const FILE: &str = "PLANTED-file-password-c0de";
    // A k3s secret key in config.yaml; a password in the env; a registry password in a file; and
    // the config secret again in a fault knob the stand-in echoes into its log ("ignoring ...").
    let root = project_root(
        |topo| {
            let topo = topo
        .replace(
            "{name: etcd-2, role: etcd, join: etcd-1}",
            &format!("{{name: etcd-2, role: etcd, join: etcd-1, config: {{etcd-s3-secret-key: {CFG}}}, env: {{MY_DB_PASSWORD: {ENV}, REPRO_SIM_BOOT_DELAY: {CFG}}}}}"),
        )
        .replace(
            "      docker.io: {}\n",
            &format!("      docker.io: {{}}\n    configs:\n      docker.io:\n        auth:\n          username: repro\n          password: {FILE}\n"),
        );
            assert!(
                topo.contains(CFG) && topo.contains(FILE),
                "secrets not planted"
            );
            topo
        },
        &[],
    );

    let run = sim("etcd-split", "v1.33.4+k3s1")
        .keep()
        .expect("reproduced")
        .root(root.path())
        .finish();
    let run_id = run.run_id();
    // The run token lives only in the containers' env: read it from Docker, then clean up.
    let env = Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{range .Config.Env}}{{println .}}{{end}}",
            &format!("repro-{run_id}-etcd-1"),
        ])
        .output()
        .unwrap();
    let token = String::from_utf8_lossy(&env.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("K3S_TOKEN=").map(str::to_string))
        .unwrap_or_default();
    let hint = kept_hint_works_on_the_stand_in(&run);
    run.clean();
    run.out.code(0);
    hint.unwrap_or_else(|e| panic!("{e}"));
    assert!(token.len() >= 16, "could not read the run token");
    let ours = run.out.to_string();
    for s in [CFG, ENV, FILE, token.as_str()] {
        assert!(!ours.contains(s), "our own output leaks {s}");
    }
    let kubeconfig = std::fs::read_to_string(run.dir.join("kubeconfig.yaml")).unwrap();
    assert!(
        !kubeconfig.contains(&token),
        "the kubeconfig holds the cluster token"
    );
    // The stand-in really did echo the config secret into its log (redacted on the way in).
    let log = run.boot_log("etcd-2", 1);
    assert!(
        log.contains("REPRO_SIM_BOOT_DELAY") && log.contains("<REDACTED-"),
        "{log}"
    );

    let tgz = std::fs::File::open(run.dir.join("bundle.tar.gz")).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tgz));
    let mut all = String::new();
    let mut entries = 0;
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut body).unwrap();
        let body = String::from_utf8_lossy(&body);
        for s in [CFG, ENV, FILE, token.as_str()] {
            assert!(!body.contains(s), "{name} in the bundle leaks {s}");
        }
        all.push_str(&body);
        entries += 1;
    }
    assert!(entries > 10, "bundle has only {entries} entries");
    for key in [
        "etcd-s3-secret-key",
        "MY_DB_PASSWORD",
        "password",
        "K3S_TOKEN",
        "<REDACTED-1>",
    ] {
        assert!(all.contains(key), "the bundle lost `{key}`");
    }
}

/// An air-gap tarball (`docker save`) is loaded before the run and its image used.
#[test]
fn image_archive_is_loaded_before_the_run() {
    // Make sure the stand-in image exists, then save it under a name that exists nowhere else.
    sim_build("v1.33.5+k3s1");
    let tmp = tempfile::tempdir().unwrap();
    let tar = tmp.path().join("k3s-airgap.tar");
    let image = Image::tagged(
        &sim_image("v1.33.5+k3s1"),
        format!("repro.local/archive-test:{}", std::process::id()),
    );
    let name = image.0.clone();
    docker(&["save", "-o", tar.to_str().unwrap(), &name]);
    docker(&["rmi", &name]);
    let (out, results) = Run::check("etcd-split")
        .version("v1.33.5+k3s1")
        .args(["--image", &name, "--image-archive"])
        .arg(&tar)
        .output();
    drop(image);
    let run = results.finished(out);
    run.out.code(0);
    assert_eq!(run.result["k3s"]["image"], name.as_str());
    // Named by --image, it is still the stand-in (its label says so), and results say so.
    assert_eq!(run.result["k3s"]["stand_in"], true);
    assert_eq!(run.outcome(), "fixed");
}

/// A node that spews garbage (invalid UTF-8, partial lines) and one that boots slowly do not
/// change the verdict: lines are split on the boot's own stream and waits follow events.
#[test]
fn garbage_output_and_slow_boot_do_not_change_the_verdict() {
    let root = faulty_root_many(&[
        ("etcd-2", "REPRO_SIM_GARBAGE: '1'"),
        ("etcd-3", "REPRO_SIM_BOOT_DELAY: 2s"),
    ]);
    let run = sim("etcd-split", "v1.33.4+k3s1")
        .root(root.path())
        .expect("reproduced")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced");
    let log = run.boot_log("etcd-2", 2);
    assert!(log.contains("k3s is up and running"), "{log}");
}

/// A Docker engine reached over TCP (as `DOCKER_HOST=tcp://…` for a remote host): files go in
/// through the API, logs and probes come back through it; nothing assumes a local socket.
/// A loopback port forwarded to the local engine's socket by the test itself (no socat needed).
#[test]
fn works_against_a_tcp_docker_host() {
    docker_ok();
    let proxy = TcpProxy::start(&docker_socket()).unwrap();
    let port = proxy.port();
    let (out, results) = sim("metrics-order", "v1.33.4+k3s1")
        .expect("reproduced")
        .env("DOCKER_HOST", format!("tcp://127.0.0.1:{port}"))
        .output();
    drop(proxy);
    let run = results.finished(out);
    run.out.code(0);
    assert_eq!(
        run.result["environment"]["docker_host"],
        format!("tcp://127.0.0.1:{port}")
    );
    assert_eq!(run.outcome(), "reproduced");
}

/// A step can add a config drop-in and a later step delete it; k3s (and the stand-in) merge
/// `config.yaml.d/*.yaml`, so the feature follows the file.
#[test]
fn drop_in_files_are_written_and_deleted() {
    let root = project_root(
        |topo| topo,
        &[(
            "checks/drop-in.yaml",
            r#"name: drop-in
topology: etcd-split
issue: https://github.com/k3s-io/k3s/issues/12753
summary: embedded-registry from a config.yaml.d drop-in, then without it
steps:
  - name: add the drop-in on etcd-1
    files:
      etcd-1: {/etc/rancher/k3s/config.yaml.d/50-registry.yaml: "embedded-registry: true\n"}
    restart: [etcd-1]
    expect:
      etcd-1: {ready: up, embedded-registry: up}
  - name: delete the drop-in on etcd-1
    files:
      etcd-1: {/etc/rancher/k3s/config.yaml.d/50-registry.yaml: null}
    restart: [etcd-1]
    expect:
      etcd-1: {ready: up, embedded-registry: down}
"#,
        )],
    );
    let run = sim("drop-in", "v1.33.5+k3s1").root(root.path()).finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    assert_eq!(run.observed(2, "etcd-1", "embedded-registry"), "down");
}

/// The v1.33.4 stand-in with `lines` after its FROM line, as `repro.local/<name>:e2e-<pid>`.
fn stand_in_with(name: &str, lines: &str) -> Image {
    let tag = format!("repro.local/{name}:e2e-{}", std::process::id());
    Image::on_stand_in(tag, "v1.33.4+k3s1", lines)
}

fn inspect(container: &str) -> Value {
    let out = Command::new("docker")
        .args(["inspect", container])
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all[0].clone()
}

/// #9 §1: the container spec for real k3s images. The stand-in image relabelled as a real,
/// privileged image; this engine refuses privileged containers, so the nodes cannot start, and
/// `--keep` leaves them to be inspected: privileged, tmpfs on /run and /var/run, k3s as PID 1 (no
/// docker-init), the token in the environment only, fixed IPs, a named volume for
/// /var/lib/rancher/k3s. Then everything goes, by run id.
#[test]
fn real_image_containers_are_set_up_as_k3s_needs() {
    let image = stand_in_with(
        "real-like",
        "LABEL io.repro.sim=false io.repro.privileged=true",
    );
    let run = Run::check("etcd-split")
        // Past the doctor's trial, which would stop the run before any node (next test).
        .args(["--image", &image.0, "--no-host-check"])
        .keep()
        .expect("reproduced")
        .finish();
    let run_id = run.run_id();
    let kept = KeptCluster::of(&run_id);
    let (r, out) = (&run.result, &run.out);
    // Not the stand-in (by its label), privileged, and refused here: infrastructure, exit 3.
    assert_eq!(r["k3s"]["stand_in"], false, "{out}");
    assert_eq!(r["k3s"]["privileged"], true);
    out.code(3);
    // The engine's cgroup facts are recorded (these machines: v1, cgroupfs).
    assert!(
        r["environment"]["cgroup_version"].is_string(),
        "{}",
        r["environment"]
    );
    assert!(
        r["environment"]["cgroup_driver"].is_string(),
        "{}",
        r["environment"]
    );

    let names = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label=io.repro.run={run_id}"),
        ])
        .args(["--format", "{{.Names}}"])
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&names.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        names.len(),
        4,
        "every node container was created: {names:?}"
    );
    for name in &names {
        let c = inspect(name);
        let host = &c["HostConfig"];
        assert_eq!(host["Privileged"], true, "{name}");
        assert!(
            host["Init"].is_null() || host["Init"] == false,
            "{name}: docker-init would be PID 1: {}",
            host["Init"]
        );
        let tmpfs = host["Tmpfs"].as_object().unwrap();
        assert!(
            tmpfs.contains_key("/run") && tmpfs.contains_key("/var/run"),
            "{name}"
        );
        // The token: in the environment, nowhere else.
        let env: Vec<&str> = c["Config"]["Env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let token = env
            .iter()
            .find_map(|e| e.strip_prefix("K3S_TOKEN="))
            .unwrap_or_else(|| panic!("{name}: no K3S_TOKEN in {env:?}"));
        assert!(token.len() >= 16, "{name}");
        for part in ["Labels", "Cmd", "Entrypoint", "Hostname"] {
            assert!(
                !c["Config"][part].to_string().contains(token),
                "{name}: the token is in {part}"
            );
        }
        // A fixed IP on the run's network.
        let nets = c["NetworkSettings"]["Networks"].as_object().unwrap();
        assert_eq!(nets.len(), 1, "{name}");
        let ip = nets.values().next().unwrap()["IPAMConfig"]["IPv4Address"]
            .as_str()
            .unwrap_or_default();
        assert!(ip.starts_with("10.213."), "{name}: fixed IP {ip:?}");
        // A named volume for the data dir.
        let data = c["Mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["Destination"] == "/var/lib/rancher/k3s")
            .unwrap_or_else(|| panic!("{name}: no mount on /var/lib/rancher/k3s"));
        assert_eq!(data["Type"], "volume", "{name}");
        assert!(
            data["Name"].as_str().unwrap().contains(&run_id),
            "{name}: {}",
            data["Name"]
        );
    }
    kept.done();
}

/// #9 §5: the nightly's real-k3s smoke job runs scripts/real-k3s-smoke.sh on a cgroup-v2 runner.
/// Real images cannot be pulled here, so the suite runs the very same script with `--sim`: four
/// runs, each with the verdict its version should give, exit 0, nothing left behind.
#[test]
fn the_real_k3s_smoke_script_runs_on_the_stand_in() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("scripts/real-k3s-smoke.sh"))
        .arg(tmp.path())
        .arg("--sim")
        .current_dir(root)
        .env("REPRO", env!("CARGO_BIN_EXE_repro"))
        .output()
        .unwrap();
    let mut seen = Vec::new();
    for e in std::fs::read_dir(tmp.path()).unwrap() {
        let dir = e.unwrap().path();
        let r = read_result(&dir);
        assert_no_leftovers(r["run_id"].as_str().unwrap());
        seen.push(format!(
            "{} {} {}",
            r["check"]["name"].as_str().unwrap(),
            r["k3s"]["version"].as_str().unwrap(),
            r["verdict"]["outcome"].as_str().unwrap()
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "etcd-split v1.33.4+k3s1 reproduced",
            "etcd-split v1.33.5+k3s1 fixed",
            "metrics-order v1.33.4+k3s1 reproduced",
            "metrics-order v1.33.5+k3s1 fixed",
        ],
        "{}",
        text(&out)
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `repro run … --format json | head -c0`: the reader is gone before the summary is written.
/// The run completes, cleans up and exits with its verdict's code, without a panic; nothing it
/// printed on stderr carries a raw control character.
#[test]
fn closed_stdout_does_not_panic_a_run() {
    let (mut child, results) = sim("etcd-split", "v1.33.5+k3s1")
        .args(["--format", "json"])
        .spawn();
    drop(child.stdout.take());
    let out = Output::of("repro run etcd-split", child.wait_with_output().unwrap());
    let run = results.finished(out);
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    let stderr = &run.out.stderr;
    assert!(
        !stderr
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{stderr:?}"
    );
}

/// A step name carrying an unterminated OSC title sequence, a clear-screen and a carriage return,
/// in a real stand-in run with plain progress lines: what reaches stderr and stdout shows them
/// escaped (`\u001b`), never raw.
#[test]
fn escapes_in_a_step_name_never_reach_the_terminal() {
    docker_ok();
    let root = project_root(|t| t, &[]);
    let check = root.path().join("checks/etcd-split.yaml");
    let original = std::fs::read_to_string(&check).unwrap();
    let hostile = original.replacen(
        "  - name: enable embedded-registry on etcd-2 and etcd-3 (not the init node)",
        "  - name: \"enable\\e]0;pwned \\e[2J\\rregistry\\u009b31m\"",
        1,
    );
    assert_ne!(hostile, original);
    std::fs::write(&check, hostile).unwrap();
    let run = sim("etcd-split", "v1.33.5+k3s1").root(root.path()).finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    for (what, s) in [("stdout", &run.out.stdout), ("stderr", &run.out.stderr)] {
        assert!(
            !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
            "raw control character on {what}: {s:?}"
        );
    }
    let all = format!("{}{}", run.out.stdout, run.out.stderr);
    assert!(
        all.contains(r"enable\u001b]0;pwned \u001b[2J\u000dregistry\u009b31m"),
        "the step name is not shown escaped:\n{all}"
    );
}

/// #24: every volume a run causes is named and labelled, the image's `VOLUME`s included (the
/// stand-in declares rancher/k3s's; this image one more). A node removed from outside mid-step
/// with `docker rm -f` (without `-v`, so Docker keeps its volumes) leaves nothing once the run
/// ended and `repro clean --run <id>` ran. Before: each VOLUME but the data dir was an anonymous
/// volume without a label, left behind for good.
#[test]
fn image_volumes_are_labelled_so_clean_finds_them_after_an_outside_rm() {
    use std::io::BufRead;
    let image = stand_in_with("volumes", "VOLUME /var/lib/repro-extra");
    let (mut child, results) = Run::check("etcd-split")
        .args(["--image", &image.0])
        .expect("reproduced")
        .spawn();
    // The moment: step 2 begins (its line on stderr), every node up. The run id is on the
    // first progress line (`… run 50a8b14b: etcd-split on …`).
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut run_id = None;
    for l in lines.by_ref() {
        let l = l.unwrap();
        if run_id.is_none() {
            run_id = (l.split(" run ").nth(1))
                .and_then(|r| r.split_once(':'))
                .map(|(id, _)| id.trim().to_string());
        }
        let hit = l.contains("step 2/");
        seen.push(l);
        if hit {
            break;
        }
    }
    let run_id = run_id.unwrap_or_else(|| panic!("no run id in {seen:#?}"));
    let _kept = KeptCluster::of(&run_id);
    let node = format!("repro-{run_id}-etcd-2");
    let c = inspect(&node);
    let mounts = c["Mounts"]
        .as_array()
        .unwrap_or_else(|| panic!("{node}: {c}"));
    let mut at: Vec<&str> = mounts
        .iter()
        .map(|m| m["Destination"].as_str().unwrap())
        .collect();
    at.sort_unstable();
    assert_eq!(
        at,
        [
            "/var/lib/cni",
            "/var/lib/kubelet",
            "/var/lib/rancher/k3s",
            "/var/lib/repro-extra",
            "/var/log"
        ],
        "{node}"
    );
    let mut volumes = Vec::new();
    for m in mounts {
        assert_eq!(m["Type"], "volume", "{node}: {m}");
        let v = m["Name"].as_str().unwrap().to_string();
        assert!(v.starts_with(&node), "{node}: an anonymous volume: {m}");
        let labels = Command::new("docker")
            .args(["volume", "inspect", "--format", "{{json .Labels}}", &v])
            .output()
            .unwrap();
        let labels: Value = serde_json::from_slice(&labels.stdout).unwrap();
        assert_eq!(labels["io.repro.run"], run_id.as_str(), "{v}");
        volumes.push(v);
    }
    // Outside the run, as a user or a CI job would: the container goes, its volumes stay.
    let rm = Command::new("docker")
        .args(["rm", "-f", &node])
        .output()
        .unwrap();
    assert!(rm.status.success(), "{}", text(&rm));
    for l in lines {
        seen.push(l.unwrap());
    }
    let status = child.wait().unwrap();
    let r = read_result(&results.only_run_dir());
    assert_ne!(status.code(), Some(0), "{seen:#?}");
    assert_eq!(r["run_id"], run_id.as_str());

    clean(&run_id);
    for v in &volumes {
        let there = Command::new("docker")
            .args(["volume", "inspect", v])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!there.success(), "{v} is still there");
    }
}

/// Issue #29 item 6: a key the agent takes from its server (flannel-backend) and one a server
/// keeps for itself (egress-selector-mode), edited on an etcd-only joiner that already has
/// data (so no bootstrap check refuses it). Its own egress mode shows at once; its flannel
/// backend is another server's before the etcd-only bootstrap fix and its own after it —
/// `Starting flannel with backend …` and `Tunnel server egress proxy mode: …` observed on the
/// stand-in's containers, judged by the new signals.
#[test]
fn an_etcd_only_joiner_shows_its_own_egress_mode_and_a_served_flannel_backend() {
    let root = project(&["checks", "topologies"]);
    std::fs::write(
        root.path().join("checks/flannel-taken.yaml"),
        "name: flannel-taken\ntopology: etcd-split\nissue: https://github.com/k3s-io/k3s/issues/12753\nsummary: an etcd-only joiner takes flannel-backend from another server\nfixed-in: etcd-only-bootstrap-fix\nsteps:\n  - name: etcd-2 alone changes a served and a local key\n    config:\n      etcd-2: {flannel-backend: host-gw, egress-selector-mode: pod}\n    restart: [etcd-2]\n    expect:\n      etcd-1: {flannel-backend: vxlan, egress-selector-mode: agent}\n      etcd-2: {ready: up, flannel-backend: host-gw, egress-selector-mode: pod, kube-proxy: up}\n      cp-1: {cloud-controller: up, secrets-encryption: down, service-node-port-range: 30000-32767}\n    bug:\n      etcd-2: {flannel-backend: vxlan}\n",
    )
    .unwrap();
    for (version, expected) in [("v1.33.4+k3s1", "reproduced"), ("v1.33.5+k3s1", "fixed")] {
        let run = sim("flannel-taken", version).root(root.path()).finish();
        assert_eq!(run.outcome(), expected, "{}", run.out);
        let boot = run.boot_log("etcd-2", 2);
        assert!(
            boot.contains("Tunnel server egress proxy mode: pod"),
            "{version}: {boot}"
        );
    }
}

/// #31: `--mtu` sets the run network's MTU (a Docker-in-Docker runner at 1400 needs it below
/// the engine's 1500); 1300, unlike this host's engine, so the flag and not the engine's
/// bridge decides. Read back through the docker CLI while the cluster is kept, and recorded in
/// result.json's environment.
#[test]
fn mtu_sets_the_run_networks_mtu() {
    let run = sim("etcd-split", "v1.33.5+k3s1")
        .keep()
        .args(["--mtu", "1300"])
        .finish();
    let inspect = Command::new("docker")
        .args(["network", "inspect", &format!("repro-{}", run.run_id())])
        .args([
            "--format",
            "{{index .Options \"com.docker.network.driver.mtu\"}}",
        ])
        .output()
        .unwrap();
    run.clean();
    run.out.code(0);
    let r = &run.result;
    assert_eq!(
        String::from_utf8_lossy(&inspect.stdout).trim(),
        "1300",
        "{}",
        text(&inspect)
    );
    assert_eq!(
        r["environment"]["network_mtu"], 1300,
        "{}",
        r["environment"]
    );
}

/// The results folder deleted while the run is in its first step (#30: the run went on, a node
/// writer made the folder again, and it exited 0 with 25 of 40 files missing): exit 3, naming
/// the folder and that it was removed, the cluster removed all the same.
#[test]
fn a_results_folder_deleted_mid_run_is_exit_3() {
    docker_ok();
    let results = tempfile::tempdir().unwrap();
    let mut cmd = crate::util::repro();
    cmd.args(["run", "etcd-split", "--sim", "--version", "v1.33.4+k3s1"])
        .args(["--expect", "reproduced", "--progress", "never", "--results"])
        .arg(results.path());
    let mut p = crate::running::Running::spawn(cmd);
    assert!(p.wait_line("step 1/"), "{:#?}", p.seen);
    let run_id = p.run_id.clone().unwrap();
    let dir = crate::runs::only_run_dir(results.path());
    std::fs::remove_dir_all(&dir).unwrap();
    let (code, err) = p.finish();
    assert_no_leftovers(&run_id);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "the results folder {} was removed or replaced during the run",
            dir.display()
        )),
        "{err}"
    );
    assert!(!err.contains("exit: 0"), "{err}");
}
