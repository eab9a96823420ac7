//! `repro merge <dirs>… [--out DIR]`: runs made on different machines (CI runners) into one
//! summary.json and junit.xml, and the same table `repro matrix` prints.
//!
//! Exit codes: 2 when an input is missing or not a valid repro file (the message names it, with
//! the JSON line and column); otherwise as `repro matrix`, from the merged cells: 0 all as
//! expected, 1 a verdict differs, 3 a run broke — so a CI job that merges turns red for it.

use crate::cli::{Global, MergeArgs};
use crate::exit;
use crate::matrix::Summary;

use super::matrix::{out, print_report};

pub async fn run(_g: &Global, a: &MergeArgs) -> anyhow::Result<i32> {
    let cells = match crate::merge::collect(&a.dirs, &a.out) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let argv: Vec<String> = std::env::args().collect();
    let inputs = a.dirs.iter().map(|d| d.display().to_string()).collect();
    let summary = Summary::new(argv, inputs, cells);
    if let Err(e) = crate::merge::write_outputs(&a.out, &summary, "repro merge") {
        eprintln!("repro: --out {}: {e:#}", a.out.display());
        return Ok(exit::BAD_INPUT);
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
