//! `check URL --from-sandbox` (egress-conformance): the suite's report and the sandbox scan's,
//! run from the same sandbox, as one report. Each part keeps its own
//! evidence and verdicts; the outcome is the worse of the two (FAIL, then
//! INCONCLUSIVE, then PASS), and `report verify` derives all of it again.

use crate::Report;
use egress_model::Status;
use egress_sandbox::ScanReport;
use serde::{Deserialize, Serialize};

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

    /// 0 for PASS, 1 for FAIL, 3 otherwise, as [`Report::exit_code`].
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::Inconclusive | Status::Skipped => 3,
        }
    }

    pub fn text(&self) -> String {
        format!(
            "{}\n{}\ncombined outcome (check and sandbox scan): {} (exit {})\n",
            crate::render::text(&self.check),
            egress_sandbox::render::text(&self.scan),
            self.outcome,
            self.exit_code()
        )
    }

    /// The short text: the check's as `check` prints it by default, in at
    /// most `max_check` lines, then the scan's, then the combined outcome.
    pub fn short_text(&self, max_check: usize, paint: egress_model::report_text::Paint) -> String {
        format!(
            "{}\n{}\ncombined outcome (check and sandbox scan): {} (exit {})\n",
            crate::summary::report_text(&self.check, max_check, paint),
            egress_sandbox::render::text(&self.scan),
            paint.verdict(&self.outcome.to_string(), 0),
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
            inner(&crate::render::junit(&self.check)),
            inner(&egress_sandbox::render::junit(&self.scan))
        )
    }

    /// Verdicts the evidence does not support, as (id, recorded, derived).
    pub fn verify(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = crate::verify(&self.check)
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

/// A saved report of any kind `report verify` reads, told apart by its
/// schema: a `check --from-sandbox` report, a sandbox scan, or the suite's.
pub enum Saved {
    Combined(Box<Combined>),
    Scan(Box<ScanReport>),
    Check(Box<Report>),
}

/// Why saved bytes are none of [`Saved`].
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("not an egress-conformance check --from-sandbox report: {0}")]
    Combined(serde_json::Error),
    #[error("not an egress-conformance sandbox scan: {0}")]
    Scan(serde_json::Error),
    #[error("not an egress-conformance report: {0}")]
    Check(serde_json::Error),
    #[error("unknown report schema {0:?}")]
    Schema(String),
}

impl Saved {
    /// Reads a saved report by its `schema`; without a known one, as the
    /// suite's report.
    pub fn parse(bytes: &[u8]) -> Result<Saved, SavedError> {
        let schema = serde_json::from_slice::<serde_json::Value>(bytes)
            .ok()
            .and_then(|v| v.get("schema")?.as_str().map(str::to_string));
        match schema.as_deref() {
            Some(COMBINED_SCHEMA) => serde_json::from_slice(bytes)
                .map(|c| Saved::Combined(Box::new(c)))
                .map_err(SavedError::Combined),
            Some(egress_sandbox::SCAN_SCHEMA) => serde_json::from_slice(bytes)
                .map(|s| Saved::Scan(Box::new(s)))
                .map_err(SavedError::Scan),
            _ => {
                let report: Report = serde_json::from_slice(bytes).map_err(SavedError::Check)?;
                if report.schema != crate::report::REPORT_SCHEMA {
                    return Err(SavedError::Schema(report.schema));
                }
                Ok(Saved::Check(Box::new(report)))
            }
        }
    }
}
