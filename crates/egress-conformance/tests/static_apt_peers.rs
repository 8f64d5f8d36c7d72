//! The apt suite against approx, aptly and reprepro (Debian's packages,
//! installed by scripts/setup-peers, which scripts/test runs first), each in
//! front of its own apt canary, beside the apt reference: the verdicts
//! below are the ones docs/results.md explains. Real apt-get installs the
//! lab's packages from each; approx's dot segments are shown directly. A
//! peer that is not installed is named, with the setup-peers command that
//! installs it.

use egress_model::Status;
use egress_references::apt::canary::AptCanary;
use egress_references::apt::client::AptClient;
use egress_suite::Report;
use egress_testbed::suite::{self as testbed, Outcome, Paths, Variant, APT_REFERENCE};
use egress_testbed::PeerConfig;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

mod common;

use common::tmpdir;

const PEERS: [&str; 3] = ["approx", "aptly", "reprepro"];

/// The tests that start peers run one at a time: two cores, and the
/// suite's timing-sensitive sub-probes (the smuggling corpus waits for
/// quiet connections) must not measure a peer under another's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn status(r: &Report, id: &str) -> Status {
    r.probe(id)
        .map(|p| p.status)
        .or_else(|| r.predicate(id).map(|p| p.status))
        .unwrap_or_else(|| panic!("{}: no row {id}", r.target_name))
}

fn reason(r: &Report, id: &str) -> String {
    r.probe(id).map(|p| p.reason.clone()).unwrap_or_default()
}

fn only(names: &[&str]) -> Vec<Variant> {
    let mut all = testbed::variants(&Paths::find().configs).expect("testbed/peers parses");
    all.retain(|v| names.contains(&v.name()));
    assert_eq!(all.len(), names.len(), "{names:?}");
    all
}

fn statuses(out: &Outcome) -> Vec<(String, Vec<Status>)> {
    let refs: Vec<&Report> = out.reports.iter().collect();
    egress_suite::render::matrix_rows(&refs)
}

#[test]
fn approx_aptly_and_reprepro_under_the_apt_suite() {
    let _one = serial();
    let vs = only(&[APT_REFERENCE, "approx", "aptly", "reprepro"]);
    let out = testbed::run(&vs, &Paths::find().peers, |_| {});
    // "not run: approx: not installed in ...: run scripts/setup-peers approx".
    assert!(out.not_run.is_empty(), "{}", out.notes());
    assert!(out.ok(), "the apt reference column is all PASS");
    let dir = tmpdir("egress-testbed-test-static-apt");
    if let Err(f) = egress_testbed::cli::write(&dir, &vs, &out) {
        panic!("write: {}", f.message);
    }
    let v = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(["report", "verify", dir.to_str().expect("utf-8")])
        .output()
        .expect("egress-conformance runs");
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );

    let get = |n: &str| {
        out.reports
            .iter()
            .find(|r| r.target_name == n)
            .unwrap_or_else(|| panic!("no report for {n}"))
    };
    use Status::{Fail, Pass};
    for peer in PEERS {
        let r = get(peer);
        // Each really served the canary's dist, signed by the key the
        // suite was given (the canary's for approx, the lab's own for
        // aptly and reprepro), and a .deb of the lab.
        for row in ["C.release", "C.packages", "C.deb", "P1.release-signed"] {
            assert_eq!(status(r, row), Pass, "{peer} {row}");
        }
        // None runs a maintainer script or renders package text.
        assert_eq!(status(r, "P4"), Pass, "{peer}");
        // None publishes a signed manifest.
        assert_eq!(status(r, "P5.manifest"), Fail, "{peer}");
    }
    for (peer, row, want) in [
        // approx forwards every path under a repository to the upstream:
        // the canary's whole index, the upstream-only package in it, a
        // path the snapshot lacks, a version published mid-run.
        ("approx", "P2.upstream-contact", Fail),
        ("approx", "P2.absent-index", Fail),
        ("approx", "P2.absent-pool", Fail),
        ("approx", "P3.unknown-paths", Fail),
        // It ignores the host of an absolute-form target and maps its path.
        ("approx", "P3.absolute-form", Fail),
        ("approx", "P3.proxy-style", Fail),
        // It resolves `..` against its cache: /proc/self/status is served.
        ("approx", "P3.traversal", Fail),
        ("approx", "P5.upstream-new-version", Fail),
        // The upstream's index is passed on as it is: a package it lists
        // with no SHA256, and one whose SHA256 is not of its bytes.
        ("approx", "P1.deb-digests", Fail),
        ("approx", "P1.upstream-uncovered", Fail),
        ("approx", "P1.run-wide-digests", Fail),
        // approx answers only GET (403 to everything else).
        ("approx", "P6", Pass),
        // aptly published a snapshot of the lab's packages: nothing else,
        // no upstream contact, no upstream change shows through.
        ("aptly", "P1", Pass),
        ("aptly", "P2", Pass),
        ("aptly", "P5.upstream-new-version", Pass),
        ("aptly", "P5.upstream-replaced-bytes", Pass),
        // Its REST API answers on the same address: a repository is
        // created and a file uploaded without credentials.
        ("aptly", "P6.vendor-routes", Fail),
        ("aptly", "P6.run-wide-writes", Fail),
        ("aptly", "P6", Fail),
        // reprepro: the same static result, and nothing that writes.
        ("reprepro", "P1", Pass),
        ("reprepro", "P2", Pass),
        ("reprepro", "P5.upstream-new-version", Pass),
        ("reprepro", "P5.upstream-replaced-bytes", Pass),
        ("reprepro", "P6", Pass),
        // nginx 1.22 in front of both: a request hidden behind a malformed
        // one is answered on the same connection.
        ("aptly", "P3.request-smuggling", Fail),
        ("reprepro", "P3.request-smuggling", Fail),
    ] {
        assert_eq!(
            status(get(peer), row),
            want,
            "{peer} {row}: {}",
            reason(get(peer), row)
        );
    }
    // The API routes that were honoured are aptly's own.
    let api = reason(get("aptly"), "P6.vendor-routes");
    assert!(api.contains("aptly-repo-create"), "{api}");
    // The path approx forwarded is one under the archive, as its manual
    // says it maps "any request" below a repository.
    let unknown = reason(get("approx"), "P3.unknown-paths");
    assert!(unknown.contains("GET /debian/"), "{unknown}");
    let rows = statuses(&out);
    assert!(rows
        .iter()
        .any(|(id, s)| id.starts_with("P6 ") && s.contains(&Pass) && s.contains(&Fail)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A raw HTTP/1.0 GET of `target` exactly as written (no client normalises
/// its dot segments); the status code and the body.
fn raw_get(base: &str, target: &str) -> (u16, Vec<u8>) {
    let authority = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an authority");
    let mut s = std::net::TcpStream::connect(authority).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("timeout");
    write!(s, "GET {target} HTTP/1.0\r\nHost: {authority}\r\n\r\n").expect("send");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).expect("read");
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, answer[split + 4..].to_vec())
}

/// Beyond what the suite's traversal sub-probe shows (it reads
/// `/proc/self/status` through approx): approx 5.12 resolves `..` in the request path against its
/// cache directory: it serves any file its user can read, without asking
/// the upstream, and writes what the upstream sends outside its cache.
#[test]
fn approx_reads_and_writes_outside_its_cache_through_dot_segments() {
    let _one = serial();
    let canary = AptCanary::start().expect("apt canary");
    let peer = start_peer("approx", &canary);
    let base = peer.index_url.origin();
    let work = peer.workdir().to_path_buf();
    // The cache is {workdir}/cache; the repository's files are in
    // {workdir}/cache/debian/. A file beside the cache, never served by
    // the canary:
    let planted = b"a file of the machine approx runs on, not of any repository\n";
    std::fs::write(work.join("planted.txt"), planted).expect("plant");
    let mark = canary.requests().len();
    let (code, body) = raw_get(&base, "/debian/../../planted.txt");
    assert_eq!((code, body.as_slice()), (200, &planted[..]));
    assert_eq!(canary.requests().len(), mark, "served from the disk alone");
    // A lab .deb, asked for with two dot segments after the repository:
    // curl (approx's downloader) removes them from the upstream URL, so the
    // canary serves the .deb, and approx stores it two directories up, at
    // {workdir}/debian/..., outside its cache.
    let (pool, bytes, _) = canary.deb("ec-present", "1.0").expect("a lab .deb");
    let (code, body) = raw_get(&base, &format!("/debian/../../debian/{}", pool.as_str()));
    assert_eq!((code, body == bytes), (200, true));
    let outside = work.join("debian").join(pool.as_str());
    assert_eq!(
        std::fs::read(&outside).ok(),
        Some(bytes),
        "{}",
        outside.display()
    );
    assert!(!work.join("cache/debian").join(pool.as_str()).exists());
    // approx answers 403 to any request with a query string (the suite's
    // marked requests); without one, the upstream-only package is fetched
    // from the canary and served.
    let (absent, bytes, _) = canary
        .deb("ec-upstream-only", "1.0")
        .expect("upstream only");
    let path = format!("/debian/{}", absent.as_str());
    assert_eq!(raw_get(&base, &format!("{path}?ec=x")).0, 403);
    let mark = canary.requests().len();
    assert_eq!(raw_get(&base, &path), (200, bytes));
    assert!(canary.requests().len() > mark, "fetched from the canary");
    peer.stop();
    canary.stop();
}

/// Starts the peer `name` in front of `canary`, as the testbed does.
fn start_peer(name: &str, canary: &AptCanary) -> egress_testbed::Running {
    let cfg = PeerConfig::load(&Paths::find().configs.join(format!("{name}.conf")))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (packages, paths, placeholders) = testbed::apt_lab(canary);
    let keyring = canary.keyring();
    let peers = Paths::find().peers;
    let ctx = egress_testbed::Context {
        peers_dir: &peers,
        canary_index: &format!("{}/", canary.archive_url()),
        canary_url: &canary.base_url(),
        packages: &packages,
        projects: &paths,
        placeholders: &placeholders,
        keyring: Some(&keyring),
    };
    egress_testbed::start(&cfg, &ctx).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn output(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The set-ups are what a lab's clients use: real apt-get (isolated, its
/// signature checking on) trusts the key the peer's config names (the
/// lab's own for aptly and reprepro, the canary's behind approx), updates
/// and downloads the lab's packages, and gets the canary's bytes. aptly
/// and reprepro answer without the canary (their upstream work was done
/// before they served); a client that trusts the canary's key instead of
/// the lab's is refused by apt itself.
#[test]
fn real_apt_installs_the_lab_packages_from_each_peer() {
    let _one = serial();
    if !AptClient::available() {
        eprintln!("skipped: apt-get is not installed (Debian: it is part of the base system)");
        return;
    }
    for name in PEERS {
        let canary = AptCanary::start().expect("apt canary");
        let peer = start_peer(name, &canary);
        let dir = tmpdir(&format!("egress-testbed-test-apt-{name}"));
        let apt = AptClient::new(&dir.join("apt")).expect("apt tree");
        let keyring = peer.keyring.clone().expect("an apt peer has a keyring");
        let key = apt.add_keyring("lab", &keyring).expect("keyring");
        let source = format!(
            "deb [signed-by={}] {} {} main",
            key.display(),
            peer.index_url,
            canary.dist()
        );
        apt.add_source(&source).expect("source");
        let mark = canary.requests().len();
        let o = apt.update().expect("apt-get update");
        assert!(o.status.success(), "{name}: {}", output(&o));
        let names = canary.snapshot_names();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let o = apt
            .download(&names)
            .expect("apt-get install --download-only");
        assert!(o.status.success(), "{name}: {}", output(&o));
        for (package, version) in canary.snapshot_packages(false) {
            let (pool, bytes, _) = canary.deb(&package, &version).expect("a lab .deb");
            let got = std::fs::read(apt.archives_dir().join(pool.file_name()));
            assert_eq!(got.ok(), Some(bytes), "{name}: {}", pool.as_str());
        }
        let asked = canary.requests().len() - mark;
        if name == "approx" {
            assert!(
                asked > 0,
                "approx fetches what apt asks for from the canary"
            );
        } else {
            assert_eq!(asked, 0, "{name}: the canary was asked during apt's run");
            let other = AptClient::new(&dir.join("apt-canary-key")).expect("apt tree");
            let wrong = other
                .add_keyring("canary", &canary.keyring())
                .expect("keyring");
            other
                .add_source(
                    &source.replace(&key.display().to_string(), &wrong.display().to_string()),
                )
                .expect("source");
            let o = other.update().expect("apt-get update");
            let text = output(&o);
            assert!(
                !o.status.success() && text.contains("NO_PUBKEY"),
                "{name}: {text}"
            );
        }
        peer.stop();
        canary.stop();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The lab's packages aptly's filter and reprepro's FilterList name are the
/// packages the apt canary's snapshot holds (what `apt-get install` is
/// given), and the pinned Debian versions are what the testbed says.
#[test]
fn aptly_and_reprepro_take_exactly_the_lab_packages() {
    let testbed_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed");
    let canary = AptCanary::start().expect("apt canary");
    let mut lab = canary.snapshot_names();
    canary.stop();
    lab.sort();
    let init = std::fs::read_to_string(testbed_dir.join("aptly/init.sh")).expect("init.sh");
    let filter = init
        .split("-filter='")
        .nth(1)
        .and_then(|f| f.split('\'').next())
        .expect("a -filter");
    let mut named: Vec<String> = filter.split('|').map(|p| p.trim().to_string()).collect();
    named.sort();
    assert_eq!(named, lab, "aptly: {filter}");
    assert!(init.contains("-filter-with-deps"));
    let list =
        std::fs::read_to_string(testbed_dir.join("reprepro/lab-packages")).expect("lab-packages");
    let mut named: Vec<String> = list
        .lines()
        .filter_map(|l| l.strip_suffix(" install"))
        .map(str::to_string)
        .collect();
    named.sort();
    assert_eq!(named, lab, "reprepro: {list}");
    assert_eq!(list.lines().count(), lab.len(), "{list}");
    for (peer, pins) in [
        ("approx", &["approx=5.12-1", "socat=1.7.4.4-2"][..]),
        (
            "aptly",
            &["aptly=1.5.0+ds1-1+b4", "nginx=1.22.1-9+deb12u12"][..],
        ),
        (
            "reprepro",
            &["reprepro=5.3.1-1+deb12u2", "nginx=1.22.1-9+deb12u12"][..],
        ),
    ] {
        let text =
            std::fs::read_to_string(testbed_dir.join(format!("debian/{peer}.txt"))).expect("pins");
        for pin in pins {
            assert!(text.lines().any(|l| l == *pin), "{peer}: {pin}");
        }
    }
}
