//! `report verify`: re-derive every verdict from a saved report's evidence.

use crate::{exit, Failure};
use egress_suite::combined::Saved;
use egress_suite::saved::{Finding, RenderFormat as Rendered};
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
fn say(file: &Path, agree: String, diffs: Vec<Finding>) -> u8 {
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

/// What `report verify` finds in a saved report ([`Saved::findings`]).
pub fn findings(saved: &Saved) -> (String, Vec<Finding>) {
    saved.findings()
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
    let (_, diffs) = saved.findings();
    let file = args.path.display().to_string();
    let format = match args.format {
        RenderFormat::Html => Rendered::Html,
        RenderFormat::Sarif => Rendered::Sarif,
        RenderFormat::Text => Rendered::Text,
    };
    let body = saved.render(format, &file, &diffs);
    let code = if diffs.is_empty() {
        exit::PASS
    } else {
        exit::FAIL
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
