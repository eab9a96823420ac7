//! A matrix settled before Docker: which checks (named, or every check that says where its fix
//! landed), whether the versions list is well formed (every bad entry at once), each cell's
//! target, the verdict each cell expects, the cells a GitHub Actions fan-out gets and the line
//! that announces the runs. Pure: `cmd::matrix` resolves each cell's plan (the catalog, a
//! channel lookup, a release's artifacts) and wires these together.

use std::path::Path;

use crate::builds::Build;
use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Diagnostics};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::target::Target;
use distro::Version;

use super::batch::Planned;
use super::model::{Cell, Status};

/// GitHub Actions runs at most this many jobs from one matrix.
pub(crate) const GITHUB_MATRIX_LIMIT: usize = 256;

/// The checks of the matrix, in order, each once: the ones named with `--checks`, or (none
/// named) every check whose `fixed-in` predicts a verdict per version.
pub(crate) fn checks(cat: &Catalog, named: &[String]) -> Result<Vec<String>, Error> {
    let mut checks: Vec<String> = Vec::new();
    if named.is_empty() {
        checks.extend(
            (cat.checks.iter())
                .filter(|(c, _)| !c.fixed_in.firsts.is_empty())
                .map(|(c, _)| c.name.clone()),
        );
        if checks.is_empty() {
            return Err(Diagnostic::general(
                "no check has `fixed-in`, so there is no default matrix",
                "name the checks with --checks",
            )
            .into());
        }
        return Ok(checks);
    }
    for c in named {
        let c = c.trim();
        if c.is_empty() {
            return Err(Diagnostic::general(
                "--checks has an empty entry",
                "e.g. --checks etcd-split,metrics-order",
            )
            .into());
        }
        if !checks.iter().any(|x| x == c) {
            checks.push(c.to_string());
        }
    }
    Ok(checks)
}

/// Refuses a versions list with malformed entries, all of them in one message, before any
/// channel is looked up (a lookup needs the network; a typo should not wait for it). `flag`:
/// the flag as typed.
pub(crate) fn check_versions(raw: &[String], flag: &str) -> Result<(), Error> {
    let mut problems = Vec::new();
    for raw in raw {
        let raw = raw.trim();
        if raw.is_empty() {
            problems.push(Diagnostic::usage(format!("{flag} has an empty entry")));
        } else if !crate::channels::is_channel(raw) {
            if let Err(e) = raw.parse::<Version>() {
                problems.push(Diagnostic::usage(format!("{flag}: {e}")));
            }
        }
    }
    // One help for all of them, after the last.
    let Some(last) = problems.pop() else {
        return Ok(());
    };
    problems.push(last.help(format!(
        "give full versions ({}) or channels (stable, latest, v1.33), comma-separated",
        distro::Distro::default().facts().example_version
    )));
    Err(Diagnostics(problems).into())
}

/// The one column of a matrix of a build under test: the release its binary reports (for a
/// commit build, its base release).
pub(crate) fn build_version(b: &Build, releases: &[Version]) -> Result<Version, Error> {
    b.base_version(releases).ok_or_else(|| {
        Diagnostic::usage(format!(
            "--k3s-binary: the binary reports `{}`, which names no release line",
            b.info.reported
        ))
        .help(
            "run each check alone with `repro run <check> --k3s-binary … --image … --expect fixed`",
        )
        .into()
    })
}

/// What one cell runs: the build under test in the template (which carries it), else `check` on
/// release `v`, on the stand-in or not as the template says.
pub(crate) fn cell_target(template: &Target, check: &str, v: &Version) -> Target {
    match &template.build {
        Some(_) => Target {
            check: check.to_string(),
            ..template.clone()
        },
        None => Target {
            version: Some(v.to_string()),
            no_images_tarball: template.no_images_tarball,
            ..Target::of(check, template.sim, template.sim_pace)
        },
    }
}

/// The verdict a cell expects, from its check's `fixed-in`: a cell without one has nothing to
/// be compared with, so the matrix refuses it (with the `repro run` that tests it alone).
pub(crate) fn expected(plan: &Plan, build: Option<&Build>) -> Result<Outcome, Error> {
    match (plan.expected_verdict, build) {
        (Some(expected), _) => Ok(expected),
        (None, Some(b)) => Err(Diagnostic::usage(format!(
            "no expected verdict for {} on the build: {}",
            plan.check, plan.expected_because
        ))
        .help(format!(
            "run it alone with `repro run {} --k3s-binary {} --expect fixed` (or reproduced)",
            plan.check, b.info.path
        ))
        .into()),
        (None, None) => Err(Diagnostic::usage(format!(
            "no expected verdict for {} {}: {}",
            plan.check, plan.k3s_version, plan.expected_because
        ))
        .help(format!(
            "leave the version out of the matrix and run it alone with `repro run {} --version {} --expect fixed` (or reproduced)",
            plan.check, plan.k3s_version
        ))
        .into()),
    }
}

/// The cells of a GitHub Actions fan-out (check, version, expected verdict), refused when the
/// workflow could not run them all.
pub(crate) fn github_cells(planned: &[Planned]) -> Result<Vec<(String, String, Outcome)>, Error> {
    if planned.len() > GITHUB_MATRIX_LIMIT {
        return Err(Diagnostic::general(
            format!(
                "{} cells, but a GitHub Actions matrix runs at most {GITHUB_MATRIX_LIMIT} jobs",
                planned.len()
            ),
            "split the versions or checks over several workflows",
        )
        .into());
    }
    Ok(planned
        .iter()
        .map(|p| {
            (
                p.plan.check.clone(),
                p.plan.k3s_version.to_string(),
                p.cell.expected,
            )
        })
        .collect())
}

/// Every cell broken for one reason: what the summary lists when something all runs share
/// (the image archive, the stand-in images) failed before any ran.
pub(crate) fn all_broken(planned: &[Planned], why: &str) -> Vec<Cell> {
    (planned.iter())
        .map(|p| Cell {
            status: Status::Broken,
            error: Some(why.to_string()),
            ..p.cell.clone()
        })
        .collect()
}

/// The line that announces the runs: how many checks × versions, how many at a time, whether
/// they are the stand-in's, and where the matrix folder is.
pub(crate) fn headline(
    checks: usize,
    versions: usize,
    jobs: usize,
    sim: bool,
    dir: &Path,
) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let total = checks * versions;
    format!(
        "matrix: {checks} check{} × {versions} version{} = {total} run{}, {jobs} at a time{} → {}",
        s(checks),
        s(versions),
        s(total),
        if sim {
            " (k3s stand-in, not real k3s)"
        } else {
            ""
        },
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions_list_problems_are_all_reported_at_once() {
        assert!(
            check_versions(&strings(&["v1.33.4+k3s1", "stable", "v1.33"]), "--versions").is_ok()
        );
        let e = check_versions(&strings(&["", "v1.33.4+k3s1", "1.2.x", " "]), "--versions")
            .expect_err("two empty entries and a malformed one")
            .render();
        assert_eq!(e.matches("has an empty entry").count(), 2, "{e}");
        assert_eq!(e.matches("error: --versions: ").count(), 1, "{e}");
        assert_eq!(e.matches("  help: ").count(), 1, "one help for all: {e}");
        assert!(e.ends_with("comma-separated\n"), "{e}");
    }

    #[test]
    fn named_checks_are_trimmed_kept_in_order_and_deduplicated() {
        let cat = Catalog::load(None).expect("the built-in catalog");
        let got = checks(&cat, &strings(&[" b", "a", "b "])).expect("named checks");
        assert_eq!(got, ["b", "a"]);
        let e = checks(&cat, &strings(&["a", " "])).expect_err("an empty entry");
        assert!(e.render().contains("--checks has an empty entry"));
        // None named: every check with `fixed-in`, and only those.
        let all = checks(&cat, &[]).expect("built-in checks with fixed-in");
        assert!(!all.is_empty());
        for (c, _) in &cat.checks {
            assert_eq!(
                all.contains(&c.name),
                !c.fixed_in.firsts.is_empty(),
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn a_cell_runs_the_release_or_the_build_under_test() {
        let v: Version = "v1.33.4+k3s1".parse().expect("a version");
        let template = Target::of("", true, Some(0.5));
        let t = cell_target(&template, "etcd-split", &v);
        assert_eq!(
            (t.check.as_str(), t.version.as_deref(), t.sim, t.sim_pace),
            ("etcd-split", Some("v1.33.4+k3s1"), true, Some(0.5))
        );
    }

    #[test]
    fn the_headline_counts_in_words() {
        let one = headline(1, 1, 1, false, Path::new("/r/m"));
        assert_eq!(
            one,
            "matrix: 1 check × 1 version = 1 run, 1 at a time → /r/m"
        );
        let many = headline(2, 3, 4, true, Path::new("/r/m"));
        assert_eq!(
            many,
            "matrix: 2 checks × 3 versions = 6 runs, 4 at a time (k3s stand-in, not real k3s) → /r/m"
        );
    }
}
