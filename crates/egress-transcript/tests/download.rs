//! `Client::download`: bodies stream into the sink, beyond the record cap,
//! only when the sink accepts the response, and a failing sink ends the
//! exchange with the reason recorded.

use egress_model::{BodyEnd, Sha256Digest, Url};
use egress_transcript::{BodySink, Client, Limits, Request};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

fn serve_once(f: impl FnOnce(TcpStream, String) + Send + 'static) -> Url {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let n = s.read(&mut buf).unwrap_or(0);
            f(s, String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    Url::parse(&format!("http://127.0.0.1:{port}/")).expect("url")
}

#[derive(Default)]
struct Collect {
    status: Option<u16>,
    accept_only: Option<u16>,
    fail_after: Option<usize>,
    body: Vec<u8>,
}

impl BodySink for Collect {
    fn begin(&mut self, status: u16, _headers: &[(String, String)]) -> io::Result<bool> {
        self.status = Some(status);
        Ok(self.accept_only.is_none_or(|s| s == status))
    }
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if self
            .fail_after
            .is_some_and(|n| self.body.len() + data.len() > n)
        {
            return Err(io::Error::other("disk full"));
        }
        self.body.extend_from_slice(data);
        Ok(())
    }
}

fn limits() -> Limits {
    Limits {
        record_bytes: 16,
        deadline: Duration::from_secs(5),
        ..Limits::download()
    }
}

#[test]
fn body_streams_past_the_record_cap_and_headers_go_out() {
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let expected = body.clone();
    let url = serve_once(move |mut s, req| {
        assert!(req.contains("\r\nRange: bytes=10-\r\n"), "{req}");
        let _ = s.write_all(
            format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        let _ = s.write_all(&body);
    });
    let client = Client::new(url, limits(), None).expect("client");
    let mut sink = Collect::default();
    let ex = client.download(
        "file",
        &Request::get("/f").header("Range", "bytes=10-"),
        &mut sink,
    );
    let r = ex.response.expect("response");
    assert_eq!(
        (r.status, r.body_end, ex.error),
        (Some(206), BodyEnd::Complete, None)
    );
    assert_eq!(sink.status, Some(206));
    assert_eq!(sink.body, expected);
    assert_eq!(r.body_prefix.as_bytes(), &expected[..16]);
    assert_eq!(r.body_sha256, Sha256Digest::of(&expected));
}

#[test]
fn a_refused_response_stays_in_the_record_only() {
    let url = serve_once(|mut s, _| {
        let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
    });
    let client = Client::new(url, limits(), None).expect("client");
    let mut sink = Collect {
        accept_only: Some(200),
        ..Default::default()
    };
    let ex = client.download("file", &Request::get("/f"), &mut sink);
    assert_eq!(sink.status, Some(404));
    assert!(sink.body.is_empty());
    assert_eq!(
        ex.response.and_then(|r| r.full_body().map(<[u8]>::to_vec)),
        Some(b"not found".to_vec())
    );
}

#[test]
fn a_failing_sink_ends_the_exchange() {
    let url = serve_once(|mut s, _| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        for _ in 0..100 {
            let _ = s.write_all(b"400\r\n");
            let _ = s.write_all(&[b'x'; 1024]);
            let _ = s.write_all(b"\r\n");
        }
        let _ = s.write_all(b"0\r\n\r\n");
    });
    let client = Client::new(url, limits(), None).expect("client");
    let mut sink = Collect {
        fail_after: Some(5000),
        ..Default::default()
    };
    let ex = client.download("file", &Request::get("/f"), &mut sink);
    assert_eq!(ex.response.map(|r| r.body_end), Some(BodyEnd::Broken));
    assert_eq!(
        ex.error.as_deref(),
        Some("cannot store the body: disk full")
    );
    assert!(sink.body.len() <= 5000);
}
