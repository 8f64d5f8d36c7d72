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

pub fn main(path: &Path) -> Result<u8, Failure> {
    let mut code = exit::PASS;
    for file in reports_in(path)? {
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
