//! `repro list`: one line per check and per topology, for picking what to run.

use std::path::Path;

use serde_json::json;

use crate::catalog::{self, Catalog};
use crate::cli::{Format, Global, ListArgs};
use crate::cmd::common::write_stdout;
use crate::error::Error;
use crate::exit::Exit;
use crate::table::table;

pub(crate) fn run(g: &Global, a: &ListArgs) -> Result<Exit, Error> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(|d| {
        Error::bad_input(format!(
            "{d}fix these first: `repro validate` shows the same problems"
        ))
    })?;
    let text = match a.format {
        Format::Text => render(&cat, root.as_deref()),
        Format::Json => render_json(&cat),
    };
    write_stdout(&text).map_err(anyhow::Error::from)?;
    Ok(Exit::Ok)
}

/// The same lists for scripts: every check (with its `fixed-in` and file) and topology (with
/// its nodes), sorted by name.
pub(crate) fn render_json(cat: &Catalog) -> String {
    let mut checks: Vec<_> = cat.checks.iter().map(|(c, _)| c).collect();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let mut topologies: Vec<_> = cat.topologies.iter().collect();
    topologies.sort_by(|a, b| a.name.cmp(&b.name));
    let v = json!({
        "checks": checks.iter().map(|c| json!({
            "name": c.name,
            "topology": c.topology,
            "issue": c.issue,
            "summary": c.summary,
            "fixed_in": c.fixed_in.firsts.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
            "steps": c.steps.len(),
            "file": c.path.display().to_string(),
        })).collect::<Vec<_>>(),
        "topologies": topologies.iter().map(|t| json!({
            "name": t.name,
            "description": t.description,
            "k3s_version": t.default_version.to_string(),
            "nodes": t.nodes.iter().map(|n| json!({
                "name": n.name,
                "role": n.role.as_str(),
                "init": n.init,
                "join": n.join,
                "deferred": n.deferred,
            })).collect::<Vec<_>>(),
            "file": t.path.display().to_string(),
        })).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

pub(crate) fn render(cat: &Catalog, root: Option<&Path>) -> String {
    let mut checks: Vec<_> = cat.checks.iter().map(|(c, _)| c).collect();
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    let mut topologies: Vec<_> = cat.topologies.iter().collect();
    topologies.sort_by(|a, b| a.name.cmp(&b.name));
    // A project folder laid over the built-in files (#32): a FROM column says which is which
    // when both are listed.
    let builtin = |p: &Path| catalog::is_builtin(p);
    let mixed =
        |paths: &[&Path]| paths.iter().any(|p| builtin(p)) && paths.iter().any(|p| !builtin(p));
    let check_paths: Vec<&Path> = checks.iter().map(|c| c.path.as_path()).collect();
    let topology_paths: Vec<&Path> = topologies.iter().map(|t| t.path.as_path()).collect();
    let (checks_mixed, topologies_mixed) = (mixed(&check_paths), mixed(&topology_paths));
    let from_column = |mixed: bool, p: &Path| -> Vec<String> {
        match (mixed, builtin(p)) {
            (false, _) => vec![],
            (true, true) => vec!["built-in".into()],
            (true, false) => vec!["yours".into()],
        }
    };
    let mut o = String::new();
    o.push_str(&format!(
        "Checks ({}):\n",
        whence(root, "checks", &check_paths)
    ));
    let mut rows = vec![with_from(
        checks_mixed,
        vec![
            "NAME".to_string(),
            "TOPOLOGY".into(),
            "ISSUE".into(),
            "SUMMARY".into(),
        ],
    )];
    for c in checks {
        let mut row = vec![c.name.clone()];
        row.extend(from_column(checks_mixed, &c.path));
        row.extend([c.topology.clone(), short_issue(&c.issue), c.summary.clone()]);
        rows.push(row);
    }
    table(&mut o, "  ", &rows);

    let topologies_from = whence(root, "topologies", &topology_paths);
    o.push_str(&format!("\nTopologies ({topologies_from}):\n"));
    let mut rows = vec![with_from(
        topologies_mixed,
        vec![
            "NAME".to_string(),
            "NODES".into(),
            "VERSION".into(),
            "DESCRIPTION".into(),
        ],
    )];
    for t in topologies {
        let deferred = t.nodes.iter().filter(|n| n.deferred).count();
        let nodes = if deferred > 0 {
            format!("{} ({deferred} deferred)", t.nodes.len())
        } else {
            t.nodes.len().to_string()
        };
        let mut row = vec![t.name.clone()];
        row.extend(from_column(topologies_mixed, &t.path));
        row.extend([nodes, t.default_version.to_string(), t.description.clone()]);
        rows.push(row);
    }
    table(&mut o, "  ", &rows);
    if !cat.set_aside().is_empty() {
        o.push_str("\nNot listed: built-in checks that do not hold over your files (`repro plan NAME` says why):\n");
        for (name, why) in cat.set_aside() {
            let first = why.0.first().map(|d| d.to_string()).unwrap_or_default();
            let first = first.lines().next().unwrap_or_default();
            o.push_str(&format!("  {name}: {first}\n"));
        }
    }
    o.push_str("\n`repro plan <check>` shows what a run does; `repro run <check>` runs it.\n");
    o
}

/// The header row with a FROM column after NAME when the rows come from two places.
fn with_from(mixed: bool, mut header: Vec<String>) -> Vec<String> {
    if mixed {
        header.insert(1, "FROM".into());
    }
    header
}

/// Where a list's rows come from: the built-in files, the project folder's `dir`, or the
/// project folder's laid over the built-in files.
fn whence(root: Option<&Path>, dir: &str, paths: &[&Path]) -> String {
    let own = match root {
        None => return "built into repro".into(),
        Some(r) if r == Path::new(".") => format!("{dir}/"),
        Some(r) => format!("{}/{dir}", r.display()),
    };
    match (
        paths.iter().any(|p| catalog::is_builtin(p)),
        paths.iter().any(|p| !catalog::is_builtin(p)),
    ) {
        (true, true) => format!("yours from {own}, over the ones built into repro"),
        (true, false) => format!("built into repro; none in {own}"),
        _ => own,
    }
}

/// `https://github.com/k3s-io/k3s/issues/12753` → `k3s-io/k3s#12753`, the way k3s people cite
/// issues; other addresses are kept as they are.
fn short_issue(url: &str) -> String {
    let Some(rest) = url.strip_prefix("https://github.com/") else {
        return url.to_string();
    };
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        [owner, repo, "issues" | "pull", n] if n.chars().all(|c| c.is_ascii_digit()) => {
            format!("{owner}/{repo}#{n}")
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::short_issue;

    #[test]
    fn shortens_github_issue_links_only() {
        assert_eq!(
            short_issue("https://github.com/k3s-io/k3s/issues/12753"),
            "k3s-io/k3s#12753"
        );
        assert_eq!(
            short_issue("https://github.com/rancher/rke2/pull/8465/"),
            "rancher/rke2#8465"
        );
        assert_eq!(
            short_issue("https://example.com/x"),
            "https://example.com/x"
        );
        assert_eq!(
            short_issue("https://github.com/k3s-io/k3s/blob/master/x.go"),
            "https://github.com/k3s-io/k3s/blob/master/x.go"
        );
    }
}
