//! HTTP/2 (RFC 9113), for connections that negotiated `h2` by ALPN: hyper's
//! server side of HTTP/2 (frames, HPACK, flow control, stream limits),
//! with every request mapped onto the same handler path as HTTP/1.1
//! ([`Service::respond`]) and every reply written with the same rules.
//!
//! The request-target handed to the handler is the raw `:path`. What the h2
//! crate does not refuse itself is refused here, before the handler runs,
//! so the strict rules of HTTP/1.1 hold on HTTP/2 as well:
//! - CONNECT and extended CONNECT (`:protocol`): not a proxy (405, 400);
//! - a `:path` that is not origin-form (absolute-form `http://host/...`,
//!   authority-form `host:port`, `*`), missing, or not visible ASCII (400);
//! - an `:authority` that disagrees with `host`, more than one `host`, or
//!   userinfo in either (400): two hops must not read two servers;
//! - connection-specific fields (`connection`, `transfer-encoding`,
//!   `keep-alive`, `proxy-connection`, `upgrade`, `te` other than
//!   `trailers`) and more than one `content-length` (400).
//!
//! The h2 crate itself resets a stream (PROTOCOL_ERROR) with a missing
//! `:method` or `:scheme`, a repeated pseudo-header, a pseudo-header after
//! a regular field, `:protocol` unless enabled (it is not), connection-
//! specific fields, and a body longer or shorter than its `content-length`.
//!
//! A [`Body::File`] is streamed with its last byte held back until the
//! handler vouches for the file ([`Service::vouch_for_file`]), exactly as
//! on HTTP/1.1; if it does not, the stream is reset (RST_STREAM) before
//! that byte, so no client takes the body for complete. [`Reply::Takeover`]
//! and [`Reply::Raw`] need the raw byte stream, which an HTTP/2 stream is
//! not: they are answered `500`.
//!
//! One caveat of the library: the `http` crate ends a path at `#`, so a
//! `:path` holding a fragment reaches the handler without it (clients never
//! send fragments; the rest is still matched byte for byte).

use std::convert::Infallible;
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper::body::{Body as _, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::mpsc;
use tokio::time::{timeout, timeout_at, Instant};

use crate::conn::{Service, Transport};
use crate::{write, Body, Method, Reply, Request, Response, SealedFile};

/// Streams one connection may have open at once.
const MAX_STREAMS: u32 = 100;
/// Bytes of a file body read per step, and the bound of one DATA chunk
/// handed to hyper.
const CHUNK: usize = 64 * 1024;
/// Chunks read ahead of what hyper has taken, per stream.
const AHEAD: usize = 2;

/// The fields HTTP/2 forbids (RFC 9113 §8.2.2), besides `te` other than
/// `trailers`.
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "transfer-encoding",
    "keep-alive",
    "proxy-connection",
    "upgrade",
];

impl Service {
    /// Serves HTTP/2 on `io` (a stream that negotiated `h2`) until the
    /// client leaves, the connection is idle for
    /// [`crate::Limits::idle_timeout`], or the server stops.
    pub async fn serve_http2<S: Transport>(&self, io: S, peer: SocketAddr) {
        serve_http2(io, peer, self).await;
    }
}

/// What the connection is doing, for the idle watchdog.
struct Activity {
    streams: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    fn touch(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn idle_since(&self) -> Option<Instant> {
        (self.streams.load(Ordering::SeqCst) == 0)
            .then(|| *self.last.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Counts a stream as open until dropped.
struct Open(Arc<Activity>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

async fn serve_http2<S: Transport>(io: S, peer: SocketAddr, svc: &Service) {
    let limits = *svc.limits();
    let idle = limits.idle_timeout.min(limits.read_timeout);
    let activity = Arc::new(Activity {
        streams: AtomicUsize::new(0),
        last: Mutex::new(Instant::now()),
    });
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(u32::try_from(limits.max_head_bytes).unwrap_or(u32::MAX))
        // A peer that stops answering pings is gone.
        .keep_alive_interval(Some(idle))
        .keep_alive_timeout(limits.read_timeout);
    let service = {
        let svc = svc.clone();
        let activity = Arc::clone(&activity);
        service_fn(move |req| {
            activity.streams.fetch_add(1, Ordering::SeqCst);
            let open = Open(Arc::clone(&activity));
            let svc = svc.clone();
            async move { Ok::<_, Infallible>(answer(&svc, peer, req, open).await) }
        })
    };
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    // An idle connection (no open stream for `idle`) is closed gracefully
    // (GOAWAY); one that then does not finish within read_timeout is dropped.
    loop {
        let since = activity.idle_since().unwrap_or_else(Instant::now);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = tokio::time::sleep_until(since + idle) => {
                if activity.idle_since().is_some_and(|s| s.elapsed() >= idle) {
                    conn.as_mut().graceful_shutdown();
                    let _ = timeout(limits.read_timeout, conn.as_mut()).await;
                    return;
                }
            }
        }
    }
}

/// A response body for hyper: nothing, bytes, or chunks streamed by a task.
enum H2Body {
    Empty,
    Bytes(Option<Bytes>),
    Stream {
        chunks: mpsc::Receiver<io::Result<Bytes>>,
        left: u64,
        /// Keeps the stream counted as open while its body is sent.
        _open: Open,
    },
}

impl hyper::body::Body for H2Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            H2Body::Empty => Poll::Ready(None),
            H2Body::Bytes(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            H2Body::Stream { chunks, left, .. } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                match chunks.poll_recv(cx) {
                    Poll::Ready(Some(Ok(chunk))) => {
                        *left = left.saturating_sub(chunk.len() as u64);
                        Poll::Ready(Some(Ok(Frame::data(chunk))))
                    }
                    Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
                    // The sender stopped before the whole body: never let
                    // that look like a complete body.
                    Poll::Ready(None) => Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "body ended before its length",
                    )))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            H2Body::Empty => true,
            H2Body::Bytes(bytes) => bytes.is_none(),
            H2Body::Stream { left, .. } => *left == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            H2Body::Empty => SizeHint::with_exact(0),
            H2Body::Bytes(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            H2Body::Stream { left, .. } => SizeHint::with_exact(*left),
        }
    }
}

/// A plain-text answer, as HTTP/1.1 refusals are.
fn text(status: u16, message: &str) -> hyper::Response<H2Body> {
    let mut resp = hyper::Response::new(H2Body::Bytes(Some(Bytes::from(format!("{message}\n")))));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CONTENT_LENGTH,
        HeaderValue::from(message.len() + 1),
    );
    resp
}

/// Why a request is refused before the handler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    status: u16,
    why: &'static str,
}

fn refuse(status: u16, why: &'static str) -> Refusal {
    Refusal { status, why }
}

/// The request the handler sees, from the parts hyper decoded; or why none.
fn to_request(parts: &Parts, peer: SocketAddr) -> Result<Request, Refusal> {
    if parts.extensions.get::<hyper::ext::Protocol>().is_some() {
        return Err(refuse(400, "extended CONNECT (:protocol) is not served"));
    }
    if parts.method == hyper::Method::CONNECT {
        return Err(refuse(405, "CONNECT is not served: this is not a proxy"));
    }
    let method: Method = parts
        .method
        .as_str()
        .parse()
        .map_err(|_| refuse(400, "the :method is not a token"))?;
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .ok_or_else(|| refuse(400, "missing :path"))?;
    if !target.starts_with('/') {
        return Err(refuse(
            400,
            "only origin-form :path (starting with '/') is served; absolute-form, authority-form and '*' are refused",
        ));
    }
    if !target.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(refuse(
            400,
            "the :path holds a byte that is not visible ASCII",
        ));
    }
    let mut hosts = parts.headers.get_all(hyper::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(refuse(400, "more than one host field"));
    }
    let authority = parts.uri.authority().map(|a| a.as_str().as_bytes());
    if authority.is_some_and(|a| a.contains(&b'@'))
        || host.is_some_and(|h| h.as_bytes().contains(&b'@'))
    {
        return Err(refuse(400, "userinfo in :authority or host"));
    }
    if let (Some(authority), Some(host)) = (authority, host) {
        if !authority.eq_ignore_ascii_case(host.as_bytes()) {
            return Err(refuse(400, "the :authority and host fields disagree"));
        }
    }
    if parts
        .headers
        .get_all(hyper::header::CONTENT_LENGTH)
        .iter()
        .count()
        > 1
    {
        return Err(refuse(400, "more than one content-length field"));
    }
    let mut headers = Vec::with_capacity(parts.headers.len());
    for (name, value) in &parts.headers {
        let name = name.as_str();
        if CONNECTION_SPECIFIC.contains(&name) || (name == "te" && value != "trailers") {
            return Err(refuse(
                400,
                "a connection-specific field is not allowed in HTTP/2",
            ));
        }
        let value = std::str::from_utf8(value.as_bytes())
            .map_err(|_| refuse(400, "a field value is not UTF-8"))?;
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(Request {
        method,
        target: target.to_string(),
        version: "HTTP/2".to_string(),
        headers,
        body: Vec::new(),
        peer,
    })
}

/// Reads the request body, within the body limit and `read_timeout`.
async fn read_body(mut body: Incoming, svc: &Service) -> Result<Vec<u8>, Refusal> {
    let limits = svc.limits();
    let deadline = Instant::now() + limits.read_timeout;
    let mut out = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match timeout_at(deadline, frame).await {
            Err(_) => return Err(refuse(408, "the request body did not arrive in time")),
            Ok(None) => return Ok(out),
            Ok(Some(Err(_))) => return Err(refuse(400, "the request body is malformed")),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > limits.max_body_bytes {
                        return Err(refuse(413, "the request body is too large"));
                    }
                    out.extend_from_slice(&data);
                }
            }
        }
    }
}

/// Answers one stream.
async fn answer(
    svc: &Service,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
    open: Open,
) -> hyper::Response<H2Body> {
    let (parts, body) = req.into_parts();
    let head_request = parts.method == hyper::Method::HEAD;
    let mut request = match to_request(&parts, peer) {
        Ok(request) => request,
        Err(r) => {
            let mut resp = text(r.status, r.why);
            if r.status == 405 {
                resp.headers_mut()
                    .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            return resp;
        }
    };
    request.body = match read_body(body, svc).await {
        Ok(body) => body,
        Err(r) => return text(r.status, r.why),
    };
    let (reply, _panicked) = svc.respond(request).await;
    match reply {
        Reply::Response(resp) => respond(svc, resp, head_request, open),
        Reply::Takeover(..) | Reply::Raw(_) => text(
            500,
            "this answer needs the raw connection, which HTTP/2 does not give",
        ),
    }
}

/// The HTTP/2 form of a handler's response, with the framing rules of
/// HTTP/1.1 (`write::frame`): the server writes `content-length`; HEAD and
/// 304 carry a length but no body; 204 neither.
fn respond(
    svc: &Service,
    resp: Response,
    head_request: bool,
    open: Open,
) -> hyper::Response<H2Body> {
    if !(200..=599).contains(&resp.status) || !write::headers_valid(&resp) {
        return text(500, "invalid response from handler");
    }
    let Ok(status) = hyper::StatusCode::from_u16(resp.status) else {
        return text(500, "invalid response from handler");
    };
    let no_length = resp.status == 204;
    let send_body = !no_length && resp.status != 304 && !head_request;
    let mut out = hyper::Response::new(H2Body::Empty);
    *out.status_mut() = status;
    let mut handler_length = None;
    for (name, value) in &resp.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "content-length" {
            handler_length = Some(value.as_str());
            continue;
        }
        if CONNECTION_SPECIFIC.contains(&lower.as_str()) || lower == "te" {
            continue;
        }
        match (
            HeaderName::from_bytes(lower.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) => {
                out.headers_mut().append(name, value);
            }
            _ => return text(500, "invalid response from handler"),
        }
    }
    if !no_length {
        let length = match handler_length {
            Some(v)
                if !send_body
                    && resp.body.is_empty()
                    && !v.is_empty()
                    && v.bytes().all(|b| b.is_ascii_digit()) =>
            {
                v.to_string()
            }
            _ => resp.body.content_length().to_string(),
        };
        if let Ok(length) = HeaderValue::from_str(&length) {
            out.headers_mut()
                .insert(hyper::header::CONTENT_LENGTH, length);
        }
    }
    if !send_body {
        return out;
    }
    if let Body::File(file, len) = &resp.body {
        let (file, len) = (Arc::clone(file), *len);
        let (tx, rx) = mpsc::channel(AHEAD);
        let svc = svc.clone();
        tokio::spawn(async move { stream_file(&svc, &resp, &file, len, tx).await });
        *out.body_mut() = H2Body::Stream {
            chunks: rx,
            left: len,
            _open: open,
        };
        return out;
    }
    *out.body_mut() = match &resp.body {
        Body::Empty | Body::File(..) => H2Body::Empty,
        Body::Bytes(bytes) => H2Body::Bytes(Some(Bytes::copy_from_slice(bytes))),
        Body::Shared(bytes) => {
            H2Body::Bytes(Some(Bytes::from_owner(SharedBytes(Arc::clone(bytes)))))
        }
        Body::Sealed(sealed) => {
            let (tx, rx) = mpsc::channel(AHEAD);
            let sealed = sealed.clone();
            let len = sealed.len();
            tokio::spawn(async move { stream_sealed(&sealed, tx).await });
            H2Body::Stream {
                chunks: rx,
                left: len,
                _open: open,
            }
        }
    };
    out
}

/// Shared bytes handed to hyper without a copy.
struct SharedBytes(Arc<[u8]>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Reads up to `want` bytes of `file` from its current position, on the
/// blocking pool (a read may wait for the disk).
async fn read_chunk(file: &Arc<File>, want: usize) -> io::Result<Bytes> {
    let file = Arc::clone(file);
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut buf = Vec::with_capacity(want);
        let mut reader: &File = &file;
        Read::take(&mut reader, want as u64).read_to_end(&mut buf)?;
        Ok(Bytes::from(buf))
    })
    .await
    .map_err(io::Error::other)?
}

fn short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "file body shorter than its length",
    )
}

/// Sends exactly `len` bytes of `file` as chunks, holding the last byte back
/// until the handler vouches for the file. On any failure an error is sent
/// instead of the rest, and hyper resets the stream: the client never
/// receives the last byte of a body that was not vouched for.
async fn stream_file(
    svc: &Service,
    resp: &Response,
    file: &Arc<File>,
    len: u64,
    tx: mpsc::Sender<io::Result<Bytes>>,
) {
    let result = async {
        let Some(mut left) = len.checked_sub(1) else {
            return Ok(());
        };
        while left > 0 {
            let want = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
            let chunk = read_chunk(file, want).await?;
            if chunk.is_empty() {
                return Err(short());
            }
            left = left.saturating_sub(chunk.len() as u64);
            if tx.send(Ok(chunk)).await.is_err() {
                // The client reset the stream: nothing more to send.
                return Ok(());
            }
        }
        // Every chunk but the last byte is with hyper. The channel holds at
        // most AHEAD chunks, so what was vouched for is what goes out.
        if !svc.vouch_for_file(resp, file).await {
            return Err(io::Error::other(
                "the handler no longer vouches for the file body",
            ));
        }
        let last = read_chunk(file, 1).await?;
        if last.len() != 1 {
            return Err(short());
        }
        let _ = tx.send(Ok(last)).await;
        Ok(())
    }
    .await;
    if let Err(e) = result {
        let _ = tx.send(Err(e)).await;
    }
}

/// Sends a sealed body (its bytes cannot change) as chunks.
async fn stream_sealed(sealed: &SealedFile, tx: mpsc::Sender<io::Result<Bytes>>) {
    let mut offset = 0u64;
    while offset < sealed.len() {
        let want = usize::try_from(sealed.len() - offset).map_or(CHUNK, |l| l.min(CHUNK));
        let mut buf = vec![0u8; want];
        let chunk = match read_sealed(sealed, offset, &mut buf) {
            Ok(0) => Err(short()),
            Ok(n) => {
                buf.truncate(n);
                offset += n as u64;
                Ok(Bytes::from(buf))
            }
            Err(e) => Err(e),
        };
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            return;
        }
    }
}

#[cfg(target_os = "linux")]
fn read_sealed(sealed: &SealedFile, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    sealed.read_at(offset, buf)
}

/// Sealed files cannot be made off Linux (see [`SealedFile::new`]).
#[cfg(not(target_os = "linux"))]
fn read_sealed(_sealed: &SealedFile, _offset: u64, _buf: &mut [u8]) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}
