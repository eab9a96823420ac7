#![allow(clippy::unwrap_used)] // a test server: a poisoned lock is a failed test
//! A tiny HTTP/1.1 file server on 127.0.0.1 (a free port), standing in for k3s's CI storage:
//! `GET /<name>` answers the bytes stored under that name, anything else 404. It records every
//! path asked for, so a test can tell what was downloaded (and that a cached build was not).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

pub struct HttpFiles {
    port: u16,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    /// Names whose body stops halfway: the headers and the first half are sent, then nothing
    /// (the connection is held open), as a mirror that stalls.
    stalls: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl HttpFiles {
    /// Starts serving (a thread per connection; it lives as long as the test process).
    pub fn start() -> HttpFiles {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        let stalls: Arc<Mutex<Vec<String>>> = Arc::default();
        let (f, a, st) = (files.clone(), asked.clone(), stalls.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let (f, a, st) = (f.clone(), a.clone(), st.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                    let mut first = String::new();
                    if reader.read_line(&mut first).is_err() {
                        return;
                    }
                    // The headers, up to the blank line.
                    loop {
                        let mut l = String::new();
                        match reader.read_line(&mut l) {
                            Ok(0) | Err(_) => break,
                            Ok(_) if l == "\r\n" || l == "\n" => break,
                            Ok(_) => {}
                        }
                    }
                    let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
                    a.lock().unwrap().push(path.clone());
                    let body = f.lock().unwrap().get(path.trim_start_matches('/')).cloned();
                    let (status, body) = match body {
                        Some(b) => ("200 OK", b),
                        None => ("404 Not Found", b"not found\n".to_vec()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes());
                    if st
                        .lock()
                        .unwrap()
                        .iter()
                        .any(|n| path.trim_start_matches('/') == n)
                    {
                        let _ = conn.write_all(&body[..body.len() / 2]);
                        let _ = conn.flush();
                        // Held open, silent, until the client gives up (or the test ends).
                        let mut rest = Vec::new();
                        let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
                        return;
                    }
                    let _ = conn.write_all(&body);
                    let _ = conn.flush();
                });
            }
        });
        HttpFiles {
            port,
            files,
            stalls,
            asked,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Serves `bytes` at `/<name>`.
    pub fn put(&self, name: &str, bytes: Vec<u8>) {
        self.files.lock().unwrap().insert(name.to_string(), bytes);
    }

    /// Serves `bytes` at `/<name>` but stalls halfway through the body.
    pub fn stall(&self, name: &str, bytes: Vec<u8>) {
        self.put(name, bytes);
        self.stalls.lock().unwrap().push(name.to_string());
    }

    /// Every path asked for so far, in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}
