//! `k3s kubectl … get --raw PATH`: the one kubectl call repro makes.
//!
//! Prints the body and exits 0 on 200; otherwise prints kubectl's error text
//! on stderr and exits 1 (`Error from server (ServiceUnavailable): apiserver
//! disabled` for an etcd-only node without supervisor metrics). The server
//! comes from `--server`, else the kubeconfig (default `/etc/rancher/k3s/k3s.yaml`,
//! the path `k3s kubectl` uses).

use std::io::Write;
use std::time::Duration;

use serde::Deserialize;

use crate::http::{self, Auth, ClientError, Url};

#[derive(Debug, Default, PartialEq, Eq)]
pub struct KubectlArgs {
    pub kubeconfig: Option<String>,
    pub server: Option<String>,
    pub raw: Option<String>,
    pub verb: Option<String>,
}

pub fn parse_args(args: &[String]) -> Result<KubectlArgs, String> {
    let mut out = KubectlArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        let slot = match name {
            "--kubeconfig" => &mut out.kubeconfig,
            "--server" | "-s" => &mut out.server,
            "--raw" => &mut out.raw,
            _ if name.starts_with('-') => continue, // e.g. --request-timeout=5s
            _ => {
                if out.verb.is_none() {
                    out.verb = Some(name.to_string());
                }
                continue;
            }
        };
        let value = match inline {
            Some(v) => v,
            None => {
                let v = args
                    .get(i)
                    .ok_or_else(|| format!("error: flag needs an argument: {name}"))?;
                i += 1;
                v.clone()
            }
        };
        *slot = Some(value);
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
}

#[derive(Deserialize)]
struct NamedUser {
    user: UserEntry,
}

#[derive(Deserialize, Default)]
struct UserEntry {
    #[serde(rename = "client-certificate-data", default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

/// What a kubeconfig says: the first cluster's server and the first user's
/// credential (k3s's kubeconfig has one of each).
struct Loaded {
    server: Option<String>,
    user: UserEntry,
}

#[derive(Deserialize)]
struct NamedCluster {
    cluster: ClusterEntry,
}

#[derive(Deserialize)]
struct ClusterEntry {
    server: String,
}

fn read_kubeconfig(path: &str) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => e.to_string(),
        };
        format!("error: error loading config file \"{path}\": open {path}: {why}")
    })?;
    let kc: Kubeconfig = serde_saphyr::from_str(&text)
        .map_err(|_| format!("error: error loading config file \"{path}\": invalid kubeconfig"))?;
    Ok(Loaded {
        server: kc.clusters.into_iter().next().map(|c| c.cluster.server),
        user: kc
            .users
            .into_iter()
            .next()
            .map(|u| u.user)
            .unwrap_or_default(),
    })
}

/// kubectl's wording for a non-2xx answer.
pub fn error_text(status: u16, body: &str) -> String {
    let body = body.trim();
    match status {
        401 => "error: You must be logged in to the server (Unauthorized)".into(),
        404 => {
            "Error from server (NotFound): the server could not find the requested resource".into()
        }
        _ => {
            let reason = match status {
                400 => "BadRequest",
                403 => "Forbidden",
                405 => "MethodNotAllowed",
                409 => "Conflict",
                429 => "TooManyRequests",
                500 => "InternalError",
                503 => "ServiceUnavailable",
                504 => "Timeout",
                _ => "Unknown",
            };
            format!("Error from server ({reason}): {body}")
        }
    }
}

/// kubectl's wording when no answer came back.
pub fn connect_error_text(err: &ClientError, url: &Url) -> String {
    match err {
        ClientError::Refused { .. } => format!(
            "The connection to the server {} was refused - did you specify the right host or port?",
            url.host_port()
        ),
        other => {
            let text = other.to_string();
            // Drop the `Get "url": ` prefix, as kubectl does.
            let detail = text.split_once("\": ").map_or(text.as_str(), |(_, d)| d);
            format!("Unable to connect to the server: {detail}")
        }
    }
}

pub fn run(args: &[String]) -> i32 {
    let parsed = match parse_args(args) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    if parsed.verb.as_deref() != Some("get") || parsed.raw.is_none() {
        return fail(
            "error: the k3s stand-in's kubectl only supports `get --raw PATH` (optionally with --server and --kubeconfig)",
        );
    }
    // kubectl loads the kubeconfig even with --server: the credential is there.
    let path = parsed
        .kubeconfig
        .clone()
        .or_else(|| std::env::var("KUBECONFIG").ok().filter(|k| !k.is_empty()))
        .unwrap_or_else(|| crate::config::facts().kubeconfig_path.to_string());
    let loaded = match read_kubeconfig(&path) {
        Ok(l) => l,
        // A missing default kubeconfig is fine when --server is given.
        Err(_) if parsed.server.is_some() && parsed.kubeconfig.is_none() => Loaded {
            server: None,
            user: UserEntry::default(),
        },
        Err(e) => return fail(&e),
    };
    let Some(server) = parsed.server.clone().or(loaded.server) else {
        return fail("error: no configuration has been provided");
    };
    let auth = match (&loaded.user.client_certificate_data, &loaded.user.token) {
        (Some(cert), _) => Auth::ClientCert(cert),
        (None, Some(token)) => Auth::Bearer(token),
        (None, None) => Auth::None,
    };
    let url = match Url::parse(&server) {
        Ok(u) => u,
        Err(e) => return fail(&format!("error: {e}")),
    };
    let raw = parsed.raw.unwrap_or_default();
    let raw_path = if raw.starts_with('/') {
        raw
    } else {
        format!("/{raw}")
    };
    match http::request("GET", &url, &raw_path, &auth, None, Duration::from_secs(30)) {
        Ok(resp) if resp.status / 100 == 2 => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&resp.body);
            let _ = out.flush();
            0
        }
        Ok(resp) => fail(&error_text(resp.status, &resp.text())),
        Err(e) => fail(&connect_error_text(&e, &url)),
    }
}

fn fail(message: &str) -> i32 {
    eprintln!("{message}");
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_the_probe_command() {
        let args = strings(&[
            "--kubeconfig",
            "/etc/rancher/k3s/k3s.yaml",
            "get",
            "--server",
            "https://127.0.0.1:6443",
            "--raw",
            "/metrics",
        ]);
        let parsed = parse_args(&args).expect("parses");
        assert_eq!(parsed.verb.as_deref(), Some("get"));
        assert_eq!(parsed.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(parsed.raw.as_deref(), Some("/metrics"));
        let inline =
            parse_args(&strings(&["get", "--raw=/readyz", "-s=https://x:1"])).expect("parses");
        assert_eq!(inline.raw.as_deref(), Some("/readyz"));
        assert_eq!(inline.server.as_deref(), Some("https://x:1"));
        assert!(parse_args(&strings(&["get", "--raw"])).is_err());
    }

    #[test]
    fn errors_read_like_kubectl() {
        assert_eq!(
            error_text(503, "apiserver disabled"),
            "Error from server (ServiceUnavailable): apiserver disabled"
        );
        assert_eq!(
            error_text(404, "x"),
            "Error from server (NotFound): the server could not find the requested resource"
        );
        let url = Url::parse("https://127.0.0.1:6443").expect("url");
        let refused = ClientError::Refused {
            url: "https://127.0.0.1:6443/metrics".into(),
            method: "Get".into(),
            addr: "127.0.0.1:6443".into(),
        };
        assert_eq!(
            connect_error_text(&refused, &url),
            "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"
        );
    }
}
