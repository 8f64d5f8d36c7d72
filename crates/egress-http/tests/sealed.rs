//! `Body::Sealed`: a sealed memfd sent with `sendfile(2)`, over loopback, to
//! real sockets: whole, repeatedly, concurrently, never from an unsealed
//! file, and cut off like any other write when the client stops reading.

#![cfg(target_os = "linux")]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use egress_http::{Body, Limits, Response, SealedFile, Server, ServerHandle};
use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 253) as u8).collect()
}

/// A memfd holding `bytes`, with `seals` added.
fn memfd(bytes: &[u8], seals: SealFlags) -> Arc<File> {
    let fd = memfd_create(
        "egress-http-test",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .unwrap();
    let mut file = File::from(fd);
    file.write_all(bytes).unwrap();
    fcntl_add_seals(&file, seals).unwrap();
    Arc::new(file)
}

fn all_seals() -> SealFlags {
    SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL
}

fn serve_sealed(bytes: &[u8], limits: Limits) -> ServerHandle {
    let sealed = SealedFile::new(memfd(bytes, all_seals())).unwrap();
    assert_eq!(sealed.len(), bytes.len() as u64);
    Server::bind(
        "127.0.0.1:0",
        move |_req| {
            Response::new(200)
                .with_body(Body::Sealed(sealed.clone()))
                .into()
        },
        limits,
    )
    .unwrap()
}

/// Reads one response head and returns its Content-Length.
fn read_head(c: &mut BufReader<TcpStream>) -> usize {
    let mut line = String::new();
    c.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200 "), "{line:?}");
    let mut len = None;
    loop {
        let mut line = String::new();
        c.read_line(&mut line).unwrap();
        if line == "\r\n" {
            return len.expect("Content-Length");
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = Some(v.trim().parse().unwrap());
        }
    }
}

fn connect(h: &ServerHandle) -> BufReader<TcpStream> {
    let s = TcpStream::connect(h.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    BufReader::new(s)
}

#[test]
fn a_sealed_body_is_sent_whole_again_and_concurrently() {
    let bytes = pattern(3 * 1024 * 1024 + 17);
    let h = serve_sealed(&bytes, Limits::default());
    let mut c = connect(&h);
    for _ in 0..2 {
        c.get_mut()
            .write_all(b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let len = read_head(&mut c);
        assert_eq!(len, bytes.len());
        let mut body = vec![0; len];
        c.read_exact(&mut body).unwrap();
        assert!(body == bytes, "sealed body differs");
    }
    // HEAD: the length, no body; the next response follows at once.
    c.get_mut()
        .write_all(b"HEAD /f HTTP/1.1\r\nHost: t\r\n\r\nGET /f HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(read_head(&mut c), bytes.len());
    assert_eq!(read_head(&mut c), bytes.len());
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(rest == bytes, "body after HEAD differs");

    // One shared file, four clients at once: sends never share a position.
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let mut c = connect(&h);
            std::thread::spawn(move || {
                c.get_mut()
                    .write_all(b"GET /f HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .unwrap();
                let len = read_head(&mut c);
                let mut body = Vec::new();
                c.read_to_end(&mut body).unwrap();
                (len, body)
            })
        })
        .collect();
    for client in clients {
        let (len, body) = client.join().unwrap();
        assert_eq!(len, bytes.len());
        assert!(body == bytes, "concurrent body differs");
    }
}

#[test]
fn only_sealed_files_are_accepted() {
    let bytes = b"not sealed";
    let path = std::env::temp_dir().join(format!("egress-http-unsealed-{}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let plain = Arc::new(File::open(&path).unwrap());
    let e = SealedFile::new(plain).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    let _ = std::fs::remove_file(&path);
    // Sealed against growing only: its bytes could still be rewritten.
    let e = SealedFile::new(memfd(bytes, SealFlags::GROW)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    // Sealed against writes but not truncation: still refused.
    let e = SealedFile::new(memfd(bytes, SealFlags::WRITE | SealFlags::GROW)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    assert!(SealedFile::new(memfd(bytes, all_seals())).is_ok());
}

/// A client that asks for a large sealed body and stops reading: once the
/// socket buffers are full, `sendfile` makes no progress, the write timeout
/// (`read_timeout`) fails it, and the connection is closed.
#[test]
fn a_client_that_stops_reading_is_cut_off() {
    let bytes = pattern(64 * 1024 * 1024);
    let h = serve_sealed(
        &bytes,
        Limits {
            read_timeout: Duration::from_millis(500),
            ..Limits::default()
        },
    );
    let mut c = connect(&h);
    c.get_mut()
        .write_all(b"GET /f HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_head(&mut c), bytes.len());
    let start = Instant::now();
    while h.connections() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the stalled connection is still open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // What arrived is a prefix of the body, visibly short of its length.
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    assert!(got.len() < bytes.len(), "{} bytes", got.len());
    assert!(got[..] == bytes[..got.len()]);
}
