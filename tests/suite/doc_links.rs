//! The documentation's own links (#32): every relative link in README.md, the other top-level
//! Markdown files, docs/*.md and sim/README.md points to a file that exists and, with a
//! `#fragment`, to a heading of that file as GitHub names its anchors. The README was split into
//! docs/ pages; a heading renamed or a section moved must not leave a link behind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::root;

/// The Markdown files whose links are held: the README, its docs/ pages and their neighbours.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [root(), root().join("docs")] {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.push(root().join("sim/README.md"));
    files.sort();
    files
}

/// The text outside fenced blocks and code spans, line by line (links in code are not links).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        // Drop code spans: split on backticks and keep the even pieces.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        out.push((i + 1, prose));
    }
    out
}

/// Every `[text](target)` target on a line (inline links only: the docs use no reference links).
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(after[..end].trim().to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, code spans' backticks and punctuation dropped
/// (letters, digits, `-` and `_` kept), spaces as `-`; a repeated anchor gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        if fence {
            continue;
        }
        let title = title.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut name = slug.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{slug}-{n}");
        }
        seen.insert(name);
    }
    seen
}

fn check_target(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let dest = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a parent").join(path)
    };
    if !dest.exists() {
        return Some(format!("{target}: no such file {}", dest.display()));
    }
    let fragment = fragment?;
    if dest.is_dir() || dest.extension().is_none_or(|e| e != "md") {
        return Some(format!(
            "{target}: an anchor into a file that is not Markdown"
        ));
    }
    let text = std::fs::read_to_string(&dest).expect("read the linked file");
    let names = anchors(&text);
    (!names.contains(fragment)).then(|| {
        format!(
            "{target}: no heading with anchor #{fragment} in {} (it has: {})",
            dest.display(),
            names.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

#[test]
fn every_relative_link_points_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut links = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read markdown");
        for (line, prose) in prose_lines(&text) {
            for target in link_targets(&prose) {
                links += 1;
                if let Some(why) = check_target(&file, &target) {
                    let shown = file.strip_prefix(root()).unwrap_or(&file);
                    broken.push(format!("{}:{line}: {why}", shown.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README links its docs pages; no links found would mean the scan itself is broken.
    assert!(links > 20, "only {links} links found");
}

#[test]
fn anchors_are_named_as_github_names_them() {
    let names = anchors(
        "# Real k3s and the stand-in\n## When is a feature \"down\"? (the settle rule)\n\
         ## `run`'s options\n## RKE2 (rancher/rke2#8465)\n## Usage\n## Usage\n\
         ```\n# not a heading\n```\n",
    );
    let want = [
        "real-k3s-and-the-stand-in",
        "when-is-a-feature-down-the-settle-rule",
        "runs-options",
        "rke2-rancherrke28465",
        "usage",
        "usage-1",
    ];
    assert_eq!(
        names,
        want.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
}

/// The README is a newcomer's page (what it is, the two commands, the QA flow, real k3s and
/// RKE2, exit codes); reference material goes under docs/. A README that grows past this again
/// is reference creeping back.
#[test]
fn the_readme_stays_a_newcomers_page() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README");
    let lines = text.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move reference material to a docs/ page and link it"
    );
    for must in [
        "make demo",
        "make test",
        "repro verify",
        "### Exit codes",
        "## Real RKE2",
    ] {
        assert!(text.contains(must), "README.md lacks {must:?}");
    }
}
