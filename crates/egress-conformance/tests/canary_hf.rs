//! The standalone Hub canary, as a lab runs it: `egress-conformance canary
//! --protocol hf` as a process of its own, `kit --protocol hf` for the
//! `hf.lock` that names its repositories, and `check --protocol hf
//! --canary` against a Hub mirror in front of it. The reference:
//! egress-mirror serving a snapshot that `snapshot build --hf-lock KIT`
//! built from the canary (every sub-probe runs, none SKIPPED for want of an
//! upstream, exit 0). The bad one: the Hub caching proxy fixture with the
//! canary as its upstream (FAILs, each naming what showed it).

mod common;

use common::canary::{check_with, table, upstream_log_sizes, CanaryProcess};
use common::{free_port, ok, run, s, tmpdir, MirrorProcess};
use egress_model::{Status, Url};
use std::path::Path;

/// `check --protocol hf URL --canary ...`, with `--allowed-signers`.
fn check(
    url: &str,
    canary: &CanaryProcess,
    secret: &Path,
    signers: Option<&Path>,
    out: &Path,
) -> (egress_suite::Report, Option<i32>) {
    let mut flags = vec!["--protocol", "hf"];
    if let Some(f) = signers {
        flags.extend_from_slice(&["--allowed-signers", s(f)]);
    }
    check_with(url, &flags, canary, secret, out)
}

#[test]
fn check_with_the_hub_canary_runs_every_sub_probe() {
    let dir = tmpdir("canary-hf");
    let secret = dir.join("egress-canary.secret");
    let canary = CanaryProcess::start("hf", &secret);
    let endpoint = canary.get("endpoint (HF_ENDPOINT)");
    let lfs = canary.get("LFS origin");
    assert_ne!(Url::parse(&lfs).unwrap().origin(), canary.origin());

    // The kit: an hf.lock naming the canary's kit repositories.
    let kit = dir.join("kit");
    let o = run(&["kit", "--protocol", "hf", "--out", s(&kit)]);
    ok(&o, "kit --protocol hf");
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("--hf-lock"), "{said}");
    assert!(!said.contains("tripwire"), "{said}");
    let lock = kit.join("hf.lock");

    // The reference: egress-mirror on a snapshot built from the canary.
    let key = dir.join("lab-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--hf-lock",
            s(&lock),
            "--hf-endpoint",
            &endpoint,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --hf-lock KIT",
    );
    let listen = format!("127.0.0.1:{}", free_port());
    let mirror = MirrorProcess::start(&snap, &listen);
    let url = format!("http://{listen}/hf");
    let signers = dir.join("lab-key.allowed_signers");
    let (report, code) = check(
        &url,
        &canary,
        &secret,
        Some(&signers),
        &dir.join("reference"),
    );
    for p in &report.probes {
        assert_eq!(p.status, Status::Pass, "{}: {}", p.id, p.reason);
    }
    assert_eq!(code, Some(0), "{}", table(&report));
    assert!(report.plan.upstream.is_some());
    assert_eq!(
        upstream_log_sizes(&report),
        [0],
        "the mirror never contacted the canary"
    );
    drop(mirror);
    // The run moved main: the bad one gets a fresh canary, as each run of
    // a lab's would.
    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    let canary = CanaryProcess::start("hf", &secret);
    let endpoint = canary.get("endpoint (HF_ENDPOINT)");

    // The bad one: a caching proxy whose upstream is the canary.
    let proxy =
        egress_references::hf::proxy::HfCachingProxy::start(&endpoint).expect("the caching proxy");
    let (report, code) = check(
        &proxy.endpoint(),
        &canary,
        &secret,
        None,
        &dir.join("proxy"),
    );
    assert_eq!(code, Some(1), "{}", table(&report));
    let fails = |id: &str| {
        let p = report.probe(id).unwrap();
        assert_eq!(p.status, Status::Fail, "{id}: {}", p.reason);
        p.reason.clone()
    };
    // Each FAIL names what showed it: the canary's log, the move upstream.
    let contact = fails("P2.upstream-contact");
    assert!(contact.contains("contacted the upstream"), "{contact}");
    assert!(upstream_log_sizes(&report).iter().any(|n| *n > 0));
    let moved = fails("P5.moved-main");
    assert!(moved.contains("on main"), "{moved}");
    let viewer = fails("P4.viewer-routes");
    assert!(viewer.contains("dataset viewer"), "{viewer}");
    fails("P2.absent-revision");
    fails("P3.xet-read-token");
    fails("P1.upstream-bad-digest");
    proxy.stop();

    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check --protocol hf` without a canary needs a repository to read, and
/// `--canary` of another protocol is named for what it is.
#[test]
fn check_protocol_hf_says_what_it_needs() {
    let o = run(&["check", "--protocol", "hf", "http://127.0.0.1:9/hf"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--present") && err.contains("datasets/org/name"),
        "{err}"
    );
    let o = run(&[
        "check",
        "--protocol",
        "hf",
        "http://127.0.0.1:9/hf",
        "--present",
        "a/../b",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a Hugging Face repo id"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
