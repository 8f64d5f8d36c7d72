//! What the PyPI and npm mutant tests share: reading and rewriting the
//! wrapped mirror's responses, and the verdicts every mutant run must meet.

use egress_http::{Body, Reply, Response};
use egress_model::Status;
use egress_suite::Report;
use std::io::Read;

/// The body of a response of the wrapped (memory-backed) mirror.
pub(crate) fn body_of(r: &Response) -> Vec<u8> {
    match &r.body {
        Body::Empty => Vec::new(),
        Body::Bytes(b) => b.clone(),
        Body::Shared(b) => b.to_vec(),
        Body::File(f, len) => {
            // The mutant rewrites the body, so reading it up here is fine.
            let mut out = Vec::new();
            let _ = (&**f).take(*len).read_to_end(&mut out);
            out
        }
        // Sealed bodies come only from a mirror serving a directory; the
        // mutants wrap one serving from memory.
        Body::Sealed(_) => unreachable!("a memory-backed mirror has no sealed bodies"),
    }
}

/// `r` with another body; its validator no longer holds, so it goes.
pub(crate) fn with_body(mut r: Response, body: Vec<u8>) -> Reply {
    r.body = Body::Bytes(body);
    r.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("etag"));
    Reply::Response(r)
}

/// The verdicts re-derive from the evidence for every mutant too.
pub(crate) fn assert_reverifies(report: &Report, kind: &str) {
    let diffs = egress_suite::verify(report);
    assert!(diffs.is_empty(), "verify disagrees for {kind}: {diffs:?}");
}

/// `probe` failed on mutant `kind`, and so did its predicate and the run.
pub(crate) fn assert_fails(report: &Report, kind: &str, probe: &str) {
    let rec = report.probe(probe).expect("sub-probe in report");
    assert_eq!(
        rec.status,
        Status::Fail,
        "{probe} on mutant {kind}: {} {}",
        rec.status,
        rec.reason
    );
    let predicate = probe.split('.').next().unwrap_or_default();
    assert_eq!(
        report.predicate(predicate).map(|p| p.status),
        Some(Status::Fail)
    );
    assert_eq!(report.exit_code(), 1);
}

/// The unmodified wrapper passes every sub-probe.
pub(crate) fn assert_all_pass(report: &Report) {
    for p in &report.probes {
        assert_eq!(p.status, Status::Pass, "{}: {}", p.id, p.reason);
    }
    assert_eq!(report.exit_code(), 0);
}
