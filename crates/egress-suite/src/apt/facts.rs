//! What the apt controls establish, derived from their evidence alone (the
//! live run and `report verify` both call [`derive()`]).

use super::doc;
use super::plan::{at, Packages, Plan};
use crate::facts::{final_of, find, success_body, ControlFacts, Controls};
use egress_apt::{PackageEntry, Release};
use egress_model::{ProbeRecord, Sha256Digest, Status, Url};

/// A judge of an apt run.
pub type Judge<'a> = crate::judge::Judge<'a, Packages, Facts>;

/// Labels of the control exchanges; judges find exchanges by these.
pub mod label {
    pub const INRELEASE: &str = "InRelease";
    pub const RELEASE: &str = "Release";
    pub const RELEASE_GPG: &str = "Release.gpg";
    pub const PACKAGES: &str = "Packages index the Release lists";
    pub const DEB: &str = ".deb of a present package";
}

/// The `.deb` the `.deb` control fetched.
#[derive(Debug, Clone)]
pub struct ControlDeb {
    pub entry: PackageEntry,
    pub url: Url,
    /// Digest of the bytes served.
    pub sha256: Sha256Digest,
}

#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub controls: Controls,
    /// The archive root.
    pub index: Option<Url>,
    /// The `Release` the target served (from `InRelease`, else `Release`),
    /// not yet verified.
    pub release: Option<Release>,
    /// Where the `Packages` control read the index, and what it lists.
    pub packages_url: Option<Url>,
    pub packages: Vec<PackageEntry>,
    pub control_deb: Option<ControlDeb>,
}

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.controls.status(control)
    }

    fn served_artifact(&self) -> Option<Url> {
        self.control_deb.as_ref().map(|d| d.url.clone())
    }
}

impl Facts {
    /// The stanza the `.deb` control takes: the first the index lists for
    /// the first present package, at its lowest version as listed first.
    pub fn control_entry(&self, plan: &Plan) -> Option<&PackageEntry> {
        let name = plan.packages.present.first()?;
        self.packages.iter().find(|e| &e.package == name)
    }

    /// The index path (relative to `dists/<dist>/`) the `Packages` control
    /// reads: the plain `Packages` when the `Release` lists it, else
    /// `Packages.gz`, else the plain path.
    pub fn packages_index(&self, p: &Packages) -> String {
        let plain = p.packages_index();
        let gz = format!("{plain}.gz");
        match &self.release {
            Some(r) if r.find(&plain).is_none() && r.find(&gz).is_some() => gz,
            _ => plain,
        }
    }
}

fn passed<'a>(records: &'a [ProbeRecord], id: &str) -> Option<&'a ProbeRecord> {
    records
        .iter()
        .find(|r| r.id == id)
        .filter(|r| r.status == Status::Pass)
}

/// The `Release` a record's `InRelease` (else `Release`) exchange served.
pub fn served_release(rec: &ProbeRecord) -> Option<Release> {
    [label::INRELEASE, label::RELEASE]
        .iter()
        .find_map(|l| find(rec, l).and_then(success_body).and_then(doc::release))
}

pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Facts {
    let mut n = Facts {
        index: plan.index().ok(),
        controls: Controls::of(records),
        ..Facts::default()
    };
    n.release = passed(records, "C.release").and_then(served_release);
    if let Some(rec) = passed(records, "C.packages") {
        if let Some(ex) = final_of(rec, label::PACKAGES) {
            n.packages_url = n.index.as_ref().map(|a| crate::facts::request_url(a, ex));
            n.packages = success_body(ex).and_then(doc::packages).unwrap_or_default();
        }
    }
    if let (Some(rec), Some(archive)) = (passed(records, "C.deb"), &n.index) {
        let entry = n.control_entry(plan).cloned();
        let served = final_of(rec, label::DEB).and_then(|e| e.response.as_ref());
        if let (Some(entry), Some(r)) = (entry, served) {
            n.control_deb = Some(ControlDeb {
                url: at(archive, entry.filename.as_str()),
                sha256: r.body_sha256,
                entry,
            });
        }
    }
    n
}
