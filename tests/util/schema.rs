//! Every result.json an end-to-end test reads is checked against `schema/result.schema.json`.

use std::path::Path;
use std::sync::LazyLock;

use serde_json::Value;

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let text = std::fs::read_to_string(super::root().join("schema/result.schema.json"))
        .expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::draft202012::new(&schema).expect("schema is valid draft 2020-12")
});

/// Reads `<dir>/result.json`, failing the test if it does not match the schema.
pub fn read_result(dir: &Path) -> Value {
    let path = dir.join("result.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_valid(&v, &path.display().to_string());
    v
}

/// Fails the test if `v` does not match the result.json schema.
pub fn assert_valid(v: &Value, what: &str) {
    let errors: Vec<String> = VALIDATOR
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match the schema:\n{}",
        errors.join("\n")
    );
}
