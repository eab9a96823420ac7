//! `report.md`: the run written up under the headings of its distribution's own bug-report
//! template (`Facts::outputs`: k3s-io/k3s's or rancher/rke2's `.github/ISSUE_TEMPLATE/
//! bug_report.md`, the same headings with the product's name and version command), so it can be
//! pasted into an issue as is.
//!
//! Everything comes from `result.json` and the boot logs; nothing here knows about particular
//! signals, so a new check gets a sensible report without code changes.

use indexmap::IndexMap;
use regex::Regex;

use super::cases::{self, Case, Outcome};
use super::text::{self, and_list, clock, shorten};
use super::{mermaid, words};
use crate::raw::Role;
use crate::result::{BootEnd, BootRecord, RunResult};

/// Evidence lines longer than this are cut in the report (the full line is in the bundle's log).
const LINE_MAX: usize = 220;
/// Lines of a boot's log quoted when the boot died on its own.
const TAIL_LINES: usize = 15;

/// Renders the report. `logs` maps a boot's log path (as in `BootRecord::log`) to its text.
pub(crate) fn render(r: &RunResult, logs: &IndexMap<String, String>) -> String {
    let r = &one_line_fields(r);
    let all = cases::cases(r);
    let mut o = String::new();
    o.push_str(&format!(
        "<!-- Written by {} {} from result.json of run {}; `repro report <folder>` writes it again. Secrets appear as <REDACTED-n>. -->\n\n",
        r.tool.name, r.tool.version, r.run_id
    ));
    o.push_str(&format!("# {}\n\n", r.check.summary));
    o.push_str(&format!("{}\n\n", headline(r)));
    if r.k3s.stand_in {
        o.push_str(&stand_in_note(r));
    }
    environment(&mut o, r, logs);
    cluster(&mut o, r);
    describe(&mut o, r);
    steps(&mut o, r, &all);
    expected(&mut o, r, &all);
    actual(&mut o, r, &all, logs);
    context(&mut o, r, &all, logs);
    o
}

/// `r` with every field report.md prints inline (names, reasons, errors, evidence lines) on
/// one line. Descriptions, `why` and file contents keep their lines: they are written as
/// paragraphs and code blocks.
fn one_line_fields(r: &RunResult) -> RunResult {
    let mut r = r.clone();
    let c = &mut r.check;
    for f in [&mut c.name, &mut c.issue, &mut c.summary, &mut c.file] {
        text::one_line(f);
    }
    for s in &mut r.planned_steps {
        text::one_line(&mut s.name);
    }
    for s in &mut r.steps {
        text::one_line(&mut s.name);
        for o in &mut s.observations {
            text::one_line(&mut o.reason);
            for e in &mut o.evidence {
                text::one_line(&mut e.text);
            }
        }
    }
    if let Some(v) = &mut r.verdict {
        text::one_line(&mut v.reason);
        v.differences.iter_mut().for_each(text::one_line);
    }
    if let Some(e) = &mut r.error {
        text::one_line(e);
    }
    for f in [
        &mut r.k3s.version,
        &mut r.k3s.image,
        &mut r.run_id,
        &mut r.rerun,
    ] {
        text::one_line(f);
    }
    if let Some(b) = &mut r.build {
        for f in [&mut b.path, &mut b.reported, &mut b.installed_at] {
            text::one_line(f);
        }
    }
    r
}

fn headline(r: &RunResult) -> String {
    use crate::outcome::Outcome as RunOutcome;
    let name = r.distribution.name();
    let what = match r.verdict.as_ref().map(|v| v.outcome) {
        Some(RunOutcome::Reproduced) => format!("**reproduced**: {name} showed the documented bug"),
        Some(RunOutcome::Fixed) => format!("**fixed**: {name} behaved correctly at every step"),
        Some(RunOutcome::Inconclusive) => format!(
            "**inconclusive**: {name} showed neither the correct behaviour nor the documented bug"
        ),
        None => "**no verdict**: the run stopped before it could decide".to_string(),
    };
    // A build under test's own version is the run's (a commit build's names no release).
    let version = r.build.as_ref().map_or(&r.k3s.version, |b| &b.reported);
    format!(
        "Reproduction of {} on {name} {} — {}.",
        r.check.issue, version, what
    )
}

pub(super) fn stand_in_note(r: &RunResult) -> String {
    let name = r.distribution.name();
    format!(
        "> [!WARNING]\n> This run used repro's {name} **stand-in** (`{}`), a small program that imitates the {name} behaviour repro \
         observes. It is **not real {name}**. Confirm the result on `{}:{}` before reporting it upstream.\n\n",
        r.k3s.image,
        r.distribution.facts().image_repository,
        r.k3s.version.replace('+', "-")
    )
}

/// `k3s version v1.33.4+k3s1 (abcdef12)` from the first banner in the logs, as `k3s -v` prints it.
pub(super) fn k3s_banner(
    distro: distro::Distro,
    logs: &IndexMap<String, String>,
) -> Option<String> {
    let facts = distro.facts();
    // The commit in parentheses is a hex id on real k3s; the stand-in says `(repro-sim)`.
    let re = Regex::new(&format!(
        r"{}(?:{})?(v[0-9][^ ]*) \(([0-9A-Za-z-]+)\)",
        regex::escape(facts.banner_prefix),
        regex::escape(
            facts
                .agent_banner_prefix
                .strip_prefix(facts.banner_prefix)
                .unwrap_or_default()
        )
    ))
    .ok()?;
    logs.values().find_map(|t| {
        re.captures(t)
            .map(|c| format!("{} version {} ({})", facts.binary, &c[1], &c[2]))
    })
}

fn environment(o: &mut String, r: &RunResult, logs: &IndexMap<String, String>) {
    let facts = r.distribution.facts();
    let cmd = facts.version_command.join(" ");
    o.push_str(&format!(
        "**Environmental Info:**\n\n{} Version:\n\n",
        facts.outputs.product
    ));
    // `k3s -v` as run in a node container, in full; older results only have the log banner.
    match (&r.k3s.version_output, k3s_banner(r.distribution, logs)) {
        (Some(v), _) if !v.trim().is_empty() => {
            let body = format!("$ {cmd}\n{}", v.trim_end());
            o.push_str(&text::code_block("", &body, ""));
            o.push('\n');
        }
        (_, Some(b)) => o.push_str(&format!(
            "{}\n(from the first boot's log banner: this run did not record `{cmd}`)\n\n",
            text::code_block("", &b, "")
        )),
        _ => o.push_str(&format!(
            "{}\n(the version asked for: no node logged a banner)\n\n",
            text::code_block(
                "",
                &format!("{} version {}", facts.binary, r.k3s.version),
                ""
            )
        )),
    }
    let id = r
        .k3s
        .image_id
        .as_deref()
        .map(|i| format!(" ({i})"))
        .unwrap_or_default();
    let kind = if r.k3s.stand_in {
        format!("repro's stand-in image, not real {}", facts.name)
    } else {
        facts.outputs.image.to_string()
    };
    o.push_str(&format!("Image: `{}`{id} — {kind}.\n\n", r.k3s.image));
    if let Some(b) = &r.build {
        let from = match &b.commit {
            Some(c) => format!("the CI build of commit `{c}`"),
            None => format!("the local build `{}`", b.path),
        };
        o.push_str(&format!(
            "Build under test: {from}, reporting `{}` (sha256 `{}`), copied to `{}` in every node over the image's own binary; the image above is its base.\n\n",
            b.reported, b.sha256, b.installed_at
        ));
    }

    let e = &r.environment;
    o.push_str("Node(s) CPU architecture, OS, and Version:\n\n");
    let mut host = Vec::new();
    if let Some(a) = &e.arch {
        host.push(a.clone());
    }
    if let Some(os) = &e.os {
        host.push(os.clone());
    }
    if let Some(k) = &e.kernel {
        host.push(format!("kernel {k}"));
    }
    let mut machine = Vec::new();
    if let Some(c) = e.cpus {
        machine.push(format!("{c} CPUs"));
    }
    if let Some(m) = e.memory_bytes {
        machine.push(format!("{:.1} GiB memory", m as f64 / (1u64 << 30) as f64));
    }
    let engine = e.engine.map_or("Docker", crate::docker::EngineKind::name);
    let mut docker = match (&e.docker_version, &e.docker_api_version) {
        (Some(v), Some(a)) => format!("{engine} {v} (API {a})"),
        (Some(v), None) => format!("{engine} {v}"),
        _ => engine.to_string(),
    };
    match (&e.cgroup_version, &e.cgroup_driver) {
        (Some(v), Some(d)) => docker.push_str(&format!(", cgroup v{v} ({d})")),
        (Some(v), None) => docker.push_str(&format!(", cgroup v{v}")),
        _ => {}
    }
    o.push_str(&format!(
        "Every node is a container of that image on one {docker} host at `{}`: {}{}.\n\n",
        e.docker_host,
        if host.is_empty() {
            "host details not recorded".to_string()
        } else {
            host.join(", ")
        },
        if machine.is_empty() {
            String::new()
        } else {
            format!("; {}", machine.join(", "))
        }
    ));
}

pub(super) fn role_label(role: Role) -> &'static str {
    match role {
        Role::Etcd => "etcd-only server",
        Role::ControlPlane => "control-plane-only server",
        Role::All => "server (etcd + control plane)",
        Role::Agent => "agent",
    }
}

fn cluster(o: &mut String, r: &RunResult) {
    let facts = r.distribution.facts();
    o.push_str("Cluster Configuration:\n\n");
    let mut counts: IndexMap<&str, usize> = IndexMap::new();
    for n in &r.topology.nodes {
        *counts.entry(role_label(n.role)).or_default() += 1;
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(label, n)| {
            if *n == 1 {
                format!("1 {label}")
            } else {
                format!("{n} {label}s")
            }
        })
        .collect();
    let etcd = if r.topology.nodes.iter().any(|n| n.role.runs_etcd()) {
        ", embedded etcd"
    } else {
        ""
    };
    o.push_str(&format!(
        "{}{etcd} (repro topology `{}`, `{}`).\n\n",
        and_list(&parts),
        r.topology.name,
        r.topology.file
    ));
    o.push_str("| Node | Role | Joins | Role keys in config.yaml |\n|---|---|---|---|\n");
    for n in &r.topology.nodes {
        let joins = match (&n.join, n.init) {
            (_, true) => match facts.role_keys.init {
                Some(k) => format!("— (`{k}: true`)"),
                None => "— (creates the cluster)".to_string(),
            },
            (Some(j), _) => format!("`https://{j}:{}`", facts.supervisor_port),
            (None, _) => "—".to_string(),
        };
        let keys: Vec<String> = n
            .role
            .config_keys(r.distribution)
            .iter()
            .map(|k| format!("`{k}`"))
            .collect();
        let later = if n.deferred {
            " (started by a step)"
        } else {
            ""
        };
        o.push_str(&format!(
            "| {} | {}{later} | {joins} | {} |\n",
            n.name,
            role_label(n.role),
            if keys.is_empty() {
                "—".to_string()
            } else {
                keys.join(", ")
            }
        ));
    }
    o.push('\n');
}

fn describe(o: &mut String, r: &RunResult) {
    o.push_str("**Describe the bug:**\n\n");
    o.push_str(&format!("{}.\n\n", r.check.summary.trim_end_matches('.')));
    let d = r.check.description.trim();
    if !d.is_empty() {
        // The check's description is wrapped for YAML; join its lines back into paragraphs.
        let paras: Vec<String> = d
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        o.push_str(&format!("{}\n\n", paras.join("\n\n")));
    }
    o.push_str(&format!("Issue: {}", r.check.issue));
    if !r.check.sources.is_empty() {
        o.push_str(&format!(" — see also {}", r.check.sources.join(", ")));
    }
    o.push_str("\n\n");
}

/// Start order as it happened: the first boot of each node, by start time.
fn start_order(r: &RunResult) -> Vec<String> {
    let mut first: Vec<&BootRecord> = r
        .boots
        .iter()
        .filter(|b| b.step == 0 && b.boot == 1)
        .collect();
    first.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    if first.is_empty() {
        return r
            .topology
            .nodes
            .iter()
            .filter(|n| !n.deferred)
            .map(|n| n.name.clone())
            .collect();
    }
    first.iter().map(|b| b.node.clone()).collect()
}

fn steps(o: &mut String, r: &RunResult, all: &[Case<'_>]) {
    o.push_str("**Steps To Reproduce:**\n\n");
    install(o, r, true);
    numbered_steps(o, r, all);
}

/// How the cluster was installed and started, with the files written before the first start
/// (every node's first config.yaml too when `configs`: a validation comment lists them apart).
pub(super) fn install(o: &mut String, r: &RunResult, configs: bool) {
    let facts = r.distribution.facts();
    let order: Vec<String> = start_order(r)
        .into_iter()
        .map(|n| match r.topology.nodes.iter().find(|x| x.name == n) {
            Some(x) if x.init => format!("{n} (`{}`)", facts.init_marker()),
            _ => n,
        })
        .collect();
    let container = if r.k3s.privileged {
        "privileged container"
    } else {
        "unprivileged (the image needs no privileges) container"
    };
    o.push_str(&format!(
        "- Installed {}: `{}` {}, the \
         cluster token in `{}`, each node's settings in `{}`. Nodes started in this order, each \
         once the nodes it needs (repro plan's start stages) had logged `{}`: {}.\n",
        facts.outputs.product,
        r.k3s.image,
        facts.outputs.installed.replace("{container}", container),
        facts.token_env,
        facts.config_path,
        facts.ready_line,
        order.join(", then ")
    ));
    if let Some(first) = r.configs.get("0").filter(|_| configs) {
        o.push_str(
            "  <details><summary>config.yaml of each node before the first start</summary>\n\n",
        );
        for (node, content) in first {
            let mut body = format!("# {node}: {}\n", facts.config_path);
            for line in content.lines().filter(|l| !is_repro_header(l)) {
                body.push_str(line);
                body.push('\n');
            }
            o.push_str(&text::code_block("yaml", &body, "  "));
            o.push('\n');
        }
        o.push_str("  </details>\n");
    }
    for (path, content, nodes) in shared_initial_files(r) {
        let who = if nodes.len() == r.initial_files.len() {
            "every node".to_string()
        } else {
            and_list(&nodes)
        };
        o.push_str(&format!("- On {who}, `{path}`:\n"));
        o.push_str(&text::code_block("yaml", &content, "  "));
    }
    o.push('\n');
}

/// The check's steps as a numbered list: edits, restarts and what each step checks.
pub(super) fn numbered_steps(o: &mut String, r: &RunResult, all: &[Case<'_>]) {
    for index in step_indexes(r) {
        let planned = r.planned_steps.iter().find(|p| p.index == index);
        let ran = r.steps.iter().find(|s| s.index == index);
        let name = ran
            .map(|s| s.name.as_str())
            .or(planned.map(|p| p.name.as_str()))
            .unwrap_or_default();
        let why = ran
            .map(|s| s.why.as_str())
            .or(planned.map(|p| p.why.as_str()))
            .unwrap_or_default();
        o.push_str(&format!("{index}. {}", capitalise(name)));
        if !why.is_empty() {
            o.push_str(&format!(" — _{why}_"));
        }
        o.push('\n');
        for line in edit_lines(r, index) {
            o.push_str(&format!("   {line}\n"));
        }
        for line in boot_lines(r, index) {
            o.push_str(&format!("   - {line}\n"));
        }
        let checks = expectations_text(all.iter().filter(|c| c.step == index));
        if !checks.is_empty() {
            o.push_str(&format!("   - Check: {checks}.\n"));
        }
    }
    o.push('\n');
}

pub(super) fn is_repro_header(line: &str) -> bool {
    line.starts_with("# config.yaml for ") && line.contains("rendered by repro")
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Files written before the first start other than config.yaml, grouped by identical content.
fn shared_initial_files(r: &RunResult) -> Vec<(String, String, Vec<String>)> {
    let mut groups: Vec<(String, String, Vec<String>)> = Vec::new();
    for (node, files) in &r.initial_files {
        for (path, content) in files {
            let Some(content) = content else { continue };
            if path == r.distribution.facts().config_path && r.configs.contains_key("0") {
                continue;
            }
            match groups
                .iter_mut()
                .find(|(p, c, _)| p == path && c == content)
            {
                Some(g) => g.2.push(node.clone()),
                None => groups.push((path.clone(), content.clone(), vec![node.clone()])),
            }
        }
    }
    groups
}

fn step_indexes(r: &RunResult) -> Vec<usize> {
    let mut v: Vec<usize> = r
        .planned_steps
        .iter()
        .map(|p| p.index)
        .chain(r.steps.iter().map(|s| s.index))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The config edits of a step as lines to add/remove, nodes with the same edit grouped.
fn edit_lines(r: &RunResult, index: usize) -> Vec<String> {
    let planned = r.planned_steps.iter().find(|p| p.index == index);
    // Which node edited which files: the plan says; else the run's `edit` actions.
    let mut edited: IndexMap<String, Vec<(String, Option<String>)>> = IndexMap::new();
    if let Some(p) = planned {
        for (node, files) in &p.edits {
            edited.insert(
                node.clone(),
                files.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            );
        }
    } else if let Some(s) = r.steps.iter().find(|s| s.index == index) {
        for a in s
            .actions
            .iter()
            .filter(|a| a.kind == crate::result::ActionKind::Edit)
        {
            for n in &a.nodes {
                edited.insert(
                    n.clone(),
                    a.files.iter().map(|f| (f.clone(), None)).collect(),
                );
            }
        }
    }
    let before = r.configs.get(&(index.saturating_sub(1)).to_string());
    let after = r.configs.get(&index.to_string());
    // (description lines) -> nodes, so identical edits read once.
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (node, files) in &edited {
        let mut lines = Vec::new();
        for (path, content) in files {
            if path == r.distribution.facts().config_path {
                let old = before.and_then(|m| m.get(node));
                let new = after.and_then(|m| m.get(node)).or(content.as_ref());
                match (old, new) {
                    (Some(old), Some(new)) => {
                        let (added, removed) = config_diff(old, new);
                        if !added.is_empty() {
                            lines.push(format!("add to `{path}`:"));
                            lines.push(yaml_block(&added));
                        }
                        if !removed.is_empty() {
                            lines.push(format!("remove from `{path}`:"));
                            lines.push(yaml_block(&removed));
                        }
                    }
                    (None, Some(new)) => {
                        lines.push(format!("write `{path}`:"));
                        lines.push(yaml_block(
                            &new.lines()
                                .filter(|l| !is_repro_header(l))
                                .map(str::to_string)
                                .collect::<Vec<_>>(),
                        ));
                    }
                    _ => lines.push(format!("edit `{path}`")),
                }
            } else {
                match content {
                    Some(c) => {
                        lines.push(format!("write `{path}`:"));
                        lines.push(yaml_block(
                            &c.lines().map(str::to_string).collect::<Vec<_>>(),
                        ));
                    }
                    None => lines.push(format!("delete `{path}`")),
                }
            }
        }
        match groups.iter_mut().find(|(l, _)| *l == lines) {
            Some(g) => g.1.push(node.clone()),
            None => groups.push((lines, vec![node.clone()])),
        }
    }
    let mut out = Vec::new();
    for (lines, nodes) in groups {
        let mut first = true;
        for l in lines {
            if l.starts_with("```") {
                for b in l.lines() {
                    out.push(format!("  {b}"));
                }
            } else if first {
                out.push(format!("- On {}, {l}", and_list(&nodes)));
                first = false;
            } else {
                out.push(format!("- Also {l}"));
            }
        }
    }
    out
}

fn yaml_block(lines: &[String]) -> String {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut s = text::code_block("yaml", &body, "");
    s.pop();
    s
}

/// Lines added and removed between two config.yaml texts, repro's header comment aside.
fn config_diff(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    let keep = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.trim().is_empty() && !is_repro_header(l))
            .map(str::to_string)
            .collect()
    };
    let (old, new) = (keep(old), keep(new));
    let added = new.iter().filter(|l| !old.contains(l)).cloned().collect();
    let removed = old.iter().filter(|l| !new.contains(l)).cloned().collect();
    (added, removed)
}

/// "Restart etcd-2 and wait until its new boot is ready" lines: the plan's restart groups, else
/// the run's actions.
fn boot_lines(r: &RunResult, index: usize) -> Vec<String> {
    let planned = r.planned_steps.iter().find(|p| p.index == index);
    let mut starts: Vec<String> = Vec::new();
    let mut groups: Vec<Vec<String>> = Vec::new();
    match planned {
        Some(p) => {
            starts = p.start.clone();
            groups = p.restart.clone();
        }
        None => {
            if let Some(s) = r.steps.iter().find(|s| s.index == index) {
                for a in &s.actions {
                    match a.kind.as_str() {
                        "start" => starts.extend(a.nodes.iter().cloned()),
                        "restart" => groups.push(a.nodes.clone()),
                        _ => {}
                    }
                }
            }
        }
    }
    let mut out: Vec<String> = starts
        .iter()
        .map(|n| format!("Start {n} for the first time and wait until it is ready (or dies)."))
        .collect();
    for (i, g) in groups.iter().enumerate() {
        let then = if i == 0 { "Restart" } else { "Then restart" };
        let line = match g.as_slice() {
            [one] => format!(
                "{then} {one} and wait until its new boot logs `{}` (or dies).",
                r.distribution.facts().ready_line
            ),
            many => format!(
                "{then} {} at the same time and wait until each new boot is ready (or dies).",
                and_list(many)
            ),
        };
        out.push(line);
    }
    out
}

/// `etcd-1 embedded-registry down; etcd-2 ready up, embedded-registry up` for some cases.
fn expectations_text<'a>(cases: impl Iterator<Item = &'a Case<'a>>) -> String {
    let mut by_node: IndexMap<String, Vec<String>> = IndexMap::new();
    for c in cases {
        by_node
            .entry(c.node.clone())
            .or_default()
            .push(format!("`{}` {}", c.signal, c.expected));
    }
    by_node
        .iter()
        .map(|(n, v)| format!("on {n} {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn expected(o: &mut String, r: &RunResult, all: &[Case<'_>]) {
    o.push_str("**Expected behavior:**\n\n");
    o.push_str(&format!(
        "What {} with the fix does, as the check states it: each node acts on its own `config.yaml`, whatever \
         the order in which nodes were changed and restarted. After each step:\n\n",
        r.distribution.name()
    ));
    for index in step_indexes(r) {
        let text = expectations_text(all.iter().filter(|c| c.step == index));
        if !text.is_empty() {
            o.push_str(&format!("- After step {index}: {text}.\n"));
        }
    }
    o.push('\n');
}

fn result_label(c: &Case<'_>) -> &'static str {
    match c.outcome {
        Outcome::Pass => "as expected",
        Outcome::Fail if c.shows_bug() => "**differs: the bug**",
        Outcome::Fail => "**differs**",
        Outcome::Undecided => "undecided",
        Outcome::NotRun => "not reached",
    }
}

fn actual(o: &mut String, r: &RunResult, all: &[Case<'_>], logs: &IndexMap<String, String>) {
    o.push_str("**Actual behavior:**\n\n");
    let (pass, fail, undecided, not_run) = cases::tally(all);
    let bug = all.iter().filter(|c| c.shows_bug()).count();
    let signature = all.iter().filter(|c| c.in_bug_signature()).count();
    match &r.verdict {
        Some(v) => o.push_str(&format!(
            "Verdict **{}**: {}.",
            v.outcome,
            v.reason.trim_end_matches('.')
        )),
        None => o.push_str("No verdict."),
    }
    o.push_str(&format!(" {pass} of {} expectations held", all.len()));
    if fail > 0 {
        let other = fail.saturating_sub(bug);
        let how = if bug == fail {
            "all".to_string()
        } else {
            format!("{bug} of them")
        };
        o.push_str(&format!(
            "; {fail} differed, {how} exactly as the documented bug predicts"
        ));
        if other > 0 {
            o.push_str(&format!(" and {other} in a way it does not"));
        }
    }
    if signature > 0 && bug < signature {
        o.push_str(&format!(
            " ({bug} of the {signature} values the bug changes showed it)"
        ));
    }
    if undecided > 0 {
        o.push_str(&format!("; {undecided} could not be decided"));
    }
    if not_run > 0 {
        o.push_str(&format!("; {not_run} were never reached"));
    }
    o.push_str(".\n");
    if let Some(e) = &r.error {
        o.push_str(&format!("\nThe run stopped early: {e}\n"));
    }
    o.push('\n');
    for index in step_indexes(r) {
        let rows: Vec<&Case<'_>> = all.iter().filter(|c| c.step == index).collect();
        if rows.is_empty() {
            continue;
        }
        o.push_str(&format!("**Step {index}:** {}\n\n", rows[0].step_name));
        o.push_str("| Node | Signal | Expected | Actual | With the bug | Boot | Result |\n|---|---|---|---|---|---|---|\n");
        for c in &rows {
            let observed = if c.outcome == Outcome::Fail {
                format!("**{}**", c.observed())
            } else {
                c.observed().to_string()
            };
            o.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                c.node,
                c.signal,
                c.expected,
                observed,
                c.bug.as_ref().map_or("—", |b| b.as_str()),
                c.obs
                    .map(|o| o.boot.to_string())
                    .unwrap_or_else(|| "—".into()),
                result_label(c)
            ));
        }
        o.push('\n');
        let told: Vec<String> = rows
            .iter()
            .filter_map(|c| {
                c.obs.map(|ob| {
                    format!(
                        "- {} `{}` {}: {}.\n",
                        c.node,
                        c.signal,
                        verdict_words(c),
                        words::observation(r, ob, logs)
                    )
                })
            })
            .collect();
        if !told.is_empty() {
            o.push_str("What the logs show:\n\n");
            for t in told {
                o.push_str(&t);
            }
            o.push('\n');
        }
    }
}

/// `**down** (expected up — the documented bug)`, for the words under a step's table.
fn verdict_words(c: &Case<'_>) -> String {
    match c.outcome {
        Outcome::Pass => format!("{} as expected", c.observed()),
        Outcome::Fail if c.shows_bug() => format!(
            "**{}** (expected {} — the documented bug)",
            c.observed(),
            c.expected
        ),
        Outcome::Fail => format!("**{}** (expected {})", c.observed(), c.expected),
        Outcome::Undecided => format!("undecided (expected {})", c.expected),
        Outcome::NotRun => "not reached".to_string(),
    }
}

fn context(o: &mut String, r: &RunResult, all: &[Case<'_>], logs: &IndexMap<String, String>) {
    o.push_str("**Additional context / logs:**\n\n");
    verdict_and_run(o, r);
    key_log_lines(o, r, all);
    exited_tails(o, r, logs);
    boots_table(o, r);
    let diagram = mermaid::gantt(r, all);
    if !diagram.is_empty() {
        o.push_str(
            "Timeline (UTC; GitHub draws it; `timeline.html` in the bundle has every detail):\n\n",
        );
        o.push_str(&diagram);
        o.push('\n');
    }
    node_logs(o, r, all, logs);

    if !r.timings.is_empty() {
        let parts: Vec<String> = r
            .timings
            .iter()
            .map(|(k, v)| format!("{k} {}", text::human_secs(*v)))
            .collect();
        o.push_str(&format!("Timings: {}.\n\n", parts.join(", ")));
    }
    o.push_str(&format!(
        "Re-run with repro {} (add `--sim` to use the stand-in, `--keep` to keep the cluster):\n\n{}\n",
        r.tool.version,
        text::code_block("sh", &r.rerun, "")
    ));
    o.push_str(
        "Attached `bundle.tar.gz`: this report, `result.json`, `junit.xml`, `timeline.html` (one-page timeline of every \
         boot), each boot's log, each node's `config.yaml` at each step and each container's `docker inspect`, with \
         secrets replaced by `<REDACTED-n>`.\n",
    );
}

/// The verdict against what was asked (and what `fixed-in` predicts), its differences, the exit
/// code and which run of which check by which tool.
fn verdict_and_run(o: &mut String, r: &RunResult) {
    if let Some(v) = &r.verdict {
        let asked = if v.outcome == r.expect {
            "as asked"
        } else {
            "not what was asked"
        };
        o.push_str(&format!(
            "- Verdict: **{}** ({asked}: `--expect {}`",
            v.outcome, r.expect
        ));
        if let Some(e) = &r.expected_for_version {
            o.push_str(&format!(
                "; the check's `fixed-in` predicts {e} for {}",
                r.k3s.version
            ));
        }
        o.push_str(&format!(
            "). Of {} expectations, {} matched the correct behaviour and {} matched what the bug predicts.\n",
            v.expectations, v.matched_expected, v.matched_bug
        ));
        for d in &v.differences {
            o.push_str(&format!("  - {d}\n"));
        }
    }
    if let Some(code) = r.exit_code {
        o.push_str(&format!("- repro exit code: {code}.\n"));
    }
    o.push_str(&format!(
        "- Run `{}`: {}; check `{}`; tool {} {}.\n",
        r.run_id,
        super::timeline::run_span(r),
        r.check.file,
        r.tool.name,
        r.tool.version
    ));
}

/// Each observation's line with the log lines that are its evidence, marked by how it compares.
fn key_log_lines(o: &mut String, r: &RunResult, all: &[Case<'_>]) {
    o.push_str(&format!(
        "\nKey log lines (each node's own {} log; the full logs are in the bundle):\n\n",
        r.distribution.name()
    ));
    let mut key_lines = String::new();
    for c in all {
        let Some(ob) = c.obs else { continue };
        let mark = match c.outcome {
            Outcome::Pass => "ok",
            Outcome::Fail if c.shows_bug() => "BUG",
            Outcome::Fail => "DIFFERS",
            _ => "?",
        };
        key_lines.push_str(&format!(
            "# [{mark}] step {} · {} boot {} · {} = {} (expected {}): {}\n",
            c.step, c.node, ob.boot, c.signal, ob.observed, c.expected, ob.reason
        ));
        for e in &ob.evidence {
            key_lines.push_str(&shorten(&e.text, LINE_MAX));
            key_lines.push('\n');
        }
    }
    o.push_str(&text::code_block("", &key_lines, ""));
    o.push('\n');
}

/// The last log lines of every boot that exited on its own: why it died is usually there.
fn exited_tails(o: &mut String, r: &RunResult, logs: &IndexMap<String, String>) {
    for b in r
        .boots
        .iter()
        .filter(|b| b.end == crate::result::BootEnd::Exited)
    {
        let what = match (b.end.as_str(), b.exit_code) {
            ("exited", Some(c)) => format!("exited on its own with code {c}"),
            ("exited", None) => "exited on its own".to_string(),
            _ => "was not ready in time".to_string(),
        };
        o.push_str(&format!(
            "Last lines of {} boot {} (it {what}):\n\n",
            b.node, b.boot
        ));
        let mut tail = String::new();
        match logs.get(&b.log) {
            Some(t) => {
                let lines: Vec<&str> = t.lines().collect();
                for l in &lines[lines.len().saturating_sub(TAIL_LINES)..] {
                    tail.push_str(&shorten(text::split_docker_time(l).1, LINE_MAX));
                    tail.push('\n');
                }
            }
            None => tail.push_str(&format!("({} is missing)\n", b.log)),
        }
        o.push_str(&text::code_block("", &tail, ""));
        o.push('\n');
    }
}

/// Every boot: where in the run it started, when it was ready and how it ended.
fn boots_table(o: &mut String, r: &RunResult) {
    o.push_str("Boots (times UTC):\n\n| Node | Boot | Started in | Started | Ready | Ended | How it ended |\n|---|---|---|---|---|---|---|\n");
    for b in &r.boots {
        let ready = match &b.ready_at {
            Some(t) => match text::seconds_between(&b.started_at, t) {
                Some(s) => format!("{} (+{})", clock(t), text::human_secs(s)),
                None => clock(t),
            },
            None => "never".to_string(),
        };
        let step = if b.step == 0 {
            "cluster creation".to_string()
        } else {
            format!("step {}", b.step)
        };
        let end = match (b.end.as_str(), b.exit_code) {
            ("exited", Some(c)) => format!("exited ({c})"),
            ("stopped", _) => "stopped by repro".to_string(),
            (e, _) => e.to_string(),
        };
        o.push_str(&format!(
            "| {} | {} | {step} | {} | {ready} | {} | {end} |\n",
            b.node,
            b.boot,
            clock(&b.started_at),
            b.ended_at
                .as_deref()
                .map(clock)
                .unwrap_or_else(|| "—".into()),
        ));
    }
    o.push('\n');
}

/// Per-boot logs longer than this are trimmed to their start, the lines around the evidence and
/// their end.
const LOG_KEEP: usize = 120;
/// Lines kept at each end of a trimmed log, and around each evidence line.
const LOG_HEAD: usize = 30;
const LOG_TAIL: usize = 30;
const LOG_CONTEXT: usize = 3;
/// All inline logs together stay under this many characters (GitHub's limit for an issue or a
/// comment is 65,536); the bundle has the rest.
const LOGS_BUDGET: usize = 30_000;

/// The boots a reader needs to see: those where an observation differed from the correct value
/// or could not be decided, and those that died or hung. In a run where everything held, the
/// boots that show the values the bug would have changed.
fn boots_that_matter<'a>(r: &'a RunResult, all: &[Case<'_>]) -> Vec<&'a BootRecord> {
    let mut keys: Vec<(String, u32)> = all
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Fail | Outcome::Undecided))
        .filter_map(|c| c.obs.map(|o| (o.node.clone(), o.boot)))
        .collect();
    keys.extend(
        r.boots
            .iter()
            .filter(|b| matches!(b.end, BootEnd::Exited | BootEnd::Lost))
            .map(|b| (b.node.clone(), b.boot)),
    );
    if keys.is_empty() {
        keys = all
            .iter()
            .filter(|c| c.in_bug_signature())
            .filter_map(|c| c.obs.map(|o| (o.node.clone(), o.boot)))
            .collect();
    }
    r.boots
        .iter()
        .filter(|b| keys.iter().any(|(n, k)| *n == b.node && *k == b.boot))
        .collect()
}

/// Each boot that matters, its log inline in a `<details>` block (already redacted), trimmed.
fn node_logs(o: &mut String, r: &RunResult, all: &[Case<'_>], logs: &IndexMap<String, String>) {
    let boots = boots_that_matter(r, all);
    if boots.is_empty() {
        return;
    }
    o.push_str(&format!(
        "Logs of the boots that matter ({}'s own lines from {}; secrets redacted; every boot's full log is in the bundle):\n\n",
        r.distribution.name(),
        r.distribution.facts().outputs.log_source
    ));
    let mut budget = LOGS_BUDGET;
    for b in boots {
        let Some(text) = logs.get(&b.log) else {
            o.push_str(&format!(
                "- {} boot {}: `{}` is missing\n\n",
                b.node, b.boot, b.log
            ));
            continue;
        };
        let evidence: Vec<&str> = all
            .iter()
            .filter_map(|c| c.obs)
            .filter(|ob| ob.node == b.node && ob.boot == b.boot)
            .flat_map(|ob| ob.evidence.iter().map(|e| e.text.as_str()))
            .collect();
        let notes: Vec<String> = all
            .iter()
            .filter(|c| {
                c.obs
                    .is_some_and(|ob| ob.node == b.node && ob.boot == b.boot)
            })
            .filter(|c| c.outcome != Outcome::Pass || c.in_bug_signature())
            .map(|c| format!("step {} `{}` {}", c.step, c.signal, c.observed()))
            .collect();
        let (body, total) = trimmed_log(text, &evidence);
        if body.len() > budget {
            o.push_str(&format!(
                "- {} boot {} ({total} lines): left out to keep this report postable; see `{}` in the bundle\n\n",
                b.node, b.boot, b.log
            ));
            continue;
        }
        budget -= body.len();
        let step = if b.step == 0 {
            "cluster creation".to_string()
        } else {
            format!("step {}", b.step)
        };
        o.push_str(&format!(
            "<details><summary>{} boot {} ({step}, {total} lines, {}){}</summary>\n\n",
            b.node,
            b.boot,
            match b.end.as_str() {
                "stopped" => "stopped by repro".to_string(),
                "exited" => format!(
                    "exited on its own{}",
                    b.exit_code
                        .map(|c| format!(" with code {c}"))
                        .unwrap_or_default()
                ),
                e => e.to_string(),
            },
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", notes.join(", "))
            }
        ));
        o.push_str(&text::code_block("", &body, ""));
        o.push_str("\n</details>\n\n");
    }
}

/// A boot's log for the report: k3s's lines (Docker's timestamps dropped, long lines cut),
/// trimmed when long to its start, its end and the lines around the evidence. Returns the text
/// and the number of lines of the whole log.
fn trimmed_log(text: &str, evidence: &[&str]) -> (String, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let mut keep = vec![total <= LOG_KEEP; total];
    if total > LOG_KEEP {
        for (i, l) in lines.iter().enumerate() {
            if i < LOG_HEAD || i + LOG_TAIL >= total {
                keep[i] = true;
            } else if evidence.iter().any(|e| l.ends_with(e)) {
                let hi = (i + LOG_CONTEXT).min(total - 1);
                for k in &mut keep[i.saturating_sub(LOG_CONTEXT)..=hi] {
                    *k = true;
                }
            }
        }
    }
    let mut out = String::new();
    let mut skipped = 0;
    for (i, l) in lines.iter().enumerate() {
        if !keep[i] {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push_str(&format!("… ({skipped} lines left out)\n"));
            skipped = 0;
        }
        out.push_str(&shorten(text::split_docker_time(l).1, LINE_MAX));
        out.push('\n');
    }
    if skipped > 0 {
        out.push_str(&format!("… ({skipped} lines left out)\n"));
    }
    (out, total)
}
