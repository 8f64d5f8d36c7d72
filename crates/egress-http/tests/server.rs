//! End-to-end tests: a real server on loopback, std `TcpStream` as the client,
//! raw bytes on the wire.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use egress_http::{Body, Limits, Reply, Request, Response, Server, ServerHandle};

/// Echoes the request back: `METHOD TARGET VERSION|BODY`, with a few special
/// paths for the failure-mode tests.
fn echo(req: Request) -> Reply {
    match req.path() {
        "/panic" => panic!("handler panic (expected by the test)"),
        "/inject" => Response::text(200, "x")
            .with_header("X-Evil", "a\r\nSet-Cookie: pwned=1")
            .into(),
        "/status1xx" => Response::new(101).into(),
        "/head-length" => Response::new(200)
            .with_header("Content-Length", "12345")
            .into(),
        "/shared" => Response::new(200)
            .with_body(Body::Shared(Arc::from(&b"shared bytes"[..])))
            .into(),
        "/close" => Response::text(200, "bye")
            .with_header("Connection", "close")
            .into(),
        _ => {
            let mut body = format!("{} {} {}|", req.method, req.target, req.version).into_bytes();
            body.extend_from_slice(&req.body);
            Response::new(200).with_body(body).into()
        }
    }
}

fn serve(limits: Limits) -> ServerHandle {
    Server::bind("127.0.0.1:0", echo, limits).expect("bind")
}

fn connect(h: &ServerHandle) -> BufReader<TcpStream> {
    let s = TcpStream::connect(h.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    BufReader::new(s)
}

fn send(c: &mut BufReader<TcpStream>, raw: &[u8]) {
    c.get_mut().write_all(raw).expect("write");
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response; the body is read by Content-Length unless `no_body`.
fn read_response(c: &mut BufReader<TcpStream>, no_body: bool) -> Resp {
    let mut line = String::new();
    c.read_line(&mut line).expect("status line");
    assert!(
        line.starts_with("HTTP/1.1 ") && line.ends_with("\r\n"),
        "{line:?}"
    );
    let status = line[9..12].parse().expect("status code");
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        c.read_line(&mut line).expect("header line");
        let line = line.strip_suffix("\r\n").expect("CRLF");
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(": ").expect("field");
        headers.push((n.to_string(), v.to_string()));
    }
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
    };
    assert!(resp.header("transfer-encoding").is_none());
    if !no_body {
        let len: usize = resp
            .header("content-length")
            .map(|v| v.parse().expect("length"))
            .unwrap_or(0);
        resp.body = vec![0; len];
        c.read_exact(&mut resp.body).expect("body");
    }
    resp
}

/// The server closed the connection: EOF (or a reset) with nothing more sent.
fn assert_closed(c: &mut BufReader<TcpStream>) {
    let mut rest = Vec::new();
    match c.read_to_end(&mut rest) {
        Ok(_) => assert!(
            rest.is_empty(),
            "unexpected bytes {:?}",
            String::from_utf8_lossy(&rest)
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
    }
}

fn get(h: &ServerHandle, target: &str) -> Resp {
    let mut c = connect(h);
    send(
        &mut c,
        format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
    );
    read_response(&mut c, false)
}

#[test]
fn get_head_keep_alive() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(
        &mut c,
        b"GET /simple/pip/?a=%2F HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = read_response(&mut c, false);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"GET /simple/pip/?a=%2F HTTP/1.1|");
    assert_eq!(r.header("connection"), None);

    // HEAD: the length GET would have, no body. The next response on the same
    // connection parsing cleanly proves no body bytes were sent.
    send(
        &mut c,
        b"HEAD /simple/pip/?a=%2F HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let r = read_response(&mut c, true);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("33"));

    send(&mut c, b"HEAD /head-length HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut c, true);
    assert_eq!(r.header("content-length"), Some("12345"));

    send(&mut c, b"GET /shared HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut c, false).body, b"shared bytes");

    send(&mut c, b"GET /close HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut c, false);
    assert_eq!(
        (r.body.as_slice(), r.header("connection")),
        (&b"bye"[..], Some("close"))
    );
    assert_closed(&mut c);
}

#[test]
fn pipelined_requests_answered_in_order() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(
        &mut c,
        b"POST /one HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /two HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /three HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n",
    );
    assert_eq!(read_response(&mut c, false).body, b"POST /one HTTP/1.1|abc");
    assert_eq!(read_response(&mut c, false).body, b"GET /two HTTP/1.1|");
    let r = read_response(&mut c, false);
    assert_eq!(r.body, b"GET /three HTTP/1.1|");
    assert_eq!(r.header("connection"), Some("close"));
    assert_closed(&mut c);
}

#[test]
fn http10_connection_management() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(&mut c, b"GET /a HTTP/1.0\r\n\r\n");
    let r = read_response(&mut c, false);
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    assert_closed(&mut c);

    let mut c = connect(&h);
    send(&mut c, b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = read_response(&mut c, false);
    assert_eq!(r.header("connection"), Some("keep-alive"));
    send(&mut c, b"GET /b HTTP/1.0\r\n\r\n");
    assert_eq!(read_response(&mut c, false).body, b"GET /b HTTP/1.0|");
    assert_closed(&mut c);
}

#[test]
fn chunked_request_body() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(
        &mut c,
        b"PUT /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Sum: 1\r\n\r\n",
    );
    let r = read_response(&mut c, false);
    assert_eq!(r.body, b"PUT /up HTTP/1.1|Wikipedia in\r\n\r\nchunks.");
    // Still in sync for the next request.
    send(&mut c, b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut c, false).body, b"GET /next HTTP/1.1|");
}

#[test]
fn expect_100_continue() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(
        &mut c,
        b"POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n",
    );
    let interim = read_response(&mut c, true);
    assert_eq!((interim.status, interim.headers.len()), (100, 0));
    send(&mut c, b"data");
    assert_eq!(read_response(&mut c, false).body, b"POST /e HTTP/1.1|data");

    // Too large: refused before the client sends the body, no 100.
    let h = serve(Limits {
        max_body_bytes: 10,
        ..Limits::default()
    });
    let mut c = connect(&h);
    send(
        &mut c,
        b"POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n",
    );
    assert_eq!(read_response(&mut c, false).status, 413);
    assert_closed(&mut c);
}

#[test]
fn targets_reach_the_handler_raw() {
    let h = serve(Limits::default());
    for (method, target) in [
        ("GET", "http://upstream.example/simple/?url=http://x"),
        ("CONNECT", "pypi.org:443"),
        ("OPTIONS", "*"),
        ("GET", "/%2e%2e/%252e%252e/..%2f..%5c/etc/passwd"),
        ("GET", "//evil.example/x"),
        ("PROPFIND", "/simple/"),
    ] {
        let mut c = connect(&h);
        send(
            &mut c,
            format!("{method} {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
        );
        let r = read_response(&mut c, false);
        assert_eq!(r.body, format!("{method} {target} HTTP/1.1|").as_bytes());
    }
}

/// Every malformed request gets its status, `Connection: close`, and the
/// connection is closed; the server keeps serving afterwards.
#[test]
fn malformed_requests() {
    let h = serve(Limits {
        max_body_bytes: 100,
        ..Limits::default()
    });
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_target = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(70_000));
    let cases: Vec<(&[u8], u16)> = vec![
        (b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"G@T / HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /a\x01 HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /\xff HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTP/1.7\r\nHost: t\r\n\r\n", 505),
        (b"GET / FTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"GET /\r\n\r\n", 400),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX: 1\r\n folded\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX Y: 1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nX: a\x00b\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length:\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n", 400),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcde\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", 413),
        (b"POST / HTTP/1.1\r\nHost: t\r\nExpect: nothing\r\n\r\n", 417),
        (big_header.as_bytes(), 431),
        (big_target.as_bytes(), 414),
        (b"GET /inject HTTP/1.1\r\nHost: t\r\n\r\n", 500),
        (b"GET /status1xx HTTP/1.1\r\nHost: t\r\n\r\n", 500),
    ];
    let mut partial_chunked =
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n".to_vec();
    partial_chunked.extend_from_slice(&[b'a'; 100]);
    partial_chunked.extend_from_slice(b"\r\n1\r\n");
    let mut cases = cases;
    cases.push((&partial_chunked, 413));
    for (raw, want) in cases {
        let mut c = connect(&h);
        send(&mut c, raw);
        let r = read_response(&mut c, false);
        let shown = String::from_utf8_lossy(&raw[..raw.len().min(120)]).into_owned();
        assert_eq!(r.status, want, "{shown:?}");
        assert_eq!(r.header("connection"), Some("close"), "{shown:?}");
        assert_eq!(r.header("set-cookie"), None);
        assert_closed(&mut c);
    }
    assert_eq!(get(&h, "/still-alive").status, 200);
}

#[test]
fn garbage_does_not_hurt() {
    let h = serve(Limits {
        read_timeout: Duration::from_millis(500),
        ..Limits::default()
    });
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..40 {
        let mut raw = Vec::new();
        for _ in 0..(i * 37 % 500) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            raw.push(state as u8);
        }
        raw.extend_from_slice(b"\r\n\r\n");
        let mut c = connect(&h);
        // The server may close before reading everything; that is fine.
        let _ = c.get_mut().write_all(&raw);
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink);
    }
    assert_eq!(get(&h, "/ok").status, 200);
}

#[test]
fn handler_panic_is_500_and_server_survives() {
    let h = serve(Limits::default());
    let mut c = connect(&h);
    send(&mut c, b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut c, false);
    assert_eq!((r.status, r.header("connection")), (500, Some("close")));
    assert_closed(&mut c);
    for _ in 0..3 {
        assert_eq!(get(&h, "/after").body, b"GET /after HTTP/1.1|");
    }
}

/// Reads until the server closes or `limit` passes; returns how long it took.
fn time_until_closed(
    c: &mut BufReader<TcpStream>,
    drip: Option<&[u8]>,
    limit: Duration,
) -> Duration {
    let start = Instant::now();
    c.get_ref()
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let mut drip = drip.unwrap_or(&[]).iter();
    let mut buf = [0u8; 1024];
    while start.elapsed() < limit {
        if let Some(b) = drip.next() {
            if c.get_mut().write_all(&[*b]).is_err() {
                return start.elapsed();
            }
        }
        match c.get_mut().read(&mut buf) {
            Ok(0) => return start.elapsed(),
            Ok(n) => panic!("unexpected bytes {:?}", String::from_utf8_lossy(&buf[..n])),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return start.elapsed(),
        }
    }
    panic!("connection still open after {limit:?}");
}

#[test]
fn slowloris_and_idle_connections_time_out() {
    let timeout = Duration::from_millis(300);
    let h = serve(Limits {
        read_timeout: timeout,
        ..Limits::default()
    });
    // A client dripping a header one byte every 50 ms never trips a per-read
    // timeout; the per-request deadline closes it.
    let mut c = connect(&h);
    let drip = b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let t = time_until_closed(&mut c, Some(drip), Duration::from_secs(3));
    assert!(t >= timeout / 2 && t < Duration::from_secs(2), "{t:?}");

    // Slow body.
    let mut c = connect(&h);
    send(
        &mut c,
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n",
    );
    let t = time_until_closed(&mut c, Some(&[b'x'; 100]), Duration::from_secs(3));
    assert!(t < Duration::from_secs(2), "{t:?}");

    // Idle keep-alive connection.
    let mut c = connect(&h);
    send(&mut c, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut c, false).status, 200);
    let t = time_until_closed(&mut c, None, Duration::from_secs(3));
    assert!(t < Duration::from_secs(2), "{t:?}");

    // A connection that never sends a byte (it waits in the lobby, not in
    // a task) is closed by the same idle deadline, and no longer counted.
    let mut c = connect(&h);
    let t = time_until_closed(&mut c, None, Duration::from_secs(3));
    assert!(t < Duration::from_secs(2), "{t:?}");
    let start = Instant::now();
    while h.connections() > 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(h.connections(), 0);

    assert_eq!(get(&h, "/").status, 200);
}

#[test]
fn takeover_hands_over_the_stream() {
    let h = Server::bind_loopback(|req: Request| {
        if req.method != "CONNECT" {
            return Response::new(404).into();
        }
        Reply::Takeover(
            Response::new(200).with_header("X-Tunnel", req.target.clone()),
            Box::new(|mut s: TcpStream| {
                let mut buf = [0u8; 4];
                if s.read_exact(&mut buf).is_ok() {
                    let _ = s.write_all(&buf);
                    let _ = s.write_all(b"!");
                }
            }),
        )
    })
    .expect("bind");
    let mut c = connect(&h);
    send(
        &mut c,
        b"CONNECT files.example:443 HTTP/1.1\r\nHost: files.example:443\r\n\r\n",
    );
    let r = read_response(&mut c, true);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers,
        vec![("X-Tunnel".into(), "files.example:443".into())]
    );
    send(&mut c, b"ping");
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).expect("echo");
    assert_eq!(rest, b"ping!");
}

#[test]
fn raw_hands_over_without_writing() {
    let h = Server::bind_loopback(|_req: Request| {
        Reply::Raw(Box::new(|mut s: TcpStream| {
            let _ = s.write_all(b"\x00garbage\xff not http");
        }))
    })
    .expect("bind");
    let mut c = connect(&h);
    send(&mut c, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut all = Vec::new();
    c.read_to_end(&mut all).expect("read");
    assert_eq!(all, b"\x00garbage\xff not http");
}

#[test]
fn stop_is_prompt_with_idle_keep_alive() {
    let h = serve(Limits::default()); // 10 s read timeout
    let addr = h.addr();
    assert_eq!(h.base_url(), format!("http://127.0.0.1:{}", addr.port()));
    let mut c = connect(&h);
    send(&mut c, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut c, false).status, 200);
    // A second connection that never sent a byte.
    let mut silent = connect(&h);

    let start = Instant::now();
    h.stop();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // Both connections were shut down rather than left to time out.
    let t = time_until_closed(&mut c, None, Duration::from_secs(2));
    assert!(t < Duration::from_secs(1));
    let t = time_until_closed(&mut silent, None, Duration::from_secs(2));
    assert!(t < Duration::from_secs(1));
    assert!(TcpStream::connect(addr).is_err(), "listener closed");
}

#[test]
fn drop_stops_too() {
    let addr = {
        let h = serve(Limits::default());
        let _open = connect(&h);
        h.addr()
    };
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn over_the_cap_gets_503() {
    let h = serve(Limits {
        max_connections: 2,
        ..Limits::default()
    });
    let mut a = connect(&h);
    let mut b = connect(&h);
    for c in [&mut a, &mut b] {
        send(c, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(read_response(c, false).status, 200);
    }
    assert_eq!(h.connections(), 2);

    let mut over = connect(&h);
    send(&mut over, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut over, false);
    assert_eq!((r.status, r.header("connection")), (503, Some("close")));
    assert_closed(&mut over);

    // Freeing a slot admits new connections again.
    drop(a);
    let start = Instant::now();
    while h.connections() > 1 {
        assert!(start.elapsed() < Duration::from_secs(2), "slot never freed");
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(get(&h, "/again").status, 200);
    send(&mut b, b"GET /b HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut b, false).status, 200);
}

#[test]
fn request_accessors() {
    let h = Server::bind_loopback(|req: Request| {
        let text = format!(
            "{}|{:?}|{:?}|{:?}|{}",
            req.path(),
            req.query(),
            req.header("x-MULTI"),
            req.headers_named("x-multi").collect::<Vec<_>>(),
            req.peer.ip()
        );
        Response::text(200, &text).into()
    })
    .expect("bind");
    let mut c = connect(&h);
    send(
        &mut c,
        b"GET /a%3Fb?c=d?e HTTP/1.1\r\nHost: t\r\nX-Multi: 1\r\nx-multi:  2 \r\n\r\n",
    );
    let r = read_response(&mut c, false);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        "/a%3Fb|Some(\"c=d?e\")|Some(\"1\")|[\"1\", \"2\"]|127.0.0.1"
    );
}

#[test]
fn zero_read_timeout_is_rejected() {
    let limits = Limits {
        read_timeout: Duration::ZERO,
        ..Limits::default()
    };
    assert!(Server::bind("127.0.0.1:0", echo, limits).is_err());
}

#[test]
fn handle_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<ServerHandle>();
    send::<Reply>();
}

// ------------------------------------------------------------ file bodies

/// Serves one file as `Body::File`; `/short` announces one byte more than
/// the file has; `vouch` decides what `vouch_for_file` answers.
struct FileServer {
    path: std::path::PathBuf,
    vouch: bool,
    vouched: std::sync::atomic::AtomicUsize,
}

impl egress_http::Handler for FileServer {
    fn handle(&self, req: Request) -> Reply {
        let Ok(file) = std::fs::File::open(&self.path) else {
            return Response::new(500).into();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let len = if req.path() == "/short" { len + 1 } else { len };
        Response::new(200)
            .with_body(Body::File(Arc::new(file), len))
            .into()
    }

    fn vouch_for_file(&self, response: &Response, file: &std::fs::File) -> bool {
        assert!(matches!(response.body, Body::File(..)));
        assert!(file.metadata().is_ok());
        self.vouched
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.vouch
    }
}

fn file_server(tag: &str, bytes: &[u8], vouch: bool) -> (ServerHandle, Arc<FileServer>) {
    let path = std::env::temp_dir().join(format!("egress-http-file-{tag}-{}", std::process::id()));
    std::fs::write(&path, bytes).expect("write temp file");
    let handler = Arc::new(FileServer {
        path,
        vouch,
        vouched: std::sync::atomic::AtomicUsize::new(0),
    });
    let shared = Arc::clone(&handler);
    // The server needs an owned handler; delegate to the shared one.
    struct Delegate(Arc<FileServer>);
    impl egress_http::Handler for Delegate {
        fn handle(&self, req: Request) -> Reply {
            self.0.handle(req)
        }
        fn vouch_for_file(&self, response: &Response, file: &std::fs::File) -> bool {
            self.0.vouch_for_file(response, file)
        }
    }
    let h = Server::bind("127.0.0.1:0", Delegate(shared), Limits::default()).expect("bind");
    (h, handler)
}

#[test]
fn file_bodies_are_sent_whole_with_keep_alive() {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (h, handler) = file_server("whole", &bytes, true);
    let mut c = connect(&h);
    for _ in 0..2 {
        send(&mut c, b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = read_response(&mut c, false);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-length"), Some("300000"));
        assert!(r.body == bytes, "file body differs");
    }
    // HEAD: the file's length, no bytes, no vouching needed.
    send(&mut c, b"HEAD /f HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = read_response(&mut c, true);
    assert_eq!(r.header("content-length"), Some("300000"));
    send(
        &mut c,
        b"GET /f HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert!(read_response(&mut c, false).body == bytes);
    assert_closed(&mut c);
    assert_eq!(handler.vouched.load(std::sync::atomic::Ordering::SeqCst), 3);
    let _ = std::fs::remove_file(&handler.path);
}

/// Reads one response head and then everything until the server closes.
fn head_and_rest(c: &mut BufReader<TcpStream>) -> (Resp, Vec<u8>) {
    let r = read_response(c, true);
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    (r, rest)
}

#[test]
fn a_refused_file_body_is_visibly_truncated() {
    let (h, handler) = file_server("refused", b"0123456789", false);
    let mut c = connect(&h);
    send(&mut c, b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n");
    let (r, rest) = head_and_rest(&mut c);
    assert_eq!(r.header("content-length"), Some("10"));
    // All but the last byte, then the connection ends.
    assert_eq!(rest, b"012345678");
    assert_eq!(handler.vouched.load(std::sync::atomic::Ordering::SeqCst), 1);
    let _ = std::fs::remove_file(&handler.path);
}

#[test]
fn a_file_shorter_than_announced_is_visibly_truncated() {
    let (h, handler) = file_server("short", b"0123456789", true);
    let mut c = connect(&h);
    send(&mut c, b"GET /short HTTP/1.1\r\nHost: t\r\n\r\n");
    let (r, rest) = head_and_rest(&mut c);
    assert_eq!(r.header("content-length"), Some("11"));
    // Every byte the file has, one short of the length, then the end.
    assert_eq!(rest, b"0123456789");
    let _ = std::fs::remove_file(&handler.path);
}

/// Opens `workers` connections that each send `request`, and waits (5 s at
/// most) until `inside` says a handler holds each of them.
fn hold_workers(
    h: &ServerHandle,
    request: &[u8],
    inside: &std::sync::atomic::AtomicUsize,
    workers: usize,
) -> Vec<BufReader<TcpStream>> {
    let held = (0..workers)
        .map(|_| {
            let mut c = connect(h);
            send(&mut c, request);
            c
        })
        .collect();
    let start = Instant::now();
    while inside.load(std::sync::atomic::Ordering::SeqCst) < workers {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the holding requests never reached the handlers"
        );
        thread::sleep(Duration::from_millis(5));
    }
    held
}

/// Accepting is not a task of the serving runtime: with every worker stuck
/// in a handler (as when thousands of held connections reach their deadline
/// at once and the workers have thousands of tasks to run), a new
/// connection is still accepted and counted at once, and served as soon as
/// a worker is free.
#[test]
fn accepting_does_not_wait_for_busy_workers() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    let workers = thread::available_parallelism().map_or(2, |n| n.get());
    let inside = Arc::new(AtomicUsize::new(0));
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let handler = {
        let inside = Arc::clone(&inside);
        move |req: Request| -> Reply {
            if req.path() == "/block" {
                inside.fetch_add(1, Ordering::SeqCst);
                // Holds this worker until the test lets go (bounded).
                let rx = release_rx.lock().expect("lock");
                let _ = rx.recv_timeout(Duration::from_secs(10));
            }
            Response::text(200, "ok").into()
        }
    };
    let h = Server::bind_with(
        "127.0.0.1:0",
        handler,
        egress_http::Config {
            handler_never_blocks: true,
            ..egress_http::Config::default()
        },
    )
    .expect("bind");
    // One blocking request per worker. The first holds the channel's lock;
    // the others wait for it: every worker is stuck either way.
    let mut blocked = hold_workers(
        &h,
        b"GET /block HTTP/1.1\r\nHost: t\r\n\r\n",
        &inside,
        workers,
    );
    thread::sleep(Duration::from_millis(100));

    let mut late = connect(&h);
    send(&mut late, b"GET /late HTTP/1.1\r\nHost: t\r\n\r\n");
    let start = Instant::now();
    while h.connections() < workers + 1 {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "a new connection was not accepted while the workers were busy"
        );
        thread::sleep(Duration::from_millis(5));
    }

    for _ in 0..workers {
        release_tx.send(()).expect("release");
    }
    assert_eq!(read_response(&mut late, false).status, 200);
    for c in &mut blocked {
        assert_eq!(read_response(c, false).status, 200);
    }
}

/// Answers `/page` at once from memory and `/other` on the blocking pool.
/// `POST /hold` holds the worker its `handle_now` runs on until released,
/// which a real handler must never do: here it stands for workers busy
/// with thousands of other connections.
struct Paged {
    holding: Arc<std::sync::atomic::AtomicUsize>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl egress_http::Handler for Paged {
    fn handle(&self, req: Request) -> Reply {
        Response::text(200, &format!("pool {}", req.path())).into()
    }

    fn handle_now(&self, req: &Request) -> Option<Reply> {
        match req.path() {
            "/page" => Some(Response::text(200, "page from memory").into()),
            // Up to one write's worth: answered by the fast lane.
            "/mid" => Some(Response::new(200).with_body(vec![b'm'; 200 * 1024]).into()),
            // More than one write: sent by the task.
            "/big" => Some(Response::new(200).with_body(vec![b'b'; 1024 * 1024]).into()),
            "/hold" => {
                self.holding
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let rx = self.release.lock().expect("lock");
                let _ = rx.recv_timeout(Duration::from_secs(10));
                Some(Response::text(200, "held").into())
            }
            _ => None,
        }
    }
}

fn paged() -> (
    ServerHandle,
    Arc<std::sync::atomic::AtomicUsize>,
    std::sync::mpsc::Sender<()>,
) {
    let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let handler = Paged {
        holding: Arc::clone(&holding),
        release: std::sync::Mutex::new(rx),
    };
    let h =
        Server::bind_with("127.0.0.1:0", handler, egress_http::Config::default()).expect("bind");
    (h, holding, tx)
}

/// The fast lane: a new connection that asks for a page the handler has in
/// memory is answered by the accept thread while every worker is busy. It
/// fails where pages wait for a worker.
#[test]
fn a_page_asked_at_once_is_answered_while_every_worker_is_busy() {
    use std::sync::atomic::Ordering;
    let workers = thread::available_parallelism().map_or(2, |n| n.get());
    let (h, holding, release) = paged();
    // A request with a body never takes the fast lane: each of these is
    // read and answered on a worker, and holds it.
    let mut held = hold_workers(
        &h,
        b"POST /hold HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx",
        &holding,
        workers,
    );

    let mut page = connect(&h);
    send(&mut page, b"GET /page HTTP/1.1\r\nHost: t\r\n\r\n");
    let resp = read_response(&mut page, false);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"page from memory");
    // Every worker is still held.
    assert_eq!(holding.load(Ordering::SeqCst), workers);

    for _ in 0..workers {
        release.send(()).expect("release");
    }
    for c in &mut held {
        assert_eq!(read_response(c, false).body, b"held");
    }
    // The connection the fast lane answered is served on by a worker.
    send(&mut page, b"GET /other HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut page, false).body, b"pool /other");
}

/// A first request the fast lane answers is answered as the usual path
/// would: HEAD keeps the length and sends no body, large answers arrive
/// whole, HTTP/1.0 and
/// `Connection: close` end the connection after the answer, and a first
/// request that is not one whole bodiless request (pipelined, or a head
/// the parser refuses) is left to the usual path whole.
#[test]
fn the_fast_lane_answers_as_the_usual_path_does() {
    let (h, _, _release) = paged();

    let mut c = connect(&h);
    send(&mut c, b"HEAD /page HTTP/1.1\r\nHost: t\r\n\r\n");
    let resp = read_response(&mut c, true);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-length"), Some("16"));
    send(&mut c, b"GET /page HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_response(&mut c, false).body, b"page from memory");

    let mut c = connect(&h);
    send(&mut c, b"GET /page HTTP/1.0\r\n\r\n");
    let resp = read_response_any_version(&mut c);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("Connection: close\r\n"), "{resp}");
    assert!(resp.ends_with("page from memory"), "{resp}");

    let mut c = connect(&h);
    send(
        &mut c,
        b"GET /page HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    let resp = read_response(&mut c, false);
    assert_eq!(resp.header("connection"), Some("close"));
    assert_closed(&mut c);

    // Large answers arrive whole, on either side of the one-write limit.
    for (target, byte, len) in [("/mid", b'm', 200 * 1024), ("/big", b'b', 1024 * 1024)] {
        let mut c = connect(&h);
        send(
            &mut c,
            format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
        );
        let body = read_response(&mut c, false).body;
        assert_eq!(body.len(), len, "{target}");
        assert!(body.iter().all(|b| *b == byte), "{target}");
        send(&mut c, b"GET /page HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(read_response(&mut c, false).body, b"page from memory");
    }

    // Two requests in one write: both answered, in order.
    let mut c = connect(&h);
    send(
        &mut c,
        b"GET /page HTTP/1.1\r\nHost: t\r\n\r\nGET /other HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(read_response(&mut c, false).body, b"page from memory");
    assert_eq!(read_response(&mut c, false).body, b"pool /other");

    // A head the parser refuses gets the usual refusal.
    let mut c = connect(&h);
    send(
        &mut c,
        b"GET /page HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n",
    );
    assert_eq!(read_response(&mut c, false).status, 400);
}

/// Everything up to EOF, as text.
fn read_response_any_version(c: &mut BufReader<TcpStream>) -> String {
    let mut all = Vec::new();
    let _ = c.read_to_end(&mut all);
    String::from_utf8_lossy(&all).into_owned()
}
