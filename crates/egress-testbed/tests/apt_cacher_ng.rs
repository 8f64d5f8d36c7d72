//! The real apt-cacher-ng 3.7.4 (Debian's package, unpacked by
//! scripts/setup-peers into `.tools/peers/apt-cacher-ng`, or
//! `$EGRESS_PEERS_DIR/apt-cacher-ng`), started by egress-testbed from
//! `testbed/peers/apt-cacher-ng*.conf` in front of the apt canary on
//! loopback: what the apt suite measures of it as shipped and hardened,
//! and the request that crashes both.
//!
//! As for every testbed peer, a peer that is not installed is an error that
//! names `scripts/setup-peers` (scripts/test runs it first), not a skip.

use egress_model::{Status, Url};
use egress_references::apt::canary::AptCanary;
use egress_suite::common::smuggling;
use egress_suite::Report;
use egress_testbed::suite::{self, apt_lab, Variant};
use egress_testbed::{start, Context, PeerConfig, Running};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where setup-peers installed the peers, as `egress-conformance testbed`
/// finds them.
fn peers_dir() -> PathBuf {
    std::env::var_os("EGRESS_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/peers"))
}

fn conf(name: &str) -> PeerConfig {
    let path = workspace().join(format!("testbed/peers/{name}.conf"));
    PeerConfig::load(&path).unwrap_or_else(|e| panic!("{e}"))
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

/// The apt suite against both set-ups, one after the other, each in front
/// of its own canary: the verdicts that tell them apart, and those they
/// share, as docs/results.md explains them.
#[test]
fn apt_cacher_ng_as_shipped_and_hardened_under_the_apt_suite() {
    let variants: Vec<Variant> = ["apt-cacher-ng", "apt-cacher-ng-hardened"]
        .into_iter()
        .map(|n| Variant::Peer(Box::new(conf(n))))
        .collect();
    let out = suite::run(&variants, &peers_dir(), |line| eprintln!("{line}"));
    // Not installed, not started: the notes say which and why (run
    // scripts/setup-peers apt-cacher-ng).
    assert!(out.not_run.is_empty(), "{}", out.notes());
    let get = |n: &str| {
        out.reports
            .iter()
            .find(|r| r.target_name == n)
            .unwrap_or_else(|| panic!("no report for {n}"))
    };
    let shipped = get("apt-cacher-ng");
    let hardened = get("apt-cacher-ng-hardened");
    for r in [shipped, hardened] {
        assert_eq!(r.plan.protocol(), "apt");
        // Both served the canary's signed dist, its index and a .deb, with
        // the canary's signatures intact.
        for row in ["C.release", "C.packages", "C.deb", "P1.release-signed"] {
            assert_eq!(status(r, row), Status::Pass, "{} {row}", r.target_name);
        }
        // A cache of the upstream serves the upstream's index: it lists the
        // package without a SHA256 and the one that is not the lab's.
        assert_eq!(
            status(r, "P1.deb-digests"),
            Status::Fail,
            "{}",
            r.target_name
        );
        assert_eq!(
            status(r, "P2.absent-index"),
            Status::Fail,
            "{}",
            r.target_name
        );
        // Neither publishes a signed manifest.
        assert_eq!(status(r, "P5.manifest"), Status::Fail, "{}", r.target_name);
        // Its CONNECT is refused: the built-in PassThroughPattern names
        // two Debian and Ubuntu hosts on 443, the hardened one none.
        assert_eq!(status(r, "P3.connect"), Status::Pass, "{}", r.target_name);
        // Its remapped paths reach the repository it remaps: another host's
        // name in the path, answered from the backend (or, offline, the
        // cache).
        assert_eq!(
            status(r, "P3.remapped-paths"),
            Status::Fail,
            "{}",
            r.target_name
        );
        // One smuggling case kills it (the test below), and the cases in
        // flight with it are not sent. The suite sends every case that was
        // not answered again, alone, once the cache serves again: the
        // folded Transfer-Encoding stops it again (the page asked for
        // right after is not served), and on the running cache requests
        // hidden behind others that it answers 5xx/4xx are answered too.
        let row = reason(r, "P3.request-smuggling");
        assert_eq!(
            status(r, "P3.request-smuggling"),
            Status::Fail,
            "{} {row}",
            r.target_name
        );
        assert!(
            row.contains("the request hidden behind it was answered"),
            "{}: {row}",
            r.target_name
        );
        let rec = r.probe("P3.request-smuggling").expect("smuggling record");
        let exchange = |label: &str| rec.exchanges.iter().find(|ex| ex.label == label);
        let folded = "smuggling case obs-fold-te";
        assert!(
            exchange(&smuggling::alone_label(folded)).is_some_and(|ex| ex.status().is_none()),
            "{}: the folded Transfer-Encoding was not sent again alone, or was answered",
            r.target_name
        );
        assert!(
            exchange(&smuggling::after_label(folded)).is_some_and(|ex| ex.status() != Some(200)),
            "{}: the cache still served right after the folded Transfer-Encoding",
            r.target_name
        );
        // The suite waited for the restarted cache, so what comes after is
        // measured on a running cache.
        assert!(
            rec.exchanges
                .iter()
                .any(|ex| ex.label.starts_with(
                    "the page, before smuggling case obs-fold-tab is sent again alone"
                ) && ex.status() == Some(200)),
            "{}: the restarted cache was not seen serving again",
            r.target_name
        );
        for row in [
            "P4.tripwire",
            "P4.template-text",
            "P5.stable-bytes",
            "P6.effect",
        ] {
            assert_eq!(status(r, row), Status::Pass, "{} {row}", r.target_name);
        }
    }
    use Status::{Fail, Pass};
    for (r, row, want) in [
        // As shipped it fetches from its backend whatever is asked below
        // the repository, during the run; offline, the hardened one never.
        (shipped, "P2.upstream-contact", Fail),
        (hardened, "P2.upstream-contact", Pass),
        (shipped, "P3.unknown-paths", Fail),
        (hardened, "P3.unknown-paths", Pass),
        // Bytes it served that are not what its index lists (the
        // upstream's bad-digest package), fetched live; offline, never.
        (shipped, "P1.run-wide-digests", Fail),
        (hardened, "P1.run-wide-digests", Pass),
        // Warmed the way apt fetches, the by-hash indexes are cached too.
        (hardened, "P1.index-digests", Pass),
        // A package the lab never chose, by its pool path: fetched as
        // shipped, not offline.
        (shipped, "P2.absent-pool", Fail),
        (hardened, "P2.absent-pool", Pass),
        // An HTTP proxy for another host (the canary's port standing in
        // for port 80, zzz_testbed.conf.template) as shipped; ForceManaged
        // and offline, never.
        (shipped, "P3.absolute-form", Fail),
        (hardened, "P3.absolute-form", Pass),
        (shipped, "P3.proxy-style", Fail),
        (hardened, "P3.proxy-style", Pass),
        (shipped, "P3.double-slash", Fail),
        (hardened, "P3.double-slash", Pass),
        // The upstream's new version and replaced bytes show through a
        // live cache, never through the offline one.
        (shipped, "P5.upstream-new-version", Fail),
        (hardened, "P5.upstream-replaced-bytes", Pass),
        (shipped, "P5.upstream-replaced-bytes", Fail),
        (hardened, "P5.upstream-new-version", Pass),
        // The report page's maintenance actions: open as shipped,
        // AdminAuth closes them.
        (shipped, "P6.vendor-routes", Fail),
        (hardened, "P6.vendor-routes", Pass),
    ] {
        assert_eq!(status(r, row), want, "{} {row}", r.target_name);
    }
    // The fault is named: a path under the archive that the snapshot does
    // not hold went to the canary.
    for row in ["P3.unknown-paths", "P3.absolute-form"] {
        assert!(
            reason(shipped, row).contains("forwarded to the upstream"),
            "{row}: {}",
            reason(shipped, row)
        );
    }
}

/// Starts the peer `name` in front of `canary`, as the testbed does.
fn peer(name: &str, canary: &AptCanary) -> Running {
    let (packages, paths, placeholders) = apt_lab(canary);
    let keyring = canary.keyring();
    let ctx = Context {
        peers_dir: &peers_dir(),
        canary_index: &format!("{}/", canary.archive_url()),
        canary_url: &canary.base_url(),
        packages: &packages,
        projects: &paths,
        placeholders: &placeholders,
        keyring: Some(&keyring),
    };
    start(&conf(name), &ctx)
        .unwrap_or_else(|e| panic!("{name}: {e} (run scripts/setup-peers apt-cacher-ng)"))
}

/// Sends `raw` on its own connection and returns what came back.
fn send(url: &Url, raw: &[u8]) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect((url.host(), url.port())).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(raw).expect("write");
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    back
}

fn report_page(url: &Url) -> Option<u16> {
    let c = egress_transcript::Client::new(url.with_path("/"), Default::default(), None)
        .expect("client");
    c.get("report page", "/acng-report.html", None).status()
}

fn log(p: &Running) -> String {
    std::fs::read_to_string(p.workdir().join("peer.log")).unwrap_or_default()
}

/// One request with its `Transfer-Encoding` header folded onto a second
/// line (obsolete line folding, RFC 9112 section 5.2) kills apt-cacher-ng
/// 3.7.4 with SIGSEGV, as shipped and hardened alike; Debian's unit
/// restarts it (Restart=on-failure), as testbed/apt-cacher-ng/supervise.sh
/// does. Another folded header does not.
#[test]
fn a_folded_transfer_encoding_header_crashes_it_and_the_unit_restarts_it() {
    let canary = AptCanary::start().expect("apt canary");
    let mut p = peer("apt-cacher-ng", &canary);
    let url = p.index_url.clone();
    let host = url.host_header();
    // The control: a folded header of another name is answered, nothing ends.
    let back = send(
        &url,
        format!("GET /acng-report.html HTTP/1.1\r\nHost: {host}\r\nX-A:\r\n b\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert!(!log(&p).contains("ended ("), "{}", log(&p));
    assert_eq!(
        report_page(&url),
        Some(200),
        "{}",
        String::from_utf8_lossy(&back)
    );
    // The case: the same with Transfer-Encoding.
    let _ = send(
        &url,
        format!("GET /acng-report.html HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n").as_bytes(),
    );
    let started = Instant::now();
    while !log(&p).contains("ended (signal 11)") && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        log(&p).contains("apt-cacher-ng ended (signal 11)"),
        "{}",
        log(&p)
    );
    // Restarted, it serves again.
    let started = Instant::now();
    while report_page(&url) != Some(200) && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(report_page(&url), Some(200), "{}", log(&p));
    assert_eq!(p.exited(), None);
    p.stop();
    canary.stop();
}
