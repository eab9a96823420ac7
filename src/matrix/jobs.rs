//! How many runs of a matrix go at once: a number, or `auto` — as many as the host's memory
//! holds, each run costing what its distribution says its nodes need (real k3s's figures, even
//! for the stand-in: a matrix that fits real k3s fits the stand-in).

use std::str::FromStr;

use crate::plan::Plan;
use crate::raw::Role;

/// The most runs at once (`--jobs`'s range, for a number and for `auto` alike).
pub(crate) const MAX_JOBS: usize = 64;

/// `--jobs`: a number of runs at once, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Jobs {
    Fixed(usize),
    Auto,
}

impl FromStr for Jobs {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(Jobs::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(Jobs::Fixed(n)),
            _ => Err(format!(
                "`{s}` is not a number of runs: give 1 to {MAX_JOBS}, or `auto` (as many as memory allows)"
            )),
        }
    }
}

/// What a plan's nodes need, in MiB, by its distribution's per-node figures.
pub(crate) fn plan_mib(plan: &Plan) -> u64 {
    nodes_mib(plan.distro, plan.nodes.iter().map(|n| n.role))
}

/// What nodes of these roles need, in MiB, by the distribution's per-node figures (a plan's,
/// or a topology's before any check is planned: `repro explore`).
pub(crate) fn nodes_mib(distro: distro::Distro, roles: impl Iterator<Item = Role>) -> u64 {
    let mem = &distro.facts().memory;
    roles
        .map(|role| match role {
            // An etcd-only server and a full one both run etcd; the figures have no
            // etcd-only line, so it counts as a full server (the larger, the safer).
            Role::Etcd | Role::All => mem.server_with_etcd_mib,
            Role::ControlPlane => mem.server_mib,
            Role::Agent => mem.agent_mib,
        })
        .sum()
}

/// What one run costs the host: its nodes' memory (MiB) and inotify instances (if known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunCost {
    pub(crate) mib: u64,
    pub(crate) inotify: Option<u64>,
}

impl RunCost {
    pub(crate) fn of_plan(p: &Plan, sim: bool) -> RunCost {
        RunCost {
            mib: plan_mib(p),
            inotify: crate::doctor::inotify_per_node(p.distro.facts(), sim)
                .map(|i| i * p.nodes.len() as u64),
        }
    }

    /// A run of every node of `t` (explore's runs: one topology, many sequences).
    pub(crate) fn of_topology(t: &crate::scenario::Topology, sim: bool) -> RunCost {
        RunCost {
            mib: nodes_mib(t.distro, t.nodes.iter().map(|n| n.role)),
            inotify: crate::doctor::inotify_per_node(t.distro.facts(), sim)
                .map(|i| i * t.nodes.len() as u64),
        }
    }
}

/// Runs at once when each run needs `per_run_mib` and the host has `available_mib`: at least
/// one (a matrix always makes progress; one run too big is the host-capacity check's to say),
/// at most one per cell and at most [`MAX_JOBS`].
pub(crate) fn auto_jobs(available_mib: u64, per_run_mib: u64, cells: usize) -> usize {
    let fits = available_mib.checked_div(per_run_mib).unwrap_or(u64::MAX);
    let fits = usize::try_from(fits).unwrap_or(usize::MAX);
    fits.min(cells).clamp(1, MAX_JOBS)
}

/// The host's available memory in MiB (`MemAvailable` of /proc/meminfo: what can be used
/// without swapping), or None where there is no such file.
pub(crate) fn available_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available_mib(&text)
}

fn mem_available_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// How many runs at once, and in words why (for the matrix's first line): by memory
/// (`auto`), then by the host's inotify instances for either — every node of every run holds
/// some (a systemd node ~10, the RKE2 stand-in's included), and a run that finds none free
/// ends with its journal follow lost, not with a verdict.
pub(crate) fn resolve(jobs: Jobs, plans: &[&Plan], sim: bool) -> (usize, Option<String>) {
    let costs: Vec<RunCost> = plans.iter().map(|p| RunCost::of_plan(p, sim)).collect();
    resolve_costs(jobs, &costs, plans.len())
}

/// [`resolve`] from what each run costs, for `runs` runs to make (`auto` never goes above).
pub(crate) fn resolve_costs(jobs: Jobs, costs: &[RunCost], runs: usize) -> (usize, Option<String>) {
    let (n, why) = resolve_memory(jobs, costs, runs);
    let per_run = costs.iter().filter_map(|c| c.inotify).max();
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    match (per_run, limit, crate::doctor::inotify_in_use()) {
        (Some(per_run), Some(limit), Some(used)) if per_run > 0 => {
            let fits = inotify_jobs(limit, used, per_run);
            if fits < n {
                let said = why.map(|w| format!("{w}; ")).unwrap_or_default();
                return (
                    fits,
                    Some(format!(
                        "{said}--jobs: {fits} at a time, not {n}: the host's inotify budget (fs.inotify.max_user_instances {limit}, {used} held now) fits {fits} run{} of about {per_run} instances each (`sysctl -w fs.inotify.max_user_instances=…` for more)",
                        if fits == 1 { "" } else { "s" }
                    )),
                );
            }
            (n, why)
        }
        _ => (n, why),
    }
}

/// Runs at once that the inotify instances left (`limit` − `used`) hold, `per_run` each: at
/// least one (one run too big is the run's own check to say).
pub(crate) fn inotify_jobs(limit: u64, used: u64, per_run: u64) -> usize {
    let free = limit.saturating_sub(used);
    usize::try_from(free.checked_div(per_run).unwrap_or(u64::MAX))
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_JOBS)
}

fn resolve_memory(jobs: Jobs, costs: &[RunCost], runs: usize) -> (usize, Option<String>) {
    match jobs {
        Jobs::Fixed(n) => (n, None),
        Jobs::Auto => {
            let per_run = costs.iter().map(|c| c.mib).max().unwrap_or(0);
            match available_mib() {
                Some(avail) => {
                    let n = auto_jobs(avail, per_run, runs);
                    (
                        n,
                        Some(format!(
                            "--jobs auto: {avail} MiB available, {per_run} MiB per run (the largest topology)"
                        )),
                    )
                }
                None => (
                    1,
                    Some(
                        "--jobs auto: the host's memory is unknown (no /proc/meminfo), so 1".into(),
                    ),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four RKE2 stand-in runs of three systemd nodes (~30 instances each) with 128 allowed and
    /// 20 held: three fit, not four (#30).
    #[test]
    fn inotify_bounds_runs_at_once() {
        assert_eq!(inotify_jobs(128, 20, 30), 3);
        assert_eq!(inotify_jobs(128, 127, 30), 1, "never fewer than one");
        assert_eq!(inotify_jobs(8192, 0, 30), 64.min(MAX_JOBS));
    }

    #[test]
    fn auto_is_what_memory_holds_bounded_by_cells_and_the_maximum() {
        // etcd-split: 3 etcd servers (1606 MiB) + 1 control-plane server (1596 MiB) = 6414 MiB.
        let per_run = 3 * 1606 + 1596;
        assert_eq!(per_run, 6414);
        assert_eq!(auto_jobs(23_375, per_run, 8), 3);
        assert_eq!(auto_jobs(6_414, per_run, 8), 1);
        assert_eq!(auto_jobs(6_413, per_run, 8), 1, "never fewer than one");
        assert_eq!(
            auto_jobs(1_000_000, per_run, 8),
            8,
            "never more than the cells"
        );
        assert_eq!(auto_jobs(10_000_000, per_run, 500), MAX_JOBS);
        assert_eq!(
            auto_jobs(1_000, 0, 5),
            5,
            "a plan without nodes costs nothing"
        );
        assert_eq!(auto_jobs(1_000, 100, 0), 1);
    }

    #[test]
    fn a_plan_costs_its_nodes_by_the_distributions_figures() {
        let target = crate::run::Target {
            version: Some("v1.33.4+k3s1".into()),
            ..crate::run::Target::of("etcd-split", true, None)
        };
        let (_, plan) = crate::cmd::common::resolve(None, &target).expect("etcd-split plans");
        let mem = &plan.distro.facts().memory;
        let etcd = plan.nodes.iter().filter(|n| n.role == Role::Etcd).count() as u64;
        let cp = plan
            .nodes
            .iter()
            .filter(|n| n.role == Role::ControlPlane)
            .count() as u64;
        assert_eq!((etcd, cp), (3, 1), "etcd-split's topology");
        assert_eq!(
            plan_mib(&plan),
            etcd * mem.server_with_etcd_mib + cp * mem.server_mib
        );
    }

    #[test]
    fn mem_available_is_read_in_mib() {
        let text = "MemTotal:       24683520 kB\nMemFree:          459776 kB\nMemAvailable:   23936000 kB\n";
        assert_eq!(mem_available_mib(text), Some(23_375));
        assert_eq!(mem_available_mib("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn jobs_parse_numbers_in_range_and_auto() {
        assert_eq!("auto".parse(), Ok(Jobs::Auto));
        assert_eq!("3".parse(), Ok(Jobs::Fixed(3)));
        assert_eq!("64".parse(), Ok(Jobs::Fixed(64)));
        for bad in ["0", "65", "-1", "two", ""] {
            let e = bad.parse::<Jobs>().unwrap_err();
            assert!(e.contains("1 to 64, or `auto`"), "{bad}: {e}");
        }
    }
}
