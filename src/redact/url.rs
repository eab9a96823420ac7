//! Credentials in a URL, read one way: `scheme://user:password@host`, the password up to the
//! `@` that a host and its end follow (a password may hold `@` or `/`:
//! `tcp://admin:sl/pw@host`), and `scheme://TOKEN@host`. The redactor replaces what is secret
//! in it (`url_spans` in mod.rs); [`without_userinfo`] drops all of it from a URL repro shows
//! but keeps using (a download's, a mirror's). One reading, so a URL that one of them takes
//! apart the other does too.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// The user-info of one URL in a text.
pub(super) struct Userinfo {
    pub(super) user: Range<usize>,
    /// After a `:` (empty for `user:@host`).
    pub(super) password: Option<Range<usize>>,
    /// `user[:password]@`, the `@` included.
    pub(super) whole: Range<usize>,
}

/// Every URL user-info in `text`, in order. `host:5000/v2/img@sha256:…` is a port and a path,
/// not a password: no user-info.
pub(super) fn userinfos(text: &str) -> Vec<Userinfo> {
    static URL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?i)\b[a-z][a-z0-9+.-]*://(?P<u>[^:/@\s"'<>]+)(?::(?P<p>[^\s"'<>]*?))?@[A-Za-z0-9.\[\]_-]+(?:[:/\s"'?#,;()\]}>]|$)"#)
            .expect("static regex")
    });
    static PORT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\d+(?:/|$)").expect("static regex"));
    if !text.contains("://") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in URL.captures_iter(text) {
        let (Some(u), p) = (c.name("u"), c.name("p")) else {
            continue;
        };
        if p.is_some_and(|p| !p.as_str().is_empty() && PORT.is_match(p.as_str())) {
            continue;
        }
        let at = p.map_or(u.end(), |p| p.end());
        out.push(Userinfo {
            user: u.range(),
            password: p.map(|p| p.range()),
            whole: u.start()..at + 1,
        });
    }
    out
}

/// `scheme://host/…` without its `user:password@` (kept only in the request itself): how a URL
/// repro fetches from is shown and recorded.
pub(crate) fn without_userinfo(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut from = 0;
    for u in userinfos(url) {
        out.push_str(&url[from..u.whole.start]);
        from = u.whole.end;
    }
    out.push_str(&url[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_the_url_are_never_shown() {
        assert_eq!(
            without_userinfo("https://user:s3cret@mirror.local:8443/k3s/k3s-abc"),
            "https://mirror.local:8443/k3s/k3s-abc"
        );
        assert_eq!(
            without_userinfo("https://ghp_0123456789abcdef@github.com/x"),
            "https://github.com/x"
        );
        assert_eq!(
            without_userinfo("http://127.0.0.1:1/k3s-abc"),
            "http://127.0.0.1:1/k3s-abc"
        );
        // An `@` in the path is not userinfo; a port and a path before one are not a password.
        assert_eq!(
            without_userinfo("https://host/a@b/k3s"),
            "https://host/a@b/k3s"
        );
        assert_eq!(
            without_userinfo("https://host:5000/v2/img@sha256:ab"),
            "https://host:5000/v2/img@sha256:ab"
        );
    }

    /// A password with `/` or `@` in it: the redactor and the display cut the same user-info.
    #[test]
    fn one_reading_for_the_redactor_and_the_display() {
        let url = "tcp://admin:sl/p@w@docker.local:2376/x";
        assert_eq!(without_userinfo(url), "tcp://docker.local:2376/x");
        let red = crate::redact::Redactor::new(&[]).redact_text(url);
        assert_eq!(red, "tcp://admin:<REDACTED-1>@docker.local:2376/x");
    }
}
