//! The codec driven as bytes arrive: requests sent a few bytes at a time
//! get exactly the answers they get in one piece, and a blocking handler
//! does not stall other connections.

use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Set when the blocked handler may return.
static RELEASED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

fn echo(req: Request) -> Reply {
    if req.path() == "/block" {
        // A handler that blocks (allowed: it runs on the blocking pool)
        // until the test releases it, at most 30 s.
        let (lock, cvar) = &RELEASED;
        let released = lock.lock().unwrap();
        let _ = cvar
            .wait_timeout_while(released, Duration::from_secs(30), |r| !*r)
            .unwrap();
    }
    Response::new(200)
        .with_header("X-Target", req.target.clone())
        .with_body(req.body)
        .into()
}

fn serve() -> ServerHandle {
    Server::bind("127.0.0.1:0", echo, Limits::default()).unwrap()
}

/// Sends `raw` in pieces of `step` bytes, each written separately, and reads
/// until the server closes.
fn dripped(h: &ServerHandle, raw: &[u8], step: usize) -> String {
    let mut s = TcpStream::connect(h.addr()).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for piece in raw.chunks(step) {
        if s.write_all(piece).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn dripped_requests_are_read_exactly() {
    let h = serve();
    let chunked = b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n6\r\n world\r\n0\r\nT: v\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let length = b"\r\n\r\nPOST /l HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcdeGET /after HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    for step in [1, 2, 3, 7, 64] {
        let out = dripped(&h, chunked, step);
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{step}: {out}");
        assert!(out.contains("\r\n\r\nhello world"), "{step}: {out}");
        assert!(out.contains("X-Target: /after\r\n"), "{step}: {out}");
        let out = dripped(&h, length, step);
        assert!(out.contains("\r\n\r\nabcde"), "{step}: {out}");
        assert!(out.contains("X-Target: /after\r\n"), "{step}: {out}");
    }
}

#[test]
fn dripped_refusals_are_the_same_refusals() {
    let h = serve();
    for (raw, status) in [
        (&b"GET / HTTP/1.1\nHost: a\r\n\r\n"[..], "400"),
        (b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999\r\n\r\n", "413"),
        (b"GET / HTTP/9.9\r\nHost: a\r\n\r\n", "505"),
    ] {
        for step in [1, 5] {
            let out = dripped(&h, raw, step);
            assert!(
                out.starts_with(&format!("HTTP/1.1 {status} ")) && out.contains("Connection: close"),
                "{:?} in steps of {step}: {out}",
                String::from_utf8_lossy(raw)
            );
        }
    }
}

#[test]
fn a_blocking_handler_does_not_stall_other_connections() {
    let h = serve();
    let blocked = {
        let addr = h.addr();
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /block HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            out
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Many requests while one handler blocks; each answered (not timed:
    // a stall would leave them waiting for the blocked handler).
    for i in 0..20 {
        let out = dripped(
            &h,
            format!("GET /n{i} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").as_bytes(),
            1024,
        );
        assert!(out.contains(&format!("X-Target: /n{i}\r\n")), "{out}");
    }
    assert!(
        !blocked.is_finished(),
        "the blocking handler answered before it was released"
    );
    *RELEASED.0.lock().unwrap() = true;
    RELEASED.1.notify_all();
    assert!(blocked.join().unwrap().starts_with("HTTP/1.1 200 "));
}
