//! `repro bisect <check> --good V --bad V`: the first release of a line whose verdict changed.
//!
//! The search rule is in `crate::matrix::bisect`, its runs in `crate::matrix::bisector`; this
//! checks the input and prints. Run `--bad` to learn its verdict, trust `--good` to
//! show the other one, then binary-search the releases between them — at most ⌈log2 n⌉ + 1 runs
//! for n releases. An inconclusive (or broken) run stops the search with the range narrowed so
//! far: it is never counted as good or bad.

use std::sync::Arc;

use crate::catalog::{self, Catalog};
use crate::cli::{BisectArgs, Format, Global};
use crate::error::Error;
use crate::exit::Exit;
use crate::matrix::bisect::run_limit;
use crate::matrix::bisector::{self, Search};
use crate::releases::ReleaseList;
use crate::result::Outcome;
use crate::run::Target;
use distro::Version;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::common::{create_dir, out, resolve, stamped, version_entry};

pub(crate) async fn run(g: &Global, a: &BisectArgs) -> Result<Exit, Error> {
    // One listener for every run of the search and the time between them (#42).
    crate::run::interrupt::listen_process();
    if a.format == Format::Json {
        super::common::people_to_stderr();
    }
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref())?;
    let sc = cat.scenario(&a.check, None)?;
    if !sc.check.steps.iter().any(|s| !s.bug.is_empty()) {
        return Err(crate::diag::Diagnostic::general(
            format!(
                "check `{}` has no bug signature (`bug:` in its steps), so its only verdicts are `fixed` and `inconclusive` — and an inconclusive run is never taken as good or bad",
                sc.check.name
            ),
            "bisect a check that describes the bug, e.g. etcd-split",
        )
        .into());
    }
    if let Some(file) = &a.commits {
        return commits(g, a, &sc.check.name, file).await;
    }
    let list = ReleaseList::find(sc.topology.distro, a.versions.as_deref(), root.as_deref())?;
    // clap requires both without --commits.
    let (Some(good), Some(bad)) = (&a.good, &a.bad) else {
        return Err(Error::usage(
            "give --good and --bad (releases), or --commits FILE",
        ));
    };
    let good = version_entry(good, "--good").await?;
    let bad = version_entry(bad, "--bad").await?;
    crate::matrix::bisect::check_endpoints(&list, &good, &bad)?;

    let range = list.range(&good, &bad);
    let n = range.len();
    let limit = run_limit(n);
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
        use crate::docker::DockerApi;
        let engine = crate::docker::connect().await?;
        engine.load_archive(archive).await?;
    }

    let argv: Vec<String> = std::env::args().collect();
    let prepare = |v: &Version| -> BoxFuture<'_, Result<_, Error>> {
        let mut target = Target {
            version: Some(v.to_string()),
            no_images_tarball: a.options.images.no_images_tarball,
            ..Target::of(a.check.clone(), a.sim, a.sim_pace)
        };
        let (dir, argv) = (&dir, &argv);
        async move {
            // A real rke2 release fetches its release artifacts first (no bar: many runs).
            let (sc, plan) =
                super::common::resolve_fetching(g.root.as_deref(), &mut target, false).await?;
            // The verdict is what bisect reads; `expect` only sets the run's own exit code.
            let cfg = a
                .options
                .to_config(target, Outcome::Fixed, dir.clone(), argv.clone());
            Ok((sc, plan, cfg))
        }
        .boxed()
    };
    let search = Search {
        check: &sc.check.name,
        fixed_in: &sc.check.fixed_in,
        good: &good,
        bad: &bad,
        range: &range,
        limit,
        sim: a.sim,
        dir: &dir,
        display: &display(a),
    };
    let ended = bisector::bisect(&search, &prepare, Arc::new(out)).await;
    ended_with(ended, &dir, a.format)
}

/// `--progress`: each run's live display on a terminal (the runs go one after the other).
fn display(
    a: &BisectArgs,
) -> impl Fn(&crate::plan::Plan) -> Vec<Arc<dyn crate::run::Receiver>> + Sync {
    let live = a.progress.is_live();
    let timeout = a.options.timeout;
    move |plan: &crate::plan::Plan| {
        if !live {
            return Vec::new();
        }
        let nodes: Vec<String> = plan.nodes.iter().map(|n| n.name.clone()).collect();
        vec![
            Arc::new(crate::progress::Progress::new(true, &nodes, timeout))
                as Arc<dyn crate::run::Receiver>,
        ]
    }
}

/// Bad input found by the first run's preparation (a commit with no build, a check whose
/// topology no build runs on) is exit 2 with nothing created: the bisect's folder, still empty
/// then, is removed (`remove_dir` removes only an empty one). Under `--format json`, bisect.json
/// (written whenever the search came to an answer or a stop) is stdout's one document.
fn ended_with(
    ended: Result<Exit, Error>,
    dir: &std::path::Path,
    format: Format,
) -> Result<Exit, Error> {
    if matches!(&ended, Err(e) if e.exit() == Exit::BadInput) {
        let _ = std::fs::remove_dir(dir);
    }
    if format == Format::Json && ended.is_ok() {
        let path = dir.join(crate::results_folder::BISECT_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let _ = super::common::write_stdout(&format!("{}\n", text.trim_end()));
    }
    ended
}

/// `repro bisect <check> --commits FILE`: the first commit of the list whose CI build's verdict
/// differs from the first commit's. Each run fetches (or reuses from the cache) and verifies its
/// commit's build first, as `--k3s-commit` does; the check's own topology and `--sim` apply.
async fn commits(
    g: &Global,
    a: &BisectArgs,
    check: &str,
    file: &std::path::Path,
) -> Result<Exit, Error> {
    let list = crate::builds::commits::read(file)?;
    let n = list.len();
    let limit = run_limit(n);
    let dir = a.options.results.join(stamped(&format!("bisect-{check}")));
    create_dir(&dir)?;
    out(&format!(
        "bisect {check}: {n} commits from {} to {}; at most {limit} runs (⌈log2 {n}⌉+1){}",
        list[0],
        list[n - 1],
        if a.sim {
            " on the k3s stand-in, not real k3s"
        } else {
            ""
        }
    ));
    out("rule: the first commit runs first to learn its verdict; the answer is the first commit whose verdict differs; inconclusive runs stop the search");
    if let Some(archive) = &a.options.image_archive {
        use crate::docker::DockerApi;
        let engine = crate::docker::connect().await?;
        engine.load_archive(archive).await?;
    }
    let argv: Vec<String> = std::env::args().collect();
    let (dir_ref, argv_ref) = (&dir, &argv);
    let prepare = |sha: &String| -> BoxFuture<'_, Result<_, Error>> {
        let mut target = Target {
            k3s_commit: Some(sha.clone()),
            no_images_tarball: a.options.images.no_images_tarball,
            ..Target::of(a.check.clone(), a.sim, a.sim_pace)
        };
        async move {
            // Downloaded and verified before the run creates anything; no bar (many runs).
            super::common::prepare_build(&mut target, false).await?;
            let (sc, plan) = resolve(g.root.as_deref(), &target)?;
            let cfg =
                a.options
                    .to_config(target, Outcome::Fixed, dir_ref.clone(), argv_ref.clone());
            Ok((sc, plan, cfg))
        }
        .boxed()
    };
    let search = bisector::CommitSearch {
        check,
        commits: &list,
        limit,
        dir: &dir,
        display: &display(a),
    };
    let ended = bisector::bisect_commits(&search, &prepare, Arc::new(out)).await;
    ended_with(ended, &dir, a.format)
}
