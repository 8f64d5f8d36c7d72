//! The mirror serving a snapshot straight from its directory
//! (`StoredSnapshot`), in process and as the deployed binary: lazy
//! verification, blob failures as 500 plus a log line, the abort before the
//! last byte, config and exit codes, Landlock confinement, request logs.

#![cfg(unix)]

use egress_artifacts::BuiltDist;
use egress_http::{Body, Handler, Reply, Request, Server, ServerHandle};
use egress_mirror::{LogSink, Mirror};
use egress_model::Sha256Digest;
use egress_signing::SigningKey;
use egress_snapshot::manifest::blob_path;
use egress_snapshot::{well_known, Snapshot, SnapshotBuilder, StoredSnapshot};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

mod common;

use common::{pip, request, show, Resp, Running, TempDir};

fn wheel(name: &str, version: &str) -> BuiltDist {
    common::wheel(name, version, "served from disk\n")
}

/// A signed snapshot with one wheel, written to `<tmp>/snap`.
fn written(tag: &str) -> (TempDir, PathBuf, Snapshot, BuiltDist) {
    let w = wheel("ec-disk", "1.0.0");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    // Larger than the small-blob cache takes: always served from its file.
    b.add_dist(BIG_SDIST, big_bytes(), None).unwrap();
    let key = SigningKey::from_seed([9; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    let tmp = TempDir::new(&format!("egress-mirror-stored-{tag}"));
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    (tmp, dir, snapshot, w)
}

const BIG_SDIST: &str = "ec_disk-1.0.0.tar.gz";

fn big_bytes() -> Vec<u8> {
    (0..egress_snapshot::SMALL_BLOB_MAX as usize + 4096)
        .map(|i| (i * 31 % 251) as u8)
        .collect()
}

fn file_url(w: &BuiltDist) -> String {
    format!("/files/{}/{}", w.sha256, w.filename)
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn sink(&self) -> LogSink {
        let lines = Arc::clone(&self.0);
        Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string()))
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn serve_stored(dir: &Path, log: &Log) -> ServerHandle {
    let store = StoredSnapshot::open(dir).unwrap();
    let mirror = Mirror::from_store(Arc::new(store)).log_to(log.sink());
    Server::bind_loopback(mirror).unwrap()
}

fn get(addr: SocketAddr, target: &str) -> Resp {
    request(addr, "GET", target, &[])
}

fn flip_last_byte(path: &Path) -> Vec<u8> {
    let original = std::fs::read(path).unwrap();
    let mut bad = original.clone();
    *bad.last_mut().unwrap() ^= 0x01;
    std::fs::write(path, &bad).unwrap();
    original
}

// ------------------------------------------------------------- in process

#[test]
fn serves_the_same_as_the_memory_backend() {
    let (_tmp, dir, snapshot, w) = written("same");
    let log = Log::default();
    let disk = serve_stored(&dir, &log);
    let memory = egress_mirror::serve(Arc::new(snapshot.clone()), "127.0.0.1:0").unwrap();
    let url = file_url(&w);
    let json = "Accept: application/vnd.pypi.simple.v1+json";
    for (method, target, headers) in [
        ("GET", url.as_str(), &[][..]),
        ("HEAD", url.as_str(), &[]),
        ("GET", &format!("{url}.metadata"), &[]),
        ("GET", "/simple/", &[json]),
        ("GET", "/simple/ec-disk/", &[]),
        ("GET", "/simple/ec-disk/", &[json]),
        ("GET", "/simple/ec-disk/", &["Accept: image/png"]),
        ("GET", well_known::MANIFEST, &[]),
        ("GET", well_known::SNAPSHOT_JSON, &[]),
        ("GET", well_known::SIGNATURE, &[]),
        ("GET", well_known::ALLOWED_SIGNERS, &[]),
        ("GET", "/simple/../etc/passwd", &[]),
        ("GET", &format!("/blobs/sha256/{}", w.sha256.to_hex()), &[]),
        ("GET", "http://example.com/", &[]),
        ("POST", "/simple/", &[]),
        (
            "GET",
            &url,
            &[&format!("If-None-Match: \"sha256:{}\"", w.sha256.to_hex())],
        ),
    ] {
        let a = request(disk.addr(), method, target, headers);
        let b = request(memory.addr(), method, target, headers);
        assert_eq!(
            (a.status, &a.body),
            (b.status, &b.body),
            "{method} {target}"
        );
        let mut ha = a.headers.clone();
        let mut hb = b.headers.clone();
        ha.sort();
        hb.sort();
        assert_eq!(ha, hb, "{method} {target}");
    }
    let r = get(disk.addr(), &url);
    assert_eq!((r.status, &r.body), (200, &w.bytes));
    assert_eq!(
        r.header("ETag"),
        Some(format!("\"sha256:{}\"", w.sha256.to_hex()).as_str())
    );
    assert_eq!(
        r.header("Cache-Control"),
        Some("public, max-age=31536000, immutable")
    );
    assert!(log.lines().is_empty(), "{:?}", log.lines());
}

#[test]
fn a_flipped_byte_is_a_500_and_a_log_line_until_restored() {
    let (_tmp, dir, _snapshot, w) = written("flip");
    let log = Log::default();
    let server = serve_stored(&dir, &log);
    let url = file_url(&w);
    assert_eq!(get(server.addr(), &url).body, w.bytes);

    let path = dir.join(blob_path(&w.sha256));
    let original = flip_last_byte(&path);
    for method in ["GET", "HEAD"] {
        let r = request(server.addr(), method, &url, &[]);
        assert_eq!(r.status, 500, "{method}");
        assert_eq!(r.header("ETag"), None);
    }
    // Not even a 304 for a client that has the right bytes cached.
    let r = request(
        server.addr(),
        "GET",
        &url,
        &[&format!("If-None-Match: \"sha256:{}\"", w.sha256.to_hex())],
    );
    assert_eq!(r.status, 500);
    let lines = log.lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for line in &lines {
        assert!(
            line.contains(&w.sha256.to_hex()) && line.contains("corrupt") && !line.contains('\n'),
            "{line}"
        );
    }

    std::fs::write(&path, &original).unwrap();
    let r = get(server.addr(), &url);
    assert_eq!((r.status, r.body), (200, w.bytes));
    assert_eq!(log.lines().len(), 3);
}

#[test]
fn symlinked_or_missing_blobs_are_500s_with_log_lines() {
    let (tmp, dir, snapshot, w) = written("link");
    // Removed before open: open reads no blob, so it only shows per request.
    let metadata = snapshot
        .doc
        .served
        .iter()
        .find(|e| e.path.ends_with(".metadata"))
        .unwrap()
        .clone();
    std::fs::remove_file(dir.join(blob_path(&metadata.sha256))).unwrap();
    let log = Log::default();
    let server = serve_stored(&dir, &log);

    let path = dir.join(blob_path(&w.sha256));
    let outside = tmp.0.join("same-bytes.whl");
    std::fs::rename(&path, &outside).unwrap();
    symlink(&outside, &path).unwrap();

    assert_eq!(get(server.addr(), &file_url(&w)).status, 500);
    assert_eq!(get(server.addr(), &metadata.path).status, 500);
    let lines = log.lines();
    assert!(
        lines[0].contains(&w.sha256.to_hex()) && lines[0].contains("symlink"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains(&metadata.sha256.to_hex()) && lines[1].contains("missing"),
        "{lines:?}"
    );
    // The rest of the snapshot is still served.
    assert_eq!(get(server.addr(), "/simple/").status, 200);
}

#[test]
fn a_blob_changed_while_being_sent_is_not_vouched_for() {
    let (_tmp, dir, _snapshot, _w) = written("vouch");
    let big = Sha256Digest::of(&big_bytes());
    let log = Log::default();
    let store = StoredSnapshot::open(&dir).unwrap();
    // Budget 0: no sealed copies, so the blob is copied from its file, the
    // path that zero-copy serving falls back to.
    let mirror = Mirror::from_store(Arc::new(store))
        .zero_copy_budget(0)
        .log_to(log.sink());
    let req = Request {
        method: egress_http::Method::Get,
        target: format!("/files/{big}/{BIG_SDIST}"),
        version: "HTTP/1.1".into(),
        headers: vec![("Host".into(), "m".into())],
        body: Vec::new(),
        peer: "127.0.0.1:1".parse().unwrap(),
    };
    let Reply::Response(resp) = mirror.handle(req) else {
        panic!("a plain response");
    };
    let Body::File(file, len) = &resp.body else {
        panic!("a file body, not {:?}", resp.body);
    };
    assert_eq!(*len, big_bytes().len() as u64);
    // Unchanged: the server may send the last byte.
    assert!(mirror.vouch_for_file(&resp, file));
    assert!(log.lines().is_empty());
    // Rewritten in place after verification: the last byte is withheld.
    flip_last_byte(&dir.join(blob_path(&big)));
    assert!(!mirror.vouch_for_file(&resp, file));
    let lines = log.lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains(&big.to_hex()) && lines[0].contains("changed"),
        "{lines:?}"
    );
}

#[test]
fn request_log_lines() {
    let (_tmp, dir, _snapshot, w) = written("reqlog");
    let log = Log::default();
    let store = StoredSnapshot::open(&dir).unwrap();
    let mirror = Mirror::from_store(Arc::new(store))
        .log_requests(true)
        .log_to(log.sink());
    let server = Server::bind_loopback(mirror).unwrap();
    get(server.addr(), &file_url(&w));
    request(server.addr(), "HEAD", &file_url(&w), &[]);
    get(server.addr(), "/nope?x=1");
    let lines = log.lines();
    let n = w.bytes.len();
    let hex = w.sha256.to_hex();
    assert_eq!(
        lines,
        [
            format!("egress-mirror: request method=GET target={} status=200 bytes={n} digest=sha256:{hex}", file_url(&w)),
            format!("egress-mirror: request method=HEAD target={} status=200 bytes=0 digest=sha256:{hex}", file_url(&w)),
            "egress-mirror: request method=GET target=/nope?x=1 status=404 bytes=29 digest=-".to_string(),
        ]
    );
}

// ----------------------------------------------------------------- binary

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_egress-mirror"));
    c.stdin(Stdio::null());
    c
}

/// Exit code and the single stderr line.
fn fails(cmd: &mut Command, code: i32) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("egress-mirror: "), "{stderr}");
    stderr
}

#[test]
fn binary_serves_a_directory_and_reports_itself() {
    let (_tmp, dir, snapshot, w) = written("bin");
    let running = Running::start(bin().arg(&dir).arg("--listen=127.0.0.1:0"));
    let banner = running.banner.clone();
    assert!(banner.contains(&snapshot.id().to_hex()), "{banner}");
    assert!(
        banner.contains(&format!("{} blobs", snapshot.blobs.len())),
        "{banner}"
    );
    assert!(banner.contains("confinement: "), "{banner}");
    let r = get(running.addr, &file_url(&w));
    assert_eq!((r.status, &r.body), (200, &w.bytes));

    flip_last_byte(&dir.join(blob_path(&w.sha256)));
    assert_eq!(get(running.addr, &file_url(&w)).status, 500);
    let stderr = running.stop();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&w.sha256.to_hex()) && l.contains("NOT served")),
        "{stderr}"
    );
}

#[test]
fn binary_exit_codes() {
    let (tmp, dir, _snapshot, _w) = written("codes");
    let e = fails(&mut bin(), 2);
    assert!(e.contains("usage:"), "{e}");
    fails(bin().arg(&dir).arg("--bogus"), 2);
    fails(bin().arg(&dir).arg("--listen=not an address"), 2);
    fails(bin().arg(tmp.0.join("absent")), 4);

    // Port in use: exit 5, and the message names the address.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let e = fails(bin().arg(&dir).args(["--listen", &addr]), 5);
    assert!(e.contains(&addr), "{e}");

    // Bad config files: exit 7, one line naming the file.
    let config = tmp.0.join("mirror.toml");
    for text in [
        "snapshot = \n",
        "[unclosed\n",
        "listen = 8080\n",
        "require_confinement = \"yes\"\n",
        "lsiten = \"127.0.0.1:0\"\n",
        "listen = \"not an address\"\n",
    ] {
        std::fs::write(&config, text).unwrap();
        let e = fails(bin().arg(&dir).arg("--config").arg(&config), 7);
        assert!(e.contains("mirror.toml"), "{text:?}: {e}");
    }
    fails(
        bin().arg(&dir).arg("--config").arg(tmp.0.join("none.toml")),
        7,
    );

    // A snapshot whose blob directory is a symlink: exit 4.
    let real = tmp.0.join("blobs-elsewhere");
    std::fs::rename(dir.join("blobs"), &real).unwrap();
    symlink(&real, dir.join("blobs")).unwrap();
    let e = fails(bin().arg(&dir).arg("--listen=127.0.0.1:0"), 4);
    assert!(e.contains("symlink"), "{e}");
}

#[test]
fn binary_config_file_and_flag_override() {
    let (tmp, _dir, snapshot, _w) = written("config");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = tmp.0.join("mirror.toml");
    // `snapshot` relative to the file; its listen address is taken, so the
    // mirror only starts because the flag overrides it.
    std::fs::write(
        &config,
        format!(
            "snapshot = \"snap\"\nlisten = \"{}\"\nlog_requests = true\n",
            taken.local_addr().unwrap()
        ),
    )
    .unwrap();
    let e = fails(bin().arg("--config").arg(&config), 5);
    assert!(e.contains(&taken.local_addr().unwrap().to_string()), "{e}");
    let running = Running::start(
        bin()
            .arg("--config")
            .arg(&config)
            .arg("--listen=127.0.0.1:0"),
    );
    assert!(running.banner.contains(&snapshot.id().to_hex()));
    assert_eq!(get(running.addr, "/simple/").status, 200);
    let stderr = running.stop();
    assert!(
        stderr.contains("request method=GET target=/simple/ status=200"),
        "{stderr}"
    );
}

/// Whatever this kernel supports, the mirror says so, and
/// `--require-confinement` either starts confined or exits 6. When it is
/// confined, a connection to a loopback listener from inside the process
/// fails and files outside the snapshot cannot be read.
#[test]
fn binary_confinement_as_the_kernel_allows() {
    let (tmp, dir, _snapshot, _w) = written("confine");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = listener.local_addr().unwrap().to_string();
    let outside = tmp.0.join("outside.txt");
    std::fs::write(&outside, b"secret").unwrap();
    let inside = dir.join("MANIFEST");

    let self_test = |require: bool| {
        let mut cmd = bin();
        cmd.arg(&dir)
            .args(["--self-test-connect", &target])
            .arg("--self-test-read")
            .arg(&outside)
            .arg("--self-test-read")
            .arg(&inside);
        if require {
            cmd.arg("--require-confinement");
        }
        cmd.output().unwrap()
    };

    let required = self_test(true);
    let stdout = String::from_utf8_lossy(&required.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&required.stderr).into_owned();
    match required.status.code() {
        Some(0) => {
            // Landlock with network rules (ABI 4+): fully confined.
            assert!(stderr.is_empty(), "{stderr}");
            assert!(stdout.contains("outbound TCP denied"), "{stdout}");
            assert!(
                stdout.contains(&format!("connect {target}: blocked")),
                "{stdout}"
            );
            assert!(
                stdout.contains(&format!("read {}: blocked", outside.display())),
                "{stdout}"
            );
            assert!(
                stdout.contains(&format!("read {}: allowed", inside.display())),
                "{stdout}"
            );
            // Nothing ever reached the listener.
            assert!(listener.accept().is_err());
            eprintln!(
                "this kernel confines the mirror: {}",
                stdout.lines().next().unwrap_or("")
            );
        }
        Some(6) => {
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("--require-confinement"), "{stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            // Without the requirement it starts, and says what is missing.
            let lenient = self_test(false);
            assert_eq!(lenient.status.code(), Some(0), "{}", show(&lenient));
            let stderr = String::from_utf8_lossy(&lenient.stderr);
            assert!(stderr.contains("NOT"), "{stderr}");
            eprintln!("this kernel cannot confine the mirror: {stderr}");
        }
        _ => panic!("{}", show(&required)),
    }
}

/// pip against the binary, with request logs: it takes the PEP 691 JSON
/// page, the PEP 658 metadata and then the wheel, all verified from disk.
#[test]
fn binary_request_log_shows_pip_using_pep_658_metadata() {
    let (tmp, dir, _snapshot, w) = written("pip");
    let running =
        Running::start(
            bin()
                .arg(&dir)
                .args(["--listen", "127.0.0.1:0", "--log-requests"]),
        );
    let index = format!("http://{}/simple/", running.addr);
    let out = pip(
        &[
            "download",
            "--no-deps",
            "--index-url",
            &index,
            "-d",
            "dl",
            "ec-disk==1.0.0",
        ],
        &tmp.0,
    );
    let stderr = running.stop();
    assert!(out.status.success(), "{}\n{stderr}", show(&out));
    assert_eq!(
        std::fs::read(tmp.0.join("dl").join(&w.filename)).unwrap(),
        w.bytes
    );
    let url = file_url(&w);
    let requests: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("egress-mirror: request "))
        .collect();
    let page = requests
        .iter()
        .find(|l| l.contains("target=/simple/ec-disk/ "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(page.contains("status=200"), "{page}");
    let metadata = requests
        .iter()
        .position(|l| l.contains(&format!("target={url}.metadata ")) && l.contains("status=200"))
        .unwrap_or_else(|| panic!("pip did not use PEP 658 metadata:\n{stderr}"));
    let wheel = requests
        .iter()
        .position(|l| {
            l.contains(&format!("target={url} "))
                && l.contains("status=200")
                && l.contains(&format!("bytes={}", w.bytes.len()))
                && l.contains(&format!("digest=sha256:{}", w.sha256.to_hex()))
        })
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(metadata < wheel, "{stderr}");
}

/// Small blobs are served from verified bytes kept in memory once their file
/// is old enough to trust; a change on disk is still noticed on the next
/// request, re-verified, and refused.
#[test]
fn a_cached_small_blob_changed_on_disk_is_refused() {
    let (_tmp, dir, _snapshot, w) = written("cached");
    // Let the files settle so that their fingerprints are trusted and cached.
    std::thread::sleep(std::time::Duration::from_secs(
        egress_snapshot::RACY_SECS as u64 + 1,
    ));
    let log = Log::default();
    let server = serve_stored(&dir, &log);
    for _ in 0..2 {
        let r = get(server.addr(), &file_url(&w));
        assert_eq!(r.status, 200);
        assert_eq!(r.body, w.bytes);
    }
    let path = dir.join(blob_path(&w.sha256));
    flip_last_byte(&path);
    assert_eq!(get(server.addr(), &file_url(&w)).status, 500);
    let lines = log.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&w.sha256.to_hex()) && l.contains("NOT served")),
        "{lines:?}"
    );
    flip_last_byte(&path);
    let r = get(server.addr(), &file_url(&w));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, w.bytes);
}

// ------------------------------------------------------------- zero-copy

const HUGE_SDIST: &str = "ec_disk-2.0.0.tar.gz";

fn huge_bytes() -> Vec<u8> {
    (0..3 * 1024 * 1024 + 5)
        .map(|i: usize| (i * 17 % 241) as u8)
        .collect()
}

/// A signed snapshot with one 3 MiB sdist, written to `<tmp>/snap`; its
/// digest and URL.
fn written_huge(tag: &str) -> (TempDir, PathBuf, Sha256Digest, String) {
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(HUGE_SDIST, huge_bytes(), None).unwrap();
    let key = SigningKey::from_seed([9; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    let tmp = TempDir::new(&format!("egress-mirror-huge-{tag}"));
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    let digest = Sha256Digest::of(&huge_bytes());
    let url = format!("/files/{digest}/{HUGE_SDIST}");
    (tmp, dir, digest, url)
}

/// A blob over the small-blob threshold is served from a sealed copy with
/// `sendfile`: byte for byte, with its length, again and again; after a
/// byte is flipped in its file (same size) it is a 500 and a log line, as
/// on the copy path, until the file is restored.
#[test]
fn a_large_blob_is_sent_zero_copy_and_refused_once_flipped() {
    let (_tmp, dir, digest, url) = written_huge("zc");
    let log = Log::default();
    let store = Arc::new(StoredSnapshot::open(&dir).unwrap());
    // Off by default: the chunk copy.
    let default = Mirror::from_store(Arc::clone(&store));
    assert!(!default.zero_copy());
    drop(default);
    let mirror = Mirror::from_store(Arc::clone(&store))
        .zero_copy_budget(1 << 30)
        .log_to(log.sink());
    assert!(mirror.zero_copy(), "{:?}", log.lines());
    let req = Request {
        method: egress_http::Method::Get,
        target: url.clone(),
        version: "HTTP/1.1".into(),
        headers: vec![("Host".into(), "m".into())],
        body: Vec::new(),
        peer: "127.0.0.1:1".parse().unwrap(),
    };
    let Reply::Response(resp) = mirror.handle(req) else {
        panic!("a plain response");
    };
    let Body::Sealed(sealed) = &resp.body else {
        panic!("a sealed body, not {:?}", resp.body);
    };
    assert_eq!(sealed.len(), huge_bytes().len() as u64);
    drop(resp);

    let server = Server::bind_loopback(mirror).unwrap();
    for _ in 0..2 {
        let r = get(server.addr(), &url);
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("Content-Length"),
            Some(huge_bytes().len().to_string().as_str())
        );
        assert!(r.body == huge_bytes(), "served bytes differ");
    }
    let r = request(server.addr(), "HEAD", &url, &[]);
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(
        r.header("Content-Length"),
        Some(huge_bytes().len().to_string().as_str())
    );
    assert!(log.lines().is_empty(), "{:?}", log.lines());

    let path = dir.join(blob_path(&digest));
    let original = flip_last_byte(&path);
    for _ in 0..2 {
        let r = get(server.addr(), &url);
        assert_eq!(r.status, 500);
        assert_eq!(r.header("ETag"), None);
    }
    let lines = log.lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert!(
            line.contains(&digest.to_hex())
                && line.contains("NOT served")
                && line.contains("corrupt"),
            "{line}"
        );
    }
    // Nothing of the corrupt file was kept.
    assert_eq!(store.zero_copy_usage().charged_bytes, 0);

    std::fs::write(&path, &original).unwrap();
    let r = get(server.addr(), &url);
    assert_eq!(r.status, 200);
    assert!(r.body == huge_bytes());
}

/// The deployed binary, confined as far as the kernel allows: zero-copy
/// needs no filesystem access (a memfd has no path), so it works under
/// Landlock; the startup line says so, and the blob is served byte for
/// byte, then refused once flipped. By default (no budget) and with
/// `--zero-copy-budget 0` the same blob is copied from its file instead.
#[test]
fn binary_serves_large_blobs_zero_copy_under_confinement() {
    let (_tmp, dir, digest, url) = written_huge("bin-zc");
    let running = Running::start(bin().arg(&dir).args([
        "--listen=127.0.0.1:0",
        "--zero-copy-budget",
        "1GiB",
    ]));
    let banner = running.banner.clone();
    assert!(
        banner.contains("zero-copy: sealed copies sent with sendfile, budget 1024 MiB"),
        "{banner}"
    );
    let r = get(running.addr, &url);
    assert_eq!(r.status, 200);
    assert!(r.body == huge_bytes(), "served bytes differ");
    flip_last_byte(&dir.join(blob_path(&digest)));
    assert_eq!(get(running.addr, &url).status, 500);
    let stderr = running.stop();
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&digest.to_hex()) && l.contains("NOT served")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("zero-copy serving unavailable"),
        "{stderr}"
    );
    eprintln!("{}", banner.trim());

    // Off: the same bytes, copied; off is the default.
    flip_last_byte(&dir.join(blob_path(&digest)));
    let running = Running::start(bin().arg(&dir).arg("--listen=127.0.0.1:0"));
    assert!(
        running.banner.contains("zero-copy: off"),
        "{}",
        running.banner
    );
    let r = get(running.addr, &url);
    assert_eq!(r.status, 200);
    assert!(r.body == huge_bytes(), "served bytes differ");
    drop(running);
    let running =
        Running::start(
            bin()
                .arg(&dir)
                .args(["--listen=127.0.0.1:0", "--zero-copy-budget", "0"]),
        );
    assert!(
        running.banner.contains("zero-copy: off"),
        "{}",
        running.banner
    );
    let r = get(running.addr, &url);
    assert_eq!(r.status, 200);
    assert!(r.body == huge_bytes(), "served bytes differ");
}

/// Real pip against the confined binary, with a wheel over the small-blob
/// threshold, sent zero-copy from its sealed copy (`--zero-copy-budget`,
/// opt-in): pip
/// checks the hash that the requirement pins, installs it, and the module
/// holds the wheel's bytes.
#[test]
fn binary_pip_installs_a_large_wheel_sent_zero_copy() {
    // Incompressible, so the wheel stays larger than the threshold.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..2 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let w = egress_artifacts::build_wheel(&egress_artifacts::WheelSpec {
        name: egress_model::ProjectName::new("ec-big").unwrap(),
        version: egress_model::Version::new("1.0.0").unwrap(),
        summary: "ec-big 1.0.0".into(),
        description: "large\n".into(),
        requires_python: Some(">=3.7".into()),
        files: vec![
            ("ec_big/__init__.py".into(), b"VERSION = '1.0.0'\n".to_vec()),
            ("ec_big/noise.bin".into(), noise.clone()),
        ],
    });
    assert!(w.bytes.len() as u64 > egress_snapshot::SMALL_BLOB_MAX);
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let key = SigningKey::from_seed([9; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    let tmp = TempDir::new("egress-mirror-stored-bigpip");
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();

    let running = Running::start(
        bin()
            .arg(&dir)
            .args(["--listen", "127.0.0.1:0", "--log-requests"])
            .args(["--zero-copy-budget", "1GiB"]),
    );
    assert!(
        running.banner.contains("zero-copy: sealed copies"),
        "{}",
        running.banner
    );
    std::fs::write(
        tmp.0.join("requirements.txt"),
        format!("ec-big==1.0.0 --hash=sha256:{}\n", w.sha256.to_hex()),
    )
    .unwrap();
    let index = format!("http://{}/simple/", running.addr);
    let out = pip(
        &[
            "install",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
            "site",
            "--index-url",
            &index,
            "-r",
            "requirements.txt",
        ],
        &tmp.0,
    );
    let stderr = running.stop();
    assert!(out.status.success(), "{}\n{stderr}", show(&out));
    assert!(
        std::fs::read(tmp.0.join("site/ec_big/noise.bin")).unwrap() == noise,
        "installed bytes differ"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&format!("target={} ", file_url(&w)))
                && l.contains("status=200")
                && l.contains(&format!("bytes={}", w.bytes.len()))),
        "{stderr}"
    );
}

/// `--instance-dir`: the public key is written at start, every nonce gets a
/// fresh statement signed by it (the snapshot ID, the binary's sha256, the
/// confinement), and the certificate deployed in the directory is sent
/// from the next answer on; a bad nonce is a 400; without the flag the
/// route does not exist; an unusable directory is exit 9.
#[test]
fn binary_attests_its_instance_with_the_certificate_deployed_beside_it() {
    use egress_signing::{Attestation, Certificate};
    let (tmp, dir, snapshot, _w) = written("attest");
    let inst = tmp.0.join("instance");
    std::fs::create_dir_all(&inst).unwrap();
    let running = Running::start(
        bin()
            .arg(&dir)
            .arg("--listen=127.0.0.1:0")
            .arg("--instance-dir")
            .arg(&inst),
    );
    let line = std::fs::read_to_string(inst.join("instance.pub")).unwrap();
    let public = egress_signing::PublicKey::parse_openssh(&line).unwrap();
    assert!(line.contains(&snapshot.id().to_hex()), "{line}");
    let binary = Sha256Digest::of(&std::fs::read(env!("CARGO_BIN_EXE_egress-mirror")).unwrap());

    let ask = |nonce: &str| get(running.addr, &format!("{}{nonce}", well_known::ATTEST));
    let nonce = "ab".repeat(32);
    let r = ask(&nonce);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let a = Attestation::parse(&r.body).unwrap();
    a.verify_signature().unwrap();
    assert_eq!(a.statement.instance_key, public);
    assert_eq!(a.statement.nonce, vec![0xab; 32]);
    assert_eq!(a.statement.snapshot, snapshot.id());
    assert_eq!(a.statement.binary, binary);
    assert!(
        a.statement.confinement.contains("landlock")
            || a.statement.confinement.contains("NOT confined")
    );
    assert_eq!(a.certificate, None);

    // Deployed while the mirror runs (and confined): sent from now on.
    let lab = SigningKey::from_seed([9; 32], "test");
    let cert = Certificate::issue(&lab, &public, snapshot.id()).to_text();
    std::fs::write(inst.join("instance.cert"), &cert).unwrap();
    let a = Attestation::parse(&ask(&"cd".repeat(16)).body).unwrap();
    assert_eq!(a.statement.nonce, vec![0xcd; 16]);
    assert_eq!(a.certificate.as_deref(), Some(cert.as_bytes()));

    for bad in [
        "",
        "AB",
        &"ab".repeat(8),
        &"ab".repeat(65),
        &format!("{}zz", "ab".repeat(16)),
    ] {
        assert_eq!(ask(bad).status, 400, "{bad:?}");
    }
    drop(running);

    let plain = Running::start(bin().arg(&dir).arg("--listen=127.0.0.1:0"));
    assert_eq!(
        get(plain.addr, &format!("{}{nonce}", well_known::ATTEST)).status,
        404
    );
    drop(plain);

    let e = fails(
        bin()
            .arg(&dir)
            .arg("--instance-dir")
            .arg(tmp.0.join("absent")),
        9,
    );
    assert!(
        e.contains("--instance-dir") && e.contains("instance.pub"),
        "{e}"
    );
}

/// `Handler::handle_now` (answered on the connection's worker, without the
/// hop to the blocking pool) answers only what needs no file read: a
/// refusal, or a small blob already verified and in memory whose file is
/// unchanged. Everything else is left to `handle`, which verifies.
#[test]
fn answers_on_the_worker_only_what_is_verified_and_in_memory() {
    let (_tmp, dir, _snapshot, w) = written("now");
    std::thread::sleep(std::time::Duration::from_secs(
        egress_snapshot::RACY_SECS as u64 + 1,
    ));
    let store = StoredSnapshot::open(&dir).unwrap();
    let mirror = Mirror::from_store(Arc::new(store));
    let req = |method: &str, target: &str| {
        let raw = format!("{method} {target} HTTP/1.1\r\nHost: m\r\n\r\n");
        egress_http::parse_request(raw.as_bytes(), &egress_http::Limits::default()).unwrap()
    };
    let status = |reply: Reply| match reply {
        Reply::Response(r) => r.status,
        _ => panic!("not a response"),
    };
    let file = file_url(&w);
    // Refusals need nothing from disk.
    assert_eq!(
        mirror.handle_now(&req("POST", &file)).map(status),
        Some(405)
    );
    assert_eq!(
        mirror.handle_now(&req("GET", "/nope")).map(status),
        Some(404)
    );
    // Not yet verified: left to `handle`.
    assert!(mirror.handle_now(&req("GET", &file)).is_none());
    assert_eq!(status(mirror.handle(req("GET", &file))), 200);
    // Verified and cached: answered now, with the verified bytes.
    match mirror.handle_now(&req("GET", &file)) {
        Some(Reply::Response(r)) => {
            assert_eq!(r.status, 200);
            match r.body {
                Body::Shared(bytes) => assert_eq!(&bytes[..], &w.bytes[..]),
                _ => panic!("not the bytes in memory"),
            }
        }
        _ => panic!("a cached blob was not answered now"),
    }
    // A blob too large for memory is always left to `handle`.
    let big = format!("/files/{}/{BIG_SDIST}", Sha256Digest::of(&big_bytes()));
    assert!(mirror.handle_now(&req("GET", &big)).is_none());
    // A changed file is noticed at once and left to `handle`, which refuses.
    let path = dir.join(blob_path(&w.sha256));
    flip_last_byte(&path);
    assert!(mirror.handle_now(&req("GET", &file)).is_none());
    assert_eq!(status(mirror.handle(req("GET", &file))), 500);
    // Logging every request keeps everything off the worker.
    flip_last_byte(&path);
    let logged =
        Mirror::from_store(Arc::new(StoredSnapshot::open(&dir).unwrap())).log_requests(true);
    assert!(logged.handle_now(&req("POST", &file)).is_none());
}

/// `Range` over the wire, for a small blob (from memory), a large one
/// copied from its verified file and a large one whose sealed copy is sent
/// only whole: the bytes asked for, `206` and `Content-Range`; a range past
/// the end `416`; a malformed or multiple range, or an `If-Range` naming
/// another representation, the whole blob.
#[test]
fn one_range_of_any_blob_is_served() {
    let (_tmp, dir, _snapshot, w) = written("range");
    let big = big_bytes();
    let big_url = format!("/files/{}/{BIG_SDIST}", Sha256Digest::of(&big));
    for budget in [0, 64 << 20] {
        let store = StoredSnapshot::open(&dir).unwrap();
        let mirror = Mirror::from_store(Arc::new(store)).zero_copy_budget(budget);
        let server = Server::bind_loopback(mirror).unwrap();
        let addr = server.addr();
        for (url, bytes) in [
            (file_url(&w), w.bytes.clone()),
            (big_url.clone(), big.clone()),
        ] {
            let n = bytes.len();
            let mid = n / 2;
            let r = request(
                addr,
                "GET",
                &url,
                &[&format!("Range: bytes={mid}-{}", mid + 99)],
            );
            assert_eq!(r.status, 206, "{url} budget {budget}");
            assert_eq!(r.body, bytes[mid..mid + 100], "{url} budget {budget}");
            assert_eq!(
                r.header("content-range"),
                Some(format!("bytes {mid}-{}/{n}", mid + 99).as_str())
            );
            let r = request(addr, "GET", &url, &["Range: bytes=-10"]);
            assert_eq!((r.status, &r.body[..]), (206, &bytes[n - 10..]));
            let r = request(addr, "GET", &url, &[&format!("Range: bytes={n}-")]);
            assert_eq!(r.status, 416);
            assert_eq!(
                r.header("content-range"),
                Some(format!("bytes */{n}").as_str())
            );
            for whole in [
                vec!["Range: bytes=0-1,5-6".to_string()],
                vec!["Range: bytes=9-3".to_string()],
                vec![
                    "Range: bytes=0-1".to_string(),
                    "Range: bytes=2-3".to_string(),
                ],
                vec![
                    "Range: bytes=0-1".to_string(),
                    "If-Range: \"other\"".to_string(),
                ],
            ] {
                let h: Vec<&str> = whole.iter().map(String::as_str).collect();
                let r = request(addr, "GET", &url, &h);
                assert_eq!((r.status, r.body.len()), (200, n), "{whole:?}");
                assert_eq!(r.header("accept-ranges"), Some("bytes"));
            }
            // An If-Range with the blob's own ETag keeps the range.
            let etag = request(addr, "HEAD", &url, &[])
                .header("etag")
                .unwrap()
                .to_string();
            let r = request(
                addr,
                "GET",
                &url,
                &["Range: bytes=0-0", &format!("If-Range: {etag}")],
            );
            assert_eq!((r.status, &r.body[..]), (206, &bytes[..1]));
        }
        server.stop();
    }
}
