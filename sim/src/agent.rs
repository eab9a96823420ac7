//! The agent: the half of `k3s server` that runs containerd and the kubelet,
//! and all of `k3s agent` (pkg/agent/run.go).
//!
//! In order, as k3s: the supervisor proxy/load balancer, validating the
//! connection, fetching the served config (`/v1-k3s/config`) from whichever
//! server the load balancer reaches, the embedded registry and supervisor
//! metrics from that config, containerd, the wait for apiserver addresses on
//! etcd-only nodes (in the background since the 2025 start-up rework), and
//! the kubelet. See docs/k3s-behaviour.md for the citations.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bootstrap::{self, CriticalArgs, Proxy, Wire};
use crate::cgroup;
use crate::component_lines::{self, AgentView};
use crate::config::ServerConfig;
use crate::datastore;
use crate::http::{self, Auth, Url};
use crate::loadbalancer::{self, ConfigSource, LoadBalancer};
use crate::logs;
use crate::registries;
use crate::version::{version_env, Changes, Version};

const P2P_PORT: &str = "5001";

/// What the agent turned on; the HTTP handlers read it.
#[derive(Default)]
pub struct Features {
    pub registry_up: AtomicBool,
    pub metrics_mounted: AtomicBool,
}

/// Milestones the server part waits for before it reports readiness: k3s
/// prints `k3s is up and running` after its agent reached the kubelet, or
/// while the agent is stuck waiting for a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Waiting,
    Kubelet,
}

pub struct Plan {
    pub version: Version,
    pub cfg: ServerConfig,
    pub node_name: String,
    pub ip: String,
    /// The URL the agent bootstraps from (`agentConfig.ServerURL`).
    pub bootstrap_url: String,
    /// The token's password (user `node`).
    pub password: String,
    pub proxy: Proxy,
    /// `ETCDAgent`: a server without an apiserver.
    pub etcd_agent: bool,
    /// `k3s agent` rather than the agent inside `k3s server`.
    pub standalone: bool,
}

/// Whether an apiserver is reachable yet (`executor.APIServerReadyChan`): the agent starts
/// its networking (flannel, the network policy controller) only then.
pub type ApiReady = Box<dyn Fn() -> bool + Send>;

/// Apiserver addresses (`host:port`) known to this node: the local etcd on
/// etcd-only servers, the reached supervisor on agents.
pub type Addresses = Box<dyn Fn() -> Vec<String> + Send>;

fn notify(progress: &Option<Sender<Progress>>, p: Progress, sent: &mut Option<Progress>) {
    if *sent != Some(p) {
        *sent = Some(p);
        if let Some(tx) = progress {
            let _ = tx.send(p);
        }
    }
}

pub fn run(
    plan: Plan,
    features: Arc<Features>,
    addresses: Addresses,
    api_ready: ApiReady,
    progress: Option<Sender<Progress>>,
) {
    let mut sent = None;
    let data_dir = plan.cfg.data_dir.clone();
    let (source, problem) = ConfigSource::from_env(
        std::env::var(loadbalancer::CONFIG_SOURCE_ENV)
            .ok()
            .as_deref(),
    );
    if let Some(problem) = problem {
        logs::warn(problem);
    }
    let lb = match plan.proxy {
        Proxy::Direct => None,
        Proxy::LoadBalancer { reset } => {
            if reset {
                loadbalancer::reset(&data_dir);
            }
            Some(Arc::new(Mutex::new(LoadBalancer::new(
                &data_dir,
                &plan.bootstrap_url,
                source,
            ))))
        }
    };
    validate_token(&plan, &lb, &progress, &mut sent);
    let mut served = fetch_config(&plan, &lb, &progress, &mut sent);
    crate::plant::joined_metrics(&mut served, &plan.cfg, plan.etcd_agent, &plan.password);
    crate::plant::cached_flannel_backend(&mut served, &data_dir);

    let view = AgentView {
        served: &served,
        node_name: &plan.node_name,
        ip: &plan.ip,
        data_dir: &data_dir,
        version: &plan.version,
    };
    let on = bootstrap::agent_features(&served, &plan.version);
    if on.embedded_registry {
        start_registry(&plan, &features);
    }
    // Supervisor metrics print nothing: the handler is just mounted.
    if on.supervisor_metrics {
        features.metrics_mounted.store(true, Ordering::SeqCst);
    }
    if let Some(warning) =
        component_lines::flannel_external_ip_warning(&view, !plan.cfg.node_external_ip.is_empty())
    {
        logs::warn(warning);
    }
    let d = data_dir.display();
    logs::info(format!(
        "Running containerd -c {d}/agent/etc/containerd/config.toml -a /run/k3s/containerd/containerd.sock --state /run/k3s/containerd --root {d}/agent/containerd"
    ));
    crate::pace::phase(distro::pace::Phase::Agent);
    logs::info("containerd is now running");

    if plan.etcd_agent {
        let waiter = AddressWait {
            lb: lb.clone(),
            addresses,
            port: plan.cfg.https_port,
            version: plan.version.clone(),
        };
        if plan.version.has_agent_startup_sequencing() {
            std::thread::spawn(move || waiter.wait());
        } else {
            notify(&progress, Progress::Waiting, &mut sent);
            waiter.wait();
        }
    }

    if plan.version.has_kubelet_config_file() {
        write_kubelet_defaults(&view);
    }
    logs::info(format!(
        "Running kubelet {}",
        component_lines::kubelet_args(&view)
    ));
    if let Some(lines) = cgroup::Facts::read().kubelet_failure() {
        kubelet_lines(&data_dir, &lines);
        if crate::distro::facts().kubelet_log.is_some() {
            // rke2's kubelet is a child process: rke2 logs its exit (and would start it again
            // after 5 s, pkg/podexecutor/staticpod.go); the stand-in stops here.
            logs::error("Kubelet exited: exit status 1");
        }
        // The kubelet exits the process (os.Exit(1)) after this line.
        std::process::exit(1);
    }
    // agent.Agent starts kube-proxy's goroutine after the kubelet and returns; its first read
    // is immediate (KubeProxyDisabled polls with immediate=true). From agent startup sequencing
    // on, agent.Run returns before the node's etcd starts (node.rs): the first read is made
    // before the server goes on, as k3s's comes long before etcd can answer.
    if plan.version.has_agent_startup_sequencing() {
        start_kube_proxy(&plan, &lb, &served);
        notify(&progress, Progress::Kubelet, &mut sent);
    } else {
        notify(&progress, Progress::Kubelet, &mut sent);
        start_kube_proxy(&plan, &lb, &served);
    }
    start_network(&view, api_ready);

    if plan.standalone {
        register_standalone(&plan, &lb, &data_dir);
        post_status(&plan, &lb);
    }
}

/// The kubelet's node status updates: the agent's Node object posted every second to every
/// server it knows, until the process ends. k3s's kubelet posts through the agent's load
/// balancer to one apiserver every 10 s (`nodeStatusUpdateFrequency`), and etcd shares the
/// object; each stand-in apiserver remembers only what it heard itself (`nodes_api::heard`),
/// so the agent posts to each, and often enough for the shortened node-monitor grace the e2e
/// tests give (3 s). The servers it knows: the load balancer's, and every apiserver a server
/// lists (the node list's control-plane nodes, asked each round: k3s's load balancer follows
/// the `kubernetes` endpoints — the apiservers — and keeps every server it knew). Kept apart from the load balancer, whose list and picks
/// the checks observe.
fn post_status(plan: &Plan, lb: &Option<Arc<Mutex<LoadBalancer>>>) {
    let lb = lb.clone();
    let bootstrap = loadbalancer::host_port(&plan.bootstrap_url);
    let password = plan.password.clone();
    let version = plan.version.to_string();
    let node = crate::nodes_api::agent_node(&plan.node_name, &plan.ip, &version).to_string();
    std::thread::spawn(move || {
        let mut known: Vec<String> = vec![bootstrap];
        loop {
            if let Some(lb) = &lb {
                let lb = lock(lb);
                known.extend(lb.addresses());
                known.push(lb.default_address());
            }
            // Short timeouts: a stopped server must not hold up the round past the grace.
            let ask = |server: &String, method: &str, path: &str, auth: &Auth<'_>, body| {
                let url = Url::parse(&format!("https://{server}")).ok()?;
                let resp =
                    http::request(method, &url, path, auth, body, Duration::from_secs(2)).ok()?;
                (resp.status == 200).then_some(resp.body)
            };
            let listed = known.iter().find_map(|server| {
                let auth = Auth::Bearer(&password);
                let body = ask(server, "GET", "/api/v1/nodes", &auth, None)?;
                Some(apiservers(&serde_json::from_slice(&body).ok()?, server))
            });
            known.extend(listed.unwrap_or_default());
            known.retain(|a| !a.is_empty());
            known.sort();
            known.dedup();
            for server in &known {
                // A server down or without an apiserver yet: the next round tries again.
                let path = crate::nodes_api::NODE_STATUS_PATH;
                let _ = ask(
                    server,
                    "POST",
                    path,
                    &Auth::Bearer(&password),
                    Some(node.as_bytes()),
                );
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
}

/// The apiservers (`host:port`, the port `asked`'s) in a node list: its control-plane nodes'
/// addresses.
fn apiservers(list: &serde_json::Value, asked: &str) -> Vec<String> {
    let port = asked.rsplit_once(':').map_or("", |(_, p)| p);
    let items = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    (items.iter())
        .filter(|n| n["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] == "true")
        .filter_map(|n| {
            let addresses = n["status"]["addresses"].as_array()?;
            let ip = addresses.iter().find(|a| a["type"] == "InternalIP")?;
            Some(format!("{}:{port}", ip["address"].as_str()?))
        })
        .collect()
}

/// Where requests appear to go: the load balancer's local address, or the server.
fn shown(lb: &Option<Arc<Mutex<LoadBalancer>>>, plan: &Plan, path: &str) -> String {
    match lb {
        Some(_) => format!("https://{}{path}", loadbalancer::LOCAL_ADDRESS),
        None => format!("{}{path}", plan.bootstrap_url.trim_end_matches('/')),
    }
}

/// createProxyAndValidateToken: retry every 2 s until some server answers.
fn validate_token(
    plan: &Plan,
    lb: &Option<Arc<Mutex<LoadBalancer>>>,
    progress: &Option<Sender<Progress>>,
    sent: &mut Option<Progress>,
) {
    loop {
        let why = match reach_server(lb, &plan.bootstrap_url) {
            None => format!("Get \"{}\": EOF", shown(lb, plan, "/cacerts")),
            Some(addr) => match get(&addr, "/cacerts", &Auth::None) {
                Ok(_) => return,
                Err(e) => e,
            },
        };
        logs::error(format!(
            "Failed to validate connection to cluster at {}: failed to get CA certs: {why}",
            plan.bootstrap_url
        ));
        notify(progress, Progress::Waiting, sent);
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// config.Get: the served config of whichever server the proxy reaches, retried every 5 s.
fn fetch_config(
    plan: &Plan,
    lb: &Option<Arc<Mutex<LoadBalancer>>>,
    progress: &Option<Sender<Progress>>,
    sent: &mut Option<Progress>,
) -> CriticalArgs {
    let path = crate::distro::supervisor_path("config");
    loop {
        let why = match reach_server(lb, &plan.bootstrap_url) {
            None => format!("Get \"{}\": EOF", shown(lb, plan, &path)),
            Some(addr) => match get(&addr, &path, &Auth::Basic("node", &plan.password))
                .and_then(|body| serde_json::from_slice::<Wire>(&body).map_err(|e| e.to_string()))
            {
                Ok(wire) => return CriticalArgs::from_wire(&wire),
                Err(e) => e,
            },
        };
        logs::info(format!(
            "Waiting to retrieve agent configuration; server is not ready: failed to retrieve configuration from server: {why}"
        ));
        notify(progress, Progress::Waiting, sent);
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// A standalone agent: the tunnel seeds the load balancer with the apiserver list, then the
/// kubelet registers the node.
fn register_standalone(
    plan: &Plan,
    lb: &Option<Arc<Mutex<LoadBalancer>>>,
    data_dir: &std::path::Path,
) {
    if let Some(lb) = lb {
        // (The guard must not live across the `update` below.)
        let reached = lock(lb).dial();
        if let Some(addr) = reached {
            if let Ok(body) = get(
                &addr,
                &crate::distro::supervisor_path("apiservers"),
                &Auth::Basic("node", &plan.password),
            ) {
                if let Ok(list) = serde_json::from_slice::<Vec<String>>(&body) {
                    lock(lb).update(&list);
                }
            }
        }
    }
    let registered = cgroup::klog(
        'I',
        std::process::id(),
        "kubelet_node_status.go:78",
        &format!(
            "\"Successfully registered node\" node=\"{}\"",
            plan.node_name
        ),
    );
    kubelet_lines(data_dir, &[registered]);
}

/// The kubelet's own (klog) lines, where the distribution's kubelet writes them: k3s runs it
/// in its process, so they are k3s's stderr (the container log, the journal); rke2 runs it as
/// a child with `log-file=<data-dir>/agent/logs/kubelet.log`, `logtostderr=false` and its
/// output sent there too (rke2 pkg/cli/defaults/defaults.go, pkg/podexecutor/staticpod.go at
/// v1.32.5), so they never reach the journal (`Facts::kubelet_log`).
fn kubelet_lines(data_dir: &std::path::Path, lines: &[String]) {
    let Some(rel) = crate::distro::facts().kubelet_log else {
        for line in lines {
            logs::raw(line);
        }
        return;
    };
    let path = data_dir.join(rel);
    let written = (|| {
        use std::io::Write;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        for line in lines {
            f.write_all(line.trim_end_matches('\n').as_bytes())?;
            f.write_all(b"\n")?;
        }
        Ok::<(), std::io::Error>(())
    })();
    if let Err(e) = written {
        logs::warn(format!("repro-sim: cannot write {}: {e}", path.display()));
    }
}

/// The `host:port` the agent's requests reach: the load balancer's pick, or the server itself.
fn reach_server(lb: &Option<Arc<Mutex<LoadBalancer>>>, bootstrap_url: &str) -> Option<String> {
    match lb {
        Some(lb) => lock(lb).dial(),
        None => Some(loadbalancer::host_port(bootstrap_url)),
    }
}

fn write_kubelet_defaults(view: &AgentView<'_>) {
    let path = component_lines::kubelet_defaults_path(view.data_dir);
    let result = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| e.to_string())
        .and_then(|_| {
            datastore::write_atomic(&path, component_lines::kubelet_defaults(view).as_bytes())
        });
    if let Err(e) = result {
        logs::error(format!("Failed to write {}: {e}", path.display()));
    }
}

/// kube-proxy (agent.Agent's goroutine): `KubeProxyDisabled` asks the server the agent reaches
/// for `DisableKubeProxy`, a key no server compares, so the answer is that server's
/// (pkg/agent/config/config.go `getKubeProxyDisabled`). The first try is made here, before this
/// returns (k3s's is immediate); only a failed one is retried, every 5 s, in the background,
/// by which time an etcd-only node's load balancer may have moved to a control-plane node.
fn start_kube_proxy(plan: &Plan, lb: &Option<Arc<Mutex<LoadBalancer>>>, served: &CriticalArgs) {
    let lb = lb.clone();
    let bootstrap_url = plan.bootstrap_url.clone();
    let password = plan.password.clone();
    let try_once = move || {
        let answer = match reach_server(&lb, &bootstrap_url) {
            None => Err("EOF".to_string()),
            Some(addr) => kube_proxy_disabled(&addr, &password),
        };
        if let Err(e) = &answer {
            logs::info(format!(
                "Waiting to retrieve kube-proxy configuration; server is not ready: {e}"
            ));
        }
        answer.ok()
    };
    let first = try_once();
    let served = served.clone();
    let node_name = plan.node_name.clone();
    let ip = plan.ip.clone();
    let data_dir = plan.cfg.data_dir.clone();
    let version = plan.version.clone();
    let run = move |disabled: bool| {
        if !disabled {
            let view = AgentView {
                served: &served,
                node_name: &node_name,
                ip: &ip,
                data_dir: &data_dir,
                version: &version,
            };
            logs::info(format!(
                "Running kube-proxy {}",
                component_lines::kube_proxy_args(&view)
            ));
        }
    };
    match first {
        Some(disabled) => run(disabled),
        None => {
            std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_secs(5));
                if let Some(disabled) = try_once() {
                    run(disabled);
                    break;
                }
            });
        }
    }
}

/// `getKubeProxyDisabled`: readyz first (a 500 means not ready yet), then the served config.
fn kube_proxy_disabled(addr: &str, password: &str) -> Result<bool, String> {
    let auth = Auth::Basic("node", password);
    if let Err(e) = get(addr, &crate::distro::supervisor_path("readyz"), &auth) {
        if e.ends_with("500 Internal Server Error") {
            return Err(e);
        }
    }
    let body = get(addr, &crate::distro::supervisor_path("config"), &auth)
        .map_err(|e| format!("failed to retrieve configuration from server: {e}"))?;
    let wire: Wire = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    Ok(wire.extra.disable_kube_proxy)
}

/// `startNetwork`, once an apiserver is reachable: flannel, then the network policy
/// controller, from the config the agent started with.
fn start_network(view: &AgentView<'_>, api_ready: ApiReady) {
    let lines = component_lines::network_lines(view);
    if lines.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        while !api_ready() {
            std::thread::sleep(Duration::from_millis(250));
        }
        for line in lines {
            logs::info(line);
        }
    });
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// GET `path` from `address` (`host:port`); any non-200 answer is an error
/// worded like k3s's client (`<url>: 401 Unauthorized`).
fn get(address: &str, path: &str, auth: &Auth<'_>) -> Result<Vec<u8>, String> {
    let url = Url::parse(&format!("https://{address}"))?;
    match http::request("GET", &url, path, auth, None, Duration::from_secs(10)) {
        Ok(resp) if resp.status == 200 => Ok(resp.body),
        Ok(resp) => Err(format!(
            "{}: {} {}",
            url.with_path(path),
            resp.status,
            http::reason(resp.status)
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn start_registry(plan: &Plan, features: &Features) {
    let (mirrors, problem) = registries::mirrored_registries(&plan.cfg.private_registry);
    if let Some(problem) = problem {
        logs::warn(problem);
    }
    if mirrors.is_empty() {
        logs::error(
            "Not starting distributed registry mirror: no registries configured for distributed mirroring",
        );
        return;
    }
    let p2p = std::env::var(crate::distro::env_name("P2P_PORT"))
        .ok()
        .filter(|p| p.parse::<u16>().is_ok_and(|n| n != 0))
        .unwrap_or_else(|| P2P_PORT.to_string());
    logs::info(format!(
        "Starting distributed registry mirror at https://{}:{}/v2 for registries {}",
        plan.ip,
        plan.cfg.https_port,
        datastore::go_list(&mirrors)
    ));
    logs::info(format!(
        "Starting distributed registry P2P node at {}:{p2p}",
        plan.ip
    ));
    features.registry_up.store(true, Ordering::SeqCst);
}

/// `waitForAPIServerAddresses` on etcd-only nodes.
struct AddressWait {
    lb: Option<Arc<Mutex<LoadBalancer>>>,
    addresses: Addresses,
    port: u16,
    version: Version,
}

impl AddressWait {
    fn wait(self) {
        let message = if self.version.has_local_supervisor_default() {
            "Waiting for control-plane node to register apiserver addresses in etcd"
        } else {
            "Waiting for apiserver addresses"
        };
        let started = Instant::now();
        let mut next_log = Duration::from_secs(5);
        let found = loop {
            let found: Vec<String> = (self.addresses)()
                .iter()
                .map(|a| with_port(a, self.port))
                .collect();
            if !found.is_empty() {
                break found;
            }
            std::thread::sleep(Duration::from_millis(250));
            if started.elapsed() >= next_log {
                logs::info(message);
                next_log += Duration::from_secs(5);
            }
        };
        let Some(lb) = &self.lb else { return };
        let mut lb = lock(lb);
        // Newer releases move the default off the local supervisor only;
        // older ones always made the first apiserver the default.
        let default = lb.default_address();
        let local_default = default.starts_with("127.0.0.1:") || default.starts_with("[::1]:");
        if !self.version.has_local_supervisor_default() || local_default {
            lb.set_default(&found[0]);
        }
        lb.update(&found);
    }
}

/// `https://10.0.0.4:6443` or `10.0.0.4:9999` → `10.0.0.4:<port>`.
fn with_port(address: &str, port: u16) -> String {
    let hp = loadbalancer::host_port(address);
    let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
    format!("{host}:{port}")
}

/// `k3s agent …`: a worker. Never returns on success.
pub fn run_command(cli_args: &[String]) -> i32 {
    let env = |k: &str| std::env::var(k).ok();
    let version = match crate::version::imitated() {
        Some(v) => {
            crate::version::parse(&v).unwrap_or_else(|e| logs::fatal(format!("repro-sim: {e}")))
        }
        None => logs::fatal(format!("repro-sim: {} is not set", version_env())),
    };
    let config_path = crate::config::config_path(cli_args, &env);
    let files = crate::config::read_config_files(&config_path).unwrap_or_else(|e| logs::fatal(e));
    let (cfg, loaded) = crate::config::load(&crate::config::Inputs {
        cli_args,
        files: &files,
        env: &env,
        version: &version,
        command: distro::FlagCommand::Agent,
    })
    .unwrap_or_else(|e| logs::fatal(e.to_string()));
    for warning in &loaded.warnings {
        logs::warn(warning);
    }
    crate::nodes_api::remember_node_args(&files, cli_args, &version, distro::FlagCommand::Agent);
    let banner = crate::config::facts().agent_banner_prefix;
    logs::info(format!("{banner}{version} ({})", crate::distro::commit()));
    crate::distro::stage_kubectl();
    let Some(server_url) = cfg.server_url.clone() else {
        logs::fatal("Error: --server is required");
    };
    let Some(token) = cfg.token.clone() else {
        logs::fatal("Error: --token is required");
    };
    let password = datastore::token_password(&token)
        .unwrap_or_else(|e| logs::fatal(format!("Error: failed to validate token: {e}")));
    let hostname = crate::host::hostname();
    let node_name = cfg
        .node_name
        .clone()
        .unwrap_or_else(|| hostname.to_lowercase());
    let ip = crate::host::node_ip(cfg.node_ip.as_deref(), &hostname);

    // Agents listen on the supervisor port for the registry and metrics.
    let features = Arc::new(Features::default());
    let listen = format!("0.0.0.0:{}", cfg.https_port);
    match std::net::TcpListener::bind(&listen) {
        Ok(listener) => {
            let f = Arc::clone(&features);
            let cert = datastore::admin_certificate_data(&password);
            http::serve(
                listener,
                Arc::new(move |req: &http::Request| agent_route(&f, &cert, req)),
            );
        }
        Err(e) => logs::fatal(format!("Error: listen tcp {listen}: {e}")),
    }
    let plan = Plan {
        version,
        cfg,
        node_name,
        ip,
        bootstrap_url: server_url,
        password,
        proxy: Proxy::LoadBalancer { reset: false },
        etcd_agent: false,
        standalone: true,
    };
    // A standalone agent reaches a server with an apiserver (or waits in config.Get above).
    run(plan, features, Box::new(Vec::new), Box::new(|| true), None);
    crate::distro::agent_ready();
    loop {
        std::thread::park();
    }
}

/// The agent's own router: `/v2` once the registry runs, `/metrics` (with a
/// client certificate) once supervisor metrics are on; nothing else.
fn agent_route(features: &Features, cert: &str, req: &http::Request) -> http::Response {
    let path = req.path.as_str();
    if path == "/metrics" && features.metrics_mounted.load(Ordering::SeqCst) {
        if req.header(http::CLIENT_CERT_HEADER) != Some(cert) {
            return http::Response::json(
                401,
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}",
            );
        }
        return http::Response::text(200, "# HELP k3s_agent repro-sim agent metrics (made up)\n# TYPE k3s_agent gauge\nk3s_agent 1\n");
    }
    if (path == "/v2" || path == "/v2/") && features.registry_up.load(Ordering::SeqCst) {
        return http::Response::json(200, "{}");
    }
    http::Response::text(404, "404 page not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apiservers_are_the_control_plane_nodes_of_the_list() {
        let node = |name: &str, ip: &str, cp: bool| {
            let mut n = crate::nodes_api::agent_node(name, ip, "v1.33.4+k3s1");
            if cp {
                n["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = "true".into();
            }
            n
        };
        let list = serde_json::json!({"items": [
            node("cp-1", "10.0.0.4", true),
            node("etcd-1", "10.0.0.2", false),
            node("cp-2", "10.0.0.5", true),
        ]});
        assert_eq!(
            apiservers(&list, "cp-1:6443"),
            ["10.0.0.4:6443", "10.0.0.5:6443"]
        );
    }

    #[test]
    fn apiserver_addresses_take_the_supervisor_port() {
        assert_eq!(with_port("https://10.0.0.4:6443", 6443), "10.0.0.4:6443");
        assert_eq!(with_port("10.0.0.4:9999", 6443), "10.0.0.4:6443");
    }
}
