//! The runs of `repro bisect` (the search itself is `bisect.rs`, pure): run `--bad` to learn its
//! verdict, then a release per step of the search, each a full `run::execute`; stop early on a
//! run that is inconclusive or broke (never counted as good or bad); record bisect.json.
//! `cmd::bisect` checks the input and prints what this says.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::error::Error;
use crate::exit::Exit;
use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::run::{self, RunConfig, RunEvent};
use crate::scenario::Scenario;
use distro::{ReleaseSet, Version};

use super::batch::Say;
use super::bisect::{Bisection, Side};

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

/// A release's run, ready to go: its scenario, plan and configuration (the command resolves
/// them, so bad input is its to report).
pub(crate) type Prepare<'a> = &'a dyn Fn(&Version) -> Result<(Scenario, Plan, RunConfig), Error>;

/// What one bisection is asked.
pub(crate) struct Search<'a> {
    pub(crate) check: &'a str,
    pub(crate) fixed_in: &'a ReleaseSet,
    pub(crate) good: &'a Version,
    pub(crate) bad: &'a Version,
    /// The releases from `good` to `bad`, oldest first.
    pub(crate) range: &'a [Version],
    pub(crate) limit: usize,
    pub(crate) sim: bool,
    /// The bisection's folder: bisect.json and the runs' folders.
    pub(crate) dir: &'a Path,
}

/// Runs the bisection: the exit it came to (0 with an answer; the stopping run's otherwise).
pub(crate) async fn bisect(s: &Search<'_>, prepare: Prepare<'_>, say: Say) -> Result<Exit, Error> {
    let (good, bad, range, limit, dir) = (s.good, s.bad, s.range, s.limit, s.dir);
    let n = range.len();
    let bad_is_old = bad < good;
    let out = |line: &str| say(line);
    let t0 = Instant::now();
    let mut bisector = Bisector {
        check: s.check,
        dir,
        limit,
        good,
        bad,
        range,
        prepare,
        say: say.clone(),
        probes: Vec::new(),
    };

    // The bad endpoint: its verdict is what "bad" means for this search.
    let bad_verdict = match bisector.probe(bad, "the --bad endpoint").await? {
        Ok(v @ (Outcome::Fixed | Outcome::Reproduced)) => v,
        Ok(v) => {
            return bisector.stop(
                None,
                format!(
                    "--bad {bad} is {v}, neither fixed nor reproduced: there is no bad verdict to search for (see its results folder)"
                ),
                Exit::Inconclusive,
            );
        }
        Err(exit) => {
            return bisector.stop(
                None,
                format!("the run of --bad {bad} broke; nothing was searched"),
                exit,
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
                    Exit::Inconclusive,
                );
            }
            Err(exit) => {
                return bisector.stop(
                    Some(bad_verdict),
                    format!(
                        "the run of {v} broke; the change is somewhere from {} to {}",
                        range[b.lo], range[b.hi]
                    ),
                    exit,
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
        // A release candidate answer is compared with the first candidate evidence names.
        let named = if s.fixed_in.is_candidate_of_first(first_new) {
            s.fixed_in.first_candidate_in_line(first_new)
        } else {
            s.fixed_in.first_in_line(first_new)
        };
        match named {
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
            None if s.fixed_in.is_candidate_of_first(first_new) => out(&format!(
                "fixed-in places no release candidate of {}.{}.{} (no evidence names one)",
                first_new.major, first_new.minor, first_new.patch
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
            s.check,
            if s.sim { " --sim" } else { "" }
        ));
    }
    out(&format!(
        "runs: {} (limit {limit} for {n} releases), {:.1}s",
        bisector.probes.len(),
        t0.elapsed().as_secs_f64()
    ));
    bisector.save(Some(bad_verdict), Some(first_new.to_string()), None)?;
    out(&format!("results: {}", dir.display()));
    Ok(Exit::Ok)
}

/// The runs of one bisection, and what it needs to record them.
struct Bisector<'a> {
    check: &'a str,
    dir: &'a Path,
    limit: usize,
    good: &'a Version,
    bad: &'a Version,
    range: &'a [Version],
    prepare: Prepare<'a>,
    say: Say,
    probes: Vec<Probe>,
}

impl Bisector<'_> {
    /// Runs the check on `v`: Ok(verdict), or Err(its exit) when the run broke or was
    /// interrupted. The outer error only for a bug (the input was validated up front).
    async fn probe(&mut self, v: &Version, why: &str) -> Result<Result<Outcome, Exit>, Error> {
        let (sc, plan, cfg) = (self.prepare)(v)?;
        let out = |line: &str| (self.say)(line);
        let k = self.probes.len() + 1;
        let limit = self.limit;
        out(&format!("run {k}/≤{limit}: {v} ({why}) …"));
        let version = v.clone();
        let say = self.say.clone();
        // Its line when the run ends.
        let line = Arc::new(move |e: &RunEvent<'_>| {
            if let RunEvent::Finished(end) = e {
                let verdict = end.outcome().map_or("no verdict", Outcome::as_str);
                let why = match (end.error(), end.verdict.is_none()) {
                    (Some(e), true) => format!(" — {e}"),
                    _ => String::new(),
                };
                say(&format!(
                    "run {k}/≤{limit}: {version} → {verdict} ({:.1}s){why}",
                    end.seconds
                ));
            }
        });
        let end = run::execute(&cfg, sc, plan, vec![line], crate::report::render_all_with).await;
        self.probes.push(Probe {
            version: v.to_string(),
            verdict: end.outcome(),
            seconds: end.seconds,
            results: end.dir.as_ref().map(|d| d.display().to_string()),
            error: end.why(),
        });
        Ok(match (end.exit(), end.outcome()) {
            (Exit::Interrupted, _) => Err(Exit::Interrupted),
            (_, Some(v)) => Ok(v),
            (Exit::Ok, None) => Err(Exit::Infra),
            (exit, None) => Err(exit),
        })
    }

    /// Stops the search early: says why, records it, returns the exit.
    fn stop(&self, bad_verdict: Option<Outcome>, why: String, exit: Exit) -> Result<Exit, Error> {
        let out = |line: &str| (self.say)(line);
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
        Ok(exit)
    }

    /// Writes bisect.json.
    fn save(
        &self,
        bad_verdict: Option<Outcome>,
        answer: Option<String>,
        stopped: Option<String>,
    ) -> Result<(), Error> {
        let r = Record {
            check: self.check,
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
        let path = self.dir.join(crate::results_folder::BISECT_FILE);
        let text = serde_json::to_string_pretty(&r).map_err(anyhow::Error::from)?;
        // Owner-only, atomically, like every file of a results folder.
        crate::results_folder::write_atomic(&path, text.as_bytes()).map_err(Error::from)
    }
}
