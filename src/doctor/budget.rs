//! The host's inotify budget, claimed by a run before it creates a node (#30): runs started at
//! once each see the instances free *now*, before any of them has a node, so each would pass a
//! check of what is in use alone and all of them would then run out together (four RKE2
//! stand-in runs of five systemd nodes need ~200 of the default 128). So a run that passes also
//! writes what it will take into a ledger of this user's runs ([`claim`]), under a lock, and
//! the next run counts those claims as used; a claim shrinks as its nodes come up (their
//! instances are then in what `/proc` shows) and goes with the run, or with its process.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::host::{inotify_in_use, read_number};
use super::limits::INOTIFY_INSTANCES_SYSTEMD_NODE;

/// What one run's check weighs: the limit, what is held and claimed, what the run needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// `fs.inotify.max_user_instances`.
    pub(crate) limit: u64,
    /// Instances root's processes hold now (every container of the engine counts).
    pub(crate) held: u64,
    /// Instances other repro runs have claimed for nodes not up yet, and how many runs.
    pub(crate) claimed: u64,
    pub(crate) claims: usize,
    /// The run's systemd nodes.
    pub(crate) nodes: u64,
}

impl Budget {
    pub(crate) fn need(&self) -> u64 {
        self.nodes * INOTIFY_INSTANCES_SYSTEMD_NODE
    }

    fn free(&self) -> u64 {
        self.limit.saturating_sub(self.held + self.claimed)
    }

    /// `Err(why, with the fix)` when the run's nodes do not fit in what is free.
    pub(crate) fn judge(&self) -> Result<(), String> {
        let need = self.need();
        if need <= self.free() {
            return Ok(());
        }
        let others = match self.claims {
            0 => String::new(),
            1 => format!(
                " and {} claimed by 1 other repro run whose nodes are not up yet",
                self.claimed
            ),
            n => format!(
                " and {} claimed by {n} other repro runs whose nodes are not up yet",
                self.claimed
            ),
        };
        let raise = (self.held + self.claimed + need)
            .next_power_of_two()
            .max(self.limit * 2);
        let help = format!(
            "run fewer at once, or raise the limit: `sudo sysctl -w fs.inotify.max_user_instances={raise}` (`repro doctor` shows the budget; --no-host-check skips this check)"
        );
        Err(format!(
            "the host's inotify budget: fs.inotify.max_user_instances is {limit}; {held} instances are held by root's processes now{others}, {free} free; this run's {nodes} systemd nodes need about {need} ({per} each: systemd as PID 1, journald, logind, udevd and the unit, as measured in #30) — nothing was created{help}",
            limit = self.limit,
            held = self.held,
            free = self.free(),
            nodes = self.nodes,
            per = INOTIFY_INSTANCES_SYSTEMD_NODE,
            help = crate::diag::Help(help),
        ))
    }
}

/// A run's claim in the ledger: the file that says how many instances it still needs.
pub(crate) struct Claim {
    path: PathBuf,
    nodes: u64,
    ready: Mutex<HashSet<String>>,
}

impl Claim {
    /// `node` is up: its instances are in what `/proc` shows from now on, so the claim drops
    /// them (each node once, whatever its boot).
    pub(crate) fn node_ready(&self, node: &str) {
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        if ready.insert(node.to_string()) {
            let left = self.nodes.saturating_sub(ready.len() as u64);
            // Written whole to a new file, then renamed over: a reader never sees half of it.
            let tmp = self.path.with_extension("new");
            if write_claim(&tmp, left * INOTIFY_INSTANCES_SYSTEMD_NODE).is_ok() {
                let _ = std::fs::rename(&tmp, &self.path);
            }
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Checks that `nodes` systemd nodes fit in the host's inotify budget and claims them for run
/// `run_id`. `Ok(None)`: nothing to claim, or the budget cannot be read (`repro doctor`
/// says so); `Err`: the refusal, naming the limit, the numbers and the fix.
pub(crate) fn claim(run_id: &str, nodes: u64) -> Result<Option<Claim>, String> {
    if nodes == 0 {
        return Ok(None);
    }
    let Some(limit) = read_number("/proc/sys/fs/inotify/max_user_instances") else {
        return Ok(None);
    };
    let ledger = ledger_dir().filter(|d| private_dir(d));
    // Held while the others' claims are read and ours written, so two runs never both count
    // the same free instances.
    let _lock = ledger.as_deref().and_then(lock);
    let (claimed, claims) = ledger
        .as_deref()
        .map(|d| read_claims(d, run_id))
        .unwrap_or((0, 0));
    let Some(held) = inotify_in_use() else {
        return Ok(None);
    };
    let budget = Budget {
        limit,
        held,
        claimed,
        claims,
        nodes,
    };
    budget.judge()?;
    let Some(dir) = ledger else {
        return Ok(None);
    };
    let path = dir.join(run_id);
    Ok(write_claim(&path, budget.need()).ok().map(|()| Claim {
        path,
        nodes,
        ready: Mutex::default(),
    }))
}

/// What other runs have claimed now, and how many runs (`repro doctor`'s inotify line): read
/// without the lock, for a report, not a decision.
pub(crate) fn claimed_now() -> (u64, usize) {
    ledger_dir()
        .filter(|d| private_dir(d))
        .map(|d| read_claims(&d, ""))
        .unwrap_or((0, 0))
}

/// `$XDG_RUNTIME_DIR/repro-inotify`, else `/tmp/repro-inotify-<uid>`: one ledger per user, which
/// every repro process of the user finds.
fn ledger_dir() -> Option<PathBuf> {
    let uid = my_uid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("repro-inotify"),
        None => std::env::temp_dir().join(format!("repro-inotify-{uid}")),
    };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    Some(dir)
}

/// This process's uid, as /proc shows its owner (no `unsafe` call needed).
fn my_uid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0)
}

/// Only a folder of ours that no one else may write is trusted: another user's planted folder
/// could hide claims or hold the lock forever.
fn private_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == my_uid() && m.mode() & 0o077 == 0)
}

fn lock(dir: &Path) -> Option<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join("lock"))
        .ok()?;
    // Released when the file is closed.
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
        .ok()
        .map(|()| f)
}

/// Instances the other live runs have claimed, and how many runs; claims of processes that
/// are gone (a run killed with SIGKILL) are removed.
fn read_claims(dir: &Path, run_id: &str) -> (u64, usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let (mut sum, mut n) = (0, 0);
    for e in entries.flatten().take(4096) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "lock" || name == run_id || name.contains('.') {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        match parse_claim(&text) {
            Some((pid, need)) if Path::new(&format!("/proc/{pid}")).exists() => {
                sum += need;
                n += usize::from(need > 0);
            }
            _ => {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    (sum, n)
}

/// A claim file: `<pid> <instances>`.
pub(crate) fn parse_claim(text: &str) -> Option<(u32, u64)> {
    let mut f = text.split_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

fn write_claim(path: &Path, need: u64) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)?;
    writeln!(f, "{} {need}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limit: u64, held: u64, claimed: u64, claims: usize, nodes: u64) -> Budget {
        Budget {
            limit,
            held,
            claimed,
            claims,
            nodes,
        }
    }

    #[test]
    fn a_run_fits_up_to_the_last_instance() {
        // 5 systemd nodes need 50: 78 held + 50 = 128 fits the default exactly, one more not.
        assert_eq!(budget(128, 78, 0, 0, 5).judge(), Ok(()));
        let err = budget(128, 79, 0, 0, 5).judge().unwrap_err();
        assert!(err.contains("fs.inotify.max_user_instances is 128; 79 instances are held by root's processes now, 49 free; this run's 5 systemd nodes need about 50 (10 each"), "{err}");
        assert!(
            err.contains("`sudo sysctl -w fs.inotify.max_user_instances=256`"),
            "{err}"
        );
        assert!(err.contains("nothing was created"), "{err}");
    }

    #[test]
    fn other_runs_claims_count_as_used() {
        // Four RKE2 stand-in runs of 5 nodes started at once on a host holding 10: the first
        // two fit (10 + 50 + 50 = 110), the third is refused by the claims alone.
        assert_eq!(budget(128, 10, 0, 0, 5).judge(), Ok(()));
        assert_eq!(budget(128, 10, 50, 1, 5).judge(), Ok(()));
        let err = budget(128, 10, 100, 2, 5).judge().unwrap_err();
        assert!(err.contains("10 instances are held by root's processes now and 100 claimed by 2 other repro runs whose nodes are not up yet, 18 free"), "{err}");
        assert!(err.contains("max_user_instances=256`"), "{err}");
        // Past every figure: the raise is the next power of two above all of it.
        let err = budget(128, 500, 0, 0, 5).judge().unwrap_err();
        assert!(err.contains(", 0 free;") && err.contains("=1024`"), "{err}");
    }

    #[test]
    fn claim_files_are_pid_and_count() {
        assert_eq!(parse_claim("123 50\n"), Some((123, 50)));
        assert_eq!(parse_claim("123"), None);
        assert_eq!(parse_claim("x 50"), None);
    }

    #[test]
    fn a_claim_shrinks_as_its_nodes_come_up_and_goes_with_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run1");
        write_claim(&path, 30).unwrap();
        let c = Claim {
            path: path.clone(),
            nodes: 3,
            ready: Mutex::default(),
        };
        let me = std::process::id();
        assert_eq!(read_claims(dir.path(), "other"), (30, 1));
        c.node_ready("a");
        c.node_ready("a");
        assert_eq!(
            parse_claim(&std::fs::read_to_string(&path).unwrap()),
            Some((me, 20))
        );
        c.node_ready("b");
        c.node_ready("c");
        assert_eq!(read_claims(dir.path(), "other"), (0, 0));
        // Its own claim is not counted against itself.
        assert_eq!(read_claims(dir.path(), "run1"), (0, 0));
        drop(c);
        assert!(!path.exists());
        // A claim whose process is gone is removed.
        std::fs::write(dir.path().join("dead"), "4194304 50\n").unwrap();
        assert_eq!(read_claims(dir.path(), "x"), (0, 0));
        assert!(!dir.path().join("dead").exists());
    }
}
