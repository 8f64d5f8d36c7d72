//! What the Hub controls establish, derived from their evidence alone (the
//! live run and `report verify` both call [`derive()`]).

use super::doc::{self, Entry};
use super::plan::{first, Packages, Plan, RepoRef};
use crate::facts::{final_of, success_body, ControlFacts, Controls};
use egress_model::{ProbeRecord, Status, Url};

/// A judge of a Hub run.
pub type Judge<'a> = crate::judge::Judge<'a, Packages, Facts>;

/// Labels of the control exchanges; judges find exchanges by these.
pub mod label {
    pub const INFO: &str = "info of a present repository at main";
    pub const TREE: &str = "tree of a present repository at its commit";
    pub const RESOLVE: &str = "a regular file of a present repository";
}

#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub controls: Controls,
    /// The endpoint (`HF_ENDPOINT`).
    pub endpoint: Option<Url>,
    /// The repository the controls read.
    pub repo: Option<RepoRef>,
    /// The commit its info at `main` names.
    pub sha: Option<String>,
    /// The files its tree at that commit lists, every page.
    pub files: Vec<Entry>,
    /// The file `C.resolve` downloaded, and where.
    pub resolved: Option<(Entry, Url)>,
}

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.controls.status(control)
    }

    fn served_artifact(&self) -> Option<Url> {
        self.resolved.as_ref().map(|(_, u)| u.clone())
    }
}

impl Facts {
    /// The file `C.resolve` takes: the first regular (not LFS) one, which
    /// every mirror serves from its own origin.
    pub fn control_file(&self) -> Option<&Entry> {
        self.files.iter().find(|e| e.lfs.is_none())
    }

    /// Where `file` is downloaded at `rev`.
    pub fn resolve_url(&self, rev: &str, file: &str) -> Option<Url> {
        Some(
            self.repo
                .as_ref()?
                .resolve(self.endpoint.as_ref()?, rev, file),
        )
    }
}

fn passed<'a>(records: &'a [ProbeRecord], id: &str) -> Option<&'a ProbeRecord> {
    records
        .iter()
        .find(|r| r.id == id)
        .filter(|r| r.status == Status::Pass)
}

/// Every file of every tree page `label` names in `rec`.
pub fn tree_files(rec: &ProbeRecord, label: &str) -> Vec<Entry> {
    rec.exchanges
        .iter()
        .filter(|e| e.label.trim_end_matches(" (redirect)") == label)
        .filter_map(success_body)
        .filter_map(doc::tree)
        .flatten()
        .collect()
}

pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Facts {
    let mut n = Facts {
        endpoint: plan.index().ok(),
        repo: first(&plan.packages),
        controls: Controls::of(records),
        ..Facts::default()
    };
    n.sha = passed(records, "C.info")
        .and_then(|r| final_of(r, label::INFO))
        .and_then(success_body)
        .and_then(doc::info_sha)
        .filter(|s| doc::is_commit(s));
    n.files = passed(records, "C.tree")
        .map(|r| tree_files(r, label::TREE))
        .unwrap_or_default();
    if passed(records, "C.resolve").is_some() {
        if let (Some(sha), Some(f)) = (n.sha.clone(), n.control_file().cloned()) {
            n.resolved = n.resolve_url(&sha, &f.path).map(|u| (f, u));
        }
    }
    n
}
