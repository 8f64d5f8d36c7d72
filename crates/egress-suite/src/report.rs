//! The report: plan, evidence and verdicts of one run, and the one function
//! that derives verdicts from evidence ([`judge_all`]), used by the live run
//! and by `report verify` alike.

use crate::catalog::{self, PREDICATES};
use crate::facts::Facts;
use crate::judge::Judge;
use crate::plan::Plan;
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
    pub plan: Plan,
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

    pub fn probe(&self, id: &str) -> Option<&ProbeRecord> {
        self.probes.iter().find(|p| p.id == id)
    }

    pub fn predicate(&self, id: &str) -> Option<&PredicateVerdict> {
        self.predicates.iter().find(|p| p.id == id)
    }
}

/// Judges one record with the catalog's judge, given the facts so far.
fn judge_one(
    plan: &Plan,
    facts: &Facts,
    records: &[ProbeRecord],
    rec: &ProbeRecord,
) -> (Status, String) {
    match catalog::find_in(&plan.protocol, &rec.id) {
        Some(sp) => (sp.judge)(
            &Judge {
                plan,
                facts,
                records,
            },
            rec,
        ),
        None => (
            Status::Inconclusive,
            format!("unknown sub-probe {:?}", rec.id),
        ),
    }
}

/// Judges controls in order; later controls see earlier ones (C.file needs
/// the page). Returns the facts derived from them.
pub fn judge_controls(plan: &Plan, records: &mut [ProbeRecord]) -> Facts {
    for i in 0..records.len() {
        if !records[i].id.starts_with("C.") {
            continue;
        }
        let facts = Facts::derive(plan, &records[..i]);
        let (s, r) = judge_one(plan, &facts, records, &records[i]);
        records[i].status = s;
        records[i].reason = r;
    }
    Facts::derive(plan, records)
}

/// Derives every verdict from the evidence, in place, and returns the
/// predicate verdicts and the outcome. Pure: no I/O, no clock.
pub fn judge_all(plan: &Plan, records: &mut [ProbeRecord]) -> (Vec<PredicateVerdict>, Status) {
    let facts = judge_controls(plan, records);
    // Judges read other records' evidence, never their verdicts: blank them
    // so that the live run and `report verify` see exactly the same input.
    let snapshot: Vec<ProbeRecord> = records
        .iter()
        .map(|r| ProbeRecord {
            status: if r.id.starts_with("C.") {
                r.status
            } else {
                Status::Inconclusive
            },
            reason: if r.id.starts_with("C.") {
                r.reason.clone()
            } else {
                String::new()
            },
            ..r.clone()
        })
        .collect();
    for rec in records.iter_mut().filter(|r| !r.id.starts_with("C.")) {
        let (s, r) = judge_one(plan, &facts, &snapshot, rec);
        rec.status = s;
        rec.reason = r;
    }
    aggregate(records)
}

pub fn aggregate(records: &[ProbeRecord]) -> (Vec<PredicateVerdict>, Status) {
    let mut out = Vec::new();
    for (pid, name) in PREDICATES {
        let subs: Vec<&ProbeRecord> = records
            .iter()
            .filter(|r| r.id.split('.').next() == Some(pid))
            .collect();
        let first = |s: Status| subs.iter().find(|r| r.status == s);
        let (status, reason) = if let Some(f) = first(Status::Fail) {
            (Status::Fail, format!("{}: {}", f.id, f.reason))
        } else if let Some(i) = first(Status::Inconclusive) {
            (Status::Inconclusive, format!("{}: {}", i.id, i.reason))
        } else {
            let passed = subs.iter().filter(|r| r.status == Status::Pass).count();
            let skipped = subs.len() - passed;
            if passed == 0 {
                (
                    Status::Inconclusive,
                    format!("no sub-probe of {name} could run"),
                )
            } else if skipped > 0 {
                (
                    Status::Pass,
                    format!(
                        "{passed} sub-probes pass ({skipped} skipped: need inputs this run lacks)"
                    ),
                )
            } else {
                (Status::Pass, format!("all {passed} sub-probes pass"))
            }
        };
        out.push(PredicateVerdict {
            id: pid.to_string(),
            status,
            reason,
        });
    }
    let outcome = if out.iter().any(|p| p.status == Status::Fail) {
        Status::Fail
    } else if out.iter().any(|p| p.status != Status::Pass) {
        Status::Inconclusive
    } else {
        Status::Pass
    };
    (out, outcome)
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
    let known: Vec<&str> = catalog::for_protocol(&report.plan.protocol)
        .iter()
        .map(|s| s.id)
        .collect();
    for id in known {
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
