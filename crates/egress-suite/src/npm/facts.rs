//! What the npm controls establish, derived from their evidence alone (the
//! live run and `report verify` both call [`derive()`]).

use super::doc::{Packument, VersionDist};
use super::plan::{Packages, Plan};
use crate::facts::{final_of, find, success_body, ControlFacts, Controls};
use egress_model::{ProbeRecord, Sha256Digest, Status, Url};

/// A judge of an npm run.
pub type Judge<'a> = crate::judge::Judge<'a, Packages, Facts>;

/// Labels of the control exchanges; judges find exchanges by these.
pub mod label {
    pub const FULL: &str = "packument (full)";
    pub const ABBREVIATED: &str = "packument (abbreviated)";
    pub const SCOPED: &str = "scoped packument (@scope%2fname)";
    pub const TARBALL: &str = "tarball from the packument";
}

/// The tarball the tarball control fetched.
#[derive(Debug, Clone)]
pub struct ControlTarball {
    pub version: String,
    pub url: Url,
    pub integrity: Option<String>,
    /// Digest of the bytes served.
    pub sha256: Sha256Digest,
}

#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub controls: Controls,
    /// The registry URL.
    pub index: Option<Url>,
    /// The present package's packument URL (npm's encoding).
    pub packument_url: Option<Url>,
    pub full: Option<Packument>,
    pub abbreviated: Option<Packument>,
    pub scoped_url: Option<Url>,
    pub control_tarball: Option<ControlTarball>,
}

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.controls.status(control)
    }

    fn served_artifact(&self) -> Option<Url> {
        self.control_tarball.as_ref().map(|t| t.url.clone())
    }
}

impl Facts {
    /// The version the tarball control takes: the lowest the full packument
    /// lists with a same-origin tarball (so that `latest`, which the
    /// upstream mutations move, is not it when there are several).
    pub fn control_version(&self, registry: &Url) -> Option<(&VersionDist, Url)> {
        let page = self.packument_url.as_ref()?;
        let mut candidates: Vec<(&VersionDist, Url)> = self
            .full
            .as_ref()?
            .versions
            .iter()
            .filter_map(|v| {
                let u = page.join(v.tarball.as_deref()?).ok()?;
                u.same_origin(registry).then_some((v, u))
            })
            .collect();
        candidates.sort_by(|a, b| egress_snapshot::npm::semver_cmp(&a.0.version, &b.0.version));
        candidates.into_iter().next()
    }
}

fn passed<'a>(records: &'a [ProbeRecord], id: &str) -> Option<&'a ProbeRecord> {
    records
        .iter()
        .find(|r| r.id == id)
        .filter(|r| r.status == Status::Pass)
}

pub fn derive(plan: &Plan, records: &[ProbeRecord]) -> Facts {
    let mut n = Facts {
        index: plan.index().ok(),
        controls: Controls::of(records),
        ..Facts::default()
    };
    let npm = &plan.packages;
    if let Some(registry) = &n.index {
        n.packument_url = npm
            .present
            .first()
            .map(|p| super::plan::at(registry, &p.packument_path()));
        n.scoped_url = npm
            .scoped
            .as_ref()
            .map(|p| super::plan::at(registry, &p.packument_path()));
    }
    let doc = |id: &str, label: &str| {
        passed(records, id)
            .and_then(|r| find(r, label))
            .and_then(success_body)
            .and_then(|b| Packument::parse(b).ok())
    };
    n.full = doc("C.packument", label::FULL);
    n.abbreviated = doc("C.abbreviated", label::ABBREVIATED);
    if let Some(rec) = passed(records, "C.tarball") {
        if let (Some(ex), Some(registry)) = (final_of(rec, label::TARBALL), &n.index) {
            let tarball = n.control_version(registry).and_then(|(v, url)| {
                ex.response.as_ref().map(|r| ControlTarball {
                    version: v.version.clone(),
                    integrity: v.integrity.clone(),
                    url,
                    sha256: r.body_sha256,
                })
            });
            if tarball.is_some() {
                n.control_tarball = tarball;
            }
        }
    }
    n
}
