//! JSON Schema validation of what repro writes (`schema/*.schema.json`, draft 2020-12), one
//! validator per schema file for the whole test binary.

use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Where `v` breaks the schema in `schema` (a path relative to the crate root): one line each.
pub fn errors(schema: &str, v: &Value) -> Vec<String> {
    validator(schema)
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Fails the test if `v` (named `what` in the message) does not match the schema in `schema`.
pub fn assert_valid(schema: &str, v: &Value, what: &str) {
    let errors = errors(schema, v);
    assert!(
        errors.is_empty(),
        "{what} does not match {schema}:\n{}",
        errors.join("\n")
    );
}

fn validator(schema: &str) -> Arc<jsonschema::Validator> {
    static VALIDATORS: Mutex<Vec<(String, Arc<jsonschema::Validator>)>> = Mutex::new(Vec::new());
    let mut all = VALIDATORS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, v)) = all.iter().find(|(s, _)| s == schema) {
        return v.clone();
    }
    let path = crate::util::root().join(schema);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v = Arc::new(jsonschema::draft202012::new(&json).unwrap_or_else(|e| {
        panic!(
            "{} is not a valid draft 2020-12 schema: {e}",
            path.display()
        )
    }));
    all.push((schema.to_string(), v.clone()));
    v
}
