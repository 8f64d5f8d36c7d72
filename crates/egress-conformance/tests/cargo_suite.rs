//! The cargo suite against the reference mirror (A) and a pull-through
//! caching proxy (B), both in front of the cargo canary's fixture crates.
//!
//! (A) serves a snapshot built by `snapshot build --cargo-lock`'s own code
//! (`egress_build::build`) from a `Cargo.lock` pinning the fixture crates:
//! every cargo sub-probe must PASS (or be SKIPPED where the run gives no
//! expectation). (B) passes index files, downloads, API routes and tokens
//! to the canary: each predicate must FAIL, on the sub-probe that
//! attributes it.

mod common;

use common::verdicts::{assert_reverifies, dump, status};

use egress_model::Status;
use egress_references::cargo::builtin::{run_cargo_proxy, run_cargo_reference};

#[test]
fn reference_a_passes_every_cargo_sub_probe() {
    let r = run_cargo_reference().expect("the cargo reference run");
    assert_reverifies(&r);
    let text = dump(&r);
    for x in &r.probes {
        assert!(
            matches!(x.status, Status::Pass | Status::Skipped),
            "{} is {:?}: {}\n{text}",
            x.id,
            x.status,
            x.reason
        );
    }
    for p in ["P1", "P2", "P3", "P4", "P5", "P6"] {
        assert!(
            r.probes
                .iter()
                .any(|x| x.id.starts_with(&format!("{p}.")) && x.status == Status::Pass),
            "{p} has no PASS\n{text}"
        );
    }
    // The token probe and the yank are observed at the canary, not skipped.
    for id in [
        "P3.registry-token",
        "P5.upstream-yank",
        "P5.yanked-flags",
        "P2.new-publish",
    ] {
        assert_eq!(status(&r, id), Status::Pass, "{id}\n{text}");
    }
}

#[test]
fn caching_proxy_b_fails_each_predicate_where_attributed() {
    let r = run_cargo_proxy().expect("the cargo proxy run");
    assert_reverifies(&r);
    let text = dump(&r);
    for id in ["C.config", "C.index", "C.crate"] {
        assert_eq!(status(&r, id), Status::Pass, "{id}\n{text}");
    }
    for id in [
        "P1.upstream-uncovered",
        "P2.absent",
        "P2.new-publish",
        "P2.upstream-contact",
        "P3.config-origin",
        "P3.registry-token",
        "P3.run-wide-redirects",
        "P4.render-routes",
        "P5.upstream-republished",
        "P5.upstream-yank",
        "P6.write-routes",
    ] {
        assert_eq!(status(&r, id), Status::Fail, "{id}\n{text}");
    }
}

/// The lab's way: `snapshot build --cargo-lock` from the command line,
/// served by the real `egress-mirror` binary, then `check --protocol cargo`
/// (no canary: what a lab runs against its mirror) and the suite with the
/// canary controlled.
#[test]
fn the_mirror_binary_passes_check_protocol_cargo() {
    use common::{ok, run, s, tmpdir, MirrorProcess};
    use egress_model::{Upstream, Url};
    use egress_references::cargo::canary::{self as cargo_canary, CargoCanary};
    let dir = tmpdir("egress-cargo-suite-binary");
    let canary = CargoCanary::start_fixtures().expect("cargo canary");
    let lock = dir.join("Cargo.lock");
    let text = cargo_canary::fixture_lock(&cargo_canary::fixtures(), &cargo_canary::SNAPSHOT);
    std::fs::write(&lock, text).expect("write lock");
    let key = dir.join("signing-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let snap = dir.join("snap");
    let registry = format!("http://{listen}/");
    let index_url = canary.index_url();
    ok(
        &run(&[
            "snapshot",
            "build",
            "--cargo-lock",
            s(&lock),
            "--cargo-index-url",
            &index_url,
            "--cargo-registry-url",
            &registry,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --cargo-lock",
    );
    let mirror = MirrorProcess::start(&snap, &listen);
    let index = Url::parse(&format!("{}/cargo/index/", mirror.base)).expect("url");
    let signers = dir.join("signing-key.allowed_signers");

    let mut plan = egress_references::cargo::builtin::cargo_plan_for(&index, &canary);
    plan.present_source = "test".into();
    let report = egress_suite::run(egress_suite::Target {
        name: index.to_string(),
        client: egress_transcript::Client::new(index.clone(), Default::default(), None)
            .expect("client"),
        plan,
        upstream: Some(&canary as &dyn Upstream),
        allowed_signers: Some(std::fs::read(&signers).expect("signers")),
    });
    assert_reverifies(&report);
    let text = dump(&report);
    for p in &report.probes {
        let skipped_ok = matches!(
            p.id.as_str(),
            "P5.expected-snapshot" | "P5.instance-attestation"
        );
        assert!(
            p.status == Status::Pass || (skipped_ok && p.status == Status::Skipped),
            "{}: {:?} {}\n{text}",
            p.id,
            p.status,
            p.reason
        );
    }

    let url = index.to_string();
    let o = run(&[
        "check",
        &url,
        "--protocol",
        "cargo",
        "--present",
        cargo_canary::PRESENT,
        "--absent",
        cargo_canary::UPSTREAM_ONLY,
        "--allowed-signers",
        s(&signers),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    let out = String::from_utf8_lossy(&o.stdout);
    for p in v["probes"].as_array().expect("probes") {
        let status = p["status"].as_str().unwrap_or_default();
        assert!(
            status == "PASS" || status == "SKIPPED",
            "{} is {status}: {}\n{out}",
            p["id"],
            p["reason"]
        );
    }
    assert_eq!(o.status.code(), Some(0), "{out}");
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}
