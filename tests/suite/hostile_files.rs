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

// ---- Campaign folders read back by `repro explore --recheck/--resume/--emit` (#42) ----

/// A secret planted in a tampered campaign folder (#42).
const CAMPAIGN_SECRET: &str = "plantedCampTok0042";
/// The finding a buggy run of k3s #12753 shows, and its minimal check.
const FINDING: &str = "taken-from-etcd-1/embedded-registry/etcd";

/// A campaign folder: campaign.json naming `check` as the finding's minimal check (written as
/// a plain file when it is `checks/x.yaml` and nothing is there yet), one sequence `seq_id`, and
/// its run: the recorded buggy run of k3s #12753 with ESC, BEL and a secret planted in its
/// evidence and configs.
fn campaign(dir: &Path, check: &str, seq_id: &str) {
    let run = dir.join("runs/r1");
    std::fs::create_dir_all(&run).expect("mkdir");
    let fixture = crate::util::root().join("tests/fixtures/run-etcd-split-buggy/result.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture")).expect("json");
    r["signals"]["embedded-registry"]["shows"] =
        serde_json::json!({"key": "embedded-registry", "up_when": true});
    let planted = format!("\u{1b}[2J\u{7}<script>x</script>\n## forged --token={CAMPAIGN_SECRET}");
    for s in r["steps"].as_array_mut().expect("steps") {
        for o in s["observations"].as_array_mut().expect("observations") {
            if o["signal"] == "embedded-registry" {
                o["rule"] = "after-feature".into();
            }
            for e in o["evidence"].as_array_mut().expect("evidence") {
                let t = format!("{}{planted}", e["text"].as_str().unwrap_or(""));
                e["text"] = t.into();
            }
        }
    }
    r["configs"]["0"]["etcd-1"] = format!("cluster-init: true\ntoken: {CAMPAIGN_SECRET}\n").into();
    std::fs::write(run.join("result.json"), r.to_string()).expect("write");
    let state = serde_json::json!({
        "schema_version": 1, "name": "explore-etcd-split-t", "topology": "etcd-split",
        "versions": ["v1.33.4+k3s1"], "keys": ["embedded-registry"], "seed": 0, "confirm": 1,
        "budget_runs": null, "budget_seconds": null,
        "sequences": [{"sequence": {"id": seq_id, "strategy": "orders", "steps": [
            {"node": "etcd-2", "set": {"embedded-registry": "true"}}]},
            "version": "v1.33.4+k3s1", "run": "runs/r1", "shard": 0}],
        "minimal": {FINDING: {"check": check, "steps": 1, "confirm_runs": 1, "confirmed": 1,
            "minimise_runs": 0}},
    });
    std::fs::write(dir.join("campaign.json"), state.to_string()).expect("write");
    std::fs::create_dir_all(dir.join("checks")).expect("mkdir");
    if check == "checks/x.yaml" && std::fs::symlink_metadata(dir.join(check)).is_err() {
        std::fs::write(
            dir.join(check),
            format!("name: x\n# \u{1b}]0;title\u{7}\ntoken: {CAMPAIGN_SECRET}\n```\n# heading\n"),
        )
        .expect("write");
    }
}

/// `repro explore --recheck dir`, bounded in time (a FIFO or an endless file must not hang it).
fn recheck(dir: &Path) -> Ran {
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(Repro::new().arg("explore").arg("--recheck").arg(&dir).run());
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("--recheck blocked on a file of the folder")
}

fn assert_nothing_written(dir: &Path) {
    for f in ["findings.md", "findings.json", "junit.xml"] {
        assert!(!dir.join(f).exists(), "{f} written into {}", dir.display());
    }
}

/// #42 attack 1: campaign.json's minimal check naming a file outside the folder — an absolute
/// path, `..`, a link out — is refused (exit 2, the field and what is valid), nothing written.
#[test]
fn a_recheck_reads_no_file_outside_its_campaign_folder() {
    let tmp = tempfile::tempdir().expect("tmp");
    let outside = tmp.path().join("id_ed25519");
    std::fs::write(&outside, format!("KEY {CAMPAIGN_SECRET}\n")).expect("write");
    for (i, check) in [
        outside.display().to_string(),
        "../../../../../../etc/passwd".into(),
        "checks/../../id_ed25519".into(),
        "checks/x\n## forged.yaml".into(),
    ]
    .iter()
    .enumerate()
    {
        let dir = tmp.path().join(format!("c{i}"));
        campaign(&dir, check, "o1-embedded-registry");
        let out = recheck(&dir);
        out.code(2)
            .stderr_has(&format!("minimal.{FINDING}.check"))
            .stderr_has("checks/<id>.yaml");
        assert!(!out.stderr.contains(CAMPAIGN_SECRET), "{out}");
        assert!(!out.stderr.contains("\n## forged"), "{out}");
        assert_nothing_written(&dir);
    }
    // a link out of the folder under the check's own name
    let dir = tmp.path().join("link");
    std::fs::create_dir_all(dir.join("checks")).expect("mkdir");
    symlink(&outside, dir.join("checks/x.yaml")).expect("symlink");
    campaign(&dir, "checks/x.yaml", "o1-embedded-registry");
    let out = recheck(&dir);
    out.code(2).stderr_has("outside");
    assert!(!out.stdout.contains(CAMPAIGN_SECRET) && !out.stderr.contains(CAMPAIGN_SECRET));
    assert_nothing_written(&dir);
}

/// #42 attack 4: a minimal check or a result.json that is a FIFO, `/dev/zero` or a 2 GiB sparse
/// file is refused by kind or size, at once and in bounded memory; nothing written.
#[test]
fn a_recheck_refuses_fifos_devices_and_huge_files_in_the_folder() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cases: [(&str, &str, &str); 5] = [
        ("fifo", "checks/x.yaml", "named pipe"),
        ("zero", "checks/x.yaml", "outside"),
        ("sparse", "checks/x.yaml", "larger than"),
        ("zero-result", "runs/r1/result.json", "outside"),
        ("sparse-result", "runs/r1/result.json", "larger than"),
    ];
    for (name, file, want) in cases {
        let dir = tmp.path().join(name);
        campaign(&dir, "checks/x.yaml", "o1-embedded-registry");
        let p = dir.join(file);
        std::fs::remove_file(&p).expect("rm");
        if name == "fifo" {
            let st = Command::new("mkfifo").arg(&p).status().expect("mkfifo");
            assert!(st.success());
        } else if name.starts_with("zero") {
            symlink("/dev/zero", &p).expect("symlink");
        } else {
            let f = std::fs::File::create(&p).expect("create");
            f.set_len(2 * 1024 * MIB).expect("sparse");
        }
        let t = Instant::now();
        let out = recheck(&dir);
        out.code(2).stderr_has(want);
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{name}: {:?}",
            t.elapsed()
        );
        assert_nothing_written(&dir);
    }
}

/// #42 attack 6: findings.md, findings.json and junit.xml of a tampered folder hold no planted
/// secret and no raw control character (but line breaks), no forged heading or HTML, and
/// junit.xml parses.
#[test]
fn a_tampered_campaign_rechecks_into_redacted_escaped_outputs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("c");
    campaign(&dir, "checks/x.yaml", "o1-embedded-registry");
    let out = recheck(&dir);
    out.code(0);
    assert!(!out.stdout.contains(CAMPAIGN_SECRET), "{out}");
    for f in ["findings.md", "findings.json", "junit.xml"] {
        let text = std::fs::read_to_string(dir.join(f)).expect(f);
        assert!(!text.contains(CAMPAIGN_SECRET), "{f}:\n{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{f} holds a raw control character:\n{text:?}"
        );
        assert!(!text.contains("\n## forged"), "{f}:\n{text}");
        // (findings.json holds it as data, a JSON string)
        assert!(
            f == "findings.json" || !text.contains("<script>"),
            "{f}:\n{text}"
        );
    }
    let md = std::fs::read_to_string(dir.join("findings.md")).expect("md");
    assert!(md.contains("embedded-registry"), "{md}");
    assert!(
        md.contains("minimal check"),
        "the finding kept its check:\n{md}"
    );
    let xml = std::fs::read_to_string(dir.join("junit.xml")).expect("xml");
    let doc = roxmltree::Document::parse(&xml).expect("junit.xml parses");
    assert!(
        doc.descendants().any(|n| n.has_tag_name("testcase")),
        "{xml}"
    );
}

/// #42 attack 7: `--recheck` of a folder that holds no campaign is an error and writes nothing.
#[test]
fn a_recheck_of_a_folder_without_a_campaign_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(tmp.path().join("notes.txt"), "mine\n").expect("write");
    Repro::new()
        .arg("explore")
        .arg("--recheck")
        .arg(tmp.path())
        .run()
        .code(2)
        .stderr_has("not a campaign folder");
    assert_nothing_written(tmp.path());
}

/// #42 attack 6: ids and versions of campaign.json are checked before `--resume … --emit
/// github-matrix` prints them into a workflow's matrix (a `run:` would expand them).
#[test]
fn injected_ids_in_a_campaign_are_refused_before_use() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (i, id) in [
        "o1;$(touch /tmp/pwned)",
        "o1\n::set-output name=x::y",
        "",
        "o1 o2",
    ]
    .iter()
    .enumerate()
    {
        let dir = tmp.path().join(format!("c{i}"));
        campaign(&dir, "checks/x.yaml", id);
        let out = Repro::new()
            .args(["explore", "--emit", "github-matrix", "--resume"])
            .arg(&dir)
            .run();
        out.code(2).stderr_has("sequences.id");
        assert!(!out.stdout.contains("touch"), "{out}");
        assert!(!out.stderr.contains("\n::set-output"), "{out}");
    }
    // a version with a line break
    let dir = tmp.path().join("v");
    campaign(&dir, "checks/x.yaml", "o1-embedded-registry");
    let p = dir.join("campaign.json");
    let text = std::fs::read_to_string(&p).expect("read");
    std::fs::write(&p, text.replace("\"v1.33.4+k3s1\"", "\"v1.33.4+k3s1\\nx\"")).expect("write");
    Repro::new()
        .args(["explore", "--emit", "github-matrix", "--resume"])
        .arg(&dir)
        .run()
        .code(2)
        .stderr_has("versions");
}

// ---- `--out` never replaces what is not a file (#42) ----

/// #42 attack 2: `report --validation --out` to a character device writes through it; to a
/// FIFO, a link or a folder it is refused (exit 2, naming what the path is) — never replaced by a
/// regular file, and at once (a FIFO never blocks it).
#[test]
fn report_validation_out_never_replaces_a_device_fifo_link_or_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let targets = crate::out_targets::out_targets(tmp.path());
    for (path, refused) in &targets {
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(
                Repro::new()
                    .args([
                        "report",
                        "--validation",
                        "tests/fixtures/run-etcd-split-buggy",
                        "tests/fixtures/run-etcd-split-fixed",
                        "--out",
                    ])
                    .arg(&p)
                    .run(),
            );
        });
        let out = rx.recv_timeout(Duration::from_secs(60)).expect("blocked");
        match refused {
            None => {
                out.code(0);
            }
            Some(word) => {
                out.code(2).stderr_has("--out").stderr_has(word);
            }
        }
    }
    crate::out_targets::assert_kept(tmp.path(), &targets);
}
