//! What a node's container is made of, whichever way it runs: its fixed address and the
//! named volumes for the image's `VOLUME`s, and the environment the run gives it.

use crate::plan::PlannedNode;
use distro::Facts;

/// The environment the run gives a node: the token, the stand-in's seed for this node, the
/// topology's variables and `--sim-pace`.
pub(crate) fn env(
    facts: &Facts,
    token: &str,
    sim_seed: Option<u64>,
    n: &PlannedNode,
    pace: Option<f64>,
) -> Vec<String> {
    let mut env = vec![format!("{}={}", facts.token_env, token)];
    if let Some(seed) = sim_seed {
        env.push(format!(
            "{}={}",
            crate::sim_image::SIM_SEED_ENV,
            crate::sim_image::node_seed(seed, &n.name)
        ));
    }
    env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
    if let Some(f) = pace {
        env.push(format!("{}={f}", distro::pace::PACE_ENV));
    }
    env
}

/// The fixed address of the plan's `i`-th node on the run's 10.213.`third`.0/24: etcd peer URLs
/// embed the IP (k3d #550), and every node's `/etc/hosts` lists them all.
pub(crate) fn node_ip(third: u8, i: usize) -> String {
    format!("10.213.{third}.{}", 10 + i)
}

/// A named volume (name, path) for each `VOLUME` the image declares (`declared`) that nothing
/// else covers — not the data dir (its own volume, kept across restarts) nor a tmpfs — named
/// after the container, its place in the list and the path (Docker allows `[a-zA-Z0-9_.-]`).
pub(crate) fn image_volume_mounts(
    container: &str,
    declared: &[String],
    data_dir: &str,
    systemd: bool,
) -> Vec<(String, String)> {
    let covered = |p: &str| p == data_dir || crate::docker::tmpfs_paths(systemd).contains(&p);
    let mut paths: Vec<&str> = declared
        .iter()
        .map(|p| match p.trim_end_matches('/') {
            "" => "/",
            t => t,
        })
        .filter(|p| !covered(p))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let slug: String = p
                .trim_start_matches('/')
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '.' | '-' => c,
                    _ => '-',
                })
                .collect();
            (format!("{container}-vol{k}-{slug}"), p.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_image_volume_but_the_data_dir_and_tmpfs_gets_a_named_one() {
        let declared: Vec<String> = [
            "/var/lib/kubelet",
            "/var/lib/rancher/k3s",
            "/var/lib/cni/",
            "/var/log",
            "/run",
            "/data dir/x",
            "/var/log",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            image_volume_mounts(
                "repro-ab12-etcd-1",
                &declared,
                "/var/lib/rancher/k3s",
                false
            ),
            vec![
                (
                    "repro-ab12-etcd-1-vol0-data-dir-x".into(),
                    "/data dir/x".into()
                ),
                (
                    "repro-ab12-etcd-1-vol1-var-lib-cni".into(),
                    "/var/lib/cni".into()
                ),
                (
                    "repro-ab12-etcd-1-vol2-var-lib-kubelet".into(),
                    "/var/lib/kubelet".into()
                ),
                ("repro-ab12-etcd-1-vol3-var-log".into(), "/var/log".into()),
            ]
        );
        assert!(image_volume_mounts("c", &[], "/d", false).is_empty());
    }
}
