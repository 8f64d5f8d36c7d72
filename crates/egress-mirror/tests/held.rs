//! Held connections against the deployed binary (issue 11): 1,000 slow or
//! silent clients must not lock a legitimate client out, and one address
//! over its per-client limit gets 503 while other addresses are served.
//!
//! No timing is asserted (speed belongs to scripts/bench); what is asserted
//! is that every legitimate request is answered, with the right bytes, while
//! every held connection is still open.

#![cfg(target_os = "linux")]

use egress_model::Sha256Digest;
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

// Only the temporary directory and the wheel are used here.
#[allow(dead_code)]
mod common;

use common::{Running, TempDir};

/// Held connections, spread over this many loopback source addresses
/// (127.0.0.2 onwards) so that each stays under the per-client limit.
const HELD: usize = 1000;
const SOURCES: usize = 50;
/// Legitimate requests made while the connections are held.
const LEGIT: usize = 25;

/// The real binary on `dir` (or `EGRESS_MIRROR_BIN`'s, e.g. one built from
/// an older core, to see this test fail on it), started by `wrapper` (a
/// command and its arguments that runs the rest of its command line, e.g.
/// `prlimit`) when not empty.
fn start_under(wrapper: &[&str], dir: &std::path::Path) -> Running {
    let bin: std::ffi::OsString = std::env::var_os("EGRESS_MIRROR_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_egress-mirror").into());
    let mut cmd = match wrapper {
        [program, args @ ..] => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(bin);
            cmd
        }
        [] => Command::new(bin),
    };
    Running::start(
        cmd.arg(dir)
            .arg("--listen=127.0.0.1:0")
            .stdin(Stdio::null()),
    )
}

fn start(dir: &std::path::Path) -> Running {
    start_under(&[], dir)
}

/// One GET from `src` with `Connection: close`: the status and body, or
/// what went wrong.
fn get(addr: SocketAddr, src: Ipv4Addr, target: &str) -> Result<(u16, Vec<u8>), String> {
    let socket = connect_blocking(src, addr)?;
    let mut s = socket;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    s.write_all(
        format!("GET {target} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| format!("read: {e}"))?;
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no response head in {:?}", String::from_utf8_lossy(&buf)))?;
    let status = String::from_utf8_lossy(&buf[..end])
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    Ok((status, buf[end + 4..].to_vec()))
}

/// A blocking std stream connected from `src` (std cannot bind before
/// connecting; a tokio socket can, without unsafe code).
fn connect_blocking(src: Ipv4Addr, addr: SocketAddr) -> Result<TcpStream, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| e.to_string())?;
    let stream = rt
        .block_on(connect_from(src, addr))
        .map_err(|e| format!("connect from {src}: {e}"))?;
    let std = stream.into_std().map_err(|e| e.to_string())?;
    std.set_nonblocking(false).map_err(|e| e.to_string())?;
    Ok(std)
}

async fn connect_from(src: Ipv4Addr, addr: SocketAddr) -> std::io::Result<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
    socket.connect(addr).await
}

/// Whether the server has neither closed nor answered `s`.
fn still_held(s: &tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 64];
    matches!(s.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// This process needs a descriptor per held connection.
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    let now = getrlimit(Resource::Nofile).current;
    assert!(
        now.is_none_or(|n| n >= 2 * HELD as u64),
        "the open-file limit ({now:?}) is too low for {HELD} held connections; raise it (ulimit -n)"
    );
}

fn snapshot_dir(tmp: &TempDir) -> (std::path::PathBuf, String, Vec<u8>) {
    let w = common::wheel("ec-held", "1.0.0", "served while held\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let key = SigningKey::from_seed([7; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    assert_eq!(Sha256Digest::of(&w.bytes), w.sha256);
    (dir, format!("/files/{}/{}", w.sha256, w.filename), w.bytes)
}

#[test]
fn a_thousand_held_connections_do_not_lock_a_client_out() {
    raise_open_file_limit();
    let tmp = TempDir::new("egress-mirror-held");
    let (dir, url, bytes) = snapshot_dir(&tmp);
    let mirror = start(&dir);
    let addr = mirror.addr;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Half send half a request line and then drip the rest of it, then one
    // header line every 2 s; the other half send nothing.
    let held: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut held = Vec::with_capacity(HELD);
        for i in 0..HELD {
            let src = Ipv4Addr::new(127, 0, 0, 2 + (i % SOURCES) as u8);
            let mut s = connect_from(src, addr)
                .await
                .unwrap_or_else(|e| panic!("held connection {i} from {src}: {e}"));
            if i % 2 == 0 {
                s.write_all(b"GET /simple/ec-he").await.unwrap();
            }
            held.push(s);
        }
        held
    });
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let drip = rt.spawn(async move {
        let mut held = held;
        let mut line: &[u8] = b"ld/ HTTP/1.1\r\nHost: mirror.test\r\n";
        loop {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(2)) => {}
                _ = stopped.wait_for(|s| *s) => return held,
            }
            for s in held.iter_mut().step_by(2) {
                let _ = s.write_all(line).await;
            }
            line = b"X-Drip: 1\r\n";
        }
    });

    // The legitimate client, from its own address.
    let mut answered = 0;
    let mut failures = Vec::new();
    for i in 0..LEGIT {
        match get(addr, Ipv4Addr::LOCALHOST, &url) {
            Ok((200, body)) if body == bytes => answered += 1,
            Ok((status, body)) => failures.push(format!("GET {i}: {status}, {} bytes", body.len())),
            Err(e) => failures.push(format!("GET {i}: {e}")),
        }
        // Spread over two drips of the held connections.
        std::thread::sleep(Duration::from_millis(170));
    }

    let _ = stop.send(true);
    let held = rt.block_on(drip).unwrap();
    let open = rt.block_on(async { held.iter().filter(|s| still_held(s)).count() });
    let stderr = {
        drop(held);
        mirror.stop()
    };
    assert_eq!(
        answered, LEGIT,
        "legitimate GETs answered 200 with the right bytes: {answered} of {LEGIT}; {failures:?}; mirror stderr: {stderr}"
    );
    // Not vacuous: the connections really were held all along.
    assert_eq!(
        open, HELD,
        "held connections still open at the end; stderr: {stderr}"
    );
}

#[test]
fn one_address_over_its_limit_gets_503_while_others_are_served() {
    raise_open_file_limit();
    let tmp = TempDir::new("egress-mirror-per-client");
    let (dir, url, bytes) = snapshot_dir(&tmp);
    let mirror = start(&dir);
    let addr = mirror.addr;
    let greedy = Ipv4Addr::new(127, 0, 0, 77);
    let limit = egress_http::DEFAULT_MAX_CONNECTIONS_PER_CLIENT;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let held: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..limit {
            held.push(connect_from(greedy, addr).await.unwrap());
        }
        held
    });
    // The excess from the same address: 503 and closed, answered before any
    // request is sent.
    let mut refused = Vec::new();
    for _ in 0..3 {
        let mut s = connect_blocking(greedy, addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        refused.push(String::from_utf8_lossy(&got).into_owned());
    }
    // Another address is served.
    let other = get(addr, Ipv4Addr::new(127, 0, 0, 78), &url);
    let open = rt.block_on(async { held.iter().filter(|s| still_held(s)).count() });
    drop(held);
    let stderr = mirror.stop();
    for r in &refused {
        assert!(
            r.starts_with("HTTP/1.1 503 ") && r.contains("Connection: close\r\n"),
            "the excess connection got: {r:?}"
        );
    }
    assert_eq!(open, limit, "the connections under the limit stay open");
    assert!(
        matches!(&other, Ok((200, body)) if *body == bytes),
        "another address: {other:?}"
    );
    assert_eq!(
        stderr
            .lines()
            .filter(
                |l| l.contains("per-client connection limit reached for 127.0.0.77")
                    && l.contains("--max-connections-per-client")
            )
            .count(),
        1,
        "one rate-limited line naming the limit and its flag: {stderr}"
    );
}

#[test]
fn out_of_descriptors_it_backs_off_says_so_once_and_recovers() {
    raise_open_file_limit();
    let tmp = TempDir::new("egress-mirror-emfile");
    let (dir, url, bytes) = snapshot_dir(&tmp);
    // 64 descriptors in all: the connection limit (at least 256) is not
    // what stops it, the descriptors are.
    let started = std::time::Instant::now();
    let mirror = start_under(&["prlimit", "--nofile=64:64", "--"], &dir);
    let addr = mirror.addr;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let held: Vec<tokio::net::TcpStream> = rt.block_on(async {
        let mut held = Vec::new();
        for i in 0..100 {
            let src = Ipv4Addr::new(127, 0, 1, 1 + (i % 10) as u8);
            held.push(connect_from(src, addr).await.unwrap());
        }
        // Long enough for the accept loop to run out of descriptors.
        tokio::time::sleep(Duration::from_millis(500)).await;
        held
    });
    drop(held);
    // Once the held connections are gone it serves again (it may take the
    // backlog a moment to drain).
    let mut got = Err(String::new());
    for _ in 0..50 {
        got = get(addr, Ipv4Addr::LOCALHOST, &url);
        if matches!(&got, Ok((200, _))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let elapsed = started.elapsed().as_secs();
    let stderr = mirror.stop();
    assert!(
        matches!(&got, Ok((200, body)) if *body == bytes),
        "served again after the descriptors came back: {got:?}; stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cannot accept connections"))
        .collect();
    assert!(
        !lines.is_empty() && lines.len() as u64 <= 1 + elapsed / 10,
        "one line per 10 s at most while out of descriptors: {stderr}"
    );
    assert!(
        lines[0].contains("Too many open files") && lines[0].contains("ulimit -n"),
        "{}",
        lines[0]
    );
}
