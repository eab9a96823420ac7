//! The plan of a run, computed without Docker: image, start order, each node's rendered files at
//! every step, restarts and expectations. `repro plan` prints it; `repro run` executes it.

use indexmap::IndexMap;
use serde::Serialize;

use crate::model::{ConfigValue, Role};
use crate::scenario::{Expectations, Scenario};
use crate::version::K3sVersion;

pub const CONFIG_PATH: &str = "/etc/rancher/k3s/config.yaml";
pub const SUPERVISOR_PORT: u16 = 6443;

/// path -> content, or `None` for a file to delete.
pub type NodeFiles = IndexMap<String, Option<String>>;

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub check: String,
    pub issue: String,
    pub topology: String,
    pub k3s_version: K3sVersion,
    pub image: String,
    pub nodes: Vec<PlannedNode>,
    /// Groups started in order; the nodes of one group start at once.
    pub start_order: Vec<Vec<String>>,
    /// Every node's files before its first start.
    pub initial: IndexMap<String, NodeFiles>,
    pub steps: Vec<PlannedStep>,
    /// Things a reviewer should know before trusting a verdict (e.g. a feature this version lacks).
    pub notes: Vec<String>,
    /// Whether this version is expected to show the bug (from the check's `fixed-in`).
    pub expected_verdict: Option<ExpectedVerdict>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedVerdict {
    Fixed,
    Reproduced,
}

impl ExpectedVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectedVerdict::Fixed => "fixed",
            ExpectedVerdict::Reproduced => "reproduced",
        }
    }
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct PlannedNode {
    pub name: String,
    pub role: Role,
    pub init: bool,
    pub join: Option<String>,
    pub deferred: bool,
    /// Extra container env from the topology (the token is added at run time, never planned).
    pub env: IndexMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedStep {
    pub index: usize,
    pub name: String,
    pub why: String,
    /// Files written (or deleted) on each edited node in this step, config.yaml re-rendered.
    pub edits: IndexMap<String, NodeFiles>,
    pub start: Vec<String>,
    pub restart: Vec<Vec<String>>,
    pub expect: Expectations,
    pub bug: Expectations,
    /// Every node's full config.yaml as of the end of this step.
    pub configs: IndexMap<String, String>,
}

/// The image for a version: real k3s unless told otherwise.
pub fn k3s_image(v: &K3sVersion) -> String {
    format!("rancher/k3s:{}", v.image_tag())
}

pub fn plan(sc: &Scenario, version: &K3sVersion, image: &str) -> Plan {
    let topo = &sc.topology;
    let nodes: Vec<PlannedNode> = topo
        .nodes
        .iter()
        .map(|n| PlannedNode {
            name: n.name.clone(),
            role: n.role,
            init: n.init,
            join: n.join.clone(),
            deferred: n.deferred,
            env: n.env.clone(),
        })
        .collect();

    // User keys per node: topology-wide, then the node's own, then step edits.
    let mut keys: IndexMap<String, IndexMap<String, ConfigValue>> = topo
        .nodes
        .iter()
        .map(|n| {
            let mut m = topo.config.clone();
            m.extend(n.config.clone());
            (n.name.clone(), m)
        })
        .collect();

    let mut initial = IndexMap::new();
    for n in &nodes {
        let mut files = NodeFiles::new();
        files.insert(
            CONFIG_PATH.to_string(),
            Some(render_config(n, &keys[&n.name], 0)),
        );
        for (p, c) in topo
            .files
            .iter()
            .chain(&topo.node(&n.name).expect("planned from topology").files)
        {
            files.insert(p.clone(), Some(c.clone()));
        }
        initial.insert(n.name.clone(), files);
    }

    let mut steps = Vec::new();
    for (i, s) in sc.check.steps.iter().enumerate() {
        let index = i + 1;
        for (node, kv) in &s.config {
            keys[node].extend(kv.clone());
        }
        for (node, ks) in &s.remove {
            for k in ks {
                keys[node].shift_remove(k);
            }
        }
        let mut edits: IndexMap<String, NodeFiles> = IndexMap::new();
        for node in s.edited_nodes() {
            let n = nodes
                .iter()
                .find(|n| n.name == node)
                .expect("validated node");
            let mut files = NodeFiles::new();
            if s.config.contains_key(node) || s.remove.contains_key(node) {
                files.insert(
                    CONFIG_PATH.to_string(),
                    Some(render_config(n, &keys[node], index)),
                );
            }
            if let Some(fs) = s.files.get(node) {
                files.extend(fs.clone());
            }
            edits.insert(node.to_string(), files);
        }
        let configs = nodes
            .iter()
            .map(|n| (n.name.clone(), render_config(n, &keys[&n.name], index)))
            .collect();
        steps.push(PlannedStep {
            index,
            name: s.name.clone(),
            why: s.why.clone(),
            edits,
            start: s.start.clone(),
            restart: s.restart.clone(),
            expect: s.expect.clone(),
            bug: s.bug.clone(),
            configs,
        });
    }

    let mut notes = Vec::new();
    let mut used: Vec<&str> = Vec::new();
    for s in &sc.check.steps {
        for sigs in s.expect.values() {
            for sig in sigs.keys() {
                if !used.contains(&sig.as_str()) {
                    used.push(sig);
                }
            }
        }
    }
    for name in used {
        if let Some(sig) = sc.signals.get(name) {
            if !sig.exists_in(version) {
                notes.push(format!(
                    "k3s {version} has no `{name}` feature (it exists from {}); the run cannot show the bug",
                    sig.since.as_ref().map(|s| s.firsts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")).unwrap_or_default()
                ));
            }
        }
    }
    let expected_verdict =
        if sc.check.fixed_in.firsts.is_empty() || sc.check.fixed_in.contains(version) {
            Some(ExpectedVerdict::Fixed)
        } else {
            Some(ExpectedVerdict::Reproduced)
        };

    Plan {
        check: sc.check.name.clone(),
        issue: sc.check.issue.clone(),
        topology: topo.name.clone(),
        k3s_version: version.clone(),
        image: image.to_string(),
        start_order: start_order(&nodes),
        nodes,
        initial,
        steps,
        notes,
        expected_verdict,
    }
}

/// Real k3s accepts: the init node, the other etcd servers one at a time (each etcd join changes
/// membership), then control-plane-only servers together, then agents together.
pub fn start_order(nodes: &[PlannedNode]) -> Vec<Vec<String>> {
    let mut order = Vec::new();
    let live = || nodes.iter().filter(|n| !n.deferred);
    order.extend(live().filter(|n| n.init).map(|n| vec![n.name.clone()]));
    order.extend(
        live()
            .filter(|n| !n.init && n.role.runs_etcd())
            .map(|n| vec![n.name.clone()]),
    );
    let cps: Vec<String> = live()
        .filter(|n| n.role == Role::ControlPlane)
        .map(|n| n.name.clone())
        .collect();
    if !cps.is_empty() {
        order.push(cps);
    }
    let agents: Vec<String> = live()
        .filter(|n| n.role == Role::Agent)
        .map(|n| n.name.clone())
        .collect();
    if !agents.is_empty() {
        order.push(agents);
    }
    order
}

/// A node's `config.yaml`: the keys its role and place in the cluster stand for, then its own.
pub fn render_config(n: &PlannedNode, keys: &IndexMap<String, ConfigValue>, step: usize) -> String {
    let mut out = format!(
        "# config.yaml for {} (role {}), rendered by repro{}\n",
        n.name,
        n.role.as_str(),
        if step == 0 {
            " before first start".to_string()
        } else {
            format!(" at step {step}")
        }
    );
    if n.init {
        out.push_str("cluster-init: true\n");
    }
    if let Some(j) = &n.join {
        out.push_str(&format!("server: \"https://{j}:{SUPERVISOR_PORT}\"\n"));
    }
    for k in n.role.config_keys() {
        out.push_str(&format!("{k}: true\n"));
    }
    for (k, v) in keys {
        out.push_str(&format!("{k}: {}\n", v.to_yaml()));
    }
    out
}
