//! One journal entry of the structured forms (`-o json`, `-o export`): its fields, and the
//! entry they make (message, host, time, unit, invocation).

use std::sync::Arc;

use chrono::DateTime;

use super::units::{distro_in_unit_line, distro_named, UNIT};
use super::{Entry, Kind, Normaliser, Outer};
use crate::inspect::reader::LineInfo;

/// The fields of one journal entry, from `-o json` or `-o export`.
#[derive(Debug, Default)]
pub(super) struct JournalFields {
    pub(super) message: Option<Vec<u8>>,
    pub(super) host: Option<String>,
    /// `__REALTIME_TIMESTAMP`: microseconds since the epoch.
    pub(super) realtime: Option<i64>,
    pub(super) ident: Option<String>,
    pub(super) comm: Option<String>,
    /// `_SYSTEMD_UNIT`: the unit that wrote the line.
    pub(super) unit: Option<String>,
    /// `UNIT`: the unit systemd (PID 1) writes about.
    pub(super) object_unit: Option<String>,
    /// `_SYSTEMD_INVOCATION_ID` (the unit's own lines) or `INVOCATION_ID` (PID 1's about it).
    pub(super) invocation: Option<String>,
    pub(super) pid: Option<String>,
}

impl JournalFields {
    pub(super) fn set(&mut self, key: &[u8], value: Vec<u8>) {
        let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
        match key {
            b"MESSAGE" => self.message = Some(value),
            b"_HOSTNAME" => self.host = Some(text(value)),
            b"__REALTIME_TIMESTAMP" => self.realtime = text(value).trim().parse().ok(),
            b"SYSLOG_IDENTIFIER" => self.ident = Some(text(value)),
            b"_COMM" => self.comm = Some(text(value)),
            b"_SYSTEMD_UNIT" => self.unit = Some(text(value)),
            b"UNIT" => self.object_unit = Some(text(value)),
            b"_SYSTEMD_INVOCATION_ID" => self.invocation = Some(text(value)),
            b"INVOCATION_ID" => {
                self.invocation.get_or_insert(text(value));
            }
            b"_PID" => self.pid = Some(text(value)),
            _ => {}
        }
    }
}

impl Normaliser {
    /// One journal entry of the structured forms: its message, host, time, unit and invocation.
    pub(super) fn structured(&mut self, f: JournalFields, outer: Outer, info: LineInfo) -> Entry {
        let mut e = Entry {
            host: f.host.as_deref().map(Arc::from),
            invocation: f.invocation,
            pid: f.pid.as_deref().and_then(|p| p.parse().ok()),
            ..Entry::bare(Kind::Foreign, outer, &info)
        };
        let raw = f.message.unwrap_or_default();
        // A message may hold line breaks: one line of text here.
        let raw: Vec<u8> = raw
            .into_iter()
            .map(|b| if b == b'\n' { b' ' } else { b })
            .collect();
        let msg = self.clean(&raw, false).0.into_owned();
        let ident = f.ident.or(f.comm).unwrap_or_default();
        let by_pid1 = f.pid.as_deref() == Some("1") || ident == "systemd";
        let about = f.object_unit.as_deref().and_then(distro_named);
        let own = f.unit.as_deref().and_then(distro_named);
        e.kind = if by_pid1 {
            if about.is_some() || UNIT.is_match(&msg) {
                Kind::Unit
            } else {
                Kind::Foreign
            }
        } else if own.is_some() {
            Kind::Log
        } else {
            self.journal_kind(&ident, &msg)
        };
        e.distro = about
            .or(own)
            .or_else(|| distro_named(&ident))
            .or_else(|| distro_in_unit_line(&msg));
        if e.kind == Kind::Foreign {
            self.stats.foreign += 1;
            e.text = msg;
        } else {
            self.k3s_text(msg, &mut e);
        }
        // The journal's own time wins over the text's (one clock for the whole file).
        if let Some(t) = f.realtime.and_then(DateTime::from_timestamp_micros) {
            self.set_exact(&mut e, t);
        }
        self.stats.count_outer(outer);
        self.in_output = false;
        e
    }
}
