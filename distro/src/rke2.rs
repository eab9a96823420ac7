//! RKE2's facts: the one place repro and its stand-in learn an RKE2 path, port, variable, flag
//! name, image or log line. RKE2 is k3s built with `version.Program=rke2` (every k3s string made
//! from the program name says `rke2`) plus rke2's own flag table and static-pod executor. Each
//! fact below is read from rancher/rke2's source at the release tags; docs/rke2-behaviour.md
//! cites the file and line of every one (the section is named after each field).

use crate::{Facts, NodeMemory, NodeProcess, Outputs, ReleaseArtifacts, RoleKeys, ValidationForm};

pub static FACTS: Facts = Facts {
    name: "rke2",
    binary: "rke2",
    units: &["rke2-server", "rke2-agent"],
    // No image runs rke2 as its command: rke2's Docker tests boot systemd and start the units
    // the tarball installs (§8, §10); bundle/lib/systemd/system/rke2-{server,agent}.service read
    // `EnvironmentFile=-/etc/default/%N` (docs/rke2-behaviour.md).
    node_process: NodeProcess::SystemdUnit {
        env_dir: "/etc/default",
    },
    // `v1.32.5+rke2r1`, `v1.33.5-rc1+rke2r1` (scripts/version.sh; §4).
    build_marker: "rke2r",
    example_version: "v1.32.5+rke2r1",
    example_candidate: "v1.33.5-rc1+rke2r1",
    // No published image boots an RKE2 node by itself (rke2's own Docker tests install the
    // release tarball into rancher/systemd-node, §10). This is the local name of such a node
    // image: repro builds it from the release artifacts (`--artifacts`, or fetched from
    // `release_downloads_url`), tagged `<version>-<first 12 of the tarball's sha256>`; a node
    // image under the plain `<version>` tag (built or loaded by hand) is used as it is.
    image_repository: "repro.local/rke2-node",
    // The stand-in's images of every distribution share one repository; the tag's build marker
    // (`-rke2r1`) tells them apart.
    sim_image_repository: "repro.local/k3s-sim",
    // Buggy and fixed per line (releases/rke2-changes.yaml: etcd-only-bootstrap-fix), and the
    // release rancher/rke2#8465 was reported on.
    sim_versions: &[
        "v1.31.12+rke2r1",
        "v1.31.13+rke2r1",
        "v1.32.5+rke2r1",
        "v1.32.8+rke2r1",
        "v1.32.9+rke2r1",
        "v1.33.4+rke2r1",
        "v1.33.5+rke2r1",
        "v1.34.1+rke2r1",
    ],
    sim_version_env: "REPRO_SIM_RKE2_VERSION",
    node_base_image: Some("rancher/systemd-node:v0.0.5"),
    server_args: &["server"],
    agent_args: &["agent"],
    // `rke2 version v1.33.5-rc1+rke2r1 (<40-hex commit>)` then `go version …` (§4).
    version_command: &["rke2", "-v"],
    // Where install.sh's tarball method puts the binary (`INSTALL_RKE2_TAR_PREFIX` is
    // `/usr/local` unless that is read-only or a mount; the units' `ExecStart=` name it, §8, §9),
    // and so where repro's systemd node image has it: a local build (`--k3s-binary`, an
    // `upgrade:` to `{binary: PATH}`) is copied over it, as replacing the tarball's would.
    // RKE2's CI builds are not read (`ci_builds_url` below), so no `--k3s-commit`.
    binary_path: Some("/usr/local/bin/rke2"),
    // `rke2 --help` (v1.33.5+rke2r1) lists server, agent, etcd-snapshot, certificate,
    // secrets-encrypt, token, completion: no check-config (docs/k3s-review-2026-12.md §10).
    check_config_args: None,
    ci_builds_url: None,
    // install.sh: `INSTALL_RKE2_GITHUB_URL=https://github.com/rancher/rke2`, then
    // `${INSTALL_RKE2_GITHUB_URL}/releases/download/${INSTALL_RKE2_VERSION}/sha256sum-${ARCH}.txt`
    // and `rke2.${SUFFIX}.tar.gz` beside it (SUFFIX linux-amd64).
    release_downloads_url: Some("https://github.com/rancher/rke2/releases/download"),
    // rke2's scripts/package-bundle, scripts/checksum and scripts/package-images name them;
    // install.sh's INSTALL_RKE2_ARTIFACT_PATH reads them. The install script is `install.sh` as
    // get.rke2.io serves it, or `installer.sh` as rancher/system-agent-installer-rke2 ships it.
    release_artifacts: Some(ReleaseArtifacts {
        tarball: "rke2.linux-amd64.tar.gz",
        checksums: "sha256sum-amd64.txt",
        images: "rke2-images.linux-amd64.tar.zst",
        images_dir: "/var/lib/rancher/rke2/agent/images",
        install_scripts: &["install.sh", "installer.sh"],
    }),
    // §2: k3s's configfilearg and datadir with the program name `rke2`.
    config_dir: "/etc/rancher/rke2",
    config_path: "/etc/rancher/rke2/config.yaml",
    config_dropin_dir: "/etc/rancher/rke2/config.yaml.d",
    registries_path: "/etc/rancher/rke2/registries.yaml",
    data_dir: "/var/lib/rancher/rke2",
    // §3: pkg/cli/defaults sets SupervisorPort 9345 and the apiserver's 6443, and drops the
    // flags that could change either.
    supervisor_port: 9345,
    api_port: 6443,
    token_env: "RKE2_TOKEN",
    agent_token_env: "RKE2_AGENT_TOKEN",
    url_env: "RKE2_URL",
    kubeconfig_path: "/etc/rancher/rke2/rke2.yaml",
    node_password_path: "/etc/rancher/node/password",
    // rke2 has no `rke2 kubectl`: kubectl comes from the runtime image, linked under the data
    // dir's bin/ (§2).
    kubectl: &["/var/lib/rancher/rke2/bin/kubectl"],
    banner_prefix: "Starting rke2 ",
    agent_banner_prefix: "Starting rke2 agent ",
    ready_line: "rke2 is up and running",
    agent_ready_line: "rke2 agent is up and running",
    kubelet_log: Some("agent/logs/kubelet.log"),
    // bundle/lib/systemd/system/rke2-{server,agent}.service: "Rancher Kubernetes Engine v2
    // (server)" / "(agent)"; 2020 releases had no suffix.
    unit_description: "Rancher Kubernetes Engine v2",
    // k3s's agent and etcd code, which rke2 runs as it is.
    lb_pick_prefix: crate::k3s::LB_PICK_PREFIX,
    lb_pick_suffix: crate::k3s::LB_PICK_SUFFIX,
    served_agent_keys: crate::k3s::SERVED_AGENT_KEYS,
    stop_signal: "SIGTERM",
    upgrade: crate::UpgradeRules {
        max_minor_step: 1,
        downgrade: false,
        agents_after_servers: true,
    },
    waiting_lines: crate::k3s::WAITING_LINES,
    role_keys: RoleKeys {
        // `cluster-init` is a dropped flag: rke2 sets ClusterInit on every server itself, and
        // the node without `server:` creates the cluster (§5).
        init: None,
        // The rest as k3s's: rke2's own split-role tests write these (tests/docker/splitserver,
        // §10).
        ..crate::k3s::ROLE_KEYS
    },
    changes_path: "releases/rke2-changes.yaml",
    flags_path: "releases/rke2-flags.yaml",
    releases_path: "releases/rke2.yaml",
    releases_yaml: include_str!("../../releases/rke2.yaml"),
    // The same channel service k3s's has, under rke2's name.
    channel_server: "https://update.rke2.io/v1-release/channels",
    // rke2's Docker tests give a server 3 GiB and an agent 2 GiB (§10); rke2's documented
    // minimum is 4 GB.
    memory: NodeMemory {
        server_with_etcd_mib: 3072,
        server_mib: 3072,
        agent_mib: 2048,
        // Inferred: rke2 also unpacks its runtime image and pulls the control-plane images.
        disk_mib: 4096,
        source: "what rke2's Docker tests give a node",
    },
    // docs/rke2-bug-template.md: rancher/rke2's bug template (the same headings as k3s's, with
    // `RKE2 Version:` and `rke2 -v`), and QA's short comment on rancher/rke2#8875/#8876. The
    // install is rke2's own tests/docker's (§9, §10).
    outputs: Outputs {
        product: "RKE2",
        bug_template: "https://github.com/rancher/rke2/blob/master/.github/ISSUE_TEMPLATE/bug_report.md",
        image: "repro's RKE2 node image (systemd as PID 1, rke2 installed from the release artifacts)",
        installed: "in Docker, rke2 installed from the release artifacts by rke2's install script \
                    (`INSTALL_RKE2_ARTIFACT_PATH`) in a node image with systemd as PID 1, one {container} \
                    per node on one network, each started with `systemctl start rke2-server` (or \
                    `rke2-agent`), as rke2's own tests/docker run it",
        log_source: "the journal of its unit, `journalctl -u rke2-server` or `-u rke2-agent`",
        validation: ValidationForm::Short,
    },
    tables: crate::tables::Tables::new(
        include_str!("../../releases/rke2-changes.yaml"),
        include_str!("../../releases/rke2-flags.yaml"),
    ),
};
