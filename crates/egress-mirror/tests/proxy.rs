//! Behind a load balancer (issue 28): `--trusted-proxy` peers' connections
//! begin with a PROXY protocol header (v1 or v2), and the sandbox it names
//! is the client: of the per-client limit and of the misses log. Anyone
//! else's header is refused as a request and never read as an address;
//! a malformed, truncated or oversized header, or a missing one under
//! `--require-proxy-header`, closes the connection unanswered.

#![cfg(target_os = "linux")]

use egress_mirror::misses::Record;
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)]
mod common;

use common::{Running, TempDir};

fn snapshot_dir(tmp: &TempDir) -> PathBuf {
    let w = common::wheel("ec-held", "1.0.0", "held\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes, None).unwrap();
    let snapshot = b
        .build(
            "2026-01-01T00:00:00Z",
            Some(&SigningKey::from_seed([9; 32], "test")),
            "mirror@egress.test",
        )
        .unwrap();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    dir
}

fn start(dir: &Path, extra: &[&str]) -> Running {
    Running::start(
        Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
            .arg(dir)
            .arg("--listen=127.0.0.1:0")
            .args(extra)
            .stdin(Stdio::null()),
    )
}

/// A connection from `src` (a loopback address), the `prefix` bytes sent
/// first.
fn connect_from(src: Ipv4Addr, addr: SocketAddr, prefix: &[u8]) -> TcpStream {
    let socket = socket2_like(src, addr);
    let mut s = socket;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(prefix).unwrap();
    s
}

/// A TCP connection bound to `src` first (std cannot bind a client
/// socket, tokio's can).
fn socket2_like(src: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
            socket.connect(addr).await
        })
        .unwrap();
    let s = stream.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s
}

fn v1(client: &str) -> Vec<u8> {
    format!("PROXY TCP4 {client} 192.0.2.1 40000 8080\r\n").into_bytes()
}

fn v2(client: [u8; 4]) -> Vec<u8> {
    let mut h = egress_http::proxy::V2_SIGNATURE.to_vec();
    h.extend_from_slice(&[0x21, 0x11, 0, 12]);
    h.extend_from_slice(&client);
    h.extend_from_slice(&[192, 0, 2, 1]);
    h.extend_from_slice(&40000u16.to_be_bytes());
    h.extend_from_slice(&8080u16.to_be_bytes());
    h
}

/// What the server answers on `s` after `request` (empty: it closed
/// without answering).
fn answer(mut s: TcpStream, request: &str) -> String {
    let _ = s.write_all(request.as_bytes());
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn get(target: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n\r\n")
}

fn status(text: &str) -> Option<u16> {
    text.split(' ').nth(1).and_then(|s| s.parse().ok())
}

/// The clients of the misses log's miss records, once `n` are there.
fn miss_clients(log: &Path, n: usize) -> Vec<IpAddr> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let clients: Vec<IpAddr> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| match Record::parse(l).ok()? {
                Record::Miss { client, .. } => Some(client),
                _ => None,
            })
            .collect();
        if clients.len() >= n || Instant::now() > deadline {
            return clients;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const BALANCER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const STRANGER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

#[test]
fn the_sandbox_a_trusted_proxy_names_is_the_client() {
    let tmp = TempDir::new("proxy");
    let dir = snapshot_dir(&tmp);
    let log = tmp.0.join("misses.jsonl");
    let m = start(
        &dir,
        &[
            "--trusted-proxy=127.0.0.1/32",
            "--max-connections-per-client=2",
            "--misses-log",
            log.to_str().unwrap(),
        ],
    );

    // v1 and v2 headers name the sandbox; the misses log keys on it.
    let a = answer(
        connect_from(BALANCER, m.addr, &v1("198.51.100.7")),
        &get("/simple/absent-a/"),
    );
    assert_eq!(status(&a), Some(404), "{a}");
    let b = answer(
        connect_from(BALANCER, m.addr, &v2([203, 0, 113, 9])),
        &get("/simple/absent-b/"),
    );
    assert_eq!(status(&b), Some(404), "{b}");
    // A connection without a header (not required): the balancer itself.
    let c = answer(
        connect_from(BALANCER, m.addr, b""),
        &get("/simple/absent-c/"),
    );
    assert_eq!(status(&c), Some(404), "{c}");
    // A stranger's header is a request the mirror refuses, not an address.
    let forged = answer(
        connect_from(STRANGER, m.addr, &v1("198.51.100.66")),
        &get("/simple/absent-d/"),
    );
    assert_eq!(status(&forged), Some(400), "{forged}");
    let forged2 = answer(
        connect_from(STRANGER, m.addr, &v2([198, 51, 100, 66])),
        &get("/simple/absent-e/"),
    );
    assert!(status(&forged2).is_none_or(|s| s == 400), "{forged2}");
    let clients = miss_clients(&log, 3);
    let want: Vec<IpAddr> = ["198.51.100.7", "203.0.113.9", "127.0.0.1"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(
        clients, want,
        "the misses log keys on the named sandboxes only"
    );

    // The per-client limit (2) keys on the sandbox: two held connections of
    // 198.51.100.7 through the balancer, and its third is refused while
    // another sandbox through the same balancer is served.
    let held: Vec<TcpStream> = (0..2)
        .map(|_| connect_from(BALANCER, m.addr, &v2([198, 51, 100, 7])))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let third = answer(
        connect_from(BALANCER, m.addr, &v2([198, 51, 100, 7])),
        &get("/simple/ec-held/"),
    );
    assert_eq!(status(&third), Some(503), "{third}");
    let other = answer(
        connect_from(BALANCER, m.addr, &v2([198, 51, 100, 8])),
        &get("/simple/ec-held/"),
    );
    assert_eq!(status(&other), Some(200), "{other}");
    drop(held);
}

#[test]
fn bad_or_missing_headers_from_a_trusted_proxy_close_the_connection() {
    let tmp = TempDir::new("proxy-bad");
    let dir = snapshot_dir(&tmp);
    let m = start(
        &dir,
        &["--trusted-proxy=127.0.0.1", "--require-proxy-header"],
    );
    let mut oversized = egress_http::proxy::V2_SIGNATURE.to_vec();
    oversized.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
    let mut truncated = v2([198, 51, 100, 7]);
    truncated.truncate(20);
    for (what, prefix) in [
        ("no header", Vec::new()),
        ("malformed v1", b"PROXY TCP4 1.2.3.4 nope 1 2\r\n".to_vec()),
        (
            "a v1 line that never ends",
            [&b"PROXY UNKNOWN "[..], &[b'x'; 200]].concat(),
        ),
        ("oversized v2", oversized),
    ] {
        let text = answer(
            connect_from(BALANCER, m.addr, &prefix),
            &get("/simple/ec-held/"),
        );
        assert!(text.is_empty(), "{what}: answered {text:?}");
    }
    // Truncated: the rest never comes; closed at the head timeout at the
    // latest, never answered.
    let mut s = connect_from(BALANCER, m.addr, &truncated);
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    assert!(
        buf.is_empty(),
        "truncated: answered {:?}",
        String::from_utf8_lossy(&buf)
    );
    // A whole header is served.
    let ok = answer(
        connect_from(BALANCER, m.addr, &v1("198.51.100.7")),
        &get("/simple/ec-held/"),
    );
    assert_eq!(status(&ok), Some(200), "{ok}");
}

#[test]
fn a_trusted_proxy_that_is_not_a_range_is_a_usage_error() {
    let tmp = TempDir::new("proxy-usage");
    let dir = snapshot_dir(&tmp);
    let out = Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
        .arg(&dir)
        .args(["--listen=127.0.0.1:0", "--trusted-proxy=haproxy.internal"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--trusted-proxy") && stderr.lines().count() == 1,
        "{stderr}"
    );
}
