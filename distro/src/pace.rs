//! How long each phase of a boot takes on real k3s: the model `--sim-pace F` plays in the
//! stand-in (which sleeps F × each phase where it happens, sim/src/pace.rs) and the one
//! `repro plan --sim --sim-pace F` adds up into a run's critical path. One table, shared by both
//! crates, so what the plan predicts and what the stand-in does cannot drift apart.
//!
//! Every figure comes from the timestamps of a real k3s log or, where no public log has both
//! ends of a phase, from an interval in k3s's code; `source` says which, and
//! docs/k3s-review-2026-12.md §9 has the table with links. The figures are orders of magnitude
//! (different versions and machines), not a benchmark of any one release. RKE2 boots run the
//! same model: no RKE2 timings are sourced yet.

/// The environment variable that turns pacing on in the stand-in: the factor F (1 = real k3s
/// timings, 0.5 = twice as fast). Unset: no pacing.
pub const PACE_ENV: &str = "REPRO_SIM_PACE";

/// The largest factor `--sim-pace` takes: ten times slower than real k3s is already a
/// 10-minute bring-up of a 4-node cluster.
pub const MAX_PACE: f64 = 10.0;

/// One phase of a boot, as the stand-in plays it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The init server creates the cluster's datastore (`Managed etcd cluster initializing` →
    /// etcd up).
    Init,
    /// A joining server bootstraps from the server it joins, up to etcd's `MemberAdd`.
    Join,
    /// A joined etcd member runs as a learner until the leader promotes it (`Adding member` →
    /// `promote member`); only then is it ready.
    Promotion,
    /// `Running kube-apiserver` → `Kube API server is now running`.
    Apiserver,
    /// The agent half: containerd up (`Running containerd` → `containerd is now running`).
    Agent,
    /// An existing etcd member starts again (`Starting etcd for existing cluster member` →
    /// etcd ready).
    Restart,
}

/// A phase's duration on real k3s and where the figure comes from.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub phase: Phase,
    /// Its name in the stand-in's log line and in `repro plan`.
    pub name: &'static str,
    pub seconds: f64,
    pub source: &'static str,
}

/// The model (F = 1). Sums: an etcd-only init server 4.0 s, an init server with an apiserver
/// 6.0 s (k3d #512's single-server boot), an etcd joiner 8.45 s, a control-plane-only joiner
/// 4.05 s, a restarted etcd member 12.0 s (k3s #5334).
pub static TIMINGS: [Timing; 6] = [
    Timing {
        phase: Phase::Init,
        name: "init",
        seconds: 2.0,
        source: "k3d #512: a single server from `Starting Node` (INFO[0001]) to k3d's wait for `k3s is up and running` ending (INFO[0007]) takes 6 s; minus the apiserver's 2.0 s and the agent's 2.0 s",
    },
    Timing {
        phase: Phase::Join,
        name: "join",
        seconds: 0.05,
        source: "fixture k3s-4785-etcd-start-v121-tty: `Containerd is now running` 09:00:46.860 → `Starting etcd for cluster` 09:00:46.906 (46 ms)",
    },
    Timing {
        phase: Phase::Promotion,
        name: "learner-promotion",
        seconds: 6.4,
        source: "fixture k3s-12794-etcd-learner-promoted (k3s #12794, CI): `Adding member` 23:45:32 → etcd `promote member` 23:45:38.405",
    },
    Timing {
        phase: Phase::Apiserver,
        name: "apiserver",
        seconds: 2.0,
        source: "k3s's code, no log with both ends: the apiserver readiness poll (`/readyz`) runs every 2 s; one poll",
    },
    Timing {
        phase: Phase::Agent,
        name: "agent",
        seconds: 2.0,
        source: "fixture k3s-2547-agent-start-order-tty (k3s #2547): agent banner 16:06:28.137 → `Containerd is now running` 16:06:30.161",
    },
    Timing {
        phase: Phase::Restart,
        name: "restart",
        seconds: 10.0,
        source: "fixture k3s-5334-etcd-ready-after-reset-tty (k3s #5334): a restarted etcd server logs `k3s is up and running` at INFO[0012] (12 s after process start); minus the agent's 2.0 s",
    },
];

/// The timing of one phase.
pub fn timing(phase: Phase) -> &'static Timing {
    TIMINGS
        .iter()
        .find(|t| t.phase == phase)
        .unwrap_or(&TIMINGS[0])
}

/// What a boot is, for the phases it goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Boot {
    pub server: bool,
    pub runs_etcd: bool,
    pub runs_apiserver: bool,
    /// The init node's first boot (it creates the cluster).
    pub init: bool,
    /// The node's first boot (a later one finds its etcd data: a restart).
    pub first: bool,
}

/// The phases of a boot, in the order the stand-in plays them (sim/src/node.rs, agent.rs).
pub fn phases(b: Boot) -> Vec<Phase> {
    let mut out = Vec::new();
    if b.server {
        match (b.runs_etcd, b.init, b.first) {
            (true, _, false) => out.push(Phase::Restart),
            (true, true, true) => out.push(Phase::Init),
            (true, false, true) => out.extend([Phase::Join, Phase::Promotion]),
            // A control-plane-only server bootstraps from its server on every start.
            (false, _, _) => out.push(Phase::Join),
        }
        if b.runs_apiserver {
            out.push(Phase::Apiserver);
        }
    }
    out.push(Phase::Agent);
    out
}

/// How long the boot takes on real k3s (F = 1), in seconds.
pub fn boot_seconds(b: Boot) -> f64 {
    phases(b).iter().map(|p| timing(*p).seconds).sum()
}

/// A `--sim-pace` factor, as typed: a finite number above 0 and at most [`MAX_PACE`].
pub fn parse_pace(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 && f <= MAX_PACE => Ok(f),
        _ => Err(format!(
            "`{s}` is not a pace: write a factor above 0 and at most {MAX_PACE} (1 = real k3s timings, 0.5 = twice as fast)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(server: bool, etcd: bool, api: bool, init: bool, first: bool) -> Boot {
        Boot {
            server,
            runs_etcd: etcd,
            runs_apiserver: api,
            init,
            first,
        }
    }

    #[test]
    fn every_phase_has_one_timing_with_a_source() {
        for p in [
            Phase::Init,
            Phase::Join,
            Phase::Promotion,
            Phase::Apiserver,
            Phase::Agent,
            Phase::Restart,
        ] {
            assert_eq!(TIMINGS.iter().filter(|t| t.phase == p).count(), 1, "{p:?}");
            let t = timing(p);
            assert!(t.seconds > 0.0 && !t.source.is_empty(), "{p:?}");
        }
    }

    #[test]
    fn boots_add_up_to_the_documented_sums() {
        for (what, b, seconds) in [
            ("etcd-only init", boot(true, true, false, true, true), 4.0),
            // k3d #512's 6 s.
            (
                "init with an apiserver",
                boot(true, true, true, true, true),
                6.0,
            ),
            ("etcd joiner", boot(true, true, false, false, true), 8.45),
            ("cp-only joiner", boot(true, false, true, false, true), 4.05),
            // k3s #5334's 12 s.
            (
                "restarted etcd member",
                boot(true, true, false, false, false),
                12.0,
            ),
            ("agent", boot(false, false, false, false, true), 2.0),
        ] {
            let got = boot_seconds(b);
            assert!(
                (got - seconds).abs() < 1e-9,
                "{what}: {got} s, not {seconds} s"
            );
        }
    }

    #[test]
    fn pace_factors() {
        assert_eq!(parse_pace("0.5"), Ok(0.5));
        assert_eq!(parse_pace("1"), Ok(1.0));
        for bad in ["0", "-1", "nan", "inf", "11", "fast", ""] {
            let e = parse_pace(bad).expect_err(bad);
            assert!(e.contains("above 0 and at most 10"), "{e}");
        }
    }
}
