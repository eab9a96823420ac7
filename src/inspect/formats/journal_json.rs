//! `journalctl -o json` (and `-o json-seq`): one JSON object per line.

use super::journal_fields::JournalFields;

/// One `-o json` line's fields: a string, an array of bytes (a message that is not UTF-8), or
/// anything else (an array of several values), which is left out.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum JsonField {
    Text(String),
    Bytes(Vec<u8>),
    #[allow(dead_code)]
    Other(serde::de::IgnoredAny),
}

impl JsonField {
    fn bytes(self) -> Option<Vec<u8>> {
        match self {
            JsonField::Text(s) => Some(s.into_bytes()),
            JsonField::Bytes(b) => Some(b),
            JsonField::Other(_) => None,
        }
    }
}

#[derive(serde::Deserialize)]
struct JsonEntry {
    #[serde(rename = "MESSAGE")]
    message: Option<JsonField>,
    #[serde(rename = "_HOSTNAME")]
    host: Option<JsonField>,
    #[serde(rename = "__REALTIME_TIMESTAMP")]
    realtime: Option<JsonField>,
    #[serde(rename = "SYSLOG_IDENTIFIER")]
    ident: Option<JsonField>,
    #[serde(rename = "_COMM")]
    comm: Option<JsonField>,
    #[serde(rename = "_SYSTEMD_UNIT")]
    unit: Option<JsonField>,
    #[serde(rename = "UNIT")]
    object_unit: Option<JsonField>,
    #[serde(rename = "_SYSTEMD_INVOCATION_ID")]
    invocation: Option<JsonField>,
    #[serde(rename = "INVOCATION_ID")]
    object_invocation: Option<JsonField>,
    #[serde(rename = "_PID")]
    pid: Option<JsonField>,
}

/// A `-o json` (or `-o json-seq`) line's fields; None when the line is not a journal entry.
pub(super) fn json_fields(raw: &[u8]) -> Option<JournalFields> {
    let raw = raw.strip_prefix(b"\x1e").unwrap_or(raw);
    if raw.first() != Some(&b'{')
        || memchr::memmem::find(raw, b"\"__REALTIME_TIMESTAMP\"").is_none()
    {
        return None;
    }
    let j: JsonEntry = serde_json::from_slice(raw).ok()?;
    let mut f = JournalFields::default();
    for (key, v) in [
        (&b"MESSAGE"[..], j.message),
        (b"_HOSTNAME", j.host),
        (b"__REALTIME_TIMESTAMP", j.realtime),
        (b"SYSLOG_IDENTIFIER", j.ident),
        (b"_COMM", j.comm),
        (b"_SYSTEMD_UNIT", j.unit),
        (b"UNIT", j.object_unit),
        (b"_SYSTEMD_INVOCATION_ID", j.invocation),
        (b"INVOCATION_ID", j.object_invocation),
        (b"_PID", j.pid),
    ] {
        if let Some(b) = v.and_then(JsonField::bytes) {
            f.set(key, b);
        }
    }
    Some(f)
}
