//! Secret redaction as a pure function over text and JSON: used live by a run (its log lines
//! and output), by the reports and bundle, and by `repro redact` on files (`files`).
//!
//! A [`Redactor`] is one redaction *context*: every secret it meets gets a number on first sight
//! and is written `<REDACTED-n>` everywhere after, so a reader of a bundle can still tell that the
//! token in `inspect.json` is the one in a log line, without seeing it. Keys are always kept
//! (`K3S_TOKEN=<REDACTED-1>`), only values go.
//!
//! Knowledge first, shapes second (issue #24): what the caller knows is a secret — the run token,
//! `--secret` values, and every value a scenario sets under a secret key, learned whole by
//! `known` — is replaced before any shape rule reads a text, so no rule cuts a known value at a
//! `,` `"` or `&`. Then secrets are found by shape (a value under a secret-looking key, a k3s
//! `K10…::server:…` token, a bearer token, credentials in a URL, …) and replaced wherever they
//! occur, keyed or bare.
//! Because a secret may be seen bare in one file before its keyed form shows up in another,
//! callers that redact several files learn from all of them first ([`Redactor::learn_text`],
//! [`Redactor::learn_json`]) and redact after; a lone `redact_*` call learns from its own input
//! first, so it is safe on its own too.
//!
//! Booleans, `null` and empty values are never secrets (`secrets-encryption: true` stays), and a
//! key that names a file, path or directory holds a location, not a secret
//! (`--token-auth-file=/var/lib/…/passwd` stays).

use std::ops::Range;
use std::sync::LazyLock;

mod files;
mod known;
mod shared;
mod url;

pub(crate) use files::{redact_path, Error as FilesError};
pub(crate) use known::{learn_scenario, learn_source, Scenario as Known};
pub(crate) use shared::SharedRedactor;
pub(crate) use url::without_userinfo;

use indexmap::IndexMap;
use regex::{Captures, Regex};
use serde_json::Value;

/// Learned secrets shorter than this are replaced only where they sit under a secret key: a bare
/// replace of a two-letter value would shred every word that contains it.
const MIN_BARE_LEN: usize = 3;

/// Secrets at least this long are also looked for in the forms a process may print them in:
/// upper- and lower-case, base64 (at any alignment inside a longer encoded text), and split
/// across two lines. Shorter ones would make those forms match ordinary words.
const MIN_DERIVED_LEN: usize = 12;

/// Secrets longer than this get no derived forms: a PEM key of RSA 8192 bits is ~6.3 KiB, and
/// the forms of a 256 KiB value (a hostile line, a key cut by the line limit) cost 5× the rest of
/// its redaction (`examples/redact_bench.rs`), for a form no process prints.
const MAX_DERIVED_LEN: usize = 16 * 1024;

/// One redaction context (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// secret (or a derived form of one) -> placeholder number, in order of first sight.
    known: IndexMap<String, usize>,
    /// The secrets themselves (not their derived forms), for the split-line pass.
    primary: Vec<String>,
    /// Secrets the caller named; replaced bare whatever their length.
    explicit: Vec<String>,
    /// Values hidden where they sit under their key but never replaced bare: a registry
    /// `username: repro` must not turn every "reproduced" or `repro.local/…` into a placeholder.
    keyed_only: std::collections::HashSet<String>,
    /// Placeholders numbered so far (distinct secrets).
    numbered: usize,
    /// The highest `<REDACTED-n>` already present in the input (a folder redacted before): new
    /// numbers start after it, so they never collide with the old ones.
    floor: usize,
    /// The literal matcher for `known`, rebuilt when `known` grew: (the size of `known` it was
    /// built for, the matcher — `None` when the set is too large for one regex, so the next
    /// call does not try again until `known` grows).
    matcher: Option<(usize, Option<Regex>)>,
}

impl Redactor {
    /// A context that already knows `secrets` (e.g. the run token): they are numbered first, in
    /// the order given, so the run token is always `<REDACTED-1>`.
    pub(crate) fn new(secrets: &[String]) -> Self {
        Self::after_placeholders(secrets, std::iter::empty())
    }

    /// A context for inputs that may already hold placeholders (a folder redacted earlier): new
    /// secrets, `secrets` first, are numbered after the highest `<REDACTED-n>` in `texts`.
    pub(crate) fn after_placeholders<'t>(
        secrets: &[String],
        texts: impl IntoIterator<Item = &'t str>,
    ) -> Self {
        let mut r = Redactor::default();
        for t in texts {
            r.floor = r.floor.max(max_placeholder(t));
        }
        for s in secrets.iter().filter(|s| !s.is_empty()) {
            r.explicit.push(s.clone());
            r.remember(s);
        }
        r
    }

    /// A number that grows whenever this context learns anything (a secret, a form of one, a
    /// keyed-only value) and never otherwise: equal numbers mean equal knowledge, so a caller
    /// can tell that learning a text again would find what it found before.
    pub(crate) fn generation(&self) -> usize {
        self.known.len() + self.keyed_only.len()
    }

    /// How many distinct secrets this context has seen (derived forms are not counted).
    pub(crate) fn secret_count(&self) -> usize {
        self.numbered
    }

    /// Everything this context knows, sorted: (value, number) of every secret and form, and
    /// the keyed-only values (number 0).
    #[cfg(test)]
    pub(crate) fn knowledge(&self) -> Vec<(String, usize)> {
        let mut all: Vec<(String, usize)> = self
            .known
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .chain(self.keyed_only.iter().map(|k| (k.clone(), 0)))
            .collect();
        all.sort();
        all
    }

    /// The placeholder a secret is written as, if it is known.
    #[cfg(test)]
    pub(crate) fn placeholder_of(&self, secret: &str) -> Option<String> {
        self.known.get(secret).map(|n| placeholder(*n))
    }

    /// Records `value` as one secret, whole: the scenario gave it under a secret key, so no
    /// shape rule decides where it ends (`PASSWORD: "a,b"` is `a,b`, not `a`).
    pub(crate) fn learn_whole(&mut self, value: &str) {
        let v = value.trim();
        if is_secret_value(v) && !v.contains("<REDACTED-") {
            self.number(v);
        }
    }

    /// Records the secrets in `text` without changing anything.
    pub(crate) fn learn_text(&mut self, text: &str) {
        // Knowledge first: what is known whole is replaced before a shape rule reads the text,
        // so no rule learns a piece of it.
        let text = self.replace_bare(text);
        let found = find_secrets(&text);
        self.learn_found(&found);
    }

    fn learn_found(&mut self, found: &Found) {
        for (_, value) in &found.spans {
            self.remember(value);
        }
        for value in &found.extra {
            self.remember(value);
        }
        for (value, of) in &found.aliases {
            let n = self.number(of);
            self.alias(value, n);
        }
        for value in &found.keyed_only {
            self.keyed_only.insert(value.clone());
        }
    }

    /// Records the secrets in a JSON document (string values, keyed values, `--flag value` pairs).
    pub(crate) fn learn_json(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.learn_text(s),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    // `docker inspect`'s `Config.Env`: `NAME=value`, the value to the end.
                    if let Some((name, value)) = item.as_str().and_then(env_entry) {
                        if is_secret_pair(name, value) {
                            self.learn_whole(value);
                        }
                    }
                    if let (Some(Value::String(flag)), Value::String(s)) =
                        (i.checked_sub(1).map(|p| &items[p]), item)
                    {
                        if is_secret_flag(flag) && is_secret_pair(flag, s) {
                            self.remember(s);
                        }
                    }
                    self.learn_json(item);
                }
            }
            Value::Object(map) => {
                // Kubernetes env: `{"name": "AWS_SECRET_ACCESS_KEY", "value": "…"}`.
                if let (Some(Value::String(name)), Some(Value::String(value))) =
                    (map.get("name"), map.get("value"))
                {
                    if is_secret_pair(name, value) {
                        self.learn_whole(value);
                    }
                }
                for (k, item) in map {
                    self.learn_text(k);
                    match item {
                        Value::String(s) if is_secret_pair(k, s) => {
                            self.remember(s);
                            if is_weak_key(k) {
                                self.keyed_only.insert(s.clone());
                            }
                        }
                        _ => self.learn_json(item),
                    }
                }
            }
            _ => {}
        }
    }

    /// The text with every secret replaced by its placeholder.
    pub(crate) fn redact_text(&mut self, text: &str) -> String {
        // Knowledge first, shapes second (see `learn_text`).
        let known = self.replace_bare(text);
        let text = known.as_str();
        let found = find_secrets(text);
        self.learn_found(&found);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, value) in found.spans {
            out.push_str(&text[at..range.start]);
            out.push_str(&self.remember(&value));
            at = range.end;
        }
        out.push_str(&text[at..]);
        let out = self.replace_bare(&out);
        self.replace_split(&out)
    }

    /// The JSON document with every secret replaced; keys stay, structure stays.
    pub(crate) fn redact_json(&mut self, v: &Value) -> Value {
        self.learn_json(v);
        self.redact_json_learned(v)
    }

    fn redact_json_learned(&mut self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.redact_text(s)),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let after_flag = i
                        .checked_sub(1)
                        .and_then(|p| items[p].as_str())
                        .is_some_and(is_secret_flag);
                    match item {
                        Value::String(s) if after_flag && is_secret_value(s) => {
                            out.push(Value::String(self.remember(s)));
                        }
                        _ => out.push(self.redact_json_learned(item)),
                    }
                }
                Value::Array(out)
            }
            Value::Object(map) => {
                let mut out = serde_json::Map::with_capacity(map.len());
                for (k, item) in map {
                    let value = match item {
                        Value::String(s) if is_secret_pair(k, s) => Value::String(self.remember(s)),
                        _ => self.redact_json_learned(item),
                    };
                    out.insert(self.redact_text(k), value);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// Redacts one file's content, JSON structurally when it parses as JSON (so `"K3S_TOKEN=…"`
    /// inside an array is handled like an env entry), as text otherwise.
    pub(crate) fn redact_file(&mut self, name: &str, text: &str) -> String {
        if let Some(v) = parse_json_file(name, text) {
            let red = self.redact_json(&v);
            let mut s = serde_json::to_string_pretty(&red).unwrap_or_default();
            s.push('\n');
            return s;
        }
        self.redact_text(text)
    }

    /// Content that is not UTF-8 (a binary member of a bundle): secrets are found by shape in
    /// its readable parts and every known secret is replaced in the bytes themselves, so the
    /// rest of the content comes out byte for byte as it went in.
    pub(crate) fn redact_bytes(&mut self, data: &[u8]) -> Vec<u8> {
        self.learn_bytes(data);
        let mut secrets: Vec<(&String, &usize)> =
            self.known.iter().filter(|(s, _)| self.bare_ok(s)).collect();
        secrets.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        let alts: Vec<String> = secrets.iter().map(|(s, _)| regex::escape(s)).collect();
        if alts.is_empty() {
            return data.to_vec();
        }
        match regex::bytes::Regex::new(&alts.join("|")) {
            Ok(re) => re
                .replace_all(data, |c: &regex::bytes::Captures| {
                    let m = String::from_utf8_lossy(&c[0]);
                    let at = c.get(0).map_or(0..0, |g| g.range());
                    match self.known.get(m.as_ref()) {
                        Some(n) if self.bare_match_ok(data, at, &m) => placeholder(*n).into_bytes(),
                        _ => c[0].to_vec(),
                    }
                })
                .into_owned(),
            // Too many secrets for one pattern: one at a time.
            Err(_) => {
                let mut out = data.to_vec();
                for (s, n) in secrets {
                    out = replace_bytes(&out, s.as_bytes(), placeholder(*n).as_bytes());
                }
                out
            }
        }
    }

    /// Learns the secrets in the readable (UTF-8) parts of non-UTF-8 content.
    pub(crate) fn learn_bytes(&mut self, data: &[u8]) {
        for chunk in data.utf8_chunks() {
            self.learn_text(chunk.valid());
        }
    }

    /// Learns from one file's content, the same way [`Redactor::redact_file`] reads it.
    pub(crate) fn learn_file(&mut self, name: &str, text: &str) {
        match parse_json_file(name, text) {
            Some(v) => self.learn_json(&v),
            None => self.learn_text(text),
        }
    }

    /// The placeholder of `secret`, numbering it if it is new.
    fn remember(&mut self, secret: &str) -> String {
        placeholder(self.number(secret))
    }

    /// The number of `secret`, numbering it (and its derived forms) if it is new.
    fn number(&mut self, secret: &str) -> usize {
        if let Some(n) = self.known.get(secret) {
            return *n;
        }
        self.numbered += 1;
        let n = self.floor + self.numbered;
        self.known.insert(secret.to_string(), n);
        self.primary.push(secret.to_string());
        for form in derived_forms(secret) {
            self.alias(&form, n);
        }
        // Inside a JSON text (inspect.json read as text) `"` and `\` come escaped.
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = &escaped[1..escaped.len().saturating_sub(1).max(1)];
        if escaped != secret {
            self.alias(escaped, n);
        }
        n
    }

    /// Another form of secret number `n`, written with the same placeholder.
    fn alias(&mut self, form: &str, n: usize) {
        if !form.is_empty() && !is_placeholder(form) {
            self.known.entry(form.to_string()).or_insert(n);
        }
    }

    /// A secret split over two lines — one line ends with its first part, the next starts
    /// (after a log timestamp) with the rest — has each part replaced by its placeholder.
    fn replace_split(&self, text: &str) -> String {
        let secrets: Vec<(&str, usize)> = self
            .primary
            .iter()
            .filter(|s| s.len() >= MIN_DERIVED_LEN && !s.contains('\n'))
            .filter_map(|s| self.known.get(s).map(|n| (s.as_str(), *n)))
            .collect();
        if secrets.is_empty() || !text.contains('\n') {
            return text.to_string();
        }
        // (byte range, number) of the parts to replace.
        let mut cuts: Vec<(Range<usize>, usize)> = Vec::new();
        let mut start = 0;
        let lines: Vec<(usize, &str)> = text
            .split('\n')
            .map(|l| {
                let at = start;
                start += l.len() + 1;
                (at, l)
            })
            .collect();
        for pair in lines.windows(2) {
            let ((a_at, a), (b_at, b)) = (pair[0], pair[1]);
            let a_body = a.trim_end_matches('\r');
            let skip = LOG_TS.find(b).map_or(0, |m| m.end());
            let head = &b[skip..];
            for (s, n) in &secrets {
                let (Some(&last), Some(&first_of_head)) =
                    (a_body.as_bytes().last(), head.as_bytes().first())
                else {
                    break;
                };
                let sb = s.as_bytes();
                for k in 1..s.len() {
                    // Two bytes first: most pairs of lines fail here, in O(1).
                    if sb[k - 1] != last || sb[k] != first_of_head || !s.is_char_boundary(k) {
                        continue;
                    }
                    let (first, rest) = s.split_at(k);
                    if a_body.ends_with(first) && head.starts_with(rest) {
                        let a_end = a_at + a_body.len();
                        cuts.push((a_end - first.len()..a_end, *n));
                        let b_start = b_at + skip;
                        cuts.push((b_start..b_start + rest.len(), *n));
                        break;
                    }
                }
            }
        }
        if cuts.is_empty() {
            return text.to_string();
        }
        cuts.sort_by_key(|(r, _)| r.start);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (r, n) in cuts {
            if r.start < at {
                continue;
            }
            out.push_str(&text[at..r.start]);
            out.push_str(&placeholder(n));
            at = r.end;
        }
        out.push_str(&text[at..]);
        out
    }

    fn bare_ok(&self, s: &str) -> bool {
        self.is_explicit(s) || (s.chars().count() >= MIN_BARE_LEN && !self.keyed_only.contains(s))
    }

    fn is_explicit(&self, s: &str) -> bool {
        self.explicit.iter().any(|e| e == s)
    }

    /// A short learned secret is replaced bare only as a whole word: `password: admin` must not
    /// shred "administrator". Long ones (and the caller's) go wherever they are, even inside a
    /// longer word (a base64 blob, a URL).
    fn bare_match_ok(&self, text: &[u8], at: Range<usize>, secret: &str) -> bool {
        if secret.len() >= MIN_DERIVED_LEN || self.is_explicit(secret) {
            return true;
        }
        let word = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
        !(word(at.start.checked_sub(1).and_then(|i| text.get(i))) || word(text.get(at.end)))
    }

    /// Replaces every known secret wherever it occurs, longest first, leaving placeholders alone.
    fn replace_bare(&mut self, text: &str) -> String {
        self.replace_known(text, placeholder)
    }

    /// A last pass over a finished output: every known secret still in it is replaced, with the
    /// placeholder escaped for markup when `markup` (HTML, XML). Outputs are rendered from
    /// redacted data, so this normally changes nothing; it exists so that a renderer bug, or a
    /// secret that happens to be a word of repro's own text, can never leak.
    pub(crate) fn scrub(&mut self, text: &str, markup: bool) -> String {
        if markup {
            self.replace_known(text, |n| format!("&lt;REDACTED-{n}&gt;"))
        } else {
            self.replace_known(text, placeholder)
        }
    }

    fn replace_known(&mut self, text: &str, fmt: fn(usize) -> String) -> String {
        let generation = self.known.len();
        if self.matcher.as_ref().is_none_or(|(g, _)| *g != generation) {
            let mut secrets: Vec<&String> = self.known.keys().filter(|s| self.bare_ok(s)).collect();
            // Leftmost-first alternation: at one position the longer secret must win.
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            let mut alts = vec![r"<REDACTED-\d+>|&lt;REDACTED-\d+&gt;".to_string()];
            alts.extend(secrets.iter().map(|s| regex::escape(s)));
            // Escaped literals always compile; if the set is too large for the regex engine,
            // fall back to a plain replace loop below.
            self.matcher = Some((generation, Regex::new(&alts.join("|")).ok()));
        }
        match self.matcher.as_ref().and_then(|(_, re)| re.as_ref()) {
            Some(re) => re
                .replace_all(text, |c: &Captures| {
                    let m = &c[0];
                    let at = c.get(0).map_or(0..0, |g| g.range());
                    match self.known.get(m) {
                        Some(n)
                            if !is_placeholder(m) && self.bare_match_ok(text.as_bytes(), at, m) =>
                        {
                            fmt(*n)
                        }
                        _ => m.to_string(),
                    }
                })
                .into_owned(),
            None => {
                let mut out = text.to_string();
                let mut secrets: Vec<(&String, &usize)> =
                    self.known.iter().filter(|(s, _)| self.bare_ok(s)).collect();
                secrets.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
                for (s, n) in secrets {
                    out = out.replace(s.as_str(), &fmt(*n));
                }
                out
            }
        }
    }
}

fn replace_bytes(data: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        if data[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(data[i]);
            i += 1;
        }
    }
    out
}

fn placeholder(n: usize) -> String {
    format!("<REDACTED-{n}>")
}

/// The highest `n` of a `<REDACTED-n>` in `text` (0 if none).
fn max_placeholder(text: &str) -> usize {
    static RE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"<REDACTED-(\d{1,9})>").expect("static regex"));
    if !text.contains("<REDACTED-") {
        return 0;
    }
    RE.captures_iter(text)
        .filter_map(|c| c[1].parse().ok())
        .max()
        .unwrap_or(0)
}

/// An RFC 3339 timestamp at the start of a kept log line (`<ts> <text>`).
static LOG_TS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d) ").expect("static regex")
});

/// The forms a process may print a secret in besides itself: upper- and lower-case, and its
/// base64 at each of the three alignments it can have inside a longer encoded text (the part of
/// the encoding that depends on the secret's bytes alone), standard and URL-safe.
fn derived_forms(secret: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine as _;
    if !(MIN_DERIVED_LEN..=MAX_DERIVED_LEN).contains(&secret.len()) {
        return Vec::new();
    }
    let mut forms = vec![secret.to_uppercase(), secret.to_lowercase()];
    let bytes = secret.as_bytes();
    for skip in 0..3 {
        let whole = (bytes.len() - skip) / 3 * 3;
        let chunk = &bytes[skip..skip + whole];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode(chunk);
            if enc.len() >= MIN_DERIVED_LEN {
                forms.push(enc);
            }
        }
    }
    forms.retain(|f| f != secret);
    forms.sort();
    forms.dedup();
    forms
}

fn is_placeholder(s: &str) -> bool {
    static RE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^<REDACTED-\d+>$").expect("static regex"));
    RE.is_match(s)
}

fn parse_json_file(name: &str, text: &str) -> Option<Value> {
    if !name.ends_with(".json") {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// `NAME=value` with an environment variable's name.
fn env_entry(s: &str) -> Option<(&str, &str)> {
    let (name, value) = s.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some((name, value))
}

/// Whether a key (YAML key, env name, flag, JSON key, query parameter) holds a secret.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let k = key
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace(['_', '.'], "-");
    // Locations of secrets are not secrets (a file path as a key, as in `files:`, holds the
    // file's content, which is judged line by line), and `secrets-encryption` and
    // `secrets-encryption-provider` configure encryption — but `SECRETS_ENCRYPTION_KEY` (the
    // key itself, issue #24) is a secret.
    let encryption_setting = k
        .strip_prefix("k3s-")
        .or_else(|| k.strip_prefix("rke2-"))
        .unwrap_or(&k)
        .starts_with("secrets-encryption")
        && !k.ends_with("-key");
    // A file's name is a location too: `my-token.yaml:3:5` in a diagnostic is a position, and a
    // position is never redacted (the key is read with its `.` turned into `-`).
    let file_name = [
        "yaml", "yml", "json", "toml", "txt", "log", "conf", "cfg", "ini", "md", "sh", "service",
        "env", "gz", "tar", "zst",
    ]
    .iter()
    .any(|ext| {
        k.strip_suffix(ext)
            .is_some_and(|stem| stem.len() > 1 && stem.ends_with('-'))
            && key.to_ascii_lowercase().ends_with(&format!(".{ext}"))
    });
    if ["-file", "-path", "-dir"].iter().any(|s| k.ends_with(s))
        || k.contains('/')
        || file_name
        || encryption_setting
    {
        return false;
    }
    k.ends_with("token")
        // `*_KEY` (SESSION_KEY, API_KEY), `*_PASS` (DB_PASS), `*_CREDS`, `*_PWD`.
        || ["-key", "-pass", "-creds", "-pwd"].iter().any(|s| k.ends_with(s))
        // registries.yaml `auth:` blocks and docker config.json `auths` entries.
        || ["auth", "username", "pass", "creds", "pwd", "credentials"].contains(&k.as_str())
        || [
            "password",
            "passwd",
            "passphrase",
            "secret",
            "access-key",
            "accesskey",
            "private-key",
            "api-key",
            "apikey",
            // kubeconfig `client-key-data`.
            "key-data",
        ]
        .iter()
        .any(|w| k.contains(w))
}

/// A key whose value is hidden where it stands but is not a secret to hunt for elsewhere (a
/// user name: often a plain word).
fn is_weak_key(key: &str) -> bool {
    let k = key
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace(['_', '.'], "-");
    k == "username" || k.ends_with("-username")
}

/// Whether `value` under `key` is a secret: a secret key, a secret-looking value, and not the
/// working directory a shell exports as `PWD=/root`.
pub(crate) fn is_secret_pair(key: &str, value: &str) -> bool {
    let k = key.trim_start_matches('-').to_ascii_lowercase();
    is_secret_key(key)
        && is_secret_value(value)
        && !((k == "pwd" || k == "oldpwd") && value.trim().starts_with('/'))
}

fn is_secret_flag(s: &str) -> bool {
    s.starts_with("--") && !s.contains('=') && is_secret_key(s)
}

/// Whether a value under a secret key is worth hiding: not empty, not a boolean or null, not a
/// YAML block indicator, not already a placeholder, not bare punctuation (`K3S_TOKEN=` at the
/// end of a sentence in a README is followed by a backtick, not a token).
pub(crate) fn is_secret_value(v: &str) -> bool {
    let t = v.trim();
    !(t.is_empty()
        || !t.chars().any(char::is_alphanumeric)
        || [
            "true", "false", "null", "~", "|", ">", "|-", ">-", "|+", ">+", "\"\"", "''",
        ]
        .iter()
        .any(|b| t.eq_ignore_ascii_case(b))
        || is_placeholder(t))
}

/// What one text holds: secret values with their places, and values to learn without a place
/// of their own (the password part of a K10 token, replaced wherever it shows up bare).
struct Found {
    spans: Vec<(Range<usize>, String)>,
    extra: Vec<String>,
    /// (form, secret): another form of a secret, written with the secret's placeholder (each
    /// line of a PEM key's body, which a process may print alone).
    aliases: Vec<(String, String)>,
    /// Values under a weak key ([`is_weak_key`]): replaced where they stand, never bare.
    keyed_only: Vec<String>,
}

/// Every secret in `text`; spans sorted and non-overlapping.
fn find_secrets(text: &str) -> Found {
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut aliases = Vec::new();
    let mut weak: Vec<Range<usize>> = Vec::new();
    pem_spans(text, &mut ranges, &mut aliases);
    yaml_spans(text, &mut ranges, &mut weak);
    regex_spans(text, &mut ranges, &mut weak);
    url_spans(text, &mut ranges);
    unit_spans(text, &mut ranges);
    env_line_spans(text, &mut ranges);
    let keyed_only = weak.into_iter().map(|r| text[r].to_string()).collect();
    // Keep the earliest, then the longest, of overlapping spans; what a dropped span held is
    // inside the kept one, or learned and replaced bare afterwards.
    ranges.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut spans: Vec<(Range<usize>, String)> = Vec::new();
    let mut extra = Vec::new();
    for r in ranges {
        let v = &text[r.clone()];
        if !is_secret_value(v) {
            continue;
        }
        if let Some((last, _)) = spans.last() {
            if r.start < last.end {
                // Inside the kept span: replaced with it. Sticking out: learn it on its own.
                if r.end > last.end {
                    extra.push(v.to_string());
                }
                continue;
            }
        }
        spans.push((r.clone(), v.to_string()));
    }
    // A K10 token also carries its password part, which k3s may print alone.
    extra.extend(
        K10_RE
            .find_iter(text)
            .filter_map(|m| k3s_token_password(m.as_str())),
    );
    Found {
        spans,
        extra,
        aliases,
        keyed_only,
    }
}

/// A line that is an env entry of a secret name (`PASSWORD=a1,tail2`, `export K3S_TOKEN=…`,
/// as in an env file or `/etc/default/<unit>`): the value is the rest of the line, whole (its
/// quotes aside) — an env file's value ends at the line's end, not at a `,` or `;` the shape
/// rules stop at.
fn env_line_spans(text: &str, spans: &mut Vec<Range<usize>>) {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let lead = body.len() - body.trim_start().len();
        let rest = &body[lead..];
        let (skip, rest) = match rest.strip_prefix("export ") {
            Some(r) => (lead + "export ".len(), r),
            None => (lead, rest),
        };
        let Some((name, value)) = env_entry(rest) else {
            continue;
        };
        if !is_secret_key(name) {
            continue;
        }
        let v_start = start + skip + name.len() + 1;
        let trimmed = value.trim_end();
        let (mut a, mut b) = (v_start, v_start + trimmed.len());
        let quoted = trimmed.len() >= 2
            && ((trimmed.starts_with('"') && trimmed.ends_with('"'))
                || (trimmed.starts_with('\'') && trimmed.ends_with('\'')));
        if quoted {
            a += 1;
            b -= 1;
        } else if trimmed.contains(char::is_whitespace) {
            // Unquoted with blanks: not an env file's line (`K3S_TOKEN=x FOO_PASSWORD=y` on one
            // line, a message); the shape rules read it.
            continue;
        }
        if b > a {
            spans.push(a..b);
        }
    }
}

/// The body of every PEM private key (`-----BEGIN … PRIVATE KEY-----` to its END line, or to the
/// end of the text when a line limit cut the END off), in a plain file, a YAML block scalar
/// (indented lines) or a JSON string (`\n` escapes); each line of the body is learned as another
/// form of it.
fn pem_spans(text: &str, spans: &mut Vec<Range<usize>>, aliases: &mut Vec<(String, String)>) {
    static PEM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?P<v>.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\z)")
            .expect("static regex")
    });
    if !text.contains("PRIVATE KEY-----") {
        return;
    }
    for c in PEM.captures_iter(text) {
        let Some(v) = c.name("v") else { continue };
        let body = v.as_str();
        // Trim whitespace and `\n` escapes at both ends, so the markers' lines stay as they were.
        let is_pad = |s: &str| s.starts_with(char::is_whitespace) || s.starts_with("\\n");
        let mut start = 0;
        while start < body.len() && is_pad(&body[start..]) {
            start += if body[start..].starts_with("\\n") {
                2
            } else {
                body[start..].chars().next().map_or(1, char::len_utf8)
            };
        }
        let mut end = body.len();
        while end > start {
            let t = &body[start..end];
            if t.ends_with("\\n") {
                end -= 2;
            } else if t.ends_with(char::is_whitespace) {
                end -= t.chars().next_back().map_or(1, char::len_utf8);
            } else {
                break;
            }
        }
        if end <= start {
            continue;
        }
        let secret = &body[start..end];
        spans.push(v.start() + start..v.start() + end);
        for line in secret.split('\n').flat_map(|l| l.split("\\n")) {
            let line = line.trim();
            if line.len() >= 16 && !line.contains(':') {
                aliases.push((line.to_string(), secret.to_string()));
            }
        }
    }
}

/// The `<password>` of `K10<hash>::<user>:<password>` (or the secret of `K10<hash>::<id>.<secret>`).
fn k3s_token_password(token: &str) -> Option<String> {
    let rest = token.strip_prefix("K10")?.split_once("::")?.1;
    let part = match rest.rsplit_once(':') {
        Some((_, p)) => p,
        None => rest.split_once('.')?.1,
    };
    (part.len() >= 6).then(|| part.to_string())
}

static K10_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"K10[0-9a-fA-F]{8,}::[^\s"'&;,<>)\]}]+"#).expect("static regex"));

/// Rules that hold anywhere in a line; each has a group `v`, the secret.
static RULES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // k3s join tokens, full form.
        r#"(?P<v>K10[0-9a-fA-F]{8,}::[^\s"'&;,<>)\]}]+)"#,
        // Authorization headers: keep the scheme, hide the credentials.
        // The value is on the header's line: a YAML map named `authorization:` (the kubelet's
        // config drop-in: `authorization:\n  mode: Webhook`) holds no credential.
        r#"(?i)\b(?:proxy-)?authorization"?[ \t]*[:=][ \t]*"?(?:(?:bearer|basic|token|digest|negotiate)[ \t]+)?(?P<v>[^\s"',;]+)"#,
        // Bearer tokens wherever they appear.
        r#"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})"#,
        // JSON Web Tokens (header.payload.signature, both JSON objects in base64url).
        r#"\b(?P<v>eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)"#,
    ]
    .iter()
    .map(|r| Regex::new(r).expect("static regex"))
    .collect()
});

/// `key=value`, `key: value`, `"key": "value"`, `key="value"`, `key=\"value\"` (inside a logrus
/// msg), with the key checked by [`is_secret_key`]: the key and its separator,
/// `[A-Za-z0-9_.-]+"?[ \t]*[:=][ \t]*`, are found by [`keyed_key_at`], the value by
/// [`KEYED_VALUE`] (read only after a secret key, so a line costs time linear in its length).
/// The first key and separator at or after `at`: (the key, where its value starts). By hand,
/// not by regex: a regex search per key costs too much on a line of 30,000 keys. Each `:` or
/// `=` is looked at once, with the blanks, quote and key before it.
fn keyed_key_at(text: &str, at: usize) -> Option<(Range<usize>, usize)> {
    let b = text.as_bytes();
    let is_key = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
    let blank = |c: u8| c == b' ' || c == b'\t';
    let mut i = at;
    while i < b.len() {
        if b[i] != b':' && b[i] != b'=' {
            i += 1;
            continue;
        }
        let mut j = i;
        while j > at && blank(b[j - 1]) {
            j -= 1;
        }
        if j > at && b[j - 1] == b'"' {
            j -= 1;
            // `\"password\":\"…\"`: JSON escaped inside a logrus msg.
            if j > at && b[j - 1] == b'\\' {
                j -= 1;
            }
        }
        let end = j;
        while j > at && is_key(b[j - 1]) {
            j -= 1;
        }
        if j < end {
            let mut v = i + 1;
            while v < b.len() && blank(b[v]) {
                v += 1;
            }
            return Some((j..end, v));
        }
        i += 1;
    }
    None
}

/// The value after a key found by [`keyed_key_at`], from where it starts.
static KEYED_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^(?:\\"(?P<eq>(?:[^"\\]|\\[^"])*)\\"|"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>[^']*)'|(?P<bare>(?:[^\s"'`,;&)}\]\\]|\\[^"])+))"#,
    )
    .expect("static regex")
});

/// `--token value` on a command line (the `=` form is [`keyed_key_at`]'s): the first flag at
/// or after `at` that starts the text or follows a blank, quote, `[` or `,`, with the blanks
/// after it (`(?:^|[\s"'\[,])--(?P<k>[A-Za-z0-9][A-Za-z0-9_-]*)[ \t]+`): (the flag's name,
/// where its value starts). By hand, like [`keyed_key_at`]; the value is [`FLAG_VALUE`].
fn flag_key_at(text: &str, at: usize) -> Option<(Range<usize>, usize)> {
    let b = text.as_bytes();
    let mut i = at;
    while i + 2 < b.len() {
        // `-` is ASCII, so `i` is a char boundary once it holds one.
        let dashes = b[i] == b'-' && b[i + 1] == b'-' && b[i + 2].is_ascii_alphanumeric();
        let starts = dashes
            && (i == 0
                || (i > at
                    && text[..i].chars().next_back().is_some_and(|c| {
                        c.is_whitespace() || matches!(c, '"' | '\'' | '[' | ',')
                    })));
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i + 3;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || matches!(b[end], b'_' | b'-')) {
            end += 1;
        }
        let mut v = end;
        while v < b.len() && (b[v] == b' ' || b[v] == b'\t') {
            v += 1;
        }
        if v > end {
            return Some((i + 2..end, v));
        }
        i += 1;
    }
    None
}

static FLAG_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"',\]-][^\s"',\]]*))"#)
        .expect("static regex")
});

fn regex_spans(text: &str, spans: &mut Vec<Range<usize>>, weak: &mut Vec<Range<usize>>) {
    for re in RULES.iter() {
        for c in re.captures_iter(text) {
            if let Some(v) = c.name("v") {
                spans.push(v.range());
            }
        }
    }
    let keyed = |text: &str, at: usize| keyed_key_at(text, at);
    let flag = |text: &str, at: usize| flag_key_at(text, at);
    type KeyAt<'f> = &'f dyn Fn(&str, usize) -> Option<(Range<usize>, usize)>;
    let finders: [(KeyAt<'_>, &Regex); 2] = [(&keyed, &KEYED_VALUE), (&flag, &FLAG_VALUE)];
    for (key_at, value_re) in finders {
        // Matches may nest: in `msg="join token=\"x\""` the `msg` value holds a keyed secret.
        // So after a non-secret key, search again from where its value starts; after a secret
        // one, from its value's end. Only a secret key's value is read: reading every value
        // to its end made `a=a=a=…` quadratic (issue #24).
        let mut at = 0;
        while let Some((k, start)) = key_at(text, at) {
            let key = &text[k];
            let mut next = start;
            // Header names are the Authorization rule's; here they would swallow the scheme.
            if is_secret_key(key) && !key.eq_ignore_ascii_case("authorization") {
                let value = value_re.captures(&text[start..]).and_then(|v| {
                    ["eq", "dq", "sq", "bare"]
                        .iter()
                        .find_map(|g| v.name(g))
                        .map(|m| start + m.start()..start + m.end())
                });
                if let Some(v) = value {
                    if is_secret_pair(key, &text[v.clone()]) {
                        if is_weak_key(key) {
                            weak.push(v.clone());
                        }
                        next = v.end;
                        spans.push(v);
                    }
                }
            }
            at = next.max(at + 1);
            // Stay on a char boundary when stepping by one byte.
            while at < text.len() && !text.is_char_boundary(at) {
                at += 1;
            }
            if at >= text.len() {
                break;
            }
        }
    }
}

/// Credentials in URLs (`url.rs` reads them): a password, and user-info without a password
/// that looks like a token (GitHub's `https://ghp_…@github.com`), not a user name like `git@`.
fn url_spans(text: &str, spans: &mut Vec<Range<usize>>) {
    for u in url::userinfos(text) {
        match u.password {
            Some(p) if !p.is_empty() => spans.push(p),
            Some(_) => {}
            None if looks_like_token(&text[u.user.clone()]) => spans.push(u.user),
            None => {}
        }
    }
}

/// A user-info that is a credential rather than a name: long, or letters and digits mixed.
fn looks_like_token(s: &str) -> bool {
    s.len() >= 16
        || (s.len() >= 8
            && s.chars().any(|c| c.is_ascii_digit())
            && s.chars().any(|c| c.is_ascii_alphabetic()))
}

/// Command lines split one argument a line, as k3s's install.sh writes k3s.service
/// (`quote_indent`: `\t'--token' \` then `\t'VALUE' \`, a `'` inside written `'\''`), and the
/// short `-t TOKEN` (`token,t` of k3s's and rke2's server and agent flags) on a k3s or rke2
/// command line.
fn unit_spans(text: &str, spans: &mut Vec<Range<usize>>) {
    static FLAG_LINE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^[ \t]*['"]?(?P<f>--?[A-Za-z0-9][A-Za-z0-9_-]*)['"]?[ \t]*\\[ \t]*\r?$"#)
            .expect("static regex")
    });
    static VALUE_LINE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^[ \t]*(?:'(?P<sq>(?:[^']|'\\'')*)'|"(?P<dq>[^"]*)"|(?P<bare>[^\s'"\\-][^\s'"\\]*))[ \t]*(?:\\[ \t]*)?\r?$"#)
            .expect("static regex")
    });
    // `-t TOKEN` after any distribution's binary: the names come from the list of them, so a
    // new distribution's token is covered the day it is added.
    static SHORT_T: LazyLock<Regex> = LazyLock::new(|| {
        let binaries: Vec<String> = (distro::Distro::ALL.iter())
            .map(|d| regex::escape(d.facts().binary))
            .collect();
        Regex::new(&format!(
            r#"(?i)\b(?:{})\b[^\n]*?[ \t]-t[ \t]+(?:'(?P<sq>[^'\s]+)'|"(?P<dq>[^"\s]+)"|(?P<bare>[^\s'"-][^\s'"]*))"#,
            binaries.join("|")
        ))
        .expect("static regex")
    });
    fn value<'t>(c: &Captures<'t>) -> Option<regex::Match<'t>> {
        ["sq", "dq", "bare"].iter().find_map(|g| c.name(g))
    }
    if text.contains("-t") {
        for c in SHORT_T.captures_iter(text) {
            if let Some(v) = value(&c) {
                spans.push(v.range());
            }
        }
    }
    if !text.contains('\\') {
        return;
    }
    let mut offset = 0;
    let mut after_flag = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if after_flag {
            if let Some(v) = VALUE_LINE.captures(body).as_ref().and_then(value) {
                spans.push(offset + v.start()..offset + v.end());
            }
        }
        after_flag = FLAG_LINE
            .captures(body)
            .is_some_and(|c| matches!(&c["f"], f if f == "-t" || is_secret_flag(f)));
        offset += line.len();
    }
}

/// YAML-style lines: `key: value` (whole rest of the line, quotes and comment aside) and block
/// values under a secret key (`token: |`, or a list of items below `password:`).
fn yaml_spans(text: &str, spans: &mut Vec<Range<usize>>, weak: &mut Vec<Range<usize>>) {
    static LINE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"^(?P<ind>[ \t]*)(?:-[ \t]+)?["']?(?P<k>[A-Za-z0-9_.-]+)["']?[ \t]*:(?:[ \t]+(?P<rest>.*?))?[ \t]*$"#)
            .expect("static regex")
    });
    // (indent of the secret key, whether its value is a block scalar `|`/`>`).
    let mut block: Option<(usize, bool)> = None;
    // A Kubernetes env item (`- name: AWS_SECRET_ACCESS_KEY` and `value: …`, in either order):
    // (the column of its keys, whether its name is a secret key, its value's span).
    let mut env_item: Option<(usize, bool, Option<Range<usize>>)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let keyed = LINE.captures(body);
        if let Some(c) = &keyed {
            let (k, col) = (&c["k"], c.name("k").map_or(0, |m| m.start()));
            let item_start = body.trim_start().starts_with('-');
            if item_start || env_item.as_ref().is_none_or(|(at, _, _)| col < *at) {
                env_item = Some((col, false, None));
            }
            if let (Some((at, secret, value)), Some(rest)) = (&mut env_item, c.name("rest")) {
                if *at == col {
                    let r = unquote_span(rest.as_str(), rest.start());
                    match k {
                        "name" => *secret = is_secret_key(&body[r.clone()]),
                        "value" => *value = Some(offset + r.start..offset + r.end),
                        _ => {}
                    }
                    if *secret {
                        if let Some(v) = value.take() {
                            if is_secret_value(&text[v.clone()]) {
                                spans.push(v);
                            }
                        }
                    }
                }
            }
        }
        if let Some((key_indent, scalar)) = block {
            if body.trim().is_empty() {
                offset += line.len();
                continue;
            }
            // Inside a mapping under a secret key (`auth:` of registries.yaml), `key: value`
            // lines are judged by their own key, so `username:` stays readable and its value is
            // learned alone; other lines (list items, block text) are secret whole.
            if indent > key_indent && (scalar || keyed.is_none()) {
                let content = body.trim_start();
                let content = content.strip_prefix("- ").unwrap_or(content);
                let start = offset + body.len() - content.len();
                spans.push(start..offset + body.len());
                offset += line.len();
                continue;
            }
            if indent <= key_indent {
                block = None;
            }
        }
        if let Some(c) = keyed {
            let key = &c["k"];
            if is_secret_key(key) {
                match c.name("rest") {
                    Some(rest)
                        if !rest.as_str().starts_with(['|', '>']) && !rest.as_str().is_empty() =>
                    {
                        let r = unquote_span(rest.as_str(), rest.start());
                        if is_secret_pair(
                            key,
                            &rest.as_str()[r.start - rest.start()..r.end - rest.start()],
                        ) {
                            spans.push(offset + r.start..offset + r.end);
                            if is_weak_key(key) {
                                weak.push(offset + r.start..offset + r.end);
                            }
                        }
                    }
                    rest => {
                        let scalar = rest.is_some_and(|r| r.as_str().starts_with(['|', '>']));
                        let ind = c.name("ind").map(|m| m.as_str().len()).unwrap_or(0);
                        block = Some((ind, scalar));
                    }
                }
            }
        }
        offset += line.len();
    }
}

/// The span of a YAML scalar's content: inside its quotes, or before a ` #` comment.
fn unquote_span(v: &str, base: usize) -> Range<usize> {
    let quoted = |q: char| {
        v.strip_prefix(q)
            .and_then(|inner| inner.rfind(q).map(|end| base + 1..base + 1 + end))
    };
    match v.chars().next() {
        Some('"') => quoted('"').unwrap_or(base..base + v.len()),
        Some('\'') => quoted('\'').unwrap_or(base..base + v.len()),
        _ => {
            let end = v.find(" #").unwrap_or(v.len());
            base..base + v[..end].trim_end().len()
        }
    }
}

#[cfg(test)]
mod tests;
