//! SARIF 2.1.0 for code-scanning dashboards: one run per report, a rule per
//! sub-probe of its protocol (id, title and the doc text of its table row),
//! and a result per FAIL (`error`) and INCONCLUSIVE (`warning`), located at
//! the target's URL, with the digests of the evidence that decided it
//! ([`crate::digests`]) as properties. The sandbox scan's checks are a run
//! of their own in the combined report. Validated against the OASIS schema
//! pinned in `schemas/sarif-2.1.0.json` (crates/egress-conformance/tests/sarif.rs).

use crate::combined::Combined;
use crate::digests;
use crate::report::Report;
use egress_model::report_text::json_pretty;
use egress_model::Status;
use egress_sandbox::ScanReport;
use serde_json::{json, Value};

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const TOOL: &str = "egress-conformance";
const INFO: &str = "docs/predicates.md";

fn log(runs: Vec<Value>) -> String {
    json_pretty(&json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": runs,
    }))
}

fn level(s: Status) -> Option<&'static str> {
    match s {
        Status::Fail => Some("error"),
        Status::Inconclusive => Some("warning"),
        Status::Pass | Status::Skipped => None,
    }
}

fn location(uri: &str) -> Value {
    json!([{ "physicalLocation": { "artifactLocation": { "uri": uri } } }])
}

/// The SARIF log of one or more suite reports.
pub fn reports(reports: &[&Report]) -> String {
    log(reports.iter().map(|r| run(r)).collect())
}

/// The SARIF log of `check --from-sandbox`: the check's run and the scan's.
pub fn combined(both: &Combined) -> String {
    log(vec![run(&both.check), scan_run(&both.scan)])
}

/// The SARIF log of a sandbox scan.
pub fn scan(report: &ScanReport) -> String {
    log(vec![scan_run(report)])
}

/// A log for a saved report that does not verify: no results, the run
/// marked unsuccessful, one notification per verdict the evidence does
/// not support, as (id, recorded, re-derived).
pub fn unverified(file: &str, diffs: &[(String, String, String)]) -> String {
    let notes: Vec<Value> = diffs
        .iter()
        .map(|(id, recorded, derived)| {
            json!({
                "level": "error",
                "message": { "text": format!("{file} does not verify: {id}: recorded {recorded}, re-derived {derived}") },
            })
        })
        .collect();
    log(vec![json!({
        "tool": { "driver": { "name": TOOL } },
        "invocations": [{
            "executionSuccessful": false,
            "toolExecutionNotifications": notes,
        }],
        "results": [],
    })])
}

fn run(r: &Report) -> Value {
    let docs = r.plan.protocol().docs();
    let rules: Vec<Value> = docs
        .iter()
        .map(|d| {
            json!({
                "id": d.id.as_str(),
                "name": d.title,
                "shortDescription": { "text": d.title },
                "fullDescription": { "text": d.doc },
                "help": { "text": format!("{} ({INFO}, {} {})", d.doc, d.predicate, d.predicate.name()) },
                "defaultConfiguration": { "level": "error" },
                "properties": { "predicate": d.predicate.as_str(), "tags": [d.predicate.as_str()] },
            })
        })
        .collect();
    let results: Vec<Value> = r
        .probes
        .iter()
        .filter_map(|rec| {
            let level = level(rec.status)?;
            let mut result = json!({
                "ruleId": rec.id,
                "level": level,
                "message": { "text": format!("{}: {}", rec.status, rec.reason) },
                "locations": location(&r.plan.index_url),
                "properties": {
                    "status": rec.status.to_string(),
                    "target": r.target_name,
                    "transcriptSha256": digests::transcript(rec).to_hex(),
                    "exchangeSha256": rec.exchanges.iter().map(|e| digests::exchange(e).to_hex()).collect::<Vec<_>>(),
                },
            });
            if let (Some(i), Some(obj)) = (
                docs.iter().position(|d| d.id == rec.id),
                result.as_object_mut(),
            ) {
                obj.insert("ruleIndex".into(), json!(i));
            }
            Some(result)
        })
        .collect();
    json!({
        "tool": { "driver": {
            "name": TOOL,
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        } },
        "invocations": [{ "executionSuccessful": true }],
        "results": results,
        "properties": {
            "protocol": r.plan.protocol().as_str(),
            "target": r.target_name,
            "indexUrl": r.plan.index_url,
            "outcome": r.outcome.to_string(),
            "startedUnix": r.started_unix,
            "predicates": r.predicates.iter().map(|p| json!({ "id": p.id, "status": p.status.to_string(), "reason": p.reason })).collect::<Vec<_>>(),
        },
    })
}

fn scan_run(report: &ScanReport) -> Value {
    let checks = egress_sandbox::checks::CHECKS;
    let rules: Vec<Value> = checks
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "name": c.title,
                "shortDescription": { "text": c.title },
                "defaultConfiguration": { "level": "error" },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .records
        .iter()
        .filter_map(|rec| {
            let level = level(rec.status)?;
            let mut result = json!({
                "ruleId": rec.id,
                "level": level,
                "message": { "text": format!("{}: {}", rec.status, rec.reason) },
                "locations": location(&report.plan.mirror),
                "properties": { "status": rec.status.to_string(), "paths": rec.paths },
            });
            if let (Some(i), Some(obj)) = (
                checks.iter().position(|c| c.id == rec.id),
                result.as_object_mut(),
            ) {
                obj.insert("ruleIndex".into(), json!(i));
            }
            Some(result)
        })
        .collect();
    json!({
        "tool": { "driver": {
            "name": format!("{TOOL} sandbox-scan"),
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        } },
        "invocations": [{ "executionSuccessful": true }],
        "results": results,
        "properties": { "mirror": report.plan.mirror, "outcome": report.outcome.to_string() },
    })
}
