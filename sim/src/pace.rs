//! Real-k3s timings (`REPRO_SIM_PACE=F`, from `repro run --sim-pace F`): at each phase of a boot
//! the stand-in sleeps F × what the phase takes on real k3s (the table and its sources are in
//! `distro::pace`, shared with `repro plan`'s critical path). The sleep is the point: it models
//! time real k3s spends, so repro's own waits can be measured against it. Unset, nothing
//! sleeps and boots take milliseconds.

use std::sync::OnceLock;
use std::time::Duration;

use distro::pace::{self, Phase};

use crate::logs;

/// The factor, read once: `None` when pacing is off or the value is not a pace (warned).
fn factor() -> Option<f64> {
    static FACTOR: OnceLock<Option<f64>> = OnceLock::new();
    *FACTOR.get_or_init(|| {
        let raw = std::env::var(pace::PACE_ENV).ok()?;
        match pace::parse_pace(&raw) {
            Ok(f) => Some(f),
            Err(e) => {
                logs::warn(format!(
                    "repro-sim: {}: {e}; boots are not paced",
                    pace::PACE_ENV
                ));
                None
            }
        }
    })
}

/// Plays one phase: logs it (the e2e tests find the paced phases in the node logs) and sleeps
/// its modelled time. Without pacing: nothing.
pub fn phase(p: Phase) {
    let Some(f) = factor() else { return };
    let t = pace::timing(p);
    let secs = t.seconds * f;
    logs::info(format!(
        "repro-sim: paced {} {secs:.2}s ({}s on real k3s x {f})",
        t.name, t.seconds
    ));
    std::thread::sleep(Duration::from_secs_f64(secs));
}
