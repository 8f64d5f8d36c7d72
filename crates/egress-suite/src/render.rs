//! Output formats from one report: text (verdicts with evidence lines), JSON
//! (the full report with transcripts), JUnit XML (one test case per
//! sub-probe), and the discrimination matrix across targets.

use crate::protocol::Protocol;
use crate::report::Report;
use crate::subprobe::{Predicate, PREDICATES};
use egress_model::report_text::{json_pretty, xml_escape};
use egress_model::{ProbeRecord, Status};
use std::fmt::Write;

/// The exchange most worth showing for a verdict: for a failure, the first
/// one that was served, redirected or forwarded; otherwise the first.
pub(crate) fn key_exchange(rec: &ProbeRecord) -> Option<String> {
    let pick = match rec.status {
        Status::Fail => rec
            .exchanges
            .iter()
            .find(|e| {
                e.response
                    .as_ref()
                    .is_some_and(|r| r.is_success() || r.is_redirect())
            })
            .or(rec.exchanges.first()),
        _ => rec.exchanges.first(),
    }?;
    Some(pick.summary())
}

/// What the run was given: `   present: …; absent: …; upstream: …`.
pub fn plan_line(report: &Report) -> String {
    let (present, absent) = report.plan.describe();
    format!(
        "   present: {} ({}); absent: {}; upstream: {}",
        if present.is_empty() {
            "none".to_string()
        } else {
            present.join(", ")
        },
        report.plan.present_source,
        absent.join(", "),
        report
            .plan
            .upstream
            .as_ref()
            .map_or("not controlled".to_string(), |u| format!(
                "controlled ({})",
                u.origin
            )),
    )
}

pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "== {} — {}", report.target_name, report.plan.index_url);
    let _ = writeln!(out, "{}", plan_line(report));
    let groups = std::iter::once((Predicate::Control, Predicate::Control.name())).chain(PREDICATES);
    for (pid, name) in groups {
        match report.predicate(pid) {
            Some(p) => {
                let _ = writeln!(out, "\n{pid} {name}: {}  {}", p.status, p.reason);
            }
            None => {
                let _ = writeln!(out, "\n{name}:");
            }
        }
        for rec in report
            .probes
            .iter()
            .filter(|r| r.id.split('.').next() == Some(pid.as_str()))
        {
            let _ = writeln!(
                out,
                "  {:<13} {:<27} {}",
                rec.status.to_string(),
                rec.id,
                rec.reason
            );
            if let Some(ex) = key_exchange(rec) {
                let n = rec.exchanges.len();
                let plural = if n == 1 { "" } else { "s" };
                let _ = writeln!(
                    out,
                    "  {:<13} {:<27} evidence ({n} exchange{plural}): {ex}",
                    "", ""
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\noutcome: {} (exit {})",
        report.outcome,
        report.exit_code()
    );
    out
}

pub fn json(report: &Report) -> String {
    json_pretty(report)
}

pub fn junit(report: &Report) -> String {
    junit_many(&[report])
}

/// One `<testsuite>` per report under one `<testsuites>` root.
pub fn junit_many(reports: &[&Report]) -> String {
    let count = |s: Status| {
        reports
            .iter()
            .flat_map(|r| &r.probes)
            .filter(|r| r.status == s)
            .count()
    };
    let total: usize = reports.iter().map(|r| r.probes.len()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"egress-conformance\" tests=\"{total}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
        count(Status::Fail),
        count(Status::Inconclusive),
        count(Status::Skipped)
    );
    for report in reports {
        junit_suite(&mut out, report);
    }
    out.push_str("</testsuites>\n");
    out
}

fn junit_suite(out: &mut String, report: &Report) {
    let count = |s: Status| report.probes.iter().filter(|r| r.status == s).count();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
        xml_escape(&format!("{} {}", report.target_name, report.plan.index_url)),
        report.probes.len(),
        count(Status::Fail),
        count(Status::Inconclusive),
        count(Status::Skipped)
    );
    for rec in &report.probes {
        let class = rec.id.split('.').next().unwrap_or("C");
        let _ = writeln!(
            out,
            "    <testcase classname=\"egress.{class}\" name=\"{}\">",
            xml_escape(&rec.id)
        );
        let msg = xml_escape(&rec.reason);
        match rec.status {
            Status::Pass => {}
            Status::Fail => {
                let _ = writeln!(out, "      <failure message=\"{msg}\" type=\"FAIL\"/>");
            }
            Status::Inconclusive => {
                let _ = writeln!(
                    out,
                    "      <error message=\"{msg}\" type=\"INCONCLUSIVE\"/>"
                );
            }
            Status::Skipped => {
                let _ = writeln!(out, "      <skipped message=\"{msg}\"/>");
            }
        }
        let lines: Vec<String> = rec.exchanges.iter().map(|e| e.summary()).collect();
        let _ = writeln!(
            out,
            "      <system-out>{}\n{}</system-out>",
            msg,
            xml_escape(&lines.join("\n"))
        );
        let _ = writeln!(out, "    </testcase>");
    }
    out.push_str("  </testsuite>\n");
}

/// Whether a row separates the targets: some target passes and some fails.
pub fn discriminates(statuses: &[Status]) -> bool {
    statuses.contains(&Status::Pass) && statuses.contains(&Status::Fail)
}

/// Rows of (row id, statuses per report), sub-probes first then predicates.
pub fn matrix_rows(reports: &[&Report]) -> Vec<(String, Vec<Status>)> {
    let mut rows = Vec::new();
    let protocol = reports
        .first()
        .map_or(Protocol::Pypi, |r| r.plan.protocol());
    for id in protocol.ids() {
        rows.push((
            id.to_string(),
            reports
                .iter()
                .map(|r| r.probe(id).map_or(Status::Skipped, |p| p.status))
                .collect(),
        ));
    }
    for (pid, name) in PREDICATES {
        rows.push((
            format!("{pid} {name}"),
            reports
                .iter()
                .map(|r| r.predicate(pid).map_or(Status::Skipped, |p| p.status))
                .collect(),
        ));
    }
    rows
}

pub fn matrix_text(reports: &[&Report]) -> String {
    let mut out = String::new();
    let width = 28;
    let col = reports
        .iter()
        .map(|r| r.target_name.len())
        .max()
        .unwrap_or(8)
        .max(12)
        + 2;
    let _ = write!(out, "{:<width$}", "sub-probe / predicate");
    for r in reports {
        let _ = write!(out, "{:<col$}", r.target_name);
    }
    let _ = writeln!(out, "discriminates");
    for (id, statuses) in matrix_rows(reports) {
        if id.starts_with("P1 ") {
            let _ = writeln!(out, "{}", "-".repeat(width + col * reports.len() + 13));
        }
        let _ = write!(out, "{id:<width$}");
        for s in &statuses {
            let _ = write!(out, "{:<col$}", s.to_string());
        }
        let d = if id.starts_with("C.") {
            "(control)"
        } else if discriminates(&statuses) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(out, "{d}");
    }
    out
}

pub fn matrix_markdown(reports: &[&Report]) -> String {
    let mut out = String::from("| sub-probe / predicate |");
    for r in reports {
        let _ = write!(out, " {} |", r.target_name);
    }
    out.push_str(" discriminates |\n|---|");
    for _ in reports {
        out.push_str("---|");
    }
    out.push_str("---|\n");
    for (id, statuses) in matrix_rows(reports) {
        let _ = write!(out, "| `{id}` |");
        for (s, r) in statuses.iter().zip(reports) {
            let why = r
                .probe(&id)
                .map(|p| p.reason.as_str())
                .or_else(|| {
                    r.predicate(id.split(' ').next().unwrap_or(""))
                        .map(|p| p.reason.as_str())
                })
                .unwrap_or("");
            let _ = write!(out, " **{s}** {} |", why.replace('|', "\\|"));
        }
        let d = if id.starts_with("C.") {
            "(control)"
        } else if discriminates(&statuses) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(out, " {d} |");
    }
    out
}

/// File-name-safe form of a target name.
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let parts: Vec<&str> = s.split('-').filter(|p| !p.is_empty()).collect();
    parts.join("-")
}
