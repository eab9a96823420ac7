//! `repro explore` on real stand-in containers (#29), in one campaign to keep the suite short:
//! generation (the campaign's plan of sequences), the oracle (a taken-from finding on the buggy
//! release), confirmation on a fresh cluster, minimisation (cut to the step that showed it), the
//! written check (valid, `repro run` gives `fixed` on the fixed release) and `--recheck` with no
//! Docker engine giving the same findings.

use crate::repro::Repro;
use crate::runs::{assert_no_leftovers, dirs, read_json as json, read_result, Run};

#[test]
fn a_campaign_finds_confirms_minimises_and_writes_a_check_that_replays() {
    crate::docker::docker_ok();
    // o4 changes etcd-2 first (`repro explore --emit github-matrix` lists the ids): the one
    // sequence of the campaign this test runs, as a matrix cell would.
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", "embedded-registry"])
        .version("v1.33.4+k3s1")
        .sim()
        .args(["--sequences", "o4-embedded-registry", "--confirm", "1"])
        .output();
    out.code(0);
    let dir = results.only_run_dir();

    // Generation: the whole plan is recorded, reduced by symmetry (24 orders -> 12).
    let state = json(&dir.join("campaign.json"));
    let seqs = state["sequences"].as_array().unwrap();
    assert_eq!(seqs.len(), 12, "{state:#}");
    let o4 = seqs
        .iter()
        .find(|s| s["sequence"]["id"] == "o4-embedded-registry")
        .unwrap();
    assert_eq!(o4["sequence"]["steps"][0]["node"], "etcd-2");
    assert!(o4["run"].is_string(), "{o4:#}");
    assert!(
        seqs.iter().filter(|s| s["run"].is_string()).count() == 1,
        "only o4 ran"
    );

    // The distinguishing runs that decided the finding's cause (#38 point 5): etcd-2's value
    // is held by several servers and its own past.
    let state = json(&dir.join("campaign.json"));
    let probes = (state["causes"].as_object().into_iter().flatten())
        .flat_map(|(_, d)| d["probes"].as_array().unwrap().iter())
        .filter(|p| p["run"].is_string())
        .count() as u64;
    // Every run (the sequence, the distinguishing runs, the confirmation) is an ordinary,
    // schema-valid run that left nothing.
    let runs = dirs(&dir.join("runs"), "");
    assert_eq!(runs.len() as u64, 2 + probes, "{runs:?}");
    for r in &runs {
        let v = read_result(r);
        assert_no_leftovers(v["run_id"].as_str().unwrap());
        // its re-run line names the generated check by a path that exists (#42: it once named
        // a check of the catalog that does not exist)
        let rerun = v["rerun"].as_str().unwrap();
        let check = rerun.split_whitespace().nth(2).unwrap();
        assert!(
            rerun.starts_with("repro run /") && std::path::Path::new(check).is_file(),
            "{rerun}"
        );
    }

    // The oracle: etcd-2 took embedded-registry from another server; confirmed; minimal.
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    let list = findings["findings"].as_array().unwrap();
    let taken = list
        .iter()
        .find(|f| f["class"].as_str().unwrap().starts_with("taken-from-") && f["role"] == "etcd")
        .unwrap_or_else(|| panic!("no taken-from finding: {findings:#}"));
    assert_eq!(taken["key"], "embedded-registry");
    assert_eq!(taken["defect"], true);
    // a critical key: the #12753 class, told apart from a non-critical key's taken-from
    assert_eq!(taken["critical"], true);
    assert!(
        taken["label"].as_str().unwrap().contains("#12753 class"),
        "{taken:#}"
    );
    let min = &taken["minimal"];
    assert!(min["steps"].as_u64().unwrap() <= 3, "{min}");
    assert_eq!(
        (min["confirm_runs"].as_u64(), min["confirmed"].as_u64()),
        (Some(1), Some(1))
    );
    // the restarts of members with data that diverge from the init node: by design, not a defect
    assert!(list
        .iter()
        .any(|f| f["class"] == "unguarded-divergence" && f["defect"] == false));
    let md = std::fs::read_to_string(dir.join("findings.md")).unwrap();
    assert!(
        md.contains("taken-from-") && md.contains("```yaml") && md.contains("- kind: critical key"),
        "{md}"
    );
    // the campaign records what the first minimal finding cost (make bench reads it): the
    // sequence, the distinguishing runs and the confirmation (one step: nothing to cut)
    assert_eq!(
        (state["first_minimal_runs"].as_u64(), state["runs"].as_u64()),
        (Some(2 + probes), Some(2 + probes)),
        "{state:#}"
    );
    assert!(state["first_minimal_at"].is_string() && state["started_at"].is_string());

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure "), "{junit}");

    // Every minimal check the campaign wrote replays: valid, `reproduced` on the release where
    // it was found (its `bug:`), `fixed` on the fixed one (its `expect:`).
    let minimal: Vec<&str> = list
        .iter()
        .filter_map(|f| f["minimal"]["check"].as_str())
        .collect();
    assert!(!minimal.is_empty(), "{findings:#}");
    for m in minimal {
        let check = dir.join(m);
        let check_arg = check.to_str().unwrap();
        Repro::new().args(["validate", check_arg]).run().code(0);
        for (version, outcome) in [("v1.33.4+k3s1", "reproduced"), ("v1.33.5+k3s1", "fixed")] {
            let run = Run::check(check_arg)
                .sim()
                .version(version)
                .expect(outcome)
                .finish();
            run.out.code(0);
            assert_eq!(run.outcome(), outcome, "{m} on {version}");
        }
    }

    // --recheck with no engine: the same findings.
    let before = findings["findings"].clone();
    Repro::without_docker()
        .args(["explore", "--recheck"])
        .arg(&dir)
        .run()
        .code(0);
    assert_eq!(json(&dir.join("findings.json"))["findings"], before);
}

/// A campaign whose stand-in image cannot be built (a repository the engine refuses) stops at
/// its first run with the infrastructure exit, naming the cause — never "0 findings" and 0 — and
/// counts that run as failed, not judged, in every output; `--recheck` says the same.
#[test]
fn a_campaign_whose_image_cannot_be_built_stops_with_the_infrastructure_code() {
    crate::docker::docker_ok();
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", "embedded-registry"])
        .version("v1.33.4+k3s1")
        .sim()
        .env("REPRO_SIM_REPOSITORY", "Not//A/Repository")
        .output();
    out.code(3);
    assert!(
        out.stderr.contains("the campaign stopped") && out.stderr.contains("(image)"),
        "{out}"
    );
    assert!(
        !out.stdout.contains("0 findings") || out.stdout.contains("failed"),
        "{out}"
    );
    let dir = results.only_run_dir();
    let state = json(&dir.join("campaign.json"));
    assert_eq!(state["failed"]["image"], 1, "{state:#}");
    assert_eq!(state["judged"], 0, "{state:#}");
    let ran: Vec<_> = state["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["error"].is_null() || !s["run"].is_null())
        .collect();
    assert_eq!(
        ran.len(),
        1,
        "the campaign stops at its first run: {state:#}"
    );
    assert_eq!(ran[0]["cause"], "image");
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    assert_eq!(
        (
            &findings["runs"],
            &findings["runs_failed"]["image"],
            &findings["runs_not_run"]
        ),
        (
            &serde_json::json!(0),
            &serde_json::json!(1),
            &serde_json::json!(11)
        ),
        "{findings:#}"
    );
    let md = std::fs::read_to_string(dir.join("findings.md")).unwrap();
    assert!(
        md.contains("1 of 1 runs failed and were not judged (image 1)"),
        "{md}"
    );
    let again = Repro::without_docker()
        .args(["explore", "--recheck"])
        .arg(&dir)
        .run();
    again.code(3);
    assert!(
        again
            .stdout
            .contains("runs failed and were not judged (image 1)"),
        "{again}"
    );
}

/// The engine goes away between runs (a TCP proxy to it is cut once the first run is judged):
/// the campaign stops at once with the infrastructure exit naming the engine, keeps what ran,
/// and leaves nothing behind.
#[test]
fn a_campaign_whose_engine_goes_away_stops_with_the_infrastructure_code() {
    use crate::running::Running;
    use crate::tcp_proxy::{docker_socket, TcpProxy};
    crate::docker::docker_ok();
    let proxy = TcpProxy::start(&docker_socket()).unwrap();
    let results = tempfile::tempdir().unwrap();
    let mut cmd = crate::util::repro();
    cmd.args([
        "explore",
        "--topology",
        "etcd-split",
        "--keys",
        "embedded-registry",
    ])
    // Fresh clusters: with the engine gone the campaign cannot remove a kept baseline (it says
    // `repro clean --all`); what is tested here is the run's failure and cleanup.
    .args([
        "--version",
        "v1.33.5+k3s1",
        "--sim",
        "--no-restore",
        "--results",
    ])
    .arg(results.path())
    .env("DOCKER_HOST", format!("tcp://127.0.0.1:{}", proxy.port()));
    let mut p = Running::spawn(cmd);
    assert!(p.wait_line("[1/12]"), "{}", p.seen.join("\n"));
    proxy.cut();
    let (code, err) = p.finish();
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("the campaign stopped") && err.contains("(engine)"),
        "{err}"
    );
    let dir = crate::runs::only_run_dir(results.path());
    let state = json(&dir.join("campaign.json"));
    assert_eq!(state["failed"]["engine"], 1, "{state:#}");
    assert!(state["judged"].as_u64().unwrap() >= 1, "{state:#}");
    drop(proxy);
    for r in dirs(&dir.join("runs"), "") {
        assert_no_leftovers(read_result(&r)["run_id"].as_str().unwrap());
    }
}

/// One campaign on the stand-in with a planted bug (`--sim-plant`, distro::plant), one sequence
/// whose first step restarts the control-plane-only node with `key` changed: the finding of
/// `class`/`finding_key` is reported, minimised and confirmed, and its minimal check replays as
/// `reproduced` with `repro run … --sim --sim-plant <plant>` (and as `clean` without it).
fn planted_finding(plant: &str, key: &str, class: &str, finding_key: &str, clean: Option<&str>) {
    crate::docker::docker_ok();
    let sequence = format!("o10-{key}");
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", key])
        .version("v1.33.5+k3s1")
        .sim()
        .args([
            "--sim-plant",
            plant,
            "--sequences",
            &sequence,
            "--confirm",
            "1",
        ])
        .output();
    out.code(0);
    let dir = results.only_run_dir();
    let findings = json(&dir.join("findings.json"));
    let list = findings["findings"].as_array().unwrap();
    let f = list
        .iter()
        .find(|f| f["class"] == class && f["key"] == finding_key)
        .unwrap_or_else(|| panic!("no {class}/{finding_key} finding: {findings:#}"));
    assert_eq!(
        (&f["defect"], &f["role"]),
        (
            &serde_json::json!(true),
            &serde_json::json!("control-plane")
        ),
        "{f:#}"
    );
    let min = &f["minimal"];
    assert_eq!(min["confirmed"].as_u64(), Some(1), "{f:#}");
    let check = dir.join(min["check"].as_str().unwrap());
    let run = Run::check(check.to_str().unwrap())
        .sim()
        .version("v1.33.5+k3s1")
        .args(["--sim-plant", plant])
        .expect("reproduced")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced");
    // The same check on the clean stand-in: the plant, not the check, makes the finding.
    if let Some(verdict) = clean {
        let run = Run::check(check.to_str().unwrap())
            .sim()
            .version("v1.33.5+k3s1")
            .expect(verdict)
            .finish();
        run.out.code(0);
        assert_eq!(run.outcome(), verdict);
    }
}

/// A planted Go panic of the control-plane-only node (k3s #13533's shape) is a `died` finding
/// (key `panic`), and the same check on the clean stand-in is `fixed`: the plant, not the
/// check, makes the death.
#[test]
fn a_planted_panic_is_a_died_finding_whose_minimal_check_replays() {
    planted_finding(
        "control-plane-panic",
        "service-node-port-range",
        "died",
        "panic",
        Some("fixed"),
    );
}

/// A planted false refusal naming a key k3s lets servers disagree on (k3s #4768's shape) is a
/// `wrongly-refused` finding of that key.
#[test]
fn a_planted_false_refusal_is_a_wrongly_refused_finding_whose_minimal_check_replays() {
    planted_finding(
        "refused-kube-proxy",
        "disable-kube-proxy",
        "wrongly-refused",
        "disable-kube-proxy",
        None,
    );
}

/// The `run:` script of the explore workflow's step named `step` (#39: the workflow's own
/// commands are what the test runs, not a copy of them).
fn workflow_script(step: &str) -> String {
    let text = std::fs::read_to_string(crate::util::root().join(".github/workflows/explore.yml"))
        .expect("explore.yml");
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains(&format!("name: {step}")));
    assert!(lines.next().is_some(), "no step `{step}` in explore.yml");
    let mut lines = lines.skip_while(|l| l.trim() != "run: |");
    let run = lines.next().expect("the step's run: block");
    let indent = run.len() - run.trim_start().len() + 2;
    lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// #39 point 3: a campaign spread over runners ends with minimal confirmed checks. Two cells
/// of one plan run on the stand-in as the workflow's `run` job runs them (`--sequences …
/// --no-minimise`, each into its own artifact folder); then the workflow's `minimise` step, its
/// script read from explore.yml, resumes the downloaded cells as one campaign: the finding the
/// cells' runs show is minimised and confirmed, the checks land in `cells/checks/` and the job
/// summary, and nothing a cell ran is run again.
#[test]
fn the_workflows_last_job_turns_cells_into_minimal_confirmed_checks() {
    crate::docker::docker_ok();
    let work = tempfile::tempdir().unwrap();
    let cells = work.path().join("cells");
    for (i, seq) in ["o1-embedded-registry", "o4-embedded-registry"]
        .iter()
        .enumerate()
    {
        Repro::new()
            .args([
                "explore",
                "--topology",
                "etcd-split",
                "--version",
                "v1.33.4+k3s1",
            ])
            .args([
                "--keys",
                "embedded-registry",
                "--seed",
                "1",
                "--sequences",
                seq,
            ])
            .args(["--no-minimise", "--sim", "--results"])
            .arg(cells.join(format!("explore-{i}")))
            .run()
            .code(0);
    }
    // bin/repro as the workflow downloads it: this build, on the stand-in.
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let wrapper = format!(
        "#!/bin/sh\nexec env REPRO_ROOT='{}' '{}' \"$@\" --sim\n",
        crate::util::root().display(),
        env!("CARGO_BIN_EXE_repro")
    );
    std::fs::write(bin.join("repro"), wrapper).unwrap();
    let summary = work.path().join("summary.md");
    let script = workflow_script("repro explore --resume over every cell");
    let status = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(work.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("NO_COLOR", "1")
        .env_remove("REPRO_RESULTS")
        .env_remove("REPRO_SIM_SEED")
        .status()
        .unwrap();
    // The two cells ran two sequences of the plan: the merged campaign says the others were
    // run by no cell and exits 3 (a campaign with runs not run is never a clean 0), after it
    // has minimised, confirmed and written what the cells found.
    assert_eq!(status.code(), Some(3), "{script}");

    let state = json(&cells.join("campaign.json"));
    assert_eq!(
        state["merged_cells"].as_array().unwrap().len(),
        2,
        "{state:#}"
    );
    // the cells' runs are the campaign's; no sequence ran again, none the cells left out ran
    let seqs = state["sequences"].as_array().unwrap();
    let ran: Vec<&str> = seqs.iter().filter_map(|s| s["run"].as_str()).collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(ran.iter().all(|r| r.starts_with("explore-")), "{ran:?}");
    assert!(!cells.join("sequences").exists(), "a sequence ran again");
    let findings = json(&cells.join("findings.json"));
    let minimal: Vec<&str> = (findings["findings"].as_array().unwrap().iter())
        .filter(|f| f["defect"] == true)
        .filter_map(|f| f["minimal"]["check"].as_str())
        .collect();
    assert!(!minimal.is_empty(), "no minimal check: {findings:#}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("```yaml"),
        "the job summary lists the checks: {md}"
    );
    for m in minimal {
        assert!(m.starts_with("checks/"), "{m}");
        Repro::new()
            .args(["validate"])
            .arg(cells.join(m))
            .run()
            .code(0);
    }
    for r in dirs(&cells.join("runs"), "") {
        assert_no_leftovers(read_result(&r)["run_id"].as_str().unwrap());
    }
}

/// #38 point 5, the cause: a planted #12753-shaped bug (etcd-2 takes supervisor-metrics from
/// etcd-1, the server it joined) shows a value that etcd-1, etcd-3, cp-1 and etcd-2's own past
/// all hold (the run that found it cannot tell them apart by itself). Explore runs
/// one distinguishing sequence per candidate (the candidate alone holding the value, etcd-2
/// restarted again) and reports the cause that explains it — `taken-from-etcd-1` — with the
/// runs that decided it, in findings.json, findings.md and campaign.json; the minimal check is
/// that finding's and replays.
#[test]
fn a_planted_joined_server_bug_is_named_by_its_distinguishing_runs() {
    crate::docker::docker_ok();
    // o4 changes etcd-2 first, while etcd-1 still runs the old value.
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", "supervisor-metrics"])
        .version("v1.33.5+k3s1")
        .sim()
        .args(["--sim-plant", "joined-metrics"])
        .args(["--sequences", "o4-supervisor-metrics", "--confirm", "1"])
        .output();
    out.code(0);
    let dir = results.only_run_dir();
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    let list = findings["findings"].as_array().unwrap();
    let f = (list.iter())
        .find(|f| f["key"] == "supervisor-metrics" && f["role"] == "etcd" && f["defect"] == true)
        .unwrap_or_else(|| panic!("no supervisor-metrics defect: {findings:#}"));
    assert_eq!(f["class"], "taken-from-etcd-1", "{f:#}");
    // No defect of the key is left under another cause.
    assert!(
        list.iter()
            .filter(|g| g["key"] == "supervisor-metrics" && g["defect"] == true)
            .all(|g| g["class"] == "taken-from-etcd-1"),
        "{findings:#}"
    );
    // The runs that decided it: etcd-2's stale past ruled out, etcd-1 alone explains it.
    let cause = &f["cause"];
    assert_eq!(cause["class"], "taken-from-etcd-1", "{f:#}");
    let probes = cause["probes"].as_array().unwrap();
    let decided = probes.last().unwrap();
    assert_eq!(
        (&decided["cause"], &decided["explains"]),
        (
            &serde_json::json!("taken-from-etcd-1"),
            &serde_json::json!(true)
        ),
        "{cause:#}"
    );
    for p in probes {
        if let Some(run) = p["run"].as_str() {
            assert!(dir.join(run).join("result.json").is_file(), "{p:#}");
        }
    }
    assert!(
        probes
            .iter()
            .any(|p| p["cause"] == "stale" && p["explains"] == false),
        "{cause:#}"
    );
    let state = json(&dir.join("campaign.json"));
    assert!(
        state["causes"]
            .as_object()
            .is_some_and(|c| c.values().any(|d| d["class"] == "taken-from-etcd-1")),
        "{state:#}"
    );
    let md = std::fs::read_to_string(dir.join("findings.md")).unwrap();
    assert!(
        md.contains("- cause: taken-from-etcd-1 (the run that found it named"),
        "{md}"
    );
    // The minimal check is the decided finding's, and it replays with the plant.
    let min = &f["minimal"];
    assert_eq!(min["confirmed"].as_u64(), Some(1), "{f:#}");
    let check = dir.join(min["check"].as_str().unwrap());
    assert!(
        check.to_str().unwrap().contains("taken-from-etcd-1"),
        "{check:?}"
    );
    let run = Run::check(check.to_str().unwrap())
        .sim()
        .version("v1.33.5+k3s1")
        .args(["--sim-plant", "joined-metrics"])
        .expect("reproduced")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced");
}

/// What a campaign found, without what differs between two campaigns of the same seed (run ids
/// and folders, times): each finding's class, key, role, run count and evidence count, its
/// minimal check's summary and the runs ddmin needed; the sequences run or failed; the minimal
/// checks' text. Every run under it left nothing in the engine.
fn findings_content(dir: &std::path::Path) -> serde_json::Value {
    let findings = json(&dir.join("findings.json"));
    let list: Vec<serde_json::Value> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            serde_json::json!({
                "class": f["class"], "key": f["key"], "role": f["role"], "runs": f["runs"],
                "evidence": f["evidence"].as_array().map(Vec::len),
                "minimal": f["minimal"],
            })
        })
        .collect();
    let state = json(&dir.join("campaign.json"));
    let seqs: Vec<serde_json::Value> = state["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::json!([s["sequence"]["id"], s["run"].is_string(), s["cause"]]))
        .collect();
    let mut checks = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir.join("checks"))
        .into_iter()
        .flatten()
        .flatten()
    {
        checks.insert(
            e.file_name().to_string_lossy().into_owned(),
            std::fs::read_to_string(e.path()).unwrap(),
        );
    }
    for r in dirs(&dir.join("runs"), "") {
        assert_no_leftovers(read_result(&r)["run_id"].as_str().unwrap());
    }
    serde_json::json!({
        "findings": list, "runs": findings["runs"], "sequences": seqs, "checks": checks,
        "minimal": state["minimal"], "judged": state["judged"],
    })
}

/// A campaign of a few sequences (those that change etcd-2 and etcd-3 first, on which the
/// minimisation has steps to cut) at `--jobs`, its folder.
fn small_campaign(jobs: &str) -> (crate::repro::Output, crate::runs::Results) {
    Run::command(["explore", "--topology", "etcd-split"])
        .args(["--keys", "embedded-registry"])
        .version("v1.33.4+k3s1")
        .sim()
        .args([
            "--sequences",
            "o1-embedded-registry,o4-embedded-registry,o7-embedded-registry",
        ])
        .args([
            "--confirm",
            "2",
            "--seed",
            "7",
            "--budget",
            "runs=60",
            "--jobs",
            jobs,
        ])
        .output()
}

/// #39: `--jobs 3` runs sequences, ddmin candidates and confirmations at once, each on its own
/// cluster and network, and finds what the serial campaign of the same seed finds: the same
/// findings, minimal checks (word for word) and runs judged.
#[test]
fn a_campaign_with_jobs_finds_what_the_serial_one_finds() {
    crate::docker::docker_ok();
    let (serial_out, serial) = small_campaign("1");
    serial_out.code(0);
    let (jobs_out, jobs) = small_campaign("3");
    jobs_out.code(0);
    assert!(
        jobs_out.stderr.contains("3 runs at once") && jobs_out.stderr.contains("slots running"),
        "{jobs_out}"
    );
    let (a, b) = (
        findings_content(&serial.only_run_dir()),
        findings_content(&jobs.only_run_dir()),
    );
    assert!(
        a["minimal"].as_object().is_some_and(|m| !m.is_empty()),
        "the serial campaign minimised a finding: {a:#}"
    );
    assert_eq!(a, b, "serial (left) and --jobs 3 (right)");
}

/// #39: two campaigns started at once on one engine (each with runs at once) both finish: their
/// runs take different subnets and names, the stand-in image is shared, and nothing labelled
/// with any of their runs is left.
#[test]
fn two_campaigns_at_once_on_one_engine_do_not_collide() {
    crate::docker::docker_ok();
    let start = |seqs: &str| {
        Run::command(["explore", "--topology", "etcd-split"])
            .args(["--keys", "embedded-registry", "--no-minimise"])
            .version("v1.33.4+k3s1")
            .sim()
            .args(["--sequences", seqs, "--jobs", "2"])
            .spawn()
    };
    let (a, ra) = start("o1-embedded-registry,o2-embedded-registry");
    let (b, rb) = start("o3-embedded-registry,o4-embedded-registry");
    for (child, results) in [(a, ra), (b, rb)] {
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{text}");
        let dir = results.only_run_dir();
        let runs = dirs(&dir.join("runs"), "");
        assert_eq!(runs.len(), 2, "{text}");
        for r in runs {
            let v = read_result(&r);
            assert!(!v["verdict"].is_null(), "{v:#}");
            assert_no_leftovers(v["run_id"].as_str().unwrap());
        }
    }
}
