//! The whole pipeline on small SYNTHETIC logs (written for these tests in the shapes k3s and its
//! tools print; k3s's messages are its own strings from docs/k3s-facts.md).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use super::model::{BootReport, Report};
use super::*;

fn catalog() -> Catalog {
    Catalog::load(None).unwrap()
}

fn opts() -> Options {
    Options {
        settle: None,
        excerpt: false,
        secrets: Vec::new(),
        progress: false,
    }
}

/// Writes `files` (name, text) into a temporary folder and inspects `names` of them.
fn run_with(
    files: &[(&str, &str)],
    names: &[&str],
    configs: &[(&str, &str)],
    o: Options,
) -> Result<Report, InputError> {
    let dir = tempfile::tempdir().unwrap();
    for (n, t) in files {
        std::fs::write(dir.path().join(n), t).unwrap();
    }
    let paths: Vec<PathBuf> = names.iter().map(|n| dir.path().join(n)).collect();
    let configs: Vec<(String, PathBuf)> = configs
        .iter()
        .map(|(node, f)| (node.to_string(), dir.path().join(f)))
        .collect();
    let r = sources::resolve(&paths, &[], &configs)?;
    inspect(&r, &catalog(), &o).map(|(rep, _)| rep)
}

fn run(text: &str) -> Report {
    run_with(&[("node-a.log", text)], &["node-a.log"], &[], opts()).unwrap()
}

fn boots(r: &Report) -> Vec<&BootReport> {
    r.inputs[0]
        .nodes
        .iter()
        .flat_map(|n| n.boots.iter())
        .collect()
}

fn state<'a>(b: &'a BootReport, sig: &str) -> &'a str {
    b.signals[sig].state.as_str()
}

/// A journal of one etcd-only boot of k3s v1.33.4: the registry never starts. `after` is how
/// long the log goes on after `Running kubelet`.
fn journal(host: &str, after_kubelet: u32, registry: bool) -> String {
    let mut l = vec![
        "Sep 26 10:38:30 HOST systemd[1]: Starting Lightweight Kubernetes...".to_string(),
        r#"Sep 26 10:38:30 HOST k3s[100]: time="2025-09-26T10:38:30-05:00" level=info msg="Starting k3s v1.33.4+k3s1 (abcdef12)""#.into(),
        r#"Sep 26 10:38:30 HOST k3s[100]: time="2025-09-26T10:38:30-05:00" level=info msg="Managed etcd cluster bootstrap already complete and initialized""#.into(),
        r#"Sep 26 10:38:31 HOST k3s[100]: time="2025-09-26T10:38:31-05:00" level=info msg="Starting etcd for existing cluster member""#.into(),
        r#"Sep 26 10:38:31 HOST k3s[100]: time="2025-09-26T10:38:31-05:00" level=info msg="ETCD server is now running""#.into(),
        r#"Sep 26 10:38:31 HOST k3s[100]: time="2025-09-26T10:38:31-05:00" level=info msg="etcd data store connection OK""#.into(),
        r#"Sep 26 10:38:32 HOST k3s[100]: time="2025-09-26T10:38:32-05:00" level=info msg="Waiting for apiserver addresses""#.into(),
        r#"Sep 26 10:38:32 HOST k3s[100]: time="2025-09-26T10:38:32-05:00" level=info msg="k3s is up and running""#.into(),
        r#"Sep 26 10:38:33 HOST k3s[100]: time="2025-09-26T10:38:33-05:00" level=info msg="Running containerd -c /var/lib/rancher/k3s/agent/etc/containerd/config.toml""#.into(),
    ];
    if registry {
        l.push(r#"Sep 26 10:38:33 HOST k3s[100]: time="2025-09-26T10:38:33-05:00" level=info msg="Starting distributed registry mirror at https://10.0.0.2:6443/v2 for registries [docker.io]""#.into());
    }
    l.push(r#"Sep 26 10:38:34 HOST k3s[100]: time="2025-09-26T10:38:34-05:00" level=info msg="Running kubelet --address=0.0.0.0 --hostname-override=HOST""#.into());
    if after_kubelet > 0 {
        l.push(format!(
            "Sep 26 10:38:{} HOST k3s[100]: I0926 10:38:{} 100 kubelet.go:1] still running",
            34 + after_kubelet,
            34 + after_kubelet
        ));
    }
    let mut s = l.join("\n").replace("HOST", host);
    s.push('\n');
    s
}

const ETCD_JOINER: &str = "server: https://etcd-1:6443\ndisable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\nembedded-registry: true\ntoken: K10aaaabbbbccccdddd::server:hunter2hunter2\n";

#[test]
fn settle_rule_on_a_whole_journal() {
    let r = run(&journal("etcd-2", 5, false));
    let b = boots(&r);
    assert_eq!(b.len(), 1);
    assert!(b[0].whole, "{:?}", b[0].partial_because);
    assert_eq!(
        r.inputs[0].nodes[0].name, "etcd-2",
        "named by the journal's host"
    );
    assert_eq!(b[0].version.as_deref(), Some("v1.33.4+k3s1"));
    assert_eq!(state(b[0], "ready"), "up");
    assert_eq!(state(b[0], "embedded-registry"), "down");
    // `Running kubelet` is ordered after the registry's own line: it decides at once.
    assert!(
        b[0].signals["embedded-registry"]
            .reason
            .contains("after the feature's own"),
        "{}",
        b[0].signals["embedded-registry"].reason
    );
    assert!(b[0].signals["embedded-registry"].evidence[0]
        .text
        .contains("Running kubelet"));
    assert_eq!(
        state(b[0], "supervisor-metrics"),
        "unknown",
        "a probe cannot run on a log"
    );
    assert_eq!(state(b[0], "roles"), "etcd");
    assert_eq!(
        b[0].role.as_deref(),
        Some("etcd"),
        "from a settled roles signal"
    );
}

#[test]
fn up_line_wins() {
    let r = run(&journal("etcd-2", 5, true));
    assert_eq!(state(boots(&r)[0], "embedded-registry"), "up");
}

/// Each line k3s's pkg/spegel/spegel.go logs about the registry starting or not, in each form
/// its source has had (docs/k3s-behaviour.md §14), decides `embedded-registry` alone. These lines
/// are BUILT from the source's format strings (logrus's text form, `Infof`/`Errorf` levels), not
/// copied from a log: no real log of the skip line, of spegel's post-#12795 form or of RKE2's
/// lines was found (real excerpts of the other forms are in tests/fixtures/real-k3s/).
#[test]
fn registry_lines_in_each_form_of_k3s_source() {
    let with = |line: &str| {
        let j = journal("etcd-2", 0, false);
        j.replace(
            "level=info msg=\"Running kubelet",
            &format!("{line}\nSep 26 10:38:34 etcd-2 k3s[100]: time=\"2025-09-26T10:38:34-05:00\" level=info msg=\"Running kubelet"),
        )
    };
    let prefix = r#"Sep 26 10:38:33 etcd-2 k3s[100]: time="2025-09-26T10:38:33-05:00" "#;
    for (line, want) in [
        // `Config.Start`, every version read: the mirror API, then the P2P node.
        (
            r#"level=info msg="Starting distributed registry P2P node at 10.0.0.2:5001""#,
            "up",
        ),
        // spegel's router through k3s's logr sink on logrus (pkg/util/logger, since #12795):
        // the message as msg, spegel's key/values and logger=<names> as fields.
        (
            r#"level=info msg="starting p2p router" id=/ip4/10.0.0.2/tcp/5001/p2p/QmX logger=spegel/p2p"#,
            "up",
        ),
        // No registry left to mirror: `logrus.Errorf`, so at the error level.
        (
            r#"level=error msg="Not starting distributed registry mirror: no registries configured for distributed mirroring""#,
            "down",
        ),
    ] {
        let text = with(&format!("{prefix}{line}"));
        let r = run(&text);
        let b = boots(&r)[0];
        assert_eq!(state(b, "embedded-registry"), want, "{line}");
        assert!(
            b.signals["embedded-registry"]
                .evidence
                .iter()
                .any(|e| e.text.contains(&line[line.find("msg=").unwrap()..][..20])),
            "{line}: {:?}",
            b.signals["embedded-registry"].evidence
        );
    }
    // RKE2 logs the same lines (its agent is k3s's): under `rke2[pid]`, after rke2's banner.
    let rke2 = with(&format!(
        "{prefix}level=info msg=\"Starting distributed registry mirror at https://10.0.0.2:9345/v2 for registries [docker.io]\""
    ))
    .replace("k3s[100]", "rke2[100]")
    .replace("Starting k3s v1.33.4+k3s1 (abcdef12)", "Starting rke2 v1.32.5+rke2r1 (0123456789abcdef0123456789abcdef01234567)");
    let r = run(&rke2);
    let b = boots(&r)[0];
    assert_eq!(b.version.as_deref(), Some("v1.32.5+rke2r1"));
    assert_eq!(state(b, "embedded-registry"), "up");
}

#[test]
fn a_log_cut_off_before_the_settle_window_is_unknown() {
    // With an explicit margin (`--settle 3s`) a log that ends 1s after the kubelet line has not
    // shown the margin pass: unknown, not down.
    let o = Options {
        settle: Some(Duration::from_secs(3)),
        ..opts()
    };
    let text = journal("etcd-2", 1, false);
    let r = run_with(&[("node-a.log", &text)], &["node-a.log"], &[], o).unwrap();
    let b = boots(&r)[0];
    assert_eq!(state(b, "embedded-registry"), "unknown");
    assert!(b.signals["embedded-registry"]
        .reason
        .contains("ends less than"));
}

#[test]
fn an_excerpt_never_gives_down_by_the_settle_rule() {
    // grep's `--` between groups of lines.
    let text = journal("etcd-2", 5, false).replacen("\n", "\n--\n", 3);
    let r = run(&text);
    assert!(r.inputs[0].excerpt);
    let b = boots(&r)[0];
    assert_eq!(state(b, "embedded-registry"), "unknown");
    assert_eq!(state(b, "ready"), "up", "an up line still counts");
    assert_eq!(b.signals["roles"].complete, Some(false));
    // Lines that only the signals name, without any marker: too little ordinary output.
    let only: String = journal("etcd-2", 5, false)
        .lines()
        .filter(|l| l.contains("Starting k3s") || l.contains("kubelet"))
        .map(|l| format!("{l}\n"))
        .collect();
    let b2 = run(&only);
    assert_eq!(state(boots(&b2)[0], "embedded-registry"), "unknown");
    assert!(boots(&b2)[0]
        .partial_because
        .as_deref()
        .unwrap()
        .contains("ordinary lines"));
    // --excerpt says so outright.
    let r = run_with(
        &[("n.log", &journal("etcd-2", 5, false))],
        &["n.log"],
        &[],
        Options {
            excerpt: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(state(boots(&r)[0], "embedded-registry"), "unknown");
}

#[test]
fn a_log_that_starts_inside_a_boot_is_partial() {
    let text: String = journal("etcd-2", 5, false)
        .lines()
        .skip(3)
        .map(|l| format!("{l}\n"))
        .collect();
    let r = run(&text);
    let b = boots(&r)[0];
    assert!(b.start.is_none());
    assert!(!b.whole);
    assert_eq!(state(b, "embedded-registry"), "unknown");
    assert_eq!(b.version, None);
}

#[test]
fn deaths_fatal_lines_and_exit_status() {
    let text = format!(
        "{}{}",
        r#"Sep 26 10:40:00 cp-1 k3s[200]: time="2025-09-26T10:40:00-05:00" level=info msg="Starting k3s v1.33.4+k3s1 (abcdef12)"
Sep 26 10:40:01 cp-1 k3s[200]: time="2025-09-26T10:40:01-05:00" level=warning msg="critical configuration mismatched: DisableHelmController"
Sep 26 10:40:01 cp-1 k3s[200]: time="2025-09-26T10:40:01-05:00" level=fatal msg="Error: preparing server: failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers"
"#,
        "Sep 26 10:40:01 cp-1 systemd[1]: k3s.service: Main process exited, code=exited, status=1/FAILURE\n"
    );
    let r = run(&text);
    let b = boots(&r)[0];
    assert_eq!(b.end.how.as_str(), "died");
    assert_eq!(b.end.exit_code, Some(1));
    assert_eq!(state(b, "fatal"), "up");
    // A death is its own observation (as `run` records it), standing for the on-death value.
    assert_eq!(state(b, "ready"), "dead", "on-death");
    assert_eq!(b.signals["ready"].counts_as.as_deref(), Some("down"));
    assert_eq!(state(b, "embedded-registry"), "dead", "on-death");
    assert_eq!(
        b.signals["embedded-registry"].counts_as.as_deref(),
        Some("down")
    );
    assert!(b.signals["ready"]
        .evidence
        .iter()
        .any(|e| e.text.contains("level=fatal")));
}

#[test]
fn boots_split_at_banners_and_a_stop_is_not_a_death() {
    let text = format!(
        "{}Sep 26 10:39:00 etcd-2 systemd[1]: Stopping Lightweight Kubernetes...\nSep 26 10:39:01 etcd-2 systemd[1]: k3s.service: Main process exited, code=killed, status=15/TERM\n{}",
        journal("etcd-2", 5, false),
        journal("etcd-2", 5, true).replace("10:38:", "10:41:")
    );
    let r = run(&text);
    let b = boots(&r);
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].boot, b[1].boot), (1, 2));
    assert_eq!(b[0].end.how.as_str(), "stopped");
    assert_eq!(state(b[0], "embedded-registry"), "down");
    assert_eq!(state(b[1], "embedded-registry"), "up");
    assert_eq!(b[1].end.how.as_str(), "log-ends");
}

#[test]
fn docker_logs_of_a_restarted_container() {
    let boot = |t: &str, reg: bool| {
        let mut s = format!(
            "{t}:30.1Z time=\"{t}:30Z\" level=info msg=\"Starting k3s v1.33.4+k3s1 (abcdef12)\"\n{t}:30.2Z time=\"{t}:30Z\" level=info msg=\"Managed etcd cluster bootstrap already complete and initialized\"\n{t}:30.3Z time=\"{t}:30Z\" level=info msg=\"ETCD server is now running\"\n{t}:30.4Z time=\"{t}:30Z\" level=info msg=\"etcd data store connection OK\"\n{t}:30.5Z time=\"{t}:30Z\" level=info msg=\"k3s is up and running\"\n{t}:30.6Z time=\"{t}:30Z\" level=info msg=\"Running containerd -c x\"\n"
        );
        if reg {
            s.push_str(&format!("{t}:30.7Z time=\"{t}:30Z\" level=info msg=\"Starting distributed registry mirror at https://1.2.3.4:6443/v2 for registries [docker.io]\"\n"));
        }
        s.push_str(&format!("{t}:31.0Z time=\"{t}:31Z\" level=info msg=\"Running kubelet --x\"\n{t}:39.0Z I0926 later 1 a.go:1] x\n"));
        s
    };
    let text = format!(
        "{}{}",
        boot("2025-09-26T15:38", false),
        boot("2025-09-26T15:40", true)
    );
    let r = run_with(&[("etcd-3.log", &text)], &["etcd-3.log"], &[], opts()).unwrap();
    assert_eq!(r.inputs[0].nodes[0].name, "etcd-3", "named after the file");
    let b = boots(&r);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].end.how.as_str(), "next-boot");
    assert_eq!(state(b[0], "embedded-registry"), "down");
    assert_eq!(state(b[1], "embedded-registry"), "up");
}

#[test]
fn a_pasted_probe_decides_a_probe_signal() {
    let probe = "$ k3s kubectl --kubeconfig /etc/rancher/k3s/k3s.yaml get --server https://127.0.0.1:6443 --raw /metrics\nError from server (ServiceUnavailable): apiserver disabled\n";
    let r = run(&format!("{}{probe}", journal("etcd-2", 5, false)));
    let s = &boots(&r)[0].signals["supervisor-metrics"];
    assert_eq!(s.state.as_str(), "down");
    assert_eq!(s.evidence[0].source.as_str(), "probe-output");
    // The same words without the probe's own command: not its output.
    let other = "$ kubectl get --raw /api/v1/nodes/x/proxy/metrics\nError from server (ServiceUnavailable): apiserver disabled\n";
    let r = run(&format!("{}{other}", journal("etcd-2", 5, false)));
    assert_eq!(state(boots(&r)[0], "supervisor-metrics"), "unknown");
}

#[test]
fn version_from_k3s_v_when_the_banner_is_cut() {
    let text: String = journal("etcd-2", 5, false)
        .lines()
        .skip(2)
        .map(|l| format!("{l}\n"))
        .collect();
    let r = run(&format!(
        "$ k3s -v\nk3s version v1.32.8+k3s1 (5b17bd9c)\ngo version go1.23.11\n{text}"
    ));
    let b = boots(&r)[0];
    assert_eq!(b.version.as_deref(), Some("v1.32.8+k3s1"));
    assert!(b.signals["version"].reason.contains("k3s -v"));
}

#[test]
fn agent_banner_gives_version_and_role() {
    let r = run("time=\"2025-09-26T10:38:30-05:00\" level=info msg=\"Starting k3s agent v1.29.6+k3s2 (b4b156d9)\"\ntime=\"2025-09-26T10:38:31-05:00\" level=info msg=\"Running kubelet --x\"\n");
    let b = boots(&r)[0];
    assert_eq!(b.version.as_deref(), Some("v1.29.6+k3s2"));
    assert_eq!(b.role.as_deref(), Some("agent"));
}

#[test]
fn findings_need_the_config_and_match_with_it() {
    let log = journal("etcd-2", 5, false);
    // Without the config: possible, and says what it needs.
    let r = run_with(&[("j.log", &log)], &["j.log"], &[], opts()).unwrap();
    assert_eq!(r.findings.len(), 1);
    let f = &r.findings[0];
    assert_eq!(
        (f.check.as_str(), f.verdict.as_str()),
        ("etcd-split", "possible")
    );
    assert!(
        f.needs
            .iter()
            .any(|n| n.contains("embedded-registry: true")),
        "{:?}",
        f.needs
    );
    // With it: matches, with the fixed version of its release line.
    let r = run_with(
        &[("j.log", &log), ("c.yaml", ETCD_JOINER)],
        &["j.log"],
        &[("etcd-2", "c.yaml")],
        opts(),
    )
    .unwrap();
    let f = &r.findings[0];
    assert_eq!(f.verdict.as_str(), "matches");
    assert_eq!(f.fixed_in.as_deref(), Some("v1.33.5+k3s1"));
    assert!(f
        .message
        .contains("https://github.com/k3s-io/k3s/issues/12753"));
    assert!(f.evidence.iter().any(|e| e.source.as_str() == "config"));
    // A config beside the log is found by name; a YAML file merely named like the log is not
    // taken for one (it could be notes about the log).
    let beside = |name: &str, text: &str| {
        run_with(
            &[("etcd-2.log", &log), (name, text)],
            &["etcd-2.log"],
            &[],
            opts(),
        )
        .unwrap()
    };
    assert_eq!(
        beside("etcd-2.config.yaml", ETCD_JOINER).findings[0]
            .verdict
            .as_str(),
        "matches"
    );
    let r = beside("etcd-2.yaml", ETCD_JOINER);
    assert_eq!(r.findings[0].verdict.as_str(), "possible");
    assert_eq!(r.inputs[0].nodes[0].boots[0].config, None);
}

#[test]
fn no_finding_when_anything_contradicts_the_signature() {
    let cfg = ("c.yaml", ETCD_JOINER);
    let with = |log: &str, cfg_text: &str| {
        run_with(
            &[("j.log", log), ("c.yaml", cfg_text)],
            &["j.log"],
            &[("etcd-2", "c.yaml")],
            opts(),
        )
        .unwrap()
    };
    // A fixed release.
    let fixed = journal("etcd-2", 5, false).replace("v1.33.4+k3s1", "v1.33.5+k3s1");
    assert!(with(&fixed, cfg.1).findings.is_empty());
    // The registry not enabled in the node's own config: down is the correct state.
    let off = ETCD_JOINER.replace("embedded-registry: true", "embedded-registry: false");
    assert!(with(&journal("etcd-2", 5, false), &off).findings.is_empty());
    // The node that started the cluster (no `server:`).
    let init = ETCD_JOINER.replace("server: https://etcd-1:6443\n", "cluster-init: true\n");
    assert!(with(&journal("etcd-2", 5, false), &init)
        .findings
        .is_empty());
    // A control-plane-only node.
    assert!(with(
        &journal("etcd-2", 5, false),
        "server: https://etcd-1:6443\ndisable-etcd: true\nembedded-registry: true\n"
    )
    .findings
    .is_empty());
    // Up.
    assert!(with(&journal("etcd-2", 5, true), cfg.1).findings.is_empty());
}

#[test]
fn secrets_never_reach_the_report() {
    let log = format!(
        "{}Sep 26 10:38:40 etcd-2 k3s[100]: time=\"2025-09-26T10:38:40-05:00\" level=info msg=\"Running kubelet --token=s3cr3t-v4lue-0001\"\n",
        journal("etcd-2", 5, false)
    );
    let r = run_with(
        &[("j.log", &log), ("c.yaml", ETCD_JOINER)],
        &["j.log"],
        &[("etcd-2", "c.yaml")],
        Options {
            secrets: vec!["etcd-2-extra-secret".into()],
            ..opts()
        },
    )
    .unwrap();
    let all = format!(
        "{}{}{}",
        render::json(&r),
        render::table(&r, true),
        render::markdown(&r)
    );
    for secret in ["hunter2hunter2", "K10aaaabbbbccccdddd", "s3cr3t-v4lue-0001"] {
        assert!(!all.contains(secret), "{secret} leaked");
    }
}

#[test]
fn bad_inputs_are_clear_errors() {
    let e = run_with(
        &[("readme.txt", "Hello\nthis is not a log\n")],
        &["readme.txt"],
        &[],
        opts(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown format"), "{e}");
    assert!(
        e.to_string().contains("journalctl -u k3s (short"),
        "names the formats tried: {e}"
    );
    let e = run_with(
        &[("bin.log", "\u{0}\u{1}\u{2}ELF")],
        &["bin.log"],
        &[],
        opts(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("binary"), "{e}");
    let e = sources::resolve(&[PathBuf::from("/nonexistent/x.log")], &[], &[]).unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/x.log") && e.to_string().contains("cannot read"),
        "{e}"
    );
    // A journal of other programs only.
    let e = run_with(
        &[("j.log", "Sep 26 10:38:30 h sshd[1]: Accepted publickey\n")],
        &["j.log"],
        &[],
        opts(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no k3s log line"), "{e}");
    // An rke2-server journal of systemd's lines only (real lines: harvester#3091, rke2#475):
    // the message names rke2, what the unit lines are about, and not k3s.
    for unit_lines in [
        "Oct 21 11:29:41 harv-node3 systemd[1]: rke2-server.service: Main process exited, code=exited, status=1/FAILURE\n\
         Oct 21 11:29:41 harv-node3 systemd[1]: rke2-server.service: Failed with result 'exit-code'.\n\
         Oct 21 11:29:41 harv-node3 systemd[1]: Failed to start Rancher Kubernetes Engine v2 (server).\n\
         Oct 21 11:29:46 harv-node3 systemd[1]: Stopped Rancher Kubernetes Engine v2 (server).\n",
        "Oct 07 23:36:12 rke systemd[1]: Starting Rancher Kubernetes Engine v2 (agent)...\n\
         Oct 07 23:36:12 rke systemd[1]: Started Rancher Kubernetes Engine v2 (agent).\n",
    ] {
        let e = run_with(&[("j.log", unit_lines)], &["j.log"], &[], opts()).unwrap_err();
        assert!(
            e.to_string().contains("no rke2 log line")
                && e.to_string().contains("journalctl -u rke2-server or -u rke2-agent")
                && !e.to_string().contains("k3s"),
            "{e}"
        );
    }
    // A broken config names its file.
    let e = run_with(
        &[
            ("j.log", &journal("etcd-2", 5, false)),
            ("c.yaml", "a: [1\n"),
        ],
        &["j.log"],
        &[("etcd-2", "c.yaml")],
        opts(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("c.yaml"), "{e}");
}

#[test]
fn folders_with_several_nodes_and_generic_names() {
    let dir = tempfile::tempdir().unwrap();
    // `-o cat` text (no host in it): each node is named after its folder.
    let cat: String = journal("x", 5, false)
        .lines()
        .filter_map(|l| l.split_once("]: ").map(|(_, m)| format!("{m}\n")))
        .collect();
    for n in ["etcd-1", "etcd-2"] {
        std::fs::create_dir(dir.path().join(n)).unwrap();
        std::fs::write(dir.path().join(n).join("k3s.log"), &cat).unwrap();
    }
    // A journal whose host names its node, whatever the folder.
    std::fs::create_dir(dir.path().join("misc")).unwrap();
    std::fs::write(
        dir.path().join("misc").join("journal"),
        journal("cp-1", 5, false),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.md"), "# notes").unwrap();
    let r = sources::resolve(&[dir.path().to_path_buf()], &[], &[]).unwrap();
    let (rep, _) = inspect(&r, &catalog(), &opts()).unwrap();
    assert_eq!(rep.inputs[0].files.len(), 4);
    assert!(rep.inputs[0].files.iter().any(|f| f.skipped.is_some()));
    let names: Vec<(&str, &str)> = rep.inputs[0]
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.name_from.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("etcd-1", "folder name"),
            ("etcd-2", "folder name"),
            ("cp-1", "journal host")
        ]
    );
    assert!(rep.inputs[0].nodes.iter().all(|n| n.boots.len() == 1));
}

/// RKE2 told by the journal identifier alone (no banner, no version): its `distribution: rke2`
/// patterns decide (`rke2 is up and running`), and lines before the banner of the same process
/// stay in its boot; a k3s host in the same journal stays k3s.
#[test]
fn rke2_told_from_the_lines_per_host() {
    let text = concat!(
        "Sep 26 10:00:00 s1 rke2[42]: time=\"2025-09-26T10:00:00Z\" level=info msg=\"Applying Pod Security Admission Configuration\"\n",
        "Sep 26 10:00:00 s1 rke2[42]: time=\"2025-09-26T10:00:00Z\" level=info msg=\"Starting rke2 v1.33.13+rke2r1 (879e8b14ad619278d61dd81c116e08f3e1885715)\"\n",
        "Sep 26 10:00:09 s1 rke2[42]: time=\"2025-09-26T10:00:09Z\" level=info msg=\"rke2 is up and running\"\n",
        "Sep 26 10:00:10 a1 rke2[7]: time=\"2025-09-26T10:00:10Z\" level=info msg=\"rke2 is up and running\"\n",
        "Sep 26 10:00:11 k1 k3s[9]: time=\"2025-09-26T10:00:11Z\" level=info msg=\"k3s is up and running\"\n",
        "Sep 26 10:00:12 k1 k3s[9]: time=\"2025-09-26T10:00:12Z\" level=info msg=\"rke2 is up and running\"\n",
    );
    let r = run(text);
    let nodes = &r.inputs[0].nodes;
    let by = |n: &str| nodes.iter().find(|x| x.name == n).unwrap();
    let s1 = &by("s1").boots;
    assert_eq!(
        s1.len(),
        1,
        "the PSA line before the banner is in the banner's boot"
    );
    assert_eq!(s1[0].distribution.as_deref(), Some("rke2"));
    assert_eq!(s1[0].version.as_deref(), Some("v1.33.13+rke2r1"));
    assert_eq!(state(&s1[0], "ready"), "up");
    assert!(s1[0].start.is_some(), "the banner starts the boot");
    let a1 = &by("a1").boots[0];
    assert_eq!(
        a1.distribution.as_deref(),
        Some("rke2"),
        "by its identifier"
    );
    assert_eq!(state(a1, "ready"), "up");
    let k1 = &by("k1").boots[0];
    assert_eq!(k1.distribution.as_deref(), Some("k3s"));
    assert_eq!(state(k1, "ready"), "up");
    assert_eq!(
        k1.signals["ready"].evidence[0].text,
        "time=\"2025-09-26T10:00:11Z\" level=info msg=\"k3s is up and running\"",
        "rke2's line is not k3s's"
    );
}

/// A journal longer than the format sample and many read batches (the rest is read on two
/// threads, with a prescan per batch): what comes late is read as what comes early — a second
/// boot, a line wrapped in two whose pattern only the joined text holds, a secret.
#[test]
fn a_long_journal_is_read_whole_past_the_sample_and_across_batches() {
    let mut log = journal("etcd-1", 5, false);
    let chatter = "Sep 26 10:39:00 etcd-1 k3s[100]: I0926 10:39:00.000000     100 reconciler_common.go:245] \"operationExecutor.VerifyControllerAttachedVolume started\" volume=\"kube-api-access-x\"\n";
    // Past SAMPLE_BYTES and over several BATCH_BYTES.
    let n = (SAMPLE_BYTES + 5 * BATCH_BYTES) / chatter.len() + 1;
    log.push_str(&chatter.repeat(n));
    let second = [
        r#"Sep 26 11:00:00 etcd-1 k3s[200]: time="2025-09-26T11:00:00-05:00" level=info msg="Starting k3s v1.33.5+k3s1 (abcdef12)""#,
        r#"Sep 26 11:00:01 etcd-1 k3s[200]: time="2025-09-26T11:00:01-05:00" level=info msg="k3s is up"#,
        r#" and running""#,
        r#"Sep 26 11:00:02 etcd-1 k3s[200]: time="2025-09-26T11:00:02-05:00" level=info msg="Starting distributed registry mirror at https://10.0.0.2:6443/v2 for registries [docker.io]""#,
        r#"Sep 26 11:00:03 etcd-1 k3s[200]: time="2025-09-26T11:00:03-05:00" level=info msg="Running kubelet --token=l4te-s3cr3t-0002 --hostname-override=etcd-1""#,
    ];
    log.push_str(&(second.join("\n") + "\n"));
    log.push_str(&chatter.replace("10:39:00", "11:00:09").repeat(3000));
    let r = run(&log);
    let b = boots(&r);
    assert_eq!(b.len(), 2, "two boots");
    assert_eq!(b[1].version.as_deref(), Some("v1.33.5+k3s1"));
    assert_eq!(state(b[0], "embedded-registry"), "down");
    assert_eq!(state(b[1], "embedded-registry"), "up");
    assert_eq!(state(b[1], "ready"), "up", "the joined line decides");
    let ev = &b[1].signals["embedded-registry"].evidence[0];
    let first_line = log.lines().count() - 3000 - second.len() + 1;
    assert_eq!(ev.line, Some((first_line + 3) as u64), "{ev:?}");
    assert_eq!(r.inputs[0].files[0].lines, log.lines().count() as u64);
    let all = format!("{}{}", render::json(&r), render::table(&r, true));
    assert!(!all.contains("l4te-s3cr3t-0002"), "the late secret leaked");
}

/// What `Learned` relies on to skip a line (mod.rs): the redactor finds the same in a logrus
/// line whatever its `time="…"`, and learning a text a second time finds nothing new. On every
/// line of the corpora (its text after a journal prefix, and the line whole) and on lines that
/// carry secrets of every shape the redactor knows.
#[test]
fn learning_ignores_the_time_and_a_second_time() {
    let mut texts: Vec<String> = vec![
        r#"time="2025-09-26T10:38:36Z" level=info msg="Running kube-apiserver --token=K10abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567::server:0123456789abcdef0123456789abcdef""#.into(),
        r#"time="2025-09-26T10:38:36-05:00" level=info msg="Connecting to proxy" url="wss://admin:hunter2secret@10.0.0.1:6443/v1-k3s/connect""#.into(),
        r#"time="2025-09-26T10:38:36Z" level=info msg="password: s3cr3t-Passw0rd" token=abcdefghijklmnopqrstuvwx"#.into(),
        r#"time="2025-09-26T10:38:36Z" level=info msg="auth" bearer="eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3NpZ25hdHVyZQ""#.into(),
        r#"time="2025-09-26T10:38:36Z" level=info msg="Running kubelet --authentication-token-webhook=true --anonymous-auth=false""#.into(),
    ];
    for (_, bytes) in fixture_files() {
        for line in String::from_utf8_lossy(&bytes).lines() {
            texts.push(line.to_string());
            if let Some((_, m)) = line.split_once(": ") {
                texts.push(m.to_string());
            }
        }
    }
    let mut timed = 0;
    // Only a text with a secret cue is ever learned (`enter`).
    for t in texts.iter().filter(|t| secret_cue(t)) {
        let mut once = Redactor::new(&[]);
        once.learn_text(t);
        let g = once.generation();
        let knew = once.knowledge();
        once.learn_text(t);
        assert_eq!(once.generation(), g, "learned more the second time: {t}");
        assert_eq!(once.knowledge(), knew, "{t}");
        let body = logrus_body(t);
        if body.len() == t.len() {
            continue;
        }
        timed += 1;
        for stamp in ["2031-01-02T03:04:05.123456789+09:30", "x", ""] {
            let other = format!("time=\"{stamp}\" {body}");
            let mut fresh = Redactor::new(&[]);
            fresh.learn_text(&other);
            assert_eq!(fresh.knowledge(), knew, "{t} / {other}");
            once.learn_text(&other);
            assert_eq!(once.generation(), g, "{t} / {other}");
        }
    }
    // Only texts with a secret cue are learned, so only those are tried: the corpora hold 12
    // such logrus lines today, the crafted ones above included.
    assert!(timed >= 10, "{timed} cued logrus lines");
}

/// `found_cue` (the secret cue told from the line's search) answers as `secret_cue` does, for
/// the line and for its text after a journal prefix, on every line of the corpora.
#[test]
fn the_cue_from_the_line_search_is_the_cue() {
    let cat = catalog();
    let m = boots::Matcher::new(&cat.signals, &SCAN_WORDS);
    let mut cued = 0;
    for (path, bytes) in fixture_files() {
        for line in String::from_utf8_lossy(&bytes).lines() {
            let Some(found) = m.scan(line) else {
                panic!("the shipped patterns have a prefilter");
            };
            for t in [line, line.split_once(": ").map_or("", |(_, m)| m)] {
                assert_eq!(
                    found_cue(found, t),
                    secret_cue(t),
                    "{}: {t}",
                    path.display()
                );
                cued += usize::from(secret_cue(t));
            }
        }
    }
    assert!(cued > 50, "{cued} cued texts");
}

/// What the reading thread prereads of a line (`Preread`: its prefix, and the patterns matching
/// its message) is what the taker works out without it: every line of the corpora, and the long
/// journal above, taken in once with each line's preread and once without, gives the same
/// entries; and every pattern answer it carries is the matcher's own on the entry's text. Taken
/// in a third time without the prescan's answers, every entry is as fatal as with them (the
/// fatal levels are told by the prescan's words, `FATAL_WORDS`).
#[test]
fn a_preread_line_is_taken_in_as_one_read_whole() {
    let cat = catalog();
    let m = boots::Matcher::new(&cat.signals, &SCAN_WORDS);
    let mut inputs: Vec<Vec<u8>> = fixture_files().into_iter().map(|(_, b)| b).collect();
    inputs.push(journal("etcd-1", 5, true).into_bytes());
    let (mut lines, mut answered, mut fatal) = (0, 0, 0);
    for bytes in inputs {
        let mut r = BoundedLines::new(std::io::BufReader::new(&bytes[..]), MAX_LINE);
        let mut batch = reader::Batch::default();
        r.read_batch(&mut batch, usize::MAX).unwrap();
        m.prescan(&mut batch, &mut Vec::new());
        let outer = formats::detect(batch.iter().map(|(raw, _)| raw)).dominant();
        let (mut plain, mut given) = (Normaliser::new(outer), Normaliser::new(outer));
        let mut unscanned = Normaliser::new(outer);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for (raw, l) in batch.iter() {
            lines += 1;
            let pre = Preread::of(raw, l.scan, |text, may| m.hit_bits(text, may));
            plain.push_scanned(raw, l.info, l.scan, None, &mut a);
            given.push_scanned(raw, l.info, l.scan, pre, &mut b);
            unscanned.push(raw, l.info, &mut c);
        }
        plain.finish(&mut a);
        given.finish(&mut b);
        unscanned.finish(&mut c);
        assert_eq!(a.len(), b.len());
        assert_eq!(a.len(), c.len());
        for (x, z) in a.iter().zip(&c) {
            assert_eq!((&x.text, x.fatal), (&z.text, z.fatal));
            fatal += usize::from(x.fatal);
        }
        for (x, mut y) in a.into_iter().zip(b) {
            if let Some(bits) = y.hits.take() {
                answered += 1;
                // The text's own search, not the line's.
                let own = m
                    .scan(&y.text)
                    .and_then(|f| m.hit_bits(&y.text, f.patterns));
                assert_eq!(own, Some(bits), "{}", y.text);
            }
            assert_eq!(format!("{x:?}"), format!("{y:?}"));
        }
    }
    assert!(answered > 100, "{answered} of {lines} lines preread");
    assert!(fatal > 5, "{fatal} fatal entries");
}
