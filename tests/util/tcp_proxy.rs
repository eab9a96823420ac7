//! A loopback TCP port forwarded to the local Docker engine's unix socket, so a test can reach
//! the engine as a remote one (`DOCKER_HOST=tcp://…`) without socat or any other tool.
//!
//! Plain threads and blocking sockets: each accepted connection gets two copy threads (one per
//! direction); when one side closes, the other side's write half is shut down so HTTP
//! keep-alive and streamed responses (logs, attach) end the way they would through socat.
//!
//! [`TcpProxy::cut`] plays the engine going away mid-run: every open connection is shut down
//! and every new one is closed at once, as a dead daemon or a dropped network would.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub struct TcpProxy {
    port: u16,
    stop: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
    /// The client side of every connection, so `cut` can shut them.
    open: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl TcpProxy {
    /// Listens on 127.0.0.1 (a free port) and forwards every connection to `socket`. The port
    /// accepts connections as soon as this returns: the listener is bound before the thread starts.
    pub fn start(socket: &Path) -> io::Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let socket: PathBuf = socket.to_path_buf();
        let stop_flag = stop.clone();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (cut_flag, open_list) = (cut.clone(), open.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop_flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = conn else { continue };
                if cut_flag.load(Ordering::SeqCst) {
                    let _ = tcp.shutdown(Shutdown::Both);
                    continue;
                }
                if let Ok(c) = tcp.try_clone() {
                    open_list.lock().unwrap_or_else(|p| p.into_inner()).push(c);
                }
                let socket = socket.clone();
                std::thread::spawn(move || {
                    if let Err(e) = forward(tcp, &socket) {
                        eprintln!("tcp proxy: {e}");
                    }
                });
            }
        });
        Ok(TcpProxy {
            port,
            stop,
            cut,
            open,
            accept: Some(accept),
        })
    }

    /// The engine "goes away": open connections are shut, new ones closed on accept.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for c in self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for TcpProxy {
    /// Ends the proxy as stopping socat would: no connection through it stays open, so no copy
    /// thread outlives it (a test that fails mid-run drops it with repro still connected).
    fn drop(&mut self) {
        self.cut();
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag and ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Copies bytes both ways until both directions are done.
fn forward(tcp: TcpStream, socket: &Path) -> io::Result<()> {
    let unix = UnixStream::connect(socket)?;
    let (mut tcp_r, mut tcp_w) = (tcp.try_clone()?, tcp);
    let (mut unix_r, mut unix_w) = (unix.try_clone()?, unix);
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut tcp_r, &mut unix_w);
        let _ = unix_w.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}

/// The local engine's unix socket: `DOCKER_HOST=unix://…` when set that way, else the default.
pub fn docker_socket() -> PathBuf {
    match std::env::var("DOCKER_HOST") {
        Ok(h) if h.starts_with("unix://") => PathBuf::from(&h["unix://".len()..]),
        _ => PathBuf::from("/var/run/docker.sock"),
    }
}
