//! Writing results.
//!
//! Standard output has one path, [`print`] (and the [`out!`](crate::out)
//! and [`outln!`](crate::outln) macros over it): a locked handle, written
//! and flushed, where a closed pipe (`egress-conformance | head -1`) is a
//! quiet, normal end: nothing more is written, nothing is said, and the
//! command ends with its own exit code. Any other write error is kept for
//! [`stdout_error`], which the binary reports once the command is done.
//!
//! Every file is written to a temporary sibling and renamed into place, so a
//! reader never sees half a report and an interrupted run never leaves one
//! behind.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once standard output cannot take more: its reader went away, or a
/// write failed.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The write error, other than a closed pipe, that closed standard output.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);

/// Writes `text` to standard output, all of it, then flushes. Never panics:
/// see the module documentation.
pub fn print(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != io::ErrorKind::BrokenPipe {
            if let Ok(mut slot) = STDOUT_ERROR.lock() {
                slot.get_or_insert(e);
            }
        }
    }
}

/// The error that stopped standard output, if it was anything but a closed
/// pipe (a full disk, say); taken, so it is reported once.
pub fn stdout_error() -> Option<io::Error> {
    STDOUT_ERROR.lock().ok()?.take()
}

/// `print!` through [`print`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print(&::std::format!($($arg)*))
    };
}

/// `println!` through [`print`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::print(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

pub use egress_build::write_atomic;

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
