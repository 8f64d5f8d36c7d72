//! A fleet behind a real load balancer (issue 28): HAProxy 2.6 (Debian's,
//! installed by scripts/setup-infra; `egress_references::haproxy`) in TCP
//! mode with `send-proxy-v2`, in front of three real `egress-mirror`
//! replicas started with `--trusted-proxy`.
//!
//! - pip installs through it; each replica's misses log names the sandbox,
//!   not the balancer; and the per-client limit holds per sandbox address:
//!   one sandbox flooding the fleet is refused while others are served.
//! - `check` through it: when one replica serves another snapshot,
//!   P5.run-wide-snapshot FAILs naming that snapshot; a fleet on one
//!   snapshot passes it.

mod common;

use common::{client, clients, s, snapshot_id, tmpdir, MirrorProcess};
use egress_mirror::misses::Record;
use egress_references::haproxy::HaProxy;
use egress_references::pypi::canary::Canary;
use egress_suite::Report;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn conformance_ok(args: &[&str]) {
    common::ok(&common::run(args), &args.join(" "));
}

/// Two snapshots of the canary signed by one key: A holds ec-present
/// 1.0.0 and ec-template-text 1.0.0, B ec-present alone.
fn snapshots(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let canary = Canary::start().expect("canary");
    let hash = |f: &str| {
        canary
            .dists(false)
            .into_iter()
            .find(|(_, d)| d.filename == f)
            .map(|(_, d)| d.sha256.to_hex())
            .expect("canary file")
    };
    let present = format!(
        "ec-present==1.0.0 --hash=sha256:{} --hash=sha256:{}\n",
        hash("ec_present-1.0.0-py3-none-any.whl"),
        hash("ec_present-1.0.0.tar.gz")
    );
    let template = format!(
        "ec-template-text==1.0.0 --hash=sha256:{}\n",
        hash("ec_template_text-1.0.0-py3-none-any.whl")
    );
    let key = dir.join("key");
    conformance_ok(&["key", "generate", "--out", s(&key)]);
    let build = |name: &str, pins: String| {
        let req = dir.join(format!("{name}.txt"));
        std::fs::write(&req, pins).expect("write");
        let out = dir.join(name);
        conformance_ok(&[
            "snapshot",
            "build",
            "--requirements",
            s(&req),
            "--index-url",
            &canary.index_url(),
            "--sign-key",
            s(&key),
            "--out",
            s(&out),
        ]);
        out
    };
    let a = build("snap-a", format!("{present}{template}"));
    let b = build("snap-b", present);
    (a, b, dir.join("key.allowed_signers"))
}

fn addr_of(m: &MirrorProcess) -> SocketAddr {
    m.base
        .trim_start_matches("http://")
        .parse()
        .expect("address")
}

/// A connection to `addr` from the loopback address `src`.
fn connect_from(src: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
            socket.connect(addr).await
        })
        .expect("connect");
    let s = stream.into_std().expect("std stream");
    s.set_nonblocking(false).expect("blocking");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
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
    let dir = tmpdir("egress-fleet-haproxy");
    let (snap, _, _) = snapshots(&dir);
    let logs: Vec<PathBuf> = (0..3)
        .map(|i| dir.join(format!("misses-{i}.jsonl")))
        .collect();
    let replicas: Vec<MirrorProcess> = logs
        .iter()
        .map(|log| {
            MirrorProcess::start_with(
                &snap,
                "127.0.0.1:0",
                &[
                    "--trusted-proxy=127.0.0.1/32",
                    "--require-proxy-header",
                    "--max-connections-per-client=2",
                    "--misses-log",
                    s(log),
                ],
            )
        })
        .collect();
    let backends: Vec<SocketAddr> = replicas.iter().map(addr_of).collect();
    let lb = HaProxy::start(&dir.join("haproxy"), &backends, true).expect("haproxy");
    let front = lb.addr();

    // The real client, through the balancer.
    let out = client(&clients().join("bin/pip"))
        .args([
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--no-cache-dir",
        ])
        .args(["--index-url", &format!("http://{front}/simple/"), "-d"])
        .arg(dir.join("dl"))
        .arg("ec-present==1.0.0")
        .output()
        .expect("pip");
    assert!(
        out.status.success(),
        "pip through HAProxy: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Asks for absent names from three sandboxes, one through each replica
    // in turn: every misses log names a sandbox, never the balancer.
    for i in 0..3u8 {
        let s = connect_from(Ipv4Addr::new(127, 0, 0, 20 + i), front);
        assert_eq!(get_on(s, &format!("/simple/absent-{i}/")), Some(404));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut clients_seen: Vec<IpAddr> = Vec::new();
    while Instant::now() < deadline {
        clients_seen = logs
            .iter()
            .flat_map(|log| {
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
        if clients_seen.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    clients_seen.sort();
    let want: Vec<IpAddr> = (20..23)
        .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
        .collect();
    assert_eq!(
        clients_seen, want,
        "each replica's misses log names the sandbox"
    );

    // One sandbox floods: 9 held connections through the balancer, 3 per
    // replica, over its limit of 2 on each; other sandboxes are served.
    let noisy = Ipv4Addr::new(127, 0, 0, 30);
    let held: Vec<TcpStream> = (0..9).map(|_| connect_from(noisy, front)).collect();
    // Each is admitted (and keyed) once HAProxy has passed its header on.
    std::thread::sleep(Duration::from_millis(1000));
    let statuses: Vec<Option<u16>> = held
        .into_iter()
        .map(|s| get_on(s, "/simple/ec-present/"))
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
            get_on(quiet, "/simple/ec-present/"),
            Some(200),
            "another sandbox is served"
        );
    }
    drop(lb);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check` through a balancer over `snaps` (one replica each): its report.
fn check_fleet(dir: &Path, name: &str, snaps: &[&Path], signers: &Path) -> Report {
    let replicas: Vec<MirrorProcess> = snaps
        .iter()
        .map(|snap| MirrorProcess::start_with(snap, "127.0.0.1:0", &["--trusted-proxy=127.0.0.1"]))
        .collect();
    let backends: Vec<SocketAddr> = replicas.iter().map(addr_of).collect();
    let lb = HaProxy::start(&dir.join(name), &backends, true).expect("haproxy");
    let out = common::run(&[
        "check",
        &format!("http://{}/simple/", lb.addr()),
        "--allowed-signers",
        s(signers),
        "--absent",
        "ec-upstream-only",
        "--format",
        "json",
    ]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn check_through_haproxy_names_a_replica_on_another_snapshot() {
    let dir = tmpdir("egress-fleet-check");
    let (a, b, signers) = snapshots(&dir);
    let mixed = check_fleet(&dir, "mixed", &[&a, &a, &b], &signers);
    let p = mixed
        .probe("P5.run-wide-snapshot")
        .expect("P5.run-wide-snapshot");
    let odd: String = snapshot_id(&b).to_hex().chars().take(16).collect();
    assert_eq!(p.status, egress_model::Status::Fail, "{}", p.reason);
    assert!(
        p.reason.contains("2 snapshots") && p.reason.contains(&odd),
        "the replica on snapshot {odd}… is named: {}",
        p.reason
    );
    assert_eq!(
        mixed.predicate("P5").map(|v| v.status),
        Some(egress_model::Status::Fail)
    );

    let one = check_fleet(&dir, "one", &[&a, &a, &a], &signers);
    let p = one
        .probe("P5.run-wide-snapshot")
        .expect("P5.run-wide-snapshot");
    assert_eq!(p.status, egress_model::Status::Pass, "{}", p.reason);
    let _ = std::fs::remove_dir_all(&dir);
}
