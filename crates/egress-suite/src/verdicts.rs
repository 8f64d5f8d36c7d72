//! Verdicts from evidence, for any protocol: the controls first (later ones
//! see earlier ones), then every other sub-probe with its table's judge,
//! then the six predicates. Pure: no I/O, no clock. The live run and `report
//! verify` call exactly these functions.

use crate::facts::is_control;
use crate::judge::Judge;
use crate::plan::Plan;
use crate::subprobe::{Suite, PREDICATES};
use egress_model::{PredicateVerdict, ProbeRecord, Status};

/// Judges one record with the table's judge, given the facts so far.
fn judge_one<S: Suite>(
    plan: &Plan<S::Packages>,
    facts: &S::Facts,
    records: &[ProbeRecord],
    rec: &ProbeRecord,
) -> (Status, String) {
    match S::find(&rec.id) {
        Some(sp) => {
            let v = (sp.judge)(
                &Judge {
                    plan,
                    facts,
                    records,
                },
                rec,
            );
            // A PASS resting on silence needs the target shown alive after it.
            match crate::judge::silence_unproven(rec) {
                Some(unproven) if v.0 == Status::Pass => unproven,
                _ => v,
            }
        }
        None => (
            Status::Inconclusive,
            format!("unknown sub-probe {:?}", rec.id),
        ),
    }
}

/// Judges controls in order; later controls see earlier ones (C.file needs
/// the page). Returns the facts derived from them.
#[allow(clippy::indexing_slicing)] // i runs over 0..records.len()
pub fn judge_controls<S: Suite>(plan: &Plan<S::Packages>, records: &mut [ProbeRecord]) -> S::Facts {
    for i in 0..records.len() {
        if !is_control(&records[i].id) {
            continue;
        }
        let facts = S::facts(plan, &records[..i]);
        let (s, r) = judge_one::<S>(plan, &facts, records, &records[i]);
        records[i].status = s;
        records[i].reason = r;
    }
    S::facts(plan, records)
}

/// Derives every verdict from the evidence, in place, and returns the
/// predicate verdicts and the outcome.
pub fn judge_all<S: Suite>(
    plan: &Plan<S::Packages>,
    records: &mut [ProbeRecord],
) -> (Vec<PredicateVerdict>, Status) {
    let facts = judge_controls::<S>(plan, records);
    // Judges read other records' evidence, never their verdicts: blank them
    // so that the live run and `report verify` see exactly the same input.
    let snapshot: Vec<ProbeRecord> = records
        .iter()
        .map(|r| ProbeRecord {
            status: if is_control(&r.id) {
                r.status
            } else {
                Status::Inconclusive
            },
            reason: if is_control(&r.id) {
                r.reason.clone()
            } else {
                String::new()
            },
            ..r.clone()
        })
        .collect();
    for rec in records.iter_mut().filter(|r| !is_control(&r.id)) {
        let (s, r) = judge_one::<S>(plan, &facts, &snapshot, rec);
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
            .filter(|r| r.id.split('.').next() == Some(pid.as_str()))
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
                    format!("{passed} sub-probes pass ({skipped} skipped, each with its reason)"),
                )
            } else {
                (Status::Pass, format!("all {passed} sub-probes pass"))
            }
        };
        out.push(PredicateVerdict {
            id: pid.as_str().to_string(),
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
