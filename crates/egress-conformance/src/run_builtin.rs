//! The command line with no command: the built-in run of
//! `egress_references::builtin`, printed in the chosen format and, with
//! `--out`, written as files.

use crate::{exit, output, Failure, Format, TextArgs};
use egress_references::builtin::{self, Pair};
use egress_suite::Report;
use std::path::Path;

pub fn main(format: Format, text: TextArgs, out: Option<&Path>) -> Result<u8, Failure> {
    let pairs = egress_references::registry::run_all(&egress_references::PROTOCOLS)
        .map_err(|e| Failure::internal(e.to_string()))?;
    let reports: Vec<&Report> = pairs.iter().flat_map(|p| [&p.a, &p.b]).collect();
    match format {
        Format::Text if text.verbose => egress_cli::out!("{}", builtin::text(&pairs)),
        Format::Text => egress_cli::out!("{}", builtin::summary(&pairs, text.paint())),
        Format::Json => {
            let all = serde_json::json!({ "reports": reports });
            egress_cli::outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        }
        Format::Junit => egress_cli::out!("{}", egress_suite::render::junit_many(&reports)),
        Format::Html => egress_cli::out!("{}", egress_suite::html::reports(&reports)),
        Format::Sarif => egress_cli::out!("{}", egress_suite::sarif::reports(&reports)),
    }
    if let Some(dir) = out {
        let stems: Vec<String> = reports
            .iter()
            .map(|r| output::slug(&r.target_name))
            .collect();
        let named: Vec<(&str, &Report)> = stems.iter().map(String::as_str).zip(reports).collect();
        output::write_reports(dir, &named)?;
    }
    Ok(if pairs.iter().all(Pair::holds) {
        exit::PASS
    } else {
        exit::FAIL
    })
}
