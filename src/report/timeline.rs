//! `timeline.html`: the whole run on one self-contained page (inline CSS and SVG, no scripts, no
//! network), so it opens from a bundle on any machine. Nodes are rows and time runs across:
//! each boot is a bar, restarts and edits are marks above it, readiness a diamond on it, and each
//! observed signal a dot in its own lane, red where it differs from the correct value. Hovering
//! anything shows its details and evidence line (SVG `<title>`); a table below repeats them.
//! Without a mouse (touch, keyboard) the evidence is one click or Tab + Enter away: every signal
//! mark and red cell is a link to its row in the table, which is highlighted when reached
//! (`:target`). Step names are listed in full above the chart, where they wrap.
//!
//! Everything from result.json is data, possibly hostile (a results folder is shared, edited,
//! attached to issues): every value goes through `esc` where it lands, including times that do
//! not parse (`clock` then returns them as written) and free-form kinds and boot ends. The page
//! has no `<script>` and no inline JSON; links only point at the page's own row ids.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::cases::{self, Case, Outcome};
use super::text::{self, clock, esc, shorten};
use crate::result::{RunResult, StepResult};

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 80.0;
const BAR_Y: f64 = 16.0;
const BAR_H: f64 = 20.0;
const LANE0: f64 = 52.0;
const LANE_H: f64 = 18.0;
const AXIS_H: f64 = 36.0;

const RED: &str = "#cf222e";
const GREEN: &str = "#1a7f37";
const GREY: &str = "#8c959f";

/// Maps times to x positions.
struct Scale {
    t0: DateTime<Utc>,
    span: f64,
}

impl Scale {
    fn x(&self, t: DateTime<Utc>) -> f64 {
        let s = (t - self.t0).num_milliseconds() as f64 / 1000.0;
        LEFT + (s / self.span).clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
    }

    fn xs(&self, s: &str) -> Option<f64> {
        text::time(s).map(|t| self.x(t))
    }
}

pub(crate) fn render(r: &RunResult) -> String {
    let all = cases::cases(r);
    let scale = scale(r);
    let signals = signal_lanes(r);
    let row_h = LANE0 + signals.len().max(1) as f64 * LANE_H + 6.0;
    let nodes: Vec<&str> = r.topology.nodes.iter().map(|n| n.name.as_str()).collect();
    let height = TOP + nodes.len() as f64 * row_h + AXIS_H;
    let row_y = |node: &str| {
        nodes
            .iter()
            .position(|n| *n == node)
            .map(|i| TOP + i as f64 * row_h)
    };

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="timeline of run {}">"#,
        esc(&r.run_id)
    );
    let bands = step_bands(r, &scale);
    draw_bands(&mut svg, &bands, height);
    draw_rows(&mut svg, r, &nodes, &signals, row_h);
    draw_mismatch_cells(&mut svg, &all, &bands, &row_y, row_h);
    draw_axis(&mut svg, &scale, height);
    draw_boots(&mut svg, r, &scale, &row_y);
    draw_actions(&mut svg, r, &scale, &row_y);
    draw_signals(&mut svg, r, &all, &bands, &scale, &row_y, &signals);
    draw_step_lines(&mut svg, &bands, height);
    svg.push_str("</svg>");

    page(r, &all, &svg)
}

fn scale(r: &RunResult) -> Scale {
    let t0 = text::time(&r.started_at).unwrap_or_default();
    let mut end = text::opt_time(r.finished_at.as_ref()).unwrap_or(t0);
    // A run that never finished still has boots and evidence to show: stretch to the last one.
    let mut stretch = |s: Option<&String>| {
        if let Some(t) = text::opt_time(s) {
            end = end.max(t);
        }
    };
    for b in &r.boots {
        stretch(Some(&b.started_at));
        stretch(b.ready_at.as_ref());
        stretch(b.ended_at.as_ref());
    }
    for s in &r.steps {
        stretch(s.finished_at.as_ref());
        for o in &s.observations {
            for e in &o.evidence {
                stretch(e.time.as_ref());
            }
        }
    }
    let span = ((end - t0).num_milliseconds() as f64 / 1000.0).max(1.0);
    Scale { t0, span }
}

/// The signals observed in this run, in first-seen order: one lane each in every row.
fn signal_lanes(r: &RunResult) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let planned = r
        .planned_steps
        .iter()
        .flat_map(|p| p.expect.values().flat_map(|m| m.keys()));
    let observed = r
        .steps
        .iter()
        .flat_map(|s| s.observations.iter().map(|o| &o.signal));
    for s in observed.chain(planned) {
        if !v.contains(s) {
            v.push(s.clone());
        }
    }
    v
}

/// A step's stretch of time: from its start to the next step's start (or the run's end).
struct Band {
    /// 0 = cluster creation.
    index: usize,
    name: String,
    x0: f64,
    x1: f64,
}

fn step_bands(r: &RunResult, scale: &Scale) -> Vec<Band> {
    let end_x = WIDTH - RIGHT;
    let mut starts: Vec<(usize, String, f64)> = vec![(0, "cluster up".to_string(), LEFT)];
    for s in &r.steps {
        if let Some(x) = scale.xs(&s.started_at) {
            starts.push((s.index, s.name.clone(), x));
        }
    }
    let mut bands = Vec::new();
    for (i, (index, name, x0)) in starts.iter().enumerate() {
        let x1 = match starts.get(i + 1) {
            Some(next) => next.2,
            None => last_step_end(r, scale).unwrap_or(end_x),
        };
        bands.push(Band {
            index: *index,
            name: name.clone(),
            x0: *x0,
            x1: x1.max(*x0),
        });
    }
    // After the last step: teardown, when the run recorded an end.
    if let Some(last) = bands.last() {
        if last.x1 < end_x - 1.0 {
            let x0 = last.x1;
            bands.push(Band {
                index: usize::MAX,
                name: "teardown".into(),
                x0,
                x1: end_x,
            });
        }
    }
    bands
}

fn last_step_end(r: &RunResult, scale: &Scale) -> Option<f64> {
    r.steps
        .last()
        .and_then(|s: &StepResult| s.finished_at.as_deref())
        .and_then(|f| scale.xs(f))
}

fn draw_bands(svg: &mut String, bands: &[Band], height: f64) {
    for (i, b) in bands.iter().enumerate() {
        let fill = if i % 2 == 0 { "#f6f8fa" } else { "#ffffff" };
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="{fill}"/>"#,
            b.x0,
            b.x1 - b.x0,
            height - TOP - AXIS_H
        );
        let label = match b.index {
            0 => "Cluster up".to_string(),
            usize::MAX => "Teardown".to_string(),
            n => format!("Step {n}"),
        };
        let width = b.x1 - b.x0;
        // About 6.2 px per character at 11 px: wrap names to the band so labels never overlap.
        let chars = ((width - 8.0) / 6.2).max(0.0) as usize;
        let title = if b.index == 0 || b.index == usize::MAX {
            label.clone()
        } else {
            format!("{label}: {}", b.name)
        };
        let _ = write!(svg, r#"<g class="band"><title>{}</title>"#, esc(&title));
        let head = if chars >= 4 {
            label.clone()
        } else {
            cut(&label, chars)
        };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" class="step">{}</text>"#,
            b.x0 + 4.0,
            TOP - 46.0,
            esc(&head)
        );
        if b.index != 0 && b.index != usize::MAX {
            for (i, line) in wrap(&b.name, chars, 2).iter().enumerate() {
                let _ = write!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" class="stepname">{}</text>"#,
                    b.x0 + 4.0,
                    TOP - 30.0 + i as f64 * 13.0,
                    esc(line)
                );
            }
        }
        svg.push_str("</g>");
    }
}

/// Word-wraps `s` into at most `lines` lines of `width` characters, the last one cut with `…`.
fn wrap(s: &str, width: usize, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() > lines {
        let rest = out[lines - 1..].join(" ");
        out.truncate(lines - 1);
        out.push(rest);
    }
    out.into_iter().map(|l| cut(&l, width)).collect()
}

fn cut(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        s.to_string()
    } else if chars <= 1 {
        String::new()
    } else {
        format!("{}…", s.chars().take(chars - 1).collect::<String>())
    }
}

fn draw_step_lines(svg: &mut String, bands: &[Band], height: f64) {
    for b in bands.iter().skip(1) {
        let _ = write!(
            svg,
            r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{:.1}" class="stepline"/>"#,
            TOP - 60.0,
            height - AXIS_H,
            x = b.x0
        );
    }
}

fn draw_rows(svg: &mut String, r: &RunResult, nodes: &[&str], signals: &[String], row_h: f64) {
    for (i, node) in nodes.iter().enumerate() {
        let y = TOP + i as f64 * row_h;
        let role = r
            .topology
            .nodes
            .iter()
            .find(|n| n.name == *node)
            .map(|n| n.role.as_str())
            .unwrap_or("");
        let _ = write!(
            svg,
            r#"<line x1="0" y1="{y:.1}" x2="{WIDTH}" y2="{y:.1}" class="rowline"/><text x="8" y="{:.1}" class="node">{}</text><text x="8" y="{:.1}" class="role">{}</text>"#,
            y + BAR_Y + 14.0,
            esc(node),
            y + BAR_Y + 27.0,
            esc(role)
        );
        for (l, sig) in signals.iter().enumerate() {
            let ly = y + LANE0 + l as f64 * LANE_H;
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="lane">{}</text><line x1="{LEFT}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" class="laneline"/>"#,
                LEFT - 8.0,
                ly + 3.5,
                esc(sig),
                WIDTH - RIGHT
            );
        }
    }
}

fn draw_mismatch_cells(
    svg: &mut String,
    all: &[Case<'_>],
    bands: &[Band],
    row_y: &dyn Fn(&str) -> Option<f64>,
    row_h: f64,
) {
    let mut done: Vec<(usize, &str)> = Vec::new();
    for c in all.iter().filter(|c| c.outcome != Outcome::Pass) {
        if done.contains(&(c.step, c.node.as_str())) {
            continue;
        }
        done.push((c.step, c.node.as_str()));
        let (Some(b), Some(y)) = (bands.iter().find(|b| b.index == c.step), row_y(&c.node)) else {
            continue;
        };
        let cell: Vec<&Case<'_>> = all
            .iter()
            .filter(|d| d.step == c.step && d.node == c.node && d.outcome != Outcome::Pass)
            .collect();
        // Red where k3s did something wrong; amber where repro could not tell (not reached,
        // undecided): the two call for different follow-ups.
        let (class, what) = if cell.iter().any(|d| d.outcome == Outcome::Fail) {
            ("bad", "observed ≠ expected")
        } else {
            ("missing", "not observed or undecided")
        };
        let lines: Vec<String> = cell
            .iter()
            .map(|d| {
                format!(
                    "{}: expected {}, observed {}",
                    d.signal,
                    d.expected,
                    d.observed()
                )
            })
            .collect();
        let _ = write!(
            svg,
            r##"<a href="#{}" class="mark" aria-label="step {} on {}: {what}, see the evidence"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" class="{class}"><title>step {} on {}: {what}&#10;{}</title></rect></a>"##,
            row_id(c.step, &c.node, &c.signal),
            c.step,
            esc(&c.node),
            b.x0 + 1.0,
            y + 1.0,
            (b.x1 - b.x0 - 2.0).max(1.0),
            row_h - 2.0,
            c.step,
            esc(&c.node),
            esc(&lines.join("\n"))
        );
    }
}

fn draw_axis(svg: &mut String, scale: &Scale, height: f64) {
    let y = height - AXIS_H;
    let step = [
        5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
    ]
    .into_iter()
    .find(|s| scale.span / s <= 12.0)
    // Very long spans (or absurd ones, from a bad timestamp): still about a dozen ticks.
    .unwrap_or((scale.span / 12.0).ceil());
    let _ = write!(
        svg,
        r#"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="axis"/>"#,
        WIDTH - RIGHT
    );
    let mut s = 0.0;
    while s <= scale.span + 0.001 {
        let Some(t) = chrono::TimeDelta::try_milliseconds((s * 1000.0) as i64)
            .and_then(|d| scale.t0.checked_add_signed(d))
        else {
            break;
        };
        let x = scale.x(t);
        let _ = write!(
            svg,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" class="grid"/><text x="{x:.1}" y="{:.1}" class="tick">{}</text>"#,
            y + 4.0,
            y + 16.0,
            t.format("%H:%M:%S")
        );
        s += step;
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axislabel">time (UTC)</text>"#,
        WIDTH - RIGHT,
        y + 30.0
    );
}

fn draw_boots(svg: &mut String, r: &RunResult, scale: &Scale, row_y: &dyn Fn(&str) -> Option<f64>) {
    let end_x = WIDTH - RIGHT;
    for b in &r.boots {
        let (Some(y), Some(x0)) = (row_y(&b.node), scale.xs(&b.started_at)) else {
            continue;
        };
        let x1 = b
            .ended_at
            .as_deref()
            .and_then(|e| scale.xs(e))
            .unwrap_or(end_x);
        let ready = match (
            &b.ready_at,
            b.ready_at
                .as_deref()
                .and_then(|t| text::seconds_between(&b.started_at, t)),
        ) {
            (Some(t), Some(s)) => format!("ready {} (+{})", clock(t), text::human_secs(s)),
            _ => "never ready".to_string(),
        };
        let ended = match (&b.ended_at, b.end.as_str()) {
            (Some(t), "stopped") => format!("stopped by repro {}", clock(t)),
            (Some(t), "exited") => format!(
                "exited {} (code {})",
                clock(t),
                b.exit_code.map(|c| c.to_string()).unwrap_or("?".into())
            ),
            (Some(t), other) => format!("{other} {}", clock(t)),
            (None, other) => other.to_string(),
        };
        let title = format!(
            "{} boot {} ({}): started {}, {}, {}&#10;log: {}",
            esc(&b.node),
            b.boot,
            if b.step == 0 {
                "cluster creation".to_string()
            } else {
                format!("step {}", b.step)
            },
            esc(&clock(&b.started_at)),
            esc(&ready),
            esc(&ended),
            esc(&b.log)
        );
        let w = (x1 - x0).max(2.0);
        let _ = write!(
            svg,
            r#"<g class="boot {}"><title>{title}</title><rect x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{BAR_H}" rx="3"/>"#,
            esc(b.end.as_str()),
            y + BAR_Y
        );
        if w > 54.0 {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="bootlabel">boot {}</text>"#,
                x0 + 6.0,
                y + BAR_Y + 14.0,
                b.boot
            );
        }
        svg.push_str("</g>");
        if let Some(x) = b.ready_at.as_deref().and_then(|t| scale.xs(t)) {
            let cy = y + BAR_Y + BAR_H / 2.0;
            let _ = write!(
                svg,
                r#"<path d="M{x:.1} {:.1} l6 6 l-6 6 l-6 -6 z" class="ready"><title>{} boot {} {}</title></path>"#,
                cy - 6.0,
                esc(&b.node),
                b.boot,
                esc(&ready)
            );
        }
    }
}

/// Edits (orange squares) and restarts/starts (black triangles) above the bars.
fn draw_actions(
    svg: &mut String,
    r: &RunResult,
    scale: &Scale,
    row_y: &dyn Fn(&str) -> Option<f64>,
) {
    for s in &r.steps {
        for a in &s.actions {
            let Some(x) = scale.xs(&a.at) else { continue };
            for n in &a.nodes {
                let Some(y) = row_y(n) else { continue };
                let top = y + BAR_Y - 2.0;
                match a.kind.as_str() {
                    "edit" => {
                        let _ = write!(
                            svg,
                            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" class="edit"><title>step {}: edit {} on {} at {}</title></rect>"#,
                            x - 4.0,
                            top - 8.0,
                            s.index,
                            esc(&a.files.join(", ")),
                            esc(n),
                            esc(&clock(&a.at))
                        );
                    }
                    kind => {
                        let _ = write!(
                            svg,
                            r#"<path d="M{:.1} {:.1} h10 l-5 8 z" class="restart"><title>step {}: {} {} at {}</title></path>"#,
                            x - 5.0,
                            top - 8.0,
                            s.index,
                            esc(kind),
                            esc(n),
                            esc(&clock(&a.at))
                        );
                    }
                }
            }
        }
    }
}

/// One dot per observation in the signal's lane: at its evidence time when that falls in the
/// step, else at the end of the step with a dotted link back to the (earlier) evidence.
fn draw_signals(
    svg: &mut String,
    r: &RunResult,
    all: &[Case<'_>],
    bands: &[Band],
    scale: &Scale,
    row_y: &dyn Fn(&str) -> Option<f64>,
    signals: &[String],
) {
    for s in &r.steps {
        let Some(band) = bands.iter().find(|b| b.index == s.index) else {
            continue;
        };
        for o in &s.observations {
            let (Some(y), Some(lane)) =
                (row_y(&o.node), signals.iter().position(|x| *x == o.signal))
            else {
                continue;
            };
            let ly = y + LANE0 + lane as f64 * LANE_H;
            let case = all
                .iter()
                .find(|c| c.step == s.index && c.node == o.node && c.signal == o.signal);
            let (class, colour) = match case.map(|c| c.outcome) {
                Some(Outcome::Pass) => ("ok", GREEN),
                Some(Outcome::Fail) => ("differs", RED),
                Some(_) => ("undecided", GREY),
                // Observed without an expectation: informative only.
                None => ("info", GREY),
            };
            let ev_x = o
                .evidence
                .iter()
                .find_map(|e| e.time.as_deref())
                .and_then(|t| scale.xs(t));
            let x = match ev_x {
                Some(x) if x >= band.x0 && x <= band.x1 => x,
                _ => band.x1 - 10.0,
            };
            if let Some(ex) = ev_x.filter(|ex| (ex - x).abs() > 1.0) {
                let _ = write!(
                    svg,
                    r#"<line x1="{ex:.1}" y1="{ly:.1}" x2="{x:.1}" y2="{ly:.1}" class="link" stroke="{colour}"/><circle cx="{ex:.1}" cy="{ly:.1}" r="2.5" fill="{colour}"/>"#
                );
            }
            let mut title = format!(
                "step {} · {} boot {} · {}&#10;",
                s.index,
                esc(&o.node),
                o.boot,
                esc(&o.signal)
            );
            match &o.expected {
                Some(e) => {
                    let _ = write!(
                        title,
                        "expected {}, observed {}",
                        esc(e.as_str()),
                        esc(o.observed.as_str())
                    );
                }
                None => {
                    let _ = write!(title, "observed {}", esc(o.observed.as_str()));
                }
            }
            if let Some(b) = o.bug.as_ref().filter(|b| Some(*b) != o.expected.as_ref()) {
                let _ = write!(title, " (the bug: {})", esc(b.as_str()));
            }
            let _ = write!(title, "&#10;{}", esc(&o.reason));
            for e in &o.evidence {
                let _ = write!(
                    title,
                    "&#10;{} {}",
                    esc(&e.time.as_deref().map(clock).unwrap_or_default()),
                    esc(&shorten(&e.text, 300))
                );
            }
            // A link to the observation's row: evidence by click, tap or keyboard, not only hover.
            let _ = write!(
                svg,
                r##"<a href="#{}" class="mark" aria-label="step {} {} {}: {}, see its evidence"><g class="sig {class}"><title>{title}</title><circle cx="{x:.1}" cy="{ly:.1}" r="6.5" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="siglabel" fill="{colour}">{}</text></g></a>"##,
                row_id(s.index, &o.node, &o.signal),
                s.index,
                esc(&o.node),
                esc(&o.signal),
                esc(o.observed.as_str()),
                x + 9.0,
                ly + 4.0,
                esc(o.observed.as_str())
            );
        }
    }
}

const CSS: &str = r#"
body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;margin:24px;background:#fff}
h1{font-size:20px;margin:0 0 4px}
.sub{color:#59636e;margin:0 0 12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:13px;color:#fff;vertical-align:2px}
.badge.reproduced{background:#cf222e}.badge.fixed{background:#1a7f37}.badge.inconclusive,.badge.none{background:#9a6700}
.warn{border:1px solid #d4a72c;background:#fff8c5;padding:8px 12px;border-radius:6px;margin:8px 0 12px}
.err{border:1px solid #cf222e;background:#ffebe9;padding:8px 12px;border-radius:6px;margin:8px 0 12px}
svg text{font-family:inherit}
.step{font-size:12px;font-weight:600;fill:#1f2328}.stepname{font-size:11px;fill:#59636e}
.stepline{stroke:#57606a;stroke-width:1;stroke-dasharray:4 3}
.rowline{stroke:#d0d7de}.laneline{stroke:#eaeef2}.grid{stroke:#eaeef2}.axis{stroke:#57606a}
.tick{font-size:10px;fill:#59636e;text-anchor:middle}.axislabel{font-size:10px;fill:#59636e;text-anchor:end}
.node{font-size:13px;font-weight:600}.role{font-size:11px;fill:#59636e}.lane{font-size:10px;fill:#59636e;text-anchor:end}
.boot rect{fill:#54aeff;stroke:#0969da}.boot.stopped rect{fill:#b6e3ff;stroke:#0969da}
.boot.exited rect{fill:#ff8182;stroke:#cf222e}.boot.timeout rect{fill:#ffd8b5;stroke:#bc4c00}
.bootlabel{font-size:11px;fill:#0a3069;pointer-events:none}
.ready{fill:#1a7f37;stroke:#fff;stroke-width:1.5}
.edit{fill:#bc4c00}.restart{fill:#1f2328}
.bad{fill:#cf222e;fill-opacity:.10;stroke:#cf222e;stroke-width:1.5}
.missing{fill:#d4a72c;fill-opacity:.12;stroke:#bf8700;stroke-width:1.5;stroke-dasharray:5 3}
.sig circle{stroke:#fff;stroke-width:1.5}.siglabel{font-size:11px;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
.link{stroke-width:1;stroke-dasharray:2 2}
g.sig:hover circle,g.boot:hover rect,.ready:hover,.restart:hover,.edit:hover{stroke:#1f2328;stroke-width:2.5}
a.mark{cursor:pointer}a.mark:focus{outline:none}a.mark:focus circle,a.mark:focus rect{stroke:#0969da;stroke-width:3}
table tr:target td{background:#ddf4ff;outline:2px solid #0969da}
ol.steps{margin:4px 0 12px;padding-left:0;list-style:none;max-width:100%}ol.steps li{overflow-wrap:anywhere;margin:2px 0}
ol.steps b{white-space:nowrap}
details.full summary{cursor:pointer}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:10px 0 18px;color:#59636e;font-size:13px;align-items:center}
.legend svg{vertical-align:middle;margin-right:4px}
table{border-collapse:collapse;width:100%;font-size:13px;margin-bottom:8px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
tr.differs td{background:#ffebe9}tr.undecided td,tr.notrun td{background:#fff8c5}
td:nth-child(-n+6){white-space:nowrap}
td.ev{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
h2{font-size:16px;margin:22px 0 8px}
"#;

fn page(r: &RunResult, all: &[Case<'_>], svg: &str) -> String {
    let verdict = r.verdict.as_ref().map(|v| v.outcome);
    // `none` is the badge's class for a run without a verdict.
    let outcome = verdict.map_or("none", |o| o.as_str());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} on {} {} — {} (run {})</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&r.check.name),
        r.distribution.name(),
        esc(&r.k3s.version),
        esc(outcome),
        esc(&r.run_id)
    );
    let _ = writeln!(
        h,
        r#"<h1>{} on {} {} <span class="badge {}">{}</span></h1>"#,
        esc(&r.check.name),
        r.distribution.name(),
        esc(&r.k3s.version),
        esc(outcome),
        esc(verdict.map_or("no verdict", |o| o.as_str()))
    );
    let _ = writeln!(
        h,
        r#"<p class="sub">{} · image <code>{}</code> · run <code>{}</code> · {} · expected outcome: {}</p>"#,
        esc(&r.check.summary),
        esc(&r.k3s.image),
        esc(&r.run_id),
        esc(&run_span(r)),
        esc(r.expect.as_str())
    );
    if r.k3s.stand_in {
        let name = r.distribution.name();
        let _ = writeln!(
            h,
            r#"<div class="warn"><b>Stand-in, not real {name}:</b> this run used repro's {name} stand-in image <code>{}</code>. Confirm on <code>{}</code> before reporting upstream.</div>"#,
            esc(&r.k3s.image),
            esc(r.distribution.facts().image_repository)
        );
    }
    if let Some(v) = &r.verdict {
        let _ = writeln!(h, "<p><b>Verdict:</b> {}</p>", esc(&v.reason));
    }
    if let Some(e) = &r.error {
        let _ = writeln!(
            h,
            r#"<div class="err"><b>The run stopped early:</b> {}</div>"#,
            esc(e)
        );
    }
    step_list(&mut h, r);
    h.push_str(svg);
    h.push('\n');
    h.push_str(LEGEND);
    observations_table(&mut h, all);
    h.push_str("</body>\n</html>\n");
    h
}

const LEGEND: &str = concat!(
    r#"<div class="legend">"#,
    r##"<span><svg width="28" height="14"><rect x="1" y="2" width="26" height="10" rx="2" fill="#b6e3ff" stroke="#0969da"/></svg>boot (stopped by repro)</span>"##,
    r##"<span><svg width="28" height="14"><rect x="1" y="2" width="26" height="10" rx="2" fill="#54aeff" stroke="#0969da"/></svg>boot running until teardown</span>"##,
    r##"<span><svg width="28" height="14"><rect x="1" y="2" width="26" height="10" rx="2" fill="#ff8182" stroke="#cf222e"/></svg>boot exited on its own</span>"##,
    r##"<span><svg width="14" height="14"><path d="M7 1 l6 6 l-6 6 l-6 -6 z" fill="#1a7f37"/></svg>ready</span>"##,
    r##"<span><svg width="12" height="10"><path d="M1 1 h10 l-5 8 z" fill="#1f2328"/></svg>restart / start</span>"##,
    r##"<span><svg width="10" height="10"><rect x="1" y="1" width="8" height="8" fill="#bc4c00"/></svg>config edit</span>"##,
    r##"<span><svg width="14" height="14"><circle cx="7" cy="7" r="6" fill="#1a7f37"/></svg>signal as expected</span>"##,
    r##"<span><svg width="14" height="14"><circle cx="7" cy="7" r="6" fill="#cf222e"/></svg>signal differs from expected</span>"##,
    r##"<span><svg width="28" height="14"><rect x="1" y="1" width="26" height="12" fill="#cf222e" fill-opacity=".1" stroke="#cf222e"/></svg>step × node where observed ≠ expected</span>"##,
    r##"<span><svg width="28" height="14"><rect x="1" y="1" width="26" height="12" fill="#d4a72c" fill-opacity=".12" stroke="#bf8700" stroke-dasharray="5 3"/></svg>not observed (run stopped) or undecided</span>"##,
    r#"<span>Click, tap or Tab to any signal mark or red cell to jump to its evidence in the table; hovering shows it too.</span>"#,
    "</div>\n"
);

fn observations_table(h: &mut String, all: &[Case<'_>]) {
    h.push_str("<h2>Expected vs observed</h2>\n<table>\n<tr><th>Step</th><th>Node</th><th>Signal</th><th>Expected</th><th>Observed</th><th>With the bug</th><th>Evidence</th></tr>\n");
    for c in all {
        let class = match c.outcome {
            Outcome::Pass => "ok",
            Outcome::Fail => "differs",
            Outcome::Undecided => "undecided",
            Outcome::NotRun => "notrun",
        };
        let evidence = match c.obs {
            Some(o) => {
                let mut s = format!("boot {}: {}", o.boot, esc(&o.reason));
                for e in &o.evidence {
                    let when = esc(&e.time.as_deref().map(clock).unwrap_or_default());
                    let short = shorten(&e.text, 160);
                    // A long line opens in place (click, tap, Enter): no hover needed to read it.
                    if short == e.text {
                        let _ = write!(s, "<br>{when} {}", esc(&e.text));
                    } else {
                        let _ = write!(
                            s,
                            r#"<br><details class="full"><summary>{when} {}</summary>{}</details>"#,
                            esc(&short),
                            esc(&e.text)
                        );
                    }
                }
                s
            }
            None => "not observed".to_string(),
        };
        let _ = writeln!(
            h,
            r#"<tr class="{class}" id="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td class="ev">{evidence}</td></tr>"#,
            row_id(c.step, &c.node, &c.signal),
            c.step,
            esc(&c.node),
            esc(&c.signal),
            esc(c.expected.as_str()),
            esc(c.observed()),
            esc(c.bug.as_ref().map_or("—", |b| b.as_str()))
        );
    }
    h.push_str("</table>\n");
}

/// The id of an observation's table row (`obs-1-etcd-2-embedded-registry`): marks link to it.
fn row_id(step: usize, node: &str, signal: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("obs-{step}-{}-{}", clean(node), clean(signal))
}

/// Every step's full name, where HTML wraps it (the chart's band labels are necessarily short).
fn step_list(h: &mut String, r: &RunResult) {
    let mut names: Vec<(usize, &str)> = r
        .planned_steps
        .iter()
        .map(|p| (p.index, p.name.as_str()))
        .collect();
    for s in &r.steps {
        if !names.iter().any(|(i, _)| *i == s.index) {
            names.push((s.index, s.name.as_str()));
        }
    }
    names.sort_by_key(|(i, _)| *i);
    if names.is_empty() {
        return;
    }
    h.push_str("<ol class=\"steps\">\n");
    for (i, name) in names {
        let span = r
            .steps
            .iter()
            .find(|s| s.index == i)
            .map(|s| {
                let end = s
                    .finished_at
                    .as_deref()
                    .map(clock)
                    .unwrap_or_else(|| "…".into());
                format!(
                    " <span class=\"sub\">({}–{})</span>",
                    esc(&clock(&s.started_at)),
                    esc(&end)
                )
            })
            .unwrap_or_else(|| " <span class=\"sub\">(not reached)</span>".to_string());
        let _ = writeln!(
            h,
            r#"<li id="step-{i}"><b>Step {i}</b> {}{span}</li>"#,
            esc(name)
        );
    }
    h.push_str("</ol>\n");
}

/// `2026-11-30 09:00:00 → 09:03:27 UTC`.
pub(crate) fn run_span(r: &RunResult) -> String {
    let start = text::time(&r.started_at)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| r.started_at.clone());
    let end = r
        .finished_at
        .as_deref()
        .map(clock)
        .unwrap_or_else(|| "(did not finish)".into());
    format!("{start} → {end} UTC")
}

#[cfg(test)]
mod hostile_tests {
    use super::*;
    use serde_json::Value;

    /// Markup a hostile result.json might carry, in every shape a page could execute.
    const PAYLOAD: &str = "x</title><script>alert(1)</script><img src=x onerror=alert(2)>\
        <a href=\"javascript:alert(3)\">j</a><!-- \u{2028}\u{2029}' \" &amp;";

    fn fixture() -> Value {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/run-etcd-split-buggy/result.json"
        ))
        .expect("fixture");
        serde_json::from_str(&text).expect("fixture JSON")
    }

    /// Paths of every string leaf.
    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            Value::String(_) => out.push(path.clone()),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    path.push(i.to_string());
                    leaves(x, path, out);
                    path.pop();
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    path.push(k.clone());
                    leaves(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn at<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
        path.iter().fold(v, |v, k| match v {
            Value::Array(a) => &mut a[k.parse::<usize>().expect("index")],
            Value::Object(m) => m.get_mut(k).expect("key"),
            _ => unreachable!("a leaf has no children"),
        })
    }

    fn is_time(path: &[String]) -> bool {
        path.last()
            .is_some_and(|k| k == "at" || k == "time" || k.ends_with("_at"))
    }

    /// The fixture with the payload in every string field that still loads as a result (enums
    /// such as `actions[].kind` and `boots[].end` refuse anything else). Returns the result and
    /// how many fields took the payload.
    fn hostile(times_too: bool) -> (RunResult, usize) {
        let mut v = fixture();
        let mut paths = Vec::new();
        leaves(&v, &mut Vec::new(), &mut paths);
        let mut taken = 0;
        for p in paths.iter().filter(|p| times_too || !is_time(p)) {
            let old = std::mem::replace(at(&mut v, p), Value::String(PAYLOAD.into()));
            if serde_json::from_value::<RunResult>(v.clone()).is_ok() {
                taken += 1;
            } else {
                *at(&mut v, p) = old;
            }
        }
        (serde_json::from_value(v).expect("loads"), taken)
    }

    /// Every tag of the page: data is escaped, so a `<` only opens markup of our own.
    fn tags(page: &str) -> Vec<String> {
        page.split('<')
            .skip(1)
            .map(|t| t.split('>').next().unwrap_or("").to_lowercase())
            .collect()
    }

    /// No tag, attribute or URL of the page comes from data. Data can only be text: outside
    /// quoted attribute values (where `"` is escaped), no handler or script URL may appear, and
    /// every link points at a row of the page itself.
    fn assert_inert(page: &str) {
        for t in tags(page) {
            for bad in ["script", "img", "iframe", "!--", "a href=\"javascript"] {
                assert!(!t.starts_with(bad), "a tag from data: <{t}>");
            }
            let parts: Vec<&str> = t.split('"').collect();
            let outside: String = parts.iter().step_by(2).copied().collect();
            assert!(!outside.contains("onerror"), "a handler from data: <{t}>");
            assert!(
                !outside.contains("javascript:"),
                "a script URL from data: <{t}>"
            );
            for (i, p) in parts.iter().enumerate().step_by(2) {
                if p.ends_with("href=") {
                    let url = parts.get(i + 1).copied().unwrap_or("");
                    assert!(url.starts_with('#'), "a link out of the page: <{t}>");
                }
            }
        }
        assert!(!page.contains("<script"));
        assert!(!page.contains("<!--"));
    }

    #[test]
    fn hostile_values_in_every_field_stay_text() {
        for times_too in [false, true] {
            let (r, taken) = hostile(times_too);
            assert!(taken > 100, "only {taken} fields took the payload");
            let page = render(&r);
            assert_inert(&page);
            // The payload did reach the page, escaped: the test sees what it guards.
            let shown = page
                .matches("&lt;script&gt;alert(1)&lt;/script&gt;")
                .count();
            assert!(
                shown > 20,
                "payload shown {shown} times (times too: {times_too})"
            );
        }
    }

    /// Unparsable times are printed as written (`clock` gives them back): escaped too.
    #[test]
    fn unparsable_times_are_escaped() {
        let (r, _) = hostile(true);
        assert!(text::time(&r.steps[0].actions[0].at).is_none());
        let page = render(&r);
        assert_inert(&page);
    }
}
