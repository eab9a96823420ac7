//! The privileged trial: a throwaway container made as a node is made, privileged and then
//! plain, telling an engine that refuses privileges from one that cannot start containers.

use super::*;
use crate::node_spec::NodeContainer;

/// How long the privileged trial may take: creating and starting a container is a second.
pub(super) const TRIAL_TIMEOUT: Duration = Duration::from_secs(60);

/// An image to try a privileged container with: the target image if it is here, else the
/// stand-in's (built on the spot, as `--sim` does): the trial asks the engine, not k3s.
pub(super) async fn trial_image(
    docker: &dyn DockerApi,
    image: &str,
    version: &Version,
) -> Result<String, String> {
    if docker.image(image).await.is_some() {
        return Ok(image.to_string());
    }
    crate::sim_image::ensure_sim_image(docker, &version.to_string(), false)
        .await
        .map_err(|e| format!("{image} is not here and the stand-in could not be built ({e:#})"))
}

/// Creates and starts a privileged container as a node of `facts`'s distribution starts (one
/// that only prints its version, or, for a systemd-unit distribution, the image's own command:
/// systemd), then removes it (with its network and volume) by its run id. An engine that
/// refuses privileges refuses it at the start; the same container unprivileged tells that
/// refusal from an image or engine that cannot start any container.
pub(super) async fn try_privileged(
    docker: &dyn DockerApi,
    image: &str,
    facts: &Facts,
    run_id: &str,
) -> Line {
    let labels = trial_labels(run_id);
    let systemd = facts.node_process.systemd_pid1();
    let t = Trial {
        docker,
        image,
        run_id,
        labels: &labels,
        facts,
    };
    // What to try by hand: the container as the trial made it.
    let by_hand = if systemd {
        format!(
            "`docker run --rm -d --tmpfs /run --tmpfs /run/lock {image}`, then `docker rm -f` it"
        )
    } else {
        "`docker run --rm IMAGE -v`".to_string()
    };
    let net = format!("repro-{run_id}-trial");
    let (privileged, plain) = match docker.create_network(&net, &labels, None).await {
        Err(e) => (Ok(Err(e)), None),
        Ok(subnet) => {
            let privileged = tokio::time::timeout(TRIAL_TIMEOUT, t.run(&net, subnet, true)).await;
            let plain = match &privileged {
                Ok(Err(_)) => {
                    Some(tokio::time::timeout(TRIAL_TIMEOUT, t.run(&net, subnet, false)).await)
                }
                _ => None,
            };
            (privileged, plain)
        }
    };
    let removed = docker
        .remove_labelled(docker::LABEL_RUN, Some(run_id))
        .await;
    let leftover = if removed.complete {
        String::new()
    } else {
        format!(" (the trial's objects may be left: `repro clean --run {run_id}`)")
    };
    let timed_out = || {
        Line::fail(
            "privileged",
            format!(
                "a container of {image} did not start within {}s{leftover}",
                TRIAL_TIMEOUT.as_secs()
            ),
            format!("check the engine ({by_hand}), or run the stand-in with --sim"),
        )
    };
    match (privileged, plain) {
        (Ok(Ok(())), _) => Line::ok(
            "privileged",
            format!("a privileged container of {image} started{leftover}"),
        ),
        (Ok(Err(e)), Some(Ok(Ok(())))) => Line::fail(
            "privileged",
            format!(
                "the engine refused a privileged container of {image} ({}) but started it unprivileged{leftover}; real {} needs privileged containers (containerd, the kubelet and iptables run inside), so it cannot run here",
                first_line(&e.to_string()),
                facts.name
            ),
            "use an engine that allows privileged containers (rootful Docker, not rootless or a sandboxed CI runner), or run the stand-in with --sim (`repro doctor --sim` says whether it can)",
        ),
        (Ok(Err(_)), Some(Ok(Err(e)))) => Line::fail(
            "privileged",
            format!(
                "not even an unprivileged container of {image} started: {}{leftover}",
                first_line(&e.to_string())
            ),
            format!("check the engine and the image ({by_hand})"),
        ),
        _ => timed_out(),
    }
}

/// Throwaway containers of `image`, made as a node is made; the caller removes everything
/// labelled with `run_id`.
pub(super) struct Trial<'a> {
    docker: &'a dyn DockerApi,
    image: &'a str,
    run_id: &'a str,
    labels: &'a HashMap<String, String>,
    /// The distribution: its node is made as a run makes one (`node_spec`).
    facts: &'a Facts,
}

impl Trial<'_> {
    /// One container on `net` (the run network of third octet `subnet`) with its own data
    /// volume, built by the run's own node builder: created and started.
    async fn run(
        &self,
        net: &str,
        subnet: u8,
        privileged: bool,
    ) -> Result<(), docker::DockerError> {
        let kind = if privileged {
            "privileged"
        } else {
            "unprivileged"
        };
        let name = format!("repro-{}-{kind}-trial", self.run_id);
        self.docker.create_volume(&name, self.labels).await?;
        let systemd = self.facts.node_process.systemd_pid1();
        let spec = NodeContainer {
            facts: self.facts,
            name: &name,
            hostname: &format!("{kind}-trial"),
            image: self.image,
            // A container node's entrypoint is the distribution's binary: its version flag, and
            // out. A systemd node image has no such entrypoint: its command (systemd) runs.
            process: (
                if systemd { vec![] } else { vec!["-v".into()] },
                vec![],
                systemd,
            ),
            labels: self.labels.clone(),
            network: net,
            ip: docker::address::trial_ip(subnet, u8::from(!privileged)),
            // A trial container joins nothing, so it needs no other node's address.
            hosts: vec![],
            // Seconds-long and removed with its anonymous volumes (`remove_labelled` passes -v);
            // a run's nodes, which live through steps, get named ones.
            volumes: (name.clone(), vec![]),
            privileged,
        }
        .spec();
        self.docker.create_node(&spec).await?;
        self.docker.start(&name).await
    }
}
