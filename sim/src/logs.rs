//! Log lines in logrus's text format, on stderr, as k3s writes them.
//!
//! repro reads these lines with the same regexes it uses on real k3s, so the
//! format matters down to the quoting: `time="…" level=info msg="…"`, values
//! quoted only when logrus would quote them, and quoted with Go's `%q` rules.

use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// logrus levels used by k3s (text names as logrus prints them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
    Fatal,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Fatal => "fatal",
        }
    }
}

/// One lock for every writer of a log line, so lines from the server and the
/// agent threads never interleave mid-line (the garbage fault does that on
/// purpose, on stdout only).
static STDERR_LOCK: Mutex<()> = Mutex::new(());

pub fn info(msg: impl AsRef<str>) {
    emit(Level::Info, msg.as_ref());
}

pub fn warn(msg: impl AsRef<str>) {
    emit(Level::Warning, msg.as_ref());
}

pub fn error(msg: impl AsRef<str>) {
    emit(Level::Error, msg.as_ref());
}

/// Logs at level fatal and exits 1, as `logrus.Fatal` does.
pub fn fatal(msg: impl AsRef<str>) -> ! {
    emit(Level::Fatal, msg.as_ref());
    std::process::exit(1);
}

fn emit(level: Level, msg: &str) {
    raw(&format_line(SystemTime::now(), level, msg));
}

/// Writes a line that is not logrus's (klog lines of the embedded kubelet).
pub fn raw(line: &str) {
    let _guard = STDERR_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut err = std::io::stderr().lock();
    // A closed stderr must not kill the node: k3s would not die either.
    let _ = err.write_all(line.as_bytes());
    if !line.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
    let _ = err.flush();
}

/// `time="2026-11-30T09:00:00Z" level=info msg="…"` plus a newline.
pub fn format_line(at: SystemTime, level: Level, msg: &str) -> String {
    format!(
        "time={} level={} msg={}\n",
        quote_if_needed(&rfc3339_utc(at)),
        level.as_str(),
        quote_if_needed(msg)
    )
}

/// logrus `TextFormatter.needsQuoting`: anything outside `[A-Za-z0-9-._/@^+]`
/// makes the value quoted.
fn needs_quoting(text: &str) -> bool {
    text.chars().any(|ch| {
        !(ch.is_ascii_alphanumeric() || matches!(ch, '-' | '.' | '_' | '/' | '@' | '^' | '+'))
    })
}

fn quote_if_needed(text: &str) -> String {
    if needs_quoting(text) {
        go_quote(text)
    } else {
        text.to_string()
    }
}

/// Go's `strconv.Quote` (what `%q` prints) for the characters k3s messages hold.
pub fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() => {
                let code = c as u32;
                if code < 0x80 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else {
                    out.push_str(&format!("\\u{code:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// RFC 3339 in UTC with whole seconds, the form k3s logs in a container.
pub fn rfc3339_utc(at: SystemTime) -> String {
    let secs = at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// UTC month, day, hour, minute, second and microseconds, for klog headers.
pub fn utc_parts(at: SystemTime) -> (u32, u32, u64, u64, u64, u32) {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (_, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    (
        m,
        d,
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        since.subsec_micros(),
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn formats_like_logrus_text() {
        // 2026-11-30T09:00:00Z
        let line = format_line(at(1_796_029_200), Level::Info, "k3s is up and running");
        assert_eq!(
            line,
            "time=\"2026-11-30T09:00:00Z\" level=info msg=\"k3s is up and running\"\n"
        );
    }

    #[test]
    fn bare_values_stay_unquoted() {
        let line = format_line(at(0), Level::Warning, "pong");
        assert_eq!(
            line,
            "time=\"1970-01-01T00:00:00Z\" level=warning msg=pong\n"
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(
            go_quote("Unknown flag --x found in config.yaml, skipping\n"),
            "\"Unknown flag --x found in config.yaml, skipping\\n\""
        );
        assert_eq!(
            go_quote("Get \"https://a\": x"),
            "\"Get \\\"https://a\\\": x\""
        );
        assert_eq!(go_quote("\u{1b}"), "\"\\x1b\"");
    }

    #[test]
    fn dates_cross_leap_years() {
        assert_eq!(rfc3339_utc(at(951_782_400)), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(at(1_709_208_000)), "2024-02-29T12:00:00Z");
    }
}
