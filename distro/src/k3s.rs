//! k3s's facts: the one place repro and its stand-in learn a k3s path, port, variable, flag name,
//! image or log line. Sources: docs.k3s.io (installation/configuration, cli/server,
//! cli/agent, reference/env-variables, reference/resource-profiling) and k3s's source at the
//! release tags (pkg/cli/cmds, pkg/configfilearg); see docs/k3s-behaviour.md.

use crate::{Facts, NodeMemory, NodeProcess, Outputs, RoleKeys, ValidationForm};

// Lines and keys of k3s's agent and etcd code, which rke2 runs as it is (rke2.rs uses these).
// pkg/agent/loadbalancer/servers.go L273 and L407-L413 (docs/k3s-review-2026-12.md §6).
pub(crate) const LB_PICK_PREFIX: &str = "Server ";
pub(crate) const LB_PICK_SUFFIX: &str = "->RECOVERING from successful dial";
// pkg/agent/run.go: the registry and supervisor metrics are read from the served config.
pub(crate) const SERVED_AGENT_KEYS: &[&str] = &["embedded-registry", "supervisor-metrics"];
// docs.k3s.io "Managing Server Roles" (rke2 takes all but `cluster-init`).
pub(crate) const ROLE_KEYS: RoleKeys = RoleKeys {
    init: Some("cluster-init"),
    join: "server",
    token: "token",
    agent_token: "agent-token",
    etcd_only: &[
        "disable-apiserver",
        "disable-controller-manager",
        "disable-scheduler",
    ],
    control_plane_only: &["disable-etcd"],
};
// pkg/etcd/etcd.go, pkg/daemons/executor/etcd.go, pkg/agent/run.go
// (docs/k3s-review-2026-12.md §4, §5).
pub(crate) const WAITING_LINES: &[(&str, &str)] = &[
    (
        "has not yet been promoted from learner to voting member",
        "its etcd member is still a learner: etcd's leader has not promoted it",
    ),
    (
        "too many learner members in cluster",
        "etcd refuses it as a second learner while another member is unpromoted",
    ),
    (
        "Waiting for control-plane node to register apiserver addresses in etcd",
        "no control-plane node has registered an apiserver in etcd",
    ),
];

pub static FACTS: Facts = Facts {
    name: "k3s",
    binary: "k3s",
    units: &["k3s", "k3s-agent"],
    // rancher/k3s runs `k3s server` as the container's command (its install script's units are
    // for hosts, which repro does not run).
    node_process: NodeProcess::Container,
    build_marker: "k3s",
    example_version: "v1.33.4+k3s1",
    example_candidate: "v1.33.5-rc1+k3s1",
    image_repository: "rancher/k3s",
    sim_image_repository: "repro.local/k3s-sim",
    sim_versions: &[
        "v1.31.12+k3s1",
        "v1.31.13+k3s1",
        "v1.32.8+k3s1",
        "v1.32.9+k3s1",
        "v1.33.4+k3s1",
        "v1.33.5+k3s1",
        "v1.34.1+k3s1",
    ],
    sim_version_env: "REPRO_SIM_K3S_VERSION",
    node_base_image: None,
    server_args: &["server"],
    agent_args: &["agent"],
    version_command: &["k3s", "-v"],
    // rancher/k3s's Dockerfile copies the binary to /bin/k3s (its ENTRYPOINT), and so does the
    // stand-in's image.
    binary_path: Some("/bin/k3s"),
    // cmd/k3s/main.go: `cmds.NewCheckConfigCommand(externalCLIAction("check-config", dataDir))`
    // runs bin/check-config (contrib/util/check-config.sh) from the extracted data dir
    // (docs/k3s-review-2026-12.md §10).
    check_config_args: Some(&["check-config"]),
    // install.sh at v1.34.1+k3s1 L100 (`STORAGE_URL`), for INSTALL_K3S_COMMIT; master dropped it
    // for GitHub Actions artifacts in February 2026 (docs/k3s-review-2026-12.md §2).
    ci_builds_url: Some("https://k3s-ci-builds.s3.amazonaws.com"),
    // k3s's nodes run the published rancher/k3s image: no release artifacts to fetch.
    release_downloads_url: None,
    release_artifacts: None,
    config_dir: "/etc/rancher/k3s",
    config_path: "/etc/rancher/k3s/config.yaml",
    config_dropin_dir: "/etc/rancher/k3s/config.yaml.d",
    registries_path: "/etc/rancher/k3s/registries.yaml",
    data_dir: "/var/lib/rancher/k3s",
    // One port for both: k3s's supervisor multiplexes the apiserver on 6443.
    supervisor_port: 6443,
    api_port: 6443,
    token_env: "K3S_TOKEN",
    agent_token_env: "K3S_AGENT_TOKEN",
    url_env: "K3S_URL",
    kubeconfig_path: "/etc/rancher/k3s/k3s.yaml",
    kubectl: &["k3s", "kubectl"],
    banner_prefix: "Starting k3s ",
    agent_banner_prefix: "Starting k3s agent ",
    ready_line: "k3s is up and running",
    agent_ready_line: "k3s agent is up and running",
    kubelet_log: None,
    // install.sh's k3s.service and k3s-agent.service.
    unit_description: "Lightweight Kubernetes",
    lb_pick_prefix: LB_PICK_PREFIX,
    lb_pick_suffix: LB_PICK_SUFFIX,
    served_agent_keys: SERVED_AGENT_KEYS,
    stop_signal: "SIGTERM",
    node_password_path: "/etc/rancher/node/password",
    upgrade: crate::UpgradeRules {
        max_minor_step: 1,
        downgrade: false,
        agents_after_servers: true,
    },
    waiting_lines: WAITING_LINES,
    role_keys: ROLE_KEYS,
    changes_path: "releases/k3s-changes.yaml",
    flags_path: "releases/k3s-flags.yaml",
    releases_path: "releases/k3s.yaml",
    releases_yaml: include_str!("../../releases/k3s.yaml"),
    channel_server: "https://update.k3s.io/v1-release/channels",
    // reference/resource-profiling (k3s v1.26.5, Intel 8375C): a server with a workload needs
    // 1606 M with embedded etcd and 1596 M with kine/SQLite; an agent 275 M.
    memory: NodeMemory {
        server_with_etcd_mib: 1606,
        server_mib: 1596,
        agent_mib: 275,
        // Inferred: the data dir k3s extracts (~250 MB), etcd's files and containerd's state.
        disk_mib: 1024,
        source: "k3s's resource profiling",
    },
    // k3s-io/k3s .github/ISSUE_TEMPLATE/bug_report.md; QA's comment as on k3s-io/k3s#12816.
    outputs: Outputs {
        product: "K3s",
        bug_template:
            "https://github.com/k3s-io/k3s/blob/master/.github/ISSUE_TEMPLATE/bug_report.md",
        image: "the official k3s image",
        installed: "in Docker, one {container} per node on one network (as k3d runs k3s)",
        log_source: "its container's output",
        validation: ValidationForm::Full,
    },
    tables: crate::tables::Tables::new(
        include_str!("../../releases/k3s-changes.yaml"),
        include_str!("../../releases/k3s-flags.yaml"),
    ),
};
