//! `repro redact <file-or-dir> [--out P]`: hide secrets in files a user already has, with the
//! same rules as the bundle.

use crate::cli::{Global, RedactArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::redact;

pub(crate) fn run(_g: &Global, a: &RedactArgs) -> Result<Exit, Error> {
    if !a.path.exists() {
        return Err(Error::bad_input(format!(
            "repro: {}: no such file or folder",
            a.path.display()
        )));
    }
    let s = redact::redact_path(&a.path, a.out.as_deref(), &a.secrets)?;
    let target = a.out.as_deref().unwrap_or(&a.path);
    outln!(
        "redacted {} file(s) into {}: {} distinct secret(s) replaced by <REDACTED-n>",
        s.files,
        target.display(),
        s.secrets
    );
    for m in &s.redacted_bytes {
        errln!("repro: {m}: not a text file; known secrets and secret shapes in its readable parts were replaced in its bytes, the rest kept as is");
    }
    for f in &s.skipped {
        errln!("repro: skipped {f}: not a file, folder or link, so left out of the redacted copy");
    }
    Ok(Exit::Ok)
}
