//! Deployed peers checked through the standalone canary: devpi, proxpi and
//! Verdaccio started from testbed/peers/*.conf as a lab starts them, with
//! `egress-conformance canary` (a process of its own) as their upstream,
//! then `check --canary`. Their verdicts must equal the testbed's for the
//! same peer, sub-probe by sub-probe. Skipped, saying so, when
//! EGRESS_PEERS_DIR is unset (the peers live there).

mod common;

use common::canary::{canary_files, canary_tarballs, CanaryProcess};
use common::{s, tmpdir};
use egress_model::Status;
use egress_suite::Report;
use egress_testbed::suite::{self as testbed, Paths, Variant};
use std::path::PathBuf;
use std::sync::Mutex;

/// Peers run one at a time, as in the testbed's tests: two cores, and
/// devpi's set-up must not be measured under another peer's load.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn peers_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("EGRESS_PEERS_DIR").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("skipped: EGRESS_PEERS_DIR is unset (scripts/setup-peers installs the peers; point it at them)");
    }
    dir
}

fn statuses(r: &Report) -> Vec<(String, Status)> {
    r.probes.iter().map(|p| (p.id.clone(), p.status)).collect()
}

/// The testbed's report for `name`, and `check --canary`'s for the same
/// peer in front of a standalone canary.
fn both(name: &str, peers: &PathBuf) -> (Report, Report) {
    let variant = testbed::variants(&Paths::find().configs)
        .unwrap()
        .into_iter()
        .find(|v| v.name() == name)
        .unwrap();
    let (expected, _) =
        testbed::run_variant(&variant, peers).unwrap_or_else(|e| panic!("{name}: {e}"));
    let Variant::Peer(cfg) = &variant else {
        panic!("{name} is not a peer")
    };
    let npm = variant.protocol() == egress_testbed::Protocol::Npm;
    let dir = tmpdir(&format!("canary-peer-{name}"));
    let secret = dir.join("secret");
    let canary = CanaryProcess::start(if npm { "npm" } else { "pypi" }, &secret);
    let (index, names, packages) = if npm {
        let names = [
            "ec-present",
            "@ec/scoped",
            "ec-tripwire",
            "ec-template-text",
        ];
        let index = canary.get("registry URL");
        let packages = canary_tarballs(&index, &names);
        (index, names.to_vec(), packages)
    } else {
        let names = ["ec-present", "ec-tripwire", "ec-template-text"];
        let index = canary.get("index URL");
        let packages = canary_files(&index, &names);
        (index, names.to_vec(), packages)
    };
    let projects: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let origin = canary.origin();
    let ctx = egress_testbed::Context {
        peers_dir: peers,
        canary_index: &index,
        canary_url: &origin,
        packages: &packages,
        projects: &projects,
        placeholders: &[],
        keyring: None,
    };
    let peer = egress_testbed::start(cfg, &ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, egress_references::builtin::demo_signers()).unwrap();
    let mut args = vec![
        "check".to_string(),
        peer.index_url.to_string(),
        "--protocol".into(),
        (if npm { "npm" } else { "pypi" }).into(),
        "--allowed-signers".into(),
        s(&signers).into(),
        "--present".into(),
        "ec-present".into(),
        "--canary".into(),
        origin.clone(),
        "--canary-secret".into(),
        s(&secret).into(),
        "--format".into(),
        "json".into(),
        // The testbed sends every vendor route; a lab's throw-away peer may
        // take the destructive ones too, so that both runs send the same.
        "--destructive".into(),
    ];
    if npm {
        args.extend(["--present".into(), "@ec/scoped".into()]);
    }
    // The testbed expects the reference's snapshot of everyone.
    if let Some(id) = expected.plan.expect.snapshot {
        args.extend(["--expect-snapshot".into(), id.to_hex()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = common::run(&args);
    peer.stop();
    assert!(canary.stop().success());
    let got: Report = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    (expected, got)
}

fn same_verdicts(name: &str) {
    let Some(peers) = peers_dir() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (expected, got) = both(name, &peers);
    // P5.instance-attestation is SKIPPED for a peer, as in the testbed:
    // no peer offers an attestation, whatever its upstream; nor does a peer
    // on plain http speak h2c (P3.h2-smuggling).
    let skipped: Vec<&str> = got
        .probes
        .iter()
        .filter(|p| p.status == Status::Skipped && p.id != "P5.instance-attestation")
        .filter(|p| !common::mutant::skipped_for_plain_http(p))
        .filter(|p| !common::mutant::skipped_without_times(p))
        .map(|p| p.id.as_str())
        .collect();
    assert!(
        skipped.is_empty(),
        "{name}: skipped under --canary: {skipped:?}"
    );
    let differ: Vec<String> = statuses(&expected)
        .into_iter()
        .zip(statuses(&got))
        .filter(|(a, b)| a != b)
        .map(|((id, a), (_, b))| {
            let why = got.probe(&id).map(|p| p.reason.clone()).unwrap_or_default();
            let was = expected
                .probe(&id)
                .map(|p| p.reason.clone())
                .unwrap_or_default();
            format!("{id}: testbed {a}, check --canary {b}: {why} (testbed: {was})")
        })
        .collect();
    assert!(differ.is_empty(), "{name}:\n{}", differ.join("\n"));
    assert_eq!(expected.outcome, got.outcome, "{name}");
}

#[test]
fn devpi_through_the_standalone_canary_as_in_the_testbed() {
    same_verdicts("devpi");
}

#[test]
fn verdaccio_through_the_standalone_canary_as_in_the_testbed() {
    same_verdicts("verdaccio");
}

#[test]
fn proxpi_through_the_standalone_canary_as_in_the_testbed() {
    same_verdicts("proxpi");
}
