//! `repro run <check>`: one run with the live display, then the summary on stdout.

use std::path::Path;
use std::sync::Arc;

use crate::cli::{Format, Global, RunArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::progress::Progress;
use crate::result::{Observed, Rule, RunResult};
use crate::run;
use crate::scenario::Expected;
use crate::term::Paint;

use super::common::out_painted;

/// One run of `plan` with the progress display (`live`: redrawn in place; else plain lines)
/// first among its `receivers`, its files rendered by the report: how `run` and `verify` make
/// their runs.
pub(crate) async fn execute_shown(
    cfg: &run::RunConfig,
    sc: crate::scenario::Scenario,
    plan: crate::plan::Plan,
    live: bool,
    mut receivers: Vec<Arc<dyn run::Receiver>>,
) -> run::RunEnd {
    let nodes: Vec<String> = plan.nodes.iter().map(|n| n.name.clone()).collect();
    receivers.insert(0, Arc::new(Progress::new(live, &nodes, cfg.timeout)));
    run::execute(cfg, sc, plan, receivers, crate::report::render_all_with).await
}

pub(crate) async fn run(g: &Global, args: &RunArgs) -> Result<Exit, Error> {
    if args.events.on_stdout() && args.format == Format::Json {
        return Err(crate::diag::Diagnostic::general(
            "--events - and --format json both want stdout",
            "write the events to a file (--events events.jsonl), or read the summary from the last `finished` event's results folder",
        )
        .into());
    }
    let mut cfg = args.to_config(std::env::args().collect());
    // Everything about the input is checked before Docker is touched: no half-created cluster
    // (a build under test is read, or downloaded and verified, first).
    super::common::prepare_build(&mut cfg.target, args.progress.is_live()).await?;
    let (sc, plan) = super::common::resolve_fetching(
        g.root.as_deref(),
        &mut cfg.target,
        args.progress.is_live(),
    )
    .await?;
    if let Err(why) = cfg.expect.resolve(&plan) {
        return Err(crate::diag::Diagnostic::general(
            why,
            "say which outcome counts as success: --expect fixed or --expect reproduced",
        )
        .into());
    }
    let receivers = super::common::event_stream(&args.events)?;
    let end = execute_shown(&cfg, sc, plan, args.progress.is_live(), receivers).await;
    if let (Some(r), Some(dir)) = (&end.result, &end.dir) {
        super::common::append_step_summary(&crate::report::step_summary::run(r, dir));
        match args.format {
            Format::Text => print_summary(r, dir),
            // A closed stdout (`| head -c0`) is not an error of the run: its exit code stands.
            Format::Json => {
                let _ = super::common::write_stdout(&crate::report::summary_json(r, dir));
            }
        }
    }
    end.status.map_err(Error::from)
}

/// Appends a formatted line to a String.
macro_rules! push_line {
    ($o:ident, $($t:tt)*) => {{
        $o.push_str(&format!($($t)*));
        $o.push('\n');
    }};
}

fn print_summary(r: &RunResult, dir: &Path) {
    let mut text = String::new();
    text.push('\n');
    push_line!(
        text,
        "{} on {} {}{}",
        r.check.name,
        r.distribution,
        // A build under test's own version is the run's (a commit build's is no release).
        r.build.as_ref().map_or(&r.k3s.version, |b| &b.reported),
        if r.k3s.stand_in {
            format!(" (repro stand-in, not real {})", r.distribution)
        } else {
            String::new()
        }
    );
    if let Some(b) = &r.build {
        push_line!(
            text,
            "build under test: {} (reports {}, sha256 {}) in {}",
            b.commit.as_deref().unwrap_or(&b.path),
            b.reported,
            b.sha256,
            r.k3s.image
        );
    }
    let logs = crate::report::boot_logs(r, dir);
    // Rows that differ from what `expect` says, coloured on a terminal (`out_painted`).
    let mut paints = Vec::new();
    for s in &r.steps {
        push_line!(text, "step {}: {}", s.index, s.name);
        for o in &s.observations {
            // A cell the check does not judge (`bug: any`: the buggy world may show either
            // value) is no BUG when it differs from `expect` (#32 item 8).
            let not_judged = !o.matches_expected() && o.bug == Some(Expected::Any);
            let (mark, paint) = if o.matches_expected() {
                ("ok", None)
            } else if not_judged {
                ("--", Some(Paint::Dim))
            } else if o.matches_bug() {
                ("BUG", Some(Paint::Red))
            } else {
                ("??", Some(Paint::Red))
            };
            let ev = o
                .evidence
                .first()
                .map(|e| log_message(&e.text))
                .unwrap_or_default();
            let why = match o.rule {
                Rule::SettleWindow => format!("no up line within the settle window after: {ev}"),
                Rule::AfterFeature => format!("no up line before: {ev}"),
                _ => ev,
            };
            // `Observed`'s Display ignores the width: padded as text, so the columns line up.
            let row = format!(
                "  {mark:<4}{:<8} {:<20} observed {:<8} expected {:<8} {}",
                o.node,
                o.signal,
                o.observed.to_string(),
                o.expected.as_ref().map_or("-", |e| e.as_str()),
                if not_judged {
                    "not judged: the check's bug world says `any` here".to_string()
                } else if o.observed == Observed::Down {
                    String::new()
                } else {
                    shorten(&why, 90)
                }
            );
            let row = row.trim_end().to_string();
            if let Some(p) = paint {
                paints.push((row.clone(), p));
            }
            push_line!(text, "{}", row);
            // A `down` is an absence: said in words (what was missing, in which boot, up to
            // which line), as report.md says it, not as a log line cut mid-flag.
            if o.observed == Observed::Down {
                push_line!(
                    text,
                    "        {}",
                    crate::report::evidence_in_words(r, o, &logs)
                );
            }
        }
    }
    match &r.verdict {
        Some(v) => push_line!(
            text,
            "verdict: {} — {} (asked for: {})",
            v.outcome,
            v.reason,
            r.expect
        ),
        None => push_line!(
            text,
            "verdict: none — {}",
            r.error.as_deref().unwrap_or("the run did not finish")
        ),
    }
    for d in r.verdict.iter().flat_map(|v| &v.differences) {
        push_line!(text, "  differs: {d}");
    }
    push_line!(text, "results: {}", dir.display());
    push_line!(text, "exit: {}", r.exit_code.unwrap_or(-1));
    // Through `out`: a closed pipe (`repro run … | head`) must not panic.
    out_painted(text.trim_end_matches('\n'), &paints);
}

/// The `msg="..."` of a logrus line (what a reader wants), or the line as it is.
fn log_message(line: &str) -> String {
    match line.split_once("msg=\"") {
        Some((_, rest)) => rest.strip_suffix('"').unwrap_or(rest).replace("\\\"", "\""),
        None => line.to_string(),
    }
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        let t: String = s.chars().take(n).collect();
        format!("{t}…")
    } else {
        s.to_string()
    }
}
