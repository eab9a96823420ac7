//! A tiny HTTP/1.1 server and client over `std::net`.
//!
//! Deviation from k3s, on purpose: port 6443 speaks plain HTTP, not TLS.
//! `https://` URLs are accepted everywhere and spoken as HTTP, because nothing
//! outside the stand-in talks to 6443 (repro only runs `k3s kubectl` inside
//! the node). Client errors are worded like Go's net/http ones, because k3s
//! puts those texts into the log lines repro reads.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MAX_HEAD: usize = 32 * 1024;
const MAX_BODY: usize = 1024 * 1024;
const MAX_CONNECTIONS: usize = 128;

#[derive(Debug, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client's `ip:port` (Go's `req.RemoteAddr`), empty when unknown.
    pub remote: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The password of `Authorization: Basic user:pw`, or a bearer token.
    pub fn credential(&self) -> Option<(Option<String>, String)> {
        let auth = self.header("authorization")?.trim();
        if let Some(token) = auth.strip_prefix("Bearer ") {
            return Some((None, token.trim().to_string()));
        }
        let encoded = auth.strip_prefix("Basic ")?;
        let decoded = base64_decode(encoded.trim())?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, pw) = text.split_once(':')?;
        Some((Some(user.to_string()), pw.to_string()))
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub extra_headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            extra_headers: Vec::new(),
            body: body.into().into_bytes(),
        }
    }

    pub fn json(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "application/json",
            extra_headers: Vec::new(),
            body: body.into().into_bytes(),
        }
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Request Entity Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

pub type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// Serves `handler` on `listener` from a background thread, one short-lived
/// thread per connection (the sim sees a handful of requests a second).
pub fn serve(listener: TcpListener, handler: Arc<Handler>) {
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                continue; // dropping closes it: back-pressure, not a crash
            }
            active.fetch_add(1, Ordering::SeqCst);
            let handler = Arc::clone(&handler);
            let active = Arc::clone(&active);
            std::thread::spawn(move || {
                let _ = handle_connection(stream, &*handler);
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
}

fn handle_connection(stream: TcpStream, handler: &Handler) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let remote = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut reader = BufReader::new(stream.try_clone()?);
    let response = match read_request(&mut reader) {
        Ok(mut request) => {
            request.remote = remote;
            handler(&request)
        }
        Err(status) => Response::text(status, reason(status)),
    };
    write_response(stream, &response)
}

fn read_request(reader: &mut impl BufRead) -> Result<Request, u16> {
    let mut head_len = 0;
    let mut line = String::new();
    read_head_line(reader, &mut line, &mut head_len)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().ok_or(400u16)?.to_string();
    let target = parts.next().ok_or(400u16)?;
    let path = target.split('?').next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        read_head_line(reader, &mut line, &mut head_len)?;
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            break;
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
        remote: String::new(),
    };
    let length: usize = request
        .header("content-length")
        .map(|v| v.parse().map_err(|_| 400u16))
        .transpose()?
        .unwrap_or(0);
    if length > MAX_BODY {
        return Err(413);
    }
    request.body = vec![0; length];
    reader.read_exact(&mut request.body).map_err(|_| 400u16)?;
    Ok(request)
}

/// One request-head line; 400 on EOF, I/O errors or an oversized head.
fn read_head_line(
    reader: &mut impl BufRead,
    line: &mut String,
    head_len: &mut usize,
) -> Result<(), u16> {
    line.clear();
    let n = reader.read_line(line).map_err(|_| 400u16)?;
    *head_len += n;
    if n == 0 || *head_len > MAX_HEAD {
        return Err(400);
    }
    Ok(())
}

fn write_response(mut stream: TcpStream, response: &Response) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    for (k, v) in &response.extra_headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&response.body)?;
    stream.flush()
}

/// `https://host:port/path` split up; the scheme only picks the default port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub scheme: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("invalid URL {text:?}: missing scheme"))?;
        let default_port = match scheme {
            "https" => 443,
            "http" => 80,
            other => return Err(format!("invalid URL {text:?}: unsupported scheme {other}")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("invalid URL {text:?}: bad IPv6 host"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p
                    .parse()
                    .map_err(|_| format!("invalid URL {text:?}: bad port"))?,
                None => default_port,
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse()
                        .map_err(|_| format!("invalid URL {text:?}: bad port"))?,
                ),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(format!("invalid URL {text:?}: empty host"));
        }
        Ok(Url {
            scheme: scheme.to_string(),
            host,
            port,
            path: path.trim_end_matches('/').to_string(),
        })
    }

    /// `scheme://host:port` + `path`, the form k3s puts in error messages.
    pub fn with_path(&self, path: &str) -> String {
        format!("{}://{}{}", self.scheme, self.host_port(), path)
    }

    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A client failure, displayed like Go's `*url.Error` (`Get "…": dial tcp …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    NoSuchHost {
        url: String,
        method: String,
        host: String,
    },
    Refused {
        url: String,
        method: String,
        addr: String,
    },
    Timeout {
        url: String,
        method: String,
        addr: String,
    },
    Io {
        url: String,
        method: String,
        detail: String,
    },
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::NoSuchHost { url, method, host } => {
                let on = crate::host::nameserver()
                    .map(|ns| format!(" on {ns}"))
                    .unwrap_or_default();
                write!(
                    f,
                    "{method} \"{url}\": dial tcp: lookup {host}{on}: no such host"
                )
            }
            ClientError::Refused { url, method, addr } => write!(
                f,
                "{method} \"{url}\": dial tcp {addr}: connect: connection refused"
            ),
            ClientError::Timeout { url, method, addr } => {
                write!(f, "{method} \"{url}\": dial tcp {addr}: i/o timeout")
            }
            ClientError::Io {
                url,
                method,
                detail,
            } => write!(f, "{method} \"{url}\": {detail}"),
        }
    }
}

#[derive(Debug)]
pub struct ClientResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl ClientResponse {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub enum Auth<'a> {
    None,
    Basic(&'a str, &'a str),
    Bearer(&'a str),
    /// A kubeconfig's `client-certificate-data`. Without TLS the stand-in
    /// cannot present it in a handshake, so it travels in this header.
    ClientCert(&'a str),
}

/// The header that carries a client certificate (stand-in only, see `Auth`).
pub const CLIENT_CERT_HEADER: &str = "X-Repro-Sim-Client-Certificate";

/// One request with `Connection: close`; the whole body is read to EOF.
pub fn request(
    method: &str,
    url: &Url,
    path: &str,
    auth: &Auth<'_>,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<ClientResponse, ClientError> {
    let full = url.with_path(path);
    let io = |detail: String| ClientError::Io {
        url: full.clone(),
        method: method_word(method),
        detail,
    };
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default();
    if addrs.is_empty() {
        return Err(ClientError::NoSuchHost {
            url: full,
            method: method_word(method),
            host: url.host.clone(),
        });
    }
    let mut last = None;
    let mut stream = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some((addr.to_string(), e)),
        }
    }
    let Some(mut stream) = stream else {
        let (addr, e) = last.unwrap_or_else(|| {
            (
                url.host_port(),
                std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            )
        });
        return Err(match e.kind() {
            std::io::ErrorKind::ConnectionRefused => ClientError::Refused {
                url: full,
                method: method_word(method),
                addr,
            },
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => ClientError::Timeout {
                url: full,
                method: method_word(method),
                addr,
            },
            _ => io(format!("dial tcp {addr}: {e}")),
        });
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: k3s-repro-sim\r\nAccept: */*\r\nConnection: close\r\n",
        if path.is_empty() { "/" } else { path },
        url.host_port()
    );
    match auth {
        Auth::None => {}
        Auth::Basic(user, pw) => head.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64_encode(format!("{user}:{pw}").as_bytes())
        )),
        Auth::Bearer(token) => head.push_str(&format!("Authorization: Bearer {token}\r\n")),
        Auth::ClientCert(data) => head.push_str(&format!("{CLIENT_CERT_HEADER}: {data}\r\n")),
    }
    let body = body.unwrap_or(&[]);
    if method != "GET" || !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body))
        .map_err(|e| io(e.to_string()))?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            io("context deadline exceeded (Client.Timeout exceeded while awaiting headers)".into())
        } else {
            io(e.to_string())
        }
    })?;
    parse_response(&raw).ok_or_else(|| io("malformed HTTP response".into()))
}

fn method_word(method: &str) -> String {
    // Go prints the method capitalised only: `Get "…"`, `Post "…"`.
    let lower = method.to_ascii_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => lower,
    }
}

fn parse_response(raw: &[u8]) -> Option<ClientResponse> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let status: u16 = head
        .lines()
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let mut body = raw[split + 4..].to_vec();
    let length = head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    });
    if let Some(length) = length {
        body.truncate(length);
    }
    Some(ClientResponse { status, body })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = Url::parse("https://etcd-1:6443").expect("url");
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("etcd-1", 6443, "")
        );
        let u = Url::parse("https://127.0.0.1:6443/").expect("url");
        assert_eq!(u.with_path("/metrics"), "https://127.0.0.1:6443/metrics");
        let u = Url::parse("http://[::1]/x").expect("url");
        assert_eq!((u.host.as_str(), u.port), ("::1", 80));
        assert!(Url::parse("etcd-1:6443").is_err());
        assert!(Url::parse("https://:6443").is_err());
        assert!(Url::parse("https://a:port").is_err());
    }

    #[test]
    fn base64_round_trips() {
        for text in [
            "",
            "a",
            "ab",
            "abc",
            "node:secret",
            "server:K10abc::server:x",
        ] {
            let enc = base64_encode(text.as_bytes());
            assert_eq!(base64_decode(&enc).as_deref(), Some(text.as_bytes()));
        }
        assert_eq!(base64_encode(b"node:pw"), "bm9kZTpwdw==");
        assert_eq!(base64_decode("!!"), None);
    }

    #[test]
    fn errors_read_like_go() {
        let e = ClientError::Refused {
            url: "https://etcd-1:6443/cacerts".into(),
            method: method_word("GET"),
            addr: "172.29.0.2:6443".into(),
        };
        assert_eq!(
            e.to_string(),
            "Get \"https://etcd-1:6443/cacerts\": dial tcp 172.29.0.2:6443: connect: connection refused"
        );
    }

    #[test]
    fn serves_and_fetches_over_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        serve(
            listener,
            Arc::new(|req: &Request| {
                let who = req.credential().map(|(u, p)| format!("{u:?}/{p}"));
                Response::text(200, format!("{} {} {:?}", req.method, req.path, who))
            }),
        );
        let url = Url::parse(&format!("https://127.0.0.1:{port}")).expect("url");
        let resp = request(
            "GET",
            &url,
            "/v1-k3s/config",
            &Auth::Basic("node", "pw"),
            None,
            Duration::from_secs(5),
        )
        .expect("response");
        assert_eq!(resp.status, 200);
        assert_eq!(
            resp.text(),
            "GET /v1-k3s/config Some(\"Some(\\\"node\\\")/pw\")"
        );
    }

    #[test]
    fn refused_connections_are_reported() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let url = Url::parse(&format!("https://127.0.0.1:{port}")).expect("url");
        let err = request(
            "GET",
            &url,
            "/cacerts",
            &Auth::None,
            None,
            Duration::from_secs(2),
        )
        .expect_err("refused");
        assert!(matches!(err, ClientError::Refused { .. }), "{err}");
    }
}
