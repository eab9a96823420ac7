//! The rules k3s follows when a server starts: which datastore path it takes,
//! whether it checks its critical configuration against the server it joins,
//! and where its agent reads `embedded-registry`/`supervisor-metrics` from.
//!
//! Pure functions, so the bug's mechanics are unit-tested without Docker.
//! Sources: `pkg/cluster/bootstrap.go` (`shouldBootstrapLoad`, `bootstrap`,
//! `compareConfig`), `pkg/cli/server/server.go` (agent bootstrap URL), and
//! `pkg/daemons/config/types.go` (`CriticalControlArgs`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::config::ServerConfig;
use crate::version::{Changes, Version};

/// How the node gets its datastore this boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datastore {
    /// No `cluster-init`, no `server:`, no etcd data: kine on sqlite.
    Sqlite,
    /// `cluster-init` and no etcd data yet: a new etcd cluster.
    EtcdInit,
    /// `server:` and no etcd data yet: join the etcd cluster.
    EtcdJoin,
    /// Etcd data on disk: restart as an existing member.
    EtcdExisting,
    /// `disable-etcd`: no local etcd, proxy to the joined server's.
    EtcdProxy,
}

pub fn datastore(cfg: &ServerConfig, has_etcd_data: bool) -> Datastore {
    if cfg.disable_etcd {
        Datastore::EtcdProxy
    } else if has_etcd_data {
        Datastore::EtcdExisting
    } else if cfg.server_url.is_some() {
        Datastore::EtcdJoin
    } else if cfg.cluster_init {
        Datastore::EtcdInit
    } else {
        Datastore::Sqlite
    }
}

/// `compareConfig` runs only when the node bootstraps: a brand-new joiner
/// (once) and a control-plane-only node (every start, it never has etcd
/// data). An etcd member with data on disk skips it on every restart.
pub fn runs_critical_config_check(store: Datastore) -> bool {
    matches!(store, Datastore::EtcdJoin | Datastore::EtcdProxy)
}

/// How the agent reaches a supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proxy {
    /// `DisableLoadBalancer`: straight to the bootstrap URL (nodes with an apiserver).
    Direct,
    /// The local load balancer; `reset` first forgets its saved servers.
    LoadBalancer { reset: bool },
}

/// Where the agent inside `k3s server` bootstraps from, and through what
/// (`pkg/cli/server/server.go`, the `DisableAPIServer` block).
///
/// - A node with an apiserver: its own supervisor, no load balancer.
/// - An etcd-only node: the load balancer (`DisableLoadBalancer` is
///   `!DisableAPIServer`), defaulting to its own supervisor — except, before
///   the fix (k3s #12753), a joiner with `server:`: "bootstrap the agent off
///   the existing supervisor", so the default is the joined node and the
///   servers saved by earlier boots come first. The init node resets the
///   saved servers on every start (`ResetLoadBalancer`).
pub fn agent_bootstrap(cfg: &ServerConfig, version: &Version) -> (String, Proxy) {
    let local = format!("https://127.0.0.1:{}", cfg.https_port);
    if !cfg.disable_apiserver {
        return (local, Proxy::Direct);
    }
    match &cfg.server_url {
        Some(url) if !version.has_etcd_only_bootstrap_fix() => {
            (url.clone(), Proxy::LoadBalancer { reset: false })
        }
        Some(_) => (local, Proxy::LoadBalancer { reset: false }),
        None => (local, Proxy::LoadBalancer { reset: true }),
    }
}

/// What the agent turns on, from the config it was handed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentFeatures {
    pub embedded_registry: bool,
    pub supervisor_metrics: bool,
}

/// The agent code of `version` only knows the features `version` has,
/// whatever the served config says.
pub fn agent_features(served: &CriticalArgs, version: &Version) -> AgentFeatures {
    AgentFeatures {
        embedded_registry: version.has_embedded_registry()
            && served.embedded_registry == Some(true),
        supervisor_metrics: version.has_supervisor_metrics()
            && served.supervisor_metrics == Some(true),
    }
}

/// An IP network as `net.ParseCIDR` returns it (host bits cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub ip: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let bad = || format!("invalid CIDR address: {text}");
        let (ip, prefix) = text.trim().split_once('/').ok_or_else(bad)?;
        let ip: IpAddr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let ip = match ip {
            IpAddr::V4(v4) if prefix <= 32 => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4((u32::from(v4) & mask).into())
            }
            IpAddr::V6(v6) if prefix <= 128 => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
            _ => return Err(bad()),
        };
        Ok(Cidr { ip, prefix })
    }

    /// `utilsnet.GetIndexedIP`: the network address plus `index`.
    pub fn indexed_ip(&self, index: u32) -> IpAddr {
        match self.ip {
            IpAddr::V4(v4) => IpAddr::V4(u32::from(v4).wrapping_add(index).into()),
            IpAddr::V6(v6) => IpAddr::V6(u128::from(v6).wrapping_add(u128::from(index)).into()),
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

/// The values every server of a cluster must share (`CriticalControlArgs`),
/// already resolved to k3s's effective values (defaults, derived DNS IP).
/// `None` means the imitated release does not have that field at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CriticalArgs {
    pub cluster_dns: Vec<IpAddr>,
    pub cluster_cidr: Vec<Cidr>,
    pub cluster_domain: String,
    pub disable_ccm: bool,
    pub disable_helm_controller: bool,
    pub disable_npc: bool,
    pub disable_servicelb: bool,
    pub secrets_encryption: bool,
    pub encrypt_provider: Option<String>,
    pub embedded_registry: Option<bool>,
    pub flannel_backend: String,
    pub flannel_ipv6_masq: bool,
    pub flannel_ip_masq_disable_random_fully: Option<bool>,
    pub flannel_external_ip: bool,
    pub egress_selector_mode: String,
    pub service_cidr: Vec<Cidr>,
    pub supervisor_metrics: Option<bool>,
}

fn parse_cidrs(flag: &str, items: &[String], default: &str) -> Result<Vec<Cidr>, String> {
    let defaults = [default.to_string()];
    let items = if items.is_empty() {
        &defaults[..]
    } else {
        items
    };
    items
        .iter()
        .map(|c| Cidr::parse(c).map_err(|e| format!("invalid {flag} {c}: {e}")))
        .collect()
}

impl CriticalArgs {
    /// k3s's effective values for `cfg` (`pkg/cli/server/server.go`).
    pub fn from_config(cfg: &ServerConfig) -> Result<CriticalArgs, String> {
        let cluster_cidr = parse_cidrs("cluster-cidr", &cfg.cluster_cidr, "10.42.0.0/16")?;
        let service_cidr = parse_cidrs("service-cidr", &cfg.service_cidr, "10.43.0.0/16")?;
        let cluster_dns = if cfg.cluster_dns.is_empty() {
            // First address + 10 of each service CIDR.
            service_cidr.iter().map(|c| c.indexed_ip(10)).collect()
        } else {
            cfg.cluster_dns
                .iter()
                .map(|ip| {
                    ip.parse::<IpAddr>()
                        .map_err(|_| format!("invalid cluster-dns address {ip}"))
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(CriticalArgs {
            cluster_dns,
            cluster_cidr,
            cluster_domain: cfg.cluster_domain.clone(),
            disable_ccm: cfg.disable_cloud_controller,
            disable_helm_controller: cfg.disable_helm_controller,
            disable_npc: cfg.disable_network_policy,
            disable_servicelb: cfg.disables("servicelb"),
            secrets_encryption: cfg.secrets_encryption,
            encrypt_provider: cfg.secrets_encryption_provider.clone(),
            embedded_registry: cfg.embedded_registry,
            flannel_backend: cfg.flannel_backend.clone(),
            flannel_ipv6_masq: cfg.flannel_ipv6_masq,
            flannel_ip_masq_disable_random_fully: cfg.flannel_ip_masq_disable_random_fully,
            flannel_external_ip: cfg.flannel_external_ip,
            egress_selector_mode: cfg.egress_selector_mode.clone(),
            service_cidr,
            supervisor_metrics: cfg.supervisor_metrics,
        })
    }

    pub fn to_wire(&self, extra: WireExtra) -> Wire {
        Wire {
            cluster_dnss: self.cluster_dns.iter().map(|ip| ip.to_string()).collect(),
            cluster_ip_ranges: self.cluster_cidr.iter().map(|c| c.to_string()).collect(),
            cluster_dns: self.cluster_dns.first().map(|ip| ip.to_string()),
            cluster_domain: self.cluster_domain.clone(),
            cluster_ip_range: self.cluster_cidr.first().map(|c| c.to_string()),
            disable_ccm: self.disable_ccm,
            disable_helm_controller: self.disable_helm_controller,
            disable_npc: self.disable_npc,
            disable_service_lb: self.disable_servicelb,
            encrypt_secrets: self.secrets_encryption,
            encrypt_provider: self.encrypt_provider.clone(),
            embedded_registry: self.embedded_registry,
            flannel_backend: self.flannel_backend.clone(),
            flannel_ipv6_masq: self.flannel_ipv6_masq,
            flannel_ip_masq_disable_random_fully: self.flannel_ip_masq_disable_random_fully,
            flannel_external_ip: self.flannel_external_ip,
            egress_selector_mode: self.egress_selector_mode.clone(),
            service_ip_range: self.service_cidr.first().map(|c| c.to_string()),
            service_ip_ranges: self.service_cidr.iter().map(|c| c.to_string()).collect(),
            supervisor_metrics: self.supervisor_metrics,
            extra,
        }
    }

    /// Reads what another server served. A field the other side did not send
    /// decodes to its zero value, as Go's `json.Unmarshal` leaves it.
    pub fn from_wire(wire: &Wire) -> CriticalArgs {
        let ips = |items: &[String]| items.iter().filter_map(|s| s.parse().ok()).collect();
        let cidrs = |items: &[String]| items.iter().filter_map(|s| Cidr::parse(s).ok()).collect();
        CriticalArgs {
            cluster_dns: ips(&wire.cluster_dnss),
            cluster_cidr: cidrs(&wire.cluster_ip_ranges),
            cluster_domain: wire.cluster_domain.clone(),
            disable_ccm: wire.disable_ccm,
            disable_helm_controller: wire.disable_helm_controller,
            disable_npc: wire.disable_npc,
            disable_servicelb: wire.disable_service_lb,
            secrets_encryption: wire.encrypt_secrets,
            encrypt_provider: Some(wire.encrypt_provider.clone().unwrap_or_default()),
            embedded_registry: Some(wire.embedded_registry.unwrap_or(false)),
            flannel_backend: wire.flannel_backend.clone(),
            flannel_ipv6_masq: wire.flannel_ipv6_masq,
            // Absent stays absent; the comparison counts it as false.
            flannel_ip_masq_disable_random_fully: wire.flannel_ip_masq_disable_random_fully,
            flannel_external_ip: wire.flannel_external_ip,
            egress_selector_mode: wire.egress_selector_mode.clone(),
            service_cidr: cidrs(&wire.service_ip_ranges),
            supervisor_metrics: Some(wire.supervisor_metrics.unwrap_or(false)),
        }
    }
}

/// Non-critical fields of the served config that help a human reading it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireExtra {
    #[serde(rename = "ServerNodeName", default)]
    pub server_node_name: String,
    #[serde(rename = "DisableAPIServer", default)]
    pub disable_apiserver: bool,
    #[serde(rename = "DisableETCD", default)]
    pub disable_etcd: bool,
    #[serde(rename = "DisableControllerManager", default)]
    pub disable_controller_manager: bool,
    #[serde(rename = "DisableScheduler", default)]
    pub disable_scheduler: bool,
    #[serde(rename = "ClusterInit", default)]
    pub cluster_init: bool,
    #[serde(rename = "ReproSim", default)]
    pub repro_sim: String,
}

/// `/v1-k3s/config` as the stand-in serves it: the Go field names of
/// `config.Control`'s embedded `CriticalControlArgs`, IPs and CIDRs as text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wire {
    #[serde(rename = "ClusterDNSs", default)]
    pub cluster_dnss: Vec<String>,
    #[serde(rename = "ClusterIPRanges", default)]
    pub cluster_ip_ranges: Vec<String>,
    #[serde(rename = "ClusterDNS", default)]
    pub cluster_dns: Option<String>,
    #[serde(rename = "ClusterDomain", default)]
    pub cluster_domain: String,
    #[serde(rename = "ClusterIPRange", default)]
    pub cluster_ip_range: Option<String>,
    #[serde(rename = "DisableCCM", default)]
    pub disable_ccm: bool,
    #[serde(rename = "DisableHelmController", default)]
    pub disable_helm_controller: bool,
    #[serde(rename = "DisableNPC", default)]
    pub disable_npc: bool,
    #[serde(rename = "DisableServiceLB", default)]
    pub disable_service_lb: bool,
    #[serde(rename = "EncryptSecrets", default)]
    pub encrypt_secrets: bool,
    #[serde(
        rename = "EncryptProvider",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub encrypt_provider: Option<String>,
    #[serde(
        rename = "EmbeddedRegistry",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub embedded_registry: Option<bool>,
    #[serde(rename = "FlannelBackend", default)]
    pub flannel_backend: String,
    #[serde(rename = "FlannelIPv6Masq", default)]
    pub flannel_ipv6_masq: bool,
    #[serde(
        rename = "FlannelIPMasqDisableRandomFully",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub flannel_ip_masq_disable_random_fully: Option<bool>,
    #[serde(rename = "FlannelExternalIP", default)]
    pub flannel_external_ip: bool,
    #[serde(rename = "EgressSelectorMode", default)]
    pub egress_selector_mode: String,
    #[serde(rename = "ServiceIPRange", default)]
    pub service_ip_range: Option<String>,
    #[serde(rename = "ServiceIPRanges", default)]
    pub service_ip_ranges: Vec<String>,
    #[serde(
        rename = "SupervisorMetrics",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub supervisor_metrics: Option<bool>,
    #[serde(flatten)]
    pub extra: WireExtra,
}

/// go-test/deep stops after this many differences.
const MAX_DIFF: usize = 10;

/// The names `compareConfig` logs, in `CriticalControlArgs` field order: the
/// `cli` tag when deep's diff path is a plain field name, else the path
/// itself (which is what k3s prints for slice elements and IPNet parts).
pub fn mismatches(local: &CriticalArgs, remote: &CriticalArgs) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut note = |name: String| out.push(name);

    // ClusterDNSs []net.IP: elements compare with IP.Equal.
    for i in differing_indexes(&local.cluster_dns, &remote.cluster_dns) {
        note(format!("ClusterDNSs.slice[{i}]"));
    }
    // ClusterIPRanges []*net.IPNet: IP via Equal, Mask byte-wise.
    cidr_slice_diffs(
        "ClusterIPRanges",
        &local.cluster_cidr,
        &remote.cluster_cidr,
        &mut note,
    );
    if local.cluster_dns.first() != remote.cluster_dns.first() {
        note("cluster-dns".into());
    }
    if local.cluster_domain != remote.cluster_domain {
        note("cluster-domain".into());
    }
    cidr_diffs(
        "ClusterIPRange",
        local.cluster_cidr.first(),
        remote.cluster_cidr.first(),
        &mut note,
    );
    let bools = [
        (
            local.disable_ccm,
            remote.disable_ccm,
            "disable-cloud-controller",
        ),
        (
            local.disable_helm_controller,
            remote.disable_helm_controller,
            "disable-helm-controller",
        ),
        (
            local.disable_npc,
            remote.disable_npc,
            "disable-network-policy",
        ),
        (
            local.disable_servicelb,
            remote.disable_servicelb,
            "disable-service-lb",
        ),
        (
            local.secrets_encryption,
            remote.secrets_encryption,
            "secrets-encryption",
        ),
    ];
    for (a, b, name) in bools {
        if a != b {
            note(name.into());
        }
    }
    // Fields a release does not have are not compared; a remote that did not
    // send one decodes to the zero value, as Go's json.Unmarshal leaves it.
    if let Some(mine) = &local.encrypt_provider {
        if mine.as_str() != remote.encrypt_provider.as_deref().unwrap_or_default() {
            note("secrets-encryption-provider".into());
        }
    }
    if let Some(mine) = local.embedded_registry {
        if Some(mine) != remote.embedded_registry.or(Some(false)) {
            note("embedded-registry".into());
        }
    }
    if local.flannel_backend != remote.flannel_backend {
        note("flannel-backend".into());
    }
    if local.flannel_ipv6_masq != remote.flannel_ipv6_masq {
        note("flannel-ipv6-masq".into());
    }
    if let Some(mine) = local.flannel_ip_masq_disable_random_fully {
        if Some(mine) != remote.flannel_ip_masq_disable_random_fully.or(Some(false)) {
            note("flannel-ip-masq-disable-random-fully".into());
        }
    }
    if local.flannel_external_ip != remote.flannel_external_ip {
        note("flannel-external-ip".into());
    }
    // A down-level server that sent no egress mode is given the local one.
    if !remote.egress_selector_mode.is_empty()
        && local.egress_selector_mode != remote.egress_selector_mode
    {
        note("egress-selector-mode".into());
    }
    cidr_diffs(
        "ServiceIPRange",
        local.service_cidr.first(),
        remote.service_cidr.first(),
        &mut note,
    );
    cidr_slice_diffs(
        "ServiceIPRanges",
        &local.service_cidr,
        &remote.service_cidr,
        &mut note,
    );
    if let Some(mine) = local.supervisor_metrics {
        if Some(mine) != remote.supervisor_metrics.or(Some(false)) {
            note("supervisor-metrics".into());
        }
    }
    out.truncate(MAX_DIFF);
    out
}

fn differing_indexes<T: PartialEq>(a: &[T], b: &[T]) -> Vec<usize> {
    (0..a.len().max(b.len()))
        .filter(|&i| a.get(i) != b.get(i))
        .collect()
}

fn mask_bytes(c: &Cidr) -> Vec<u8> {
    let (len, bits) = match c.ip {
        IpAddr::V4(_) => (4usize, u32::from(c.prefix)),
        IpAddr::V6(_) => (16usize, u32::from(c.prefix)),
    };
    (0..len)
        .map(|i| {
            let start = (i as u32) * 8;
            let on = bits.saturating_sub(start).min(8);
            (0xffu16 << (8 - on)) as u8
        })
        .collect()
}

fn cidr_diffs(path: &str, a: Option<&Cidr>, b: Option<&Cidr>, note: &mut impl FnMut(String)) {
    match (a, b) {
        (Some(a), Some(b)) => {
            if a.ip != b.ip {
                note(format!("{path}.IP"));
            }
            for i in differing_indexes(&mask_bytes(a), &mask_bytes(b)) {
                note(format!("{path}.Mask.slice[{i}]"));
            }
        }
        (None, None) => {}
        _ => note(path.to_string()),
    }
}

fn cidr_slice_diffs(path: &str, a: &[Cidr], b: &[Cidr], note: &mut impl FnMut(String)) {
    for i in 0..a.len().max(b.len()) {
        let elem = format!("{path}.slice[{i}]");
        match (a.get(i), b.get(i)) {
            (Some(_), Some(_)) => cidr_diffs(&elem, a.get(i), b.get(i), note),
            (None, None) => {}
            _ => note(elem),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, ConfigFile, Inputs};

    fn v(text: &str) -> Version {
        crate::version::parse(text).expect("valid version")
    }

    fn cfg(yaml: &str, version: &str) -> ServerConfig {
        let files = [ConfigFile {
            text: yaml.to_string(),
        }];
        let version = v(version);
        load(&Inputs {
            cli_args: &[],
            files: &files,
            env: &|_| None,
            version: &version,
            command: distro::FlagCommand::Server,
        })
        .expect("loads")
        .0
    }

    const ETCD_JOINER: &str = "server: https://etcd-1:6443\ntoken: t\ndisable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n";
    const ETCD_INIT: &str = "cluster-init: true\ntoken: t\ndisable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n";
    const CP_ONLY: &str = "server: https://etcd-1:6443\ntoken: t\ndisable-etcd: true\n";

    #[test]
    fn datastore_paths() {
        let joiner = cfg(ETCD_JOINER, "v1.33.4+k3s1");
        assert_eq!(datastore(&joiner, false), Datastore::EtcdJoin);
        assert_eq!(datastore(&joiner, true), Datastore::EtcdExisting);
        let init = cfg(ETCD_INIT, "v1.33.4+k3s1");
        assert_eq!(datastore(&init, false), Datastore::EtcdInit);
        assert_eq!(datastore(&init, true), Datastore::EtcdExisting);
        let cp = cfg(CP_ONLY, "v1.33.4+k3s1");
        assert_eq!(datastore(&cp, false), Datastore::EtcdProxy);
        assert_eq!(
            datastore(&cfg("token: t\n", "v1.33.4+k3s1"), false),
            Datastore::Sqlite
        );
    }

    #[test]
    fn critical_check_runs_for_new_joiners_and_every_cp_only_start() {
        let joiner = cfg(ETCD_JOINER, "v1.33.4+k3s1");
        assert!(runs_critical_config_check(datastore(&joiner, false)));
        assert!(!runs_critical_config_check(datastore(&joiner, true)));
        let cp = cfg(CP_ONLY, "v1.33.4+k3s1");
        assert!(runs_critical_config_check(datastore(&cp, false)));
        let init = cfg(ETCD_INIT, "v1.33.4+k3s1");
        assert!(!runs_critical_config_check(datastore(&init, false)));
        assert!(!runs_critical_config_check(datastore(&init, true)));
    }

    #[test]
    fn buggy_etcd_only_joiner_bootstraps_off_the_joined_node() {
        let lb = Proxy::LoadBalancer { reset: false };
        for (version, buggy) in [
            ("v1.30.14+k3s1", true),
            ("v1.31.12+k3s1", true),
            ("v1.31.13+k3s1", false),
            ("v1.32.8+k3s1", true),
            ("v1.32.9+k3s1", false),
            ("v1.33.4+k3s1", true),
            ("v1.33.5+k3s1", false),
            ("v1.34.1+k3s1", false),
        ] {
            let joiner = cfg(ETCD_JOINER, version);
            let expected = if buggy {
                ("https://etcd-1:6443".to_string(), lb)
            } else {
                ("https://127.0.0.1:6443".to_string(), lb)
            };
            assert_eq!(agent_bootstrap(&joiner, &v(version)), expected, "{version}");
            // The init node uses its own supervisor and forgets saved servers;
            // nodes with an apiserver need no load balancer.
            assert_eq!(
                agent_bootstrap(&cfg(ETCD_INIT, version), &v(version)),
                (
                    "https://127.0.0.1:6443".to_string(),
                    Proxy::LoadBalancer { reset: true }
                )
            );
            assert_eq!(
                agent_bootstrap(&cfg(CP_ONLY, version), &v(version)),
                ("https://127.0.0.1:6443".to_string(), Proxy::Direct)
            );
        }
    }

    #[test]
    fn features_need_the_release_to_have_them() {
        let mut served = CriticalArgs::from_config(&cfg(ETCD_INIT, "v1.33.4+k3s1")).expect("args");
        served.embedded_registry = Some(true);
        served.supervisor_metrics = Some(true);
        let f = agent_features(&served, &v("v1.29.1+k3s2"));
        assert!(f.embedded_registry);
        assert!(!f.supervisor_metrics);
        let f = agent_features(&served, &v("v1.26.12+k3s1"));
        assert_eq!(f, AgentFeatures::default());
    }

    #[test]
    fn mismatch_names_follow_k3s() {
        let version = "v1.33.4+k3s1";
        let etcd1 = CriticalArgs::from_config(&cfg(ETCD_INIT, version)).expect("args");
        let cp = CriticalArgs::from_config(&cfg(
            &format!("{CP_ONLY}supervisor-metrics: true\nembedded-registry: true\n"),
            version,
        ))
        .expect("args");
        assert_eq!(
            mismatches(&cp, &etcd1),
            vec!["embedded-registry", "supervisor-metrics"]
        );
        assert!(mismatches(&etcd1, &etcd1).is_empty());

        let other = CriticalArgs::from_config(&cfg(
            &format!("{CP_ONLY}cluster-cidr: 10.44.0.0/16\nsecrets-encryption: true\ncluster-dns: 10.43.0.11\n"),
            version,
        ))
        .expect("args");
        assert_eq!(
            mismatches(&other, &etcd1),
            vec![
                "ClusterDNSs.slice[0]",
                "ClusterIPRanges.slice[0].IP",
                "cluster-dns",
                "ClusterIPRange.IP",
                "secrets-encryption",
            ]
        );
    }

    #[test]
    fn every_critical_arg_of_the_release_is_compared_in_field_order() {
        let version = "v1.33.4+k3s1";
        let etcd1 = CriticalArgs::from_config(&cfg(ETCD_INIT, version)).expect("args");
        let cp = CriticalArgs::from_config(&cfg(
            &format!("{CP_ONLY}flannel-external-ip: true\nflannel-ipv6-masq: true\nsecrets-encryption-provider: secretbox\nsupervisor-metrics: true\n"),
            version,
        ))
        .expect("args");
        assert_eq!(
            mismatches(&cp, &etcd1),
            vec![
                "secrets-encryption-provider",
                "flannel-ipv6-masq",
                "flannel-external-ip",
                "supervisor-metrics"
            ]
        );
        // A release without EncryptProvider neither has the key nor compares it.
        let old = CriticalArgs::from_config(&cfg(ETCD_INIT, "v1.32.3+k3s1")).expect("args");
        assert_eq!(old.encrypt_provider, None);
        assert!(mismatches(&old, &etcd1).is_empty());
        // ... while a newer server compares it against the old one's zero value.
        assert_eq!(
            mismatches(
                &etcd1,
                &CriticalArgs::from_wire(&old.to_wire(WireExtra::default()))
            ),
            vec!["secrets-encryption-provider"]
        );
    }

    #[test]
    fn down_level_remote_without_the_field_counts_as_false() {
        let version = "v1.33.4+k3s1";
        let local = CriticalArgs::from_config(&cfg(
            &format!("{CP_ONLY}supervisor-metrics: true\n"),
            version,
        ))
        .expect("args");
        let mut wire = CriticalArgs::from_config(&cfg(ETCD_INIT, version))
            .expect("args")
            .to_wire(WireExtra::default());
        wire.supervisor_metrics = None;
        let json = serde_json::to_string(&wire).expect("json");
        assert!(!json.contains("SupervisorMetrics"));
        let remote = CriticalArgs::from_wire(&serde_json::from_str(&json).expect("wire"));
        assert_eq!(mismatches(&local, &remote), vec!["supervisor-metrics"]);
    }

    #[test]
    fn wire_round_trip_keeps_values() {
        let args = CriticalArgs::from_config(&cfg(
            &format!("{ETCD_JOINER}embedded-registry: true\nservice-cidr: 10.96.0.0/12\ndisable: [servicelb]\n"),
            "v1.33.4+k3s1",
        ))
        .expect("args");
        assert_eq!(
            args.cluster_dns,
            vec!["10.96.0.10".parse::<IpAddr>().expect("ip")]
        );
        let json = serde_json::to_string(&args.to_wire(WireExtra::default())).expect("json");
        let back = CriticalArgs::from_wire(&serde_json::from_str(&json).expect("wire"));
        assert_eq!(back, args);
    }

    #[test]
    fn cidrs_are_normalised_and_validated() {
        assert_eq!(
            Cidr::parse("10.42.1.7/16").expect("cidr").to_string(),
            "10.42.0.0/16"
        );
        assert_eq!(
            Cidr::parse("fd00:42::1/56").expect("cidr").to_string(),
            "fd00:42::/56"
        );
        assert!(Cidr::parse("10.42.0.0/33").is_err());
        assert!(Cidr::parse("10.42.0.0").is_err());
        let bad = cfg("cluster-cidr: nonsense\n", "v1.33.4+k3s1");
        assert!(CriticalArgs::from_config(&bad).is_err());
    }
}
