//! The agent's supervisor load balancer, as far as it decides which server an
//! agent's requests reach (k3s `pkg/agent/loadbalancer`).
//!
//! k3s keeps a *default* server (the URL the agent bootstraps from) and a list
//! of servers saved in `<data-dir>/agent/etc/k3s-agent-load-balancer.json`.
//! The saved list is loaded only when its `ServerURL` equals the current
//! default. Servers are tried best state first: a saved server starts
//! UNCHECKED, the default (when not in the list) waits in STANDBY, so the
//! default is the last resort. See docs/k3s-behaviour.md.
//!
//! The stand-in does not proxy connections on 127.0.0.1:6444; it only picks
//! the server an agent request goes to, logs k3s's state lines, and keeps the
//! file exactly as k3s writes it.
//!
//! Which of several new servers comes first is random in k3s: `setAddresses`
//! appends them while ranging over a `sets.Set` (a Go map, iterated in random
//! order) and then sorts servers of equal state as equal
//! (docs/k3s-review-2026-12.md §6). The stand-in shuffles new servers with a
//! seeded generator instead, so a run can be replayed: the seed is
//! `REPRO_SIM_SEED` (repro passes one per node and records it in
//! result.json), mixed with the boot's number, so every boot draws anew as
//! k3s does. The pick shows in k3s's own words, the first
//! `Server <address>@UNCHECKED->RECOVERING from successful dial`.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::logs;

/// `version.Program + "-agent-load-balancer"`.
pub const SERVICE: ServiceName = ServiceName;

/// The load balancer's name as k3s makes it from the program name (`rke2-agent-load-balancer`
/// when the stand-in plays rke2): a value that prints as that name, so messages keep `{SERVICE}`.
#[derive(Clone, Copy, Debug)]
pub struct ServiceName;

impl std::fmt::Display for ServiceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::distro::agent_load_balancer())
    }
}
/// The local listener k3s binds (`--lb-server-port`, default 6444).
pub const LOCAL_ADDRESS: &str = "127.0.0.1:6444";
/// Container env knob: where a buggy etcd-only joiner reads its served config.
pub const CONFIG_SOURCE_ENV: &str = "REPRO_SIM_CONFIG_SOURCE";
/// Container env knob: the seed of the load balancer's order of new servers (a `u64`).
pub const SEED_ENV: &str = "REPRO_SIM_SEED";
/// The stand-in's own count of load-balancer starts (boots), next to k3s's file: k3s keeps
/// no such file; it only makes a seeded order differ from boot to boot.
const BOOTS_FILE: &str = "repro-sim-lb-boots";

/// `splitmix64`: a small, well-mixed generator (no crate needed for a shuffle).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, boot: u64) -> Rng {
        Rng(seed ^ boot.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// `REPRO_SIM_SEED` as a number; without it (or unreadable) a seed from the clock, with a
/// warning naming the bad value.
pub fn seed_from_env(value: Option<&str>) -> (u64, Option<String>) {
    let clock = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id())
    };
    match value.map(str::trim) {
        None | Some("") => (clock(), None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) => (n, None),
            Err(_) => (
                clock(),
                Some(format!(
                    "repro-sim: {SEED_ENV}={v:?} is not a whole number from 0 to {}; using a seed from the clock",
                    u64::MAX
                )),
            ),
        },
    }
}

/// `REPRO_SIM_CONFIG_SOURCE`: `load-balancer` (default, as k3s's source
/// reads) or `joined` (always the node in `server:`, as k3s #12753's steps
/// tell it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    LoadBalancer,
    Joined,
}

impl ConfigSource {
    pub fn from_env(value: Option<&str>) -> (ConfigSource, Option<String>) {
        match value.map(str::trim) {
            None | Some("" | "load-balancer") => (ConfigSource::LoadBalancer, None),
            Some("joined") => (ConfigSource::Joined, None),
            Some(other) => (
                ConfigSource::LoadBalancer,
                Some(format!(
                    "repro-sim: {CONFIG_SOURCE_ENV}={other:?} is not one of load-balancer, joined; using load-balancer"
                )),
            ),
        }
    }
}

/// k3s's server states, in increasing order of preference (servers.go).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum State {
    Failed,
    Standby,
    Unchecked,
    Recovering,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Failed => "FAILED",
            State::Standby => "STANDBY",
            State::Unchecked => "UNCHECKED",
            State::Recovering => "RECOVERING",
        }
    }
}

#[derive(Clone, Debug)]
struct Server {
    address: String,
    is_default: bool,
    state: State,
}

impl Server {
    /// `address@STATE`, `*` marking the default (servers.go `String()`).
    fn label(&self) -> String {
        let star = if self.is_default { "*" } else { "" };
        format!("{}@{}{star}", self.address, self.state.name())
    }
}

/// The file k3s writes (`lbConfig`).
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Saved {
    #[serde(rename = "ServerURL")]
    pub server_url: String,
    #[serde(rename = "ServerAddresses")]
    pub server_addresses: Vec<String>,
}

pub fn config_file(data_dir: &Path) -> PathBuf {
    data_dir
        .join("agent")
        .join("etc")
        .join(format!("{SERVICE}.json"))
}

/// `loadbalancer.ResetLoadBalancer`: forget the saved servers.
pub fn reset(data_dir: &Path) {
    let _ = std::fs::remove_file(config_file(data_dir));
}

/// `https://host:port` → `host:port` (443 when no port, as k3s sets it).
pub fn host_port(url: &str) -> String {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let host = rest.split('/').next().unwrap_or(rest);
    if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else {
        format!("{host}:443")
    }
}

pub struct LoadBalancer {
    file: PathBuf,
    servers: Vec<Server>,
    source: ConfigSource,
    rng: Rng,
}

/// This boot's number (1 for the first) from the stand-in's counter, counted up.
fn next_boot(data_dir: &Path) -> u64 {
    let path = config_file(data_dir).with_file_name(BOOTS_FILE);
    let boot = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|_| crate::datastore::write_atomic(&path, boot.to_string().as_bytes()));
    if let Err(e) = written {
        logs::warn(format!("repro-sim: cannot count load balancer starts: {e}"));
    }
    boot
}

impl LoadBalancer {
    /// `loadbalancer.New`: default server from `default_url`, saved servers
    /// loaded when the file's `ServerURL` names the same default, file written.
    /// Seeded by `REPRO_SIM_SEED`.
    pub fn new(data_dir: &Path, default_url: &str, source: ConfigSource) -> LoadBalancer {
        let (seed, problem) = seed_from_env(std::env::var(SEED_ENV).ok().as_deref());
        if let Some(problem) = problem {
            logs::warn(problem);
        }
        LoadBalancer::seeded(data_dir, default_url, source, seed)
    }

    pub fn seeded(
        data_dir: &Path,
        default_url: &str,
        source: ConfigSource,
        seed: u64,
    ) -> LoadBalancer {
        let boot = next_boot(data_dir);
        // Not a k3s line: says which draw this boot's order of new servers is.
        logs::info(format!(
            "repro-sim: load balancer {SERVICE} orders new servers by {SEED_ENV}={seed}, boot {boot}"
        ));
        let mut lb = LoadBalancer {
            rng: Rng::new(seed, boot),
            file: config_file(data_dir),
            servers: vec![Server {
                address: host_port(default_url),
                is_default: true,
                state: State::Standby,
            }],
            source,
        };
        let saved = std::fs::read_to_string(&lb.file)
            .ok()
            .and_then(|text| serde_json::from_str::<Saved>(&text).ok());
        match saved {
            Some(saved) if saved.server_url == lb.saved().server_url => {
                lb.update(&saved.server_addresses);
            }
            _ => lb.write(),
        }
        logs::info(format!(
            "Running load balancer {SERVICE} {LOCAL_ADDRESS} -> {} [default: {}]",
            crate::datastore::go_list(&lb.addresses()),
            lb.default_address()
        ));
        lb
    }

    pub fn default_address(&self) -> String {
        self.servers
            .iter()
            .find(|s| s.is_default)
            .map(|s| s.address.clone())
            .unwrap_or_default()
    }

    /// The listed servers: the default only while it is not merely standing by.
    pub fn addresses(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| !(s.is_default && s.state == State::Standby))
            .map(|s| s.address.clone())
            .collect()
    }

    fn saved(&self) -> Saved {
        Saved {
            server_url: format!("https://{}", self.default_address()),
            server_addresses: self.addresses(),
        }
    }

    /// JSON as Go's `json.MarshalIndent(config, "", "  ")` writes it.
    pub fn file_text(&self) -> String {
        serde_json::to_string_pretty(&self.saved()).unwrap_or_default()
    }

    fn write(&self) {
        let text = self.file_text();
        let result = self
            .file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| e.to_string())
            .and_then(|_| crate::datastore::write_atomic(&self.file, text.as_bytes()));
        if let Err(e) = result {
            logs::warn(format!("Error updating load balancer config: {e}"));
        }
    }

    fn sort(&mut self) {
        // Stable, best state first: equal states keep their (saved) order.
        self.servers.sort_by_key(|s| std::cmp::Reverse(s.state));
    }

    /// `Update`: the list becomes exactly `addresses`; a default that leaves
    /// it goes back to STANDBY instead of being dropped.
    pub fn update(&mut self, addresses: &[String]) {
        let mut current = self.addresses();
        current.sort();
        let mut wanted: Vec<String> = addresses.to_vec();
        wanted.sort();
        wanted.dedup();
        if current == wanted || wanted.is_empty() {
            return;
        }
        // k3s ranges over a set here: new servers join in no fixed order.
        let mut addresses = addresses.to_vec();
        self.rng.shuffle(&mut addresses);
        for address in &addresses {
            if let Some(s) = self.servers.iter_mut().find(|s| &s.address == address) {
                if s.is_default && s.state == State::Standby {
                    logs::info(format!(
                        "Server {}->{} from add to load balancer {SERVICE}",
                        s.label(),
                        State::Unchecked.name()
                    ));
                    s.state = State::Unchecked;
                }
                continue;
            }
            logs::info(format!(
                "Adding server to load balancer {SERVICE}: {address}"
            ));
            self.servers.push(Server {
                address: address.clone(),
                is_default: false,
                state: State::Unchecked,
            });
        }
        self.servers.retain_mut(|s| {
            if addresses.contains(&s.address) {
                return true;
            }
            if s.is_default {
                s.state = State::Standby;
                return true;
            }
            logs::info(format!(
                "Removing server from load balancer {SERVICE}: {}",
                s.address
            ));
            false
        });
        self.sort();
        self.write();
    }

    /// `SetDefault`: another server becomes the fallback.
    pub fn set_default(&mut self, address: &str) {
        self.servers.retain_mut(|s| {
            if s.is_default && s.address != address {
                s.is_default = false;
                return s.state != State::Standby;
            }
            true
        });
        match self.servers.iter_mut().find(|s| s.address == address) {
            Some(s) => s.is_default = true,
            None => self.servers.push(Server {
                address: address.to_string(),
                is_default: true,
                state: State::Standby,
            }),
        }
        logs::info(format!(
            "Updated load balancer {SERVICE} default server: {address}"
        ));
        self.sort();
        self.write();
    }

    /// The order k3s's `dialContext` tries servers in.
    pub fn order(&self) -> Vec<String> {
        match self.source {
            ConfigSource::LoadBalancer => self.servers.iter().map(|s| s.address.clone()).collect(),
            // The knob's other world: only ever the server in `server:`.
            ConfigSource::Joined => vec![self.default_address()],
        }
    }

    /// Dials servers in order until one accepts a TCP connection, recording
    /// success and failure as k3s does; `None` is k3s's "all servers failed".
    pub fn dial(&mut self) -> Option<String> {
        for address in self.order() {
            let ok = reachable(&address);
            let Some(s) = self.servers.iter_mut().find(|s| s.address == address) else {
                continue;
            };
            let next = match (s.state, ok) {
                (State::Failed | State::Unchecked, true) => Some(State::Recovering),
                (State::Unchecked | State::Recovering, false) => Some(State::Failed),
                _ => None,
            };
            if let Some(next) = next {
                let how = if ok { "successful" } else { "failed" };
                logs::info(format!(
                    "Server {}->{} from {how} dial",
                    s.label(),
                    next.name()
                ));
                s.state = next;
            }
            if ok {
                self.sort();
                return Some(address);
            }
        }
        self.sort();
        None
    }
}

fn reachable(address: &str) -> bool {
    address
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .any(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sim-lb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    #[test]
    fn knob_values() {
        assert_eq!(ConfigSource::from_env(None).0, ConfigSource::LoadBalancer);
        assert_eq!(
            ConfigSource::from_env(Some("joined")).0,
            ConfigSource::Joined
        );
        let (s, warning) = ConfigSource::from_env(Some("cp"));
        assert_eq!(s, ConfigSource::LoadBalancer);
        assert!(warning
            .expect("warning")
            .contains("REPRO_SIM_CONFIG_SOURCE"));
    }

    #[test]
    fn the_order_of_saved_servers_is_drawn_per_seed_and_boot() {
        let saved = vec!["10.0.0.4:6443".to_string(), "10.0.0.5:6443".to_string()];
        let first = |seed: u64| {
            let d = dir(&format!("seed-{seed}"));
            let mut lb =
                LoadBalancer::seeded(&d, "https://etcd-1:6443", ConfigSource::LoadBalancer, seed);
            lb.update(&saved);
            let mut picks = vec![lb.order()[0].clone()];
            // Later boots load the saved list and draw again.
            for _ in 0..7 {
                let lb = LoadBalancer::seeded(
                    &d,
                    "https://etcd-1:6443",
                    ConfigSource::LoadBalancer,
                    seed,
                );
                assert_eq!(lb.order().len(), 3);
                assert_eq!(
                    lb.order()[2],
                    "etcd-1:6443",
                    "the default stays the last resort"
                );
                picks.push(lb.order()[0].clone());
            }
            let _ = std::fs::remove_dir_all(&d);
            picks
        };
        assert_eq!(first(7), first(7), "one seed, one sequence of picks");
        let all: Vec<String> = (0..8).flat_map(first).collect();
        for s in &saved {
            assert!(all.contains(s), "{s} is never picked first: {all:?}");
        }
        assert_eq!(seed_from_env(Some(" 42 ")), (42, None));
        let (_, warning) = seed_from_env(Some("x"));
        assert!(warning.expect("warning").contains("REPRO_SIM_SEED=\"x\""));
    }

    #[test]
    fn host_port_of_urls() {
        assert_eq!(host_port("https://etcd-1:6443"), "etcd-1:6443");
        assert_eq!(host_port("https://10.0.0.4"), "10.0.0.4:443");
        assert_eq!(host_port("https://127.0.0.1:6443/"), "127.0.0.1:6443");
    }

    #[test]
    fn saved_servers_come_before_the_default_and_survive_a_restart() {
        let d = dir("saved");
        let mut lb = LoadBalancer::new(&d, "https://etcd-1:6443", ConfigSource::LoadBalancer);
        assert_eq!(lb.order(), vec!["etcd-1:6443"]);
        let text = std::fs::read_to_string(config_file(&d)).expect("file");
        assert_eq!(
            text,
            "{\n  \"ServerURL\": \"https://etcd-1:6443\",\n  \"ServerAddresses\": []\n}"
        );
        lb.update(&["10.0.0.4:6443".to_string()]);
        // Restart: same default, so the saved list is loaded and tried first.
        let lb = LoadBalancer::new(&d, "https://etcd-1:6443", ConfigSource::LoadBalancer);
        assert_eq!(lb.order(), vec!["10.0.0.4:6443", "etcd-1:6443"]);
        let joined = LoadBalancer::new(&d, "https://etcd-1:6443", ConfigSource::Joined);
        assert_eq!(joined.order(), vec!["etcd-1:6443"]);
        // Another default (the fixed release's local supervisor) ignores the file.
        let local = LoadBalancer::new(&d, "https://127.0.0.1:6443", ConfigSource::LoadBalancer);
        assert_eq!(local.order(), vec!["127.0.0.1:6443"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn switching_the_default_writes_the_new_default() {
        let d = dir("default");
        let mut lb = LoadBalancer::new(&d, "https://127.0.0.1:6443", ConfigSource::LoadBalancer);
        lb.set_default("10.0.0.4:6443");
        lb.update(&["10.0.0.4:6443".to_string()]);
        let saved: Saved =
            serde_json::from_str(&std::fs::read_to_string(config_file(&d)).expect("file"))
                .expect("json");
        assert_eq!(saved.server_url, "https://10.0.0.4:6443");
        assert_eq!(saved.server_addresses, vec!["10.0.0.4:6443"]);
        // The local supervisor is gone from the list, as in k3s.
        assert_eq!(lb.order(), vec!["10.0.0.4:6443"]);
        reset(&d);
        assert!(!config_file(&d).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dial_falls_back_to_the_default_when_saved_servers_are_down() {
        let d = dir("dial");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let up = listener.local_addr().expect("addr").to_string();
        // A port nothing listens on: bind, read the port, drop.
        let down = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").to_string()
        };
        let mut lb = LoadBalancer::new(&d, &format!("https://{up}"), ConfigSource::LoadBalancer);
        lb.update(std::slice::from_ref(&down));
        assert_eq!(lb.order(), vec![down.clone(), up.clone()]);
        assert_eq!(
            lb.dial(),
            Some(up.clone()),
            "the default is the last resort"
        );
        assert_eq!(lb.order()[0], up, "a failed server sorts below standby");
        let _ = std::fs::remove_dir_all(&d);
    }
}
