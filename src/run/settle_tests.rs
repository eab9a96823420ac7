//! The settle rule by order (docs/k3s-behaviour.md): a `settled-by` line k3s prints after the
//! feature's own decides `down` when it arrives; a hint waits the settle window; an explicit
//! margin applies after both. Pure: boots are built by hand.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};

use super::observe::{eval_log, Eval, Settle};
use super::watch::{Boot, LogLine};
use crate::result::Rule;
use crate::scenario::{Signals, DEFAULT_SETTLE};
use distro::Version;

const SIGNALS: &str = r#"
signals:
  ready:
    description: ready
    up: ['k3s is up and running']
  ordered:
    description: a feature whose settled-by line k3s prints after the feature's own
    up: ['Starting distributed registry mirror at']
    settled-by: [{match: 'Running kubelet', order: after-feature}]
  hinted:
    description: the same feature with the kubelet line as a mere hint
    up: ['Starting distributed registry mirror at']
    settled-by: ['Running kubelet']
  version:
    description: the banner's version
    value: ['Starting k3s (?P<value>v\S+)']
  backend:
    description: a value k3s prints after its ready line, with the line it prints next
    value: ['Starting flannel with backend (?P<value>[^\s"]+)']
    settled-by: [{match: 'Starting network policy controller', order: after-feature}]
"#;

const UP: &str = "msg=\"Starting distributed registry mirror at https://10.0.0.1:6443/v2\"";
const KUBELET: &str = "msg=\"Running kubelet --address=0.0.0.0\"";
const READY: &str = "msg=\"k3s is up and running\"";
const BANNER: &str = "msg=\"Starting k3s v1.33.4+k3s1 (repro-sim)\"";
const FLANNEL: &str = "msg=\"Starting flannel with backend host-gw\"";
const NETPOL: &str = "msg=\"Starting network policy controller version v2.2.1\"";

fn signals() -> Signals {
    crate::load::signals(Path::new("test-signals.yaml"), SIGNALS).expect("valid test signals")
}

fn version() -> Version {
    "v1.33.4+k3s1".parse().expect("version")
}

/// A boot whose lines were all seen `age` ago.
fn boot(lines: &[&str], age: Duration) -> Boot {
    let seen = Instant::now() - age;
    let lines: Vec<LogLine> = lines
        .iter()
        .enumerate()
        .map(|(i, t)| LogLine {
            ts: Utc
                .timestamp_opt(1_800_000_000 + i as i64, 0)
                .single()
                .expect("time"),
            seen,
            text: (*t).to_string(),
        })
        .collect();
    let ready = lines.iter().position(|l| l.text.contains(READY));
    Boot {
        number: 2,
        step: 1,
        started_at: Utc.timestamp_opt(1_800_000_000, 0).single().expect("time"),
        lines,
        ready,
        end: None,
        log_path: PathBuf::new(),
        write_error: None,
    }
}

/// (observed, rule, waited) or None while pending.
fn eval(
    sig: &str,
    lines: &[&str],
    age: Duration,
    settle: Settle,
) -> Option<(String, Rule, Option<Duration>)> {
    let sigs = signals();
    let s = sigs.get(sig).expect("signal");
    match eval_log(s, &boot(lines, age), &version(), settle, Instant::now()) {
        Eval::Decided(o) => Some((o.observed.to_string(), o.rule, o.waited)),
        Eval::Pending { .. } => None,
    }
}

const NOW: Duration = Duration::ZERO;
const LATE: Duration = Duration::from_secs(10);
const NO_MARGIN: Settle = Settle { margin: None };

#[test]
fn an_ordered_line_proves_down_when_it_arrives() {
    assert_eq!(
        eval("ordered", &[READY, KUBELET], NOW, NO_MARGIN),
        Some(("down".into(), Rule::AfterFeature, Some(Duration::ZERO)))
    );
}

#[test]
fn an_up_line_before_the_ordered_line_is_up() {
    assert_eq!(
        eval("ordered", &[READY, UP, KUBELET], NOW, NO_MARGIN),
        Some(("up".into(), Rule::UpLine, None))
    );
}

#[test]
fn a_hint_waits_the_default_window() {
    assert_eq!(eval("hinted", &[READY, KUBELET], NOW, NO_MARGIN), None);
    assert_eq!(
        eval("hinted", &[READY, KUBELET], LATE, NO_MARGIN),
        Some(("down".into(), Rule::SettleWindow, Some(DEFAULT_SETTLE)))
    );
}

#[test]
fn an_explicit_margin_applies_after_both_kinds() {
    let margin = Settle {
        margin: Some(Duration::from_secs(2)),
    };
    for sig in ["ordered", "hinted"] {
        assert_eq!(eval(sig, &[READY, KUBELET], NOW, margin), None, "{sig}");
    }
    assert_eq!(
        eval("ordered", &[READY, KUBELET], LATE, margin),
        Some((
            "down".into(),
            Rule::AfterFeature,
            Some(Duration::from_secs(2))
        ))
    );
    // `--settle 0s` turns a hint into an immediate decision, as before.
    let zero = Settle {
        margin: Some(Duration::ZERO),
    };
    assert_eq!(
        eval("hinted", &[READY, KUBELET], NOW, zero),
        Some(("down".into(), Rule::SettleWindow, Some(Duration::ZERO)))
    );
}

#[test]
fn readiness_alone_decides_nothing_for_a_feature() {
    assert_eq!(eval("ordered", &[READY], LATE, NO_MARGIN), None);
}

#[test]
fn value_signals_are_read_at_the_ready_line_without_a_window() {
    assert_eq!(
        eval("version", &[BANNER, READY], NOW, NO_MARGIN),
        Some((
            "v1.33.4+k3s1".into(),
            Rule::ValueLines,
            Some(Duration::ZERO)
        ))
    );
    let margin = Settle {
        margin: Some(Duration::from_secs(2)),
    };
    assert_eq!(eval("version", &[BANNER, READY], NOW, margin), None);
}

/// A value k3s prints after its ready line (flannel's backend, once an apiserver answers):
/// readiness alone decides nothing — the race the e2e flannel test hit under load — the line
/// k3s prints next decides `none`, and the value line decides as soon as the node is ready.
#[test]
fn a_late_value_waits_for_its_line_or_the_line_after_it() {
    assert_eq!(eval("backend", &[READY], LATE, NO_MARGIN), None);
    assert_eq!(
        eval("backend", &[READY, NETPOL], NOW, NO_MARGIN),
        Some(("none".into(), Rule::AfterFeature, Some(Duration::ZERO)))
    );
    assert_eq!(
        eval("backend", &[READY, FLANNEL], NOW, NO_MARGIN),
        Some(("host-gw".into(), Rule::ValueLines, Some(Duration::ZERO)))
    );
    assert_eq!(
        eval("backend", &[FLANNEL, READY, NETPOL], NOW, NO_MARGIN),
        Some(("host-gw".into(), Rule::ValueLines, Some(Duration::ZERO)))
    );
}

/// The network-policy race (#39, docs/performance.md): a restarted etcd member prints its
/// kubelet line, then 12 s of etcd, then its ready line and — milliseconds later — what starts
/// once its apiserver answers. Read at the ready line, a hint's window counted from the kubelet
/// line had closed and decided `down` before the feature's line; it now runs from the ready
/// line, and a boot not ready keeps the hint's window.
#[test]
fn a_hints_window_runs_from_the_ready_line_when_that_came_later() {
    let sigs = signals();
    let s = sigs.get("hinted").expect("signal");
    let at = |age: u64| Instant::now() - Duration::from_millis(age);
    let line = |text: &str, age: u64| LogLine {
        ts: Utc.timestamp_opt(1_800_000_000, 0).single().expect("time"),
        seen: at(age),
        text: text.to_string(),
    };
    // kubelet 10 s ago, ready 1 ms ago, the feature not yet printed.
    let mut b = boot(&[], NOW);
    b.lines = vec![line(KUBELET, 10_000), line(READY, 1)];
    b.ready = Some(1);
    let pending = eval_log(s, &b, &version(), NO_MARGIN, Instant::now());
    assert!(
        matches!(pending, Eval::Pending { until: Some(_) }),
        "{pending:?}"
    );
    // …then its line: up.
    b.lines.push(line(UP, 0));
    match eval_log(s, &b, &version(), NO_MARGIN, Instant::now()) {
        Eval::Decided(o) => assert_eq!(o.observed.to_string(), "up"),
        other => panic!("{other:?}"),
    }
    // Without it, `down` once the window after the ready line has passed, naming both lines.
    b.lines = vec![line(KUBELET, 20_000), line(READY, 10_000)];
    match eval_log(s, &b, &version(), NO_MARGIN, Instant::now()) {
        Eval::Decided(o) => {
            assert_eq!(
                (o.observed.to_string(), o.rule),
                ("down".into(), Rule::SettleWindow)
            );
            assert_eq!(o.evidence.len(), 2, "{:?}", o.evidence);
            assert!(o.reason.contains("ready line"), "{}", o.reason);
        }
        other => panic!("{other:?}"),
    }
    // A boot that is not ready: the hint's window, as before.
    b.lines = vec![line(KUBELET, 10_000)];
    b.ready = None;
    match eval_log(s, &b, &version(), NO_MARGIN, Instant::now()) {
        Eval::Decided(o) => assert_eq!(o.observed.to_string(), "down"),
        other => panic!("{other:?}"),
    }
}
