//! The loader on shipped and hand-written files.

use super::*;

const SIGNALS: &str = include_str!("../../checks/signals.yaml");
const ETCD_SPLIT: &str = include_str!("../../topologies/etcd-split.yaml");
const BOOTSTRAP: &str = include_str!("../../topologies/bootstrap-check.yaml");

fn sig() -> Signals {
    signals(Path::new("signals.yaml"), SIGNALS).expect("shipped signals are valid")
}

fn topo(text: &str) -> Result<Topology, Vec<String>> {
    topology(Path::new("t.yaml"), text).map_err(messages)
}

fn messages(d: Diagnostics) -> Vec<String> {
    d.0.into_iter()
        .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
        .collect()
}

fn topologies() -> Vec<Topology> {
    vec![
        topology(Path::new("etcd-split.yaml"), ETCD_SPLIT).expect("valid"),
        topology(Path::new("bootstrap-check.yaml"), BOOTSTRAP).expect("valid"),
    ]
}

fn chk(text: &str) -> Result<Check, Vec<String>> {
    check(Path::new("c.yaml"), text, &topologies(), &sig()).map_err(messages)
}

const HEAD: &str = "name: c\ntopology: etcd-split\nissue: https://x/1\nsummary: s\n";

#[test]
fn shipped_topologies_load_with_roles_and_joins() {
    let t = topo(ETCD_SPLIT).expect("valid");
    assert_eq!(t.name, "etcd-split");
    assert_eq!(t.nodes.len(), 4);
    assert!(t.nodes[0].init && t.nodes[0].role == Role::Etcd);
    assert_eq!(t.nodes[3].role, Role::ControlPlane);
    assert_eq!(t.nodes[3].join.as_deref(), Some("etcd-1"));
    assert!(t.files.contains_key("/etc/rancher/k3s/registries.yaml"));
    // The description has ` #` in it: it must not be cut off as a YAML comment.
    assert!(
        t.description.ends_with("(k3s #12753 as QA wrote it)"),
        "{}",
        t.description
    );
}

#[test]
fn role_expansion_is_what_k3s_documents() {
    assert_eq!(
        Role::Etcd.config_keys(distro::Distro::K3s),
        [
            "disable-apiserver",
            "disable-controller-manager",
            "disable-scheduler"
        ]
    );
    assert_eq!(
        Role::ControlPlane.config_keys(distro::Distro::K3s),
        ["disable-etcd"]
    );
    assert!(Role::All.config_keys(distro::Distro::K3s).is_empty());
    assert!(Role::Agent.config_keys(distro::Distro::K3s).is_empty());
    assert!(Role::Etcd.runs_etcd() && Role::All.runs_etcd());
    assert!(!Role::ControlPlane.runs_etcd() && !Role::Agent.is_server());
}

#[test]
fn topology_order_rules() {
    let base =
        "name: t\nk3s-version: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n";
    // An etcd node may join an etcd node listed above it.
    assert!(topo(&format!("{base}  - {{name: etcd-2, role: etcd, join: etcd-1}}\n  - {{name: etcd-3, role: etcd, join: etcd-2}}\n")).is_ok());
    // ... but not one below it (it would not be up yet); this also rules out join cycles.
    let e = topo(&format!("{base}  - {{name: etcd-2, role: etcd, join: etcd-3}}\n  - {{name: etcd-3, role: etcd, join: etcd-1}}\n")).expect_err("should be rejected");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("not up yet"), "{e:?}");
    // Agents may join a control-plane-only server (those start before agents).
    assert!(topo(&format!("{base}  - {{name: cp-1, role: control-plane, join: etcd-1}}\n  - {{name: a-1, role: agent, join: cp-1}}\n")).is_ok());
    // A control-plane-only server needs an etcd node to join.
    let e = topo(&format!("{base}  - {{name: cp-1, role: control-plane, join: etcd-1}}\n  - {{name: cp-2, role: control-plane, join: cp-1}}\n")).expect_err("should be rejected");
    assert!(e[0].contains("runs no etcd"), "{e:?}");
}

#[test]
fn topology_problems_are_all_reported() {
    let e = topo("name: Bad_Name\nk3s-version: latest\nnodes:\n  - {name: etcd-1, role: etcd}\n  - {name: etcd-1, role: agent, init: true}\n").expect_err("should be rejected");
    // bad name, bad version, duplicate node, agent init, etcd-1 neither inits nor joins
    assert_eq!(e.len(), 5, "{e:#?}");
}

#[test]
fn shipped_checks_load() {
    for (name, text) in [
        ("etcd-split", include_str!("../../checks/etcd-split.yaml")),
        (
            "metrics-order",
            include_str!("../../checks/metrics-order.yaml"),
        ),
        (
            "bootstrap-check",
            include_str!("../../checks/bootstrap-check.yaml"),
        ),
    ] {
        let c = chk(text).unwrap_or_else(|e| panic!("{name}: {e:#?}"));
        assert_eq!(c.name, name);
    }
}

#[test]
fn restart_groups_and_bug_world() {
    let c = chk(&format!("{HEAD}steps:\n  - name: s\n    restart: [etcd-1, [etcd-2, etcd-3]]\n    expect:\n      etcd-2: {{ready: up, embedded-registry: up}}\n    bug:\n      etcd-2: {{embedded-registry: down}}\n")).expect("valid");
    let s = &c.steps[0];
    assert_eq!(
        s.restart,
        vec![
            vec!["etcd-1".to_string()],
            vec!["etcd-2".into(), "etcd-3".into()]
        ]
    );
    assert_eq!(s.expect["etcd-2"]["ready"], Expected::Up);
    assert_eq!(s.bug["etcd-2"]["embedded-registry"], Expected::Down);
    assert_eq!(c.settle, None);
}

#[test]
fn expectation_on_an_untouched_running_node_is_allowed() {
    // etcd-1 is not restarted: the expectation re-observes its current boot.
    let c = chk(&format!("{HEAD}steps:\n  - name: s\n    config: {{etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect:\n      etcd-1: {{embedded-registry: down}}\n"));
    assert!(c.is_ok(), "{c:?}");
}

#[test]
fn expectation_on_an_edited_node_without_restart_is_an_error() {
    let e = chk(&format!("{HEAD}steps:\n  - name: s\n    config: {{etcd-1: {{embedded-registry: true}}, etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect:\n      etcd-1: {{embedded-registry: up}}\n")).expect_err("should be rejected");
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].contains("not restarted"));
    assert!(e[1].contains("old boot"));
}

#[test]
fn deferred_nodes_follow_their_start() {
    let head = HEAD.replace("etcd-split", "bootstrap-check");
    // Start, then restart in a later step, then observe: fine.
    let ok = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n  - name: b\n    restart: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n"));
    assert!(ok.is_ok(), "{ok:?}");
    // Start twice (second time it is running).
    let e = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n  - name: b\n    start: [etcd-3]\n")).expect_err("should be rejected");
    assert!(e[0].contains("already running"), "{e:?}");
    // Start and restart in one step.
    let e = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    restart: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n")).expect_err("should be rejected");
    assert!(e[0].contains("twice"), "{e:?}");
}

#[test]
fn a_deferred_node_starts_only_after_the_node_it_joins() {
    let t = "name: late\nk3s-version: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n  - {name: etcd-2, role: etcd, join: etcd-1, deferred: true}\n  - {name: etcd-3, role: etcd, join: etcd-2, deferred: true}\n";
    let topo = topology(Path::new("late.yaml"), t).expect("deferred chain is a valid topology");
    let run = |steps: &str| {
        let text =
            format!("name: c\ntopology: late\nissue: https://x/1\nsummary: s\nsteps:\n{steps}");
        check(
            Path::new("c.yaml"),
            &text,
            std::slice::from_ref(&topo),
            &sig(),
        )
        .map_err(messages)
    };
    // etcd-3 joins etcd-2: starting it first is an error ...
    let e = run("  - name: a\n    start: [etcd-3]\n    expect: {etcd-3: {ready: up}}\n")
        .expect_err("etcd-2 is not running yet");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("which is not running at this step"), "{e:?}");
    // ... and so is starting both in one step: the nodes of one `start:` start at once (two
    // etcd joiners race for etcd's one learner slot, #21), so etcd-2 would not run yet ...
    let e = run("  - name: a\n    start: [etcd-2, etcd-3]\n    expect: {etcd-3: {ready: up}}\n")
        .expect_err("one start: starts its nodes at once");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("`etcd-3` joins `etcd-2`"), "{e:?}");
    // ... while one step after the other is fine.
    let ok = run("  - name: a\n    start: [etcd-2]\n    expect: {etcd-2: {ready: up}}\n  - name: b\n    start: [etcd-3]\n    expect: {etcd-3: {ready: up}}\n");
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn remove_tracks_keys_across_steps() {
    let ok = chk(&format!("{HEAD}steps:\n  - name: a\n    config: {{etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect: {{etcd-2: {{ready: up}}}}\n  - name: b\n    remove: {{etcd-2: [embedded-registry]}}\n    restart: [etcd-2]\n  - name: c\n    remove: {{etcd-2: [embedded-registry]}}\n    restart: [etcd-2]\n")).expect_err("should be rejected");
    // Removed in b, so c has nothing left to remove.
    assert_eq!(ok.len(), 1, "{ok:?}");
    assert!(ok[0].starts_with("14:"), "{ok:?}");
}

#[test]
fn value_signals_take_values() {
    let c = chk(&format!("{HEAD}steps:\n  - name: a\n    restart: [etcd-2]\n    expect: {{etcd-2: {{version: v1.33.4+k3s1, roles: etcd}}}}\n")).expect("valid");
    assert_eq!(
        c.steps[0].expect["etcd-2"]["version"],
        Expected::Value("v1.33.4+k3s1".into())
    );
}

#[test]
fn topology_override_reports_nodes_it_lacks() {
    let c = chk(include_str!("../../checks/etcd-split.yaml")).expect("valid");
    let other = topology(Path::new("b.yaml"), BOOTSTRAP).expect("valid");
    let e = check_with_topology(
        &c,
        include_str!("../../checks/etcd-split.yaml"),
        &other,
        &sig(),
    )
    .map_err(messages)
    .expect_err("should be rejected");
    // etcd-3 is deferred in bootstrap-check: it cannot be edited, restarted or observed.
    assert!(e.iter().all(|m| m.contains("etcd-3")), "{e:#?}");
    assert!(!e.is_empty());
}

#[test]
fn a_check_naming_a_broken_topology_says_nothing_more() {
    let cx = Context {
        topologies: &[],
        broken_topologies: &["etcd-split".into()],
        signals: &sig(),
        topology_override: None,
    };
    let e = check_in(
        Path::new("c.yaml"),
        include_str!("../../checks/etcd-split.yaml"),
        &cx,
    );
    assert!(e.is_ok_and(|c| c.steps.is_empty()));
}

#[test]
fn empty_and_comment_only_files() {
    for text in ["", "\n\n", "# only a comment\n", "---\n# x\n"] {
        let e = topo(text).expect_err("should be rejected");
        assert_eq!(e, vec!["1:1: the file is empty (no YAML content)"]);
    }
}

#[test]
fn file_kinds() {
    let p = Path::new("x/checks/a.yaml");
    assert_eq!(file_kind(p, "name: a\nsteps: []\n"), Some(FileKind::Check));
    assert_eq!(file_kind(p, "nodes: []\n"), Some(FileKind::Topology));
    assert_eq!(file_kind(p, "signals: {}\n"), Some(FileKind::Signals));
    assert_eq!(file_kind(p, ""), Some(FileKind::Check));
    assert_eq!(
        file_kind(Path::new("x/topologies/a.yaml"), ""),
        Some(FileKind::Topology)
    );
    assert_eq!(file_kind(Path::new("a.yaml"), "name: x\n"), None);
}

/// #18: the distribution of a topology is named, or inferred from the version's suffix; an
/// unknown one is an error at its position with what is valid.
#[test]
fn topology_distribution_and_version() {
    let nodes = "nodes:\n  - {name: etcd-1, role: etcd, init: true}\n";
    let t = topo(&format!(
        "name: t\ndistribution: k3s\nversion: v1.33.4+k3s1\n{nodes}"
    ))
    .expect("valid");
    assert_eq!(t.distro, distro::Distro::K3s);
    assert_eq!(t.default_version.to_string(), "v1.33.4+k3s1");
    // Inferred from `+k3sN`; `k3s-version:` is the same key.
    let t = topo(&format!("name: t\nk3s-version: v1.33.4+k3s1\n{nodes}")).expect("valid");
    assert_eq!(t.distro, distro::Distro::K3s);
    let e = topo(&format!(
        "name: t\ndistribution: k8s\nversion: v1.33.4+k3s1\n{nodes}"
    ))
    .expect_err("unknown distribution");
    assert_eq!(
        e,
        ["2:15: `k8s` is not a distribution repro knows"],
        "{e:#?}"
    );
    let d = topology(
        Path::new("t.yaml"),
        &format!("name: t\ndistribution: k8s\nversion: v1.33.4+k3s1\n{nodes}"),
    )
    .expect_err("unknown");
    assert!(
        d.0[0]
            .help
            .as_deref()
            .is_some_and(|h| h.contains("write one of: k3s")),
        "{:?}",
        d.0[0].help
    );
    // #19: the build marker names rke2; a version of the other distribution than the named
    // one is an error at the version.
    let t = topo(&format!("name: t\nversion: v1.33.4+rke2r1\n{nodes}")).expect("rke2");
    assert_eq!(t.distro, distro::Distro::Rke2);
    let e = topo(&format!(
        "name: t\ndistribution: k3s\nversion: v1.33.4+rke2r1\n{nodes}"
    ))
    .expect_err("mismatch");
    assert!(
        e[0].starts_with(
            "3:10: `v1.33.4+rke2r1` is a rke2 version, but the topology says `distribution: k3s`"
        ),
        "{e:?}"
    );
}

/// #18: `files:` keys without a leading `/` are relative to the distribution's config folder.
#[test]
fn relative_files_land_in_the_config_folder() {
    let t = topo(
        "name: t\nversion: v1.33.4+k3s1\nfiles:\n  registries.yaml: \"mirrors: {}\\n\"\nnodes:\n  - name: etcd-1\n    role: etcd\n    init: true\n    files:\n      config.yaml.d/10-x.yaml: \"a: 1\\n\"\n",
    )
    .expect("valid");
    assert!(
        t.files.contains_key("/etc/rancher/k3s/registries.yaml"),
        "{:?}",
        t.files
    );
    assert!(t.nodes[0]
        .files
        .contains_key("/etc/rancher/k3s/config.yaml.d/10-x.yaml"));
    // The rendered config.yaml is repro's, whichever way it is named.
    let e = topo("name: t\nversion: v1.33.4+k3s1\nfiles:\n  config.yaml: \"a: 1\\n\"\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n")
        .expect_err("config.yaml is rendered");
    assert!(e[0].contains("config.yaml is rendered by repro"), "{e:?}");
    let e = topo("name: t\nversion: v1.33.4+k3s1\nfiles:\n  ../x: \"a\"\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n")
        .expect_err("dot-dot");
    assert!(e[0].contains("`../x` is not a valid file path"), "{e:?}");
}

/// #18: a signal pattern qualified by distribution applies to that distribution's versions only.
#[test]
fn signal_patterns_qualified_by_distribution() {
    let text = "signals:\n  s:\n    description: d\n    up:\n      - {match: 'only k3s', distribution: k3s}\n      - 'everyone'\n";
    let s = signals(Path::new("s.yaml"), text).expect("valid");
    let v: Version = "v1.33.4+k3s1".parse().expect("v");
    let up = &s.by_name["s"].up;
    assert_eq!(up[0].distro, Some(distro::Distro::K3s));
    assert!(up[0].applies_to(&v) && up[1].applies_to(&v));
    assert_eq!(up[1].distro, None);
    let bad =
        "signals:\n  s:\n    description: d\n    up:\n      - {match: 'x', distribution: rke3}\n";
    let e = signals(Path::new("s.yaml"), bad)
        .map_err(messages)
        .expect_err("unknown");
    assert_eq!(
        e,
        ["5:36: `rke3` is not a distribution repro knows"],
        "{e:?}"
    );
}

/// #19: a k3s-only key in an RKE2 topology is an error at the key, saying whose flag it is.
#[test]
fn k3s_only_keys_in_an_rke2_topology() {
    let text = "name: t\nversion: v1.32.5+rke2r1\nconfig:\n  cluster-init: true\nnodes:\n  - {name: etcd-1, role: etcd, init: true, config: {disable-helm-controller: true}}\n  - {name: cp-1, role: control-plane, join: etcd-1, config: {supervisor-metrics: true}}\n";
    let d = topology(Path::new("t.yaml"), text).expect_err("k3s-only keys");
    let got: Vec<String> =
        d.0.iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect();
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got.iter()
            .any(|m| m.starts_with("4:3: `cluster-init` is not a flag of")),
        "{got:#?}"
    );
    assert!(
        got.iter()
            .any(|m| m.starts_with("6:53: `disable-helm-controller` is not a flag of")),
        "{got:#?}"
    );
    for diag in &d.0 {
        let help = diag.help.as_deref().unwrap_or_default();
        assert!(
            help.contains("is a flag of k3s only") && help.contains("releases/rke2-flags.yaml"),
            "{help}"
        );
    }
}

/// #19: `--version` of another distribution re-reads a topology that names none on that one.
#[test]
fn a_k3s_topology_read_on_an_rke2_version() {
    let on: distro::Version = "v1.32.5+rke2r1".parse().expect("version");
    let t =
        topology_on(Path::new("etcd-split.yaml"), ETCD_SPLIT, Some(&on)).expect("valid on rke2");
    assert_eq!(t.distro, distro::Distro::Rke2);
    assert_eq!(t.default_version, on);
    assert!(
        t.files.keys().all(|p| p.starts_with("/etc/rancher/rke2/")),
        "{:?}",
        t.files.keys()
    );
    // A topology that names its distribution keeps it (the caller reports the mismatch).
    let named = "name: t\ndistribution: k3s\nversion: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n";
    let t = topology_on(Path::new("t.yaml"), named, Some(&on)).expect("valid");
    assert_eq!(t.distro, distro::Distro::K3s);
}

/// Which expectations a check may make, per signal × value × role × distribution, on the
/// shipped signals: a value whose evidence no line, probe or death of that node can bring is
/// refused (a run would only wait out its timeout for it). Roles as letters: e(tcd),
/// c(ontrol-plane), a(ll), g (agent); value signals are judged once, as `value`. A new signal
/// needs its rows here.
#[test]
fn every_signal_role_and_distribution_is_decidable_or_refused() {
    const TABLE: &[(&str, &str, &str, &str)] = &[
        // signal, value, roles that can decide it on k3s, on rke2
        ("node-ready", "up", "ecag", "ecag"),
        ("node-ready", "down", "ecag", "ecag"),
        ("ready", "up", "eca", "eca"),
        ("ready", "down", "ecag", "ecag"),
        ("agent-ready", "up", "g", "g"),
        ("agent-ready", "down", "g", "g"),
        // A k3s agent in a container prints no settle line (`k3s agent is up and running`
        // needs NOTIFY_SOCKET); rke2's agent runs as a Type=notify unit and prints its own.
        ("fatal", "up", "ecag", "ecag"),
        ("fatal", "down", "eca", "ecag"),
        // Go's panic banner decides `up` on any node; `down` needs the settle line, as fatal's.
        ("panic", "up", "ecag", "ecag"),
        ("panic", "down", "eca", "ecag"),
        ("config-mismatch", "value", "ecag", "ecag"),
        ("version", "value", "ecag", "ecag"),
        ("roles", "value", "ecag", "ecag"),
        ("embedded-registry", "up", "ecag", "ecag"),
        ("embedded-registry", "down", "ecag", "ecag"),
        ("supervisor-metrics", "up", "e", "e"),
        ("supervisor-metrics", "down", "e", "e"),
        // The lines that show the keys `repro explore` searches (#29): the kubelet's, kube-proxy's,
        // flannel's and the network policy controller's on every node; the tunnel server's and
        // the cloud-controller-manager's on every server; the apiserver's where it runs.
        ("cluster-dns", "value", "ecag", "ecag"),
        ("cluster-domain", "value", "ecag", "ecag"),
        ("kube-proxy", "up", "ecag", "ecag"),
        ("kube-proxy", "down", "ecag", "ecag"),
        ("network-policy", "up", "ecag", "ecag"),
        ("network-policy", "down", "ecag", "ecag"),
        ("flannel-backend", "value", "ecag", "ecag"),
        ("flannel-external-ip", "up", "ecag", "ecag"),
        ("flannel-external-ip", "down", "ecag", "ecag"),
        ("egress-selector-mode", "value", "eca", "eca"),
        // k3s's kubelet line only; on rke2 only a death brings `down`
        ("kubelet-cloud-provider", "up", "ecag", ""),
        ("kubelet-cloud-provider", "down", "ecag", "ecag"),
        ("cloud-controller", "up", "eca", "eca"),
        ("cloud-controller", "down", "eca", "eca"),
        ("servicelb", "up", "eca", "eca"),
        ("servicelb", "down", "eca", "eca"),
        ("secrets-encryption", "up", "ca", "ca"),
        ("secrets-encryption", "down", "ca", "ca"),
        ("service-cidr", "value", "ca", "ca"),
        ("cluster-cidr", "value", "ecag", "ecag"),
        ("service-node-port-range", "value", "ca", "ca"),
    ];
    let letter = |r: Role| match r {
        Role::Etcd => 'e',
        Role::ControlPlane => 'c',
        Role::All => 'a',
        Role::Agent => 'g',
    };
    let signals = sig();
    let mut seen = 0;
    for (name, def) in &signals.by_name {
        let values: &[&str] = if def.is_value() {
            &["value"]
        } else {
            &["up", "down"]
        };
        for value in values {
            let row = TABLE
                .iter()
                .find(|(s, v, _, _)| s == name && v == value)
                .unwrap_or_else(|| panic!("no row for `{name}: {value}`"));
            seen += 1;
            for (d, want) in [(distro::Distro::K3s, row.2), (distro::Distro::Rke2, row.3)] {
                let got: String = [Role::Etcd, Role::ControlPlane, Role::All, Role::Agent]
                    .iter()
                    .filter(|r| {
                        let e = Expected::parse(if *value == "value" { "x" } else { value });
                        def.observable_on(**r) && signals.never_shows(name, &e, **r, d).is_none()
                    })
                    .map(|r| letter(*r))
                    .collect();
                assert_eq!(got, want, "`{name}: {value}` on {d}");
            }
        }
    }
    assert_eq!(seen, TABLE.len(), "a row names a signal signals.yaml lacks");
    assert_eq!(
        distro::Distro::ALL.len(),
        2,
        "a new distribution needs its column"
    );
}

/// The refusal says what would never come, where, and why.
#[test]
fn an_undecidable_expectation_is_refused_with_the_reason() {
    let agent_topo = topology(
        Path::new("etcd-split-agent.yaml"),
        include_str!("../../topologies/etcd-split-agent.yaml"),
    )
    .expect("valid");
    let text = "name: c\ntopology: etcd-split-agent\nissue: https://x/1\nsummary: s\nsteps:\n  - name: restart the agent\n    restart: [agent-1]\n    expect:\n      agent-1: {agent-ready: up, fatal: down}\n";
    let e = check(Path::new("c.yaml"), text, &[agent_topo], &sig())
        .map_err(messages)
        .expect_err("refused");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("9:41: `fatal: down` can never be decided on `agent-1`: nothing an agent node of k3s prints shows it `down`")
            && e[0].contains("`k3s is up and running` (only etcd, control-plane, all nodes)")
            && e[0].contains("a death counts as `up`"),
        "{e:?}"
    );
}
