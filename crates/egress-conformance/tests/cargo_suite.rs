//! The cargo suite against the reference mirror (A) and a pull-through
//! caching proxy (B), both in front of the cargo canary's fixture crates.
//!
//! (A) serves a snapshot built by `snapshot build --cargo-lock`'s own code
//! (`egress_build::build`) from a `Cargo.lock` pinning the fixture crates:
//! every cargo sub-probe must PASS (or be SKIPPED where the run gives no
//! expectation). (B) passes index files, downloads, API routes and tokens
//! to the canary: each predicate must FAIL, on the sub-probe that
//! attributes it.

use egress_model::Status;
use egress_references::cargo::builtin::{run_cargo_proxy, run_cargo_reference};
use egress_suite::Report;

fn status(r: &Report, id: &str) -> Status {
    r.probes
        .iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("no {id} in the report"))
        .status
}

/// `report verify` re-derives every verdict from the evidence.
fn assert_reverifies(r: &Report) {
    let diffs = egress_suite::verify(r);
    assert!(diffs.is_empty(), "verify disagrees: {diffs:?}");
}

fn dump(r: &Report) -> String {
    r.probes
        .iter()
        .map(|x| format!("{} {:?} {}", x.id, x.status, x.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

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
