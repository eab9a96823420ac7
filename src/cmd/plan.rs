//! `repro plan <check>`: the whole run on paper, for a reviewer who has never seen the tool.
//!
//! The text reads top to bottom as the run would happen: step 0 creates the cluster (start
//! order and every node's config.yaml), then each step says what it edits, whom it restarts and
//! what it expects, with the bug's values next to the correct ones. Configs that did not change
//! are named, not repeated, to keep a four-step plan on a screen or two.

use crate::cli::{Format, Global, PlanArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::plan::{config_body, critical_path, CriticalPath, Plan, PlannedNode, PlannedStep};
use crate::scenario::Expected;
use crate::table::table;

use super::common::write_stdout;

pub(crate) async fn run(g: &Global, args: &PlanArgs) -> Result<Exit, Error> {
    let mut target = args.target.clone();
    target.no_images_tarball = args.images.no_images_tarball;
    // A build under test decides the version: read (or fetched) before the plan is made.
    super::common::prepare_build(&mut target, crate::cli::Progress::Auto.is_live()).await?;
    let (_sc, p) = super::common::resolve_planning(g.root.as_deref(), &target)?;
    let path = target.sim_pace.map(|f| critical_path(&p, f));
    // The plan prints every config and file of the scenario: the secrets in them are learned
    // whole first, as a run learns them, and printed as the run would write them (issue #24).
    let mut redactor = crate::plan::plan_redactor(&p, &[]);
    let text = match args.format {
        Format::Json => {
            let mut v = serde_json::to_value(&p).map_err(anyhow::Error::from)?;
            // The build under test beside the plan, as result.json records it.
            if let (Some(b), Some(o)) = (&target.build, v.as_object_mut()) {
                o.insert(
                    "build".into(),
                    serde_json::to_value(&b.info).map_err(anyhow::Error::from)?,
                );
            }
            if let (Some(path), Some(o)) = (&path, v.as_object_mut()) {
                o.insert(
                    "critical_path".into(),
                    serde_json::to_value(path).map_err(anyhow::Error::from)?,
                );
            }
            format!(
                "{}\n",
                serde_json::to_string_pretty(&redactor.redact_json(&v))
                    .map_err(anyhow::Error::from)?
            )
        }
        Format::Text => {
            let mut plan = render_text(&p);
            if let Some(path) = &path {
                render_critical_path(&mut plan, path);
            }
            let text = match &target.build {
                Some(b) => format!("{}\n{}", build_lines(b, &p), plan),
                None => plan,
            };
            redactor.redact_text(&text)
        }
    };
    write_stdout(&text).map_err(|e| anyhow::anyhow!("cannot write to stdout: {e}"))?;
    Ok(Exit::Ok)
}

/// The boots the run cannot overlap under `--sim-pace`'s model, and their sum.
fn render_critical_path(o: &mut String, path: &CriticalPath) {
    o.push_str(&format!(
        "\nCritical path at --sim-pace {}: {:.2} s ({:.2} s at real k3s timings)\n",
        path.pace, path.seconds, path.real_seconds
    ));
    o.push_str(
        "  The boots k3s makes follow one another (the longest chain of the first start, then\n  every step's starts and restarts in turn); phase times from distro/src/pace.rs:\n",
    );
    let rows: Vec<Vec<String>> = path
        .boots
        .iter()
        .map(|b| {
            vec![
                if b.step == 0 {
                    "start".to_string()
                } else {
                    format!("step {}", b.step)
                },
                b.node.clone(),
                b.phases.join(" + "),
                format!("{:.2} s", b.seconds),
            ]
        })
        .collect();
    table(o, "    ", &rows);
}

/// What a build under test is and where it goes, above the plan.
fn build_lines(b: &crate::builds::Build, p: &Plan) -> String {
    let i = &b.info;
    let from = match (&i.commit, &i.url) {
        (Some(c), Some(u)) => format!("the CI build of commit {c} ({u})"),
        _ => i.path.clone(),
    };
    format!(
        "Build under test: {from}\n  reports {}, sha256 {}\n  copied to {} in every node of {}\n",
        i.reported, i.sha256, i.installed_at, p.image
    )
}

/// The plan as a reviewer reads it.
pub(crate) fn render_text(p: &Plan) -> String {
    let mut o = String::new();
    header(&mut o, p);
    step_zero(&mut o, p);
    // Which step last changed each node's config.yaml, to print unchanged ones as one line.
    let mut last_change: Vec<(String, usize, String)> = p
        .initial
        .iter()
        .map(|(n, files)| {
            let body = files
                .get(p.config_path())
                .and_then(|c| c.as_deref())
                .map(config_body)
                .unwrap_or_default();
            (n.clone(), 0, body)
        })
        .collect();
    let has_bug = p.has_bug_signature();
    for s in &p.steps {
        step(&mut o, p, s, &mut last_change, has_bug);
    }
    o
}

fn header(o: &mut String, p: &Plan) {
    o.push_str(&format!(
        "Plan for check `{}` on {} {}\n",
        p.check, p.distro, p.k3s_version
    ));
    if !p.summary.is_empty() {
        o.push_str(&format!("  {}\n", p.summary));
    }
    o.push('\n');
    let mut rows = vec![
        ["issue".to_string(), p.issue.clone()],
        [
            "topology".into(),
            if p.topology_description.is_empty() {
                p.topology.clone()
            } else {
                format!("{} — {}", p.topology, p.topology_description)
            },
        ],
        ["image".into(), p.image.clone()],
    ];
    if !p.fixed_in.is_empty() {
        let list: Vec<String> = p.fixed_in.iter().map(ToString::to_string).collect();
        rows.push(["fixed in".into(), list.join(", ")]);
    }
    let expected = match p.expected_verdict {
        Some(v) => v.as_str(),
        None => "unknown",
    };
    rows.push([
        "expected".into(),
        format!("{expected} ({})", p.expected_because),
    ]);
    for [k, v] in rows {
        o.push_str(&format!("  {k:<9} {v}\n"));
    }
    for n in &p.notes {
        o.push_str(&format!("  NOTE      {n}\n"));
    }
    o.push_str(&format!(
        "\nNothing runs here: this is what `repro run` would do. Each node is a {} container with\n\
         its own {}. Each step edits those files, restarts nodes, waits\n\
         for their new boot, and compares what every named node shows with the expectations.\n",
        p.distro,
        p.config_path()
    ));
}

fn describe_node(p: &Plan, n: &PlannedNode) -> String {
    match (&n.join, n.init) {
        (_, true) => format!("creates the cluster ({})", p.distro.facts().init_marker()),
        (Some(j), _) => format!("joins {j}"),
        (None, _) => String::new(),
    }
}

fn step_zero(o: &mut String, p: &Plan) {
    o.push_str("\nStep 0 — create the cluster\n");
    o.push_str(
        "  Start stages (each node starts as soon as the nodes it waits for are ready, as k3s\n  allows; the nodes of one stage start together):\n",
    );
    let mut rows = Vec::new();
    for (i, group) in p.start_order.iter().enumerate() {
        for name in group {
            let Some(n) = p.nodes.iter().find(|n| &n.name == name) else {
                continue;
            };
            let needs = p.start_needs.get(name).map_or(&[][..], Vec::as_slice);
            let after = if needs.is_empty() {
                String::new()
            } else {
                format!("after {}", needs.join(", "))
            };
            rows.push(vec![
                format!("{}.", i + 1),
                n.name.clone(),
                n.role.as_str().to_string(),
                describe_node(p, n),
                after,
            ]);
        }
    }
    table(o, "    ", &rows);
    reach(o, p, 0);
    let deferred: Vec<&PlannedNode> = p.nodes.iter().filter(|n| n.deferred).collect();
    for n in deferred {
        o.push_str(&format!(
            "  Not started yet: {} ({}, {}); a step starts it.\n",
            n.name,
            n.role.as_str(),
            describe_node(p, n)
        ));
    }
    if !p.common_files.is_empty() {
        o.push_str("  Written on every node before it starts:\n");
        for (path, content) in &p.common_files {
            o.push_str(&format!("    {path}\n"));
            o.push_str(&indent(content, "      "));
        }
    }
    o.push_str("  config.yaml of each node:\n");
    for (node, files) in &p.initial {
        for (path, content) in files {
            if p.common_files.contains_key(path) && path != p.config_path() {
                continue;
            }
            let later = if p.nodes.iter().any(|n| &n.name == node && n.deferred) {
                " (written before its first start, in a later step)"
            } else {
                ""
            };
            o.push_str(&format!("    {node}:{path}{later}\n"));
            o.push_str(&indent(content.as_deref().unwrap_or("(none)"), "      "));
        }
    }
}

/// With the bug, the servers the step's etcd-only joiners may take their served config from.
fn reach(o: &mut String, p: &Plan, step: usize) {
    let here: Vec<&crate::bug_world::Reach> =
        p.bug_reach.iter().filter(|r| r.step == step).collect();
    if here.is_empty() {
        return;
    }
    o.push_str(
        "  Before the etcd-only bootstrap fix (k3s #12753) each etcd-only joiner takes its served\n  config from a server its load balancer reaches (saved control-plane nodes, picked at\n  random; then the joined node):\n",
    );
    for r in here {
        let saved = match r.saved.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            many => format!("one of {}", many.join(", ")),
        };
        let line = if saved.is_empty() {
            format!("{} (no saved servers yet)", r.joined)
        } else {
            format!("{saved}, else {}", r.joined)
        };
        o.push_str(&format!("    {}: {line}\n", r.node));
    }
}

/// The step's stops, and its starts of nodes an earlier step stopped (they come back with their
/// data); returns the nodes it starts for the first time.
fn stops_and_starts_again(p: &Plan, s: &PlannedStep, actions: &mut Vec<String>) -> Vec<String> {
    if !s.stop.is_empty() {
        actions.push(format!(
            "stop {} ({}, as `systemctl stop` does); it stays down until a step starts it",
            s.stop.join(" and "),
            p.distro.facts().stop_signal
        ));
    }
    // A node an earlier step stopped starts again with its data; the others for the first time.
    let (again, first): (Vec<String>, Vec<String>) = s.start.iter().cloned().partition(|n| {
        (p.steps.iter())
            .take_while(|x| x.index < s.index)
            .any(|x| x.stop.contains(n))
    });
    if !again.is_empty() {
        actions.push(format!(
            "start {} again (stopped earlier, with its data); wait until each is ready (or dead)",
            again.join(" and ")
        ));
    }
    first
}

/// The step's upgrades, one after another.
fn upgrades(s: &PlannedStep, actions: &mut Vec<String>) {
    for u in &s.upgrade {
        let to = match &u.binary {
            Some(b) => format!(
                "the local build {} (reports {}, sha256 {}), copied over the image's binary",
                b.path.display(),
                b.reported,
                &b.sha256[..12.min(b.sha256.len())]
            ),
            None => u.version.to_string(),
        };
        actions.push(format!(
            "upgrade {} to {to}: re-create it on {} over its volumes (same name, address and data); wait until its new boot is ready (or dead)",
            u.node,
            u.image.as_deref().unwrap_or("(no image)")
        ));
    }
}

fn step(
    o: &mut String,
    p: &Plan,
    s: &PlannedStep,
    last_change: &mut [(String, usize, String)],
    has_bug: bool,
) {
    o.push_str(&format!("\nStep {} — {}\n", s.index, s.name));
    if !s.why.is_empty() {
        o.push_str(&format!("  Why: {}\n", s.why.trim()));
    }

    let mut actions: Vec<String> = Vec::new();
    for (node, files) in &s.edits {
        let mut changes: Vec<String> = Vec::new();
        if let Some(kv) = s.set.get(node) {
            changes.extend(kv.iter().map(|(k, v)| format!("set {k}: {}", v.to_yaml())));
        }
        if let Some(ks) = s.removed.get(node) {
            changes.extend(ks.iter().map(|k| format!("remove {k}")));
        }
        if !changes.is_empty() {
            actions.push(format!("{node}: {} in config.yaml", changes.join(", ")));
        }
        for (path, content) in files {
            if path == p.config_path() {
                continue;
            }
            match content {
                Some(c) => actions.push(format!(
                    "{node}: write {path}\n{}",
                    indent(c, "         ").trim_end()
                )),
                None => actions.push(format!("{node}: delete {path}")),
            }
        }
    }
    let how = |n: &String| {
        p.nodes
            .iter()
            .find(|x| &x.name == n)
            .map(|n| describe_node(p, n))
            .unwrap_or_default()
    };
    let first = stops_and_starts_again(p, s, &mut actions);
    match first.as_slice() {
        [] => {}
        [n] => actions.push(format!(
            "start {n} for the first time ({}); wait until it is ready (or dead)",
            how(n)
        )),
        many => actions.push(format!(
            "start {} for the first time at the same time; wait until each is ready (or dead)",
            many.iter()
                .map(|n| format!("{n} ({})", how(n)))
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
    for g in &s.restart {
        match g.as_slice() {
            [one] => actions.push(format!(
                "restart {one}; wait until its new boot is ready (or dead)"
            )),
            many => actions.push(format!(
                "restart {} at the same time; wait until each new boot is ready (or dead)",
                many.join(" and ")
            )),
        }
    }
    upgrades(s, &mut actions);
    actions.push("observe the nodes named below".to_string());
    let mut seen = String::new();
    reach(&mut seen, p, s.index);
    o.push_str("  Do:\n");
    for (i, a) in actions.iter().enumerate() {
        o.push_str(&format!("    {}. {a}\n", i + 1));
    }

    o.push_str(&seen);
    o.push_str("  config.yaml after this step:\n");
    let mut unchanged = Vec::new();
    for entry in last_change.iter_mut() {
        let (node, since, body) = entry;
        let Some(rendered) = s.configs.get(node.as_str()) else {
            continue;
        };
        let now = config_body(rendered);
        if &now == body {
            unchanged.push(format!("{node} (since step {since})"));
        } else {
            o.push_str(&format!("    {node}:{} (changed)\n", p.config_path()));
            o.push_str(&indent(rendered, "      "));
            *since = s.index;
            *body = now;
        }
    }
    if !unchanged.is_empty() {
        o.push_str(&format!("    unchanged: {}\n", unchanged.join(", ")));
    }

    expectations(o, s, has_bug);
}

fn expectations(o: &mut String, s: &PlannedStep, has_bug: bool) {
    if s.expect.is_empty() {
        o.push_str("  Expect: nothing in this step (it only sets up the next one).\n");
        return;
    }
    let mut rows = if has_bug {
        o.push_str(
            "  Expect (correct = what a fixed k3s does; with the bug = what the bug does):\n",
        );
        vec![vec![
            "NODE".to_string(),
            "SIGNAL".into(),
            "CORRECT".into(),
            "WITH THE BUG".into(),
        ]]
    } else {
        o.push_str("  Expect (the check has no bug signature: this is how k3s behaves):\n");
        vec![vec!["NODE".to_string(), "SIGNAL".into(), "CORRECT".into()]]
    };
    let mut differs = false;
    for (node, sigs) in &s.expect {
        for (sig, want) in sigs {
            let bug: Option<&Expected> = s.bug.get(node).and_then(|b| b.get(sig));
            let bug_cell = match bug {
                Some(Expected::Any) => {
                    differs = true;
                    "any (not judged)   <- the bug world cannot tell".to_string()
                }
                Some(b) if b != want => {
                    differs = true;
                    format!("{b}   <- differs")
                }
                _ => want.to_string(),
            };
            let mut row = vec![node.clone(), sig.clone(), want.to_string()];
            if has_bug {
                row.push(bug_cell);
            }
            rows.push(row);
        }
    }
    table(o, "    ", &rows);
    if has_bug && !differs {
        o.push_str("    (the bug changes nothing here: these hold with and without it)\n");
    }
    let booted: Vec<&String> = (s.start.iter())
        .chain(s.restart.iter().flatten())
        .chain(s.upgrade.iter().map(|u| &u.node))
        .chain(&s.stop)
        .collect();
    let kept: Vec<&str> = s
        .expect
        .keys()
        .filter(|n| !booted.contains(n))
        .map(String::as_str)
        .collect();
    if !kept.is_empty() {
        o.push_str(&format!(
            "    ({} not restarted in this step: the boot it is in is observed again)\n",
            kept.join(", ")
        ));
    }
}

fn indent(s: &str, pre: &str) -> String {
    s.lines().map(|l| format!("{pre}{l}\n")).collect()
}
