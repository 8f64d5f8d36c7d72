//! The admin listener on the real binary (issue 28): `/livez`, `/readyz`
//! and `/metrics` on a listener of their own, the metrics read back with
//! the Prometheus project's own text-format parser (`prometheus-client`,
//! pinned in scripts/clients.txt), counting what the serving listener
//! answered; none of these routes on the serving listener; and an admin
//! address that is not loopback refused at start without `--admin-allow`.

#![cfg(target_os = "linux")]

use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[allow(dead_code)]
mod common;

use common::TempDir;

fn snapshot_dir(tmp: &TempDir) -> (PathBuf, String) {
    let w = common::wheel("ec-held", "1.0.0", "held\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let snapshot = b
        .build(
            "2026-01-01T00:00:00Z",
            Some(&SigningKey::from_seed([9; 32], "test")),
            "mirror@egress.test",
        )
        .unwrap();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    (dir, format!("/files/{}/{}", w.sha256, w.filename))
}

/// The mirror with an admin listener: the child, the serving and the
/// admin addresses.
struct WithAdmin {
    child: Child,
    serving: SocketAddr,
    admin: SocketAddr,
}

impl Drop for WithAdmin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn addr_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = line.split(marker).nth(1)?;
    rest.split('/').next()?.trim().parse().ok()
}

fn start(dir: &Path) -> WithAdmin {
    let mut child = Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
        .arg(dir)
        .args(["--listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut serving, mut admin) = (None, None);
    while let Some(Ok(line)) = lines.next() {
        if line.contains("admin listener") {
            admin = addr_after(&line, " at http://");
            break;
        }
        serving = serving.or_else(|| addr_after(&line, " at http://"));
    }
    WithAdmin {
        child,
        serving: serving.expect("serving line"),
        admin: admin.expect("admin line"),
    }
}

/// One request with `Connection: close`: status and body.
fn ask(addr: SocketAddr, method: &str, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// `/metrics` parsed by prometheus_client's parser: every sample as
/// `name{k="v",...}` (labels sorted) → value.
fn parsed(metrics: &str) -> BTreeMap<String, f64> {
    let clients = std::env::var_os("EGRESS_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/clients"));
    let python = clients.join("bin/python");
    assert!(
        python.is_file(),
        "no {}: run scripts/setup-clients (scripts/test does)",
        python.display()
    );
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}}\t{s.value}")
"#;
    let mut child = Command::new(python)
        .args(["-I", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused /metrics: {}\n{metrics}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_admin_listener_reports_health_and_counts_what_was_served() {
    let tmp = TempDir::new("admin");
    let (dir, wheel) = snapshot_dir(&tmp);
    let m = start(&dir);

    assert_eq!(ask(m.admin, "GET", "/livez"), (200, "ok\n".to_string()));
    let (status, body) = ask(m.admin, "GET", "/readyz");
    assert_eq!(status, 200, "{body}");
    let id = body.trim().rsplit(' ').next().unwrap().to_string();
    assert_eq!(id.len(), 64, "{body}");
    assert_eq!(ask(m.admin, "POST", "/metrics").0, 405);
    assert_eq!(
        ask(m.admin, "GET", "/simple/").0,
        404,
        "the admin listener serves no snapshot"
    );

    // None of the admin routes exists where sandboxes connect.
    for route in ["/livez", "/readyz", "/metrics"] {
        assert_eq!(
            ask(m.serving, "GET", route).0,
            404,
            "{route} on the serving listener"
        );
    }
    assert_eq!(ask(m.serving, "GET", "/simple/ec-held/").0, 200);
    let (status, body) = ask(m.serving, "GET", &wheel);
    assert_eq!(status, 200);
    assert_eq!(ask(m.serving, "GET", "/simple/not-held/").0, 404);
    assert_eq!(ask(m.serving, "PUT", "/simple/ec-held/").0, 405);
    assert_eq!(
        ask(m.serving, "GET", "/.well-known/egress-mirror/MANIFEST").0,
        200
    );

    let (status, text) = ask(m.admin, "GET", "/metrics");
    assert_eq!(status, 200);
    let samples = parsed(&text);
    let get = |k: &str| {
        samples
            .get(k)
            .copied()
            .unwrap_or_else(|| panic!("{k} in {samples:#?}"))
    };
    assert_eq!(
        get(r#"egress_mirror_requests_total{route="page",status="200"}"#),
        1.0
    );
    assert_eq!(
        get(r#"egress_mirror_requests_total{route="file",status="200"}"#),
        1.0
    );
    assert_eq!(
        get(r#"egress_mirror_requests_total{route="evidence",status="200"}"#),
        1.0
    );
    // /livez, /readyz, /metrics and /simple/not-held/ on the serving listener.
    assert_eq!(
        get(r#"egress_mirror_requests_total{route="refused",status="404"}"#),
        4.0
    );
    assert_eq!(
        get(r#"egress_mirror_refusals_total{reason="not-in-snapshot"}"#),
        4.0
    );
    assert_eq!(get(r#"egress_mirror_refusals_total{reason="method"}"#), 1.0);
    // What the misses log would record.
    assert_eq!(
        get(r#"egress_mirror_misses_total{}"#),
        4.0,
        "not-held, and livez, readyz and metrics asked as npm packages at the root"
    );
    assert!(get(r#"egress_mirror_response_body_bytes_total{}"#) >= body.len() as f64);
    assert!(get(r#"egress_mirror_connections_accepted_total{}"#) >= 8.0);
    assert!(get(r#"egress_mirror_open_connections{}"#) >= 0.0);
    assert_eq!(get(r#"egress_mirror_swaps_total{result="refused"}"#), 0.0);
    assert_eq!(
        get(&format!(
            r#"egress_mirror_snapshot_info{{snapshot="{id}"}}"#
        )),
        1.0
    );
}

#[test]
fn an_admin_address_beyond_loopback_needs_an_allow_list() {
    let tmp = TempDir::new("admin-refused");
    let (dir, _) = snapshot_dir(&tmp);
    for (args, says) in [
        (&["--admin-listen=0.0.0.0:0"][..], "--admin-allow"),
        (
            &["--admin-listen=localhost:9090"][..],
            "IP address and port",
        ),
        (
            &["--admin-listen=127.0.0.1:0", "--admin-allow=10.0.0.0/33"][..],
            "--admin-allow",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
            .arg(&dir)
            .arg("--listen=127.0.0.1:0")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "nothing served: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
