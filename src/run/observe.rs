//! Deciding a signal for one boot from its log lines (pure) — probes are run by the caller.
//!
//! Rules, in order, for up/down signals:
//! 1. an `up` line in this boot → up; 2. a `down` line → down;
//! 3. the boot died and the signal has `on-death` → that value (evidence: exit code, last lines);
//! 4. a `settled-by` line was seen with no `up` line → down: at once when k3s prints that line
//!    after the feature's own (`order: after-feature`), else once the settle window has passed
//!    too (a hint); an explicit `--settle`/`settle:` is a margin after either kind;
//! 5. otherwise wait for more lines (the caller's timeout turns that into `unknown`).
//!
//! Value signals (version, roles) are decided once the node is ready (k3s prints them before
//! its ready line), plus the explicit margin if any, or when the boot is over. One with
//! `settled-by` lines (a value k3s prints after its ready line) and no value line yet waits
//! for one of them instead, as rule 4 does, and is `none` then.

use std::time::{Duration, Instant};

use super::watch::{Boot, Ended, LogLine};
use crate::result::{Evidence, EvidenceSource, Observed, Rule};
use crate::scenario::{LinePattern, Signal, DEFAULT_SETTLE};
use distro::Version;

#[derive(Debug, Clone)]
pub struct Obs {
    pub observed: Observed,
    pub evidence: Vec<Evidence>,
    pub(crate) reason: String,
    pub(crate) rule: Rule,
    /// How long the rule waited after its deciding line (settled-by and value rules).
    pub(crate) waited: Option<Duration>,
}

/// How long to wait after a deciding line that is not an `up`/`down` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settle {
    /// `--settle`, else the check's `settle:`: a margin after every kind of line.
    pub margin: Option<Duration>,
}

impl Settle {
    /// The wait after a line: the margin if one was given, else none after a line k3s orders
    /// after the feature's own, and [`DEFAULT_SETTLE`] after a hint.
    pub fn after(&self, ordered: bool) -> Duration {
        self.margin.unwrap_or(if ordered {
            Duration::ZERO
        } else {
            DEFAULT_SETTLE
        })
    }
}

#[derive(Debug, Clone)]
pub enum Eval {
    Decided(Obs),
    /// Not decided yet: look again on the next line, or at `until` at the latest.
    Pending {
        until: Option<Instant>,
    },
}

pub(crate) fn evidence(boot: &Boot, l: &LogLine) -> Evidence {
    Evidence {
        source: EvidenceSource::Log,
        boot: boot.number,
        time: Some(l.ts.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        text: l.text.clone(),
    }
}

fn first_match<'a>(boot: &'a Boot, pats: &[LinePattern], v: &Version) -> Option<&'a LogLine> {
    let live: Vec<&LinePattern> = pats.iter().filter(|p| p.applies_to(v)).collect();
    if live.is_empty() {
        return None;
    }
    boot.lines
        .iter()
        .find(|l| live.iter().any(|p| p.regex.is_match(&l.text)))
}

/// Evidence of a death: the exit and the last lines before it.
pub(crate) fn death_evidence(boot: &Boot) -> Vec<Evidence> {
    let mut ev = Vec::new();
    if let Some(Ended::Died { exit_code, at, oom }) = &boot.end {
        ev.push(Evidence {
            source: EvidenceSource::Docker,
            boot: boot.number,
            time: Some(at.clone()),
            text: format!(
                "container exited on its own with code {}{}",
                exit_code.map_or("?".to_string(), |c| c.to_string()),
                if *oom { " (OOM-killed)" } else { "" }
            ),
        });
    }
    let start = boot.lines.len().saturating_sub(3);
    ev.extend(boot.lines[start..].iter().map(|l| evidence(boot, l)));
    ev
}

/// The boot's node died (a lost log is no death: the run stops on it as an infrastructure
/// failure, `Cluster::lost_log`).
pub(crate) fn is_dead(boot: &Boot) -> bool {
    matches!(boot.end, Some(Ended::Died { .. }))
}

fn decided(
    observed: Observed,
    evidence: Vec<Evidence>,
    reason: impl Into<String>,
    rule: Rule,
) -> Eval {
    Eval::Decided(Obs {
        observed,
        evidence,
        reason: reason.into(),
        rule,
        waited: None,
    })
}

pub fn eval_log(sig: &Signal, boot: &Boot, v: &Version, settle: Settle, now: Instant) -> Eval {
    if sig.is_value() {
        return eval_value(sig, boot, v, settle, now);
    }
    if let Some(l) = first_match(boot, &sig.up, v) {
        let ev = vec![evidence(boot, l)];
        return decided(Observed::Up, ev, "an `up` line in this boot", Rule::UpLine);
    }
    if let Some(l) = first_match(boot, &sig.down, v) {
        let ev = vec![evidence(boot, l)];
        return decided(
            Observed::Down,
            ev,
            "a `down` line in this boot",
            Rule::DownLine,
        );
    }
    if is_dead(boot) {
        if let Some(val) = &sig.on_death {
            let ev = death_evidence(boot);
            return decided(
                Observed::from(val.as_str()),
                ev,
                "the node died in this boot",
                Rule::OnDeath,
            );
        }
    }
    if let Some(l) = first_match(boot, &sig.undecided_by, v) {
        let ev = vec![evidence(boot, l)];
        return decided(
            Observed::Unknown,
            ev,
            "an `undecided-by` line in this boot: the feature is on but cannot run, so the boot does not show it",
            Rule::Undecided,
        );
    }
    if sig.probe.is_none() {
        if let Some((l, ordered, wait)) = first_settling(boot, &sig.settled_by, v, settle) {
            return settled(boot, l, ordered, wait, now, Observed::Down);
        }
    }
    if is_dead(boot) || matches!(boot.end, Some(Ended::Stopped { .. })) {
        let ev = death_evidence(boot);
        let reason = "the boot ended before the signal could be decided";
        return decided(Observed::Unknown, ev, reason, Rule::Undecided);
    }
    Eval::Pending { until: None }
}

/// A `settled-by` line decided the signal: `observed` once its wait has passed (none after a
/// line k3s orders after the feature's own, the settle window after a hint, or the explicit
/// margin), pending until then.
fn settled(
    boot: &Boot,
    l: &LogLine,
    ordered: bool,
    wait: Duration,
    now: Instant,
    observed: Observed,
) -> Eval {
    // A hint's window runs from the hint or, when the boot's ready line came after it, from
    // that line: what k3s starts once its apiserver answers (the network policy controller)
    // prints after the ready line, and a restarted etcd member's ready line comes 12 s after
    // its kubelet line at real pace — a window from the kubelet line had closed long before,
    // and `down` was decided 3 ms before the controller's line (docs/performance.md, "the
    // network-policy race"). A boot not ready keeps the hint's window (it may never be).
    let ready =
        (boot.ready.and_then(|i| boot.lines.get(i))).filter(|r| !ordered && r.seen > l.seen);
    let until = ready.map_or(l.seen, |r| r.seen) + wait;
    if now < until {
        return Eval::Pending { until: Some(until) };
    }
    let (rule, reason) = if ordered {
        let margin = if wait.is_zero() {
            String::new()
        } else {
            format!(
                " (and the {} margin passed)",
                humantime::format_duration(wait)
            )
        };
        (
            Rule::AfterFeature,
            format!("k3s prints this line after the feature's own, and no `up` line came before it{margin}"),
        )
    } else {
        let after = if ready.is_some() {
            "the boot's ready line, which came after this line"
        } else {
            "this line"
        };
        (
            Rule::SettleWindow,
            format!(
                "settle rule: no `up` line within {} after {after}",
                humantime::format_duration(wait)
            ),
        )
    };
    let mut ev = vec![evidence(boot, l)];
    ev.extend(ready.map(|r| evidence(boot, r)));
    Eval::Decided(Obs {
        observed,
        evidence: ev,
        reason,
        rule,
        waited: Some(wait),
    })
}

/// The `settled-by` line that decides soonest: the line, whether k3s orders it after the
/// feature's own, and how long to wait after it.
fn first_settling<'a>(
    boot: &'a Boot,
    pats: &[LinePattern],
    v: &Version,
    settle: Settle,
) -> Option<(&'a LogLine, bool, Duration)> {
    let live: Vec<&LinePattern> = pats.iter().filter(|p| p.applies_to(v)).collect();
    let mut best: Option<(&LogLine, bool, Duration)> = None;
    for l in &boot.lines {
        for p in live.iter().filter(|p| p.regex.is_match(&l.text)) {
            let wait = settle.after(p.ordered);
            if best.is_none_or(|(b, _, w)| l.seen + wait < b.seen + w) {
                best = Some((l, p.ordered, wait));
            }
        }
    }
    best
}

fn eval_value(sig: &Signal, boot: &Boot, v: &Version, settle: Settle, now: Instant) -> Eval {
    let mut values: Vec<String> = Vec::new();
    let mut ev = Vec::new();
    for l in &boot.lines {
        for p in sig.value.iter().filter(|p| p.applies_to(v)) {
            if let Some(c) = p.regex.captures(&l.text) {
                let val = p
                    .value
                    .clone()
                    .or_else(|| c.name("value").map(|m| m.as_str().to_string()));
                if let Some(val) = val {
                    if !values.contains(&val) {
                        values.push(val);
                        ev.push(evidence(boot, l));
                    }
                }
            }
        }
    }
    // A value k3s prints late, after its ready line (flannel's backend, once an apiserver
    // answers), has `settled-by` lines k3s prints after it: with no value line yet, readiness
    // proves nothing, so one of those decides `none`, as the settle rule decides a state's
    // `down`. With a value line, the boot is read as any value signal's below.
    if values.is_empty() && boot.end.is_none() && !sig.settled_by.is_empty() {
        return match first_settling(boot, &sig.settled_by, v, settle) {
            Some((l, ordered, wait)) => settled(boot, l, ordered, wait, now, Observed::NoValue),
            None => Eval::Pending { until: None },
        };
    }
    // k3s prints the value lines (banner, etcd's and the apiserver's start) before its ready
    // line (pkg/cli/server/server.go), so a ready boot has said them all: ordered.
    let wait = settle.after(true);
    let settled_at = boot.ready.map(|i| boot.lines[i].seen + wait);
    let done = boot.end.is_some() || settled_at.is_some_and(|t| now >= t);
    if !done {
        return Eval::Pending { until: settled_at };
    }
    values.sort();
    let observed = if values.is_empty() {
        Observed::NoValue
    } else {
        Observed::from(values.join(",").as_str())
    };
    Eval::Decided(Obs {
        observed,
        evidence: ev,
        reason: "values from this boot's lines".into(),
        rule: Rule::ValueLines,
        waited: boot.ready.map(|_| wait),
    })
}

/// Decides a probe's output; None = neither rule matched (try again).
pub(crate) fn eval_probe(sig: &Signal, exit: i64, output: &str) -> Option<Observed> {
    let p = sig.probe.as_ref()?;
    if !p.value.is_empty() {
        // A value probe decides once its output names the value (the file is written).
        return (exit == 0)
            .then(|| p.value_in(output))
            .flatten()
            .map(|v| Observed::from(v.as_str()));
    }
    if p.up.iter().any(|r| r.matches(exit, output)) {
        Some(Observed::Up)
    } else if p.down.iter().any(|r| r.matches(exit, output)) {
        Some(Observed::Down)
    } else {
        None
    }
}

/// Whether the probe may run yet (its `after` lines are in this boot).
pub(crate) fn probe_ready(sig: &Signal, boot: &Boot, v: &Version) -> bool {
    sig.probe_for(v)
        .is_some_and(|p| p.after.is_empty() || first_match(boot, &p.after, v).is_some())
}

/// Compact probe output for evidence: the first lines only.
pub(crate) fn probe_excerpt(output: &str) -> String {
    let lines: Vec<&str> = output.lines().take(3).collect();
    let mut s = lines.join(" | ");
    if s.len() > 300 {
        // At a character boundary: probe output may be any UTF-8.
        let mut cut = 300;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// One table test per rule in the module docs, on the shipped signal definitions.
/// What a node that is not ready was still waiting for, in the words of its waiting lines
/// (`Facts::waiting_lines`, in their order). A node can wait for several things at once — an
/// etcd-only joiner both for its promotion and for an apiserver — and k3s repeats each on its own
/// timer, so every reason whose line is among the last few is named, not only the newest; when
/// none is that recent, the last waiting line of the boot.
pub(crate) fn still_waiting_for(waiting: &[(&str, &str)], lines: &[LogLine]) -> String {
    const RECENT: usize = 10;
    let recent = &lines[lines.len().saturating_sub(RECENT)..];
    let named: Vec<String> = waiting
        .iter()
        .filter_map(|(pattern, what)| {
            let l = recent.iter().rev().find(|l| l.text.contains(pattern))?;
            Some(format!("{what} (`{}`)", l.text))
        })
        .collect();
    if !named.is_empty() {
        return format!(": {}", named.join("; "));
    }
    (lines.iter().rev())
        .find_map(|l| {
            let (_, what) = waiting.iter().find(|(p, _)| l.text.contains(p))?;
            Some(format!(": {what} (`{}`)", l.text))
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use chrono::{TimeZone, Utc};

    use super::*;
    use crate::scenario::Signals;

    /// No explicit margin: the windows come from each settled-by line's order.
    const SETTLE: Settle = Settle { margin: None };

    fn signals() -> Signals {
        crate::load::signals(
            Path::new("signals.yaml"),
            include_str!("../../checks/signals.yaml"),
        )
        .expect("shipped signals are valid")
    }

    fn v(s: &str) -> Version {
        s.parse().expect("version")
    }

    /// A boot with these lines, all seen `age` ago, and how it ended.
    fn boot(lines: &[&str], age: Duration, end: Option<Ended>) -> Boot {
        let seen = Instant::now() - age;
        let lines: Vec<LogLine> = lines
            .iter()
            .enumerate()
            .map(|(i, t)| LogLine {
                ts: Utc.timestamp_opt(1_800_000_000 + i as i64, 0).unwrap(),
                seen,
                text: (*t).to_string(),
            })
            .collect();
        let ready = lines
            .iter()
            .position(|l| l.text.contains("k3s is up and running"));
        Boot {
            number: 2,
            step: 1,
            started_at: Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
            lines,
            ready,
            end,
            log_path: PathBuf::new(),
            write_error: None,
        }
    }

    fn died() -> Option<Ended> {
        Some(Ended::Died {
            exit_code: Some(1),
            at: "2027-01-15T08:00:00Z".into(),
            oom: false,
        })
    }

    /// (signal, lines, age of the lines, end, version) → observed value, or None = pending.
    type Case<'a> = (
        &'a str,
        &'a [&'a str],
        Duration,
        Option<Ended>,
        &'a str,
        Option<&'a str>,
    );

    fn check(cases: &[Case<'_>]) {
        let sigs = signals();
        for (i, (sig, lines, age, end, version, want)) in cases.iter().enumerate() {
            let s = sigs.get(sig).expect("signal");
            let b = boot(lines, *age, end.clone());
            let got = match eval_log(s, &b, &v(version), SETTLE, Instant::now()) {
                Eval::Decided(o) => Some(o.observed),
                Eval::Pending { .. } => None,
            };
            assert_eq!(
                got.as_ref().map(Observed::as_str),
                *want,
                "case {i}: {sig} on {lines:?}"
            );
        }
    }

    const UP: &str =
        "level=info msg=\"Starting distributed registry mirror at https://10.0.0.1:6443/v2\"";
    const DOWN: &str = "level=info msg=\"Not starting distributed registry mirror\"";
    const KUBELET: &str = "level=info msg=\"Running kubelet --fake\"";
    const READY: &str = "level=info msg=\"k3s is up and running\"";
    const NOW: Duration = Duration::ZERO;
    const LATE: Duration = Duration::from_secs(10);

    #[test]
    fn rule_1_an_up_line_in_this_boot_is_up() {
        check(&[
            (
                "embedded-registry",
                &[UP],
                NOW,
                None,
                "v1.33.5+k3s1",
                Some("up"),
            ),
            // even next to a down line or a death: the up line was printed in this boot
            (
                "embedded-registry",
                &[DOWN, UP],
                NOW,
                None,
                "v1.33.5+k3s1",
                Some("up"),
            ),
            (
                "embedded-registry",
                &[UP],
                NOW,
                died(),
                "v1.33.5+k3s1",
                Some("up"),
            ),
            ("ready", &[READY], NOW, None, "v1.33.5+k3s1", Some("up")),
        ]);
    }

    #[test]
    fn rule_2_a_down_line_is_down() {
        check(&[
            (
                "embedded-registry",
                &[DOWN],
                NOW,
                None,
                "v1.33.5+k3s1",
                Some("down"),
            ),
            (
                "embedded-registry",
                &[KUBELET, DOWN],
                NOW,
                None,
                "v1.33.5+k3s1",
                Some("down"),
            ),
        ]);
    }

    #[test]
    fn rule_3_a_death_gives_the_on_death_value() {
        check(&[
            (
                "embedded-registry",
                &["level=fatal msg=\"x\""],
                NOW,
                died(),
                "v1.33.5+k3s1",
                Some("down"),
            ),
            ("ready", &[], NOW, died(), "v1.33.5+k3s1", Some("down")),
            // `fatal` is up when the boot died (on-death: up)
            (
                "fatal",
                &["starting"],
                NOW,
                died(),
                "v1.33.5+k3s1",
                Some("up"),
            ),
        ]);
    }

    #[test]
    fn rule_4_the_settle_rule_decides_down_by_the_lines_order() {
        check(&[
            // kubelet seen long ago, no up line: down
            (
                "embedded-registry",
                &[READY, KUBELET],
                LATE,
                None,
                "v1.33.5+k3s1",
                Some("down"),
            ),
            // kubelet seen just now: k3s logs it after the registry's line, so down at once
            (
                "embedded-registry",
                &[READY, KUBELET],
                NOW,
                None,
                "v1.33.5+k3s1",
                Some("down"),
            ),
            // a hint (fatal's ready line: k3s can still fail after it) waits the window
            ("fatal", &[READY], NOW, None, "v1.33.5+k3s1", None),
            ("fatal", &[READY], LATE, None, "v1.33.5+k3s1", Some("down")),
            // readiness alone never proves a feature down
            (
                "embedded-registry",
                &[READY],
                LATE,
                None,
                "v1.33.5+k3s1",
                None,
            ),
        ]);
    }

    #[test]
    fn rule_5_otherwise_pending_until_the_boot_ends() {
        check(&[
            (
                "embedded-registry",
                &["starting"],
                LATE,
                None,
                "v1.33.5+k3s1",
                None,
            ),
            // a boot repro stopped before anything decided: unknown
            (
                "embedded-registry",
                &["starting"],
                LATE,
                Some(Ended::Stopped { at: "t".into() }),
                "v1.33.5+k3s1",
                Some("unknown"),
            ),
        ]);
    }

    #[test]
    fn patterns_apply_only_to_their_versions() {
        // An up pattern printed from 1.34 on: on 1.33 the line decides nothing.
        let mut s = signals().get("embedded-registry").expect("signal").clone();
        s.up[0].since = Some(distro::ReleaseSet::new(vec![v("v1.34.1+k3s1")]));
        let b = boot(&[UP], NOW, None);
        for (version, want) in [("v1.33.5+k3s1", None), ("v1.34.1+k3s1", Some("up"))] {
            let got = match eval_log(&s, &b, &v(version), SETTLE, Instant::now()) {
                Eval::Decided(o) => Some(o.observed),
                Eval::Pending { .. } => None,
            };
            assert_eq!(got.as_ref().map(Observed::as_str), want, "{version}");
        }
    }

    #[test]
    fn value_signals_decide_once_ready_or_dead() {
        let banner = "level=info msg=\"Starting k3s v1.33.4+k3s1 (abcdef12)\"";
        check(&[
            (
                "version",
                &[banner, READY],
                LATE,
                None,
                "v1.33.4+k3s1",
                Some("v1.33.4+k3s1"),
            ),
            // k3s prints its value lines before the ready line: read at once
            (
                "version",
                &[banner, READY],
                NOW,
                None,
                "v1.33.4+k3s1",
                Some("v1.33.4+k3s1"),
            ),
            // not ready yet: pending
            ("version", &[banner], LATE, None, "v1.33.4+k3s1", None),
            (
                "version",
                &[READY],
                LATE,
                None,
                "v1.33.4+k3s1",
                Some("none"),
            ),
            (
                "version",
                &[banner],
                NOW,
                died(),
                "v1.33.4+k3s1",
                Some("v1.33.4+k3s1"),
            ),
        ]);
    }

    #[test]
    fn probes_read_exit_code_and_output() {
        let sigs = signals();
        let s = sigs.get("supervisor-metrics").expect("signal");
        let cases: &[(i64, &str, Option<&str>)] = &[
            (0, "# HELP go_goroutines Number of goroutines\n", Some("up")),
            (
                1,
                "Error from server (ServiceUnavailable): apiserver disabled",
                Some("down"),
            ),
            // neither rule: try again
            (1, "connection refused", None),
            (0, "no metrics here", None),
        ];
        for (exit, out, want) in cases {
            assert_eq!(
                eval_probe(s, *exit, out).as_ref().map(Observed::as_str),
                *want,
                "exit {exit}: {out}"
            );
        }
        let v = v("v1.33.4+k3s1");
        assert!(
            !probe_ready(s, &boot(&[READY], NOW, None), &v),
            "not before kubelet"
        );
        assert!(probe_ready(s, &boot(&[READY, KUBELET], NOW, None), &v));
    }

    #[test]
    fn probe_excerpts_are_cut_at_a_character_boundary() {
        let long = "é".repeat(400);
        let e = probe_excerpt(&long);
        assert!(e.ends_with('…') && e.len() <= 303, "{}", e.len());
    }

    fn waiting_log(texts: &[&str]) -> Vec<LogLine> {
        texts
            .iter()
            .map(|t| LogLine {
                ts: chrono::Utc::now(),
                seen: std::time::Instant::now(),
                text: t.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_node_waiting_for_two_things_is_said_to_wait_for_both() {
        let waiting = distro::Distro::K3s.facts().waiting_lines;
        let lines = waiting_log(&[
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
            "msg=\"Failed to test etcd connection: this server has not yet been promoted from learner to voting member\"",
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
        ]);
        let why = still_waiting_for(waiting, &lines);
        let learner = why.find("still a learner").expect(&why);
        let apiserver = why.find("registered an apiserver").expect(&why);
        assert!(learner < apiserver, "in the facts' order: {why}");
        // A reason long past (the learner promoted, 20 lines ago) is not named again.
        let mut old =
            waiting_log(&["msg=\"has not yet been promoted from learner to voting member\""]);
        old.extend(waiting_log(&["msg=\"other\""; 20]));
        old.extend(waiting_log(&[
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
        ]));
        let why = still_waiting_for(waiting, &old);
        assert!(
            !why.contains("learner") && why.contains("apiserver"),
            "{why}"
        );
        // Nothing recent: the last waiting line of the boot, as before.
        let mut past = waiting_log(&["msg=\"too many learner members in cluster\""]);
        past.extend(waiting_log(&["msg=\"other\""; 20]));
        assert!(still_waiting_for(waiting, &past).contains("second learner"));
        assert_eq!(still_waiting_for(waiting, &waiting_log(&["x"])), "");
    }
}
