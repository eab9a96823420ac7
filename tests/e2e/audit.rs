//! `repro audit` against a live stand-in cluster (#40): etcd-split kept after enabling
//! supervisor-metrics on etcd-2 (edited and restarted), on v1.33.4 and v1.33.5; audit reads
//! the nodes through the run's kubeconfig (the stand-in's `GET /api/v1/nodes`, with the
//! node-args annotations k3s writes) and names etcd-2's borrowed value on v1.33.4 only. Then
//! cp-1's config is edited in its container without a restart: audit predicts its refusal, and
//! restarting it proves it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::repro::Repro;
use crate::runs::{KeptCluster, Run};

const CHECK: &str = "name: audit-e2e
topology: etcd-split
issue: https://github.com/k3s-io/k3s/issues/12753
summary: supervisor-metrics enabled on etcd-2 alone, for repro audit
steps:
  - name: enable supervisor-metrics on etcd-2 and restart it
    config:
      etcd-2: {supervisor-metrics: true}
    restart: [etcd-2]
    expect:
      etcd-2: {ready: up}
";

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

/// The container of `node` in run `id`.
fn container(id: &str, node: &str) -> String {
    let out = docker(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label=io.repro.run={id}"),
        "--filter",
        &format!("label=io.repro.node={node}"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(!text.is_empty(), "no container for {node} in run {id}");
    text
}

fn kept_run(tmp: &Path, version: &str) -> (crate::runs::Finished, String) {
    let check = tmp.join("audit-e2e.yaml");
    std::fs::write(&check, CHECK).expect("write check");
    let run = Run::check(&check.display().to_string())
        .sim()
        .version(version)
        .keep()
        .finish();
    let id = run.run_id();
    (run, id)
}

fn supervisor_metrics_on<'a>(v: &'a Value, node: &str) -> &'a Value {
    let key = (v["keys"].as_array().expect("keys").iter())
        .find(|k| k["key"] == "supervisor-metrics")
        .unwrap_or_else(|| panic!("no supervisor-metrics in {v}"));
    (key["nodes"].as_array().expect("nodes").iter())
        .find(|n| n["node"] == node)
        .unwrap_or_else(|| panic!("no {node} in {key}"))
}

#[test]
fn audit_names_the_borrowed_value_on_the_buggy_version_only_and_predicts_a_refusal() {
    crate::docker::docker_ok();
    for (version, borrowed) in [("v1.33.4+k3s1", true), ("v1.33.5+k3s1", false)] {
        let tmp = tempfile::tempdir().expect("tmp");
        let (run, id) = kept_run(tmp.path(), version);
        let cleanup = KeptCluster::of(&id);
        run.out.code(0);
        let kubeconfig = run.dir.join("kubeconfig.yaml");
        assert!(
            kubeconfig.is_file(),
            "the kept run wrote no kubeconfig:\n{}",
            run.out
        );
        let audit = Repro::new()
            .args(["audit", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--format", "json"])
            .run();
        audit.code(1);
        let v = audit.json();
        crate::schema::assert_valid("schema/audit.schema.json", &v, "audit of a live cluster");
        let names: Vec<&str> = (v["nodes"].as_array().expect("nodes").iter())
            .map(|n| n["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(names, ["cp-1", "etcd-1", "etcd-2", "etcd-3"], "{v}");
        let etcd2 = supervisor_metrics_on(&v, "etcd-2");
        assert_eq!(etcd2["started_with"], "true", "{etcd2}");
        assert_eq!(etcd2["borrowed"], borrowed, "{version}: {etcd2}");
        assert_eq!(etcd2["unshared"], true, "{etcd2}");
        for other in ["etcd-1", "etcd-3", "cp-1"] {
            assert_eq!(supervisor_metrics_on(&v, other)["borrowed"], false, "{v}");
        }
        // The kubeconfig's token (the cluster's) is nowhere in the output.
        let kc = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
        let token = (kc.lines())
            .find_map(|l| l.trim().strip_prefix("token: "))
            .expect("a token in the stand-in's kubeconfig");
        assert!(!audit.stdout.contains(token) && !audit.stderr.contains(token));
        if borrowed {
            edited_control_plane_is_refused(tmp.path(), &id, &kubeconfig);
        }
        cleanup.done();
    }
}

/// cp-1's config gets `supervisor-metrics: true` in a drop-in, not restarted: audit says it will
/// be refused at its next start; a restart proves it.
fn edited_control_plane_is_refused(tmp: &Path, id: &str, kubeconfig: &Path) {
    let cp = container(id, "cp-1");
    let local = tmp.join("cp-1");
    let copied = docker(&[
        "cp",
        &format!("{cp}:/etc/rancher/k3s"),
        &local.display().to_string(),
    ]);
    assert!(copied.status.success(), "{copied:?}");
    let dropin = local.join("config.yaml.d/99-audit.yaml");
    std::fs::create_dir_all(dropin.parent().expect("parent")).expect("mkdir");
    std::fs::write(&dropin, "supervisor-metrics: true\n").expect("write");
    let put = docker(&[
        "cp",
        &local.join("config.yaml.d").display().to_string(),
        &format!("{cp}:/etc/rancher/k3s/"),
    ]);
    assert!(put.status.success(), "{put:?}");
    let audit = Repro::new()
        .args(["audit", "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--config")
        .arg(format!("cp-1={}", local.join("config.yaml").display()))
        .run();
    audit
        .code(1)
        .stdout_has("cp-1 will be refused at next start");
    let cp1 = audit
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("cp-1") && l.contains("WILL BE REFUSED"))
        .unwrap_or_else(|| panic!("no refused line for cp-1:\n{audit}"));
    assert!(cp1.contains("PENDING"), "{cp1}");
    // The proof: restarted, cp-1 dies on the critical-config check.
    assert!(docker(&["restart", &cp]).status.success());
    let waited = docker(&["wait", &cp]);
    let code = String::from_utf8_lossy(&waited.stdout).trim().to_string();
    assert_ne!(code, "0", "cp-1 should have been refused");
    let logs = docker(&["logs", "--tail", "20", &cp]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&logs.stdout),
        String::from_utf8_lossy(&logs.stderr)
    );
    assert!(
        text.contains("supervisor-metrics") || text.contains("SupervisorMetrics"),
        "{text}"
    );
}

/// etcd-split's servers' config files, as collected from each server.
fn etcd_split_configs(dir: &Path) -> Vec<String> {
    let etcd =
        "disable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n";
    let files = [
        ("etcd-1", format!("cluster-init: true\n{etcd}")),
        ("etcd-2", format!("server: https://etcd-1:6443\n{etcd}")),
        ("etcd-3", format!("server: https://etcd-1:6443\n{etcd}")),
        (
            "cp-1",
            "server: https://etcd-1:6443\ndisable-etcd: true\n".to_string(),
        ),
    ];
    let mut args = Vec::new();
    for (name, text) in files {
        let p = dir.join(name).join("config.yaml");
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
        args.extend(["--config".to_string(), format!("{name}={}", p.display())]);
    }
    args
}

#[test]
fn a_change_plan_replays_on_the_stand_in_with_every_server_on_the_new_value() {
    crate::docker::docker_ok();
    for version in ["v1.33.4+k3s1", "v1.33.5+k3s1"] {
        let tmp = tempfile::tempdir().expect("tmp");
        let check = tmp.path().join("change.yaml");
        let planned = Repro::new()
            .arg("audit")
            .args(etcd_split_configs(tmp.path()))
            .args([
                "--version",
                version,
                "--change",
                "supervisor-metrics=true",
                "--check-out",
            ])
            .arg(&check)
            .run();
        planned
            .code(0)
            .stdout_has("change supervisor-metrics=true:");
        let text = std::fs::read_to_string(&check).expect("check written");
        assert_eq!(text.matches("restart: [").count(), 4, "{text}");
        let run = Run::check(&check.display().to_string())
            .sim()
            .version(version)
            .finish();
        run.out.code(0);
        assert_eq!(run.outcome(), "fixed", "{version}: {}", run.out);
        for (step, node) in [(1, "etcd-1"), (3, "etcd-2"), (4, "etcd-3")] {
            assert_eq!(
                run.observed(step, node, "supervisor-metrics"),
                "up",
                "{version} step {step}"
            );
        }
    }
}

/// RKE2 (#40): the stand-in's RKE2 nodes (systemd units) carry `rke2.io/node-args`; after
/// etcd-split's steps on rancher/rke2#8465's topology, audit names a node running another
/// server's value on the buggy release and none on the fixed one.
#[test]
fn audit_reads_an_rke2_stand_in_cluster() {
    crate::docker::docker_ok();
    for (version, buggy) in [("v1.33.4+rke2r1", true), ("v1.33.5+rke2r1", false)] {
        let run = Run::check("etcd-split")
            .sim()
            .version(version)
            .topology("rke2-8465")
            .expect("auto")
            .keep()
            .finish();
        let cleanup = KeptCluster::of(&run.run_id());
        run.out.code(0);
        let kubeconfig = run.dir.join("kubeconfig.yaml");
        let audit = Repro::new()
            .args(["audit", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--format", "json"])
            .run();
        let v = audit.json();
        crate::schema::assert_valid("schema/audit.schema.json", &v, "audit of an RKE2 cluster");
        assert_eq!(v["distribution"], "rke2", "{v}");
        let borrowed: Vec<String> = (v["keys"].as_array().expect("keys").iter())
            .flat_map(|k| k["nodes"].as_array().expect("nodes").iter())
            .filter(|n| n["borrowed"] == true)
            .map(|n| n["node"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(!borrowed.is_empty(), buggy, "{version}: {borrowed:?}\n{v}");
        if buggy {
            audit.code(1);
        }
        cleanup.done();
    }
}

/// The same plan on RKE2 (rancher/rke2#8465's topology: the servers of etcd-split and an agent):
/// every server ends with supervisor-metrics, no start refused, buggy and fixed.
#[test]
fn a_change_plan_replays_on_the_rke2_stand_in() {
    crate::docker::docker_ok();
    for version in ["v1.33.4+rke2r1", "v1.33.5+rke2r1"] {
        let tmp = tempfile::tempdir().expect("tmp");
        let args = etcd_split_configs(tmp.path());
        // rke2 has no cluster-init: the server without `server:` creates the cluster.
        let etcd1 = tmp.path().join("etcd-1/config.yaml");
        let text = std::fs::read_to_string(&etcd1).expect("read");
        std::fs::write(&etcd1, text.replace("cluster-init: true\n", "")).expect("write");
        let check = tmp.path().join("change.yaml");
        Repro::new()
            .arg("audit")
            .args(args)
            .args(["--version", version, "--change", "supervisor-metrics=true"])
            .args(["--topology", "rke2-8465", "--check-out"])
            .arg(&check)
            .run()
            .code(0);
        let run = Run::check(&check.display().to_string())
            .sim()
            .version(version)
            .finish();
        run.out.code(0);
        assert_eq!(run.outcome(), "fixed", "{version}: {}", run.out);
        for (step, node) in [(1, "etcd-1"), (3, "etcd-2"), (4, "etcd-3")] {
            assert_eq!(
                run.observed(step, node, "supervisor-metrics"),
                "up",
                "{version} step {step}"
            );
        }
    }
}
