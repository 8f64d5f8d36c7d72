//! A lax HTTP/1.1 front for the request-smuggling mutants: the wrapped
//! mirror behind a parser that frames every request by its first
//! `Content-Length` alone (`Transfer-Encoding` is ignored, as are duplicate
//! and malformed lengths), keeps every connection open after any answer,
//! and hands each request it reads to the mirror on a connection of its
//! own. The bytes behind an ambiguous request are then read and served as
//! the next request: what `P3.request-smuggling` must catch.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// How long the front waits for the next request on a connection before
/// closing it (short, so that each case's listening ends quickly).
const IDLE: Duration = Duration::from_millis(500);
/// Largest head the front reads before giving up on a connection.
const MAX_HEAD: usize = 1024 * 1024;

/// A running front; stops accepting when dropped.
pub(crate) struct LaxFront {
    listener: Option<TcpListener>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl LaxFront {
    /// Binds a loopback port, so that its URL is known before the mirror
    /// behind it exists (npm snapshots name their origin).
    pub(crate) fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the lax front");
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

    /// Starts serving in front of `backend`.
    pub(crate) fn serve(&mut self, backend: SocketAddr) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let stop = Arc::clone(&self.stop);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(conn) = conn {
                    thread::spawn(move || serve_connection(conn, backend));
                }
            }
        });
    }
}

impl Drop for LaxFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Fields the front drops from what it passes on: it frames by itself.
fn hop(name: &str) -> bool {
    [
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
    ]
    .iter()
    .any(|h| name.trim().eq_ignore_ascii_case(h))
}

fn serve_connection(mut client: TcpStream, backend: SocketAddr) {
    let _ = client.set_read_timeout(Some(IDLE));
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        while buf.starts_with(b"\r\n") {
            buf.drain(..2);
        }
        let Some(end) = find(&buf, b"\r\n\r\n") else {
            if buf.len() > MAX_HEAD {
                return;
            }
            match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_string();
        let fields: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.to_string(), v.trim().to_string()))
            .collect();
        // The first Content-Length that parses; Transfer-Encoding ignored.
        let length: usize = fields
            .iter()
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
            .find_map(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < end + 4 + length {
            match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[end + 4..end + 4 + length].to_vec();
        buf.drain(..end + 4 + length);
        let close = fields.iter().any(|(n, v)| {
            n.trim().eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close")
        });
        let answer = match request_line.split(' ').collect::<Vec<_>>().as_slice() {
            [method, target, _version] => pass_on(backend, method, target, &fields, &body),
            _ => b"HTTP/1.1 400 Bad Request\r\nContent-Length: 12\r\n\r\nbad request\n".to_vec(),
        };
        if client.write_all(&answer).is_err() || close {
            return;
        }
    }
}

/// The request as the mirror gets it: cleanly framed, closing; its answer
/// with `Connection` removed, so that the client's connection stays open.
fn pass_on(
    backend: SocketAddr,
    method: &str,
    target: &str,
    fields: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (n, v) in fields.iter().filter(|(n, _)| !hop(n)) {
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    if !body.is_empty() || method == "POST" || method == "PUT" {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out.extend_from_slice(body);
    let Ok(mut up) = TcpStream::connect(backend) else {
        return b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".to_vec();
    };
    let _ = up.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = up.write_all(&out);
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    let Some(end) = find(&answer, b"\r\n\r\n") else {
        return b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".to_vec();
    };
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut relayed: Vec<u8> = head
        .split("\r\n")
        .filter(|l| {
            !l.split_once(':')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("connection"))
        })
        .collect::<Vec<_>>()
        .join("\r\n")
        .into_bytes();
    relayed.extend_from_slice(&answer[end..]);
    relayed
}
