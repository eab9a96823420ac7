//! `repro redact <file-or-dir> [--out P]`: hide secrets in files a user already has, with the
//! same rules as the bundle.

use crate::cli::{Global, RedactArgs};
use crate::exit;
use crate::report;

pub fn run(_g: &Global, a: &RedactArgs) -> anyhow::Result<i32> {
    if !a.path.exists() {
        eprintln!("repro: {}: no such file or folder", a.path.display());
        return Ok(exit::BAD_INPUT);
    }
    let s = report::redact_path(&a.path, a.out.as_deref(), &a.secrets)?;
    let target = a.out.as_deref().unwrap_or(&a.path);
    println!(
        "redacted {} file(s) into {}: {} distinct secret(s) replaced by <REDACTED-n>",
        s.files,
        target.display(),
        s.secrets
    );
    for f in &s.skipped_binary {
        eprintln!("repro: skipped {f}: not a text file (left out of the redacted copy / unchanged in place)");
    }
    Ok(exit::OK)
}
