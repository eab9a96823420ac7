//! `checks/signals.yaml`: log patterns with the versions they apply to, probes, on-death values.

use super::placeholders;
use super::*;
use crate::raw::{ProbeFile, SignalFile};

pub fn signals(path: &Path, text: &str) -> Result<Signals, Diagnostics> {
    let raw: SignalsFile = parse(path, text, FileKind::Signals)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();
    let mut by_name = IndexMap::new();
    for (name, s) in raw.signals {
        let sig = signal(&d, &name, s, &mut out);
        by_name.insert(name.value, sig);
    }
    if out.is_empty() {
        // Until a scenario picks its distribution's (`Signals::for_distro`): the default
        // distribution's probe (what `repro inspect` reads).
        Ok(Signals { by_name }.for_distro(Distro::default()))
    } else {
        Err(out)
    }
}

/// One signal of the file, checked.
fn signal(d: &FileDiag, name: &Spanned<String>, s: SignalFile, out: &mut Diagnostics) -> Signal {
    check_slug(d, name, "signal", out);
    let since = (!s.since.is_empty()).then(|| release_set(d, &s.since, out));
    let up = patterns(d, &s.up, out);
    let down = patterns(d, &s.down, out);
    let value = patterns(d, &s.value, out);
    let settled_by = line_patterns(d, &s.settled_by, true, None, out);
    let undecided_by = patterns(d, &s.undecided_by, out);
    // Judged on what the file says, not on what compiled: a bad regex is its own error.
    let written = s.probe.as_ref().map(|p| p.all()).unwrap_or_default();
    let probe_value = written.iter().any(|p| !p.value.is_empty());
    let probe_state = written.iter().any(|p| p.value.is_empty());
    let is_value = !s.value.is_empty() || probe_value;
    let api = s.api.as_ref().and_then(|a| {
        let read = crate::scenario::ApiRead::parse(&a.value);
        if read.is_none() {
            out.push(
                d.span(
                    a,
                    format!(
                        "`api: {}` is not something repro reads from the API",
                        a.value
                    ),
                )
                .help(format!(
                    "use one of: {}",
                    crate::scenario::ApiRead::NAMES.join(", ")
                )),
            );
        }
        read
    });
    let is_state = !s.up.is_empty() || !s.down.is_empty() || probe_state || s.api.is_some();
    if is_value && is_state {
        out.push(
            d.span(
                name,
                format!("signal `{}` mixes `value:` with up/down/probe", name.value),
            )
            .help(
                "a signal is either a value (a version, roles) or a state (up/down): keep one kind",
            ),
        );
    }
    if !is_value && !is_state {
        out.push(
            d.span(
                name,
                format!("signal `{}` has no way to be observed", name.value),
            )
            .help("give `up:`/`down:` log regexes, `value:` regexes or a `probe:`"),
        );
    }
    value_groups(d, &s.value, out);
    let on_death = s.on_death.as_ref().and_then(|v| match v.value.as_str() {
        "up" => Some(Expected::Up),
        "down" => Some(Expected::Down),
        other => {
            out.push(
                d.span(v, format!("`on-death: {other}` is not a state"))
                    .help("use `up` or `down`: what the signal counts as when the node dies"),
            );
            None
        }
    });
    let shows = (s.shows.as_ref()).and_then(|sh| shows(d, &name.value, sh, is_value, out));
    Signal {
        description: s.description,
        since,
        up,
        down,
        value,
        settled_by,
        undecided_by,
        probe: None,
        probes: probes(d, name, &written, out),
        on_death,
        roles: s.roles.iter().map(|r| r.value).collect(),
        shows,
        api,
    }
}

/// A value pattern names its value: a `(?P<value>...)` group or a fixed `value:`.
fn value_groups(d: &FileDiag, value: &[Pattern], out: &mut Diagnostics) {
    for p in value {
        let (re, fixed) = match &p.value {
            PatternFile::Plain(r) => (r.as_str(), false),
            PatternFile::Full(f) => (f.regex.value.as_str(), f.value.is_some()),
        };
        if !fixed && !re.contains("(?P<value>") && !re.contains("(?<value>") {
            out.push(
                d.span(p, "a value pattern needs a named group `(?P<value>...)` or a fixed `value:`")
                    .help(format!("e.g. '{}(?P<value>v\\S+)' or {{match: 'Running kube-apiserver', value: control-plane}}", Distro::default().facts().banner_prefix)),
            );
        }
    }
}

/// The probes written, each for the distributions it is for: its own (`distribution:`), else
/// every one without its own; each filled with that distribution's facts (placeholders).
fn probes(
    d: &FileDiag,
    name: &Spanned<String>,
    written: &[&ProbeFile],
    out: &mut Diagnostics,
) -> Vec<(Option<Distro>, Probe)> {
    let mut owners: Vec<Option<Option<Distro>>> = Vec::new();
    for p in written {
        if p.command.value.is_empty() {
            out.push(
                d.span(&p.command, "the probe command is empty")
                    .help("give the command run inside the node as a list, e.g. ['{kubectl}', get, --raw, /metrics]"),
            );
        }
        let has_rules = !(p.up.is_empty() && p.down.is_empty());
        if !p.value.is_empty() && has_rules {
            out.push(
                d.span(name, format!("the probe of `{}` mixes `value:` with `up`/`down` rules", name.value))
                    .help("a probe either reads a value (`value:` regexes with a `(?P<value>...)` group) or decides up/down: keep one kind"),
            );
        }
        for (list, which) in [(&p.up, "up"), (&p.down, "down")] {
            if list.is_empty() && p.value.is_empty() {
                out.push(
                    d.span(name, format!("the probe of `{}` has no `{which}` rule", name.value))
                        .help("a probe needs at least one `up` and one `down` rule, e.g. {exit: 0, output: 'regex'}"),
                );
            }
        }
        let owner = match &p.distribution {
            None => Some(None),
            Some(s) => {
                distribution(d, s, "the probe is then every other distribution's", out).map(Some)
            }
        };
        if let Some(o) = owner.filter(|o| owners.contains(&Some(*o))) {
            out.push(
                d.span(&p.command, format!(
                    "signal `{}` has two probes for {}",
                    name.value,
                    o.map_or("every distribution".to_string(), |x| x.to_string())
                ))
                .help("give each distribution one probe (`distribution:`), and at most one without it"),
            );
        }
        owners.push(owner);
    }
    let mut probes = Vec::new();
    for (p, owner) in written.iter().zip(&owners) {
        let Some(owner) = owner else { continue };
        let command = p.command.value.join(" ");
        placeholders::check(d, &p.command, &command, out);
        let for_them: Vec<Distro> = match owner {
            Some(x) => vec![*x],
            None => (Distro::ALL.iter().copied())
                .filter(|x| !owners.contains(&Some(Some(*x))))
                .collect(),
        };
        // The copies differ only by the facts filled in: a problem is reported once.
        let mut again = Diagnostics::default();
        for (k, x) in for_them.into_iter().enumerate() {
            let out = if k == 0 { &mut *out } else { &mut again };
            probes.push((Some(x), probe(d, p, x.facts(), out)));
        }
    }
    probes
}

/// One probe as a distribution's nodes run it: its placeholders filled with `facts`.
fn probe(d: &FileDiag, p: &ProbeFile, facts: &distro::Facts, out: &mut Diagnostics) -> Probe {
    let value = p
        .value
        .iter()
        .filter_map(|v| {
            if !v.value.contains("(?P<value>") && !v.value.contains("(?<value>") {
                out.push(
                    d.span(
                        v,
                        "a value probe's pattern needs a named group `(?P<value>...)`",
                    )
                    .help("e.g. '(?m)^clusterDomain: (?P<value>\\S+)'"),
                );
            }
            regexes(d, v, &v.value, None, Some(facts), out)
                .pop()
                .map(|(_, re)| re)
        })
        .collect();
    Probe {
        command: placeholders::fill_command(&p.command.value, facts),
        since: (!p.since.is_empty()).then(|| release_set(d, &p.since, out)),
        after: line_patterns(d, &p.after, false, Some(facts), out),
        up: rules(d, &p.up, facts, out),
        down: rules(d, &p.down, facts, out),
        value,
        timeout: (p.timeout.as_ref())
            .and_then(|t| duration(d, t, out))
            .unwrap_or(DEFAULT_PROBE_TIMEOUT),
    }
}

/// The distribution `s` names, or an error saying what leaving it out means (`unqualified`).
fn distribution(
    d: &FileDiag,
    s: &Spanned<String>,
    unqualified: &str,
    out: &mut Diagnostics,
) -> Option<Distro> {
    let found = Distro::from_name(&s.value);
    if found.is_none() {
        out.push(
            d.span(
                s,
                format!("`{}` is not a distribution repro knows", s.value),
            )
            .help(format!(
                "write one of: {} (or leave `distribution:` out: {unqualified})",
                Distro::names()
            )),
        );
    }
    found
}

/// `shows:`: a key some distribution's flags table has; `up-when:` exactly on state signals.
fn shows(
    d: &FileDiag,
    signal: &str,
    sh: &Spanned<ShowsFile>,
    is_value: bool,
    out: &mut Diagnostics,
) -> Option<Shows> {
    let key = &sh.value.key;
    let known = distro::Distro::ALL
        .iter()
        .any(|x| x.flags().iter().any(|f| f.name == key.value));
    if !known {
        let tables: Vec<&str> = distro::Distro::ALL
            .iter()
            .map(|x| x.facts().flags_path)
            .collect();
        out.push(
            d.span(
                key,
                format!(
                    "`shows: {{key: {}}}`: no flags table has the key `{}`",
                    key.value, key.value
                ),
            )
            .help(format!(
                "name a config key of {} (e.g. embedded-registry, cluster-dns)",
                tables.join(" or ")
            )),
        );
    }
    let up_when = sh.value.up_when.as_ref().map(|u| u.value);
    match (&sh.value.up_when, is_value) {
        (Some(u), true) => out.push(
            d.span(u, format!("`up-when:` on the value signal `{signal}`"))
                .help("a value signal's observed value is the key's value: remove `up-when:` (it is for up/down signals)"),
        ),
        (None, false) => out.push(
            d.span(sh, format!("`shows:` on the up/down signal `{signal}` needs `up-when:`"))
                .help("say which value of the key `up` stands for: `up-when: true` (or `false` for a `disable-*` key)"),
        ),
        _ => {}
    }
    known.then(|| Shows {
        key: key.value.clone(),
        up_when,
    })
}

fn rules(
    d: &FileDiag,
    rs: &[Spanned<ProbeRuleFile>],
    facts: &distro::Facts,
    out: &mut Diagnostics,
) -> Vec<ProbeRule> {
    rs.iter()
        .map(|r| {
            if r.value.exit.is_none() && r.value.output.is_none() {
                out.push(
                    d.span(r, "a probe rule with neither `exit:` nor `output:` matches every result")
                        .help("give an exit code, an output regex or both, e.g. {exit: 1, output: 'apiserver disabled'}"),
                );
            }
            let output = r.value.output.as_ref();
            ProbeRule {
                exit: r.value.exit,
                output: output.and_then(|o| {
                    regexes(d, o, &o.value, None, Some(facts), out)
                        .pop()
                        .map(|(_, re)| re)
                }),
            }
        })
        .collect()
}

fn compile<T>(d: &FileDiag, at: &Spanned<T>, re: &str, out: &mut Diagnostics) -> Option<Regex> {
    match Regex::new(re) {
        Ok(r) => Some(r),
        Err(e) => {
            // The regex crate's message is a multi-line drawing; its last line is the reason.
            let detail = e.to_string();
            let last = detail.lines().last().unwrap_or("invalid").trim();
            let last = last.strip_prefix("error: ").unwrap_or(last);
            out.push(
                d.span(at, format!("invalid regex `{re}`: {last}"))
                    .help("Rust regex syntax (https://docs.rs/regex); escape `[`, `(`, `.` and `+` with `\\` to match them literally"),
            );
            None
        }
    }
}

fn patterns(d: &FileDiag, list: &[Pattern], out: &mut Diagnostics) -> Vec<LinePattern> {
    line_patterns(d, list, false, None, out)
}

/// The regexes `re` stands for, each with the only distribution that prints it. Without a
/// placeholder: `re` itself, `only`'s. With: filled with `fill` when given (a probe's
/// patterns, as one distribution runs it); else one copy per distribution (`only`, else every
/// one), each that distribution's.
fn regexes<T>(
    d: &FileDiag,
    at: &Spanned<T>,
    re: &str,
    only: Option<Distro>,
    fill: Option<&distro::Facts>,
    out: &mut Diagnostics,
) -> Vec<(Option<Distro>, Regex)> {
    if !placeholders::any(re) {
        return compile(d, at, re, out)
            .map(|r| (only, r))
            .into_iter()
            .collect();
    }
    if !placeholders::check(d, at, re, out) {
        return Vec::new();
    }
    let copies: Vec<(Option<Distro>, &distro::Facts)> = match (fill, only) {
        (Some(f), _) => vec![(only, f)],
        (None, Some(x)) => vec![(Some(x), x.facts())],
        (None, None) => Distro::ALL.iter().map(|x| (Some(*x), x.facts())).collect(),
    };
    let mut regexes = Vec::new();
    for (x, facts) in copies {
        // A fact is a literal: a copy compiles exactly when the pattern does, reported once.
        let Some(r) = compile(d, at, &placeholders::fill(re, facts, true), out) else {
            break;
        };
        regexes.push((x, r));
    }
    regexes
}

/// Compiles patterns; `order:` is accepted only where it means something (`settled-by`);
/// placeholders are filled as `regexes` says (`fill`: a probe's distribution).
fn line_patterns(
    d: &FileDiag,
    list: &[Pattern],
    settled_by: bool,
    fill: Option<&distro::Facts>,
    out: &mut Diagnostics,
) -> Vec<LinePattern> {
    let mut pats = Vec::new();
    for p in list {
        match &p.value {
            PatternFile::Plain(r) => {
                for (distro, regex) in regexes(d, p, r, None, fill, out) {
                    pats.push(LinePattern {
                        regex,
                        since: None,
                        until: None,
                        value: None,
                        ordered: false,
                        distro,
                        roles: Vec::new(),
                    });
                }
            }
            PatternFile::Full(f) => {
                let since = (!f.since.is_empty()).then(|| release_set(d, &f.since, out));
                let until = (!f.until.is_empty()).then(|| release_set(d, &f.until, out));
                let only = f
                    .distribution
                    .as_ref()
                    .and_then(|s| distribution(d, s, "the line is then every distribution's", out));
                let ordered = order(d, f.order.as_ref(), settled_by, out);
                for (distro, regex) in regexes(d, &f.regex, &f.regex.value, only, fill, out) {
                    pats.push(LinePattern {
                        regex,
                        since: since.clone(),
                        until: until.clone(),
                        value: f.value.clone(),
                        ordered,
                        distro,
                        roles: f.roles.iter().map(|r| r.value).collect(),
                    });
                }
            }
        }
    }
    pats
}

/// `order:` of a pattern: whether a settled-by line comes after the feature's own line.
fn order(
    d: &FileDiag,
    order: Option<&Spanned<String>>,
    settled_by: bool,
    out: &mut Diagnostics,
) -> bool {
    match order {
        None => false,
        Some(o) if !settled_by => {
            out.push(
                d.span(o, "`order:` only means something in a `settled-by` pattern")
                    .help("remove it: it says whether a settled-by line comes after the feature's own line"),
            );
            false
        }
        Some(o) => match o.value.as_str() {
            "after-feature" => true,
            "hint" => false,
            other => {
                out.push(
                    d.span(o, format!("`order: {other}` is not an order"))
                        .help("use `after-feature` (k3s prints the line after the feature's own line: its arrival proves down) or `hint` (needs the settle window)"),
                );
                false
            }
        },
    }
}
