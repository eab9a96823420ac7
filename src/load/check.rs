//! `checks/*.yaml`: steps validated against the topology and the signals.

use super::*;

/// What a check is validated against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    /// Every topology that loaded.
    pub(crate) topologies: &'a [Topology],
    /// Names of topologies whose files have errors of their own (reported there).
    pub(crate) broken_topologies: &'a [String],
    pub(crate) signals: &'a Signals,
    /// Validate against this topology instead of the one the check names (`--topology`).
    pub(crate) topology_override: Option<&'a Topology>,
}

/// Validates a check against its topology and the signals. `topologies` are all known ones.
pub(crate) fn check(
    path: &Path,
    text: &str,
    topologies: &[Topology],
    signals: &Signals,
) -> Result<Check, Diagnostics> {
    check_in(
        path,
        text,
        &Context {
            topologies,
            broken_topologies: &[],
            signals,
            topology_override: None,
        },
    )
}

/// Re-validates a check's steps against another topology (`--topology` override), so steps
/// naming nodes the other topology lacks are caught before anything runs.
pub(crate) fn check_with_topology(
    check: &Check,
    text: &str,
    topology: &Topology,
    signals: &Signals,
) -> Result<Check, Diagnostics> {
    check_in(
        &check.path,
        text,
        &Context {
            topologies: &[],
            broken_topologies: &[],
            signals,
            topology_override: Some(topology),
        },
    )
}

pub(crate) fn check_in(path: &Path, text: &str, cx: &Context) -> Result<Check, Diagnostics> {
    let raw: CheckFile = parse(path, text, FileKind::Check)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();

    check_slug(&d, &raw.name, "check", &mut out);
    if !raw.issue.value.starts_with("https://") && !raw.issue.value.starts_with("http://") {
        out.push(
            d.span(&raw.issue, format!("`{}` is not a URL", raw.issue.value))
                .help(
                    "give the issue's web address, e.g. https://github.com/k3s-io/k3s/issues/12753",
                ),
        );
    }
    // The topology's distribution decides whose change table `fixed-in` names (k3s when the
    // topology is unknown: that is reported below).
    let distro = cx
        .topology_override
        .or_else(|| cx.topologies.iter().find(|t| t.name == raw.topology.value))
        .map(|t| t.distro)
        .unwrap_or_default();
    let fixed_in = match &raw.fixed_in {
        None => ReleaseSet::default(),
        Some(f) => changes_of(&d, distro, f, "fixed-in", &mut out),
    };
    let introduced_in = raw
        .introduced_in
        .as_ref()
        .map(|f| changes_of(&d, distro, f, "introduced-in", &mut out));
    let settle = raw.settle.as_ref().and_then(|s| duration(&d, s, &mut out));

    let topo = match cx.topology_override {
        Some(t) => Some(t),
        None => {
            let found = cx.topologies.iter().find(|t| t.name == raw.topology.value);
            if found.is_none() && !cx.broken_topologies.contains(&raw.topology.value) {
                out.push(
                    d.span(
                        &raw.topology,
                        format!("topology `{}` does not exist", raw.topology.value),
                    )
                    .help(format!(
                        "name one of the topologies: {}",
                        names_list(cx.topologies.iter().map(|t| t.name.as_str()))
                    )),
                );
            }
            found
        }
    };
    if raw.steps.value.is_empty() {
        out.push(
            d.span(&raw.steps, "a check needs at least one step")
                .help("add a step: `- {name: ..., config: ..., restart: [...], expect: ...}`"),
        );
    }
    let steps = match topo {
        Some(t) => steps(&d, &raw.steps.value, t, cx.signals, &mut out),
        None => Vec::new(),
    };
    if topo.is_some()
        && !raw.steps.value.is_empty()
        && raw.steps.value.iter().all(|s| s.expect.is_empty())
    {
        out.push(
            d.span(
                &raw.steps,
                "the check expects nothing, so it can never pass or fail",
            )
            .help("add `expect: {<node>: {<signal>: <value>}}` to at least one step"),
        );
    }
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Check {
        name: raw.name.value,
        topology: raw.topology.value,
        issue: raw.issue.value,
        summary: raw.summary,
        description: raw.description,
        sources: raw.sources,
        path: path.to_path_buf(),
        fixed_in,
        fixed_in_change: change_name(raw.fixed_in.as_ref()),
        introduced_in,
        introduced_in_change: change_name(raw.introduced_in.as_ref()),
        settle,
        steps,
    })
}

/// The releases a `fixed-in:` or `introduced-in:` (`field`) names: its versions, or the first
/// versions of the change of the distribution's table it names (unknown: refused at its place).
fn changes_of(
    d: &FileDiag,
    distro: distro::Distro,
    f: &Spanned<FixedIn>,
    field: &str,
    out: &mut Diagnostics,
) -> ReleaseSet {
    match &f.value {
        FixedIn::List(list) => release_set(d, list, out),
        FixedIn::Change(name) => match distro.changes().get(name) {
            Some(change) => change.release_set(),
            None => {
                let names: Vec<String> = distro.changes().keys().cloned().collect();
                let help = match crate::diag::suggest(name, &names) {
                    Some(s) => format!(
                        "did you mean `{s}`? changes in {}: {}",
                        distro.facts().changes_path,
                        names.join(", ")
                    ),
                    None => format!(
                        "name a change of {} ({}), or list the first version per release line",
                        distro.facts().changes_path,
                        names.join(", ")
                    ),
                };
                out.push(
                    d.span(f, format!("unknown change `{name}` in `{field}`"))
                        .help(help),
                );
                ReleaseSet::default()
            }
        },
    }
}

/// The change a `fixed-in:`/`introduced-in:` names, when it names one rather than versions.
fn change_name(f: Option<&Spanned<FixedIn>>) -> Option<String> {
    match f.map(|f| &f.value) {
        Some(FixedIn::Change(name)) => Some(name.clone()),
        _ => None,
    }
}

/// The state of the cluster as the steps go, to catch impossible orders.
struct Walk<'a> {
    topo: &'a Topology,
    /// Nodes that run (non-deferred ones from the beginning; not the stopped ones).
    running: HashSet<String>,
    /// Nodes a `stop:` took down and no `start:` brought back yet.
    stopped: HashSet<String>,
    /// The version each node runs (the topology's, until an `upgrade:`).
    versions: HashMap<String, Version>,
    /// Each node's user config keys so far (topology-wide, own, step edits), to catch bad removes.
    keys: HashMap<String, HashSet<String>>,
}

impl Walk<'_> {
    /// Whether the topology has this node; reports it if not.
    fn known(&self, d: &FileDiag, n: &Spanned<String>, out: &mut Diagnostics) -> bool {
        if self.topo.node(&n.value).is_some() {
            return true;
        }
        out.push(
            d.span(
                n,
                format!("unknown node `{}` (topology `{}`)", n.value, self.topo.name),
            )
            .help(format!(
                "name one of the topology's nodes: {}",
                names_list(self.topo.nodes.iter().map(|n| n.name.as_str()))
            )),
        );
        false
    }
}

fn steps(
    d: &FileDiag,
    raw: &[StepFile],
    topo: &Topology,
    signals: &Signals,
    out: &mut Diagnostics,
) -> Vec<Step> {
    let mut w = Walk {
        topo,
        running: topo
            .nodes
            .iter()
            .filter(|n| !n.deferred)
            .map(|n| n.name.clone())
            .collect(),
        stopped: HashSet::new(),
        versions: (topo.nodes.iter())
            .map(|n| (n.name.clone(), topo.default_version.clone()))
            .collect(),
        keys: topo
            .nodes
            .iter()
            .map(|n| {
                let keys = topo.config.keys().chain(n.config.keys()).cloned().collect();
                (n.name.clone(), keys)
            })
            .collect(),
    };
    raw.iter()
        .map(|s| step(d, s, &mut w, signals, out))
        .collect()
}

fn step(
    d: &FileDiag,
    s: &StepFile,
    w: &mut Walk,
    signals: &Signals,
    out: &mut Diagnostics,
) -> Step {
    if s.name.value.trim().is_empty() {
        out.push(
            d.span(&s.name, "the step has an empty name")
                .help("say in a few words what the step does; plans and reports show it"),
        );
    }
    // Edits first: this is the order a run applies them in.
    let config = config_edits(d, s, w, out);
    let remove = removals(d, s, w, out);
    let files = file_edits(d, s, w, out);
    let boots = boots(d, s, w, out);
    let edited_not_booted = edited_not_booted(d, s, w, &boots.booted, out);
    for n in &boots.start {
        w.running.insert(n.clone());
        w.stopped.remove(n);
    }
    let ex = ExpectCx {
        d,
        topo: w.topo,
        signals,
        running: &w.running,
        stopped: &w.stopped,
        named: &boots.named,
        booted: &boots.booted,
        no_api: no_api(w),
        edited_not_booted: &edited_not_booted,
    };
    let expect = ex.expectations(&s.expect, false, out);
    let bug = ex.expectations(&s.bug, true, out);
    check_bug_against_expect(d, s, &expect, &bug, out);

    Step {
        name: s.name.value.clone(),
        why: s.why.clone(),
        config,
        remove,
        files,
        stop: boots.stop,
        start: boots.start,
        restart: boots.restart,
        upgrade: boots.upgrade,
        expect,
        bug,
        line: s.name.referenced.line() as usize,
        expect_lines: s
            .expect
            .iter()
            .map(|(node, sigs)| {
                let lines = sigs
                    .keys()
                    .map(|sig| (sig.value.clone(), sig.referenced.line() as usize))
                    .collect();
                (node.value.clone(), lines)
            })
            .collect(),
        expect_places: places(&s.expect),
        bug_places: places(&s.bug),
    }
}

/// The step's `config:` edits, each key checked against the node's command's flags; the keys
/// join the node's keys so far (what a later `remove:` may name).
fn config_edits(
    d: &FileDiag,
    s: &StepFile,
    w: &mut Walk,
    out: &mut Diagnostics,
) -> IndexMap<String, IndexMap<String, ConfigValue>> {
    let mut config = IndexMap::new();
    for (node, kv) in &s.config {
        if !w.known(d, node, out) {
            continue;
        }
        if let Some(n) = w.topo.node(&node.value) {
            check_config_keys(
                d,
                w.topo.distro,
                kv,
                &[crate::flags::command_of(n.role)],
                Some(&w.topo.default_version),
                out,
            );
        }
        if kv.is_empty() {
            out.push(
                d.span(node, format!("empty config edit for `{}`", node.value))
                    .help("give at least one `key: value`, or drop the entry"),
            );
        }
        let entry: IndexMap<String, ConfigValue> = kv
            .iter()
            .map(|(k, v)| (k.value.clone(), v.clone()))
            .collect();
        if let Some(ks) = w.keys.get_mut(&node.value) {
            ks.extend(entry.keys().cloned());
        }
        config.insert(node.value.clone(), entry);
    }
    config
}

/// The step's `remove:` lists: a key the node does not have at this step is refused (the
/// topology, an earlier step or this step's `config:` must have set it).
fn removals(
    d: &FileDiag,
    s: &StepFile,
    w: &mut Walk,
    out: &mut Diagnostics,
) -> IndexMap<String, Vec<String>> {
    let mut remove = IndexMap::new();
    for (node, ks) in &s.remove {
        if !w.known(d, node, out) {
            continue;
        }
        if ks.is_empty() {
            out.push(
                d.span(node, format!("empty remove list for `{}`", node.value))
                    .help("list the keys to remove, e.g. [embedded-registry], or drop the entry"),
            );
        }
        for k in ks {
            let had = w
                .keys
                .get_mut(&node.value)
                .is_some_and(|set| set.remove(&k.value));
            if !had {
                out.push(
                    d.span(k, format!("`{}` has no `{}` to remove at this step", node.value, k.value))
                        .help("remove only keys the topology or an earlier step (or this step's `config:`) set on this node"),
                );
            }
        }
        remove.insert(
            node.value.clone(),
            ks.iter().map(|k| k.value.clone()).collect(),
        );
    }
    remove
}

/// The step's `files:` edits, their paths checked and made the node's own.
fn file_edits(
    d: &FileDiag,
    s: &StepFile,
    w: &Walk,
    out: &mut Diagnostics,
) -> IndexMap<String, IndexMap<String, Option<String>>> {
    let mut files = IndexMap::new();
    for (node, fs) in &s.files {
        if !w.known(d, node, out) {
            continue;
        }
        check_files(d, w.topo.distro, fs, out);
        if fs.is_empty() {
            out.push(
                d.span(node, format!("empty files edit for `{}`", node.value))
                    .help("give `path: content` to write or `path: null` to delete, or drop the entry"),
            );
        }
        files.insert(
            node.value.clone(),
            fs.iter()
                .map(|(k, v)| (node_file(w.topo.distro, &k.value), v.clone()))
                .collect(),
        );
    }
    files
}

/// The nodes a step boots, as its `start:` and `restart:` say.
struct Boots {
    /// Every node named in `start:` or `restart:`, known or not: a typo in a node name is its
    /// own error and must not also read as "this step restarts nothing".
    named: HashSet<String>,
    /// Every known node booted, in order, each once.
    booted: Vec<String>,
    stop: Vec<String>,
    start: Vec<String>,
    restart: Vec<Vec<String>>,
    upgrade: Vec<Upgrade>,
}

/// The step's `stop:`, `start:`, `restart:` and `upgrade:`, in the order a run does them, each
/// node checked against what runs at this step (the stops already taken into `w`); a step
/// that changes nothing is refused (k3s reads its config only when it starts).
fn boots(d: &FileDiag, s: &StepFile, w: &mut Walk, out: &mut Diagnostics) -> Boots {
    let mut b = Boots {
        named: HashSet::new(),
        booted: Vec::new(),
        stop: Vec::new(),
        start: Vec::new(),
        restart: Vec::new(),
        upgrade: Vec::new(),
    };
    for n in &s.stop {
        b.named.insert(n.value.clone());
        if w.known(d, n, out) && stops(d, n, w, &b.stop, out) {
            b.stop.push(n.value.clone());
        }
    }
    for n in &b.stop {
        w.running.remove(n);
        w.stopped.insert(n.clone());
    }
    for n in &s.start {
        b.named.insert(n.value.clone());
        if w.known(d, n, out) && starts(d, n, w, &b.booted, out) {
            b.booted.push(n.value.clone());
            b.start.push(n.value.clone());
        }
    }
    for item in &s.restart {
        let members: Vec<Spanned<String>> = match &item.value {
            RestartItem::One(n) => vec![Spanned::new(n.clone(), item.referenced, item.defined)],
            RestartItem::Group(g) => g.clone(),
        };
        if members.is_empty() {
            out.push(d.span(item, "empty restart group").help(
                "list the nodes to restart at once, e.g. [etcd-2, etcd-3], or drop the entry",
            ));
        }
        let mut group = Vec::new();
        for n in &members {
            b.named.insert(n.value.clone());
            if w.known(d, n, out) && restarts(d, n, w, &b, out) {
                b.booted.push(n.value.clone());
                group.push(n.value.clone());
            }
        }
        b.restart.push(group);
    }
    for (n, v) in &s.upgrade {
        b.named.insert(n.value.clone());
        if !w.known(d, n, out) || !restarts(d, n, w, &b, out) {
            continue;
        }
        if let Some(u) = upgrade_to(d, n, v, w, out) {
            b.booted.push(n.value.clone());
            w.versions.insert(n.value.clone(), u.version.clone());
            b.upgrade.push(u);
        }
    }
    if s.start.is_empty() && s.restart.is_empty() && s.stop.is_empty() && s.upgrade.is_empty() {
        out.push(
            d.span(&s.name, "this step starts, stops, restarts and upgrades nothing, so nothing in the cluster changes")
                .help("k3s reads its config only when it starts: add the edited nodes to `restart:` (or `start:` for a deferred or stopped node); to observe more nodes, add them to the `expect:` of the step that restarts"),
        );
    }
    b
}

/// Whether `n`, named in `stop:`, is stopped in this step: it must be running, and be named
/// once.
fn stops(
    d: &FileDiag,
    n: &Spanned<String>,
    w: &Walk,
    stopping: &[String],
    out: &mut Diagnostics,
) -> bool {
    if stopping.contains(&n.value) {
        out.push(
            d.span(n, format!("`{}` is stopped twice in this step", n.value))
                .help("name each node once per step"),
        );
        return false;
    }
    if w.stopped.contains(&n.value) {
        out.push(
            d.span(n, format!("`{}` is already stopped at this step", n.value))
                .help("a stopped node stays down until a `start:` brings it back: drop it from `stop:`, or start it in an earlier step"),
        );
        return false;
    }
    if !w.running.contains(&n.value) {
        out.push(
            d.span(
                n,
                format!(
                    "`{}` is deferred and not started yet at this step, so it cannot stop",
                    n.value
                ),
            )
            .help("start it first with `start:` in an earlier step"),
        );
        return false;
    }
    true
}

/// The upgrade of `n` to what `v` names, when it is a version of the topology's distribution
/// (or a local build that reports one) and the move from the version the node runs is within
/// the distribution's skew rules (`Facts::upgrade`); an agent never runs a newer minor than
/// the oldest server (upgrade servers first).
fn upgrade_to(
    d: &FileDiag,
    n: &Spanned<String>,
    v: &Spanned<UpgradeTo>,
    w: &Walk,
    out: &mut Diagnostics,
) -> Option<Upgrade> {
    let distro = w.topo.distro;
    let (to, binary) = match &v.value {
        UpgradeTo::Version(text) => {
            let Some(to) = Version::parse_for(distro, text) else {
                out.push(
                    d.span(v, format!("`{text}` is not a {distro} version"))
                        .help(version_help(distro)),
                );
                return None;
            };
            (to, None)
        }
        UpgradeTo::Binary(path) => {
            let written = std::path::Path::new(&path.value);
            let file = match d.file.parent() {
                Some(dir) if written.is_relative() => dir.join(written),
                _ => written.to_path_buf(),
            };
            let (to, binary) = upgrade_binary(d, n, (path, file, None), distro, out)?;
            (to, Some(binary))
        }
        UpgradeTo::Commit(sha) => {
            let fetched = crate::build_file::parse_commit(&sha.value)
                .and_then(|c| crate::build_file::commit_build(distro, &c).map(|f| (c, f)));
            let (commit, (file, url)) = match fetched {
                Ok(f) => f,
                Err(e) => {
                    out.push(
                        d.span(sha, format!("`{}`'s commit build: {e}", n.value)).help(
                            "the full 40-hex SHA of a commit k3s's CI built (`--k3s-commit` takes the same); REPRO_K3S_CI_URL names other storage",
                        ),
                    );
                    return None;
                }
            };
            let (to, binary) = upgrade_binary(d, n, (sha, file, Some((commit, url))), distro, out)?;
            (to, Some(binary))
        }
    };
    let rules = distro.facts().upgrade;
    let from = &w.versions[&n.value];
    if let Some(why) = rules.refuses(from, &to) {
        out.push(
            d.span(
                v,
                format!("`{}` cannot be upgraded to {to}: {why}", n.value),
            )
            .help(format!(
                "upgrade `{}` to a newer {distro} release of its minor ({}.{}) or the next one",
                n.value, from.major, from.minor
            )),
        );
        return None;
    }
    let agent = w.topo.node(&n.value).is_some_and(|x| x.role == Role::Agent);
    let oldest_server = (w.topo.nodes.iter())
        .filter(|x| x.role != Role::Agent)
        .filter_map(|x| w.versions.get(&x.name))
        .min();
    if let Some(server) =
        oldest_server.filter(|s| agent && rules.agents_after_servers && to.line() > s.line())
    {
        out.push(
            d.span(v, format!("agent `{}` would run {to}, a newer minor than server version {server}", n.value))
                .help("Kubernetes' skew policy: a kubelet is never newer than the apiserver; upgrade every server to the new minor in this or an earlier step first"),
        );
        return None;
    }
    Some(Upgrade {
        node: n.value.clone(),
        version: to,
        binary,
    })
}

/// `{binary: PATH}`: the local build, read now (a relative path is from the check file's
/// folder, so a check and its build travel together), and the release it counts as — the one
/// it reports; a commit build's Kubernetes patch's first release (`fixed-in` cannot place a
/// commit, and that release's image is the one it runs in).
fn upgrade_binary(
    d: &FileDiag,
    n: &Spanned<String>,
    (path, file, commit): (
        &Spanned<String>,
        std::path::PathBuf,
        Option<(String, String)>,
    ),
    distro: Distro,
    out: &mut Diagnostics,
) -> Option<(Version, UpgradeBinary)> {
    let facts = distro.facts();
    if facts.binary_path.is_none() {
        out.push(
            d.span(path, format!("`{}` cannot be upgraded to a local build: builds under test are not supported for {distro} yet (its image's binary path is not known)", n.value))
                .help(format!("upgrade it to a {distro} release, e.g. {}", facts.example_version)),
        );
        return None;
    }
    let read = crate::build_file::BuildFile::read(distro, &file);
    let to = match &read {
        Ok(b) => match &b.reported {
            distro::reported::Reported::Release(v) if v.distro == distro => Ok(v.clone()),
            distro::reported::Reported::Commit {
                kubernetes: (major, minor, patch),
                ..
            } => Ok(Version {
                major: *major,
                minor: *minor,
                patch: *patch,
                pre: None,
                distro,
                build: 1,
            }),
            other => Err(format!(
                "{}: reports `{other}`, no {distro} release line",
                file.display()
            )),
        },
        Err(e) => Err(e.clone()),
    };
    match (read, to) {
        (Ok(b), Ok(to)) => Some((
            to,
            UpgradeBinary {
                path: file,
                sha256: b.sha256,
                size: b.size,
                reported: b.reported.to_string(),
                commit: commit.as_ref().map(|c| c.0.clone()),
                url: commit.map(|c| c.1),
            },
        )),
        (_, Err(e)) | (Err(e), _) => {
            out.push(
                d.span(path, format!("`{}`'s binary: {e}", n.value)).help(format!(
                    "a {} binary built with its scripts (dist/artifacts/{} of a checkout, or `repro sim binary`); a relative path is from the check file's folder",
                    facts.name, facts.binary
                )),
            );
            None
        }
    }
}

/// Why the Kubernetes API cannot answer at this point of the walk, if it cannot: no node with
/// an apiserver runs, or the etcd members that run are no majority of those started so far
/// (stopping the only etcd member, or all of them, is the common case).
fn no_api(w: &Walk) -> Option<String> {
    let nodes = &w.topo.nodes;
    if !(nodes.iter()).any(|n| n.role.runs_apiserver() && w.running.contains(&n.name)) {
        return Some("no node with an apiserver runs".into());
    }
    let members: Vec<&str> = (nodes.iter())
        .filter(|n| {
            n.role.runs_etcd() && (w.running.contains(&n.name) || w.stopped.contains(&n.name))
        })
        .map(|n| n.name.as_str())
        .collect();
    let up = (members.iter()).filter(|m| w.running.contains(**m)).count();
    if !members.is_empty() && up * 2 <= members.len() {
        let down: Vec<&str> = (members.iter())
            .filter(|m| w.stopped.contains(**m))
            .copied()
            .collect();
        return Some(format!(
            "etcd has no quorum: {up} of its {} members run ({} stopped)",
            members.len(),
            down.join(", ")
        ));
    }
    None
}

/// Whether `n`, named in `start:`, boots in this step (not twice); reports a node already
/// running, or one that joins a node not running yet.
fn starts(
    d: &FileDiag,
    n: &Spanned<String>,
    w: &Walk,
    booted: &[String],
    out: &mut Diagnostics,
) -> bool {
    if booted.contains(&n.value) {
        out.push(
            d.span(n, format!("`{}` is started twice in this step", n.value))
                .help("name each node once per step"),
        );
        return false;
    }
    if w.running.contains(&n.value) {
        let help = if w.topo.node(&n.value).is_some_and(|x| x.deferred) {
            "it was started by an earlier step: use `restart:` for a running node"
        } else {
            "`start:` is for `deferred: true` nodes and nodes a `stop:` took down; use `restart:` for a running node"
        };
        out.push(
            d.span(n, format!("`{}` is already running at this step", n.value))
                .help(help),
        );
    } else if w.stopped.contains(&n.value) {
        // A node that ran before knows the servers it saw (its load balancer's saved list):
        // whether it comes back with its join server down is what a check asks (k3s #11333).
    } else if let Some(j) = w.topo.node(&n.value).and_then(|x| x.join.as_deref()) {
        // A first start: the nodes of one `start:` start at once, and a brand-new joiner knows
        // only the node it joins, which must already run.
        if !w.running.contains(j) {
            out.push(
                d.span(
                    n,
                    format!(
                        "`{}` joins `{j}`, which is not running at this step",
                        n.value
                    ),
                )
                .help(format!(
                    "start `{j}` in an earlier step (the nodes of one `start:` start at once)"
                )),
            );
        }
    }
    true
}

/// Whether `n`, named in `restart:`, boots in this step (not twice); reports a deferred node
/// that no `start:` started.
fn restarts(d: &FileDiag, n: &Spanned<String>, w: &Walk, b: &Boots, out: &mut Diagnostics) -> bool {
    if b.booted.contains(&n.value) {
        out.push(
            d.span(
                n,
                format!("`{}` is started or restarted twice in this step", n.value),
            )
            .help("name each node once per step; use another step to restart it again"),
        );
        return false;
    }
    if w.stopped.contains(&n.value) && !b.start.contains(&n.value) {
        out.push(
            d.span(
                n,
                format!(
                    "`{}` is stopped at this step, so it cannot restart or upgrade",
                    n.value
                ),
            )
            .help("start it with `start:` (in this or an earlier step) first"),
        );
    } else if !w.running.contains(&n.value) && !b.start.contains(&n.value) {
        out.push(
            d.span(
                n,
                format!(
                    "`{}` is deferred and not started yet at this step, so it cannot restart",
                    n.value
                ),
            )
            .help("start it first with `start:` (in this or an earlier step)"),
        );
    }
    true
}

/// The nodes the step edits without booting them, each reported once: an edit only takes
/// effect when the node boots in the same step.
fn edited_not_booted<'a>(
    d: &FileDiag,
    s: &'a StepFile,
    w: &Walk,
    booted: &[String],
    out: &mut Diagnostics,
) -> HashSet<&'a str> {
    let booted_set: HashSet<&str> = booted.iter().map(String::as_str).collect();
    let mut edited_not_booted: HashSet<&str> = HashSet::new();
    for node in s.config.keys().chain(s.remove.keys()).chain(s.files.keys()) {
        if w.topo.node(&node.value).is_none() || booted_set.contains(node.value.as_str()) {
            continue;
        }
        if !edited_not_booted.insert(&node.value) {
            continue; // one report per node and step is enough
        }
        let how = if w.running.contains(&node.value) {
            "restart:"
        } else {
            "start:"
        };
        out.push(
            d.span(node, format!("`{}` is edited in this step but not restarted; k3s would never read the change", node.value))
                .help(format!("add `{}` to `{how}` in this step", node.value)),
        );
    }
    edited_not_booted
}

/// node -> signal -> (line, column) of each expectation, for diagnostics after loading.
fn places(
    map: &crate::raw::SpannedMap<crate::raw::SpannedMap<Spanned<String>>>,
) -> crate::scenario::Places {
    map.iter()
        .map(|(node, sigs)| {
            let at = sigs
                .keys()
                .map(|sig| {
                    let l = sig.referenced;
                    (sig.value.clone(), (l.line(), l.column()))
                })
                .collect();
            (node.value.clone(), at)
        })
        .collect()
}

/// The bug signature lists only how the bug differs from `expect`; entries the loader already
/// rejected (unknown node or signal) are left out of `expect`/`bug` and not judged again.
fn check_bug_against_expect(
    d: &FileDiag,
    s: &StepFile,
    expect: &Expectations,
    bug: &Expectations,
    out: &mut Diagnostics,
) {
    for (node, sigs) in &s.bug {
        for (sig, v) in sigs {
            if !bug
                .get(&node.value)
                .is_some_and(|b| b.contains_key(&sig.value))
            {
                continue;
            }
            match expect.get(&node.value).and_then(|e| e.get(&sig.value)) {
                None => out.push(
                    d.span(sig, format!("bug entry {}/{} has no matching `expect` entry", node.value, sig.value))
                        .help(format!("the bug signature says how the bug differs from `expect`: add the correct value under `expect: {{{}: {{{}: ...}}}}` too", node.value, sig.value)),
                ),
                Some(e) if e.as_str() == v.value => out.push(
                    d.span(v, format!("bug value for {}/{} equals the expected value `{}`", node.value, sig.value, v.value))
                        .help("list under `bug:` only what the bug changes; drop this entry"),
                ),
                Some(_) => {}
            }
        }
    }
}

/// What expectations of one step are checked against.
struct ExpectCx<'a> {
    d: &'a FileDiag<'a>,
    topo: &'a Topology,
    signals: &'a Signals,
    /// Nodes running after this step's stops and starts.
    running: &'a HashSet<String>,
    /// Nodes down after this step's stops and starts: only `down` can be observed of them.
    stopped: &'a HashSet<String>,
    /// Nodes this step names in `stop:`/`start:`/`restart:`/`upgrade:` (problems there are
    /// reported there).
    named: &'a HashSet<String>,
    /// Nodes this step boots (starts, restarts, upgrades).
    booted: &'a [String],
    /// Why the Kubernetes API cannot answer during this step, if it cannot.
    no_api: Option<String>,
    /// Nodes whose files this step edits without booting them (reported at the edit too).
    edited_not_booted: &'a HashSet<&'a str>,
}

impl ExpectCx<'_> {
    fn expectations(
        &self,
        raw: &SpannedMap<SpannedMap<Spanned<String>>>,
        is_bug: bool,
        out: &mut Diagnostics,
    ) -> Expectations {
        let d = self.d;
        let mut res = Expectations::new();
        for (node, sigs) in raw {
            let Some(n) = self.topo.node(&node.value) else {
                out.push(
                    d.span(
                        node,
                        format!(
                            "unknown node `{}` (topology `{}`)",
                            node.value, self.topo.name
                        ),
                    )
                    .help(format!(
                        "name one of the topology's nodes: {}",
                        names_list(self.topo.nodes.iter().map(|n| n.name.as_str()))
                    )),
                );
                continue;
            };
            self.check_boot_observed(node, out);
            if sigs.is_empty() {
                out.push(
                    d.span(node, format!("no signals expected of `{}`", node.value))
                        .help("give at least one `signal: value`, e.g. {ready: up}, or drop the entry"),
                );
            }
            let mut entry = IndexMap::new();
            for (sig, v) in sigs {
                if let Some(want) = self.expected(n, sig, v, is_bug, out) {
                    entry.insert(sig.value.clone(), want);
                }
            }
            res.insert(node.value.clone(), entry);
        }
        res
    }

    /// Expectations on a node the step leaves alone are fine: they re-observe its current boot
    /// ("etcd-1 stays down"). Not so for a node that has no boot yet, or whose config changed
    /// without a restart: the observed boot would not be the one described.
    fn check_boot_observed(&self, node: &Spanned<String>, out: &mut Diagnostics) {
        let d = self.d;
        if self.stopped.contains(&node.value) {
            // Only `down` is asked of it (`expected`).
        } else if !self.running.contains(&node.value) && !self.named.contains(&node.value) {
            out.push(
                d.span(node, format!("`{}` is deferred and not started at this step; there is no boot to observe", node.value))
                    .help(format!("add `{}` to `start:` in this step or an earlier one", node.value)),
            );
        } else if self.edited_not_booted.contains(node.value.as_str()) {
            out.push(
                d.span(node, format!("this expectation would observe `{}`'s old boot: the step edits its config but does not restart it", node.value))
                    .help(format!("restart `{}` in this step, or move the edit to the step that restarts it", node.value)),
            );
        }
    }

    /// What `sig: v` on node `n` expects, or `None` (reported) when the signal is unknown, not
    /// observable on the node's role, `v` is not one of its values, or the node can never show
    /// it. `any` is a `bug:` value only.
    fn expected(
        &self,
        n: &crate::scenario::Node,
        sig: &Spanned<String>,
        v: &Spanned<String>,
        is_bug: bool,
        out: &mut Diagnostics,
    ) -> Option<Expected> {
        let d = self.d;
        let Some(def) = self.signals.get(&sig.value) else {
            out.push(
                d.span(sig, format!("unknown signal `{}`", sig.value))
                    .help(format!(
                        "use a signal defined in signals.yaml: {}",
                        names_list(self.signals.by_name.keys().map(String::as_str))
                    )),
            );
            return None;
        };
        if !def.observable_on(n.role) {
            out.push(
                d.span(
                    sig,
                    format!(
                        "`{}` cannot be observed on `{}`, a {} node",
                        sig.value,
                        n.name,
                        n.role.as_str()
                    ),
                )
                .help(format!(
                    "signals.yaml says `{}` is observable only on: {}",
                    sig.value,
                    names_list(def.roles.iter().map(|r| r.as_str()))
                )),
            );
            return None;
        }
        let state = v.value == "up" || v.value == "down";
        if let Some(problem) = self.lifecycle_problem(n, sig, v, def) {
            out.push(problem);
            return None;
        }
        if self.stopped.contains(&n.name) && v.value == "down" && !def.is_value() {
            // A stopped node shows nothing: the runner records it `down` without reading it.
            return Some(Expected::Down);
        }
        let problem = if v.value == crate::scenario::ANY {
            if is_bug {
                return Some(Expected::Any);
            }
            d.span(v, format!("`any` is only a `bug:` value (`{}` under `expect:`)", sig.value))
                .help("`expect:` says what a fixed k3s does; `bug: {node: {signal: any}}` marks a step where the bug world cannot tell")
        } else if v.value.trim().is_empty() {
            d.span(v, format!("empty expected value for `{}`", sig.value))
                .help(if def.is_value() {
                    format!(
                        "give the value, e.g. {}",
                        self.topo.distro.facts().example_version
                    )
                } else {
                    "use `up` or `down`".to_string()
                })
        } else if !def.is_value() && !state {
            d.span(
                v,
                format!("`{}` is not a state of signal `{}`", v.value, sig.value),
            )
            .help(format!("`{}` is either `up` or `down`", sig.value))
        } else if def.is_value() && state {
            d.span(v, format!("`{}` reports a value, not up/down", sig.value))
                .help(format!(
                    "expect the text it reports, e.g. `{}`",
                    value_example(self.topo.distro, &sig.value)
                ))
        } else {
            let want = Expected::parse(&v.value);
            let Some(why) = (self.signals).never_shows(&sig.value, &want, n.role, self.topo.distro)
            else {
                return Some(want);
            };
            d.span(
                v,
                format!(
                    "`{}: {}` can never be decided on `{}`: {why}",
                    sig.value, v.value, n.name
                ),
            )
            .help(format!(
                "a run would wait its whole --timeout for it: expect `{}` on a node that can show it, or what `{}` does show (signals.yaml: `roles:` on a line says which nodes print it)",
                sig.value, n.name
            ))
        };
        out.push(problem);
        None
    }
}

impl ExpectCx<'_> {
    /// What the step's stops make impossible: any value but `down` (or `any` under `bug:`) on a
    /// stopped node, and a readiness that needs the API (a node booted in this step becoming
    /// ready, or the API's view of nodes) while no apiserver runs or etcd has no quorum.
    fn lifecycle_problem(
        &self,
        n: &crate::scenario::Node,
        sig: &Spanned<String>,
        v: &Spanned<String>,
        def: &Signal,
    ) -> Option<crate::diag::Diagnostic> {
        let d = self.d;
        if self.stopped.contains(&n.name) {
            if (v.value == "down" && !def.is_value()) || v.value == crate::scenario::ANY {
                return None;
            }
            return Some(
                d.span(v, format!("`{}` is stopped at this step: `{}: {}` cannot be observed on it", n.name, sig.value, v.value))
                    .help(format!("a stopped node only shows `down` (e.g. `{}: {{ready: down}}`); start it with `start:` to observe it", n.name)),
            );
        }
        let why = self.no_api.as_deref()?;
        let needs_api = def.api.is_some()
            || (v.value == "up"
                && matches!(sig.value.as_str(), "ready" | "agent-ready")
                && self.booted.contains(&n.name)
                && n.role != Role::Etcd);
        needs_api.then(|| {
            d.span(v, format!("`{}: {}` on `{}` needs the Kubernetes API, which cannot answer at this step: {why}", sig.value, v.value, n.name))
                .help("keep a majority of the etcd members and a node with an apiserver running in this step (start the stopped ones first), or expect what the node shows without the API")
        })
    }
}

fn value_example(distro: distro::Distro, signal: &str) -> &'static str {
    match signal {
        "version" => distro.facts().example_version,
        "roles" => "etcd",
        _ => "the value the log line shows",
    }
}
