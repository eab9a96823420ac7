//! Getting the image a run starts: an archive to load, the local store, the stand-in builder,
//! or a pull — and what the image says about itself (stand-in, privileges).

use crate::docker::DockerApi;
use crate::plan::Plan;

use super::config::{Privileged, RunConfig};
use super::emit::Events;
use super::error::RunError;
use super::event::{NodeState, Phase, RunEvent};
use crate::sim_image::SIM_LABEL;

/// Image label by which an image says it needs no privileged container.
pub(crate) const PRIVILEGED_LABEL: &str = "io.repro.privileged";

/// Makes sure the plan's image is in the local store; returns its id.
pub(crate) async fn ensure(
    docker: &dyn DockerApi,
    plan: &Plan,
    cfg: &RunConfig,
    events: &Events,
) -> Result<Option<String>, RunError> {
    if let Some(archive) = &cfg.image_archive {
        events.show(&RunEvent::Phase(Phase::LoadArchive(archive.clone())));
        docker.load_archive(archive).await?;
    }
    if let Some(dir) = &cfg.target.artifacts {
        // Checked again here (the plan checked it first): the folder may have changed since.
        let v = plan.k3s_version.to_string();
        let tarball = match crate::sim_node_image::layout(plan.distro.facts()) {
            Ok(names) => dir.join(names.tarball),
            Err(_) => dir.clone(),
        };
        events.show(&RunEvent::Phase(Phase::BuildNodeImage {
            image: plan.image.clone(),
            tarball: tarball.clone(),
        }));
        let built = async {
            let a = crate::sim_node_image::verify_artifacts(
                plan.distro.facts(),
                dir,
                !cfg.target.no_images_tarball,
            )?;
            crate::sim_node_image::ensure_artifact_image(
                docker,
                &plan.image,
                plan.distro.facts(),
                &v,
                &a,
                cfg.target.node_base.as_deref(),
            )
            .await
        };
        built.await.map_err(|e| RunError::NodeImage {
            image: plan.image.clone(),
            tarball: tarball.display().to_string(),
            reason: format!("{e:#}"),
        })?;
        return Ok(image_id(docker, &plan.image).await);
    }
    if cfg.target.sim {
        let v = plan.k3s_version.to_string();
        // Always asked: it rebuilds a tag only when missing or built from another binary.
        events.show(&RunEvent::Phase(Phase::PrepareSimImage(plan.image.clone())));
        crate::sim_image::ensure_sim_image(docker, &v, cfg.rebuild_sim)
            .await
            .map_err(|e| RunError::SimImage {
                image: plan.image.clone(),
                reason: format!("{e:#}"),
            })?;
        return Ok(image_id(docker, &plan.image).await);
    }
    if let Some(id) = image_id(docker, &plan.image).await {
        return Ok(Some(id));
    }
    events.show(&RunEvent::Phase(Phase::Pull(plan.image.clone())));
    let mut last = (0, 0);
    let mut progress = |done, total| {
        if (done, total) != last {
            last = (done, total);
            events.show(&RunEvent::Node {
                node: "pull".into(),
                state: NodeState::Pulling,
                boot: 0,
                detail: format!("{done}/{total} layers"),
            });
        }
    };
    let pulled = docker.pull(&plan.image, &mut progress).await;
    match pulled {
        Ok(()) => Ok(image_id(docker, &plan.image).await),
        Err(e) => Err(RunError::ImageMissing {
            image: plan.image.clone(),
            version: plan.k3s_version.to_string(),
            reason: e.to_string(),
            artifacts: super::error::artifacts_way_out(plan.distro.facts()),
        }),
    }
}

/// Makes sure the image of every `upgrade:` of the plan is in the local store, as the run's
/// own image is (built for the stand-in, else pulled). A node image built from release
/// artifacts is of one version only: an upgrade has none to go to.
pub(crate) async fn ensure_upgrades(
    docker: &dyn DockerApi,
    plan: &Plan,
    cfg: &RunConfig,
    events: &Events,
) -> Result<(), RunError> {
    let mut seen = std::collections::HashSet::new();
    for u in plan.steps.iter().flat_map(|s| &s.upgrade) {
        let Some(image) = u.image.clone().filter(|i| seen.insert(i.clone())) else {
            continue;
        };
        if let Some(dir) = &cfg.target.artifacts {
            return Err(RunError::NodeImage {
                image,
                tarball: dir.display().to_string(),
                reason: format!("the release artifacts are of {} only: an upgrade to {} needs its own node image", plan.k3s_version, u.version),
            });
        }
        let mut p = plan.clone();
        p.image = image;
        p.k3s_version = u.version.clone();
        let cfg = RunConfig {
            image_archive: None,
            ..cfg.clone()
        };
        ensure(docker, &p, &cfg, events).await?;
    }
    Ok(())
}

async fn image_id(docker: &dyn DockerApi, image: &str) -> Option<String> {
    docker.image(image).await.and_then(|i| i.id)
}

/// (stand-in, privileged) from the image's labels and the configuration.
pub(crate) async fn traits(docker: &dyn DockerApi, plan: &Plan, cfg: &RunConfig) -> (bool, bool) {
    // Whether this is the stand-in is a fact of the image (its label), not of how it was named:
    // `--image repro.local/...` of a stand-in image is still not real k3s.
    let labels = docker
        .image(&plan.image)
        .await
        .map(|i| i.labels)
        .unwrap_or_default();
    let stand_in = cfg.target.sim || labels.get(SIM_LABEL).is_some_and(|v| v == "true");
    let privileged = match cfg.privileged {
        Privileged::Always => true,
        Privileged::Never => false,
        // Real k3s needs privileges (k3d runs it privileged); an image may say it needs none.
        Privileged::Auto => labels.get(PRIVILEGED_LABEL).is_none_or(|v| v != "false"),
    };
    (stand_in, privileged)
}
