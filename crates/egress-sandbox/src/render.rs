//! A scan's report as text (verdicts, the paths they name, evidence
//! lines, then the notices, one line each), JSON (everything,
//! re-verifiable; `notices` beside the records) and JUnit XML (notices as
//! properties and output of their check's test case, never failures).

use crate::checks;
use crate::evidence::ScanReport;
use egress_model::report_text::{json_pretty, xml_escape};
use egress_model::Status;
use std::fmt::Write;

pub fn text(report: &ScanReport) -> String {
    let mut out = String::new();
    let p = &report.plan;
    let _ = writeln!(out, "== sandbox scan — mirror {}", p.mirror);
    let addrs: Vec<String> = p.mirror_addrs.iter().map(ToString::to_string).collect();
    let _ = writeln!(
        out,
        "   mirror addresses: {}; canaries: {}; canary zone: {}; token: {}",
        if addrs.is_empty() {
            "none resolved".into()
        } else {
            addrs.join(", ")
        },
        if p.canaries.is_empty() {
            "none".into()
        } else {
            p.canaries.join(", ")
        },
        p.canary_zone.as_deref().unwrap_or("none"),
        p.token
    );
    if let Some(name) = p.canary_name() {
        let _ = writeln!(
            out,
            "   unique DNS name: {name} (look for it in the canary's DNS log)"
        );
    }
    for r in &report.records {
        let title = checks::check(&r.id).map_or("", |c| c.title);
        let _ = writeln!(out, "\n  {:<13} {:<18} {title}", r.status.to_string(), r.id);
        let _ = writeln!(out, "  {:<13} {:<18} {}", "", "", r.reason);
        for path in &r.paths {
            let _ = writeln!(out, "  {:<13} {:<18} path: {path}", "", "");
        }
        for e in &r.evidence {
            let _ = writeln!(out, "  {:<13} {:<18} evidence: {}", "", "", e.summary());
        }
    }
    if !report.notices.is_empty() {
        let _ = writeln!(
            out,
            "\nnotices ({}: configured, but leading nowhere from this sandbox; not failures):",
            report.notices.len()
        );
        for n in &report.notices {
            let _ = writeln!(out, "  notice: {}", n.line());
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

pub fn json(report: &ScanReport) -> String {
    json_pretty(report)
}

pub fn junit(report: &ScanReport) -> String {
    let count = |s: Status| report.records.iter().filter(|r| r.status == s).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"egress-conformance sandbox-scan\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
        report.records.len(),
        count(Status::Fail),
        count(Status::Inconclusive),
        count(Status::Skipped)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
        xml_escape(&format!("sandbox scan {}", report.plan.mirror)),
        report.records.len(),
        count(Status::Fail),
        count(Status::Inconclusive),
        count(Status::Skipped)
    );
    for r in &report.records {
        let class = r.id.split('.').next().unwrap_or("S");
        let _ = writeln!(
            out,
            "    <testcase classname=\"egress.sandbox.{class}\" name=\"{}\">",
            xml_escape(&r.id)
        );
        let notices: Vec<String> = report
            .notices
            .iter()
            .filter(|n| n.check == r.id)
            .map(|n| n.line())
            .collect();
        if !notices.is_empty() {
            let _ = writeln!(out, "      <properties>");
            for n in &notices {
                let _ = writeln!(
                    out,
                    "        <property name=\"notice\" value=\"{}\"/>",
                    xml_escape(n)
                );
            }
            let _ = writeln!(out, "      </properties>");
        }
        let msg = xml_escape(&r.reason);
        match r.status {
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
        let lines: Vec<String> = r
            .paths
            .iter()
            .map(|p| format!("path: {p}"))
            .chain(notices.iter().map(|n| format!("notice: {n}")))
            .chain(
                r.evidence
                    .iter()
                    .map(|e| format!("evidence: {}", e.summary())),
            )
            .collect();
        let _ = writeln!(
            out,
            "      <system-out>{msg}\n{}</system-out>",
            xml_escape(&lines.join("\n"))
        );
        let _ = writeln!(out, "    </testcase>");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The report's files, `scan.json`, `scan.txt` and `scan.junit.xml`:
/// (file name, contents), in writing order.
pub fn files(report: &ScanReport) -> [(&'static str, String); 3] {
    [
        ("scan.json", json(report)),
        ("scan.txt", text(report)),
        ("scan.junit.xml", junit(report)),
    ]
}
