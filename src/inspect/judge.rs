//! Deciding every signal of one boot, with the runner's own rules (`observe::eval_log`).
//!
//! The runner decides while the boot runs; here the boot is over (or its log is), so "now" is
//! the last moment the log is known to cover. The rules are the same: `up` needs an `up` line;
//! `down` needs a `down` line, a death (a fatal line, systemd's exit status, a recorded exit) or
//! the settle rule (a `settled-by` line and then the settle window covered by the log without an
//! `up` line). What a log cannot prove stays `unknown`:
//!
//! - the settle rule is used only on a *whole* boot: it starts at its banner, carries times, has
//!   ordinary output between the banner and the `settled-by` line, and its input has no sign of
//!   lines left out (grep markers, a filtering command, `--excerpt`);
//! - probes cannot run on a log: a probe-only signal is `unknown` unless the boot died (its
//!   `on-death` value) or the probe's own command and output were pasted into the text.

use std::time::Instant;

use chrono::{DateTime, SecondsFormat, Utc};
use indexmap::IndexMap;

use super::boots::{BootBuilder, End, EndKind, Kept, MIN_CHATTER};
use super::deps::{
    eval_log, Boot, BootEnd, Eval, Evidence, EvidenceSource, LogLine, Observed, Rule, Settle,
    Signal, Signals, Version, READY_SIGNAL, ROLES_SIGNAL, VERSION_SIGNAL,
};
use super::model::{BootReport, EndHow, EndReport, EvidenceLine, Mark, SignalReport, Source};

/// What the judge needs besides the boot.
pub(crate) struct Context<'a> {
    pub(crate) signals: &'a Signals,
    pub(crate) settle: Settle,
    /// The input shows lines were left out.
    pub(crate) excerpt: bool,
    /// The log was written by repro itself (a results folder): whole by construction.
    pub(crate) trusted: bool,
    /// Labels of the input's files, for evidence.
    pub(crate) files: &'a [String],
    /// The version to assume when a boot's log does not say (from `k3s -v` output elsewhere).
    pub(crate) fallback_version: Option<String>,
}

pub(crate) fn time(ts: Option<DateTime<Utc>>, exact: bool) -> Option<String> {
    ts.filter(|_| exact)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn evidence_of(k: &Kept, source: Source, cx: &Context) -> EvidenceLine {
    EvidenceLine {
        source,
        file: cx.files.get(k.file).cloned(),
        line: Some(k.line),
        time: time(k.ts, k.exact),
        text: k.text.clone(),
    }
}

fn end_evidence(end: &End, cx: &Context) -> Option<EvidenceLine> {
    end.evidence
        .as_ref()
        .map(|k| evidence_of(k, end.source, cx))
}

/// Why the settle rule may not be used on this boot, if it may not.
fn partial_because(b: &BootBuilder, cx: &Context) -> Option<String> {
    if cx.excerpt {
        return Some(
            "the input is an excerpt (lines were left out), so the settle rule is not used".into(),
        );
    }
    if b.banner.is_none() {
        return Some("the log begins inside this boot (no start banner)".into());
    }
    if b.first_ts.is_none() {
        return Some("the lines carry no time, so the settle window cannot be measured".into());
    }
    if !cx.trusted && b.chatter < MIN_CHATTER && b.settled() {
        return Some(format!(
            "fewer than {MIN_CHATTER} ordinary lines in the boot: looks like an excerpt of matching lines only"
        ));
    }
    None
}

/// The runner's view of this boot: kept lines on one clock, its end, and "now".
struct Replay {
    boot: Boot,
    now: Instant,
    /// Kept lines in the same order as `boot.lines`.
    order: Vec<Kept>,
}

fn replay(b: &BootBuilder, cx: &Context, whole: bool) -> Replay {
    let base = Instant::now();
    let origin = b.first_ts;
    let at = |ts: Option<DateTime<Utc>>| -> Instant {
        match (origin, ts) {
            (Some(o), Some(t)) => base + (t - o).to_std().unwrap_or_default(),
            _ => base,
        }
    };
    let (lines, ready) = b.lines_for(cx.signals.get(READY_SIGNAL));
    let order: Vec<Kept> = lines.into_iter().cloned().collect();
    let log_lines = order
        .iter()
        .map(|k| LogLine {
            ts: k.ts.unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
            seen: at(k.ts),
            text: k.text.clone(),
        })
        .collect();
    let end = b
        .end
        .as_ref()
        .or(b.recorded.as_ref().and_then(|r| r.end.as_ref()))
        .map(|e| {
            let at = time(e.ts, true).unwrap_or_default();
            match e.kind {
                EndKind::Died { exit_code } => BootEnd::Died {
                    exit_code,
                    at,
                    oom: false,
                },
                EndKind::Stopped | EndKind::HostReboot => BootEnd::Stopped { at },
            }
        });
    // A boot that is not whole is judged as if its log had just stopped: nothing after it is
    // known, and its values are not complete.
    let now = if whole {
        at(b.known_until())
    } else {
        at(b.last_ts)
    };
    Replay {
        boot: Boot {
            number: b.number,
            step: 0,
            started_at: b.first_ts.unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
            lines: log_lines,
            ready,
            end,
            log_path: Default::default(),
            write_error: None,
        },
        now,
        order,
    }
}

/// A results folder's evidence source, as the report names it.
fn run_source(s: EvidenceSource) -> Source {
    match s {
        EvidenceSource::Log => Source::Log,
        EvidenceSource::Probe => Source::Probe,
        EvidenceSource::Docker => Source::Docker,
    }
}

/// Turns the runner's evidence back into lines of the input (file, line number, exact time).
fn map_evidence(ev: &[Evidence], r: &Replay, b: &BootBuilder, cx: &Context) -> Vec<EvidenceLine> {
    let mut out = Vec::new();
    for e in ev {
        if e.source == EvidenceSource::Docker {
            // The runner's "container exited" line: here the line that showed the end.
            let end = b
                .end
                .as_ref()
                .or(b.recorded.as_ref().and_then(|r| r.end.as_ref()));
            if let Some(line) = end.and_then(|e| end_evidence(e, cx)) {
                if !out.contains(&line) {
                    out.push(line);
                }
            }
            continue;
        }
        let line = match r.order.iter().find(|k| k.text == e.text) {
            Some(k) => evidence_of(k, run_source(e.source), cx),
            None => EvidenceLine {
                source: run_source(e.source),
                file: None,
                line: None,
                time: None,
                text: e.text.clone(),
            },
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Decides every signal of a finished boot.
pub(crate) fn judge(b: &BootBuilder, cx: &Context) -> BootReport {
    let partial = partial_because(b, cx);
    let whole = partial.is_none();
    let r = replay(b, cx, whole);
    let judging = Judging {
        r: &r,
        b,
        cx,
        whole,
    };
    let mut signals: IndexMap<String, SignalReport> = IndexMap::new();

    // The version first: patterns may apply to some versions only.
    let version = cx
        .signals
        .get(VERSION_SIGNAL)
        // Judged as a whole log even in a partial one: a version line is a version line.
        .map(|sig| {
            value_signal(
                sig,
                Judging {
                    whole: true,
                    ..judging
                },
                None,
            )
        })
        .map(|(rep, values)| {
            signals.insert(VERSION_SIGNAL.to_string(), rep);
            values
        })
        .unwrap_or_default();
    let mut version_text = version.first().cloned();
    if version_text.is_none() {
        if let Some(v) = &cx.fallback_version {
            version_text = Some(v.clone());
            if let Some(s) = signals.get_mut(VERSION_SIGNAL) {
                s.state = Observed::from(v.as_str());
                s.reason =
                    "not in this boot's log; the version `k3s -v` printed elsewhere in the input"
                        .into();
            }
        }
    }
    let parsed: Option<Version> = version_text.as_deref().and_then(|v| v.parse().ok());

    for (name, sig) in &cx.signals.by_name {
        // A signal read from the Kubernetes API during a run (`api:`, node-ready) is in no log.
        if name == VERSION_SIGNAL || !sig.in_logs() {
            continue;
        }
        let rep = if sig.is_value() {
            value_signal(sig, judging, parsed.as_ref()).0
        } else {
            state_signal(sig, judging, parsed.as_ref())
        };
        signals.insert(name.clone(), rep);
    }

    let roles: Vec<String> = signals
        .get(ROLES_SIGNAL)
        .map(|s| split_values(&s.state))
        .unwrap_or_default();

    BootReport {
        boot: b.number,
        start: b.banner.as_ref().map(|k| Mark {
            file: cx.files.get(k.file).cloned(),
            line: Some(k.line),
            time: time(k.ts, k.exact),
            text: k.text.clone(),
        }),
        end: end_report(b, cx),
        lines: b.lines,
        whole,
        partial_because: partial,
        version: version_text,
        distribution: b
            .distro
            .or_else(|| parsed.as_ref().map(|v| v.distro))
            .map(|d| d.name().to_string()),
        roles,
        role: None,
        role_from: None,
        config: None,
        signals,
    }
}

/// A version the patterns can be checked against; without one, every pattern counts (a
/// version-limited pattern is assumed to fit, which only matters for lines that changed).
fn any_version(v: Option<&Version>, d: distro::Distro) -> Version {
    v.cloned().unwrap_or(Version {
        major: 999,
        minor: 0,
        patch: 0,
        pre: None,
        distro: d,
        build: 1,
    })
}

/// The distribution a boot is judged as: what its lines told, else k3s.
fn distro_of(b: &BootBuilder) -> distro::Distro {
    b.distro.unwrap_or(distro::Distro::K3s)
}

/// What every signal of one finished boot is judged from: its replay, the boot, the context,
/// and whether its log is whole (a partial one is judged without the settle rule).
#[derive(Clone, Copy)]
struct Judging<'a> {
    r: &'a Replay,
    b: &'a BootBuilder,
    cx: &'a Context<'a>,
    whole: bool,
}

fn state_signal(sig: &Signal, j: Judging<'_>, v: Option<&Version>) -> SignalReport {
    let Judging { r, b, cx, whole } = j;
    // A partial log is judged without the settle rule: a copy without it (a copy per signal
    // and boot otherwise was a twentieth of judging a long journal).
    let s = if whole {
        std::borrow::Cow::Borrowed(sig)
    } else {
        let mut s = sig.clone();
        s.settled_by.clear();
        std::borrow::Cow::Owned(s)
    };
    let ver = any_version(v, distro_of(b));
    let unknown = |reason: String| SignalReport {
        state: Observed::Unknown,
        complete: None,
        reason,
        evidence: Vec::new(),
        counts_as: None,
    };
    // Decided as the runner decides, whatever the version; a feature the version lacks is
    // said in the reason (findings leave such boots out).
    let lacks = v
        .filter(|v| !sig.exists_in(v))
        .map(|v| format!(" ({} {v} does not have this feature)", v.distro.name()))
        .unwrap_or_default();
    match eval_log(&s, &r.boot, &ver, cx.settle, r.now) {
        // A death is its own observation, as the runner records it (probe.rs): `dead`, with
        // what it stands for; not the `on-death` value as if a line had said so.
        Eval::Decided(o) if o.rule == Rule::OnDeath => SignalReport {
            state: Observed::Dead,
            complete: None,
            reason: format!("{}{}{lacks}", o.reason, death_cause(b)),
            evidence: map_evidence(&o.evidence, r, b, cx),
            counts_as: sig.on_death.as_ref().map(|v| v.as_str().to_string()),
        },
        Eval::Decided(o) if o.observed != Observed::Unknown => SignalReport {
            state: o.observed.clone(),
            complete: None,
            reason: format!("{}{lacks}", o.reason),
            evidence: map_evidence(&o.evidence, r, b, cx),
            counts_as: None,
        },
        _ => {
            if let Some(rep) = probe_output(sig, b, cx) {
                return rep;
            }
            unknown(format!("{}{lacks}", undecided_reason(sig, b, whole, cx)))
        }
    }
}

/// How the boot died, for a `dead` observation's reason: by a fatal line, or without one
/// (systemd's words: a start timeout, a kill, an exit status).
fn death_cause(b: &BootBuilder) -> String {
    let end = b
        .end
        .as_ref()
        .or(b.recorded.as_ref().and_then(|r| r.end.as_ref()));
    match end {
        Some(End {
            source: Source::Log,
            ..
        }) => " (a fatal line)".into(),
        Some(End {
            evidence: Some(k), ..
        }) => format!(" (no fatal line: `{}`)", k.text),
        _ => String::new(),
    }
}

fn undecided_reason(sig: &Signal, b: &BootBuilder, whole: bool, cx: &Context) -> String {
    if sig.probe.is_some() && sig.up.is_empty() && sig.down.is_empty() {
        return "decided by a probe, which cannot run on a log (paste the probe's command and output to use it)".into();
    }
    let settle_line = sig
        .settled_by
        .iter()
        .any(|p| b.kept.iter().any(|k| p.regex.is_match(&k.text)));
    if !sig.settled_by.is_empty() && settle_line {
        if !whole {
            return format!(
                "no `up` or `down` line; the settle rule is not used: {}",
                partial_because(b, cx).unwrap_or_default()
            );
        }
        return format!(
            "no `up` or `down` line, and the log ends less than {} after the settle line",
            humantime::format_duration(cx.settle.after(false))
        );
    }
    "no line in this boot decides it".into()
}

/// A probe's pasted output decides a probe signal (its exit code is not in the text, so only
/// rules with an output pattern can match).
fn probe_output(sig: &Signal, b: &BootBuilder, cx: &Context) -> Option<SignalReport> {
    let p = sig.probe.as_ref()?;
    for (rules, state) in [(&p.up, Observed::Up), (&p.down, Observed::Down)] {
        for rule in rules {
            let Some(re) = &rule.output else { continue };
            if let Some(k) = b.probe_output.iter().find(|k| re.is_match(&k.text)) {
                return Some(SignalReport {
                    state: state.clone(),
                    complete: None,
                    reason: "the probe's command and output are in the text (its exit code is not, so only the output rule was checked)".into(),
                    evidence: vec![evidence_of(k, Source::ProbeOutput, cx)],
                    counts_as: None,
                });
            }
        }
    }
    None
}

/// A value signal: its values, and whether the boot got far enough to rule out more.
fn value_signal(sig: &Signal, j: Judging<'_>, v: Option<&Version>) -> (SignalReport, Vec<String>) {
    let Judging { r, b, cx, whole } = j;
    let ver = any_version(v, distro_of(b));
    let decided = match eval_log(sig, &r.boot, &ver, cx.settle, r.now) {
        Eval::Decided(o) if whole => Some(o),
        _ => None,
    };
    if let Some(o) = decided {
        let values = split_values(&o.observed);
        return (
            SignalReport {
                state: o.observed.clone(),
                complete: Some(true),
                reason: o.reason.clone(),
                evidence: map_evidence(&o.evidence, r, b, cx),
                counts_as: None,
            },
            values,
        );
    }
    // Not settled: what was seen so far (the boot treated as over to collect them).
    let mut ended = Boot {
        number: r.boot.number,
        step: 0,
        started_at: r.boot.started_at,
        lines: r.boot.lines.clone(),
        ready: r.boot.ready,
        end: Some(BootEnd::Stopped { at: String::new() }),
        log_path: Default::default(),
        write_error: None,
    };
    ended.ready = None;
    let (state, evidence, values) = match eval_log(sig, &ended, &ver, cx.settle, r.now) {
        Eval::Decided(o) if o.observed != Observed::NoValue => (
            o.observed.clone(),
            map_evidence(&o.evidence, r, b, cx),
            split_values(&o.observed),
        ),
        _ => (Observed::Unknown, Vec::new(), Vec::new()),
    };
    let reason = if values.is_empty() {
        "no line in this boot shows it".to_string()
    } else {
        "values seen so far; the boot's log ends before it settled, so more could follow"
            .to_string()
    };
    (
        SignalReport {
            state,
            complete: Some(false),
            reason,
            evidence,
            counts_as: None,
        },
        values,
    )
}

/// A value signal's values (none for `none`, `unknown` or an empty value).
fn split_values(s: &Observed) -> Vec<String> {
    match s {
        Observed::Value(v) if !v.is_empty() => v.split(',').map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn end_report(b: &BootBuilder, cx: &Context) -> EndReport {
    let end = b
        .end
        .as_ref()
        .or(b.recorded.as_ref().and_then(|r| r.end.as_ref()));
    match end {
        Some(e) => EndReport {
            how: match e.kind {
                EndKind::Died { .. } => EndHow::Died,
                EndKind::Stopped => EndHow::Stopped,
                EndKind::HostReboot => EndHow::HostReboot,
            },
            time: time(e.ts, true),
            exit_code: match e.kind {
                EndKind::Died { exit_code } => exit_code,
                _ => None,
            },
            evidence: end_evidence(e, cx),
        },
        None => EndReport {
            how: if b.followed {
                EndHow::NextBoot
            } else {
                EndHow::LogEnds
            },
            time: time(b.last_ts, b.tail().last().is_some_and(|k| k.exact)),
            exit_code: None,
            evidence: None,
        },
    }
}
