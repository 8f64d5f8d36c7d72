//! The request-smuggling and desync corpus (egress_model::smuggling) against
//! the reference mirror on a real socket: every payload is refused, nothing
//! smuggled after it is served, and the connection is closed.

use egress_artifacts::{build_wheel, WheelSpec};
use egress_http::ServerHandle;
use egress_model::smuggling::{SmugglingCase, CORPUS_HOST, SMUGGLING_CORPUS};
use egress_model::{ProjectName, Version};
use egress_snapshot::SnapshotBuilder;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// A path the mirror serves with 200: the smuggled request asks for it.
const SMUGGLED: &str = "/simple/ec-present/";

fn mirror() -> ServerHandle {
    let w = build_wheel(&WheelSpec {
        name: ProjectName::new("ec-present").unwrap(),
        version: Version::new("1.0.0").unwrap(),
        summary: "smuggling target".into(),
        description: "served by the reference mirror\n".into(),
        requires_python: None,
        files: vec![("ec_present/__init__.py".into(), b"".to_vec())],
    });
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let snapshot = b
        .build("2026-01-01T00:00:00Z", None, "mirror@egress.test")
        .unwrap();
    egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0").unwrap()
}

/// What came back on one connection.
#[derive(Debug)]
struct Exchange {
    /// Statuses of the complete responses, in order.
    statuses: Vec<u16>,
    /// Whether the server closed the connection (EOF or reset) on its own.
    closed: bool,
    /// Bytes after the last complete response.
    rest: Vec<u8>,
}

/// Sends `raw` (never half-closing, so a close is the server's own doing) and
/// reads until the server closes or is silent for `wait`.
fn exchange(server: &ServerHandle, raw: &[u8], wait: Duration) -> Exchange {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    // The server may refuse (and close) before reading everything.
    let _ = s.write_all(raw);
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break false
            }
            Err(e) => panic!("read: {e}"),
        }
    };
    let (statuses, rest) = split_responses(&got);
    Exchange {
        statuses,
        closed,
        rest,
    }
}

/// Splits a byte stream into responses framed by Content-Length (the mirror
/// always sends it, and every request here is GET or POST, never HEAD).
fn split_responses(mut bytes: &[u8]) -> (Vec<u16>, Vec<u8>) {
    let mut statuses = Vec::new();
    while let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let Some(status) = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
        else {
            break;
        };
        let len: usize = head
            .split("\r\n")
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        if bytes.len() < end + 4 + len {
            break;
        }
        statuses.push(status);
        bytes = &bytes[end + 4 + len..];
    }
    (statuses, bytes.to_vec())
}

fn smuggled_request(extra: &str) -> String {
    format!("GET {SMUGGLED} HTTP/1.1\r\nHost: {CORPUS_HOST}\r\n{extra}\r\n")
}

/// Without these, "nothing served after the refusal" would prove nothing: the
/// smuggled request alone is served, and so is each of several pipelined ones.
#[test]
fn positive_controls() {
    let server = mirror();
    let alone = exchange(
        &server,
        smuggled_request("Connection: close\r\n").as_bytes(),
        Duration::from_secs(5),
    );
    assert_eq!(alone.statuses, [200]);
    assert!(alone.closed);

    let pipelined = [
        smuggled_request(""),
        smuggled_request(""),
        smuggled_request("Connection: close\r\n"),
    ]
    .concat();
    let r = exchange(&server, pipelined.as_bytes(), Duration::from_secs(5));
    assert_eq!(r.statuses, [200, 200, 200]);
    assert!(r.closed && r.rest.is_empty());

    // A well-formed chunked request (the framing the corpus twists) is read
    // completely, and the request after it on the connection is served.
    let chunked = format!(
        "POST / HTTP/1.1\r\nHost: {CORPUS_HOST}\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n{}",
        smuggled_request("Connection: close\r\n")
    );
    let r = exchange(&server, chunked.as_bytes(), Duration::from_secs(5));
    assert_eq!(r.statuses, [405, 200]);
    assert!(r.closed);
}

/// Why `case` failed against the mirror, if it did.
fn judge(case: &SmugglingCase, r: &Exchange) -> Option<String> {
    let want: &[u16] = match case.reference_status {
        0 => &[],
        s => &[s],
    };
    if r.statuses != want {
        return Some(format!(
            "answered {:?}, want {want:?} (a second status is the smuggled request served)",
            r.statuses
        ));
    }
    if !r.rest.is_empty() {
        return Some(format!("{} stray bytes after the refusal", r.rest.len()));
    }
    if !r.closed {
        return Some("kept the connection open after the refusal".into());
    }
    None
}

#[test]
fn every_corpus_payload_is_refused_and_closes() {
    let server = mirror();
    let failures: Vec<String> = SMUGGLING_CORPUS
        .iter()
        .filter_map(|case| {
            let r = exchange(&server, &case.build(SMUGGLED), Duration::from_secs(3));
            judge(case, &r).map(|why| format!("{} ({}): {why}", case.id, case.what))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The judge discriminates: a server that serves the smuggled request, takes
/// the payload, leaves bytes behind or keeps the connection open fails it.
#[test]
fn judge_fails_a_lax_server() {
    let case = SMUGGLING_CORPUS.iter().find(|c| c.id == "cl-te").unwrap();
    let ex = |statuses: &[u16], closed: bool, rest: &[u8]| Exchange {
        statuses: statuses.to_vec(),
        closed,
        rest: rest.to_vec(),
    };
    assert_eq!(judge(case, &ex(&[400], true, b"")), None);
    for lax in [
        ex(&[400, 200], true, b""),
        ex(&[200], true, b""),
        ex(&[405, 200], true, b""),
        ex(&[], true, b""),
        ex(&[400], false, b""),
        ex(&[400], true, b"HTTP/1.1 200 OK\r\n"),
    ] {
        assert!(judge(case, &lax).is_some(), "{lax:?}");
    }
    // The reader sees a second response packed right behind the first (what
    // a server honouring one framing over the other would send back).
    let (statuses, rest) = split_responses(
        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 2\r\n\r\nnoHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    );
    assert_eq!((statuses, rest), (vec![405, 200], vec![]));
}
