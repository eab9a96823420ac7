//! Everything repro prints goes through here (`outln!`, `out!`, `errln!`, `err!`), for two
//! reasons:
//!
//! - Text from data — container log lines, check and step names, file paths, values from a
//!   results folder — must not drive the terminal: an ESC starting an unterminated OSC sequence
//!   swallows everything after it, `\x1b[2J` clears the screen, a `\r` overwrites the line.
//!   Every control character except `\n` and `\t` (C0, ESC, DEL and the C1 range U+0080–U+009F,
//!   which UTF-8 terminals also obey) is shown as its JSON spelling `\u001b`: visible, and a
//!   JSON document on stdout stays valid and decodes to the same text.
//! - A closed stdout or stderr (`repro list | head -c0`) is the reader's choice: `println!`
//!   would panic on it. The first broken pipe stops writing to that stream; the command goes
//!   on and exits with its own code.

use std::borrow::Cow;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a character is shown escaped rather than written.
fn is_neutralised(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c => c.is_control(), // C0, DEL and C1 (U+0080..=U+009F)
    }
}

/// Drops `ESC [ … letter` sequences: a program's colours in output read back as text (the
/// check-config script's words, an image build's stderr), which would otherwise be shown as
/// `\u001b[91m`.
pub(crate) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with every control character but `\n` and `\t` replaced by `\uXXXX` (borrowed when
/// there is none, the common case).
pub(crate) fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_neutralised) {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_neutralised(c) {
            s.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            s.push(c);
        }
    }
    Cow::Owned(s)
}

/// An error message for the terminal with every secret it echoes (a flag's value, a URL's
/// password, a keyed value of a file it quotes) replaced, by shape: errors quote user input,
/// and the terminal, a CI log or a pasted issue is an output like any other (issue #24).
pub fn redacted(text: &str) -> String {
    redacted_with(&[], text)
}

/// [`redacted`] in a context that knows `secrets` already (also what `examples/redact_bench.rs`
/// times: the library's redactor, from outside the crate).
pub fn redacted_with(secrets: &[String], text: &str) -> String {
    // A message may quote text a run already redacted: new numbers start after its
    // placeholders, so `<REDACTED-1>` never means two secrets in one message.
    crate::redact::Redactor::after_placeholders(secrets, [text]).redact_text(text)
}

/// clap's own error for a command line it could not parse, printed the way repro prints its
/// errors: redacted (clap quotes the argument it refused: `--token=…`) and sanitised; exit 2.
/// Help and version go to stdout as clap writes them, exit 0.
pub fn clap_exit(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit()
    }
    write_err(&redacted(&e.render().to_string()));
    crate::exit::now(crate::exit::Exit::BadInput.code())
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes sanitised text to stdout. A broken pipe closes it for the rest of the process;
/// other errors are returned (a full disk behind `> file` is worth telling).
pub fn write_out(text: &str) -> std::io::Result<()> {
    write_to(&mut std::io::stdout().lock(), &STDOUT_CLOSED, text)
}

/// Writes sanitised text to stderr; there is nobody to tell when that fails.
pub fn write_err(text: &str) {
    let _ = write_to(&mut std::io::stderr().lock(), &STDERR_CLOSED, text);
}

/// A colour for a row that differs from what was asked (#32 item 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    /// The documented bug's value, or a value that matches neither world.
    Red,
    /// A cell the check does not judge (`bug: any`).
    Dim,
}

/// Whether stdout gets colour: a terminal only (never a file or a pipe), and not when
/// `NO_COLOR` is set to anything (no-color.org) or `TERM` is `dumb`.
pub(crate) fn stdout_colour() -> bool {
    use std::io::IsTerminal;
    colour_wanted(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

fn colour_wanted(
    terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

/// `line` sanitised, then wrapped in `paint`'s SGR code: the code is added after the data's
/// own control characters were neutralised, so data can never colour (or clear) anything.
pub(crate) fn painted(line: &str, paint: Option<Paint>) -> String {
    let clean = sanitize(line);
    match paint {
        None => clean.into_owned(),
        Some(Paint::Red) => format!("\x1b[31m{clean}\x1b[0m"),
        Some(Paint::Dim) => format!("\x1b[2m{clean}\x1b[0m"),
    }
}

/// Writes lines already passed through [`painted`] to stdout as they are (their SGR codes
/// kept), quiet on a closed stdout like [`write_out`].
pub(crate) fn write_out_painted(text: &str) -> std::io::Result<()> {
    write_raw(&mut std::io::stdout().lock(), &STDOUT_CLOSED, text)
}

fn write_raw(w: &mut impl Write, closed: &AtomicBool, text: &str) -> std::io::Result<()> {
    if closed.load(Ordering::SeqCst) {
        return Ok(());
    }
    match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            closed.store(true, Ordering::SeqCst);
            Ok(())
        }
        other => other,
    }
}

fn write_to(w: &mut impl Write, closed: &AtomicBool, text: &str) -> std::io::Result<()> {
    write_raw(w, closed, &sanitize(text))
}

/// `println!` for repro: sanitised, quiet on a closed stdout.
#[macro_export]
macro_rules! outln {
    () => {{
        let _ = $crate::term::write_out("\n");
    }};
    ($($arg:tt)*) => {{
        let mut s = format!($($arg)*);
        s.push('\n');
        let _ = $crate::term::write_out(&s);
    }};
}

/// `print!` for repro: sanitised, quiet on a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = $crate::term::write_out(&format!($($arg)*));
    }};
}

/// `eprintln!` for repro: sanitised, quiet on a closed stderr.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::term::write_err("\n")
    };
    ($($arg:tt)*) => {{
        let mut s = format!($($arg)*);
        s.push('\n');
        $crate::term::write_err(&s);
    }};
}

/// `eprint!` for repro: sanitised, quiet on a closed stderr.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::term::write_err(&format!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(colour_wanted(true, None, Some(OsStr::new("xterm"))));
        assert!(colour_wanted(true, Some(OsStr::new("")), None));
        assert!(
            !colour_wanted(false, None, Some(OsStr::new("xterm"))),
            "a file or pipe"
        );
        assert!(
            !colour_wanted(true, Some(OsStr::new("1")), None),
            "NO_COLOR"
        );
        assert!(!colour_wanted(true, None, Some(OsStr::new("dumb"))));
    }

    #[test]
    fn paint_comes_after_the_data_is_neutralised() {
        let row = "  BUG etcd-2 \x1b[2Jembedded-registry";
        assert_eq!(
            painted(row, Some(Paint::Red)),
            "\x1b[31m  BUG etcd-2 \\u001b[2Jembedded-registry\x1b[0m"
        );
        assert_eq!(
            painted(row, None),
            "  BUG etcd-2 \\u001b[2Jembedded-registry"
        );
    }

    #[test]
    fn redacted_messages_number_after_their_placeholders() {
        let out = redacted("run token <REDACTED-1>; retry with token=msg-secret-1");
        assert_eq!(out, "run token <REDACTED-1>; retry with token=<REDACTED-2>");
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        let hostile = "a\u{1b}]0;pwned b\u{1b}[2J c\rd\u{7f}e\u{9b}31mf\u{0}g\u{7}";
        let s = sanitize(hostile);
        assert_eq!(
            s,
            "a\\u001b]0;pwned b\\u001b[2J c\\u000dd\\u007fe\\u009b31mf\\u0000g\\u0007"
        );
        assert!(!s.chars().any(|c| c.is_control()));
    }

    #[test]
    fn newlines_tabs_and_plain_text_pass_borrowed() {
        let plain = "step 1\tetcd-2 → ready\nnext line ✓";
        assert!(matches!(sanitize(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn sanitised_json_stays_json_with_the_same_value() {
        let v = serde_json::json!({"name": "x\u{1b}]0;t\u{9b}\u{7f}\r"});
        let text = serde_json::to_string(&v).expect("json");
        let clean = sanitize(&text);
        assert!(!clean.chars().any(|c| c.is_control()));
        let back: serde_json::Value = serde_json::from_str(&clean).expect("still JSON");
        assert_eq!(back, v);
    }

    /// A writer whose reader has gone.
    struct Closed(u32);
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(std::io::Error::from(ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_stops_writing_quietly() {
        let closed = AtomicBool::new(false);
        let mut w = Closed(0);
        assert!(write_to(&mut w, &closed, "one\n").is_ok());
        assert!(closed.load(Ordering::SeqCst));
        assert!(write_to(&mut w, &closed, "two\n").is_ok());
        assert_eq!(w.0, 1, "nothing written after the pipe closed");
    }
}
