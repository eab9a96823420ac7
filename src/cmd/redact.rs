//! `repro redact <file-or-dir> [--out P]`: hide secrets in files a user already has, with the
//! same rules as the bundle.

use crate::cli::{Global, RedactArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::redact;

pub(crate) fn run(_g: &Global, a: &RedactArgs) -> Result<Exit, Error> {
    if !a.path.exists() {
        return Err(Error::usage(format!(
            "{}: no such file or folder",
            a.path.display()
        )));
    }
    // A folder redacted in place is replaced by its redacted copy (a new folder): a shell whose
    // working folder was inside it is left in the removed original, so say how to get back.
    let cwd_inside = a.out.is_none()
        && a.path.is_dir()
        && match (std::env::current_dir(), a.path.canonicalize()) {
            (Ok(cwd), Ok(p)) => cwd.starts_with(p),
            _ => false,
        };
    let s = redact::redact_path(&a.path, a.out.as_deref(), &a.secrets)?;
    let target = a.out.as_deref().unwrap_or(&a.path);
    outln!(
        "redacted {} file(s) into {}: {} distinct secret(s) replaced by <REDACTED-n>",
        s.files,
        target.display(),
        s.secrets
    );
    if cwd_inside {
        errln!("repro: {} was replaced by its redacted copy; a shell that was inside it is now in the removed original: `cd \"$PWD\"` to see the redacted files", a.path.display());
    }
    for m in &s.redacted_bytes {
        errln!("warning: {m}: not a text file; known secrets and secret shapes in its readable parts were replaced in its bytes, the rest kept as is");
    }
    for f in &s.skipped {
        errln!(
            "warning: skipped {f}: not a file, folder or link, so left out of the redacted copy"
        );
    }
    Ok(Exit::Ok)
}
