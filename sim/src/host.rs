//! Facts about the container the node runs in: hostname, IP, DNS server.
//!
//! k3s finds its node IP from the default route; the stand-in reads what
//! Docker wrote into `/etc/hosts` for the container's hostname, which is the
//! same address on a user-defined network and needs no syscalls or traffic.

use std::net::IpAddr;

/// The container hostname (`/etc/hostname`, else `$HOSTNAME`, else `localhost`).
pub fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

/// The first non-loopback address `/etc/hosts` gives `name`, if any.
pub fn ip_from_hosts(hosts: &str, name: &str) -> Option<IpAddr> {
    hosts.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        let ip: IpAddr = fields.next()?.parse().ok()?;
        if ip.is_loopback() || !fields.any(|n| n == name) {
            return None;
        }
        Some(ip)
    })
}

/// The node IP: `--node-ip`, else from `/etc/hosts`, else loopback.
pub fn node_ip(configured: Option<&str>, hostname: &str) -> String {
    if let Some(ip) = configured {
        return ip.to_string();
    }
    std::fs::read_to_string("/etc/hosts")
        .ok()
        .and_then(|hosts| ip_from_hosts(&hosts, hostname))
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "127.0.0.1".to_string())
}

/// The first `nameserver` of `/etc/resolv.conf` as `ip:53`, for Go-style
/// `lookup x on 127.0.0.11:53: no such host` messages.
pub fn nameserver() -> Option<String> {
    let text = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("nameserver")?;
        let ip: IpAddr = rest.trim().parse().ok()?;
        Some(match ip {
            IpAddr::V4(v4) => format!("{v4}:53"),
            IpAddr::V6(v6) => format!("[{v6}]:53"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_container_address() {
        let hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n172.29.7.2\tetcd-1\n";
        assert_eq!(
            ip_from_hosts(hosts, "etcd-1"),
            Some("172.29.7.2".parse().expect("ip"))
        );
        assert_eq!(ip_from_hosts(hosts, "etcd-2"), None);
        assert_eq!(ip_from_hosts(hosts, "localhost"), None);
    }
}
