//! Signals read from the Kubernetes API (`api:` in checks/signals.yaml), not from a node's log:
//! `node-ready`, the node's `Ready` condition in `GET /api/v1/nodes`, asked with the
//! distribution's kubectl on a running node that serves the API. Node names are the topology's:
//! each node's host name is its name, which k3s and rke2 register it under.

use std::time::{Duration, Instant};

use crate::raw::Role;
use crate::result::{Evidence, EvidenceSource, Observation, Observed, Rule};
use crate::scenario::Expected;

use super::cluster::Cluster;
use super::record::now_rfc3339;

/// How often the API is asked again while its answer is not the asked one yet: the node
/// lifecycle controller changes a node's condition only every few seconds.
const POLL: Duration = Duration::from_secs(1);

/// One `api:` expectation of a step.
pub(crate) struct ApiAsk<'a> {
    pub(crate) node: &'a str,
    pub(crate) signal: &'a str,
    pub(crate) expected: &'a Expected,
    pub(crate) bug: Option<Expected>,
    pub(crate) asked: Option<Expected>,
}

/// The node's readiness as the API reports it: asked until the answer is the asked value
/// (a node stopped goes `Unknown` only after the node-monitor grace period) or the run's
/// timeout passes; then the last answer.
pub(crate) async fn node_ready(c: &Cluster, a: ApiAsk<'_>) -> Observation {
    let deadline = Instant::now() + c.timeout;
    let (mut observed, mut text) = (Observed::Unknown, "no node serving the API ran".to_string());
    loop {
        if let Some((o, t)) = ask(c, a.node).await {
            (observed, text) = (o, t);
        }
        let wanted = match &a.asked {
            Some(Expected::Up) => observed == Observed::Up,
            Some(Expected::Down) => observed == Observed::Down,
            _ => observed != Observed::Unknown,
        };
        if wanted || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    Observation {
        node: a.node.to_string(),
        signal: a.signal.to_string(),
        expected: Some(a.expected.clone()),
        bug: a.bug,
        observed,
        asked: a.asked,
        boot: c.current(a.node).map_or(0, |h| h.with(|b| b.number)),
        evidence: vec![Evidence {
            source: EvidenceSource::Probe,
            boot: 0,
            time: Some(now_rfc3339()),
            text: text.clone(),
        }],
        reason: format!("the Kubernetes API: {text}"),
        rule: Rule::Api,
        settle_ms: None,
        decided_at: Some(now_rfc3339()),
        death: None,
    }
}

/// One answer: the node's Ready condition on the first running apiserver node that answers,
/// with the words the evidence shows (`etcd-1: Ready=Unknown (NodeStatusUnknown), asked on
/// cp-1`); `None` when no such node answered.
async fn ask(c: &Cluster, node: &str) -> Option<(Observed, String)> {
    let facts = c.plan.distro.facts();
    let mut cmd: Vec<String> = facts.kubectl.iter().map(|s| s.to_string()).collect();
    cmd.extend(
        [
            "--kubeconfig",
            facts.kubeconfig_path,
            "get",
            "--raw",
            "/api/v1/nodes",
        ]
        .map(str::to_string),
    );
    let servers = (c.plan.nodes.iter())
        .filter(|n| matches!(n.role, Role::ControlPlane | Role::All) && !c.is_stopped(&n.name))
        .filter(|n| {
            c.current(&n.name)
                .is_some_and(|h| h.with(|b| b.ready.is_some() && b.end.is_none()))
        });
    for server in servers {
        let Ok((0, out)) = c.docker.exec(c.container(&server.name), &cmd).await else {
            continue;
        };
        let Ok(list) = serde_json::from_str::<serde_json::Value>(&out) else {
            continue;
        };
        return Some(read(&list, node, &server.name));
    }
    None
}

/// `node`'s Ready condition in a NodeList: `up` when `True`; `down` when `False`, `Unknown` or
/// when the list lacks the node (deleted, or never registered with this apiserver).
fn read(list: &serde_json::Value, node: &str, on: &str) -> (Observed, String) {
    let items = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(item) = items.iter().find(|i| i["metadata"]["name"] == node) else {
        return (
            Observed::Down,
            format!("{node} is not in the node list, asked on {on}"),
        );
    };
    let conditions = item["status"]["conditions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let ready = conditions.iter().find(|c| c["type"] == "Ready");
    let status = ready
        .and_then(|c| c["status"].as_str())
        .unwrap_or("Unknown");
    let reason = ready
        .and_then(|c| c["reason"].as_str())
        .unwrap_or("no Ready condition");
    let observed = if status == "True" {
        Observed::Up
    } else {
        Observed::Down
    };
    (
        observed,
        format!("{node}: Ready={status} ({reason}), asked on {on}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_unknown_false_and_absent_nodes() {
        let list = serde_json::json!({"items": [
            {"metadata": {"name": "cp-1"}, "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
            {"metadata": {"name": "etcd-1"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}},
            {"metadata": {"name": "etcd-2"}, "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]}}
        ]});
        assert_eq!(read(&list, "cp-1", "cp-1").0, Observed::Up);
        let (o, text) = read(&list, "etcd-1", "cp-1");
        assert_eq!(
            (o, text.as_str()),
            (
                Observed::Down,
                "etcd-1: Ready=Unknown (NodeStatusUnknown), asked on cp-1"
            )
        );
        assert_eq!(read(&list, "etcd-2", "cp-1").0, Observed::Down);
        let (o, text) = read(&list, "etcd-3", "cp-1");
        assert_eq!(
            (o, text.as_str()),
            (
                Observed::Down,
                "etcd-3 is not in the node list, asked on cp-1"
            )
        );
    }
}
