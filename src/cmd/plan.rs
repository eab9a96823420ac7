//! `repro plan <check>`: the whole run on paper.

use crate::catalog::{self, Catalog};
use crate::cli::{Format, Global, PlanArgs, Target};
use crate::exit;
use crate::plan::{self, Plan};
use crate::scenario::Scenario;
use crate::version::K3sVersion;

/// Resolves a target (check, topology, version, image) into a scenario and a plan, or returns
/// the diagnostics to print (exit 2). Shared by `plan` and `run`.
pub fn resolve(g: &Global, t: &Target) -> Result<(Scenario, Plan), String> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(|d| d.to_string())?;
    let sc = cat
        .scenario(&t.check, t.topology.as_deref())
        .map_err(|d| d.to_string())?;
    let version: K3sVersion = match &t.k3s_version {
        Some(v) => v
            .parse()
            .map_err(|e: crate::version::VersionError| format!("--k3s-version: {e}"))?,
        None => sc.topology.default_version.clone(),
    };
    let image = match (&t.image, t.sim) {
        (Some(i), _) => i.clone(),
        (None, true) => sim_image_ref(&version),
        (None, false) => plan::k3s_image(&version),
    };
    let p = plan::plan(&sc, &version, &image);
    Ok((sc, p))
}

/// The stand-in's image name for a version (kept in sync with `sim_image`).
pub fn sim_image_ref(v: &K3sVersion) -> String {
    format!("repro.local/k3s-sim:{}", v.image_tag())
}

pub fn run(g: &Global, args: &PlanArgs) -> anyhow::Result<i32> {
    let (_sc, p) = match resolve(g, &args.target) {
        Ok(x) => x,
        Err(msg) => {
            eprint!("{msg}");
            if !msg.ends_with('\n') {
                eprintln!();
            }
            return Ok(exit::BAD_INPUT);
        }
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&p)?),
        Format::Text => print!("{}", render_text(&p)),
    }
    Ok(exit::OK)
}

/// The plan as a reviewer reads it.
pub fn render_text(p: &Plan) -> String {
    let mut o = String::new();
    o.push_str(&format!("Check     {} ({})\n", p.check, p.issue));
    o.push_str(&format!("Topology  {}\n", p.topology));
    o.push_str(&format!("k3s       {}  image {}\n", p.k3s_version, p.image));
    if let Some(v) = p.expected_verdict {
        o.push_str(&format!(
            "Expected  {} (from the check's fixed-in)\n",
            v.as_str()
        ));
    }
    for n in &p.notes {
        o.push_str(&format!("NOTE      {n}\n"));
    }
    o.push_str("\nNodes\n");
    for n in &p.nodes {
        let how = match (&n.join, n.init) {
            (_, true) => "creates the cluster (cluster-init)".to_string(),
            (Some(j), _) => format!("joins {j}"),
            (None, _) => String::new(),
        };
        let later = if n.deferred {
            ", started by a step"
        } else {
            ""
        };
        o.push_str(&format!(
            "  {:<10} {:<14} {how}{later}\n",
            n.name,
            n.role.as_str()
        ));
    }
    o.push_str("\nStart order (each line waits for the one before to be ready)\n");
    for (i, g) in p.start_order.iter().enumerate() {
        o.push_str(&format!("  {}. {}\n", i + 1, g.join(" + ")));
    }
    o.push_str("\nFiles before first start\n");
    for (node, files) in &p.initial {
        for (path, content) in files {
            o.push_str(&format!("  --- {node}:{path}\n"));
            o.push_str(&indent(content.as_deref().unwrap_or("(deleted)"), "      "));
        }
    }
    for s in &p.steps {
        o.push_str(&format!("\nStep {}: {}\n", s.index, s.name));
        if !s.why.is_empty() {
            o.push_str(&format!("  why: {}\n", s.why));
        }
        for (node, files) in &s.edits {
            for (path, content) in files {
                match content {
                    Some(c) => {
                        o.push_str(&format!("  write {node}:{path}\n"));
                        o.push_str(&indent(c, "      "));
                    }
                    None => o.push_str(&format!("  delete {node}:{path}\n")),
                }
            }
        }
        for n in &s.start {
            o.push_str(&format!(
                "  start {n} (first boot), wait until ready or dead\n"
            ));
        }
        for g in &s.restart {
            if g.len() == 1 {
                o.push_str(&format!(
                    "  restart {}, wait until its new boot is ready or dead\n",
                    g[0]
                ));
            } else {
                o.push_str(&format!(
                    "  restart {} at once, wait until each new boot is ready or dead\n",
                    g.join(" + ")
                ));
            }
        }
        o.push_str("  expect (correct behaviour):\n");
        for (node, sigs) in &s.expect {
            let bug = s.bug.get(node);
            let parts: Vec<String> = sigs
                .iter()
                .map(|(sig, v)| match bug.and_then(|b| b.get(sig)) {
                    Some(bv) => format!("{sig}={v} (bug: {bv})"),
                    None => format!("{sig}={v}"),
                })
                .collect();
            o.push_str(&format!("    {:<10} {}\n", node, parts.join(", ")));
        }
    }
    o
}

fn indent(s: &str, pre: &str) -> String {
    s.lines().map(|l| format!("{pre}{l}\n")).collect()
}
