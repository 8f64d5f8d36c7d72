//! Writing results.
//!
//! Standard output has one path, [`print`] (and the `egress_cli::out!` and
//! `egress_cli::outln!` macros over it), shared by every binary: a closed
//! pipe (`egress-conformance | head -1`) is a quiet, normal end, and any
//! other write error is kept for [`stdout_error`], which the binary reports
//! once the command is done.
//!
//! Every file is written to a temporary sibling and renamed into place, so a
//! reader never sees half a report and an interrupted run never leaves one
//! behind.

use std::fs;
use std::path::Path;

pub use egress_build::write_atomic;
pub use egress_cli::{print, stdout_error};

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

/// Writes each report as `<stem>.json`, `<stem>.txt` and `<stem>.junit.xml`,
/// and, for more than one report, the matrix as `matrix.md` and `matrix.txt`.
pub fn write_reports(
    dir: &Path,
    reports: &[(&str, &egress_suite::Report)],
) -> Result<(), crate::Failure> {
    let fail = |p: &Path, e: std::io::Error| {
        crate::Failure::internal(format!("cannot write {}: {e}", p.display())).because(e)
    };
    fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    for (stem, r) in reports {
        for (ext, body) in [
            ("json", egress_suite::render::json(r)),
            ("txt", egress_suite::render::text(r)),
            ("junit.xml", egress_suite::render::junit(r)),
        ] {
            let p = dir.join(format!("{stem}.{ext}"));
            write_atomic(&p, body.as_bytes()).map_err(|e| fail(&p, e))?;
        }
    }
    if reports.len() > 1 {
        let refs: Vec<&egress_suite::Report> = reports.iter().map(|(_, r)| *r).collect();
        for (name, body) in [
            ("matrix.md", egress_suite::render::matrix_markdown(&refs)),
            ("matrix.txt", egress_suite::render::matrix_text(&refs)),
        ] {
            let p = dir.join(name);
            write_atomic(&p, body.as_bytes()).map_err(|e| fail(&p, e))?;
        }
    }
    Ok(())
}
