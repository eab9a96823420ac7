#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! `repro inspect` through the real binary: fixtures (synthetic ones under
//! tests/fixtures/inspect/, real excerpts under tests/fixtures/real-k3s/), exit codes, the JSON
//! Schema, redaction, and hostile input that must end in a clear error or a result.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::repro::{Output, Repro};
use crate::schema;
use crate::util::{repro, root};

use serde_json::Value;

/// What `--format json` prints must match.
const SCHEMA: &str = "schema/inspect.schema.json";

const JOURNAL: &str = "tests/fixtures/inspect/three-etcd-one-cp.journal";

fn inspect(args: &[&str]) -> Output {
    Repro::new()
        .arg("inspect")
        .args(args)
        .args(["--progress", "never"])
        .run()
}

fn json(out: &Output) -> Value {
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
    schema::assert_valid(SCHEMA, &v, "inspect's JSON");
    v
}

fn schema_errors(v: &Value) -> Vec<String> {
    schema::errors(SCHEMA, v)
}

fn boot<'a>(v: &'a Value, input: usize, node: &str, n: u64) -> &'a Value {
    v["inputs"][input]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == node)
        .and_then(|x| {
            x["boots"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["boot"] == n)
        })
        .unwrap_or_else(|| panic!("no boot {n} of {node}"))
}

fn findings(v: &Value) -> Vec<(String, u64, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["node"].as_str().unwrap().to_string(),
                f["boot"].as_u64().unwrap(),
                f["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn journal_with_configs_matches_the_bug_and_exits_1() {
    let out = inspect(&[
        JOURNAL,
        "--config",
        "etcd-1=tests/fixtures/inspect/configs/etcd-1.yaml",
        "--config",
        "etcd-2=tests/fixtures/inspect/configs/etcd-2.yaml",
        "--config",
        "cp-1=tests/fixtures/inspect/configs/cp-1.yaml",
        "--format",
        "json",
    ]);
    out.code(1);
    let v = json(&out);
    let b = boot(&v, 0, "etcd-2", 2);
    assert_eq!(b["version"], "v1.33.4+k3s1");
    assert_eq!(b["role"], "etcd");
    assert_eq!(b["signals"]["embedded-registry"]["state"], "down");
    assert_eq!(b["signals"]["supervisor-metrics"]["state"], "unknown");
    assert_eq!(boot(&v, 0, "cp-1", 1)["role"], "control-plane");
    assert_eq!(
        findings(&v),
        [
            ("etcd-2".to_string(), 1, "matches".to_string()),
            ("etcd-2".to_string(), 2, "matches".to_string()),
            ("etcd-3".to_string(), 1, "possible".to_string()),
        ]
    );
    let f = &v["findings"][1];
    assert_eq!(f["check"], "etcd-split");
    assert_eq!(f["fixed_in"], "v1.33.5+k3s1");
    assert_eq!(
        f["message"],
        "matches https://github.com/k3s-io/k3s/issues/12753 (fixed in v1.33.5+k3s1)"
    );
    // The fake token of the configs never reaches the output.
    assert!(!out.stdout.contains("not-a-real-token-1"));
    assert!(!out.stdout.contains("K10d0c5c0ffee"));
}

#[test]
fn without_configs_it_says_what_it_needs_and_exits_0() {
    let out = inspect(&[JOURNAL]);
    out.code(0);
    insta::assert_snapshot!("inspect-journal-table", out.stdout);
}

#[test]
fn markdown_to_paste_into_an_issue() {
    let out = inspect(&[
        "tests/fixtures/inspect/pasted-issue.md",
        "--format",
        "markdown",
    ]);
    out.code(0);
    insta::assert_snapshot!("inspect-pasted-markdown", out.stdout);
}

#[test]
fn log_collector_folder_and_its_archive() {
    let out = inspect(&["tests/fixtures/inspect/collector", "--format", "json"]);
    out.code(1);
    let v = json(&out);
    assert_eq!(v["inputs"][0]["kind"], "log-collector");
    let node = &v["inputs"][0]["nodes"][0];
    assert_eq!(node["name"], "etcd-3");
    assert_eq!(node["name_from"], "systeminfo/hostname");
    // --embedded-registry comes from the unit's ExecStart, server: from config.yaml.
    assert_eq!(
        findings(&v),
        [("etcd-3".to_string(), 1, "matches".to_string())]
    );

    // The same folder as the collector ships it: a .tar.gz.
    let tmp = tempfile::tempdir().unwrap();
    let tgz = tmp.path().join("etcd-3-2025-09-26_10_45_00.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&tgz).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all(
        "etcd-3-2025-09-26_10_45_00",
        root().join("tests/fixtures/inspect/collector/etcd-3-2025-09-26_10_45_00"),
    )
    .unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let out = inspect(&[tgz.to_str().unwrap(), "--format", "json"]);
    out.code(1);
    let w = json(&out);
    assert_eq!(w["inputs"][0]["kind"], "log-collector");
    assert_eq!(
        w["inputs"][0]["nodes"][0]["boots"],
        v["inputs"][0]["nodes"][0]["boots"]
            .as_array()
            .map(|b| b
                .iter()
                .map(|x| relabel(
                    x,
                    "tests/fixtures/inspect/collector/",
                    &format!("{}!", tgz.display())
                ))
                .collect::<Vec<_>>())
            .map(Value::Array)
            .unwrap(),
        "the archive reads as the folder does"
    );
}

/// A value with every string's `from` prefix replaced by `to` (file labels differ between a
/// folder and an archive of it).
fn relabel(v: &Value, from: &str, to: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(from, to)),
        Value::Array(a) => Value::Array(a.iter().map(|x| relabel(x, from, to)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), relabel(x, from, to)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn repro_results_folder_fixture() {
    let out = inspect(&["tests/fixtures/run-etcd-split-buggy", "--format", "json"]);
    out.code(1);
    let v = json(&out);
    assert_eq!(v["inputs"][0]["kind"], "repro-results");
    for (node, n, state) in [
        ("etcd-1", 1, "down"),
        ("etcd-1", 2, "up"),
        ("etcd-2", 2, "down"),
        ("etcd-2", 3, "up"),
        ("etcd-3", 2, "down"),
        ("etcd-3", 3, "up"),
    ] {
        assert_eq!(
            boot(&v, 0, node, n)["signals"]["embedded-registry"]["state"],
            state,
            "{node} boot {n}"
        );
    }
    let f = findings(&v);
    assert!(f.contains(&("etcd-2".into(), 2, "matches".into())), "{f:?}");
    // inspect.json there carries a fake run token; nothing of it is printed.
    assert!(!out.stdout.contains("K10"));
}

#[test]
fn docker_logs_file_and_standard_input() {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/inspect/docker-etcd-3.log")).unwrap();
    let mut child = repro()
        .args(["inspect", "-", "--format", "json", "--progress", "never"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(schema_errors(&v).is_empty());
    assert_eq!(v["inputs"][0]["kind"], "stdin");
    let boots = v["inputs"][0]["nodes"][0]["boots"].as_array().unwrap();
    assert_eq!(boots.len(), 2);
    assert_eq!(boots[0]["signals"]["embedded-registry"]["state"], "down");
    assert_eq!(boots[1]["signals"]["embedded-registry"]["state"], "up");
    assert_eq!(boots[0]["end"]["how"], "next-boot");
    // --node names it, and --config then matches.
    let out = inspect(&[
        "--node",
        "etcd-3=tests/fixtures/inspect/docker-etcd-3.log",
        "--config",
        "etcd-3=tests/fixtures/inspect/configs/etcd-2.yaml",
    ]);
    out.code(1);
    out.stdout_has("MATCH  etcd-3 boot 1");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("notes.txt"), "Dear diary,\nnothing here is a log.\n").unwrap();
    std::fs::write(p("program"), b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00").unwrap();
    std::fs::create_dir(p("empty")).unwrap();
    std::fs::write(p("bad.yaml"), "embedded-registry: [true\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![p("missing.log")], "cannot read"),
        (vec![p("notes.txt")], "formats tried: docker logs"),
        (
            vec![p("program")],
            "a program (ELF executable), not a text log",
        ),
        (vec![p("empty")], "no log files found"),
        (
            vec!["--node".into(), "no-equals-sign".into()],
            "is not NAME=FILE",
        ),
        (
            vec![
                JOURNAL.into(),
                "--config".into(),
                format!("etcd-2={}", p("bad.yaml")),
            ],
            "bad.yaml",
        ),
        (vec![], "nothing to inspect"),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = inspect(&args);
        out.code(2);
        assert!(
            out.stderr.contains(want),
            "`{}`: stderr lacks `{want}`:\n{}",
            out.command,
            out.stderr
        );
    }
}

/// Runs inspect on a file and returns the output; the test only asks for no panic and a clear
/// ending (speed and memory are the benchmark's business).
fn survives(path: &Path) -> Output {
    let out = inspect(&[path.to_str().unwrap()]);
    assert!(
        matches!(out.code, 0..=2),
        "`{}` exited {}:\n{}",
        out.command,
        out.code,
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

#[test]
fn hostile_input_ends_in_an_error_or_a_result() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = std::fs::read_to_string(root().join(JOURNAL)).unwrap();

    // A 20 MB line in the middle of a journal: cut, counted, the rest read.
    let huge = tmp.path().join("huge-line.journal");
    let (a, b) = journal.split_at(journal.len() / 2);
    let cut = a.rfind('\n').unwrap() + 1;
    let mut f = std::fs::File::create(&huge).unwrap();
    f.write_all(&journal.as_bytes()[..cut]).unwrap();
    f.write_all(b"Sep 26 10:35:00 etcd-1 k3s[1001]: ").unwrap();
    f.write_all(&vec![b'x'; 20 << 20]).unwrap();
    f.write_all(b"\n").unwrap();
    f.write_all(&a.as_bytes()[cut..]).unwrap();
    f.write_all(b.as_bytes()).unwrap();
    drop(f);
    let out = survives(&huge);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout_has("line(s) longer than");

    // An endless line without a newline: 64 MB of text that is no log.
    let endless = tmp.path().join("endless");
    std::fs::write(&endless, vec![b'y'; 64 << 20]).unwrap();
    let out = survives(&endless);
    assert_eq!(out.code, 2);
    out.stderr_has("unknown format");

    // 1 GB of nothing (a sparse file): binary, said at once.
    let sparse = tmp.path().join("sparse.log");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = survives(&sparse);
    assert_eq!(out.code, 2);
    out.stderr_has("binary");

    // A journal followed by a 1 GB hole (a disk that filled up): streamed to the end.
    let tail = tmp.path().join("journal-then-hole.log");
    std::fs::write(&tail, &journal).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&tail)
        .unwrap()
        .set_len(journal.len() as u64 + (1 << 30))
        .unwrap();
    let out = survives(&tail);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout_has("etcd-2  2");
}

/// Every real excerpt of tests/fixtures/real-k3s/ read by `inspect` as its sidecar concludes:
/// the same state for every signal, and a death where the excerpt shows one. Value signals a
/// cut excerpt does not show are `none` in the sidecar (the runner's word for "no line") and
/// `unknown` or `none` here (inspect does not claim a cut boot has no more values).
#[test]
fn real_k3s_corpus_reads_as_its_sidecars_conclude() {
    let read = corpus_reads_as_its_sidecars_conclude("real-k3s", "k3s");
    assert!(read >= 10, "the corpus has {read} excerpts");
}

/// The same for tests/fixtures/real-rke2/ (#19): inspect has no rule of its own for any of
/// them; it tells RKE2 from the lines (banner, journal identifier, unit, paths) and judges each
/// boot with the `distribution: rke2` patterns. The three `rke2 -v` outputs are versions, not
/// boots (their sidecars say so), and are left out here.
#[test]
fn real_rke2_corpus_reads_as_its_sidecars_conclude() {
    let read = corpus_reads_as_its_sidecars_conclude("real-rke2", "rke2");
    assert_eq!(read, 11 + new_rke2_excerpts(), "excerpts read");
}

/// RKE2 excerpts added after inspect learned RKE2, never seen while writing it (rke-3032,
/// rke2-251, rke2-629 in the corpus README; rke2-3481 for the explore keys, #29), and
/// harvester-2606 (a Go panic, #31).
fn new_rke2_excerpts() -> usize {
    5
}

/// Reads every excerpt of `tests/fixtures/<dir>` with its sidecar; returns how many were read.
fn corpus_reads_as_its_sidecars_conclude(dir: &str, distribution: &str) -> usize {
    let dir = root().join("tests/fixtures").join(dir);
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut failures = Vec::new();
    let mut read = 0;
    for log in &logs {
        let sidecar: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(log.with_extension("yaml")).unwrap())
                .unwrap();
        if sidecar["format"]
            .as_str()
            .is_some_and(|f| f.contains(&format!("`{distribution} -v`")))
        {
            continue;
        }
        read += 1;
        let rel = log
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let out = inspect(&[&rel, "--format", "json"]);
        assert!(
            matches!(out.code, 0 | 1),
            "{rel}: exit {}\n{}",
            out.code,
            out.stderr
        );
        let v = json(&out);
        let nodes = v["inputs"][0]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 1, "{rel}: one node");
        let boots = nodes[0]["boots"].as_array().unwrap();
        assert_eq!(boots.len(), 1, "{rel}: one boot");
        let b = &boots[0];
        for (sig, want) in sidecar["signals"].as_object().unwrap() {
            let want = want.as_str().unwrap();
            let got = b["signals"][sig]["state"].as_str().unwrap_or("(missing)");
            let value_signal = b["signals"][sig].get("complete").is_some();
            // A death is its own observation (`dead`, as `run` records it), standing for the
            // signal's on-death value: the sidecars say what it stands for.
            let death = got == "dead" && b["signals"][sig]["counts_as"] == want;
            let ok = got == want || death || (value_signal && want == "none" && got == "unknown");
            if !ok {
                failures.push(format!("{rel}: {sig} is {got}, the sidecar says {want}"));
            }
        }
        let died = sidecar["boot-end"] == "died";
        if died != (b["end"]["how"] == "died") {
            failures.push(format!(
                "{rel}: end {} but boot-end {}",
                b["end"]["how"], sidecar["boot-end"]
            ));
        }
        // The distribution, where the excerpt names it at all (a lone logrus line may not): its
        // banner, journal identifier, unit, paths or supervisor URLs.
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let names_it = [
            format!("Starting {distribution} "),
            format!(" {distribution}["),
            format!("/rancher/{distribution}"),
            format!("/v1-{distribution}/"),
        ]
        .iter()
        .any(|w| text.contains(w.as_str()));
        if names_it && b["distribution"] != distribution {
            failures.push(format!(
                "{rel}: distribution {}, not {distribution}",
                b["distribution"]
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    read
}

/// docs/inspect.md's example is this command's real output, kept current.
#[test]
fn readme_example_is_the_real_output() {
    let out = inspect(&[
        "tests/fixtures/real-k3s/k3s-12974-registry-up-journald.log",
        "tests/fixtures/real-k3s/k3s-6448-mismatch-secrets-encryption-tty.log",
    ]);
    out.code(0);
    let readme = std::fs::read_to_string(root().join("docs/inspect.md")).unwrap();
    assert!(
        readme.contains(&out.stdout),
        "docs/inspect.md's `repro inspect` example differs from the real output:\n{}",
        out.stdout
    );
}

/// The journals of tests/fixtures/journal-formats/ (the real journalctl's json, export,
/// short-monotonic and short-unix outputs of one merged three-host journal): one node per host,
/// etcd-1's two starts as two boots (two invocation ids), etcd-2's start timeout a death with no
/// fatal line (`dead`, not `fatal: up`), cp-1's fatal line `fatal: up`.
#[test]
fn journalctl_output_formats_read_per_host_and_per_start() {
    for (file, format) in [
        ("journal.json", "journalctl -o json"),
        ("journal.export", "journalctl -o export"),
        ("journal.short-monotonic", "journalctl -o short-monotonic"),
        ("journal.short-unix", "journalctl -o short-unix"),
    ] {
        let path = format!("tests/fixtures/journal-formats/{file}");
        let out = inspect(&[&path, "--format", "json"]);
        assert_eq!(out.code, 0, "{path}: {}", out.stderr);
        let v = json(&out);
        let input = &v["inputs"][0];
        assert!(
            input["files"][0]["format"]
                .as_str()
                .unwrap()
                .starts_with(format),
            "{path}: {}",
            input["files"][0]["format"]
        );
        let nodes: Vec<(&str, usize)> = input["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["name"].as_str().unwrap(),
                    n["boots"].as_array().unwrap().len(),
                )
            })
            .collect();
        assert_eq!(nodes, [("etcd-1", 2), ("etcd-2", 1), ("cp-1", 1)], "{path}");
        for n in 1..=2 {
            let b = boot(&v, 0, "etcd-1", n);
            assert_eq!(
                b["signals"]["ready"]["state"], "up",
                "{path} etcd-1 boot {n}"
            );
            assert_eq!(b["distribution"], "k3s", "{path}");
            assert!(b["start"]["text"]
                .as_str()
                .unwrap()
                .contains("Starting k3s v1.33.4+k3s1"));
        }
        let killed = boot(&v, 0, "etcd-2", 1);
        assert_eq!(killed["end"]["how"], "died", "{path}");
        assert!(
            killed["end"]["evidence"]["text"]
                .as_str()
                .unwrap()
                .contains("Failed with result 'timeout'"),
            "{path}: {}",
            killed["end"]
        );
        for (sig, counts_as) in [("fatal", "up"), ("ready", "down")] {
            assert_eq!(killed["signals"][sig]["state"], "dead", "{path}: {sig}");
            assert_eq!(
                killed["signals"][sig]["counts_as"], counts_as,
                "{path}: {sig}"
            );
        }
        let fatal = boot(&v, 0, "cp-1", 1);
        assert_eq!(fatal["signals"]["fatal"]["state"], "up", "{path}");
        assert_eq!(fatal["end"]["how"], "died", "{path}");
        assert_eq!(fatal["end"]["exit_code"], 1, "{path}");
    }
}

/// `-o cat` and a grep of the message part have no host: one node, every start a boot, and the
/// lines of k3s still judged (the banner, ready, fatal).
#[test]
fn journalctl_cat_and_message_only_grep() {
    for file in ["journal.cat", "journal.grep"] {
        let path = format!("tests/fixtures/journal-formats/{file}");
        let out = inspect(&[&path, "--format", "json"]);
        assert_eq!(out.code, 0, "{path}: {}", out.stderr);
        let v = json(&out);
        let nodes = v["inputs"][0]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 1, "{path}");
        let boots = nodes[0]["boots"].as_array().unwrap();
        assert_eq!(boots.len(), 4, "{path}: four starts, four banners");
        assert_eq!(boots[0]["signals"]["ready"]["state"], "up", "{path}");
        assert_eq!(boots[2]["signals"]["fatal"]["state"], "up", "{path}");
    }
}

/// A journal's `_HOSTNAME` holding a line break and an escape sequence: the table shows them
/// escaped in the node's cell, and no row of the attacker's (`FAKE-NODE`) is printed.
#[test]
fn control_characters_in_a_host_name_are_shown_not_interpreted() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = tmp.path().join("hostile.json");
    let host = "etcd-1\nFAKE-NODE  9  2026-01-01 00:00:00  v9.9.9  server  up\u{1b}[2J";
    let line = serde_json::json!({
        "__REALTIME_TIMESTAMP": "1796155190222309",
        "_HOSTNAME": host,
        "SYSLOG_IDENTIFIER": "k3s",
        "_PID": "85",
        "_SYSTEMD_UNIT": "k3s.service",
        "_SYSTEMD_INVOCATION_ID": "aa11",
        "MESSAGE": "time=\"2026-12-01T19:59:50Z\" level=info msg=\"Starting k3s v1.33.4+k3s1 (abcdef12)\"",
    });
    std::fs::write(&journal, format!("{line}\n")).unwrap();
    let out = inspect(&[journal.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("FAKE-NODE")),
        "{}",
        out.stdout
    );
    out.stdout_has("etcd-1\\u000aFAKE-NODE");
    assert!(!out.stdout.contains('\u{1b}'), "{}", out.stdout);
}

/// systemd before v236 wrote a unit's end in lower case, `main process exited, code=exited,
/// status=1/FAILURE` (then `entered failed state`, `k3s.service failed.`), as in k3s #1545's
/// real journal: the exit status is read from that line (the fatal line before it has none).
#[test]
fn the_exit_status_of_systemd_before_v236_is_read() {
    let rel = "tests/fixtures/real-k3s/k3s-1545-systemd-v219-exit-journalctl-x.log";
    let out = inspect(&[rel, "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = json(&out);
    let b = boot(&v, 0, "master1", 1);
    assert_eq!(b["version"], "v1.17.3+k3s1");
    assert_eq!(b["end"]["how"], "died", "{b}");
    assert_eq!(b["end"]["exit_code"], 1, "{b}");
}

/// k3s #9343 as `journalctl -xeu k3s` printed it (tests/fixtures/real-k3s/): a banner, a fatal
/// line and systemd's exit, on host `k3s-control-plane-nbg1-lso`. The cases below re-wrap these
/// real lines into the shapes testers feed inspect; no message is made up.
const XE_9343: &str = "tests/fixtures/real-k3s/k3s-9343-unreachable-server-journalctl-xe.log";
const HOST_9343: &str = "k3s-control-plane-nbg1-lso";

/// The fixture's journal lines without journalctl's `░░` catalog lines.
fn journal_9343() -> String {
    std::fs::read_to_string(root().join(XE_9343))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('░'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The 9343 boot was read whole: one boot, ended by the death the log shows.
fn reads_the_9343_death(out: &Output) {
    assert_eq!(out.code, 0, "`{}`:\n{}", out.command, out.stderr);
    let v = json(out);
    let b = boot(&v, 0, HOST_9343, 1);
    assert_eq!(b["version"], "v1.28.6+k3s1");
    assert_eq!(b["end"]["how"], "died", "{b}");
    assert_eq!(b["signals"]["fatal"]["state"], "up");
}

#[test]
fn nul_blocks_after_text_are_read_as_the_crash_left_them() {
    // A file system that lost blocks in a crash leaves runs of NULs in a log file, after
    // lines of text or between them (the line after the run starts right after it).
    let tmp = tempfile::tempdir().unwrap();
    let journal = journal_9343();
    let exit_line = journal
        .find(&format!("Feb 02 08:45:29 {HOST_9343} systemd"))
        .unwrap();
    let mut mid = journal.as_bytes()[..exit_line].to_vec();
    mid.extend(vec![0u8; 4096]);
    mid.extend(&journal.as_bytes()[exit_line..]);
    let mut tail = journal.clone().into_bytes();
    tail.extend(vec![0u8; 8192]);
    for (name, bytes) in [("nul-mid.log", mid), ("nul-tail.log", tail)] {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        reads_the_9343_death(&inspect(&[p.to_str().unwrap(), "--format", "json"]));
    }
}

#[test]
fn packed_and_encoded_logs_are_refused_by_name_with_how_to_unpack() {
    use std::io::Write as _;
    let tmp = tempfile::tempdir().unwrap();
    let journal = journal_9343();
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let mut utf16 = vec![0xff, 0xfe];
    utf16.extend(journal.encode_utf16().flat_map(u16::to_le_bytes));
    let mut tar_header = b"k3s.log".to_vec();
    tar_header.resize(257, 0);
    tar_header.extend(b"ustar\x0000");
    tar_header.resize(1024, 0);
    // The magic numbers of each form, then bytes that are not text.
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "k3s.log.xz",
            b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F".to_vec(),
            "xz-compressed data",
            "xz -dc",
        ),
        (
            "k3s.log.zst",
            b"\x28\xb5\x2f\xfd\x04\x58\x00\x00".to_vec(),
            "zstd-compressed data",
            "zstd -dc",
        ),
        (
            "k3s.log.bz2",
            b"BZh91AY&SY\x00\x01".to_vec(),
            "bzip2-compressed data",
            "bzip2 -dc",
        ),
        (
            "bundle",
            b"PK\x03\x04\x14\x00\x00\x00".to_vec(),
            "a zip archive",
            "unzip",
        ),
        ("bundle.bin", tar_header, "a tar archive", "extract it"),
        (
            "system.journal",
            b"LPKSHHRH\x00\x00\x00\x00".to_vec(),
            "a systemd journal file",
            "journalctl --file",
        ),
        (
            "k3s utf16.log",
            utf16,
            "UTF-16 text",
            "iconv -f UTF-16 -t UTF-8 '",
        ),
        (
            "twice.gz",
            gz(&gz(journal.as_bytes())),
            "gzip data inside a gzip file",
            "zcat",
        ),
    ];
    for (name, bytes, what, help) in cases {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = inspect(&[p.to_str().unwrap()]);
        out.code(2);
        out.stderr_has(&format!("{}: {what}", p.display()));
        out.stderr_has(help);
    }
    // On standard input there is no file name to put in the command.
    let mut child = repro()
        .args(["inspect", "-", "--progress", "never"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("<stdin>: xz-compressed data")
            && stderr.contains("`xz -dc FILE > k3s.log`"),
        "{stderr}"
    );
    // A .gz cut short keeps the lines before the cut, and says where it broke off.
    let whole = gz(journal.repeat(400).as_bytes());
    let cut = tmp.path().join("cut.gz");
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    let out = inspect(&[cut.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = json(&out);
    assert!(v["inputs"][0]["notes"][0]
        .as_str()
        .unwrap()
        .contains("read error after line"));
    assert_eq!(boot(&v, 0, HOST_9343, 1)["end"]["how"], "died");
}

#[test]
fn journal_forms_with_one_field_a_line_are_refused_not_misread() {
    // `-o json-pretty`, `-o verbose` and `-o json-sse` of the 9343 lines, in the layout
    // systemd 252's journalctl prints (tab-indented `"FIELD" : value`; four-space-indented
    // `FIELD=value` under a header; `data: {…}`). Read as text they gave a node named after
    // the file and boots split at every field.
    let tmp = tempfile::tempdir().unwrap();
    let messages: Vec<String> = journal_9343()
        .lines()
        .map(|l| l.split_once("]: ").unwrap().1.to_string())
        .collect();
    let mut pretty = String::new();
    let mut verbose = String::new();
    let mut sse = String::new();
    for (i, m) in messages.iter().enumerate() {
        let msg = serde_json::to_string(m).unwrap();
        pretty += &format!(
            "{{\n\t\"__REALTIME_TIMESTAMP\" : \"170686352900000{i}\",\n\t\"_HOSTNAME\" : \"{HOST_9343}\",\n\t\"MESSAGE\" : {msg}\n}}\n"
        );
        verbose += &format!(
            "Fri 2024-02-02 08:45:29.00000{i} UTC [s=cdfdbd66767942d2a449872c0428b6d7;i={i}]\n    _HOSTNAME={HOST_9343}\n    MESSAGE={m}\n"
        );
        sse += &format!("data: {{\"_HOSTNAME\":\"{HOST_9343}\",\"MESSAGE\":{msg}}}\n\n");
    }
    for (name, text, form) in [
        ("pretty.json", pretty, "journalctl -o json-pretty"),
        ("verbose.log", verbose, "journalctl -o verbose"),
        ("sse.log", sse, "journalctl -o json-sse"),
    ] {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = inspect(&[p.to_str().unwrap()]);
        out.code(2);
        out.stderr_has(&format!("{}: `{form}` output", p.display()));
        out.stderr_has("-o json");
    }
}

#[test]
fn component_logs_and_empty_files_are_not_nodes() {
    // RKE2's agent/logs/kubelet.log and containerd.log hold the components' lines (these two
    // from rke2 #2080), never the distribution's: a node named `kubelet` would not exist.
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(
        logs.join("kubelet.log"),
        "I1103 15:14:56.951994    6897 apiserver.go:50] \"node sync has not completed yet\"\n",
    )
    .unwrap();
    std::fs::write(
        logs.join("containerd.log"),
        "time=\"2021-11-03T15:11:09.202935969Z\" level=info msg=\"starting containerd\" revision=919301ca81ba0ecd308ce4ebce0424456fbf80c5 version=v1.4.9-k3s1\n",
    )
    .unwrap();
    for (name, who) in [
        ("kubelet.log", "the kubelet"),
        ("containerd.log", "containerd"),
    ] {
        let p = logs.join(name);
        let out = inspect(&[p.to_str().unwrap()]);
        out.code(2);
        out.stderr_has(&format!("{}: {who}'s own log", p.display()));
        out.stderr_has("journalctl -u rke2-server");
    }
    std::fs::write(logs.join("k3s.log"), journal_9343()).unwrap();
    let out = inspect(&[logs.to_str().unwrap(), "--format", "json"]);
    let v = json(&out);
    let nodes: Vec<&str> = v["inputs"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, [HOST_9343]);

    let empty = tmp.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    inspect(&[empty.to_str().unwrap()])
        .code(2)
        .stderr_has("empty.log: empty, no log line");
    let blank = tmp.path().join("blank.log");
    std::fs::write(&blank, " \r\n\n\t\n").unwrap();
    inspect(&[blank.to_str().unwrap()])
        .code(2)
        .stderr_has("blank.log: only blank lines (3), no log line");
}

#[test]
fn journal_lines_without_an_english_date_keep_their_host_and_boot() {
    // k3s #6119 (https://github.com/k3s-io/k3s/issues/6119), as its stored copy shows the
    // paste: journalctl's lines with the date gone, the time first. The same lines again with
    // the month as journalctl prints it under a Chinese locale (`%b` is ` 9月`): re-wrapped.
    let lines = [
        " 12:09:42 node systemd[1]: Starting Lightweight Kubernetes...",
        " 12:09:42 node sh[22373]: + /usr/bin/systemctl is-enabled --quiet nm-cloud-setup.service",
        " 12:09:42 node sh[22373]: Failed to get unit file state for nm-cloud-setup.service: No such file or directory",
        " 12:09:42 node k3s[22385]: time=\"2022-09-12T12:09:42+08:00\" level=info msg=\"Acquiring lock file /var/lib/rancher/k3s/data/.lock\"",
        " 12:09:44 node k3s[22385]: time=\"2022-09-12T12:09:44+08:00\" level=info msg=\"Starting k3s v1.24.4+k3s1 (c3f830e9)\"",
        " 12:09:45 node k3s[22385]: time=\"2022-09-12T12:09:45+08:00\" level=info msg=\"Database tables and indexes are up to date\"",
        " 12:09:45 node k3s[22385]: time=\"2022-09-12T12:09:45+08:00\" level=info msg=\"Kine available at unix://kine.sock\"",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let no_date: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let zh: String = lines.iter().map(|l| format!(" 9月 12{l}\n")).collect();
    for (name, text) in [("k3s-6119.log", no_date), ("k3s-6119-zh.log", zh)] {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = inspect(&[p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v = json(&out);
        let nodes = v["inputs"][0]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 1, "{name}: {nodes:?}");
        let b = boot(&v, 0, "node", 1);
        assert_eq!(b["version"], "v1.24.4+k3s1", "{name}");
        assert_eq!(b["start"]["time"], "2022-09-12T04:09:44.000Z", "{name}");
    }
}

#[test]
fn short_delta_and_no_entries() {
    // `journalctl -o short-delta` (the monotonic stamp and the time since the entry before) of
    // the 9343 lines, re-wrapped; and journalctl's whole answer for a unit with no line, as
    // k3s #146 (https://github.com/k3s-io/k3s/issues/146) shows it.
    let tmp = tempfile::tempdir().unwrap();
    let delta: String = journal_9343()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let rest = l.splitn(4, ' ').nth(3).unwrap();
            format!("[ 1095.61052{i} <    0.00000{i}>] {rest}\n")
        })
        .collect();
    let p = tmp.path().join("delta.log");
    std::fs::write(&p, delta).unwrap();
    reads_the_9343_death(&inspect(&[p.to_str().unwrap(), "--format", "json"]));

    let none = tmp.path().join("none.log");
    std::fs::write(
        &none,
        "-- Logs begin at Sat 2019-03-02 07:14:45 UTC, end at Mon 2019-03-04 19:18:55 UTC. --\n-- No entries --\n",
    )
    .unwrap();
    inspect(&[none.to_str().unwrap()])
        .code(2)
        .stderr_has("none.log: journalctl printed `-- No entries --`")
        .stderr_has("k3s-agent");
}

#[test]
fn a_log_quoted_in_a_reply_reads_as_the_log() {
    // The 9343 journal quoted as an issue's reply quotes it (`> ` before each line, nested
    // once more for a quote of a quote): the host, the banner and the death as unquoted.
    let tmp = tempfile::tempdir().unwrap();
    for (name, mark) in [("quoted.md", "> "), ("quoted-twice.md", "> > ")] {
        let text: String = journal_9343()
            .lines()
            .map(|l| format!("{mark}{l}\n"))
            .collect();
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        reads_the_9343_death(&inspect(&[p.to_str().unwrap(), "--format", "json"]));
    }
}
