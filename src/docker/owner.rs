//! Which process made an object, so that what a killed process left can be told from what a
//! process still running (or a `--keep` run) owns. A process that gets SIGKILL (a CI job's
//! timeout, a session that ends, the OOM killer) cannot clean up; its containers, networks and
//! volumes stay. Every object a run makes carries [`LABEL_OWNER`]: this host's boot id, this
//! process's PID namespace, its PID and its start time (`/proc/self/stat` field 22, so a PID
//! used again by another process is not taken for it). `repro clean --orphans` removes a run
//! only when its owner is provably gone; a kept run ([`LABEL_KEPT`]) and an owner it cannot see
//! (another host's engine, another PID namespace, an object of a repro without the label) are
//! left alone, with why.

use std::sync::OnceLock;

/// The process that made the object: `<boot id>/<pid namespace>/<pid>/<start time>`.
pub(crate) const LABEL_OWNER: &str = "io.repro.owner";
/// Set on the objects of a `--keep` run: left on purpose, never an orphan.
pub(crate) const LABEL_KEPT: &str = "io.repro.kept";

/// This process's owner label value (read once; empty parts where /proc has none).
pub(crate) fn this_process() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| {
        let pid = std::process::id();
        format!(
            "{}/{}/{pid}/{}",
            boot_id().unwrap_or_default(),
            pid_namespace().unwrap_or_default(),
            start_time(pid).unwrap_or_default()
        )
    })
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

/// `pid:[4026531836]`'s number: two processes see each other's PIDs only in one namespace.
fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_string_lossy();
    Some(
        text.trim_start_matches("pid:[")
            .trim_end_matches(']')
            .to_string(),
    )
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat` field 22), if it runs.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_time_of(&stat)
}

/// Field 22 of a `/proc/PID/stat` line; the command (field 2) may hold spaces and parentheses,
/// so the fields are counted from its last `)`.
fn start_time_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // after `)`: field 3 (state) is the first
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether an object's owner still runs, as this process can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Its process runs (or may: this is it).
    Alive,
    /// Its process is gone: why that is certain.
    Gone(String),
    /// Cannot tell from here: why.
    Unknown(String),
}

/// What `label` (an object's [`LABEL_OWNER`], if any) says of its owner, seen by the process
/// `here` ([`this_process`]) on an engine that is on this host (`local`) or not; `running(pid)`
/// is the start time of the process with that PID here, if one runs (pure but for it).
pub(crate) fn judge(
    label: Option<&str>,
    here: &str,
    local: bool,
    running: impl Fn(u32) -> Option<u64>,
) -> Owner {
    let Some(label) = label.filter(|l| !l.is_empty()) else {
        return Owner::Unknown("made by a repro that did not label its owner".into());
    };
    let parts: Vec<&str> = label.split('/').collect();
    let [boot, ns, pid, start] = parts[..] else {
        return Owner::Unknown(format!("owner label {label:?} is not one repro writes"));
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return Owner::Unknown(format!("owner label {label:?} is not one repro writes"));
    };
    let mine: Vec<&str> = here.split('/').collect();
    let (my_boot, my_ns) = (mine.first().copied(), mine.get(1).copied());
    if !local {
        return Owner::Unknown(
            "the engine is on another host: its processes cannot be seen from here".into(),
        );
    }
    if boot.is_empty() || my_boot.is_none_or(str::is_empty) {
        return Owner::Unknown("this host's boot id cannot be read".into());
    }
    if Some(boot) != my_boot {
        return Owner::Gone(format!(
            "its process {pid} ran before this host last booted"
        ));
    }
    if Some(ns) != my_ns {
        return Owner::Unknown(format!(
            "its process {pid} ran in another PID namespace (a container?), which this one cannot see"
        ));
    }
    match running(pid) {
        Some(t) if t == start => Owner::Alive,
        Some(_) => Owner::Gone(format!(
            "its process {pid} is gone (the PID is another process's now)"
        )),
        None => Owner::Gone(format!("its process {pid} is gone")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: &str = "b00t/4026531836/100/5000";

    #[test]
    fn an_owner_is_gone_only_when_this_host_can_tell() {
        let none = |_| None;
        let alive = |_| Some(7000);
        let reused = |_| Some(9999);
        let l = Some("b00t/4026531836/200/7000");
        assert_eq!(judge(l, HERE, true, alive), Owner::Alive);
        assert!(matches!(judge(l, HERE, true, none), Owner::Gone(w) if w.contains("200 is gone")));
        assert!(
            matches!(judge(l, HERE, true, reused), Owner::Gone(w) if w.contains("another process"))
        );
        // rebooted since: gone whatever runs under that PID now
        let old = Some("0ld/4026531836/200/7000");
        assert!(matches!(judge(old, HERE, true, alive), Owner::Gone(w) if w.contains("booted")));
        // cannot tell: a remote engine, another PID namespace, no label, a foreign label
        assert!(matches!(judge(l, HERE, false, none), Owner::Unknown(_)));
        let other_ns = Some("b00t/4026532000/200/7000");
        assert!(
            matches!(judge(other_ns, HERE, true, none), Owner::Unknown(w) if w.contains("namespace"))
        );
        assert!(matches!(judge(None, HERE, true, none), Owner::Unknown(_)));
        assert!(matches!(
            judge(Some("x/y"), HERE, true, none),
            Owner::Unknown(_)
        ));
        assert!(matches!(
            judge(Some("b00t/4026531836/p/7000"), HERE, true, none),
            Owner::Unknown(_)
        ));
        // this host's boot id unreadable: nothing is certain
        assert!(matches!(
            judge(l, "/4026531836/100/5000", true, none),
            Owner::Unknown(_)
        ));
    }

    #[test]
    fn the_start_time_is_field_22_counted_after_the_command() {
        let stat = "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 2 18446744073709551615";
        assert_eq!(start_time_of(stat), Some(123456));
        assert_eq!(start_time_of("garbage"), None);
        let me = this_process();
        let parts: Vec<&str> = me.split('/').collect();
        assert_eq!(parts.len(), 4, "{me}");
        assert_eq!(parts[2], std::process::id().to_string());
        // this process is alive by its own label
        let local = judge(Some(me), me, true, start_time);
        assert_eq!(local, Owner::Alive, "{me}");
    }
}
