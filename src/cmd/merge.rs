//! `repro merge <dirs>… [--out DIR]`: runs made on different machines (CI runners) into one
//! summary.json and junit.xml, and the same table `repro matrix` prints.
//!
//! With `--plan FILE` (the fan-out JSON or a summary.json), every planned cell no input wrote a
//! result for is a NOT RUN row, so a CI job that died before uploading anything still shows.
//!
//! Exit codes: 2 when an input is missing or not a valid repro file (the message names it, with
//! the JSON line and column); otherwise as `repro matrix`, the worst of the merged cells
//! (130 > 3 > 1 > 4 > 0): 3 a run broke, 1 a regression or unexpected fix, 4 an inconclusive
//! run, 0 all as expected — so a CI job that merges turns red for it.

use crate::cli::{Format, Global, MergeArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::matrix::{merge, Summary};

use super::common::out;
use super::matrix::print_report;

pub(crate) async fn run(_g: &Global, a: &MergeArgs) -> Result<Exit, Error> {
    if a.format == Format::Json {
        super::common::people_to_stderr();
    }
    let plan = a
        .plan
        .as_deref()
        .map(merge::read_plan)
        .transpose()
        .map_err(|e| Error::bad_input(e.to_string()))?;
    let mut cells = merge::collect_inputs(&a.dirs, &a.out, plan.is_some())
        .map_err(|e| Error::bad_input(e.to_string()))?;
    if let Some(plan) = &plan {
        merge::add_not_run(&mut cells, plan);
    }
    let argv: Vec<String> = std::env::args().collect();
    let inputs = a.dirs.iter().map(|d| d.display().to_string()).collect();
    let summary = Summary::new(argv, inputs, cells);
    if let Err(e) = merge::write_outputs(&a.out, &summary, "repro merge") {
        // An output that cannot be written is infrastructure (exit 3), as on every command.
        return Err(Error::Other(anyhow::anyhow!(
            "--out {}: {e:#}",
            a.out.display()
        )));
    }
    let wrote_nothing = summary.cells.iter().filter(|c| c.run_id.is_none()).count();
    let ran = summary.cells.len() - wrote_nothing;
    let mut line = format!(
        "merged {ran} run{} from {} input{}",
        if ran == 1 { "" } else { "s" },
        a.dirs.len(),
        if a.dirs.len() == 1 { "" } else { "s" }
    );
    if let Some(p) = &a.plan {
        line.push_str(&format!(
            "; {wrote_nothing} of the cells planned in {} wrote nothing",
            p.display()
        ));
    }
    out(&line);
    print_report("repro merge", &summary, &a.out);
    out(&format!("exit: {}", summary.exit_code));
    if a.format == Format::Json {
        let json = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        let _ = super::common::write_stdout(&format!("{json}\n"));
    }
    Ok(summary.exit())
}
