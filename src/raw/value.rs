//! Values of k3s config keys (`config.yaml` accepts scalars and lists of scalars).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum ConfigValue {
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<ConfigValue>),
}

impl ConfigValue {
    /// The value as it appears in a rendered `config.yaml`. Strings are written as JSON strings,
    /// which are valid YAML and never mis-typed (`"true"` stays a string).
    pub(crate) fn to_yaml(&self) -> String {
        match self {
            ConfigValue::Bool(b) => b.to_string(),
            ConfigValue::Int(i) => i.to_string(),
            ConfigValue::Str(s) => json_string(s),
            ConfigValue::List(items) => {
                let inner: Vec<String> = items.iter().map(ConfigValue::to_yaml).collect();
                format!("[{}]", inner.join(", "))
            }
        }
    }

    /// A config file's value as its YAML parser gave it (as JSON): scalars and lists as k3s
    /// reads them; a map kept as its text; `null` is no value.
    pub(crate) fn from_json(v: serde_json::Value) -> Option<ConfigValue> {
        use serde_json::Value as J;
        Some(match v {
            J::Null => return None,
            J::Bool(b) => ConfigValue::Bool(b),
            J::Number(n) => match n.as_i64() {
                Some(i) => ConfigValue::Int(i),
                None => ConfigValue::Str(n.to_string()),
            },
            J::String(s) => ConfigValue::Str(s),
            J::Array(items) => ConfigValue::List(
                items
                    .into_iter()
                    .filter_map(ConfigValue::from_json)
                    .collect(),
            ),
            J::Object(_) => ConfigValue::Str(v.to_string()),
        })
    }

    /// Merges one key of a config file into the values read so far, as k3s merges config.yaml
    /// and its drop-ins (pkg/configfilearg): `key+:` appends to the key's list (a scalar there
    /// becomes a one-item list), any other key replaces its value. True when it replaced
    /// (the key's value now comes from this file alone).
    pub(crate) fn merge_into(
        into: &mut indexmap::IndexMap<String, ConfigValue>,
        key: String,
        v: ConfigValue,
    ) -> bool {
        let Some(base) = key.strip_suffix('+') else {
            into.insert(key, v);
            return true;
        };
        let mut items = match into.shift_remove(base) {
            Some(ConfigValue::List(l)) => l,
            Some(other) => vec![other],
            None => Vec::new(),
        };
        match v {
            ConfigValue::List(l) => items.extend(l),
            other => items.push(other),
        }
        into.insert(base.to_string(), ConfigValue::List(items));
        false
    }

    pub(crate) fn is_true(&self) -> bool {
        matches!(self, ConfigValue::Bool(true))
            || matches!(self, ConfigValue::Str(s) if s == "true")
    }
}

/// A JSON string literal. Serialising a `&str` cannot fail; the fallback only keeps this total.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

impl fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_yaml())
    }
}

// A hand-written visitor instead of `#[serde(untagged)]`: untagged enums buffer the value, which
// loses the YAML position and turns every mistake into "data did not match any variant". This
// one is fed by the YAML deserializer directly, so errors point at the value and say what fits.
impl<'de> Deserialize<'de> for ConfigValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor { in_list: false })
    }
}

struct ValueVisitor {
    /// List items must be scalars: k3s has no nested lists in config.yaml.
    in_list: bool,
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = ConfigValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.in_list {
            f.write_str("a string, number or boolean (a list item)")
        } else {
            f.write_str("a k3s config value: a string, number, boolean or a list of those")
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ConfigValue, E> {
        // Numbers past i64 are not k3s settings anyone writes; keep the digits as text.
        Ok(i64::try_from(v).map_or_else(|_| ConfigValue::Str(v.to_string()), ConfigValue::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ConfigValue, E> {
        // Re-printing a float can change it (`1.10` → `1.1`), so ask for the exact text.
        Err(E::custom(format!(
            "`{v}` is a decimal number; k3s config values are strings, integers, booleans or lists: quote it (\"{v}\")"
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Str(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<ConfigValue, E> {
        Ok(ConfigValue::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ConfigValue, E> {
        Err(E::custom(
            "a config value is empty (null); to drop a key use `remove:` in a step, or leave the key out",
        ))
    }

    fn visit_none<E: de::Error>(self) -> Result<ConfigValue, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ConfigValue, A::Error> {
        if self.in_list {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ListItem)? {
            items.push(item);
        }
        Ok(ConfigValue::List(items))
    }
}

struct ListItem;

impl<'de> de::DeserializeSeed<'de> for ListItem {
    type Value = ConfigValue;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ConfigValue, D::Error> {
        d.deserialize_any(ValueVisitor { in_list: true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ConfigValue, String> {
        serde_saphyr::from_str_with_options::<ConfigValue>(yaml, crate::raw::yaml_options())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn scalars_and_lists() {
        assert_eq!(parse("true"), Ok(ConfigValue::Bool(true)));
        assert_eq!(parse("42"), Ok(ConfigValue::Int(42)));
        assert_eq!(parse("-1"), Ok(ConfigValue::Int(-1)));
        assert_eq!(parse("'true'"), Ok(ConfigValue::Str("true".into())));
        // YAML 1.2: `yes` is a string, not a boolean.
        assert_eq!(parse("yes"), Ok(ConfigValue::Str("yes".into())));
        assert_eq!(
            parse("[a, 1, false]"),
            Ok(ConfigValue::List(vec![
                ConfigValue::Str("a".into()),
                ConfigValue::Int(1),
                ConfigValue::Bool(false)
            ]))
        );
    }

    #[test]
    fn rejects_what_config_yaml_cannot_hold() {
        assert!(parse("{a: b}")
            .expect_err("should be rejected")
            .contains("k3s config value"));
        assert!(parse("[[a]]").is_err());
        assert!(parse("null")
            .expect_err("should be rejected")
            .contains("remove"));
        assert!(parse("0.5")
            .expect_err("should be rejected")
            .contains("quote it"));
    }

    #[test]
    fn renders_yaml_that_reads_back_the_same() {
        let v = ConfigValue::List(vec![
            ConfigValue::Str("a: b".into()),
            ConfigValue::Str("true".into()),
            ConfigValue::Int(3),
        ]);
        assert_eq!(v.to_yaml(), r#"["a: b", "true", 3]"#);
        assert_eq!(parse(&v.to_yaml()), Ok(v));
        assert_eq!(
            ConfigValue::Str("say \"hi\"\n".into()).to_yaml(),
            r#""say \"hi\"\n""#
        );
    }

    /// k3s's merge of config.yaml and its drop-ins: a later key replaces, `key+:` appends (a
    /// scalar before it becomes the list's first item), an append with nothing before starts
    /// the list.
    #[test]
    fn a_later_key_replaces_and_a_plus_key_appends() {
        use ConfigValue::{List, Str};
        let mut m = indexmap::IndexMap::new();
        assert!(ConfigValue::merge_into(
            &mut m,
            "node-label".into(),
            Str("a=1".into())
        ));
        assert!(!ConfigValue::merge_into(
            &mut m,
            "node-label+".into(),
            List(vec![Str("b=2".into())])
        ));
        assert!(!ConfigValue::merge_into(
            &mut m,
            "tls-san+".into(),
            Str("x".into())
        ));
        assert!(ConfigValue::merge_into(
            &mut m,
            "token-file".into(),
            Str("/a".into())
        ));
        assert!(ConfigValue::merge_into(
            &mut m,
            "token-file".into(),
            Str("/b".into())
        ));
        assert_eq!(
            m["node-label"],
            List(vec![Str("a=1".into()), Str("b=2".into())])
        );
        assert_eq!(m["tls-san"], List(vec![Str("x".into())]));
        assert_eq!(m["token-file"], Str("/b".into()));
        assert_eq!(m.len(), 3);
    }
}
