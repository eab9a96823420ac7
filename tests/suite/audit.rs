//! `repro audit` from the outside (#40), no Docker: config files and node lists of etcd-split on
//! a buggy and a fixed version, a live cluster through a kubeconfig (a local API server serving
//! the node list as k3s's nodes carry it), a kubeconfig pointing nowhere, malformed inputs,
//! `--format json` against schema/audit.schema.json, `--format prometheus` through a Prometheus
//! text parser, no planted secret in any output.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::repro::{Output, Repro};

const SECRET: &str = "K10planted-audit-secret-0xdeadbeef";
const ETCD: &str =
    "disable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n";

/// etcd-split's four config folders; etcd-2 enables supervisor-metrics in a drop-in, cp-1 in its
/// config.yaml (edited, as if not restarted yet).
fn etcd_split_files(dir: &Path) -> Vec<String> {
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write(
        "etcd-1/config.yaml",
        &format!("cluster-init: true\ntoken: {SECRET}\n{ETCD}"),
    );
    write(
        "etcd-2/config.yaml",
        &format!("server: https://etcd-1:6443\ntoken: {SECRET}\n{ETCD}"),
    );
    write(
        "etcd-2/config.yaml.d/10-metrics.yaml",
        "supervisor-metrics: true\n",
    );
    write(
        "etcd-3/config.yaml",
        &format!("server: https://etcd-1:6443\n{ETCD}"),
    );
    write(
        "cp-1/config.yaml",
        "server: https://etcd-1:6443\ndisable-etcd: true\n",
    );
    ["etcd-1", "etcd-2", "etcd-3", "cp-1"]
        .iter()
        .flat_map(|n| {
            [
                "--config".to_string(),
                format!("{n}={}", dir.join(n).display()),
            ]
        })
        .collect()
}

fn audit(args: &[String], extra: &[&str]) -> Output {
    Repro::without_docker()
        .arg("audit")
        .args(args)
        .args(extra)
        .run()
}

fn no_secret(out: &Output) {
    assert!(
        !out.stdout.contains(SECRET) && !out.stderr.contains(SECRET),
        "a planted secret was printed:\n{out}"
    );
}

#[test]
fn files_of_a_buggy_version_name_the_borrowed_value_and_the_fixed_one_none() {
    let tmp = tempfile::tempdir().expect("tmp");
    let args = etcd_split_files(tmp.path());
    let buggy = audit(&args, &["--version", "v1.33.4+k3s1", "--format", "json"]);
    buggy.code(1);
    no_secret(&buggy);
    let v = buggy.json();
    crate::schema::assert_valid("schema/audit.schema.json", &v, "audit --format json");
    let metrics = key(&v, "supervisor-metrics");
    // etcd-2 configured true, but its agent takes the value of cp-1 or etcd-1: false.
    let etcd2 = on(metrics, "etcd-2");
    assert_eq!(etcd2["borrowed"], true, "{etcd2}");
    assert_eq!(etcd2["configured"], "true", "{etcd2}");
    let from: Vec<(&str, &str)> = (etcd2["runs_with"].as_array().expect("array").iter())
        .map(|s| {
            (
                s["server"].as_str().unwrap_or(""),
                s["value"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        from,
        [("cp-1", "false"), ("etcd-1", "false")],
        "both candidates: {etcd2}"
    );
    assert_eq!(etcd2["unshared"], true);
    assert_eq!(
        on(metrics, "etcd-3")["borrowed"],
        false,
        "it shares the servers' value"
    );

    let fixed = audit(&args, &["--version", "v1.33.5+k3s1", "--format", "json"]);
    fixed.code(1); // etcd-2 still runs a value the others do not share
    let v = fixed.json();
    crate::schema::assert_valid("schema/audit.schema.json", &v, "audit --format json");
    for n in key(&v, "supervisor-metrics")["nodes"]
        .as_array()
        .expect("nodes")
    {
        assert_eq!(n["borrowed"], false, "{n}");
    }
}

#[test]
fn a_consistent_cluster_exits_0_and_prometheus_parses() {
    let tmp = tempfile::tempdir().expect("tmp");
    let args = etcd_split_files(tmp.path());
    std::fs::remove_file(tmp.path().join("etcd-2/config.yaml.d/10-metrics.yaml")).expect("rm");
    let ok = audit(
        &args,
        &["--version", "v1.33.4+k3s1", "--format", "prometheus"],
    );
    ok.code(0);
    no_secret(&ok);
    let lines = ok.stdout.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let value = |name: &str, node: Option<&str>| {
        (scrape.samples.iter())
            .find(|s| {
                s.metric == name
                    && node.is_none_or(|n| s.labels.get("node") == Some(n))
                    && s.labels
                        .get("key")
                        .is_none_or(|k| k == "supervisor-metrics")
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(g) => g,
                _ => f64::NAN,
            })
    };
    assert_eq!(value("repro_audit_consistent", None), Some(1.0));
    assert_eq!(
        value("repro_audit_borrowed_value", Some("etcd-2")),
        Some(0.0)
    );

    // The same cluster with etcd-2's edit: its borrowed gauge is 1.
    let tmp = tempfile::tempdir().expect("tmp");
    let args = etcd_split_files(tmp.path());
    let bad = audit(
        &args,
        &["--version", "v1.33.4+k3s1", "--format", "prometheus"],
    );
    bad.code(1);
    let lines = bad.stdout.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let borrowed = (scrape.samples.iter()).find(|s| {
        s.metric == "repro_audit_borrowed_value"
            && s.labels.get("node") == Some("etcd-2")
            && s.labels.get("key") == Some("supervisor-metrics")
    });
    assert!(
        matches!(borrowed.map(|s| &s.value), Some(prometheus_parse::Value::Gauge(g)) if *g == 1.0),
        "{}",
        bad.stdout
    );
}

#[test]
fn an_edited_control_plane_node_is_predicted_refused_and_the_plan_avoids_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut args = etcd_split_files(tmp.path());
    std::fs::remove_file(tmp.path().join("etcd-2/config.yaml.d/10-metrics.yaml")).expect("rm");
    std::fs::write(
        tmp.path().join("cp-1/config.yaml"),
        "server: https://etcd-1:6443\ndisable-etcd: true\nsupervisor-metrics: true\n",
    )
    .expect("write");
    let out = audit(&args, &["--version", "v1.33.4+k3s1"]);
    out.code(1).stdout_has("cp-1 will be refused at next start");
    no_secret(&out);

    let check = tmp.path().join("plan.yaml");
    args.extend(["--check-out".to_string(), check.display().to_string()]);
    let planned = audit(
        &args,
        &[
            "--version",
            "v1.33.4+k3s1",
            "--change",
            "supervisor-metrics=true",
            "--format",
            "json",
        ],
    );
    let v = planned.json();
    crate::schema::assert_valid(
        "schema/audit.schema.json",
        &v,
        "audit --change --format json",
    );
    let order: Vec<&str> = (v["change"]["steps"].as_array().expect("steps").iter())
        .map(|s| s["node"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(order, ["etcd-1", "cp-1", "etcd-2", "etcd-3"], "{v}");
    assert_eq!(v["change"]["impossible"], json!([]));
    let text = std::fs::read_to_string(&check).expect("check file written");
    assert!(!text.contains(SECRET));
    Repro::new()
        .args(["validate", &check.display().to_string()])
        .run()
        .code(0);
}

#[test]
fn malformed_and_unknown_keys_are_named_at_their_place() {
    let tmp = tempfile::tempdir().expect("tmp");
    let args = etcd_split_files(tmp.path());
    let bad = tmp.path().join("etcd-2/config.yaml.d/20-bad.yaml");
    std::fs::write(&bad, "supervisor-metrics: true\n  oops: [\n").expect("write");
    let out = audit(&args, &["--version", "v1.33.4+k3s1"]);
    out.code(2).stderr_has(&format!("{}:", bad.display()));
    assert!(out.stderr.contains("help:"), "{out}");

    std::fs::write(&bad, "# a typo\nsupervisor-metric: true\n").expect("write");
    let out = audit(&args, &["--version", "v1.33.4+k3s1"]);
    out.code(2)
        .stderr_has(&format!(
            "{}:2:1: error: unknown key `supervisor-metric`",
            bad.display()
        ))
        .stderr_has("did you mean `supervisor-metrics`?");

    std::fs::remove_file(&bad).expect("rm");
    let out = audit(&args, &[]);
    out.code(2).stderr_has("--version");
    let out = audit(&args, &["--version", "v1.33.4+k3s1", "--change", "nokey"]);
    out.code(2).stderr_has("KEY=VALUE");
}

#[test]
fn merge_rules_later_files_win_and_plus_appends() {
    let tmp = tempfile::tempdir().expect("tmp");
    let args = etcd_split_files(tmp.path());
    let d = tmp.path().join("etcd-2/config.yaml.d");
    std::fs::write(d.join("20-off.yaml"), "supervisor-metrics: false\n").expect("write");
    std::fs::write(d.join("05-on.yaml"), "embedded-registry: true\n").expect("write");
    let out = audit(&args, &["--version", "v1.33.5+k3s1", "--format", "json"]);
    let v = out.json();
    // 10-metrics.yaml's true lost to 20-off.yaml's false; 05-on.yaml's key stands.
    assert_eq!(
        on(key(&v, "supervisor-metrics"), "etcd-2")["configured"],
        "false"
    );
    assert_eq!(
        on(key(&v, "embedded-registry"), "etcd-2")["configured"],
        "true"
    );
    std::fs::write(d.join("30-cidr.yaml"), "cluster-cidr: 10.42.0.0/16\n").expect("write");
    std::fs::write(d.join("40-cidr.yaml"), "cluster-cidr+: [fd00::/56]\n").expect("write");
    let v = audit(&args, &["--version", "v1.33.5+k3s1", "--format", "json"]).json();
    assert_eq!(
        on(key(&v, "cluster-cidr"), "etcd-2")["configured"],
        "10.42.0.0/16,fd00::/56"
    );
}

/// etcd-split's nodes as k3s's API lists them (pkg/nodeconfig: node-args with the config file
/// merged in, `--key=value` split, secrets masked; role labels; kubelet version).
fn node_list(version: &str) -> Value {
    node_list_of("k3s", version)
}

/// The same nodes as `program` (`k3s`, `rke2`) annotates them.
fn node_list_of(program: &str, version: &str) -> Value {
    let etcd = [
        "--disable-apiserver",
        "true",
        "--disable-controller-manager",
        "true",
        "--disable-scheduler",
        "true",
    ];
    let node = |name: &str, ip: &str, labels: &[&str], args: Vec<&str>| {
        let mut l = serde_json::Map::new();
        for r in labels {
            l.insert(format!("node-role.kubernetes.io/{r}"), json!("true"));
        }
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": l, "annotations": {
                format!("{program}.io/node-args"): serde_json::to_string(&args).expect("json"),
                format!("{program}.io/node-config-hash"): "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST====",
            }},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}],
                       "nodeInfo": {"kubeletVersion": version, "architecture": "amd64",
                         "bootID": "", "containerRuntimeVersion": "", "kernelVersion": "",
                         "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux",
                         "osImage": "", "systemUUID": ""}}
        })
    };
    let mut e1 = vec!["server", "--token", "********"];
    e1.extend(etcd);
    let mut e2 = vec![
        "server",
        "--server",
        "https://10.0.0.1:6443",
        "--token",
        "********",
        "--supervisor-metrics",
        "true",
    ];
    e2.extend(etcd);
    let mut e3 = vec!["server", "--server", "https://10.0.0.1:6443"];
    e3.extend(etcd);
    let cp = vec![
        "server",
        "--server",
        "https://etcd-1:6443",
        "--disable-etcd",
        "true",
        "--supervisor-metrics",
        "true",
    ];
    json!({"apiVersion": "v1", "kind": "List", "items": [
        node("etcd-1", "10.0.0.1", &["etcd"], e1),
        node("etcd-2", "10.0.0.2", &["etcd"], e2),
        node("etcd-3", "10.0.0.3", &["etcd"], e3),
        node("cp-1", "10.0.0.4", &["control-plane", "master"], cp),
    ]})
}

#[test]
fn a_saved_node_list_reads_roles_joins_and_versions() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("nodes.json");
    std::fs::write(&f, node_list("v1.33.4+k3s1").to_string()).expect("write");
    let out = audit(
        &["--nodes".into(), f.display().to_string()],
        &["--format", "json"],
    );
    out.code(1);
    let v = out.json();
    crate::schema::assert_valid("schema/audit.schema.json", &v, "audit --nodes");
    let nodes = v["nodes"].as_array().expect("nodes");
    assert_eq!(nodes[1]["joins"], "etcd-1", "an address is a node: {v}");
    assert_eq!(nodes[3]["role"], "control-plane");
    assert_eq!(
        on(key(&v, "supervisor-metrics"), "etcd-3")["borrowed"],
        true
    );
    assert_eq!(
        on(key(&v, "supervisor-metrics"), "etcd-3")["started_with"],
        "false"
    );
    // cp-1 runs with true while etcd-1 runs false: its next start is refused.
    assert_eq!(v["refused_at_next_start"][0]["node"], "cp-1", "{v}");

    std::fs::write(&f, "{\"items\": [\n  {\"metadata\": 7}\n]}").expect("write");
    let out = audit(&["--nodes".into(), f.display().to_string()], &[]);
    out.code(2).stderr_has(&format!("{}:", f.display()));
}

/// A local API server answering the node list (plain HTTP, as the stand-in speaks), for as many
/// requests as come; its kubeconfig.
fn api_server(dir: &Path, body: String) -> PathBuf {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    kubeconfig(dir, &format!("http://127.0.0.1:{port}"))
}

fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let p = dir.join("kubeconfig.yaml");
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: split\n  context: {{cluster: c, user: u}}\ncurrent-context: split\nusers:\n- name: u\n  user:\n    token: {SECRET}\n"
        ),
    )
    .expect("write");
    p
}

#[test]
fn a_live_cluster_through_a_kubeconfig() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut list = node_list("v1.33.5+k3s1");
    list["kind"] = json!("NodeList");
    let kc = api_server(tmp.path(), list.to_string());
    let out = audit(
        &["--kubeconfig".into(), kc.display().to_string()],
        &["--format", "json"],
    );
    out.code(1);
    no_secret(&out);
    let v = out.json();
    assert!(
        v["source"]
            .as_str()
            .is_some_and(|s| s.contains("context `split`")),
        "{v}"
    );
    assert_eq!(
        on(key(&v, "supervisor-metrics"), "etcd-3")["borrowed"],
        false,
        "fixed: {v}"
    );

    let out = audit(
        &[
            "--kubeconfig".into(),
            kc.display().to_string(),
            "--context".into(),
            "nope".into(),
        ],
        &[],
    );
    out.code(2)
        .stderr_has("no context `nope`")
        .stderr_has("split");
}

#[test]
fn a_kubeconfig_pointing_nowhere_exits_3_and_a_missing_one_2() {
    let tmp = tempfile::tempdir().expect("tmp");
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let kc = kubeconfig(tmp.path(), &format!("https://127.0.0.1:{port}"));
    let out = audit(&["--kubeconfig".into(), kc.display().to_string()], &[]);
    out.code(3).stderr_has("context `split`");
    no_secret(&out);
    let out = audit(
        &[
            "--kubeconfig".into(),
            tmp.path().join("none.yaml").display().to_string(),
        ],
        &[],
    );
    out.code(2).stderr_has("none.yaml");
}

fn key<'a>(v: &'a Value, k: &str) -> &'a Value {
    (v["keys"].as_array().expect("keys").iter())
        .find(|x| x["key"] == k)
        .unwrap_or_else(|| panic!("no key {k} in {v}"))
}

fn on<'a>(k: &'a Value, node: &str) -> &'a Value {
    (k["nodes"].as_array().expect("nodes").iter())
        .find(|x| x["node"] == node)
        .unwrap_or_else(|| panic!("no node {node} in {k}"))
}

#[test]
fn rke2_nodes_and_files_are_read_from_its_facts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("nodes.json");
    for (version, borrowed) in [("v1.33.4+rke2r1", true), ("v1.33.5+rke2r1", false)] {
        std::fs::write(&f, node_list_of("rke2", version).to_string()).expect("write");
        let out = audit(
            &["--nodes".into(), f.display().to_string()],
            &["--format", "json"],
        );
        let v = out.json();
        crate::schema::assert_valid("schema/audit.schema.json", &v, "audit of RKE2 nodes");
        assert_eq!(v["distribution"], "rke2");
        assert_eq!(
            on(key(&v, "supervisor-metrics"), "etcd-3")["borrowed"],
            borrowed,
            "{version}: {v}"
        );
    }
    // Config files alone: rke2's flags (no cluster-init: the server without `server:` creates it).
    let args = etcd_split_files(tmp.path());
    std::fs::write(tmp.path().join("etcd-1/config.yaml"), ETCD).expect("write");
    let out = audit(
        &args,
        &[
            "--distribution",
            "rke2",
            "--version",
            "v1.33.4+rke2r1",
            "--change",
            "supervisor-metrics=true",
            "--format",
            "json",
        ],
    );
    let v = out.json();
    assert_eq!(v["distribution"], "rke2");
    assert_eq!(
        on(key(&v, "supervisor-metrics"), "etcd-2")["borrowed"],
        true,
        "{v}"
    );
    let order: Vec<&str> = (v["change"]["steps"].as_array().expect("steps").iter())
        .map(|s| s["node"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(order, ["etcd-1", "cp-1", "etcd-2", "etcd-3"], "{v}");
    // cluster-init is k3s's: an unknown key on rke2.
    std::fs::write(
        tmp.path().join("etcd-1/config.yaml"),
        format!("cluster-init: true\n{ETCD}"),
    )
    .expect("write");
    audit(
        &args,
        &["--distribution", "rke2", "--version", "v1.33.4+rke2r1"],
    )
    .code(2)
    .stderr_has("etcd-1/config.yaml:1:1: error: unknown key `cluster-init`");
}

#[test]
fn logs_confirm_what_each_node_ran_with_or_say_not_observed() {
    let fixture = Path::new("tests/fixtures/run-etcd-split-buggy");
    let tmp = tempfile::tempdir().expect("tmp");
    let mut args = Vec::new();
    for n in ["etcd-1", "etcd-2", "etcd-3", "cp-1"] {
        let dir = tmp.path().join(n);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let from = fixture.join(format!("nodes/{n}/config-step-3.yaml"));
        std::fs::copy(from, dir.join("config.yaml")).expect("copy");
        args.extend(["--config".to_string(), format!("{n}={}", dir.display())]);
    }
    let v = audit(&args, &["--version", "v1.33.4+k3s1", "--format", "json"]).json();
    assert!(
        on(key(&v, "embedded-registry"), "etcd-1")
            .get("observed")
            .is_none(),
        "no logs: no field"
    );

    let mut with_logs = args.clone();
    with_logs.extend(["--logs".to_string(), fixture.display().to_string()]);
    let out = audit(
        &with_logs,
        &["--version", "v1.33.4+k3s1", "--format", "json"],
    );
    let v = out.json();
    crate::schema::assert_valid("schema/audit.schema.json", &v, "audit with logs");
    let registry = key(&v, "embedded-registry");
    assert_eq!(on(registry, "etcd-1")["observed"], "up", "{registry}");
    assert_eq!(on(registry, "cp-1")["observed"], "down", "{registry}");

    let mut one = args.clone();
    let log = fixture.join("nodes/etcd-2/boot-3.log");
    one.extend(["--node".to_string(), format!("etcd-2={}", log.display())]);
    let v = audit(&one, &["--version", "v1.33.4+k3s1", "--format", "json"]).json();
    let registry = key(&v, "embedded-registry");
    assert_eq!(on(registry, "etcd-2")["observed"], "up", "{registry}");
    assert_eq!(
        on(registry, "etcd-1")["observed"],
        "not observed",
        "{registry}"
    );
}
