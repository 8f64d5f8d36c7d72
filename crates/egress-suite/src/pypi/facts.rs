//! What the PyPI controls establish, derived from their evidence only. Both
//! the live run and `report verify` build them with [`derive`], so they
//! cannot drift apart.

use super::plan::{Packages, Plan};
use crate::facts::{final_of, find, request_url, success_body, ControlFacts, Controls};
use egress_model::{ProbeRecord, Sha256Digest, Status, Url};
use egress_simple::{FileEntry, ProjectPage};

/// A judge of a PyPI run.
pub type Judge<'a> = crate::judge::Judge<'a, Packages, Facts>;

/// Labels of the control exchanges; judges find exchanges by these.
pub mod label {
    pub const INDEX: &str = "root index (HTML)";
    pub const PROJECT_HTML: &str = "project page (HTML)";
    pub const PROJECT_JSON: &str = "project page (PEP 691 JSON)";
    pub const FILE: &str = "file from the project page";
}

/// A file a project page lists, with its href resolved against the page.
#[derive(Debug, Clone)]
pub struct ListedFile {
    pub entry: FileEntry,
    pub url: Option<Url>,
    pub sha256: Option<Sha256Digest>,
}

impl ListedFile {
    pub fn from_entry(page_url: &Url, entry: &FileEntry) -> Self {
        Self {
            url: page_url.join(&entry.url).ok(),
            sha256: entry
                .hashes
                .get("sha256")
                .and_then(|h| Sha256Digest::from_hex(h).ok()),
            entry: entry.clone(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Facts {
    pub controls: Controls,
    pub index: Option<Url>,
    pub project_url: Option<Url>,
    pub project_html: Option<ProjectPage>,
    pub project_json: Option<ProjectPage>,
    /// Files of the HTML page, restricted to the planned version if any.
    pub files: Vec<ListedFile>,
    /// The file the file control fetched, and the digest of its bytes.
    pub control_file: Option<(Url, Sha256Digest)>,
}

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.controls.status(control)
    }

    fn served_artifact(&self) -> Option<Url> {
        control_file(self).and_then(|l| l.url.clone())
    }
}

impl Facts {
    /// Builds facts from already-judged control records.
    pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Self {
        let mut f = Facts {
            index: plan.index().ok(),
            controls: Controls::of(records),
            ..Facts::default()
        };
        let project_url = plan
            .packages
            .present
            .first()
            .and_then(|p| plan.project_url(&p.name).ok());
        f.project_url = project_url.clone();
        let get = |id: &str| records.iter().find(|r| r.id == id);
        if let (Some(rec), Some(url)) = (get("C.project-html"), &project_url) {
            if rec.status == Status::Pass {
                if let Some(body) = find(rec, label::PROJECT_HTML).and_then(success_body) {
                    if let Ok(page) = egress_simple::parse_project_html(body) {
                        let version = plan
                            .packages
                            .present
                            .first()
                            .and_then(|p| p.version.clone());
                        f.files = page
                            .files
                            .iter()
                            .filter(|e| {
                                version.as_ref().is_none_or(|v| {
                                    egress_model::DistFilename::parse(&e.filename)
                                        .is_ok_and(|d| &d.version == v)
                                })
                            })
                            .map(|e| ListedFile::from_entry(url, e))
                            .collect();
                        f.project_html = Some(page);
                    }
                }
            }
        }
        if let Some(rec) = get("C.project-json") {
            if rec.status == Status::Pass {
                if let Some(body) = find(rec, label::PROJECT_JSON).and_then(success_body) {
                    f.project_json = egress_simple::parse_project_json(body).ok();
                }
            }
        }
        if let Some(rec) = get("C.file") {
            if rec.status == Status::Pass {
                if let Some(ex) = final_of(rec, label::FILE) {
                    if let (Some(r), Some(origin)) = (&ex.response, &f.index) {
                        f.control_file = Some((request_url(origin, ex), r.body_sha256));
                    }
                }
            }
        }
        f
    }
}

/// The file the file control fetches: the first listed file on the target's origin.
pub fn control_file(facts: &Facts) -> Option<&ListedFile> {
    let origin = facts.index.as_ref()?;
    facts
        .files
        .iter()
        .find(|f| f.url.as_ref().is_some_and(|u| u.same_origin(origin)))
}
