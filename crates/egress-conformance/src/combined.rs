//! `check URL --from-sandbox`: the suite's report and the sandbox scan's,
//! run from the same sandbox, as one report. Each part keeps its own
//! evidence and verdicts; the outcome is the worse of the two (FAIL, then
//! INCONCLUSIVE, then PASS), and `report verify` derives all of it again.

use crate::output::write_atomic;
use crate::{exit, Failure, Format};
use egress_model::Status;
use egress_sandbox::ScanReport;
use egress_suite::Report;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const COMBINED_SCHEMA: &str = "egress-conformance/from-sandbox/v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Combined {
    pub schema: String,
    /// The suite against the mirror, from inside the sandbox.
    pub check: Report,
    /// Every path out of the sandbox.
    pub scan: ScanReport,
    pub outcome: Status,
}

/// The worse of two outcomes.
pub fn worse(a: Status, b: Status) -> Status {
    let rank = |s: Status| match s {
        Status::Fail => 3,
        Status::Inconclusive => 2,
        Status::Skipped => 1,
        Status::Pass => 0,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

impl Combined {
    pub fn new(check: Report, scan: ScanReport) -> Self {
        let outcome = worse(check.outcome, scan.outcome);
        Self {
            schema: COMBINED_SCHEMA.into(),
            check,
            scan,
            outcome,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self.outcome {
            Status::Pass => exit::PASS,
            Status::Fail => exit::FAIL,
            Status::Inconclusive | Status::Skipped => exit::INCONCLUSIVE,
        }
    }

    pub fn text(&self) -> String {
        format!(
            "{}\n{}\ncombined outcome (check and sandbox scan): {} (exit {})\n",
            egress_suite::render::text(&self.check),
            egress_sandbox::render::text(&self.scan),
            self.outcome,
            self.exit_code()
        )
    }

    pub fn json(&self) -> String {
        egress_model::report_text::json_pretty(self)
    }

    /// Both parts' test suites under one root.
    pub fn junit(&self) -> String {
        let inner = |xml: &str| -> String {
            let start = xml.find("  <testsuite ").unwrap_or(0);
            let end = xml.rfind("</testsuites>").unwrap_or(xml.len());
            xml.get(start..end).unwrap_or_default().to_string()
        };
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"egress-conformance check --from-sandbox\">\n{}{}</testsuites>\n",
            inner(&egress_suite::render::junit(&self.check)),
            inner(&egress_sandbox::render::junit(&self.scan))
        )
    }

    /// Verdicts the evidence does not support, as (id, recorded, derived).
    pub fn verify(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = egress_suite::verify(&self.check)
            .into_iter()
            .map(|d| {
                (
                    format!("check {}", d.id),
                    format!("{} ({})", d.recorded.0, d.recorded.1),
                    format!("{} ({})", d.derived.0, d.derived.1),
                )
            })
            .collect();
        out.extend(egress_sandbox::verify(&self.scan).into_iter().map(|d| {
            (
                format!("scan {}", d.id),
                format!("{} ({})", d.recorded.0, d.recorded.1),
                format!("{} ({})", d.derived.0, d.derived.1),
            )
        }));
        let derived = worse(self.check.outcome, self.scan.outcome);
        if derived != self.outcome {
            out.push((
                "combined outcome".into(),
                self.outcome.to_string(),
                derived.to_string(),
            ));
        }
        out
    }
}

/// Prints the combined report in `format`, writes it into `out`
/// (`report.json`, `report.txt`, `report.junit.xml`), returns the exit code.
pub fn emit(both: &Combined, format: Format, out: Option<&Path>) -> Result<u8, Failure> {
    if let Some(dir) = out {
        let fail = |p: &Path, e: std::io::Error| {
            Failure::internal(format!("cannot write {}: {e}", p.display())).because(e)
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        for (name, body) in [
            ("report.json", both.json()),
            ("report.txt", both.text()),
            ("report.junit.xml", both.junit()),
        ] {
            let p = dir.join(name);
            write_atomic(&p, body.as_bytes()).map_err(|e| fail(&p, e))?;
        }
    }
    egress_cli::out!(
        "{}",
        match format {
            Format::Text => both.text(),
            Format::Json => both.json(),
            Format::Junit => both.junit(),
        }
    );
    Ok(both.exit_code())
}
