//! The apiserver's node list (`GET /api/v1/nodes`, what `kubectl get nodes` and kube's
//! `Api<Node>::list` read), with what k3s writes on each node when its agent registers
//! (pkg/nodeconfig/nodeconfig.go, `SetNodeConfigAnnotations`; docs/k3s-behaviour.md):
//! `<program>.io/node-args` (the command line with the config file merged in, `--key=value`
//! split in two, the value after a secret flag `********`), `<program>.io/node-env` (the
//! `K3S_*` environment, secrets masked), `<program>.io/node-config-hash` (base32 of the sha256
//! of both), the role labels and the kubelet version. Each server answers its own record; the
//! apiserver gathers every server's (stands in for the nodes' registrations in etcd).

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::ServerConfig;
use crate::http::{self, Auth, Response, Url};

/// `nodeconfig.OmittedValue`.
const OMITTED: &str = "********";
/// The path a server answers its own node record on (the stand-in's, not k3s's).
pub const OWN_NODE_PATH: &str = "/repro-sim/node";
/// The path an agent posts its node record to (the stand-in's kubelet status update).
pub const NODE_STATUS_PATH: &str = "/repro-sim/node-status";

static ARGS: OnceLock<(String, String)> = OnceLock::new();

/// Every node this apiserver has listed, with when it last answered: the stand-in's stand-in
/// for the Node objects in etcd and the kubelets' status updates. A node that stopped answering
/// stays listed, `Ready` until the node-monitor grace period has passed since it last answered,
/// then `Unknown` (kube-controller-manager's node lifecycle controller: `NodeStatusUnknown`,
/// "Kubelet stopped posting node status."). Kept in this process only: an apiserver that
/// restarts lists what answers from then on (a node it never heard of is absent, which a
/// check reads as not ready too).
static SEEN: std::sync::Mutex<Vec<(Value, std::time::Instant)>> = std::sync::Mutex::new(Vec::new());

/// `--node-monitor-grace-period`: 40s, Kubernetes' default before v1.32 (50s from then; the
/// stand-in keeps one figure), or `REPRO_SIM_NODE_MONITOR_GRACE` seconds (tests shorten it).
fn monitor_grace() -> Duration {
    let secs = std::env::var("REPRO_SIM_NODE_MONITOR_GRACE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    Duration::from_secs(secs)
}

/// `answering` (the nodes that answered now) and every node heard of before, sorted by name,
/// each with its `Ready` condition: `True` while heard within `grace`, else `Unknown`.
fn with_readiness(answering: Vec<Value>, now: std::time::Instant, grace: Duration) -> Vec<Value> {
    for node in answering {
        note(node, now);
    }
    let seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let mut items: Vec<Value> = (seen.iter())
        .map(|(node, heard)| {
            let fresh = now.duration_since(*heard) <= grace;
            let (status, reason, message) = if fresh {
                ("True", "KubeletReady", "kubelet is posting ready status")
            } else {
                (
                    "Unknown",
                    "NodeStatusUnknown",
                    "Kubelet stopped posting node status.",
                )
            };
            let mut node = node.clone();
            node["status"]["conditions"] = json!([
                {"type": "Ready", "status": status, "reason": reason, "message": message}
            ]);
            node
        })
        .collect();
    items.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    items
}

/// `isSecret`'s flags and variables.
fn is_secret(key: &str, upper: &str) -> bool {
    [
        "--token",
        "-t",
        "--agent-token",
        "--datastore-endpoint",
        "--cluster-secret",
        "--etcd-s3-access-key",
        "--etcd-s3-secret-key",
    ]
    .contains(&key)
        || [
            "TOKEN",
            "DATASTORE_ENDPOINT",
            "AGENT_TOKEN",
            "CLUSTER_SECRET",
        ]
        .iter()
        .any(|s| key == format!("{upper}_{s}"))
        || key == "AWS_ACCESS_KEY_ID"
        || key == "AWS_SECRET_ACCESS_KEY"
}

/// `getNodeArgs`: `args` (the subcommand, then the config files' flags and the command
/// line's, as `configfilearg.MustParse` gives them), each `--key=value` split, secrets masked.
pub fn node_args(args: &[String]) -> Vec<String> {
    let upper = crate::config::facts().binary.to_uppercase();
    let mut out: Vec<String> = Vec::new();
    for a in args {
        match a.split_once('=').filter(|_| a.starts_with("--")) {
            Some((k, v)) => out.extend([k.to_string(), v.to_string()]),
            None => out.push(a.clone()),
        }
    }
    for i in 0..out.len() {
        if is_secret(&out[i], &upper) && i + 1 < out.len() {
            out[i + 1] = OMITTED.to_string();
        }
    }
    out
}

/// `getNodeEnv`: the `<PROGRAM>_*` variables, secrets masked, as a JSON object.
pub fn node_env(vars: impl Iterator<Item = (String, String)>) -> String {
    let upper = crate::config::facts().binary.to_uppercase();
    let mut env: std::collections::BTreeMap<String, String> = vars
        .filter(|(k, _)| k.starts_with(&format!("{upper}_")))
        .collect();
    for (k, v) in env.iter_mut() {
        if is_secret(k, &upper) {
            *v = OMITTED.to_string();
        }
    }
    serde_json::to_string(&env).unwrap_or_default()
}

/// base32 (RFC 4648, padded), as Go's `base32.StdEncoding`.
fn base32(data: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                let idx = (bits >> (35 - i * 5)) & 0x1f;
                out.push(char::from(ALPHABET[idx as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The node-args annotation's arguments (`configfilearg.MustParse`: the config files' flags,
/// then the command line's), remembered for the node list.
pub fn remember_node_args(
    files: &[crate::config::ConfigFile],
    cli_args: &[String],
    version: &crate::version::Version,
    command: ::distro::FlagCommand,
) {
    if let Ok(file_args) = crate::config::files_to_args(files) {
        let mut all = crate::config::strip_unknown(file_args, version, command, &mut Vec::new());
        all.extend(cli_args.iter().cloned());
        let word = match command {
            ::distro::FlagCommand::Agent => "agent",
            _ => "server",
        };
        remember(word, &all);
    }
}

/// Remembers this process's node-args and node-env annotations (once, at start): `command`
/// is `server` or `agent`, as k3s's annotation starts (an agent's Node carries them too).
pub fn remember(command: &str, files_then_cli: &[String]) {
    let mut all = vec![command.to_string()];
    all.extend(files_then_cli.iter().cloned());
    let args = serde_json::to_string(&node_args(&all)).unwrap_or_default();
    let _ = ARGS.set((args, node_env(std::env::vars())));
}

/// This server's Node object, as the apiserver lists it.
pub fn own_node(cfg: &ServerConfig, name: &str, ip: &str, version: &str) -> Value {
    node_record(!cfg.disable_etcd, !cfg.disable_apiserver, name, ip, version)
}

/// An agent's Node object (no role label), as its kubelet posts it ([`heard`]).
pub fn agent_node(name: &str, ip: &str, version: &str) -> Value {
    node_record(false, false, name, ip, version)
}

fn node_record(etcd: bool, control_plane: bool, name: &str, ip: &str, version: &str) -> Value {
    let program = crate::config::facts().binary;
    let (args, env) = ARGS.get().cloned().unwrap_or_default();
    let hash = base32(&Sha256::digest(format!("{args}{env}").as_bytes()));
    let mut labels = serde_json::Map::new();
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    if etcd {
        labels.insert("node-role.kubernetes.io/etcd".into(), json!("true"));
    }
    if control_plane {
        labels.insert(
            "node-role.kubernetes.io/control-plane".into(),
            json!("true"),
        );
        labels.insert("node-role.kubernetes.io/master".into(), json!("true"));
    }
    json!({
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                format!("{program}.io/node-args"): args,
                format!("{program}.io/node-env"): env,
                format!("{program}.io/node-config-hash"): hash,
            }
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name}
            ],
            "nodeInfo": {
                "kubeletVersion": version,
                "kubeProxyVersion": version,
                "architecture": "amd64",
                "operatingSystem": "linux",
                "osImage": "repro k3s stand-in",
                "kernelVersion": "", "bootID": "", "machineID": "", "systemUUID": "",
                "containerRuntimeVersion": "containerd://stand-in"
            }
        }
    })
}

/// `node` answered at `now`.
fn note(node: Value, now: std::time::Instant) {
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|(n, _)| n["metadata"]["name"] != node["metadata"]["name"]);
    seen.push((node, now));
}

/// An agent's status update (`POST` [`NODE_STATUS_PATH`], its Node object): listed, and
/// `Ready` while it keeps posting. Agents serve no record of their own to gather, and this
/// apiserver's memory is its own (no shared etcd objects), so each agent posts to every server
/// it knows (`agent.rs`).
pub fn heard(body: &[u8]) -> Response {
    match serde_json::from_slice::<Value>(body) {
        Ok(node) if node["metadata"]["name"].is_string() => {
            note(node, std::time::Instant::now());
            Response::json(200, "{}")
        }
        _ => Response::text(400, "not a Node"),
    }
}

/// `GET /api/v1/nodes`: `own`, and the record of every other server at `hosts` (addresses
/// of the cluster's members and apiservers) that answers, once each, sorted by name.
pub fn list(own: Value, hosts: &[String], password: Option<&str>) -> Response {
    let port = crate::config::facts().supervisor_port;
    let mut items = vec![own];
    for host in hosts {
        let Ok(url) = Url::parse(&format!("https://{host}:{port}")) else {
            continue;
        };
        let auth = password.map_or(Auth::None, Auth::Bearer);
        let Ok(resp) = http::request(
            "GET",
            &url,
            OWN_NODE_PATH,
            &auth,
            None,
            Duration::from_secs(2),
        ) else {
            continue;
        };
        if resp.status != 200 {
            continue;
        }
        let Ok(node) = serde_json::from_slice::<Value>(&resp.body) else {
            continue;
        };
        if !items
            .iter()
            .any(|n| n["metadata"]["name"] == node["metadata"]["name"])
        {
            items.push(node);
        }
    }
    let items = with_readiness(items, std::time::Instant::now(), monitor_grace());
    let body = json!({"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items});
    Response::json(200, body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_that_stops_answering_goes_unknown_after_the_grace_period() {
        let node = |n: &str| json!({"metadata": {"name": n}, "status": {}});
        let ready = |items: &[Value], n: &str| {
            (items.iter().find(|i| i["metadata"]["name"] == n)).map(|i| {
                i["status"]["conditions"][0]["status"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
        };
        let (t0, grace) = (std::time::Instant::now(), Duration::from_secs(40));
        let items = with_readiness(vec![node("zz-a"), node("zz-b")], t0, grace);
        assert_eq!(ready(&items, "zz-b").as_deref(), Some("True"));
        // zz-b stops answering: still Ready within the grace period, Unknown after it.
        let items = with_readiness(vec![node("zz-a")], t0 + Duration::from_secs(39), grace);
        assert_eq!(ready(&items, "zz-b").as_deref(), Some("True"));
        let items = with_readiness(vec![node("zz-a")], t0 + Duration::from_secs(41), grace);
        assert_eq!(ready(&items, "zz-b").as_deref(), Some("Unknown"));
        assert_eq!(ready(&items, "zz-a").as_deref(), Some("True"));
        // It answers again: Ready at once.
        let items = with_readiness(vec![node("zz-b")], t0 + Duration::from_secs(42), grace);
        assert_eq!(ready(&items, "zz-b").as_deref(), Some("True"));
    }

    #[test]
    fn args_are_split_and_secrets_masked_as_nodeconfig_does() {
        let args: Vec<String> = [
            "server",
            "--token=abc",
            "--supervisor-metrics=true",
            "--disable-etcd",
            "-t",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            node_args(&args),
            [
                "server",
                "--token",
                OMITTED,
                "--supervisor-metrics",
                "true",
                "--disable-etcd",
                "-t",
                OMITTED
            ]
        );
        let env = node_env(
            [
                ("K3S_TOKEN".to_string(), "s".to_string()),
                ("K3S_URL".to_string(), "u".to_string()),
                ("HOME".into(), "/".into()),
            ]
            .into_iter(),
        );
        assert_eq!(
            env,
            format!("{{\"K3S_TOKEN\":\"{OMITTED}\",\"K3S_URL\":\"u\"}}")
        );
    }

    #[test]
    fn base32_is_gos_std_encoding() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY======");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
        assert_eq!(base32(&[0u8; 32]).len(), 56);
    }
}
