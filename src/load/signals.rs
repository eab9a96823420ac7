//! `checks/signals.yaml`: log patterns with the versions they apply to, probes, on-death values.

use super::*;

pub fn signals(path: &Path, text: &str) -> Result<Signals, Diagnostics> {
    let raw: SignalsFile = parse(path, text, FileKind::Signals)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();
    let mut by_name = IndexMap::new();
    for (name, s) in raw.signals {
        check_slug(&d, &name, "signal", &mut out);
        let since = (!s.since.is_empty()).then(|| release_set(&d, &s.since, &mut out));
        let up = patterns(&d, &s.up, &mut out);
        let down = patterns(&d, &s.down, &mut out);
        let value = patterns(&d, &s.value, &mut out);
        let settled_by = line_patterns(&d, &s.settled_by, true, &mut out);
        // Judged on what the file says, not on what compiled: a bad regex is its own error.
        let is_value = !s.value.is_empty();
        let is_state = !s.up.is_empty() || !s.down.is_empty() || s.probe.is_some();
        if is_value && is_state {
            out.push(
                d.span(&name, format!("signal `{}` mixes `value:` with up/down/probe", name.value))
                    .help("a signal is either a value (a version, roles) or a state (up/down): keep one kind"),
            );
        }
        if !is_value && !is_state {
            out.push(
                d.span(
                    &name,
                    format!("signal `{}` has no way to be observed", name.value),
                )
                .help("give `up:`/`down:` log regexes, `value:` regexes or a `probe:`"),
            );
        }
        for p in &s.value {
            let (re, fixed) = match &p.value {
                PatternFile::Plain(r) => (r.as_str(), false),
                PatternFile::Full(f) => (f.regex.value.as_str(), f.value.is_some()),
            };
            if !fixed && !re.contains("(?P<value>") && !re.contains("(?<value>") {
                out.push(
                    d.span(p, "a value pattern needs a named group `(?P<value>...)` or a fixed `value:`")
                        .help(format!("e.g. '{}(?P<value>v\\S+)' or {{match: 'Running kube-apiserver', value: control-plane}}", distro::Distro::default().facts().banner_prefix)),
                );
            }
        }
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
        let mut probes: Vec<(Option<distro::Distro>, Probe)> = Vec::new();
        for p in s.probe.as_ref().map(|p| p.all()).unwrap_or_default() {
            if p.command.value.is_empty() {
                out.push(
                    d.span(&p.command, "the probe command is empty")
                        .help("give the command run inside the node as a list, e.g. [k3s, kubectl, get, --raw, /metrics]"),
                );
            }
            for (list, which) in [(&p.up, "up"), (&p.down, "down")] {
                if list.is_empty() {
                    out.push(
                        d.span(&name, format!("the probe of `{}` has no `{which}` rule", name.value))
                            .help("a probe needs at least one `up` and one `down` rule, e.g. {exit: 0, output: 'regex'}"),
                    );
                }
            }
            let for_distro = p.distribution.as_ref().and_then(|s| {
                let found = distro::Distro::from_name(&s.value);
                if found.is_none() {
                    out.push(
                        d.span(s, format!("`{}` is not a distribution repro knows", s.value))
                            .help(format!("write one of: {} (or leave `distribution:` out: the probe is then every other distribution's)", distro::Distro::names())),
                    );
                }
                found
            });
            let unknown = p.distribution.is_some() && for_distro.is_none();
            if !unknown && probes.iter().any(|(other, _)| *other == for_distro) {
                out.push(
                    d.span(&p.command, format!(
                        "signal `{}` has two probes for {}",
                        name.value,
                        for_distro.map_or("every distribution".to_string(), |x| x.to_string())
                    ))
                    .help("give each distribution one probe (`distribution:`), and at most one without it"),
                );
            }
            probes.push((
                for_distro,
                Probe {
                    command: p.command.value.clone(),
                    after: patterns(&d, &p.after, &mut out),
                    up: rules(&d, &p.up, &mut out),
                    down: rules(&d, &p.down, &mut out),
                    timeout: p
                        .timeout
                        .as_ref()
                        .and_then(|t| duration(&d, t, &mut out))
                        .unwrap_or(DEFAULT_PROBE_TIMEOUT),
                },
            ));
        }
        let shows = s
            .shows
            .as_ref()
            .and_then(|sh| shows(&d, &name.value, sh, is_value, &mut out));
        // Until a scenario picks its distribution's (`Signals::for_distro`): the unqualified one.
        let probe = probes
            .iter()
            .find(|(d, _)| d.is_none())
            .map(|(_, p)| p.clone());
        by_name.insert(
            name.value,
            Signal {
                description: s.description,
                since,
                up,
                down,
                value,
                settled_by,
                probe,
                probes,
                on_death,
                roles: s.roles.iter().map(|r| r.value).collect(),
                shows,
            },
        );
    }
    if out.is_empty() {
        Ok(Signals { by_name })
    } else {
        Err(out)
    }
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

fn rules(d: &FileDiag, rs: &[Spanned<ProbeRuleFile>], out: &mut Diagnostics) -> Vec<ProbeRule> {
    rs.iter()
        .map(|r| {
            if r.value.exit.is_none() && r.value.output.is_none() {
                out.push(
                    d.span(r, "a probe rule with neither `exit:` nor `output:` matches every result")
                        .help("give an exit code, an output regex or both, e.g. {exit: 1, output: 'apiserver disabled'}"),
                );
            }
            ProbeRule {
                exit: r.value.exit,
                output: r
                    .value
                    .output
                    .as_ref()
                    .and_then(|o| compile(d, o, &o.value, out)),
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
    line_patterns(d, list, false, out)
}

/// Compiles patterns; `order:` is accepted only where it means something (`settled-by`).
fn line_patterns(
    d: &FileDiag,
    list: &[Pattern],
    settled_by: bool,
    out: &mut Diagnostics,
) -> Vec<LinePattern> {
    list.iter()
        .filter_map(|p| match &p.value {
            PatternFile::Plain(r) => compile(d, p, r, out).map(|regex| LinePattern {
                regex,
                since: None,
                until: None,
                value: None,
                ordered: false,
                distro: None,
                roles: Vec::new(),
            }),
            PatternFile::Full(f) => {
                let since = (!f.since.is_empty()).then(|| release_set(d, &f.since, out));
                let until = (!f.until.is_empty()).then(|| release_set(d, &f.until, out));
                let distro = f.distribution.as_ref().and_then(|s| {
                    let found = distro::Distro::from_name(&s.value);
                    if found.is_none() {
                        out.push(
                            d.span(s, format!("`{}` is not a distribution repro knows", s.value))
                                .help(format!("write one of: {} (or leave `distribution:` out: the line is then every distribution's)", distro::Distro::names())),
                        );
                    }
                    found
                });
                let ordered = match &f.order {
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
                };
                compile(d, &f.regex, &f.regex.value, out).map(|regex| LinePattern {
                    regex,
                    since,
                    until,
                    value: f.value.clone(),
                    ordered,
                    distro,
                    roles: f.roles.iter().map(|r| r.value).collect(),
                })
            }
        })
        .collect()
}
