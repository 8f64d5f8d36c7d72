//! Response serialisation.
//!
//! For `Reply::Response` the server owns the framing: it always writes
//! `Content-Length` (never chunked) and its own `Connection`; the handler's
//! `Content-Length`, `Transfer-Encoding` and `Connection` fields are dropped,
//! with one exception: a bodiless reply (HEAD or 304) with an empty body keeps
//! a handler-supplied numeric `Content-Length`, so a handler can answer HEAD
//! with the length GET would have without producing the bytes.

use crate::parse::{is_field_value, is_token};
use crate::{Body, Response};

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

impl Body {
    /// The body's length in bytes: its `Content-Length`. Saturates at
    /// `usize::MAX` for a file body on a 32-bit target; see
    /// [`Body::content_length`].
    pub fn len(&self) -> usize {
        usize::try_from(self.content_length()).unwrap_or(usize::MAX)
    }

    /// The body's length in bytes, as sent in `Content-Length`.
    pub fn content_length(&self) -> u64 {
        match self {
            Body::File(_, len) => *len,
            Body::Sealed(sealed) => sealed.len(),
            // usize -> u64 never truncates on supported targets.
            other => other.as_bytes().len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.content_length() == 0
    }

    /// The bytes of an in-memory body; empty for [`Body::File`] and
    /// [`Body::Sealed`], whose bytes are only ever read while the body is
    /// sent.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Empty | Body::File(..) | Body::Sealed(_) => &[],
            Body::Bytes(b) => b,
            Body::Shared(b) => b,
        }
    }
}

/// Whether every handler-supplied field can be written verbatim: names are
/// tokens and values hold no CR, LF, NUL or other controls. This is what stops
/// header injection through a value that came from a request or a package.
pub(crate) fn headers_valid(resp: &Response) -> bool {
    resp.headers
        .iter()
        .all(|(n, v)| is_token(n.as_bytes()) && is_field_value(v.as_bytes()))
}

/// Whether the handler asked for the connection to be closed.
pub(crate) fn wants_close(resp: &Response) -> bool {
    resp.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("connection")
            && v.split(',')
                .any(|o| o.trim_matches([' ', '\t']).eq_ignore_ascii_case("close"))
    })
}

fn status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(format!("HTTP/1.1 {status:03} {}\r\n", reason(status)).as_bytes());
}

fn field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Serialises the head of a `Reply::Response` (status 200..=599, headers
/// already validated). Returns the head and whether the body must follow it.
pub(crate) fn frame(
    resp: &Response,
    head_request: bool,
    connection: Option<&str>,
) -> (Vec<u8>, bool) {
    // 1xx and 204 have neither body nor Content-Length (RFC 9110 §8.6);
    // HEAD and 304 carry the length but no body.
    let no_length = resp.status < 200 || resp.status == 204;
    let send_body = !no_length && resp.status != 304 && !head_request;

    let mut out = Vec::with_capacity(256);
    status_line(&mut out, resp.status);
    let mut handler_length = None;
    for (name, value) in &resp.headers {
        if name.eq_ignore_ascii_case("content-length") {
            handler_length = Some(value.as_str());
        } else if !name.eq_ignore_ascii_case("transfer-encoding")
            && !name.eq_ignore_ascii_case("connection")
        {
            field(&mut out, name, value);
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
        field(&mut out, "Content-Length", &length);
    }
    if let Some(c) = connection {
        field(&mut out, "Connection", c);
    }
    out.extend_from_slice(b"\r\n");
    (out, send_body)
}

/// Serialises the head of a `Reply::Takeover` verbatim: status line, the
/// handler's (validated) fields, blank line. No framing fields are added;
/// whoever takes the stream over owns the framing.
pub(crate) fn takeover_head(resp: &Response) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    status_line(&mut out, resp.status);
    for (name, value) in &resp.headers {
        field(&mut out, name, value);
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(resp: &Response, head: bool, conn: Option<&str>) -> (String, bool) {
        let (h, b) = frame(resp, head, conn);
        (String::from_utf8(h).expect("ascii"), b)
    }

    #[test]
    fn get_and_head_share_length() {
        let resp = Response::text(200, "hello")
            .with_header("Content-Length", "999")
            .with_header("Transfer-Encoding", "chunked")
            .with_header("connection", "keep-alive");
        let want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(text(&resp, false, None), (want.to_string(), true));
        assert_eq!(text(&resp, true, None), (want.to_string(), false));
    }

    #[test]
    fn head_keeps_handler_length_when_body_empty() {
        let resp = Response::new(200).with_header("Content-Length", "1234");
        let (h, body) = text(&resp, true, Some("close"));
        assert_eq!(
            h,
            "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nConnection: close\r\n\r\n"
        );
        assert!(!body);
        // On GET the real body length always wins.
        assert!(text(&resp, false, None).0.contains("Content-Length: 0\r\n"));
        // Garbage lengths are never echoed.
        let bad = Response::new(200).with_header("Content-Length", "1, 2");
        assert!(text(&bad, true, None).0.contains("Content-Length: 0\r\n"));
    }

    #[test]
    fn bodiless_statuses() {
        let (h, body) = text(&Response::new(204).with_body("x"), false, None);
        assert_eq!(h, "HTTP/1.1 204 No Content\r\n\r\n");
        assert!(!body);
        let (h, body) = text(&Response::new(304).with_body("xyz"), false, None);
        assert_eq!(h, "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n");
        assert!(!body);
        let (h, _) = text(&Response::new(299), false, None);
        assert_eq!(h, "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n");
    }

    #[test]
    fn header_validation() {
        assert!(headers_valid(
            &Response::new(200).with_header("X-A", "b\tc é")
        ));
        for (n, v) in [
            ("X-A", "a\r\nSet-Cookie: x"),
            ("X-A", "a\nb"),
            ("X-A", "a\0b"),
            ("X A", "b"),
            ("X-A:", "b"),
            ("", "b"),
        ] {
            assert!(
                !headers_valid(&Response::new(200).with_header(n, v)),
                "{n:?}: {v:?}"
            );
        }
    }

    #[test]
    fn close_detection() {
        assert!(wants_close(
            &Response::new(200).with_header("Connection", "foo, Close")
        ));
        assert!(!wants_close(
            &Response::new(200).with_header("Connection", "closed")
        ));
    }

    #[test]
    fn takeover_is_verbatim() {
        let resp = Response::new(200).with_header("X-Tunnel", "1");
        assert_eq!(
            String::from_utf8(takeover_head(&resp)).expect("ascii"),
            "HTTP/1.1 200 OK\r\nX-Tunnel: 1\r\n\r\n"
        );
    }
}
