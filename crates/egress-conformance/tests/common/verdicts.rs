//! Reading a report's verdicts in a test: one sub-probe's status, every
//! sub-probe a line for an assertion's message, and the re-derivation
//! every report must survive.

use egress_model::Status;
use egress_suite::Report;

/// The status of sub-probe (or predicate) `id`.
pub(crate) fn status(r: &Report, id: &str) -> Status {
    r.probes
        .iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("no {id} in the report"))
        .status
}

/// Every sub-probe, a line each: id, status, reason.
pub(crate) fn dump(r: &Report) -> String {
    r.probes
        .iter()
        .map(|x| format!("{} {:?} {}", x.id, x.status, x.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `report verify` re-derives every verdict from the evidence.
pub(crate) fn assert_reverifies(r: &Report) {
    let diffs = egress_suite::verify(r);
    assert!(diffs.is_empty(), "verify disagrees: {diffs:?}");
}
