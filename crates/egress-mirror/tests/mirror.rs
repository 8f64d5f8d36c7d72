//! The reference mirror on a real socket: raw HTTP/1.1 requests for every
//! rule, the real pip against it, and the binary's exit codes.

use egress_artifacts::{build_sdist, read_wheel_metadata, BuiltDist, SdistSpec};
use egress_http::ServerHandle;
use egress_model::{ProjectName, Sha256Digest, Version};
use egress_signing::SigningKey;
use egress_simple::{parse_project_html, parse_project_json, HTML_V1, JSON_V1};
use egress_snapshot::{well_known, Snapshot, SnapshotBuilder};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

#[allow(dead_code)]
mod common;

use common::{pip, raw, request, Resp, TempDir};

fn wheel(name: &str, version: &str) -> BuiltDist {
    common::wheel(name, version, "served by the reference mirror\n")
}

struct Fixture {
    snapshot: Arc<Snapshot>,
    present: BuiltDist,
    server: ServerHandle,
}

impl Fixture {
    fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    fn file_url(&self) -> String {
        format!("/files/{}/{}", self.present.sha256, self.present.filename)
    }
}

fn build_snapshot() -> (Snapshot, BuiltDist) {
    let present = wheel("ec-present", "1.0.0");
    let yanked = wheel("ec-present", "0.9.0");
    let other = wheel("ec-other", "2.0.0");
    let sdist = build_sdist(&SdistSpec {
        name: ProjectName::new("ec-present").unwrap(),
        version: Version::new("1.0.0").unwrap(),
        summary: "never built".into(),
        setup_py: "raise SystemExit('never run')\n".into(),
        files: vec![],
    });
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&present.filename, present.bytes.clone(), None)
        .unwrap();
    b.add_dist(
        &yanked.filename,
        yanked.bytes.clone(),
        Some("broken".into()),
    )
    .unwrap();
    b.add_dist(&other.filename, other.bytes.clone(), None)
        .unwrap();
    b.add_dist(&sdist.filename, sdist.bytes.clone(), None)
        .unwrap();
    let key = SigningKey::from_seed([3; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "mirror@egress.test")
        .unwrap();
    (snapshot, present)
}

fn fixture() -> Fixture {
    let (snapshot, present) = build_snapshot();
    let snapshot = Arc::new(snapshot);
    let server = egress_mirror::serve(Arc::clone(&snapshot), "127.0.0.1:0").unwrap();
    Fixture {
        snapshot,
        present,
        server,
    }
}

fn get(addr: SocketAddr, target: &str, headers: &[&str]) -> Resp {
    request(addr, "GET", target, headers)
}

fn blob(s: &Snapshot, path: &str, content_type: &str) -> Vec<u8> {
    s.blobs
        .get(&s.doc.lookup(path, content_type).unwrap().sha256)
        .unwrap()
        .to_vec()
}

fn assert_common(f: &Fixture, r: &Resp) {
    assert_eq!(
        r.header("X-Egress-Snapshot"),
        Some(f.snapshot.id().to_hex().as_str())
    );
    assert_eq!(r.header("X-Content-Type-Options"), Some("nosniff"));
}

#[test]
fn pages_are_negotiated() {
    let f = fixture();
    let page = "/simple/ec-present/";
    let html = blob(&f.snapshot, page, HTML_V1);
    let json = blob(&f.snapshot, page, JSON_V1);
    let pip_accept = "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
    for (accept, content_type, body) in [
        (Some(pip_accept), JSON_V1, &json),
        (
            Some("Accept: application/vnd.pypi.simple.latest+json"),
            JSON_V1,
            &json,
        ),
        (
            Some("Accept: application/vnd.pypi.simple.v1+html"),
            HTML_V1,
            &html,
        ),
        (Some("Accept: text/html"), "text/html", &html),
        (None, "text/html", &html),
    ] {
        let r = get(f.addr(), page, accept.as_slice());
        assert_eq!(r.status, 200, "{accept:?}");
        assert_eq!(r.header("Content-Type"), Some(content_type), "{accept:?}");
        assert_eq!(&r.body, body, "{accept:?}");
        assert_eq!(r.header("Vary"), Some("Accept"));
        assert_eq!(r.header("Cache-Control"), Some("public, max-age=600"));
        assert_eq!(
            r.header("ETag"),
            Some(format!("\"sha256:{}\"", Sha256Digest::of(body)).as_str())
        );
        assert_common(&f, &r);
    }
    assert_eq!(parse_project_json(&json).unwrap().files.len(), 3);
    assert_eq!(parse_project_html(&html).unwrap().files.len(), 3);

    let r = get(f.addr(), page, &["Accept: image/png"]);
    assert_eq!(r.status, 406);
    assert_eq!(r.header("Vary"), Some("Accept"));
    assert_common(&f, &r);

    let r = get(
        f.addr(),
        "/simple/",
        &["Accept: application/vnd.pypi.simple.v1+json"],
    );
    assert_eq!(
        (r.status, r.body),
        (200, blob(&f.snapshot, "/simple/", JSON_V1))
    );
}

#[test]
fn files_metadata_and_head() {
    let f = fixture();
    let url = f.file_url();
    let r = get(f.addr(), &url, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, f.present.bytes);
    assert_eq!(r.header("Content-Type"), Some("application/octet-stream"));
    assert_eq!(
        r.header("ETag"),
        Some(format!("\"sha256:{}\"", f.present.sha256).as_str())
    );
    assert_eq!(
        r.header("Cache-Control"),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(r.header("Vary"), None);
    assert_common(&f, &r);

    let r = get(f.addr(), &format!("{url}.metadata"), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, read_wheel_metadata(&f.present.bytes).unwrap());

    let r = request(f.addr(), "HEAD", &url, &[]);
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(
        r.header("Content-Length"),
        Some(f.present.bytes.len().to_string().as_str())
    );
    assert_eq!(
        r.header("ETag"),
        Some(format!("\"sha256:{}\"", f.present.sha256).as_str())
    );
}

#[test]
fn evidence_documents_are_served() {
    let f = fixture();
    let s = &f.snapshot;
    let expected = [
        (well_known::MANIFEST, s.manifest_bytes.clone()),
        (well_known::SNAPSHOT_JSON, s.doc_bytes.clone()),
        (
            well_known::SIGNATURE,
            s.signature.clone().unwrap().into_bytes(),
        ),
        (
            well_known::ALLOWED_SIGNERS,
            s.allowed_signers.clone().unwrap().into_bytes(),
        ),
    ];
    for (path, bytes) in expected {
        let r = get(f.addr(), path, &[]);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body, bytes, "{path}");
        assert_eq!(r.header("Content-Type"), Some("text/plain"), "{path}");
        assert_eq!(r.header("Cache-Control"), Some("no-cache"), "{path}");
    }
    // The MANIFEST's ETag is the snapshot ID.
    let r = get(f.addr(), well_known::MANIFEST, &[]);
    assert_eq!(
        r.header("ETag"),
        Some(format!("\"sha256:{}\"", s.id()).as_str())
    );
}

#[test]
fn only_get_and_head() {
    let f = fixture();
    for (method, target) in [
        ("POST", "/simple/"),
        ("PUT", f.file_url().as_str()),
        ("DELETE", f.file_url().as_str()),
        ("PATCH", "/simple/ec-present/"),
        ("PROPFIND", "/"),
        ("MKCOL", "/simple/new/"),
        ("OPTIONS", "*"),
        ("TRACE", "/"),
        ("CONNECT", "example.com:443"),
    ] {
        let r = raw(
            f.addr(),
            &format!("{method} {target} HTTP/1.1\r\nHost: mirror.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("Allow"), Some("GET, HEAD"), "{method}");
        assert_common(&f, &r);
    }
    let upload = "POST /simple/ HTTP/1.1\r\nHost: m\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    assert_eq!(raw(f.addr(), upload).status, 405);
}

#[test]
fn non_origin_form_targets_are_bad_requests() {
    let f = fixture();
    let own = format!("http://{}/simple/", f.addr());
    for target in [
        "http://example.com/simple/",
        "https://pypi.org/simple/",
        own.as_str(),
        "example.com:443",
        "*",
        "simple/",
    ] {
        let r = get(f.addr(), target, &[]);
        assert_eq!(r.status, 400, "{target}");
        assert_common(&f, &r);
    }
}

#[test]
fn everything_else_is_not_found() {
    let f = fixture();
    let hex = f.present.sha256.to_hex();
    let altered = format!(
        "{}{}",
        if hex.starts_with('0') { "1" } else { "0" },
        &hex[1..]
    );
    let name = &f.present.filename;
    let id12 = &f.snapshot.id().to_hex()[..12];
    for target in [
        "/".to_string(),
        "/etc/passwd".into(),
        "/simple/../etc/passwd".into(),
        format!("/simple/../files/{hex}/{name}"),
        "/simple/ec-present/../../.well-known/egress-mirror/MANIFEST".into(),
        "/simple/%2e%2e/%2e%2e/etc/passwd".into(),
        "/simple/%2E%2E/".into(),
        "/simple/%252e%252e/%252e%252e/etc/passwd".into(),
        "/simple/..%2f..%2fetc%2fpasswd".into(),
        "/simple/..%5c..%5cwindows".into(),
        "/simple\\..\\..\\etc\\passwd".into(),
        "/simple/ec-present/..\\..\\".into(),
        "//simple/".into(),
        "/simple//ec-present/".into(),
        "/simple/./ec-present/".into(),
        "/simple/ec-present".into(),
        "/simple/EC-PRESENT/".into(),
        "/simple/ec_present/".into(),
        "/simple/ec-absent/".into(),
        format!("/files/{altered}/{name}"),
        format!("/files/{}/{name}", hex.to_uppercase()),
        format!("/files/{hex}/{name}/"),
        format!("/files/{hex}/../{hex}/{name}"),
        format!("/files/{hex}/%2e%2e/{hex}/{name}"),
        format!("/files/{hex}/{name}%00"),
        format!("/files/{hex}/"),
        "/files/".into(),
        "/.well-known/egress-mirror/".into(),
        "/.well-known/egress-mirror/blobs/sha256/".into(),
        format!("/blobs/sha256/{hex}"),
        "/MANIFEST".into(),
    ] {
        let r = get(f.addr(), &target, &[]);
        assert_eq!(r.status, 404, "{target}");
        assert_eq!(
            r.body,
            format!("not in snapshot {id12}\n").as_bytes(),
            "{target}"
        );
        assert_common(&f, &r);
    }
}

#[test]
fn conditional_requests() {
    let f = fixture();
    let url = f.file_url();
    let tag = format!("\"sha256:{}\"", f.present.sha256);
    for header in [
        format!("If-None-Match: {tag}"),
        format!("If-None-Match: W/{tag}"),
        format!("If-None-Match: \"other\", {tag}"),
        "If-None-Match: *".to_string(),
    ] {
        let r = get(f.addr(), &url, &[&header]);
        assert_eq!(r.status, 304, "{header}");
        assert!(r.body.is_empty());
        assert_eq!(r.header("ETag"), Some(tag.as_str()));
        assert_common(&f, &r);
    }
    let r = get(f.addr(), &url, &["If-None-Match: \"sha256:0000\""]);
    assert_eq!((r.status, r.body), (200, f.present.bytes.clone()));
    // A page: the tag is per representation.
    let json = get(
        f.addr(),
        "/simple/ec-present/",
        &["Accept: application/vnd.pypi.simple.v1+json"],
    );
    let etag = json.header("ETag").unwrap().to_string();
    let r = get(
        f.addr(),
        "/simple/ec-present/",
        &[
            "Accept: application/vnd.pypi.simple.v1+json",
            &format!("If-None-Match: {etag}"),
        ],
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("Vary"), Some("Accept"));
    let r = get(
        f.addr(),
        "/simple/ec-present/",
        &["Accept: text/html", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(r.status, 200);
}

#[test]
fn query_strings_are_ignored() {
    let f = fixture();
    let plain = get(f.addr(), "/simple/ec-present/", &[]);
    for target in [
        "/simple/ec-present/?url=http://evil.example/".to_string(),
        "/simple/ec-present/?".into(),
        "/simple/ec-present/?format=json&x=../../etc/passwd".into(),
    ] {
        let r = get(f.addr(), &target, &[]);
        assert_eq!((r.status, &r.body), (200, &plain.body), "{target}");
    }
    let r = get(f.addr(), &format!("{}?download=1", f.file_url()), &[]);
    assert_eq!(r.body, f.present.bytes);
    assert_eq!(get(f.addr(), "/etc/passwd?/simple/", &[]).status, 404);
}

#[test]
fn inconsistent_snapshots_are_not_served() {
    let (mut snapshot, _) = build_snapshot();
    snapshot.doc_bytes.push(b' ');
    let Err(err) = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0") else {
        panic!("an inconsistent snapshot was served");
    };
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("SNAPSHOT.json"), "{err}");
}

// ------------------------------------------------------------------ pip

fn show(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn real_pip_downloads_and_checks_hashes() {
    let f = fixture();
    let index = format!("{}/simple/", f.server.base_url());
    let tmp = TempDir::new("egress-mirror-pip");
    let cwd = &tmp.0;

    // Plain download: pip negotiates JSON, uses PEP 658 metadata, fetches the wheel.
    let out = pip(
        &[
            "download",
            "--no-deps",
            "--index-url",
            &index,
            "-d",
            "dl",
            "ec-present==1.0.0",
        ],
        cwd,
    );
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        std::fs::read(cwd.join("dl").join(&f.present.filename)).unwrap(),
        f.present.bytes
    );

    // Hash-checking mode with the digest the snapshot publishes.
    let req = format!("ec-present==1.0.0 --hash=sha256:{}\n", f.present.sha256);
    std::fs::write(cwd.join("req.txt"), req).unwrap();
    let out = pip(
        &[
            "install",
            "--no-deps",
            "--require-hashes",
            "--index-url",
            &index,
            "--target",
            "site",
            "-r",
            "req.txt",
        ],
        cwd,
    );
    assert!(out.status.success(), "{}", show(&out));
    let installed = std::fs::read_to_string(cwd.join("site/ec_present/__init__.py")).unwrap();
    assert_eq!(installed, "VERSION = \"1.0.0\"\n");

    // A wrong hash is refused by pip.
    let wrong = format!(
        "ec-present==1.0.0 --hash=sha256:{}\n",
        Sha256Digest::of(b"other")
    );
    std::fs::write(cwd.join("wrong.txt"), wrong).unwrap();
    let out = pip(
        &[
            "download",
            "--no-deps",
            "--require-hashes",
            "--index-url",
            &index,
            "-d",
            "dl2",
            "-r",
            "wrong.txt",
        ],
        cwd,
    );
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        show(&out).contains("DO NOT MATCH THE HASHES"),
        "{}",
        show(&out)
    );

    // PEP 592: a yanked release is not picked by a range, only by an exact pin.
    let out = pip(
        &[
            "download",
            "--no-deps",
            "--index-url",
            &index,
            "-d",
            "dl3",
            "ec-present<1",
        ],
        cwd,
    );
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        show(&out).contains("from versions: 0.9.0, 1.0.0"),
        "{}",
        show(&out)
    );
    assert!(!show(&out).contains("Looking in links"), "{}", show(&out));
}

// --------------------------------------------------------------- binary

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_egress-mirror"))
}

#[test]
fn binary_exit_codes_and_serving() {
    let out = bin().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("usage:") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert_eq!(
        bin().args(["a", "b"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        bin().args(["a", "--bogus"]).output().unwrap().status.code(),
        Some(2)
    );
    assert_eq!(
        bin()
            .args(["a", "--listen"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    assert_eq!(bin().arg("--help").output().unwrap().status.code(), Some(0));

    let tmp = TempDir::new("egress-mirror-bin");
    let out = bin().arg(tmp.0.join("absent")).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));

    let (snapshot, present) = build_snapshot();
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    let mut bytes = std::fs::read(dir.join("MANIFEST")).unwrap();
    std::fs::write(tmp.0.join("MANIFEST.orig"), &bytes).unwrap();
    bytes[0] ^= 1;
    std::fs::write(dir.join("MANIFEST"), &bytes).unwrap();
    let out = bin().arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    std::fs::copy(tmp.0.join("MANIFEST.orig"), dir.join("MANIFEST")).unwrap();

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let out = bin()
        .arg(&dir)
        .args(["--listen", &taken.local_addr().unwrap().to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));

    let mut child = bin()
        .arg(&dir)
        .arg("--listen=127.0.0.1:0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let served = (|| {
        let url = line
            .split(" at http://")
            .nth(1)?
            .trim()
            .trim_end_matches('/');
        let addr: SocketAddr = url.parse().ok()?;
        Some(get(
            addr,
            &format!("/files/{}/{}", present.sha256, present.filename),
            &[],
        ))
    })();
    let _ = child.kill();
    let _ = child.wait();
    let r = served.unwrap_or_else(|| panic!("unexpected banner {line:?}"));
    assert_eq!((r.status, r.body), (200, present.bytes));
    assert!(line.contains(&snapshot.id().to_hex()), "{line}");
}
