//! The PID 1 rule of k3s on cgroup v2 hosts.
//!
//! The kubelet must enable controllers in the root cgroup's
//! `cgroup.subtree_control`, which the kernel refuses while processes live in
//! the root cgroup. k3s moves itself out (`EvacuateCgroup2`,
//! pkg/cli/cmds/init_linux.go) only when it runs as PID 1; under docker-init
//! (`docker run --init`, Docker's `Init: true`) it is not PID 1, and unless an
//! entrypoint evacuated the root cgroup first (k3d's
//! `k3d-entrypoint-cgroupv2.sh`), the kubelet fails with the lines below
//! (k3s issue #4085) and the process exits.
//!
//! These machines are cgroup v1, so `REPRO_SIM_CGROUP=v2` makes the stand-in
//! act as on a v2 host (`v1` forces the other way; default: look at the host).

use std::path::Path;

pub const CGROUP_ENV: &str = "REPRO_SIM_CGROUP";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// What the stand-in needs to decide, read from the process's surroundings.
#[derive(Clone, Debug)]
pub struct Facts {
    /// `REPRO_SIM_CGROUP` as given.
    pub knob: Option<String>,
    /// `/sys/fs/cgroup/cgroup.controllers` exists (a unified hierarchy).
    pub host_is_v2: bool,
    pub pid: u32,
    /// `/proc/self/cgroup`.
    pub proc_self_cgroup: String,
}

impl Facts {
    pub fn read() -> Facts {
        Facts {
            knob: std::env::var(CGROUP_ENV).ok(),
            host_is_v2: Path::new("/sys/fs/cgroup/cgroup.controllers").exists(),
            pid: std::process::id(),
            proc_self_cgroup: std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
        }
    }

    pub fn version(&self) -> (Version, Option<String>) {
        match self.knob.as_deref().map(str::trim) {
            Some("v2" | "2") => (Version::V2, None),
            Some("v1" | "1") => (Version::V1, None),
            None | Some("" | "auto") => (self.detected(), None),
            Some(other) => (
                self.detected(),
                Some(format!(
                    "repro-sim: {CGROUP_ENV}={other:?} is not one of v1, v2, auto; looking at the host"
                )),
            ),
        }
    }

    fn detected(&self) -> Version {
        if self.host_is_v2 {
            Version::V2
        } else {
            Version::V1
        }
    }

    /// The process is out of the root cgroup: k3s evacuates it itself as
    /// PID 1, or an entrypoint moved it (cgroup v2 path not `/`). Only a real
    /// unified hierarchy says the latter; a v1 host acting as v2 has none
    /// (hybrid hosts list their own `0::` line, which proves nothing).
    pub fn root_cgroup_evacuated(&self) -> bool {
        if self.pid == 1 {
            return true;
        }
        self.host_is_v2
            && self
                .proc_self_cgroup
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .is_some_and(|path| path.trim() != "/")
    }

    /// The kubelet's failure, or `None` when it can set up its cgroups.
    pub fn kubelet_failure(&self) -> Option<Vec<String>> {
        if self.version().0 == Version::V1 || self.root_cgroup_evacuated() {
            return None;
        }
        let err = r#"cannot enter cgroupv2 \"/sys/fs/cgroup/kubepods\" with domain controllers -- it is in an invalid state"#;
        Some(vec![
            klog(
                'E',
                self.pid,
                "node_container_manager_linux.go:60",
                &format!(r#""Failed to create cgroup" err="{err}" cgroupName=[kubepods]"#),
            ),
            klog(
                'E',
                self.pid,
                "kubelet.go:1423",
                &format!(r#""Failed to start ContainerManager" err="{err}""#),
            ),
        ])
    }
}

/// A klog header line: `E0927 22:36:42.258152     123 file.go:60] msg`
/// (the kubelet runs inside the k3s process and logs with klog).
pub fn klog(level: char, pid: u32, source: &str, msg: &str) -> String {
    let (month, day, h, m, s, micros) = crate::logs::utc_parts(std::time::SystemTime::now());
    format!("{level}{month:02}{day:02} {h:02}:{m:02}:{s:02}.{micros:06} {pid:>7} {source}] {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(knob: Option<&str>, v2: bool, pid: u32, cgroup: &str) -> Facts {
        Facts {
            knob: knob.map(str::to_string),
            host_is_v2: v2,
            pid,
            proc_self_cgroup: cgroup.to_string(),
        }
    }

    #[test]
    fn v1_hosts_never_fail() {
        assert!(facts(None, false, 7, "12:memory:/docker/x\n")
            .kubelet_failure()
            .is_none());
        assert!(facts(Some("v1"), true, 7, "0::/\n")
            .kubelet_failure()
            .is_none());
    }

    #[test]
    fn v2_without_pid1_or_evacuation_fails_like_the_kubelet() {
        // A hybrid v1 host acting as v2: its own `0::` line is no evacuation.
        let lines = facts(Some("v2"), false, 7, "12:memory:/docker/x\n0::/docker/x\n")
            .kubelet_failure()
            .expect("fails");
        assert_eq!(lines.len(), 2);
        assert!(lines[1].starts_with('E'));
        assert!(lines[1].ends_with(r#"kubelet.go:1423] "Failed to start ContainerManager" err="cannot enter cgroupv2 \"/sys/fs/cgroup/kubepods\" with domain controllers -- it is in an invalid state""#), "{}", lines[1]);
        assert!(lines[0]
            .contains("      7 node_container_manager_linux.go:60] \"Failed to create cgroup\""));
        assert!(facts(None, true, 7, "0::/\n").kubelet_failure().is_some());
    }

    #[test]
    fn pid1_or_an_evacuating_entrypoint_passes() {
        assert!(facts(Some("v2"), false, 1, "").kubelet_failure().is_none());
        assert!(facts(None, true, 9, "0::/init\n")
            .kubelet_failure()
            .is_none());
    }

    #[test]
    fn bad_knob_warns_and_looks_at_the_host() {
        let (v, warning) = facts(Some("3"), true, 9, "").version();
        assert_eq!(v, Version::V2);
        assert!(warning.is_some());
    }
}
