//! The plan of a run, computed without Docker: image, start order, each node's rendered files at
//! every step, restarts and expectations. `repro plan` prints it; `repro run` executes it.
//!
//! Planning is pure and total: it works on a validated [`Scenario`] and never panics, even if
//! handed one built by hand (unknown names are skipped, not indexed).

use indexmap::IndexMap;
use serde::Serialize;

use crate::outcome::Outcome;
use crate::raw::ConfigValue;
use crate::redact;
use crate::scenario::{Expectations, Scenario};
pub(crate) use crate::start_order::{start_needs, start_order, PlannedNode};
use distro::{Distro, ReleaseSet, Version};

/// path -> content, or `None` for a file to delete.
pub(crate) type NodeFiles = IndexMap<String, Option<String>>;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Plan {
    pub(crate) check: String,
    pub(crate) issue: String,
    /// One line on what the check shows.
    pub(crate) summary: String,
    pub(crate) topology: String,
    pub(crate) topology_description: String,
    /// The topology's distribution: every path, port, variable and log line of the run is
    /// read from its facts.
    #[serde(rename = "distribution")]
    pub(crate) distro: Distro,
    pub(crate) k3s_version: Version,
    pub(crate) image: String,
    pub(crate) nodes: Vec<PlannedNode>,
    /// The first start in stages (`start_needs`' depth): shown by `repro plan`; the nodes of a
    /// stage can start at once.
    pub(crate) start_order: Vec<Vec<String>>,
    /// What each node of the first start waits for (see `start_needs`): the runner starts a
    /// node as soon as these are ready.
    pub(crate) start_needs: IndexMap<String, Vec<String>>,
    /// Files written on every node before its first start (from the topology's `files:`).
    pub(crate) common_files: IndexMap<String, String>,
    /// Every node's files before its first start.
    pub(crate) initial: IndexMap<String, NodeFiles>,
    pub(crate) steps: Vec<PlannedStep>,
    /// Things a reviewer should know before trusting a verdict (e.g. a feature this version lacks).
    pub(crate) notes: Vec<String>,
    /// Whether this version is expected to show the bug (from the check's `fixed-in`); `None`
    /// where that cannot say (a release candidate no evidence places): `--expect` must.
    pub(crate) expected_verdict: Option<Outcome>,
    /// Why that verdict is expected, in words.
    pub(crate) expected_because: String,
    /// The check's first fixed version per release line.
    pub(crate) fixed_in: Vec<Version>,
    /// With the bug: the servers each boot of an etcd-only joiner may read its served config
    /// from (src/bug_world.rs), step by step.
    pub(crate) bug_reach: Vec<crate::bug_world::Reach>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct PlannedStep {
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) why: String,
    /// Files written (or deleted) on each edited node in this step, config.yaml re-rendered.
    pub(crate) edits: IndexMap<String, NodeFiles>,
    /// Config keys set and removed per node in this step (what `edits` changes, in words).
    pub(crate) set: IndexMap<String, IndexMap<String, ConfigValue>>,
    pub(crate) removed: IndexMap<String, Vec<String>>,
    /// Nodes stopped at once, first: each stays down until a later step's `start:`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) stop: Vec<String>,
    pub(crate) start: Vec<String>,
    pub(crate) restart: Vec<Vec<String>>,
    /// Nodes re-created on another version's image, one after another, last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) upgrade: Vec<PlannedUpgrade>,
    pub(crate) expect: Expectations,
    pub(crate) bug: Expectations,
    /// Lines in the check file: the step's, and each expectation's.
    pub(crate) line: usize,
    pub(crate) expect_lines: crate::scenario::ExpectLines,
    /// Every node's full config.yaml as of the end of this step.
    pub(crate) configs: IndexMap<String, String>,
}

impl PlannedStep {
    /// The expectations as they are under the bug: `expect` with `bug` entries replacing theirs.
    pub(crate) fn bug_world(&self) -> Expectations {
        let mut world = self.expect.clone();
        for (node, sigs) in &self.bug {
            let entry = world.entry(node.clone()).or_default();
            for (sig, v) in sigs {
                entry.insert(sig.clone(), v.clone());
            }
        }
        world
    }
}

impl Plan {
    /// Where the node's config file lives (`/etc/rancher/k3s/config.yaml` on k3s).
    pub(crate) fn config_path(&self) -> &'static str {
        self.distro.facts().config_path
    }

    /// Whether the check describes the bug (`bug:` in a step): only then can a run reproduce it.
    pub(crate) fn has_bug_signature(&self) -> bool {
        self.steps.iter().any(|s| !s.bug.is_empty())
    }
}

/// One node's `upgrade:`: the version and the image it is re-created on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PlannedUpgrade {
    pub(crate) node: String,
    pub(crate) version: Version,
    /// The run's image with the version's tag in place of the run version's (the stand-in's
    /// and the published images are tagged by version); `None` when the run's image is not
    /// tagged so (`--image`, `--artifacts`): nothing says which image runs `version`.
    pub(crate) image: Option<String>,
    /// A local build copied over that image's binary before the new boot (`{binary: PATH}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) binary: Option<crate::scenario::UpgradeBinary>,
}

/// The image of `to` beside the run's `image` of `version`, when the run's is tagged by it.
fn image_of(image: &str, version: &Version, to: &Version) -> Option<String> {
    let repo = image.strip_suffix(&format!(":{}", version.image_tag()))?;
    Some(format!("{repo}:{}", to.image_tag()))
}

/// Why the plan's upgrades cannot run from the run's version (`--version` may start the
/// nodes elsewhere than the topology's version the check was validated at): each move by
/// the distribution's skew rules, and an image for each.
pub(crate) fn upgrade_problems(p: &Plan) -> Vec<String> {
    let rules = p.distro.facts().upgrade;
    let mut now: IndexMap<&str, &Version> = p
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), &p.k3s_version))
        .collect();
    let mut out = Vec::new();
    for s in &p.steps {
        for u in &s.upgrade {
            let from = now[u.node.as_str()];
            if let Some(why) = rules.refuses(from, &u.version) {
                out.push(format!(
                    "step {}: `{}` cannot be upgraded to {}: {why}",
                    s.index, u.node, u.version
                ));
            }
            if u.image.is_none() {
                out.push(format!("step {}: no image is known for {} (the run's image {} is not tagged with the run's version)", s.index, u.version, p.image));
            }
            now.insert(u.node.as_str(), &u.version);
        }
    }
    out
}

pub(crate) fn plan(sc: &Scenario, version: &Version, image: &str) -> Plan {
    let topo = &sc.topology;
    let distro = topo.distro;
    let config_path = distro.facts().config_path;
    let nodes: Vec<PlannedNode> = topo.nodes.iter().map(PlannedNode::from).collect();

    // User keys per node: topology-wide, then the node's own, then step edits.
    let mut keys = topo.node_keys();
    let no_keys = IndexMap::new();

    let mut initial = IndexMap::new();
    for (n, tn) in nodes.iter().zip(&topo.nodes) {
        let mut files = NodeFiles::new();
        let own = keys.get(&n.name).unwrap_or(&no_keys);
        files.insert(
            config_path.to_string(),
            Some(render_config(distro, n, own, 0)),
        );
        for (p, c) in topo.files.iter().chain(&tn.files) {
            files.insert(p.clone(), Some(c.clone()));
        }
        initial.insert(n.name.clone(), files);
    }

    let mut steps = Vec::new();
    for (i, s) in sc.check.steps.iter().enumerate() {
        let index = i + 1;
        s.apply_keys(&mut keys);
        let mut edits: IndexMap<String, NodeFiles> = IndexMap::new();
        for node in s.edited_nodes() {
            let Some(n) = nodes.iter().find(|n| n.name == node) else {
                continue;
            };
            let mut files = NodeFiles::new();
            if s.config.contains_key(node) || s.remove.contains_key(node) {
                let own = keys.get(node).unwrap_or(&no_keys);
                files.insert(
                    config_path.to_string(),
                    Some(render_config(distro, n, own, index)),
                );
            }
            if let Some(fs) = s.files.get(node) {
                files.extend(fs.clone());
            }
            edits.insert(node.to_string(), files);
        }
        let configs = nodes
            .iter()
            .map(|n| {
                let own = keys.get(&n.name).unwrap_or(&no_keys);
                (n.name.clone(), render_config(distro, n, own, index))
            })
            .collect();
        steps.push(PlannedStep {
            index,
            name: s.name.clone(),
            why: s.why.clone(),
            edits,
            set: s.config.clone(),
            removed: s.remove.clone(),
            stop: s.stop.clone(),
            start: s.start.clone(),
            restart: s.restart.clone(),
            upgrade: (s.upgrade.iter())
                .map(|u| PlannedUpgrade {
                    node: u.node.clone(),
                    version: u.version.clone(),
                    image: image_of(image, version, &u.version),
                    binary: u.binary.clone(),
                })
                .collect(),
            expect: s.expect.clone(),
            bug: s.bug.clone(),
            line: s.line,
            expect_lines: s.expect_lines.clone(),
            configs,
        });
    }

    let (expected_verdict, mut expected_because, decided_by) =
        expected_with(sc.check.introduced_in.as_ref(), &sc.check.fixed_in, version);
    let change = match decided_by {
        Decider::IntroducedIn => sc.check.introduced_in_change.as_deref(),
        Decider::FixedIn => sc.check.fixed_in_change.as_deref(),
    };
    if let Some((evidence, confidence)) =
        change.and_then(|c| distro.changes().get(c)?.evidence_for(version))
    {
        expected_because.push_str(&format!(" — evidence ({confidence}): {evidence}"));
    }
    Plan {
        check: sc.check.name.clone(),
        issue: sc.check.issue.clone(),
        summary: sc.check.summary.clone(),
        topology: topo.name.clone(),
        topology_description: topo.description.clone(),
        distro,
        k3s_version: version.clone(),
        image: image.to_string(),
        start_order: start_order(&nodes),
        start_needs: start_needs(&nodes),
        common_files: topo.files.clone(),
        nodes,
        initial,
        steps,
        notes: notes(sc, version),
        expected_verdict,
        expected_because,
        fixed_in: sc.check.fixed_in.firsts.clone(),
        bug_reach: crate::bug_world::read(sc).reach,
    }
}

/// Signals the check relies on that this version does not have at all.
fn notes(sc: &Scenario, version: &Version) -> Vec<String> {
    let mut used: Vec<&str> = Vec::new();
    for s in &sc.check.steps {
        for sigs in s.expect.values().chain(s.bug.values()) {
            for sig in sigs.keys() {
                if !used.contains(&sig.as_str()) {
                    used.push(sig);
                }
            }
        }
    }
    let mut notes = Vec::new();
    for name in used {
        let Some(sig) = sc.signals.get(name) else {
            continue;
        };
        if !sig.exists_in(version) {
            let since = sig.since.as_ref().map(list).unwrap_or_default();
            notes.push(format!(
                "k3s {version} has no `{name}` feature (it exists from {since}); expectations on it cannot hold, so this run cannot show the bug"
            ));
        }
    }
    notes
}

fn list(set: &ReleaseSet) -> String {
    set.firsts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which of a check's fields decided its expected verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decider {
    IntroducedIn,
    FixedIn,
}

/// The verdict a version should get when the check may name a regression: a version without
/// its cause (`introduced-in`) shows the correct behaviour; the others follow `fixed-in`.
pub(crate) fn expected_with(
    introduced: Option<&ReleaseSet>,
    fixed_in: &ReleaseSet,
    v: &Version,
) -> (Option<Outcome>, String, Decider) {
    if let Some(set) = introduced {
        match set.placement(v) {
            Some(false) => {
                return (
                    Some(Outcome::Fixed),
                    format!("{v} comes before the release that introduced the bug (introduced-in), so it behaves as fixed"),
                    Decider::IntroducedIn,
                )
            }
            None => {
                return (
                    None,
                    format!("{v} is a release candidate of the release that introduced the bug, and no evidence says which candidate first has it; pass --expect fixed or --expect reproduced"),
                    Decider::IntroducedIn,
                )
            }
            Some(true) => {}
        }
    }
    let (verdict, because) = expected(fixed_in, v);
    (verdict, because, Decider::FixedIn)
}

/// The verdict a version should get, from the check's first fixed version per release line;
/// `None` for a release candidate of a first fixed release that no evidence places (the
/// changes table's `rc:`), with why.
pub(crate) fn expected(fixed_in: &ReleaseSet, v: &Version) -> (Option<Outcome>, String) {
    let line = format!("{}.{}", v.major, v.minor);
    if fixed_in.firsts.is_empty() {
        return (
            Some(Outcome::Fixed),
            "the check has no `fixed-in`: it documents behaviour every version should show"
                .to_string(),
        );
    }
    let verdict = |fixed: bool| {
        Some(if fixed {
            Outcome::Fixed
        } else {
            Outcome::Reproduced
        })
    };
    match fixed_in.first_in_line(v) {
        Some(first) if fixed_in.is_candidate_of_first(v) => {
            match fixed_in.first_candidate_in_line(v) {
                Some(c) if v >= c => (
                    verdict(true),
                    format!("{v} is at or after {c}, the first candidate of {first} with the fix"),
                ),
                Some(c) => (
                    verdict(false),
                    format!("{v} comes before {c}, the first candidate of {first} with the fix"),
                ),
                None => (
                    None,
                    format!(
                        "{v} is a release candidate of {first}, the first fixed release of {line}, and no evidence says which candidate first has the fix; pass --expect fixed or --expect reproduced"
                    ),
                ),
            }
        }
        Some(first) if fixed_in.contains(v) => (
            verdict(true),
            format!("{v} is at or after {first}, the first fixed release of {line}"),
        ),
        Some(first) => (
            verdict(false),
            format!("{v} comes before {first}, the first fixed release of {line}"),
        ),
        None if fixed_in.contains(v) => (
            verdict(true),
            format!("release line {line} is newer than every line in fixed-in, so it has the fix"),
        ),
        None => (
            verdict(false),
            format!("release line {line} is older than every line in fixed-in: the fix never reached it"),
        ),
    }
}

/// One boot on a run's critical path.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct PathBoot {
    pub(crate) node: String,
    /// The step it belongs to (0: the first start).
    pub(crate) step: usize,
    /// The phases it plays (`distro::pace`'s names), in order.
    pub(crate) phases: Vec<&'static str>,
    /// Its modelled time under the pace, in seconds.
    pub(crate) seconds: f64,
}

/// The boots a run cannot overlap, under `--sim-pace`'s model: the longest chain of the first
/// start (by `start_needs`), then each step's starts one after another and each restart group's
/// slowest boot (a step's groups follow one another, its nodes within a group restart at once).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct CriticalPath {
    pub(crate) pace: f64,
    /// The sum of `boots`' seconds.
    pub(crate) seconds: f64,
    /// The same at real k3s timings (pace 1).
    pub(crate) real_seconds: f64,
    pub(crate) boots: Vec<PathBoot>,
}

fn boot_of(n: &PlannedNode, first: bool) -> distro::pace::Boot {
    distro::pace::Boot {
        server: n.role.is_server(),
        runs_etcd: n.role.runs_etcd(),
        runs_apiserver: n.role.runs_apiserver(),
        init: n.init,
        first,
    }
}

/// The run's critical path at `pace` (see [`CriticalPath`]). Pure: the plan and the model only.
pub(crate) fn critical_path(p: &Plan, pace: f64) -> CriticalPath {
    use distro::pace::{boot_seconds, phases, timing};
    let node = |name: &str| p.nodes.iter().find(|n| n.name == name);
    let path_boot = |n: &PlannedNode, step: usize, first: bool| {
        let b = boot_of(n, first);
        PathBoot {
            node: n.name.clone(),
            step,
            phases: phases(b).iter().map(|ph| timing(*ph).name).collect(),
            seconds: boot_seconds(b),
        }
    };
    // The first start: the chain that ends last (finish = latest need's finish + own boot).
    let mut finish: IndexMap<&str, (f64, Option<&str>)> = IndexMap::new();
    for group in &p.start_order {
        for name in group {
            let Some(n) = node(name) else { continue };
            let (before, prev) = p
                .start_needs
                .get(name)
                .into_iter()
                .flatten()
                .filter_map(|w| finish.get(w.as_str()).map(|(t, _)| (*t, Some(w.as_str()))))
                .fold((0.0, None), |a, b| if b.0 > a.0 { b } else { a });
            finish.insert(name, (before + boot_seconds(boot_of(n, true)), prev));
        }
    }
    let mut chain: Vec<PathBoot> = Vec::new();
    let mut at = finish
        .iter()
        .fold(None::<(&str, f64)>, |a, (n, (t, _))| match a {
            Some((_, best)) if best >= *t => a,
            _ => Some((n, *t)),
        })
        .map(|(n, _)| n);
    while let Some(name) = at {
        let Some(n) = node(name) else { break };
        chain.push(path_boot(n, 0, true));
        at = finish.get(name).and_then(|(_, prev)| *prev);
    }
    chain.reverse();
    let mut booted: Vec<&str> = finish.keys().copied().collect();
    for s in &p.steps {
        for name in &s.start {
            if let Some(n) = node(name) {
                chain.push(path_boot(n, s.index, !booted.contains(&name.as_str())));
                booted.push(name);
            }
        }
        for group in &s.restart {
            let slowest = group
                .iter()
                .filter_map(|name| node(name))
                .map(|n| path_boot(n, s.index, !booted.contains(&n.name.as_str())))
                .fold(None::<PathBoot>, |a, b| match a {
                    Some(a) if a.seconds >= b.seconds => Some(a),
                    _ => Some(b),
                });
            chain.extend(slowest);
            booted.extend(group.iter().map(String::as_str));
        }
    }
    let real_seconds: f64 = chain.iter().map(|b| b.seconds).sum();
    for b in &mut chain {
        b.seconds *= pace;
    }
    CriticalPath {
        pace,
        seconds: real_seconds * pace,
        real_seconds,
        boots: chain,
    }
}

/// A node's `config.yaml`: the keys its role and place in the cluster stand for, then its own
/// in the order they were set. Strings are JSON strings (valid YAML that never changes type).
pub(crate) fn render_config(
    distro: Distro,
    n: &PlannedNode,
    keys: &IndexMap<String, ConfigValue>,
    step: usize,
) -> String {
    let facts = distro.facts();
    let when = if step == 0 {
        " before first start".to_string()
    } else {
        format!(" at step {step}")
    };
    let mut out = format!(
        "# config.yaml for {} (role {}), rendered by repro{when}\n",
        n.name,
        n.role.as_str(),
    );
    if let (true, Some(k)) = (n.init, facts.role_keys.init) {
        out.push_str(&format!("{k}: true\n"));
    }
    if let Some(j) = &n.join {
        let url = format!("https://{j}:{}", facts.supervisor_port);
        out.push_str(&format!(
            "{}: {}\n",
            facts.role_keys.join,
            ConfigValue::Str(url).to_yaml()
        ));
    }
    for k in n.role.config_keys(distro) {
        out.push_str(&format!("{k}: true\n"));
    }
    for (k, v) in keys {
        out.push_str(&format!("{k}: {}\n", v.to_yaml()));
    }
    out
}

/// A rendered config without its comment header, to compare two renderings.
pub(crate) fn config_body(rendered: &str) -> String {
    rendered
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything this plan sets, by where it sits: what redaction learns whole before any output.
fn secrets_of(plan: &Plan) -> redact::Known<'_> {
    let mut s = redact::Known::default();
    for n in &plan.nodes {
        s.env
            .extend(n.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    let node_files = plan
        .initial
        .values()
        .chain(plan.steps.iter().flat_map(|st| st.edits.values()));
    for files in node_files {
        for (path, content) in files {
            if let Some(c) = content {
                s.files.push((path.as_str(), c.as_str()));
            }
        }
    }
    s.files.extend(
        plan.common_files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str())),
    );
    for st in &plan.steps {
        s.files.extend(
            st.configs
                .values()
                .map(|c| (plan.config_path(), c.as_str())),
        );
        s.prose.extend([st.name.as_str(), st.why.as_str()]);
    }
    s.prose.extend([
        plan.summary.as_str(),
        plan.topology_description.as_str(),
        plan.expected_because.as_str(),
    ]);
    s.prose.extend(plan.notes.iter().map(String::as_str));
    s
}

/// A context for a plan: every secret the scenario sets, learned whole.
pub(crate) fn plan_redactor(plan: &Plan, first: &[String]) -> redact::Redactor {
    let mut r = redact::Redactor::new(first);
    redact::learn_scenario(&mut r, &secrets_of(plan));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::raw::Role;
    use crate::start_order::stages;

    fn node(name: &str, role: Role, init: bool, join: Option<&str>, deferred: bool) -> PlannedNode {
        PlannedNode {
            name: name.into(),
            role,
            init,
            join: join.map(Into::into),
            deferred,
            env: IndexMap::new(),
        }
    }

    fn v(s: &str) -> Version {
        s.parse().expect("test version")
    }

    #[test]
    fn start_stages_follow_what_each_node_needs() {
        let nodes = vec![
            node("a-1", Role::Agent, false, Some("cp-1"), false),
            node("cp-1", Role::ControlPlane, false, Some("etcd-1"), false),
            node("etcd-2", Role::Etcd, false, Some("etcd-1"), false),
            node("etcd-1", Role::Etcd, true, None, false),
            node("all-1", Role::All, false, Some("etcd-1"), false),
            node("cp-2", Role::ControlPlane, false, Some("etcd-1"), false),
            node("etcd-9", Role::Etcd, false, Some("etcd-1"), true),
            node("a-2", Role::Agent, false, Some("etcd-1"), false),
            node("a-9", Role::Agent, false, Some("etcd-1"), true),
        ];
        let needs = start_needs(&nodes);
        let want_needs: Vec<(&str, Vec<&str>)> = vec![
            // An agent of a server with an apiserver needs only that server.
            ("a-1", vec!["cp-1"]),
            // A control-plane-only server needs only the server it joins.
            ("cp-1", vec!["etcd-1"]),
            ("etcd-2", vec!["etcd-1"]),
            ("etcd-1", vec![]),
            // etcd joiners one after another: all-1 waits for etcd-2's promotion.
            ("all-1", vec!["etcd-1", "etcd-2"]),
            ("cp-2", vec!["etcd-1"]),
            // An agent of an etcd-only server waits for every apiserver too.
            ("a-2", vec!["etcd-1", "cp-1", "all-1", "cp-2"]),
        ];
        let got: Vec<(&str, Vec<&str>)> = needs
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(got, want_needs);
        let want: Vec<Vec<&str>> = vec![
            vec!["etcd-1"],
            vec!["cp-1", "etcd-2", "cp-2"],
            vec!["a-1", "all-1"],
            vec!["a-2"],
        ];
        assert_eq!(start_order(&nodes), want);
    }

    #[test]
    fn etcd_split_starts_cp_1_with_etcd_2() {
        let cat = catalog();
        let sc = cat.scenario("etcd-split", None).expect("scenario");
        let p = plan(&sc, &v("v1.33.4+k3s1"), "img");
        let want: Vec<Vec<&str>> = vec![vec!["etcd-1"], vec!["etcd-2", "cp-1"], vec!["etcd-3"]];
        assert_eq!(p.start_order, want);
        assert_eq!(p.start_needs["etcd-3"], ["etcd-1", "etcd-2"]);
    }

    #[test]
    fn critical_path_of_etcd_split() {
        let cat = catalog();
        let sc = cat.scenario("etcd-split", None).expect("scenario");
        let p = plan(&sc, &v("v1.33.4+k3s1"), "img");
        let cp = critical_path(&p, 0.5);
        let who: Vec<(&str, usize)> = cp.boots.iter().map(|b| (b.node.as_str(), b.step)).collect();
        // cp-1 (4.05 s) runs beside etcd-2: not on the path. `restart: [etcd-2, etcd-3]` is
        // two groups, one after the other (etcd would lose quorum with both down).
        assert_eq!(
            who,
            [
                ("etcd-1", 0),
                ("etcd-2", 0),
                ("etcd-3", 0),
                ("etcd-2", 1),
                ("etcd-3", 1),
                ("etcd-1", 2),
                ("etcd-2", 3),
                ("etcd-3", 3)
            ]
        );
        // 4.0 + 8.45 + 8.45 at the first start, five 12 s restarts.
        assert!((cp.real_seconds - 80.9).abs() < 1e-9, "{}", cp.real_seconds);
        assert!((cp.seconds - 40.45).abs() < 1e-9, "{}", cp.seconds);
        assert_eq!(cp.boots[1].phases, ["join", "learner-promotion", "agent"]);
        assert_eq!(cp.boots[3].phases, ["restart", "agent"]);
    }

    #[test]
    fn critical_path_takes_the_longest_chain() {
        let nodes = vec![
            node("etcd-1", Role::Etcd, true, None, false),
            node("etcd-2", Role::Etcd, false, Some("etcd-1"), false),
            node("cp-1", Role::ControlPlane, false, Some("etcd-1"), false),
            node("a-1", Role::Agent, false, Some("cp-1"), false),
            node("a-2", Role::Agent, false, Some("cp-1"), false),
        ];
        let sc_plan = Plan {
            check: String::new(),
            issue: String::new(),
            summary: String::new(),
            topology: String::new(),
            topology_description: String::new(),
            distro: Distro::K3s,
            k3s_version: v("v1.33.4+k3s1"),
            image: String::new(),
            start_order: start_order(&nodes),
            start_needs: start_needs(&nodes),
            common_files: IndexMap::new(),
            initial: IndexMap::new(),
            nodes,
            steps: Vec::new(),
            notes: Vec::new(),
            expected_verdict: None,
            expected_because: String::new(),
            fixed_in: Vec::new(),
            bug_reach: Vec::new(),
        };
        // etcd-1 4.0 → etcd-2 8.45 = 12.45 outlasts etcd-1 → cp-1 4.05 → a-1 2.0 = 10.05 (the
        // two agents start together: they do not add up).
        let cp = critical_path(&sc_plan, 1.0);
        let who: Vec<&str> = cp.boots.iter().map(|b| b.node.as_str()).collect();
        assert_eq!(who, ["etcd-1", "etcd-2"]);
        assert!((cp.seconds - 12.45).abs() < 1e-9);
        // With a slow pace the chain is the same, its time scaled.
        assert!((critical_path(&sc_plan, 2.0).seconds - 24.9).abs() < 1e-9);
    }

    #[test]
    fn stages_of_a_cycle_end() {
        let mut needs = IndexMap::new();
        needs.insert("a".to_string(), vec!["b".to_string()]);
        needs.insert("b".to_string(), vec!["a".to_string()]);
        needs.insert("c".to_string(), vec![]);
        let got = stages(&needs);
        assert_eq!(got[0], ["c"]);
    }

    #[test]
    fn config_renders_role_keys_then_user_keys_in_order() {
        let n = node("etcd-2", Role::Etcd, false, Some("etcd-1"), false);
        let mut keys = IndexMap::new();
        keys.insert("supervisor-metrics".to_string(), ConfigValue::Bool(true));
        keys.insert(
            "node-label".to_string(),
            ConfigValue::List(vec![
                ConfigValue::Str("a=b".into()),
                ConfigValue::Str("c: d".into()),
            ]),
        );
        keys.insert(
            "embedded-registry".to_string(),
            ConfigValue::Str("true".into()),
        );
        keys.insert("kubelet-arg+".to_string(), ConfigValue::Int(3));
        let got = render_config(Distro::K3s, &n, &keys, 2);
        assert_eq!(
            got,
            "# config.yaml for etcd-2 (role etcd), rendered by repro at step 2\n\
             server: \"https://etcd-1:6443\"\n\
             disable-apiserver: true\n\
             disable-controller-manager: true\n\
             disable-scheduler: true\n\
             supervisor-metrics: true\n\
             node-label: [\"a=b\", \"c: d\"]\n\
             embedded-registry: \"true\"\n\
             kubelet-arg+: 3\n"
        );
        // The rendering is YAML that reads back to the same values.
        #[derive(serde::Deserialize)]
        struct Back {
            server: String,
            #[serde(rename = "embedded-registry")]
            registry: String,
            #[serde(rename = "node-label")]
            labels: Vec<String>,
        }
        let back: Back = serde_saphyr::from_str(&got).expect("valid YAML");
        assert_eq!(back.server, "https://etcd-1:6443");
        assert_eq!(back.registry, "true");
        assert_eq!(back.labels, ["a=b", "c: d"]);
    }

    #[test]
    fn init_and_control_plane_configs() {
        let init = render_config(
            Distro::K3s,
            &node("etcd-1", Role::Etcd, true, None, false),
            &IndexMap::new(),
            0,
        );
        assert!(init.contains("before first start\ncluster-init: true\ndisable-apiserver: true\n"));
        assert!(!init.contains("\nserver:"));
        let cp = render_config(
            Distro::K3s,
            &node("cp-1", Role::ControlPlane, false, Some("etcd-1"), false),
            &IndexMap::new(),
            0,
        );
        assert!(
            cp.ends_with("server: \"https://etcd-1:6443\"\ndisable-etcd: true\n"),
            "{cp}"
        );
        let all = render_config(
            Distro::K3s,
            &node("s-1", Role::All, true, None, false),
            &IndexMap::new(),
            0,
        );
        assert!(all.ends_with("cluster-init: true\n"), "{all}");
        assert_eq!(
            config_body(&cp),
            "server: \"https://etcd-1:6443\"\ndisable-etcd: true"
        );
    }

    #[test]
    fn expected_verdict_per_release_line() {
        let fixed = ReleaseSet::new(vec![v("v1.32.9+k3s1"), v("v1.33.5+k3s1")]);
        let verdict = |s: &str| expected(&fixed, &v(s)).0;
        assert_eq!(verdict("v1.33.4+k3s1"), Some(Outcome::Reproduced));
        assert_eq!(verdict("v1.33.4-rc1+k3s1"), Some(Outcome::Reproduced));
        assert_eq!(verdict("v1.33.5+k3s1"), Some(Outcome::Fixed));
        assert_eq!(verdict("v1.33.6-rc1+k3s1"), Some(Outcome::Fixed));
        assert_eq!(verdict("v1.34.0+k3s1"), Some(Outcome::Fixed));
        let (verdict, why) = expected(&fixed, &v("v1.31.12+k3s1"));
        assert_eq!(verdict, Some(Outcome::Reproduced));
        assert!(why.contains("older than every line"), "{why}");
        assert_eq!(
            expected(&ReleaseSet::default(), &v("v1.20.0+k3s1")).0,
            Some(Outcome::Fixed)
        );
        // A candidate of a first fixed release: placed only by evidence.
        let (verdict, why) = expected(&fixed, &v("v1.33.5-rc1+k3s1"));
        assert_eq!(verdict, None);
        assert!(why.contains("pass --expect"), "{why}");
        let placed = fixed.clone().with_candidates(vec![v("v1.33.5-rc2+k3s1")]);
        assert_eq!(
            expected(&placed, &v("v1.33.5-rc1+k3s1")).0,
            Some(Outcome::Reproduced)
        );
        let (verdict, why) = expected(&placed, &v("v1.33.5-rc2+k3s1"));
        assert_eq!(verdict, Some(Outcome::Fixed));
        assert!(why.contains("first candidate of v1.33.5+k3s1"), "{why}");
    }

    #[test]
    fn a_regression_is_expected_fixed_before_the_release_that_introduced_it() {
        // split-restart-all (k3s #13533): introduced in the January 2026 candidates, fixed in
        // the releases; the December release never had it.
        let cat = catalog();
        let sc = cat.scenario("split-restart-all", None).expect("scenario");
        for (s, want) in [
            ("v1.33.5+k3s1", Outcome::Fixed),
            ("v1.33.7+k3s1", Outcome::Fixed),
            ("v1.33.7-rc1+k3s3", Outcome::Reproduced),
            ("v1.33.7+k3s3", Outcome::Fixed),
            ("v1.32.11-rc1+k3s3", Outcome::Reproduced),
            ("v1.31.14+k3s1", Outcome::Fixed),
        ] {
            expect_verdict(&sc, s, want);
        }
        let p = plan(&sc, &v("v1.33.5+k3s1"), "img");
        assert!(
            p.expected_because.contains("introduced the bug"),
            "{}",
            p.expected_because
        );
        let none = ReleaseSet::new(vec![v("v1.33.7+k3s3")]);
        let (verdict, _, by) = expected_with(None, &none, &v("v1.33.5+k3s1"));
        assert_eq!((verdict, by), (Some(Outcome::Reproduced), Decider::FixedIn));
    }

    #[test]
    fn release_candidates_of_the_12753_fix() {
        let cat = catalog();
        let sc = cat.scenario("etcd-split", None).expect("scenario");
        for (s, want) in [
            ("v1.33.5-rc1+k3s1", Outcome::Fixed),
            ("v1.32.9-rc1+k3s1", Outcome::Fixed),
            ("v1.33.4-rc1+k3s1", Outcome::Reproduced),
        ] {
            let p = expect_verdict(&sc, s, want);
            assert!(
                p.expected_because.contains("evidence ("),
                "{s}: {}",
                p.expected_because
            );
        }
    }

    /// The plan of `sc` on `version`, asserted to expect `want`.
    fn expect_verdict(sc: &Scenario, version: &str, want: Outcome) -> Plan {
        let p = plan(sc, &v(version), "img");
        assert_eq!(
            p.expected_verdict,
            Some(want),
            "{version}: {}",
            p.expected_because
        );
        p
    }

    fn catalog() -> Catalog {
        Catalog::load(None).expect("built-in files are valid")
    }

    #[test]
    fn plan_tracks_config_through_steps() {
        let cat = catalog();
        let sc = cat.scenario("bootstrap-check", None).expect("scenario");
        let p = plan(&sc, &v("v1.33.4+k3s1"), "img");
        // cp-1 joins etcd-1: it starts with etcd-2, not after it.
        assert_eq!(
            p.start_order,
            vec![
                vec!["etcd-1".to_string()],
                vec!["etcd-2".into(), "cp-1".into()]
            ]
        );
        // Step 3 sets the key on cp-1, step 4 removes it again.
        assert!(p.steps[2].configs["cp-1"].contains("disable-helm-controller: true"));
        assert!(!p.steps[3].configs["cp-1"].contains("disable-helm-controller"));
        assert_eq!(p.steps[3].removed["cp-1"], ["disable-helm-controller"]);
        // Only edited nodes get a re-rendered config.yaml in `edits`.
        assert_eq!(p.steps[1].edits.keys().collect::<Vec<_>>(), ["etcd-3"]);
        assert_eq!(p.expected_verdict, Some(Outcome::Fixed));
    }

    #[test]
    fn notes_name_features_a_version_lacks() {
        let cat = catalog();
        let sc = cat.scenario("metrics-order", None).expect("scenario");
        let p = plan(&sc, &v("v1.27.5+k3s1"), "img");
        assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
        assert!(p.notes[0].contains("`supervisor-metrics`"));
        assert!(plan(&sc, &v("v1.33.4+k3s1"), "img").notes.is_empty());
    }
}
