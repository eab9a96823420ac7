//! `repro report --validation <buggy-run> <fixed-run>`: the comment QA posts when it closes an
//! issue, in the form of the distribution's QA (`Facts::outputs.validation`):
//!
//! - k3s (compare k3s-io/k3s#12816 and #12817): "Validated on <fixed version>", the
//!   environment, the cluster configuration, every node's config.yaml, the testing steps, the
//!   replication on the buggy version, the validation on the fixed one, the observations side
//!   by side, and the commands that re-run both.
//! - RKE2 (rancher/rke2#8875, #8876; docs/rke2-bug-template.md §2): `# Validated on <rc>`,
//!   `Steps:` pointing at the issue, `### Validation` with `rke2 -v`, the cluster's node list,
//!   then the steps and the results of both runs.
//!
//! Both folders are rendered (and so redacted) exactly as `repro report` does; nothing here reads
//! anything else. Whether the pair validates the fix is decided from the two verdicts only.

use indexmap::IndexMap;

use super::cases::{self, Case};
use super::markdown::{install, k3s_banner, numbered_steps, role_label, stand_in_note};
use super::text::and_list;
use super::words;
use super::Rendered;
use crate::raw::Role;
use crate::result::{self as res, RunResult};
use distro::ValidationForm;

/// What the pair of runs shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The buggy run reproduced the bug and the fixed run was fixed.
    Validated,
    /// Anything else: the comment says what is missing.
    NotValidated,
}

/// Which two of several runs a validation compares: the newest run of each version, the
/// version given first being the buggy one; with what was set aside.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pick {
    pub(crate) buggy: usize,
    pub(crate) fixed: usize,
    /// Older runs of either version, left out (index, the one kept instead).
    pub(crate) set_aside: Vec<(usize, usize)>,
}

/// Picks the pair from runs given in order (`results/etcd-split-v1.33.4-k3s1-*` may match
/// several folders: the newest of each version counts). An error says which runs are refused
/// and why (exit 2): one version only (duplicates), more than two, or the two swapped (the
/// buggy one at or past the check's `fixed-in`, or after the fixed one).
pub(crate) fn pick(runs: &[(&str, &RunResult)]) -> Result<Pick, String> {
    // Versions in the order they were given; per version, the runs of it.
    let mut by_version: IndexMap<&str, Vec<usize>> = IndexMap::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        by_version
            .entry(r.k3s.version.as_str())
            .or_default()
            .push(i);
    }
    let names = |ix: &[usize]| -> String {
        and_list(
            &ix.iter()
                .map(|i| format!("`{}`", runs[*i].0))
                .collect::<Vec<_>>(),
        )
    };
    match by_version.len() {
        1 => {
            let (v, ix) = by_version.first().expect("one");
            return Err(format!(
                "duplicate runs: {} are all runs of {v}; give a run on the buggy version and one on the fixed version",
                names(ix)
            ));
        }
        2 => {}
        n => {
            let versions: Vec<String> = by_version.keys().map(|v| v.to_string()).collect();
            return Err(format!(
                "the runs are of {n} versions ({}); give runs of two: the buggy version's first, then the fixed version's",
                and_list(&versions)
            ));
        }
    }
    let newest = |ix: &[usize]| -> usize {
        *ix.iter()
            .max_by(|a, b| runs[**a].1.started_at.cmp(&runs[**b].1.started_at))
            .expect("a run per version")
    };
    let groups: Vec<&Vec<usize>> = by_version.values().collect();
    let (buggy, fixed) = (newest(groups[0]), newest(groups[1]));
    let mut set_aside = Vec::new();
    for (g, kept) in [(groups[0], buggy), (groups[1], fixed)] {
        set_aside.extend(g.iter().filter(|i| **i != kept).map(|i| (*i, kept)));
    }
    let (b, f) = (runs[buggy].1, runs[fixed].1);
    let (bn, fn_) = (runs[buggy].0, runs[fixed].0);
    use crate::outcome::Outcome as O;
    let by_fixed_in = match (b.expected_for_version, f.expected_for_version) {
        (Some(O::Fixed), _) => Some(format!(
            "{} is at or past the check's fixed-in (it expects `fixed` there)",
            b.k3s.version
        )),
        (_, Some(O::Reproduced)) => Some(format!(
            "{} is before the check's fixed-in (it expects `reproduced` there)",
            f.k3s.version
        )),
        _ => None,
    };
    let by_order = || match (
        b.k3s.version.parse::<distro::Version>(),
        f.k3s.version.parse::<distro::Version>(),
    ) {
        (Ok(bv), Ok(fv)) if bv > fv => Some(format!("{bv} is newer than {fv}")),
        _ => None,
    };
    if let Some(why) = by_fixed_in.or_else(by_order) {
        return Err(format!(
            "swapped runs: `{bn}` ({}) was given as the buggy run and `{fn_}` ({}) as the fixed one, but {why}; give the buggy version's run first",
            b.k3s.version, f.k3s.version
        ));
    }
    Ok(Pick {
        buggy,
        fixed,
        set_aside,
    })
}

/// Why a pair cannot be compared at all (exit 2).
pub(crate) fn incompatible(buggy: &RunResult, fixed: &RunResult) -> Option<String> {
    if buggy.distribution != fixed.distribution {
        return Some(format!(
            "the runs are of different distributions ({} and {}); give two runs of one distribution",
            buggy.distribution, fixed.distribution
        ));
    }
    if buggy.check.name != fixed.check.name {
        return Some(format!(
            "the runs are of different checks (`{}` and `{}`); give two runs of one check",
            buggy.check.name, fixed.check.name
        ));
    }
    if buggy.topology.name != fixed.topology.name {
        return Some(format!(
            "the runs used different topologies (`{}` and `{}`); give two runs of one cluster shape",
            buggy.topology.name, fixed.topology.name
        ));
    }
    None
}

/// The comment, and whether the pair validates the fix.
pub(crate) fn render(buggy: &Rendered, fixed: &Rendered) -> (String, Outcome) {
    let (b, f) = (&buggy.result, &fixed.result);
    let verdict = |r: &RunResult| r.verdict.as_ref().map(|v| v.outcome);
    let outcome = if verdict(b) == Some(res::Outcome::Reproduced)
        && verdict(f) == Some(res::Outcome::Fixed)
    {
        Outcome::Validated
    } else {
        Outcome::NotValidated
    };
    let mut o = String::new();
    o.push_str(&format!(
        "<!-- Written by {} {} from runs {} (buggy) and {} (fixed): `repro report --validation <buggy-run> <fixed-run>`. Secrets appear as <REDACTED-n>. -->\n",
        f.tool.name, f.tool.version, b.run_id, f.run_id
    ));
    if f.distribution.facts().outputs.validation == ValidationForm::Short {
        short(&mut o, buggy, fixed, outcome);
        return (o, outcome);
    }
    heading(&mut o, "###", b, f, outcome);
    o.push_str(&format!(
        "Issue: {} — {}.\nReplicated on **{}** (verdict: {}) and validated on **{}** (verdict: {}) with repro check `{}` (`{}`), step for step.\n\n",
        f.check.issue,
        f.check.summary.trim_end_matches('.'),
        b.k3s.version,
        verdict(b).map_or("none", |v| v.as_str()),
        f.k3s.version,
        verdict(f).map_or("none", |v| v.as_str()),
        f.check.name,
        f.check.file
    ));
    for r in [b, f] {
        if r.k3s.stand_in {
            o.push_str(&stand_in_note(r));
        }
    }

    environment(&mut o, b, f);
    cluster(&mut o, f);
    configs(&mut o, f);

    o.push_str("## Testing Steps\n\n");
    install(&mut o, f, false);
    let fixed_cases = cases::cases(f);
    numbered_steps(&mut o, f, &fixed_cases);

    let buggy_cases = cases::cases(b);
    results(&mut o, "Replication", "replication", buggy, &buggy_cases);
    results(&mut o, "Validation", "validation", fixed, &fixed_cases);
    observations(&mut o, b, f, &buggy_cases, &fixed_cases);
    rerun(&mut o, b, f);
    (o, outcome)
}

/// `Validated on <version>`, and on the stand-in the words that say so in the heading itself:
/// quoted alone, "Validated on v1.33.5+k3s1" would claim a real k3s run.
fn heading(o: &mut String, level: &str, b: &RunResult, f: &RunResult, outcome: Outcome) {
    let on = if f.k3s.stand_in || b.k3s.stand_in {
        format!(
            "{} (repro stand-in, not real {})",
            f.k3s.version, f.distribution
        )
    } else {
        f.k3s.version.clone()
    };
    match outcome {
        Outcome::Validated => o.push_str(&format!("{level} Validated on {on}\n\n")),
        Outcome::NotValidated => o.push_str(&format!(
            "{level} Not validated on {on}: {}\n\n",
            why_not(b, f)
        )),
    }
}

fn why_not(b: &RunResult, f: &RunResult) -> String {
    let outcome = |r: &RunResult| r.verdict.as_ref().map(|v| v.outcome);
    let v = |r: &RunResult| outcome(r).map_or("no verdict", crate::outcome::Outcome::as_str);
    let mut parts = Vec::new();
    if outcome(b) != Some(crate::outcome::Outcome::Reproduced) {
        parts.push(format!(
            "the run on {} did not reproduce the bug ({})",
            b.k3s.version,
            v(b)
        ));
    }
    if outcome(f) != Some(crate::outcome::Outcome::Fixed) {
        parts.push(format!(
            "the run on {} was not fixed ({})",
            f.k3s.version,
            v(f)
        ));
    }
    parts.join("; ")
}

fn environment(o: &mut String, b: &RunResult, f: &RunResult) {
    o.push_str("## Environment Details\n\n*Infrastructure*\n- [ ] Cloud\n- [ ] Hosted\n");
    o.push_str(&format!(
        "- [X] Local: one Docker container per node (as k3d runs k3s), {}\n\n",
        if f.k3s.privileged {
            "privileged"
        } else {
            "unprivileged (stand-in image)"
        }
    ));
    o.push_str("*Node(s) CPU architecture, OS, and Version:*\n\n");
    hosts(o, b, f);
    o.push('\n');
}

/// The host of each run, one line each (`replication: x86_64, Debian …, kernel …, 2 CPUs, …`).
fn hosts(o: &mut String, b: &RunResult, f: &RunResult) {
    o.push_str("```\n");
    for (what, r) in [("replication", b), ("validation", f)] {
        let e = &r.environment;
        let mut parts = Vec::new();
        if let Some(a) = &e.arch {
            parts.push(a.clone());
        }
        if let Some(os) = &e.os {
            parts.push(os.clone());
        }
        if let Some(k) = &e.kernel {
            parts.push(format!("kernel {k}"));
        }
        if let Some(c) = e.cpus {
            parts.push(format!("{c} CPUs"));
        }
        if let Some(m) = e.memory_bytes {
            parts.push(format!("{:.1} GiB", m as f64 / (1u64 << 30) as f64));
        }
        if let Some(v) = &e.docker_version {
            let engine = e.engine.map_or("Docker", crate::docker::EngineKind::name);
            parts.push(format!("{engine} {v}"));
        }
        o.push_str(&format!(
            "{what}: {}\n",
            if parts.is_empty() {
                "not recorded".to_string()
            } else {
                parts.join(", ")
            }
        ));
    }
    o.push_str("```\n");
}

fn cluster(o: &mut String, r: &RunResult) {
    o.push_str("*Cluster Configuration:*\n\n```\n");
    let mut counts: IndexMap<&str, Vec<String>> = IndexMap::new();
    for n in &r.topology.nodes {
        counts
            .entry(role_label(n.role))
            .or_default()
            .push(n.name.clone());
    }
    for (label, names) in counts {
        let plural = if names.len() == 1 { "" } else { "s" };
        o.push_str(&format!(
            "{} {label}{plural} ({})\n",
            names.len(),
            names.join(", ")
        ));
    }
    o.push_str("```\n\n");
    // QA lists the nodes with their roles as `kubectl get nodes` shows them (k3s-io/k3s#8637,
    // #8672): here with how each node's boots went in the validation run.
    o.push_str("*Nodes (validation run):*\n\n");
    node_list(o, r);
}

/// Every node's config.yaml before the first start, as QA lists them; later edits are in the
/// testing steps.
fn configs(o: &mut String, r: &RunResult) {
    o.push_str("*Config.yaml:* (before the first start; the testing steps add and remove keys)\n\n```yaml\n");
    if let Some(first) = r.configs.get("0") {
        let mut first_node = true;
        for (node, content) in first {
            if !first_node {
                o.push('\n');
            }
            first_node = false;
            o.push_str(&format!("# {node}\n"));
            for line in content
                .lines()
                .filter(|l| !super::markdown::is_repro_header(l))
            {
                o.push_str(line);
                o.push('\n');
            }
        }
    }
    o.push_str(&format!(
        "# token: set through {} (redacted)\n```\n\n",
        r.distribution.facts().token_env
    ));
}

/// `**Replication Results:**` / `**Validation Results:**`: k3s -v, the verdict, and what the
/// logs showed where the bug makes a difference.
fn results(o: &mut String, title: &str, what: &str, run: &Rendered, all: &[Case<'_>]) {
    let r = &run.result;
    o.push_str(&format!(
        "**{title} Results:**\n- {} version used for {what}:\n\n",
        r.distribution.facts().binary
    ));
    version_block(o, run, "\n");
    verdict_line(o, r);
    told(o, run, all);
    o.push('\n');
}

/// A line per case where the bug makes a difference, and per case that differed from both
/// worlds: what the run observed there.
fn told(o: &mut String, run: &Rendered, all: &[Case<'_>]) {
    let told = all
        .iter()
        .filter(|c| c.in_bug_signature() || c.outcome != cases::Outcome::Pass);
    for c in told {
        if let Some(ob) = c.obs {
            o.push_str(&format!(
                "- step {}, {} `{}` **{}**: {}.\n",
                c.step,
                c.node,
                c.signal,
                ob.observed,
                words::observation(&run.result, ob, &run.logs)
            ));
        }
    }
}

/// Every expectation side by side: correct value, buggy run, fixed run.
fn observations(
    o: &mut String,
    b: &RunResult,
    f: &RunResult,
    buggy: &[Case<'_>],
    fixed: &[Case<'_>],
) {
    o.push_str(&format!(
        "**Observations:**\n\n| Step | Node | Signal | Correct | {} | {} |\n|---|---|---|---|---|---|\n",
        b.k3s.version, f.k3s.version
    ));
    let cell = |cs: &[Case<'_>], c: &Case<'_>| -> String {
        let Some(x) = cs
            .iter()
            .find(|x| x.step == c.step && x.node == c.node && x.signal == c.signal)
        else {
            return "—".to_string();
        };
        match x.obs {
            None => "not reached".to_string(),
            Some(ob) if x.shows_bug() => format!("**{}** (the bug, boot {})", ob.observed, ob.boot),
            Some(ob) if !x.expected.matches(&ob.observed) => {
                format!("**{}** (boot {})", ob.observed, ob.boot)
            }
            Some(ob) => format!("{} (boot {})", ob.observed, ob.boot),
        }
    };
    for c in fixed {
        o.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            c.step,
            c.node,
            c.signal,
            c.expected,
            cell(buggy, c),
            cell(fixed, c)
        ));
    }
    let differs: Vec<String> = fixed
        .iter()
        .filter(|c| c.in_bug_signature())
        .map(|c| format!("step {} {} `{}`", c.step, c.node, c.signal))
        .collect();
    if !differs.is_empty() {
        o.push_str(&format!(
            "\nThe bug changes {} of these: {}.\n",
            differs.len(),
            and_list(&differs)
        ));
    }
    o.push('\n');
}

/// RKE2 QA's form (rancher/rke2#8875): the heading, `Steps:`, `### Validation` with the version
/// command and the node list, then what QA's comment goes on to show — the steps and the
/// results of both runs — so the comment stands alone where QA's links to another comment.
fn short(o: &mut String, buggy: &Rendered, fixed: &Rendered, outcome: Outcome) {
    let (b, f) = (&buggy.result, &fixed.result);
    let verdict = |r: &RunResult| r.verdict.as_ref().map_or("none", |v| v.outcome.as_str());
    heading(o, "#", b, f, outcome);
    o.push_str(&format!(
        "Steps: {} — repro check `{}` (`{}`), below; replicated on **{}** (verdict: {}) and validated on **{}** (verdict: {}), step for step.\n\n",
        f.check.issue,
        f.check.name,
        f.check.file,
        b.k3s.version,
        verdict(b),
        f.k3s.version,
        verdict(f)
    ));
    for r in [b, f] {
        if r.k3s.stand_in {
            o.push_str(&stand_in_note(r));
        }
    }
    o.push_str("### Validation\n");
    version_block(o, fixed, "");
    o.push_str(&format!(
        "- Cluster status (repro topology `{}`, one container per node; roles as `kubectl get nodes` shows them, boots from the run)\n",
        f.topology.name
    ));
    node_list(o, f);
    o.push_str(&format!(
        "- Environment (every node a {} container on one host)\n",
        if f.k3s.privileged {
            "privileged"
        } else {
            "unprivileged (stand-in)"
        }
    ));
    hosts(o, b, f);
    o.push('\n');

    o.push_str("- Steps\n\n");
    install(o, f, true);
    let fixed_cases = cases::cases(f);
    numbered_steps(o, f, &fixed_cases);

    let buggy_cases = cases::cases(b);
    o.push_str("- Results\n\n");
    short_results(o, "Replication", buggy, &buggy_cases);
    short_results(o, "Validation", fixed, &fixed_cases);
    observations(o, b, f, &buggy_cases, &fixed_cases);
    rerun(o, b, f);
}

/// How to run both again, and which runs these were.
fn rerun(o: &mut String, b: &RunResult, f: &RunResult) {
    o.push_str("**Re-run:**\n\n```sh\n");
    o.push_str(&format!("{}\n{}\n", b.rerun, f.rerun));
    o.push_str("```\n\n");
    o.push_str(&format!(
        "Runs: `{}` (buggy, {}), `{}` (fixed, {}). Each results folder holds result.json, junit.xml, report.md, timeline.html and a redacted bundle.tar.gz with every boot's log.\n",
        b.run_id,
        b.finished_at.as_deref().unwrap_or(&b.started_at),
        f.run_id,
        f.finished_at.as_deref().unwrap_or(&f.started_at),
    ));
}

/// The version command's output as QA pastes it (`$ rke2 -v` and both lines), or the banner it
/// was read from.
fn version_block(o: &mut String, run: &Rendered, gap: &str) {
    let r = &run.result;
    let facts = r.distribution.facts();
    let cmd = facts.version_command.join(" ");
    // `$ k3s -v` only over what k3s -v printed; otherwise say where the version comes from.
    match (&r.k3s.version_output, k3s_banner(r.distribution, &run.logs)) {
        (Some(v), _) if !v.trim().is_empty() => {
            o.push_str(&format!("```\n$ {cmd}\n{}\n```\n{gap}", v.trim_end()));
        }
        (_, Some(b)) => o.push_str(&format!(
            "```\n{b}\n```\n{gap}(from the log banner: the run did not record `{cmd}`)\n{gap}"
        )),
        _ => o.push_str(&format!(
            "```\n{} version {}\n```\n{gap}(the version asked for: no banner in the logs)\n{gap}",
            facts.binary, r.k3s.version
        )),
    }
}

/// `Verdict **reproduced**: why.`, or why there is none, and a blank line.
fn verdict_line(o: &mut String, r: &RunResult) {
    match &r.verdict {
        Some(v) => o.push_str(&format!(
            "Verdict **{}**: {}.\n\n",
            v.outcome,
            v.reason.trim_end_matches('.')
        )),
        None => o.push_str(&format!(
            "No verdict: {}.\n\n",
            r.error
                .as_deref()
                .unwrap_or("the run stopped before deciding")
        )),
    }
}

/// The ROLES column of `kubectl get nodes` on k3s and RKE2 (node-role labels: etcd-only
/// servers `etcd`, control-plane-only `control-plane,master`, agents `<none>`; rancher/rke2#8875).
fn kubectl_roles(role: Role) -> &'static str {
    match role {
        Role::Etcd => "etcd",
        Role::ControlPlane => "control-plane,master",
        Role::All => "control-plane,etcd,master",
        Role::Agent => "<none>",
    }
}

/// Every node with its roles and how its last boot went: what the run saw, not a `kubectl`
/// listing (etcd-only nodes have no apiserver to ask).
fn node_list(o: &mut String, r: &RunResult) {
    let w = r
        .topology
        .nodes
        .iter()
        .map(|n| n.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    o.push_str(&format!(
        "```\n{:<w$}   {:<25}{:<7}LAST BOOT\n",
        "NAME", "ROLES", "BOOTS"
    ));
    for n in &r.topology.nodes {
        let boots: Vec<&res::BootRecord> = r.boots.iter().filter(|b| b.node == n.name).collect();
        let last = match boots.last() {
            None => "never started".to_string(),
            Some(b) => {
                let ready = if b.ready_at.is_some() {
                    "ready"
                } else {
                    "never ready"
                };
                let end = match (b.end, b.exit_code) {
                    (res::BootEnd::Running, _) => "still running when the run ended".to_string(),
                    (res::BootEnd::Stopped, _) => "then stopped by repro".to_string(),
                    (res::BootEnd::Exited, Some(c)) => format!("then exited ({c})"),
                    (e, _) => format!("then {}", e.as_str()),
                };
                format!("{ready}, {end}")
            }
        };
        o.push_str(&format!(
            "{:<w$}   {:<25}{:<7}{last}\n",
            n.name,
            kubectl_roles(n.role),
            boots.len()
        ));
    }
    o.push_str("```\n\n");
}

/// One run's results: its version command, its verdict, and the values the bug changes.
fn short_results(o: &mut String, title: &str, run: &Rendered, all: &[Case<'_>]) {
    let r = &run.result;
    o.push_str(&format!("**{title} on {}:**\n", r.k3s.version));
    version_block(o, run, "");
    o.push('\n');
    verdict_line(o, r);
    told(o, run, all);
    o.push('\n');
}
