//! `schema/result.schema.json` against the types that write result.json: the same enum values,
//! the same fields per object, and a record with every field set or every optional one left out
//! both validate. (Every result.json the end-to-end tests produce is validated too.)

use std::collections::BTreeSet;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;

use super::*;
use crate::plan::PlannedNode;
use crate::raw::Role;

fn schema() -> Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/result.schema.json"),
    )
    .expect("schema file");
    serde_json::from_str(&text).expect("schema is JSON")
}

/// The strings of a JSON array (a schema's `enum`), as a set.
pub(crate) fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .expect("an array")
        .iter()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn json_names<T: Serialize>(all: &[T]) -> BTreeSet<String> {
    all.iter()
        .map(|t| serde_json::to_value(t).expect("serialises"))
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The JSON names of every variant of an enum, each variant named once: the match makes a new
/// variant a compile error here, so the schema's list cannot fall behind the type's.
macro_rules! every {
    ($t:ident: $($v:ident),+ $(,)?) => {{
        let all = [$($t::$v),+];
        for x in &all {
            match x {
                $($t::$v)|+ => {}
            }
        }
        json_names(&all)
    }};
}

#[test]
fn enum_values_are_the_types_values() {
    use crate::docker::EngineKind;
    let s = schema();
    // What a run is asked for, and what fixed-in predicts, is never "inconclusive".
    let asked = json_names(&[Outcome::Fixed, Outcome::Reproduced]);
    for (at, values) in [
        (
            "/$defs/verdict/properties/outcome/enum",
            every!(Outcome: Fixed, Reproduced, Inconclusive),
        ),
        (
            "/$defs/boot/properties/end/enum",
            every!(BootEnd: Running, Stopped, Exited, Lost),
        ),
        (
            "/$defs/action/properties/kind/enum",
            every!(ActionKind: Edit, Start, Restart, Stop, Upgrade),
        ),
        (
            "/$defs/evidence/properties/source/enum",
            every!(EvidenceSource: Log, Probe, Docker),
        ),
        (
            "/$defs/observation/properties/rule/enum",
            every!(Rule: UpLine, DownLine, OnDeath, AfterFeature, SettleWindow, ValueLines,
                Probe, Stopped, Api, Undecided),
        ),
        (
            "/properties/build/properties/source/enum",
            every!(BuildSource: Binary, Commit),
        ),
        (
            "/properties/environment/properties/engine/enum",
            every!(EngineKind: Docker, Podman),
        ),
        ("/properties/expect/enum", asked.clone()),
        ("/properties/expected_for_version/enum", asked),
    ] {
        let listed = s
            .pointer(at)
            .unwrap_or_else(|| panic!("{at}: not in the schema"));
        assert_eq!(
            strings(listed),
            values,
            "{at}: the schema (left), the type (right)"
        );
    }
}

/// A record with every optional field set and every list non-empty.
fn full() -> RunResult {
    let evidence = Evidence {
        source: EvidenceSource::Log,
        boot: 2,
        time: Some("2027-01-15T08:00:00.000Z".into()),
        text: "line".into(),
    };
    let observation = Observation {
        node: "etcd-2".into(),
        signal: "embedded-registry".into(),
        expected: Some("up".into()),
        bug: Some("down".into()),
        observed: "down".into(),
        asked: Some("down".into()),
        boot: 2,
        evidence: vec![evidence],
        reason: "a `down` line in this boot".into(),
        rule: Rule::DownLine,
        settle_ms: Some(0),
        decided_at: Some("2027-01-15T08:00:01.000Z".into()),
        death: Some(Death {
            counts_as: Some("down".into()),
            expected: false,
            bug: true,
        }),
    };
    let values: IndexMap<String, IndexMap<String, String>> = [(
        "etcd-2".to_string(),
        [("ready".to_string(), "up".to_string())].into(),
    )]
    .into();
    let files: IndexMap<String, IndexMap<String, Option<String>>> = [(
        "etcd-2".to_string(),
        [(
            "/etc/rancher/k3s/config.yaml".to_string(),
            Some("a: 1\n".to_string()),
        )]
        .into(),
    )]
    .into();
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "repro".into(),
            version: "0.1.0".into(),
        },
        run_id: "abcd1234".into(),
        command: vec!["repro".into(), "run".into()],
        rerun: "repro run etcd-split".into(),
        check: CheckInfo {
            name: "etcd-split".into(),
            issue: "https://github.com/k3s-io/k3s/issues/12753".into(),
            summary: "s".into(),
            description: "d".into(),
            sources: vec!["https://example.invalid".into()],
            file: "checks/etcd-split.yaml".into(),
        },
        topology: TopologyInfo {
            name: "etcd-split".into(),
            description: "d".into(),
            file: "topologies/etcd-split.yaml".into(),
            nodes: vec![PlannedNode {
                name: "etcd-2".into(),
                role: Role::Etcd,
                init: false,
                join: Some("etcd-1".into()),
                deferred: false,
                env: [("A".to_string(), "b".to_string())].into(),
            }],
        },
        distribution: distro::Distro::K3s,
        k3s: K3sInfo {
            version: "v1.33.4+k3s1".into(),
            image: "rancher/k3s:v1.33.4-k3s1".into(),
            image_id: Some("sha256:x".into()),
            stand_in: true,
            privileged: false,
            version_output: Some(
                "k3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n".into(),
            ),
        },
        build: Some(BuildInfo {
            source: BuildSource::Commit,
            path: "/home/u/.cache/repro/builds/0123/k3s".into(),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            url: Some("http://127.0.0.1:1/k3s-0123456789abcdef0123456789abcdef01234567".into()),
            sha256: "ab".repeat(32),
            size: 42,
            reported: "v1.33.4+k3s1".into(),
            installed_at: "/bin/k3s".into(),
        }),
        environment: EnvInfo {
            docker_host: "unix:///var/run/docker.sock".into(),
            engine: Some(crate::docker::EngineKind::Docker),
            docker_version: Some("20.10".into()),
            docker_api_version: Some("1.41".into()),
            kernel: Some("6".into()),
            os: Some("Debian".into()),
            arch: Some("amd64".into()),
            cpus: Some(2),
            memory_bytes: Some(1),
            cgroup_version: Some("1".into()),
            cgroup_driver: Some("cgroupfs".into()),
            storage_driver: Some("overlayfs".into()),
            containerd_store: Some(true),
            bridge_mtu: Some(1400),
            network_mtu: Some(1400),
        },
        expect: Outcome::Reproduced,
        expect_because: Some("v1.33.4+k3s1 comes before v1.33.5+k3s1".into()),
        expected_for_version: Some(Outcome::Reproduced),
        started_at: "2027-01-15T08:00:00.000Z".into(),
        finished_at: Some("2027-01-15T08:01:00.000Z".into()),
        configs: [(
            "0".to_string(),
            [("etcd-2".to_string(), "a: 1\n".to_string())].into(),
        )]
        .into(),
        planned_steps: vec![PlannedStepRecord {
            index: 1,
            name: "s".into(),
            why: "w".into(),
            edits: files.clone(),
            start: vec!["cp-2".into()],
            restart: vec![vec!["etcd-2".into()]],
            stop: vec!["etcd-3".into()],
            // Every field filled: the build's too, a commit build's (a release upgrade leaves it out).
            upgrade: vec![crate::result::UpgradeRecord {
                node: "etcd-2".into(),
                version: "v1.33.5+k3s1".into(),
                image: Some("rancher/k3s:v1.33.5-k3s1".into()),
                binary: Some(crate::result::UpgradeBinaryRecord {
                    path: "/root/.cache/repro/builds/0c0ffee/k3s".into(),
                    sha256: "a".repeat(64),
                    size: 70_000_000,
                    reported: "v1.33.5+k3s1".into(),
                    commit: Some(format!("0c0ffee{}", "0".repeat(33))),
                    url: Some("https://k3s-ci-builds.s3.amazonaws.com/k3s-0c0ffee".into()),
                }),
            }],
            expect: values.clone(),
            bug: values,
            line: Some(16),
            expect_lines: [(
                "etcd-2".to_string(),
                [("embedded-registry".to_string(), 24)].into(),
            )]
            .into(),
        }],
        initial_files: files,
        signals: [(
            "embedded-registry".to_string(),
            crate::result::SignalRecord {
                description: "d".into(),
                up: vec!["Starting distributed registry mirror at https://".into()],
                down: vec!["Not starting distributed registry mirror".into()],
                settled_by: vec!["(?i)Running kubelet".into()],
                probe: Some(vec!["k3s".into(), "kubectl".into()]),
                shows: Some(crate::result::ShowsRecord {
                    key: "embedded-registry".into(),
                    up_when: Some(true),
                }),
            },
        )]
        .into(),
        steps: vec![StepResult {
            index: 1,
            name: "s".into(),
            why: "w".into(),
            started_at: "2027-01-15T08:00:10.000Z".into(),
            finished_at: Some("2027-01-15T08:00:20.000Z".into()),
            actions: vec![Action {
                kind: ActionKind::Edit,
                nodes: vec!["etcd-2".into()],
                at: "2027-01-15T08:00:10.000Z".into(),
                files: vec!["/etc/rancher/k3s/config.yaml".into()],
            }],
            observations: vec![observation],
            versions: [("etcd-2".to_string(), "v1.33.5+k3s1".to_string())].into(),
        }],
        boots: vec![BootRecord {
            node: "etcd-2".into(),
            boot: 2,
            step: 1,
            started_at: "2027-01-15T08:00:11.000Z".into(),
            ready_at: Some("2027-01-15T08:00:12.000Z".into()),
            ended_at: Some("2027-01-15T08:00:30.000Z".into()),
            end: BootEnd::Exited,
            exit_code: Some(1),
            log: "nodes/etcd-2/boot-2.log".into(),
            lb_server: Some(LbServer {
                address: "10.213.4.14:6443".into(),
                node: Some("cp-2".into()),
            }),
        }],
        sim_seed: Some(u64::MAX),
        sim_seeds: [("etcd-2".to_string(), 7)].into(),
        verdict: Some(Verdict {
            outcome: Outcome::Reproduced,
            reason: "r".into(),
            differences: vec!["d".into()],
            expectations: 1,
            matched_expected: 0,
            matched_bug: 1,
        }),
        timings: [("total".to_string(), 1.5)].into(),
        exit_code: Some(0),
        error: Some("e".into()),
        failure: Some(crate::result::FailCause::NotReady),
    }
}

/// The keys of `v` and of `schema` (an object definition) must be the same.
fn same_fields(path: &str, v: &Value, schema: &Value, defs: &Value) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => &defs[r.trim_start_matches("#/$defs/")],
        None => schema,
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{path} is not an object"));
    let keys: BTreeSet<&String> = obj.keys().collect();
    let names: BTreeSet<&String> = props.keys().collect();
    assert_eq!(
        keys, names,
        "fields of {path}: the type (left) and the schema (right) differ"
    );
    for (k, sub) in props {
        let child = &obj[k];
        let items = sub.get("items");
        match (child, items) {
            (Value::Array(a), Some(item)) => {
                for (i, x) in a.iter().enumerate() {
                    same_fields(&format!("{path}.{k}[{i}]"), x, item, defs);
                }
            }
            (Value::Object(_), _) => same_fields(&format!("{path}.{k}"), child, sub, defs),
            _ => {}
        }
    }
}

#[test]
fn every_field_of_the_types_is_in_the_schema_and_back() {
    let s = schema();
    let v = serde_json::to_value(full()).expect("serialises");
    same_fields("result", &v, &s, &s["$defs"]);
}

#[test]
fn full_and_minimal_records_validate() {
    let s = schema();
    let validator = jsonschema::draft202012::new(&s).expect("valid schema");
    let full = serde_json::to_value(full()).expect("serialises");
    let errors: Vec<String> = validator
        .iter_errors(&full)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut minimal = self::full();
    minimal.planned_steps.clear();
    minimal.initial_files.clear();
    minimal.steps.clear();
    minimal.boots.clear();
    minimal.sim_seed = None;
    minimal.sim_seeds.clear();
    minimal.verdict = None;
    minimal.finished_at = None;
    minimal.exit_code = None;
    minimal.error = None;
    minimal.expected_for_version = None;
    minimal.expect_because = None;
    minimal.steps.clear();
    minimal.k3s.image_id = None;
    minimal.build = None;
    minimal.environment = EnvInfo::default();
    let minimal = serde_json::to_value(minimal).expect("serialises");
    let errors: Vec<String> = validator
        .iter_errors(&minimal)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
