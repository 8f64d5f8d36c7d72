//! The Debian repository formats: deb822 paragraphs ([`deb822`]), `Release`
//! files ([`release`]) and `Packages` indexes ([`packages`]), read and written,
//! and the two kinds of path a repository names ([`PoolPath`], [`IndexPath`]).
//!
//! The writers serve the reference mirror and the canary upstream; the
//! readers read what a mirror under test or an upstream served, which may be
//! sloppy or hostile. The readers never panic, bound nothing they did not
//! check, and answer anything Debian's formats do not allow (or allow only
//! in one reading of two) with an [`AptFormatError`] naming the line.
//!
//! Signatures (`InRelease`, `Release.gpg`) are not read here: the text of a
//! `Release` reaches [`Release::parse`] after its signature was checked.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod deb822;
pub mod packages;
mod path;
pub mod release;
pub mod sources;

pub use deb822::{parse_paragraphs, parse_paragraphs_with_comments, Paragraph};
pub use packages::{parse_packages, render_packages, PackageEntry};
pub use path::{by_hash_path, IndexPath, PathError, PoolPath, MAX_PATH};
pub use release::{parse_rfc2822, render_release, rfc2822_utc, IndexEntry, Release, ReleaseFields};
pub use sources::{
    is_one_line_style, parse_deb822_sources, parse_sources_list, source_uris, SignedBy,
    SourceEntry, SourcesError,
};

/// Why a deb822 document, a `Release` or a `Packages` file cannot be used.
/// Lines are 1-based lines of the text given to the parser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AptFormatError {
    #[error("line {line}: expected `Field: value` (a field name, a colon, its value)")]
    NotAField { line: usize },
    #[error(
        "line {line}: a continuation line (starting with a space or tab) with no field before it"
    )]
    OrphanContinuation { line: usize },
    #[error("line {line}: a line of only spaces or tabs, which one parser reads as a paragraph separator and another as a continuation; use an empty line")]
    WhitespaceLine { line: usize },
    #[error(
        "line {line}: comment lines are allowed only in source package control files, not here"
    )]
    Comment { line: usize },
    #[error("line {line}: a carriage return or other control character; Debian files use LF line ends and no control characters")]
    ControlCharacter { line: usize },
    #[error("line {line}: field name {name:?} is not a deb822 field name (printable ASCII without `:`, not starting with `#` or `-`)")]
    BadFieldName { line: usize, name: String },
    #[error("line {line}: field {name:?} appears twice in one paragraph")]
    DuplicateField { line: usize, name: String },
    #[error("line {line}: the paragraph has no {field} field")]
    MissingField { line: usize, field: &'static str },
    #[error("line {line}: {field}: {why}")]
    BadValue {
        line: usize,
        field: String,
        why: String,
    },
    #[error("line {line}: expected exactly one paragraph in a Release file, found {found}")]
    ParagraphCount { line: usize, found: usize },
    #[error("line {line}: {path:?} is listed twice in the {section} section")]
    DuplicateEntry {
        line: usize,
        section: &'static str,
        path: String,
    },
}

impl AptFormatError {
    /// The 1-based line the error names.
    pub fn line(&self) -> usize {
        match self {
            Self::NotAField { line }
            | Self::OrphanContinuation { line }
            | Self::WhitespaceLine { line }
            | Self::Comment { line }
            | Self::ControlCharacter { line }
            | Self::BadFieldName { line, .. }
            | Self::DuplicateField { line, .. }
            | Self::MissingField { line, .. }
            | Self::BadValue { line, .. }
            | Self::ParagraphCount { line, .. }
            | Self::DuplicateEntry { line, .. } => *line,
        }
    }
}

/// Error text quotes input; keep it short and on one line.
pub(crate) fn quote(text: &str) -> String {
    text.chars()
        .take(120)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A decimal size as Debian files write it: ASCII digits only, no sign, and
/// a value that fits a u64.
pub fn parse_size(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}
