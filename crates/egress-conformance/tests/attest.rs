//! Binding the instance to the snapshot, with the real binaries: the
//! `egress-mirror` binary started with `--instance-dir`, its key certified
//! by `egress-conformance instance certify`, and `check --expect-snapshot`
//! / `--expect-binary` / `--require-attestation`. The snapshots are the
//! built-in demonstration snapshot and the same content built at another
//! time (another snapshot ID), both signed by the demonstration key.
//!
//! The mutants (`mutants.rs`, `npm_mutants.rs`) show each fault in process:
//! a replayed nonce, an uncertified key, wrong certificates, another
//! snapshot's statement.

mod common;

use common::{mirror_bin, ok, run, s, snapshot_id, tmpdir, MirrorProcess};
use egress_model::{Sha256Digest, Status};
use egress_references::builtin::{demo_key, demo_signers};
use egress_references::pypi::builtin::{demo_snapshot, demo_snapshot_at, start_canary};
use std::path::Path;

/// `check URL --allowed-signers FILE ARGS... --out DIR`: the exit code and
/// the report.
fn check(url: &str, signers: &Path, out: &Path, args: &[&str]) -> (i32, egress_suite::Report) {
    let mut all = vec![
        "check",
        url,
        "--allowed-signers",
        s(signers),
        "--out",
        s(out),
    ];
    all.extend(args);
    let o = run(&all);
    let report: egress_suite::Report =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report"))
            .expect("json");
    let v = run(&["report", "verify", s(&out.join("report.json"))]);
    assert_eq!(v.status.code(), Some(0), "report verify disagrees");
    (o.status.code().unwrap_or(-1), report)
}

fn verdict<'a>(r: &'a egress_suite::Report, id: &str) -> (Status, &'a str) {
    let p = r.probe(id).expect("sub-probe");
    (p.status, p.reason.as_str())
}

/// Two snapshots of the same content (A: the demonstration snapshot, B:
/// built at another time), the lab key and its allowed-signers file.
struct Lab {
    dir: std::path::PathBuf,
    a: std::path::PathBuf,
    b: std::path::PathBuf,
    key: std::path::PathBuf,
    signers: std::path::PathBuf,
}

fn lab(name: &str) -> Lab {
    let dir = tmpdir(name);
    let canary = start_canary().expect("canary");
    let a = dir.join("a");
    let b = dir.join("b");
    demo_snapshot(&canary)
        .expect("snapshot")
        .write_dir(&a)
        .expect("write");
    demo_snapshot_at(&canary, "2026-02-02T00:00:00Z")
        .expect("snapshot")
        .write_dir(&b)
        .expect("write");
    canary.stop();
    let key = dir.join("lab-key");
    std::fs::write(&key, demo_key().to_openssh()).expect("write");
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, demo_signers()).expect("write");
    Lab {
        dir,
        a,
        b,
        key,
        signers,
    }
}

fn certify(lab: &Lab, instance: &Path, snap: &Path, out: &Path) -> std::process::Output {
    run(&[
        "instance",
        "certify",
        "--key",
        s(&lab.key),
        "--instance-key",
        s(&instance.join("instance.pub")),
        "--snapshot",
        s(snap),
        "--out",
        s(out),
    ])
}

/// A mirror started on snapshot B: `--expect-snapshot A` fails P5 naming
/// both IDs; before the certificate is deployed its key is uncertified; a
/// certificate for another key is a wrong one; once the right one is
/// deployed (read while the mirror runs), the whole chain passes with
/// `--expect-snapshot B --expect-binary <sha256 of egress-mirror>`.
#[test]
fn the_chain_from_an_uncertified_start_to_a_deployed_certificate() {
    let lab = lab("egress-attest-chain");
    let inst = lab.dir.join("instance");
    std::fs::create_dir_all(&inst).expect("mkdir");
    let mirror = MirrorProcess::start_with(&lab.b, "127.0.0.1:0", &["--instance-dir", s(&inst)]);
    let (a, b) = (snapshot_id(&lab.a).to_hex(), snapshot_id(&lab.b).to_hex());
    let binary = Sha256Digest::of(&std::fs::read(mirror_bin()).expect("binary")).to_hex();
    let url = mirror.base.clone();
    let out = |n: &str| lab.dir.join(n);

    // Another snapshot than the one expected.
    let (code, r) = check(&url, &lab.signers, &out("r1"), &["--expect-snapshot", &a]);
    assert_eq!(code, 1);
    let (status, reason) = verdict(&r, "P5.expected-snapshot");
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(
        reason.contains(&format!("serves snapshot {}", &b[..16]))
            && reason.contains(&format!("not the expected {}", &a[..16])),
        "{reason}"
    );
    assert_eq!(r.predicate("P5").map(|p| p.status), Some(Status::Fail));

    // Not certified yet.
    let (_, r) = check(&url, &lab.signers, &out("r2"), &["--expect-snapshot", &b]);
    assert_eq!(verdict(&r, "P5.expected-snapshot").0, Status::Pass);
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(reason.contains("is not certified"), "{reason}");

    // A certificate for another instance key: a wrong certificate. The
    // other instance is a second mirror on the same snapshot.
    let other_inst = lab.dir.join("other-instance");
    std::fs::create_dir_all(&other_inst).expect("mkdir");
    let other =
        MirrorProcess::start_with(&lab.b, "127.0.0.1:0", &["--instance-dir", s(&other_inst)]);
    ok(
        &certify(&lab, &other_inst, &lab.b, &inst.join("instance.cert")),
        "certify",
    );
    let (_, r) = check(&url, &lab.signers, &out("r3"), &["--expect-snapshot", &b]);
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(reason.contains("a wrong certificate"), "{reason}");
    drop(other);

    // The right certificate, deployed while the mirror runs.
    ok(
        &certify(&lab, &inst, &lab.b, &inst.join("instance.cert")),
        "certify",
    );
    let (_, r) = check(
        &url,
        &lab.signers,
        &out("r4"),
        &["--expect-snapshot", &b, "--expect-binary", &binary],
    );
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(
        reason.contains(&binary)
            && reason.contains("(as expected)")
            && reason.contains("the one served and expected")
            && (reason.contains("landlock") || reason.contains("NOT confined")),
        "{reason}"
    );
    assert_eq!(verdict(&r, "P5.expected-snapshot").0, Status::Pass);
    // Another binary than the one running.
    let (_, r) = check(
        &url,
        &lab.signers,
        &out("r5"),
        &["--expect-binary", &"0".repeat(64)],
    );
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(reason.contains("not the expected"), "{reason}");
    drop(mirror);
    let _ = std::fs::remove_dir_all(&lab.dir);
}

/// A mirror without the route cannot PASS: SKIPPED, and P5 is judged on
/// the rest; FAIL when `--require-attestation` asks for one.
#[test]
fn a_mirror_without_attestation_is_skipped_unless_required() {
    let lab = lab("egress-attest-none");
    let mirror = MirrorProcess::start(&lab.a, "127.0.0.1:0");
    let url = mirror.base.clone();
    let (_, r) = check(&url, &lab.signers, &lab.dir.join("r1"), &[]);
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Skipped, "{reason}");
    assert!(
        reason.contains("offers no instance attestation"),
        "{reason}"
    );
    assert_eq!(r.predicate("P5").map(|p| p.status), Some(Status::Pass));
    let (code, r) = check(
        &url,
        &lab.signers,
        &lab.dir.join("r2"),
        &["--require-attestation"],
    );
    assert_eq!(code, 1);
    let (status, reason) = verdict(&r, "P5.instance-attestation");
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(reason.contains("--require-attestation"), "{reason}");
    drop(mirror);
    let _ = std::fs::remove_dir_all(&lab.dir);
}

fn one_line_error(o: &std::process::Output, code: i32, words: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(words), "{err}");
}

/// Bad input: one line, a distinct exit code, nothing written.
#[test]
fn bad_flags_and_files_are_one_line_errors() {
    let lab = lab("egress-attest-errors");
    let url = "http://127.0.0.1:9/";
    one_line_error(
        &run(&["check", url, "--expect-snapshot", "abc"]),
        2,
        "--expect-snapshot",
    );
    one_line_error(
        &run(&["check", url, "--expect-binary", &"a".repeat(64)]),
        2,
        "need --allowed-signers",
    );
    one_line_error(
        &run(&["check", url, "--require-attestation"]),
        2,
        "need --allowed-signers",
    );
    let inst = lab.dir.join("instance");
    std::fs::create_dir_all(&inst).expect("mkdir");
    let cert = lab.dir.join("cert");
    // No instance key yet.
    one_line_error(&certify(&lab, &inst, &lab.a, &cert), 4, "--instance-key");
    std::fs::write(
        inst.join("instance.pub"),
        format!(
            "{}\n",
            egress_signing::InstanceKey::from_seed([3; 32])
                .public()
                .to_openssh(&format!(
                    "egress-mirror instance of snapshot {}",
                    snapshot_id(&lab.b).to_hex()
                ))
        ),
    )
    .expect("write");
    // The instance says it serves B; the lab is certifying it for A.
    one_line_error(&certify(&lab, &inst, &lab.a, &cert), 4, "serves snapshot");
    // A snapshot the key did not sign.
    let stranger = lab.dir.join("stranger-key");
    std::fs::write(
        &stranger,
        egress_signing::SigningKey::from_seed([9; 32], "x").to_openssh(),
    )
    .expect("write");
    let o = run(&[
        "instance",
        "certify",
        "--key",
        s(&stranger),
        "--instance-key",
        s(&inst.join("instance.pub")),
        "--snapshot",
        s(&lab.b),
        "--out",
        s(&cert),
    ]);
    one_line_error(&o, 4, "not signed by --key");
    one_line_error(
        &run(&[
            "instance",
            "certify",
            "--key",
            s(&lab.key),
            "--instance-key",
            s(&inst.join("instance.pub")),
            "--snapshot",
            "not-an-id",
            "--out",
            s(&cert),
        ]),
        2,
        "--snapshot",
    );
    assert!(!cert.exists(), "nothing is written on error");
    ok(&certify(&lab, &inst, &lab.b, &cert), "certify");
    let c =
        egress_signing::Certificate::parse(&std::fs::read(&cert).expect("cert")).expect("parse");
    assert_eq!(c.snapshot, snapshot_id(&lab.b));
    let _ = std::fs::remove_dir_all(&lab.dir);
}
