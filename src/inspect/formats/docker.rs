//! `docker logs --timestamps` / `kubectl logs --timestamps` (an RFC 3339 time before each
//! line) and `kubectl logs --prefix` (`[pod/name/container] `).

use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::{parse_rfc3339, Entry, Kind, Normaliser, Outer};

impl Normaliser {
    /// `[pod/name/container] text` (`kubectl logs --prefix`); fills `e` and returns true when it
    /// is one.
    pub(super) fn split_kubectl(&mut self, text: &str, e: &mut Entry) -> bool {
        let Some(c) = KUBECTL_PREFIX.captures(text) else {
            return false;
        };
        let rest = text[c.get(0).map_or(0, |m| m.end())..].to_string();
        let pod = c.name("pod").map(|m| m.as_str().to_string());
        // `--prefix --timestamps` puts the time after the prefix.
        if !self.split_docker(&rest, e) {
            self.k3s_text(rest, e);
        }
        e.kind = Kind::Log;
        e.host = pod.as_deref().map(Arc::from);
        e.outer = Outer::KubectlPrefix;
        self.stats.count_outer(Outer::KubectlPrefix);
        self.in_output = false;
        true
    }

    /// `2026-11-30T09:00:01.123456789Z text`.
    pub(super) fn split_docker(&mut self, text: &str, e: &mut Entry) -> bool {
        let Some(c) = DOCKER.captures(text) else {
            return false;
        };
        let ts = c.name("ts").and_then(|m| parse_rfc3339(m.as_str()));
        let msg = text[c.get(0).map_or(0, |m| m.end())..].to_string();
        self.k3s_text(msg, e);
        e.kind = Kind::Log;
        e.outer = Outer::Docker;
        if let Some(ts) = ts {
            self.set_exact(e, ts);
        }
        self.in_output = false;
        true
    }
}

pub(super) static KUBECTL_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[pod/(?P<pod>[^/\]\s]+)/[^\]\s]+\] ").expect("static regex"));

pub(super) static DOCKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) ")
        .expect("static regex")
});
