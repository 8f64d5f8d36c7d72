//! `snapshot push` and `snapshot pull` against Debian's docker-registry
//! 2.8.2 (scripts/setup-infra), started on a loopback port by each test
//! and stopped by its PID: the round trip over http and https, a layer's
//! push skipping the blobs it shares, skopeo listing the artifact, a pull
//! killed mid-blob that resumes with a Range request, a registry relay
//! that flips a byte, and a bearer-token registry with the credential
//! read from a Docker config.

use egress_artifacts::{build_wheel, WheelSpec};
use egress_model::{ProjectName, Sha256Digest, Version};
use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::{s, tmpdir, workspace};

fn infra(path: &str) -> PathBuf {
    let dir = std::env::var_os("EGRESS_INFRA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/infra"));
    let bin = dir.join(path);
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup-infra (scripts/test does)",
        bin.display()
    );
    bin
}

/// docker-registry serving from a store in `dir`, on a loopback port.
struct Registry {
    child: Child,
    port: u16,
}

impl Registry {
    /// `http` is the `http:` section's extra lines (tls), `auth` the
    /// `auth:` section (or empty).
    fn start(dir: &Path, http: &str, auth: &str) -> Registry {
        fs::create_dir_all(dir).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = dir.join("registry.yml");
        fs::write(
            &cfg,
            format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:{port}\n{http}{auth}",
                dir.join("store").display()
            ),
        )
        .unwrap();
        let child = Command::new(infra("docker-registry/root/usr/bin/docker-registry"))
            .arg("serve")
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.join("registry.log")).unwrap())
            .spawn()
            .unwrap();
        let r = Registry { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "docker-registry did not listen: {}",
                fs::read_to_string(dir.join("registry.log")).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(50));
        }
        r
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the binary with a Docker config of the test's own (never the
/// machine's).
fn run(docker_config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(args)
        .env("DOCKER_CONFIG", docker_config)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Bytes that do not compress, so that a wheel holding them is that large.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn wheel(dir: &Path, name: &str, body: Vec<u8>) {
    fs::create_dir_all(dir).unwrap();
    let w = build_wheel(&WheelSpec {
        name: ProjectName::new(name).unwrap(),
        version: Version::new("1.0").unwrap(),
        summary: "s".into(),
        description: String::new(),
        requires_python: None,
        files: vec![(format!("{name}/data.bin"), body)],
    });
    fs::write(dir.join(&w.filename), &w.bytes).unwrap();
}

/// A key, and a signed snapshot at `dir/snap` with a 4 MiB wheel and a
/// small one.
struct Fixture {
    dir: PathBuf,
    key: PathBuf,
    signers: PathBuf,
    snap: PathBuf,
    /// The large wheel's blob.
    big: Sha256Digest,
}

fn fixture(name: &str) -> Fixture {
    let dir = tmpdir(name);
    let key = dir.join("lab");
    let o = run(&dir, &["key", "generate", "--out", s(&key)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let dists = dir.join("d1");
    wheel(&dists, "alpha", b"a = 1".to_vec());
    wheel(&dists, "big", noise(4 << 20, 7));
    let big_bytes = fs::read_dir(&dists)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| s(p).contains("big-1.0"))
        .map(|p| fs::read(p).unwrap())
        .unwrap();
    let snap = dir.join("snap");
    let o = run(
        &dir,
        &[
            "snapshot",
            "build",
            "--dist",
            s(&dists),
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    Fixture {
        signers: dir.join("lab.allowed_signers"),
        big: Sha256Digest::of(&big_bytes),
        dir,
        key,
        snap,
    }
}

/// The digests of every file a push of `snap` sends (evidence files and
/// everything its MANIFEST lists).
fn pushed_digests(snap: &Path) -> Vec<Sha256Digest> {
    let manifest = fs::read(snap.join("MANIFEST")).unwrap();
    let mut out: Vec<Sha256Digest> = ["MANIFEST", "MANIFEST.sig", "allowed_signers"]
        .iter()
        .map(|f| Sha256Digest::of(&fs::read(snap.join(f)).unwrap()))
        .collect();
    for line in String::from_utf8(manifest).unwrap().lines() {
        out.push(Sha256Digest::from_hex(line.split_once("  ").unwrap().0).unwrap());
    }
    out
}

/// `manifest sha256:HEX;` of a push's last line.
fn manifest_digest(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    let at = out.find("manifest sha256:").expect("a manifest digest") + "manifest ".len();
    out[at..at + 71].to_string()
}

fn count(o: &Output, prefix: &str) -> usize {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

fn push(f: &Fixture, snap: &Path, reference: &str, extra: &[&str]) -> Output {
    let mut args = vec!["snapshot", "push", s(snap), reference];
    args.extend_from_slice(extra);
    run(&f.dir, &args)
}

fn pull(f: &Fixture, reference: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "snapshot",
        "pull",
        reference,
        s(out),
        "--allowed-signers",
        s(&f.signers),
    ];
    args.extend_from_slice(extra);
    run(&f.dir, &args)
}

fn verified(f: &Fixture, dir: &Path) {
    let o = run(
        &f.dir,
        &[
            "snapshot",
            "verify",
            s(dir),
            "--allowed-signers",
            s(&f.signers),
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_eq!(
        fs::read(dir.join("MANIFEST")).unwrap(),
        fs::read(f.snap.join("MANIFEST")).unwrap()
    );
}

#[test]
fn push_pull_round_trip_a_layer_skips_shared_blobs_and_skopeo_lists_it() {
    let f = fixture("oci-round-trip");
    let reg = Registry::start(&f.dir.join("registry"), "", "");
    let v1 = format!("{}/lab/snaps:v1", reg.host());
    // Small chunks: the 4 MiB blob goes up in five PATCH requests.
    let o = push(
        &f,
        &f.snap,
        &v1,
        &["--plain-http", "--chunk-size", "1000000"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let files = pushed_digests(&f.snap);
    let distinct: BTreeSet<_> = files.iter().collect();
    // Every distinct file uploaded once (allowed_signers is also a blob).
    assert_eq!(count(&o, "uploaded "), distinct.len(), "{}", text(&o));
    assert_eq!(
        count(&o, "uploaded ") + count(&o, "skipped "),
        files.len(),
        "{}",
        text(&o)
    );
    let digest = manifest_digest(&o);

    // skopeo, a standard client, lists it with our artifactType.
    let sk = Command::new(infra("skopeo/root/usr/bin/skopeo"))
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{v1}"))
        .env("DOCKER_CONFIG", &f.dir)
        .output()
        .unwrap();
    assert!(sk.status.success(), "{}", text(&sk));
    let raw = sk.stdout.clone();
    assert_eq!(
        format!("sha256:{}", Sha256Digest::of(&raw).to_hex()),
        digest
    );
    let m: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(
        m["artifactType"],
        "application/vnd.egress-conformance.snapshot.v1"
    );
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    assert_eq!(m["layers"].as_array().unwrap().len(), files.len());
    assert_eq!(
        m["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "MANIFEST"
    );

    // Pulled by tag and by digest, each verified.
    let out = f.dir.join("pulled");
    let o = pull(&f, &v1, &out, &["--plain-http"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    verified(&f, &out);
    let by_digest = format!("{}/lab/snaps@{digest}", reg.host());
    let out2 = f.dir.join("pulled-by-digest");
    let o = pull(&f, &by_digest, &out2, &["--plain-http"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    verified(&f, &out2);
    // An existing DIR is refused.
    let o = pull(&f, &v1, &out, &["--plain-http"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("exists"), "{}", text(&o));

    // Signed by someone else: exit 16, nothing at DIR.
    let other = f.dir.join("other");
    let o = run(&f.dir, &["key", "generate", "--out", s(&other)]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let stranger = f.dir.join("stranger-pull");
    let o = run(
        &f.dir,
        &[
            "snapshot",
            "pull",
            &v1,
            s(&stranger),
            "--allowed-signers",
            s(&f.dir.join("other.allowed_signers")),
            "--plain-http",
        ],
    );
    assert_eq!(code(&o), 16, "{}", text(&o));
    assert!(!stranger.exists());

    // A layer on it shares the base's blobs: its push uploads only what is
    // new, and skips exactly the files whose digests v1 pushed.
    wheel(&f.dir.join("d2"), "gamma", b"g = 1".to_vec());
    let layer = f.dir.join("layer");
    let o = run(
        &f.dir,
        &[
            "snapshot",
            "build",
            "--base",
            s(&f.snap),
            "--dist",
            s(&f.dir.join("d2")),
            "--sign-key",
            s(&f.key),
            "--out",
            s(&layer),
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let v2 = format!("{}/lab/snaps:v2", reg.host());
    let o = push(&f, &layer, &v2, &["--plain-http"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let layer_files = pushed_digests(&layer);
    let shared = layer_files.iter().filter(|d| distinct.contains(d)).count();
    assert!(shared >= 3, "the layer shares the base's blobs");
    let mut seen: BTreeSet<Sha256Digest> = distinct.iter().map(|d| **d).collect();
    let new: usize = layer_files.iter().filter(|d| seen.insert(**d)).count();
    assert_eq!(count(&o, "uploaded "), new, "{}", text(&o));
    assert_eq!(
        count(&o, "skipped "),
        layer_files.len() - new,
        "{}",
        text(&o)
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout)
            .contains(&format!("uploaded blobs/sha256/{}", f.big.to_hex())),
        "the 4 MiB blob is not uploaded again"
    );
    let out3 = f.dir.join("pulled-layer");
    let o = run(
        &f.dir,
        &[
            "snapshot",
            "pull",
            &v2,
            s(&out3),
            "--allowed-signers",
            s(&f.signers),
            "--plain-http",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));

    // Bad input: one line each, its own exit code.
    let o = push(&f, &f.snap, "lab/snaps:v1", &["--plain-http"]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("HOST[:PORT]/REPO:TAG"), "{}", text(&o));
    let o = push(&f, &f.dir, &v1, &["--plain-http"]);
    assert_eq!(code(&o), 4, "{}", text(&o));
    let o = pull(
        &f,
        "127.0.0.1:9/lab/snaps:v1",
        &f.dir.join("x"),
        &["--plain-http"],
    );
    assert_eq!(code(&o), 15, "{}", text(&o));
    let o = pull(
        &f,
        &format!("{}/lab/absent:v1", reg.host()),
        &f.dir.join("x"),
        &["--plain-http"],
    );
    assert_eq!(code(&o), 15, "{}", text(&o));
    assert!(text(&o).contains("HTTP 404"), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).lines().count(),
        1,
        "{}",
        text(&o)
    );
    let _ = fs::remove_dir_all(&f.dir);
}

#[test]
fn push_and_pull_over_https_with_a_test_ca() {
    let f = fixture("oci-https");
    let ca = egress_testca::TestCa::new(&f.dir);
    let tls = format!(
        "  tls:\n    certificate: {}\n    key: {}\n",
        ca.server.cert.display(),
        ca.server.key.display()
    );
    let reg = Registry::start(&f.dir.join("registry"), &tls, "");
    let v1 = format!("localhost:{}/lab/snaps:v1", reg.port);
    let cacert = ["--cacert", s(&ca.ca_cert)];
    // Without the CA the registry is not trusted.
    let o = push(&f, &f.snap, &v1, &[]);
    assert_eq!(code(&o), 15, "{}", text(&o));
    let o = push(&f, &f.snap, &v1, &cacert);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = f.dir.join("pulled");
    let o = pull(&f, &v1, &out, &cacert);
    assert_eq!(code(&o), 0, "{}", text(&o));
    verified(&f, &out);
    let _ = fs::remove_dir_all(&f.dir);
}

/// What the relay does to the response for the watched blob.
#[derive(Clone, Copy)]
enum Act {
    /// Forward it as it is.
    Pass,
    /// Forward this many bytes of it, then hold the connection open.
    Stall(usize),
    /// Forward this many bytes of it and close, the first time only.
    CutOnce(usize),
    /// Flip one byte of its body.
    Flip,
}

/// A loopback relay in front of the registry, one request per connection
/// (the client sends `Connection: close`), recording each request head
/// and the body bytes sent for the watched blob.
struct Relay {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    blob_bytes: Arc<AtomicU64>,
}

fn relay(upstream: SocketAddr, watched: &Sha256Digest, act: Act) -> Relay {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let blob_bytes = Arc::new(AtomicU64::new(0));
    let watched = format!("/blobs/sha256:{}", watched.to_hex());
    let (h, b) = (heads.clone(), blob_bytes.clone());
    let cut = Arc::new(AtomicU64::new(0));
    thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut client) = conn else { return };
            let (h, b, watched, cut) = (h.clone(), b.clone(), watched.clone(), cut.clone());
            thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head_text = String::from_utf8_lossy(&head).into_owned();
                h.lock().unwrap().push(head_text.clone());
                let Ok(mut up) = TcpStream::connect(upstream) else {
                    return;
                };
                let _ = up.write_all(&head);
                let mut resp = Vec::new();
                let _ = up.read_to_end(&mut resp);
                let is_blob = head_text.starts_with("GET ") && head_text.contains(&watched);
                let body_at = resp
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .map_or(resp.len(), |p| p + 4);
                let act = if is_blob { act } else { Act::Pass };
                let send = match act {
                    Act::Pass => resp.len(),
                    Act::Stall(n) => (body_at + n).min(resp.len()),
                    Act::CutOnce(n) if cut.fetch_add(1, Ordering::SeqCst) == 0 => {
                        (body_at + n).min(resp.len())
                    }
                    Act::CutOnce(_) => resp.len(),
                    Act::Flip => {
                        if let Some(x) = resp.get_mut(body_at + 1000) {
                            *x ^= 0xff;
                        }
                        resp.len()
                    }
                };
                let _ = client.write_all(&resp[..send]);
                if is_blob {
                    b.fetch_add((send - body_at.min(send)) as u64, Ordering::SeqCst);
                }
                if let Act::Stall(_) = act {
                    thread::sleep(Duration::from_secs(120));
                }
            });
        }
    });
    Relay {
        addr,
        heads,
        blob_bytes,
    }
}

#[test]
fn a_pull_killed_mid_blob_leaves_nothing_at_dir_and_resumes_with_a_range_request() {
    let f = fixture("oci-resume");
    let reg = Registry::start(&f.dir.join("registry"), "", "");
    let upstream: SocketAddr = reg.host().parse().unwrap();
    let o = push(
        &f,
        &f.snap,
        &format!("{}/lab/snaps:v1", reg.host()),
        &["--plain-http"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let digest = manifest_digest(&o);
    let size = fs::metadata(f.snap.join(format!("blobs/sha256/{}", f.big.to_hex())))
        .unwrap()
        .len();

    // The pull is killed (SIGKILL, by its PID) while the relay holds the
    // large blob after 1.5 MiB.
    let stall = relay(upstream, &f.big, Act::Stall(1536 * 1024));
    let out = f.dir.join("pulled");
    let mut child = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(["snapshot", "pull"])
        .arg(format!("{}/lab/snaps:v1", stall.addr))
        .arg(&out)
        .arg("--allowed-signers")
        .arg(&f.signers)
        .arg("--plain-http")
        .env("DOCKER_CONFIG", &f.dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stage = f
        .dir
        .join(format!(".pulled.pull-{}", &digest["sha256:".len()..][..16]));
    let part = stage.join(format!("blobs/sha256/{}.part", f.big.to_hex()));
    let start = Instant::now();
    while fs::metadata(&part).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(start.elapsed() < Duration::from_secs(30), "no partial file");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "nothing is visible at DIR");
    let kept = fs::metadata(&part).unwrap().len();
    assert!(kept >= 1 << 20 && kept < size, "{kept}");

    // Pulled again (through a relay that only counts): one Range request
    // from where the partial file ends, and only the rest is fetched.
    let count = relay(upstream, &f.big, Act::Pass);
    let o = pull(
        &f,
        &format!("{}/lab/snaps:v1", count.addr),
        &out,
        &["--plain-http"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    verified(&f, &out);
    let heads = count.heads.lock().unwrap().clone();
    let blob_gets: Vec<&String> = heads
        .iter()
        .filter(|h| h.starts_with("GET ") && h.contains(&f.big.to_hex()))
        .collect();
    assert_eq!(blob_gets.len(), 1, "{heads:?}");
    assert!(
        blob_gets[0].contains(&format!("\r\nRange: bytes={kept}-\r\n")),
        "{}",
        blob_gets[0]
    );
    assert_eq!(count.blob_bytes.load(Ordering::SeqCst), size - kept);
    assert!(
        text(&o).contains(&format!("at byte {kept} of {size}")),
        "{}",
        text(&o)
    );
    assert!(!stage.exists(), "the staging directory became DIR");

    // A connection cut mid-blob within one pull: it resumes there itself.
    let cut = relay(upstream, &f.big, Act::CutOnce(1 << 20));
    let out2 = f.dir.join("pulled-after-a-cut");
    let o = pull(
        &f,
        &format!("{}/lab/snaps:v1", cut.addr),
        &out2,
        &["--plain-http"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    verified(&f, &out2);
    let heads = cut.heads.lock().unwrap().clone();
    assert!(
        heads
            .iter()
            .any(|h| h.contains(&f.big.to_hex()) && h.contains("\r\nRange: bytes=")),
        "{heads:?}"
    );
    // The first 1 MiB once, then the rest: nothing fetched twice.
    assert_eq!(cut.blob_bytes.load(Ordering::SeqCst), size);
    drop(stall);
    let _ = fs::remove_dir_all(&f.dir);
}

#[test]
fn a_registry_serving_a_blob_whose_digest_differs_is_refused_and_nothing_is_written() {
    let f = fixture("oci-flip");
    let reg = Registry::start(&f.dir.join("registry"), "", "");
    let upstream: SocketAddr = reg.host().parse().unwrap();
    let o = push(
        &f,
        &f.snap,
        &format!("{}/lab/snaps:v1", reg.host()),
        &["--plain-http"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    let flip = relay(upstream, &f.big, Act::Flip);
    let out = f.dir.join("pulled");
    let o = pull(
        &f,
        &format!("{}/lab/snaps:v1", flip.addr),
        &out,
        &["--plain-http"],
    );
    assert_eq!(code(&o), 16, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&f.big.to_hex()) && err.contains("refused"),
        "{err}"
    );
    assert!(!out.exists());
    // No file with the wrong bytes is kept anywhere near DIR.
    let bad = walk(&f.dir)
        .into_iter()
        .filter(|p| {
            s(p).contains(&f.big.to_hex())
                && !s(p).contains("/snap/")
                && !s(p).contains("/registry/")
        })
        .collect::<Vec<_>>();
    assert!(bad.is_empty(), "{bad:?}");
    let _ = fs::remove_dir_all(&f.dir);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// base64url without padding, as JWTs are written.
fn b64url(data: &[u8]) -> String {
    egress_model::base64::encode(data)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

fn pem_der(path: &Path) -> Vec<u8> {
    let text = fs::read_to_string(path).unwrap();
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    egress_model::base64::decode(&body).unwrap()
}

fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// A token server as docker's token protocol has it: `GET
/// /token?service=…&scope=…` with a Basic credential; for the one it
/// knows, an ES256 JWT (its certificate in `x5c`, issued by the test CA the
/// registry trusts) granting the scope asked for; 401 otherwise.
struct TokenServer {
    port: u16,
    issued: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
}

fn token_server(ca: &egress_testca::TestCa, credential: &str) -> TokenServer {
    let signer = ca.issue("token", "DNS:token.test");
    let rng = ring::rand::SystemRandom::new();
    let key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &pem_der(&signer.key),
        &rng,
    )
    .unwrap();
    let x5c = egress_model::base64::encode(&pem_der(&signer.cert));
    let want = format!(
        "Basic {}",
        egress_model::base64::encode(credential.as_bytes())
    );
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (issued, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (i, r) = (issued.clone(), refused.clone());
    thread::spawn(move || {
        for (n, conn) in l.incoming().enumerate() {
            let Ok(mut c) = conn else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if c.read(&mut byte).unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let target = head.split(' ').nth(1).unwrap_or("").to_string();
            let query = target.split_once('?').map_or("", |q| q.1);
            let param = |k: &str| {
                query
                    .split('&')
                    .find_map(|p| p.strip_prefix(&format!("{k}=")))
                    .map(percent_decode)
            };
            let authorized = head
                .lines()
                .any(|l| l.strip_prefix("Authorization: ") == Some(want.as_str()));
            if !authorized {
                r.fetch_add(1, Ordering::SeqCst);
                let _ = c.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            let access: Vec<serde_json::Value> = param("scope")
                .into_iter()
                .filter_map(|s| {
                    let mut parts = s.splitn(3, ':');
                    let (t, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                    Some(serde_json::json!({
                        "type": t, "name": name,
                        "actions": actions.split(',').collect::<Vec<_>>()
                    }))
                })
                .collect();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [x5c]});
            let claims = serde_json::json!({
                "iss": "egress-test-issuer", "sub": "lab", "aud": param("service").unwrap_or_default(),
                "exp": now + 300, "nbf": now - 10, "iat": now - 10, "jti": format!("t{n}"),
                "access": access,
            });
            let signing = format!(
                "{}.{}",
                b64url(header.to_string().as_bytes()),
                b64url(claims.to_string().as_bytes())
            );
            let sig = key.sign(&rng, signing.as_bytes()).unwrap();
            let body = serde_json::json!({"token": format!("{signing}.{}", b64url(sig.as_ref()))})
                .to_string();
            i.fetch_add(1, Ordering::SeqCst);
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    TokenServer {
        port,
        issued,
        refused,
    }
}

fn docker_config(dir: &Path, host: &str, credential: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let auth = egress_model::base64::encode(credential.as_bytes());
    fs::write(
        dir.join("config.json"),
        format!(r#"{{"auths": {{"{host}": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    dir.to_path_buf()
}

#[test]
fn a_bearer_token_registry_with_the_credential_from_the_docker_config() {
    let f = fixture("oci-token");
    let ca = egress_testca::TestCa::new(&f.dir);
    let secret = "lab:s3cret-Pa55";
    let tokens = token_server(&ca, secret);
    let auth = format!(
        "auth:\n  token:\n    realm: http://127.0.0.1:{}/token\n    service: egress-test-registry\n    issuer: egress-test-issuer\n    rootcertbundle: {}\n",
        tokens.port,
        ca.ca_cert.display()
    );
    let reg = Registry::start(&f.dir.join("registry"), "", &auth);
    let v1 = format!("{}/lab/snaps:v1", reg.host());
    let good = docker_config(&f.dir.join("good"), &reg.host(), secret);
    let wrong = docker_config(&f.dir.join("wrong"), &reg.host(), "lab:not-it");
    let none = f.dir.join("none");
    let secrets = [
        "s3cret-Pa55".to_string(),
        egress_model::base64::encode(secret.as_bytes()),
        "not-it".to_string(),
        "eyJ".to_string(), // any JWT
    ];
    let clean = |o: &Output| {
        let t = text(o);
        for s in &secrets {
            assert!(!t.contains(s.as_str()), "a secret was printed: {t}");
        }
    };

    // Without a credential, or with a wrong one: exit 15, one line, no secret.
    for (dir, says) in [(&none, "no credential"), (&wrong, "credential was refused")] {
        let o = run(dir, &["snapshot", "push", s(&f.snap), &v1, "--plain-http"]);
        assert_eq!(code(&o), 15, "{}", text(&o));
        assert!(text(&o).contains(says), "{}", text(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr).lines().count(),
            1,
            "{}",
            text(&o)
        );
        clean(&o);
    }
    assert!(tokens.refused.load(Ordering::SeqCst) >= 2);
    assert_eq!(tokens.issued.load(Ordering::SeqCst), 0);

    let o = run(
        &good,
        &["snapshot", "push", s(&f.snap), &v1, "--plain-http"],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    clean(&o);
    let out = f.dir.join("pulled");
    let o = run(
        &good,
        &[
            "snapshot",
            "pull",
            &v1,
            s(&out),
            "--allowed-signers",
            s(&f.signers),
            "--plain-http",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o));
    clean(&o);
    verified(&f, &out);
    assert!(tokens.issued.load(Ordering::SeqCst) >= 2);
    let _ = fs::remove_dir_all(&f.dir);
}
