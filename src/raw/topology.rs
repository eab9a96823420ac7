//! `topologies/*.yaml`: the nodes of a cluster, their roles, who joins whom, per-node config.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{ConfigValue, SpannedMap};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct TopologyFile {
    pub(crate) name: Spanned<String>,
    #[serde(default)]
    pub(crate) description: String,
    /// Where this topology comes from (an issue URL): for its readers; repro checks that it is
    /// text and uses it nowhere.
    #[serde(default, rename = "source")]
    pub(crate) _source: Option<String>,
    /// The distribution the nodes run (`k3s`); when left out, the one `version:` names
    /// (`+k3sN`).
    #[serde(default)]
    pub(crate) distribution: Option<Spanned<String>>,
    /// Default version when the user gives none (`k3s-version:`, the older spelling, is the
    /// same key).
    #[serde(alias = "k3s-version")]
    pub(crate) version: Spanned<String>,
    /// Config keys written on every node (a node's own `config` wins).
    #[serde(default)]
    pub(crate) config: SpannedMap<ConfigValue>,
    /// Files written on every node before its first start (path -> content).
    #[serde(default)]
    pub(crate) files: SpannedMap<String>,
    pub(crate) nodes: Spanned<Vec<NodeFile>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct NodeFile {
    pub(crate) name: Spanned<String>,
    pub(crate) role: Spanned<Role>,
    /// The node that creates the cluster (`cluster-init: true`).
    #[serde(default)]
    pub(crate) init: Option<Spanned<bool>>,
    /// The node whose supervisor this one joins (`server: https://<node>:6443`).
    #[serde(default)]
    pub(crate) join: Option<Spanned<String>>,
    /// Not started with the cluster; a step starts it later (e.g. a brand-new joiner).
    #[serde(default)]
    pub(crate) deferred: bool,
    #[serde(default)]
    pub(crate) config: SpannedMap<ConfigValue>,
    #[serde(default)]
    pub(crate) files: SpannedMap<String>,
    /// Extra container environment (never the token: repro sets `K3S_TOKEN` itself).
    #[serde(default)]
    pub(crate) env: IndexMap<Spanned<String>, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Role {
    /// etcd-only server: `disable-apiserver`, `disable-controller-manager`, `disable-scheduler`.
    Etcd,
    /// control-plane-only server: `disable-etcd`, must join an etcd node.
    ControlPlane,
    /// a server with every component.
    All,
    /// an agent (worker); runs no supervisor.
    Agent,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Etcd => "etcd",
            Role::ControlPlane => "control-plane",
            Role::All => "all",
            Role::Agent => "agent",
        }
    }

    /// Whether the node runs etcd (and so can create or anchor a cluster).
    pub(crate) fn runs_etcd(self) -> bool {
        matches!(self, Role::Etcd | Role::All)
    }

    /// Whether the node runs an apiserver (control-plane or all).
    pub(crate) fn runs_apiserver(self) -> bool {
        matches!(self, Role::ControlPlane | Role::All)
    }

    /// Whether the node runs a k3s supervisor that others can join.
    pub(crate) fn is_server(self) -> bool {
        !matches!(self, Role::Agent)
    }

    /// The config keys the role stands for on `distro` (its facts' role keys).
    pub(crate) fn config_keys(self, distro: distro::Distro) -> &'static [&'static str] {
        let keys = &distro.facts().role_keys;
        match self {
            Role::Etcd => keys.etcd_only,
            Role::ControlPlane => keys.control_plane_only,
            Role::All | Role::Agent => &[],
        }
    }
}
