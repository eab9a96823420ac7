//! Values of k3s config keys (`config.yaml` accepts scalars and lists of scalars).

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<ConfigValue>),
}

impl ConfigValue {
    /// The value as it appears in a rendered `config.yaml`. Strings are written as JSON strings,
    /// which are valid YAML and never mis-typed (`"true"` stays a string).
    pub fn to_yaml(&self) -> String {
        match self {
            ConfigValue::Bool(b) => b.to_string(),
            ConfigValue::Int(i) => i.to_string(),
            ConfigValue::Str(s) => serde_json::to_string(s).unwrap_or_default(),
            ConfigValue::List(items) => {
                let inner: Vec<String> = items.iter().map(ConfigValue::to_yaml).collect();
                format!("[{}]", inner.join(", "))
            }
        }
    }

    pub fn is_true(&self) -> bool {
        matches!(self, ConfigValue::Bool(true))
            || matches!(self, ConfigValue::Str(s) if s == "true")
    }
}

impl fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_yaml())
    }
}
