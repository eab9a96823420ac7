//! The run's events as JSON Lines (docs/events.md, schema/events.schema.json): one object per
//! line — the run starting, each phase, each node state, each observation, each step, the
//! verdict, the end — for CI and tools that follow a run without parsing its terminal lines.
//!
//! Every run writes `events.jsonl` into its results folder; `repro run --events FILE|-` streams
//! the same lines live as well. A receiver like the live display: it sees exactly what the
//! display sees, and log text in it is already scrubbed of the run's secrets (run/watch.rs).

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

use crate::result::{Observation, Outcome};

use super::event::{Phase, Receiver, RunEvent};

/// `schema_version` of every line; a reader refuses a newer one it does not know.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The file each results folder holds.
pub(crate) const FILE: &str = "events.jsonl";

/// Writes a run's events as JSON Lines to a file or stdout.
pub(crate) struct EventLog {
    out: Mutex<Sink>,
    /// The run the lines are about (from `started`): a stream may carry several runs (`verify`).
    run_id: Mutex<String>,
}

enum Sink {
    File(std::io::BufWriter<std::fs::File>),
    Stdout,
    /// A write failed (a full disk): the run goes on without its stream, said once on stderr.
    Broken,
}

impl EventLog {
    /// A stream into `path` (created or truncated, owner-only like every file of a results
    /// folder), or stdout for `-`.
    pub(crate) fn create(path: &Path) -> std::io::Result<EventLog> {
        let sink = if path == Path::new("-") {
            Sink::Stdout
        } else {
            Sink::File(std::io::BufWriter::new(
                crate::results_folder::private_file(path)?,
            ))
        };
        Ok(EventLog {
            out: Mutex::new(sink),
            run_id: Mutex::new(String::new()),
        })
    }

    fn write(&self, line: &Line<'_>) {
        let run_id = {
            let mut id = self.run_id.lock().unwrap_or_else(|p| p.into_inner());
            if let Line::Started { run_id, .. } = line {
                *id = run_id.to_string();
            }
            id.clone()
        };
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            run_id: &run_id,
            line,
        };
        let Ok(mut text) = serde_json::to_string(&envelope) else {
            return;
        };
        text.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let written = match &mut *out {
            // Flushed per line: a reader (`tail -f`, a CI step) sees each event as it happens.
            Sink::File(f) => f.write_all(text.as_bytes()).and_then(|()| f.flush()),
            Sink::Stdout => crate::term::write_out(&text),
            Sink::Broken => return,
        };
        if let Err(e) = written {
            errln!("warning: the event stream stopped: {e}; the run goes on");
            *out = Sink::Broken;
        }
    }
}

impl Receiver for EventLog {
    fn receive(&self, event: &RunEvent<'_>) {
        if let Some(line) = Line::of(event) {
            self.write(&line);
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    schema_version: u32,
    /// When repro emitted it (RFC 3339, UTC, milliseconds).
    time: String,
    run_id: &'a str,
    #[serde(flatten)]
    line: &'a Line<'a>,
}

/// One event, tagged by `event`.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line<'a> {
    Started {
        #[serde(skip)]
        run_id: &'a str,
        check: &'a str,
        version: &'a str,
        image: &'a str,
        results: String,
    },
    Phase {
        phase: &'static str,
        text: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        steps: Option<usize>,
    },
    Node {
        node: &'a str,
        state: &'static str,
        boot: u32,
        detail: &'a str,
    },
    Image {
        stand_in: bool,
        privileged: bool,
        seconds: f64,
    },
    ClusterUp {
        seconds: f64,
    },
    Observation {
        step: usize,
        #[serde(flatten)]
        observation: ObservationLine<'a>,
    },
    Step {
        step: usize,
        name: &'a str,
        seconds: f64,
    },
    Note {
        text: &'a str,
    },
    Verdict {
        outcome: Option<Outcome>,
        reason: Option<&'a str>,
        differences: Vec<&'a str>,
        exit_code: i32,
        error: Option<&'a str>,
    },
    Finished {
        exit_code: i32,
        seconds: f64,
        results: Option<String>,
    },
}

#[derive(Serialize)]
struct ObservationLine<'a> {
    node: &'a str,
    signal: &'a str,
    boot: u32,
    observed: String,
    expected: Option<&'a str>,
    bug: Option<&'a str>,
    /// `ok` (the correct value), `bug` (the documented bug's) or `differs` (neither), as
    /// `repro run --format json` judges it.
    judged: &'static str,
    rule: crate::result::Rule,
    reason: &'a str,
}

impl<'a> ObservationLine<'a> {
    fn of(o: &'a Observation) -> ObservationLine<'a> {
        ObservationLine {
            node: &o.node,
            signal: &o.signal,
            boot: o.boot,
            observed: o.observed.to_string(),
            expected: o.expected.as_ref().map(|e| e.as_str()),
            bug: o.bug.as_ref().map(|e| e.as_str()),
            judged: o.judged(),
            rule: o.rule,
            reason: &o.reason,
        }
    }
}

impl<'a> Line<'a> {
    fn of(event: &'a RunEvent<'a>) -> Option<Line<'a>> {
        Some(match event {
            RunEvent::Started {
                run_id,
                check,
                k3s_version,
                image,
                dir,
            } => Line::Started {
                run_id,
                check,
                version: k3s_version,
                image,
                results: dir.display().to_string(),
            },
            RunEvent::Phase(p) => {
                let (step, steps) = match p {
                    Phase::Step { index, total, .. } => (Some(*index), Some(*total)),
                    _ => (None, None),
                };
                Line::Phase {
                    phase: phase_name(p),
                    text: p.to_string(),
                    step,
                    steps,
                }
            }
            RunEvent::Node {
                node,
                state,
                boot,
                detail,
            } => Line::Node {
                node,
                state: state.as_str(),
                boot: *boot,
                detail,
            },
            RunEvent::ImageReady {
                stand_in,
                privileged,
                seconds,
                ..
            } => Line::Image {
                stand_in: *stand_in,
                privileged: *privileged,
                seconds: *seconds,
            },
            RunEvent::ClusterUp { seconds, .. } => Line::ClusterUp { seconds: *seconds },
            RunEvent::Observed { step, observation } => Line::Observation {
                step: *step,
                observation: ObservationLine::of(observation),
            },
            RunEvent::StepDone { step, seconds, .. } => Line::Step {
                step: step.index,
                name: &step.name,
                seconds: *seconds,
            },
            RunEvent::Note(text) => Line::Note { text },
            RunEvent::Concluded(c) => Line::Verdict {
                outcome: c.verdict.as_ref().map(|v| v.outcome),
                reason: c.verdict.as_ref().map(|v| v.reason.as_str()),
                differences: c
                    .verdict
                    .iter()
                    .flat_map(|v| v.differences.iter().map(String::as_str))
                    .collect(),
                exit_code: c.exit.code(),
                error: c.error.as_deref(),
            },
            RunEvent::Finished(end) => Line::Finished {
                exit_code: end.exit().code(),
                seconds: end.seconds,
                results: end.dir.as_ref().map(|d| d.display().to_string()),
            },
            RunEvent::Engine(_) => return None,
        })
    }
}

/// The phase's name in the stream (its `text` says it in words).
fn phase_name(p: &Phase) -> &'static str {
    match p {
        Phase::LoadArchive(_) => "load-archive",
        Phase::PrepareSimImage(_) => "prepare-stand-in",
        Phase::BuildNodeImage { .. } => "build-node-image",
        Phase::Pull(_) => "pull",
        Phase::Create => "create",
        Phase::Start(_) => "start",
        Phase::Step { .. } => "step",
        Phase::Teardown => "teardown",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;
    use crate::exit::Exit;
    use crate::result::RunResult;
    use crate::run::event::{Conclusion, NodeState, RunEnd};

    fn schema() -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/events.schema.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("JSON")
    }

    use crate::result::schema_tests::strings;

    /// The enum of `key` in the `oneOf` branch whose `event` is `event`.
    fn branch_enum(s: &Value, event: &str, key: &str) -> BTreeSet<String> {
        let b = s["oneOf"]
            .as_array()
            .expect("oneOf")
            .iter()
            .find(|b| b["properties"]["event"]["const"] == event)
            .expect("a branch");
        strings(&b["properties"][key]["enum"])
    }

    /// Every kind of event, from the fixture run's record, through a real stream into a file:
    /// each line validates against schema/events.schema.json, every event and enum value the
    /// code writes is the schema's (and the other way round), and a line with a field the
    /// schema does not know is refused.
    #[test]
    fn every_event_matches_the_schema() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy");
        let r: RunResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("read"))
                .expect("result");
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join(FILE);
        let log = EventLog::create(&file).expect("create");
        let phases = [
            Phase::LoadArchive(PathBuf::from("a.tar")),
            Phase::PrepareSimImage("repro.local/k3s-sim:v1".into()),
            Phase::BuildNodeImage {
                image: "repro.local/rke2-node:v1".into(),
                tarball: PathBuf::from("a/rke2.linux-amd64.tar.gz"),
            },
            Phase::Pull("rancher/k3s:v1".into()),
            Phase::Create,
            Phase::Start(vec!["etcd-1".into()]),
            Phase::Step {
                index: 1,
                total: 3,
                name: "split".into(),
            },
            Phase::Teardown,
        ];
        let states = [
            NodeState::Pulling,
            NodeState::Created,
            NodeState::Starting,
            NodeState::Running,
            NodeState::Ready,
            NodeState::Dead,
            NodeState::Timeout,
            NodeState::Stopped,
        ];
        let end = RunEnd {
            status: Ok(Exit::Ok),
            dir: Some(dir.clone()),
            verdict: r.verdict.clone(),
            seconds: 1.5,
            result: None,
        };
        let broken = RunEnd {
            status: Err(crate::run::RunError::Interrupted),
            dir: None,
            verdict: None,
            seconds: 0.1,
            result: None,
        };
        let mut events = vec![RunEvent::Started {
            run_id: r.run_id.clone(),
            check: r.check.name.clone(),
            k3s_version: r.k3s.version.clone(),
            image: r.k3s.image.clone(),
            dir: dir.clone(),
        }];
        events.extend(phases.iter().cloned().map(RunEvent::Phase));
        events.extend(states.iter().map(|s| RunEvent::Node {
            node: "etcd-1".into(),
            state: *s,
            boot: 1,
            detail: "a line".into(),
        }));
        events.push(RunEvent::ImageReady {
            image_id: None,
            stand_in: true,
            privileged: false,
            sim_seed: Some(1),
            seconds: 0.2,
        });
        events.push(RunEvent::ClusterUp {
            boots: Vec::new(),
            seconds: 3.0,
            version_output: None,
        });
        for s in &r.steps {
            for o in &s.observations {
                events.push(RunEvent::Observed {
                    step: s.index,
                    observation: o.clone(),
                });
            }
            events.push(RunEvent::StepDone {
                step: s.clone(),
                boots: Vec::new(),
                seconds: 4.0,
            });
        }
        events.push(RunEvent::Note("kept: docker exec …".into()));
        for (verdict, error) in [(r.verdict.clone(), None), (None, Some("boom".to_string()))] {
            events.push(RunEvent::Concluded(Conclusion {
                boots: Vec::new(),
                verdict,
                exit: Exit::Infra,
                error,
                failure: None,
                teardown_secs: 0.0,
                total_secs: 1.0,
            }));
        }
        events.push(RunEvent::Finished(&end));
        events.push(RunEvent::Finished(&broken));
        events.push(RunEvent::Engine(Default::default()));
        for e in &events {
            log.receive(e);
        }
        drop(log);

        let s = schema();
        let validator = jsonschema::draft202012::new(&s).expect("a valid schema");
        let text = std::fs::read_to_string(&file).expect("read");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
            .collect();
        // Every event but the engine's is a line.
        assert_eq!(lines.len(), events.len() - 1, "{text}");
        for l in &lines {
            let errors: Vec<String> = validator.iter_errors(l).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{l}: {}", errors.join("; "));
            assert_eq!(l["run_id"], r.run_id.as_str(), "{l}");
        }
        let seen = |key: &str| -> BTreeSet<String> {
            lines
                .iter()
                .filter_map(|l| l[key].as_str().map(str::to_string))
                .collect()
        };
        assert_eq!(seen("event"), strings(&s["properties"]["event"]["enum"]));
        assert_eq!(
            lines
                .iter()
                .filter(|l| l["event"] == "phase")
                .filter_map(|l| l["phase"].as_str().map(str::to_string))
                .collect::<BTreeSet<_>>(),
            branch_enum(&s, "phase", "phase")
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l["event"] == "node")
                .filter_map(|l| l["state"].as_str().map(str::to_string))
                .collect::<BTreeSet<_>>(),
            branch_enum(&s, "node", "state")
        );
        let judged: BTreeSet<String> = lines
            .iter()
            .filter(|l| l["event"] == "observation")
            .filter_map(|l| l["judged"].as_str().map(str::to_string))
            .collect();
        assert!(
            judged.contains("ok") && judged.contains("bug"),
            "{judged:?}"
        );
        let mut extra = lines[0].clone();
        extra["surprise"] = Value::from(1);
        assert!(!validator.is_valid(&extra), "an unknown field is refused");
        let mut wrong = lines[0].clone();
        wrong["event"] = Value::from("observation");
        assert!(
            !validator.is_valid(&wrong),
            "a started line is no observation"
        );
    }
}
