//! `report verify`: re-derive every verdict from a saved report's evidence.

use crate::{exit, Failure};
use egress_suite::combined::Saved;
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

/// The saved report in `path`, whichever kind it is.
pub fn load(path: &Path) -> Result<Saved, Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    Saved::parse(&bytes).map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

/// Prints what `report verify` found in `file`: `agree` when every
/// verdict re-derives, else each (id, recorded, derived) that differs.
fn say(file: &Path, agree: String, diffs: Vec<(String, String, String)>) -> u8 {
    if diffs.is_empty() {
        egress_cli::outln!("{}: {agree}", file.display());
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

/// Each disagreement as (id, "recorded (why)", "derived (why)").
fn rows(diffs: Vec<egress_suite::Disagreement>) -> Vec<(String, String, String)> {
    diffs
        .into_iter()
        .map(|d| {
            (
                d.id.to_string(),
                format!("{} ({})", d.recorded.0, d.recorded.1),
                format!("{} ({})", d.derived.0, d.derived.1),
            )
        })
        .collect()
}

pub fn main(path: &Path) -> Result<u8, Failure> {
    let mut code = exit::PASS;
    for file in reports_in(path)? {
        let found = match load(&file)? {
            Saved::Combined(both) => say(
                &file,
                format!(
                    "{} sub-probes, {} predicates and {} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                    both.check.probes.len(),
                    both.check.predicates.len(),
                    both.scan.records.len(),
                    both.outcome
                ),
                both.verify(),
            ),
            Saved::Scan(scan) => say(
                &file,
                format!(
                    "{} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                    scan.records.len(),
                    scan.outcome
                ),
                egress_sandbox::verify(&scan)
                    .into_iter()
                    .map(|d| {
                        (
                            d.id.to_string(),
                            format!("{} ({})", d.recorded.0, d.recorded.1),
                            format!("{} ({})", d.derived.0, d.derived.1),
                        )
                    })
                    .collect(),
            ),
            Saved::Check(report) => say(
                &file,
                format!(
                    "{} sub-probes and {} predicates re-derived from the evidence; all agree (outcome {})",
                    report.probes.len(),
                    report.predicates.len(),
                    report.outcome
                ),
                rows(egress_suite::verify(&report)),
            ),
        };
        code = code.max(found);
    }
    Ok(code)
}
