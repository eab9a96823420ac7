//! `repro bisect <check> --good V --bad V`: the first release of a line whose verdict changed.
//!
//! The search rule is in `crate::bisect`: run `--bad` to learn its verdict, trust `--good` to
//! show the other one, then binary-search the releases between them — at most ⌈log2 n⌉ + 1 runs
//! for n releases. An inconclusive (or broken) run stops the search with the range narrowed so
//! far: it is never counted as good or bad.

use std::path::Path;
use std::time::Instant;

use crate::bisect::{run_limit, Bisection, Side};
use crate::catalog::{self, Catalog};
use crate::cli::{BisectArgs, Global, Outcome, Target};
use crate::exit;
use crate::releases::ReleaseList;
use crate::version::K3sVersion;

use super::matrix::{bad_input, out, stamped, version_entry};

/// One run of the bisection, for the output and bisect.json.
#[derive(Debug, Clone, serde::Serialize)]
struct Probe {
    version: String,
    verdict: Option<String>,
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
    bad_verdict: Option<String>,
    probes: &'a [Probe],
    runs: usize,
    answer: Option<String>,
    stopped: Option<String>,
}

pub async fn run(g: &Global, a: &BisectArgs) -> anyhow::Result<i32> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = match Catalog::load(root.as_deref()) {
        Ok(c) => c,
        Err(d) => return Ok(bad_input(&d.to_string())),
    };
    let sc = match cat.scenario(&a.check, None) {
        Ok(s) => s,
        Err(d) => return Ok(bad_input(&d.to_string())),
    };
    if !sc.check.steps.iter().any(|s| !s.bug.is_empty()) {
        return Ok(bad_input(&format!(
            "error: check `{}` has no bug signature (`bug:` in its steps), so its only verdicts are `fixed` and `inconclusive` — and an inconclusive run is never taken as good or bad\n  help: bisect a check that describes the bug, e.g. etcd-split",
            sc.check.name
        )));
    }
    let list = match ReleaseList::find(a.versions.as_deref(), root.as_deref()) {
        Ok(l) => l,
        Err(d) => return Ok(bad_input(&d.to_string())),
    };
    let good = match version_entry(&a.good, "--good").await {
        Ok(v) => v,
        Err((code, msg)) => {
            eprintln!("{msg}");
            return Ok(code);
        }
    };
    let bad = match version_entry(&a.bad, "--bad").await {
        Ok(v) => v,
        Err((code, msg)) => {
            eprintln!("{msg}");
            return Ok(code);
        }
    };
    for (flag, v) in [("--good", &good), ("--bad", &bad)] {
        if !list.contains(v) {
            let line: Vec<String> = list.line_of(v).iter().map(ToString::to_string).collect();
            return Ok(bad_input(&format!(
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
        return Ok(bad_input(&format!(
            "error: --good {good} and --bad {bad} are in different release lines\n  help: bisect inside one line: k3s backports fixes line by line, so releases of different lines are not one history"
        )));
    }
    if good == bad {
        return Ok(bad_input(&format!(
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
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!(
            "repro: cannot create the bisect folder {}: {e}",
            dir.display()
        );
        return Ok(exit::INFRA);
    }
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
        match crate::docker::Engine::connect().await {
            Ok(engine) => {
                if let Err(e) = engine.load_archive(archive).await {
                    eprintln!("repro: {e:#}");
                    return Ok(exit::INFRA);
                }
            }
            Err(e) => {
                eprintln!("repro: {e}");
                return Ok(exit::INFRA);
            }
        }
    }

    let argv: Vec<String> = std::env::args().collect();
    let mut probes: Vec<Probe> = Vec::new();
    let t0 = Instant::now();
    let mut bisector = Bisector {
        g,
        a,
        dir: &dir,
        argv,
        limit,
    };

    // The bad endpoint: its verdict is what "bad" means for this search.
    let first = bisector
        .probe(&bad, "the --bad endpoint", &mut probes)
        .await?;
    let bad_verdict = match first {
        Ok(v) if v == "fixed" || v == "reproduced" => v,
        Ok(v) => {
            return Ok(stop(
                &mut bisector,
                &probes,
                &good,
                &bad,
                &range,
                None,
                format!(
                    "--bad {bad} is {v}, neither fixed nor reproduced: there is no bad verdict to search for (see its results folder)"
                ),
                exit::OUTCOME_DIFFERS,
            ));
        }
        Err(code) => {
            return Ok(stop(
                &mut bisector,
                &probes,
                &good,
                &bad,
                &range,
                None,
                format!("the run of --bad {bad} broke; nothing was searched"),
                code,
            ));
        }
    };
    let good_verdict = if bad_verdict == "fixed" {
        "reproduced"
    } else {
        "fixed"
    }
    .to_string();
    let (old_verdict, new_verdict) = if bad_is_old {
        (bad_verdict.clone(), good_verdict.clone())
    } else {
        (good_verdict.clone(), bad_verdict.clone())
    };

    let mut b = Bisection::new(n);
    while let Some(at) = b.next() {
        let v = &range[at];
        let why = format!("between {} and {}", range[b.lo], range[b.hi]);
        let side = match bisector.probe(v, &why, &mut probes).await? {
            Ok(verdict) if verdict == old_verdict => Side::Old,
            Ok(verdict) if verdict == new_verdict => Side::New,
            Ok(verdict) => {
                return Ok(stop(
                    &mut bisector,
                    &probes,
                    &good,
                    &bad,
                    &range,
                    Some(&bad_verdict),
                    format!(
                        "{v} is {verdict}: it is not taken as good or bad. The change is still somewhere from {} to {}; look at {v}'s results, then re-run with a narrower --good/--bad",
                        range[b.lo], range[b.hi]
                    ),
                    exit::OUTCOME_DIFFERS,
                ));
            }
            Err(code) => {
                return Ok(stop(
                    &mut bisector,
                    &probes,
                    &good,
                    &bad,
                    &range,
                    Some(&bad_verdict),
                    format!(
                        "the run of {v} broke; the change is somewhere from {} to {}",
                        range[b.lo], range[b.hi]
                    ),
                    code,
                ));
            }
        };
        b.record(at, side);
    }
    let Some(at) = b.answer() else {
        // `next()` is None only once the answer is pinned; kept total rather than indexed.
        return Ok(exit::INFRA);
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
    if new_verdict == "fixed" {
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
    if !probes
        .iter()
        .any(|p| p.verdict.as_deref() == Some(good_verdict.as_str()))
    {
        out(&format!(
            "note: no run showed `{good_verdict}`; the answer rests on --good {good} showing it (not run — confirm with `repro run {} --k3s-version {good}{}`)",
            sc.check.name,
            if a.sim { " --sim" } else { "" }
        ));
    }
    out(&format!(
        "runs: {} (limit {limit} for {n} releases), {:.1}s",
        probes.len(),
        t0.elapsed().as_secs_f64()
    ));
    save(
        &dir,
        &Record {
            check: &sc.check.name,
            good: good.to_string(),
            bad: bad.to_string(),
            releases: range.iter().map(ToString::to_string).collect(),
            run_limit: limit,
            bad_verdict: Some(bad_verdict),
            probes: &probes,
            runs: probes.len(),
            answer: Some(first_new.to_string()),
            stopped: None,
        },
    );
    out(&format!("results: {}", dir.display()));
    Ok(exit::OK)
}

struct Bisector<'a> {
    g: &'a Global,
    a: &'a BisectArgs,
    dir: &'a Path,
    argv: Vec<String>,
    limit: usize,
}

impl Bisector<'_> {
    /// Runs the check on `v`. Ok(Ok(verdict)), Ok(Err(exit code)) when the run broke or was
    /// interrupted, Err only for a bug (the input was validated up front).
    async fn probe(
        &mut self,
        v: &K3sVersion,
        why: &str,
        probes: &mut Vec<Probe>,
    ) -> anyhow::Result<Result<String, i32>> {
        let target = Target {
            check: self.a.check.clone(),
            topology: None,
            k3s_version: Some(v.to_string()),
            image: None,
            sim: self.a.sim,
        };
        let (sc, plan) = super::plan::resolve(self.g, &target).map_err(|m| anyhow::anyhow!(m))?;
        // The verdict is what bisect reads; `expect` only sets the run's own exit code.
        let opts = self
            .a
            .options
            .for_run(Outcome::Fixed, self.dir.to_path_buf());
        let k = probes.len() + 1;
        out(&format!("run {k}/≤{}: {v} ({why}) …", self.limit));
        let o = crate::run::execute(sc, plan, &target, &opts, self.argv.clone(), true).await;
        let dir = o.dir.as_ref().map(|d| d.display().to_string());
        probes.push(Probe {
            version: v.to_string(),
            verdict: o.verdict.clone(),
            seconds: o.seconds,
            results: dir.clone(),
            error: o.error.clone(),
        });
        let verdict = o.verdict.as_deref().unwrap_or("no verdict");
        out(&format!(
            "run {k}/≤{}: {v} → {verdict} ({:.1}s){}",
            self.limit,
            o.seconds,
            match (&o.error, o.verdict.is_none()) {
                (Some(e), true) => format!(" — {e}"),
                _ => String::new(),
            }
        ));
        Ok(match (o.code, o.verdict) {
            (exit::INTERRUPTED, _) => Err(exit::INTERRUPTED),
            (_, Some(v)) => Ok(v),
            (code, None) => Err(if code == exit::OK { exit::INFRA } else { code }),
        })
    }
}

/// Stops the search early: says why, records it, returns the exit code.
#[allow(clippy::too_many_arguments)]
fn stop(
    b: &mut Bisector<'_>,
    probes: &[Probe],
    good: &K3sVersion,
    bad: &K3sVersion,
    range: &[K3sVersion],
    bad_verdict: Option<&str>,
    why: String,
    code: i32,
) -> i32 {
    out("");
    out(&format!("stopped: {why}"));
    out(&format!(
        "runs: {} (limit {} for {} releases)",
        probes.len(),
        b.limit,
        range.len()
    ));
    save(
        b.dir,
        &Record {
            check: &b.a.check,
            good: good.to_string(),
            bad: bad.to_string(),
            releases: range.iter().map(ToString::to_string).collect(),
            run_limit: b.limit,
            bad_verdict: bad_verdict.map(str::to_string),
            probes,
            runs: probes.len(),
            answer: None,
            stopped: Some(why),
        },
    );
    out(&format!("results: {}", b.dir.display()));
    code
}

fn save(dir: &Path, r: &Record<'_>) {
    if let Ok(text) = serde_json::to_string_pretty(r) {
        let _ = std::fs::write(dir.join("bisect.json"), text);
    }
}
