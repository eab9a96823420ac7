//! The lines k3s prints that show a config key's effective value on a node: the command lines
//! of the kubelet, kube-proxy and cloud-controller-manager, flannel's and the network policy
//! controller's start lines, the tunnel server's egress mode, the flannel-external-ip warnings.
//!
//! Pure text from the values a node acts on — its own config for the server's components, the
//! served config of the server its agent reached for the agent's (pkg/agent/config/config.go
//! `get()`). Which node's values those are is decided elsewhere (`bootstrap`, `agent`); here
//! only the words, taken from k3s's source (docs/k3s-behaviour.md §13 links each one).

use std::path::Path;

use crate::bootstrap::CriticalArgs;
use crate::version::{Changes, Version};

/// `FlannelBackendNone`: no flannel at all (`NoFlannel`), so no flannel line.
pub const FLANNEL_NONE: &str = "none";
const FLANNEL_WIREGUARD_NATIVE: &str = "wireguard-native";

/// kube-router's version and build, as the embedded network policy controller reports them.
/// The stand-in has no kube-router; it says so in the shape k3s prints.
const NPC_BUILD: &str =
    "v2.5.0 (repro-sim stand-in, no kube-router), built on 2025-01-01T00:00:00Z, go1.24.4";

/// What the agent of one boot acts on: the served config of the server it reached, and its own
/// node name, IP and data dir.
pub struct AgentView<'a> {
    pub served: &'a CriticalArgs,
    pub node_name: &'a str,
    pub ip: &'a str,
    pub data_dir: &'a Path,
    pub version: &'a Version,
}

fn join<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `--cloud-provider=external` and `--node-ip` unless the served config disables the
/// cloud controller (then only `--node-ip`): kubeletArgs / kubeletArgsAndConfig,
/// pkg/daemons/agent/agent_linux.go.
fn cloud_args(view: &AgentView<'_>) -> (Option<String>, String) {
    let cloud = (!view.served.disable_ccm).then(|| "--cloud-provider=external".to_string());
    (cloud, format!("--node-ip={}", view.ip))
}

/// The argument string of `Running kubelet %s` (util.GetArgs sorts the flags by name).
/// Before the kubelet config file (k3s #2116) the cluster DNS and domain are flags; from it on
/// they are in the drop-in `kubelet_defaults` writes, and the line shows `--config-dir`.
pub fn kubelet_args(view: &AgentView<'_>) -> String {
    let d = view.data_dir.display();
    let (cloud, node_ip) = cloud_args(view);
    let mut args: Vec<String> = if view.version.has_kubelet_config_file() {
        vec![
            format!("--config-dir={d}/agent/etc/kubelet.conf.d"),
            "--containerd=/run/k3s/containerd/containerd.sock".into(),
            format!("--hostname-override={}", view.node_name),
            format!("--kubeconfig={d}/agent/kubelet.kubeconfig"),
            node_ip,
            "--node-labels=".into(),
            "--read-only-port=0".into(),
        ]
    } else {
        vec![
            "--address=0.0.0.0".into(),
            "--anonymous-auth=false".into(),
            "--authentication-token-webhook=true".into(),
            "--authorization-mode=Webhook".into(),
            "--cgroup-driver=cgroupfs".into(),
            format!("--client-ca-file={d}/agent/client-ca.crt"),
            format!("--cluster-dns={}", join(&view.served.cluster_dns)),
            format!("--cluster-domain={}", view.served.cluster_domain),
            "--container-runtime-endpoint=unix:///run/k3s/containerd/containerd.sock".into(),
            "--containerd=/run/k3s/containerd/containerd.sock".into(),
            "--eviction-hard=imagefs.available<5%,nodefs.available<5%".into(),
            "--eviction-minimum-reclaim=imagefs.available=10%,nodefs.available=10%".into(),
            "--fail-swap-on=false".into(),
            "--healthz-bind-address=127.0.0.1".into(),
            format!("--hostname-override={}", view.node_name),
            format!("--kubeconfig={d}/agent/kubelet.kubeconfig"),
            node_ip,
            "--node-labels=".into(),
            format!("--pod-manifest-path={d}/agent/pod-manifests"),
            "--read-only-port=0".into(),
            "--resolv-conf=/etc/resolv.conf".into(),
            "--serialize-image-pulls=false".into(),
            format!("--tls-cert-file={d}/agent/serving-kubelet.crt"),
            format!("--tls-private-key-file={d}/agent/serving-kubelet.key"),
        ]
    };
    args.extend(cloud);
    args.sort();
    args.join(" ")
}

/// Where `kubelet_defaults` goes: `KubeletConfigDir` + `00-<version.Program>-defaults.conf`
/// (writeKubeletConfig, pkg/daemons/agent/agent.go; `00-rke2-defaults.conf` on rke2).
pub fn kubelet_defaults_path(data_dir: &Path) -> std::path::PathBuf {
    data_dir.join(format!(
        "agent/etc/kubelet.conf.d/00-{}-defaults.conf",
        crate::distro::facts().name
    ))
}

/// k3s's default KubeletConfiguration drop-in (defaultKubeletConfig, pkg/daemons/agent/agent.go),
/// as `yaml.Marshal` (sigs.k8s.io/yaml) writes it: keys sorted, list items at their key's
/// column. Written on releases with the kubelet config file, where the kubelet's command line
/// no longer shows the cluster DNS and domain; the served config's values. The fields k3s
/// sets; the zero-valued ones the marshaller adds are left out.
pub fn kubelet_defaults(view: &AgentView<'_>) -> String {
    let d = view.data_dir.display();
    let dns: String = view
        .served
        .cluster_dns
        .iter()
        .map(|ip| format!("- {ip}\n"))
        .collect();
    let healthz = if view.ip.contains(':') {
        "::1"
    } else {
        "127.0.0.1"
    };
    format!(
        "address: 0.0.0.0
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 2m0s
    enabled: true
  x509:
    clientCAFile: {d}/agent/client-ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 5m0s
    cacheUnauthorizedTTL: 30s
cgroupDriver: cgroupfs
clusterDNS:
{dns}clusterDomain: {domain}
cpuManagerReconcilePeriod: 10s
evictionHard:
  imagefs.available: 5%
  nodefs.available: 5%
evictionMinimumReclaim:
  imagefs.available: 10%
  nodefs.available: 10%
evictionPressureTransitionPeriod: 5m0s
failSwapOn: false
fileCheckFrequency: 20s
healthzBindAddress: {healthz}
httpCheckFrequency: 20s
imageMinimumGCAge: 2m0s
kind: KubeletConfiguration
logging:
  flushFrequency: 5s
  format: text
  verbosity: 0
nodeStatusReportFrequency: 5m0s
nodeStatusUpdateFrequency: 10s
resolvConf: /etc/resolv.conf
runtimeRequestTimeout: 2m0s
staticPodPath: {d}/agent/pod-manifests
streamingConnectionIdleTimeout: 4h0m0s
syncFrequency: 1m0s
tlsCertFile: {d}/agent/serving-kubelet.crt
tlsPrivateKeyFile: {d}/agent/serving-kubelet.key
volumeStatsAggPeriod: 1m0s
",
        domain = view.served.cluster_domain
    )
}

/// `Running kube-proxy %s` (kubeProxyArgs, pkg/daemons/agent/agent_linux.go): the cluster CIDRs
/// are the served config's.
pub fn kube_proxy_args(view: &AgentView<'_>) -> String {
    let d = view.data_dir.display();
    format!(
        "--cluster-cidr={} --conntrack-max-per-core=0 --conntrack-tcp-timeout-close-wait=0s --conntrack-tcp-timeout-established=0s --healthz-bind-address=127.0.0.1 --hostname-override={} --kubeconfig={d}/agent/kubeproxy.kubeconfig --proxy-mode=iptables",
        join(&view.served.cluster_cidr),
        view.node_name
    )
}

/// The warnings pkg/agent/run.go prints before containerd when the served config asks for
/// flannel's external IPs (flannel-external-ip), and only with flannel on.
pub fn flannel_external_ip_warning(
    view: &AgentView<'_>,
    node_external_ips: bool,
) -> Option<String> {
    if view.served.flannel_backend == FLANNEL_NONE || !view.served.flannel_external_ip {
        return None;
    }
    if !node_external_ips {
        Some("Server has flannel-external-ip flag set but this node does not set node-external-ip. Flannel will use internal address when connecting to this node.".into())
    } else if view.served.flannel_backend != FLANNEL_WIREGUARD_NATIVE {
        Some(format!(
            "Flannel is using external addresses with an insecure backend: {}. Please consider using an encrypting flannel backend.",
            view.served.flannel_backend
        ))
    } else {
        None
    }
}

/// The agent's network start (startNetwork, once the apiserver is reachable): flannel's
/// `Starting flannel with backend %s` (pkg/agent/flannel/setup.go) unless the served backend is
/// `none`, then the network policy controller's start line (pkg/agent/netpol/netpol.go) unless
/// the served config disables it.
pub fn network_lines(view: &AgentView<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    if view.served.flannel_backend != FLANNEL_NONE {
        lines.push(format!(
            "Starting flannel with backend {}",
            view.served.flannel_backend
        ));
    }
    if !view.served.disable_npc {
        lines.push(format!(
            "Starting network policy controller version {NPC_BUILD}"
        ));
    }
    lines
}

/// A server's own components, from its own config.
pub struct ServerView<'a> {
    pub local: &'a CriticalArgs,
    /// `--disable=servicelb`: the outer `Control.DisableServiceLB` the server acts on.
    pub disable_service_lb: bool,
    pub data_dir: &'a Path,
}

/// `Running cloud-controller-manager %s` (cloudControllerManager,
/// pkg/daemons/control/server.go), or `None`: k3s starts it unless both the cloud controller
/// and servicelb are disabled, on every server (the check is not under `!DisableAPIServer`).
/// Its `--controllers` show which of the two are off.
pub fn cloud_controller_args(view: &ServerView<'_>) -> Option<String> {
    if view.local.disable_ccm && view.disable_service_lb {
        return None;
    }
    let d = view.data_dir.display();
    let mut controllers = "*,-route".to_string();
    if view.local.disable_ccm {
        controllers.push_str(",-cloud-node,-cloud-node-lifecycle");
    }
    if view.disable_service_lb {
        controllers.push_str(",-service");
    }
    let kubeconfig = format!("{d}/server/cred/cloud-controller.kubeconfig");
    let mut args = vec![
        "--allocate-node-cidrs=true".to_string(),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--bind-address=127.0.0.1".into(),
        format!("--cloud-config={d}/server/etc/cloud-config.yaml"),
        format!("--cloud-provider={}", crate::distro::facts().name),
        format!("--cluster-cidr={}", join(&view.local.cluster_cidr)),
        "--configure-cloud-routes=false".into(),
        format!("--controllers={controllers}"),
        format!("--kubeconfig={kubeconfig}"),
        format!(
            "--leader-elect-resource-name={}-cloud-controller-manager",
            crate::distro::facts().name
        ),
        "--node-status-update-frequency=1m0s".into(),
        "--profiling=false".into(),
    ];
    if view.local.disable_ccm {
        args.push("--secure-port=0".into());
    }
    args.sort();
    Some(args.join(" "))
}

/// `Tunnel server egress proxy mode: %s` (TunnelServer.watch, pkg/daemons/control/tunnel.go):
/// a cluster controller every server starts once an apiserver is reachable.
pub fn egress_line(local: &CriticalArgs) -> String {
    format!(
        "Tunnel server egress proxy mode: {}",
        local.egress_selector_mode
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, ConfigFile, Inputs};

    fn v(text: &str) -> Version {
        crate::version::parse(text).expect("version")
    }

    fn args(yaml: &str, version: &Version) -> (CriticalArgs, crate::config::ServerConfig) {
        let files = [ConfigFile {
            text: yaml.to_string(),
        }];
        let (cfg, _) = load(&Inputs {
            cli_args: &[],
            files: &files,
            env: &|_| None,
            version,
            command: distro::FlagCommand::Server,
        })
        .expect("loads");
        (CriticalArgs::from_config(&cfg).expect("args"), cfg)
    }

    fn view<'a>(served: &'a CriticalArgs, version: &'a Version) -> AgentView<'a> {
        AgentView {
            served,
            node_name: "agent-1",
            ip: "10.0.0.9",
            data_dir: Path::new("/var/lib/rancher/k3s"),
            version,
        }
    }

    #[test]
    fn kubelet_line_shows_dns_and_domain_only_before_the_config_file() {
        let old = v("v1.31.12+k3s1");
        let (served, _) = args(
            "cluster-dns: 10.43.0.53\ncluster-domain: example.internal\n",
            &old,
        );
        let line = kubelet_args(&view(&served, &old));
        assert!(
            line.contains(" --cluster-dns=10.43.0.53 --cluster-domain=example.internal "),
            "{line}"
        );
        assert!(line.contains("--cloud-provider=external"), "{line}");

        for version in ["v1.32.1+k3s1", "v1.33.4+k3s1", "v1.34.1+k3s1"] {
            let new = v(version);
            let line = kubelet_args(&view(&served, &new));
            assert!(!line.contains("--cluster-dns"), "{version}: {line}");
            assert!(line.starts_with("--cloud-provider=external --config-dir=/var/lib/rancher/k3s/agent/etc/kubelet.conf.d "), "{version}: {line}");
            let file = kubelet_defaults(&view(&served, &new));
            assert!(
                file.contains("clusterDNS:\n- 10.43.0.53\nclusterDomain: example.internal\n"),
                "{file}"
            );
        }
        assert!(!v("v1.32.0+k3s1").has_kubelet_config_file());
    }

    #[test]
    fn the_served_disable_cloud_controller_drops_the_external_cloud_provider() {
        let version = v("v1.33.4+k3s1");
        let (served, _) = args("disable-cloud-controller: true\n", &version);
        let line = kubelet_args(&view(&served, &version));
        assert!(!line.contains("--cloud-provider"), "{line}");
        assert!(line.contains("--node-ip=10.0.0.9"), "{line}");
    }

    #[test]
    fn network_lines_follow_the_served_backend_and_policy_controller() {
        let version = v("v1.33.4+k3s1");
        let (served, _) = args("", &version);
        let lines = network_lines(&view(&served, &version));
        assert_eq!(lines[0], "Starting flannel with backend vxlan");
        assert!(lines[1].starts_with("Starting network policy controller version "));
        let (served, _) = args(
            "flannel-backend: none\ndisable-network-policy: true\n",
            &version,
        );
        assert!(network_lines(&view(&served, &version)).is_empty());
        let (served, _) = args("flannel-backend: host-gw\n", &version);
        assert_eq!(
            network_lines(&view(&served, &version))[0],
            "Starting flannel with backend host-gw"
        );
    }

    #[test]
    fn flannel_external_ip_warns_as_the_agent_does() {
        let version = v("v1.33.4+k3s1");
        let (served, _) = args("flannel-external-ip: true\n", &version);
        let view = view(&served, &version);
        assert!(flannel_external_ip_warning(&view, false)
            .expect("warns")
            .starts_with("Server has flannel-external-ip flag set"));
        assert_eq!(
            flannel_external_ip_warning(&view, true).as_deref(),
            Some("Flannel is using external addresses with an insecure backend: vxlan. Please consider using an encrypting flannel backend.")
        );
        let (served, _) = args("", &version);
        let off = AgentView {
            served: &served,
            ..view
        };
        assert_eq!(flannel_external_ip_warning(&off, false), None);
    }

    #[test]
    fn kube_proxy_takes_the_served_cluster_cidr() {
        let version = v("v1.33.4+k3s1");
        let (served, _) = args("cluster-cidr: 10.52.0.0/16\n", &version);
        let line = kube_proxy_args(&view(&served, &version));
        assert!(
            line.starts_with("--cluster-cidr=10.52.0.0/16 --conntrack-max-per-core=0 "),
            "{line}"
        );
        assert!(line.ends_with("--proxy-mode=iptables"), "{line}");
    }

    #[test]
    fn cloud_controller_manager_runs_unless_both_it_and_servicelb_are_off() {
        let version = v("v1.33.4+k3s1");
        // The manager's command line on a server with this config, if it runs.
        let ccm = |config: &str| {
            let (local, cfg) = args(config, &version);
            cloud_controller_args(&ServerView {
                local: &local,
                disable_service_lb: cfg.disables("servicelb"),
                data_dir: Path::new("/var/lib/rancher/k3s"),
            })
        };
        let on = ccm("").expect("runs");
        assert!(on.contains(" --controllers=*,-route "), "{on}");
        let ccm_off = ccm("disable-cloud-controller: true\n").expect("servicelb keeps it running");
        assert!(
            ccm_off.contains(" --controllers=*,-route,-cloud-node,-cloud-node-lifecycle "),
            "{ccm_off}"
        );
        assert!(ccm_off.contains(" --secure-port=0"), "{ccm_off}");
        assert_eq!(
            ccm("disable-cloud-controller: true\ndisable: [servicelb]\n"),
            None
        );
        let lb_off = ccm("disable: [servicelb]\n").expect("runs");
        assert!(
            lb_off.contains(" --controllers=*,-route,-service "),
            "{lb_off}"
        );
    }

    #[test]
    fn egress_line_names_the_local_mode() {
        let version = v("v1.33.4+k3s1");
        let (local, _) = args("egress-selector-mode: pod\n", &version);
        assert_eq!(egress_line(&local), "Tunnel server egress proxy mode: pod");
    }
}
