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

use futures_util::future::BoxFuture;

use super::batch::Say;
use super::bisect::{Bisection, Side};

/// One run of the bisection, for the output and bisect.json.
#[derive(Debug, Clone, serde::Serialize)]
struct Probe {
    /// The version run (for a commit: the version its build reports, or the commit when its
    /// build could not be had).
    version: String,
    /// The commit whose build ran (`--commits`).
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    verdict: Option<Outcome>,
    seconds: f64,
    results: Option<String>,
    error: Option<String>,
}

#[derive(Debug, serde::Serialize)]
struct Record<'a> {
    check: &'a str,
    /// The release bisect's endpoints; for `--commits`, the first and last commit.
    good: String,
    bad: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    releases: Vec<String>,
    /// `--commits`: the commits, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    commits: Vec<String>,
    run_limit: usize,
    bad_verdict: Option<Outcome>,
    probes: &'a [Probe],
    runs: usize,
    answer: Option<String>,
    stopped: Option<String>,
}

/// A release's (or a commit's) run, ready to go: its scenario, plan and configuration (the
/// command resolves them, so bad input is its to report).
pub(crate) type Prepare<'a, T = Version> =
    &'a dyn Fn(&T) -> BoxFuture<'a, Result<(Scenario, Plan, RunConfig), Error>>;

/// The receivers a run of the bisection shows itself to besides its line (the live display of
/// `--progress`, given the run's plan), none when the command shows only the lines.
pub(crate) type Display<'a> = &'a (dyn Fn(&Plan) -> Vec<Arc<dyn run::Receiver>> + Sync);

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
    pub(crate) display: Display<'a>,
}

/// Runs the bisection: the exit it came to (0 with an answer; the stopping run's otherwise).
pub(crate) async fn bisect(s: &Search<'_>, prepare: Prepare<'_>, say: Say) -> Result<Exit, Error> {
    let (good, bad, range, limit, dir) = (s.good, s.bad, s.range, s.limit, s.dir);
    let bad_is_old = bad < good;
    let out = |line: &str| say(line);
    let t0 = Instant::now();
    let mut bisector = Bisector {
        check: s.check,
        dir,
        limit,
        good: good.to_string(),
        bad: bad.to_string(),
        range,
        commits: false,
        prepare,
        display: s.display,
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

    let words = |b: &Bisection, v: &Version| {
        let still = format!("somewhere from {} to {}", range[b.lo], range[b.hi]);
        Words {
            why: format!("between {} and {}", range[b.lo], range[b.hi]),
            neither: format!("it is not taken as good or bad. The change is still {still}; look at {v}'s results, then re-run with a narrower --good/--bad"),
            still,
        }
    };
    let b = Bisection::new(range.len());
    let sides = (old_verdict, new_verdict, bad_verdict);
    let at = match bisector.search(b, sides, words).await? {
        Ok(at) => at,
        Err(exit) => return Ok(exit),
    };
    // Every position is a release here: the answer is always one of them.
    let at = at.ok_or_else(|| {
        Error::from(anyhow::anyhow!(
            "internal error (a bug in repro): bisection without an answer"
        ))
    })?;
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
        out(&fixed_in_says(s.fixed_in, first_new));
    }
    if !bisector
        .probes
        .iter()
        .any(|p| p.verdict == Some(good_verdict))
    {
        out(&format!(
            "note: no run showed `{good_verdict}`; the answer rests on --good {good} showing it (not run — confirm with `repro run {} --version {good}{}`)",
            s.check,
            if s.sim { " --sim" } else { "" }
        ));
    }
    bisector.answer(t0, Some(bad_verdict), Some(first_new.to_string()), None)?;
    Ok(Exit::Ok)
}

/// Whether the check's `fixed-in` agrees with the first fixed release the runs found: a release
/// candidate answer is compared with the first candidate evidence names.
fn fixed_in_says(fixed_in: &ReleaseSet, first_new: &Version) -> String {
    let named = if fixed_in.is_candidate_of_first(first_new) {
        fixed_in.first_candidate_in_line(first_new)
    } else {
        fixed_in.first_in_line(first_new)
    };
    match named {
        Some(f) if f == first_new => {
            format!("fixed-in agrees: it names {f} for {}.{}", f.major, f.minor)
        }
        Some(f) => format!(
            "fixed-in DISAGREES: it names {f} for {}.{} (check it, or the runs)",
            f.major, f.minor
        ),
        None if fixed_in.is_candidate_of_first(first_new) => format!(
            "fixed-in places no release candidate of {}.{}.{} (no evidence names one)",
            first_new.major, first_new.minor, first_new.patch
        ),
        None => format!(
            "fixed-in names no release of {}.{}",
            first_new.major, first_new.minor
        ),
    }
}

/// What one bisection over commits is asked.
pub(crate) struct CommitSearch<'a> {
    pub(crate) check: &'a str,
    /// The commits, oldest first (at least two).
    pub(crate) commits: &'a [String],
    pub(crate) limit: usize,
    /// The bisection's folder: bisect.json and the runs' folders.
    pub(crate) dir: &'a Path,
    pub(crate) display: Display<'a>,
}

/// Bisects over commits' builds: the first commit is run to learn its verdict, then a binary
/// search for the first commit whose verdict differs from it. The search is over positions
/// `0..=n`, `n` standing for "none differs" (never run), so it needs at most ⌈log2 n⌉ runs after
/// the first: ⌈log2 n⌉ + 1 in all, like the release bisect. Exit 0 with an answer; 1 when no
/// commit differs from the first (the change is not in the list); the stopping run's otherwise.
pub(crate) async fn bisect_commits(
    s: &CommitSearch<'_>,
    prepare: Prepare<'_, String>,
    say: Say,
) -> Result<Exit, Error> {
    let (commits, limit, dir) = (s.commits, s.limit, s.dir);
    let n = commits.len();
    let out = |line: &str| say(line);
    let t0 = Instant::now();
    let mut bisector = Bisector {
        check: s.check,
        dir,
        limit,
        good: commits[0].clone(),
        bad: commits[n - 1].clone(),
        range: commits,
        commits: true,
        prepare,
        display: s.display,
        say: say.clone(),
        probes: Vec::new(),
    };
    let first = match bisector.probe(&commits[0], "the first commit").await? {
        Ok(v @ (Outcome::Fixed | Outcome::Reproduced)) => v,
        Ok(v) => {
            return bisector.stop(
                None,
                format!(
                    "the first commit {} is {v}, neither fixed nor reproduced: there is no verdict to search a change from (see its results folder)",
                    commits[0]
                ),
                Exit::Inconclusive,
            );
        }
        Err(exit) => {
            return bisector.stop(
                None,
                format!(
                    "the run of the first commit {} broke; nothing was searched",
                    commits[0]
                ),
                exit,
            );
        }
    };
    let other = if first == Outcome::Fixed {
        Outcome::Reproduced
    } else {
        Outcome::Fixed
    };
    let span = |b: &Bisection| {
        format!(
            "between {} and {}",
            short(&commits[b.lo]),
            commits
                .get(b.hi)
                .map_or("the end of the list", |c| short(c))
        )
    };
    let words = |b: &Bisection, _: &String| {
        let span = span(b);
        Words {
            why: span.clone(),
            neither: format!("it is not taken as either side. The change is still {span}; look at its results, then re-run with a shorter list"),
            still: span,
        }
    };
    // Position `n` stands for "no commit differs" and is never run.
    let at = match bisector
        .search(Bisection::new(n + 1), (first, other, first), words)
        .await?
    {
        Ok(at) => at.unwrap_or(n),
        Err(exit) => return Ok(exit),
    };
    out("");
    let Some(first_new) = commits.get(at) else {
        out(&format!(
            "answer: no commit of the list shows anything but `{first}`: the change is not among these {n} commits"
        ));
        bisector.answer(
            t0,
            Some(first),
            None,
            Some(format!("every commit shows `{first}`")),
        )?;
        return Ok(Exit::OutcomeDiffers);
    };
    out(&format!(
        "answer: {first_new} is the first commit showing `{other}`; {} is the last showing `{first}`",
        commits[at - 1]
    ));
    bisector.answer(t0, Some(first), Some(first_new.clone()), None)?;
    Ok(Exit::Ok)
}

/// What a search says at one run: why it runs (`between A and B`), where the change still is,
/// and what a verdict of neither side leaves (after `{run} is {verdict}: `).
struct Words {
    why: String,
    still: String,
    neither: String,
}

/// A commit's first 12 hex digits, for the narrowing lines.
fn short(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

/// The runs of one bisection, and what it needs to record them.
struct Bisector<'a, 'p, T = Version> {
    check: &'a str,
    dir: &'a Path,
    limit: usize,
    good: String,
    bad: String,
    range: &'a [T],
    /// The range is commits (`--commits`), not releases.
    commits: bool,
    prepare: Prepare<'p, T>,
    display: Display<'a>,
    say: Say,
    probes: Vec<Probe>,
}

impl<T: std::fmt::Display> Bisector<'_, '_, T> {
    /// Runs the check on `v`: Ok(verdict), or Err(its exit) when the run broke or was
    /// interrupted. The outer error only for a bug (the input was validated up front), or, for
    /// a commit, a build that cannot be had.
    async fn probe(&mut self, v: &T, why: &str) -> Result<Result<Outcome, Exit>, Error> {
        // A signal between two runs stops the search as one during a run does (#42).
        if run::interrupt::interrupted().is_some() {
            return Ok(Err(Exit::Interrupted));
        }
        let (sc, plan, cfg) = (self.prepare)(v).await?;
        let out = |line: &str| (self.say)(line);
        let k = self.probes.len() + 1;
        let limit = self.limit;
        out(&format!("run {k}/≤{limit}: {v} ({why}) …"));
        let version = v.to_string();
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
        let mut receivers = (self.display)(&plan);
        receivers.push(line);
        let end = run::execute(&cfg, sc, plan, receivers, crate::report::render_all_with).await;
        let commit = self.commits.then(|| v.to_string());
        let version = match cfg.target.build.as_ref() {
            Some(b) if self.commits => b.info.reported.clone(),
            _ => v.to_string(),
        };
        self.probes.push(Probe {
            version,
            commit,
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

    /// The binary search over the range: each run's verdict taken as the old side's or the new
    /// side's (`sides`: old, new, and the bad verdict the record names). Ok(the answer's
    /// position, if the search pinned one), or Err(the exit) when a run of neither side, or one
    /// that broke, stopped it (said and saved by then). `words` say the search at a run.
    async fn search(
        &mut self,
        mut b: Bisection,
        (old, new, bad_verdict): (Outcome, Outcome, Outcome),
        words: impl Fn(&Bisection, &T) -> Words,
    ) -> Result<Result<Option<usize>, Exit>, Error> {
        let range = self.range;
        while let Some(at) = b.next() {
            let v = &range[at];
            let w = words(&b, v);
            let side = match self.probe(v, &w.why).await? {
                Ok(verdict) if verdict == old => Side::Old,
                Ok(verdict) if verdict == new => Side::New,
                Ok(verdict) => {
                    let why = format!("{v} is {verdict}: {}", w.neither);
                    return self
                        .stop(Some(bad_verdict), why, Exit::Inconclusive)
                        .map(Err);
                }
                Err(exit) => {
                    let why = format!("the run of {v} broke; the change is {}", w.still);
                    return self.stop(Some(bad_verdict), why, exit).map(Err);
                }
            };
            b.record(at, side);
        }
        Ok(Ok(b.answer()))
    }

    /// Stops the search early: says why, records it, returns the exit.
    fn stop(&self, bad_verdict: Option<Outcome>, why: String, exit: Exit) -> Result<Exit, Error> {
        let why = match (exit, run::interrupt::interrupted()) {
            (Exit::Interrupted, Some(s)) => format!("interrupted ({s}): {why}"),
            _ => why,
        };
        let out = |line: &str| (self.say)(line);
        out("");
        out(&format!("stopped: {why}"));
        out(&self.runs());
        self.record(bad_verdict, None, Some(why))?;
        Ok(exit)
    }

    /// Ends the search with what it came to: the runs and the time they took, then the record.
    fn answer(
        &self,
        t0: Instant,
        bad_verdict: Option<Outcome>,
        answer: Option<String>,
        stopped: Option<String>,
    ) -> Result<(), Error> {
        (self.say)(&format!(
            "{}, {:.1}s",
            self.runs(),
            t0.elapsed().as_secs_f64()
        ));
        self.record(bad_verdict, answer, stopped)
    }

    /// The runs' line: how many of how many allowed, over how many releases or commits.
    fn runs(&self) -> String {
        format!(
            "runs: {} (limit {} for {} {})",
            self.probes.len(),
            self.limit,
            self.range.len(),
            if self.commits { "commits" } else { "releases" }
        )
    }

    /// Writes bisect.json and says where the results are.
    fn record(
        &self,
        bad_verdict: Option<Outcome>,
        answer: Option<String>,
        stopped: Option<String>,
    ) -> Result<(), Error> {
        self.save(bad_verdict, answer, stopped)?;
        (self.say)(&format!("results: {}", self.dir.display()));
        Ok(())
    }

    /// Writes bisect.json.
    fn save(
        &self,
        bad_verdict: Option<Outcome>,
        answer: Option<String>,
        stopped: Option<String>,
    ) -> Result<(), Error> {
        let all: Vec<String> = self.range.iter().map(ToString::to_string).collect();
        let (releases, commits) = if self.commits {
            (Vec::new(), all)
        } else {
            (all, Vec::new())
        };
        let r = Record {
            check: self.check,
            good: self.good.clone(),
            bad: self.bad.clone(),
            releases,
            commits,
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
