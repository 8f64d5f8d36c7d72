//! The real client through a real load balancer (issue 28): HAProxy 2.6
//! (Debian's, installed by scripts/setup-infra) in TCP mode with
//! `send-proxy-v2` in front of three egress-mirror replicas started with
//! `--trusted-proxy`. pip installs through it; each replica's misses log
//! names the sandbox, not the balancer; and the per-client limit holds per
//! sandbox address: one sandbox flooding the fleet is refused while
//! another, through the same balancer, is served.

#![cfg(target_os = "linux")]

use egress_mirror::misses::Record;
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)]
mod common;

use common::{Running, TempDir};

fn haproxy() -> PathBuf {
    let dir = std::env::var_os("EGRESS_INFRA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/infra"));
    let bin = dir.join("haproxy/root/usr/sbin/haproxy");
    assert!(
        bin.is_file(),
        "no HAProxy at {}: run scripts/setup-infra (scripts/test does)",
        bin.display()
    );
    bin
}

struct Balancer(Child);

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// HAProxy on a free loopback port in front of `replicas`, sending PROXY
/// v2 headers; started in the foreground (`-db`) and waited for.
fn balance(tmp: &TempDir, replicas: &[SocketAddr]) -> (Balancer, SocketAddr) {
    let port = free_port();
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, a)| format!("    server r{i} {a} send-proxy-v2\n"))
        .collect();
    let cfg = format!(
        "global\n    maxconn 4000\n\ndefaults\n    mode tcp\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n\n\
         frontend sandboxes\n    bind 127.0.0.1:{port}\n    default_backend mirrors\n\n\
         backend mirrors\n    balance roundrobin\n{servers}"
    );
    let path = tmp.0.join("haproxy.cfg");
    std::fs::write(&path, cfg).unwrap();
    let check = Command::new(haproxy())
        .args(["-c", "-f"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "haproxy -c: {}",
        common::show(&check)
    );
    let child = Command::new(haproxy())
        .args(["-db", "-f"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "HAProxy did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Balancer(child), addr)
}

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

/// A connection to `addr` from the loopback address `src`.
fn connect_from(src: Ipv4Addr, addr: SocketAddr) -> TcpStream {
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
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The status of a GET of `target` on `s`; `None` when it was closed.
fn get_on(mut s: TcpStream, target: &str) -> Option<u16> {
    let _ = s.write_all(
        format!("GET {target} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
}

#[test]
fn replicas_behind_haproxy_see_each_sandbox() {
    let tmp = TempDir::new("haproxy");
    let dir = snapshot_dir(&tmp);
    let replicas: Vec<(Running, PathBuf)> = (0..3)
        .map(|i| {
            let log = tmp.0.join(format!("misses-{i}.jsonl"));
            let r = Running::start(
                Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
                    .arg(&dir)
                    .args([
                        "--listen=127.0.0.1:0",
                        "--trusted-proxy=127.0.0.1/32",
                        "--require-proxy-header",
                        "--max-connections-per-client=2",
                        "--misses-log",
                    ])
                    .arg(&log)
                    .stdin(Stdio::null()),
            );
            (r, log)
        })
        .collect();
    let addrs: Vec<SocketAddr> = replicas.iter().map(|(r, _)| r.addr).collect();
    let (_haproxy, front) = balance(&tmp, &addrs);

    // The real client, through the balancer.
    let out = common::pip(
        &[
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--index-url",
            &format!("http://{front}/simple/"),
            "-d",
            tmp.0.join("dl").to_str().unwrap(),
            "ec-held==1.0.0",
        ],
        &tmp.0,
    );
    assert!(
        out.status.success(),
        "pip through HAProxy: {}",
        common::show(&out)
    );

    // Asks for absent names from three sandboxes, one through each replica
    // in turn: every misses log names a sandbox, never the balancer.
    for i in 0..3u8 {
        let s = connect_from(Ipv4Addr::new(127, 0, 0, 20 + i), front);
        assert_eq!(get_on(s, &format!("/simple/absent-{i}/")), Some(404));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut clients: Vec<IpAddr> = Vec::new();
    while Instant::now() < deadline {
        clients = replicas
            .iter()
            .flat_map(|(_, log)| {
                std::fs::read_to_string(log)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .filter_map(|l| match Record::parse(&l).ok()? {
                Record::Miss { client, .. } => Some(client),
                _ => None,
            })
            .collect();
        if clients.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    clients.sort();
    let want: Vec<IpAddr> = (20..23)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
        .collect();
    assert_eq!(clients, want, "each replica's misses log names the sandbox");

    // One sandbox floods: 9 held connections through the balancer, 3 per
    // replica, over its limit of 2 on each; another sandbox is still served.
    let noisy = Ipv4Addr::new(127, 0, 0, 30);
    let held: Vec<TcpStream> = (0..9).map(|_| connect_from(noisy, front)).collect();
    // Each is admitted (and keyed) once HAProxy has passed its header on.
    std::thread::sleep(Duration::from_millis(1000));
    let statuses: Vec<Option<u16>> = held
        .into_iter()
        .map(|s| get_on(s, "/simple/ec-held/"))
        .collect();
    let count = |want: u16| statuses.iter().filter(|s| **s == Some(want)).count();
    assert_eq!(
        (count(200), count(503)),
        (6, 3),
        "two served and one refused on each replica: {statuses:?}"
    );
    for i in 0..3u8 {
        let quiet = connect_from(Ipv4Addr::new(127, 0, 0, 40 + i), front);
        assert_eq!(
            get_on(quiet, "/simple/ec-held/"),
            Some(200),
            "another sandbox is served"
        );
    }
}
