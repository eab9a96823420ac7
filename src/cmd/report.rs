//! `repro report <results-dir>`: render junit.xml, report.md, timeline.html and bundle.tar.gz
//! again from the folder's result.json and logs.

use crate::cli::{Global, ReportArgs};
use crate::error::Error;
use crate::exit;
use crate::report;

pub fn run(_g: &Global, a: &ReportArgs) -> Result<i32, Error> {
    let folder = report::load(&a.dir).map_err(|e| Error::bad_input(format!("repro: {e}")))?;
    let rendered = report::render(&folder, &a.secrets)?;
    report::write_rendered(&a.dir, &rendered)?;
    let verdict = rendered
        .result
        .verdict
        .as_ref()
        .map(|v| v.outcome.as_str())
        .unwrap_or("no verdict");
    println!(
        "wrote {}, {}, {} and {} in {} (verdict: {verdict})",
        report::JUNIT_FILE,
        report::REPORT_FILE,
        report::TIMELINE_FILE,
        report::BUNDLE_FILE,
        a.dir.display()
    );
    for s in &rendered.skipped {
        eprintln!("repro: left {s} out of the bundle: not a text file, so it cannot be redacted");
    }
    Ok(exit::OK)
}
