//! `repro list`.

use crate::catalog::{self, Catalog};
use crate::cli::Global;
use crate::exit;

pub fn run(g: &Global) -> anyhow::Result<i32> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = match Catalog::load(root.as_deref()) {
        Ok(c) => c,
        Err(d) => {
            eprint!("{d}");
            return Ok(exit::BAD_INPUT);
        }
    };
    println!("CHECKS ({})", cat.origin);
    for (c, _) in &cat.checks {
        println!(
            "  {:<18} topology {:<16} {}  {}",
            c.name, c.topology, c.issue, c.summary
        );
    }
    println!("TOPOLOGIES");
    for t in &cat.topologies {
        println!(
            "  {:<18} {:<2} nodes, k3s {:<14} {}",
            t.name,
            t.nodes.len(),
            t.default_version,
            t.description
        );
    }
    Ok(exit::OK)
}
