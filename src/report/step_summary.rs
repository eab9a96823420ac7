//! The Markdown a GitHub Actions job shows on its summary page (`$GITHUB_STEP_SUMMARY`, which
//! `repro run`, `verify` and `matrix` append to when it is set): one run's verdict and table.
//! The matrix's table is `crate::matrix::render::markdown`; `verify` appends its comment.

use std::path::Path;

use super::cases::{self, Outcome};
use crate::result::RunResult;

/// One run: a heading with the verdict against what was asked, every expectation in one table,
/// where the results are and how to run it again.
pub(crate) fn run(r: &RunResult, dir: &Path) -> String {
    let stand_in = if r.k3s.stand_in {
        format!(" (repro stand-in, not real {})", r.distribution.name())
    } else {
        String::new()
    };
    let verdict = r
        .verdict
        .as_ref()
        .map_or("no verdict", |v| v.outcome.as_str());
    let mark = if r.exit_code == Some(0) { "✅" } else { "❌" };
    let mut o = format!(
        "### {mark} repro run {} on {} {}{stand_in}: {verdict}\n\n",
        cell(&r.check.name),
        r.distribution.name(),
        cell(&r.k3s.version)
    );
    match (&r.verdict, &r.error) {
        (Some(v), _) => o.push_str(&format!(
            "Asked for **{}**, verdict **{}**: {}\n\n",
            r.expect,
            v.outcome,
            cell(&v.reason)
        )),
        (None, Some(e)) => o.push_str(&format!(
            "The run stopped before a verdict: {}\n\n",
            cell(e)
        )),
        (None, None) => o.push_str("The run did not finish.\n\n"),
    }
    let all = cases::cases(r);
    if !all.is_empty() {
        o.push_str("| Step | Node | Signal | Expected | Observed | With the bug | Result |\n|---|---|---|---|---|---|---|\n");
        for c in &all {
            o.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                c.step,
                cell(&c.node),
                cell(&c.signal),
                cell(c.expected.as_str()),
                cell(c.observed()),
                c.bug.as_ref().map_or("—".to_string(), |b| cell(b.as_str())),
                match c.outcome {
                    Outcome::Pass => "as expected",
                    Outcome::Fail if c.shows_bug() => "**the bug**",
                    Outcome::Fail => "**differs**",
                    Outcome::Undecided => "undecided",
                    Outcome::NotRun => "not reached",
                }
            ));
        }
        o.push('\n');
    }
    o.push_str(&format!(
        "Exit {}; results in `{}`; again: `{}`\n\n",
        r.exit_code.map_or("?".to_string(), |c| c.to_string()),
        cell(&dir.display().to_string()).replace('`', "'"),
        cell(&r.rerun).replace('`', "'")
    ));
    super::text::markup_safe(o)
}

/// Text from data in a table cell: on one line, with `|` escaped so the row keeps its columns.
pub(crate) fn cell(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> RunResult {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("read"))
            .expect("result")
    }

    #[test]
    fn a_run_as_a_job_summary() {
        let r = fixture("run-etcd-split-buggy");
        let md = run(&r, Path::new("results/x"));
        assert!(
            md.starts_with("### ✅ repro run etcd-split on k3s v1.33.4+k3s1"),
            "{md}"
        );
        assert!(md.contains(": reproduced\n"), "{md}");
        assert!(
            md.contains("Asked for **reproduced**, verdict **reproduced**"),
            "{md}"
        );
        let rows = md.lines().filter(|l| l.starts_with("| ")).count();
        // The header and one row per expectation.
        assert_eq!(rows, 1 + cases::cases(&r).len(), "{md}");
        assert_eq!(md.matches("**the bug**").count(), 4, "{md}");
        assert!(md.contains("Exit 0; results in `results/x`"), "{md}");
    }

    #[test]
    fn a_stopped_run_says_why_and_a_pipe_keeps_the_columns() {
        let mut r = fixture("run-etcd-split-buggy");
        r.verdict = None;
        r.exit_code = Some(3);
        r.error = Some("cannot reach the Docker engine | at unix:///x".into());
        let md = run(&r, Path::new("results/x"));
        assert!(md.starts_with("### ❌ "), "{md}");
        assert!(
            md.contains("stopped before a verdict: cannot reach the Docker engine \\| at"),
            "{md}"
        );
    }
}
