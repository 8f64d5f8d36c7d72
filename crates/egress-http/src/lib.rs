//! egress-http: a small, event-driven HTTP/1.1 **server** library.
//!
//! It serves the reference mirror and the test fixtures. It deliberately
//! contains no HTTP client: the mirror must have no way to fetch anything.
//!
//! Design, in short (docs/architecture.md, "The serving core", has the why):
//! - connections are tasks on a tokio multi-thread runtime, one per server,
//!   with as many workers as cores: an idle or slow client costs memory, not
//!   a thread. The total is bounded by [`Limits::max_connections`] (by
//!   default derived from the open-file limit) and each client address by
//!   [`Limits::max_connections_per_client`]; beyond either a connection gets
//!   `503` and is closed, and a rate-limited line on stderr names the limit;
//! - requests are parsed strictly by this crate's own parser (`parse.rs`),
//!   driven as bytes arrive: anything ambiguous is a 4xx/5xx followed by
//!   closing the connection;
//! - the request-target is handed to the handler exactly as received, never
//!   decoded or normalised, in any form (origin, absolute, authority, `*`);
//! - a request head must arrive within [`Limits::head_timeout`] of its first
//!   byte and the whole request within [`Limits::read_timeout`]; an idle
//!   keep-alive connection is closed after [`Limits::idle_timeout`]. Together
//!   with the per-client limit this bounds slowloris-style clients;
//! - the [`Handler`] is synchronous and may block: it runs on the runtime's
//!   blocking pool, unless the server is told it never blocks
//!   ([`Config::handler_never_blocks`]);
//! - responses always carry `Content-Length`, never chunked framing;
//! - file bodies are read in large chunks on the blocking pool and copied to
//!   the socket ([`Body::File`]), except files the kernel keeps immutable
//!   ([`Body::Sealed`]), which go out zero-copy with `sendfile(2)`;
//! - a panicking handler produces a `500`, not a dead server.
//!
//! Serving one connection ([`Service::serve_http1`]) is generic over the
//! byte stream ([`Transport`]), and [`Config::acceptor`] lets a caller take
//! each accepted socket over (e.g. a TLS handshake, then HTTP/1.1 or another
//! protocol reusing [`Service::respond`]). [`tls_acceptor`] is that for
//! https: rustls, then HTTP/2 ([`Service::serve_http2`], hyper's HTTP/2
//! server mapped onto the same handler path) when the client chose `h2` by
//! ALPN, else HTTP/1.1 with the same codec as plain connections.

mod cidr;
mod conn;
mod h2;
#[cfg(target_os = "linux")]
mod lobby;
mod parse;
pub mod proxy;
mod runtimes;
mod sealed;
mod server;
mod shared;
mod tls;
mod write;

pub use cidr::{BadCidr, Cidr};
pub use conn::{Service, Transport};
pub use proxy::ProxyConfig;
pub use sealed::SealedFile;
pub use server::{Acceptor, Config, Server, ServerHandle};
pub use shared::{ServerStats, Stats};
pub use tls::{tls_acceptor, ALPN_H2, ALPN_HTTP1};

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use parse::Fail;

pub use egress_model::Method;

/// A parsed request. The body has been read completely before the handler
/// sees it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The raw request-target exactly as received: not decoded, not
    /// normalised. Guaranteed to be visible ASCII (0x21..=0x7E).
    pub target: String,
    /// `"HTTP/1.1"` or `"HTTP/1.0"`.
    pub version: String,
    /// Header fields in received order, names in received case, values with
    /// surrounding whitespace trimmed.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
}

impl Request {
    /// The first field named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// All fields named `name` (case-insensitive), in order.
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The target up to (not including) the first `?`, raw.
    pub fn path(&self) -> &str {
        match self.target.split_once('?') {
            Some((path, _)) => path,
            None => &self.target,
        }
    }

    /// The target after the first `?`, raw, if there is a `?`.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, q)| q)
    }
}

/// A response body.
#[derive(Debug, Clone, Default)]
pub enum Body {
    #[default]
    Empty,
    Bytes(Vec<u8>),
    /// Bytes shared between responses without copying (e.g. cached artifacts).
    Shared(Arc<[u8]>),
    /// The next `len` bytes of an open file, from its current position,
    /// streamed to the socket in bounded chunks, so large artifacts are never
    /// held in memory (see `send_file` for why this is a copy, not
    /// `sendfile(2)`).
    ///
    /// `Content-Length` is `len`. The file is only read when the body is sent
    /// (not for HEAD or 304). Before the last byte is written the server asks
    /// [`Handler::vouch_for_file`] whether the bytes can still be vouched
    /// for; if not, or if the file ends before `len` bytes, the last byte is
    /// never sent and the connection is closed, so the client sees a
    /// truncated response, never a complete one. Clones share the file and
    /// its position: send a file body once.
    File(Arc<File>, u64),
    /// A whole file whose bytes the kernel will never let change (see
    /// [`SealedFile`]), sent zero-copy with `sendfile(2)`. `Content-Length`
    /// is its length; it is only read when the body is sent (not for HEAD
    /// or 304). Nothing is asked of [`Handler::vouch_for_file`]: the bytes
    /// vouched for when the file was sealed are the only bytes it can ever
    /// hold. Clones share the file; any number of responses may send it at
    /// once.
    Sealed(SealedFile),
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Self {
        Body::Bytes(v)
    }
}

impl From<&[u8]> for Body {
    fn from(v: &[u8]) -> Self {
        Body::Bytes(v.to_vec())
    }
}

impl From<String> for Body {
    fn from(v: String) -> Self {
        Body::Bytes(v.into_bytes())
    }
}

impl From<&str> for Body {
    fn from(v: &str) -> Self {
        Body::Bytes(v.as_bytes().to_vec())
    }
}

impl From<Arc<[u8]>> for Body {
    fn from(v: Arc<[u8]>) -> Self {
        Body::Shared(v)
    }
}

/// A response. `Content-Length` and `Connection` are written by the server;
/// see [`Reply`] for what happens to handler-supplied framing fields.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Body::Empty,
        }
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_body(mut self, body: impl Into<Body>) -> Self {
        self.body = body.into();
        self
    }

    /// A `text/plain; charset=utf-8` response.
    pub fn text(status: u16, text: &str) -> Self {
        Response::new(status)
            .with_header("Content-Type", "text/plain; charset=utf-8")
            .with_body(text)
    }
}

/// What a handler returns.
///
/// Handler-supplied header names must be tokens and values must not contain
/// control characters (CR, LF, NUL, ...); otherwise the server answers `500`
/// instead, so a value taken from a request can never inject a header.
pub enum Reply {
    /// A normal response. Status must be 200..=599 (else `500`). The server
    /// writes `Content-Length` from the body and its own `Connection`; the
    /// handler's `Content-Length`, `Transfer-Encoding` and `Connection` are
    /// dropped, except that a HEAD or 304 reply with an empty body keeps a
    /// numeric handler `Content-Length`. A handler `Connection: close` closes
    /// the connection after the response. HEAD, 1xx, 204 and 304 send no body.
    Response(Response),
    /// Write the response head and body verbatim (any status 100..=999, no
    /// framing fields added), then hand the raw stream over: used for CONNECT
    /// tunnels and deliberately hostile fixtures. The stream is handed over
    /// as a blocking socket with read and write timeouts set to
    /// `read_timeout`, and the closure runs on the blocking pool, so it may
    /// block or sleep. Only a plain TCP connection can be handed over (see
    /// [`Transport`]); on any other the connection is closed instead. Bytes
    /// the client
    /// sent after the request and that were already buffered are discarded,
    /// so the client must wait for the response before speaking (as CONNECT
    /// clients do).
    Takeover(Response, Box<dyn FnOnce(TcpStream) + Send>),
    /// Hand the raw stream over without writing anything (hostile fixtures:
    /// garbage, slow drip, reset). Same stream state as for `Takeover`.
    Raw(Box<dyn FnOnce(TcpStream) + Send>),
}

impl From<Response> for Reply {
    fn from(r: Response) -> Self {
        Reply::Response(r)
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Response(r) => f.debug_tuple("Response").field(r).finish(),
            Reply::Takeover(r, _) => f.debug_tuple("Takeover").field(r).finish_non_exhaustive(),
            Reply::Raw(_) => f.debug_tuple("Raw").finish_non_exhaustive(),
        }
    }
}

/// Handles one request. Called on a thread of the runtime's blocking pool
/// (or inline on a worker when [`Config::handler_never_blocks`] is set); may
/// block unless that setting says otherwise.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, req: Request) -> Reply;

    /// Answers `req` at once on the connection's worker when that needs no
    /// blocking work (an answer already in memory, a refusal), or returns
    /// `None` to have [`Handler::handle`] run on the blocking pool as usual.
    /// The first request of a new plain-HTTP connection, when it arrives
    /// whole with the connection, is asked here on the server's accept
    /// thread instead (the fast lane, docs/architecture.md): it may be
    /// asked on either, and must be as quick on both.
    /// It must never block: no file reads, no waiting on locks held across
    /// blocking work. Skipping the hand-off to the pool is what lets a
    /// handler that answers mostly from memory keep up with many kept-alive
    /// connections (docs/benchmarks.md). The default answers nothing.
    fn handle_now(&self, req: &Request) -> Option<Reply> {
        let _ = req;
        None
    }

    /// Called (where [`Handler::handle`] is) while `response`, whose body is the
    /// [`Body::File`] `file`, is being sent: after all but its last byte have
    /// been copied to the client and before that last byte is. Returning
    /// `false` aborts the response: the last byte is not sent and the
    /// connection is closed, so no client can take the body for complete.
    /// This lets a handler re-check a file it verified before handing it over
    /// (e.g. that it did not change while it was copied). Not called for
    /// empty files, for HEAD or 304 responses, or for `Reply::Takeover`
    /// bodies. The default vouches for everything.
    fn vouch_for_file(&self, response: &Response, file: &File) -> bool {
        let _ = (response, file);
        true
    }
}

impl<F: Fn(Request) -> Reply + Send + Sync + 'static> Handler for F {
    fn handle(&self, req: Request) -> Reply {
        self(req)
    }
}

/// Resource bounds for one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Request line plus header section, terminators included. A longer
    /// request line gets 414, a longer header section 431.
    pub max_head_bytes: usize,
    /// Decoded request body; larger bodies get 413.
    pub max_body_bytes: usize,
    /// Bound on receiving a whole request (head and body) once its first
    /// byte arrived; also the bound on each write. Caps
    /// [`Limits::head_timeout`] and [`Limits::idle_timeout`]. Must be
    /// non-zero.
    pub read_timeout: Duration,
    /// Bound on receiving a request head once its first byte arrived (at
    /// most `read_timeout`). A client that has not finished its head by then
    /// is disconnected without an answer.
    pub head_timeout: Duration,
    /// Bound on waiting for the next request on a kept-alive connection (at
    /// most `read_timeout`).
    pub idle_timeout: Duration,
    /// Concurrent connections served in total; more get 503 and are closed.
    /// The default follows the open-file limit ([`default_max_connections`]).
    pub max_connections: usize,
    /// Concurrent connections served per client IP address; more get 503
    /// and are closed. 0 means no per-client limit.
    pub max_connections_per_client: usize,
}

/// The default [`Limits::max_connections_per_client`].
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 64;

/// The default [`Limits::max_connections`]: the process's open-file limit
/// (RLIMIT_NOFILE, soft) as it is when called, minus
/// [`fd_reserve`] of it for everything that is not a connection's socket
/// (the listener, standard streams, the files being sent), and at least 256.
/// Raise the limit (`ulimit -n`, or `setrlimit` as egress-mirror does at
/// start) before making the [`Limits`] to serve more.
pub fn default_max_connections() -> usize {
    #[cfg(target_os = "linux")]
    {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let soft = soft.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        soft.saturating_sub(fd_reserve(soft)).max(256)
    }
    #[cfg(not(target_os = "linux"))]
    {
        256
    }
}

/// Descriptors of an open-file limit of `limit` that
/// [`default_max_connections`] keeps away from connections: a sixteenth,
/// at least 64. A connection needs its socket, and one more descriptor only
/// while it sends a file body that is not in memory; the rest of a server
/// needs a handful (the listener, standard streams, the runtime's own).
/// So the reserve bounds how many file bodies can be in flight at once
/// when every connection slot is taken: 1,250 at a limit of 20,000 (18,750
/// connections), 4,096 at 65,536. Below 1,024 the reserve is 64, and below
/// 320 the floor of 256 connections wins: past the limit, accepting pauses
/// (a log line says so) instead of refusing with `503`.
pub fn fd_reserve(limit: usize) -> usize {
    (limit / 16).max(64)
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 64 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            max_connections: default_max_connections(),
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        }
    }
}

/// Why [`parse_request`] produced no request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server would answer with this status and close the connection.
    Status(u16),
    /// The bytes end before the request does (a server would wait, then
    /// close silently).
    Incomplete,
}

/// Parses one request (head and body) from `bytes` with exactly the rules a
/// connection of [`Server`] applies, without a socket. `peer` of the result
/// is the unspecified address. Bytes after the request are ignored. Used by
/// the fuzz targets and by tests that need the parser alone.
pub fn parse_request(bytes: &[u8], limits: &Limits) -> Result<Request, Refusal> {
    let refusal = |fail: Fail| match fail {
        Fail::Status(status) => Refusal::Status(status),
        Fail::Close => Refusal::Incomplete,
    };
    let mut reader = bytes;
    let head = parse::read_head(&mut reader, limits).map_err(refusal)?;
    let body = parse::read_body(&mut reader, head.framing, limits).map_err(refusal)?;
    Ok(Request {
        method: head.method,
        target: head.target,
        version: head.version,
        headers: head.headers,
        body,
        peer: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
    })
}
