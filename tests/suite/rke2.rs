//! RKE2 on the distribution seam (#19), without Docker: plans on an RKE2 version show RKE2's
//! configs and the expected verdict of releases/rke2-changes.yaml; a key only k3s has is an
//! error naming file:line:col.

use crate::repro::Repro;

/// Plans on the reported rke2 release: their first line, lines they must hold, what of k3s they
/// must not, and the snapshot of the whole.
#[test]
fn plans_on_the_reported_rke2_release() {
    for (check, has, not_k3s, name) in [
        (
            "metrics-order",
            &[
                "  expected  reproduced (v1.32.5+rke2r1 comes before v1.32.9+rke2r1",
                "etcd-2:/etc/rancher/rke2/config.yaml",
                "/etc/rancher/rke2/registries.yaml",
                "server: \"https://etcd-1:9345\"",
            ][..],
            &["cluster-init", "/etc/rancher/k3s", ":6443", "rancher/k3s"][..],
            "rke2-plan-metrics-order",
        ),
        // bootstrap-check's key is one rke2 drops; its RKE2 variant changes a critical key rke2
        // has (secrets-encryption-provider, k3s's EncryptProvider) on a topology that runs rke2.
        (
            "bootstrap-check-rke2",
            &[
                "secrets-encryption-provider: \"secretbox\"",
                "  expected  fixed (",
            ],
            &[
                "disable-helm-controller",
                "cluster-init",
                "/etc/rancher/k3s",
                ":6443",
            ],
            "rke2-plan-bootstrap-check-rke2",
        ),
    ] {
        let out = Repro::new()
            .args(["plan", check, "--version", "v1.32.5+rke2r1"])
            .run();
        out.code(0);
        let o = &out.stdout;
        let first = format!("Plan for check `{check}` on rke2 v1.32.5+rke2r1\n");
        assert!(o.starts_with(&first), "{o}");
        for line in has {
            out.stdout_has(line);
        }
        for k3s in not_k3s {
            assert!(!o.contains(k3s), "`{k3s}` in an rke2 plan:\n{o}");
        }
        snap!(name, out);
    }
}

#[test]
fn plan_expects_fixed_from_the_first_fixed_rke2_release() {
    for (v, want) in [
        ("v1.32.9+rke2r1", "fixed"),
        ("v1.33.4+rke2r1", "reproduced"),
        ("v1.33.5+rke2r1", "fixed"),
        ("v1.31.12+rke2r1", "reproduced"),
        ("v1.34.1+rke2r1", "fixed"),
    ] {
        let out = Repro::new()
            .args(["plan", "metrics-order", "--version", v])
            .run();
        out.code(0);
        assert!(
            out.stdout.contains(&format!("  expected  {want} (")),
            "{v}: {}",
            out.stdout
        );
    }
}

#[test]
fn plan_on_the_rke2_8465_topology() {
    let out = Repro::new()
        .args(["plan", "metrics-order", "--topology", "rke2-8465"])
        .run();
    out.code(0);
    out.stdout_has("3.  agent-1  agent          joins cp-1                        after cp-1");
    snap!("rke2-plan-metrics-order-8465", out);
}

#[test]
fn a_k3s_only_key_on_rke2_is_an_error_at_its_line() {
    // bootstrap-check changes disable-helm-controller, a k3s flag rke2 drops.
    let out = Repro::new()
        .args(["plan", "bootstrap-check", "--version", "v1.32.5+rke2r1"])
        .run();
    out.code(2);
    let e = &out.stderr;
    out.stderr_has("checks/bootstrap-check.yaml: error: check `bootstrap-check` cannot run on rke2 v1.32.5+rke2r1 as written");
    out.stderr_has("checks/bootstrap-check.yaml:17:16: error: `disable-helm-controller` is not a flag of `rke2 server` in rke2 1.32");
    out.stderr_has(
        "is a flag of k3s only (releases/k3s-flags.yaml), not of rke2 (releases/rke2-flags.yaml)",
    );
    assert!(!e.contains("panicked"), "{e}");
    snap!("rke2-plan-bootstrap-check-k3s-key", out);
}

#[test]
fn an_rke2_version_on_a_topology_naming_k3s_is_an_error() {
    let dir = crate::util::project(&["checks", "topologies"]);
    let path = dir.path().join("topologies/etcd-split.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace(
            "name: etcd-split\n",
            "name: etcd-split\ndistribution: k3s\n",
        ),
    )
    .expect("write");
    let out = Repro::new()
        .args(["--root"])
        .arg(dir.path().to_str().expect("utf-8"))
        .args(["plan", "metrics-order", "--version", "v1.32.5+rke2r1"])
        .run();
    out.code(2);
    out.stderr_has("`v1.32.5+rke2r1` is a rke2 version, but topology `etcd-split` runs k3s");
}

/// The stand-in plays rke2 too (issue #19; the run itself is tests/e2e/rke2.rs): `--sim` on an
/// RKE2 version plans on its stand-in node image, in the stand-in repository.
#[test]
fn the_stand_in_plays_rke2() {
    let out = Repro::new()
        .args([
            "plan",
            "metrics-order",
            "--version",
            "v1.32.5+rke2r1",
            "--sim",
        ])
        .run();
    out.code(0);
    out.stdout_has("image     repro.local/k3s-sim:v1.32.5-rke2r1\n");
    out.stdout_has("on rke2 v1.32.5+rke2r1");
}

/// bootstrap-check-rke2's topology runs rke2: a k3s version is bad input, before anything runs.
#[test]
fn bootstrap_check_rke2_refuses_a_k3s_version() {
    let out = Repro::new()
        .args(["plan", "bootstrap-check-rke2", "--version", "v1.33.4+k3s1"])
        .run();
    out.code(2);
    out.stderr_has(
        "`v1.33.4+k3s1` is a k3s version, but topology `bootstrap-check-rke2` runs rke2",
    );
}
