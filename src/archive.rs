//! `.tar.gz` archives: built for `bundle.tar.gz` (the files a bug report needs, already
//! redacted, in one attachment) and read back by `repro redact` and `repro inspect`'s tests.
//! Below `report` and `redact`, which both use it.
//!
//! Byte-for-byte reproducible for the same inputs (fixed order, mtime from the run, owner 0,
//! gzip header without a time), so re-rendering an unchanged folder changes nothing.
//!
//! Reading an archive someone else made (`repro redact old-bundle.tar.gz`) trusts nothing in it:
//! what it inflates to is bounded (a 2.5 MB gzip can hold 2.5 GiB of zeros, and the limit on the
//! compressed file says nothing about that), and every member is kept as the kind it is —
//! files, folders, symbolic and hard links; sparse files as the files they stand for — or the
//! archive is refused, naming the member, before anything is written. A member that could land
//! outside the folder it is unpacked into (`..`, an absolute name) or that is a device or a pipe
//! has no place in a bundle: refused too.

use std::cell::Cell;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use flate2::write::GzEncoder;
use flate2::Compression;

/// The most the members of one archive may inflate to, together (headers included): what
/// `repro redact` holds in memory of one archive, the same bound as for one plain file.
pub(crate) const INFLATE_LIMIT: u64 = crate::safe_fs::REDACT_LIMIT;

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

/// What a member is, with what it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file (a sparse one read in full: the bytes it stands for).
    File(Vec<u8>),
    Dir,
    Symlink(PathBuf),
    /// A hard link to an earlier member.
    HardLink(PathBuf),
}

/// One member of an archive, as read: its name, permission bits, time and kind. Owners are not
/// kept (written back as 0, like the bundle's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) path: PathBuf,
    pub(crate) mode: u32,
    pub(crate) mtime: u64,
    pub(crate) kind: Kind,
}

impl Member {
    /// The member's name as shown in messages (`archive!name`).
    pub(crate) fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// Why an archive was not read: a whole sentence naming the member when there is one, and
/// what is accepted. Always the archive's fault, so bad input (exit 2) for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused(pub(crate) String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The decompressed stream, failing once more than `left` bytes came out of it: bounds what
/// the tar reader itself buffers too (GNU long names and pax headers are read whole by it).
struct Bounded<R> {
    inner: R,
    left: u64,
    hit: Rc<Cell<bool>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a stream that ends exactly at the limit from a longer one.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.hit.set(true);
            return Err(std::io::Error::other("inflate limit"));
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn too_big(limit: u64) -> Refused {
    Refused(format!(
        "it inflates to more than {} MiB, the most repro reads of one archive: not read \
         (a compressed archive can stand for far more than its own size)",
        limit / (1024 * 1024)
    ))
}

/// A member name that stays inside the folder it is unpacked into: relative, no `..`.
fn check_name(member: &Path, path: &Path, what: &str) -> Result<(), Refused> {
    let shown = member.to_string_lossy();
    if path.as_os_str().is_empty() {
        return Err(Refused(format!("a member has an empty {what}: not read")));
    }
    for c in path.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(Refused(format!(
                    "member `{shown}`: its {what} climbs out of the archive with `..`; \
                     only relative names inside the archive are accepted"
                )))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(Refused(format!(
                    "member `{shown}`: its {what} is absolute; only relative names inside \
                     the archive are accepted"
                )))
            }
        }
    }
    Ok(())
}

/// Every member of a `.tar.gz`, each kept as its kind, with at most [`INFLATE_LIMIT`] bytes
/// inflated; refused whole (nothing returned) at the first member it cannot keep.
pub(crate) fn read_members(bytes: &[u8]) -> Result<Vec<Member>, Refused> {
    read_members_within(bytes, INFLATE_LIMIT)
}

fn read_members_within(bytes: &[u8], limit: u64) -> Result<Vec<Member>, Refused> {
    let hit = Rc::new(Cell::new(false));
    let stream = Bounded {
        inner: flate2::read::GzDecoder::new(bytes),
        left: limit,
        hit: hit.clone(),
    };
    let corrupt = |e: std::io::Error| {
        if hit.get() {
            too_big(limit)
        } else {
            Refused(format!("not a readable .tar.gz: {e}"))
        }
    };
    let mut ar = tar::Archive::new(stream);
    let mut out: Vec<Member> = Vec::new();
    // What the members read so far hold: a header's size that would pass the limit is refused
    // before a byte of it is inflated.
    let mut held: u64 = 0;
    for entry in ar.entries().map_err(corrupt)? {
        let mut e = entry.map_err(corrupt)?;
        let ty = e.header().entry_type();
        if ty == tar::EntryType::XGlobalHeader {
            // `git archive` writes one (the commit id as a comment); it names no member.
            continue;
        }
        let path = e.path().map_err(corrupt)?.into_owned();
        check_name(&path, &path, "name")?;
        let shown = path.to_string_lossy().into_owned();
        let mode = e.header().mode().unwrap_or(0o644) & 0o7777;
        let mtime = e.header().mtime().unwrap_or(0);
        let link = |e: &tar::Entry<'_, _>| -> Result<PathBuf, Refused> {
            match e.link_name() {
                Ok(Some(l)) => Ok(l.into_owned()),
                Ok(None) => Err(Refused(format!(
                    "member `{shown}`: a link without a target: not read"
                ))),
                Err(err) => Err(corrupt(err)),
            }
        };
        let kind = match ty {
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                let size = e.size();
                if held.saturating_add(size) > limit {
                    return Err(Refused(format!(
                        "member `{shown}` is {} MiB: {}",
                        size / (1024 * 1024),
                        too_big(limit)
                    )));
                }
                let mut data = Vec::new();
                (&mut e)
                    .take(limit - held + 1)
                    .read_to_end(&mut data)
                    .map_err(corrupt)?;
                held += data.len() as u64;
                if held > limit {
                    return Err(too_big(limit));
                }
                Kind::File(data)
            }
            tar::EntryType::Directory => Kind::Dir,
            tar::EntryType::Symlink => Kind::Symlink(link(&e)?),
            tar::EntryType::Link => {
                let target = link(&e)?;
                check_name(&path, &target, "link target")?;
                Kind::HardLink(target)
            }
            other => {
                let what = match other {
                    tar::EntryType::Fifo => "a named pipe (FIFO)",
                    tar::EntryType::Char => "a character device",
                    tar::EntryType::Block => "a block device",
                    _ => "of a kind repro does not know",
                };
                return Err(Refused(format!(
                    "member `{shown}` is {what}; only files, folders and links are accepted \
                     in an archive"
                )));
            }
        };
        out.push(Member {
            path,
            mode,
            mtime,
            kind,
        });
    }
    Ok(out)
}

/// Writes `members` back as a `.tar.gz`, each as the kind it was read as.
pub(crate) fn rebuild(members: &[Member]) -> std::io::Result<Vec<u8>> {
    let gz = GzEncoder::new(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(gz);
    for m in members {
        let mut h = tar::Header::new_gnu();
        h.set_mode(m.mode);
        h.set_mtime(m.mtime);
        h.set_uid(0);
        h.set_gid(0);
        match &m.kind {
            Kind::File(data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                tar.append_data(&mut h, &m.path, data.as_slice())?;
            }
            Kind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                tar.append_data(&mut h, &m.path, std::io::empty())?;
            }
            Kind::Symlink(target) | Kind::HardLink(target) => {
                h.set_entry_type(if matches!(m.kind, Kind::Symlink(_)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                });
                h.set_size(0);
                tar.append_link(&mut h, &m.path, target)?;
            }
        }
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    gz.finish()
}

/// Every regular file of a `.tar.gz` as (path, content), for tests.
#[cfg(test)]
pub(crate) fn read(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, Refused> {
    Ok(read_members(bytes)?
        .into_iter()
        .filter_map(|m| match m.kind {
            Kind::File(d) => Some((m.path.to_string_lossy().into_owned(), d)),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
#[path = "../tests/util/raw_tar.rs"]
mod raw_tar;

#[cfg(test)]
mod tests {
    use super::raw_tar::{gzip, raw_tar};
    use super::*;

    #[test]
    fn every_member_kind_is_kept_through_a_rebuild() {
        let raw = raw_tar(&[
            ("d/", b'5', "", b""),
            ("d/a.log", b'0', "", b"token: abc\n"),
            ("d/sym", b'2', "a.log", b""),
            ("d/hard", b'1', "d/a.log", b""),
            ("d/out", b'2', "../../etc/passwd", b""),
        ]);
        let members = read_members(&raw).expect("read");
        let kinds: Vec<(String, Kind)> =
            members.iter().map(|m| (m.name(), m.kind.clone())).collect();
        assert_eq!(
            kinds,
            vec![
                ("d/".into(), Kind::Dir),
                ("d/a.log".into(), Kind::File(b"token: abc\n".to_vec())),
                ("d/sym".into(), Kind::Symlink("a.log".into())),
                ("d/hard".into(), Kind::HardLink("d/a.log".into())),
                // A symbolic link's target is data inside the archive, kept as it is.
                ("d/out".into(), Kind::Symlink("../../etc/passwd".into())),
            ]
        );
        let again = read_members(&rebuild(&members).expect("rebuild")).expect("reread");
        assert_eq!(again, members);
    }

    #[test]
    fn hostile_members_are_refused_by_name_with_a_whole_sentence() {
        for (members, want) in [
            (
                vec![("../evil.txt", b'0', "", &b"x"[..])],
                "member `../evil.txt`: its name climbs out of the archive with `..`",
            ),
            (
                vec![("/etc/evil", b'0', "", &b"x"[..])],
                "member `/etc/evil`: its name is absolute",
            ),
            (
                vec![("ok", b'0', "", &b"x"[..]), ("p", b'6', "", &b""[..])],
                "member `p` is a named pipe (FIFO)",
            ),
            (
                vec![("dev", b'3', "", &b""[..])],
                "member `dev` is a character device",
            ),
            (
                vec![("blk", b'4', "", &b""[..])],
                "member `blk` is a block device",
            ),
            (
                vec![("h", b'1', "../x", &b""[..])],
                "member `h`: its link target climbs out",
            ),
        ] {
            let e = read_members(&raw_tar(&members)).expect_err("refused");
            assert!(e.0.starts_with(want), "{e}");
            assert!(
                e.0.ends_with("accepted") || e.0.ends_with("accepted in an archive"),
                "{e}"
            );
        }
    }

    #[test]
    fn what_an_archive_inflates_to_is_bounded() {
        // A header announcing more than the limit: refused before inflating it.
        let mut h = tar::Header::new_gnu();
        h.set_path("zeros").expect("path");
        h.set_size(1 << 40);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        let e = read_members_within(&gzip(h.as_bytes()), 1 << 20).expect_err("refused");
        assert!(
            e.0.starts_with("member `zeros` is 1048576 MiB: it inflates"),
            "{e}"
        );
        // Members within the limit each, not together.
        let raw = raw_tar(&[
            ("a", b'0', "", &[0u8; 700 * 1024][..]),
            ("b", b'0', "", &[0u8; 700 * 1024][..]),
        ]);
        let e = read_members_within(&raw, 1 << 20).expect_err("refused");
        assert!(e.0.contains("member `b`"), "{e}");
        // A GNU long name the tar reader would read whole: bounded by the stream itself.
        let mut h = tar::Header::new_gnu();
        h.as_mut_bytes()[..13].copy_from_slice(b"././@LongLink");
        h.set_size(4 << 20);
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_cksum();
        let mut data = h.as_bytes().to_vec();
        data.resize(data.len() + (4 << 20), b'a');
        let e = read_members_within(&gzip(&data), 1 << 20).expect_err("refused");
        assert!(e.0.starts_with("it inflates to more than 1 MiB"), "{e}");
        assert!(read_members_within(&raw, 2 << 20).is_ok());
    }

    #[test]
    fn garbage_is_refused_not_an_io_error() {
        let e = read_members(b"not gzip at all").expect_err("refused");
        assert!(e.0.starts_with("not a readable .tar.gz"), "{e}");
    }
}
