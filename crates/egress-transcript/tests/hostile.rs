//! The client against servers that misbehave on purpose: every case must end
//! within its bound, with the misbehaviour recorded, and never hang or panic.

use egress_model::{BodyEnd, Url};
use egress_transcript::{Client, Limits};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

fn serve_once(f: impl FnOnce(TcpStream) + Send + 'static) -> Url {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut buf);
            f(s);
        }
    });
    Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap()
}

fn tight() -> Limits {
    Limits {
        connect_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(300),
        deadline: Duration::from_millis(800),
        max_head_bytes: 8 * 1024,
        max_body_bytes: 1024 * 1024,
        record_bytes: 1024,
    }
}

#[test]
fn complete_response_is_recorded() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello");
    });
    let ex = Client::new(url, tight(), None)
        .unwrap()
        .get("t", "/x", Some("text/html"));
    let r = ex.response.unwrap();
    assert_eq!(r.status, Some(200));
    assert_eq!(r.full_body(), Some(&b"hello"[..]));
    assert_eq!(r.header("x-a"), Some("b"));
    assert_eq!(ex.error, None);
    assert!(ex
        .request
        .lossy()
        .starts_with("GET /x HTTP/1.1\r\nHost: 127.0.0.1:"));
}

#[test]
fn chunked_body_is_decoded() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n");
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    assert_eq!(ex.response.unwrap().full_body(), Some(&b"abcde"[..]));
}

#[test]
fn garbage_instead_of_http_is_recorded() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"\x00\xffSSH-2.0-nonsense\r\n\r\n");
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    let r = ex.response.expect("garbage is kept as evidence");
    assert_eq!(r.status, None);
    assert!(ex.error.unwrap().contains("malformed"));
}

#[test]
fn endless_body_stops_at_the_cap() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
        let chunk = vec![b'x'; 64 * 1024];
        while s.write_all(&chunk).is_ok() {}
    });
    let start = Instant::now();
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    let r = ex.response.unwrap();
    assert_eq!(r.body_end, BodyEnd::CapReached);
    assert_eq!(r.body_len, 1024 * 1024);
    assert_eq!(r.body_prefix.0.len(), 1024);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn oversized_declared_length_does_not_allocate_and_times_out() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\nabc");
        thread::sleep(Duration::from_secs(2));
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    let r = ex.response.unwrap();
    assert_eq!(r.body_len, 3);
    assert_eq!(r.body_end, BodyEnd::Timeout);
}

#[test]
fn slow_drip_is_cut_by_the_deadline() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
        for _ in 0..1000 {
            if s.write_all(b"x").is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    let start = Instant::now();
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    let elapsed = start.elapsed();
    assert_eq!(ex.response.unwrap().body_end, BodyEnd::Timeout);
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
}

#[test]
fn slow_drip_head_is_cut_by_the_deadline() {
    let url = serve_once(|mut s| {
        for _ in 0..1000 {
            if s.write_all(b"X").is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    let start = Instant::now();
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    assert!(ex.error.is_some());
    assert!(start.elapsed() < Duration::from_millis(1500));
}

#[test]
fn oversized_head_is_refused() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
        let line = format!("X-Big: {}\r\n", "a".repeat(1000));
        for _ in 0..100 {
            if s.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    assert!(ex.error.unwrap().contains("head over"));
}

#[test]
fn reset_is_recorded() {
    // Unread request bytes make the kernel answer the close with RST.
    let url = serve_once(|s| {
        let _ = s.shutdown(Shutdown::Both);
        drop(s);
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    assert!(ex.response.is_none());
    assert!(ex.error.is_some());
}

#[test]
fn refused_connection_is_recorded() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    assert!(ex.error.unwrap().contains("refused"));
}

#[test]
fn redirects_are_not_followed() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(
            b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.9:1/\r\nContent-Length: 0\r\n\r\n",
        );
    });
    let ex = Client::new(url, tight(), None).unwrap().get("t", "/", None);
    let r = ex.response.unwrap();
    assert_eq!(r.status, Some(302));
    assert_eq!(r.header("location"), Some("http://127.0.0.9:1/"));
}

#[test]
fn raw_bytes_are_sent_verbatim() {
    let (tx, rx) = std::sync::mpsc::channel();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 256];
        let n = s.read(&mut buf).unwrap();
        tx.send(buf[..n].to_vec()).unwrap();
        let _ = s.write_all(b"HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\n");
    });
    let raw = b"GET /simple/..%2f..%c0%ae/ HTTP/1.1\r\nHost: x\r\n\r\n";
    let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    let ex = Client::new(url, tight(), None).unwrap().send_raw("t", raw);
    assert_eq!(rx.recv().unwrap(), raw.to_vec());
    assert_eq!(ex.request.0, raw.to_vec());
    assert_eq!(ex.status(), Some(400));
}
