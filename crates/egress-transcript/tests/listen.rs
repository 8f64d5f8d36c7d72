//! `send_raw_listening`: after the first response, everything the server
//! sends on the connection is recorded, and how listening ended (closed,
//! reset, quiet, deadline, cap), within its bounds.

use egress_model::{ListenEnd, Url};
use egress_transcript::{Client, Limits, Listen};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// One connection: reads what the client sent (briefly), then `f`.
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

fn limits() -> Limits {
    Limits {
        connect_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(1000),
        deadline: Duration::from_secs(5),
        ..Limits::default()
    }
}

fn listen() -> Listen {
    Listen {
        quiet: Duration::from_millis(300),
        deadline: Duration::from_secs(2),
        max_bytes: 1024,
    }
}

const SECOND: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";

#[test]
fn a_second_response_packed_behind_the_first_is_kept() {
    let url = serve_once(|mut s| {
        let mut both = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad".to_vec();
        both.extend_from_slice(SECOND);
        let _ = s.write_all(&both);
    });
    let ex = Client::new(url, limits(), None)
        .unwrap()
        .send_raw_listening("t", b"POST / HTTP/1.1\r\n\r\n", &listen());
    assert_eq!(ex.status(), Some(400));
    let after = ex.after.expect("listened");
    assert_eq!(after.bytes.as_bytes(), SECOND);
    assert_eq!(after.end, ListenEnd::Closed);
}

#[test]
fn a_later_response_is_kept_and_an_open_connection_is_quiet() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        thread::sleep(Duration::from_millis(100));
        let _ = s.write_all(SECOND);
        thread::sleep(Duration::from_secs(3));
    });
    let t = Instant::now();
    let ex = Client::new(url, limits(), None)
        .unwrap()
        .send_raw_listening("t", b"GET / HTTP/1.1\r\n\r\n", &listen());
    let after = ex.after.expect("listened");
    assert_eq!(after.bytes.as_bytes(), SECOND);
    assert_eq!(after.end, ListenEnd::Quiet);
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_close_without_an_answer_is_recorded() {
    let url = serve_once(drop);
    let ex = Client::new(url, limits(), None)
        .unwrap()
        .send_raw_listening("t", b"GET / HTTP/1.1\r\n\r\n", &listen());
    assert!(ex.response.is_none());
    let after = ex.after.expect("listened");
    assert!(after.bytes.as_bytes().is_empty());
    assert!(after.end.closed(), "{:?}", after.end);
}

#[test]
fn a_server_that_never_answers_is_bounded_by_the_deadline() {
    let url = serve_once(|_s| thread::sleep(Duration::from_secs(5)));
    let t = Instant::now();
    let quick = Listen {
        deadline: Duration::from_millis(700),
        ..listen()
    };
    let ex = Client::new(url, limits(), None)
        .unwrap()
        .send_raw_listening("t", b"GET / HTTP/1.1\r\n\r\n", &quick);
    assert_eq!(ex.status(), None);
    let after = ex.after.expect("listened");
    assert!(!after.end.closed(), "{:?}", after.end);
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_stream_after_the_answer_stops_at_the_cap() {
    let url = serve_once(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        let junk = vec![b'x'; 4096];
        while s.write_all(&junk).is_ok() {}
    });
    let ex = Client::new(url, limits(), None)
        .unwrap()
        .send_raw_listening("t", b"GET / HTTP/1.1\r\n\r\n", &listen());
    let after = ex.after.expect("listened");
    assert_eq!(after.end, ListenEnd::CapReached);
    assert_eq!(after.bytes.as_bytes().len(), 1024);
}
