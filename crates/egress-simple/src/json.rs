//! PEP 691 JSON pages (with PEP 592, 658/714, 700 fields).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{FileEntry, IndexPage, ParseError, ProjectPage, API_VERSION};

// ---------------------------------------------------------------- rendering
//
// Rendering goes through borrowed structs rather than `serde_json::Value` so
// the key order is the field order below, whatever features of serde_json
// other crates enable.

#[derive(Serialize)]
struct OutMeta<'a> {
    #[serde(rename = "api-version")]
    api_version: &'a str,
}

#[derive(Serialize)]
struct OutProject<'a> {
    meta: OutMeta<'a>,
    name: &'a str,
    files: Vec<OutFile<'a>>,
    versions: &'a [String],
}

#[derive(Serialize)]
#[serde(untagged)]
enum OutFlagOr<T> {
    Flag(bool),
    Value(T),
}

#[derive(Serialize)]
struct OutFile<'a> {
    filename: &'a str,
    url: &'a str,
    hashes: &'a BTreeMap<String, String>,
    #[serde(rename = "requires-python", skip_serializing_if = "Option::is_none")]
    requires_python: Option<&'a str>,
    // PEP 714: only the new key in JSON. The old `dist-info-metadata` key makes
    // pip 22.3 to 23.1 fail hard, and the PEP says servers should not send it.
    #[serde(rename = "core-metadata", skip_serializing_if = "Option::is_none")]
    core_metadata: Option<OutFlagOr<&'a BTreeMap<String, String>>>,
    #[serde(rename = "gpg-sig", skip_serializing_if = "Option::is_none")]
    gpg_sig: Option<bool>,
    yanked: OutFlagOr<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(rename = "upload-time", skip_serializing_if = "Option::is_none")]
    upload_time: Option<&'a str>,
}

#[derive(Serialize)]
struct OutIndex<'a> {
    meta: OutMeta<'a>,
    projects: Vec<OutName<'a>>,
}

#[derive(Serialize)]
struct OutName<'a> {
    name: &'a str,
}

fn out_file(file: &FileEntry) -> OutFile<'_> {
    OutFile {
        filename: &file.filename,
        url: &file.url,
        hashes: &file.hashes,
        requires_python: file.requires_python.as_deref(),
        core_metadata: file.core_metadata.as_ref().map(|hashes| {
            if hashes.is_empty() {
                OutFlagOr::Flag(true)
            } else {
                OutFlagOr::Value(hashes)
            }
        }),
        gpg_sig: file.gpg_sig,
        yanked: match file.yanked.as_deref() {
            None => OutFlagOr::Flag(false),
            Some("") => OutFlagOr::Flag(true),
            Some(reason) => OutFlagOr::Value(reason),
        },
        size: file.size,
        upload_time: file.upload_time.as_deref(),
    }
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Structs of strings, string-keyed maps, bools and integers always
    // serialise; an error here would be a bug in this module.
    serde_json::to_string(value).expect("simple-API structs always serialise")
}

/// The PEP 691 project detail page, `meta` first, keys in a fixed order.
pub fn render_project_json(page: &ProjectPage) -> String {
    to_json(&OutProject {
        meta: OutMeta {
            api_version: page.api_version.as_deref().unwrap_or(API_VERSION),
        },
        name: &page.name,
        files: page.files.iter().map(out_file).collect(),
        versions: &page.versions,
    })
}

/// The PEP 691 project list.
pub fn render_index_json(index: &IndexPage) -> String {
    to_json(&OutIndex {
        meta: OutMeta {
            api_version: index.api_version.as_deref().unwrap_or(API_VERSION),
        },
        projects: index.projects.iter().map(|name| OutName { name }).collect(),
    })
}

// ------------------------------------------------------------------ parsing
//
// Unknown keys are ignored (PEP 691 requires clients to). What makes a page a
// page is required (`files` / `projects`, and per file `filename` and `url`);
// everything else is optional here and judged by the suite.

#[derive(Deserialize, Default)]
struct InMeta {
    #[serde(rename = "api-version")]
    api_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum InFlagOr<T> {
    Flag(bool),
    Value(T),
}

#[derive(Deserialize)]
struct InFile {
    filename: String,
    url: String,
    hashes: Option<BTreeMap<String, String>>,
    #[serde(rename = "requires-python")]
    requires_python: Option<String>,
    #[serde(rename = "core-metadata")]
    core_metadata: Option<InFlagOr<BTreeMap<String, String>>>,
    #[serde(rename = "dist-info-metadata")]
    dist_info_metadata: Option<InFlagOr<BTreeMap<String, String>>>,
    // The misnamed key PyPI briefly served (the bug behind PEP 714).
    #[serde(rename = "data-dist-info-metadata")]
    data_dist_info_metadata: Option<InFlagOr<BTreeMap<String, String>>>,
    #[serde(rename = "gpg-sig")]
    gpg_sig: Option<bool>,
    yanked: Option<InFlagOr<String>>,
    size: Option<u64>,
    #[serde(rename = "upload-time")]
    upload_time: Option<String>,
}

#[derive(Deserialize)]
struct InProject {
    meta: Option<InMeta>,
    name: Option<String>,
    files: Vec<InFile>,
    versions: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct InName {
    name: String,
}

#[derive(Deserialize)]
struct InIndex {
    meta: Option<InMeta>,
    projects: Vec<InName>,
}

fn in_file(raw: InFile) -> FileEntry {
    // PEP 714: the new key wins; the legacy ones are read only in its absence.
    let metadata = raw
        .core_metadata
        .or(raw.dist_info_metadata)
        .or(raw.data_dist_info_metadata);
    FileEntry {
        filename: raw.filename,
        url: raw.url,
        hashes: raw.hashes.unwrap_or_default(),
        requires_python: raw.requires_python,
        yanked: match raw.yanked {
            None | Some(InFlagOr::Flag(false)) => None,
            Some(InFlagOr::Flag(true)) => Some(String::new()),
            Some(InFlagOr::Value(reason)) => Some(reason),
        },
        core_metadata: match metadata {
            None | Some(InFlagOr::Flag(false)) => None,
            Some(InFlagOr::Flag(true)) => Some(BTreeMap::new()),
            Some(InFlagOr::Value(hashes)) => Some(hashes),
        },
        size: raw.size,
        upload_time: raw.upload_time,
        gpg_sig: raw.gpg_sig,
    }
}

/// Reads a PEP 691 project detail page.
pub fn parse_project_json(body: &[u8]) -> Result<ProjectPage, ParseError> {
    let raw: InProject = serde_json::from_slice(body).map_err(ParseError::json)?;
    Ok(ProjectPage {
        name: raw.name.unwrap_or_default(),
        files: raw.files.into_iter().map(in_file).collect(),
        versions: raw.versions.unwrap_or_default(),
        api_version: raw.meta.unwrap_or_default().api_version,
    })
}

/// Reads a PEP 691 project list.
pub fn parse_index_json(body: &[u8]) -> Result<IndexPage, ParseError> {
    let raw: InIndex = serde_json::from_slice(body).map_err(ParseError::json)?;
    Ok(IndexPage {
        projects: raw.projects.into_iter().map(|p| p.name).collect(),
        api_version: raw.meta.unwrap_or_default().api_version,
    })
}
