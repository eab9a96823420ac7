//! Which distribution the stand-in plays this time, and the names k3s's code builds from the
//! program name (`version.Program`), so that one binary plays k3s and rke2.
//!
//! RKE2 is k3s linked with `version.Program=rke2` (docs/rke2-behaviour.md §1): every path,
//! supervisor route, load-balancer name, environment variable and log line k3s makes from the
//! program name says `rke2` instead. The stand-in does the same: each such string is made here
//! from the facts of the `distro` crate, never spelled in the stand-in's modules.
//!
//! The choice, once per process: the name it was called by (`/usr/local/bin/rke2` as rke2's
//! units run it, `/bin/k3s` in the k3s images), else — called as `kubectl` or `rm` — the
//! version variable the image sets (`REPRO_SIM_RKE2_VERSION`), else k3s.

use std::sync::OnceLock;

pub use distro::Distro;

/// The distribution this process plays.
pub fn current() -> Distro {
    static CURRENT: OnceLock<Distro> = OnceLock::new();
    *CURRENT.get_or_init(|| {
        let argv0 = std::env::args().next().unwrap_or_default();
        detect(&argv0, &|k| std::env::var(k).ok())
    })
}

/// Its facts (paths, ports, lines): the `distro` crate's.
pub fn facts() -> &'static distro::Facts {
    current().facts()
}

/// `current`'s rule, without the process's argv and environment (for tests).
pub fn detect(argv0: &str, env: &dyn Fn(&str) -> Option<String>) -> Distro {
    let program = argv0.rsplit('/').next().unwrap_or(argv0);
    if let Some(d) = Distro::ALL.iter().find(|d| d.facts().binary == program) {
        return *d;
    }
    Distro::ALL
        .iter()
        .copied()
        .find(|d| env(d.facts().sim_version_env).is_some_and(|v| !v.is_empty()))
        .unwrap_or_default()
}

/// `version.ProgramUpper`: `K3S`, `RKE2` (the prefix of every environment variable).
pub fn program_upper() -> String {
    facts().name.to_ascii_uppercase()
}

/// An environment variable k3s names after the program: `CONFIG_FILE` → `RKE2_CONFIG_FILE`.
pub fn env_name(suffix: &str) -> String {
    format!("{}_{suffix}", program_upper())
}

/// A supervisor route: `config` → `/v1-rke2/config` (k3s's `"/v1-" + version.Program`).
pub fn supervisor_path(rest: &str) -> String {
    format!("/v1-{}/{rest}", facts().name)
}

/// The rest of a supervisor route (`/v1-rke2/config` → `config`), if `path` is one.
pub fn supervisor_route(path: &str) -> Option<&str> {
    path.strip_prefix("/v1-")?
        .strip_prefix(facts().name)?
        .strip_prefix('/')
}

/// The agent's supervisor load balancer: `k3s-agent-load-balancer`, `rke2-agent-load-balancer`
/// (k3s pkg/agent/loadbalancer `SupervisorServiceName`).
pub fn agent_load_balancer() -> String {
    format!("{}-agent-load-balancer", facts().name)
}

/// Whether every server sets `ClusterInit` itself: rke2 drops the `cluster-init` flag and
/// forces it on (pkg/cli/defaults, docs/rke2-behaviour.md §5); k3s has the key.
pub fn forces_cluster_init() -> bool {
    facts().role_keys.init.is_none()
}

/// The commit a banner and `-v` print: rke2 prints the full 40-hex `git rev-parse HEAD`,
/// k3s 8 hex (docs/rke2-behaviour.md §4). The stand-in has no commit; it says so in the shape
/// the distribution uses.
pub fn commit() -> &'static str {
    match current() {
        Distro::Rke2 => "0000000000000000000000000000000000000000",
        Distro::K3s => "repro-sim",
    }
}

/// Where kubectl is on a node of a distribution without a `kubectl` subcommand: rke2 stages
/// its runtime image at start and links `<data-dir>/bin` to it (pkg/bootstrap, §2), so the
/// facts' kubectl is an absolute path under the data dir. The stand-in links that path to
/// itself (it answers as `kubectl`); with a `k3s kubectl`-style command there is nothing to do.
pub fn stage_kubectl() {
    let [path] = facts().kubectl else {
        return;
    };
    let path = std::path::Path::new(path);
    if !path.is_absolute() || path.symlink_metadata().is_ok() {
        return;
    }
    let staged = std::env::current_exe().and_then(|exe| {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::os::unix::fs::symlink(exe, path)
    });
    if let Err(e) = staged {
        crate::logs::warn(format!(
            "repro-sim: cannot link {} to the stand-in: {e}",
            path.display()
        ));
    }
}

/// A standalone agent's end of start-up: under systemd (`NOTIFY_SOCKET` set, as rke2-agent's
/// `Type=notify` unit sets it) k3s's agent logs `<program> agent is up and running` and then
/// notifies (k3s pkg/agent/run.go, which rke2 runs); in a container without systemd it does
/// neither — k3s agents in containers never print the line.
pub fn agent_ready() {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    crate::logs::info(facts().agent_ready_line);
    notify_ready();
}

/// systemd's readiness notification for a `Type=notify` unit (rke2's are): k3s calls
/// `systemd.SdNotify(true, "READY=1\n")` right after its "is up and running" line. Outside a
/// unit (`NOTIFY_SOCKET` unset, as in the k3s images) it does nothing.
pub fn notify_ready() {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send_notify(&path, b"READY=1\n") {
        crate::logs::warn(format!("repro-sim: sd_notify READY=1 failed: {e}"));
    }
}

fn send_notify(path: &std::ffi::OsStr, msg: &[u8]) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    // `@name` is an abstract socket (systemd's own form for it).
    let addr = match bytes.strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name)?,
        None => SocketAddr::from_pathname(std::path::Path::new(path))?,
    };
    sock.send_to_addr(msg, &addr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_it_is_called_by_decides_then_the_image_variable() {
        let none = |_: &str| None;
        assert_eq!(detect("/usr/local/bin/rke2", &none), Distro::Rke2);
        assert_eq!(detect("/bin/k3s", &none), Distro::K3s);
        assert_eq!(detect("kubectl", &none), Distro::K3s);
        let rke2_image =
            |k: &str| (k == "REPRO_SIM_RKE2_VERSION").then(|| "v1.32.5+rke2r1".to_string());
        assert_eq!(
            detect("/var/lib/rancher/rke2/bin/kubectl", &rke2_image),
            Distro::Rke2
        );
        // The name wins over the variable.
        assert_eq!(detect("/bin/k3s", &rke2_image), Distro::K3s);
    }

    #[test]
    fn notify_reaches_a_listening_socket() {
        let dir = std::env::temp_dir().join(format!("repro-sim-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let listener = std::os::unix::net::UnixDatagram::bind(&dir).expect("bind");
        send_notify(dir.as_os_str(), b"READY=1\n").expect("send");
        let mut buf = [0u8; 16];
        let n = listener.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"READY=1\n");
        let _ = std::fs::remove_file(&dir);
    }
}
