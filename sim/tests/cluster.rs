//! The stand-in on Docker, driven by hand with the `docker` CLI: the k3s
//! #12753 steps on a buggy version (under both `REPRO_SIM_CONFIG_SOURCE`
//! values) and a fixed one, the critical-config fatal, the PID 1 rule on a
//! (simulated) cgroup-v2 host, `k3s agent`, and the fault knobs.
//!
//! Needs a Docker engine and FAILS without one (nothing is skipped). Builds
//! the static binary (`cargo build --target x86_64-unknown-linux-gnu` with
//! `+crt-static`, a no-op after `make sim`) unless `REPRO_SIM_BINARY` names
//! one, then the `repro.local/k3s-sim:<tag>` images. Every container, network
//! and volume a test makes is removed by a guard, also when it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BUGGY: &str = "v1.33.4+k3s1";
const FIXED: &str = "v1.33.5+k3s1";
const TOKEN: &str = "repro-sim-test-token";
const WAIT: Duration = Duration::from_secs(40);
const REGISTRY_UP: &str = "Starting distributed registry mirror at https://";

// ---------------------------------------------------------------- docker CLI

fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the docker CLI ({e}); these tests need Docker"))
}

fn docker_ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(
        out.status.success(),
        "docker {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn require_docker() {
    let out = docker(&["version", "--format", "{{.Server.APIVersion}}"]);
    assert!(
        out.status.success(),
        "Docker is not reachable ({}): start the engine or set DOCKER_HOST; these tests do not skip",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// Removes what a test created, in reverse dependency order, on drop.
struct Cleanup {
    prefix: String,
    containers: Vec<String>,
    volumes: Vec<String>,
    network: Option<String>,
    tmp: PathBuf,
}

impl Cleanup {
    fn new(label: &str) -> Cleanup {
        let prefix = format!("rsim-{label}-{}", std::process::id());
        let tmp = std::env::temp_dir().join(&prefix);
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("temp dir");
        Cleanup {
            prefix,
            containers: Vec::new(),
            volumes: Vec::new(),
            network: None,
            tmp,
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = docker(&["rm", "-f", "-v", c]);
        }
        for v in &self.volumes {
            let _ = docker(&["volume", "rm", "-f", v]);
        }
        if let Some(n) = &self.network {
            let _ = docker(&["network", "rm", n]);
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

// ------------------------------------------------------------ binary, images

/// The static binary: `$REPRO_SIM_BINARY`, else built next to this test's
/// target dir (cargo makes that a no-op when `make sim` already ran).
fn static_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("REPRO_SIM_BINARY") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "REPRO_SIM_BINARY={} is not a file",
            path.display()
        );
        return path;
    }
    // …/target/<profile>/k3s → …/target
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_k3s"));
    let target_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir of the k3s binary")
        .to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(cargo)
        .args([
            "build",
            "-p",
            "k3s-sim",
            "--release",
            "--target",
            "x86_64-unknown-linux-gnu",
        ])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo to build the static stand-in");
    assert!(
        status.success(),
        "building the static k3s stand-in failed (try `make sim`)"
    );
    target_dir.join("x86_64-unknown-linux-gnu/release/k3s")
}

/// Builds the images once per test binary.
fn images() -> &'static (String, String) {
    static IMAGES: OnceLock<(String, String)> = OnceLock::new();
    IMAGES.get_or_init(|| {
        require_docker();
        let binary = static_binary();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-images.sh");
        let out = Command::new(&script)
            .arg(&binary)
            .args([BUGGY, FIXED])
            .output()
            .expect("run build-images.sh");
        assert!(
            out.status.success(),
            "building stand-in images failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (image_ref(BUGGY), image_ref(FIXED))
    })
}

fn image_ref(version: &str) -> String {
    format!(
        "{}:{}",
        std::env::var("REPRO_SIM_REPOSITORY").unwrap_or_else(|_| "repro.local/k3s-sim".into()),
        version.replace('+', "-")
    )
}

// ------------------------------------------------------------------- cluster

struct Cluster {
    c: Cleanup,
    image: String,
    network: String,
    /// Extra env for every node created from now on.
    env: Vec<String>,
    /// Run nodes under docker-init (`--init`), as repro did before #9.
    init: bool,
}

impl Cluster {
    fn new(label: &str, image: &str) -> Cluster {
        let mut c = Cleanup::new(label);
        let network = format!("{}-net", c.prefix);
        docker_ok(&[
            "network",
            "create",
            "--label",
            "io.repro.sim.test=1",
            &network,
        ]);
        c.network = Some(network.clone());
        Cluster {
            c,
            image: image.to_string(),
            network,
            env: Vec::new(),
            init: true,
        }
    }

    fn container(&self, node: &str) -> String {
        format!("{}-{node}", self.c.prefix)
    }

    /// Creates a node with its data on a named volume, then copies its
    /// `/etc/rancher/k3s` in (no bind mounts).
    fn create(&mut self, node: &str, config: &str, extra_env: &[&str]) {
        self.create_cmd(node, config, extra_env, "server");
    }

    fn create_cmd(&mut self, node: &str, config: &str, extra_env: &[&str], command: &str) {
        let name = self.container(node);
        let volume = format!("{name}-data");
        docker_ok(&[
            "volume",
            "create",
            "--label",
            "io.repro.sim.test=1",
            &volume,
        ]);
        self.c.volumes.push(volume.clone());
        let mount = format!("{volume}:/var/lib/rancher/k3s");
        let mut args = vec![
            "create",
            "--name",
            &name,
            "--hostname",
            node,
            "--network",
            &self.network,
            "--network-alias",
            node,
            "--label",
            "io.repro.sim.test=1",
            "-v",
            &mount,
        ];
        if self.init {
            args.push("--init");
        }
        let env = self.env.clone();
        for e in env
            .iter()
            .map(String::as_str)
            .chain(extra_env.iter().copied())
        {
            args.push("-e");
            args.push(e);
        }
        args.push(&self.image);
        args.push(command);
        docker_ok(&args);
        self.c.containers.push(name.clone());

        let dir = self.c.tmp.join(node).join("rancher/k3s");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("config.yaml"), config).expect("config.yaml");
        std::fs::write(dir.join("registries.yaml"), "mirrors:\n  docker.io: {}\n")
            .expect("registries.yaml");
        let src = self.c.tmp.join(node).join("rancher");
        docker_ok(&[
            "cp",
            &src.display().to_string(),
            &format!("{name}:/etc/rancher"),
        ]);
    }

    /// Replaces a file in the node (the container may be running or stopped).
    fn put(&self, node: &str, path: &str, content: &str) {
        let local = self.c.tmp.join(format!("{node}-upload"));
        std::fs::write(&local, content).expect("write upload");
        docker_ok(&[
            "cp",
            &local.display().to_string(),
            &format!("{}:{path}", self.container(node)),
        ]);
    }

    fn start(&self, node: &str) {
        docker_ok(&["start", &self.container(node)]);
    }

    fn restart(&self, node: &str) {
        docker_ok(&["restart", "-t", "10", &self.container(node)]);
    }

    /// The whole log (k3s logs on stderr).
    fn logs(&self, node: &str) -> String {
        let out = docker(&["logs", &self.container(node)]);
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// The `n`th boot's log lines (1-based), split at each banner: old boots
    /// stay in `docker logs`, so every wait is anchored at its own boot.
    fn boot(&self, node: &str, n: usize) -> Option<String> {
        boots(&self.logs(node)).into_iter().nth(n.checked_sub(1)?)
    }

    /// Polls until boot `n` of `node` has a line containing `needle`.
    fn wait_for(&self, node: &str, n: usize, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(boot) = self.boot(node, n) {
                if boot.contains(needle) {
                    return boot;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{node}: boot {n} never logged {needle:?}; log:\n{}",
                self.logs(node)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn running(&self, node: &str) -> bool {
        docker_ok(&["inspect", "-f", "{{.State.Running}}", &self.container(node)]) == "true"
    }

    /// Waits until the container stopped; returns its exit code.
    fn wait_exit(&self, node: &str) -> i32 {
        let deadline = Instant::now() + WAIT;
        while self.running(node) {
            assert!(
                Instant::now() < deadline,
                "{node} did not exit; log:\n{}",
                self.logs(node)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        docker_ok(&[
            "inspect",
            "-f",
            "{{.State.ExitCode}}",
            &self.container(node),
        ])
        .parse()
        .expect("exit code")
    }

    /// `k3s kubectl … --raw /metrics` inside the node, as checks/signals.yaml's probe runs it
    /// (its placeholders filled from k3s's facts): (exit code, stdout, stderr).
    fn probe_metrics(&self, node: &str) -> (i32, String, String) {
        let k3s = distro::Distro::K3s.facts();
        let server = format!("https://127.0.0.1:{}", k3s.supervisor_port);
        let mut probe = k3s.kubectl.to_vec();
        probe.extend([
            "--kubeconfig",
            k3s.kubeconfig_path,
            "get",
            "--server",
            server.as_str(),
        ]);
        probe.extend(["--raw", "/metrics"]);
        self.exec(node, &probe)
    }

    /// A file's content inside the node (copied out; the image has no shell).
    fn read_file(&self, node: &str, path: &str) -> Option<String> {
        let dest = self.c.tmp.join(format!("{node}-read"));
        let _ = std::fs::remove_file(&dest);
        let out = docker(&[
            "cp",
            &format!("{}:{path}", self.container(node)),
            &dest.display().to_string(),
        ]);
        out.status
            .success()
            .then(|| std::fs::read_to_string(&dest).expect("copied file"))
    }

    fn ip(&self, node: &str) -> String {
        docker_ok(&[
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            &self.container(node),
        ])
    }

    /// A command inside the node: (exit code, stdout, stderr).
    fn exec(&self, node: &str, command: &[&str]) -> (i32, String, String) {
        let name = self.container(node);
        let mut args = vec!["exec", name.as_str()];
        args.extend(command);
        let out = docker(&args);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn boots(log: &str) -> Vec<String> {
    let mut boots: Vec<String> = Vec::new();
    for line in log.lines() {
        if line.contains("msg=\"Starting k3s v") {
            boots.push(String::new());
        }
        if let Some(current) = boots.last_mut() {
            current.push_str(line);
            current.push('\n');
        }
    }
    boots
}

fn etcd_config(extra: &str, init: bool) -> String {
    let join = if init {
        "cluster-init: true\n".to_string()
    } else {
        "server: https://etcd-1:6443\n".to_string()
    };
    format!(
        "{join}token: {TOKEN}\ndisable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n{extra}"
    )
}

fn cp_config(extra: &str) -> String {
    format!("server: https://etcd-1:6443\ntoken: {TOKEN}\ndisable-etcd: true\n{extra}")
}

/// 3 etcd-only + 1 control-plane-only, all ready, kubelets running.
fn etcd_split_on(mut cl: Cluster) -> Cluster {
    cl.create("etcd-1", &etcd_config("", true), &[]);
    cl.create("etcd-2", &etcd_config("", false), &[]);
    cl.create("etcd-3", &etcd_config("", false), &[]);
    cl.create("cp-1", &cp_config(""), &[]);
    let t = Instant::now();
    cl.start("etcd-1");
    cl.wait_for("etcd-1", 1, "k3s is up and running");
    let ready_after = t.elapsed();
    for node in ["etcd-2", "etcd-3", "cp-1"] {
        cl.start(node);
    }
    for node in ["etcd-2", "etcd-3", "cp-1"] {
        cl.wait_for(node, 1, "k3s is up and running");
    }
    // etcd-only kubelets wait for an apiserver address (cp-1's).
    for node in ["etcd-1", "etcd-2", "etcd-3", "cp-1"] {
        cl.wait_for(node, 1, "Running kubelet");
    }
    // The etcd-only joiners' load balancers learn cp-1's address from etcd
    // and save it (k3s-agent-load-balancer.json), as k3s does.
    let cp = format!("{}:6443", cl.ip("cp-1"));
    // (Buggy: `Adding server to load balancer …: <cp>`; a fixed release
    // first moves its default off the local supervisor: `… default server: <cp>`.)
    for node in ["etcd-2", "etcd-3"] {
        cl.wait_for(node, 1, "load balancer k3s-agent-load-balancer");
        cl.wait_for(node, 1, &cp);
    }
    eprintln!(
        "{}: etcd-1 ready {ready_after:?} after docker start",
        cl.c.prefix
    );
    cl
}

// --------------------------------------------------------------------- tests

/// Which k3s the stand-in plays: fixed, or buggy with the joiner's config
/// coming through the load balancer (k3s's code) or from the joined node
/// (#12753's steps as written).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum World {
    Fixed,
    BugLoadBalancer,
    BugJoined,
}

/// k3s #12753 by hand, registry then supervisor metrics, on one cluster.
fn replay_12753(label: &str, image: &str, world: World) {
    let buggy = world != World::Fixed;
    let mut cl = Cluster::new(label, image);
    if world == World::BugJoined {
        cl.env.push("REPRO_SIM_CONFIG_SOURCE=joined".into());
    }
    let cl = etcd_split_on(cl);
    let boot1 = cl.boot("etcd-2", 1).expect("boot 1");
    assert!(boot1.contains("Adding member etcd-2-"), "{boot1}");
    assert!(
        boot1.contains("Starting etcd to join cluster with members [etcd-1-"),
        "{boot1}"
    );

    // Step 2: embedded-registry on etcd-2 and etcd-3 only.
    for node in ["etcd-2", "etcd-3"] {
        cl.put(
            node,
            "/etc/rancher/k3s/config.yaml",
            &etcd_config("embedded-registry: true\n", false),
        );
        cl.restart(node);
    }
    for node in ["etcd-2", "etcd-3"] {
        let boot = cl.wait_for(node, 2, "Running kubelet");
        assert!(boot.contains("Managed etcd cluster bootstrap already complete and initialized"));
        assert!(
            !boot.contains("critical configuration mismatched"),
            "{boot}"
        );
        assert_eq!(
            boot.contains(REGISTRY_UP),
            !buggy,
            "step 2, {node}:\n{boot}"
        );
        // k3s's order within a boot: registry, containerd, kubelet, ready.
        let at = |needle: &str| {
            boot.find(needle)
                .unwrap_or_else(|| panic!("{needle}:\n{boot}"))
        };
        if !buggy {
            assert!(at(REGISTRY_UP) < at("Running containerd"));
        }
        assert!(at("Running containerd") < at("Running kubelet"));
        let ready = cl.wait_for(node, 2, "k3s is up and running");
        assert!(ready.find("Running kubelet") < ready.find("k3s is up and running"));
        // Where the served config came from: the saved server (cp-1) first
        // through the load balancer; the joined node when told so.
        if world == World::BugLoadBalancer {
            assert!(
                boot.contains("@UNCHECKED->RECOVERING from successful dial"),
                "{boot}"
            );
        }
    }

    // Step 3: embedded-registry on the init node, restart it.
    cl.put(
        "etcd-1",
        "/etc/rancher/k3s/config.yaml",
        &etcd_config("embedded-registry: true\n", true),
    );
    cl.restart("etcd-1");
    let boot = cl.wait_for("etcd-1", 2, "Running kubelet");
    assert!(boot.contains(REGISTRY_UP), "step 3, etcd-1:\n{boot}");
    assert!(
        boot.contains("Starting distributed registry P2P node at "),
        "{boot}"
    );

    // Step 4: restart etcd-2 and etcd-3 again. Fixed: up. Buggy: up only if
    // the joiner reads etcd-1 (#12753's words); through the load balancer it
    // reads cp-1, which has no registry: still down.
    for node in ["etcd-2", "etcd-3"] {
        cl.restart(node);
    }
    for node in ["etcd-2", "etcd-3"] {
        let boot = cl.wait_for(node, 3, "Running kubelet");
        assert_eq!(
            boot.contains(REGISTRY_UP),
            world != World::BugLoadBalancer,
            "step 4, {node} ({world:?}):\n{boot}"
        );
    }
    if buggy {
        let saved = cl
            .read_file(
                "etcd-2",
                "/var/lib/rancher/k3s/agent/etc/k3s-agent-load-balancer.json",
            )
            .expect("load balancer file");
        assert_eq!(
            saved,
            format!(
                "{{\n  \"ServerURL\": \"https://etcd-1:6443\",\n  \"ServerAddresses\": [\n    \"{}:6443\"\n  ]\n}}",
                cl.ip("cp-1")
            )
        );
    }

    // rke2#8465: supervisor-metrics on etcd-2/3 first.
    let both = "embedded-registry: true\nsupervisor-metrics: true\n";
    for node in ["etcd-2", "etcd-3"] {
        cl.put(
            node,
            "/etc/rancher/k3s/config.yaml",
            &etcd_config(both, false),
        );
        cl.restart(node);
    }
    for node in ["etcd-2", "etcd-3"] {
        cl.wait_for(node, 4, "Running kubelet");
        let (code, out, err) = cl.probe_metrics(node);
        if buggy {
            assert_eq!(code, 1, "{node}: {out}{err}");
            assert_eq!(
                err.trim(),
                "Error from server (ServiceUnavailable): apiserver disabled"
            );
        } else {
            assert_eq!(code, 0, "{node}: {err}");
            assert!(out.starts_with("# HELP "), "{out}");
            assert!(out.contains("\nk3s_"), "{out}");
        }
    }
    // Then on the init node and cp-1 (which must match etcd-1 in both keys).
    cl.put(
        "etcd-1",
        "/etc/rancher/k3s/config.yaml",
        &etcd_config(both, true),
    );
    cl.restart("etcd-1");
    cl.wait_for("etcd-1", 3, "Running kubelet");
    cl.put("cp-1", "/etc/rancher/k3s/config.yaml", &cp_config(both));
    cl.restart("cp-1");
    let boot = cl.wait_for("cp-1", 2, "Running kubelet");
    assert!(
        !boot.contains("critical configuration mismatched"),
        "{boot}"
    );
    let (code, out, _) = cl.probe_metrics("etcd-1");
    assert_eq!(code, 0);
    assert!(out.starts_with("# HELP "));
    // Nodes with an apiserver answer /metrics either way (one registry).
    let (code, out, _) = cl.probe_metrics("cp-1");
    assert_eq!(code, 0);
    assert!(out.contains("# HELP apiserver_request_total "), "{out}");
    for node in ["etcd-2", "etcd-3"] {
        cl.restart(node);
    }
    for node in ["etcd-2", "etcd-3"] {
        cl.wait_for(node, 5, "Running kubelet");
        let (code, out, err) = cl.probe_metrics(node);
        assert_eq!(code, 0, "{node}: {err}");
        assert!(out.starts_with("# HELP "), "{out}");
    }

    // SIGTERM ends a node with status 0, promptly.
    let t = Instant::now();
    docker_ok(&["stop", "-t", "10", &cl.container("etcd-3")]);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        t.elapsed()
    );
    assert_eq!(cl.wait_exit("etcd-3"), 0);
}

#[test]
fn issue_12753_reproduces_on_v1_33_4() {
    let (buggy, _) = images();
    replay_12753("bug", buggy, World::BugLoadBalancer);
}

#[test]
fn issue_12753_as_its_steps_tell_it_with_config_source_joined() {
    let (buggy, _) = images();
    replay_12753("joined", buggy, World::BugJoined);
}

#[test]
fn issue_12753_is_fixed_on_v1_33_5() {
    let (_, fixed) = images();
    replay_12753("fix", fixed, World::Fixed);
}

/// On a cgroup-v2 host (simulated here: these machines are v1) a k3s that is
/// not PID 1 fails at its kubelet; as PID 1 (no docker-init) it comes up.
#[test]
fn cgroup_v2_needs_k3s_as_pid_1() {
    let (_, fixed) = images();
    let mut cl = Cluster::new("cgv2", fixed);
    cl.env.push("REPRO_SIM_CGROUP=v2".into());
    cl.create("under-init", &etcd_config("", true), &[]);
    cl.init = false;
    cl.create("as-pid1", &etcd_config("", true), &[]);

    cl.start("under-init");
    assert_eq!(cl.wait_exit("under-init"), 1);
    let boot = cl.boot("under-init", 1).expect("boot");
    let kubelet = boot.find("Running kubelet").expect("kubelet step");
    let failed = boot
        .find(r#"kubelet.go:1423] "Failed to start ContainerManager" err="cannot enter cgroupv2 \"/sys/fs/cgroup/kubepods\" with domain controllers -- it is in an invalid state""#)
        .unwrap_or_else(|| panic!("no kubelet failure:\n{boot}"));
    assert!(kubelet < failed);
    assert!(!boot.contains("k3s is up and running"), "{boot}");

    cl.start("as-pid1");
    cl.wait_for("as-pid1", 1, "k3s is up and running");
    // SIGTERM still ends PID 1 (it has handlers, so the kernel delivers it).
    docker_ok(&["stop", "-t", "10", &cl.container("as-pid1")]);
    assert_eq!(cl.wait_exit("as-pid1"), 0);
}

/// `k3s agent`, k3s's unknown-key warning, and `/metrics` only for a client
/// with the kubeconfig's certificate.
#[test]
fn agents_unknown_keys_and_metrics_auth() {
    let (buggy, _) = images();
    let mut cl = Cluster::new("agent", buggy);
    cl.create(
        "server-1",
        &format!("cluster-init: true\ntoken: {TOKEN}\nsupervisor-metrics: true\nembeded-registry: true\n"),
        &[],
    );
    cl.create_cmd(
        "agent-1",
        &format!("server: https://server-1:6443\ntoken: {TOKEN}\n"),
        &[],
        "agent",
    );
    cl.start("server-1");
    cl.wait_for("server-1", 1, "k3s is up and running");
    // Config warnings come before the banner, as in k3s.
    let log = cl.logs("server-1");
    assert!(
        log.contains(r#"level=warning msg="Unknown flag --embeded-registry found in config.yaml, skipping\n""#),
        "{log}"
    );
    cl.start("agent-1");
    let log = {
        let deadline = Instant::now() + WAIT;
        loop {
            let log = cl.logs("agent-1");
            if log.contains("\"Successfully registered node\" node=\"agent-1\"") {
                break log;
            }
            assert!(Instant::now() < deadline, "agent never registered:\n{log}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert!(
        log.contains("msg=\"Starting k3s agent v1.33.4+k3s1 (repro-sim)\""),
        "{log}"
    );
    assert!(log.contains("Running kubelet "), "{log}");

    let (code, out, _) = cl.probe_metrics("server-1");
    assert_eq!(code, 0);
    assert!(out.starts_with("# HELP "), "{out}");
    // No credential: the apiserver refuses anonymous requests.
    cl.put(
        "server-1",
        "/tmp/anonymous.yaml",
        "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\n",
    );
    let (code, _, err) = cl.exec(
        "server-1",
        &[
            "k3s",
            "kubectl",
            "--kubeconfig",
            "/tmp/anonymous.yaml",
            "get",
            "--raw",
            "/metrics",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "error: You must be logged in to the server (Unauthorized)"
    );
}

#[test]
fn critical_config_mismatch_is_fatal_where_k3s_checks_it() {
    let (buggy, _) = images();
    let mut cl = Cluster::new("crit", buggy);
    cl.create("etcd-1", &etcd_config("", true), &[]);
    cl.create(
        "etcd-2",
        &etcd_config("supervisor-metrics: true\n", false),
        &[],
    );
    cl.create("etcd-3", &etcd_config("", false), &[]);
    cl.create("cp-1", &cp_config(""), &[]);
    cl.create(
        "etcd-4",
        &etcd_config("", false).replace(TOKEN, "wrong-token"),
        &[],
    );
    cl.start("etcd-1");
    cl.wait_for("etcd-1", 1, "k3s is up and running");

    // A brand-new joiner with a mismatch dies on its first boot.
    cl.start("etcd-2");
    assert_eq!(cl.wait_exit("etcd-2"), 1);
    let boot = cl.boot("etcd-2", 1).expect("boot");
    assert!(
        boot.contains(
            "level=warning msg=\"critical configuration mismatched: supervisor-metrics\""
        ),
        "{boot}"
    );
    assert!(boot.contains("level=fatal msg=\"Error: preparing server: failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers\""), "{boot}");
    assert!(!cl.layout_has_etcd_data("etcd-2"));

    // A wrong token fails the way k3s does: 401 on the bootstrap data.
    cl.start("etcd-4");
    assert_eq!(cl.wait_exit("etcd-4"), 1);
    let boot = cl.boot("etcd-4", 1).expect("boot");
    assert!(boot.contains("Skipping cluster configuration validation: https://etcd-1:6443/v1-k3s/config: 401 Unauthorized"), "{boot}");
    assert!(boot.contains("level=fatal msg=\"Error: preparing server: failed to bootstrap cluster data: https://etcd-1:6443/v1-k3s/server-bootstrap: 401 Unauthorized\""), "{boot}");

    // An etcd member with data skips the check on restart.
    cl.start("etcd-3");
    cl.wait_for("etcd-3", 1, "k3s is up and running");
    cl.put(
        "etcd-3",
        "/etc/rancher/k3s/config.yaml",
        &etcd_config("secrets-encryption: true\n", false),
    );
    cl.restart("etcd-3");
    let boot = cl.wait_for("etcd-3", 2, "k3s is up and running");
    assert!(
        !boot.contains("critical configuration mismatched"),
        "{boot}"
    );

    // A control-plane-only node checks on every start.
    cl.start("cp-1");
    cl.wait_for("cp-1", 1, "k3s is up and running");
    cl.put(
        "cp-1",
        "/etc/rancher/k3s/config.yaml",
        &cp_config("supervisor-metrics: true\nembedded-registry: true\n"),
    );
    cl.restart("cp-1");
    cl.wait_for("cp-1", 2, "level=fatal");
    assert_eq!(cl.wait_exit("cp-1"), 1);
    let boot = cl.boot("cp-1", 2).expect("boot");
    let warnings: Vec<&str> = boot
        .lines()
        .filter(|l| l.contains("critical configuration mismatched"))
        .collect();
    assert_eq!(warnings.len(), 2, "{boot}");
    assert!(warnings[0].ends_with("msg=\"critical configuration mismatched: embedded-registry\""));
    assert!(warnings[1].ends_with("msg=\"critical configuration mismatched: supervisor-metrics\""));
    assert!(!boot.contains("k3s is up and running"));
}

impl Cluster {
    fn layout_has_etcd_data(&self, node: &str) -> bool {
        // The image has no shell: copying the WAL directory out of the
        // (stopped) container succeeds only if it exists.
        let dest = self.c.tmp.join(format!("{node}-etcd"));
        let out = docker(&[
            "cp",
            &format!(
                "{}:/var/lib/rancher/k3s/server/db/etcd/member/wal",
                self.container(node)
            ),
            &dest.display().to_string(),
        ]);
        out.status.success()
    }
}

#[test]
fn fault_knobs_change_per_boot() {
    let (_, fixed) = images();
    let mut cl = Cluster::new("faults", fixed);
    cl.create(
        "etcd-1",
        &etcd_config("", true),
        &["REPRO_SIM_CRASH_AT_BOOT=1"],
    );

    // Boot 1: crash right after the banner.
    cl.start("etcd-1");
    assert_eq!(cl.wait_exit("etcd-1"), 1);
    let boot = cl.boot("etcd-1", 1).expect("boot 1");
    assert!(boot.contains("level=fatal"), "{boot}");
    assert!(!boot.contains("k3s is up and running"));

    // Boot 2: the file overrides the env; slow boot and garbage on stdout.
    cl.put(
        "etcd-1",
        "/etc/rancher/k3s/repro-sim-faults.env",
        "REPRO_SIM_CRASH_AT_BOOT=0\nREPRO_SIM_BOOT_DELAY=2s\nREPRO_SIM_GARBAGE=1\n",
    );
    let t = Instant::now();
    cl.start("etcd-1");
    cl.wait_for("etcd-1", 2, "k3s is up and running");
    assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
    // Docker's json-file driver turns the invalid bytes into U+FFFD.
    let stdout = docker(&["logs", &cl.container("etcd-1")]).stdout;
    let text = String::from_utf8_lossy(&stdout);
    assert!(
        text.contains("repro-sim garbage"),
        "no garbage on stdout: {text}"
    );
    assert!(
        text.contains('\u{fffd}') && text.contains('\u{1b}'),
        "{text}"
    );

    // Boot 3: never ready, stays alive.
    // (Each file repeats CRASH_AT_BOOT=0: without it the env's 1 applies again.)
    cl.put(
        "etcd-1",
        "/etc/rancher/k3s/repro-sim-faults.env",
        "REPRO_SIM_CRASH_AT_BOOT=0\nREPRO_SIM_NEVER_READY=1\n",
    );
    cl.restart("etcd-1");
    cl.wait_for("etcd-1", 3, "Starting etcd for existing cluster member");
    std::thread::sleep(Duration::from_secs(2));
    assert!(cl.running("etcd-1"));
    assert!(!cl
        .boot("etcd-1", 3)
        .expect("boot 3")
        .contains("k3s is up and running"));

    // Boot 4: exits 1 on its own shortly after start.
    cl.put(
        "etcd-1",
        "/etc/rancher/k3s/repro-sim-faults.env",
        "REPRO_SIM_CRASH_AT_BOOT=0\nREPRO_SIM_EXIT_AFTER=1s\n",
    );
    cl.restart("etcd-1");
    assert_eq!(cl.wait_exit("etcd-1"), 1);
    let boot = cl.boot("etcd-1", 4).expect("boot 4");
    assert!(boot.contains("k3s is up and running"), "{boot}");
    assert!(
        boot.contains("level=fatal msg=\"repro-sim fault injection: REPRO_SIM_EXIT_AFTER"),
        "{boot}"
    );
}

#[test]
fn boots_are_split_at_each_banner() {
    let log = "time=\"t\" level=info msg=\"Starting k3s v1.33.4+k3s1 (repro-sim)\"\na\ntime=\"t\" level=info msg=\"Starting k3s v1.33.4+k3s1 (repro-sim)\"\nb\n";
    let b = boots(log);
    assert_eq!(b.len(), 2);
    assert!(b[1].ends_with("b\n"));
}

/// Agent startup sequencing (k3s f185f9e72, from v1.32.4; docs/k3s-behaviour.md §15): `run`
/// calls `PrepareServer`, then `agent.Run` (the kubelet, then kube-proxy's first read of
/// DisableKubeProxy, at once), then `StartServer` (this node's etcd). So a restarted etcd-only
/// member reads disable-kube-proxy from its own supervisor — whose readyz answers 503
/// `runtime core not ready`, which is not the 500 the read retries on — before its etcd can
/// name cp-1's address: cp-1's `disable-kube-proxy: true` does not reach it.
#[test]
fn etcd_only_member_reads_kube_proxy_from_its_own_config_before_its_etcd_starts() {
    let (_, fixed) = images();
    let cl = etcd_split_on(Cluster::new("seq", fixed));
    cl.put(
        "cp-1",
        "/etc/rancher/k3s/config.yaml",
        &cp_config("disable-kube-proxy: true\n"),
    );
    cl.restart("cp-1");
    let cp = cl.wait_for("cp-1", 2, "k3s is up and running");
    assert!(!cp.contains("Running kube-proxy"), "{cp}");
    cl.restart("etcd-2");
    let boot = cl.wait_for("etcd-2", 2, "k3s is up and running");
    let at = |needle: &str| {
        boot.find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{boot}"))
    };
    assert!(at("Running kubelet") < at("Starting etcd for existing cluster member"));
    assert!(at("Running kube-proxy") < at("Starting etcd for existing cluster member"));
    assert!(
        boot.contains("Sending HTTP/1.1 503 response to 127.0.0.1:")
            && boot.contains(": runtime core not ready"),
        "{boot}"
    );
    // The kubelet's drop-in (writeKubeletConfig) holds the served cluster DNS and domain.
    let dropin = cl
        .read_file(
            "etcd-2",
            "/var/lib/rancher/k3s/agent/etc/kubelet.conf.d/00-k3s-defaults.conf",
        )
        .expect("the kubelet drop-in");
    assert!(
        dropin.contains("\nclusterDNS:\n- 10.43.0.10\nclusterDomain: cluster.local\n"),
        "{dropin}"
    );
}
