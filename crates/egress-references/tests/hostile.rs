//! Each hostile server misbehaves as documented, checked with plain sockets.

use egress_references::hostile::{self, Hostile};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const REQUEST: &[u8] = b"GET /a/b?c=1 HTTP/1.1\r\nHost: x\r\n\r\n";

fn send(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(REQUEST).unwrap();
    s
}

/// Reads exactly the response head.
fn head(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "head ended early: {buf:?}");
        buf.push(byte[0]);
    }
    String::from_utf8(buf).unwrap()
}

#[test]
fn status_only_servers() {
    for (kind, status) in [
        (Hostile::Everything404, "404"),
        (Hostile::Everything403, "403"),
    ] {
        let server = hostile::start(kind).unwrap();
        for target in ["/", "/simple/x/", "http://example.com/"] {
            let mut s = TcpStream::connect(server.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            write!(
                s,
                "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut all = String::new();
            s.read_to_string(&mut all).unwrap();
            assert!(all.starts_with(&format!("HTTP/1.1 {status} ")), "{all}");
            assert!(
                all.contains("\r\n\r\n") && !all.ends_with("\r\n\r\n"),
                "short body"
            );
        }
        assert!(server.base_url().starts_with("http://127.0.0.1:"));
        server.stop();
    }
}

#[test]
fn redirect_loop_points_at_itself() {
    let server = hostile::start(Hostile::RedirectLoop).unwrap();
    let mut s = send(server.addr());
    let h = head(&mut s);
    assert!(h.starts_with("HTTP/1.1 302 "), "{h}");
    assert!(h.contains("\r\nLocation: /a/b?c=1\r\n"), "{h}");
}

#[test]
fn endless_body_keeps_coming() {
    let server = hostile::start(Hostile::EndlessBody).unwrap();
    let mut s = send(server.addr());
    let h = head(&mut s);
    assert!(h.starts_with("HTTP/1.1 200 "), "{h}");
    assert!(!h.to_ascii_lowercase().contains("content-length"), "{h}");
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    while total < 4 * 1024 * 1024 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "body ended");
        total += n;
    }
    drop(s);
    server.stop();
}

#[test]
fn huge_declared_length_then_silence() {
    let server = hostile::start(Hostile::HugeDeclaredLength).unwrap();
    let mut s = send(server.addr());
    let h = head(&mut s);
    assert!(
        h.contains("\r\nContent-Length: 1000000000000000\r\n"),
        "{h}"
    );
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).unwrap();
    assert!(n > 0 && n < 100);
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let err = s.read(&mut buf).expect_err("nothing more arrives");
    assert!(matches!(
        err.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut
    ));
}

#[test]
fn slow_drip_sends_a_byte_at_a_time() {
    let server = hostile::start(Hostile::SlowDrip).unwrap();
    let mut s = send(server.addr());
    let h = head(&mut s);
    assert!(
        h.starts_with("HTTP/1.1 200 ") && h.contains("Content-Length: "),
        "{h}"
    );
    let start = Instant::now();
    let mut got = 0;
    let mut buf = [0u8; 64];
    while start.elapsed() < Duration::from_millis(1100) {
        got += s.read(&mut buf).unwrap();
    }
    assert!((3..=8).contains(&got), "{got} bytes in about a second");
}

#[test]
fn garbage_is_not_http() {
    let server = hostile::start(Hostile::Garbage).unwrap();
    let mut s = send(server.addr());
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert!(all.len() >= 1024);
    assert!(!all.starts_with(b"HTTP/"));
}

#[test]
fn reset_resets() {
    let server = hostile::start(Hostile::Reset).unwrap();
    for _ in 0..3 {
        let mut s = send(server.addr());
        let mut buf = [0u8; 64];
        let got = s.read(&mut buf);
        assert!(
            matches!(&got, Err(e) if e.kind() == ErrorKind::ConnectionReset),
            "{got:?}"
        );
    }
    let addr = server.addr();
    server.stop();
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}
