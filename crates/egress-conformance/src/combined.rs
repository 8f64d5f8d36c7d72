//! `check URL --from-sandbox`: the combined report of the suite and the
//! sandbox scan (`egress_suite::combined`), printed and written.

use crate::output::write_files;
use crate::{exit, Failure, Format, TextArgs};
pub use egress_suite::combined::{worse, Combined, COMBINED_SCHEMA};
use std::path::Path;

/// The exit code of a combined report's outcome.
pub fn exit_code(both: &Combined) -> u8 {
    match both.exit_code() {
        0 => exit::PASS,
        1 => exit::FAIL,
        _ => exit::INCONCLUSIVE,
    }
}

/// Prints the combined report in `format`, writes it into `out`
/// (`report.json`, `report.txt`, `report.junit.xml`), returns the exit code.
pub fn emit(
    both: &Combined,
    format: Format,
    text: TextArgs,
    out: Option<&Path>,
) -> Result<u8, Failure> {
    if let Some(dir) = out {
        write_files(dir, &egress_suite::files::combined_files(both))?;
    }
    egress_cli::out!(
        "{}",
        match format {
            Format::Text if text.verbose => both.text(),
            // The scan's part is about 20 lines.
            Format::Text => both.short_text(36, text.paint()),
            Format::Json => both.json(),
            Format::Junit => both.junit(),
            Format::Html => egress_suite::html::combined(both),
            Format::Sarif => egress_suite::sarif::combined(both),
        }
    );
    Ok(exit_code(both))
}
