//! Lifecycle steps on real stand-in containers (#41): a node stopped and kept down, started
//! again, an etcd node and the control plane restarted at once (a group across roles), and
//! every node upgraded by release (one by RC, then to the release) in Rancher's order (etcd,
//! then control plane). result.json must show what each node ran in each
//! step, and an upgraded etcd member must come back as the member it was (its data dir kept:
//! not added to etcd again) at the address it had.

use crate::runs::{Finished, Run};
use crate::util::project;

const CHECK: &str = "name: lifecycle
topology: etcd-split
issue: https://github.com/k3s-io/k3s/issues/11647
summary: a cross-role group restart, stop, start again and an upgrade by release
steps:
  - name: restart an etcd node and the control plane at once
    restart: [[etcd-2, cp-1]]
    expect:
      etcd-2: {ready: up}
      etcd-3: {node-ready: up}
      cp-1: {ready: up, node-ready: up}
  - name: stop etcd-3
    stop: [etcd-3]
    expect:
      etcd-3: {ready: down, node-ready: down}
      cp-1: {node-ready: up}
  - name: start etcd-3 again
    start: [etcd-3]
    expect:
      etcd-3: {ready: up, node-ready: up}
  - name: upgrade the etcd nodes, then the control plane (etcd-1 to the release candidate)
    upgrade: {etcd-1: v1.33.5-rc1+k3s1, etcd-2: v1.33.5+k3s1, etcd-3: v1.33.5+k3s1, cp-1: v1.33.5+k3s1}
    expect:
      etcd-1: {ready: up, version: v1.33.5-rc1+k3s1}
      etcd-2: {ready: up, version: v1.33.5+k3s1}
      cp-1: {ready: up, version: v1.33.5+k3s1}
  - name: upgrade etcd-1 from the release candidate to the release
    upgrade: {etcd-1: v1.33.5+k3s1}
    expect:
      etcd-1: {ready: up, version: v1.33.5+k3s1}
";

/// The node's address as its kubelet line gives it (`--node-ip=…`).
fn node_ip(log: &str) -> String {
    let at = log.find("--node-ip=").expect("a kubelet line") + "--node-ip=".len();
    log[at..].split_whitespace().next().unwrap().to_string()
}

#[test]
fn stop_start_group_restart_and_upgrade_by_release_on_k3s() {
    let root = project(&["checks/signals.yaml", "topologies/etcd-split.yaml"]);
    std::fs::write(root.path().join("checks/lifecycle.yaml"), CHECK).unwrap();
    // cp-1's apiserver marks a silent node Unknown after 3s, not Kubernetes' 40s.
    let topo = root.path().join("topologies/etcd-split.yaml");
    let text = std::fs::read_to_string(&topo).unwrap();
    let cp = "{name: cp-1, role: control-plane, join: etcd-1}";
    assert!(text.contains(cp), "etcd-split's cp-1 changed");
    let cp_env =
        "{name: cp-1, role: control-plane, join: etcd-1, env: {REPRO_SIM_NODE_MONITOR_GRACE: '3'}}";
    std::fs::write(&topo, text.replace(cp, cp_env)).unwrap();
    let run = Run::check("lifecycle")
        .sim()
        .root(root.path())
        .version("v1.33.4+k3s1")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    let steps = run.result["steps"].as_array().unwrap();
    let kinds = |i: usize| -> Vec<&str> {
        (steps[i]["actions"].as_array().unwrap().iter())
            .map(|a| a["kind"].as_str().unwrap())
            .collect()
    };
    assert_eq!(kinds(0), ["restart"]);
    assert_eq!(kinds(1), ["stop"]);
    assert_eq!(kinds(2), ["start"]);
    assert_eq!(kinds(3), ["upgrade"; 4]);
    assert_eq!(kinds(4), ["upgrade"]);
    let observed = |i: usize, node: &str, signal: &str| {
        (steps[i]["observations"].as_array().unwrap().iter())
            .find(|o| o["node"] == node && o["signal"] == signal)
            .unwrap_or_else(|| panic!("step {i}: {node} {signal}"))
            .clone()
    };
    // A stopped node's readiness is `down` by the stop; the API says NotReady (Unknown) once
    // the node-monitor grace period (3s here) has passed, asked on cp-1.
    let stopped = observed(1, "etcd-3", "ready");
    assert_eq!(
        (stopped["observed"].as_str(), stopped["rule"].as_str()),
        (Some("down"), Some("stopped"))
    );
    let api = observed(1, "etcd-3", "node-ready");
    assert_eq!(
        (api["observed"].as_str(), api["rule"].as_str()),
        (Some("down"), Some("api"))
    );
    assert_eq!(
        api["reason"],
        "the Kubernetes API: etcd-3: Ready=Unknown (NodeStatusUnknown), asked on cp-1"
    );
    assert_eq!(observed(2, "etcd-3", "node-ready")["observed"], "up");
    let versions = |i: usize| steps[i]["versions"].clone();
    let all = |v: &str| serde_json::json!({"etcd-1": v, "etcd-2": v, "etcd-3": v, "cp-1": v});
    assert_eq!(versions(0), all("v1.33.4+k3s1"));
    assert_eq!(
        versions(1),
        serde_json::json!({"etcd-1": "v1.33.4+k3s1", "etcd-2": "v1.33.4+k3s1", "cp-1": "v1.33.4+k3s1"})
    );
    assert_eq!(versions(2), all("v1.33.4+k3s1"));
    let mut rc = all("v1.33.5+k3s1");
    rc["etcd-1"] = "v1.33.5-rc1+k3s1".into();
    assert_eq!(versions(3), rc);
    assert_eq!(versions(4), all("v1.33.5+k3s1"));
    // The group is one restart of both roles, each node booted again in step 1.
    assert_eq!(
        steps[0]["actions"][0]["nodes"],
        serde_json::json!(["etcd-2", "cp-1"])
    );
    let boots = run.result["boots"].as_array().unwrap();
    let boot = |node: &str, n: u64| {
        boots
            .iter()
            .find(|b| b["node"] == node && b["boot"] == n)
            .unwrap_or_else(|| panic!("{node} boot {n}"))
    };
    assert!(["etcd-2", "cp-1"].iter().all(|n| boot(n, 2)["step"] == 1));
    // etcd-3 came back in the boot after its stop: a start, not a new node.
    assert_eq!(boot("etcd-3", 2)["step"], 3);
    // The upgraded etcd joiner is the member it was: its data dir is kept, so it starts etcd
    // for an existing member instead of being added again, at the same address.
    let (first, upgraded) = (run.boot_log("etcd-2", 1), run.boot_log("etcd-2", 3));
    assert_eq!(boot("etcd-2", 3)["step"], 4);
    assert!(first.contains("Adding member etcd-2-"), "{first}");
    assert!(upgraded.contains("Starting k3s v1.33.5+k3s1"), "{upgraded}");
    assert!(
        upgraded.contains("Starting etcd for existing cluster member"),
        "{upgraded}"
    );
    assert!(!upgraded.contains("Adding member"), "{upgraded}");
    assert_eq!(node_ip(&upgraded), node_ip(&first));
    let leader = run.boot_log("etcd-1", 2);
    assert!(
        !leader.contains("Adding member"),
        "etcd-1 added a member again:\n{leader}"
    );
}

const RKE2_CHECK: &str = "name: lifecycle-rke2
topology: rke2-8465
issue: https://github.com/k3s-io/k3s/issues/11647
summary: a cross-role group restart, stop, start again and an upgrade by release on rke2
steps:
  - name: restart an etcd node and the control plane at once
    restart: [[etcd-2, cp-1]]
    expect:
      etcd-2: {ready: up}
      cp-1: {ready: up}
  - name: stop etcd-3
    stop: [etcd-3]
    expect:
      etcd-3: {ready: down}
  - name: start etcd-3 again
    start: [etcd-3]
    expect:
      etcd-3: {ready: up}
  - name: upgrade etcd-2 by release, etcd-1 by release candidate
    upgrade: {etcd-2: v1.32.9+rke2r1, etcd-1: v1.32.9-rc1+rke2r1}
    expect:
      etcd-2: {ready: up, version: v1.32.9+rke2r1}
      etcd-1: {ready: up, version: v1.32.9-rc1+rke2r1}
  - name: upgrade cp-1 to a local build
    upgrade: {cp-1: {binary: ../@BUILD@}}
    expect:
      cp-1: {ready: up, version: v1.32.9+rke2r1}
";

/// The same on RKE2's stand-in nodes (systemd as PID 1, the unit stopped with the container):
/// the upgraded etcd member keeps its data and address, and result.json says which node ran
/// which version in each step.
#[test]
fn stop_start_group_restart_and_upgrade_by_release_candidate_and_build_on_rke2() {
    let root = project(&["checks/signals.yaml", "topologies/rke2-8465.yaml"]);
    let build = crate::builds::sim_binary(root.path(), "v1.32.9+rke2r1", true);
    let name = build.file_name().unwrap().to_str().unwrap();
    std::fs::write(
        root.path().join("checks/lifecycle-rke2.yaml"),
        RKE2_CHECK.replace("@BUILD@", name),
    )
    .unwrap();
    let run = Run::check("lifecycle-rke2")
        .sim()
        .root(root.path())
        .version("v1.32.5+rke2r1")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    let steps = run.result["steps"].as_array().unwrap();
    let v = |i: usize, node: &str| steps[i]["versions"][node].as_str().map(str::to_string);
    assert_eq!(v(1, "etcd-3"), None, "a stopped node runs nothing");
    assert_eq!(v(2, "etcd-3").as_deref(), Some("v1.32.5+rke2r1"));
    assert_eq!(v(3, "etcd-2").as_deref(), Some("v1.32.9+rke2r1"));
    assert_eq!(v(3, "cp-1").as_deref(), Some("v1.32.5+rke2r1"));
    assert_eq!(v(3, "etcd-1").as_deref(), Some("v1.32.9-rc1+rke2r1"));
    assert_eq!(v(4, "cp-1").as_deref(), Some("v1.32.9+rke2r1"));
    // The local build ran: copied over the binary the units start (install.sh's tarball
    // prefix), recorded by its hash, and its banner is the new boot's.
    let bin = &run.result["planned_steps"][4]["upgrade"][0]["binary"];
    assert_eq!(bin["sha256"], crate::builds::sha256(&build), "{bin}");
    assert_eq!(bin["reported"], "v1.32.9+rke2r1");
    let cp = run.boot_log("cp-1", 3);
    assert!(cp.contains("Starting rke2 v1.32.9+rke2r1"), "{cp}");
    let (first, upgraded) = (run.boot_log("etcd-2", 1), run.boot_log("etcd-2", 3));
    assert!(first.contains("Adding member etcd-2-"), "{first}");
    assert!(
        upgraded.contains("Starting rke2 v1.32.9+rke2r1"),
        "{upgraded}"
    );
    assert!(
        upgraded.contains("Starting etcd for existing cluster member"),
        "{upgraded}"
    );
    assert!(!upgraded.contains("Adding member"), "{upgraded}");
    assert_eq!(node_ip(&upgraded), node_ip(&first));
}

/// An upgrade to a local build (`{binary: PATH}`, the file `--k3s-binary` takes): a buggy
/// v1.33.4 cluster whose etcd-2 borrows its registry setting (k3s #12753) is upgraded node by
/// node to a stand-in build reporting v1.33.5+k3s1 with the fix. The build is copied over the
/// re-created node's binary, result.json records it (path, sha256, reported version) and the
/// version each node ran in each step; the upgraded etcd member keeps its data and address,
/// and from its new boot on reads its own registry setting (the bug world, too, plays that
/// boot on the build's version: no `bug:` after the upgrade).
#[test]
fn upgrade_to_a_local_build_on_k3s() {
    let root = project(&["checks/signals.yaml", "topologies/etcd-split.yaml"]);
    let build = crate::builds::sim_binary(root.path(), "v1.33.5+k3s1", true);
    let name = build.file_name().unwrap().to_str().unwrap().to_string();
    // A path relative to the check file's folder: ../<file> from checks/.
    let check = etcd2_upgrade_check(
        "local-build",
        "a local build",
        &format!("{{binary: ../{name}}}"),
    );
    std::fs::write(root.path().join("checks/local-build.yaml"), check).unwrap();
    let run = Run::check("local-build")
        .sim()
        .root(root.path())
        .version("v1.33.4+k3s1")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced", "{}", run.out);
    let planned = &run.result["planned_steps"][1]["upgrade"][0];
    assert_eq!(planned["node"], "etcd-2");
    assert_eq!(planned["version"], "v1.33.5+k3s1");
    let bin = &planned["binary"];
    assert_eq!(bin["sha256"], crate::builds::sha256(&build));
    assert_eq!(bin["reported"], "v1.33.5+k3s1");
    let path = bin["path"].as_str().unwrap_or_default();
    assert!(path.ends_with(&format!("checks/../{name}")), "{path}");
    let steps = run.result["steps"].as_array().unwrap();
    assert_eq!(steps[0]["versions"]["etcd-2"], "v1.33.4+k3s1");
    assert_eq!(steps[1]["versions"]["etcd-2"], "v1.33.5+k3s1");
    assert_eq!(steps[1]["versions"]["etcd-1"], "v1.33.4+k3s1");
    assert_eq!(run.observed(2, "etcd-2", "embedded-registry"), "up");
    etcd2_upgraded_in_place(&run, "Starting k3s v1.33.5+k3s1");
}

/// An upgrade to a CI build (`{commit: SHA}`, what `--k3s-commit` takes): fetched from the
/// storage `REPRO_K3S_CI_URL` names when the check loads, verified against its sum and cached,
/// then run as a local build is — the node keeps its data and address and its new boot is the
/// build's. A short commit is refused at its file:line:col before anything runs.
#[test]
fn upgrade_to_a_commit_build_on_k3s() {
    let root = project(&["checks/signals.yaml", "topologies/etcd-split.yaml"]);
    let server = crate::http_files::HttpFiles::start();
    let cache = root.path().join("cache");
    let fixed =
        std::fs::read(crate::builds::sim_binary(root.path(), "v1.33.5+k3s1", true)).unwrap();
    let sha = "0c0ffee0000000000000000000000000000000c3";
    crate::builds::publish(&server, sha, fixed.clone(), &fixed);
    let check = |commit: &str| {
        etcd2_upgrade_check(
            "commit-build",
            "the commit's CI build",
            &format!("{{commit: {commit}}}"),
        )
    };
    let file = root.path().join("checks/commit-build.yaml");
    std::fs::write(&file, check(&sha[..8])).unwrap();
    let out = crate::repro::Repro::new()
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", &cache)
        .args(["validate", "--root"])
        .arg(root.path())
        .arg(&file)
        .run();
    out.code(2);
    out.stderr_has("commit-build.yaml:17:24");
    out.stderr_has("is a short commit (8 hex digits)");
    assert!(server.asked().is_empty(), "{:?}", server.asked());

    std::fs::write(&file, check(sha)).unwrap();
    let run = Run::check("commit-build")
        .sim()
        .root(root.path())
        .version("v1.33.4+k3s1")
        .expect("auto")
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", &cache)
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced", "{}", run.out);
    let bin = &run.result["planned_steps"][1]["upgrade"][0]["binary"];
    assert_eq!(bin["commit"], sha);
    assert_eq!(bin["url"], format!("{}/k3s-{sha}", server.url()));
    assert_eq!(bin["reported"], "v1.33.5+k3s1");
    let cached = cache.join("repro/builds").join(sha).join("k3s");
    assert_eq!(bin["path"], cached.display().to_string());
    assert_eq!(run.result["steps"][1]["versions"]["etcd-2"], "v1.33.5+k3s1");
    assert_eq!(run.observed(2, "etcd-2", "embedded-registry"), "up");
    etcd2_upgraded_in_place(&run, "Starting k3s v1.33.5+k3s1");
}

/// A two-step check on etcd-split: etcd-2 borrows its registry setting on the release under
/// test (k3s #12753), then is upgraded to `target` (a `{binary}` or `{commit}`), a build with the
/// fix, after which it reads its own. The `{commit}` line stands at line 17.
fn etcd2_upgrade_check(name: &str, what: &str, target: &str) -> String {
    format!(
        "name: {name}
topology: etcd-split
issue: https://github.com/k3s-io/k3s/issues/12753
summary: an etcd node upgraded to {what} with the fix reads its own registry setting
fixed-in: etcd-only-bootstrap-fix
steps:
  - name: enable embedded-registry on etcd-2
    config:
      etcd-2: {{embedded-registry: true}}
    restart: [etcd-2]
    expect:
      etcd-2: {{ready: up, embedded-registry: up}}
    bug:
      etcd-2: {{embedded-registry: down}}
  - name: upgrade etcd-2 to {what}
    upgrade:
      etcd-2: {target}
    expect:
      etcd-2: {{ready: up, version: v1.33.5+k3s1, embedded-registry: up}}
"
    )
}

/// etcd-2's third boot is the upgrade's (`banner`): a restart of an existing member, not a
/// new join, on the address it had.
fn etcd2_upgraded_in_place(run: &Finished, banner: &str) {
    let (first, upgraded) = (run.boot_log("etcd-2", 1), run.boot_log("etcd-2", 3));
    assert!(upgraded.contains(banner), "{upgraded}");
    assert!(
        upgraded.contains("Starting etcd for existing cluster member"),
        "{upgraded}"
    );
    assert!(!upgraded.contains("Adding member"), "{upgraded}");
    assert_eq!(node_ip(&upgraded), node_ip(&first));
}
