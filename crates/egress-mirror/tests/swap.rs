//! Swapping the served snapshot under the deployed binary, on loopback:
//! when the `current` symlink it was started on is re-pointed, and on
//! SIGHUP; refusals (another signer, a tampered snapshot) leave the old
//! snapshot serving with one log line; a request can never swap; a large
//! download started before a swap ends with the old bytes; a page read
//! before a swap still has its files after it; the attestation and
//! `X-Egress-Snapshot` name the new snapshot from then on.

#![cfg(unix)]

use egress_model::Sha256Digest;
use egress_signing::{Attestation, SigningKey};
use egress_snapshot::{well_known, Snapshot, SnapshotBuilder};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// Only the temporary directory, the wheel and the request helpers are used.
#[allow(dead_code)]
mod common;

use common::{request, Resp, TempDir};

const LAB: [u8; 32] = [9; 32];
const OTHER: [u8; 32] = [5; 32];
const PAGE: &str = "/simple/ec-swap/";
const BIG: &str = "ec_swap-1.0.0.tar.gz";

/// 32 MiB: more than loopback's socket buffers hold, so a client that
/// stops reading keeps the response in flight.
fn big_bytes() -> Vec<u8> {
    (0..32 * 1024 * 1024 + 7)
        .map(|i: usize| (i * 13 % 239) as u8)
        .collect()
}

/// A snapshot of `ec-swap` `version` (one wheel, and the big sdist when
/// `big`), signed with `seed`, written to `dir`.
fn write(dir: &Path, version: &str, big: bool, seed: [u8; 32]) -> (Snapshot, String) {
    let w = common::wheel("ec-swap", version, "swapped\n");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    if big {
        b.add_dist(BIG, big_bytes(), None).unwrap();
    }
    let key = SigningKey::from_seed(seed, "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    snapshot.write_dir(dir).unwrap();
    (snapshot, format!("/files/{}/{}", w.sha256, w.filename))
}

/// The binary on `dir`, its stderr collected line by line.
struct Mirror {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Mirror {
    fn start(dir: &Path, instance: Option<&Path>) -> Mirror {
        match instance {
            Some(inst) => Mirror::start_with(dir, &["--instance-dir".as_ref(), inst.as_os_str()]),
            None => Mirror::start_with(dir, &[]),
        }
    }

    fn start_with(dir: &Path, args: &[&std::ffi::OsStr]) -> Mirror {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_egress-mirror"));
        cmd.arg(dir).arg("--listen=127.0.0.1:0").args(args);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&stderr);
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut banner = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let addr = banner
            .split(" at http://")
            .nth(1)
            .and_then(|a| a.trim().trim_end_matches('/').parse().ok())
            .unwrap_or_else(|| panic!("no startup line: {banner:?}"));
        Mirror {
            child,
            addr,
            stderr,
        }
    }

    fn get(&self, target: &str) -> Resp {
        request(self.addr, "GET", target, &[])
    }

    /// The snapshot named by a response for a path outside every snapshot.
    fn serving(&self) -> String {
        let r = self.get("/simple/absent-project/");
        assert_eq!(r.status, 404);
        r.header("x-egress-snapshot").unwrap().to_string()
    }

    fn wait_serving(&self, id: &Snapshot) {
        let want = id.id().to_hex();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.serving() != want {
            assert!(
                Instant::now() < deadline,
                "never swapped to {want}: {:?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until `n` lines contain `text`; returns them.
    fn wait_lines(&self, text: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found: Vec<String> = self
                .lines()
                .into_iter()
                .filter(|l| l.contains(text))
                .collect();
            if found.len() >= n {
                return found;
            }
            assert!(Instant::now() < deadline, "no {text:?}: {:?}", self.lines());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn hup(&self) {
        let status = Command::new("kill")
            .arg("-HUP")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn attested(&self) -> Sha256Digest {
        let r = self.get(&format!("{}{}", well_known::ATTEST, "ab".repeat(16)));
        assert_eq!(r.status, 200);
        let a = Attestation::parse(&r.body).unwrap();
        a.verify_signature().unwrap();
        a.statement.snapshot
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Points `link` at `target` atomically (a new link renamed over it), as
/// an operator deploys a snapshot.
fn repoint(link: &Path, target: &str) {
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    symlink(target, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
}

#[test]
fn a_current_symlink_is_followed_and_bad_snapshots_are_refused() {
    let tmp = TempDir::new("egress-mirror-swap-link");
    let root = &tmp.0;
    let (a, a_wheel) = write(&root.join("v1"), "1.0.0", true, LAB);
    let (b, b_wheel) = write(&root.join("v2"), "2.0.0", false, LAB);
    let (c, _) = write(&root.join("other-key"), "3.0.0", false, OTHER);
    write(&root.join("tampered"), "4.0.0", false, LAB);
    // One changed byte in SNAPSHOT.json: it no longer has MANIFEST's digest.
    let doc = root.join("tampered").join("SNAPSHOT.json");
    let mut bytes = std::fs::read(&doc).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 1;
    std::fs::write(&doc, bytes).unwrap();
    let inst = root.join("instance");
    std::fs::create_dir_all(&inst).unwrap();
    let current = root.join("current");
    symlink("v1", &current).unwrap();

    let m = Mirror::start(&current, Some(&inst));
    assert_eq!(m.serving(), a.id().to_hex());
    assert_eq!(m.attested(), a.id());
    let page = m.get(PAGE);
    assert_eq!(page.status, 200);
    let a_file = a_wheel.rsplit('/').next().unwrap().to_string();
    assert!(String::from_utf8_lossy(&page.body).contains(&a_file));

    // No request can swap, whatever it names.
    let b_id = b.id().to_hex();
    for (method, target, headers) in [
        (
            "GET",
            "/.well-known/egress-mirror/reload".to_string(),
            vec![],
        ),
        (
            "GET",
            "/.well-known/egress-mirror/swap/../v2".to_string(),
            vec![],
        ),
        (
            "POST",
            "/.well-known/egress-mirror/reload".to_string(),
            vec![],
        ),
        (
            "GET",
            format!("/?snapshot={}", root.join("v2").display()),
            vec![],
        ),
        ("GET", "/-/reload".to_string(), vec![]),
        (
            "GET",
            PAGE.to_string(),
            vec![
                format!("X-Egress-Snapshot: {b_id}"),
                "X-Reload: 1".to_string(),
            ],
        ),
    ] {
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let r = request(m.addr, method, &target, &headers);
        assert_eq!(
            r.header("x-egress-snapshot"),
            Some(a.id().to_hex().as_str())
        );
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(m.serving(), a.id().to_hex());

    // A large download of A, started and then stalled by its client.
    let mut slow = TcpStream::connect(m.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let big_url = format!("/files/{}/{BIG}", Sha256Digest::of(&big_bytes()));
    write!(
        slow,
        "GET {big_url} HTTP/1.1\r\nHost: mirror.test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = vec![0; 64 * 1024];
    slow.read_exact(&mut first).unwrap();

    // Re-pointed: the next requests are B's, the attestation too.
    repoint(&current, "v2");
    m.wait_serving(&b);
    assert_eq!(m.attested(), b.id());
    // The evidence `check --expect-snapshot` reads: B's MANIFEST.
    let manifest = m.get(well_known::MANIFEST);
    assert_eq!(Sha256Digest::of(&manifest.body), b.id());
    let page = m.get(PAGE);
    assert_eq!(page.header("x-egress-snapshot"), Some(b_id.as_str()));
    let text = String::from_utf8_lossy(&page.body).into_owned();
    assert!(!text.contains(&a_file), "pages are the current snapshot's");
    assert_eq!(m.get(&b_wheel).status, 200);
    // A's page was read before the swap: its file is still served, by A.
    let r = m.get(&a_wheel);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("x-egress-snapshot"),
        Some(a.id().to_hex().as_str())
    );
    assert_eq!(
        Sha256Digest::of(&r.body).to_hex(),
        a_wheel.split('/').nth(2).unwrap()
    );

    // The stalled download ends, complete, with A's bytes.
    let mut rest = Vec::new();
    slow.read_to_end(&mut rest).unwrap();
    first.extend(rest);
    let end = first.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&first[..end]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains(&a.id().to_hex()), "{head}");
    assert!(first[end + 4..] == big_bytes()[..], "the old bytes, whole");

    // Another signer's snapshot: refused, one line, B still served.
    repoint(&current, "other-key");
    let refused = m.wait_lines("refused", 1);
    assert_eq!(refused.len(), 1, "{refused:?}");
    let line = &refused[0];
    assert!(
        line.starts_with("egress-mirror: the symlink changed: swap to "),
        "{line}"
    );
    assert!(line.contains("not signed by the keys"), "{line}");
    assert!(line.contains(&c.id().to_hex()), "{line}");
    assert!(
        line.ends_with(&format!("still serving snapshot {b_id}")),
        "{line}"
    );
    assert_eq!(m.serving(), b_id);
    // Not retried while the link stays.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(m.wait_lines("refused", 1).len(), 1);
    assert_eq!(m.get(&b_wheel).status, 200);

    // A tampered snapshot: refused the same way.
    repoint(&current, "tampered");
    let refused = m.wait_lines("refused", 2);
    let line = &refused[1];
    assert!(line.contains("is invalid"), "{line}");
    assert!(
        line.contains("tampered") && line.contains("SNAPSHOT.json"),
        "{line}"
    );
    assert_eq!(m.serving(), b_id);

    // SIGHUP after a refusal tries again, and is refused again: the
    // process keeps serving (a SIGHUP never ends it).
    m.hup();
    let refused = m.wait_lines("refused", 3);
    assert!(
        refused[2].starts_with("egress-mirror: SIGHUP: swap to "),
        "{refused:?}"
    );
    assert_eq!(m.serving(), b_id);

    // Back to A: the generation still held is taken up again.
    repoint(&current, "v1");
    m.wait_serving(&a);
    assert_eq!(m.attested(), a.id());
    let swaps = m.wait_lines("swapped from", 2);
    assert!(swaps[1].contains("a generation still held"), "{swaps:?}");
    for line in m.lines() {
        assert!(!line.contains('\r'), "{line}");
    }
}

/// A directory replaced at the path the link resolves to (`current ->
/// live`, `live` renamed away and another renamed in): the link resolves
/// as before, so only SIGHUP swaps.
#[test]
fn sighup_swaps_a_directory_replaced_in_place() {
    let tmp = TempDir::new("egress-mirror-swap-hup");
    let root = &tmp.0;
    let (a, _) = write(&root.join("live"), "1.0.0", false, LAB);
    let (b, b_wheel) = write(&root.join("next"), "2.0.0", false, LAB);
    symlink("live", root.join("current")).unwrap();
    let m = Mirror::start(&root.join("current"), None);
    assert_eq!(m.serving(), a.id().to_hex());

    std::fs::rename(root.join("live"), root.join("old")).unwrap();
    std::fs::rename(root.join("next"), root.join("live")).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(m.serving(), a.id().to_hex(), "no SIGHUP, no swap");

    m.hup();
    m.wait_serving(&b);
    let line = m.wait_lines("swapped from", 1);
    assert!(
        line[0].starts_with("egress-mirror: SIGHUP: swapped from snapshot "),
        "{line:?}"
    );
    let r = m.get(&b_wheel);
    assert_eq!(
        (r.status, r.header("x-egress-snapshot")),
        (200, Some(b.id().to_hex().as_str()))
    );
    // And again: the same snapshot, nothing to do, still serving.
    m.hup();
    m.wait_lines("already being served", 1);
    assert_eq!(m.serving(), b.id().to_hex());
}

/// `--allowed-signers FILE` fixes the keys instead of the snapshot's own:
/// the snapshot served at start must verify against it (else exit 4, one
/// line), and so must every snapshot swapped to; an unreadable file is a
/// usage error (exit 2).
#[test]
fn allowed_signers_fixes_the_keys() {
    let tmp = TempDir::new("egress-mirror-swap-signers");
    let root = &tmp.0;
    write(&root.join("v1"), "1.0.0", false, LAB);
    let (other, _) = write(&root.join("other-key"), "3.0.0", false, OTHER);
    symlink("v1", root.join("current")).unwrap();
    let run = |signers: &Path| {
        Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
            .arg(root.join("current"))
            .arg("--listen=127.0.0.1:0")
            .arg("--allowed-signers")
            .arg(signers)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&root.join("other-key").join("allowed_signers"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not signed by a key in"), "{stderr}");
    let out = run(&root.join("absent"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("egress-mirror: --allowed-signers "),
        "{stderr}"
    );

    // The lab's file: A starts; the other key's snapshot is refused.
    let signers = root.join("lab.allowed_signers");
    std::fs::copy(root.join("v1").join("allowed_signers"), &signers).unwrap();
    let m = Mirror::start_with(
        &root.join("current"),
        &["--allowed-signers".as_ref(), signers.as_os_str()],
    );
    repoint(&root.join("current"), "other-key");
    let refused = m.wait_lines("refused", 1);
    assert!(refused[0].contains(&other.id().to_hex()), "{refused:?}");
}
