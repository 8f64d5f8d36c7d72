//! The standalone cargo canary, as a lab runs it: `egress-conformance
//! canary --protocol cargo` as a process of its own, `kit --protocol cargo`
//! for the `Cargo.lock` that pins its crates, and `check --protocol cargo
//! --canary` against a registry in front of it. The reference:
//! egress-mirror serving a snapshot that `snapshot build --cargo-lock KIT`
//! built from the canary (every sub-probe runs, none SKIPPED for want of an
//! upstream, exit 0). The bad one: the cargo caching proxy fixture with the
//! canary as its upstream (FAILs, each naming what showed it).

mod common;

use common::canary::{check_with, client, table, upstream_log_sizes, CanaryProcess};
use common::{free_port, ok, run, s, tmpdir, MirrorProcess};
use egress_model::{Status, Url};
use std::path::Path;

/// `check --protocol cargo URL --canary ...`, with `--allowed-signers`.
fn check(
    url: &str,
    canary: &CanaryProcess,
    secret: &Path,
    signers: Option<&Path>,
    out: &Path,
) -> (egress_suite::Report, Option<i32>) {
    let mut flags = vec!["--protocol", "cargo"];
    if let Some(f) = signers {
        flags.extend_from_slice(&["--allowed-signers", s(f)]);
    }
    check_with(url, &flags, canary, secret, out)
}

#[test]
fn check_with_the_cargo_canary_runs_every_sub_probe() {
    let dir = tmpdir("canary-cargo");
    let secret = dir.join("egress-canary.secret");
    let canary = CanaryProcess::start("cargo", &secret);
    let index = canary.get("index URL");
    let index = index.strip_prefix("sparse+").expect("a sparse+ URL");
    assert!(index.ends_with("/index/"), "{index}");
    let dl = canary.get("download origin");
    assert_ne!(Url::parse(&dl).unwrap().origin(), canary.origin());
    // config.json names the second origin.
    let config_path = format!("{}config.json", Url::parse(index).unwrap().path());
    let config = client(index).get("config.json", &config_path, None);
    let config = config.response.unwrap().full_body().unwrap().to_vec();
    assert!(String::from_utf8_lossy(&config).contains(&dl), "{config:?}");

    // The kit: a Cargo.lock pinning the canary's snapshot crates.
    let kit = dir.join("kit");
    let o = run(&["kit", "--protocol", "cargo", "--out", s(&kit)]);
    ok(&o, "kit --protocol cargo");
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("--cargo-lock"), "{said}");
    assert!(!said.contains("tripwire"), "{said}");
    let lock = kit.join("Cargo.lock");

    // The reference: egress-mirror on a snapshot built from the canary.
    let key = dir.join("lab-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let port = free_port();
    let registry = format!("http://127.0.0.1:{port}");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--cargo-lock",
            s(&lock),
            "--cargo-index-url",
            index,
            "--cargo-registry-url",
            &registry,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --cargo-lock KIT",
    );
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let url = format!("{registry}/cargo/index/");
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
    // The run changed the canary (a version published, one republished,
    // one yanked): the bad one gets a fresh canary, as each run of a lab's
    // would.
    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    let canary = CanaryProcess::start("cargo", &secret);
    let dl = canary.get("download origin");

    // The bad one: a caching proxy whose upstream is the canary.
    let proxy = egress_references::cargo::proxy::CargoCachingProxy::start(&canary.origin(), &dl)
        .expect("the caching proxy");
    let (report, code) = check(
        &proxy.index_url(),
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
    // Each FAIL names what showed it: the canary's log, the change upstream.
    let contact = fails("P2.upstream-contact");
    assert!(contact.contains("contacted the upstream"), "{contact}");
    assert!(upstream_log_sizes(&report).iter().any(|n| *n > 0));
    fails("P2.new-publish");
    fails("P5.upstream-yank");
    fails("P5.upstream-republished");
    proxy.stop();

    assert!(canary.stop().success(), "SIGTERM is a clean stop");
    let _ = std::fs::remove_dir_all(&dir);
}
