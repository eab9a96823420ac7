//! A control-plane-only server's start (`disable-etcd`): what each k3s version does when its
//! join server, or every etcd member, is away — k3s #11333 and #13533, only as far as k3s's
//! source shows them (docs/k3s-behaviour.md §18, §19).
//!
//! Such a node never has etcd data, so k3s takes its bootstrap path on every start
//! (`shouldBootstrapLoad`: "the path taken by control-plane-only nodes every startup"):
//!
//! 1. The join token is validated against the join server. Before the #11333 fix that always
//!    fetches `/cacerts` from `server:` and dies when it is down; with it, the server CA on disk
//!    (`<data-dir>/server/tls/server-ca.crt`, `WithCACertificate`) is used when there is one.
//! 2. `SetControlConfig` writes the etcd member name file (`<data-dir>/server/db/etcd/name`,
//!    `setName`) — on every version before the #13533 fix, even with etcd disabled.
//! 3. The etcd proxy starts (#11333 fix on): a load balancer over every etcd member's address,
//!    kept in `<data-dir>/server/etc/<program>-etcd-server-load-balancer.json`; `RemoveSelf`
//!    then lists the members through it and, when that works, renames `db/etcd` away.
//! 4. `bootstrap`: the data read through the proxy is reconciled — through the proxy (#11333
//!    fix on), or, from the January 2026 releases on, against a temporary copy of the LOCAL
//!    store, which the node does not have: a leftover `db/etcd` makes etcd's backend panic
//!    (#13533), otherwise the reconcile fails and the node falls back to its join server.
//!
//! The stand-in's etcd is the members' `/repro-sim/datastore` on the supervisor port, so the
//! proxy dials each saved member there; the file keeps k3s's `host:2379` form.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::datastore::{self, ClusterState};
use crate::http::{self, Auth, Url};
use crate::loadbalancer::Saved;
use crate::logs;
use crate::version::{Changes, Version};

/// etcd's client port: the etcd proxy's load balancer keeps `host:2379` addresses.
const ETCD_CLIENT_PORT: u16 = 2379;

/// `getBootstrapData`: one attempt with a 10 s timeout (pkg/cluster/storage.go); the etcd
/// client waits that long for an endpoint that answers.
pub const BOOTSTRAP_DATA_WAIT: Duration = Duration::from_secs(10);

/// What a control-plane-only start does, by the changes the version has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviour {
    /// k3s #11333's fix (`control-plane-only-known-servers`).
    pub known_servers: bool,
    /// The January 2026 reconcile against the local MVCC store (`etcd-mvcc-store-reconcile`).
    pub local_store_reconcile: bool,
    /// k3s #13533's fix (`control-plane-only-restart-reconcile-fix`).
    pub reconcile_fix: bool,
}

/// Where the bootstrap data read through the etcd proxy ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyReconcile {
    /// Reconciled through the proxy: the join server is not needed.
    Reconciled,
    /// etcd's backend panics on the copied, empty `db/etcd` (k3s #13533).
    Panic,
    /// `httpBootstrap` through the join server: the only way before the #11333 fix, and the
    /// fallback when the reconcile fails.
    JoinServer,
}

impl Behaviour {
    pub fn of(version: &Version) -> Behaviour {
        Behaviour {
            known_servers: version.has("control-plane-only-known-servers"),
            local_store_reconcile: version.has("etcd-mvcc-store-reconcile"),
            reconcile_fix: version.has("control-plane-only-restart-reconcile-fix"),
        }
    }

    /// Whether this start fetches `/cacerts` from the join server (and dies if it is down).
    pub fn fetches_ca(&self, ca_on_disk: bool) -> bool {
        !(self.known_servers && ca_on_disk)
    }

    /// `setName` with etcd disabled: it returns early only since #13533's fix.
    pub fn writes_name_file(&self) -> bool {
        !self.reconcile_fix
    }

    /// `bootstrap` after the proxy gave the data: `certs_on_disk` is whether the node has
    /// bootstrapped before (`checkCertDirs`: without them the data is written to disk and the
    /// reconcile ends there), `etcd_dir` whether `db/etcd` is there.
    pub fn proxy_reconcile(&self, certs_on_disk: bool, etcd_dir: bool) -> ProxyReconcile {
        if !self.known_servers {
            // Before ae726c5f5 `bootstrap` went straight to `httpBootstrap`.
            return ProxyReconcile::JoinServer;
        }
        if !certs_on_disk || !self.local_store_reconcile {
            return ProxyReconcile::Reconciled;
        }
        if !self.reconcile_fix && etcd_dir {
            return ProxyReconcile::Panic;
        }
        ProxyReconcile::JoinServer
    }
}

/// `c.config.Runtime.ServerCA`.
pub fn server_ca(data_dir: &Path) -> PathBuf {
    data_dir.join("server/tls/server-ca.crt")
}

/// The etcd proxy's load balancer file (`loadbalancer.New(…, ETCDServerServiceName, …)` with
/// the server's data dir).
pub fn proxy_file(data_dir: &Path) -> PathBuf {
    let program = crate::config::facts().name;
    data_dir
        .join("server/etc")
        .join(format!("{program}-etcd-server-load-balancer.json"))
}

/// `db/etcd` of the server's data dir (`dbDir`).
fn etcd_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("server/db/etcd")
}

/// Writes `file` (and its folder), warning on failure: the stand-in's bookkeeping must not kill
/// a node k3s would keep running.
fn write_file(file: &Path, data: &[u8]) {
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|_| datastore::write_atomic(file, data));
    if let Err(e) = written {
        logs::warn(format!("repro-sim: cannot write {}: {e}", file.display()));
    }
}

/// The bootstrap data written to disk: the server CA among it.
pub fn write_server_ca(data_dir: &Path, pem: &str) {
    write_file(&server_ca(data_dir), pem.as_bytes());
}

/// `setName(false)` on a node without etcd: `<node>-<8 hex>` unless one is there.
pub fn write_name_file(data_dir: &Path, node_name: &str) {
    let file = etcd_dir(data_dir).join("name");
    if !file.exists() {
        let name = format!("{node_name}-{}", datastore::random_hex(8));
        write_file(&file, name.as_bytes());
    }
}

/// `host:2379` of every etcd member of `state`.
pub fn member_addresses(state: &ClusterState) -> Vec<String> {
    state
        .members
        .iter()
        .filter_map(|m| Url::parse(&m.peer_url).ok())
        .map(|u| format!("{}:{ETCD_CLIENT_PORT}", u.host))
        .collect()
}

/// The saved member addresses (empty when there is no file or it names another join server).
pub fn saved_members(data_dir: &Path, join: &Url) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(proxy_file(data_dir)) else {
        return Vec::new();
    };
    match serde_json::from_str::<Saved>(&text) {
        Ok(saved) if saved.server_url == default_url(join) => saved.server_addresses,
        _ => Vec::new(),
    }
}

/// The proxy's default server: the join URL's host on etcd's port (`startEtcdProxy`).
fn default_url(join: &Url) -> String {
    format!("https://{}:{ETCD_CLIENT_PORT}", join.host)
}

/// `etcdProxy.Update`: the file holds the current member list.
pub fn save_members(data_dir: &Path, join: &Url, addresses: &[String]) {
    let saved = Saved {
        server_url: default_url(join),
        server_addresses: addresses.to_vec(),
    };
    let text = serde_json::to_string_pretty(&saved).unwrap_or_default();
    write_file(&proxy_file(data_dir), text.as_bytes());
}

/// The servers the node's datastore requests go to, in order: the join server, then (with
/// #11333's fix) every saved member, each on the stand-in's supervisor port.
pub fn proxy_servers(join: &Url, saved: &[String], b: Behaviour, port: u16) -> Vec<Url> {
    let mut servers = vec![join.clone()];
    if !b.known_servers {
        return servers;
    }
    for address in saved {
        let host = address
            .rsplit_once(':')
            .map_or(address.as_str(), |(h, _)| h);
        if servers.iter().all(|s| s.host != host) {
            servers.push(Url {
                scheme: join.scheme.clone(),
                host: host.to_string(),
                port,
                path: String::new(),
            });
        }
    }
    servers
}

/// One read of the datastore through the proxy: the first server that answers.
pub fn read_datastore(servers: &[Url], path: &str, pw: &str) -> Result<ClusterState, String> {
    let mut last = "no etcd server".to_string();
    for url in servers {
        match http::request(
            "GET",
            url,
            path,
            &Auth::Basic("server", pw),
            None,
            Duration::from_secs(2),
        ) {
            Ok(resp) if resp.status == 200 => {
                return serde_json::from_slice(&resp.body).map_err(|e| e.to_string())
            }
            Ok(resp) => {
                last = format!(
                    "{}: {} {}",
                    url.with_path(path),
                    resp.status,
                    http::reason(resp.status)
                )
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Reads the datastore through the proxy until one server answers or `within` is over.
pub fn read_datastore_within(
    servers: &[Url],
    path: &str,
    pw: &str,
    within: Duration,
) -> Result<ClusterState, String> {
    let deadline = Instant::now() + within;
    loop {
        match read_datastore(servers, path, pw) {
            Ok(state) => return Ok(state),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

/// `RemoveSelf` (pkg/etcd/etcd.go): the member list through the proxy, then `db/etcd` moved
/// to `db/etcd-old-<unix seconds>`; a failed list leaves it where it is, with a warning.
pub fn remove_self(data_dir: &Path, listed: Result<ClusterState, String>) {
    if let Err(e) = listed {
        logs::warn(format!("Failed to remove this node from etcd members: {e}"));
        return;
    }
    let dir = etcd_dir(data_dir);
    if dir.exists() {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let old = data_dir.join(format!("server/db/etcd-old-{secs}"));
        if let Err(e) = std::fs::rename(&dir, &old) {
            logs::warn(format!("Failed to remove this node from etcd members: {e}"));
        }
    }
}

/// Whether `db/etcd` is there for the reconcile to copy.
pub fn has_etcd_dir(data_dir: &Path) -> bool {
    etcd_dir(data_dir).is_dir()
}

/// What the node prints when etcd's backend cannot open the copied store: k3s's
/// `NewStore` line, etcd's zap entry at panic level (`backend.newBackend`: "failed to open
/// database"), then Go's banner for the panic zap raises with the message, and the trace.
/// The zap entry's fields and the trace's frames are inferred from the call order, not seen.
pub fn mvcc_panic_lines(data_dir: &Path, at: &str) -> Vec<String> {
    let db = data_dir.join("server/db/etcd-tmp/member/snap/db");
    let db = db.display();
    vec![
        logs::format_line(
            SystemTime::now(),
            logs::Level::Info,
            &format!("Opening etcd MVCC KV store at {db}"),
        ),
        format!(
            "{{\"level\":\"panic\",\"ts\":\"{at}\",\"caller\":\"backend/backend.go:189\",\"msg\":\"failed to open database\",\"path\":\"{db}\",\"error\":\"open {db}: no such file or directory\"}}"
        ),
        "panic: failed to open database".to_string(),
        String::new(),
        "goroutine 1 [running]:".to_string(),
        "go.uber.org/zap/zapcore.CheckWriteAction.OnWrite(0x2, 0xc000d2a000, {0xc0009e4c00, 0x2, 0x2})".to_string(),
        "go.etcd.io/etcd/server/v3/storage/backend.newBackend({{0xc000b44b40, 0x41}, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x1, 0x0, ...})".to_string(),
        "github.com/k3s-io/k3s/pkg/etcd/store.NewStore({0xc000b44a80, 0x2f})".to_string(),
        "github.com/k3s-io/k3s/pkg/etcd/store.NewTemporaryStore({0xc000b44a40, 0x2b})".to_string(),
        "github.com/k3s-io/k3s/pkg/cluster.(*Cluster).ReconcileBootstrapData(0xc000a1e000, {0x5d8e4a8, 0xc0001b6000}, {0x5d52f60, 0xc000c3c2a0}, 0xc000a1e0d8, 0x0)".to_string(),
        "github.com/k3s-io/k3s/pkg/cluster.(*Cluster).bootstrap(0xc000a1e000, {0x5d8e4a8, 0xc0001b6000})".to_string(),
    ]
}

/// Prints [`mvcc_panic_lines`] and exits 2, as a Go program that panics does.
pub fn mvcc_panic(data_dir: &Path) -> ! {
    let at = logs::rfc3339_utc(SystemTime::now());
    logs::raw(&mvcc_panic_lines(data_dir, &at).join("\n"));
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datastore::Member;

    fn v(text: &str) -> Version {
        crate::version::parse(text).expect("valid version")
    }

    #[test]
    fn the_fix_of_11333_per_line() {
        // releases/k3s-changes.yaml `control-plane-only-known-servers`.
        for (text, fixed) in [
            ("v1.31.6+k3s1", false),
            ("v1.31.7+k3s1", true),
            ("v1.32.2+k3s1", false),
            ("v1.32.3+k3s1", true),
            ("v1.33.4+k3s1", true),
            ("v1.29.14+k3s1", false),
        ] {
            assert_eq!(Behaviour::of(&v(text)).known_servers, fixed, "{text}");
        }
    }

    #[test]
    fn a_restart_fetches_the_ca_only_without_the_fix_or_without_a_ca_on_disk() {
        let buggy = Behaviour::of(&v("v1.32.2+k3s1"));
        let fixed = Behaviour::of(&v("v1.32.3+k3s1"));
        assert!(buggy.fetches_ca(true));
        assert!(fixed.fetches_ca(false), "a first start has no CA on disk");
        assert!(!fixed.fetches_ca(true));
    }

    #[test]
    fn the_13533_window_is_the_january_2026_candidate() {
        // Buggy only where the local-store reconcile is in and its fix is not: rc1 of the
        // January 2026 releases; the final releases have both, older releases neither.
        let cases = [
            ("v1.33.7+k3s1", ProxyReconcile::Reconciled),
            ("v1.33.7-rc1+k3s3", ProxyReconcile::Panic),
            ("v1.33.7-rc2+k3s3", ProxyReconcile::JoinServer),
            ("v1.33.7+k3s3", ProxyReconcile::JoinServer),
            ("v1.32.11-rc1+k3s3", ProxyReconcile::Panic),
            ("v1.34.3-rc1+k3s3", ProxyReconcile::Panic),
            ("v1.34.3+k3s3", ProxyReconcile::JoinServer),
            ("v1.32.2+k3s1", ProxyReconcile::JoinServer),
        ];
        for (text, want) in cases {
            assert_eq!(
                Behaviour::of(&v(text)).proxy_reconcile(true, true),
                want,
                "{text}"
            );
        }
        // Without a leftover db/etcd the buggy candidate falls back to its join server.
        let rc1 = Behaviour::of(&v("v1.33.7-rc1+k3s3"));
        assert_eq!(rc1.proxy_reconcile(true, false), ProxyReconcile::JoinServer);
        // A first start writes the data it got to disk: nothing to reconcile against.
        assert_eq!(rc1.proxy_reconcile(false, true), ProxyReconcile::Reconciled);
        assert!(rc1.writes_name_file());
        assert!(!Behaviour::of(&v("v1.33.7+k3s3")).writes_name_file());
    }

    /// A fresh folder under the system's temp dir, removed when dropped.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new() -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("repro-sim-cp-{}", datastore::random_hex(12)));
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn rke2_follows_the_k3s_commits_it_pins() {
        // releases/rke2-changes.yaml: the go.mod pins at rancher/rke2's tags.
        let cases = [
            ("v1.32.2+rke2r1", false, ProxyReconcile::JoinServer),
            ("v1.32.3+rke2r1", true, ProxyReconcile::Reconciled),
            ("v1.32.11+rke2r1", true, ProxyReconcile::Reconciled),
            ("v1.32.11-rc1+rke2r3", true, ProxyReconcile::Panic),
            ("v1.32.11-rc6+rke2r3", true, ProxyReconcile::JoinServer),
            ("v1.32.11+rke2r3", true, ProxyReconcile::JoinServer),
            ("v1.34.3-rc4+rke2r3", true, ProxyReconcile::Panic),
        ];
        for (text, known, reconcile) in cases {
            let b = Behaviour::of(&v(text));
            assert_eq!(b.known_servers, known, "{text}");
            assert_eq!(b.proxy_reconcile(true, true), reconcile, "{text}");
        }
    }

    fn url(text: &str) -> Url {
        Url::parse(text).expect("url")
    }

    #[test]
    fn the_proxy_dials_the_join_server_then_the_saved_members() {
        let join = url("https://10.0.0.2:6443");
        let saved = ["10.0.0.2:2379", "10.0.0.3:2379", "10.0.0.4:2379"].map(String::from);
        let fixed = Behaviour::of(&v("v1.32.3+k3s1"));
        let hosts: Vec<String> = proxy_servers(&join, &saved, fixed, 6443)
            .iter()
            .map(|u| format!("{}:{}", u.host, u.port))
            .collect();
        assert_eq!(hosts, ["10.0.0.2:6443", "10.0.0.3:6443", "10.0.0.4:6443"]);
        let buggy = Behaviour::of(&v("v1.32.2+k3s1"));
        assert_eq!(proxy_servers(&join, &saved, buggy, 6443).len(), 1);
    }

    #[test]
    fn members_are_saved_in_k3s_form_for_their_join_server_only() {
        let dir = TempDir::new();
        let join = url("https://10.0.0.2:6443");
        let state = ClusterState {
            members: vec![
                Member {
                    name: "etcd-1-aa".into(),
                    peer_url: "https://10.0.0.2:2380".into(),
                    learner: false,
                },
                Member {
                    name: "etcd-2-bb".into(),
                    peer_url: "https://10.0.0.3:2380".into(),
                    learner: true,
                },
            ],
            ..ClusterState::default()
        };
        save_members(dir.path(), &join, &member_addresses(&state));
        let text = std::fs::read_to_string(proxy_file(dir.path())).expect("file");
        assert!(
            text.contains("\"ServerURL\": \"https://10.0.0.2:2379\""),
            "{text}"
        );
        assert_eq!(
            saved_members(dir.path(), &join),
            ["10.0.0.2:2379", "10.0.0.3:2379"]
        );
        assert!(saved_members(dir.path(), &url("https://10.0.0.9:6443")).is_empty());
    }

    #[test]
    fn remove_self_moves_db_etcd_only_when_the_members_were_listed() {
        let dir = TempDir::new();
        write_name_file(dir.path(), "cp-1");
        assert!(has_etcd_dir(dir.path()));
        remove_self(dir.path(), Err("no etcd server".into()));
        assert!(has_etcd_dir(dir.path()), "a failed list keeps it");
        remove_self(dir.path(), Ok(ClusterState::default()));
        assert!(!has_etcd_dir(dir.path()));
    }

    #[test]
    fn the_panic_is_gos_banner_after_etcds_zap_entry() {
        let lines = mvcc_panic_lines(Path::new("/var/lib/rancher/k3s"), "2026-01-30T00:00:00Z");
        assert!(lines[0].contains(
            "msg=\"Opening etcd MVCC KV store at /var/lib/rancher/k3s/server/db/etcd-tmp/member/snap/db\""
        ));
        assert!(lines[1].starts_with("{\"level\":\"panic\""));
        // checks/signals.yaml `panic`: `(^|\]: )panic: `, and no logrus fatal before it.
        assert_eq!(lines[2], "panic: failed to open database");
        assert!(lines.iter().all(|l| !l.contains("level=fatal")));
        assert_eq!(lines[4], "goroutine 1 [running]:");
    }
}
