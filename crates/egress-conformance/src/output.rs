//! Writing results.
//!
//! Standard output has one path, [`print`] (and the `egress_cli::out!` and
//! `egress_cli::outln!` macros over it), shared by every binary: a closed
//! pipe (`egress-conformance | head -1`) is a quiet, normal end, and any
//! other write error is kept for [`stdout_error`], which the binary reports
//! once the command is done.
//!
//! Every file is written to a temporary sibling and renamed into place
//! ([`egress_build::write_files`]), so a reader never sees half a report
//! and an interrupted run never leaves one behind.

use std::path::Path;

pub use egress_build::write_atomic;
pub use egress_cli::{print, stdout_error};
pub use egress_suite::render::slug;

/// Writes each `(name, body)` into `dir`; a failure is an internal one.
pub fn write_files<N: AsRef<Path>, B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(N, B)],
) -> Result<(), crate::Failure> {
    egress_build::write_files(dir, files)
        .map_err(|e| crate::Failure::internal(e.to_string()).because(e))
}

/// Writes each report as `<stem>.json`, `<stem>.txt` and `<stem>.junit.xml`,
/// and, for more than one report, the matrix as `matrix.md` and `matrix.txt`.
pub fn write_reports(
    dir: &Path,
    reports: &[(&str, &egress_suite::Report)],
) -> Result<(), crate::Failure> {
    write_files(dir, &egress_suite::files::report_files(reports))
}
