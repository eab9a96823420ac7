//! Issue #38's power and false alarms of `repro explore`, measured as Sieve and Acto measure
//! theirs: one campaign per planted bug of `distro::plant::CATALOGUE` (the stand-in with that
//! bug, on a release it plays as fixed) and one on the clean stand-in per distribution, each
//! with explore's DEFAULT keys, DEFAULT ordering and DEFAULT budget. A planted campaign stops
//! at its first minimal confirmed finding (`--stop-at-first-minimal`: the sequences and their
//! order unchanged, only the end earlier); a clean one runs to its budget, and every defect it
//! reports is a false alarm. Every figure comes from the campaign's own files (campaign.json,
//! findings.json).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{anyhow, Result};
use distro::plant::{self, Entry};
use serde_json::{json, Value};

use crate::stats::round;
use crate::{loadavg, measured, Ctx};

/// One campaign of the table: a planted bug (or none) on a topology at a fixed release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    /// `None`: the clean stand-in (its defects are false alarms).
    pub(crate) plant: Option<&'static str>,
    pub(crate) topology: &'static str,
    pub(crate) version: &'static str,
    /// The server the planted node joins on this topology (`taken-from-<joined>`).
    pub(crate) joined: &'static str,
}

const K3S: (&str, &str) = ("etcd-split", "v1.33.5+k3s1");
const RKE2: (&str, &str) = ("rke2-8465", "v1.32.9+rke2r1");

/// Every planted bug on k3s, the #12753-shaped one on RKE2 too, then both clean builds.
pub(crate) fn rows() -> Vec<Row> {
    let row = |plant, (topology, version): (&'static str, &'static str)| Row {
        plant,
        topology,
        version,
        joined: "etcd-1",
    };
    let mut out: Vec<Row> = (plant::CATALOGUE.iter())
        .map(|e| row(Some(e.name), K3S))
        .collect();
    out.push(row(Some(plant::CATALOGUE[0].name), RKE2));
    out.push(row(None, K3S));
    out.push(row(None, RKE2));
    out
}

impl Row {
    /// `joined-metrics@etcd-split`, `clean@rke2-8465`: what `--rows` selects.
    pub(crate) fn id(&self) -> String {
        format!("{}@{}", self.plant.unwrap_or("clean"), self.topology)
    }

    fn entry(&self) -> Option<&'static Entry> {
        self.plant.and_then(plant::by_name)
    }

    /// The class a campaign should report for this row's bug.
    fn planted_class(&self) -> Option<String> {
        self.entry()
            .map(|e| e.class.replace("<joined>", self.joined))
    }
}

/// The rows `--rows` names (all when empty), or an error naming the ones there are.
pub(crate) fn select(names: &[String]) -> Result<Vec<Row>> {
    let all = rows();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter().copied().find(|r| r.id() == *n).ok_or_else(|| {
                let ids: Vec<String> = all.iter().map(Row::id).collect();
                anyhow!("--rows {n}: no such row (rows: {})", ids.join(", "))
            })
        })
        .collect()
}

/// Every selected row's campaign, as bench.json's `planted` section.
pub(crate) fn section(ctx: &Ctx, rows: &[Row]) -> Result<Value> {
    let mut out = Vec::new();
    for r in rows {
        out.push(campaign(ctx, r)?);
    }
    Ok(Value::Array(out))
}

/// One campaign with the default keys and budget, from a fresh results folder.
fn campaign(ctx: &Ctx, row: &Row) -> Result<Value> {
    let results = ctx.work.join(format!("planted-{}", row.id()));
    let _ = std::fs::remove_dir_all(&results);
    let mut c = ctx.repro_cmd();
    c.args([
        "explore",
        "--topology",
        row.topology,
        "--version",
        row.version,
    ])
    .args(["--sim", "--confirm", "1", "--results"])
    .arg(&results)
    .stdout(Stdio::null())
    .stderr(Stdio::from(std::fs::File::create(
        ctx.work.join(format!("planted-{}.log", row.id())),
    )?));
    match row.entry() {
        Some(e) => {
            c.args(["--sim-plant", e.name])
                .arg(format!("--stop-at-first-minimal={}", stop_at(e)));
        }
        // A clean campaign runs its whole budget, and only its defects are measured: with
        // `--jobs auto` its findings are those of the serial campaign (docs/explore.md, `--jobs`;
        // e2e `explore` same-findings test) in a fraction of the time. Planted rows stay serial:
        // their runs and minutes to the planted check are the serial campaign's.
        None => {
            c.args(["--jobs", "auto"]);
        }
    }
    let load_before = loadavg();
    eprintln!(
        "bench: explore {} on {}, load {load_before}",
        row.id(),
        row.version
    );
    let m = measured(&mut c)?;
    let dir = campaign_dir(&results);
    let read = |name: &str| -> Value {
        dir.as_ref()
            .and_then(|d| std::fs::read_to_string(d.join(name)).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    };
    let state = read("campaign.json");
    let mut x = figures(row, &state, &read("findings.json"), m.wall_s);
    if let (Some(d), Some(id)) = (&dir, x["class"].as_str().zip(x["key"].as_str())) {
        // The planted minimal check's own time: its file's, and the runs begun by then (a
        // campaign stops only after the whole batch of defects that sequence showed).
        let id = format!("{}/{}/", id.0, id.1);
        if let Some((_, m)) = (state["minimal"].as_object().into_iter().flatten())
            .find(|(k, _)| k.starts_with(&id) && x["found"] == json!(true))
        {
            if let Some((runs, s)) = written_after(d, m["check"].as_str().unwrap_or(""), &state) {
                x["runs_to_planted_minimal"] = json!(runs);
                x["minutes_to_planted_minimal"] = json!(round(s / 60.0, 1));
            }
        }
    }
    x["exit_code"] = json!(m.code);
    x["load_before"] = json!(load_before);
    x["load_after"] = json!(loadavg());
    eprintln!("bench: {}", table_row(&x));
    Ok(x)
}

/// Where a planted campaign stops: the first minimal finding of the planted key — of the
/// planted class too for a death, since the key a death names may also show a value defect
/// (a value class is what is measured: explore may name another cause for the planted key).
fn stop_at(e: &Entry) -> String {
    match e.class {
        "died" | "wrongly-refused" => format!("{}/{}", e.class, e.key),
        _ => e.key.to_string(),
    }
}

/// The runs begun, and the seconds from the campaign's start, when `check` was written.
fn written_after(dir: &Path, check: &str, state: &Value) -> Option<(usize, f64)> {
    let at = std::fs::metadata(dir.join(check)).ok()?.modified().ok()?;
    let start = chrono::DateTime::parse_from_rfc3339(state["started_at"].as_str()?).ok()?;
    let at_utc: chrono::DateTime<chrono::Utc> = at.into();
    let secs = (at_utc - start.with_timezone(&chrono::Utc)).num_milliseconds() as f64 / 1000.0;
    let runs = std::fs::read_dir(dir.join("runs"))
        .ok()?
        .flatten()
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t <= at)
        })
        .count();
    Some((runs, secs))
}

fn campaign_dir(results: &Path) -> Option<PathBuf> {
    std::fs::read_dir(results)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("campaign.json").is_file())
}

/// The figures of one row from its campaign.json and findings.json and the campaign's wall
/// time (pure). A planted campaign stops right after the planted key's minimal check, so its
/// runs and wall time are those to that check.
pub(crate) fn figures(row: &Row, state: &Value, findings: &Value, wall_s: f64) -> Value {
    let defects: Vec<&Value> = (findings["findings"].as_array().into_iter().flatten())
        .filter(|f| f["defect"].as_bool() == Some(true))
        .collect();
    let minimal: Vec<String> = (state["minimal"].as_object().into_iter().flatten())
        .map(|(id, _)| id.clone())
        .collect();
    // A finding id is class/key/role.
    let parts = |id: &str| {
        let mut it = id.splitn(3, '/');
        (
            it.next().unwrap_or("").to_string(),
            it.next().unwrap_or("").to_string(),
        )
    };
    let planted_class = row.planted_class();
    let planted_key = row.entry().map(|e| e.key);
    // The planted class and key's minimal finding, else the planted key's, else the first.
    let is = |id: &String, class: bool| {
        let (c, k) = parts(id);
        Some(k.as_str()) == planted_key && (!class || Some(c) == planted_class)
    };
    let reported = (minimal.iter().find(|id| is(id, true)))
        .or(minimal.iter().find(|id| is(id, false)))
        .or(minimal.first());
    let (class, key) = reported.map(|id| parts(id)).unzip();
    // Found: a minimal finding where the campaign stops (`stop_at`).
    let found = row.entry().map(|e| {
        let want = stop_at(e);
        (minimal.iter()).any(|id| {
            let (c, k) = parts(id);
            want == k || want == format!("{c}/{k}")
        })
    });
    let hit = |want: Option<&str>, got: &Option<String>| match (want, got) {
        (Some(w), Some(g)) => json!(w == g),
        _ => Value::Null,
    };
    json!({
        "row": row.id(),
        "plant": row.plant,
        "topology": row.topology,
        "version": row.version,
        "planted_class": planted_class,
        "planted_key": planted_key,
        "found": found,
        "class": class,
        "key": key,
        "class_is_planted": hit(planted_class.as_deref(), &class),
        "key_is_planted": hit(planted_key, &key),
        "minimal": minimal,
        "runs_to_planted_minimal": found.filter(|f| *f).map(|_| state["runs"].clone()),
        "minutes_to_planted_minimal": found.filter(|f| *f).map(|_| round(wall_s / 60.0, 1)),
        "runs_to_first_minimal": state["first_minimal_runs"],
        "runs": state["runs"],
        "wall_s": round(wall_s, 1),
        "sequences": state["sequences"].as_array().map(Vec::len),
        "budget_runs": state["budget_runs"],
        "defects": defects.len(),
        "defect_ids": defects.iter().map(|f| format!("{}/{}/{}", str_of(&f["class"]), str_of(&f["key"]), str_of(&f["role"]))).collect::<Vec<_>>(),
        "started_at": state["started_at"],
    })
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("?")
}

/// The table's header (docs/explore.md "Planted bugs").
pub(crate) const TABLE_HEAD: &str = "| planted bug | on | found | class reported (planted) | key reported (planted) | runs to its minimal check | minutes | runs in all | defects (clean: false alarms) |\n|---|---|---|---|---|---|---|---|---|\n";

/// One row of the table, from [`figures`].
pub(crate) fn table_row(x: &Value) -> String {
    let text = |v: &Value| match v {
        Value::Null => "—".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let judged = |got: &Value, want: &Value, ok: &Value| match ok.as_bool() {
        Some(true) => format!("{} (yes)", text(got)),
        Some(false) => format!("{} (no: {})", text(got), text(want)),
        None => text(got),
    };
    let found = match x["found"].as_bool() {
        Some(true) => "yes",
        Some(false) => "no",
        None => "clean",
    };
    format!(
        "| {} | {} {} | {found} | {} | {} | {} | {} | {} | {} |\n",
        x["plant"].as_str().unwrap_or("none (clean)"),
        text(&x["topology"]),
        text(&x["version"]),
        judged(&x["class"], &x["planted_class"], &x["class_is_planted"]),
        judged(&x["key"], &x["planted_key"], &x["key_is_planted"]),
        text(&x["runs_to_planted_minimal"]),
        text(&x["minutes_to_planted_minimal"]),
        text(&x["runs"]),
        text(&x["defects"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_row_is_judged_against_its_catalogue_entry() {
        let row = rows()[0];
        assert_eq!(row.id(), "joined-metrics@etcd-split");
        let state = json!({
            "runs": 6, "first_minimal_runs": 5, "first_minimal_after": 90.0, "budget_runs": 200,
            "sequences": [{}, {}],
            "minimal": {"taken-from-cp-1/supervisor-metrics/etcd": {"steps": 1}},
        });
        let findings = json!({"findings": [
            {"class": "taken-from-cp-1", "key": "supervisor-metrics", "role": "etcd", "defect": true},
            {"class": "unguarded-divergence", "key": "supervisor-metrics", "role": "etcd", "defect": false},
        ]});
        let x = figures(&row, &state, &findings, 90.0);
        assert_eq!(x["found"], json!(true));
        assert_eq!(x["class_is_planted"], json!(false));
        assert_eq!(x["key_is_planted"], json!(true));
        assert_eq!(x["minutes_to_planted_minimal"], json!(1.5));
        let line = table_row(&x);
        assert!(
            line.contains("taken-from-cp-1 (no: taken-from-etcd-1) | supervisor-metrics (yes) | 6 | 1.5 | 6 | 1 |"),
            "{line}"
        );
        // the clean build: found is not asked, its defects are the false alarms
        let clean = rows()
            .into_iter()
            .find(|r| r.plant.is_none())
            .expect("clean");
        let x = figures(
            &clean,
            &json!({"runs": 150}),
            &json!({"findings": []}),
            3000.0,
        );
        assert_eq!(x["found"], Value::Null);
        assert!(table_row(&x).starts_with("| none (clean) | etcd-split v1.33.5+k3s1 | clean |"));
        assert!(select(&["nope".into()]).is_err());
    }
}
