//! One boot of `k3s server`: the server part, with the agent alongside.
//!
//! Prints k3s's log lines in k3s's order (see README "Log lines per role"):
//! the datastore and apiserver start, then the agent (agent.rs: registry,
//! containerd, kubelet) runs in its own thread while the server waits for the
//! apiserver/etcd to be ready, and `k3s is up and running` comes once the
//! agent reached its kubelet — or while the agent is stuck waiting for a
//! server, as k3s's readiness does not depend on its agent.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::agent::{self, Features, Plan};
use crate::bootstrap::{self, CriticalArgs, Datastore, Wire, WireExtra};
use crate::component_lines::{self, ServerView};
use crate::config::{self, ServerConfig};
use crate::datastore::{self, ClusterState, Layout, Member};
use crate::faults::{self, Faults};
use crate::http::{self, Auth, Request, Response, Url};
use crate::version::{version_env, Changes, Version};
use crate::{control_plane, host, logs, metrics};

/// The prefix k3s puts on errors from cluster bootstrap.
const BOOTSTRAP_ERR: &str = "Error: preparing server: failed to bootstrap cluster data: ";
const CHECK_ERR: &str = "failed to check if bootstrap data has been initialized: ";
const AGENT_LB_PORT: u16 = 6444;
const FAKE_CA: &str = "-----BEGIN CERTIFICATE-----\nrepro-sim stand-in: no TLS, no CA (not k3s)\n-----END CERTIFICATE-----\n";

/// State shared by the boot sequence and the HTTP handlers.
pub struct Shared {
    pub version: Version,
    pub cfg: ServerConfig,
    pub node_name: String,
    pub ip: String,
    pub local_args: CriticalArgs,
    pub layout: Layout,
    password: Mutex<Option<String>>,
    /// The local etcd's contents (nodes with etcd only).
    state: Mutex<Option<ClusterState>>,
    apiserver_ready: AtomicBool,
    /// The node's etcd (or kine) has started (`Cluster.Start`): before it, nothing can be
    /// read from the local datastore, the apiserver addresses included.
    etcd_started: AtomicBool,
    /// A restarted etcd member that found no leader answers no request until then (see
    /// [`elect_after_restart`]).
    no_leader_until: Mutex<Option<Instant>>,
    features: Arc<Features>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn password(&self) -> Option<String> {
        lock(&self.password).clone()
    }

    fn set_password(&self, pw: String) {
        *lock(&self.password) = Some(pw);
    }

    fn state(&self) -> Option<ClusterState> {
        lock(&self.state).clone()
    }

    /// Merges into the local etcd state and persists it if it changed.
    fn merge_state(&self, other: &ClusterState) -> Option<ClusterState> {
        let mut guard = lock(&self.state);
        let state = guard.as_mut()?;
        if state.merge(other) {
            if let Err(e) = self.layout.save_state(state) {
                logs::error(format!("repro-sim: failed to save datastore: {e}"));
            }
        }
        Some(state.clone())
    }

    /// `merge_state`, unless the incoming state adds a learner etcd would refuse; checked and
    /// merged under one lock, so two joins at once cannot both be admitted.
    fn admit_state(&self, other: &ClusterState) -> Result<Option<ClusterState>, String> {
        let mut guard = lock(&self.state);
        let Some(state) = guard.as_mut() else {
            return Ok(None);
        };
        state.admit(other)?;
        if state.merge(other) {
            if let Err(e) = self.layout.save_state(state) {
                logs::error(format!("repro-sim: failed to save datastore: {e}"));
            }
        }
        Ok(Some(state.clone()))
    }

    /// The leader's `MemberPromote` of the learners among `caught_up` that still are
    /// learners (k3s's `manageLearners`); returns the names promoted.
    fn promote_learners(&self, caught_up: &[String]) -> Vec<String> {
        let mut guard = lock(&self.state);
        let Some(state) = guard.as_mut() else {
            return Vec::new();
        };
        let names = state.promote_learners(caught_up);
        if !names.is_empty() {
            if let Err(e) = self.layout.save_state(state) {
                logs::error(format!("repro-sim: failed to save datastore: {e}"));
            }
        }
        names
    }

    fn set_state(&self, state: ClusterState) -> Result<(), String> {
        self.layout.save_state(&state)?;
        *lock(&self.state) = Some(state);
        Ok(())
    }

    /// An apiserver this node can use: its own once ready, else one registered in etcd
    /// (etcd-only nodes; `executor.APIServerReadyChan`).
    fn api_reachable(&self) -> bool {
        if self.cfg.disable_apiserver {
            !self.etcd_apiservers().is_empty()
        } else {
            self.apiserver_ready.load(Ordering::SeqCst)
        }
    }

    /// The apiserver addresses registered in the local etcd, once it runs
    /// (`etcd.GetAPIServerURLsFromETCD`; empty before `Cluster.Start`).
    fn etcd_apiservers(&self) -> Vec<String> {
        if !self.etcd_started.load(Ordering::SeqCst) {
            return Vec::new();
        }
        self.state().map(|s| s.apiservers).unwrap_or_default()
    }

    fn supervisor_url(&self) -> String {
        format!("https://{}:{}", self.ip, self.cfg.https_port)
    }

    fn served_config(&self) -> Wire {
        self.local_args.to_wire(WireExtra {
            server_node_name: self.node_name.clone(),
            disable_apiserver: self.cfg.disable_apiserver,
            disable_etcd: self.cfg.disable_etcd,
            disable_controller_manager: self.cfg.disable_controller_manager,
            disable_scheduler: self.cfg.disable_scheduler,
            cluster_init: self.cfg.cluster_init,
            disable_service_lb: self.cfg.disables("servicelb"),
            disable_kube_proxy: self.cfg.disable_kube_proxy,
            // Checked by config::validate before the server starts.
            service_node_port_range: config::PortRange::parse(&self.cfg.service_node_port_range)
                .ok(),
            system_default_registry: self.cfg.system_default_registry.clone(),
            repro_sim: "repro k3s stand-in, not k3s".into(),
        })
    }

    fn metrics_body(&self) -> String {
        let lb = self.cfg.disable_apiserver.then(|| {
            self.cfg
                .server_url
                .as_deref()
                .and_then(|u| Url::parse(u).ok())
                .map(|u| u.host_port())
                .unwrap_or_else(|| format!("127.0.0.1:{}", self.cfg.https_port))
        });
        metrics::render(&metrics::Registry {
            node_name: &self.node_name,
            version: &self.version.to_string(),
            apiserver: !self.cfg.disable_apiserver,
            agent_loadbalancer: lb.as_deref(),
            registry: self.features.registry_up.load(Ordering::SeqCst),
            rss_bytes: metrics::rss_bytes(),
        })
    }
}

/// The k3s (or rke2) version the stand-in imitates; fatal when the image does not say.
fn imitated_version() -> Version {
    match crate::version::imitated() {
        Some(v) => crate::version::parse(&v).unwrap_or_else(|e| logs::fatal(format!("repro-sim: {e}"))),
        None => logs::fatal(format!(
            "repro-sim: {} is not set; the k3s stand-in needs the k3s version it imitates (e.g. {})",
            version_env(),
            crate::config::facts().example_version
        )),
    }
}

/// The server's configuration (command line, config files, environment), validated, and the
/// critical arguments it serves; fatal, as k3s is, on a bad one.
fn server_config(
    cli_args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    version: &Version,
) -> (ServerConfig, CriticalArgs) {
    let config_path = config::config_path(cli_args, env);
    let files = config::read_config_files(&config_path).unwrap_or_else(|e| logs::fatal(e));
    let (cfg, loaded) = config::load(&config::Inputs {
        cli_args,
        files: &files,
        env,
        version,
        command: distro::FlagCommand::Server,
    })
    .unwrap_or_else(|e| logs::fatal(e.to_string()));
    for warning in &loaded.warnings {
        logs::warn(warning);
    }
    crate::nodes_api::remember_node_args(&files, cli_args, version, distro::FlagCommand::Server);
    if let Err(e) = config::validate(&cfg) {
        logs::fatal(format!("Error: {e}"));
    }
    let local_args =
        CriticalArgs::from_config(&cfg).unwrap_or_else(|e| logs::fatal(format!("Error: {e}")));
    (cfg, local_args)
}

/// The faults injected into this node (environment and the faults file), their threads
/// started.
fn load_faults(env: &dyn Fn(&str) -> Option<String>) -> Faults {
    let faults_text = std::fs::read_to_string(faults::FAULTS_FILE).ok();
    let (faults, problems) = Faults::load(env, faults_text.as_deref());
    for problem in problems {
        logs::warn(format!("repro-sim: {problem}"));
    }
    start_fault_threads(&faults);
    if let Some(n) = faults.flood {
        flood(n);
    }
    faults
}

/// `k3s server …`: never returns on success (the node runs until a signal).
pub fn run_server(cli_args: &[String]) -> i32 {
    let env = |k: &str| std::env::var(k).ok();
    let version = imitated_version();
    let (cfg, local_args) = server_config(cli_args, &env, &version);
    let faults = load_faults(&env);

    let banner = crate::config::facts().banner_prefix;
    logs::info(format!("{banner}{version} ({})", crate::distro::commit()));
    crate::distro::stage_kubectl();
    if faults.crash_at_boot {
        std::thread::sleep(Duration::from_millis(100));
        logs::fatal(format!(
            "Error: preparing server: repro-sim fault injection: {} is set",
            faults::CRASH_AT_BOOT
        ));
    }

    let hostname = host::hostname();
    let node_name = cfg
        .node_name
        .clone()
        .unwrap_or_else(|| hostname.to_lowercase());
    let ip = host::node_ip(cfg.node_ip.as_deref(), &hostname);
    let shared = Arc::new(Shared {
        layout: Layout {
            data_dir: cfg.data_dir.clone(),
        },
        version,
        node_name,
        ip,
        local_args,
        password: Mutex::new(None),
        state: Mutex::new(None),
        apiserver_ready: AtomicBool::new(false),
        etcd_started: AtomicBool::new(false),
        no_leader_until: Mutex::new(None),
        features: Arc::new(Features::default()),
        cfg,
    });

    let listen = format!("0.0.0.0:{}", shared.cfg.https_port);
    let listener = TcpListener::bind(&listen).unwrap_or_else(|e| {
        logs::fatal(format!(
            "Error: preparing server: init cluster datastore and https: listen tcp {listen}: {e}"
        ))
    });
    let handler_state = Arc::clone(&shared);
    http::serve(
        listener,
        Arc::new(move |req: &Request| route(&handler_state, req)),
    );

    let store = bootstrap::datastore(&shared.cfg, shared.layout.has_etcd_data());
    prepare_datastore(&shared, store);
    // From agent startup sequencing on, `run` starts the agent between `PrepareServer` and
    // `StartServer` (pkg/cli/server/server.go): the kubelet, and the agent's first kube-proxy
    // read, come before this node's etcd starts; before it, `StartServer` came first.
    let (tx, rx) = mpsc::channel();
    let sequenced = shared.version.has_agent_startup_sequencing();
    if sequenced {
        start_agent(&shared, tx.clone());
        let _ = rx.recv();
    }
    start_datastore(&shared, store, &faults);

    if let Some(delay) = faults.boot_delay {
        std::thread::sleep(delay);
    }
    if !shared.cfg.disable_apiserver {
        logs::info(format!(
            "Running kube-apiserver {}",
            apiserver_args(&shared)
        ));
        crate::pace::phase(distro::pace::Phase::Apiserver);
    }
    let server_view = ServerView {
        local: &shared.local_args,
        disable_service_lb: shared.cfg.disables("servicelb"),
        data_dir: &shared.cfg.data_dir,
    };
    if let Some(args) = component_lines::cloud_controller_args(&server_view) {
        logs::info(format!("Running cloud-controller-manager {args}"));
    }
    if faults.never_ready {
        park_forever();
    }
    match store {
        Datastore::Sqlite => {}
        Datastore::EtcdProxy => wait_for_proxied_datastore(&shared),
        _ => logs::info("etcd data store connection OK"),
    }

    // Before the sequencing the agent starts now and runs alongside; readiness waits for it to
    // reach the kubelet, or to be stuck waiting for a server.
    if !sequenced {
        start_agent(&shared, tx);
        let _ = rx.recv();
    }
    start_cluster_controllers(&shared);

    if !shared.cfg.disable_apiserver {
        shared.apiserver_ready.store(true, Ordering::SeqCst);
        logs::info("Kube API server is now running");
        register_apiserver(&shared, store);
    }
    if !matches!(store, Datastore::Sqlite | Datastore::EtcdProxy) {
        wait_for_promotion(&shared);
        logs::info("ETCD server is now running");
    }
    write_kubeconfig(&shared);
    logs::info(crate::config::facts().ready_line);
    crate::distro::notify_ready();
    park_forever()
}

/// Starts the agent half in its own thread (`agent.Run` in k3s's `server.run`).
fn start_agent(shared: &Arc<Shared>, progress: mpsc::Sender<agent::Progress>) {
    let (bootstrap_url, proxy) = bootstrap::agent_bootstrap(&shared.cfg, &shared.version);
    let plan = Plan {
        version: shared.version.clone(),
        cfg: shared.cfg.clone(),
        node_name: shared.node_name.clone(),
        ip: shared.ip.clone(),
        bootstrap_url,
        password: shared.password().unwrap_or_default(),
        proxy,
        etcd_agent: shared.cfg.disable_apiserver,
        standalone: false,
    };
    let from_etcd = Arc::clone(shared);
    let addresses: agent::Addresses = Box::new(move || from_etcd.etcd_apiservers());
    let features = Arc::clone(&shared.features);
    let ready = Arc::clone(shared);
    let api_ready: agent::ApiReady = Box::new(move || ready.api_reachable());
    std::thread::spawn(move || agent::run(plan, features, addresses, api_ready, Some(progress)));
}

/// The cluster controllers every server starts once an apiserver is reachable; the tunnel
/// server's says which egress mode this server runs (its own config's).
fn start_cluster_controllers(shared: &Arc<Shared>) {
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        while !shared.api_reachable() {
            std::thread::sleep(Duration::from_millis(250));
        }
        logs::info(component_lines::egress_line(&shared.local_args));
    });
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

fn start_fault_threads(faults: &Faults) {
    if let Some(after) = faults.exit_after {
        std::thread::spawn(move || {
            std::thread::sleep(after);
            logs::fatal(format!(
                "repro-sim fault injection: {}={:?} elapsed, exiting",
                faults::EXIT_AFTER,
                after
            ));
        });
    }
    if faults.garbage {
        std::thread::spawn(write_garbage);
    }
}

/// `n` numbered log lines on stderr (where k3s logs) as fast as it takes them: the flood knob.
fn flood(n: u64) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stderr().lock());
    for i in 1..=n {
        let line = logs::format_line(
            std::time::SystemTime::now(),
            logs::Level::Info,
            &format!("repro-sim flood line {i} of {n}"),
        );
        let _ = out.write_all(line.as_bytes());
    }
    let _ = out.flush();
}

/// Non-UTF-8 bytes, escape codes and lines split across writes, on stdout,
/// forever: log readers must survive them.
fn write_garbage() {
    use std::io::Write;
    let chunks: [&[u8]; 5] = [
        b"\xff\xfe\xfd repro-sim garbage \x00\x1b[31mred\x1b[0m\n",
        b"time=\"partial line from repro-sim, split",
        b" across two writes\" level=info\n",
        b"\xc3\x28\xa0\xa1 invalid utf-8 \xe2\x82\n",
        b"no newline at the end of this chunk ... ",
    ];
    let mut i = 0usize;
    loop {
        {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(chunks[i % chunks.len()]);
            let _ = out.flush();
        }
        i = i.wrapping_add(1);
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// The token's password, or the k3s error for a missing/bad token.
fn join_password(cfg: &ServerConfig) -> String {
    let Some(token) = cfg.token.as_deref() else {
        logs::fatal(format!(
            "{BOOTSTRAP_ERR}{CHECK_ERR}token is required to join a cluster"
        ));
    };
    datastore::token_password(token).unwrap_or_else(|e| {
        logs::fatal(format!(
            "{BOOTSTRAP_ERR}{CHECK_ERR}failed to validate token: {e}"
        ))
    })
}

fn join_url(shared: &Shared) -> Url {
    let text = shared.cfg.server_url.clone().unwrap_or_default();
    Url::parse(&text).unwrap_or_else(|e| {
        logs::fatal(format!(
            "{BOOTSTRAP_ERR}{CHECK_ERR}failed to validate token: {e}"
        ))
    })
}

/// k3s's `ParseAndValidateToken` against the join URL: it fails the start
/// when the server cannot be reached (k3s does not retry here). `wrapped`: the error chain
/// of c86147c46 (k3s #11333's fix, which wrapped the cluster prepare path's errors); before
/// it the fatal reads as k3s #11333 quotes it.
fn validate_join_server(url: &Url, wrapped: bool) {
    if let Err(e) = http::request(
        "GET",
        url,
        "/cacerts",
        &Auth::None,
        None,
        Duration::from_secs(10),
    ) {
        if wrapped {
            logs::fatal(format!(
                "{BOOTSTRAP_ERR}{CHECK_ERR}failed to validate token: failed to get CA certs: {e}"
            ));
        }
        logs::fatal(format!(
            "starting kubernetes: preparing server: failed to get CA certs: {e}"
        ));
    }
}

/// k3s's `Cluster.Bootstrap` (in `PrepareServer`): the token, the join server's checks
/// (`ParseAndValidateToken`, `compareConfig`), the bootstrap data and the stored etcd state; the
/// etcd server itself starts in [`start_datastore`].
fn prepare_datastore(shared: &Arc<Shared>, store: Datastore) {
    match store {
        Datastore::Sqlite => {
            let pw = own_password(shared);
            ensure_token_file(shared, &pw);
            logs::info("Configuring sqlite3 database connection pooling: maxIdleConns=2, maxOpenConns=0, connMaxLifetime=0s");
            logs::info("Configuring database table schema and indexes, this may take a moment...");
            logs::info("Database tables and indexes are up to date");
            logs::info("Kine available at unix://kine.sock");
        }
        Datastore::EtcdInit => {
            logs::info("Managed etcd cluster initializing");
            crate::pace::phase(distro::pace::Phase::Init);
            let pw = own_password(shared);
            let me = own_member(shared);
            let state = ClusterState {
                cluster_id: datastore::random_hex(16),
                members: vec![me],
                apiservers: Vec::new(),
                promoted: Vec::new(),
            };
            let token = datastore::full_token(&state.cluster_id, &pw);
            save_or_die(shared, state);
            write_token_or_die(shared, &token);
        }
        Datastore::EtcdExisting => {
            logs::info("Managed etcd cluster bootstrap already complete and initialized");
            let pw = own_password(shared);
            let mut state = shared.layout.load_state().unwrap_or_default();
            let me = own_member(shared);
            elect_after_restart(shared, &state, &me, &pw);
            state.merge(&ClusterState {
                cluster_id: String::new(),
                members: vec![me],
                apiservers: Vec::new(),
                promoted: Vec::new(),
            });
            save_or_die(shared, state);
            ensure_token_file(shared, &pw);
            reconcile_existing_member(shared);
        }
        Datastore::EtcdJoin => {
            let pw = join_password(&shared.cfg);
            let url = join_url(shared);
            validate_join_server(&url, true);
            logs::info("Managed etcd cluster not yet initialized");
            shared.set_password(pw.clone());
            if bootstrap::runs_critical_config_check(store) {
                check_critical_config(shared, &url, &pw);
            }
            fetch_bootstrap_data(&url, &pw);
        }
        Datastore::EtcdProxy => prepare_control_plane_only(shared),
    }
}

/// `Cluster.Bootstrap` on a control-plane-only node, as each version does it (k3s #11333 and
/// #13533; control_plane.rs): the token against the join server unless the CA is on disk, the
/// etcd name file, the etcd proxy and `RemoveSelf`, `compareConfig`, then the bootstrap data
/// through the proxy or the join server.
fn prepare_control_plane_only(shared: &Arc<Shared>) {
    let b = control_plane::Behaviour::of(&shared.version);
    let data_dir = shared.cfg.data_dir.clone();
    let pw = join_password(&shared.cfg);
    let url = join_url(shared);
    let certs_on_disk = control_plane::server_ca(&data_dir).exists();
    if b.fetches_ca(certs_on_disk) {
        validate_join_server(&url, b.known_servers);
    }
    if b.writes_name_file() {
        control_plane::write_name_file(&data_dir, &shared.node_name);
    }
    logs::info("Managed etcd disabled on this node");
    shared.set_password(pw.clone());
    let servers = proxy_servers(shared);
    if b.known_servers {
        // `startEtcdProxy` runs `RemoveSelf` before `bootstrap` since ae726c5f5.
        let listed = control_plane::read_datastore(&servers, &datastore_path(), &pw);
        control_plane::remove_self(&data_dir, listed);
    }
    check_critical_config(shared, &url, &pw);
    let through_proxy = b.known_servers
        && control_plane::read_datastore_within(
            &servers,
            &datastore_path(),
            &pw,
            control_plane::BOOTSTRAP_DATA_WAIT,
        )
        .is_ok();
    let reconcile = if through_proxy {
        b.proxy_reconcile(certs_on_disk, control_plane::has_etcd_dir(&data_dir))
    } else {
        control_plane::ProxyReconcile::JoinServer
    };
    match reconcile {
        control_plane::ProxyReconcile::Reconciled => {}
        control_plane::ProxyReconcile::Panic => control_plane::mvcc_panic(&data_dir),
        control_plane::ProxyReconcile::JoinServer => fetch_bootstrap_data(&url, &pw),
    }
    control_plane::write_server_ca(&data_dir, FAKE_CA);
    start_proxy_sync(shared);
}

/// Where a control-plane-only node's datastore requests go: its etcd proxy's servers.
fn proxy_servers(shared: &Shared) -> Vec<Url> {
    let Some(join) = shared
        .cfg
        .server_url
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
    else {
        return Vec::new();
    };
    let saved = control_plane::saved_members(&shared.cfg.data_dir, &join);
    let b = control_plane::Behaviour::of(&shared.version);
    control_plane::proxy_servers(&join, &saved, b, crate::config::facts().supervisor_port)
}

/// `setupEtcdProxy`'s endpoint sync: the proxy's file follows the etcd member list (k3s syncs
/// every 30 s; the stand-in every second, as its other tickers).
fn start_proxy_sync(shared: &Arc<Shared>) {
    let Some(join) = shared
        .cfg
        .server_url
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
    else {
        return;
    };
    let shared = Arc::clone(shared);
    std::thread::spawn(move || loop {
        let pw = shared.password().unwrap_or_default();
        if let Ok(state) =
            control_plane::read_datastore(&proxy_servers(&shared), &datastore_path(), &pw)
        {
            let members = control_plane::member_addresses(&state);
            if !members.is_empty() {
                control_plane::save_members(&shared.cfg.data_dir, &join, &members);
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    });
}

/// k3s's `Cluster.Start` (in `StartServer`): the etcd server starts (a joiner adds itself
/// first); from here on its apiserver addresses can be read (`getAPIAddressFromEtcd`).
fn start_datastore(shared: &Arc<Shared>, store: Datastore, faults: &Faults) {
    match store {
        Datastore::Sqlite => {}
        Datastore::EtcdInit => {
            logs::info("Starting etcd for new cluster, cluster-reset=false");
            start_promoter(shared, faults);
        }
        Datastore::EtcdExisting => {
            logs::info("Starting etcd for existing cluster member");
            crate::pace::phase(distro::pace::Phase::Restart);
            start_sync(shared);
            if shared.cfg.server_url.is_none() {
                start_promoter(shared, faults);
            }
        }
        Datastore::EtcdJoin | Datastore::EtcdProxy => {
            crate::pace::phase(distro::pace::Phase::Join);
            if store == Datastore::EtcdJoin {
                let pw = shared.password().unwrap_or_default();
                join_etcd(shared, &join_url(shared), &pw);
                start_sync(shared);
            }
        }
    }
    shared.etcd_started.store(true, Ordering::SeqCst);
}

/// k3s's etcd election timeout (`ElectionTimeout: 5000` ms, pkg/etcd/etcd.go).
const ELECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// etcd after a restart: a member that finds another member answering rejoins its leader at
/// once; when none answers (every member restarted together) no leader is elected before the
/// election timeout, and until then the member answers no request ("etcdserver: no leader").
/// A control-plane-only node restarted with them sees that window (k3s #13533's `RemoveSelf`).
fn elect_after_restart(shared: &Shared, state: &ClusterState, me: &Member, pw: &str) {
    let port = crate::config::facts().supervisor_port;
    let peers: Vec<Url> = state
        .members
        .iter()
        .filter(|m| m.name != me.name)
        .filter_map(|m| Url::parse(&m.peer_url).ok())
        .map(|u| Url { port, ..u })
        .collect();
    if peers.is_empty() {
        return;
    }
    let leader = peers.iter().any(|url| {
        http::request(
            "GET",
            url,
            &datastore_path(),
            &Auth::Basic("server", pw),
            None,
            Duration::from_secs(1),
        )
        .is_ok_and(|r| r.status == 200)
    });
    if !leader {
        *lock(&shared.no_leader_until) = Some(Instant::now() + ELECTION_TIMEOUT);
    }
}

/// The node's own password: the configured token, else the stored one, else
/// a fresh random one (k3s generates a token on the first server too).
fn own_password(shared: &Shared) -> String {
    let configured = shared.cfg.token.as_deref().map(datastore::token_password);
    let pw = match configured {
        Some(Ok(pw)) => pw,
        Some(Err(e)) => logs::fatal(format!("Error: failed to normalize server token: {e}")),
        None => shared
            .layout
            .read_token()
            .and_then(|t| datastore::token_password(&t).ok())
            .unwrap_or_else(|| datastore::random_hex(32)),
    };
    shared.set_password(pw.clone());
    pw
}

/// Writes `server/token` unless one is there already.
fn ensure_token_file(shared: &Shared, pw: &str) {
    if shared.layout.read_token().is_none() {
        let cluster_id = shared
            .state()
            .map(|s| s.cluster_id)
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| datastore::random_hex(16));
        write_token_or_die(shared, &datastore::full_token(&cluster_id, pw));
    }
}

fn own_member(shared: &Shared) -> Member {
    let name = shared
        .layout
        .member_name(&shared.node_name)
        .unwrap_or_else(|e| {
            logs::fatal(format!(
                "Error: preparing server: start managed database: {e}"
            ))
        });
    Member {
        name,
        peer_url: format!("https://{}:2380", shared.ip),
        learner: false,
    }
}

fn save_or_die(shared: &Shared, state: ClusterState) {
    if let Err(e) = shared.set_state(state) {
        logs::fatal(format!(
            "Error: preparing server: start managed database: {e}"
        ));
    }
}

fn write_token_or_die(shared: &Shared, token: &str) {
    if let Err(e) = shared.layout.write_token(token) {
        logs::fatal(format!(
            "Error: preparing server: failed to write token: {e}"
        ));
    }
}

/// Secondary etcd servers first try to reconcile through their join URL and
/// fall back to a temporary local etcd (k3s `Bootstrap`).
fn reconcile_existing_member(shared: &Shared) {
    let mut remote_ok = false;
    if let (Some(text), Some(pw)) = (shared.cfg.server_url.as_deref(), shared.password()) {
        if let Ok(url) = Url::parse(text) {
            match http::request(
                "GET",
                &url,
                &crate::distro::supervisor_path("server-bootstrap"),
                &Auth::Basic("server", &pw),
                None,
                Duration::from_secs(5),
            ) {
                Ok(resp) if resp.status == 200 => {
                    logs::info("Successfully reconciled with remote datastore");
                    remote_ok = true;
                }
                Ok(resp) => logs::warn(format!(
                    "Unable to reconcile with remote datastore: {}: {} {}",
                    url.with_path(&crate::distro::supervisor_path("server-bootstrap")),
                    resp.status,
                    http::reason(resp.status)
                )),
                Err(e) => logs::warn(format!("Unable to reconcile with remote datastore: {e}")),
            }
        }
    }
    if !remote_ok {
        logs::info("Starting temporary etcd to reconcile with datastore");
        logs::info("etcd temporary data store connection OK");
        logs::info("Reconciling bootstrap data between datastore and disk");
    }
}

/// k3s's `compareConfig`: fetch the joined server's `/v1-k3s/config` as user
/// `node`; an unreachable or refusing server only skips the check.
fn check_critical_config(shared: &Shared, url: &Url, pw: &str) {
    let path = &crate::distro::supervisor_path("config");
    let resp = match http::request(
        "GET",
        url,
        path,
        &Auth::Basic("node", pw),
        None,
        Duration::from_secs(10),
    ) {
        Ok(resp) if resp.status == 200 => resp,
        Ok(resp) => {
            logs::warn(format!(
                "Skipping cluster configuration validation: {}: {} {}",
                url.with_path(path),
                resp.status,
                http::reason(resp.status)
            ));
            return;
        }
        Err(e) => {
            logs::warn(format!("Skipping cluster configuration validation: {e}"));
            return;
        }
    };
    let wire: Wire = serde_json::from_slice(&resp.body).unwrap_or_else(|e| {
        logs::fatal(format!(
            "{BOOTSTRAP_ERR}failed to validate server configuration: {e}"
        ))
    });
    let remote = CriticalArgs::from_wire(&wire);
    crate::plant::control_plane_panic(&shared.cfg, &wire);
    let mut diffs = bootstrap::mismatches(&shared.local_args, &remote);
    diffs.extend(crate::plant::extra_mismatches(&shared.cfg, &wire));
    for name in &diffs {
        logs::warn(format!("critical configuration mismatched: {name}"));
    }
    if !diffs.is_empty() {
        logs::fatal(format!(
            "{BOOTSTRAP_ERR}failed to validate server configuration: critical configuration value mismatch between servers"
        ));
    }
}

/// `httpBootstrap`: the token's password is only checked here, by the server.
fn fetch_bootstrap_data(url: &Url, pw: &str) {
    let path = &crate::distro::supervisor_path("server-bootstrap");
    match http::request(
        "GET",
        url,
        path,
        &Auth::Basic("server", pw),
        None,
        Duration::from_secs(15),
    ) {
        Ok(resp) if resp.status == 200 => {}
        Ok(resp) => logs::fatal(format!(
            "{BOOTSTRAP_ERR}{}: {} {}",
            url.with_path(path),
            resp.status,
            http::reason(resp.status)
        )),
        Err(e) => logs::fatal(format!("{BOOTSTRAP_ERR}{e}")),
    }
}

/// Adds this node to the joined server's member list (etcd `MemberAdd`).
fn join_etcd(shared: &Shared, url: &Url, pw: &str) {
    // k3s adds every joiner as a learner (MemberAddAsLearner, pkg/etcd/etcd.go).
    let me = Member {
        learner: true,
        ..own_member(shared)
    };
    let request = ClusterState {
        cluster_id: String::new(),
        members: vec![me.clone()],
        ..ClusterState::default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let state = loop {
        match push_state(url, pw, &request) {
            Ok(state) => break state,
            // etcd admits one learner at a time; k3s retries every second until the one
            // before is promoted (pkg/etcd/etcd.go, `errors.Is(err, rpctypes.ErrTooManyLearners)`).
            Err(e) if e == datastore::TOO_MANY_LEARNERS => {
                logs::info(format!(
                    "Waiting for other members to finish joining etcd cluster: {e}"
                ));
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) if Instant::now() >= deadline => logs::fatal(format!(
                "Error: preparing server: start managed database: joining etcd cluster: {e}"
            )),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    };
    let others: Vec<String> = ClusterState {
        members: state
            .members
            .iter()
            .filter(|m| m.name != me.name)
            .cloned()
            .collect(),
        ..ClusterState::default()
    }
    .member_strings();
    logs::info(format!(
        "Adding member {}={} to etcd cluster {}",
        me.name,
        me.peer_url,
        datastore::go_list(&others)
    ));
    let mut all = others;
    all.push(format!("{}={}", me.name, me.peer_url));
    logs::info(format!(
        "Starting etcd to join cluster with members {}",
        datastore::go_list(&all)
    ));
    let token = datastore::full_token(&state.cluster_id, pw);
    save_or_die(shared, state);
    write_token_or_die(shared, &token);
    // A learner until the leader promotes it; only then is the joiner's etcd ready.
    crate::pace::phase(distro::pace::Phase::Promotion);
}

fn datastore_path() -> String {
    crate::distro::supervisor_path("repro-sim/datastore")
}
/// The stand-in's status for etcd's FailedPrecondition (a refused learner); the body is
/// etcd's text.
const LEARNER_REFUSED: u16 = 412;

/// POSTs `state` to a server's datastore and returns its merged state.
fn push_state(url: &Url, pw: &str, state: &ClusterState) -> Result<ClusterState, String> {
    let body = serde_json::to_vec(state).map_err(|e| e.to_string())?;
    let resp = http::request(
        "POST",
        url,
        &datastore_path(),
        &Auth::Basic("server", pw),
        Some(&body),
        Duration::from_secs(5),
    )
    .map_err(|e| e.to_string())?;
    if resp.status == LEARNER_REFUSED {
        return Err(String::from_utf8_lossy(&resp.body).trim().to_string());
    }
    if resp.status != 200 {
        return Err(format!(
            "{}: {} {}",
            url.with_path(&datastore_path()),
            resp.status,
            http::reason(resp.status)
        ));
    }
    serde_json::from_slice(&resp.body).map_err(|e| e.to_string())
}

/// Members keep their copy of the cluster state in step with the server they
/// joined, both ways, once a second (stands in for etcd replication).
fn start_sync(shared: &Arc<Shared>) {
    let (Some(text), Some(pw)) = (shared.cfg.server_url.clone(), shared.password()) else {
        return;
    };
    let Ok(url) = Url::parse(&text) else { return };
    let shared = Arc::clone(shared);
    std::thread::spawn(move || loop {
        if let Some(local) = shared.state() {
            if let Ok(remote) = push_state(&url, &pw, &local) {
                shared.merge_state(&remote);
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    });
}

/// How often the leader looks at learners. k3s's `manageTickerTime` is 15 s; the stand-in
/// ticks faster so a run of serial joins does not wait 15 s per joiner.
const PROMOTE_TICK: Duration = Duration::from_secs(1);

/// The init node plays etcd's leader (every member of repro's star topologies joins it):
/// a learner seen at one tick has caught up by the next, and is promoted then, with k3s's
/// line (`trackLearnerProgress`, pkg/etcd/etcd.go `Promoted learner %s`). So a learner
/// stays one for 1-2 ticks (k3s #12794's CI log: about 6 s), long enough for a second
/// joiner started at the same time to be refused.
fn start_promoter(shared: &Arc<Shared>, faults: &Faults) {
    if faults.never_promote {
        return;
    }
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let mut seen: Vec<String> = Vec::new();
        loop {
            std::thread::sleep(PROMOTE_TICK);
            for name in shared.promote_learners(&seen) {
                logs::info(format!("Promoted learner {name}"));
            }
            seen = shared.state().map(|s| s.learners()).unwrap_or_default();
        }
    });
}

/// k3s's etcd-ready test (pkg/daemons/executor/etcd.go): a learner is not ready until it is
/// promoted, and says so every 5 s; `ETCD server is now running` (and so the ready line) only
/// then. The promotion reaches this node's copy of the state through the sync.
fn wait_for_promotion(shared: &Shared) {
    let Ok(me) = shared.layout.member_name(&shared.node_name) else {
        return;
    };
    let mut next_log = Instant::now() + Duration::from_secs(5);
    while shared.state().is_some_and(|s| s.is_learner(&me)) {
        if Instant::now() >= next_log {
            logs::info("Failed to test etcd connection: this server has not yet been promoted from learner to voting member");
            next_log += Duration::from_secs(5);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A control-plane-only node reaches etcd through its etcd proxy (the join server, then, with
/// k3s #11333's fix, every member it saved); k3s logs each failed test and retries every 5 s.
fn wait_for_proxied_datastore(shared: &Shared) {
    let pw = shared.password().unwrap_or_default();
    if shared.cfg.server_url.is_none() {
        return;
    }
    loop {
        match control_plane::read_datastore(&proxy_servers(shared), &datastore_path(), &pw) {
            Ok(_) => break,
            Err(e) => logs::info(format!("Failed to test data store connection: {e}")),
        }
        std::thread::sleep(Duration::from_secs(5));
    }
    logs::info("etcd data store connection OK");
}

/// Publishes this apiserver's address in etcd, where etcd-only agents look.
fn register_apiserver(shared: &Shared, store: Datastore) {
    let entry = ClusterState {
        cluster_id: String::new(),
        members: Vec::new(),
        apiservers: vec![shared.supervisor_url()],
        promoted: Vec::new(),
    };
    match store {
        Datastore::EtcdProxy => {
            let Some(pw) = shared.password() else {
                return;
            };
            let servers = proxy_servers(shared);
            std::thread::spawn(move || {
                while !servers
                    .iter()
                    .any(|url| push_state(url, &pw, &entry).is_ok())
                {
                    std::thread::sleep(Duration::from_secs(2));
                }
            });
        }
        Datastore::Sqlite => {}
        _ => {
            shared.merge_state(&entry);
        }
    }
}

fn write_kubeconfig(shared: &Shared) {
    // Nodes without an apiserver point at the agent's apiserver load
    // balancer, not at the supervisor (k3s `writeKubeConfig`).
    let port = if shared.cfg.disable_apiserver {
        AGENT_LB_PORT
    } else {
        shared.cfg.https_port
    };
    let fake = http::base64_encode(b"repro-sim stand-in: no certificates (not k3s)");
    let cert = datastore::admin_certificate_data(&shared.password().unwrap_or_default());
    let text = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {fake}\n    server: https://127.0.0.1:{port}\n  name: default\ncontexts:\n- context:\n    cluster: default\n    user: default\n  name: default\ncurrent-context: default\nkind: Config\npreferences: {{}}\nusers:\n- name: default\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {fake}\n"
    );
    let path = &shared.cfg.kubeconfig_out;
    let result = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|_| datastore::write_atomic(path, text.as_bytes()));
    if let Err(e) = result {
        logs::error(format!(
            "Failed to write kubeconfig {}: {e}",
            path.display()
        ));
    }
}

fn apiserver_args(shared: &Shared) -> String {
    let d = shared.cfg.data_dir.display();
    let svc = shared
        .local_args
        .service_cidr
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    // pkg/daemons/control/server.go `apiServer`: secrets-encryption adds the encryption
    // config (between the admission plugins and etcd, as util.GetArgs sorts the flags).
    let encryption = if shared.local_args.secrets_encryption {
        format!(" --encryption-provider-config={d}/server/cred/encryption-config.json --encryption-provider-config-automatic-reload=true")
    } else {
        String::new()
    };
    format!(
        "--advertise-address={ip} --advertise-port={port} --allow-privileged=true --anonymous-auth=false --api-audiences=https://kubernetes.default.svc.{dom},k3s --authorization-mode=Node,RBAC --bind-address=127.0.0.1 --cert-dir={d}/server/tls/temporary-certs --client-ca-file={d}/server/tls/client-ca.crt --egress-selector-config-file={d}/server/etc/egress-selector-config.yaml --enable-admission-plugins=NodeRestriction{encryption} --etcd-servers=https://127.0.0.1:2379 --secure-port=6444 --service-cluster-ip-range={svc} --service-node-port-range={ports}",
        ip = shared.ip,
        port = shared.cfg.https_port,
        dom = shared.cfg.cluster_domain,
        ports = config::PortRange::parse(&shared.cfg.service_node_port_range)
            .map_or_else(|_| shared.cfg.service_node_port_range.clone(), |r| r.to_string()),
    )
}

fn authorized(shared: &Shared, req: &Request) -> bool {
    let Some(pw) = shared.password() else {
        return false;
    };
    match req.credential() {
        Some((_, given)) => given == pw || datastore::token_password(&given).is_ok_and(|g| g == pw),
        None => false,
    }
}

fn unauthorized() -> Response {
    Response::text(401, "Unauthorized")
}

/// The supervisor router (`pkg/server/router.go`), then the apiserver.
fn route(shared: &Shared, req: &Request) -> Response {
    let path = req.path.as_str();
    match path {
        "/ping" => return Response::text(200, "pong"),
        "/cacerts" => return Response::text(200, FAKE_CA),
        _ if crate::distro::supervisor_route(path) == Some("readyz") => return readyz(shared, req),
        _ if crate::distro::supervisor_route(path) == Some("config") => {
            if !authorized(shared, req) {
                return unauthorized();
            }
            return match serde_json::to_string(&shared.served_config()) {
                Ok(json) => Response::json(200, json),
                Err(e) => Response::text(500, e.to_string()),
            };
        }
        _ if crate::distro::supervisor_route(path) == Some("server-bootstrap") => {
            if !authorized(shared, req) {
                return unauthorized();
            }
            return Response::json(200, "{\"repro-sim\":\"no bootstrap data: stand-in\"}");
        }
        _ if crate::distro::supervisor_route(path) == Some("apiservers") => {
            if !authorized(shared, req) {
                return unauthorized();
            }
            // k3s answers from the `kubernetes` endpoints, which a control-plane-only node
            // reads through its etcd proxy: an agent joining one learns every apiserver, so it
            // restarts through another while its join server is down.
            let apiservers = if shared.cfg.disable_etcd {
                datastore_state(shared).map_or_else(Vec::new, |s| s.apiservers)
            } else {
                shared.etcd_apiservers()
            };
            let list: Vec<String> = (apiservers.iter())
                .map(|a| crate::loadbalancer::host_port(a))
                .collect();
            return Response::json(200, serde_json::to_string(&list).unwrap_or_default());
        }
        _ if path == datastore_path() => return datastore_endpoint(shared, req),
        crate::nodes_api::OWN_NODE_PATH => {
            if !admin_client(shared, req) {
                return status_unauthorized();
            }
            return Response::json(200, own_node(shared).to_string());
        }
        // The agent's https router: authn (client certificates, anonymous
        // off) and authz on everything but /v2 and p2p (pkg/agent/https).
        "/metrics" if shared.features.metrics_mounted.load(Ordering::SeqCst) => {
            if !admin_client(shared, req) {
                return status_unauthorized();
            }
            return Response::text(200, shared.metrics_body());
        }
        _ => {}
    }
    if (path == "/v2" || path.starts_with("/v2/"))
        && shared.features.registry_up.load(Ordering::SeqCst)
    {
        return registry_endpoint(path);
    }
    // Unmatched paths fall through to the apiserver handler, unauthenticated.
    if shared.cfg.disable_apiserver {
        return Response::text(503, "apiserver disabled");
    }
    if !shared.apiserver_ready.load(Ordering::SeqCst) {
        return Response::text(503, "apiserver not ready");
    }
    // kube-apiserver runs with --anonymous-auth=false.
    if !admin_client(shared, req) {
        return status_unauthorized();
    }
    if path == crate::nodes_api::NODE_STATUS_PATH && req.method == "POST" {
        return crate::nodes_api::heard(&req.body);
    }
    if path == "/api/v1/nodes" {
        return crate::nodes_api::list(
            own_node(shared),
            &node_hosts(shared),
            shared.password().as_deref(),
        );
    }
    apiserver_endpoint(shared, path)
}

/// This server's record for the node list.
fn own_node(shared: &Shared) -> serde_json::Value {
    let version = shared.version.to_string();
    crate::nodes_api::own_node(&shared.cfg, &shared.node_name, &shared.ip, &version)
}

/// The datastore's state: this node's copy, else the one of the server it joined (read through
/// its etcd proxy).
fn datastore_state(shared: &Shared) -> Option<ClusterState> {
    shared.state().or_else(|| {
        let pw = shared.password()?;
        control_plane::read_datastore(&proxy_servers(shared), &datastore_path(), &pw).ok()
    })
}

/// The hosts of the cluster's other servers: the etcd members and the apiservers of the
/// datastore (this node's copy, else the one of the server it joined).
fn node_hosts(shared: &Shared) -> Vec<String> {
    let Some(state) = datastore_state(shared) else {
        return Vec::new();
    };
    let urls = state.members.iter().map(|m| m.peer_url.as_str());
    urls.chain(state.apiservers.iter().map(String::as_str))
        .filter_map(|u| Url::parse(u).ok())
        .map(|u| u.host)
        .filter(|h| *h != shared.ip)
        .collect()
}

/// The supervisor's readyz (`handlers.Readyz`, pkg/server/handlers/handlers.go): 503 `runtime
/// core not ready` until the server's controllers run (`Runtime.Core`, set once an apiserver is
/// ready), logged as `util.SendError` logs every error it sends.
fn readyz(shared: &Shared, req: &Request) -> Response {
    if shared.api_reachable() {
        return Response::text(200, "ok");
    }
    logs::error(format!(
        "Sending HTTP/1.1 503 response to {}: runtime core not ready",
        req.remote
    ));
    Response::json(
        503,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"runtime core not ready\",\"reason\":\"ServiceUnavailable\",\"code\":503}",
    )
}

/// The request carries this cluster's admin client certificate (the
/// kubeconfig's `client-certificate-data`), or the server token as a bearer.
fn admin_client(shared: &Shared, req: &Request) -> bool {
    let Some(pw) = shared.password() else {
        return false;
    };
    if req.header(http::CLIENT_CERT_HEADER) == Some(datastore::admin_certificate_data(&pw).as_str())
    {
        return true;
    }
    // The cluster token, or the kubeconfig's bearer derived from it (`repro run --keep`
    // writes that one, so no copy of the token is left in the results folder).
    matches!(req.credential(), Some((None, token)) if token == pw || token == distro::sim_admin::bearer(&pw))
}

/// The apiserver library's 401 body.
fn status_unauthorized() -> Response {
    Response::json(
        401,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}",
    )
}

fn datastore_endpoint(shared: &Shared, req: &Request) -> Response {
    if !authorized(shared, req) {
        return unauthorized();
    }
    if shared.state().is_none() {
        return Response::text(503, "datastore not ready");
    }
    if lock(&shared.no_leader_until).is_some_and(|t| Instant::now() < t) {
        return Response::text(503, "etcdserver: no leader");
    }
    let state = if req.method == "POST" {
        match serde_json::from_slice::<ClusterState>(&req.body) {
            Ok(incoming) => match shared.admit_state(&incoming) {
                Ok(state) => state,
                Err(e) => return Response::text(LEARNER_REFUSED, e),
            },
            Err(e) => return Response::text(400, e.to_string()),
        }
    } else {
        shared.state()
    };
    match state.map(|s| serde_json::to_string(&s)) {
        Some(Ok(json)) => Response::json(200, json),
        Some(Err(e)) => Response::text(500, e.to_string()),
        None => Response::text(503, "datastore not ready"),
    }
}

fn registry_endpoint(path: &str) -> Response {
    if path == "/v2" || path == "/v2/" {
        let mut resp = Response::json(200, "{}");
        resp.extra_headers
            .push(("Docker-Distribution-API-Version", "registry/2.0".into()));
        return resp;
    }
    Response::json(
        404,
        "{\"errors\":[{\"code\":\"NAME_UNKNOWN\",\"message\":\"repository name not known to registry\"}]}",
    )
}

fn apiserver_endpoint(shared: &Shared, path: &str) -> Response {
    match path {
        "/metrics" => Response::text(200, shared.metrics_body()),
        "/readyz" | "/livez" | "/healthz" => Response::text(200, "ok"),
        "/version" => Response::json(
            200,
            format!(
                "{{\"major\":\"{}\",\"minor\":\"{}\",\"gitVersion\":\"{}\",\"gitCommit\":\"repro-sim\",\"gitTreeState\":\"clean\",\"goVersion\":\"none (repro k3s stand-in)\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}}",
                shared.version.major,
                shared.version.minor_string(),
                shared.version
            ),
        ),
        _ => Response::json(
            404,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"details\":{},\"code\":404}",
        ),
    }
}
