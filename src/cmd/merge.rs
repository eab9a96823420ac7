//! `repro merge <dirs>… [--out DIR]`: runs made on different machines (CI runners) into one
//! summary.json and junit.xml, and the same table `repro matrix` prints.
//!
//! Exit codes: 2 when an input is missing or not a valid repro file (the message names it, with
//! the JSON line and column); otherwise as `repro matrix`, the worst of the merged cells
//! (130 > 3 > 1 > 4 > 0): 3 a run broke, 1 a regression or unexpected fix, 4 an inconclusive
//! run, 0 all as expected — so a CI job that merges turns red for it.

use crate::cli::{Global, MergeArgs};
use crate::error::Error;
use crate::matrix::{merge, Summary};

use super::common::out;
use super::matrix::print_report;

pub async fn run(_g: &Global, a: &MergeArgs) -> Result<i32, Error> {
    let cells = merge::collect(&a.dirs, &a.out).map_err(|e| Error::bad_input(e.to_string()))?;
    let argv: Vec<String> = std::env::args().collect();
    let inputs = a.dirs.iter().map(|d| d.display().to_string()).collect();
    let summary = Summary::new(argv, inputs, cells);
    if let Err(e) = merge::write_outputs(&a.out, &summary, "repro merge") {
        return Err(Error::bad_input(format!(
            "repro: --out {}: {e:#}",
            a.out.display()
        )));
    }
    out(&format!(
        "merged {} run{} from {} input{}",
        summary.cells.len(),
        if summary.cells.len() == 1 { "" } else { "s" },
        a.dirs.len(),
        if a.dirs.len() == 1 { "" } else { "s" }
    ));
    print_report(&summary, &a.out);
    out(&format!("exit: {}", summary.exit_code));
    Ok(summary.exit_code)
}
