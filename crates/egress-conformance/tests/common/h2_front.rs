//! An HTTP/2 front for the `P3.h2-smuggling` mutants: h2c with prior
//! knowledge on a plain port (a connection that starts with the HTTP/2
//! preface), every other connection passed through byte for byte to the
//! wrapped HTTP/1.1 server. Its HTTP/2 side is strict, one stream at a
//! time: a request with a body, CONNECT, `:protocol`, a pseudo-header
//! repeated or after a regular field, a non-origin or non-visible `:path`,
//! a connection-specific field, a name with uppercase or a colon, or a
//! value with CR, LF or NUL is reset (RST_STREAM PROTOCOL_ERROR). What it
//! relays becomes an HTTP/1.1 GET on a connection of its own, answered
//! back as HEADERS and DATA.
//!
//! The fault ([`Fault`]) is where it relays to: a front that routes by
//! `:authority` sends a request naming another authority there (the
//! canary), whatever `host` says; a correct one relays only what names it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use egress_model::h2::{flag, kind, PREFACE};
use egress_transcript::h2::{encode_block, frame, headers_fragment, parse_header, MAX_FRAME};

/// What the front gets wrong.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Relays every request whose `:authority` is its own to the wrapped
    /// server, and refuses (400) the rest.
    None,
    /// Relays each request to the authority its `:authority` names (a
    /// `host:port` on loopback), ignoring `host`.
    RoutesByAuthority,
    /// Answers every HTTP/2 request 404 (a front that serves nothing).
    NotFound,
}

/// A running front; stops accepting when dropped.
pub(crate) struct H2Front {
    listener: Option<TcpListener>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl H2Front {
    /// Binds a loopback port, so that its URL is known before what it
    /// wraps exists.
    pub(crate) fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the h2 front");
        let addr = listener.local_addr().expect("front address");
        Self {
            listener: Some(listener),
            addr,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts serving in front of `backend` (an HTTP/1.1 server).
    pub(crate) fn serve(&mut self, backend: SocketAddr, fault: Fault) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let stop = Arc::clone(&self.stop);
        let own = self.addr.to_string();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(conn) = conn {
                    let own = own.clone();
                    thread::spawn(move || serve_connection(conn, backend, &own, fault));
                }
            }
        });
    }
}

impl Drop for H2Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_connection(mut client: TcpStream, backend: SocketAddr, own: &str, fault: Fault) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let mut first = vec![0u8; PREFACE.len()];
    let mut got = 0;
    while got < first.len() {
        match client.read(&mut first[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
        // An HTTP/1.1 request that is shorter than the preface.
        if !PREFACE.starts_with(&first[..got]) {
            break;
        }
    }
    first.truncate(got);
    if first == PREFACE {
        serve_h2(client, backend, own, fault);
    } else {
        splice(client, backend, &first);
    }
}

/// Passes a connection through to the backend, `first` bytes first.
fn splice(mut client: TcpStream, backend: SocketAddr, first: &[u8]) {
    let Ok(mut up) = TcpStream::connect(backend) else {
        return;
    };
    if up.write_all(first).is_err() {
        return;
    }
    let (Ok(mut c2), Ok(mut u2)) = (client.try_clone(), up.try_clone()) else {
        return;
    };
    let _ = client.set_read_timeout(None);
    let t = thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut u2);
        let _ = u2.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut up, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Both);
    let _ = t.join();
}

fn read_frame(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(u8, u8, u32, Vec<u8>)> {
    loop {
        if let Some((len, k, flags, stream)) = parse_header(buf) {
            if len > MAX_FRAME {
                return None;
            }
            if buf.len() >= 9 + len {
                let payload = buf[9..9 + len].to_vec();
                buf.drain(..9 + len);
                return Some((k, flags, stream, payload));
            }
        }
        let mut chunk = [0u8; 16384];
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "transfer-encoding",
    "keep-alive",
    "proxy-connection",
    "upgrade",
];

/// Why a request is malformed, if it is (its body aside).
fn malformed(fields: &[(Vec<u8>, Vec<u8>)]) -> Option<&'static str> {
    let mut regular = false;
    let mut seen: Vec<&[u8]> = Vec::new();
    for (n, v) in fields {
        if v.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0) {
            return Some("control in a value");
        }
        if let Some(p) = n.strip_prefix(b":") {
            if regular {
                return Some("pseudo-header after a regular field");
            }
            if seen.contains(&p) {
                return Some("repeated pseudo-header");
            }
            if !matches!(p, b"method" | b"scheme" | b"authority" | b"path") {
                return Some("unknown pseudo-header");
            }
            seen.push(p);
        } else {
            regular = true;
            if n.iter().any(|b| b.is_ascii_uppercase() || *b == b':') {
                return Some("bad name");
            }
            let name = String::from_utf8_lossy(n);
            if CONNECTION_SPECIFIC.contains(&name.as_ref()) {
                return Some("connection-specific field");
            }
        }
    }
    None
}

fn field<'a>(fields: &'a [(Vec<u8>, Vec<u8>)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name.as_bytes())
        .and_then(|(_, v)| std::str::from_utf8(v).ok())
}

fn serve_h2(mut s: TcpStream, backend: SocketAddr, own: &str, fault: Fault) {
    let send = |s: &mut TcpStream, k: u8, flags: u8, stream: u32, p: &[u8]| {
        s.write_all(&frame(k, flags, stream, p)).is_ok()
    };
    if !send(&mut s, kind::SETTINGS, 0, 0, &[]) {
        return;
    }
    let mut decoder = loona_hpack::Decoder::new();
    let mut buf = Vec::new();
    while let Some((k, flags, stream, payload)) = read_frame(&mut s, &mut buf) {
        match k {
            kind::SETTINGS if flags & flag::ACK == 0 => {
                send(&mut s, kind::SETTINGS, flag::ACK, 0, &[]);
            }
            kind::PING if flags & flag::ACK == 0 => {
                send(&mut s, kind::PING, flag::ACK, 0, &payload);
            }
            kind::HEADERS => {
                let Some(block) = headers_fragment(flags, &payload) else {
                    return;
                };
                if flags & flag::END_HEADERS == 0 {
                    // This front takes no CONTINUATION.
                    send(&mut s, kind::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 1]);
                    return;
                }
                let Ok(fields) = decoder.decode(block) else {
                    send(&mut s, kind::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 9]);
                    return;
                };
                let method = field(&fields, ":method").unwrap_or_default();
                let path = field(&fields, ":path").unwrap_or_default();
                let refuse = flags & flag::END_STREAM == 0
                    || malformed(&fields).is_some()
                    || method != "GET"
                    || !path.starts_with('/')
                    || !path.bytes().all(|b| b.is_ascii_graphic());
                if refuse {
                    send(&mut s, kind::RST_STREAM, 0, stream, &[0, 0, 0, 1]);
                    continue;
                }
                let authority = field(&fields, ":authority").unwrap_or_default();
                let accept = field(&fields, "accept").unwrap_or("*/*");
                let (status, body) = match fault {
                    Fault::NotFound => (404, b"not found\n".to_vec()),
                    _ if authority == own => relay(backend, own, path, accept),
                    Fault::RoutesByAuthority => match authority.parse::<SocketAddr>() {
                        Ok(to) => relay(to, authority, path, accept),
                        Err(_) => (502, Vec::new()),
                    },
                    Fault::None => (400, b"not mine\n".to_vec()),
                };
                let head = encode_block(&[(b":status".to_vec(), status.to_string().into_bytes())]);
                let mut ok = send(&mut s, kind::HEADERS, flag::END_HEADERS, stream, &head);
                let mut chunks = body.chunks(MAX_FRAME).peekable();
                if chunks.peek().is_none() {
                    ok &= send(&mut s, kind::DATA, flag::END_STREAM, stream, &[]);
                }
                while let Some(c) = chunks.next() {
                    let last = chunks.peek().is_none();
                    let f = if last { flag::END_STREAM } else { 0 };
                    ok &= send(&mut s, kind::DATA, f, stream, c);
                }
                if !ok {
                    return;
                }
            }
            kind::GOAWAY => return,
            _ => {}
        }
    }
}

/// One HTTP/1.1 GET to `to`: its status and body.
fn relay(to: SocketAddr, host: &str, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let Ok(mut up) = TcpStream::connect(to) else {
        return (502, Vec::new());
    };
    let _ = up.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        up,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    let mut out = Vec::new();
    let _ = up.read_to_end(&mut out);
    let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (502, Vec::new());
    };
    let status = std::str::from_utf8(&out[..end])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    (status, out[end + 4..].to_vec())
}
