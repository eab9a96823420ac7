//! Probes of this machine, read where the engine runs here: root's inotify instances in
//! use, free disk, available memory, the default route's MTU. Each returns what it read, or
//! `None` when it cannot; judging is `limits.rs`' and `engine.rs`'.

/// inotify instances root's processes hold now (every fd that is `anon_inode:inotify`): the
/// other runs and containers of this host already use part of the limit. `None` when /proc
/// cannot be read, or holds more than [`FD_WALK_LIMIT`] descriptors (the walk is bounded: a
/// host with millions of open files would take seconds, and the answer is then unknown, not
/// zero).
pub(crate) fn inotify_in_use() -> Option<u64> {
    let (mut n, mut seen) = (0, 0usize);
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = p.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let owned_by_root = {
            use std::os::unix::fs::MetadataExt;
            p.metadata().is_ok_and(|m| m.uid() == 0)
        };
        if !owned_by_root {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            seen += 1;
            if seen > FD_WALK_LIMIT {
                return None;
            }
            if std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:inotify") {
                n += 1;
            }
        }
    }
    Some(n)
}

/// Descriptors [`inotify_in_use`] reads at most: about a second of `readlink`s.
const FD_WALK_LIMIT: usize = 1 << 20;

/// Free and total MiB of the filesystem holding `dir`, from `df -Pk` (POSIX output).
pub(super) fn disk_free_mib(dir: &str) -> Option<(u64, u64)> {
    let out = std::process::Command::new("df")
        .args(["-Pk", dir])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df(&String::from_utf8_lossy(&out.stdout))
}

/// `Filesystem 1024-blocks Used Available Capacity Mounted on`, then one line: (free, total).
pub(super) fn parse_df(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().nth(1)?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let total: u64 = cols.get(1)?.parse().ok()?;
    let free: u64 = cols.get(3)?.parse().ok()?;
    Some((free / 1024, total / 1024))
}

/// Whether the engine runs on this machine: only then are this machine's limits the nodes'.
pub(crate) fn is_local(endpoint: &str) -> bool {
    endpoint.starts_with("unix://") || endpoint.starts_with("npipe://")
}

/// The interface of the host's default route and its MTU, from /proc/net/route and sysfs.
pub(crate) fn host_route_mtu() -> Option<(String, u32)> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    let iface = default_route_iface(&routes)?;
    let mtu = read_number(&format!("/sys/class/net/{iface}/mtu"))?;
    Some((iface, u32::try_from(mtu).ok()?))
}

/// The interface of the first default route (destination 00000000) in /proc/net/route.
pub(super) fn default_route_iface(routes: &str) -> Option<String> {
    routes.lines().skip(1).find_map(|l| {
        let mut f = l.split_whitespace();
        let (iface, dest) = (f.next()?, f.next()?);
        (dest == "00000000").then(|| iface.to_string())
    })
}

pub(super) fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

pub(super) fn mem_available_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}
