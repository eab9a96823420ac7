//! The kernel check a distribution ships (`k3s check-config`), run in a throwaway container
//! of the run's image and read section by section.

use super::*;

/// `k3s check-config` (the kernel check k3s ships, contrib/util/check-config.sh) run in a
/// throwaway container of the target image: the script reads the host kernel's config
/// (/proc/config.gz, /boot/config-$(uname -r), /lib/modules/$(uname -r)/…), so /boot and
/// /lib/modules are mounted read-only. Skipped, with a warn line saying why, where it cannot
/// say anything about real k3s.
pub(super) async fn kernel_config_line(
    docker: &dyn DockerApi,
    req: &Request<'_>,
    image: &str,
) -> Line {
    let Some(args) = req.facts.check_config_args else {
        return Line::warn(
            "kernel-config",
            format!(
                "skipped: {} has no check-config subcommand (its CLI has none)",
                req.facts.name
            ),
            "check the kernel by hand with k3s's contrib/util/check-config.sh (rke2 needs the same kernel features)",
        );
    };
    let command = format!(
        "docker run --rm -v /boot:/boot:ro -v /lib/modules:/lib/modules:ro {image} {}",
        args.join(" ")
    );
    if req.sim {
        return Line::warn(
            "kernel-config",
            format!(
                "skipped: the stand-in has no `{} check-config`; real {} checks the kernel with it",
                req.facts.binary, req.facts.name
            ),
            format!("before a real run: `repro doctor` without --sim, or `{command}`"),
        );
    }
    match docker.image(image).await {
        None => Line::warn(
            "kernel-config",
            format!(
                "skipped: {image} is not here, and `{} check-config` runs inside it",
                req.facts.binary
            ),
            format!("pull the image (or load it with --image-archive), then `{command}`"),
        ),
        Some(info)
            if info
                .labels
                .get(crate::sim_image::SIM_LABEL)
                .is_some_and(|v| v == "true") =>
        {
            Line::warn(
                "kernel-config",
                format!(
                    "skipped: {image} is repro's stand-in, which has no `{} check-config`",
                    req.facts.binary
                ),
                format!("with the real image: `{command}`"),
            )
        }
        Some(_) => {
            let run_id = doctor_run_id();
            let ran = run_check_config(docker, image, args, &run_id).await;
            let removed = docker
                .remove_labelled(docker::LABEL_RUN, Some(&run_id))
                .await;
            let mut line = match ran {
                Ok((code, output)) => check_config_verdict(&parse_check_config(&output), code, req.facts.binary, &command),
                Err(why) => Line::warn(
                    "kernel-config",
                    format!("could not run `{} check-config` in {image}: {why}", req.facts.binary),
                    format!("run it by hand: `{command}` (it ends with `STATUS: pass` when the kernel has what {} needs)", req.facts.name),
                ),
            };
            if !removed.complete {
                line.detail.push_str(&format!(
                    " (its container may be left: `repro clean --run {run_id}`)"
                ));
            }
            line
        }
    }
}

/// Host folders check-config.sh reads the kernel config and modules from.
pub(super) const KERNEL_CONFIG_DIRS: &[&str] = &["/boot", "/lib/modules"];

/// Creates, starts and reads to its end one unprivileged container running `args` (the
/// image's entrypoint is the distribution's binary): its exit code and output, within
/// [`TRIAL_TIMEOUT`]. The caller removes everything labelled with `run_id`.
pub(super) async fn run_check_config(
    docker: &dyn DockerApi,
    image: &str,
    args: &[&str],
    run_id: &str,
) -> Result<(i64, String), String> {
    use futures_util::StreamExt;
    let labels = trial_labels(run_id);
    let net = format!("repro-{run_id}-trial");
    let name = format!("repro-{run_id}-check-config");
    let work = async {
        let subnet = docker
            .create_network(&net, &labels, None)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        docker
            .create_volume(&name, &labels)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        let spec = NodeSpec {
            name: name.clone(),
            hostname: "check-config".into(),
            image: image.to_string(),
            cmd: args.iter().map(|a| a.to_string()).collect(),
            env: vec![],
            labels: labels.clone(),
            network: net.clone(),
            ip: crate::docker::address::trial_ip(subnet, 0),
            extra_hosts: vec![],
            // It extracts k3s's data dir first (under /var/lib/rancher/k3s): a throwaway volume.
            data_volume: name.clone(),
            data_dir: "/var/lib/rancher".into(),
            image_volumes: vec![],
            // It reads the kernel config; it needs no privileges for that.
            privileged: false,
            stop_grace: Duration::from_secs(1),
            stop_signal: "SIGTERM".into(),
            systemd: false,
            // A folder the host lacks is not mounted: Docker would create it on the host.
            host_ro: KERNEL_CONFIG_DIRS
                .iter()
                .filter(|d| std::path::Path::new(d).is_dir())
                .map(|d| d.to_string())
                .collect(),
        };
        docker
            .create_node(&spec)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        docker
            .start(&name)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        // The log stream ends when the container stops.
        let mut output = String::new();
        let mut logs = docker.follow_logs(&name, 0);
        while let Some(chunk) = logs.next().await {
            match chunk {
                Ok(c) => output.push_str(&String::from_utf8_lossy(&c.bytes)),
                Err(e) => return Err(first_line(&e.to_string())),
            }
        }
        let state = docker
            .state(&name)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        Ok((state.exit_code.unwrap_or(-1), untimestamped(&output)))
    };
    match tokio::time::timeout(TRIAL_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "it did not finish within {}s",
            TRIAL_TIMEOUT.as_secs()
        )),
    }
}

/// The log without the engine's timestamp before each line (`follow_logs` asks for them).
pub(super) fn untimestamped(log: &str) -> String {
    log.lines()
        .map(|l| match l.split_once(' ') {
            Some((ts, rest)) if ts.len() >= 20 && ts.ends_with('Z') && ts.as_bytes()[4] == b'-' => {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What check-config.sh printed, by section.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct CheckConfig {
    /// `STATUS: pass` (true), `STATUS: N (fail)` (false), or no STATUS line.
    pub(super) pass: Option<bool>,
    /// How many `- NAME: …` lines it printed under the kernel sections.
    pub(super) checked: usize,
    /// Missing under "Generally Necessary:" (`- CONFIG_X: missing (fail)`).
    pub(super) necessary: Vec<String>,
    /// Missing under "Optional Features:" (`- CONFIG_X: missing`).
    pub(super) optional: Vec<String>,
    /// The last line that is not blank: what a run that found no config ends with.
    pub(super) last: String,
}

#[derive(PartialEq)]
pub(super) enum Section {
    Other,
    Necessary,
    Optional,
}

/// Reads check-config.sh's output (contrib/util/check-config.sh: `wrap_good`/`wrap_bad` print
/// `NAME: value`, coloured; lines under a section start `- `).
pub(super) fn parse_check_config(text: &str) -> CheckConfig {
    let mut out = CheckConfig::default();
    let mut section = Section::Other;
    for raw in text.lines() {
        // The script colours its words even without a terminal.
        let line = crate::term::strip_ansi(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        out.last = line.to_string();
        if line.starts_with("Generally Necessary:") {
            section = Section::Necessary;
        } else if line.starts_with("Optional Features:") {
            section = Section::Optional;
        } else if let Some(v) = line.strip_prefix("STATUS:") {
            out.pass = Some(v.trim() == "pass");
            section = Section::Other;
        } else if let Some(item) = line.strip_prefix("- ") {
            if section == Section::Other {
                continue;
            }
            let Some((name, value)) = item.split_once(": ") else {
                continue;
            };
            out.checked += 1;
            let bad = value.starts_with("missing") || value.contains("(fail)");
            match section {
                Section::Necessary if bad => out.necessary.push(name.to_string()),
                // Optional lines never say "(fail)" (the script counts no failure for them).
                Section::Optional if value.starts_with("missing") => {
                    out.optional.push(name.to_string())
                }
                _ => {}
            }
        } else if !line.starts_with('-') && !line.starts_with("  ") && line.ends_with(':') {
            // Another heading (`Network Drivers:` is under Optional; `System:`, `Limits:`).
            if section == Section::Necessary {
                section = Section::Other;
            }
        }
    }
    out
}

pub(super) fn check_config_verdict(
    cc: &CheckConfig,
    code: i64,
    binary: &str,
    command: &str,
) -> Line {
    if !cc.necessary.is_empty() || cc.pass == Some(false) {
        let what = if cc.necessary.is_empty() {
            format!("`{binary} check-config` failed (exit {code}): {}", cc.last)
        } else {
            format!(
                "`{binary} check-config` found generally necessary kernel options missing: {}",
                cc.necessary.join(", ")
            )
        };
        return Line::fail(
            "kernel-config",
            what,
            format!("use a kernel with them built in or as modules (load the modules: `modprobe`), or a host that has them; the whole report: `{command}`"),
        );
    }
    if cc.pass.is_none() {
        return Line::warn(
            "kernel-config",
            format!("`{binary} check-config` gave no verdict (exit {code}): {}", cc.last),
            format!("run it by hand: `{command}`; without /proc/config.gz or /boot/config-$(uname -r) it cannot read the kernel's config"),
        );
    }
    if !cc.optional.is_empty() {
        return Line::warn(
            "kernel-config",
            format!(
                "`{binary} check-config`: STATUS: pass, but optional kernel options are missing: {}",
                cc.optional.join(", ")
            ),
            format!("only features that need them are affected; the whole report: `{command}`"),
        );
    }
    Line::ok(
        "kernel-config",
        format!(
            "`{binary} check-config`: STATUS: pass ({} options checked)",
            cc.checked
        ),
    )
}
