//! Known bugs recognised in old logs, from the check files alone.
//!
//! Every `bug:` entry of a check step is a bug signature: on a node of that role, placed in the
//! cluster as the check's node is (joined to another server, or the one that started it), with
//! the config keys the check gave that node by then, a k3s version the check's `fixed-in` does
//! not cover, the signal shows the bug's value instead of the expected one. A boot that shows the
//! bug's value and contradicts nothing of the rest is a finding: `matches` when every part is
//! known, `possible` (with what would be needed) when some part cannot be told from the input.

use indexmap::IndexMap;

use super::config::{same, NodeConfig};
use super::deps::{Catalog, ConfigValue, Expected, Observed, ReleaseSet, Role, Signals, Version};
use super::model::{BootReport, Condition, EvidenceLine, Finding, FindingVerdict, Source};

#[derive(Debug, Clone)]
pub(crate) struct Signature {
    pub(crate) check: String,
    pub(crate) issue: String,
    pub(crate) summary: String,
    pub(crate) fixed_in: ReleaseSet,
    /// For a regression: the releases that have its cause (`introduced-in`); `None`, every
    /// release before the fix.
    pub(crate) introduced_in: Option<ReleaseSet>,
    pub(crate) signal: String,
    pub(crate) bug: String,
    pub(crate) expect: String,
    pub(crate) role: Role,
    /// The check's node joined another server (`server:`); false for the node that started the
    /// cluster.
    pub(crate) joins: bool,
    /// The config keys the check gave the node (topology and steps, not the derived ones).
    pub(crate) keys: IndexMap<String, ConfigValue>,
    /// Files the check's topology wrote on the node (a log cannot show them).
    pub(crate) files: Vec<String>,
    /// Everything else the check says about the same boot under the bug (the step's `expect`
    /// with the `bug` entries in place, over every step since the node's last start): e.g.
    /// `ready: up` — a node that died does not show this bug, whatever its registry did.
    pub(crate) with: IndexMap<String, String>,
}

impl Signature {
    /// The same bug seen the same way: one finding, whichever check first wrote it down (two
    /// checks of one issue — etcd-split and split-upgrade, both #12753 — would otherwise
    /// report each boot twice).
    fn same_as(&self, o: &Signature) -> bool {
        (self.check == o.check || self.issue == o.issue)
            && self.signal == o.signal
            && self.bug == o.bug
            && self.role == o.role
            && self.joins == o.joins
            && self.keys == o.keys
            && self.with == o.with
    }
}

/// Every distinct bug signature of every check.
pub(crate) fn signatures(cat: &Catalog) -> Vec<Signature> {
    let mut out: Vec<Signature> = Vec::new();
    for (check, _) in &cat.checks {
        let Some(topo) = cat.topology(&check.topology) else {
            continue;
        };
        let mut keys = topo.node_keys();
        // What each node's current boot is expected to show under the bug, so far.
        let mut world: IndexMap<String, IndexMap<String, String>> = IndexMap::new();
        for step in &check.steps {
            for node in step.booted_nodes() {
                world.shift_remove(node);
            }
            // The step's expectations with the bug's entries in their place; `any` (the bug
            // can show either value) says nothing.
            for (node, sigs) in &step.expect {
                let w = world.entry(node.clone()).or_default();
                for (sig, v) in sigs {
                    let v = step.bug.get(node).and_then(|b| b.get(sig)).unwrap_or(v);
                    match v {
                        Expected::Any => w.shift_remove(sig),
                        v => w.insert(sig.clone(), v.as_str().to_string()),
                    };
                }
            }
            step.apply_keys(&mut keys);
            for (node, sigs) in &step.bug {
                let Some(n) = topo.node(node) else { continue };
                for (signal, bug) in sigs {
                    let Some(expect) = step.expect.get(node).and_then(|e| e.get(signal)) else {
                        continue;
                    };
                    if expect == bug || *bug == Expected::Any {
                        continue;
                    }
                    let files = topo.files.keys().chain(n.files.keys()).cloned().collect();
                    let s = Signature {
                        check: check.name.clone(),
                        issue: check.issue.clone(),
                        summary: check.summary.clone(),
                        fixed_in: check.fixed_in.clone(),
                        introduced_in: check.introduced_in.clone(),
                        signal: signal.clone(),
                        bug: bug.as_str().to_string(),
                        expect: expect.as_str().to_string(),
                        role: n.role,
                        joins: n.join.is_some(),
                        keys: keys.get(node).cloned().unwrap_or_default(),
                        files,
                        with: world
                            .get(node)
                            .map(|w| {
                                w.iter()
                                    .filter(|(k, _)| *k != signal)
                                    .map(|(k, v)| (k.clone(), v.clone()))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    };
                    if !out.iter().any(|o| o.same_as(&s)) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

/// What is known about one boot's node for matching.
pub(crate) struct Subject<'a> {
    pub(crate) input: usize,
    pub(crate) node: &'a str,
    pub(crate) boot: &'a BootReport,
    pub(crate) config: Option<&'a NodeConfig>,
    /// The config is the node's (not this boot's own, as a results folder has).
    pub(crate) config_for_all_boots: bool,
    /// How many boots the node has.
    pub(crate) boots: usize,
}

/// The role a boot's node has: from its config, else from the boot itself.
pub(crate) fn role_of(
    boot: &BootReport,
    config: Option<&NodeConfig>,
) -> (Option<Role>, Option<String>) {
    // The boot's distribution as its log told it (k3s when nothing did).
    let distro = boot
        .distribution
        .as_deref()
        .and_then(distro::Distro::from_name)
        .unwrap_or(distro::Distro::K3s);
    if boot.start.as_ref().is_some_and(|m| {
        m.text
            .contains(distro.facts().agent_banner_prefix.trim_end())
    }) {
        return (Some(Role::Agent), Some("agent banner".into()));
    }
    if let Some(c) = config {
        if let Some(r) = c.server_role(distro) {
            return (Some(r), Some("config".into()));
        }
    }
    let complete = boot
        .signals
        .get(super::deps::ROLES_SIGNAL)
        .is_some_and(|s| s.complete == Some(true));
    if !complete {
        return (None, None);
    }
    let has = |r: &str| boot.roles.iter().any(|x| x == r);
    let role = match (has(Role::Etcd.as_str()), has(Role::ControlPlane.as_str())) {
        (true, true) => Some(Role::All),
        (true, false) => Some(Role::Etcd),
        (false, true) => Some(Role::ControlPlane),
        (false, false) => None,
    };
    (role, role.map(|_| "log (roles)".to_string()))
}

fn fixed_text(set: &ReleaseSet, v: Option<&Version>) -> Option<String> {
    if set.firsts.is_empty() {
        return None;
    }
    if let Some(first) = v.and_then(|v| set.first_in_line(v)) {
        return Some(first.to_string());
    }
    let all: Vec<String> = set.firsts.iter().map(ToString::to_string).collect();
    Some(match v {
        Some(v) => format!(
            "no fix on the {}.{} line; fixed in {}",
            v.major,
            v.minor,
            all.join(", ")
        ),
        None => all.join(", "),
    })
}

/// The findings for one boot.
pub(crate) fn match_boot(s: &Subject, sigs: &[Signature], signals: &Signals) -> Vec<Finding> {
    let mut out = Vec::new();
    for sig in sigs {
        let Some(obs) = s.boot.signals.get(&sig.signal) else {
            continue;
        };
        if obs.state.as_str() != sig.bug {
            continue;
        }
        let mut g = Gathered {
            evidence: obs.evidence.clone(),
            ..Gathered::default()
        };
        let release = g.version(s, sig, signals);
        g.with_signals(s, sig);
        g.role(s, sig);
        g.place(s, sig);
        if g.conditions.iter().any(|c| c.holds == Some(false)) {
            continue;
        }
        out.push(finding(s, sig, obs, g, release));
    }
    one_per_signal(out)
}

/// What one signature's conditions found in a boot: each condition, what is still needed to
/// decide the undecided ones, and the lines that show the ones that hold.
#[derive(Default)]
struct Gathered {
    conditions: Vec<Condition>,
    needs: Vec<String>,
    evidence: Vec<EvidenceLine>,
}

/// The boot's version as parsed, and the fix's release in words for it.
struct Release {
    version: Option<Version>,
    fixed: Option<String>,
}

impl Gathered {
    /// The version: before the fix on its release line, and with the feature at all.
    fn version(&mut self, s: &Subject, sig: &Signature, signals: &Signals) -> Release {
        let version: Option<Version> = s.boot.version.as_deref().and_then(|v| v.parse().ok());
        let fixed = fixed_text(&sig.fixed_in, version.as_ref());
        let want = match &fixed {
            Some(f) if version.is_some() && !f.starts_with("no fix") => format!("before {f}"),
            Some(_) => "a release without the fix".to_string(),
            None => "any (the check names no fixed version)".to_string(),
        };
        let holds = version.as_ref().map(|v| {
            !sig.fixed_in.contains(v)
                && sig.introduced_in.as_ref().is_none_or(|i| i.contains(v))
                && signals.get(&sig.signal).is_none_or(|def| def.exists_in(v))
        });
        let program =
            (s.boot.distribution.as_deref()).unwrap_or(distro::Distro::default().facts().binary);
        if holds.is_none() {
            self.needs.push(format!(
                "the {program} version of this boot (its start banner, or `{program} -v` output)"
            ));
        } else if let Some(v) = s.boot.signals.get(super::deps::VERSION_SIGNAL) {
            self.evidence.extend(v.evidence.iter().cloned());
        }
        self.conditions.push(Condition {
            what: format!("{program} version"),
            want,
            found: s.boot.version.clone(),
            holds,
            from: version.as_ref().map(|_| "log".into()),
        });
        Release { version, fixed }
    }

    /// The rest of what the bug looks like in this boot (e.g. the node still got ready).
    fn with_signals(&mut self, s: &Subject, sig: &Signature) {
        for (other, want) in &sig.with {
            let state = s.boot.signals.get(other).map(|o| &o.state);
            let holds = match state {
                None | Some(Observed::Unknown) => None,
                Some(f) => Some(f.as_str() == want),
            };
            let found = state.map(ToString::to_string);
            if holds.is_none() {
                self.needs.push(format!(
                    "whether `{other}` is {want} in this boot (the log does not show it)"
                ));
            } else if holds == Some(true) {
                if let Some(o) = s.boot.signals.get(other) {
                    self.evidence.extend(o.evidence.iter().cloned());
                }
            }
            self.conditions.push(Condition {
                what: format!("signal `{other}`"),
                want: want.clone(),
                found,
                holds,
                from: Some("log".into()),
            });
        }
    }

    /// The role.
    fn role(&mut self, s: &Subject, sig: &Signature) {
        let (role, from) = role_of(s.boot, s.config);
        let holds = role.map(|r| r == sig.role);
        if holds.is_none() {
            // k3s's role keys in words (an allowed exception to "facts only in distro/": inspect
            // reads k3s's files, see inspect/boots.rs).
            self.needs.push(format!(
                "the node's role ({} in the check): its config (`disable-*` keys), or a log that shows the boot settled",
                sig.role.as_str()
            ));
        }
        self.conditions.push(Condition {
            what: "role".into(),
            want: sig.role.as_str().into(),
            found: role.map(|r| r.as_str().to_string()),
            holds,
            from,
        });
    }

    /// Its place in the cluster, and the keys the check gave it.
    fn place(&mut self, s: &Subject, sig: &Signature) {
        let label = s.config.map(|c| c.files.join(", "));
        let server = s.config.map(|c| {
            c.get("server")
                .is_some_and(|v| !v.to_yaml().trim_matches('"').is_empty())
        });
        self.conditions.push(Condition {
            what: "joined another server".into(),
            want: if sig.joins {
                "yes (`server:` set)"
            } else {
                "no (it started the cluster)"
            }
            .into(),
            found: server.map(|b| if b { "yes" } else { "no" }.to_string()),
            holds: server.map(|b| b == sig.joins),
            from: label.clone(),
        });
        if s.config.is_none() {
            self.needs.push(format!(
                "the node's config (give it with `--config {}=FILE`): does it {}set {}?",
                s.node,
                if sig.joins {
                    "join another server (`server:`) and "
                } else {
                    ""
                },
                sig.keys
                    .iter()
                    .map(|(k, v)| format!("`{k}: {}`", v.to_yaml()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for (k, want) in &sig.keys {
            let (found, holds) = match s.config {
                Some(c) => match c.get(k) {
                    Some(have) => (Some(have.to_yaml()), Some(same(have, want))),
                    // Unset: k3s's default, which is off for the boolean features checks use.
                    None => (None, Some(matches!(want, ConfigValue::Bool(false)))),
                },
                None => (None, None),
            };
            if let (Some(c), Some(true)) = (s.config, holds) {
                if let Some(line) = c.show(k) {
                    self.evidence.push(EvidenceLine {
                        source: Source::Config,
                        file: c.origin.get(k).cloned().or(label.clone()),
                        line: None,
                        time: None,
                        text: line,
                    });
                }
            }
            self.conditions.push(Condition {
                what: format!("config `{k}`"),
                want: want.to_yaml(),
                found,
                holds,
                from: label.clone(),
            });
        }
    }
}

/// The finding of a signature none of whose conditions failed: a match when all hold, else a
/// possible match saying what it needs.
fn finding(
    s: &Subject,
    sig: &Signature,
    obs: &super::model::SignalReport,
    g: Gathered,
    release: Release,
) -> Finding {
    let Release { version, fixed } = release;
    let all = g.conditions.iter().all(|c| c.holds == Some(true));
    let fixed_note = fixed
        .as_ref()
        .map(|f| {
            if f.starts_with("no fix") {
                format!(" ({f})")
            } else {
                format!(" (fixed in {f})")
            }
        })
        .unwrap_or_default();
    let message = if all {
        format!("matches {}{fixed_note}", sig.issue)
    } else {
        format!(
            "possibly matches {}{fixed_note}: needs {}",
            sig.issue,
            g.needs.join("; ")
        )
    };
    let mut uniq: Vec<EvidenceLine> = Vec::new();
    for e in g.evidence {
        if !uniq.contains(&e) {
            uniq.push(e);
        }
    }
    Finding {
        check: sig.check.clone(),
        issue: sig.issue.clone(),
        summary: sig.summary.clone(),
        verdict: if all {
            FindingVerdict::Matches
        } else {
            FindingVerdict::Possible
        },
        message,
        input: s.input,
        node: s.node.to_string(),
        boot: s.boot.boot,
        signal: sig.signal.clone(),
        observed: obs.state.clone(),
        reason: obs.reason.clone(),
        expected: sig.expect.clone(),
        version: s.boot.version.clone(),
        fixed_in: fixed.filter(|f| !f.starts_with("no fix") && version.is_some()),
        conditions: g.conditions,
        needs: g.needs,
        assumes: sig
            .files
            .iter()
            .map(|f| format!("{f} as the check's cluster had it (a log cannot show files)"))
            .chain(
                s.config
                    .filter(|_| s.config_for_all_boots && s.boots > 1)
                    .map(|_| {
                        "the config given was the node's config in this boot too (one config is applied to every boot; a boot before a config change is judged with it)".to_string()
                    }),
            )
            .collect(),
        evidence: uniq,
    }
}

/// One finding per check, signal and boot (several steps can give the same signature); a full
/// match wins over a possible one.
fn one_per_signal(mut out: Vec<Finding>) -> Vec<Finding> {
    out.sort_by_key(|f| f.verdict != FindingVerdict::Matches);
    let mut seen: Vec<(String, String)> = Vec::new();
    out.retain(|f| {
        let key = (f.check.clone(), f.signal.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    out
}
