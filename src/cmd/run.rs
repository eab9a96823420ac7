//! `repro run <check>`.

use crate::cli::{Global, RunArgs};
use crate::exit;

pub async fn run(g: &Global, args: &RunArgs) -> anyhow::Result<i32> {
    // Everything about the input is checked before Docker is touched: no half-created cluster.
    let (sc, plan) = match super::plan::resolve(g, &args.target) {
        Ok(x) => x,
        Err(msg) => {
            eprint!("{msg}");
            if !msg.ends_with('\n') {
                eprintln!();
            }
            return Ok(exit::BAD_INPUT);
        }
    };
    let argv: Vec<String> = std::env::args().collect();
    Ok(
        crate::run::execute(sc, plan, &args.target, &args.options, argv, false)
            .await
            .code,
    )
}
