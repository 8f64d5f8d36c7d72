//! `P3.request-smuggling` against a target that one case of the corpus
//! kills (as it kills apt-cacher-ng 3.7.4): the reference mirror behind a
//! front that crashes on the folded `Transfer-Encoding` and comes back
//! 300 ms later. The cases in flight with the crash are not sent; the
//! suite sends them again alone once the target serves, names the case
//! that stops it, and judges every other case on the running target.

mod common;

use common::crash_front::CrashFront;
use egress_http::Server;
use egress_mirror::Mirror;
use egress_model::Status;
use egress_references::pypi::builtin::{demo_snapshot, index_of, run_against, start_canary};
use std::sync::Arc;

#[test]
fn the_case_that_stops_the_target_is_named_and_the_others_are_judged_alone() {
    let canary = start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot = Arc::new(demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}")));
    let server = Server::bind_loopback(Mirror::new(snapshot)).expect("bind");
    let front = CrashFront::start(server.addr(), b"Transfer-Encoding:\r\n chunked");
    let index = index_of(&front.base_url()).unwrap_or_else(|e| panic!("{e}"));
    let report = run_against("crashing", &index, &canary).unwrap_or_else(|e| panic!("{e}"));

    // Once among the others, once alone.
    assert_eq!(front.crashes(), 2);
    let row = report
        .probe("P3.request-smuggling")
        .expect("a P3.request-smuggling row");
    assert_eq!(row.status, Status::Inconclusive, "{}", row.reason);
    let total = egress_model::smuggling::SMUGGLING_CORPUS.len();
    assert!(
        row.reason.starts_with(&format!(
            "1 of {total} payloads neither refused and closed nor answered past the refusal: obs-fold-te"
        )) && row.reason.contains("stops the target"),
        "{}",
        row.reason
    );
    // The cases in flight with the crash went again, alone, and the record
    // says so.
    let alone = row
        .exchanges
        .iter()
        .filter(|ex| ex.label.ends_with(", sent again alone"))
        .count();
    assert!(alone >= 2, "{alone} cases sent again alone");
    // Nothing is blamed on the target that it did not do: the front relays
    // the reference mirror byte for byte.
    for p in &report.probes {
        assert_ne!(p.status, Status::Fail, "{}: {}", p.id, p.reason);
    }
}
