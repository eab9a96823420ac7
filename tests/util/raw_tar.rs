//! Tar archives written by hand (ustar headers byte by byte), so members `tar::Builder` refuses
//! (`..` or absolute names, pipes, devices) can be made: for the archive reader's unit tests
//! (src/archive.rs) and the suite's hostile files alike.

use std::io::Write;

/// A gzipped tar of `members`: (name, type byte, link name or "", content).
pub fn raw_tar(members: &[(&str, u8, &str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, ty, link, data) in members {
        let mut h = tar::Header::new_ustar();
        h.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_entry_type(tar::EntryType::new(*ty));
        if !link.is_empty() {
            h.set_link_name_literal(link).expect("link");
        }
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    // The two empty blocks that end an archive.
    out.resize(out.len() + 1024, 0);
    gzip(&out)
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).expect("gzip");
    gz.finish().expect("gzip")
}
