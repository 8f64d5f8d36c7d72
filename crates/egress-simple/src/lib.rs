//! The PyPI "simple repository API": PEP 503 HTML and PEP 691 JSON pages,
//! rendered and parsed, plus PEP 691 content negotiation.
//!
//! Covered: PEP 503 (HTML pages), PEP 592 (yanked), PEP 629 (repository
//! version), PEP 658 and PEP 714 (core metadata), PEP 691 (JSON pages and
//! negotiation) and PEP 700 (`versions`, `size`, `upload-time`).
//!
//! The renderers serve the reference mirror; the parsers read pages served by
//! mirrors under test, which may be sloppy or hostile. The parsers therefore
//! never panic and report what the page says rather than judging it: whether
//! a page conforms is the suite's decision, not the parser's.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

mod html;
mod json;
mod negotiate;

use std::collections::BTreeMap;
use std::fmt;

pub use html::{parse_index_html, parse_project_html, render_index_html, render_project_html};
pub use json::{parse_index_json, parse_project_json, render_index_json, render_project_json};
pub use negotiate::negotiate;

/// PEP 691 content type of the JSON serialisation, version 1.
pub const JSON_V1: &str = "application/vnd.pypi.simple.v1+json";
/// PEP 691 content type of the HTML serialisation, version 1.
pub const HTML_V1: &str = "application/vnd.pypi.simple.v1+html";
/// The legacy PEP 503 content type, an alias of [`HTML_V1`].
pub const HTML_LEGACY: &str = "text/html";
/// PEP 691 "meta" version asking for the newest JSON serialisation.
pub const JSON_LATEST: &str = "application/vnd.pypi.simple.latest+json";
/// PEP 691 "meta" version asking for the newest HTML serialisation.
pub const HTML_LATEST: &str = "application/vnd.pypi.simple.latest+html";

/// The PEP 629 repository version the renderers announce when a page does not
/// carry one: 1.1 because PEP 700 fields (`versions`, `size`, `upload-time`)
/// are emitted.
pub const API_VERSION: &str = "1.1";

/// Most anchors an HTML page may hold before parsing gives up. A simple page
/// for even the largest real project has a few tens of thousands of files; more
/// than this is a hostile page trying to exhaust the reader.
pub const MAX_ANCHORS: usize = 100_000;

/// The serialisation of a simple-API response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Html,
}

/// One file on a project page.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FileEntry {
    pub filename: String,
    /// The href without its fragment, as written (entities decoded, not resolved
    /// against the page URL).
    pub url: String,
    /// Hash algorithm -> hex digest, from the `#<algo>=<hex>` fragment (HTML) or
    /// the `hashes` dictionary (JSON).
    pub hashes: BTreeMap<String, String>,
    pub requires_python: Option<String>,
    /// `None` = not yanked; `Some("")` = yanked without a reason.
    pub yanked: Option<String>,
    /// PEP 658/714: `Some(hashes)` when core metadata is announced; an empty map
    /// when it is announced without a hash (`true`).
    pub core_metadata: Option<BTreeMap<String, String>>,
    /// PEP 700; JSON only.
    pub size: Option<u64>,
    /// PEP 700; JSON only.
    pub upload_time: Option<String>,
    pub gpg_sig: Option<bool>,
}

/// A project detail page (`/simple/<project>/`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ProjectPage {
    pub name: String,
    pub files: Vec<FileEntry>,
    /// PEP 700; JSON only.
    pub versions: Vec<String>,
    /// PEP 629 `Major.Minor`. Renderers use [`API_VERSION`] when `None`.
    pub api_version: Option<String>,
}

/// The project list (`/simple/`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct IndexPage {
    /// Project names as listed (not normalised).
    pub projects: Vec<String>,
    /// PEP 629 `Major.Minor`. Renderers use [`API_VERSION`] when `None`.
    pub api_version: Option<String>,
}

/// Why a page could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The body is not JSON of the expected shape; the message says where.
    Json(String),
    /// The HTML page holds more than [`MAX_ANCHORS`] anchors.
    TooManyAnchors { limit: usize },
}

impl ParseError {
    fn json(err: serde_json::Error) -> Self {
        // serde_json messages can quote input; keep the error on one line.
        let msg = err
            .to_string()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        ParseError::Json(msg)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Json(msg) => write!(f, "invalid simple-API JSON: {msg}"),
            ParseError::TooManyAnchors { limit } => {
                write!(f, "HTML page has more than {limit} anchors")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// The hash to show where a format has room for one only (HTML fragment,
/// `data-core-metadata`): sha256 when present, as PEP 691 recommends,
/// otherwise the first in name order.
fn preferred_hash(hashes: &BTreeMap<String, String>) -> Option<(&str, &str)> {
    hashes
        .get_key_value("sha256")
        .or_else(|| hashes.iter().next())
        .map(|(k, v)| (k.as_str(), v.as_str()))
}
