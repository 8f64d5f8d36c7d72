//! Reading one HTTP/1.x response within the client's bounds.
//!
//! Invariant: no read here can block past the exchange deadline, and no buffer
//! grows past `max_head_bytes` (head), 4 KiB (a chunk-size line) or
//! `record_bytes` (kept body prefix). Body bytes beyond that are hashed and
//! dropped.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

use crate::{describe_io, BodySink, Limits};
use egress_model::digest::Sha256Hasher;
use egress_model::{Afterwards, BodyEnd, ListenEnd, ResponseRecord, WireBytes};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A TCP stream whose every read and write is bounded by an idle timeout and
/// by the exchange's deadline.
pub(crate) struct Timed {
    tcp: TcpStream,
    idle: Duration,
    deadline: Instant,
}

impl Timed {
    pub(crate) fn new(tcp: TcpStream, idle: Duration, deadline: Instant) -> Self {
        Self {
            tcp,
            idle,
            deadline,
        }
    }

    fn budget(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "exchange deadline passed",
            ));
        }
        Ok(left.min(self.idle))
    }

    /// Changes the longest wait for any single read or write from now on.
    pub(crate) fn set_idle(&mut self, idle: Duration) {
        self.idle = idle;
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let b = self.budget()?;
        self.tcp.set_read_timeout(Some(b))?;
        self.tcp.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let b = self.budget()?;
        self.tcp.set_write_timeout(Some(b))?;
        self.tcp.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// Buffered reader over the stream that never holds more than it was asked for
/// plus one read's worth.
struct Input<'a, R: Read + ?Sized> {
    inner: &'a mut R,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// The error of the read that failed, if one did.
    failed: Option<io::ErrorKind>,
}

impl<'a, R: Read + ?Sized> Input<'a, R> {
    fn fill(&mut self) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = self.inner.read(&mut chunk).inspect_err(|e| {
            self.failed = Some(e.kind());
        })?;
        if n == 0 {
            self.eof = true;
        }
        self.buf.extend_from_slice(at_most(&chunk, n));
        Ok(n)
    }

    fn available(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Reads a line ending in LF, at most `cap` bytes. `Ok(None)` on EOF.
    fn line(&mut self, cap: usize) -> Result<Option<Vec<u8>>, LineError> {
        loop {
            if let Some(i) = self.available().iter().position(|&b| b == b'\n') {
                let line = at_most(self.available(), i).to_vec();
                self.pos += i + 1;
                return Ok(Some(line));
            }
            if self.available().len() > cap {
                return Err(LineError::TooLong(cap));
            }
            if self.eof {
                return Ok(None);
            }
            self.fill().map_err(LineError::Io)?;
        }
    }
}

/// Why no line was read; the caller says which line it was after.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("line longer than {0} bytes")]
    TooLong(usize),
    #[error("{}", describe_io(.0))]
    Io(#[source] io::Error),
}

struct Sink<'o> {
    hasher: Sha256Hasher,
    len: u64,
    prefix: Vec<u8>,
    record_cap: usize,
    max: u64,
    /// A download's destination, and whether it took this response's body.
    out: Option<&'o mut dyn BodySink>,
    streaming: bool,
    write_error: Option<String>,
}

impl Sink<'_> {
    /// Takes bytes; returns false when the body cap is reached or the
    /// download's destination failed.
    fn take(&mut self, data: &[u8]) -> bool {
        let room = self.max.saturating_sub(self.len);
        let take = at_most(data, usize::try_from(room).unwrap_or(usize::MAX));
        self.hasher.update(take);
        self.len += take.len() as u64;
        let keep = self
            .record_cap
            .saturating_sub(self.prefix.len())
            .min(take.len());
        self.prefix.extend_from_slice(at_most(take, keep));
        if self.streaming && !take.is_empty() {
            if let Some(out) = self.out.as_deref_mut() {
                if let Err(e) = out.write(take) {
                    self.write_error = Some(e.to_string());
                    return false;
                }
            }
        }
        take.len() == data.len() && self.len < self.max
    }
}

struct Head {
    status_line: String,
    status: Option<u16>,
    headers: Vec<(String, String)>,
}

fn parse_status(line: &str) -> Option<u16> {
    let mut parts = line.splitn(3, ' ');
    let version = parts.next()?;
    if !(version == "HTTP/1.1" || version == "HTTP/1.0") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    code.parse().ok().filter(|c| (100..=599).contains(c))
}

fn read_head<R: Read + ?Sized>(
    input: &mut Input<'_, R>,
    limits: &Limits,
) -> Result<Option<Head>, (Option<Head>, String)> {
    let mut used = 0usize;
    let first = match input.line(limits.max_head_bytes) {
        Ok(Some(l)) => l,
        Ok(None) if input.buf.is_empty() => return Ok(None),
        Ok(None) => return Err((None, "connection closed inside the status line".into())),
        Err(e) => return Err((None, format!("reading the status line: {e}"))),
    };
    used += first.len() + 1;
    let status_line = String::from_utf8_lossy(trim_cr(&first)).into_owned();
    let status = parse_status(&status_line);
    let mut head = Head {
        status_line,
        status,
        headers: Vec::new(),
    };
    if head.status.is_none() {
        return Err((
            Some(head),
            "malformed response: the status line is not HTTP/1.x".into(),
        ));
    }
    loop {
        let line = match input.line(limits.max_head_bytes.saturating_sub(used)) {
            Ok(Some(l)) => l,
            Ok(None) => return Err((Some(head), "connection closed inside the headers".into())),
            Err(e) => {
                return Err((
                    Some(head),
                    format!(
                        "response head over {} bytes or unreadable: {e}",
                        limits.max_head_bytes
                    ),
                ))
            }
        };
        used += line.len() + 1;
        if used > limits.max_head_bytes {
            return Err((
                Some(head),
                format!("response head over {} bytes", limits.max_head_bytes),
            ));
        }
        let line = trim_cr(&line);
        if line.is_empty() {
            return Ok(Some(head));
        }
        let text = String::from_utf8_lossy(line);
        match text.split_once(':') {
            Some((n, v)) if !n.is_empty() && !n.contains(' ') => {
                head.headers.push((n.to_string(), v.trim().to_string()));
            }
            _ => {
                return Err((
                    Some(head),
                    format!("malformed header line {:?}", truncate(&text)),
                ))
            }
        }
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn header<'h>(head: &'h Head, name: &str) -> Vec<&'h str> {
    head.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// Reads one response. Returns the record (if a status line arrived) and the
/// error that ended the exchange early, if any. With `out`, the body also
/// streams into it if its `begin` accepts the response.
pub(crate) fn read_response<R: Read + ?Sized>(
    stream: &mut R,
    method: &[u8],
    limits: &Limits,
    _deadline: Instant,
    out: Option<&mut dyn BodySink>,
) -> (Option<ResponseRecord>, Option<String>) {
    let mut input = Input {
        inner: stream,
        buf: Vec::new(),
        pos: 0,
        eof: false,
        failed: None,
    };
    read_one(&mut input, method, limits, out)
}

/// Where the stream stood once the first response was read: the bytes read
/// past it, and whether the stream had ended or failed.
pub(crate) struct Tail {
    rest: Vec<u8>,
    eof: bool,
    failed: Option<io::ErrorKind>,
}

/// [`read_response`], keeping what was read past the response.
pub(crate) fn read_response_keeping_rest<R: Read + ?Sized>(
    stream: &mut R,
    method: &[u8],
    limits: &Limits,
) -> (Option<ResponseRecord>, Option<String>, Tail) {
    let mut input = Input {
        inner: stream,
        buf: Vec::new(),
        pos: 0,
        eof: false,
        failed: None,
    };
    let (resp, err) = read_one(&mut input, method, limits, None);
    let tail = Tail {
        rest: input.available().to_vec(),
        eof: input.eof,
        failed: input.failed,
    };
    (resp, err, tail)
}

/// Reads what follows the first response until the server closes, nothing
/// arrives for the stream's idle timeout (set it to the quiet period), the
/// `deadline` passes or `max_bytes` are held.
pub(crate) fn listen<R: Read + ?Sized>(
    stream: &mut R,
    tail: Tail,
    deadline: Instant,
    max_bytes: usize,
) -> Afterwards {
    let mut bytes = tail.rest;
    let end = 'end: {
        if bytes.len() >= max_bytes {
            bytes.truncate(max_bytes);
            break 'end ListenEnd::CapReached;
        }
        if tail.eof {
            break 'end ListenEnd::Closed;
        }
        if let Some(kind) = tail.failed {
            break 'end listen_end(kind, deadline);
        }
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break 'end ListenEnd::Closed,
                Ok(n) => {
                    let room = max_bytes.saturating_sub(bytes.len());
                    bytes.extend_from_slice(at_most(at_most(&chunk, n), room));
                    if bytes.len() >= max_bytes {
                        break 'end ListenEnd::CapReached;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break 'end listen_end(e.kind(), deadline),
            }
        }
    };
    Afterwards {
        bytes: WireBytes(bytes),
        end,
    }
}

pub(crate) fn listen_end(kind: io::ErrorKind, deadline: Instant) -> ListenEnd {
    match kind {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut if Instant::now() >= deadline => {
            ListenEnd::Deadline
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ListenEnd::Quiet,
        // TLS without close_notify: the server closed all the same.
        io::ErrorKind::UnexpectedEof => ListenEnd::Closed,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ListenEnd::Reset,
        _ => ListenEnd::Broken,
    }
}

fn read_one<R: Read + ?Sized>(
    input: &mut Input<'_, R>,
    method: &[u8],
    limits: &Limits,
    out: Option<&mut dyn BodySink>,
) -> (Option<ResponseRecord>, Option<String>) {
    let mut sink = Sink {
        hasher: Sha256Hasher::new(),
        len: 0,
        prefix: Vec::new(),
        record_cap: limits.record_bytes,
        max: limits.max_body_bytes,
        out,
        streaming: false,
        write_error: None,
    };
    // Skip interim 1xx responses (100 Continue, 103 Early Hints), but not 101.
    let head = loop {
        match read_head(input, limits) {
            Ok(Some(h)) if matches!(h.status, Some(100 | 102..=199)) => continue,
            Ok(Some(h)) => break h,
            Ok(None) => return (None, Some("connection closed before any response".into())),
            Err((Some(h), e)) => {
                // Keep what a malformed server sent: it is the evidence.
                let rest = input.available().to_vec();
                sink.take(&rest);
                return (Some(finish(h, sink, BodyEnd::Broken)), Some(e));
            }
            Err((None, e)) => {
                let raw = input.buf.clone();
                let mut rec = finish(
                    Head {
                        status_line: String::from_utf8_lossy(at_most(&raw, 200)).into_owned(),
                        status: None,
                        headers: vec![],
                    },
                    sink,
                    BodyEnd::Broken,
                );
                rec.body_prefix = WireBytes(at_most(&raw, limits.record_bytes).to_vec());
                return (Some(rec), Some(e));
            }
        }
    };
    let status = head.status.unwrap_or(0);
    let no_body = method == b"HEAD"
        || matches!(status, 100..=199 | 204 | 304)
        || (method == b"CONNECT" && (200..300).contains(&status));
    if no_body {
        return (Some(finish(head, sink, BodyEnd::NoBody)), None);
    }
    if let Some(out) = sink.out.as_deref_mut() {
        match out.begin(status, &head.headers) {
            Ok(take) => sink.streaming = take,
            Err(e) => {
                return (
                    Some(finish(head, sink, BodyEnd::Broken)),
                    Some(format!("cannot store the body: {e}")),
                )
            }
        }
    }
    let chunked = header(&head, "transfer-encoding")
        .iter()
        .any(|v| v.to_ascii_lowercase().contains("chunked"));
    let lengths = header(&head, "content-length");
    let result = if chunked {
        read_chunked(input, &mut sink)
    } else if let Some(first) = lengths.first() {
        if lengths.iter().any(|l| l != first) {
            Err((
                BodyEnd::Broken,
                "conflicting Content-Length headers".to_string(),
            ))
        } else {
            match first.parse::<u64>() {
                Ok(n) => read_exact(input, &mut sink, n),
                Err(_) => Err((
                    BodyEnd::Broken,
                    format!("invalid Content-Length {:?}", truncate(first)),
                )),
            }
        }
    } else {
        read_to_eof(input, &mut sink)
    };
    if let Some(e) = sink.write_error.take() {
        return (
            Some(finish(head, sink, BodyEnd::Broken)),
            Some(format!("cannot store the body: {e}")),
        );
    }
    match result {
        Ok(end) => (
            Some(finish(head, sink, end)),
            (end == BodyEnd::CapReached).then(|| {
                format!(
                    "body larger than the {} byte cap; reading stopped",
                    limits.max_body_bytes
                )
            }),
        ),
        Err((end, e)) => (Some(finish(head, sink, end)), Some(e)),
    }
}

type BodyResult = Result<BodyEnd, (BodyEnd, String)>;

fn io_end(e: &io::Error) -> (BodyEnd, String) {
    let end = if matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) {
        BodyEnd::Timeout
    } else {
        BodyEnd::Broken
    };
    (end, format!("reading the body: {}", describe_io(e)))
}

fn read_exact<R: Read + ?Sized>(
    input: &mut Input<'_, R>,
    sink: &mut Sink,
    mut n: u64,
) -> BodyResult {
    loop {
        let avail = input.available();
        let take = avail.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        let chunk = at_most(avail, take).to_vec();
        input.pos += take;
        n -= take as u64;
        if !sink.take(&chunk) && n > 0 {
            return Ok(BodyEnd::CapReached);
        }
        if n == 0 {
            return Ok(BodyEnd::Complete);
        }
        if input.eof {
            return Err((
                BodyEnd::Broken,
                format!("connection closed with {n} body bytes still due"),
            ));
        }
        input.fill().map_err(|e| io_end(&e))?;
    }
}

fn read_to_eof<R: Read + ?Sized>(input: &mut Input<'_, R>, sink: &mut Sink) -> BodyResult {
    loop {
        let chunk = input.available().to_vec();
        input.pos = input.buf.len();
        if !sink.take(&chunk) {
            return Ok(BodyEnd::CapReached);
        }
        if input.eof {
            return Ok(BodyEnd::Complete);
        }
        input.fill().map_err(|e| io_end(&e))?;
    }
}

fn read_chunked<R: Read + ?Sized>(input: &mut Input<'_, R>, sink: &mut Sink) -> BodyResult {
    loop {
        let line = match input.line(4096) {
            Ok(Some(l)) => l,
            Ok(None) => {
                return Err((
                    BodyEnd::Broken,
                    "connection closed inside chunked framing".into(),
                ))
            }
            Err(e) => return Err((BodyEnd::Broken, format!("bad chunk-size line: {e}"))),
        };
        let text = String::from_utf8_lossy(trim_cr(&line)).into_owned();
        let size_hex = text.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size_hex, 16).map_err(|_| {
            (
                BodyEnd::Broken,
                format!("invalid chunk size {:?}", truncate(&text)),
            )
        })?;
        if size == 0 {
            // Trailers, up to the empty line; their content is not needed.
            loop {
                match input.line(4096) {
                    Ok(Some(l)) if trim_cr(&l).is_empty() => return Ok(BodyEnd::Complete),
                    Ok(Some(_)) => continue,
                    Ok(None) => return Ok(BodyEnd::Complete),
                    Err(e) => return Err((BodyEnd::Broken, format!("bad trailer: {e}"))),
                }
            }
        }
        match read_exact(input, sink, size)? {
            BodyEnd::Complete => {}
            other => return Ok(other),
        }
        match input.line(2) {
            Ok(Some(l)) if trim_cr(&l).is_empty() => {}
            _ => return Err((BodyEnd::Broken, "chunk not followed by CRLF".into())),
        }
    }
}

fn finish(head: Head, sink: Sink, end: BodyEnd) -> ResponseRecord {
    ResponseRecord {
        status_line: head.status_line,
        status: head.status,
        headers: head.headers,
        body_len: sink.len,
        body_sha256: sink.hasher.finish(),
        body_prefix: WireBytes(sink.prefix),
        body_end: end,
    }
}

/// The first `n` bytes of `b`, or all of it when it is shorter.
fn at_most(b: &[u8], n: usize) -> &[u8] {
    b.get(..n).unwrap_or(b)
}
