//! The Hub suite against the reference mirror (A) and a pull-through
//! caching proxy (B), both in front of the Hub canary's kit repositories.
//!
//! (A) serves a snapshot built by `snapshot build --hf-lock`'s own code
//! (`egress_build::build`) from the kit's lock: every Hub sub-probe must
//! PASS (or be SKIPPED where the run gives no expectation). (B) passes
//! every route to the canary, headers and tokens included: each predicate
//! must FAIL, on the sub-probe that attributes it.

mod common;

use common::verdicts::{assert_reverifies, dump, status};

use egress_model::Status;
use egress_references::hf::builtin::{run_hf_proxy, run_hf_reference};

#[test]
fn reference_a_passes_every_hf_sub_probe() {
    let r = run_hf_reference().expect("the hf reference run");
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
    // Everything the canary makes observable is observed, not skipped.
    for id in [
        "P1.upstream-bad-digest",
        "P2.absent-revision",
        "P2.absent-file",
        "P3.auth-forward",
        "P5.moved-main",
        "P5.branch-commit",
        "P5.signature",
    ] {
        assert_eq!(status(&r, id), Status::Pass, "{id}\n{text}");
    }
}

#[test]
fn caching_proxy_b_fails_each_predicate_where_attributed() {
    let r = run_hf_proxy().expect("the hf proxy run");
    assert_reverifies(&r);
    let text = dump(&r);
    for id in ["C.info", "C.tree", "C.resolve"] {
        assert_eq!(status(&r, id), Status::Pass, "{id}\n{text}");
    }
    for id in [
        "P1.upstream-bad-digest",
        "P1.run-wide-digests",
        "P2.absent-repo",
        "P2.absent-revision",
        "P2.absent-file",
        "P2.upstream-contact",
        "P3.no-handoff",
        "P3.xet-read-token",
        "P3.auth-forward",
        "P3.run-wide-redirects",
        "P4.viewer-routes",
        "P5.manifest",
        "P5.moved-main",
        "P6.write-routes",
    ] {
        assert_eq!(status(&r, id), Status::Fail, "{id}\n{text}");
    }
}
