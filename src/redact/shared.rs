//! One redaction context shared by everything a run writes: result.json, the configs per step,
//! each boot's log (line by line, as it comes), `docker inspect`, and the reports at the end. So
//! `<REDACTED-n>` is the same secret in every file of a results folder, and the run token is
//! always `<REDACTED-1>`.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::Redactor;

#[derive(Clone, Default)]
pub(crate) struct SharedRedactor(Arc<Mutex<Redactor>>);

impl std::fmt::Debug for SharedRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print what it knows.
        f.write_str("SharedRedactor")
    }
}

impl SharedRedactor {
    pub(crate) fn new(r: Redactor) -> Self {
        SharedRedactor(Arc::new(Mutex::new(r)))
    }

    /// The context itself, for a caller that redacts several things in one go (the reports).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Redactor> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn text(&self, text: &str) -> String {
        self.lock().redact_text(text)
    }

    pub(crate) fn json(&self, v: &Value) -> Value {
        self.lock().redact_json(v)
    }

    /// One file's content, read by its name as [`Redactor::redact_file`] does.
    pub(crate) fn file(&self, name: &str, text: &str) -> String {
        self.lock().redact_file(name, text)
    }
}
