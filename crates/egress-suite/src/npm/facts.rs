//! What the npm controls establish, derived from their evidence alone (the
//! live run and `report verify` both call [`derive`]).

use super::doc::{Packument, VersionDist};
use crate::facts::{final_of, find, success_body, Facts};
use crate::plan::Plan;
use egress_model::{ProbeRecord, Sha256Digest, Status, Url};

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
pub struct NpmFacts {
    /// The present package's packument URL (npm's encoding).
    pub packument_url: Option<Url>,
    pub full: Option<Packument>,
    pub abbreviated: Option<Packument>,
    pub scoped_url: Option<Url>,
    pub control_tarball: Option<ControlTarball>,
}

impl NpmFacts {
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
    let mut f = Facts {
        index: plan.index().ok(),
        ..Facts::default()
    };
    for r in records.iter().filter(|r| r.id.starts_with("C.")) {
        f.controls.push((r.id.clone(), r.status));
    }
    let mut n = NpmFacts::default();
    if let (Some(registry), Some(npm)) = (&f.index, &plan.npm) {
        n.packument_url = npm
            .present
            .first()
            .map(|p| super::at(registry, &p.packument_path()));
        n.scoped_url = npm
            .scoped
            .as_ref()
            .map(|p| super::at(registry, &p.packument_path()));
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
        if let (Some(ex), Some(registry)) = (final_of(rec, label::TARBALL), &f.index) {
            if let Some((v, url)) = n.control_version(registry) {
                if let Some(r) = &ex.response {
                    n.control_tarball = Some(ControlTarball {
                        version: v.version.clone(),
                        integrity: v.integrity.clone(),
                        url,
                        sha256: r.body_sha256,
                    });
                }
            }
        }
    }
    f.npm = Some(n);
    f
}

/// The facts of a run whose npm controls established nothing.
static NO_NPM_FACTS: NpmFacts = NpmFacts {
    packument_url: None,
    full: None,
    abbreviated: None,
    scoped_url: None,
    control_tarball: None,
};

impl Facts {
    /// The npm facts; empty in a PyPI run.
    pub fn npm(&self) -> &NpmFacts {
        self.npm.as_ref().unwrap_or(&NO_NPM_FACTS)
    }
}
