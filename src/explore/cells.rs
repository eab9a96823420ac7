//! A campaign run on many runners, brought back together (#39 point 3): the explore workflow's
//! cells each run some of the campaign's sequences (`--sequences … --no-minimise`) into a
//! folder of their own; the last job downloads them all under one folder and resumes it.
//! `--resume` of a folder with no campaign.json of its own but one per cell below it merges
//! the cells' campaign files into one: the same plan (topology, versions, keys, seed and
//! sequences, or it is refused), each sequence with the run a cell made of it (its folder
//! path now through the cell's), the counts summed. The merged campaign then goes on as any
//! resumed one: nothing it ran is run again, and its findings are minimised and confirmed.

use std::collections::BTreeMap;
use std::path::Path;

use super::{campaign_files, folder, read_state, write, State, CAMPAIGN_FILE, CHECKS_DIR};

/// The campaign of `dir`: its own campaign.json, or the merge of its cells' (written to
/// `dir/campaign.json`, so the folder is one campaign from then on).
pub(crate) fn campaign_of(dir: &Path) -> Result<State, String> {
    let own = dir.join(CAMPAIGN_FILE);
    if std::fs::symlink_metadata(&own).is_ok() {
        return read_state(&own);
    }
    let files = campaign_files(dir);
    if files.is_empty() {
        return Err(format!(
            "{}: no {CAMPAIGN_FILE} in it or its sub-folders: not a campaign folder",
            dir.display()
        ));
    }
    let mut cells = Vec::new();
    for f in &files {
        let cell = f.parent().unwrap_or(dir);
        let prefix = cell.strip_prefix(dir).map_err(|e| e.to_string())?;
        cells.push((prefix.display().to_string(), f.clone(), read_state(f)?));
    }
    let merged = merge(dir, &cells)?;
    let text = serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?;
    write(dir, CAMPAIGN_FILE, &text)?;
    Ok(merged)
}

/// The cells' campaigns as one (`cells`: each cell's folder relative to `dir`, its file, its
/// campaign). A minimal check a cell wrote is copied into the merged `checks/`.
fn merge(dir: &Path, cells: &[(String, std::path::PathBuf, State)]) -> Result<State, String> {
    let [(_, first_file, first), rest @ ..] = cells else {
        return Err(format!("{}: no cell to merge", dir.display()));
    };
    for (_, file, s) in rest {
        same_plan(first, first_file, s, file)?;
    }
    let mut m = first.clone();
    m.merged_cells = cells.iter().map(|(p, _, _)| p.clone()).collect();
    m.minimal = BTreeMap::new();
    m.causes = BTreeMap::new();
    (m.runs, m.judged, m.seconds) = (0, 0, 0.0);
    m.failed = BTreeMap::new();
    (
        m.first_minimal_after,
        m.first_minimal_runs,
        m.first_minimal_at,
    ) = (None, None, None);
    for r in &mut m.sequences {
        (r.run, r.seconds, r.error, r.cause) = (None, None, None, None);
    }
    for (prefix, _, s) in cells {
        m.runs += s.runs;
        m.judged += s.judged;
        m.seconds += s.seconds;
        for (c, n) in &s.failed {
            *m.failed.entry(*c).or_default() += n;
        }
        for (r, theirs) in m.sequences.iter_mut().zip(&s.sequences) {
            // A run beats an error (a cell may have retried); the first cell's run is kept.
            if r.run.is_none() && theirs.run.is_some() {
                r.run = theirs.run.as_ref().map(|run| format!("{prefix}/{run}"));
                r.seconds = theirs.seconds;
                (r.error, r.cause) = (None, None);
            } else if r.run.is_none() && r.error.is_none() && theirs.error.is_some() {
                (r.error, r.cause) = (theirs.error.clone(), theirs.cause);
            }
        }
        for (id, d) in &s.causes {
            let mut d = d.clone();
            for p in &mut d.probes {
                p.run = p.run.take().map(|run| format!("{prefix}/{run}"));
            }
            m.causes.entry(id.clone()).or_insert(d);
        }
        for (id, mm) in &s.minimal {
            if m.minimal.contains_key(id) {
                continue;
            }
            let text = folder::read_check(&dir.join(prefix), &mm.check)?;
            write(dir, &mm.check, &text)?;
            m.minimal.insert(id.clone(), mm.clone());
        }
    }
    folder::validate(&m, &dir.join(CAMPAIGN_FILE))?;
    debug_assert!(m.minimal.values().all(|x| x.check.starts_with(CHECKS_DIR)));
    Ok(m)
}

/// Whether `dir` is a campaign of cells: merged (its campaign.json names them) or still the
/// downloaded cells themselves (no campaign.json of its own, one below). Its sequences are the
/// cells' shares, so one no cell ran is a hole in the campaign, not the end of a budget.
pub(crate) fn of_cells(dir: &Path) -> bool {
    let own = dir.join(CAMPAIGN_FILE);
    if std::fs::symlink_metadata(&own).is_ok() {
        return read_state(&own).is_ok_and(|s| !s.merged_cells.is_empty());
    }
    !campaign_files(dir).is_empty()
}

/// The last line of a campaign of cells some of whose sequences no cell ran (a cell's job
/// failed or was cancelled): its findings cover only the sequences run, so it is not complete
/// and the command exits as for runs that failed (None when every sequence ran).
pub(crate) fn not_run_line(file: &super::findings::FindingsFile) -> Option<String> {
    (file.runs_not_run > 0).then(|| {
        format!(
            "{} sequences of the plan were not run (no cell ran them): the findings cover only the sequences the cells ran; `repro explore --resume <folder> --sequences <ids>` runs the rest",
            file.runs_not_run
        )
    })
}

/// Two cells belong to one campaign when they planned the same: the same topology, versions,
/// keys and seed, and the same sequences in the same order.
fn same_plan(a: &State, af: &Path, b: &State, bf: &Path) -> Result<(), String> {
    let differs = |what: &str| {
        Err(format!(
            "{} and {}: the cells planned different campaigns ({what} differ): merge only the cells of one `repro explore --emit github-matrix` plan",
            af.display(),
            bf.display()
        ))
    };
    if a.topology != b.topology {
        return differs("topologies");
    }
    if a.versions != b.versions {
        return differs("versions");
    }
    if a.keys != b.keys {
        return differs("keys");
    }
    if a.seed != b.seed {
        return differs("seeds");
    }
    let ids = |s: &State| -> Vec<(String, String)> {
        (s.sequences.iter())
            .map(|r| (r.sequence.id.clone(), r.version.clone()))
            .collect()
    };
    if ids(a) != ids(b)
        || a.sequences
            .iter()
            .zip(&b.sequences)
            .any(|(x, y)| x.sequence != y.sequence)
    {
        return differs("sequences");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::SeqRecord;
    use crate::run::FailCause;

    fn state(json: &str) -> State {
        serde_json::from_str(json).expect("a campaign")
    }

    /// A campaign of three sequences on one version, none run.
    fn planned() -> State {
        state(
            r#"{"schema_version":1,"name":"explore-x","topology":"etcd-split",
            "versions":["v1.33.4+k3s1"],"keys":["supervisor-metrics"],"seed":1,"confirm":2,
            "budget_runs":null,"budget_seconds":null,"sequences":[
            {"sequence":{"id":"s1","strategy":"order","steps":[]},"version":"v1.33.4+k3s1","shard":0},
            {"sequence":{"id":"s2","strategy":"order","steps":[]},"version":"v1.33.4+k3s1","shard":0},
            {"sequence":{"id":"s3","strategy":"order","steps":[]},"version":"v1.33.4+k3s1","shard":1}]}"#,
        )
    }

    fn ran(mut s: State, id: &str, run: &str) -> State {
        let r: &mut SeqRecord = (s.sequences.iter_mut())
            .find(|r| r.sequence.id == id)
            .expect("planned");
        r.run = Some(run.into());
        r.seconds = Some(10.0);
        s.runs += 1;
        s.judged += 1;
        s.seconds += 10.0;
        s
    }

    #[test]
    fn each_sequence_takes_the_run_a_cell_made_of_it_and_the_counts_add_up() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = ran(ran(planned(), "s1", "sequences/r1"), "s2", "sequences/r2");
        let mut b = ran(planned(), "s3", "sequences/r3");
        b.sequences[0].error = Some("engine".into());
        b.sequences[0].cause = Some(FailCause::Engine);
        b.failed.insert(FailCause::Engine, 1);
        let cells = vec![
            ("explore-0/c".to_string(), tmp.path().join("a"), a),
            ("explore-1/c".to_string(), tmp.path().join("b"), b),
        ];
        let m = merge(tmp.path(), &cells).expect("merged");
        let runs: Vec<Option<&str>> = m.sequences.iter().map(|r| r.run.as_deref()).collect();
        assert_eq!(
            runs,
            [
                Some("explore-0/c/sequences/r1"),
                Some("explore-0/c/sequences/r2"),
                Some("explore-1/c/sequences/r3")
            ]
        );
        // s1 ran in the first cell: the second cell's failure of it is not the merged record's
        assert!(m.sequences[0].error.is_none());
        assert_eq!((m.runs, m.judged, m.seconds), (3, 3, 30.0));
        assert_eq!(m.failed.get(&FailCause::Engine), Some(&1));
        assert_eq!(m.merged_cells, ["explore-0/c", "explore-1/c"]);
    }

    #[test]
    fn cells_of_different_plans_are_refused_naming_both_files() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut other = planned();
        other.seed = 2;
        let cells = vec![
            (
                "a".to_string(),
                tmp.path().join("a/campaign.json"),
                planned(),
            ),
            ("b".to_string(), tmp.path().join("b/campaign.json"), other),
        ];
        let e = merge(tmp.path(), &cells).expect_err("refused");
        assert!(
            e.contains("a/campaign.json") && e.contains("b/campaign.json"),
            "{e}"
        );
        assert!(e.contains("seeds differ"), "{e}");
    }

    #[test]
    fn a_folder_with_its_own_campaign_is_read_not_merged() {
        let tmp = tempfile::tempdir().expect("tmp");
        let text = serde_json::to_string(&planned()).expect("json");
        std::fs::write(tmp.path().join(CAMPAIGN_FILE), text).expect("write");
        let s = campaign_of(tmp.path()).expect("read");
        assert!(s.merged_cells.is_empty());
    }

    #[test]
    fn a_folder_without_any_campaign_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let e = campaign_of(tmp.path()).expect_err("refused");
        assert!(e.contains("not a campaign folder"), "{e}");
    }
}
