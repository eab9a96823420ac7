use super::kernel::*;
use super::report::*;
use super::*;

/// `l`'s detail says `text` (shown whole when it does not).
fn says(l: &Line, text: &str) {
    assert!(l.detail.contains(text), "{}", l.detail);
}

/// `l`'s detail begins with `text`.
fn begins(l: &Line, text: &str) {
    assert!(l.detail.starts_with(text), "{}", l.detail);
}

#[test]
fn image_store_names_the_containerd_store_and_what_to_save_with() {
    let l = image_store_line(Some("overlayfs"), true);
    assert_eq!(l.status, Status::Ok);
    assert!(
        l.detail.starts_with("containerd image store (overlayfs"),
        "{}",
        l.detail
    );
    says(&l, "docker save --platform linux/amd64");
    let l = image_store_line(Some("overlay2"), false);
    begins(&l, "classic graph driver (overlay2)");
}

#[test]
fn the_run_network_mtu_follows_the_flag_then_the_engine() {
    assert_eq!(run_network_mtu(Some(1300), Some(1400)), Some(1300));
    assert_eq!(run_network_mtu(None, Some(1400)), Some(1400));
    assert_eq!(run_network_mtu(None, Some(1500)), None);
    assert_eq!(run_network_mtu(None, None), None);
    // A Docker-in-Docker runner: the inner engine sets nothing, the pod's eth0 is 1400.
    let l = mtu_line(None, Some(("eth0", 1400)), None);
    assert_eq!(l.status, Status::Warn);
    assert!(l.fix.unwrap().contains("--mtu 1400"));
    let l = mtu_line(Some(1400), Some(("eth0", 1400)), None);
    assert_eq!(l.status, Status::Ok, "{}", l.detail);
    assert!(
        l.detail
            .ends_with("a run's network is created with MTU 1400"),
        "{}",
        l.detail
    );
    assert_eq!(
        mtu_line(None, Some(("eth0", 1400)), Some(1400)).status,
        Status::Ok
    );
    assert_eq!(mtu_line(None, None, None).status, Status::Ok);
}

#[test]
fn the_default_route_interface_from_proc_net_route() {
    let routes = "Iface\tDestination\tGateway \tFlags\n\
                  docker0\t000011AC\t00000000\t0001\n\
                  eth0\t00000000\t0101A8C0\t0003\n";
    assert_eq!(default_route_iface(routes).as_deref(), Some("eth0"));
    assert_eq!(default_route_iface("Iface\tDestination\n"), None);
}

#[test]
fn inotify_against_the_node_count() {
    let host = |i, w, u| Inotify {
        instances: i,
        watches: w,
        in_use: u,
        claimed: (0, 0),
    };
    let k3s = InotifyNeed {
        per_node: INOTIFY_INSTANCES_PER_NODE,
        watches: INOTIFY_WATCHES,
    };
    let l = inotify_line(&host(Some(128), Some(192_536), None), &k3s, 5, "qa", true);
    assert_eq!(l.status, Status::Warn);
    assert!(l.detail.contains("want 320 instances free"), "{}", l.detail);
    assert!(l.fix.unwrap().contains("max_user_instances=320"));
    let l = inotify_line(&host(Some(512), Some(524_288), None), &k3s, 5, "qa", true);
    assert_eq!(l.status, Status::Ok, "{}", l.detail);
    let l = inotify_line(
        &host(Some(256), Some(100), None),
        &k3s,
        4,
        "etcd-split",
        true,
    );
    assert_eq!(l.status, Status::Warn, "watches too few");
    assert_eq!(
        inotify_line(&host(None, None, None), &k3s, 4, "x", true).status,
        Status::Warn
    );
}

/// The RKE2 stand-in runs on systemd nodes, which hold ~10 instances each (#30): the line
/// counts them against what the host's other processes hold now — not "not needed".
#[test]
fn inotify_of_systemd_stand_in_nodes_counts_what_is_in_use() {
    let rke2 = distro::Distro::Rke2.facts();
    let k3s = distro::Distro::K3s.facts();
    assert_eq!(inotify_per_node(k3s, true), None);
    assert_eq!(
        inotify_per_node(rke2, true),
        Some(INOTIFY_INSTANCES_SYSTEMD_NODE)
    );
    let want = InotifyNeed {
        per_node: INOTIFY_INSTANCES_SYSTEMD_NODE,
        watches: 0,
    };
    let host = |u| Inotify {
        instances: Some(128),
        watches: Some(8192),
        in_use: Some(u),
        claimed: (0, 0),
    };
    assert_eq!(
        inotify_line(&host(20), &want, 3, "rke2", true).status,
        Status::Ok
    );
    let l = inotify_line(&host(110), &want, 3, "rke2", true);
    assert_eq!(l.status, Status::Warn, "{}", l.detail);
    assert!(l.detail.contains("110 instances held"), "{}", l.detail);
    assert!(l.fix.unwrap().contains("max_user_instances=140"));
    // What runs starting now have claimed counts as used, as a run's own check counts it.
    let claimed = Inotify {
        claimed: (50, 1),
        ..host(60)
    };
    let l = inotify_line(&claimed, &want, 3, "rke2", true);
    assert_eq!(l.status, Status::Warn, "{}", l.detail);
    assert!(
        l.detail
            .contains("60 instances held by root's processes now and 50 claimed by 1 repro run"),
        "{}",
        l.detail
    );
}

#[test]
fn memory_from_the_distributions_per_node_numbers() {
    let facts = distro::Distro::K3s.facts();
    let roles = [
        Role::Etcd,
        Role::Etcd,
        Role::Etcd,
        Role::ControlPlane,
        Role::Agent,
    ];
    assert_eq!(memory_needed(facts, &roles), 3 * 1606 + 1596 + 275);
    assert_eq!(
        memory_line(Some(1000), None, 6689, "t", "s").status,
        Status::Fail
    );
    assert_eq!(
        memory_line(Some(24_000), Some(2000), 6689, "t", "s").status,
        Status::Warn
    );
    assert_eq!(
        memory_line(Some(24_000), Some(20_000), 6689, "t", "s").status,
        Status::Ok
    );
}

#[test]
fn cgroup_versions() {
    assert_eq!(
        cgroup_line(Some("1"), Some("cgroupfs"), None, false).status,
        Status::Ok
    );
    let l = cgroup_line(Some("2"), Some("systemd"), Some("cpu io pids"), false);
    assert_eq!(l.status, Status::Warn);
    assert!(l.detail.contains("cpuset, memory"), "{}", l.detail);
    assert_eq!(
        cgroup_line(
            Some("2"),
            None,
            Some("cpuset cpu io memory pids hugetlb"),
            false
        )
        .status,
        Status::Ok
    );
    assert_eq!(cgroup_line(None, None, None, false).status, Status::Warn);
}

#[test]
fn podman_behind_docker_host_is_named() {
    use docker::EngineKind::{Docker, Podman};
    // (DOCKER_HOST, local?, engine, status, words the line must hold, words it must not)
    let cases = [
        (
            "unix:///run/user/0/podman/podman.sock",
            true,
            Podman,
            Some(Status::Ok),
            &["a local Podman service", "docs/podman.md"][..],
            None,
        ),
        (
            "tcp://10.0.0.9:8888",
            true,
            Podman,
            Some(Status::Warn),
            &["a remote Podman service"][..],
            None,
        ),
        (
            "unix:///var/run/docker.sock",
            false,
            Docker,
            None,
            &["the local Docker engine"][..],
            Some("Podman"),
        ),
    ];
    for (host, local, engine, status, holds, lacks) in cases {
        let l = host_line(host, local, Some(engine));
        if let Some(status) = status {
            assert_eq!(l.status, status, "{host}");
        }
        for words in holds {
            assert!(l.detail.contains(words), "{host}: {}", l.detail);
        }
        if let Some(words) = lacks {
            assert!(!l.detail.contains(words), "{host}: {}", l.detail);
        }
    }
}

#[test]
fn disk_against_the_nodes() {
    let df = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n/dev/sda1        102400000  50000000  51200000      50% /\n";
    assert_eq!(parse_df(df), Some((50_000, 100_000)));
    assert_eq!(parse_df("garbage"), None);
    let ok = disk_line(
        Some("/var/lib/docker"),
        Some((50_000, 100_000)),
        5120,
        5,
        "qa",
    );
    assert_eq!(ok.status, Status::Ok, "{}", ok.detail);
    let fail = disk_line(
        Some("/var/lib/docker"),
        Some((4_000, 100_000)),
        5120,
        5,
        "qa",
    );
    assert_eq!(fail.status, Status::Fail);
    says(&fail, "4000 MiB free at /var/lib/docker");
    // Enough for the nodes, but under the kubelet's eviction threshold afterwards.
    let tight = disk_line(Some("/d"), Some((9_000, 100_000)), 5120, 5, "qa");
    assert_eq!(tight.status, Status::Warn);
    assert!(tight.detail.contains("under the 5%"), "{}", tight.detail);
    let unknown = disk_line(None, None, 5120, 5, "qa");
    assert_eq!(unknown.status, Status::Warn);
}

#[test]
fn check_config_outputs_by_section() {
    let fail = parse_check_config(include_str!(
        "../../tests/fixtures/check-config/k3s-4859-libreelec-fail.txt"
    ));
    assert_eq!(fail.pass, Some(false));
    assert_eq!(fail.necessary, vec!["CONFIG_NETFILTER_XT_MATCH_IPVS"]);
    assert_eq!(fail.optional, vec!["CONFIG_USER_NS"]);
    let l = check_config_verdict(&fail, 1, "k3s", "docker run … check-config");
    assert_eq!(l.status, Status::Fail);
    says(&l, "CONFIG_NETFILTER_XT_MATCH_IPVS");

    let pass = parse_check_config(include_str!(
        "../../tests/fixtures/check-config/k3s-11916-v1.32.3-pass.txt"
    ));
    assert_eq!(pass.pass, Some(true));
    assert!(pass.necessary.is_empty() && pass.optional.is_empty());
    assert_eq!(
        check_config_verdict(&pass, 0, "k3s", "c").status,
        Status::Ok
    );

    // Coloured as the script prints it, with an optional option missing: a warn.
    let coloured = "Generally Necessary:\n- \u{1b}[0;32mCONFIG_NAMESPACES: enabled\u{1b}[0m\nOptional Features:\n- CONFIG_USER_NS: \u{1b}[1;31mmissing\u{1b}[0m\n\nSTATUS: \u{1b}[0;32mpass\u{1b}[0m\n";
    let c = parse_check_config(coloured);
    assert_eq!(c.pass, Some(true));
    assert_eq!(c.optional, vec!["CONFIG_USER_NS"]);
    let l = check_config_verdict(&c, 0, "k3s", "c");
    assert_eq!(l.status, Status::Warn);
    assert!(l.detail.contains("CONFIG_USER_NS"), "{}", l.detail);

    assert_eq!(
        untimestamped("2026-12-01T21:41:44.558485880Z STATUS: pass\nplain"),
        "STATUS: pass\nplain"
    );

    // No kernel config found: no verdict, a warn naming what it said.
    let none = parse_check_config(
        "info: reading kernel config from ...\nerror: cannot find kernel config\n",
    );
    let l = check_config_verdict(&none, 1, "k3s", "c");
    assert_eq!(l.status, Status::Warn);
    says(&l, "cannot find kernel config");
}

#[test]
fn a_remote_engine_is_said() {
    assert!(is_local("unix:///var/run/docker.sock"));
    assert!(!is_local("tcp://127.0.0.1:2375"));
}
