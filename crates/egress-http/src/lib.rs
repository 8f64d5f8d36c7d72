//! egress-http: a small, blocking HTTP/1.1 **server** library.
//!
//! It serves the reference mirror and the test fixtures. It deliberately
//! contains no HTTP client: the mirror must have no way to fetch anything.
//!
//! Design, in short:
//! - one thread per connection, at most [`Limits::max_connections`] of them;
//!   beyond that a connection gets `503` and is closed;
//! - requests are parsed strictly (see `parse.rs`): anything ambiguous is a
//!   4xx/5xx followed by closing the connection;
//! - the request-target is handed to the handler exactly as received, never
//!   decoded or normalised, in any form (origin, absolute, authority, `*`);
//! - every request must arrive completely within [`Limits::read_timeout`] of
//!   its first byte, and an idle keep-alive connection is closed after the same
//!   time, which bounds slowloris-style clients;
//! - responses always carry `Content-Length`, never chunked framing;
//! - file bodies are copied to the socket ([`Body::File`]), except files
//!   the kernel keeps immutable ([`Body::Sealed`]), which go out zero-copy
//!   with `sendfile(2)`;
//! - a panicking handler produces a `500`, not a dead server.

mod parse;
mod sealed;
mod write;

pub use sealed::SealedFile;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

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
    /// with read and write timeouts set to `read_timeout`. Bytes the client
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

/// Handles one request. Called on the connection's thread; may block.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, req: Request) -> Reply;

    /// Called on the connection's thread while `response`, whose body is the
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
    /// Bound on waiting for a request on an idle connection, and on receiving
    /// a whole request (head and body) once its first byte arrived. Also the
    /// per-write timeout. Must be non-zero.
    pub read_timeout: Duration,
    /// Concurrent connections served; more get 503 and are closed.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 64 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
            read_timeout: Duration::from_secs(10),
            max_connections: 256,
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

/// Entry point; see [`Server::bind`].
pub struct Server;

impl Server {
    /// Binds `addr` and serves `handler` on a background accept thread until
    /// the returned handle is stopped or dropped.
    pub fn bind(
        addr: impl ToSocketAddrs,
        handler: impl Handler,
        limits: Limits,
    ) -> io::Result<ServerHandle> {
        if limits.read_timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "read_timeout must be non-zero",
            ));
        }
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            limits,
            stopping: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
            refusing: AtomicUsize::new(0),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name(format!("egress-http-accept-{}", addr.port()))
            .spawn(move || accept_loop(listener, accept_shared))?;
        Ok(ServerHandle {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// Binds `127.0.0.1:0` with default limits.
    pub fn bind_loopback(handler: impl Handler) -> io::Result<ServerHandle> {
        Server::bind((Ipv4Addr::LOCALHOST, 0), handler, Limits::default())
    }
}

/// A running server. Stops on [`ServerHandle::stop`] or drop.
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, with a loopback IP if bound to an unspecified address.
    pub fn base_url(&self) -> String {
        format!("http://{}", reachable(self.addr))
    }

    /// Number of connections currently being served.
    pub fn connections(&self) -> usize {
        lock(&self.shared.conns).len()
    }

    /// Stops accepting, joins the accept thread and shuts down every open
    /// connection (idle keep-alive ones and taken-over streams included).
    /// Handlers that are running finish on their own threads; their writes
    /// fail.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // The accept thread is blocked in accept(); a connection to ourselves
        // wakes it and it sees the flag. Retried in case the backlog is full;
        // if it can never be woken it is left detached (it exits on the next
        // connection) rather than hanging the caller.
        let wake = reachable(self.addr);
        'wake: for _ in 0..20 {
            let _ = TcpStream::connect_timeout(&wake, Duration::from_millis(100));
            for _ in 0..100 {
                if accept.is_finished() {
                    break 'wake;
                }
                thread::sleep(Duration::from_millis(1));
            }
        }
        if accept.is_finished() {
            let _ = accept.join();
        }
        // Invariant: every connection is registered by the accept thread
        // before its thread starts, and the accept thread has stopped, so this
        // reaches all of them.
        for stream in lock(&self.shared.conns).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Read and write size for file bodies.
const FILE_CHUNK: usize = 64 * 1024;
/// Refusals (503) are answered on their own short-lived threads so the accept
/// loop never blocks; this caps those threads too. Past it, sockets are simply
/// closed.
const MAX_REFUSING: usize = 32;
/// How long, at most, a closing connection drains unread input so that the
/// final response is not destroyed by a TCP reset.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 256 * 1024;

struct Shared {
    handler: Box<dyn Handler>,
    limits: Limits,
    stopping: AtomicBool,
    /// Open connections by id, as clones of their streams so `stop` can shut
    /// them down. Its length is the connection count the cap applies to.
    conns: Mutex<HashMap<u64, TcpStream>>,
    refusing: AtomicUsize,
}

/// Nothing panics while holding the lock, but a poisoned map is still
/// consistent (single insert/remove operations), so poisoning is ignored.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => (Ipv4Addr::LOCALHOST, a.port()).into(),
        SocketAddr::V6(a) if a.ip().is_unspecified() => (Ipv6Addr::LOCALHOST, a.port()).into(),
        a => a,
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut next_id = 0u64;
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, peer)) => {
                next_id += 1;
                dispatch(stream, peer, next_id, &shared);
            }
            // E.g. out of file descriptors: back off instead of spinning.
            Err(_) => thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Removes a connection from the registry when its thread ends, however it
/// ends (including a panic or a failed spawn).
struct Registration {
    id: u64,
    shared: Arc<Shared>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.shared.conns).remove(&self.id);
    }
}

struct Refusing(Arc<Shared>);

impl Drop for Refusing {
    fn drop(&mut self) {
        self.0.refusing.fetch_sub(1, Ordering::SeqCst);
    }
}

fn dispatch(stream: TcpStream, peer: SocketAddr, id: u64, shared: &Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let admitted = {
        let mut conns = lock(&shared.conns);
        if conns.len() >= shared.limits.max_connections {
            false
        } else {
            let Ok(clone) = stream.try_clone() else {
                return;
            };
            conns.insert(id, clone);
            true
        }
    };
    if admitted {
        let registration = Registration {
            id,
            shared: Arc::clone(shared),
        };
        // If spawning fails the closure is dropped: the stream closes and the
        // registration is removed.
        let _ = thread::Builder::new()
            .name("egress-http-conn".into())
            .spawn(move || {
                let shared = Arc::clone(&registration.shared);
                serve_connection(stream, peer, &shared);
                drop(registration);
            });
        return;
    }
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let guard = Refusing(Arc::clone(shared));
    let _ = thread::Builder::new()
        .name("egress-http-refuse".into())
        .spawn(move || {
            let _guard = guard;
            let _ = stream.set_write_timeout(Some(LINGER));
            let resp = Response::text(503, "too many connections\n");
            if send(&stream, &resp, false, Some("close"), None).is_ok() {
                linger_close(&stream);
            }
        });
}

/// A reader over the connection that fails with `TimedOut` once `deadline`
/// has passed. `set_read_timeout` alone bounds each read, not the request: a
/// client dripping one byte every few seconds would never trip it.
struct Deadline {
    stream: TcpStream,
    deadline: Instant,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

fn serve_connection(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let limits = &shared.limits;
    let _ = stream.set_write_timeout(Some(limits.read_timeout));
    let mut reader = BufReader::new(Deadline {
        stream,
        deadline: Instant::now() + limits.read_timeout,
    });
    loop {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        // Idle wait for the next request, bounded by read_timeout. EOF, a
        // timeout or an error here is an ordinary end of the connection.
        reader.get_mut().deadline = Instant::now() + limits.read_timeout;
        match reader.fill_buf() {
            Ok(buf) if !buf.is_empty() => {}
            _ => return,
        }
        // From its first byte the whole request must arrive in read_timeout.
        reader.get_mut().deadline = Instant::now() + limits.read_timeout;

        let head = match parse::read_head(&mut reader, limits) {
            Ok(head) => head,
            Err(fail) => return refuse(&reader.get_ref().stream, fail),
        };
        if head.expect_continue
            && (&reader.get_ref().stream)
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .is_err()
        {
            return;
        }
        let body = match parse::read_body(&mut reader, head.framing, limits) {
            Ok(body) => body,
            Err(fail) => return refuse(&reader.get_ref().stream, fail),
        };

        let head_request = head.method == Method::Head;
        let http10 = head.version == "HTTP/1.0";
        let mut keep_alive = head.keep_alive;
        let req = Request {
            method: head.method,
            target: head.target,
            version: head.version,
            headers: head.headers,
            body,
            peer,
        };
        // The handler is caller code; a panic in it must not take the
        // connection thread down with the registry entry in an odd state, and
        // the client deserves an answer.
        let reply = match catch_unwind(AssertUnwindSafe(|| shared.handler.handle(req))) {
            Ok(reply) => reply,
            Err(_) => {
                keep_alive = false;
                Reply::Response(Response::text(500, "handler panicked\n"))
            }
        };

        match reply {
            Reply::Response(resp) => {
                let resp = if (200..=599).contains(&resp.status) && write::headers_valid(&resp) {
                    resp
                } else {
                    keep_alive = false;
                    Response::text(500, "invalid response from handler\n")
                };
                keep_alive &= !write::wants_close(&resp);
                let connection = match (keep_alive, http10) {
                    (false, _) => Some("close"),
                    (true, true) => Some("keep-alive"),
                    (true, false) => None,
                };
                let stream = &reader.get_ref().stream;
                let handler: &dyn Handler = &*shared.handler;
                if send(stream, &resp, head_request, connection, Some(handler)).is_err() {
                    // The response may be incomplete (a write failed, or a
                    // file body was refused before its last byte): end the
                    // connection at once so nothing is read as a complete
                    // response or as the start of the next one.
                    let _ = stream.shutdown(Shutdown::Both);
                    return;
                }
                if !keep_alive {
                    return linger_close(stream);
                }
            }
            Reply::Takeover(resp, take) => {
                let stream = &reader.get_ref().stream;
                if !(100..=999).contains(&resp.status) || !write::headers_valid(&resp) {
                    let resp = Response::text(500, "invalid response from handler\n");
                    if send(stream, &resp, head_request, Some("close"), None).is_ok() {
                        linger_close(stream);
                    }
                    return;
                }
                let head = write::takeover_head(&resp);
                let written = match &resp.body {
                    Body::File(file, len) => write_all(stream, &[&head])
                        .and_then(|()| send_file(stream, file, *len, |_| true)),
                    Body::Sealed(sealed) => {
                        write_all(stream, &[&head]).and_then(|()| send_sealed(stream, sealed))
                    }
                    body => write_all(stream, &[&head, body.as_bytes()]),
                };
                if written.is_err() {
                    return;
                }
                return hand_over(reader, limits, take);
            }
            Reply::Raw(take) => return hand_over(reader, limits, take),
        }
    }
}

fn hand_over(
    reader: BufReader<Deadline>,
    limits: &Limits,
    take: Box<dyn FnOnce(TcpStream) + Send>,
) {
    let stream = reader.into_inner().stream;
    let _ = stream.set_read_timeout(Some(limits.read_timeout));
    let _ = stream.set_write_timeout(Some(limits.read_timeout));
    // A panic here would only end this thread, but catching it keeps the
    // registry cleanup on the normal path.
    let _ = catch_unwind(AssertUnwindSafe(move || take(stream)));
}

fn write_all(mut stream: &TcpStream, parts: &[&[u8]]) -> io::Result<()> {
    for part in parts {
        stream.write_all(part)?;
    }
    stream.flush()
}

/// Writes the head of `resp` and, unless it is bodiless, its body. A
/// [`Body::File`] is sent with [`send_file`], and `handler` (if any) is asked
/// to vouch for it before its last byte; a [`Body::Sealed`] with
/// `sendfile(2)`. An error means the response may be incomplete and the
/// connection must be closed.
fn send(
    stream: &TcpStream,
    resp: &Response,
    head_request: bool,
    connection: Option<&str>,
    handler: Option<&dyn Handler>,
) -> io::Result<()> {
    let (head, with_body) = write::frame(resp, head_request, connection);
    match &resp.body {
        Body::File(file, len) if with_body => {
            write_all(stream, &[&head])?;
            send_file(stream, file, *len, |f| {
                handler.is_none_or(|h| h.vouch_for_file(resp, f))
            })
        }
        Body::Sealed(sealed) if with_body => {
            write_all(stream, &[&head])?;
            send_sealed(stream, sealed)
        }
        body if with_body => write_all(stream, &[&head, body.as_bytes()]),
        _ => write_all(stream, &[&head]),
    }
}

/// Copies exactly `len` bytes of `file`, from its current position, to
/// `stream`, in chunks of [`FILE_CHUNK`] bytes.
///
/// Not `sendfile(2)`, on purpose (a file the kernel keeps immutable is a
/// [`Body::Sealed`], and that one is sent with `sendfile`). std's
/// `io::copy` specialises File -> pipe and socket -> anything to
/// `splice`/`sendfile`, but deliberately not File -> TcpStream: with
/// `sendfile` the socket may still reference page-cache pages after the
/// call returns, so a later write to the file can change bytes already
/// "sent". A plain copy puts the bytes in the socket buffer
/// when `write` returns, and that is what makes the check below sound: the
/// bytes vouched for are the bytes on the wire. The cost is one pass through
/// user space, in bounded chunks; the socket's write timeout bounds each
/// write.
///
/// Invariant: the client receives the last byte only if the file really had
/// `len` bytes and `vouch` returned `true` after every other byte was
/// written. Otherwise this returns an error before that byte, and the caller
/// closes the connection, so the client sees a response shorter than its
/// `Content-Length`: visibly broken, never silently complete.
fn send_file(
    mut stream: &TcpStream,
    file: &File,
    len: u64,
    vouch: impl FnOnce(&File) -> bool,
) -> io::Result<()> {
    let Some(all_but_last) = len.checked_sub(1) else {
        return stream.flush();
    };
    let short = || {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "file body shorter than its length",
        )
    };
    // `io::copy` reads through the BufReader's buffer, so each write is up
    // to FILE_CHUNK bytes rather than std's 8 KiB default.
    let mut chunks = BufReader::with_capacity(FILE_CHUNK, file.take(all_but_last));
    if io::copy(&mut chunks, &mut stream)? != all_but_last {
        return Err(short());
    }
    if !vouch(file) {
        return Err(io::Error::other(
            "the handler no longer vouches for the file body",
        ));
    }
    if io::copy(&mut file.take(1), &mut stream)? != 1 {
        return Err(short());
    }
    stream.flush()
}

/// Sends a sealed file body zero-copy. The socket is blocking with a write
/// timeout, so a client that stops reading makes `sendfile` fail with
/// `WouldBlock` after `read_timeout`, as a stalled `write` would.
#[cfg(unix)]
fn send_sealed(stream: &TcpStream, sealed: &SealedFile) -> io::Result<()> {
    sealed.send_to(stream)
}

/// Sealed files cannot be made off Unix (see [`SealedFile::new`]).
#[cfg(not(unix))]
fn send_sealed(_stream: &TcpStream, _sealed: &SealedFile) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Answers a request that could not be read, then closes.
fn refuse(stream: &TcpStream, fail: Fail) {
    if let Fail::Status(status) = fail {
        let resp = Response::text(status, &format!("{}\n", write::reason(status)));
        if send(stream, &resp, false, Some("close"), None).is_ok() {
            linger_close(stream);
        }
    }
}

/// Half-closes, then discards input for a bounded time and amount before the
/// socket is dropped. Closing with unread input makes the kernel send a TCP
/// reset, which can destroy the response we just wrote before the client
/// reads it (typical after a 413 or a pipelined request following an error).
fn linger_close(stream: &TcpStream) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER;
    let mut buf = [0u8; 8192];
    let mut drained = 0usize;
    while drained < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match (&*stream).read(&mut buf) {
            Ok(0) => return,
            Ok(n) => drained += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
