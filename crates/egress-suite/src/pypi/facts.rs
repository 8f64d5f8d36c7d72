//! Facts the judges and later collectors share, derived from the positive
//! controls' evidence only. Both the live run and `report verify` build them
//! with [`Facts::derive`], so they cannot drift apart.

use crate::plan::Plan;
use egress_model::{Exchange, ProbeRecord, Sha256Digest, Status, Url};
use egress_simple::{FileEntry, ProjectPage};

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
    /// Status of each control, by id.
    pub controls: Vec<(String, Status)>,
    pub index: Option<Url>,
    pub project_url: Option<Url>,
    pub project_html: Option<ProjectPage>,
    pub project_json: Option<ProjectPage>,
    /// Files of the HTML page, restricted to the planned version if any.
    pub files: Vec<ListedFile>,
    /// The file the file control fetched, and the digest of its bytes.
    pub control_file: Option<(Url, Sha256Digest)>,
    /// What the npm controls established, in an npm run.
    pub npm: Option<crate::npm::facts::NpmFacts>,
}

pub fn find<'a>(record: &'a ProbeRecord, label: &str) -> Option<&'a Exchange> {
    record.exchanges.iter().find(|e| e.label == label)
}

/// The last exchange of a redirect chain whose first exchange has `label`.
pub fn final_of<'a>(record: &'a ProbeRecord, label: &str) -> Option<&'a Exchange> {
    let start = record.exchanges.iter().position(|e| e.label == label)?;
    let follow = format!("{label} (redirect)");
    let mut last = &record.exchanges[start];
    for e in &record.exchanges[start + 1..] {
        if e.label == follow {
            last = e;
        } else {
            break;
        }
    }
    Some(last)
}

pub fn success_body(ex: &Exchange) -> Option<&[u8]> {
    let r = ex.response.as_ref()?;
    if r.is_success() {
        r.full_body()
    } else {
        None
    }
}

impl Facts {
    pub fn status(&self, control: &str) -> Status {
        self.controls
            .iter()
            .find(|(id, _)| id == control)
            .map_or(Status::Inconclusive, |(_, s)| *s)
    }

    /// Builds facts from already-judged control records.
    pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Self {
        if plan.is_npm() {
            return crate::npm::facts::derive(plan, records);
        }
        let mut f = Facts {
            index: plan.index().ok(),
            ..Facts::default()
        };
        for r in records.iter().filter(|r| r.id.starts_with("C.")) {
            f.controls.push((r.id.clone(), r.status));
        }
        let project_url = plan
            .present
            .first()
            .and_then(|p| plan.project_url(&p.name).ok());
        f.project_url = project_url.clone();
        let get = |id: &str| records.iter().find(|r| r.id == id);
        if let (Some(rec), Some(url)) = (get("C.project-html"), &project_url) {
            if rec.status == Status::Pass {
                if let Some(body) = find(rec, label::PROJECT_HTML).and_then(success_body) {
                    if let Ok(page) = egress_simple::parse_project_html(body) {
                        let version = plan.present.first().and_then(|p| p.version.clone());
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

/// The absolute URL an exchange requested: its absolute-form target, or its
/// origin-form target on the target's origin.
pub fn request_url(origin: &Url, ex: &Exchange) -> Url {
    let target = ex.request_target();
    if target.starts_with("http://") || target.starts_with("https://") {
        if let Ok(u) = Url::parse(&target) {
            return u;
        }
    }
    origin.with_path(&target)
}
