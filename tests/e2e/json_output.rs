//! `--format json` on `run` and `matrix` against real containers of the stand-in: stdout is one
//! JSON document a script can read (progress and tables stay on stderr), and it agrees with the
//! files the run wrote.

use std::path::PathBuf;

use crate::runs::{assert_no_leftovers, dirs, only_run_dir, read_json, Run};

#[test]
fn run_summary_as_json() {
    crate::docker::docker_ok();
    let (out, results) = Run::check("etcd-split")
        .sim()
        .version("v1.33.4+k3s1")
        .expect("reproduced")
        .args(["--format", "json"])
        .output();
    let v = out.json();
    assert_no_leftovers(v["run_id"].as_str().unwrap());
    out.code(0);
    assert_eq!(v["kind"], "repro-run-summary");
    assert_eq!(v["verdict"], "reproduced");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["stand_in"], true);
    let run_dir = PathBuf::from(v["results"].as_str().unwrap());
    assert_eq!(dirs(&results.path(), ""), std::slice::from_ref(&run_dir));
    let r = read_json(&run_dir.join("result.json"));
    assert_eq!(v["run_id"], r["run_id"]);
    let bug = v["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["judged"] == "bug" && o["step"].as_u64() != Some(3))
        .count();
    // Steps 1 and 2: etcd-2 and etcd-3 without the registry. Step 3 is `bug: any` (a buggy
    // joiner reads cp-1 or etcd-1 there), so its observations may go either way.
    assert_eq!(bug, 4, "{v:#}");
}

#[test]
fn matrix_summary_as_json() {
    crate::docker::docker_ok();
    let (out, results) = Run::command(["matrix", "--checks", "etcd-split"])
        .sim()
        .args(["--k3s-versions", "v1.33.5+k3s1", "--format", "json"])
        .output();
    let v = out.json();
    out.code(0);
    assert_eq!(v["kind"], "repro-matrix-summary");
    assert_eq!(v["totals"]["ok"], 1);
    assert_eq!(v["cells"][0]["verdict"], "fixed");
    assert_no_leftovers(v["cells"][0]["run_id"].as_str().unwrap());
    // The table still reaches a person, on stderr.
    out.stderr_has("K3S VERSION");
    let file = read_json(&only_run_dir(&results.path()).join("summary.json"));
    assert_eq!(file["cells"], v["cells"]);
}
