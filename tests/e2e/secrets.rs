//! Issue 14's secret-planting proof: a real stand-in run with a distinct secret planted in every
//! shape the redactor knows (files, config keys, env, `DOCKER_HOST`, the cluster token), then
//! `repro report`; every file of the results folder — the bundle's members decompressed — and
//! everything repro printed is searched for every planted secret and its derived forms (upper-
//! and lower-case, base64 at each alignment): none may be found, and every file is 0600, every
//! folder 0700. Needs Docker (fails without it); nothing labelled with the run id may be left.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::Engine as _;

use crate::docker::docker_ok;
use crate::repro::{Output, Repro};
use crate::runs::{assert_no_leftovers, Run};
use crate::tcp_proxy::{docker_socket, TcpProxy};
use crate::util::{copy_dir, project};

const PEM_LINES: [&str; 3] = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCplantedPemLineOne0001",
    "plantedPemLineTwo0002xQm9JbXZnN2dSa0tUZlRQcWd3b3Rm",
    "plantedPemLineThree0003Zk5dWQ==",
];

/// (shape, secret): every value is distinct, at least 12 characters, and no one contains another.
fn planted() -> Vec<(&'static str, String)> {
    let mut v: Vec<(&str, String)> = PEM_LINES
        .iter()
        .map(|l| ("files: PEM private key line", l.to_string()))
        .collect();
    v.extend(
        [
            ("files: registries.yaml auth.username", "plantedRegUser0004"),
            ("files: registries.yaml auth.password", "plantedRegPass0005"),
            (
                "files: registries.yaml auth.auth",
                "cGxhbnRlZFJlZ0F1dGgwMDA2",
            ),
            (
                "files: registries.yaml auth.identitytoken",
                "plantedRegIdTok0007",
            ),
            (
                "files: kubeconfig client-key-data",
                "cGxhbnRlZEt1YmVLZXkwMDA4",
            ),
            ("files: kubeconfig token", "plantedKubeToken0009"),
            (
                "files: docker config.json auths.auth",
                "cGxhbnRlZERvY2tlckF1dGgwMDEw",
            ),
            ("config: etcd-s3-secret-key", "plantedCfgSecret0011"),
            ("config: etcd-s3-access-key", "plantedCfgAccess0012"),
            ("env: DB_PASS", "plantedEnvDbPass0013"),
            ("env: SESSION_KEY", "plantedEnvSession0014"),
            ("env: CREDS", "plantedEnvCreds0015"),
            ("env: API_KEY", "plantedEnvApiKey0016"),
            ("env: APP_SECRET", "plantedEnvAppSecret0017"),
            ("env: LDAP_PASSWD", "plantedEnvPasswd0018"),
            ("env: SSH_PASSPHRASE", "plantedEnvPhrase0019"),
            (
                "env: a JWT",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.plantedJwtSig0020",
            ),
            ("env: URL password holding @", "planted@UrlPass0021"),
            ("DOCKER_HOST: tcp://user:password@", "plantedDockerHost0022"),
            // Issue #24: shapes that stayed in clear.
            ("env: a value holding , \" and &", "plantedSep,Va\"l&ue0023"),
            ("config: token-file's content", "plantedTokenFile0024"),
            (
                "files: install.sh unit '--token' \\ 'VALUE'",
                "plantedUnitTok0025",
            ),
            ("env: SECRETS_ENCRYPTION_KEY", "plantedEncKey0026"),
        ]
        .iter()
        .map(|(s, v)| (*s, v.to_string())),
    );
    v
}

/// A secret and the forms a process may print it in (the redactor's own list, recomputed here),
/// and its JSON-escaped form (a `"` inside it is `\"` in result.json and inspect.json).
fn forms(secret: &str) -> Vec<String> {
    let json = serde_json::to_string(secret).unwrap();
    let mut f = vec![
        secret.to_string(),
        secret.to_uppercase(),
        secret.to_lowercase(),
        json[1..json.len() - 1].to_string(),
    ];
    let b = secret.as_bytes();
    for skip in 0..3 {
        let whole = (b.len() - skip) / 3 * 3;
        for e in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            f.push(e.encode(&b[skip..skip + whole]));
        }
    }
    f.sort();
    f.dedup();
    f
}

/// The etcd-split project with every secret planted, and `env` values the stand-in echoes into
/// its log (a bad fault-knob value is printed back: "ignoring REPRO_SIM_BOOT_DELAY=…").
fn planted_root(echo: &[(&str, String)]) -> tempfile::TempDir {
    let p: Vec<String> = planted().into_iter().map(|(_, s)| s).collect();
    let root = project(&["checks/signals.yaml", "checks/etcd-split.yaml"]);
    std::fs::create_dir_all(root.path().join("topologies")).unwrap();
    let pem = format!(
        "        -----BEGIN RSA PRIVATE KEY-----\n        {}\n        -----END RSA PRIVATE KEY-----\n",
        PEM_LINES.join("\n        ")
    );
    let registries = format!(
        "    mirrors:\n      docker.io: {{}}\n    configs:\n      \"reg.example:5000\":\n        auth:\n          username: {}\n          password: {}\n          auth: {}\n          identitytoken: {}\n",
        p[3], p[4], p[5], p[6]
    );
    let kubeconfig = format!(
        "        apiVersion: v1\n        users:\n        - name: admin\n          user:\n            client-key-data: {}\n        - name: sa\n          user:\n            token: {}\n",
        p[7], p[8]
    );
    let docker_config = format!(
        "        {{\"auths\": {{\"https://index.docker.io/v1/\": {{\"auth\": \"{}\"}}}}}}\n",
        p[9]
    );
    let mut env = format!(
        "DB_PASS: {}, SESSION_KEY: {}, CREDS: {}, API_KEY: {}, APP_SECRET: {}, LDAP_PASSWD: {}, SSH_PASSPHRASE: {}, OIDC_ID: \"{}\", DATABASE_URL: \"postgres://k3s:{}@db:5432/k3s\"",
        p[12], p[13], p[14], p[15], p[16], p[17], p[18], p[19], p[20]
    );
    env.push_str(&format!(
        ", PASSWORD: \"{}\", SECRETS_ENCRYPTION_KEY: {}",
        p[22].replace('"', "\\\""),
        p[25]
    ));
    for (k, v) in echo {
        env.push_str(&format!(", {k}: \"{v}\""));
    }
    // k3s's install.sh writes k3s.service one quoted argument a line.
    let unit = format!(
        "        [Service]\n        ExecStart=/usr/local/bin/k3s \\\n            server \\\n        \t'--token' \\\n        \t'{}' \\\n",
        p[24]
    );
    let topo = format!(
        "name: etcd-split\nk3s-version: v1.33.4+k3s1\nfiles:\n  /etc/rancher/k3s/registries.yaml: |\n{registries}nodes:\n  - {{name: etcd-1, role: etcd, init: true}}\n  - name: etcd-2\n    role: etcd\n    join: etcd-1\n    config: {{etcd-s3-secret-key: {}, etcd-s3-access-key: {}, token-file: /etc/rancher/k3s/planted-token}}\n    env: {{{env}}}\n    files:\n      /etc/rancher/k3s/planted-token: \"{}\\n\"\n      /etc/systemd/system/k3s.service: |\n{unit}      /root/client.key: |\n{pem}      /root/.kube/config: |\n{kubeconfig}      /root/.docker/config.json: |\n{docker_config}  - {{name: etcd-3, role: etcd, join: etcd-1}}\n  - {{name: cp-1, role: control-plane, join: etcd-1}}\n",
        p[10], p[11], p[23]
    );
    std::fs::write(root.path().join("topologies/etcd-split.yaml"), topo).unwrap();
    root
}

/// Every regular file under `dir` (recursively), with the members of every `.tar.gz` as their own
/// entries (`bundle.tar.gz!path`); checks each file's and folder's mode on the way.
fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>, modes: &mut Vec<String>) {
    let dmode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    if dmode != 0o700 {
        modes.push(format!("{} is {dmode:o}", dir.display()));
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            every_file(&p, out, modes);
            continue;
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode != 0o600 {
            modes.push(format!("{} is {mode:o}", p.display()));
        }
        let data = std::fs::read(&p).unwrap();
        if p.to_string_lossy().ends_with(".tar.gz") {
            let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(data.as_slice()));
            for m in ar.entries().unwrap() {
                let mut m = m.unwrap();
                let name = format!("{}!{}", p.display(), m.path().unwrap().display());
                let mut body = Vec::new();
                std::io::Read::read_to_end(&mut m, &mut body).unwrap();
                out.push((name, body));
            }
        }
        out.push((p.display().to_string(), data));
    }
}

/// Every place a form of a secret is found: (where, shape, form).
fn find_all(
    files: &[(String, Vec<u8>)],
    secrets: &[(&str, String)],
) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (name, data) in files {
        let text = String::from_utf8_lossy(data);
        for (shape, s) in secrets {
            for f in forms(s) {
                if text.contains(&f) {
                    found.push((name.clone(), shape.to_string(), f));
                }
            }
        }
    }
    found
}

fn outputs(name: &str, o: &Output) -> Vec<(String, Vec<u8>)> {
    vec![
        (format!("{name} stdout"), o.stdout.clone().into_bytes()),
        (format!("{name} stderr"), o.stderr.clone().into_bytes()),
    ]
}

#[test]
fn no_planted_secret_reaches_the_results_folder_the_bundle_or_the_output() {
    docker_ok();
    let mut secrets = planted();
    let p: Vec<String> = secrets.iter().map(|(_, s)| s.clone()).collect();
    // Derived forms printed by the node itself: the stand-in echoes a bad knob value.
    let echo = [
        ("REPRO_SIM_BOOT_DELAY", STANDARD_NO_PAD.encode(&p[10])),
        ("REPRO_SIM_EXIT_AFTER", p[12].to_uppercase()),
    ];
    let root = planted_root(&echo);
    let proxy = TcpProxy::start(&docker_socket()).unwrap();
    let docker_host = format!("tcp://plantuser:{}@127.0.0.1:{}", p[21], proxy.port());
    let (out, results) = Run::check("etcd-split")
        .sim()
        .keep()
        .version("v1.33.4+k3s1")
        .expect("reproduced")
        .root(root.path())
        .env("DOCKER_HOST", &docker_host)
        .output();
    drop(proxy);
    let finished = results.kept(out);
    let (run, r, dir) = (&finished.out, &finished.result, &finished.dir);
    let run_id = finished.run_id();
    // The cluster token lives only in the containers' env: read it from Docker, then clean up.
    let env = Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{range .Config.Env}}{{println .}}{{end}}",
            &format!("repro-{run_id}-etcd-2"),
        ])
        .output()
        .unwrap();
    let env = String::from_utf8_lossy(&env.stdout).into_owned();
    let token = env
        .lines()
        .find_map(|l| l.strip_prefix("K3S_TOKEN="))
        .unwrap_or_default()
        .to_string();
    let clean = Repro::new().args(["clean", "--run", &run_id]).run();
    assert_no_leftovers(&run_id);
    run.code(0);
    clean.code(0);
    assert!(token.len() >= 16, "could not read the run token");
    // Everything was really planted: the containers got the env and files.
    for s in [&p[12], &p[19], &p[22], &p[25]] {
        assert!(env.contains(s.as_str()), "not planted: {s}");
    }
    // inspect.json holds the env value with its separators, redacted whole.
    let inspect = std::fs::read_to_string(dir.join("nodes/etcd-2/inspect.json")).unwrap();
    for name in ["PASSWORD", "SECRETS_ENCRYPTION_KEY"] {
        let at = inspect.find(&format!("\"{name}=")).expect("the env entry");
        let entry = inspect[at + 1..].split_once("\",").map_or("", |(e, _)| e);
        let value = entry.strip_prefix(&format!("{name}=")).unwrap_or(entry);
        assert!(
            value.starts_with("<REDACTED-") && value.ends_with('>') && !value.contains(','),
            "{name} in inspect.json: {entry}"
        );
    }
    assert_eq!(
        r["environment"]["docker_host"]
            .as_str()
            .map(|h| h.starts_with("tcp://plantuser:<REDACTED-")),
        Some(true),
        "{}",
        r["environment"]
    );
    secrets.push(("the cluster token", token.clone()));

    // What the run itself left, before anything else touches the folder.
    let mut files = Vec::new();
    let mut bad_modes = Vec::new();
    every_file(dir, &mut files, &mut bad_modes);
    let found = find_all(&files, &secrets);
    assert!(
        found.is_empty(),
        "planted secrets found after the run: {found:#?}"
    );
    assert!(bad_modes.is_empty(), "modes after the run: {bad_modes:#?}");

    // `repro report` re-renders the (redacted) folder.
    let report = Repro::new().arg("report").arg(dir).run();
    report.code(0);

    // The other outputs of the same scenario and run (issue #24): the plan, in text and JSON;
    // the validation command given the run twice (refused since #32 as a duplicate pair, exit
    // 2: its message names the folders, which must not carry a secret either; the comment itself
    // with planted secrets is tests/suite/secrets_cli.rs's); GitHub annotations.
    let plan = |extra: &[&str]| {
        let out = Repro::new()
            .args(["plan", "etcd-split"])
            .args(extra)
            .arg("--root")
            .arg(root.path())
            .run();
        out.code(0);
        out
    };
    let (plan_text, plan_json) = (plan(&[]), plan(&["--format", "json"]));
    let comment = Repro::new()
        .args(["report", "--validation"])
        .args([dir, dir])
        .run();
    comment.code(2);
    comment.stderr_has("duplicate runs");
    let annotations = Repro::new()
        .args(["report", "--github-annotations"])
        .arg(dir)
        .run();
    annotations.code(0);

    let mut files = Vec::new();
    let mut bad_modes = Vec::new();
    every_file(dir, &mut files, &mut bad_modes);
    let scanned = files.len();
    files.extend(outputs("repro run", run));
    files.extend(outputs("repro report", &report));
    files.extend(outputs("repro clean", &clean));
    files.extend(outputs("repro plan", &plan_text));
    files.extend(outputs("repro plan --format json", &plan_json));
    files.extend(outputs("repro report --validation", &comment));
    files.extend(outputs("repro report --github-annotations", &annotations));
    let found = find_all(&files, &secrets);
    let forms_n: usize = secrets.iter().map(|(_, s)| forms(s).len()).sum();
    let shapes: std::collections::BTreeSet<&str> = secrets.iter().map(|(s, _)| *s).collect();
    println!(
        "secrets: {} planted in {} shapes ({forms_n} forms searched), {scanned} files of the results folder and bundle + 14 output streams scanned, {} found",
        secrets.len(),
        shapes.len(),
        found.len()
    );
    assert!(found.is_empty(), "planted secrets found: {found:#?}");
    assert!(bad_modes.is_empty(), "modes: {bad_modes:#?}");

    // Keys stay readable; the token is <REDACTED-1> everywhere; the node's echo was redacted.
    let all: String = files
        .iter()
        .map(|(_, d)| String::from_utf8_lossy(d).into_owned())
        .collect();
    for key in [
        "etcd-s3-secret-key",
        "DB_PASS",
        "SESSION_KEY",
        "username",
        "client-key-data",
        "BEGIN RSA PRIVATE KEY",
        "K3S_TOKEN=<REDACTED-1>",
    ] {
        assert!(all.contains(key), "`{key}` lost");
    }
    let log = std::fs::read_to_string(dir.join("nodes/etcd-2/boot-1.log")).unwrap();
    for knob in ["REPRO_SIM_BOOT_DELAY=", "REPRO_SIM_EXIT_AFTER="] {
        assert!(
            log.lines()
                .any(|l| l.contains(knob) && l.contains("<REDACTED-")),
            "the node's echo of {knob}: {log}"
        );
    }
}

/// A boot log holding the run token in derived forms (base64, upper-case, split over two lines):
/// `repro report` hides them in the bundle and writes the log itself back redacted.
#[test]
fn derived_forms_of_the_token_in_a_boot_log_are_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy");
    copy_dir(&src, &dir);
    let token = "5e0c9a7b3d1f2468ace013579bdf02468ace13579bdf0246";
    let (a, b) = token.split_at(17);
    let log = dir.join("nodes/etcd-2/boot-1.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&format!(
        "2026-11-30T09:00:30.000000001Z echo {}\n2026-11-30T09:00:30.000000002Z upper {}\n2026-11-30T09:00:30.000000003Z split {a}\n2026-11-30T09:00:30.000000004Z {b} end\n",
        STANDARD_NO_PAD.encode(format!("K3S_TOKEN={token}\n")),
        token.to_uppercase(),
    ));
    std::fs::write(&log, text).unwrap();
    Repro::new()
        .args(["report", "--secret", token])
        .arg(&dir)
        .run()
        .code(0);
    let mut files = Vec::new();
    let mut modes = Vec::new();
    every_file(&dir, &mut files, &mut modes);
    let mut secrets = vec![("the run token", token.to_string())];
    secrets.push(("first part of the split token", a.to_string()));
    secrets.push(("second part of the split token", b.to_string()));
    let found = find_all(&files, &secrets);
    assert!(found.is_empty(), "found: {found:#?}");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("split <REDACTED-") && log.contains("Z <REDACTED-") && log.contains("> end"),
        "{log}"
    );
}

/// An engine that cannot be reached at `tcp://user:password@host`: the error names the engine,
/// and neither it nor the results folder carries the password.
#[test]
fn an_unreachable_docker_host_is_named_without_its_password() {
    let pass = "plantedUnreachable0031";
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (out, results) = Run::check("etcd-split")
        .sim()
        .version("v1.33.4+k3s1")
        .env(
            "DOCKER_HOST",
            format!("tcp://someone:{pass}@127.0.0.1:{port}"),
        )
        .output();
    out.code(3);
    let err = &out.stderr;
    assert!(
        err.contains("tcp://someone:<REDACTED-") && err.contains(&format!("@127.0.0.1:{port}")),
        "{err}"
    );
    let mut files = outputs("repro run", &out);
    let mut modes = Vec::new();
    every_file(&results.only_run_dir(), &mut files, &mut modes);
    let found = find_all(&files, &[("DOCKER_HOST password", pass.to_string())]);
    assert!(found.is_empty(), "found: {found:#?}");
    assert!(modes.is_empty(), "{modes:#?}");
}
