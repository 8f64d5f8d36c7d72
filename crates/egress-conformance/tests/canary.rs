//! The standalone canary, as a lab runs it: `egress-conformance canary` as
//! a process of its own, and `check --canary` against a mirror in front of
//! it (the lab scenario: the reference mirror serving a snapshot of the
//! canary's files, every sub-probe run, none skipped).

mod common;

use common::canary::{canary_files, check_with, client, CanaryProcess};
use common::{s, tmpdir};
use egress_model::Url;
use egress_model::{Observation, Status};
use std::sync::Arc;

#[test]
fn a_canary_stops_cleanly_and_keeps_its_secret() {
    let dir = tmpdir("canary-secret");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let first = std::fs::read_to_string(&secret).unwrap();
    assert_eq!(first.trim_end().len(), 64);
    assert!(canary.get("index URL").ends_with("/simple/"));
    // Without the secret, the control API is an unknown route.
    let c = client(&canary.origin());
    let plan = c.get("plan", "/_egress-canary/plan", None);
    let unknown = c.get("unknown", "/_egress-canary/nothing-here", None);
    assert_eq!(plan.status(), Some(404));
    assert_eq!(
        plan.response.as_ref().unwrap().body_sha256,
        unknown.response.as_ref().unwrap().body_sha256
    );
    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    // A second start reads the same secret.
    let again = CanaryProcess::start("npm", &secret);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), first);
    assert!(again.get("registry URL").ends_with('/'));
    assert!(again.stop().success());
    // A secret file that others may read is refused.
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = common::run(&[
        "canary",
        "--listen",
        "127.0.0.1:0",
        "--secret-file",
        s(&secret),
    ]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn check_with_a_canary_that_does_not_answer_is_no_verdict() {
    let dir = tmpdir("canary-absent");
    let secret = dir.join("secret");
    std::fs::write(&secret, format!("{}\n", "ab".repeat(32))).unwrap();
    // Something that is not a canary: the control API answers 404.
    let canary = CanaryProcess::start("pypi", &dir.join("real-secret"));
    let o = common::run(&[
        "check",
        &canary.get("index URL"),
        "--canary",
        &canary.origin(),
        "--canary-secret",
        s(&secret),
    ]);
    assert_eq!(
        o.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--canary"), "{err}");
    // Nothing listens: the same.
    let o = common::run(&[
        "check",
        &canary.get("index URL"),
        "--canary",
        "http://127.0.0.1:9",
        "--canary-secret",
        s(&dir.join("real-secret")),
    ]);
    assert_eq!(o.status.code(), Some(7));
    drop(canary);
}

/// `check` of `mirror` with `--canary`: its JSON report, every sub-probe
/// PASS, exit 0, the whole run's canary log read and empty.
fn check_passes_with_no_contact(args: &[&str], canary: &CanaryProcess, secret: &std::path::Path) {
    let mut all: Vec<&str> = args.to_vec();
    let origin = canary.origin();
    all.extend([
        "--canary",
        &origin,
        "--canary-secret",
        s(secret),
        "--format",
        "json",
    ]);
    let out = secret.with_file_name("report");
    all.extend(["--out", s(&out)]);
    let o = common::run(&all);
    // Every verdict re-derives from the report alone (the canary's log is in it).
    let v = common::run(&["report", "verify", s(&out)]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
    let report: egress_suite::Report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let not_pass: Vec<String> = report
        .probes
        .iter()
        .filter(|p| p.status != Status::Pass && !common::mutant::skipped_for_plain_http(p))
        // The canary's own PyPI pages list no upload times: nothing for
        // P5.cutoff to hold them to.
        .filter(|p| !common::mutant::skipped_without_times(p))
        .map(|p| format!("{} {}: {}", p.id, p.status, p.reason))
        .collect();
    assert!(not_pass.is_empty(), "{not_pass:#?}");
    assert_eq!(o.status.code(), Some(0));
    assert!(report.plan.upstream.is_some());
    let contact = report.probe("P2.upstream-contact").unwrap();
    let logs: Vec<usize> = contact
        .observations
        .iter()
        .filter_map(|o| match o {
            Observation::UpstreamLog { requests, .. } => Some(requests.len()),
            _ => None,
        })
        .collect();
    assert_eq!(logs, [0], "{:?}", contact.observations);
}

/// The same for npm: the reference mirror serving a signed npm snapshot of
/// the npm canary's snapshot packages, fetched from it as npm would.
#[test]
fn check_with_a_canary_runs_every_npm_sub_probe() {
    let dir = tmpdir("canary-lab-npm");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("npm", &secret);
    let registry = canary.get("registry URL");
    let late = egress_references::builtin::LateMirror::default();
    let server =
        egress_http::Server::bind("127.0.0.1:0", late.clone(), egress_http::Limits::default())
            .unwrap();
    let mirror = format!("{}/", server.base_url());
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    builder.npm_registry_url(&mirror).unwrap();
    let c = client(&registry);
    let keys = c.get("keys", "/-/npm/v1/keys", None);
    builder
        .npm_registry_keys(keys.response.unwrap().full_body().unwrap().to_vec())
        .unwrap();
    for name in [
        "ec-present",
        "@ec/scoped",
        "ec-tripwire",
        "ec-template-text",
    ] {
        let ex = c.get(
            "packument",
            &format!("/{}", name.replacen('/', "%2f", 1)),
            None,
        );
        let doc: serde_json::Value =
            serde_json::from_slice(ex.response.unwrap().full_body().unwrap()).unwrap();
        for (version, v) in doc["versions"].as_object().unwrap() {
            let dist = &v["dist"];
            let url = Url::parse(dist["tarball"].as_str().unwrap()).unwrap();
            let filename = url.path().rsplit('/').next().unwrap();
            let bytes = c
                .get("tarball", url.path(), None)
                .response
                .unwrap()
                .full_body()
                .unwrap()
                .to_vec();
            let integrity = dist["integrity"].as_str().unwrap();
            // As `snapshot build` does: the publish time the packument gives.
            let meta = egress_snapshot::NpmVersionMeta {
                published: doc["time"][version.as_str()].as_str().map(str::to_string),
                ..Default::default()
            };
            builder
                .add_npm_tarball_with(name, version, filename, bytes, integrity, meta)
                .unwrap();
            builder
                .add_npm_signatures(name, version, integrity, dist["signatures"].clone())
                .unwrap();
        }
    }
    let key = egress_references::builtin::demo_key();
    let snapshot = builder
        .build(
            "2026-01-01T00:00:00Z",
            Some(&key),
            "built-in-reference@egress-conformance",
        )
        .unwrap();
    // Attested, as the reference is: the chain passes too.
    let id = snapshot.id().to_hex();
    let attestor = egress_references::builtin::demo_attestor(snapshot.id()).unwrap();
    late.set(egress_mirror::Mirror::new(Arc::new(snapshot)).attest(attestor));
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, egress_references::builtin::demo_signers()).unwrap();
    check_passes_with_no_contact(
        &[
            "check",
            &mirror,
            "--protocol",
            "npm",
            "--allowed-signers",
            s(&signers),
            "--expect-snapshot",
            &id,
            "--present",
            "ec-present",
            "--present",
            "@ec/scoped",
        ],
        &canary,
        &secret,
    );
    server.stop();
    assert!(canary.stop().success());
}

/// The lab scenario: the reference mirror serving a signed snapshot of the
/// canary's snapshot projects, nothing using the canary as its upstream;
/// `check --canary` runs every sub-probe and passes, with no contact.
#[test]
fn check_with_a_canary_runs_every_pypi_sub_probe() {
    let dir = tmpdir("canary-lab");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    let index = canary.get("index URL");
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    for (name, bytes) in canary_files(&index, &["ec-present", "ec-tripwire", "ec-template-text"]) {
        builder.add_dist(&name, bytes, None).unwrap();
    }
    let key = egress_references::builtin::demo_key();
    let snapshot = builder
        .build(
            "2026-01-01T00:00:00Z",
            Some(&key),
            "built-in-reference@egress-conformance",
        )
        .unwrap();
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, egress_references::builtin::demo_signers()).unwrap();
    // Attested, as the reference is: the chain passes too.
    let id = snapshot.id().to_hex();
    let attestor = egress_references::builtin::demo_attestor(snapshot.id()).unwrap();
    let mirror = egress_mirror::serve_mirror(
        egress_mirror::Mirror::new(Arc::new(snapshot)).attest(attestor),
        "127.0.0.1:0",
    )
    .unwrap();
    let index = format!("{}/simple/", mirror.base_url());
    check_passes_with_no_contact(
        &[
            "check",
            &index,
            "--allowed-signers",
            s(&signers),
            "--expect-snapshot",
            &id,
            "--present",
            "ec-present",
        ],
        &canary,
        &secret,
    );
    drop(mirror);
    assert!(canary.stop().success());
}

/// The kit as `kit --protocol P --canary ORIGIN` writes it: (file name, bytes).
fn kit_files(protocol: &str, canary: &str, out: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let o = common::run(&[
        "kit",
        "--protocol",
        protocol,
        "--out",
        s(out),
        "--canary",
        canary,
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// The standalone canary serves the conformance kit's packages, byte for
/// byte as `kit --canary <its origin>` writes them, tripwire included.
#[test]
fn the_standalone_canary_serves_the_kit_byte_for_byte() {
    let dir = tmpdir("canary-kit-bytes");
    let canary = CanaryProcess::start("pypi", &dir.join("secret"));
    let kit = kit_files("pypi", &canary.origin(), &dir.join("kit-pypi"));
    let mut served = canary_files(
        &canary.get("index URL"),
        &[
            "egress-kit-present",
            "egress-kit-sdist-only",
            "egress-kit-tripwire",
            "egress-kit-template",
        ],
    );
    served.sort();
    assert_eq!(kit.len(), 5);
    assert!(
        kit == served,
        "the canary's kit differs from `kit --canary`"
    );
    assert!(canary.stop().success());
    let npm = CanaryProcess::start("npm", &dir.join("secret"));
    let kit = kit_files("npm", &npm.origin(), &dir.join("kit-npm"));
    let mut served = common::canary::canary_tarballs(
        &npm.get("registry URL"),
        &[
            "egress-kit-present",
            "@egress-kit/scoped",
            "egress-kit-tripwire",
            "egress-kit-template",
        ],
    );
    // `npm pack` names the scoped tarball with its scope.
    for (name, _) in &mut served {
        if name == "scoped-1.0.0.tgz" {
            *name = "egress-kit-scoped-1.0.0.tgz".into();
        }
    }
    served.sort();
    assert_eq!(kit.len(), 5);
    assert!(
        kit == served,
        "the npm canary's kit differs from `kit --canary`"
    );
    assert!(npm.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

fn status_of(report: &egress_suite::Report, id: &str) -> (Status, String) {
    let r = report.probe(id).unwrap();
    (r.status, r.reason.clone())
}

/// A proxy in front of the standalone canary: the canary's mutations of
/// the kit's package show through it, and check says so.
#[test]
fn a_proxy_in_front_of_the_canary_fails_the_kit_mutations() {
    let dir = tmpdir("canary-kit-proxy");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    let proxy = egress_references::pypi::proxy::CachingProxy::start(
        Url::parse(&canary.get("index URL")).unwrap(),
    )
    .unwrap();
    let (report, code) = check_with(
        &proxy.index_url(),
        &["--present", "egress-kit-present"],
        &canary,
        &secret,
        &dir.join("pypi"),
    );
    assert_eq!(code, Some(1));
    let (status, reason) = status_of(&report, "P5.upstream-new-version");
    assert_eq!(status, Status::Fail, "{reason}");
    proxy.stop();
    assert!(canary.stop().success());
    let canary = CanaryProcess::start("npm", &secret);
    let proxy = egress_references::npm::proxy::NpmCachingProxy::start(
        Url::parse(&canary.get("registry URL")).unwrap(),
    )
    .unwrap();
    let (report, code) = check_with(
        &proxy.registry_url(),
        &["--protocol", "npm", "--present", "egress-kit-present"],
        &canary,
        &secret,
        &dir.join("npm"),
    );
    assert_eq!(code, Some(1));
    let (status, reason) = status_of(&report, "P5.upstream-new-version");
    assert_eq!(status, Status::Fail, "{reason}");
    proxy.stop();
    assert!(canary.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot that holds nothing the canary serves (no kit): the mutations
/// cannot be made, and check says so and what to do, never PASS.
#[test]
fn a_snapshot_without_the_kit_leaves_the_mutations_inconclusive() {
    let dir = tmpdir("canary-no-kit");
    let secret = dir.join("secret");
    let canary = CanaryProcess::start("pypi", &secret);
    let dist = dir.join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let name = egress_model::ProjectName::new("lab-own").unwrap();
    let wheel = egress_artifacts::build_wheel(&egress_artifacts::WheelSpec {
        name: name.clone(),
        version: egress_model::Version::new("1.0.0").unwrap(),
        summary: "The lab's own".into(),
        description: "Only the lab has it.\n".into(),
        requires_python: None,
        files: vec![("lab_own/__init__.py".into(), b"".to_vec())],
    });
    std::fs::write(dist.join(&wheel.filename), &wheel.bytes).unwrap();
    let key = dir.join("key");
    let o = common::run(&["key", "generate", "--out", s(&key)]);
    assert_eq!(o.status.code(), Some(0));
    let snap = dir.join("snap");
    let o = common::run(&[
        "snapshot",
        "build",
        "--dist",
        s(&dist),
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let mirror = common::MirrorProcess::start(&snap, "127.0.0.1:0");
    let signers = dir.join("key.allowed_signers");
    let (report, code) = check_with(
        &mirror.base,
        &["--allowed-signers", s(&signers)],
        &canary,
        &secret,
        &dir.join("report"),
    );
    assert_eq!(code, Some(3));
    for id in ["P5.upstream-new-version", "P5.upstream-replaced-bytes"] {
        let (status, reason) = status_of(&report, id);
        assert_eq!(status, Status::Inconclusive, "{id}: {reason}");
        assert!(
            reason.contains("serves no") && reason.contains("lab"),
            "{id}: {reason}"
        );
        assert!(
            reason.contains("egress-conformance kit --canary"),
            "{id}: {reason}"
        );
    }
    drop(mirror);
    assert!(canary.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}
