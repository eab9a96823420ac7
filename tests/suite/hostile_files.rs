//! Hostile archives and folders handed to `repro redact` and `repro man --out` (issue #24): the
//! real binary, exit codes, messages and what is left on disk.

use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::raw_tar::raw_tar;
use crate::repro::{Output as Ran, Repro};
use crate::util::{repro, text};

/// `repro redact <path>`, in place.
fn redact(path: &Path) -> Ran {
    Repro::new().arg("redact").arg(path).run()
}

const MIB: u64 = 1024 * 1024;

/// A valid `.tar.gz` holding one member of `size` zero bytes (a multiple of 1 MiB), built
/// without compressing it: one 1 MiB segment compressed after a full flush (no back-reference
/// crosses a full flush, so the segment decodes the same wherever it is repeated), repeated,
/// with the real CRC and length in the trailer.
fn gzip_bomb(member: &str, size: u64) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    fn deflate(c: &mut Compress, input: &[u8], flush: FlushCompress) -> Vec<u8> {
        let mut out = Vec::new();
        let start = c.total_in();
        loop {
            out.reserve(256 * 1024);
            let done = (c.total_in() - start) as usize;
            let st = c
                .compress_vec(&input[done..], &mut out, flush)
                .expect("deflate");
            let all_in = (c.total_in() - start) as usize == input.len();
            // Done when the stream ended (Finish), or a flush completed with room to spare
            // (another call would only add an empty block).
            if st == flate2::Status::StreamEnd
                || (all_in && out.len() < out.capacity() && !matches!(flush, FlushCompress::Finish))
            {
                return out;
            }
        }
    }
    let mut h = tar::Header::new_gnu();
    h.set_path(member).expect("path");
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut c = Compress::new(Compression::best(), false);
    let mut crc = Crc::new();
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    gz.extend(deflate(&mut c, h.as_bytes(), FlushCompress::Full));
    crc.update(h.as_bytes());
    let chunk = vec![0u8; MIB as usize];
    let segment = deflate(&mut c, &chunk, FlushCompress::Full);
    let mut chunk_crc = Crc::new();
    chunk_crc.update(&chunk);
    for _ in 0..size / MIB {
        gz.extend_from_slice(&segment);
        crc.combine(&chunk_crc);
    }
    // The end-of-archive blocks.
    let end = [0u8; 1024];
    let mut c = Compress::new(Compression::best(), false);
    gz.extend(deflate(&mut c, &end, FlushCompress::Finish));
    crc.update(&end);
    gz.extend_from_slice(&crc.sum().to_le_bytes());
    gz.extend_from_slice(&crc.amount().to_le_bytes());
    gz
}

/// `repro <args>` with its address space capped at `limit` bytes: an allocation of what a
/// bomb inflates to fails (and aborts) instead of swapping the machine.
fn repro_capped(limit: u64, args: &[&str]) -> Output {
    let base = repro();
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -v {}; exec \"$0\" \"$@\"", limit / 1024))
        .arg(base.get_program())
        .args(args)
        .current_dir(crate::util::root())
        .stdin(Stdio::null());
    c.output().expect("sh runs")
}

#[test]
fn the_bomb_is_what_it_claims() {
    // The generator's own check, on a small one: tar and gzip read it as one member of zeros.
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("small.tar.gz");
    std::fs::write(&f, gzip_bomb("zeros.log", 3 * MIB)).expect("write");
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&f).expect("open"),
    ));
    let mut n = 0;
    for e in ar.entries().expect("entries") {
        let mut e = e.expect("entry");
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).expect("read");
        assert_eq!(data.len() as u64, 3 * MIB);
        assert!(data.iter().all(|b| *b == 0));
        n += 1;
    }
    assert_eq!(n, 1);
    // And gzip's own CRC and length check agrees.
    let st = Command::new("gzip").arg("-t").arg(&f).status();
    if let Ok(st) = st {
        assert!(st.success(), "gzip -t");
    }
}

/// 2.5 GiB of zeros in a 2.5 MB `.tar.gz`: refused as bad input (exit 2) naming the member,
/// within 512 MiB of address space and a few seconds, the file left as it was. Before: 5.2 GB
/// RSS, then SIGABRT (exit 134).
#[test]
fn a_gzip_bomb_is_refused_in_bounded_memory() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("bundle.tar.gz");
    let bomb = gzip_bomb("nodes/etcd-1/boot-1.log", 2560 * MIB);
    assert!(bomb.len() < 4 * MIB as usize, "{} bytes", bomb.len());
    std::fs::write(&f, &bomb).expect("write");
    let start = Instant::now();
    let out = repro_capped(512 * MIB, &["redact", f.to_str().expect("utf-8")]);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "member `nodes/etcd-1/boot-1.log` is 2560 MiB: it inflates to more than 256 MiB"
        ),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(
        std::fs::read(&f).expect("read"),
        bomb,
        "the file was changed"
    );
}

/// `..` and absolute member names, pipes and devices: exit 2 (not 3) with a whole sentence
/// naming the member (not cut off after "when setting path for"), nothing written.
#[test]
fn hostile_members_are_bad_input_with_a_whole_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (name, ty, want) in [
        (
            "../evil.log",
            b'0',
            "its name climbs out of the archive with `..`",
        ),
        ("/etc/evil.log", b'0', "its name is absolute"),
        ("pipe", b'6', "is a named pipe (FIFO)"),
        ("tty", b'3', "is a character device"),
        ("disk", b'4', "is a block device"),
    ] {
        let gz = raw_tar(&[
            ("a.log", b'0', "", b"password=first-member-secret\n"),
            (name, ty, "", if ty == b'0' { b"x\n" } else { b"" }),
        ]);
        let f = tmp.path().join("b.tar.gz");
        std::fs::write(&f, &gz).expect("write");
        let out = redact(&f);
        out.code(2);
        let err = &out.stderr;
        out.stderr_has(&format!("member `{name}`"));
        out.stderr_has(want);
        out.stderr_has("nothing was written");
        assert!(
            err.trim_end().ends_with("named inside the archive"),
            "{err}"
        );
        assert_eq!(std::fs::read(&f).expect("read"), gz, "{name}: file changed");
    }
}

fn members(f: &Path) -> Vec<(String, tar::EntryType, String, Vec<u8>)> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(f).expect("open"),
    ));
    ar.entries()
        .expect("entries")
        .map(|e| {
            let mut e = e.expect("entry");
            let path = e.path().expect("path").to_string_lossy().into_owned();
            let link = e
                .link_name()
                .expect("link")
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ty = e.header().entry_type();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).expect("read");
            (path, ty, link, data)
        })
        .collect()
}

/// Hard links, symbolic links, folders and sparse files survive an in-place redaction (they were
/// dropped silently): the same members, the secret gone, the sparse file's bytes the same.
#[test]
fn every_member_kind_is_kept() {
    let tmp = tempfile::tempdir().expect("tmp");
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).expect("mkdir");
    let sparse = src.join("sparse.img");
    {
        let f = std::fs::File::create(&sparse).expect("create");
        f.set_len(8 * MIB).expect("hole");
        let mut f = f;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(4 * MIB)).expect("seek");
        f.write_all(b"data in the middle").expect("write");
    }
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    b.sparse(true);
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o755);
    h.set_size(0);
    b.append_data(&mut h, "logs/", std::io::empty())
        .expect("dir");
    let log = b"level=info msg=\"password=kept-kinds-secret-9\"\n";
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o640);
    h.set_size(log.len() as u64);
    b.append_data(&mut h, "logs/k3s.log", &log[..])
        .expect("file");
    for (ty, name, target) in [
        (tar::EntryType::Symlink, "logs/latest", "k3s.log"),
        (tar::EntryType::Link, "logs/copy.log", "logs/k3s.log"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(ty);
        h.set_mode(0o777);
        h.set_size(0);
        b.append_link(&mut h, name, target).expect("link");
    }
    b.append_path_with_name(&sparse, "disk/sparse.img")
        .expect("sparse");
    let gz = b.into_inner().expect("tar").finish().expect("gz");
    let f = tmp.path().join("old.tar.gz");
    std::fs::write(&f, &gz).expect("write");
    let before = members(&f);
    assert!(
        before.iter().any(|m| m.1 == tar::EntryType::GNUSparse),
        "the test archive has no sparse member: {:?}",
        before.iter().map(|m| (&m.0, m.1)).collect::<Vec<_>>()
    );

    redact(&f).code(0);
    let after = members(&f);
    let shape = |ms: &[(String, tar::EntryType, String, Vec<u8>)]| {
        ms.iter()
            .map(|m| {
                let ty = if m.1 == tar::EntryType::GNUSparse {
                    tar::EntryType::Regular
                } else {
                    m.1
                };
                (m.0.clone(), ty, m.2.clone())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&after), shape(&before));
    let by = |ms: &[(String, tar::EntryType, String, Vec<u8>)], n: &str| {
        ms.iter().find(|m| m.0 == n).expect("member").3.clone()
    };
    let red = String::from_utf8(by(&after, "logs/k3s.log")).expect("utf-8");
    assert!(!red.contains("kept-kinds-secret-9"), "{red}");
    assert!(red.contains("<REDACTED-1>"), "{red}");
    assert_eq!(
        by(&after, "disk/sparse.img"),
        std::fs::read(&sparse).expect("read")
    );
}

/// In place, a folder is all or nothing: an archive that cannot be kept, found after a log
/// that was already redacted in memory, leaves every file as it was and names the archive.
/// A log with one byte that is not UTF-8 is redacted as bytes, not kept (it was: exit 0, the
/// secret in clear).
#[test]
fn in_place_folder_redaction_is_all_or_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path().join("results");
    std::fs::create_dir_all(d.join("nodes/etcd-1")).expect("mkdir");
    let log = b"time=x msg=\"boot\"\n\xff\xfe K3S_TOKEN=folder-secret-77 rest\n".to_vec();
    std::fs::write(d.join("nodes/etcd-1/boot-1.log"), &log).expect("write");
    std::fs::write(d.join("a.yaml"), "token: folder-secret-78\n").expect("write");
    symlink("nodes/etcd-1/boot-1.log", d.join("latest.log")).expect("symlink");
    let gz = raw_tar(&[("../../escape.log", b'0', "", b"x\n")]);
    std::fs::write(d.join("z-old.tar.gz"), gz).expect("write");

    redact(&d)
        .code(2)
        .stderr_has("z-old.tar.gz: member `../../escape.log`");
    assert_eq!(
        std::fs::read_to_string(d.join("a.yaml")).expect("read"),
        "token: folder-secret-78\n"
    );
    assert_eq!(
        std::fs::read(d.join("nodes/etcd-1/boot-1.log")).expect("read"),
        log
    );
    let siblings: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(siblings, vec![std::ffi::OsString::from("results")]);

    std::fs::remove_file(d.join("z-old.tar.gz")).expect("rm");
    let out = redact(&d);
    out.code(0);
    let boot = std::fs::read(d.join("nodes/etcd-1/boot-1.log")).expect("read");
    let shown = String::from_utf8_lossy(&boot);
    assert!(!shown.contains("folder-secret-77"), "{shown}");
    assert!(
        boot.starts_with(b"time=x msg=\"boot\"\n\xff\xfe K3S_TOKEN=<REDACTED-"),
        "{shown}"
    );
    out.stderr_has("nodes/etcd-1/boot-1.log");
    let yaml = std::fs::read_to_string(d.join("a.yaml")).expect("read");
    assert!(!yaml.contains("folder-secret-78"), "{yaml}");
    // The link is kept as a link, the folder owner-only, nothing left beside it.
    assert_eq!(
        std::fs::read_link(d.join("latest.log")).expect("link"),
        Path::new("nodes/etcd-1/boot-1.log")
    );
    let mode = std::fs::metadata(&d).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let siblings: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(siblings, vec![std::ffi::OsString::from("results")]);
}

/// A pipe in a folder redacted in place would be lost by the swap: refused, before anything is
/// written, naming it.
#[test]
fn a_pipe_in_a_folder_redacted_in_place_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path().join("r");
    std::fs::create_dir(&d).expect("mkdir");
    std::fs::write(d.join("a.yaml"), "token: pipe-folder-secret\n").expect("write");
    let st = Command::new("mkfifo")
        .arg(d.join("p.log"))
        .status()
        .expect("mkfifo");
    assert!(st.success());
    redact(&d).code(2).stderr_has("p.log (a named pipe (FIFO))");
    assert!(std::fs::read_to_string(d.join("a.yaml"))
        .expect("read")
        .contains("pipe-folder-secret"));
}

/// `repro man --out DIR` replaces a link planted where a page goes instead of writing through
/// it (it overwrote the link's target), and writes owner-only files; `redact --out` refuses a
/// link planted where a folder of the copy goes.
#[test]
fn writes_into_a_folder_never_follow_a_planted_link() {
    let tmp = tempfile::tempdir().expect("tmp");
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "do not touch\n").expect("write");
    let dir = tmp.path().join("man");
    std::fs::create_dir(&dir).expect("mkdir");
    symlink(&victim, dir.join("repro.1")).expect("symlink");
    symlink(&victim, dir.join("repro-run.1")).expect("symlink");
    Repro::new().args(["man", "--out"]).arg(&dir).run().code(0);
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "do not touch\n"
    );
    for page in ["repro.1", "repro-run.1", "repro-sim-build.1"] {
        let m = std::fs::symlink_metadata(dir.join(page)).expect(page);
        assert!(m.is_file(), "{page}");
        assert_eq!(m.permissions().mode() & 0o777, 0o600, "{page}");
        let t = std::fs::read_to_string(dir.join(page)).expect(page);
        assert!(t.starts_with(".ie"), "{page}: {t:.40}");
    }

    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("nodes")).expect("mkdir");
    std::fs::write(src.join("nodes/x.log"), "password=planted-out-secret\n").expect("write");
    let copy = tmp.path().join("copy");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&copy).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    symlink(&outside, copy.join("nodes")).expect("symlink");
    Repro::new()
        .arg("redact")
        .arg(&src)
        .arg("--out")
        .arg(&copy)
        .run()
        .code(2)
        .stderr_has("a symbolic link where a folder of the output belongs");
    assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
}

/// merge's junit.xml and summary.json for any text a run folder holds (U+FFFE/U+FFFF in a check
/// name, controls and an escape sequence in an error): the junit parses with a real XML parser,
/// has failures exactly when the exit code is not 0, and both files are 0600 in a 0700 folder.
#[test]
fn merged_junit_is_valid_xml_and_owner_only_for_any_text() {
    let tmp = tempfile::tempdir().expect("tmp");
    let runs = tmp.path().join("runs");
    for (name, verdict) in [("a", Some("reproduced")), ("b", None)] {
        let d = runs.join(name);
        crate::fixtures::write_result(
            &d,
            &format!("id-{name}"),
            "v1.33.4+k3s1",
            "reproduced",
            verdict,
        );
        let p = d.join("result.json");
        let mut r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
        r["check"]["name"] = "etcd\u{fffe}split\u{ffff}".into();
        if verdict.is_none() {
            r["error"] = "engine gone \u{1b}]0;pwned\u{7} \u{0}\u{fffe} <&>".into();
        }
        std::fs::write(&p, serde_json::to_string_pretty(&r).expect("json")).expect("write");
    }
    for (inputs, want) in [(vec!["a"], 0), (vec!["a", "b"], 3)] {
        let out_dir = tmp.path().join(format!("merged-{}", inputs.len()));
        let mut c = repro();
        c.arg("merge");
        for i in &inputs {
            c.arg(runs.join(i));
        }
        let out = c.arg("--out").arg(&out_dir).output().expect("runs");
        assert_eq!(out.status.code(), Some(want), "{}", text(&out));
        let files = crate::junit::junit_files(&out_dir);
        assert_eq!(files, vec![out_dir.join("junit.xml")]);
        crate::junit::assert_agrees(&files[0], want.into());
        assert_eq!(
            std::fs::metadata(&out_dir)
                .expect("meta")
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        for f in ["junit.xml", "summary.json"] {
            let m = std::fs::metadata(out_dir.join(f)).expect(f);
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{f}");
        }
    }
}
