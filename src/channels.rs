//! Release channels (`stable`, `latest`, `v1.33`, …) turned into versions.
//!
//! A distribution's channel server (its facts' `channel_server`) answers a
//! channel with a redirect to the GitHub release page of its current version. repro has no TLS
//! stack of its own (and adds none for one request), so it asks `curl` for that redirect. Where
//! the network or curl is missing, the caller is told so and asked for explicit versions:
//! a channel is never guessed from a stale list. `REPRO_CHANNEL_SERVER` points at a mirror.

use std::time::Duration;

use distro::{Distro, Version};

pub(crate) const SERVER_ENV: &str = "REPRO_CHANNEL_SERVER";

/// Whether a `--k3s-versions` entry names a channel rather than a version.
pub(crate) fn is_channel(s: &str) -> bool {
    if matches!(s, "stable" | "latest" | "testing") {
        return true;
    }
    // Per-minor channels: `v1.33`.
    s.strip_prefix('v')
        .and_then(|r| r.split_once('.'))
        .is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && a.chars().all(|c| c.is_ascii_digit())
                && b.chars().all(|c| c.is_ascii_digit())
        })
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ChannelError {
    #[error("cannot resolve channel `{channel}`: the {distro} channel server {url} is unreachable ({why}); channels need network access — pass explicit versions instead, e.g. {}", distro.facts().example_version)]
    Unreachable {
        distro: Distro,
        channel: String,
        url: String,
        why: String,
    },
    #[error("cannot resolve channel `{channel}`: `curl` is not available to ask {url} (repro has no HTTPS client built in) — install curl, or pass explicit versions instead, e.g. {}", distro.facts().example_version)]
    NoClient {
        distro: Distro,
        channel: String,
        url: String,
    },
    #[error("cannot resolve channel `{channel}`: {url} answered {answer}, not a redirect to a {distro} release — check the channel name (stable, latest, v1.33, …) or pass explicit versions")]
    Unexpected {
        distro: Distro,
        channel: String,
        url: String,
        answer: String,
    },
}

/// The channel server's base URL.
pub(crate) fn server(distro: Distro) -> String {
    std::env::var(SERVER_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| distro.facts().channel_server.to_string())
        .trim_end_matches('/')
        .to_string()
}

/// Asks the channel server for the channel's current version.
pub(crate) async fn resolve(distro: Distro, channel: &str) -> Result<Version, ChannelError> {
    let url = format!("{}/{channel}", server(distro));
    let out = tokio::process::Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--proto",
            "=https,http",
            "--connect-timeout",
            "5",
            "--max-time",
            "20",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code} %{redirect_url}",
            &url,
        ])
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(Duration::from_secs(30), out).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ChannelError::NoClient {
                distro,
                channel: channel.into(),
                url,
            })
        }
        Ok(Err(e)) => {
            return Err(ChannelError::Unreachable {
                distro,
                channel: channel.into(),
                url,
                why: format!("curl could not start: {e}"),
            })
        }
        Err(_) => {
            return Err(ChannelError::Unreachable {
                distro,
                channel: channel.into(),
                url,
                why: "no answer within 30s".into(),
            })
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ChannelError::Unreachable {
            distro,
            channel: channel.into(),
            url,
            why: if why.is_empty() {
                format!("curl exited with {}", out.status)
            } else {
                why
            },
        });
    }
    let (code, location) = stdout.split_once(' ').unwrap_or((stdout.as_str(), ""));
    version_from_redirect(location).ok_or_else(|| ChannelError::Unexpected {
        distro,
        channel: channel.into(),
        url,
        answer: if location.is_empty() {
            format!("HTTP {code} without a redirect")
        } else {
            format!("HTTP {code} → {location}")
        },
    })
}

/// `https://github.com/k3s-io/k3s/releases/tag/v1.33.5%2Bk3s1` → v1.33.5+k3s1.
pub(crate) fn version_from_redirect(location: &str) -> Option<Version> {
    let last = location.trim().trim_end_matches('/').rsplit('/').next()?;
    let decoded = last.replace("%2B", "+").replace("%2b", "+");
    decoded.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_channels_from_versions() {
        for c in ["stable", "latest", "testing", "v1.33", "v1.9"] {
            assert!(is_channel(c), "{c}");
        }
        for v in ["v1.33.4+k3s1", "v1.33.", "1.33", "v1", "banana", "vx.y"] {
            assert!(!is_channel(v), "{v}");
        }
    }

    #[test]
    fn reads_the_version_from_the_redirect() {
        assert_eq!(
            version_from_redirect("https://github.com/k3s-io/k3s/releases/tag/v1.33.5%2Bk3s1")
                .map(|v| v.to_string()),
            Some("v1.33.5+k3s1".to_string())
        );
        assert_eq!(
            version_from_redirect("https://github.com/k3s-io/k3s/releases/tag/v1.34.1+k3s1/")
                .map(|v| v.to_string()),
            Some("v1.34.1+k3s1".to_string())
        );
        assert!(version_from_redirect("").is_none());
        assert!(version_from_redirect("https://example.com/releases").is_none());
    }
}
