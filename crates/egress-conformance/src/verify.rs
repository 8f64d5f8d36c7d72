//! `report verify`: re-derive every verdict from a saved report's evidence.

use crate::{exit, Failure};
use egress_suite::Report;
use std::path::{Path, PathBuf};

fn reports_in(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    let meta =
        std::fs::metadata(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(Failure::input(format!("{}: no report (*.json) in this directory; give a report file or the --out directory of a run", path.display())));
    }
    Ok(out)
}

pub fn load(path: &Path) -> Result<Report, Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    let report: Report = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::input(format!(
            "{}: not an egress-conformance report: {e}",
            path.display()
        ))
    })?;
    if report.schema != egress_suite::report::REPORT_SCHEMA {
        return Err(Failure::input(format!(
            "{}: unknown report schema {:?}",
            path.display(),
            report.schema
        )));
    }
    Ok(report)
}

/// A sandbox scan's report, if `path` holds one.
fn load_scan(path: &Path) -> Result<Option<egress_sandbox::ScanReport>, Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    let schema = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("schema")?.as_str().map(str::to_string));
    if schema.as_deref() != Some(egress_sandbox::SCAN_SCHEMA) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Failure::input(format!(
            "{}: not an egress-conformance sandbox scan: {e}",
            path.display()
        ))
    })
}

/// `report verify` of a sandbox scan: every check judged again.
fn verify_scan(file: &Path, report: &egress_sandbox::ScanReport) -> u8 {
    let diffs = egress_sandbox::verify(report);
    if diffs.is_empty() {
        egress_cli::outln!(
            "{}: {} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
            file.display(),
            report.records.len(),
            report.outcome
        );
        return exit::PASS;
    }
    egress_cli::outln!(
        "{}: {} verdicts differ from what the evidence supports:",
        file.display(),
        diffs.len()
    );
    for d in diffs {
        egress_cli::outln!(
            "  {}: recorded {} ({}), re-derived {} ({})",
            d.id,
            d.recorded.0,
            d.recorded.1,
            d.derived.0,
            d.derived.1
        );
    }
    exit::FAIL
}

/// A `check --from-sandbox` report, if `path` holds one.
fn load_combined(path: &Path) -> Result<Option<crate::combined::Combined>, Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    let schema = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("schema")?.as_str().map(str::to_string));
    if schema.as_deref() != Some(crate::combined::COMBINED_SCHEMA) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Failure::input(format!(
            "{}: not an egress-conformance check --from-sandbox report: {e}",
            path.display()
        ))
    })
}

fn verify_combined(file: &Path, both: &crate::combined::Combined) -> u8 {
    let diffs = both.verify();
    if diffs.is_empty() {
        egress_cli::outln!(
            "{}: {} sub-probes, {} predicates and {} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
            file.display(),
            both.check.probes.len(),
            both.check.predicates.len(),
            both.scan.records.len(),
            both.outcome
        );
        return exit::PASS;
    }
    egress_cli::outln!(
        "{}: {} verdicts differ from what the evidence supports:",
        file.display(),
        diffs.len()
    );
    for (id, recorded, derived) in diffs {
        egress_cli::outln!("  {id}: recorded {recorded}, re-derived {derived}");
    }
    exit::FAIL
}

pub fn main(path: &Path) -> Result<u8, Failure> {
    let mut code = exit::PASS;
    for file in reports_in(path)? {
        if let Some(both) = load_combined(&file)? {
            code = code.max(verify_combined(&file, &both));
            continue;
        }
        if let Some(scan) = load_scan(&file)? {
            code = code.max(verify_scan(&file, &scan));
            continue;
        }
        let report = load(&file)?;
        let diffs = egress_suite::verify(&report);
        if diffs.is_empty() {
            egress_cli::outln!(
                "{}: {} sub-probes and {} predicates re-derived from the evidence; all agree (outcome {})",
                file.display(),
                report.probes.len(),
                report.predicates.len(),
                report.outcome
            );
        } else {
            code = exit::FAIL;
            egress_cli::outln!(
                "{}: {} verdicts differ from what the evidence supports:",
                file.display(),
                diffs.len()
            );
            for d in diffs {
                egress_cli::outln!(
                    "  {}: recorded {} ({}), re-derived {} ({})",
                    d.id,
                    d.recorded.0,
                    d.recorded.1,
                    d.derived.0,
                    d.derived.1
                );
            }
        }
    }
    Ok(code)
}
