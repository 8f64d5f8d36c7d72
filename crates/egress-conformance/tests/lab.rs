//! The lab scenario, without a canary: a lab builds its snapshot from its
//! own lock (here served by a canary on loopback, as pypi.org or
//! registry.npmjs.org would serve it) plus the conformance kit
//! (`egress-conformance kit`), serves it with the real `egress-mirror`
//! binary, and runs the real `egress-conformance check URL
//! --allowed-signers FILE` with no canary, no `--present` and no
//! `--absent`. It exits 0 with no INCONCLUSIVE predicate; every sub-probe
//! the snapshot side can decide runs and passes, the kit's included; only
//! those that need a controlled upstream are SKIPPED, each by name.
//!
//! Then with a canary: the standalone canary (`egress-conformance canary`,
//! a process of its own) that nothing uses as its upstream, the kit built
//! with `kit --canary` aimed at it, and `check --canary --canary-secret`:
//! every sub-probe runs, none SKIPPED, still exit 0, and the canary saw no
//! contact. Its mutations act on the kit's present package, which the
//! snapshot and the canary both hold.

use egress_model::{DistFilename, ProjectName, Sha256Digest, Status};
use egress_references::npm::canary::{self as npm_canary, NpmCanary};
use egress_references::pypi::canary::{self, Canary};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod common;

use common::canary::CanaryProcess;
use common::mutant::skipped_for_plain_http;
use common::{attested_mirror, ok, run, s, tmpdir};
use egress_model::Observation;

/// The sub-probes that need an upstream the suite controls: the only ones a
/// check without a canary may skip.
const PYPI_UPSTREAM_SIDE: [&str; 7] = [
    "P1.upstream-no-digest",
    "P1.upstream-bad-digest",
    "P2.absent-file",
    "P2.upstream-contact",
    "P4.tripwire",
    "P5.upstream-new-version",
    "P5.upstream-replaced-bytes",
];
const NPM_UPSTREAM_SIDE: [&str; 7] = [
    "P1.upstream-no-integrity",
    "P1.upstream-bad-integrity",
    "P2.upstream-contact",
    "P4.tripwire",
    "P5.upstream-new-version",
    "P5.upstream-replaced-bytes",
    "P5.upstream-dist-tag",
];

fn port_of(base: &str) -> u16 {
    base.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("port")
}

/// `kit --protocol P --out DIR [--canary URL]`.
fn kit(protocol: &str, out: &Path, canary: Option<&str>) {
    let mut args = vec!["kit", "--protocol", protocol, "--out", s(out)];
    if let Some(c) = canary {
        args.extend(["--canary", c]);
    }
    ok(&run(&args), "kit");
}

/// `check URL --allowed-signers FILE [--protocol npm]`, asserted to pass
/// with every sub-probe passing but `upstream_side`, which are SKIPPED and
/// say why; returns the report.
fn check_passes(
    url: &str,
    protocol: &str,
    signers: &Path,
    out: &Path,
    upstream_side: &[&str],
    must_pass: &[&str],
    expect: &[String],
) -> egress_suite::Report {
    let mut args = vec![
        "check",
        url,
        "--protocol",
        protocol,
        "--allowed-signers",
        s(signers),
        "--out",
        s(out),
    ];
    args.extend(expect.iter().map(String::as_str));
    let o = run(&args);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}");
    let report: egress_suite::Report =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report"))
            .expect("json");
    for p in &report.predicates {
        assert_eq!(p.status, Status::Pass, "{}: {}\n{text}", p.id, p.reason);
    }
    // The mirror serves plain http, without h2c: P3.h2-smuggling is
    // SKIPPED for that, not for the upstream.
    let skipped: BTreeSet<&str> = report
        .probes
        .iter()
        .filter(|r| r.status == Status::Skipped && !skipped_for_plain_http(r))
        .filter(|r| !common::mutant::skipped_without_times(r))
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(
        skipped,
        upstream_side.iter().copied().collect::<BTreeSet<_>>(),
        "{text}"
    );
    for r in report
        .probes
        .iter()
        .filter(|r| r.status == Status::Skipped && !skipped_for_plain_http(r))
        .filter(|r| !common::mutant::skipped_without_times(r))
    {
        assert!(
            r.reason.contains("upstream"),
            "{} skipped without naming the upstream: {}",
            r.id,
            r.reason
        );
    }
    for r in &report.probes {
        assert!(
            matches!(r.status, Status::Pass | Status::Skipped),
            "{}: {:?} {}",
            r.id,
            r.status,
            r.reason
        );
    }
    for id in must_pass {
        assert_eq!(
            report.probe(id).map(|r| r.status),
            Some(Status::Pass),
            "{id}: {text}"
        );
    }
    let o = run(&["report", "verify", s(&out.join("report.json"))]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    report
}

/// A hashed requirements file, as pip-compile writes it, for the canary's
/// present project.
fn requirements(canary: &Canary) -> String {
    let mut pins: BTreeMap<String, Vec<Sha256Digest>> = BTreeMap::new();
    for (name, dist) in canary.dists(false) {
        if name.as_str() != canary::PRESENT {
            continue;
        }
        let version = DistFilename::parse(&dist.filename).expect("name").version;
        pins.entry(format!("{name}=={version}"))
            .or_default()
            .push(dist.sha256);
    }
    let mut out = String::new();
    for (pin, hashes) in pins {
        out.push_str(&pin);
        for h in hashes {
            out.push_str(&format!(" \\\n    --hash=sha256:{h}"));
        }
        out.push('\n');
    }
    out
}

/// The lab's PyPI snapshot in `dir/snap`: its hashed requirements
/// (resolved against a canary standing in for pypi.org, stopped once the
/// snapshot is built) plus the kit, its tripwire aimed at `kit_canary`;
/// signed by `dir/key`. Returns the snapshot and the allowed-signers file.
fn pypi_lab_snapshot(
    dir: &Path,
    kit_canary: Option<&str>,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let signers = dir.join("key.allowed_signers");
    let kit_dir = dir.join("kit");
    kit("pypi", &kit_dir, kit_canary);
    let upstream = Canary::start().expect("canary");
    let reqs = dir.join("requirements.txt");
    std::fs::write(&reqs, requirements(&upstream)).expect("write");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--requirements",
            s(&reqs),
            "--index-url",
            &upstream.index_url(),
            "--dist",
            s(&kit_dir),
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build",
    );
    // The index the lock was resolved against plays no part in the check.
    upstream.stop();
    (snap, signers)
}

#[test]
fn pypi_lab_with_the_kit_and_no_canary_decides_everything() {
    let dir = tmpdir("egress-lab-pypi");
    let (snap, signers) = pypi_lab_snapshot(&dir, None);
    let (mirror, expect) = attested_mirror(&dir, &snap, "127.0.0.1:0");
    let report = check_passes(
        &mirror.base,
        "pypi",
        &signers,
        &dir.join("report"),
        &PYPI_UPSTREAM_SIDE,
        &[
            "P4.metadata-sdist",
            "P4.template-text",
            "P2.absent-page",
            "P5.expected-snapshot",
            "P5.instance-attestation",
        ],
        &expect,
    );
    // Found on its own: the lab's project for the controls, the kit's
    // sdist-only and template projects for P4, widely used absent names.
    let p = &report.plan.packages;
    let egress_suite::Packages::Pypi(p) = p else {
        panic!("a PyPI plan")
    };
    let name = |n: &str| ProjectName::new(n).expect("name");
    assert_eq!(
        p.present.first().map(|s| s.name.clone()),
        Some(name(canary::PRESENT))
    );
    assert_eq!(p.sdist_only, Some(name("egress-kit-sdist-only")));
    assert_eq!(p.template, Some(name("egress-kit-template")));
    assert_eq!(p.tripwire, Some(name("egress-kit-tripwire")));
    // The tripwire was looked at, but only an upstream log could show it fire.
    let tripwire = report.probe("P4.tripwire").expect("probe");
    assert!(
        tripwire
            .exchanges
            .iter()
            .any(|e| e.request_target().contains("/egress-kit-tripwire/")),
        "{tripwire:?}"
    );
    assert_eq!(p.absent.len(), 3);
    assert!(p.absent.iter().all(|a| !a.as_str().starts_with("egress")));
    // The kit's template project was asked for and served with its text raw.
    let template = report.probe("P4.template-text").expect("probe");
    assert!(template.reason.contains("verbatim"), "{}", template.reason);
    let metadata = report.probe("P4.metadata-sdist").expect("probe");
    assert!(
        metadata.exchanges.iter().any(|e| e
            .request_target()
            .contains("egress_kit_sdist_only-1.0.0.tar.gz.metadata")),
        "{metadata:?}"
    );
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The lab's npm snapshot in `dir/snap`: its package-lock (resolved
/// against a canary standing in for registry.npmjs.org, stopped once the
/// snapshot is built) plus the kit, its tripwire aimed at `kit_canary`;
/// signed by `dir/key`. Returns the snapshot, the allowed-signers file and
/// the registry URL its tarball URLs name (where the mirror must listen).
fn npm_lab_snapshot(
    dir: &Path,
    kit_canary: Option<&str>,
) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let signers = dir.join("key.allowed_signers");
    let kit_dir = dir.join("kit");
    kit("npm", &kit_dir, kit_canary);
    let upstream = NpmCanary::start().expect("canary");
    let port = port_of(&upstream.base_url());
    let registry = format!("http://127.0.0.1:{port}/");
    let (_, version, tarball) = upstream
        .tarballs(false)
        .into_iter()
        .find(|(n, v, _)| n == npm_canary::PRESENT && v == "1.1.0")
        .expect("present");
    let resolved = upstream
        .tarball_url(npm_canary::PRESENT, &version)
        .expect("url");
    let lock = serde_json::json!({
        "name": "lab", "version": "0.0.0", "lockfileVersion": 3, "requires": true,
        "packages": {
            "": {"name": "lab", "version": "0.0.0", "dependencies": {npm_canary::PRESENT: version}},
            format!("node_modules/{}", npm_canary::PRESENT):
                {"version": version, "resolved": resolved, "integrity": tarball.integrity},
        },
    });
    let lock_path = dir.join("package-lock.json");
    std::fs::write(&lock_path, lock.to_string()).expect("write");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--npm-lock",
            s(&lock_path),
            "--npm-dist",
            s(&kit_dir),
            "--npm-registry-url",
            &registry,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build",
    );
    upstream.stop();
    (snap, signers, registry)
}

#[test]
fn npm_lab_with_the_kit_and_no_canary_decides_everything() {
    let dir = tmpdir("egress-lab-npm");
    let (snap, signers, registry) = npm_lab_snapshot(&dir, None);
    // On the origin the snapshot's tarball URLs name.
    let (mirror, expect) = attested_mirror(&dir, &snap, &registry_listen(&registry));
    let report = check_passes(
        &registry,
        "npm",
        &signers,
        &dir.join("report"),
        &NPM_UPSTREAM_SIDE,
        &[
            "P4.template-text",
            "C.scoped",
            "P2.absent-packument",
            "P5.expected-snapshot",
            "P5.instance-attestation",
        ],
        &expect,
    );
    let egress_suite::Packages::Npm(p) = &report.plan.packages else {
        panic!("an npm plan")
    };
    assert_eq!(
        p.present.first().map(|n| n.as_str().to_string()),
        Some(npm_canary::PRESENT.to_string())
    );
    assert_eq!(
        p.scoped.as_ref().map(|n| n.as_str()),
        Some("@egress-kit/scoped")
    );
    assert_eq!(
        p.template.as_ref().map(|n| n.as_str()),
        Some("egress-kit-template")
    );
    assert_eq!(
        p.tripwire.as_ref().map(|n| n.as_str()),
        Some("egress-kit-tripwire")
    );
    assert_eq!(p.absent.len(), 3);
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `127.0.0.1:PORT` of a registry URL.
fn registry_listen(registry: &str) -> String {
    format!("127.0.0.1:{}", port_of(registry))
}

/// `check URL --protocol P --allowed-signers FILE --canary ORIGIN
/// --canary-secret FILE`, asserted to exit 0 with every sub-probe run and
/// passing (none SKIPPED, none INCONCLUSIVE), the canary's log read for
/// the whole run and empty, and `report verify` agreeing; returns the
/// report.
fn check_passes_with_canary(
    url: &str,
    protocol: &str,
    signers: &Path,
    out: &Path,
    canary: &CanaryProcess,
    secret: &Path,
    expect: &[String],
) -> egress_suite::Report {
    let origin = canary.origin();
    let mut args = vec![
        "check",
        url,
        "--protocol",
        protocol,
        "--allowed-signers",
        s(signers),
        "--canary",
        &origin,
        "--canary-secret",
        s(secret),
        // Every sub-probe's line: the SKIPPED ones are read below.
        "--verbose",
        "--out",
        s(out),
    ];
    args.extend(expect.iter().map(String::as_str));
    let o = run(&args);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let report: egress_suite::Report =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report"))
            .expect("json");
    let not_pass: Vec<String> = report
        .probes
        .iter()
        .filter(|p| p.status != Status::Pass && !skipped_for_plain_http(p))
        .filter(|p| !common::mutant::skipped_without_times(p))
        .map(|p| format!("{} {}: {}", p.id, p.status, p.reason))
        .collect();
    assert!(not_pass.is_empty(), "{not_pass:#?}\n{text}");
    for p in &report.predicates {
        assert_eq!(p.status, Status::Pass, "{}: {}\n{text}", p.id, p.reason);
    }
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        !text.contains("INCONCLUSIVE")
            && text
                .lines()
                .filter(|l| l.contains("SKIPPED"))
                .all(|l| l.contains("P3.h2-smuggling")
                    || l.contains("P5.cutoff")
                    || l.contains("P5.chain")),
        "{text}"
    );
    assert_eq!(
        report.plan.upstream.as_ref().map(|u| u.origin.as_str()),
        Some(origin.as_str())
    );
    // Contact observed as none: the log of the whole run, read, empty.
    let contact = report.probe("P2.upstream-contact").expect("probe");
    let logs: Vec<usize> = contact
        .observations
        .iter()
        .filter_map(|o| match o {
            Observation::UpstreamLog { requests, .. } => Some(requests.len()),
            _ => None,
        })
        .collect();
    assert_eq!(logs, [0], "{:?}", contact.observations);
    // The mutations were made, on the kit's present package.
    for id in ["P5.upstream-new-version", "P5.upstream-replaced-bytes"] {
        let r = report.probe(id).expect("probe");
        let mutated: Vec<&str> = r
            .observations
            .iter()
            .filter_map(|o| match o {
                Observation::UpstreamMutation { filename, .. } => Some(filename.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(mutated.len(), 1, "{id}: {:?}", r.observations);
        assert!(
            mutated
                .iter()
                .all(|f| f.starts_with("egress_kit_present-")
                    || f.starts_with("egress-kit-present-")),
            "{id}: {mutated:?}"
        );
    }
    let v = run(&["report", "verify", s(&out.join("report.json"))]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    report
}

#[test]
fn pypi_lab_with_the_kit_and_a_canary_runs_every_sub_probe() {
    let dir = tmpdir("egress-lab-pypi-canary");
    let secret = dir.join("canary.secret");
    let canary = CanaryProcess::start("pypi", &secret);
    let (snap, signers) = pypi_lab_snapshot(&dir, Some(&canary.origin()));
    let (mirror, expect) = attested_mirror(&dir, &snap, "127.0.0.1:0");
    let report = check_passes_with_canary(
        &mirror.base,
        "pypi",
        &signers,
        &dir.join("report"),
        &canary,
        &secret,
        &expect,
    );
    // The mutations' project comes first, the lab's own after it, and the
    // plan says why.
    let egress_suite::Packages::Pypi(p) = &report.plan.packages else {
        panic!("a PyPI plan")
    };
    let names: Vec<&str> = p.present.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["egress-kit-present", canary::PRESENT]);
    assert!(report.plan.present_source.contains("--canary"));
    assert_eq!(
        p.tripwire.as_ref().map(|n| n.as_str()),
        Some("egress-kit-tripwire")
    );
    drop(mirror);
    assert!(canary.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn npm_lab_with_the_kit_and_a_canary_runs_every_sub_probe() {
    let dir = tmpdir("egress-lab-npm-canary");
    let secret = dir.join("canary.secret");
    let canary = CanaryProcess::start("npm", &secret);
    let (snap, signers, registry) = npm_lab_snapshot(&dir, Some(&canary.origin()));
    let (mirror, expect) = attested_mirror(&dir, &snap, &registry_listen(&registry));
    let report = check_passes_with_canary(
        &registry,
        "npm",
        &signers,
        &dir.join("report"),
        &canary,
        &secret,
        &expect,
    );
    let egress_suite::Packages::Npm(p) = &report.plan.packages else {
        panic!("an npm plan")
    };
    assert_eq!(
        p.present.first().map(|n| n.as_str()),
        Some("egress-kit-present")
    );
    assert!(p.present.iter().any(|n| n.as_str() == npm_canary::PRESENT));
    let moved = report.probe("P5.upstream-dist-tag").expect("probe");
    assert!(
        moved.observations.iter().any(|o| matches!(o,
            Observation::UpstreamMutation { filename, .. } if filename.starts_with("egress-kit-present-"))),
        "{:?}",
        moved.observations
    );
    drop(mirror);
    assert!(canary.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_error_line(o: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("egress-conformance: "), "{err}");
    err
}

/// The same kit twice is the same bytes; bad input is one line and its exit
/// code; nothing half-written is left.
#[test]
fn kit_output_is_reproducible_and_bad_input_is_one_line() {
    let dir = tmpdir("egress-lab-kit-cli");
    for protocol in ["pypi", "npm"] {
        let (a, b) = (
            dir.join(format!("{protocol}-a")),
            dir.join(format!("{protocol}-b")),
        );
        let oa = run(&["kit", "--protocol", protocol, "--out", s(&a)]);
        let ob = run(&["kit", "--protocol", protocol, "--out", s(&b)]);
        ok(&oa, "kit");
        let digests = |o: &std::process::Output| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| {
                    l.split_once("  ").is_some_and(|(h, _)| {
                        h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())
                    })
                })
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            digests(&oa).len(),
            5,
            "{}",
            String::from_utf8_lossy(&oa.stdout)
        );
        assert_eq!(digests(&oa), digests(&ob));
        // An existing kit is not overwritten.
        let o = run(&["kit", "--protocol", protocol, "--out", s(&a)]);
        assert_eq!(o.status.code(), Some(2));
        assert!(one_error_line(&o).contains("exists"));
    }
    let out = dir.join("bad");
    let o = run(&["kit", "--out", s(&out), "--canary", "http://x/\"+1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_error_line(&o).contains("--canary"));
    assert!(!out.exists());
    // A kit aimed at a canary carries its URL.
    let aimed = dir.join("aimed");
    ok(
        &run(&["kit", "--out", s(&aimed), "--canary", "http://127.0.0.1:9/"]),
        "kit --canary",
    );
    // --npm-dist needs the registry URL, and takes only npm tarballs.
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let build = |args: &[&str]| {
        let mut all = vec!["snapshot", "build", "--sign-key", s(&key), "--out"];
        all.push(s(&out));
        all.extend_from_slice(args);
        run(&all)
    };
    let o = build(&["--npm-dist", s(&dir.join("npm-a"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(one_error_line(&o).contains("--npm-registry-url"));
    let bad = dir.join("bad-tgz");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("x-1.0.0.tgz"), b"not a tarball").expect("write");
    let o = build(&[
        "--npm-dist",
        s(&bad),
        "--npm-registry-url",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(o.status.code(), Some(4));
    assert!(one_error_line(&o).contains("--npm-dist"));
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
