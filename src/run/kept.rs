//! After `--keep`: how to reach the cluster that is still running (#32) — commands that work on
//! the image in use (a container's own process or a systemd unit; real k3s or RKE2 or the
//! stand-in), and for real k3s and RKE2 the first API server's kubeconfig in the results folder.
//!
//! Every path and command word of a distribution comes from its facts (`distro::Facts`).

use std::path::{Path, PathBuf};

use distro::Facts;

use crate::raw::Role;
use crate::start_order::PlannedNode;

/// The kubeconfig's file in the results folder: left out of bundle.tar.gz (which lists its
/// files, src/report/mod.rs), since it holds the cluster's admin credential.
pub(crate) const KUBECONFIG_FILE: &str = "kubeconfig.yaml";

/// What the hint is about.
pub(crate) struct Kept<'a> {
    pub(crate) facts: &'static Facts,
    /// Whether the nodes run repro's stand-in rather than the distribution.
    pub(crate) stand_in: bool,
    pub(crate) run_id: &'a str,
    /// The label every container of a run carries, with the run id as its value.
    pub(crate) label: &'a str,
    /// The first node: (its name, its container).
    pub(crate) first: (&'a str, &'a str),
    /// How its log is read inside it (`run::node::log_command`); `None`: the container's log.
    pub(crate) log: Option<Vec<String>>,
    /// `--results DIR` for `repro runs` when the run's folder is not under the default one.
    pub(crate) results_flag: String,
    /// The first node serving the Kubernetes API, by container.
    pub(crate) api: Option<&'a str>,
    /// The kubeconfig written (its path and the server address in it), or why none was.
    pub(crate) kubeconfig: Option<Result<(PathBuf, String), String>>,
}

/// The first node that serves the Kubernetes API (a server with a control plane).
pub(crate) fn api_node(nodes: &[PlannedNode]) -> Option<&PlannedNode> {
    nodes
        .iter()
        .find(|n| matches!(n.role, Role::All | Role::ControlPlane))
}

/// The lines printed after a kept run.
pub(crate) fn hint(k: &Kept<'_>) -> String {
    let f = k.facts;
    let (node, first) = k.first;
    let systemd = f.node_process.systemd_pid1();
    let mut o = format!(
        "--keep: the cluster is still running. Inspect it with\n  repro runs logs {}{} {node}\n  docker ps --filter label={}={}\n",
        k.run_id, k.results_flag, k.label, k.run_id
    );
    match &k.log {
        // A systemd node's container log is systemd's; the distribution's is its unit's journal.
        Some(cmd) => o.push_str(&format!("  docker exec {first} {}\n", cmd.join(" "))),
        None => o.push_str(&format!("  docker logs {first}\n")),
    }
    // The stand-in's container image holds nothing but its binary: no shell to enter.
    if !k.stand_in || systemd {
        o.push_str(&format!("  docker exec -it {first} sh\n"));
    }
    let kubectl = format!("{} --kubeconfig {}", f.kubectl.join(" "), f.kubeconfig_path);
    match (k.api, k.stand_in) {
        (Some(api), true) => o.push_str(&format!(
            "  docker exec {api} {kubectl} get --raw /readyz\n  (the stand-in's kubectl: it answers `get --raw PATH` only, as the stand-in serves no Kubernetes API; real {} does)\n",
            f.name
        )),
        (Some(api), false) => o.push_str(&format!("  docker exec {api} {kubectl} get nodes\n")),
        (None, _) => o.push_str("  (no node of this topology serves the Kubernetes API: kubectl has nothing to ask)\n"),
    }
    match &k.kubeconfig {
        Some(Ok((path, server))) => o.push_str(&format!(
            "From this host (server {server}, the node's address on the run's network: reachable where the Docker engine runs):\n  kubectl --kubeconfig {} get nodes\n",
            path.display()
        )),
        Some(Err(why)) => o.push_str(&format!("(no kubeconfig written: {why})\n")),
        None => {}
    }
    o.push_str(&format!(
        "and remove it with\n  repro clean --run {}",
        k.run_id
    ));
    o
}

/// A server's kubeconfig with its API address (`https://127.0.0.1:PORT`, as k3s and RKE2 write
/// it) replaced by the node's address on the run's network; `None` when it names no such server.
pub(crate) fn readdress(kubeconfig: &str, api_port: u16, ip: &str) -> Option<(String, String)> {
    let server = format!("https://{ip}:{api_port}");
    let mut found = false;
    let text: String = kubeconfig
        .split_inclusive('\n')
        .map(|l| {
            let t = l.trim_start();
            let value = t.strip_prefix("server:").map(str::trim);
            match value {
                Some(v) if is_loopback_api(v, api_port) => {
                    found = true;
                    let indent = &l[..l.len() - t.len()];
                    let end = if l.ends_with('\n') { "\n" } else { "" };
                    format!("{indent}server: {server}{end}")
                }
                _ => l.to_string(),
            }
        })
        .collect();
    found.then_some((text, server))
}

fn is_loopback_api(v: &str, port: u16) -> bool {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|h| v == format!("https://{h}:{port}"))
}

/// Writes the kubeconfig readable by its owner only (it holds the cluster's admin key), never
/// through a link planted at its path.
pub(crate) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use distro::Distro;

    fn kept(distro: Distro, stand_in: bool, kubeconfig: bool) -> String {
        hint(&Kept {
            facts: distro.facts(),
            stand_in,
            run_id: "ab12cd34",
            label: "io.repro.run",
            first: ("etcd-1", "repro-ab12cd34-etcd-1"),
            log: (distro == Distro::Rke2).then(|| {
                ["journalctl", "-u", "rke2-server", "--no-pager"]
                    .map(String::from)
                    .to_vec()
            }),
            results_flag: String::new(),
            api: Some("repro-ab12cd34-cp-1"),
            kubeconfig: kubeconfig.then(|| {
                Ok((
                    PathBuf::from("results/etcd-split-x/kubeconfig.yaml"),
                    "https://10.213.7.13:6443".to_string(),
                ))
            }),
        })
    }

    /// The hints on each image kind: a container's own process (k3s), a systemd unit (RKE2),
    /// each on the real image and on the stand-in.
    #[test]
    fn hints_fit_the_image_in_use() {
        let all = [
            ("k3s", kept(Distro::K3s, false, true)),
            ("k3s stand-in", kept(Distro::K3s, true, false)),
            ("rke2", kept(Distro::Rke2, false, true)),
            ("rke2 stand-in", kept(Distro::Rke2, true, false)),
        ]
        .map(|(what, text)| format!("== {what}\n{text}\n"))
        .join("\n");
        insta::assert_snapshot!("keep-hints", all);
        let standin = kept(Distro::K3s, true, false);
        assert!(!standin.contains(" sh\n"), "{standin}");
        assert!(standin.contains("the stand-in's kubectl"), "{standin}");
    }

    #[test]
    fn the_server_address_is_rewritten_to_the_node() {
        let kc = "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: QUJD\n    server: https://127.0.0.1:6443\n  name: default\n";
        let (text, server) = readdress(kc, 6443, "10.213.7.13").expect("a server");
        assert_eq!(server, "https://10.213.7.13:6443");
        assert!(text.contains("    server: https://10.213.7.13:6443\n  name: default\n"));
        assert_eq!(text.replace("10.213.7.13", "127.0.0.1"), kc);
        assert_eq!(readdress("clusters: []\n", 6443, "10.0.0.1"), None);
    }

    #[test]
    fn the_kubeconfig_is_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join(KUBECONFIG_FILE);
        write_private(&p, "x").expect("write");
        let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            write_private(&p, "y").is_err(),
            "never over an existing file"
        );
    }
}
