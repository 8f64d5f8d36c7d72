//! Serving one connection: the HTTP/1.1 codec driven as bytes arrive, and
//! "request -> handler -> reply" as a function other protocols can reuse.
//!
//! The codec is this crate's own strict parser (`parse.rs`), not a third
//! party's; docs/architecture.md says why. The parser reads from a
//! `BufRead`, and here it reads from the bytes received so far: a parse that
//! runs out of bytes is simply tried again when more have arrived. Each
//! attempt is started only when it can end differently from the last one
//! (a new line ended, or a chunk's data is complete), so the work stays
//! linear in the bytes received however a client splits them:
//! - the head is tried again only when new bytes hold an LF (after the
//!   request line every LF ends a field line, and there are at most
//!   `MAX_HEADERS` of those before a 431) or when the head budget is
//!   exceeded; empty lines before the request line are skipped here, against
//!   the same budget, so a drip of them costs nothing;
//! - a `Content-Length` body is waited for until it is complete;
//! - a chunked body keeps its progress ([`parse::Chunked`]) between attempts.

use std::fs::File;
use std::future::Future;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::{timeout, timeout_at, Instant};

use crate::parse::{self, Chunked, Fail, Framing, Head};
use crate::shared::Shared;
use crate::{write, Body, Limits, Method, Reply, Request, Response, SealedFile};

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 16 * 1024;
/// Read size for file bodies (on the blocking pool) and write size to the
/// socket.
const FILE_CHUNK: usize = 256 * 1024;
/// How long, at most, a closing connection drains unread input so that the
/// final response is not destroyed by a TCP reset.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 256 * 1024;

/// A byte stream a connection is served over: a plain TCP socket, or
/// anything wrapping one (a TLS stream). Every method has a default, so a
/// wrapper needs only `impl Transport for MyStream {}`.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Resolves when the peer has sent something (or closed), so that an
    /// idle connection holds no read buffer while it waits. The default
    /// resolves at once (a buffer is then held while waiting).
    fn ready(&self) -> impl Future<Output = io::Result<()>> + Send {
        async { Ok(()) }
    }

    /// The plain blocking socket, for [`Reply::Takeover`] and
    /// [`Reply::Raw`]; `None` (the default) if this transport cannot be
    /// handed over as one: the connection is then closed.
    fn into_blocking_tcp(self) -> Option<StdTcpStream>
    where
        Self: Sized,
    {
        None
    }

    /// The plain socket itself, if writing to it directly puts bytes on the
    /// wire (zero-copy `sendfile(2)` for [`Body::Sealed`]). Default: none;
    /// sealed bodies are then copied like any other.
    fn plain_tcp(&self) -> Option<&tokio::net::TcpStream> {
        None
    }
}

impl Transport for tokio::net::TcpStream {
    async fn ready(&self) -> io::Result<()> {
        self.readable().await
    }

    fn into_blocking_tcp(self) -> Option<StdTcpStream> {
        // into_std keeps the socket non-blocking; the closure expects a
        // blocking one.
        let std = self.into_std().ok()?;
        std.set_nonblocking(false).ok()?;
        Some(std)
    }

    fn plain_tcp(&self) -> Option<&tokio::net::TcpStream> {
        Some(self)
    }
}

/// The server side of every connection of one [`crate::Server`]: the
/// handler, the limits and the way the handler is run. Cloning is cheap.
/// A [`crate::Config::acceptor`] receives one per connection.
#[derive(Clone)]
pub struct Service {
    pub(crate) shared: Arc<Shared>,
}

/// [`crate::Handler::handle_now`] on `req`: `None` when the handler leaves
/// it to the blocking pool; a panic gives a `500` reply and `true` (the
/// connection is then closed after the answer).
fn answer_now(shared: &Shared, req: &Request) -> Option<(Reply, bool)> {
    match catch_unwind(AssertUnwindSafe(|| shared.handler.handle_now(req))) {
        Ok(reply) => reply.map(|reply| (reply, false)),
        Err(_) => Some((
            Reply::Response(Response::text(500, "handler panicked\n")),
            true,
        )),
    }
}

impl Service {
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// Runs the handler on `req`: on the blocking pool unless
    /// [`crate::Handler::handle_now`] answers at once, or inline when the
    /// server was told the handler never blocks. A panicking handler gives a
    /// `500` reply; the `bool` says whether that happened (the connection
    /// should then be closed after the answer).
    pub async fn respond(&self, req: Request) -> (Reply, bool) {
        let panicked = || Reply::Response(Response::text(500, "handler panicked\n"));
        if self.shared.inline {
            match catch_unwind(AssertUnwindSafe(|| self.shared.handler.handle(req))) {
                Ok(reply) => (reply, false),
                Err(_) => (panicked(), true),
            }
        } else {
            if let Some(answer) = answer_now(&self.shared, &req) {
                return answer;
            }
            let shared = Arc::clone(&self.shared);
            let run = move || catch_unwind(AssertUnwindSafe(|| shared.handler.handle(req)));
            match tokio::task::spawn_blocking(run).await {
                Ok(Ok(reply)) => (reply, false),
                _ => (panicked(), true),
            }
        }
    }

    /// Asks the handler to vouch for a file body before its last byte (see
    /// [`crate::Handler::vouch_for_file`]), where the handler runs.
    pub async fn vouch_for_file(&self, response: &Response, file: &Arc<File>) -> bool {
        if self.shared.inline {
            return self.shared.handler.vouch_for_file(response, file);
        }
        let shared = Arc::clone(&self.shared);
        let response = response.clone();
        let file = Arc::clone(file);
        tokio::task::spawn_blocking(move || shared.handler.vouch_for_file(&response, &file))
            .await
            .unwrap_or(false)
    }

    /// Serves HTTP/1.1 on `io` until the client leaves, a limit ends the
    /// connection, or the server stops.
    pub async fn serve_http1<S: Transport>(&self, io: S, peer: SocketAddr) {
        serve_http1(io, peer, self).await;
    }
}

/// Reads at most [`READ_CHUNK`] more bytes into `buf`; `Ok(0)` is EOF. The
/// buffer starts at 2 KiB and doubles up to `READ_CHUNK` per step, so a
/// client that sends a few bytes and stalls holds little memory.
async fn read_more<S: Transport>(io: &mut S, buf: &mut Vec<u8>) -> io::Result<usize> {
    if buf.capacity() - buf.len() < 1024 {
        buf.reserve(buf.len().clamp(2048, READ_CHUNK));
    }
    let room = (buf.capacity() - buf.len()).min(READ_CHUNK);
    let mut limited = (&mut *io).take(room as u64);
    limited.read_buf(buf).await
}

/// Reads more bytes before `deadline`; any failure, EOF or timeout included,
/// ends the request (closed without an answer, as the parser's `Close`).
async fn read_more_until<S: Transport>(
    io: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<(), Fail> {
    match timeout_at(deadline, read_more(io, buf)).await {
        Ok(Ok(n)) if n > 0 => Ok(()),
        _ => Err(Fail::Close),
    }
}

/// Reads a request head from `buf` and the stream. Returns the head and the
/// number of bytes of `buf` it took.
async fn read_head<S: Transport>(
    io: &mut S,
    buf: &mut Vec<u8>,
    limits: &Limits,
    deadline: Instant,
) -> Result<(Head, usize), Fail> {
    // Empty lines before the request line, skipped against the head budget
    // exactly as the parser would (RFC 9112 §2.2).
    let mut skipped = 0usize;
    let mut fresh_from = 0usize;
    loop {
        while buf.get(skipped..skipped + 2) == Some(b"\r\n") && skipped + 2 <= limits.max_head_bytes
        {
            skipped += 2;
        }
        let budget = limits.max_head_bytes - skipped;
        let rest = buf.get(skipped..).unwrap_or_default();
        let fresh = buf.get(fresh_from.max(skipped)..).unwrap_or_default();
        if fresh.contains(&b'\n') || rest.len() > budget {
            let limits = Limits {
                max_head_bytes: budget,
                ..*limits
            };
            let mut reader = rest;
            match parse::read_head(&mut reader, &limits) {
                Ok(head) => return Ok((head, buf.len() - reader.len())),
                // Out of bytes: wait for more.
                Err(Fail::Close) => {}
                Err(fail) => return Err(fail),
            }
        }
        fresh_from = buf.len();
        read_more_until(io, buf, deadline).await?;
    }
}

/// Reads the body the head announced, starting at `buf[start..]`. Returns
/// the body and the end of the request in `buf`.
async fn read_body<S: Transport>(
    io: &mut S,
    buf: &mut Vec<u8>,
    start: usize,
    framing: Framing,
    limits: &Limits,
    deadline: Instant,
) -> Result<(Vec<u8>, usize), Fail> {
    match framing {
        Framing::None => Ok((Vec::new(), start)),
        Framing::Length(n) => {
            // read_head checked n <= max_body_bytes, a usize.
            let n = usize::try_from(n).map_err(|_| Fail::Status(413))?;
            let end = start + n;
            while buf.len() < end {
                read_more_until(io, buf, deadline).await?;
            }
            let body = buf.get(start..end).ok_or(Fail::Close)?.to_vec();
            Ok((body, end))
        }
        Framing::Chunked => {
            let mut st = Chunked::default();
            let mut fresh_from = start;
            loop {
                let have = buf.len() - start;
                let attempt = if st.need > 0 {
                    have >= st.need
                } else {
                    let fresh = buf.get(fresh_from..).unwrap_or_default();
                    fresh.contains(&b'\n') || have - st.consumed > st.line_budget()
                };
                if attempt {
                    let mut reader = buf.get(start + st.consumed..).unwrap_or_default();
                    match parse::read_chunked(&mut reader, limits, &mut st) {
                        Ok(body) => return Ok((body, start + st.consumed)),
                        Err(Fail::Close) => {}
                        Err(fail) => return Err(fail),
                    }
                }
                fresh_from = buf.len();
                read_more_until(io, buf, deadline).await?;
            }
        }
    }
}

/// Writes all of `bytes`; each write must make progress within
/// `read_timeout` (a slow reader is served as long as it keeps reading, as
/// with a blocking socket's `SO_SNDTIMEO`).
async fn write_all<S: Transport>(io: &mut S, mut bytes: &[u8], limits: &Limits) -> io::Result<()> {
    while !bytes.is_empty() {
        match timeout(limits.read_timeout, io.write(bytes)).await {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => bytes = bytes.get(n..).unwrap_or_default(),
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        }
    }
    Ok(())
}

async fn flush<S: Transport>(io: &mut S, limits: &Limits) -> io::Result<()> {
    match timeout(limits.read_timeout, io.flush()).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

async fn serve_http1<S: Transport>(mut io: S, peer: SocketAddr, svc: &Service) {
    let limits = svc.shared.limits;
    let idle = limits.idle_timeout.min(limits.read_timeout);
    let head_timeout = limits.head_timeout.min(limits.read_timeout);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        // Idle wait for the next request. EOF, a timeout or an error here is
        // an ordinary end of the connection. An idle connection holds no
        // buffer.
        if buf.is_empty() {
            buf = Vec::new();
            match timeout(idle, io.ready()).await {
                Ok(Ok(())) => {}
                _ => return,
            }
            match timeout(idle, read_more(&mut io, &mut buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
        }
        // From its first byte the head must arrive within head_timeout and
        // the whole request within read_timeout.
        let first = Instant::now();
        let (head, head_end) =
            match read_head(&mut io, &mut buf, &limits, first + head_timeout).await {
                Ok(head) => head,
                Err(fail) => return refuse(io, fail, svc).await,
            };
        if head.expect_continue
            && write_all(&mut io, b"HTTP/1.1 100 Continue\r\n\r\n", &limits)
                .await
                .is_err()
        {
            return;
        }
        let deadline = first + limits.read_timeout;
        let (body, end) =
            match read_body(&mut io, &mut buf, head_end, head.framing, &limits, deadline).await {
                Ok(body) => body,
                Err(fail) => return refuse(io, fail, svc).await,
            };
        // What follows the request stays for the next one (pipelining).
        buf.drain(..end.min(buf.len()));

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
        let (reply, panicked) = svc.respond(req).await;
        keep_alive &= !panicked;
        let asked = Asked {
            head_request,
            http10,
            keep_alive,
        };
        match answer(io, reply, asked, svc).await {
            Some(open) => io = open,
            None => return,
        }
    }
}

/// How the request being answered was asked.
#[derive(Clone, Copy)]
pub(crate) struct Asked {
    head_request: bool,
    http10: bool,
    /// The connection may serve another request after this one.
    keep_alive: bool,
}

/// A handler's response as it goes on the wire: a response that cannot be
/// sent becomes a `500` and ends the connection; the `Connection` field to
/// send; whether the connection stays open after it.
fn checked(resp: Response, asked: Asked) -> (Response, Option<&'static str>, bool) {
    let mut keep_alive = asked.keep_alive;
    let resp = if (200..=599).contains(&resp.status) && write::headers_valid(&resp) {
        resp
    } else {
        keep_alive = false;
        Response::text(500, "invalid response from handler\n")
    };
    keep_alive &= !write::wants_close(&resp);
    let connection = match (keep_alive, asked.http10) {
        (false, _) => Some("close"),
        (true, true) => Some("keep-alive"),
        (true, false) => None,
    };
    (resp, connection, keep_alive)
}

/// Sends `reply` to the request `asked` describes. Returns the connection
/// when it stays open for the next request.
async fn answer<S: Transport>(mut io: S, reply: Reply, asked: Asked, svc: &Service) -> Option<S> {
    let limits = svc.shared.limits;
    let head_request = asked.head_request;
    match reply {
        Reply::Response(resp) => {
            let (resp, connection, keep_alive) = checked(resp, asked);
            if send(&mut io, &resp, head_request, connection, Some(svc), &limits)
                .await
                .is_err()
            {
                // The response may be incomplete (a write failed, or a
                // file body was refused before its last byte): end the
                // connection at once (dropping it) so nothing is read as
                // a complete response or as the start of the next one.
                return None;
            }
            if !keep_alive {
                linger_close(io).await;
                return None;
            }
            Some(io)
        }
        Reply::Takeover(resp, take) => {
            if !(100..=999).contains(&resp.status) || !write::headers_valid(&resp) {
                let resp = Response::text(500, "invalid response from handler\n");
                if send(&mut io, &resp, head_request, Some("close"), None, &limits)
                    .await
                    .is_ok()
                {
                    linger_close(io).await;
                }
                return None;
            }
            let head = write::takeover_head(&resp);
            let written = match &resp.body {
                Body::File(file, len) => match write_all(&mut io, &head, &limits).await {
                    Ok(()) => send_file(&mut io, file, *len, &resp, None, &limits).await,
                    Err(e) => Err(e),
                },
                Body::Sealed(sealed) => match write_all(&mut io, &head, &limits).await {
                    Ok(()) => send_sealed(&mut io, sealed, &limits).await,
                    Err(e) => Err(e),
                },
                body => write_all(&mut io, &[&head[..], body.as_bytes()].concat(), &limits).await,
            };
            if written.is_err() || flush(&mut io, &limits).await.is_err() {
                return None;
            }
            hand_over(io, svc, take).await;
            None
        }
        Reply::Raw(take) => {
            hand_over(io, svc, take).await;
            None
        }
    }
}

/// What the fast lane did with a new connection's first request.
pub(crate) enum AtOnce {
    /// Nothing was read: the connection is served as usual.
    NotHere,
    /// The request was read and answered; a task finishes the answer and
    /// serves the connection on.
    Answered(Answered),
    /// The socket failed while the request was being taken: it is closed.
    Failed,
}

/// A first request answered by the fast lane, and what is left to do.
pub(crate) struct Answered {
    left: Left,
    asked: Asked,
}

enum Left {
    /// The answer, written up to these bytes.
    Bytes(Vec<u8>),
    /// The handler's reply, not written yet (a file body, a takeover).
    Reply(Reply),
}

/// Bytes of a new connection peeked at by the accept thread: a first
/// request head longer than this is served as usual, not by the fast lane.
#[cfg(target_os = "linux")]
pub(crate) const AT_ONCE_PEEK: usize = 4096;

/// The fast lane, run on the accept thread for a new plain-HTTP connection
/// that has already sent something (`sent`, peeked at: still unread). When
/// those bytes are exactly one whole
/// request without a body (GET or HEAD) and the handler answers it from
/// memory ([`crate::Handler::handle_now`]), the request is taken off the
/// socket and answered here, with as much of the answer as the socket takes
/// at once. The workers may all be busy (thousands of held connections
/// reaching their deadline together queue thousands of tasks ahead of a new
/// one); a client that asks for a page does not wait for them
/// (docs/benchmarks.md, held connections). Anything else (a partial head,
/// a body, pipelined requests, a head the parser refuses, a handler that
/// needs the blocking pool) is left unread for the usual path, which parses
/// the same bytes with the same parser and limits.
#[cfg(target_os = "linux")]
pub(crate) fn answer_at_once(
    stream: &StdTcpStream,
    sent: &[u8],
    peer: SocketAddr,
    shared: &Shared,
) -> AtOnce {
    use rustix::net::{recv, RecvFlags};
    use std::io::Write;
    if shared.inline {
        return AtOnce::NotHere;
    }
    let n = sent.len();
    let mut reader = sent;
    let Ok(head) = parse::read_head(&mut reader, &shared.limits) else {
        return AtOnce::NotHere;
    };
    let bodiless = head.framing == Framing::None && !head.expect_continue;
    if !reader.is_empty() || !bodiless || !matches!(head.method, Method::Get | Method::Head) {
        return AtOnce::NotHere;
    }
    let head_request = head.method == Method::Head;
    let http10 = head.version == "HTTP/1.0";
    let req = Request {
        method: head.method,
        target: head.target,
        version: head.version,
        headers: head.headers,
        body: Vec::new(),
        peer,
    };
    let Some((reply, panicked)) = answer_now(shared, &req) else {
        return AtOnce::NotHere;
    };
    // The request is answered: take its bytes off the socket (they are
    // there: they were just peeked at).
    let mut taken = [0u8; AT_ONCE_PEEK];
    match recv(
        stream,
        taken.get_mut(..n).unwrap_or_default(),
        RecvFlags::DONTWAIT,
    ) {
        Ok((m, _)) if m == n => {}
        _ => return AtOnce::Failed,
    }
    let asked = Asked {
        head_request,
        http10,
        keep_alive: head.keep_alive && !panicked,
    };
    // An answer in memory and small enough for one write (as `send` writes
    // it); a larger one, a file body or a takeover is sent by the task.
    let in_memory = |body: &Body| {
        !matches!(body, Body::File(..) | Body::Sealed(_)) && body.as_bytes().len() <= FILE_CHUNK
    };
    let resp = match reply {
        Reply::Response(resp) if in_memory(&resp.body) => resp,
        reply => {
            return AtOnce::Answered(Answered {
                left: Left::Reply(reply),
                asked,
            })
        }
    };
    let (resp, connection, keep_alive) = checked(resp, asked);
    let (mut bytes, with_body) = write::frame(&resp, head_request, connection);
    if with_body {
        bytes.extend_from_slice(resp.body.as_bytes());
    }
    let mut written = 0;
    while let Some(rest) = bytes.get(written..).filter(|r| !r.is_empty()) {
        match (&*stream).write(rest) {
            Ok(0) => return AtOnce::Failed,
            Ok(k) => written += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return AtOnce::Failed,
        }
    }
    // Only the unwritten rest goes on (usually nothing: no allocation). The
    // answer itself is freed here, not when the task gets to run: thousands
    // of kept-alive connections asking at once would otherwise hold
    // thousands of written answers while their tasks wait.
    let rest = bytes.split_off(written.min(bytes.len()));
    drop(bytes);
    AtOnce::Answered(Answered {
        left: Left::Bytes(rest),
        asked: Asked {
            keep_alive,
            ..asked
        },
    })
}

/// Finishes a first request the fast lane answered, then serves the
/// connection on.
pub(crate) async fn serve_answered<S: Transport>(
    mut io: S,
    peer: SocketAddr,
    svc: &Service,
    answered: Answered,
) {
    let limits = svc.shared.limits;
    let Answered { left, asked } = answered;
    let open = match left {
        Left::Bytes(rest) => {
            if !rest.is_empty()
                && (write_all(&mut io, &rest, &limits).await.is_err()
                    || flush(&mut io, &limits).await.is_err())
            {
                return;
            }
            if !asked.keep_alive {
                return linger_close(io).await;
            }
            Some(io)
        }
        Left::Reply(reply) => answer(io, reply, asked, svc).await,
    };
    if let Some(io) = open {
        serve_http1(io, peer, svc).await;
    }
}

/// Hands the socket to `take` as a blocking std stream, on the blocking
/// pool, and waits for it to finish. The socket is registered with the
/// server so that stopping the server shuts it down.
async fn hand_over<S: Transport>(io: S, svc: &Service, take: Box<dyn FnOnce(StdTcpStream) + Send>) {
    let Some(stream) = io.into_blocking_tcp() else {
        // Not a plain TCP connection: nothing to hand over; it is closed.
        return;
    };
    let timeout = Some(svc.shared.limits.read_timeout);
    let _ = stream.set_read_timeout(timeout);
    let _ = stream.set_write_timeout(timeout);
    let registration = svc.shared.register_taken(&stream);
    let run = move || {
        let _registration = registration;
        // A panic here would only end this blocking task; catching it keeps
        // the registry cleanup on the normal path.
        let _ = catch_unwind(AssertUnwindSafe(move || take(stream)));
    };
    let _ = tokio::task::spawn_blocking(run).await;
}

/// Writes the head of `resp` and, unless it is bodiless, its body. A
/// [`Body::File`] is sent with [`send_file`], and `svc` (if any) is asked to
/// vouch for it before its last byte; a [`Body::Sealed`] with [`send_sealed`].
/// An error means the response may be incomplete and the connection must be
/// closed.
async fn send<S: Transport>(
    io: &mut S,
    resp: &Response,
    head_request: bool,
    connection: Option<&str>,
    svc: Option<&Service>,
    limits: &Limits,
) -> io::Result<()> {
    let (head, with_body) = write::frame(resp, head_request, connection);
    match &resp.body {
        Body::File(file, len) if with_body => {
            write_all(io, &head, limits).await?;
            send_file(io, file, *len, resp, svc, limits).await?;
        }
        Body::Sealed(sealed) if with_body => {
            write_all(io, &head, limits).await?;
            send_sealed(io, sealed, limits).await?;
        }
        body if with_body && body.as_bytes().len() <= FILE_CHUNK => {
            // One write for head and body: one segment for small answers.
            write_all(io, &[&head[..], body.as_bytes()].concat(), limits).await?;
        }
        body if with_body => {
            write_all(io, &head, limits).await?;
            write_all(io, body.as_bytes(), limits).await?;
        }
        _ => write_all(io, &head, limits).await?,
    }
    flush(io, limits).await
}

/// Reads up to `want` bytes of `file` from its current position into `buf`
/// (replacing its contents), on the calling (blocking) thread.
fn read_chunk(file: &File, mut buf: Vec<u8>, want: usize) -> io::Result<Vec<u8>> {
    buf.clear();
    let mut reader = file;
    Read::take(&mut reader, want as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// What a read that must not wait for the disk gave.
enum Cached {
    /// This many bytes, from the page cache, into the buffer's start.
    Read(usize),
    /// They are not all in memory (or this file cannot say): read them on
    /// the blocking pool.
    NotNow,
    /// The file cannot be read this way at all.
    Unsupported,
}

/// Reads into `buf` from `file`'s current position (advancing it) only what
/// is already in the page cache (`preadv2` with `RWF_NOWAIT`), on the
/// calling thread: no hand-off to the blocking pool, which for a file in
/// memory costs more than the read.
#[cfg(target_os = "linux")]
fn read_cached(file: &File, buf: &mut [u8]) -> io::Result<Cached> {
    use rustix::io::{preadv2, Errno, ReadWriteFlags};
    // u64::MAX: from the file's own position, which it advances, as
    // `read_chunk` reads.
    match preadv2(
        file,
        &mut [io::IoSliceMut::new(buf)],
        u64::MAX,
        ReadWriteFlags::NOWAIT,
    ) {
        Ok(n) => Ok(Cached::Read(n)),
        Err(Errno::AGAIN) => Ok(Cached::NotNow),
        Err(Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => Ok(Cached::Unsupported),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn read_cached(_file: &File, _buf: &mut [u8]) -> io::Result<Cached> {
    Ok(Cached::Unsupported)
}

/// The next at most `want` bytes of `file` into `buf` (whose length stays
/// [`FILE_CHUNK`] or the body's length): from the page cache on this thread
/// when they are there, else on the blocking pool. Returns how many.
async fn next_chunk(
    file: &Arc<File>,
    buf: &mut Vec<u8>,
    want: usize,
    nowait: &mut bool,
) -> io::Result<usize> {
    if *nowait {
        let room = buf.get_mut(..want).ok_or_else(short)?;
        match read_cached(file, room)? {
            Cached::Read(n) => return Ok(n),
            Cached::NotNow => {}
            Cached::Unsupported => *nowait = false,
        }
    }
    let size = buf.len();
    let chunk = joined(spawn_read(file, std::mem::take(buf), want)).await?;
    let n = chunk.len();
    *buf = chunk;
    buf.resize(size, 0);
    Ok(n)
}

/// Starts reading the next chunk of `file` on the blocking pool.
fn spawn_read(
    file: &Arc<File>,
    buf: Vec<u8>,
    want: usize,
) -> tokio::task::JoinHandle<io::Result<Vec<u8>>> {
    let file = Arc::clone(file);
    tokio::task::spawn_blocking(move || read_chunk(&file, buf, want))
}

async fn joined(reading: tokio::task::JoinHandle<io::Result<Vec<u8>>>) -> io::Result<Vec<u8>> {
    reading.await.map_err(io::Error::other)?
}

fn short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "file body shorter than its length",
    )
}

/// Copies exactly `len` bytes of `file`, from its current position, to `io`.
///
/// Not `sendfile(2)`, on purpose (a file the kernel keeps immutable is a
/// [`Body::Sealed`], and that one is sent with `sendfile`): with `sendfile`
/// the socket may still reference page-cache pages after the call returns,
/// so a later write to the file can change bytes already "sent". A plain
/// copy puts the bytes in the socket buffer when the write returns, and that
/// is what makes the check below sound: the bytes vouched for are the bytes
/// on the wire. The file is read in [`FILE_CHUNK`]s: on the worker when
/// the chunk is already in the page cache (`RWF_NOWAIT`, which never waits
/// for the disk), else on the blocking pool, so the runtime's workers never
/// wait for the disk.
///
/// Invariant: the client receives the last byte only if the file really had
/// `len` bytes and the handler vouched for it (when `svc` is given) after
/// every other byte was written. Otherwise this returns an error before that
/// byte, and the caller closes the connection, so the client sees a
/// response shorter than its `Content-Length`: visibly broken, never
/// silently complete.
async fn send_file<S: Transport>(
    io: &mut S,
    file: &Arc<File>,
    len: u64,
    resp: &Response,
    svc: Option<&Service>,
    limits: &Limits,
) -> io::Result<()> {
    let Some(mut left) = len.checked_sub(1) else {
        return Ok(());
    };
    let want = |left: u64| usize::try_from(left).map_or(FILE_CHUNK, |l| l.min(FILE_CHUNK));
    let mut buf = vec![0u8; want(left).max(1)];
    let mut nowait = true;
    while left > 0 {
        let n = next_chunk(file, &mut buf, want(left), &mut nowait).await?;
        if n == 0 {
            return Err(short());
        }
        // A read never gives more than it was asked for.
        left = left.saturating_sub(n as u64);
        write_all(io, buf.get(..n).ok_or_else(short)?, limits).await?;
    }
    if let Some(svc) = svc {
        if !svc.vouch_for_file(resp, file).await {
            return Err(io::Error::other(
                "the handler no longer vouches for the file body",
            ));
        }
    }
    if next_chunk(file, &mut buf, 1, &mut nowait).await? != 1 {
        return Err(short());
    }
    write_all(io, buf.get(..1).ok_or_else(short)?, limits).await
}

/// Sends a sealed file body: zero-copy with `sendfile(2)` on a plain TCP
/// socket (each step waits, within the write bound, for the socket to take
/// more), copied through user space on any other transport.
async fn send_sealed<S: Transport>(
    io: &mut S,
    sealed: &SealedFile,
    limits: &Limits,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(tcp) = io.plain_tcp() {
        use std::os::fd::AsFd;
        let mut offset = 0u64;
        while offset < sealed.len() {
            match timeout(limits.read_timeout, tcp.writable()).await {
                Ok(ready) => ready?,
                Err(_) => return Err(io::ErrorKind::TimedOut.into()),
            }
            match tcp.try_io(tokio::io::Interest::WRITABLE, || {
                sealed.send_step(tcp.as_fd(), &mut offset)
            }) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    #[cfg(not(target_os = "linux"))]
    {
        // Sealed files cannot be made off Linux (see SealedFile::new).
        let _ = (io, sealed, limits);
        return Err(io::ErrorKind::Unsupported.into());
    }
    #[cfg(target_os = "linux")]
    copy_sealed(io, sealed, limits).await
}

/// Sends a sealed body through user space, in [`FILE_CHUNK`]s (a memfd read
/// is a memory copy: it does not wait for a disk).
#[cfg(target_os = "linux")]
async fn copy_sealed<S: Transport>(
    io: &mut S,
    sealed: &SealedFile,
    limits: &Limits,
) -> io::Result<()> {
    let mut offset = 0u64;
    let mut buf = vec![0u8; FILE_CHUNK];
    while offset < sealed.len() {
        let n = sealed.read_at(offset, &mut buf)?;
        let chunk = buf.get(..n).unwrap_or_default();
        if chunk.is_empty() {
            return Err(short());
        }
        write_all(io, chunk, limits).await?;
        offset += n as u64;
    }
    Ok(())
}

/// Answers a request that could not be read, then closes.
async fn refuse<S: Transport>(mut io: S, fail: Fail, svc: &Service) {
    let limits = &svc.shared.limits;
    if let Fail::Status(status) = fail {
        svc.shared
            .tally
            .refused_unreadable
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let resp = Response::text(status, &format!("{}\n", write::reason(status)));
        if send(&mut io, &resp, false, Some("close"), None, limits)
            .await
            .is_ok()
        {
            linger_close(io).await;
        }
    }
}

/// Answers `503` to a connection over a limit, then closes, all within a
/// bounded time.
pub(crate) async fn refuse_busy<S: Transport>(mut io: S, limits: &Limits) {
    let limits = Limits {
        read_timeout: LINGER,
        ..*limits
    };
    let resp = Response::text(503, "too many connections\n");
    if send(&mut io, &resp, false, Some("close"), None, &limits)
        .await
        .is_ok()
    {
        linger_close(io).await;
    }
}

/// Half-closes, then discards input for a bounded time and amount before the
/// socket is dropped. Closing with unread input makes the kernel send a TCP
/// reset, which can destroy the response we just wrote before the client
/// reads it (typical after a 413 or a pipelined request following an error).
async fn linger_close<S: Transport>(mut io: S) {
    let deadline = Instant::now() + LINGER;
    if timeout_at(deadline, io.shutdown())
        .await
        .map_or(true, |r| r.is_err())
    {
        return;
    }
    let mut buf = vec![0u8; 8192];
    let mut drained = 0usize;
    while drained < LINGER_BYTES {
        match timeout_at(deadline, io.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => return,
        }
    }
}
