//! Servers that misbehave on purpose, for the suite's robustness tests.
//!
//! **Test fixtures.** They bind to 127.0.0.1 only and never connect anywhere.
//! Every misbehaviour that keeps a connection open ends when the client goes
//! away, when the server is stopped, or after [`MAX_STREAM`] at the latest.

use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Longest time any one misbehaving connection is kept going.
pub const MAX_STREAM: Duration = Duration::from_secs(300);

/// The ways a [`HostileServer`] misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// `404` with a short body to every request.
    Everything404,
    /// `403` with a short body to every request.
    Everything403,
    /// `200` without framing, then body bytes forever.
    EndlessBody,
    /// `Content-Length: 10^15`, a few bytes, then silence.
    HugeDeclaredLength,
    /// A valid head, then one body byte every 200 ms.
    SlowDrip,
    /// Random bytes that are not HTTP, then close.
    Garbage,
    /// Closes every connection at once without reading (a TCP reset).
    Reset,
    /// `302 Location: <the same target>` to every request.
    RedirectLoop,
}

/// A running hostile server. Stops on [`HostileServer::stop`] or drop.
pub struct HostileServer {
    addr: SocketAddr,
    inner: Inner,
}

enum Inner {
    Http(ServerHandle),
    Reset(ResetListener),
}

/// Starts a server that misbehaves as `kind` says, on 127.0.0.1.
pub fn start(kind: Hostile) -> io::Result<HostileServer> {
    HostileServer::start(kind)
}

impl HostileServer {
    pub fn start(kind: Hostile) -> io::Result<Self> {
        if kind == Hostile::Reset {
            let listener = ResetListener::start()?;
            return Ok(HostileServer {
                addr: listener.addr,
                inner: Inner::Reset(listener),
            });
        }
        let limits = Limits {
            read_timeout: Duration::from_secs(5),
            ..Limits::default()
        };
        let server = Server::bind(
            (Ipv4Addr::LOCALHOST, 0),
            move |req: Request| reply(kind, &req),
            limits,
        )?;
        Ok(HostileServer {
            addr: server.addr(),
            inner: Inner::Http(server),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(self) {
        match self.inner {
            Inner::Http(server) => server.stop(),
            Inner::Reset(listener) => drop(listener),
        }
    }
}

fn reply(kind: Hostile, req: &Request) -> Reply {
    match kind {
        Hostile::Everything404 => Response::text(404, "not found\n").into(),
        Hostile::Everything403 => Response::text(403, "forbidden\n").into(),
        Hostile::RedirectLoop => Response::text(302, "again\n")
            .with_header("Location", req.target.as_str())
            .into(),
        Hostile::EndlessBody => Reply::Takeover(
            Response::new(200).with_header("Content-Type", "application/octet-stream"),
            Box::new(|mut s| {
                let chunk = [b'x'; 16 * 1024];
                let start = Instant::now();
                while start.elapsed() < MAX_STREAM && s.write_all(&chunk).is_ok() {}
            }),
        ),
        Hostile::HugeDeclaredLength => Reply::Takeover(
            Response::new(200)
                .with_header("Content-Type", "application/octet-stream")
                .with_header("Content-Length", "1000000000000000")
                .with_body("only a few bytes"),
            Box::new(|s| idle_until_closed(&s)),
        ),
        Hostile::SlowDrip => Reply::Takeover(
            Response::new(200)
                .with_header("Content-Type", "application/octet-stream")
                .with_header("Content-Length", "1000000"),
            Box::new(|mut s| {
                let start = Instant::now();
                while start.elapsed() < MAX_STREAM && s.write_all(b"x").is_ok() {
                    thread::sleep(Duration::from_millis(200));
                }
            }),
        ),
        Hostile::Garbage => Reply::Raw(Box::new(|mut s| {
            let mut bytes = [0u8; 4096];
            if getrandom::getrandom(&mut bytes).is_err() {
                bytes
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b = (i * 131 % 251) as u8);
            }
            // Never a status line: a NUL byte cannot start one.
            bytes[0] = 0;
            let _ = s.write_all(&bytes);
            let _ = s.shutdown(std::net::Shutdown::Write);
            idle_until_closed(&s);
        })),
        // Served by ResetListener; here only for completeness.
        Hostile::Reset => Reply::Raw(Box::new(drop)),
    }
}

/// Waits, reading and discarding, until the peer closes, the stream fails or
/// [`MAX_STREAM`] passes.
fn idle_until_closed(mut s: &TcpStream) {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    while start.elapsed() < MAX_STREAM {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Accepts connections and closes each after a short pause without reading
/// a byte: the client's request is still unread, so the kernel answers with
/// a reset. egress-http cannot do this (it reads the request first).
struct ResetListener {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl ResetListener {
    fn start() -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stopping);
        let accept = thread::Builder::new()
            .name("hostile-reset".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        // Give the request time to arrive, so it is unread.
                        let _ = thread::Builder::new().spawn(move || {
                            thread::sleep(Duration::from_millis(50));
                            drop(stream);
                        });
                    }
                }
            })?;
        Ok(ResetListener {
            addr,
            stopping,
            accept: Some(accept),
        })
    }
}

impl Drop for ResetListener {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}
