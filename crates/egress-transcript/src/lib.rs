//! The suite's HTTP client. It does one thing: send the exact bytes it is
//! given, read whatever comes back within fixed bounds, and record both as an
//! [`Exchange`]. It never follows redirects, never retries, never normalizes a
//! request target, and never panics on what a server sends.
//!
//! Bounds (all in [`Limits`], documented in docs/predicates.md):
//! connect timeout, idle-read timeout, a deadline for the whole exchange, a
//! cap on the response head and a cap on body bytes read. Whatever ends an
//! exchange early is recorded in [`Exchange::error`] and [`BodyEnd`].
//!
//! [`Client::send_raw_listening`] is a raw exchange that also records what
//! the server sends after the first response on the same connection
//! (`Exchange::after`), within the bounds of a [`Listen`].
//!
//! [`Client::download`] is the same exchange with the body also streamed to a
//! [`BodySink`] (a file), for bodies larger than anyone wants in memory; the
//! record then keeps only the prefix, as for any exchange.

pub mod h2;
mod read;
mod tls;

use egress_model::h2::{H2Request, H2Via};
use egress_model::{Exchange, Url, WireBytes};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use egress_model::{BodyEnd, Method};
pub use tls::{is_untrusted_certificate, TlsError};

/// Every bound the client applies to one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time allowed to establish TCP (and TLS).
    pub connect_timeout: Duration,
    /// Longest wait for any single read.
    pub idle_timeout: Duration,
    /// Longest time for the whole exchange, from connect to last body byte.
    pub deadline: Duration,
    /// Cap on status line plus headers.
    pub max_head_bytes: usize,
    /// Cap on body bytes read; the rest is not read.
    pub max_body_bytes: u64,
    /// How many body bytes are kept in the record (all are hashed).
    pub record_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(30),
            max_head_bytes: 64 * 1024,
            max_body_bytes: 256 * 1024 * 1024,
            record_bytes: 1024 * 1024,
        }
    }
}

impl Limits {
    /// Bounds for [`Client::download`]: the idle timeout still catches a
    /// stalled server, but a large file may take long and be large (the
    /// caller verifies its digest; the cap only stops a server that never
    /// ends). The record keeps a short prefix, enough for an error page.
    pub fn download() -> Self {
        Self {
            deadline: Duration::from_secs(60 * 60),
            idle_timeout: Duration::from_secs(30),
            max_body_bytes: 64 * 1024 * 1024 * 1024,
            record_bytes: 4096,
            ..Self::default()
        }
    }
}

/// Bounds of [`Client::send_raw_listening`]: how long and how much it reads
/// after the first response.
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    /// Listening stops once nothing has arrived for this long (the
    /// connection is then recorded as left open).
    pub quiet: Duration,
    /// Longest time for the whole exchange, first response included; the
    /// client's own deadline still applies when it is shorter.
    pub deadline: Duration,
    /// Cap on the bytes recorded after the first response.
    pub max_bytes: usize,
}

impl Default for Listen {
    /// 3 s of quiet, 10 s in all, 256 KiB: a server answers bytes it
    /// already holds in milliseconds, so silence this long means it will not.
    fn default() -> Self {
        Self {
            quiet: Duration::from_secs(3),
            deadline: Duration::from_secs(10),
            max_bytes: 256 * 1024,
        }
    }
}

/// Where [`Client::download`] puts a response body.
pub trait BodySink {
    /// Called once the response head has arrived (not for responses without
    /// a body). `Ok(true)` streams the body into [`BodySink::write`];
    /// `Ok(false)` leaves it to the record alone (say, an error page); an
    /// error ends the exchange.
    fn begin(&mut self, status: u16, headers: &[(String, String)]) -> io::Result<bool>;
    /// Body bytes in order, after any chunked framing is removed. An error
    /// ends the exchange.
    fn write(&mut self, data: &[u8]) -> io::Result<()>;
}

/// A request as the suite wants it written; [`Request::to_bytes`] gives the
/// exact wire form. Probes that need malformed bytes use [`Client::send_raw`].
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// Written verbatim, never normalized or encoded.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn get(target: &str) -> Self {
        Self::new(Method::Get, target)
    }

    pub fn new(method: Method, target: &str) -> Self {
        Self {
            method,
            target: target.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// The wire form: `Host` from the base URL unless given, a fixed
    /// `User-Agent`, `Content-Length` when there is a body or the method
    /// usually carries one, and `Connection: close` so every exchange is one
    /// connection and its record stands alone.
    pub fn to_bytes(&self, base: &Url) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        let has = |n: &str| self.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
        if !has("host") {
            out.extend_from_slice(format!("Host: {}\r\n", base.host_header()).as_bytes());
        }
        if !has("user-agent") {
            out.extend_from_slice(
                concat!(
                    "User-Agent: egress-conformance/",
                    env!("CARGO_PKG_VERSION"),
                    "\r\n"
                )
                .as_bytes(),
            );
        }
        for (n, v) in &self.headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        let wants_length = !self.body.is_empty()
            || matches!(self.method, Method::Post | Method::Put | Method::Patch);
        if wants_length && !has("content-length") {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        if !has("connection") {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Errors that stop a client from being made at all (bad CA file). Errors of
/// an exchange are never returned: they are recorded in it.
#[derive(Debug)]
pub enum ClientError {
    Tls(TlsError),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tls(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A recording client bound to one origin.
#[derive(Clone)]
pub struct Client {
    base: Url,
    limits: Limits,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The same TLS configuration offering `h2` and `http/1.1` by ALPN.
    tls_h2: Option<Arc<rustls::ClientConfig>>,
}

/// A connection to the target, plain or TLS, whose read timeout can change
/// between the first response and listening after it.
pub(crate) trait Stream: Read + Write + Send {
    fn set_idle(&mut self, idle: Duration);
}

impl Stream for read::Timed {
    fn set_idle(&mut self, idle: Duration) {
        read::Timed::set_idle(self, idle);
    }
}

impl Stream for rustls::StreamOwned<rustls::ClientConnection, read::Timed> {
    fn set_idle(&mut self, idle: Duration) {
        self.sock.set_idle(idle);
    }
}

impl Client {
    /// A client for `base`'s origin. For https, trusts the system's store
    /// (`SSL_CERT_FILE`, `SSL_CERT_DIR` honoured; the Mozilla roots compiled
    /// in where the system has none) and `cacert` (a PEM file) too when
    /// given; see `tls.rs`.
    pub fn new(base: Url, limits: Limits, cacert: Option<&Path>) -> Result<Self, ClientError> {
        let tls = match base.scheme() {
            egress_model::url::Scheme::Https => {
                Some(tls::config(cacert).map_err(ClientError::Tls)?)
            }
            egress_model::url::Scheme::Http => None,
        };
        let tls_h2 = tls.as_ref().map(|c| {
            let mut c = (**c).clone();
            c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Arc::new(c)
        });
        Ok(Self {
            base,
            limits,
            tls,
            tls_h2,
        })
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `GET path` with an optional `Accept`.
    pub fn get(&self, label: &str, path_and_query: &str, accept: Option<&str>) -> Exchange {
        let mut req = Request::get(path_and_query);
        if let Some(a) = accept {
            req = req.header("Accept", a);
        }
        self.send(label, &req)
    }

    pub fn send(&self, label: &str, req: &Request) -> Exchange {
        let bytes = req.to_bytes(&self.base);
        self.send_raw(label, &bytes)
    }

    /// Sends `raw` exactly as given and records what comes back.
    pub fn send_raw(&self, label: &str, raw: &[u8]) -> Exchange {
        self.exchange(label, raw, None)
    }

    /// Sends `raw` exactly as given, reads the first response as
    /// [`Client::send_raw`] does, then records everything the server sends
    /// after it on the same connection ([`Exchange::after`]) until it closes,
    /// stays quiet for `listen.quiet`, `listen.deadline` passes (counted from
    /// the connect) or `listen.max_bytes` arrived. The connection is never
    /// half-closed, so a close is the server's own doing.
    pub fn send_raw_listening(&self, label: &str, raw: &[u8], listen: &Listen) -> Exchange {
        let start = Instant::now();
        let mut ex = Exchange {
            label: label.to_string(),
            peer: self.base.authority(),
            request: WireBytes(raw.to_vec()),
            response: None,
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        };
        let deadline = start + self.limits.deadline.min(listen.deadline);
        match self.connect(deadline) {
            Ok(mut stream) => {
                if let Err(e) = stream.write_all(raw).and_then(|()| stream.flush()) {
                    ex.error = Some(format!("write failed: {}", describe_io(&e)));
                }
                let method = raw.split(|&b| b == b' ').next().unwrap_or_default();
                let (resp, err, tail) =
                    read::read_response_keeping_rest(&mut stream, method, &self.limits);
                ex.response = resp;
                if err.is_some() {
                    ex.error = err;
                }
                stream.set_idle(listen.quiet);
                ex.after = Some(read::listen(&mut stream, tail, deadline, listen.max_bytes));
            }
            Err(e) => ex.error = Some(e.to_string()),
        }
        ex.elapsed_ms = start.elapsed().as_millis() as u64;
        ex
    }

    /// Sends `req` and streams the response body into `sink` (if its `begin`
    /// accepts the response), within the same bounds as every exchange; use
    /// a client made with [`Limits::download`]. The exchange records the
    /// head, the body's length and digest and a prefix; whether the body was
    /// complete is [`ResponseRecord::body_end`](egress_model::ResponseRecord).
    pub fn download(&self, label: &str, req: &Request, sink: &mut dyn BodySink) -> Exchange {
        let bytes = req.to_bytes(&self.base);
        self.exchange(label, &bytes, Some(sink))
    }

    fn exchange(&self, label: &str, raw: &[u8], out: Option<&mut dyn BodySink>) -> Exchange {
        let start = Instant::now();
        let mut ex = Exchange {
            label: label.to_string(),
            peer: self.base.authority(),
            request: WireBytes(raw.to_vec()),
            response: None,
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        };
        let deadline = start + self.limits.deadline;
        match self.connect(deadline) {
            Ok(mut stream) => {
                if let Err(e) = stream.write_all(raw).and_then(|()| stream.flush()) {
                    // A server may answer and close before reading everything
                    // we sent (e.g. a 413); still try to read that answer.
                    ex.error = Some(format!("write failed: {}", describe_io(&e)));
                }
                let method = raw.split(|&b| b == b' ').next().unwrap_or_default();
                let (resp, err) =
                    read::read_response(&mut stream, method, &self.limits, deadline, out);
                ex.response = resp;
                if err.is_some() {
                    ex.error = err;
                }
            }
            Err(e) => ex.error = Some(e.to_string()),
        }
        ex.elapsed_ms = start.elapsed().as_millis() as u64;
        ex
    }

    /// Sends `CONNECT authority` and, only if the target agrees to tunnel,
    /// sends `inner` through the tunnel. Returns one exchange per request.
    pub fn connect_tunnel(&self, label: &str, authority: &str, inner: &[u8]) -> Vec<Exchange> {
        let start = Instant::now();
        let deadline = start + self.limits.deadline;
        let raw = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").into_bytes();
        let mut first = Exchange {
            label: label.to_string(),
            peer: self.base.authority(),
            request: WireBytes(raw.clone()),
            response: None,
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        };
        let mut stream = match self.connect(deadline) {
            Ok(s) => s,
            Err(e) => {
                first.error = Some(e.to_string());
                first.elapsed_ms = start.elapsed().as_millis() as u64;
                return vec![first];
            }
        };
        if let Err(e) = stream.write_all(&raw) {
            first.error = Some(format!("write failed: {}", describe_io(&e)));
        }
        let (resp, err) =
            read::read_response(&mut stream, b"CONNECT", &self.limits, deadline, None);
        let tunnel_open = resp.as_ref().is_some_and(|r| r.is_success());
        first.response = resp;
        first.error = first.error.take().or(err);
        first.elapsed_ms = start.elapsed().as_millis() as u64;
        if !tunnel_open {
            return vec![first];
        }
        let mut second = Exchange {
            label: format!("{label} (request sent through the tunnel)"),
            peer: format!("{authority} via {}", self.base.authority()),
            request: WireBytes(inner.to_vec()),
            response: None,
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        };
        let t2 = Instant::now();
        if let Err(e) = stream.write_all(inner) {
            second.error = Some(format!("write failed: {}", describe_io(&e)));
        } else {
            let method = inner.split(|&b| b == b' ').next().unwrap_or_default();
            let (resp, err) =
                read::read_response(&mut stream, method, &self.limits, deadline, None);
            second.response = resp;
            second.error = err;
        }
        second.elapsed_ms = t2.elapsed().as_millis() as u64;
        vec![first, second]
    }

    /// Speaks HTTP/2 to the target and sends `requests` on streams 1, 3,
    /// 5…, each once the one before it has ended; records every frame
    /// ([`Exchange::h2`]; `request` holds every byte sent). Over https it
    /// offers `h2` and `http/1.1` by ALPN and sends nothing if the server
    /// chooses anything but `h2`; over http it sends the preface at once
    /// (h2c prior knowledge), and a server that answers otherwise is
    /// recorded as it answered ([`egress_model::H2Conversation::stray`]).
    /// Reading is bounded by `listen` after the first stream ends (see
    /// [`h2::converse`](crate::h2)) and by the client's limits throughout.
    pub fn send_h2(&self, label: &str, requests: &[H2Request], listen: &Listen) -> Exchange {
        let start = Instant::now();
        let mut ex = Exchange {
            label: label.to_string(),
            peer: self.base.authority(),
            request: WireBytes::default(),
            response: None,
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        };
        let deadline = start + self.limits.deadline.min(listen.deadline);
        let via = if self.tls.is_some() {
            H2Via::Alpn
        } else {
            H2Via::PriorKnowledge
        };
        match self.connect_alpn(deadline, true) {
            Ok((mut stream, alpn)) => {
                let alpn = alpn.map(|p| String::from_utf8_lossy(&p).into_owned());
                if via == H2Via::Alpn && alpn.as_deref() != Some("h2") {
                    ex.h2 = Some(Box::new(egress_model::H2Conversation {
                        via,
                        alpn,
                        frames: Vec::new(),
                        stray: WireBytes::default(),
                        end: None,
                    }));
                } else {
                    let (conv, sent, err) =
                        h2::converse(&mut *stream, via, alpn, requests, listen, deadline);
                    ex.request = WireBytes(sent);
                    ex.h2 = Some(Box::new(conv));
                    ex.error = err;
                }
            }
            Err(e) => ex.error = Some(e.to_string()),
        }
        ex.elapsed_ms = start.elapsed().as_millis() as u64;
        ex
    }

    fn connect(&self, deadline: Instant) -> Result<Box<dyn Stream>, ConnectError> {
        self.connect_alpn(deadline, false).map(|(s, _)| s)
    }

    /// Opens TCP (and TLS, offering `h2` by ALPN when `h2` is set); returns
    /// the stream and the protocol the server chose by ALPN.
    fn connect_alpn(
        &self,
        deadline: Instant,
        h2: bool,
    ) -> Result<(Box<dyn Stream>, Alpn), ConnectError> {
        let tls = if h2 { &self.tls_h2 } else { &self.tls };
        let addrs: Vec<SocketAddr> = (self.base.host_unbracketed(), self.base.port())
            .to_socket_addrs()
            .map_err(|source| ConnectError::Resolve {
                host: self.base.host().to_string(),
                source,
            })?
            .collect();
        let mut last = ConnectError::NoAddress;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.limits.connect_timeout) {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    let timed = read::Timed::new(tcp, self.limits.idle_timeout, deadline);
                    return match tls {
                        None => Ok((Box::new(timed), None)),
                        Some(cfg) => tls::wrap(cfg.clone(), self.base.host_unbracketed(), timed)
                            .map(|s| {
                                let alpn = s.conn.alpn_protocol().map(<[u8]>::to_vec);
                                (Box::new(s) as Box<dyn Stream>, alpn)
                            })
                            .map_err(ConnectError::from),
                    };
                }
                Err(source) => last = ConnectError::Connect { addr, source },
            }
        }
        Err(last)
    }
}

/// The protocol a server chose by ALPN, as it named it.
type Alpn = Option<Vec<u8>>;

/// Why no stream to the target was opened; recorded as the exchange's error.
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        host: String,
        #[source]
        source: io::Error,
    },
    #[error("no address to connect to")]
    NoAddress,
    #[error("connect to {addr} failed: {}", describe_io(.source))]
    Connect {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Tls(#[from] tls::HandshakeError),
}

pub(crate) fn describe_io(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_string(),
        io::ErrorKind::ConnectionReset => "connection reset by peer".to_string(),
        io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        io::ErrorKind::UnexpectedEof => "connection closed early".to_string(),
        _ => e.to_string(),
    }
}
