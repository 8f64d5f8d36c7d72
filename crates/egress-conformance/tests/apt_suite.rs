//! The apt suite against the real reference mirror and a pass-through
//! proxy, both in front of the apt canary.
//!
//! The snapshot is built the lab's way (`snapshot build --apt-uris`, the
//! print-uris lines written from the canary's signed `Packages` as Debian
//! 12's apt writes them, so that no apt-get is needed) and served by the
//! real `egress-mirror` binary: every apt sub-probe must PASS (or be
//! SKIPPED where the run gives no expectation), and `report verify`
//! re-derives every verdict. A proxy that passes every request through to
//! the canary (what approx or apt-cacher-ng do for a path they do not
//! hold) must FAIL where replay, immutability and passthrough say.

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};
use egress_http::{Reply, Request, Response, Server};
use egress_model::{Status, Upstream, Url};
use egress_references::apt::builtin::apt_plan_for;
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_suite::{Packages, Plan, Report, Target};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A print-uris line for `name` as Debian 12's apt writes it.
fn line(canary: &AptCanary, name: &str) -> String {
    let text = canary
        .file("dists/canary/main/binary-amd64/Packages")
        .expect("Packages");
    let e = egress_apt::parse_packages(&String::from_utf8(text).expect("utf-8"))
        .expect("parse")
        .into_iter()
        .find(|e| e.package == name)
        .expect("stanza");
    format!(
        "'{}/{}' {} {} MD5Sum:{}\n",
        canary.archive_url(),
        e.filename,
        e.filename.file_name(),
        e.size,
        e.md5.unwrap_or_default()
    )
}

/// Builds the snapshot of the canary's snapshot packages; returns the
/// directory, the snapshot and the lab's keyring.
fn lab_snapshot(dir: &Path, canary: &AptCanary) -> (PathBuf, Vec<u8>) {
    let uris = dir.join("uris.txt");
    let names = [
        apt_canary::PRESENT,
        apt_canary::DEP,
        apt_canary::TRIPWIRE,
        apt_canary::TEMPLATE,
    ];
    let text: String = names.iter().map(|n| line(canary, n)).collect();
    std::fs::write(&uris, text).expect("write uris");
    let keyring = dir.join("canary-keyring.gpg");
    std::fs::write(&keyring, canary.keyring()).expect("write keyring");
    let key = dir.join("signing-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    let source = format!(
        "{} {} {}",
        canary.archive_url(),
        canary.dist(),
        canary.component()
    );
    let o = run(&[
        "snapshot",
        "build",
        "--apt-uris",
        s(&uris),
        "--apt-source",
        &source,
        "--apt-keyring",
        s(&keyring),
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    ok(&o, "snapshot build --apt-uris");
    let lab = dir.join("lab-keyring.gpg");
    let o = run(&[
        "snapshot",
        "apt-keyring",
        "--key",
        s(&key),
        "--out",
        s(&lab),
    ]);
    ok(&o, "snapshot apt-keyring");
    (snap, std::fs::read(lab).expect("lab keyring"))
}

/// The archive root the snapshot serves the canary's repository at.
fn archive_path(snap: &Path) -> String {
    let doc = egress_snapshot::SnapshotDoc::parse(
        &std::fs::read(snap.join("SNAPSHOT.json")).expect("read"),
    )
    .expect("SNAPSHOT.json");
    let inrelease = doc
        .served
        .iter()
        .find(|e| e.path.ends_with("/dists/canary/InRelease"))
        .expect("an InRelease served");
    inrelease
        .path
        .strip_suffix("dists/canary/InRelease")
        .expect("suffix")
        .to_string()
}

fn plan(archive: &Url, canary: &AptCanary, keyring: Vec<u8>) -> Plan<Packages> {
    Plan {
        present_source: "test".into(),
        ..apt_plan_for(archive, canary, keyring)
    }
}

fn run_suite(archive: &Url, canary: &AptCanary, keyring: Vec<u8>, signers: Vec<u8>) -> Report {
    let client =
        egress_transcript::Client::new(archive.clone(), Default::default(), None).expect("client");
    let report = egress_suite::run(Target {
        name: archive.to_string(),
        client,
        plan: plan(archive, canary, keyring),
        upstream: Some(canary as &dyn Upstream),
        allowed_signers: Some(signers),
    });
    let diffs = egress_suite::verify(&report);
    assert!(diffs.is_empty(), "report verify disagrees: {diffs:?}");
    report
}

/// One line per probe; a probe with an unanswered request also lists its
/// exchanges, so that a failing run says what the client saw.
fn table(report: &Report) -> String {
    report
        .probes
        .iter()
        .map(|p| {
            let mut line = format!("{} {} {}", p.id, p.status, p.reason);
            if p.exchanges.iter().any(|ex| ex.status().is_none()) {
                for ex in &p.exchanges {
                    line.push_str(&format!("\n    {}", ex.summary()));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_reference_mirror_passes_the_apt_suite() {
    let dir = tmpdir("egress-apt-suite-reference");
    let canary = AptCanary::start().expect("apt canary");
    let (snap, keyring) = lab_snapshot(&dir, &canary);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let archive = Url::parse(&format!("{}{}", mirror.base, archive_path(&snap))).expect("url");
    let signers = std::fs::read(dir.join("signing-key.allowed_signers")).expect("signers");
    let report = run_suite(&archive, &canary, keyring, signers);
    for p in &report.probes {
        let skipped_ok = matches!(
            p.id.as_str(),
            "P5.expected-snapshot" | "P5.instance-attestation"
        ) || common::mutant::skipped_without_times(p);
        assert!(
            p.status == Status::Pass || (skipped_ok && p.status == Status::Skipped),
            "{}: {} {}\n\n{}",
            p.id,
            p.status,
            p.reason,
            table(&report)
        );
    }
    assert_eq!(report.exit_code(), 0, "{}", table(&report));

    // The same through the command line, without a canary: what a lab
    // runs against its mirror.
    let lab = dir.join("lab-keyring.gpg");
    let signers = dir.join("signing-key.allowed_signers");
    let url = archive.to_string();
    let o = run(&[
        "check",
        &url,
        "--protocol",
        "apt",
        "--dist",
        "canary",
        "--keyring",
        s(&lab),
        "--allowed-signers",
        s(&signers),
        "--absent",
        apt_canary::UPSTREAM_ONLY,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    let probe = |id: &str| {
        v["probes"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["id"] == id))
            .map(|p| p["status"].as_str().unwrap_or_default().to_string())
    };
    for id in [
        "C.release",
        "C.deb",
        "P1.release-signed",
        "P1.deb-digests",
        "P2.absent-index",
        "P5.signature",
    ] {
        assert_eq!(
            probe(id).as_deref(),
            Some("PASS"),
            "{id}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    assert_eq!(
        v["plan"]["present"][0],
        apt_canary::PRESENT,
        "the control package comes from the index"
    );
    assert_ne!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn check_apt_usage_errors_are_one_line() {
    let dir = tmpdir("egress-apt-suite-usage");
    let not_a_keyring = dir.join("keyring.gpg");
    std::fs::write(&not_a_keyring, "not a key\n").expect("write");
    for (args, code, says) in [
        (
            vec!["check", "http://127.0.0.1:1/debian/", "--protocol", "apt"],
            2,
            "--dist",
        ),
        (
            vec![
                "check",
                "http://127.0.0.1:1/",
                "--protocol",
                "apt",
                "--dist",
                "../x",
            ],
            2,
            "--dist",
        ),
        (
            vec![
                "check",
                "http://127.0.0.1:1/",
                "--protocol",
                "apt",
                "--dist",
                "x",
                "--keyring",
                "/nonexistent/k.gpg",
            ],
            4,
            "--keyring",
        ),
        (
            vec![
                "check",
                "http://127.0.0.1:1/",
                "--protocol",
                "apt",
                "--dist",
                "x",
                "--keyring",
                s(&not_a_keyring),
            ],
            4,
            "--keyring",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// Passes every request to the canary as it came (apt's paths below the
/// canary's archive root), as a pull-through apt proxy does.
fn pass_through(canary_origin: &str, archive: &str) -> egress_http::ServerHandle {
    let upstream = Url::parse(canary_origin).expect("canary url").authority();
    let archive = archive.to_string();
    Server::bind_loopback(move |req: Request| -> Reply {
        let path = req.target.strip_prefix(&archive).map_or_else(
            || req.target.clone(),
            |rest| format!("{}/{rest}", apt_canary::ARCHIVE),
        );
        let Ok(mut sock) = std::net::TcpStream::connect(&upstream) else {
            return Response::text(502, "upstream unreachable\n").into();
        };
        let head = format!("{} {path} HTTP/1.0\r\nHost: {upstream}\r\n\r\n", req.method);
        let mut raw = Vec::new();
        if sock.write_all(head.as_bytes()).is_err() || sock.read_to_end(&mut raw).is_err() {
            return Response::text(502, "upstream failed\n").into();
        }
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            return Response::text(502, "no answer upstream\n").into();
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(502);
        Response::new(status)
            .with_body(raw[split + 4..].to_vec())
            .into()
    })
    .expect("bind the pass-through proxy")
}

#[test]
fn a_pass_through_proxy_fails_where_it_should() {
    let canary = AptCanary::start().expect("apt canary");
    let proxy = pass_through(&canary.base_url(), "/apt/canary/");
    let archive = Url::parse(&format!("{}/apt/canary/", proxy.base_url())).expect("url");
    let report = run_suite(&archive, &canary, canary.keyring(), Vec::new());
    let status = |id: &str| report.probe(id).map(|p| p.status);
    for id in [
        "C.release",
        "C.packages",
        "C.deb",
        "P1.release-signed",
        "P1.index-digests",
    ] {
        assert_eq!(status(id), Some(Status::Pass), "{id}\n{}", table(&report));
    }
    for id in [
        "P1.deb-digests",
        "P1.upstream-uncovered",
        "P1.run-wide-digests",
        "P2.absent-index",
        "P2.absent-pool",
        "P2.upstream-contact",
        "P3.unknown-paths",
        "P3.remapped-paths",
        "P3.proxy-style",
        "P6.vendor-routes",
        "P5.upstream-new-version",
        "P5.upstream-replaced-bytes",
        "P5.manifest",
    ] {
        assert_eq!(status(id), Some(Status::Fail), "{id}\n{}", table(&report));
    }
    assert_eq!(report.exit_code(), 1);
    proxy.stop();
}
