#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! Issue #24: every output path that needs no Docker goes through the redactor — `repro plan`
//! (text and JSON), `validate` messages, `report --validation`, `repro merge` (stdout,
//! summary.json, junit.xml), error messages echoing user input and clap's own errors. Each test
//! plants distinct secrets and searches everything repro printed or wrote for them.

use std::path::Path;

use crate::fixtures::write_result;
use crate::repro::{Output, Repro};
use crate::util::{copy_dir, project, root};

/// Secrets planted in a scenario, each in a shape that was printed in clear before.
const ENV_SEP: &str = "plantedEnv,tail&x\"q0001";
const ENC_KEY: &str = "plantedEncKey0002";
const S3_KEY: &str = "plantedS3,Key0003";
const REG_PASS: &str = "plantedRegPass0004";
const TOKEN_FILE: &str = "plantedTokenFile0005";
const DESC: &str = "plantedDescPw0006";

#[track_caller]
fn none_of(out: &Output, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !out.stdout.contains(s) && !out.stderr.contains(s),
            "`{}` printed {s:?}:\n--- stdout\n{}\n--- stderr\n{}",
            out.command,
            out.stdout,
            out.stderr
        );
    }
}

fn planted_project() -> tempfile::TempDir {
    let root = project(&["checks/signals.yaml", "checks/etcd-split.yaml"]);
    std::fs::create_dir_all(root.path().join("topologies")).unwrap();
    let topo = format!(
        "name: etcd-split\n\
         description: \"4 nodes (password: {DESC})\"\n\
         k3s-version: v1.33.4+k3s1\n\
         files:\n  \
           registries.yaml: |\n    \
             mirrors:\n      docker.io: {{}}\n    \
             configs:\n      reg.example:\n        auth:\n          username: reguser\n          password: {REG_PASS}\n\
         nodes:\n  \
           - {{name: etcd-1, role: etcd, init: true}}\n  \
           - name: etcd-2\n    role: etcd\n    join: etcd-1\n    \
             config: {{etcd-s3-secret-key: \"{S3_KEY}\", token-file: /etc/rancher/k3s/token}}\n    \
             env: {{PASSWORD: '{}', SECRETS_ENCRYPTION_KEY: {ENC_KEY}}}\n    \
             files:\n      /etc/rancher/k3s/token: \"{TOKEN_FILE}\\n\"\n  \
           - {{name: etcd-3, role: etcd, join: etcd-1}}\n  \
           - {{name: cp-1, role: control-plane, join: etcd-1}}\n",
        ENV_SEP.replace('\'', "''")
    );
    std::fs::write(root.path().join("topologies/etcd-split.yaml"), topo).unwrap();
    root
}

const ALL: [&str; 6] = [ENV_SEP, ENC_KEY, S3_KEY, REG_PASS, TOKEN_FILE, DESC];

/// The pieces a shape rule would have cut a separator-holding value into.
const PIECES: [&str; 3] = ["tail&x", "Key0003", "q0001"];

#[test]
fn plan_text_and_json_print_no_secret_of_the_scenario() {
    let root = planted_project();
    let r = root.path().to_str().unwrap();
    let text = Repro::new().args(["plan", "etcd-split", "--root", r]).run();
    text.code(0);
    none_of(&text, &ALL);
    none_of(&text, &PIECES);
    // The keys and the file's path stay readable.
    for kept in [
        "etcd-s3-secret-key",
        "token-file",
        "/etc/rancher/k3s/token",
        "<REDACTED-",
    ] {
        assert!(text.stdout.contains(kept), "{kept} lost:\n{}", text.stdout);
    }
    let json = Repro::new()
        .args(["plan", "etcd-split", "--format", "json", "--root", r])
        .run();
    json.code(0);
    none_of(&json, &ALL);
    none_of(&json, &PIECES);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("still JSON");
    let env = &v["nodes"][1]["env"];
    assert_eq!(
        env["PASSWORD"]
            .as_str()
            .map(|s| s.starts_with("<REDACTED-")),
        Some(true),
        "{env}"
    );
}

#[test]
fn validate_messages_do_not_echo_a_secret() {
    let root = planted_project();
    let bad = root.path().join("broken.yaml");
    let validate = |file: &std::path::Path| {
        Repro::new()
            .arg("validate")
            .arg(file)
            .arg("--root")
            .arg(root.path())
            .run()
    };
    // A check file whose bad line holds a secret: the message quotes the line.
    std::fs::write(
        &bad,
        format!("name: broken\nissue: \"password={REG_PASS}\"\nsummary: s\ntopology: etcd-split\nsteps:\n  - name: s\n    restart: [\"--token={TOKEN_FILE}\"]\n    expect: {{etcd-1: {{embedded-registry: up}}}}\n"),
    )
    .unwrap();
    let out = validate(&bad);
    out.code(2);
    none_of(&out, &[REG_PASS, TOKEN_FILE]);
    // A value the project's topology sets under a secret key, quoted by a message of another
    // file: no shape tells it is a secret, knowledge does.
    std::fs::write(
        &bad,
        format!("name: broken\nissue: https://github.com/k3s-io/k3s/issues/1\nsummary: s\ntopology: etcd-split\nsteps:\n  - name: s\n    restart: [\"{S3_KEY}\"]\n    expect: {{etcd-1: {{embedded-registry: up}}}}\n"),
    )
    .unwrap();
    let out = validate(&bad);
    out.code(2);
    out.stderr_has("unknown node");
    none_of(&out, &[S3_KEY]);
}

/// Both runs of a validation comment in one redaction context: a secret one folder knows
/// under its key is hidden where the other shows it bare; shapes missed before are hidden.
#[test]
fn validation_comment_hides_secrets_of_both_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (b, f) = (tmp.path().join("buggy"), tmp.path().join("fixed"));
    copy_dir(&root().join("tests/fixtures/run-etcd-split-buggy"), &b);
    copy_dir(&root().join("tests/fixtures/run-etcd-split-fixed"), &f);
    let plant = |dir: &Path, extra: &str| {
        let p = dir.join("result.json");
        let mut r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let cfg = r["configs"]["0"]["etcd-2"].as_str().unwrap().to_string();
        r["configs"]["0"]["etcd-2"] = format!("{cfg}{extra}").into();
        std::fs::write(&p, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    };
    plant(&b, &format!("etcd-s3-secret-key: {REG_PASS}\n"));
    plant(
        &f,
        &format!("# seen bare: {REG_PASS}\n# SECRETS_ENCRYPTION_KEY={ENC_KEY}\n"),
    );
    let out = Repro::new()
        .args([
            "report",
            "--validation",
            b.to_str().unwrap(),
            f.to_str().unwrap(),
        ])
        .run();
    out.code(0);
    none_of(&out, &[REG_PASS, ENC_KEY]);
    out.stdout_has("SECRETS_ENCRYPTION_KEY=<REDACTED-");
}

/// `repro merge` copies each run's `error`: it must come out redacted in stdout,
/// summary.json and junit.xml.
#[test]
fn merge_redacts_a_runs_error_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("in/run-1");
    write_result(&run, "id-1", "v1.33.4+k3s1", "reproduced", None);
    let p = run.join("result.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    r["error"] = format!(
        "Docker is not reachable at tcp://admin:{REG_PASS}@10.0.0.9:2376 (SECRETS_ENCRYPTION_KEY={ENC_KEY})"
    )
    .into();
    std::fs::write(&p, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let out_dir = tmp.path().join("out");
    let out = Repro::new()
        .args([
            "merge",
            run.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .run();
    out.code(3);
    none_of(&out, &[REG_PASS, ENC_KEY]);
    for f in ["summary.json", "junit.xml"] {
        let text = std::fs::read_to_string(out_dir.join(f)).unwrap();
        for s in [REG_PASS, ENC_KEY] {
            assert!(!text.contains(s), "{f} holds {s}:\n{text}");
        }
        assert!(text.contains("REDACTED-"), "{f}: {text}");
    }
}

/// Errors that echo the command line: repro's own and clap's.
#[test]
fn errors_echoing_the_command_line_are_redacted_and_sanitised() {
    let image = Repro::new()
        .args([
            "run",
            "etcd-split",
            "--image",
            "https://u:plantedImgPw0007@reg/k3s:v1",
        ])
        .run();
    image.code(2);
    none_of(&image, &["plantedImgPw0007"]);
    image.stderr_has("https://u:<REDACTED-1>@reg");
    // clap's unknown-argument error quotes the argument: redacted, and no raw escape reaches
    // the terminal.
    let unknown = Repro::new()
        .args([
            "plan",
            "etcd-split",
            "password=plantedClapTok0008\u{1b}]0;x",
        ])
        .run();
    unknown.code(2);
    none_of(&unknown, &["plantedClapTok0008", "\u{1b}"]);
    unknown.stderr_has("'password=<REDACTED-1>");
    // Help still goes to stdout, exit 0.
    Repro::new().args(["plan", "--help"]).run().code(0);
}

/// A log collector's folder (k3s.service as install.sh writes it, the node's env file, a
/// kubelet manifest): `repro redact --out` keeps none of the shapes issue #24 found in clear.
#[test]
fn redact_of_a_log_collector_folder_hides_the_new_shapes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("collected");
    std::fs::create_dir_all(src.join("etc/systemd/system")).unwrap();
    std::fs::write(
        src.join("etc/systemd/system/k3s.service"),
        "[Service]\nExecStart=/usr/local/bin/k3s \\\n    server \\\n\t'--token' \\\n\t'plantedUnitTok0009' \\\n\t'--node-name' \\\n\t'etcd-1' \\\n",
    )
    .unwrap();
    std::fs::write(
        src.join("etc/systemd/system/k3s.service.env"),
        "SECRETS_ENCRYPTION_KEY=plantedEncKey0010\nDOCKER_HOST=tcp://admin:sl/plantedSlash0011@10.0.0.2:2376\n",
    )
    .unwrap();
    std::fs::write(
        src.join("app.yaml"),
        "env:\n  - name: AWS_SECRET_ACCESS_KEY\n    value: plantedK8sEnv0012\n",
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let out = Repro::new()
        .args([
            "redact",
            src.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .run();
    out.code(0);
    let planted = [
        "plantedUnitTok0009",
        "plantedEncKey0010",
        "plantedSlash0011",
        "plantedK8sEnv0012",
    ];
    none_of(&out, &planted);
    let mut all = String::new();
    for f in [
        "etc/systemd/system/k3s.service",
        "etc/systemd/system/k3s.service.env",
        "app.yaml",
    ] {
        all.push_str(&std::fs::read_to_string(out_dir.join(f)).unwrap());
    }
    for s in planted {
        assert!(!all.contains(s), "{s} kept:\n{all}");
    }
    assert!(
        all.contains("'--token' \\\n\t'<REDACTED-") && all.contains("'etcd-1'"),
        "{all}"
    );
}
