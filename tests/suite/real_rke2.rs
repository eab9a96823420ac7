//! checks/signals.yaml against real RKE2 logs (#19): every excerpt in tests/fixtures/real-rke2/
//! (copied unaltered from public issues) goes through the code `repro run` uses to decide a
//! signal from a boot's lines (`observe::eval_log`), judged on the excerpt's RKE2 version so the
//! `distribution: rke2` patterns apply, and each signal must conclude what its sidecar records.
//! The rules for `boot-end` are those of `real_k3s.rs` (its module comment says why).

use distro::{Distro, Version};

use crate::real_logs::{
    check_corpus, check_index, load_signals, observe_excerpt, EndKind, Sidecar,
};

/// The RKE2 version the excerpt is judged on; sources naming none are judged as the newest line.
fn judge_version(side: &Sidecar) -> Version {
    let v = side
        .version
        .split_whitespace()
        .find_map(|w| w.parse::<Version>().ok())
        .unwrap_or_else(|| "v1.34.1+rke2r1".parse().expect("fallback version"));
    assert_eq!(
        v.distro,
        Distro::Rke2,
        "{}: not an rke2 version",
        side.source
    );
    v
}

#[test]
fn signals_conclude_what_a_reader_of_each_real_rke2_excerpt_concludes() {
    check_corpus("real-rke2", 17, judge_version);
}

/// The rke2 patterns are rke2's only: a k3s run never reads an rke2 line as its own.
#[test]
fn rke2_lines_say_nothing_on_a_k3s_version() {
    let signals = load_signals();
    let ready = signals.get("ready").expect("ready");
    let version = signals.get("version").expect("version");
    let k3s: Version = "v1.33.4+k3s1".parse().expect("version");
    let lines = vec![
        "time=\"2026-08-01T00:00:00Z\" level=info msg=\"Starting rke2 v1.33.13+rke2r1 (879e8b14ad619278d61dd81c116e08f3e1885715)\"".to_string(),
        "time=\"2026-08-01T00:00:09Z\" level=info msg=\"rke2 is up and running\"".to_string(),
    ];
    let (got, _) = observe_excerpt(version, ready, &lines, EndKind::Cut, &k3s);
    assert_eq!(got, "none");
    let (got, _) = observe_excerpt(ready, ready, &lines, EndKind::Cut, &k3s);
    assert_eq!(got, "unknown");
    let rke2: Version = "v1.33.13+rke2r1".parse().expect("version");
    let (got, _) = observe_excerpt(version, ready, &lines, EndKind::Cut, &rke2);
    assert_eq!(got, "v1.33.13+rke2r1");
    let (got, _) = observe_excerpt(ready, ready, &lines, EndKind::Cut, &rke2);
    assert_eq!(got, "up");
}

#[test]
fn every_rke2_excerpt_is_described_and_indexed() {
    check_index("real-rke2");
}
