//! `repro doctor` on this engine, and the part of it a run makes before its first node. This
//! project's engines refuse privileged containers (Docker 20.10 in a sandbox: "unable to apply
//! caps"), so real k3s cannot run here and the stand-in can: the tests assert exactly that, and
//! would fail on an engine that allows privileged containers (there, `doctor` exits 0).

use std::process::Command;

use serde_json::Value;

use crate::docker::docker_ok;
use crate::images::Image;
use crate::repro::{Output, Repro};
use crate::runs::Run;

/// `repro doctor <args>`.
fn doctor(args: &[&str]) -> Output {
    Repro::new().arg("doctor").args(args).run()
}

/// `repro doctor --format json <args>`: what it printed and its one JSON document.
fn doctor_json(args: &[&str]) -> (Output, Value) {
    let out = doctor(&[&["--format", "json"], args].concat());
    let v = out.json();
    (out, v)
}

/// The doctor tests one at a time: each checks that no doctor's throwaway container is left,
/// which another test's doctor, still running, would have.
static ONE_DOCTOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_doctor() -> std::sync::MutexGuard<'static, ()> {
    ONE_DOCTOR.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the doctor's throwaway containers left (their run ids start `doctor-`).
fn doctor_leftovers() -> Vec<String> {
    let mut left = Vec::new();
    for kind in [&["ps", "-a"][..], &["network", "ls"], &["volume", "ls"]] {
        let out = Command::new("docker")
            .args(kind)
            .args(["--filter", "label=io.repro.node=trial"])
            .args(["--format", "{{.Labels}}"])
            .output()
            .unwrap();
        assert!(out.status.success(), "docker {kind:?}");
        left.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains("io.repro.run=doctor-"))
                .map(|l| format!("{} {l}", kind[0])),
        );
    }
    left
}

#[test]
fn doctor_says_real_k3s_cannot_run_here_and_the_stand_in_can() {
    docker_ok();
    let _one = one_doctor();
    let out = doctor(&[]);
    let s = out.to_string();
    out.code(3);
    assert!(
        s.contains("FAIL  privileged") && s.contains("refused a privileged container"),
        "{s}"
    );
    assert!(s.contains("but started it unprivileged"), "{s}");
    assert!(
        s.contains("inotify") && s.contains("max_user_instances"),
        "{s}"
    );
    assert!(s.contains("memory") && s.contains("MiB"), "{s}");
    assert!(s.contains("real k3s cannot run here"), "{s}");
    assert!(s.contains("--sim"), "{s}");
    assert_eq!(doctor_leftovers(), Vec::<String>::new());

    let out = doctor(&["--sim"]);
    let s = out.to_string();
    out.code(0);
    assert!(!s.contains("FAIL"), "{s}");
    assert!(s.contains("the k3s stand-in can run here"), "{s}");
}

#[test]
fn doctor_json_is_one_document_with_every_check() {
    docker_ok();
    let _one = one_doctor();
    let (out, v) = doctor_json(&["--topology", "etcd-split", "--version", "v1.33.5+k3s1"]);
    out.code(3);
    assert_eq!(v["ok"], false);
    assert_eq!(v["topology"], "etcd-split");
    assert_eq!(v["version"], "v1.33.5+k3s1");
    assert_eq!(v["nodes"], 4);
    let checks = v["checks"].as_array().unwrap();
    let status = |name: &str| check_line(&v, name)["status"].clone();
    assert_eq!(status("privileged"), "fail");
    assert_eq!(status("engine"), "ok");
    for c in [
        "docker-host",
        "cgroup",
        "inotify",
        "memory",
        "image",
        "disk",
        "kernel-config",
        "image-store",
        "mtu",
    ] {
        assert!(status(c).is_string(), "{c}");
    }
    // #31: the MTU the engine gives containers, as the docker CLI reads it off the default
    // bridge, and that a run's network follows it.
    let detail = |name: &str| check_line(&v, name)["detail"].as_str().unwrap().to_string();
    let bridge = std::process::Command::new("docker")
        .args(["network", "inspect", "bridge", "--format"])
        .arg("{{index .Options \"com.docker.network.driver.mtu\"}}")
        .output()
        .unwrap();
    let bridge = String::from_utf8_lossy(&bridge.stdout).trim().to_string();
    let mtu = detail("mtu");
    if bridge.is_empty() || bridge == "1500" {
        assert!(
            mtu.contains("engine's default (1500)") || mtu.contains("sets no MTU"),
            "{mtu}"
        );
    } else {
        assert!(
            mtu.contains(&format!("gives containers MTU {bridge}"))
                && mtu.contains(&format!("network is created with MTU {bridge}")),
            "{mtu}"
        );
    }
    let store = detail("image-store");
    assert!(
        store.starts_with("containerd image store") || store.starts_with("classic graph driver"),
        "{store}"
    );
    assert!(checks
        .iter()
        .all(|c| c["status"] == "ok" || c["fix"].is_string()));

    let out = doctor(&["--topology", "nope"]);
    out.code(2);
    assert!(out.to_string().contains("etcd-split"), "{out}");
    assert_eq!(doctor_leftovers(), Vec::<String>::new());
}

/// A run whose nodes need privileges makes the doctor's trial first: refused here, it stops
/// with exit 3 and the doctor's line before any node container exists.
#[test]
fn a_privileged_run_stops_at_the_doctors_line_before_any_node() {
    docker_ok();
    let _one = one_doctor();
    let run = Run::check("etcd-split")
        .sim()
        .args(["--privileged", "always"])
        .finish();
    let (s, r) = (run.out.to_string(), &run.result);
    run.out.code(3);
    assert!(
        s.contains("this host cannot run the nodes (repro doctor): FAIL privileged"),
        "{s}"
    );
    assert!(s.contains("--sim"), "{s}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("privileged"),
        "{}",
        r["error"]
    );
    // No node was ever created: no boot log, no container (`finish` checked the engine).
    assert!(
        !run.dir
            .join("nodes")
            .join("etcd-1")
            .join("boot-1.log")
            .exists(),
        "{s}"
    );
}

/// Disk free against the nodes (the engine's data root, this machine's `df`), `k3s
/// check-config` skipped with a warn line where it cannot say anything about real k3s (the
/// image absent, or the stand-in), and the engine named in DOCKER_HOST's line.
#[test]
fn doctor_reads_disk_against_nodes_and_skips_check_config_without_the_real_image() {
    docker_ok();
    let _one = one_doctor();
    let line = |args: &[&str], name: &str| check_line(&doctor_json(args).1, name);
    // Real k3s, 5 nodes of 1024 MiB each: the line names the data root and the need.
    let disk = line(&["--topology", "etcd-split-agent"], "disk");
    let d = disk["detail"].as_str().unwrap();
    assert!(d.contains(" MiB free at /"), "{disk}");
    assert!(
        d.contains("the 5 nodes of etcd-split-agent take about 5120 MiB"),
        "{disk}"
    );
    // A tiny topology needs less: the figure follows the node count.
    let two = line(&["--topology", "etcd-split"], "disk");
    assert!(
        two["detail"]
            .as_str()
            .unwrap()
            .contains("the 4 nodes of etcd-split take about 4096 MiB"),
        "{two}"
    );

    // No real k3s image on this engine (it cannot pull): skipped, naming why and the command.
    let real = line(&["--version", "v1.33.4+k3s1"], "kernel-config");
    assert_eq!(real["status"], "warn", "{real}");
    let r = real["detail"].as_str().unwrap();
    assert!(
        r.starts_with("skipped: rancher/k3s:v1.33.4-k3s1 is not here")
            || r.starts_with("skipped: rancher/k3s:v1.33.4-k3s1 is repro's stand-in"),
        "{real}"
    );
    assert!(
        real["fix"].as_str().unwrap().contains("check-config"),
        "{real}"
    );
    let sim = line(&["--sim"], "kernel-config");
    assert_eq!(sim["status"], "warn", "{sim}");
    assert!(
        sim["detail"]
            .as_str()
            .unwrap()
            .starts_with("skipped: the stand-in has no `k3s check-config`"),
        "{sim}"
    );

    // This machine's engine is Docker, and the line says so (Podman would be named).
    let host = line(&["--sim"], "docker-host");
    assert!(
        host["detail"].as_str().unwrap().contains("Docker engine"),
        "{host}"
    );
    assert_eq!(doctor_leftovers(), Vec::<String>::new());
}

/// An image built FROM the stand-in's, labelled as not the stand-in, removed when dropped;
/// `extra` goes after the FROM line (an `ENV` choosing the stand-in's check-config output).
fn real_like(extra: &str) -> Image {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!(
        "repro.local/real-like-check-config:e2e-{}-{}",
        std::process::id(),
        nanos % 1_000_000
    );
    Image::on_stand_in(
        name,
        "v1.33.4+k3s1",
        &format!("LABEL io.repro.sim=false\n{extra}"),
    )
}

fn kernel_config(image: &str) -> (i32, Value) {
    let (out, v) = doctor_json(&["--topology", "etcd-split", "--image", image]);
    (out.code, check_line(&v, "kernel-config"))
}

/// `k3s check-config` run by the doctor in a throwaway container of an image it takes for real
/// k3s (built FROM the stand-in's, `io.repro.sim=false`; the stand-in prints a real output of
/// k3s's script, tests/fixtures/check-config/): a passing output is an ok line, a failing one a
/// FAIL naming the missing option, and no container is left either way.
#[test]
fn doctor_runs_check_config_in_the_image_and_names_what_is_missing() {
    docker_ok();
    let _one = one_doctor();
    let pass = real_like("");
    let (_, line) = kernel_config(&pass.0);
    assert_eq!(line["status"], "ok", "{line}");
    assert!(
        line["detail"].as_str().unwrap().contains("STATUS: pass"),
        "{line}"
    );
    assert_eq!(doctor_leftovers(), Vec::<String>::new());

    let fail = real_like("ENV REPRO_SIM_CHECK_CONFIG=fail");
    let (code, line) = kernel_config(&fail.0);
    // This engine's privileged trial fails too; the kernel line fails on its own.
    assert_eq!(code, 3, "{line}");
    assert_eq!(line["status"], "fail", "{line}");
    let d = line["detail"].as_str().unwrap();
    assert!(d.contains("CONFIG_NETFILTER_XT_MATCH_IPVS"), "{line}");
    assert!(
        !d.contains("CONFIG_USER_NS"),
        "optional, not necessary: {line}"
    );
    assert!(
        line["fix"].as_str().unwrap().contains("check-config"),
        "{line}"
    );
    assert_eq!(doctor_leftovers(), Vec::<String>::new());

    // rke2 has no check-config subcommand: skipped, saying so.
    let (_, v) = doctor_json(&["--version", "v1.32.5+rke2r1"]);
    let rke2 = check_line(&v, "kernel-config");
    assert_eq!(rke2["status"], "warn", "{rke2}");
    assert!(
        rke2["detail"]
            .as_str()
            .unwrap()
            .contains("rke2 has no check-config subcommand"),
        "{rke2}"
    );
    let check = |name: &str| check_line(&v, name);
    // The privileged trial starts a systemd node image as a node starts (its own command,
    // systemd), not with a `-v` it has no entrypoint for: here the engine refuses privileges
    // but the container starts unprivileged; on a host that allows them it starts privileged.
    let privileged = check("privileged");
    let detail = privileged["detail"].as_str().unwrap();
    assert!(
        detail.contains("but started it unprivileged")
            || detail.contains("a privileged container of"),
        "{privileged}"
    );
    assert!(!detail.contains("not even an unprivileged"), "{privileged}");
    // The rke2 node image is built, not pulled: the line says from what, the images tarball
    // among it (fetched by default, #31).
    let image = check("image");
    let detail = image["detail"].as_str().unwrap();
    if !detail.ends_with(" is here") {
        assert!(
            detail.contains("rke2.linux-amd64.tar.gz") && !detail.contains("`repro run` pulls it"),
            "{image}"
        );
        assert!(
            detail.contains("rke2-images.linux-amd64.tar.zst")
                && detail.contains("--no-images-tarball"),
            "{image}"
        );
    }
    assert_eq!(doctor_leftovers(), Vec::<String>::new());
}

/// The doctor's line `name` of its JSON output.
fn check_line(v: &Value, name: &str) -> Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
        .clone()
}
