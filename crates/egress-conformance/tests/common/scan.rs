//! A sandbox scan's report made without a network: each check of
//! `egress_sandbox::checks::CHECKS` gets evidence written here (the canary
//! reached over TCP, so R.canary FAILs; nothing for the rest) and is
//! judged by egress-sandbox's own judges, so that the report verifies.

use egress_model::Status;
use egress_sandbox::evidence::{TcpAttempt, TcpOutcome};
use egress_sandbox::{Evidence, ScanOptions, ScanRecord, ScanReport, SCAN_SCHEMA};

pub(crate) const CANARY: &str = "203.0.113.7:8700";

/// The report; `label` is the recorded TCP attempt's label (hostile text
/// goes here).
pub(crate) fn report(label: &str) -> ScanReport {
    let plan = egress_sandbox::plan(&ScanOptions {
        mirror: "http://192.0.2.10:8080/simple/".into(),
        canaries: vec![CANARY.into()],
        canary_zone: None,
        lockfiles: None,
    })
    .expect("a plan for an IP literal");
    let mut records: Vec<ScanRecord> = egress_sandbox::checks::CHECKS
        .iter()
        .map(|c| ScanRecord {
            id: c.id.into(),
            status: Status::Skipped,
            reason: String::new(),
            paths: vec![],
            evidence: if c.id == "R.canary" {
                vec![Evidence::Tcp(TcpAttempt {
                    label: label.into(),
                    addr: CANARY.into(),
                    outcome: TcpOutcome::Connected,
                    detail: String::new(),
                    elapsed_ms: 1,
                })]
            } else {
                vec![]
            },
        })
        .collect();
    let judged = egress_sandbox::judge_all(&plan, &mut records);
    let report = ScanReport {
        schema: SCAN_SCHEMA.into(),
        tool: "egress-conformance test".into(),
        started_unix: 0,
        plan,
        records,
        notices: judged.notices,
        outcome: judged.outcome,
    };
    assert!(
        egress_sandbox::verify(&report).is_empty(),
        "the fixture verifies"
    );
    report
}
