//! `.tar.gz` archives: built for `bundle.tar.gz` (the files a bug report needs, already
//! redacted, in one attachment) and read back by `repro redact` and `repro inspect`'s tests.
//! Below `report` and `redact`, which both use it.
//!
//! Byte-for-byte reproducible for the same inputs (fixed order, mtime from the run, owner 0,
//! gzip header without a time), so re-rendering an unchanged folder changes nothing.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Builds the archive in memory; `entries` are (path inside the archive, content).
pub(crate) fn build(entries: &[(String, Vec<u8>)], mtime: u64) -> std::io::Result<Vec<u8>> {
    let gz = GzEncoder::new(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(mtime);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, path, data.as_slice())?;
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    gz.finish()
}

/// Reads every regular file of a `.tar.gz` as (path, content); used by `repro redact` and tests.
pub(crate) fn read(bytes: &[u8]) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in ar.entries()? {
        let mut e = entry?;
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = e.path()?.to_string_lossy().into_owned();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data)?;
        out.push((path, data));
    }
    Ok(out)
}
