//! The report: plan, evidence and verdicts of one run, and `report verify`,
//! which re-derives every verdict with the same function as the live run
//! ([`judge_all`]).

use crate::plan::Plan;
use crate::protocol::{judge_all, Packages};
use egress_model::{PredicateVerdict, ProbeRecord, Status};
use serde::{Deserialize, Serialize};

pub const REPORT_SCHEMA: &str = "egress-conformance/report/v1";

/// The client's bounds, recorded so that a reader knows what "timed out" meant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsRecord {
    pub connect_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub deadline_ms: u64,
    pub max_head_bytes: u64,
    pub max_body_bytes: u64,
    pub record_bytes: u64,
}

impl From<&egress_transcript::Limits> for LimitsRecord {
    fn from(l: &egress_transcript::Limits) -> Self {
        Self {
            connect_timeout_ms: l.connect_timeout.as_millis() as u64,
            idle_timeout_ms: l.idle_timeout.as_millis() as u64,
            deadline_ms: l.deadline.as_millis() as u64,
            max_head_bytes: l.max_head_bytes as u64,
            max_body_bytes: l.max_body_bytes,
            record_bytes: l.record_bytes as u64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub tool: String,
    /// A name for the target in matrices, e.g. `reference (A)` or the URL.
    pub target_name: String,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    pub plan: Plan<Packages>,
    pub limits: LimitsRecord,
    pub probes: Vec<ProbeRecord>,
    pub predicates: Vec<PredicateVerdict>,
    pub outcome: Status,
}

impl Report {
    /// 0 every predicate passes, 1 one fails, 3 inconclusive.
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::Inconclusive | Status::Skipped => 3,
        }
    }

    pub fn probe(&self, id: impl AsRef<str>) -> Option<&ProbeRecord> {
        self.probes.iter().find(|p| p.id == id.as_ref())
    }

    pub fn predicate(&self, id: impl AsRef<str>) -> Option<&PredicateVerdict> {
        self.predicates.iter().find(|p| p.id == id.as_ref())
    }
}

/// A verdict that the evidence no longer supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub id: String,
    pub recorded: (Status, String),
    pub derived: (Status, String),
}

/// Re-derives every verdict of `report` from its evidence and lists those
/// that differ from what the report records (sub-probes, predicates, outcome).
pub fn verify(report: &Report) -> Vec<Disagreement> {
    let mut records = report.probes.clone();
    let (predicates, outcome) = judge_all(&report.plan, &mut records);
    let mut out = Vec::new();
    for (old, new) in report.probes.iter().zip(&records) {
        if old.status != new.status || old.reason != new.reason {
            out.push(Disagreement {
                id: old.id.clone(),
                recorded: (old.status, old.reason.clone()),
                derived: (new.status, new.reason.clone()),
            });
        }
    }
    for p in &predicates {
        match report.predicate(&p.id) {
            Some(old) if old.status == p.status && old.reason == p.reason => {}
            Some(old) => out.push(Disagreement {
                id: p.id.clone(),
                recorded: (old.status, old.reason.clone()),
                derived: (p.status, p.reason.clone()),
            }),
            None => out.push(Disagreement {
                id: p.id.clone(),
                recorded: (Status::Skipped, "missing from the report".into()),
                derived: (p.status, p.reason.clone()),
            }),
        }
    }
    if report.outcome != outcome {
        out.push(Disagreement {
            id: "outcome".into(),
            recorded: (report.outcome, String::new()),
            derived: (outcome, String::new()),
        });
    }
    for id in report.plan.protocol().ids() {
        if report.probe(id).is_none() {
            out.push(Disagreement {
                id: id.to_string(),
                recorded: (Status::Skipped, "missing from the report".into()),
                derived: (Status::Inconclusive, "sub-probe absent".into()),
            });
        }
    }
    out
}
