//! The request-smuggling and desync corpus: raw HTTP/1.1 payloads a package
//! mirror must refuse, as data.
//!
//! One home for two users: egress-http's and egress-mirror's tests send every
//! case to a running mirror, and the suite's P3 can send the same bytes to any
//! target. Each case is a first request whose framing is ambiguous or invalid,
//! followed on the same connection by a well-formed *smuggled* request. A
//! server passes a case when it answers the first request with a refusal (or
//! closes without answering), serves nothing after it, and closes the
//! connection. docs/predicates.md ("The request-smuggling corpus") lists the
//! classes and today's verdicts.
//!
//! Markers, expanded by [`SmugglingCase::build`]:
//! - `@SMUGGLED@`: the smuggled request, `GET <target> HTTP/1.1` with the
//!   case's Host and nothing else;
//! - `@CHUNK@`: the smuggled request as one chunk (`<hex size>CRLF<request>CRLF`);
//! - `@LEN@`: the length of the expanded body (what a front end using
//!   Content-Length would forward);
//! - `@CHUNKLINE@`: the length of the chunk-size line of `@CHUNK@` (what a
//!   back end using Content-Length would read before the smuggled bytes);
//! - `@PAD@`: [`PAD_BYTES`] bytes of `a` (over-long heads).

/// The Host every case sends (any name works: the payloads are refused for
/// their framing, never for their Host).
pub const CORPUS_HOST: &str = "mirror.test";

/// The other authority some cases name (an absolute-form target, a second
/// Host, `:authority`); [`SmugglingCase::build_with`] can put another host
/// name in its place.
pub const OTHER_HOST: &str = "other.example";

/// Length of the `@PAD@` filler: above every common head limit (egress-http
/// 64 KiB, nginx 8 KiB, Apache 8 KiB per line).
pub const PAD_BYTES: usize = 80 * 1024;

/// The family a case belongs to (docs/predicates.md has one row per class).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmugglingClass {
    /// Content-Length and Transfer-Encoding together.
    ClTe,
    /// Repeated, conflicting or malformed Content-Length.
    ContentLength,
    /// Transfer-Encoding written so two parsers can disagree on it.
    TransferEncoding,
    /// obs-fold continuation lines.
    ObsFold,
    /// Bare LF or bare CR as a line ending.
    LineEnding,
    /// NUL and other control characters in names and values.
    Control,
    /// Request lines and heads over any sane limit.
    Oversize,
    /// A request pipelined after one refused for its framing.
    Pipelined,
    /// Absolute-form (a proxy request) whose authority is not the Host.
    AbsoluteForm,
    /// HTTP/2 spoken (or imitated) on an HTTP/1.1 connection.
    Http2,
}

/// What [`SmugglingCase::build_with`] puts in place of the corpus's names,
/// and the smuggled request it hides.
#[derive(Debug, Clone, Copy)]
pub struct Smuggle<'a> {
    /// The Host of every request, in place of [`CORPUS_HOST`], so that a
    /// target routing by Host serves the smuggled request.
    pub host: &'a str,
    /// In place of [`OTHER_HOST`] (a host name or `host:port`), so that a
    /// target that follows it reaches a host of the caller's choosing.
    pub other: &'a str,
    /// The smuggled request's target: an origin-form path the target is
    /// known to serve with a 2xx.
    pub target: &'a str,
    /// Header lines added to the smuggled request after Host, each ending
    /// in CRLF (an `Accept` the target needs, say); usually empty.
    pub fields: &'a str,
}

/// One payload of the corpus.
#[derive(Debug, Clone, Copy)]
pub struct SmugglingCase {
    /// Stable identifier (evidence and test failures name it).
    pub id: &'static str,
    pub class: SmugglingClass,
    /// What the payload does, in one line.
    pub what: &'static str,
    /// The head of the first request, with markers.
    pub head: &'static [u8],
    /// What follows the head on the connection, with markers.
    pub body: &'static [u8],
    /// The status the reference mirror (egress-http) answers; 0 when it
    /// closes without an answer. Other servers pass with any 4xx/5xx.
    pub reference_status: u16,
}

impl SmugglingCase {
    /// The exact bytes to send, smuggling `GET <smuggled_target>` (an
    /// origin-form path the target is known to serve with a 2xx).
    pub fn build(&self, smuggled_target: &str) -> Vec<u8> {
        self.build_with(&Smuggle {
            host: CORPUS_HOST,
            other: OTHER_HOST,
            target: smuggled_target,
            fields: "",
        })
    }

    /// [`SmugglingCase::build`] with the names of [`Smuggle`] in place of the
    /// corpus's, and its fields added to the smuggled request; lengths are
    /// computed after the change.
    pub fn build_with(&self, s: &Smuggle<'_>) -> Vec<u8> {
        let swap = |t: &[u8]| {
            let t = replace(t, CORPUS_HOST.as_bytes(), s.host.as_bytes());
            replace(&t, OTHER_HOST.as_bytes(), s.other.as_bytes())
        };
        let template_head = swap(self.head);
        let template_body = swap(self.body);
        let smuggled = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\n{}\r\n",
            s.target, s.host, s.fields
        );
        let size_line = format!("{:x}\r\n", smuggled.len());
        let chunk = format!("{size_line}{smuggled}\r\n");
        let pad = "a".repeat(PAD_BYTES);
        let body = replace(&template_body, b"@SMUGGLED@", smuggled.as_bytes());
        let body = replace(&body, b"@CHUNK@", chunk.as_bytes());
        let head = replace(&template_head, b"@LEN@", body.len().to_string().as_bytes());
        let head = replace(
            &head,
            b"@CHUNKLINE@",
            size_line.len().to_string().as_bytes(),
        );
        let mut out = replace(&head, b"@PAD@", pad.as_bytes());
        out.extend_from_slice(&body);
        out
    }
}

/// Replaces every occurrence of `from` (non-empty) in `bytes` by `to`.
fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(from) {
            out.extend_from_slice(to);
            rest = after;
        } else if let Some((first, after)) = rest.split_first() {
            out.push(*first);
            rest = after;
        }
    }
    out
}

use SmugglingClass as C;

const fn case(
    id: &'static str,
    class: SmugglingClass,
    what: &'static str,
    head: &'static [u8],
    body: &'static [u8],
    reference_status: u16,
) -> SmugglingCase {
    SmugglingCase {
        id,
        class,
        what,
        head,
        body,
        reference_status,
    }
}

/// A chunked body ending at once, then the smuggled request: what a back end
/// honouring Transfer-Encoding would see as a second request.
const TE_BODY: &[u8] = b"0\r\n\r\n@SMUGGLED@";

/// The corpus. Every head uses Host [`CORPUS_HOST`]; every case smuggles one
/// request after the first.
pub const SMUGGLING_CORPUS: &[SmugglingCase] = &[
    // CL.TE and TE.CL.
    case("cl-te", C::ClTe, "Content-Length covers the smuggled request, chunked ends before it",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\nTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("te-cl", C::ClTe, "chunked covers the smuggled request, Content-Length ends before it",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\nContent-Length: @CHUNKLINE@\r\n\r\n", b"@CHUNK@0\r\n\r\n", 400),
    case("cl-te-http10", C::ClTe, "chunked in HTTP/1.0, which has no chunked framing",
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    // Content-Length.
    case("cl-conflicting", C::ContentLength, "two Content-Length fields that disagree",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0\r\nContent-Length: @LEN@\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-list", C::ContentLength, "one Content-Length field with a list of two lengths",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0, @LEN@\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-list-same", C::ContentLength, "one Content-Length field with the same length twice",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0, 0\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-plus", C::ContentLength, "a signed Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: +0\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-negative", C::ContentLength, "a negative Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: -1\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-hex", C::ContentLength, "a hexadecimal Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0x0\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-inner-space", C::ContentLength, "a Content-Length with a space inside the digits",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0 0\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-space-before-colon", C::ContentLength, "whitespace between Content-Length and the colon",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length : @LEN@\r\n\r\n", b"@SMUGGLED@", 400),
    case("cl-huge", C::ContentLength, "a Content-Length that overflows 64 bits",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 99999999999999999999999999\r\n\r\n", b"@SMUGGLED@", 413),
    // Transfer-Encoding obfuscations (with Content-Length: TE.TE turned CL.TE;
    // alone: a coding the server must not guess at).
    case("te-case", C::TransferEncoding, "Transfer-Encoding: CHUNKED beside Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\nTransfer-Encoding: CHUNKED\r\n\r\n", TE_BODY, 400),
    case("te-name-case", C::TransferEncoding, "tRANSFER-eNCODING beside Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\ntRANSFER-eNCODING: chunked\r\n\r\n", TE_BODY, 400),
    case("te-space-before-colon", C::TransferEncoding, "whitespace between Transfer-Encoding and the colon",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding : chunked\r\n\r\n", TE_BODY, 400),
    case("te-tab-before-colon", C::TransferEncoding, "a tab between Transfer-Encoding and the colon",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding\t: chunked\r\n\r\n", TE_BODY, 400),
    case("te-tab-value", C::TransferEncoding, "a tab before chunked, beside Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\nTransfer-Encoding:\tchunked\r\n\r\n", TE_BODY, 400),
    case("te-vertical-tab", C::TransferEncoding, "a vertical tab after chunked",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\x0b\r\n\r\n", TE_BODY, 400),
    case("te-form-feed", C::TransferEncoding, "a form feed before chunked",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding:\x0cchunked\r\n\r\n", TE_BODY, 400),
    case("te-chunked-identity", C::TransferEncoding, "Transfer-Encoding: chunked, identity",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n", TE_BODY, 501),
    case("te-identity-chunked", C::TransferEncoding, "Transfer-Encoding: identity, chunked",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: identity, chunked\r\n\r\n", TE_BODY, 501),
    case("te-xchunked", C::TransferEncoding, "Transfer-Encoding: xchunked",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: xchunked\r\n\r\n", TE_BODY, 501),
    case("te-quoted", C::TransferEncoding, "Transfer-Encoding: \"chunked\"",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", TE_BODY, 501),
    case("te-trailing-comma", C::TransferEncoding, "Transfer-Encoding: chunked,",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked,\r\n\r\n", TE_BODY, 501),
    case("te-empty", C::TransferEncoding, "an empty Transfer-Encoding beside Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\nTransfer-Encoding:\r\n\r\n", TE_BODY, 400),
    case("te-duplicate", C::TransferEncoding, "Transfer-Encoding: chunked twice",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("te-duplicate-identity", C::TransferEncoding, "Transfer-Encoding: identity, then Transfer-Encoding: chunked",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("te-in-trailer", C::TransferEncoding, "a Transfer-Encoding field in the chunked trailer section",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"0\r\nTransfer-Encoding: chunked\r\n\r\n@SMUGGLED@", 400),
    case("cl-in-trailer", C::TransferEncoding, "a Content-Length field in the chunked trailer section",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"0\r\nContent-Length: 0\r\n\r\n@SMUGGLED@", 400),
    case("chunk-size-hex-prefix", C::TransferEncoding, "a chunk size written 0x..",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"0x0\r\n\r\n@SMUGGLED@", 400),
    case("chunk-size-bare-lf", C::TransferEncoding, "a chunk-size line ended by a bare LF",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\nx\r\n0\r\n\r\n@SMUGGLED@", 400),
    case("chunk-data-overrun", C::TransferEncoding, "chunk data longer than its size",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nxx\r\n0\r\n\r\n@SMUGGLED@", 400),
    // obs-fold.
    case("obs-fold-te", C::ObsFold, "Transfer-Encoding folded onto a continuation line, beside Content-Length",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: @LEN@\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", TE_BODY, 400),
    case("obs-fold-tab", C::ObsFold, "a header continued on a tab-led line",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nX-A: 1\r\n\tTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("obs-fold-first", C::ObsFold, "the first header line starts with a space",
        b"POST / HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: mirror.test\r\n\r\n", TE_BODY, 400),
    // Bare LF and bare CR.
    case("bare-lf-header", C::LineEnding, "Transfer-Encoding after a bare LF inside another field's line",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nX: y\nTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("bare-lf-head", C::LineEnding, "a head whose lines all end in a bare LF",
        b"GET / HTTP/1.1\nHost: mirror.test\n\n", b"@SMUGGLED@", 400),
    case("bare-lf-end-of-head", C::LineEnding, "a head ended by CRLF then a bare LF",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\n\n", b"@SMUGGLED@", 400),
    case("bare-cr-header", C::LineEnding, "Transfer-Encoding after a bare CR inside another field's line",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nX: y\rTransfer-Encoding: chunked\r\n\r\n", TE_BODY, 400),
    case("bare-cr-request-line", C::LineEnding, "a request line ended by a bare CR",
        b"GET / HTTP/1.1\rHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 400),
    // Controls in names and values.
    case("nul-in-value", C::Control, "NUL inside a field value",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX: a\x00b\r\n\r\n", b"@SMUGGLED@", 400),
    case("nul-in-name", C::Control, "NUL inside a field name",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX\x00Y: a\r\n\r\n", b"@SMUGGLED@", 400),
    case("nul-in-te", C::Control, "Transfer-Encoding: chunked followed by NUL",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\x00\r\n\r\n", TE_BODY, 400),
    case("ctl-in-value", C::Control, "a control character (0x01) inside a field value",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX: a\x01b\r\n\r\n", b"@SMUGGLED@", 400),
    case("del-in-value", C::Control, "DEL inside a field value",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX: a\x7fb\r\n\r\n", b"@SMUGGLED@", 400),
    case("esc-in-name", C::Control, "ESC inside a field name",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX\x1bY: a\r\n\r\n", b"@SMUGGLED@", 400),
    case("nul-in-target", C::Control, "NUL inside the request-target",
        b"GET /\x00 HTTP/1.1\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 400),
    // Over-long request lines and heads.
    case("long-request-line", C::Oversize, "a request line longer than any head limit",
        b"GET /@PAD@ HTTP/1.1\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 414),
    case("long-header", C::Oversize, "one header field longer than any head limit",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nX: @PAD@\r\n\r\n", b"@SMUGGLED@", 431),
    // Pipelined after a refused request.
    case("pipelined-after-bad-request-line", C::Pipelined, "a request line with a space in the target",
        b"GET /a b HTTP/1.1\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 400),
    case("pipelined-after-missing-host", C::Pipelined, "an HTTP/1.1 request without Host",
        b"GET / HTTP/1.1\r\n\r\n", b"@SMUGGLED@", 400),
    case("pipelined-after-duplicate-host", C::Pipelined, "two Host fields",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\nHost: other.example\r\n\r\n", b"@SMUGGLED@", 400),
    case("pipelined-after-bad-version", C::Pipelined, "an HTTP version the server does not speak",
        b"GET / HTTP/1.2\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 505),
    case("pipelined-after-bad-chunk", C::Pipelined, "a chunk size that is not hexadecimal",
        b"POST / HTTP/1.1\r\nHost: mirror.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"zz\r\n\r\n@SMUGGLED@", 400),
    // Absolute-form.
    case("absolute-form-host-mismatch", C::AbsoluteForm, "absolute-form naming another authority than Host",
        b"GET http://other.example/ HTTP/1.1\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 400),
    case("absolute-form-https-mismatch", C::AbsoluteForm, "https absolute-form naming another authority than Host",
        b"GET https://other.example:443/simple/ HTTP/1.1\r\nHost: mirror.test\r\n\r\n", b"@SMUGGLED@", 400),
    // HTTP/2 on an HTTP/1.1 connection (pseudo-header abuse over HTTP/2
    // itself is H2_CORPUS, below).
    case("h2-preface", C::Http2, "the HTTP/2 connection preface",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"@SMUGGLED@", 505),
    case("h1-pseudo-header", C::Http2, "an HTTP/2 pseudo-header (:authority) in an HTTP/1.1 head",
        b"GET / HTTP/1.1\r\nHost: mirror.test\r\n:authority: other.example\r\n\r\n", b"@SMUGGLED@", 400),
];

/// What [`H2Case::build`] puts in place of an HTTP/2 case's markers.
#[derive(Debug, Clone, Copy)]
pub struct H2Smuggle<'a> {
    /// `@AUTHORITY@`: the target's own authority (`host:port`), as a
    /// well-formed request's `:authority` names it.
    pub authority: &'a str,
    /// `@OTHER@`: the authority a request must not reach (the controlled
    /// upstream's `host:port`, or a name that never resolves).
    pub other: &'a str,
    /// `@SCHEME@`: `https` or `http`.
    pub scheme: &'a str,
    /// `@PATH@`: an origin-form path the target serves, with a fresh token
    /// in its query, so that reaching the upstream shows.
    pub path: &'a str,
}

pub use crate::h2::H2Request;

/// One HTTP/2 pseudo-header or field abuse: a request a server must refuse
/// (reset the stream, GOAWAY, or answer 4xx) and must never pass on. Each
/// carries the token of `@PATH@` (in `:path`, or in the HTTP/1.1 request
/// `@HIDDEN@` that a front downgrading to HTTP/1.1 would let through:
/// `GET @PATH@ HTTP/1.1`, `Host: @OTHER@`).
#[derive(Debug, Clone, Copy)]
pub struct H2Case {
    /// Stable identifier (evidence and test failures name it).
    pub id: &'static str,
    /// What the request does, in one line.
    pub what: &'static str,
    /// The header fields, in order, with markers.
    pub fields: &'static [(&'static str, &'static str)],
    /// DATA after the HEADERS, with markers.
    pub data: Option<&'static str>,
}

impl H2Case {
    /// The request, markers expanded.
    pub fn build(&self, s: &H2Smuggle<'_>) -> H2Request {
        let hidden = format!("GET {} HTTP/1.1\r\nHost: {}\r\n\r\n", s.path, s.other);
        let expand = |t: &str| {
            t.replace("@HIDDEN@", &hidden)
                .replace("@AUTHORITY@", s.authority)
                .replace("@OTHER@", s.other)
                .replace("@SCHEME@", s.scheme)
                .replace("@PATH@", s.path)
                .into_bytes()
        };
        H2Request {
            fields: self
                .fields
                .iter()
                .map(|(n, v)| (expand(n), expand(v)))
                .collect(),
            data: self.data.map(expand),
        }
    }
}

const fn h2(
    id: &'static str,
    what: &'static str,
    fields: &'static [(&'static str, &'static str)],
    data: Option<&'static str>,
) -> H2Case {
    H2Case {
        id,
        what,
        fields,
        data,
    }
}

/// The body a chunked-reading HTTP/1.1 back end would end at once, with the
/// hidden request after it.
const H2_TE_BODY: Option<&str> = Some("0\r\n\r\n@HIDDEN@");

/// The HTTP/2 cases: pseudo-header abuse, connection-specific fields, a
/// `content-length` that disagrees with the DATA (H2.CL), and what an
/// HTTP/2-to-HTTP/1.1 downgrade turns into a second request (CR, LF, NUL in
/// values, a `:path` with a request line in it, names a downgrade would
/// write as another field). Sent over HTTP/2 by `P3.h2-smuggling`; the
/// mirror's own proof is `crates/egress-mirror/tests/h2.rs`.
pub const H2_CORPUS: &[H2Case] = &[
    h2(
        "h2-connect",
        "CONNECT naming the upstream, the hidden request sent as tunnel data",
        &[(":method", "CONNECT"), (":authority", "@OTHER@")],
        Some("@HIDDEN@"),
    ),
    h2(
        "h2-extended-connect",
        "extended CONNECT (:protocol websocket) naming the upstream",
        &[
            (":method", "CONNECT"),
            (":protocol", "websocket"),
            (":scheme", "@SCHEME@"),
            (":authority", "@OTHER@"),
            (":path", "@PATH@"),
        ],
        None,
    ),
    h2(
        "h2-absolute-path",
        "an absolute-form :path naming the upstream",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "http://@OTHER@@PATH@"),
        ],
        None,
    ),
    h2(
        "h2-authority-host-mismatch",
        ":authority naming the upstream, host naming the target",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@OTHER@"),
            (":path", "@PATH@"),
            ("host", "@AUTHORITY@"),
        ],
        None,
    ),
    h2(
        "h2-second-authority",
        "a second :authority, naming the upstream",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":authority", "@OTHER@"),
            (":path", "@PATH@"),
        ],
        None,
    ),
    h2(
        "h2-second-path",
        "a second :path",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "/"),
            (":path", "@PATH@"),
        ],
        None,
    ),
    h2(
        "h2-pseudo-after-regular",
        "a pseudo-header (:authority, the upstream) after a regular field",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":path", "@PATH@"),
            ("accept", "*/*"),
            (":authority", "@OTHER@"),
        ],
        None,
    ),
    h2(
        "h2-connection",
        "a connection field",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("connection", "keep-alive"),
        ],
        None,
    ),
    h2(
        "h2-transfer-encoding",
        "transfer-encoding: chunked, the hidden request after a last chunk (H2.TE)",
        &[
            (":method", "POST"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("transfer-encoding", "chunked"),
        ],
        H2_TE_BODY,
    ),
    h2(
        "h2-keep-alive",
        "a keep-alive field",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("keep-alive", "timeout=5"),
        ],
        None,
    ),
    h2(
        "h2-upgrade",
        "an upgrade field",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("upgrade", "websocket"),
        ],
        None,
    ),
    h2(
        "h2-content-length",
        "content-length: 0 with the hidden request as DATA (H2.CL)",
        &[
            (":method", "POST"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("content-length", "0"),
        ],
        Some("@HIDDEN@"),
    ),
    h2(
        "h2-crlf-in-value",
        "CRLF and transfer-encoding: chunked inside a field value",
        &[
            (":method", "POST"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("foo", "bar\r\nTransfer-Encoding: chunked"),
        ],
        H2_TE_BODY,
    ),
    h2(
        "h2-crlf-request-in-value",
        "a field value ending the head and starting the hidden request",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            (
                "foo",
                "bar\r\n\r\nGET @PATH@ HTTP/1.1\r\nHost: @OTHER@\r\nx: y",
            ),
        ],
        None,
    ),
    h2(
        "h2-lf-in-value",
        "a bare LF and transfer-encoding: chunked inside a field value",
        &[
            (":method", "POST"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("foo", "bar\nTransfer-Encoding: chunked"),
        ],
        H2_TE_BODY,
    ),
    h2(
        "h2-nul-in-value",
        "NUL inside a field value",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("foo", "a\0b"),
        ],
        None,
    ),
    h2(
        "h2-crlf-in-path",
        "a :path holding a request line, CRLF and the hidden request",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "/ HTTP/1.1\r\nHost: @AUTHORITY@\r\n\r\nGET @PATH@"),
        ],
        None,
    ),
    h2(
        "h2-uppercase-name",
        "an uppercase field name (Transfer-Encoding: chunked)",
        &[
            (":method", "POST"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("Transfer-Encoding", "chunked"),
        ],
        H2_TE_BODY,
    ),
    h2(
        "h2-colon-in-name",
        "a colon inside a field name (host:, naming the upstream)",
        &[
            (":method", "GET"),
            (":scheme", "@SCHEME@"),
            (":authority", "@AUTHORITY@"),
            (":path", "@PATH@"),
            ("x:host", "@OTHER@"),
        ],
        None,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_markers_expand() {
        let mut ids: Vec<_> = SMUGGLING_CORPUS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), SMUGGLING_CORPUS.len());
        for c in SMUGGLING_CORPUS {
            let raw = c.build("/simple/");
            assert!(!raw.contains(&b'@'), "{}", c.id);
            assert!(
                raw.windows(22).any(|w| w == b"GET /simple/ HTTP/1.1\r"),
                "{}",
                c.id
            );
        }
    }

    #[test]
    fn build_with_puts_its_names_everywhere() {
        for c in SMUGGLING_CORPUS {
            let raw = c.build_with(&Smuggle {
                host: "127.0.0.1:8080",
                other: "elsewhere.invalid",
                target: "/x",
                fields: "",
            });
            for gone in [CORPUS_HOST, OTHER_HOST] {
                assert!(
                    !raw.windows(gone.len()).any(|w| w == gone.as_bytes()),
                    "{}",
                    c.id
                );
            }
            let same = Smuggle {
                host: CORPUS_HOST,
                other: OTHER_HOST,
                target: "/x",
                fields: "",
            };
            assert_eq!(c.build_with(&same), c.build("/x"), "{}", c.id);
        }
        let abs = SMUGGLING_CORPUS
            .iter()
            .find(|c| c.id == "absolute-form-https-mismatch")
            .unwrap();
        let raw = abs.build_with(&Smuggle {
            host: "h:1",
            other: "127.0.0.1",
            target: "/x",
            fields: "",
        });
        let raw = String::from_utf8(raw).unwrap();
        assert!(raw.starts_with("GET https://127.0.0.1:443/simple/ HTTP/1.1\r\nHost: h:1\r\n"));
        let cl_te = SMUGGLING_CORPUS.iter().find(|c| c.id == "cl-te").unwrap();
        let raw = cl_te.build_with(&Smuggle {
            host: "h.example:81",
            other: OTHER_HOST,
            target: "/x",
            fields: "Accept: text/html\r\n",
        });
        let raw = String::from_utf8(raw).unwrap();
        let body = "0\r\n\r\nGET /x HTTP/1.1\r\nHost: h.example:81\r\nAccept: text/html\r\n\r\n";
        assert!(raw.starts_with("POST / HTTP/1.1\r\nHost: h.example:81\r\n"));
        assert!(raw.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(raw.ends_with(body));
    }

    #[test]
    fn h2_cases_carry_the_token_and_expand_every_marker() {
        let mut ids: Vec<_> = H2_CORPUS.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), H2_CORPUS.len());
        let s = H2Smuggle {
            authority: "t.example:1",
            other: "u.example:2",
            scheme: "https",
            path: "/p?ec=ecm0123456789abcdef",
        };
        for c in H2_CORPUS {
            let r = c.build(&s);
            let mut all: Vec<u8> = r
                .fields
                .iter()
                .flat_map(|(n, v)| [n.clone(), v.clone()].concat())
                .collect();
            all.extend(r.data.clone().unwrap_or_default());
            assert!(!all.contains(&b'@'), "{}", c.id);
            assert!(
                all.windows(19).any(|w| w == b"ecm0123456789abcdef"),
                "{}",
                c.id
            );
        }
        let connect = H2_CORPUS
            .iter()
            .find(|c| c.id == "h2-connect")
            .unwrap()
            .build(&s);
        assert_eq!(
            connect.fields[1],
            (b":authority".to_vec(), b"u.example:2".to_vec())
        );
        assert_eq!(
            connect.data.unwrap(),
            b"GET /p?ec=ecm0123456789abcdef HTTP/1.1\r\nHost: u.example:2\r\n\r\n"
        );
    }

    #[test]
    fn lengths_are_what_a_front_end_would_forward() {
        let cl_te = SMUGGLING_CORPUS.iter().find(|c| c.id == "cl-te").unwrap();
        let raw = String::from_utf8(cl_te.build("/x")).unwrap();
        let body = "0\r\n\r\nGET /x HTTP/1.1\r\nHost: mirror.test\r\n\r\n";
        assert!(raw.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(raw.ends_with(body));
        let te_cl = SMUGGLING_CORPUS.iter().find(|c| c.id == "te-cl").unwrap();
        let raw = String::from_utf8(te_cl.build("/x")).unwrap();
        let smuggled = "GET /x HTTP/1.1\r\nHost: mirror.test\r\n\r\n";
        let size_line = format!("{:x}\r\n", smuggled.len());
        assert!(raw.contains(&format!("Content-Length: {}\r\n", size_line.len())));
        assert!(raw.ends_with(&format!("\r\n\r\n{size_line}{smuggled}\r\n0\r\n\r\n")));
    }
}
