//! The shipped signals (checks/signals.yaml) read against lines built from k3s's own format
//! strings — each test quotes the format string and names its file (at k3s 062b95349, "Update
//! to v1.32.9", the release batch of v1.33.5+k3s1; docs/k3s-behaviour.md §15). Pure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};

use super::observe::{eval_log, eval_probe, Eval, Settle};
use super::watch::{Boot, LogLine};
use crate::result::Observed;
use crate::scenario::{Signal, Signals, DEFAULT_SETTLE};
use distro::Version;

fn signals() -> Signals {
    crate::load::signals(
        Path::new("signals.yaml"),
        include_str!("../../checks/signals.yaml"),
    )
    .expect("shipped signals are valid")
}

fn signal(name: &str) -> Signal {
    signals().get(name).expect("signal").clone()
}

fn v(s: &str) -> Version {
    s.parse().expect("version")
}

/// logrus's text form of `msg` at `level`, as k3s prints it.
fn logrus(level: &str, msg: &str) -> String {
    format!("time=\"2025-09-26T10:40:01Z\" level={level} msg=\"{msg}\"")
}

/// A boot with these lines, all seen `age` ago.
fn boot(lines: &[String], age: Duration) -> Boot {
    let seen = Instant::now() - age;
    let lines: Vec<LogLine> = lines
        .iter()
        .enumerate()
        .map(|(i, t)| LogLine {
            ts: Utc.timestamp_opt(1_800_000_000 + i as i64, 0).unwrap(),
            seen,
            text: t.clone(),
        })
        .collect();
    let ready = lines
        .iter()
        .position(|l| l.text.contains("k3s is up and running"));
    Boot {
        number: 2,
        step: 1,
        started_at: Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
        lines,
        ready,
        end: None,
        log_path: PathBuf::new(),
        write_error: None,
    }
}

/// The signal's reading of `lines` seen `age` ago on `version`; `None` = still pending.
fn read(sig: &Signal, lines: &[String], age: Duration, version: &str) -> Option<String> {
    let settle = Settle { margin: None };
    match eval_log(sig, &boot(lines, age), &v(version), settle, Instant::now()) {
        Eval::Decided(o) => Some(o.observed.as_str().to_string()),
        Eval::Pending { .. } => None,
    }
}

const LATE: Duration = Duration::from_secs(60);

/// pkg/daemons/agent/agent.go startKubelet: `logrus.Infof("Running kubelet %s",
/// daemonconfig.ArgString(args))`, the args from kubeletArgsAndConfig
/// (pkg/daemons/agent/agent_linux.go): `argsMap["cloud-provider"] = "external"` unless
/// `cfg.DisableCCM`, sorted by util.GetArgs.
#[test]
fn the_kubelet_line_shows_the_served_disable_cloud_controller() {
    let sig = signal("kubelet-cloud-provider");
    let shows = sig.shows.clone().expect("shows");
    assert_eq!(shows.key, "disable-cloud-controller");
    assert_eq!(shows.up_when, Some(false));
    let args = |cloud: bool| {
        let mut a = vec![
            "--config-dir=/var/lib/rancher/k3s/agent/etc/kubelet.conf.d".to_string(),
            "--containerd=/run/k3s/containerd/containerd.sock".into(),
            "--hostname-override=etcd-2".into(),
            "--node-ip=10.0.0.3".into(),
        ];
        if cloud {
            a.push("--cloud-provider=external".into());
        }
        a.sort();
        a.join(" ")
    };
    let kubelet = |cloud: bool| logrus("info", &format!("Running kubelet {}", args(cloud)));
    for version in ["v1.33.4+k3s1", "v1.33.5+k3s1", "v1.31.12+k3s1"] {
        assert_eq!(
            read(&sig, &[kubelet(true)], Duration::ZERO, version).as_deref(),
            Some("up"),
            "{version}"
        );
        assert_eq!(
            read(&sig, &[kubelet(false)], Duration::ZERO, version).as_deref(),
            Some("down"),
            "{version}"
        );
    }
    // not before the kubelet's line
    assert_eq!(
        read(
            &sig,
            &[logrus("info", "Running containerd -c x")],
            LATE,
            "v1.33.5+k3s1"
        ),
        None
    );
}

/// pkg/daemons/agent/agent.go writeKubeletConfig: `yaml.Marshal(config)` of
/// defaultKubeletConfig (`ClusterDomain: cfg.ClusterDomain`; `for _, addr := range
/// cfg.ClusterDNSs { defaultConfig.ClusterDNS = append(defaultConfig.ClusterDNS,
/// addr.String()) }`) to `filepath.Join(path, "00-"+version.Program+"-defaults.conf")`:
/// sigs.k8s.io/yaml sorts the keys and writes list items at their key's column.
#[test]
fn the_kubelet_drop_in_shows_cluster_dns_and_domain_from_v1_32_1() {
    let file = |dns: &[&str], domain: &str| {
        let items: String = dns.iter().map(|d| format!("- {d}\n")).collect();
        format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nauthentication:\n  anonymous:\n    enabled: false\ncgroupDriver: cgroupfs\nclusterDNS:\n{items}clusterDomain: {domain}\ncpuManagerReconcilePeriod: 10s\nkind: KubeletConfiguration\n"
        )
    };
    let sigs = signals();
    let dns = sigs.get("cluster-dns").expect("cluster-dns");
    let domain = sigs.get("cluster-domain").expect("cluster-domain");
    for sig in [dns, domain] {
        let p = sig.probe.as_ref().expect("a probe");
        assert_eq!(
            p.command,
            [
                "cat",
                "/var/lib/rancher/k3s/agent/etc/kubelet.conf.d/00-k3s-defaults.conf"
            ]
        );
        assert!(sig.is_value());
        // the file from v1.32.1 (k3s #2116); the kubelet's flags before
        assert!(sig.probe_for(&v("v1.33.4+k3s1")).is_some());
        assert!(sig.probe_for(&v("v1.32.1+k3s1")).is_some());
        assert!(sig.probe_for(&v("v1.32.0+k3s1")).is_none());
        assert!(sig.probe_for(&v("v1.31.12+k3s1")).is_none());
    }
    let read = |sig: &Signal, out: &str| eval_probe(sig, 0, out).map(|o| o.as_str().to_string());
    let one = file(&["10.43.0.10"], "cluster.local");
    assert_eq!(read(dns, &one).as_deref(), Some("10.43.0.10"));
    assert_eq!(read(domain, &one).as_deref(), Some("cluster.local"));
    let two = file(&["fd00:43::a", "10.53.0.10"], "explore.local");
    assert_eq!(read(dns, &two).as_deref(), Some("10.53.0.10,fd00:43::a"));
    assert_eq!(read(domain, &two).as_deref(), Some("explore.local"));
    // busybox cat's error: not written yet, try again
    assert_eq!(
        eval_probe(dns, 1, "cat: can't open '/var/lib/rancher/k3s/agent/etc/kubelet.conf.d/00-k3s-defaults.conf': No such file or directory"),
        None
    );
    // before v1.32.1 the kubelet's line still shows them
    let line = logrus(
        "info",
        "Running kubelet --address=0.0.0.0 --cluster-dns=10.43.0.10 --cluster-domain=cluster.local --node-ip=10.0.0.3",
    );
    let ready = logrus("info", "k3s is up and running");
    assert_eq!(
        super::observe::eval_log(
            dns,
            &boot(&[line.clone(), ready.clone()], LATE),
            &v("v1.31.12+k3s1"),
            Settle { margin: None },
            Instant::now()
        )
        .decided()
        .as_deref(),
        Some("10.43.0.10")
    );
}

/// pkg/agent/netpol/netpol.go Run: `logrus.Warnf("Skipping network policy controller start,
/// ipset unavailable: %v", err)` — printed where the controller is enabled (the served
/// DisableNPC is false) but ipset is missing: not `down`, and the settle rule does not make
/// it so.
#[test]
fn a_skipped_network_policy_controller_leaves_the_key_undecided() {
    let sig = signal("network-policy");
    let kubelet = logrus("info", "Running kubelet --node-ip=10.0.0.3");
    let skipped = logrus(
        "warning",
        "Skipping network policy controller start, ipset unavailable: ipset v7.11: Kernel error received: Operation not permitted",
    );
    assert_eq!(
        read(&sig, &[kubelet.clone(), skipped], LATE, "v1.33.5+k3s1").as_deref(),
        Some("unknown")
    );
    // without it, the settle window after the kubelet's line still decides `down`
    assert_eq!(
        read(&sig, std::slice::from_ref(&kubelet), LATE, "v1.33.5+k3s1").as_deref(),
        Some("down")
    );
    let started = logrus(
        "info",
        "Starting network policy controller version v2.5.0, built on 2025-01-01T00:00:00Z, go1.24.4",
    );
    assert_eq!(
        read(&sig, &[kubelet, started], LATE, "v1.33.5+k3s1").as_deref(),
        Some("up")
    );
}

/// pkg/cluster/bootstrap.go compareConfig: `field := strings.Split(d, ":")[0]`, then
/// `logrus.Warnf("critical configuration mismatched: %s", cliTag)` when `rc.FieldByName(field)`
/// has a `cli` tag, else `…: %s", field)` — go-test/deep's path for the pointer and slice
/// fields of CriticalControlArgs (pkg/daemons/config/types.go). Each path reads as its key.
#[test]
fn mismatch_paths_read_as_their_keys() {
    let sig = signal("config-mismatch");
    let mismatched = |field: &str| {
        logrus(
            "warning",
            &format!("critical configuration mismatched: {field}"),
        )
    };
    let fatal = logrus("fatal", "Error: preparing server: failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers");
    let cases: &[(&[&str], &str)] = &[
        (
            &["ClusterIPRanges.slice[0].IP", "ClusterIPRange.IP"],
            "cluster-cidr",
        ),
        (
            &[
                "ClusterIPRanges.slice[0].Mask.slice[1]",
                "ClusterIPRange.Mask.slice[1]",
            ],
            "cluster-cidr",
        ),
        (
            &["ServiceIPRange.IP", "ServiceIPRanges.slice[0].IP"],
            "service-cidr",
        ),
        (&["ClusterDNSs.slice[0]", "cluster-dns"], "cluster-dns"),
        (&["cluster-domain"], "cluster-domain"),
        (
            &[
                "ClusterIPRanges.slice[0].IP",
                "ClusterIPRange.IP",
                "embedded-registry",
            ],
            "cluster-cidr,embedded-registry",
        ),
    ];
    for (fields, want) in cases {
        let mut lines: Vec<String> = fields.iter().map(|f| mismatched(f)).collect();
        lines.push(fatal.clone());
        let mut b = boot(&lines, LATE);
        b.end = Some(super::watch::Ended::Died {
            exit_code: Some(1),
            at: "t".into(),
            oom: false,
        });
        let settle = Settle { margin: None };
        let got = match eval_log(&sig, &b, &v("v1.33.4+k3s1"), settle, Instant::now()) {
            Eval::Decided(o) => o.observed,
            Eval::Pending { .. } => Observed::Unknown,
        };
        assert_eq!(got.as_str(), *want, "{fields:?}");
    }
}

/// pkg/daemons/control/tunnel.go TunnelServer.watch: `logrus.Infof("Tunnel server egress proxy
/// mode: %s", t.config.EgressSelectorMode)`, run from runControllers once an apiserver is
/// ready (pkg/server/server.go), alongside the goroutine that prints the ready line: the value
/// may come just after it, so the signal waits the settle window after the ready line.
#[test]
fn the_egress_mode_line_may_follow_the_ready_line() {
    let sig = signal("egress-selector-mode");
    let ready = logrus("info", "k3s is up and running");
    let mode = logrus("info", "Tunnel server egress proxy mode: agent");
    // just ready, no line yet: pending, not `none`
    assert_eq!(
        read(
            &sig,
            std::slice::from_ref(&ready),
            Duration::ZERO,
            "v1.33.5+k3s1"
        ),
        None
    );
    assert_eq!(
        read(
            &sig,
            &[ready.clone(), mode.clone()],
            DEFAULT_SETTLE * 2,
            "v1.33.5+k3s1"
        )
        .as_deref(),
        Some("agent")
    );
    // the window passed with no line (a node with no reachable apiserver): `none`
    assert_eq!(
        read(&sig, &[ready], DEFAULT_SETTLE * 2, "v1.33.5+k3s1").as_deref(),
        Some("none")
    );
}

trait Decided {
    fn decided(self) -> Option<String>;
}

impl Decided for Eval {
    fn decided(self) -> Option<String> {
        match self {
            Eval::Decided(o) => Some(o.observed.as_str().to_string()),
            Eval::Pending { .. } => None,
        }
    }
}
