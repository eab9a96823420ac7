//! `repro bisect <check> --good V --bad V`: the first release of a line whose verdict changed.
//!
//! The search rule is in `crate::bisect`: run `--bad` to learn its verdict, trust `--good` to
//! show the other one, then binary-search the releases between them — at most ⌈log2 n⌉ + 1 runs
//! for n releases. An inconclusive (or broken) run stops the search with the range narrowed so
//! far: it is never counted as good or bad.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::catalog::{self, Catalog};
use crate::cli::{BisectArgs, Global};
use crate::error::Error;
use crate::exit;
use crate::matrix::bisect::{run_limit, Bisection, Side};
use crate::releases::ReleaseList;
use crate::result::Outcome;
use crate::run::{self, RunEvent, Target};
use crate::version::K3sVersion;

use super::common::{create_dir, out, resolve, stamped, version_entry};

/// One run of the bisection, for the output and bisect.json.
#[derive(Debug, Clone, serde::Serialize)]
struct Probe {
    version: String,
    verdict: Option<Outcome>,
    seconds: f64,
    results: Option<String>,
    error: Option<String>,
}

#[derive(Debug, serde::Serialize)]
struct Record<'a> {
    check: &'a str,
    good: String,
    bad: String,
    releases: Vec<String>,
    run_limit: usize,
    bad_verdict: Option<Outcome>,
    probes: &'a [Probe],
    runs: usize,
    answer: Option<String>,
    stopped: Option<String>,
}

pub async fn run(g: &Global, a: &BisectArgs) -> Result<i32, Error> {
    let bad_input = |d: crate::diag::Diagnostics| Error::bad_input(d.to_string());
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(bad_input)?;
    let sc = cat.scenario(&a.check, None).map_err(bad_input)?;
    if !sc.check.steps.iter().any(|s| !s.bug.is_empty()) {
        return Err(Error::bad_input(format!(
            "error: check `{}` has no bug signature (`bug:` in its steps), so its only verdicts are `fixed` and `inconclusive` — and an inconclusive run is never taken as good or bad\n  help: bisect a check that describes the bug, e.g. etcd-split",
            sc.check.name
        )));
    }
    let list = ReleaseList::find(a.versions.as_deref(), root.as_deref()).map_err(bad_input)?;
    let good = version_entry(&a.good, "--good").await?;
    let bad = version_entry(&a.bad, "--bad").await?;
    for (flag, v) in [("--good", &good), ("--bad", &bad)] {
        if !list.contains(v) {
            let line: Vec<String> = list.line_of(v).iter().map(ToString::to_string).collect();
            return Err(Error::bad_input(format!(
                "error: {flag} {v} is not in the release list {}\n  help: {}",
                list.path.display(),
                if line.is_empty() {
                    format!(
                        "the list has no {}.{} release; add the line there or pass --versions FILE",
                        v.major, v.minor
                    )
                } else {
                    format!(
                        "releases of {}.{} listed: {} (add it there or pass --versions FILE)",
                        v.major,
                        v.minor,
                        line.join(", ")
                    )
                }
            )));
        }
    }
    if good.line() != bad.line() {
        return Err(Error::bad_input(format!(
            "error: --good {good} and --bad {bad} are in different release lines\n  help: bisect inside one line: k3s backports fixes line by line, so releases of different lines are not one history"
        )));
    }
    if good == bad {
        return Err(Error::bad_input(format!(
            "error: --good and --bad are both {good}\n  help: give two different releases of one line"
        )));
    }

    let range = list.range(&good, &bad);
    let n = range.len();
    let limit = run_limit(n);
    let bad_is_old = bad < good;
    let dir = a
        .options
        .results
        .join(stamped(&format!("bisect-{}", sc.check.name)));
    create_dir(&dir)?;
    out(&format!(
        "bisect {}: {n} releases of {}.{} from {} to {}; at most {limit} runs (⌈log2 {n}⌉+1){}",
        sc.check.name,
        good.major,
        good.minor,
        range[0],
        range[n - 1],
        if a.sim {
            " on the k3s stand-in, not real k3s"
        } else {
            ""
        }
    ));
    out(&format!(
        "rule: --bad {bad} runs first to learn the bad verdict; --good {good} is trusted to show the other one (not run); inconclusive runs stop the search"
    ));
    if let Some(archive) = &a.options.image_archive {
        let engine = crate::docker::Engine::connect().await?;
        engine.load_archive(archive).await?;
    }

    let t0 = Instant::now();
    let mut bisector = Bisector {
        g,
        a,
        dir: &dir,
        argv: std::env::args().collect(),
        limit,
        good: &good,
        bad: &bad,
        range: &range,
        probes: Vec::new(),
    };

    // The bad endpoint: its verdict is what "bad" means for this search.
    let bad_verdict = match bisector.probe(&bad, "the --bad endpoint").await? {
        Ok(v @ (Outcome::Fixed | Outcome::Reproduced)) => v,
        Ok(v) => {
            return bisector.stop(
                None,
                format!(
                    "--bad {bad} is {v}, neither fixed nor reproduced: there is no bad verdict to search for (see its results folder)"
                ),
                exit::INCONCLUSIVE,
            );
        }
        Err(code) => {
            return bisector.stop(
                None,
                format!("the run of --bad {bad} broke; nothing was searched"),
                code,
            );
        }
    };
    let good_verdict = if bad_verdict == Outcome::Fixed {
        Outcome::Reproduced
    } else {
        Outcome::Fixed
    };
    let (old_verdict, new_verdict) = if bad_is_old {
        (bad_verdict, good_verdict)
    } else {
        (good_verdict, bad_verdict)
    };

    let mut b = Bisection::new(n);
    while let Some(at) = b.next() {
        let v = &range[at];
        let why = format!("between {} and {}", range[b.lo], range[b.hi]);
        let side = match bisector.probe(v, &why).await? {
            Ok(verdict) if verdict == old_verdict => Side::Old,
            Ok(verdict) if verdict == new_verdict => Side::New,
            Ok(verdict) => {
                return bisector.stop(
                    Some(bad_verdict),
                    format!(
                        "{v} is {verdict}: it is not taken as good or bad. The change is still somewhere from {} to {}; look at {v}'s results, then re-run with a narrower --good/--bad",
                        range[b.lo], range[b.hi]
                    ),
                    exit::INCONCLUSIVE,
                );
            }
            Err(code) => {
                return bisector.stop(
                    Some(bad_verdict),
                    format!(
                        "the run of {v} broke; the change is somewhere from {} to {}",
                        range[b.lo], range[b.hi]
                    ),
                    code,
                );
            }
        };
        b.record(at, side);
    }
    let Some(at) = b.answer() else {
        // `next()` is None only once the answer is pinned; kept total rather than indexed.
        return Err(anyhow::anyhow!(
            "internal error (a bug in repro): bisection without an answer"
        )
        .into());
    };
    let first_new = &range[at];
    let last_old = &range[at - 1];
    out("");
    out(&format!(
        "answer: {first_new} is the first release showing `{new_verdict}` ({} verdict); {last_old} is the last showing `{old_verdict}`",
        if new_verdict == good_verdict {
            "the --good"
        } else {
            "the --bad"
        }
    ));
    if new_verdict == Outcome::Fixed {
        match sc.check.fixed_in.first_in_line(first_new) {
            Some(f) if f == first_new => {
                out(&format!(
                    "fixed-in agrees: it names {f} for {}.{}",
                    f.major, f.minor
                ));
            }
            Some(f) => out(&format!(
                "fixed-in DISAGREES: it names {f} for {}.{} (check it, or the runs)",
                f.major, f.minor
            )),
            None => out(&format!(
                "fixed-in names no release of {}.{}",
                first_new.major, first_new.minor
            )),
        }
    }
    if !bisector
        .probes
        .iter()
        .any(|p| p.verdict == Some(good_verdict))
    {
        out(&format!(
            "note: no run showed `{good_verdict}`; the answer rests on --good {good} showing it (not run — confirm with `repro run {} --k3s-version {good}{}`)",
            sc.check.name,
            if a.sim { " --sim" } else { "" }
        ));
    }
    out(&format!(
        "runs: {} (limit {limit} for {n} releases), {:.1}s",
        bisector.probes.len(),
        t0.elapsed().as_secs_f64()
    ));
    bisector.save(Some(bad_verdict), Some(first_new.to_string()), None)?;
    out(&format!("results: {}", dir.display()));
    Ok(exit::OK)
}

/// The runs of one bisection, and what it needs to record them.
struct Bisector<'a> {
    g: &'a Global,
    a: &'a BisectArgs,
    dir: &'a Path,
    argv: Vec<String>,
    limit: usize,
    good: &'a K3sVersion,
    bad: &'a K3sVersion,
    range: &'a [K3sVersion],
    probes: Vec<Probe>,
}

impl Bisector<'_> {
    /// Runs the check on `v`: Ok(verdict), or Err(exit code) when the run broke or was
    /// interrupted. The outer error only for a bug (the input was validated up front).
    async fn probe(&mut self, v: &K3sVersion, why: &str) -> Result<Result<Outcome, i32>, Error> {
        let target = Target {
            check: self.a.check.clone(),
            topology: None,
            k3s_version: Some(v.to_string()),
            image: None,
            sim: self.a.sim,
        };
        let (sc, plan) = resolve(self.g.root.as_deref(), &target)?;
        // The verdict is what bisect reads; `expect` only sets the run's own exit code.
        let cfg = self.a.options.to_config(
            target,
            Outcome::Fixed,
            self.dir.to_path_buf(),
            self.argv.clone(),
        );
        let k = self.probes.len() + 1;
        let limit = self.limit;
        out(&format!("run {k}/≤{limit}: {v} ({why}) …"));
        let version = v.clone();
        // Its line when the run ends.
        let line = Arc::new(move |e: &RunEvent<'_>| {
            if let RunEvent::Finished(end) = e {
                let verdict = end.outcome().map_or("no verdict", Outcome::as_str);
                let why = match (&end.error, end.verdict.is_none()) {
                    (Some(e), true) => format!(" — {e}"),
                    _ => String::new(),
                };
                out(&format!(
                    "run {k}/≤{limit}: {version} → {verdict} ({:.1}s){why}",
                    end.seconds
                ));
            }
        });
        let end = run::execute(&cfg, sc, plan, vec![line]).await;
        self.probes.push(Probe {
            version: v.to_string(),
            verdict: end.outcome(),
            seconds: end.seconds,
            results: end.dir.as_ref().map(|d| d.display().to_string()),
            error: end.why(),
        });
        Ok(match (end.code, end.outcome()) {
            (exit::INTERRUPTED, _) => Err(exit::INTERRUPTED),
            (_, Some(v)) => Ok(v),
            (code, None) => Err(if code == exit::OK { exit::INFRA } else { code }),
        })
    }

    /// Stops the search early: says why, records it, returns the exit code.
    fn stop(&self, bad_verdict: Option<Outcome>, why: String, code: i32) -> Result<i32, Error> {
        out("");
        out(&format!("stopped: {why}"));
        out(&format!(
            "runs: {} (limit {} for {} releases)",
            self.probes.len(),
            self.limit,
            self.range.len()
        ));
        self.save(bad_verdict, None, Some(why))?;
        out(&format!("results: {}", self.dir.display()));
        Ok(code)
    }

    /// Writes bisect.json.
    fn save(
        &self,
        bad_verdict: Option<Outcome>,
        answer: Option<String>,
        stopped: Option<String>,
    ) -> Result<(), Error> {
        let r = Record {
            check: &self.a.check,
            good: self.good.to_string(),
            bad: self.bad.to_string(),
            releases: self.range.iter().map(ToString::to_string).collect(),
            run_limit: self.limit,
            bad_verdict,
            probes: &self.probes,
            runs: self.probes.len(),
            answer,
            stopped,
        };
        let path = self.dir.join("bisect.json");
        let text = serde_json::to_string_pretty(&r).map_err(anyhow::Error::from)?;
        std::fs::write(&path, text).map_err(|source| Error::Write { path, source })
    }
}
