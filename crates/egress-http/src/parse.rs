//! Request parsing (RFC 9112). This is the code that faces hostile clients.
//!
//! Policy: anything ambiguous is rejected rather than interpreted. In
//! particular every way of making two parsers disagree about where a request
//! ends (request smuggling) is a 400: Content-Length together with
//! Transfer-Encoding, conflicting or malformed Content-Length, repeated
//! Transfer-Encoding, obs-fold continuation lines, whitespace before the colon,
//! bare LF line endings, framing fields in trailers, and malformed chunked
//! framing. egress_model::smuggling is the corpus that proves it on a socket.
//!
//! Every read is bounded: the head by `max_head_bytes`, the body by
//! `max_body_bytes`, each chunk-size line by [`CHUNK_LINE_MAX`], and time by the
//! deadline the caller puts on the underlying reader.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

use std::io::{self, BufRead, Read};

use crate::Limits;
use egress_model::Method;

/// Most header fields accepted in one request head (431 beyond).
pub(crate) const MAX_HEADERS: usize = 128;
/// Longest chunk-size line (size plus extensions), terminator included.
pub(crate) const CHUNK_LINE_MAX: usize = 4096;

/// Why a request could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fail {
    /// The peer went away, timed out or an I/O error occurred: close silently.
    Close,
    /// Answer with this status, then close the connection.
    Status(u16),
}

impl From<io::Error> for Fail {
    fn from(_: io::Error) -> Self {
        Fail::Close
    }
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// A parsed request head.
#[derive(Debug)]
pub(crate) struct Head {
    pub method: Method,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
    pub framing: Framing,
    /// Whether the connection may be reused after this request.
    pub keep_alive: bool,
    /// Client sent `Expect: 100-continue` on HTTP/1.1 and a body follows.
    pub expect_continue: bool,
}

enum LineError {
    /// The line would exceed the remaining byte budget.
    TooLong,
    /// EOF or I/O error before the LF.
    Close,
}

impl LineError {
    fn or_status(self, status: u16) -> Fail {
        match self {
            LineError::TooLong => Fail::Status(status),
            LineError::Close => Fail::Close,
        }
    }
}

/// Reads one LF-terminated line and returns it without the LF (a CR before
/// the LF is kept; the caller decides whether it is required).
///
/// Invariant: at most `*budget` bytes are consumed (LF included) and `*budget`
/// is reduced by exactly the bytes consumed, so the line can never grow past
/// the caller's limit no matter what the peer sends.
fn read_line<R: BufRead>(r: &mut R, budget: &mut usize) -> Result<Vec<u8>, LineError> {
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(LineError::Close),
        };
        if buf.is_empty() {
            return Err(LineError::Close);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if take > *budget {
            return Err(LineError::TooLong);
        }
        *budget -= take;
        line.extend_from_slice(buf.get(..take).unwrap_or_default());
        r.consume(take);
        if done {
            line.pop();
            return Ok(line);
        }
    }
}

/// Head lines end in CRLF. RFC 9112 §2.2 lets a recipient accept a bare LF,
/// but a bare LF is how a field hides from a front end that splits on CRLF
/// only (`X: y<LF>Transfer-Encoding: chunked`), so it is a 400 here.
fn strip_cr(mut line: Vec<u8>) -> Result<Vec<u8>, Fail> {
    if line.pop() == Some(b'\r') {
        Ok(line)
    } else {
        Err(Fail::Status(400))
    }
}

pub(crate) use egress_model::is_token;

/// Field-value characters: visible ASCII, SP, HTAB and obs-text. Rejects every
/// other control character, notably CR, LF and NUL.
pub(crate) fn is_field_value(s: &[u8]) -> bool {
    s.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Only ever called on bytes already checked to be ASCII, so no replacement
/// characters can appear.
fn ascii(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

/// `HTTP-version = "HTTP/" DIGIT "." DIGIT`.
fn is_version_syntax(v: &[u8]) -> bool {
    matches!(v, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
        if major.is_ascii_digit() && minor.is_ascii_digit())
}

/// `request-line = method SP request-target SP HTTP-version`, single spaces.
///
/// The target is accepted in any form (origin, absolute, authority, asterisk)
/// and is never decoded; only its characters are checked: visible ASCII, so no
/// controls, spaces, DEL or non-ASCII bytes.
fn parse_request_line(line: &[u8]) -> Result<(Method, String, String), Fail> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Fail::Status(400));
    };
    // A token is ASCII, so the text is the bytes as received.
    let Ok(method) = Method::new(&ascii(method)) else {
        return Err(Fail::Status(400));
    };
    if target.is_empty() || !target.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(Fail::Status(400));
    }
    match version {
        b"HTTP/1.1" | b"HTTP/1.0" => {}
        v if is_version_syntax(v) => return Err(Fail::Status(505)),
        _ => return Err(Fail::Status(400)),
    }
    Ok((method, ascii(target), ascii(version)))
}

/// `field-line = field-name ":" OWS field-value OWS`.
///
/// A line starting with SP/HTAB (obs-fold continuation) or with whitespace
/// between name and colon fails the token check and is rejected.
fn parse_field(line: &[u8]) -> Result<(String, String), Fail> {
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(Fail::Status(400))?;
    let (name, value) = line.split_at(colon);
    let value = trim_ows(value.get(1..).unwrap_or_default());
    if !is_token(name) || !is_field_value(value) {
        return Err(Fail::Status(400));
    }
    // obs-text must still form UTF-8 to fit in a String; no lossy conversion,
    // so two different byte strings can never reach the handler as one value.
    let value = String::from_utf8(value.to_vec()).map_err(|_| Fail::Status(400))?;
    Ok((ascii(name), value))
}

/// `Content-Length = 1*DIGIT`. Values too large for u64 saturate; they are
/// over any body limit anyway.
fn parse_content_length(v: &str) -> Result<u64, Fail> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Fail::Status(400));
    }
    Ok(v.bytes().fold(0u64, |n, d| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    }))
}

/// Host may be empty; otherwise it must look like `host[:port]` with no
/// userinfo, path or anything else two parties could read differently.
fn is_valid_host(v: &str) -> bool {
    v.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]%".contains(&b))
}

fn eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Reads and validates a request head. The caller has already seen at least
/// one byte available (an idle connection closing is not an error).
pub(crate) fn read_head<R: BufRead>(r: &mut R, limits: &Limits) -> Result<Head, Fail> {
    let mut budget = limits.max_head_bytes;
    // RFC 9112 §2.2: ignore empty lines before the request line (bounded by
    // the head budget).
    let line = loop {
        let line = strip_cr(read_line(r, &mut budget).map_err(|e| e.or_status(414))?)?;
        if !line.is_empty() {
            break line;
        }
    };
    let (method, target, version) = parse_request_line(&line)?;
    let http10 = version == "HTTP/1.0";

    let mut headers = Vec::new();
    loop {
        let line = strip_cr(read_line(r, &mut budget).map_err(|e| e.or_status(431))?)?;
        if line.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADERS {
            return Err(Fail::Status(431));
        }
        headers.push(parse_field(&line)?);
    }

    let mut content_length: Option<u64> = None;
    let mut transfer_encodings = Vec::new();
    let mut hosts = 0usize;
    let (mut close, mut keep_alive_token, mut expect_continue) = (false, false, false);
    for (name, value) in &headers {
        if eq(name, "content-length") {
            let n = parse_content_length(value)?;
            // Repeats are tolerated only if they agree (RFC 9110 §8.6).
            if content_length.is_some_and(|c| c != n) {
                return Err(Fail::Status(400));
            }
            content_length = Some(n);
        } else if eq(name, "transfer-encoding") {
            transfer_encodings.push(value.as_str());
        } else if eq(name, "host") {
            hosts += 1;
            if !is_valid_host(value) {
                return Err(Fail::Status(400));
            }
        } else if eq(name, "connection") {
            for option in value.split(',').map(|o| o.trim_matches([' ', '\t'])) {
                close |= eq(option, "close");
                keep_alive_token |= eq(option, "keep-alive");
            }
        } else if eq(name, "expect") {
            if !eq(value, "100-continue") {
                return Err(Fail::Status(417));
            }
            expect_continue = true;
        }
    }
    // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
    if hosts > 1 || (hosts == 0 && !http10) {
        return Err(Fail::Status(400));
    }

    let framing = match (content_length, transfer_encodings.as_slice()) {
        // Request smuggling: two framings, or framing HTTP/1.0 cannot have.
        (Some(_), [_, ..]) | (None, [_, _, ..]) => return Err(Fail::Status(400)),
        (None, [_]) if http10 => return Err(Fail::Status(400)),
        (None, [te]) if eq(te, "chunked") => Framing::Chunked,
        (None, [""]) => return Err(Fail::Status(400)),
        (None, [_]) => return Err(Fail::Status(501)),
        (Some(n), []) if n > limits.max_body_bytes as u64 => return Err(Fail::Status(413)),
        (Some(0), []) | (None, []) => Framing::None,
        (Some(n), []) => Framing::Length(n),
    };

    Ok(Head {
        method,
        target,
        version,
        headers,
        framing,
        keep_alive: !close && (!http10 || keep_alive_token),
        // HTTP/1.0 clients cannot expect 100 (RFC 9110 §10.1.1); no body, no need.
        expect_continue: expect_continue && !http10 && framing != Framing::None,
    })
}

/// Reads the body the head announced.
pub(crate) fn read_body<R: BufRead>(
    r: &mut R,
    framing: Framing,
    limits: &Limits,
) -> Result<Vec<u8>, Fail> {
    match framing {
        Framing::None => Ok(Vec::new()),
        // `read_head` already checked n <= max_body_bytes. Reading through
        // `take` grows the buffer as bytes arrive instead of trusting the
        // announced length for an up-front allocation.
        Framing::Length(n) => {
            let mut body = Vec::new();
            Read::take(&mut *r, n).read_to_end(&mut body)?;
            if body.len() as u64 != n {
                return Err(Fail::Close);
            }
            Ok(body)
        }
        Framing::Chunked => read_chunked(r, limits, &mut Chunked::default()),
    }
}

/// How far a chunked body has been read, kept between attempts.
///
/// The server reads a chunked body as its bytes arrive: each attempt runs
/// [`read_chunked`] on the bytes not yet consumed, and an attempt that runs
/// out of bytes (`Fail::Close`) leaves this record at the last complete unit
/// (a chunk with its CRLF, or one trailer line). So every byte is parsed
/// once, however the body is split into reads, and the rules are exactly
/// those of a single pass over the whole body.
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    /// The data of the complete chunks so far.
    body: Vec<u8>,
    /// Bytes of the chunked body fully processed.
    pub consumed: usize,
    /// The trailer byte budget left, once the last chunk was read.
    trailers: Option<usize>,
    /// Non-zero while waiting for a chunk's data: the attempt cannot
    /// progress before the body (from its start) has this many bytes.
    pub need: usize,
}

impl Chunked {
    /// The longest line the next attempt can be waiting for: beyond it, an
    /// attempt refuses the line as too long.
    pub(crate) fn line_budget(&self) -> usize {
        self.trailers.unwrap_or(CHUNK_LINE_MAX)
    }
}

/// `chunk-size [ chunk-ext ]`, at most 16 hex digits so it fits in u64.
/// Extensions are syntax-checked loosely (no controls) and ignored.
fn parse_chunk_size(line: &[u8]) -> Result<u64, Fail> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 16 {
        return Err(Fail::Status(400));
    }
    let (hex, ext) = line.split_at(digits);
    let ext = trim_ows(ext);
    if !ext.is_empty() && (!ext.starts_with(b";") || !is_field_value(ext)) {
        return Err(Fail::Status(400));
    }
    let hex = std::str::from_utf8(hex).map_err(|_| Fail::Status(400))?;
    u64::from_str_radix(hex, 16).map_err(|_| Fail::Status(400))
}

/// Chunked framing is where smuggling lives, so unlike head lines it is read
/// strictly: every chunk line and every chunk-data terminator must be CRLF.
///
/// `r` starts `st.consumed` bytes into the body (see [`Chunked`]); a fresh
/// record reads a whole body in one pass.
pub(crate) fn read_chunked<R: BufRead>(
    r: &mut R,
    limits: &Limits,
    st: &mut Chunked,
) -> Result<Vec<u8>, Fail> {
    while st.trailers.is_none() {
        st.need = 0;
        let mut budget = CHUNK_LINE_MAX;
        let line = read_line(r, &mut budget).map_err(|e| e.or_status(400))?;
        let line_len = CHUNK_LINE_MAX - budget;
        let line = line.strip_suffix(b"\r").ok_or(Fail::Status(400))?;
        let size = parse_chunk_size(line)?;
        if size == 0 {
            st.consumed += line_len;
            st.trailers = Some(limits.max_head_bytes);
            break;
        }
        // Invariant: body.len() <= max_body_bytes, so this cannot underflow.
        if size > (limits.max_body_bytes - st.body.len()) as u64 {
            return Err(Fail::Status(413));
        }
        // size <= max_body_bytes, a usize.
        let size = usize::try_from(size).map_err(|_| Fail::Status(413))?;
        st.need = st.consumed + line_len + size + 2;
        let before = st.body.len();
        let complete = Read::take(&mut *r, size as u64)
            .read_to_end(&mut st.body)
            .is_ok_and(|n| n == size);
        if !complete {
            st.body.truncate(before);
            return Err(Fail::Close);
        }
        let mut crlf = [0u8; 2];
        if let Err(e) = r.read_exact(&mut crlf) {
            st.body.truncate(before);
            return Err(e.into());
        }
        if crlf != *b"\r\n" {
            return Err(Fail::Status(400));
        }
        st.consumed = st.need;
        st.need = 0;
    }
    // Trailer section: validated like header fields, then discarded.
    loop {
        let mut budget = st.trailers.unwrap_or(0);
        let line = read_line(r, &mut budget).map_err(|e| e.or_status(431))?;
        st.consumed += st.trailers.unwrap_or(0) - budget;
        st.trailers = Some(budget);
        let line = line.strip_suffix(b"\r").ok_or(Fail::Status(400))?;
        if line.is_empty() {
            return Ok(std::mem::take(&mut st.body));
        }
        // Framing and routing fields are forbidden in trailers (RFC 9110
        // §6.5.1); a proxy that merges trailers into the head would read them.
        let (name, _) = parse_field(line)?;
        if ["content-length", "transfer-encoding", "host"]
            .iter()
            .any(|f| eq(&name, f))
        {
            return Err(Fail::Status(400));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn limits() -> Limits {
        Limits {
            max_head_bytes: 1024,
            max_body_bytes: 64,
            ..Limits::default()
        }
    }

    fn head(raw: &[u8]) -> Result<Head, Fail> {
        read_head(&mut Cursor::new(raw), &limits())
    }

    fn status(raw: &[u8]) -> Option<u16> {
        match head(raw) {
            Ok(_) => None,
            Err(Fail::Status(s)) => Some(s),
            Err(Fail::Close) => Some(0),
        }
    }

    /// Parses head and body the way the server does.
    fn request(raw: &[u8]) -> Result<(Head, Vec<u8>), Fail> {
        let mut r = Cursor::new(raw);
        let h = read_head(&mut r, &limits())?;
        let body = read_body(&mut r, h.framing, &limits())?;
        Ok((h, body))
    }

    fn body_status(raw: &[u8]) -> Result<Vec<u8>, Fail> {
        request(raw).map(|(_, b)| b)
    }

    /// The server's way of reading a chunked body: an attempt per arrival,
    /// resumed from the recorded progress. Every split must give what one
    /// pass gives.
    #[test]
    fn chunked_progress_resumes_at_every_split() {
        let raw: &[u8] = b"5;e\r\nhello\r\n3\r\nabc\r\n0\r\nT: v\r\n\r\nNEXT";
        let end = raw.len() - 4;
        let mut whole = Chunked::default();
        assert_eq!(
            read_chunked(&mut &raw[..], &limits(), &mut whole).unwrap(),
            b"helloabc"
        );
        assert_eq!(whole.consumed, end);
        for split in 0..end {
            let mut st = Chunked::default();
            let mut first = &raw[..split];
            assert_eq!(
                read_chunked(&mut first, &limits(), &mut st),
                Err(Fail::Close),
                "{split}"
            );
            assert!(st.consumed <= split, "{split}");
            let mut rest = &raw[st.consumed..];
            let body = read_chunked(&mut rest, &limits(), &mut st).unwrap();
            assert_eq!(
                (body.as_slice(), st.consumed),
                (&b"helloabc"[..], end),
                "{split}"
            );
        }
        // Refusals are the same, resumed or not.
        let bad: &[u8] = b"5\r\nhello\r\n3\nabc\r\n0\r\n\r\n";
        for split in 0..bad.len() {
            let mut st = Chunked::default();
            let got = match read_chunked(&mut &bad[..split], &limits(), &mut st) {
                Err(Fail::Close) => read_chunked(&mut &bad[st.consumed..], &limits(), &mut st),
                other => other,
            };
            assert_eq!(got, Err(Fail::Status(400)), "{split}");
        }
    }

    #[test]
    fn simple_get() {
        let h = head(b"GET /simple/pip/?x=1 HTTP/1.1\r\nHost: a\r\nAccept:  text/html \r\n\r\n")
            .expect("valid");
        assert_eq!(h.method, "GET");
        assert_eq!(h.target, "/simple/pip/?x=1");
        assert_eq!(h.version, "HTTP/1.1");
        assert_eq!(
            h.headers,
            vec![
                ("Host".to_string(), "a".to_string()),
                ("Accept".to_string(), "text/html".to_string())
            ]
        );
        assert_eq!(h.framing, Framing::None);
        assert!(h.keep_alive);
        assert!(!h.expect_continue);
    }

    #[test]
    fn bare_lf_refused_and_leading_empty_lines_tolerated() {
        let h = head(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").expect("valid");
        assert_eq!(h.target, "/");
        for raw in [
            &b"\r\n\nGET / HTTP/1.1\nHost: a\n\n"[..],
            b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n\n",
        ] {
            assert_eq!(status(raw), Some(400), "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn targets_are_raw() {
        for t in [
            "http://evil.example/x?url=http://a",
            "evil.example:443",
            "*",
            "/%2e%2e/%2F..%5c/etc/passwd",
            "/a#frag",
        ] {
            let raw = format!("CONNECT {t} HTTP/1.1\r\nHost: a\r\n\r\n");
            assert_eq!(head(raw.as_bytes()).expect("valid").target, t);
        }
    }

    #[test]
    fn bad_request_lines() {
        for raw in [
            &b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
            b" GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
            b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GE\x00T / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a\x7fb HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /\r\nHost: a\r\n\r\n",
            b"GET / http/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/11.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\r\nHost: a\r\n\r\n",
        ] {
            assert_eq!(status(raw), Some(400), "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn unknown_versions_505() {
        for v in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"] {
            let raw = format!("GET / {v}\r\nHost: a\r\n\r\n");
            assert_eq!(status(raw.as_bytes()), Some(505), "{v}");
        }
        assert_eq!(status(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Some(505));
    }

    #[test]
    fn bad_header_lines() {
        for raw in [
            &b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n continued\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\tcontinued\r\n\r\n",
            b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost\t: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nBad(Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: \xff\xfe\r\n\r\n",
        ] {
            assert_eq!(status(raw), Some(400), "{:?}", String::from_utf8_lossy(raw));
        }
        // UTF-8 obs-text is kept exactly.
        let h = head("GET / HTTP/1.1\r\nHost: a\r\nX: é\r\n\r\n".as_bytes()).expect("valid");
        assert_eq!(h.headers[1].1, "é");
    }

    #[test]
    fn host_rules() {
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), Some(400));
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"),
            Some(400)
        );
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost:\r\n\r\n"), None);
        assert_eq!(status(b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"), None);
        assert_eq!(status(b"GET / HTTP/1.0\r\n\r\n"), None);
    }

    #[test]
    fn content_length_rules() {
        for cl in [
            "abc", "-1", "+5", "5, 5", "5,5", "", "0x5", "5 5", "\u{664}",
        ] {
            let raw = format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {cl}\r\n\r\n");
            assert_eq!(status(raw.as_bytes()), Some(400), "{cl:?}");
        }
        let conflicting =
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        assert_eq!(status(conflicting), Some(400));
        let (h, body) = request(
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\ncontent-length: 003\r\n\r\nabc",
        )
        .expect("agreeing duplicates");
        assert_eq!((h.framing, body), (Framing::Length(3), b"abc".to_vec()));
        let huge =
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999999\r\n\r\n";
        assert_eq!(status(huge), Some(413));
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n"),
            Some(413)
        );
        // Truncated body: the peer went away.
        assert_eq!(
            body_status(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab").err(),
            Some(Fail::Close)
        );
        // No framing at all means an empty body (RFC 9112 §6.3).
        let (h, body) = request(b"POST / HTTP/1.1\r\nHost: a\r\n\r\n").expect("valid");
        assert_eq!((h.framing, body.len()), (Framing::None, 0));
    }

    #[test]
    fn transfer_encoding_rules() {
        let cases: [(&[u8], u16); 7] = [
            (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", 501),
        ];
        for (raw, want) in cases {
            assert_eq!(
                status(raw),
                Some(want),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn chunked_bodies() {
        let (h, body) = request(
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n\
              5\r\nhello\r\n1;name=value ; x\r\n \r\nA \r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
        )
        .expect("valid");
        assert_eq!(h.framing, Framing::Chunked);
        assert_eq!(body, b"hello 0123456789");

        let (_, body) =
            request(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .expect("empty chunked body");
        assert!(body.is_empty());
    }

    #[test]
    fn bad_chunked_framing() {
        let prefix = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (chunks, want) in [
            (&b"zz\r\nhello\r\n0\r\n\r\n"[..], Fail::Status(400)),
            (b"\r\n0\r\n\r\n", Fail::Status(400)),
            (b"-5\r\nhello\r\n0\r\n\r\n", Fail::Status(400)),
            (b"0x5\r\nhello\r\n0\r\n\r\n", Fail::Status(400)),
            (b"5 x\r\nhello\r\n0\r\n\r\n", Fail::Status(400)),
            (b"5;\x00\r\nhello\r\n0\r\n\r\n", Fail::Status(400)),
            (b"5\nhello\r\n0\r\n\r\n", Fail::Status(400)),
            (b"5\r\nhelloXX0\r\n\r\n", Fail::Status(400)),
            (b"5\r\nhello\n0\r\n\r\n", Fail::Status(400)),
            (
                b"5\r\nhello\r\n0\r\nBad Trailer: x\r\n\r\n",
                Fail::Status(400),
            ),
            (b"5\r\nhello\r\n0\r\n\n", Fail::Status(400)),
            (
                b"5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
                Fail::Status(400),
            ),
            (
                b"5\r\nhello\r\n0\r\ncontent-length: 5\r\n\r\n",
                Fail::Status(400),
            ),
            (b"5\r\nhello\r\n0\r\nHost: b\r\n\r\n", Fail::Status(400)),
            (b"10000000000000000\r\n", Fail::Status(400)),
            (b"FFFFFFFFFFFFFFFF\r\n", Fail::Status(413)),
            (b"41\r\n", Fail::Status(413)),
            (b"40\r\n", Fail::Close),
            (
                b"20\r\n01234567890123456789012345678901\r\n21\r\n",
                Fail::Status(413),
            ),
            (b"5\r\nhel", Fail::Close),
            (b"5\r\nhello\r\n0\r\n", Fail::Close),
        ] {
            let raw = [&prefix[..], chunks].concat();
            assert_eq!(
                body_status(&raw).err(),
                Some(want),
                "{:?}",
                String::from_utf8_lossy(chunks)
            );
        }
        let long_ext = [&prefix[..], b"1;", &[b'a'; CHUNK_LINE_MAX][..], b"\r\n"].concat();
        assert_eq!(body_status(&long_ext).err(), Some(Fail::Status(400)));
    }

    #[test]
    fn oversize_heads() {
        let long_target = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(2000));
        assert_eq!(status(long_target.as_bytes()), Some(414));
        let big_header = format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n",
            "a".repeat(2000)
        );
        assert_eq!(status(big_header.as_bytes()), Some(431));
        let many = format!(
            "GET / HTTP/1.1\r\nHost: a\r\n{}\r\n",
            "a:\r\n".repeat(MAX_HEADERS)
        );
        let many_limits = Limits {
            max_head_bytes: 64 * 1024,
            ..limits()
        };
        assert_eq!(
            read_head(&mut Cursor::new(many.as_bytes()), &many_limits).err(),
            Some(Fail::Status(431))
        );
        // Exactly at the limit is fine: the budget counts every byte once.
        let line = "GET / HTTP/1.1\r\nHost: a\r\n";
        let pad = 1024 - line.len() - "X: \r\n\r\n".len();
        let exact = format!("{line}X: {}\r\n\r\n", "a".repeat(pad));
        assert_eq!(exact.len(), 1024);
        assert_eq!(status(exact.as_bytes()), None);
        let over = format!("{line}X: {}\r\n\r\n", "a".repeat(pad + 1));
        assert_eq!(status(over.as_bytes()), Some(431));
        // Endless blank lines before the request line are bounded too.
        assert_eq!(status(&b"\r\n".repeat(600)), Some(414));
    }

    #[test]
    fn connection_and_expect() {
        let ka = |raw: &[u8]| head(raw).expect("valid").keep_alive;
        assert!(ka(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n"
        ));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.0\r\nConnection: keep-alive,close\r\n\r\n"
        ));

        let h =
            head(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n")
                .expect("valid");
        assert!(h.expect_continue);
        let h = head(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n").expect("valid");
        assert!(!h.expect_continue, "no body, nothing to continue");
        let h = head(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
            .expect("valid");
        assert!(!h.expect_continue, "ignored for HTTP/1.0");
        assert_eq!(
            status(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"),
            Some(417)
        );
    }

    #[test]
    fn truncated_heads_close() {
        for raw in [
            &b""[..],
            b"GET / HTTP/1.1",
            b"GET / HTTP/1.1\r\nHost: a\r\n",
        ] {
            assert_eq!(status(raw), Some(0));
        }
    }

    /// Deterministic garbage and mutations of a valid request: nothing panics
    /// and nothing is read past the limits.
    #[test]
    fn fuzz_no_panic() {
        let seed = b"POST /x?y HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;e\r\nhello\r\n0\r\nT: v\r\n\r\n";
        let alphabet = b"\r\n :;\t0123456789abcdefABCDEF\x00\x7f\xff/HTP.-,";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut raw = seed.to_vec();
            for _ in 0..(next() % 6 + 1) {
                let pos = (next() as usize) % (raw.len() + 1);
                let byte = alphabet[(next() as usize) % alphabet.len()];
                match next() % 3 {
                    0 if pos < raw.len() => raw[pos] = byte,
                    1 if pos < raw.len() => {
                        raw.remove(pos);
                    }
                    _ => raw.insert(pos, byte),
                }
            }
            if let Ok((h, body)) = request(&raw) {
                assert!(body.len() <= limits().max_body_bytes);
                assert!(h.target.bytes().all(|b| (0x21..=0x7e).contains(&b)));
            }
        }
        for _ in 0..5_000 {
            let len = (next() % 200) as usize;
            let raw: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = request(&raw);
        }
    }
}
