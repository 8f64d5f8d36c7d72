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

/// Each disagreement as (id, "recorded (why)", "derived (why)"); a
/// sub-probe's derived verdict names the digest of the transcript it was
/// derived from (`egress_suite::digests`), so that a reader can tell
/// whether the evidence is the one a page or SARIF log cited.
fn rows(
    report: &egress_suite::Report,
    diffs: Vec<egress_suite::Disagreement>,
) -> Vec<(String, String, String)> {
    diffs
        .into_iter()
        .map(|d| {
            let from = report.probe(&d.id).map_or(String::new(), |rec| {
                format!(
                    " from transcript sha256 {}",
                    egress_suite::digests::transcript(rec).to_hex()
                )
            });
            (
                d.id.to_string(),
                format!("{} ({})", d.recorded.0, d.recorded.1),
                format!("{} ({}){from}", d.derived.0, d.derived.1),
            )
        })
        .collect()
}

/// What `report verify` finds in a saved report: the line it says when
/// every verdict re-derives, and each (id, recorded, re-derived) verdict
/// that differs. `report render` calls it too, before rendering.
pub fn findings(saved: &Saved) -> (String, Vec<(String, String, String)>) {
    match saved {
        Saved::Combined(both) => (
            format!(
                "{} sub-probes, {} predicates and {} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                both.check.probes.len(),
                both.check.predicates.len(),
                both.scan.records.len(),
                both.outcome
            ),
            both.verify(),
        ),
        Saved::Scan(scan) => (
            format!(
                "{} sandbox-scan checks re-derived from the evidence; all agree (outcome {})",
                scan.records.len(),
                scan.outcome
            ),
            egress_sandbox::verify(scan)
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
        Saved::Check(report) => (
            format!(
                "{} sub-probes and {} predicates re-derived from the evidence; all agree (outcome {})",
                report.probes.len(),
                report.predicates.len(),
                report.outcome
            ),
            rows(report, egress_suite::verify(report)),
        ),
    }
}

pub fn main(path: &Path) -> Result<u8, Failure> {
    let mut code = exit::PASS;
    for file in reports_in(path)? {
        let (agree, diffs) = findings(&load(&file)?);
        code = code.max(say(&file, agree, diffs));
    }
    Ok(code)
}

/// What `report render` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderFormat {
    /// One self-contained HTML page (see --format html).
    Html,
    /// SARIF 2.1.0.
    Sarif,
    /// The full text report (as --verbose prints it).
    Text,
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// A saved report JSON file (a run's, check's, check --from-sandbox's or
    /// sandbox-scan's).
    pub path: PathBuf,
    #[arg(long, value_enum, default_value = "html")]
    pub format: RenderFormat,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `report render`: verifies the saved report as `report verify` does,
/// then renders it; a report that does not verify renders as a "does not
/// verify" page naming each verdict that disagreed, and exits 1.
pub fn render(args: RenderArgs) -> Result<u8, Failure> {
    if args.path.is_dir() {
        return Err(Failure::input(format!(
            "{}: is a directory; give one report file (report verify takes a directory)",
            args.path.display()
        )));
    }
    let saved = load(&args.path)?;
    let (_, diffs) = findings(&saved);
    let file = args.path.display().to_string();
    let (body, code) = if diffs.is_empty() {
        let body = match (&saved, args.format) {
            (Saved::Check(r), RenderFormat::Html) => egress_suite::html::reports(&[r]),
            (Saved::Check(r), RenderFormat::Sarif) => egress_suite::sarif::reports(&[r]),
            (Saved::Check(r), RenderFormat::Text) => egress_suite::render::text(r),
            (Saved::Combined(b), RenderFormat::Html) => egress_suite::html::combined(b),
            (Saved::Combined(b), RenderFormat::Sarif) => egress_suite::sarif::combined(b),
            (Saved::Combined(b), RenderFormat::Text) => b.text(),
            (Saved::Scan(s), RenderFormat::Html) => egress_suite::html::scan(s),
            (Saved::Scan(s), RenderFormat::Sarif) => egress_suite::sarif::scan(s),
            (Saved::Scan(s), RenderFormat::Text) => egress_sandbox::render::text(s),
        };
        (body, exit::PASS)
    } else {
        let body = match args.format {
            RenderFormat::Html => egress_suite::html::unverified(&file, &diffs),
            RenderFormat::Sarif => egress_suite::sarif::unverified(&file, &diffs),
            RenderFormat::Text => {
                let mut t = format!(
                    "DOES NOT VERIFY: {file}: {} verdicts differ from what the evidence supports:\n",
                    diffs.len()
                );
                for (id, recorded, derived) in &diffs {
                    t.push_str(&format!(
                        "  {id}: recorded {recorded}, re-derived {derived}\n"
                    ));
                }
                t
            }
        };
        (body, exit::FAIL)
    };
    match &args.out {
        Some(out) => crate::output::write_atomic(out, body.as_bytes()).map_err(|e| {
            Failure::internal(format!("cannot write {}: {e}", out.display())).because(e)
        })?,
        None => egress_cli::out!("{body}"),
    }
    if code != exit::PASS {
        eprintln!(
            "egress-conformance: {file} does not verify: {} verdicts differ (see report verify); rendered as such",
            diffs.len()
        );
    }
    Ok(code)
}
