//! What a snapshot's `SNAPSHOT.json` says it holds (the packages whose
//! abbreviated packuments it serves), and which of them each role of an npm
//! plan takes when no flag names one: the packages the controls take, a
//! scoped package, and the conformance kit's tripwire and template.

use crate::kit::PREFIX;
use egress_model::NpmName;
use egress_snapshot::{SnapshotDoc, NPM_ABBREVIATED};

/// The kit's npm packages.
pub mod kit {
    /// A present package with two versions.
    pub const PRESENT: &str = "egress-kit-present";
    /// A scoped package.
    pub const SCOPED: &str = "@egress-kit/scoped";
    /// Its `postinstall` script calls the canary's tripwire.
    pub const TRIPWIRE: &str = "egress-kit-tripwire";
    /// Its description and README carry every raw template marker.
    pub const TEMPLATE: &str = "egress-kit-template";
}

/// The packages whose abbreviated packuments a snapshot serves.
pub fn packages_in(doc: &SnapshotDoc) -> Vec<NpmName> {
    let mut names: Vec<NpmName> = doc
        .served
        .iter()
        .filter(|e| e.content_type == NPM_ABBREVIATED)
        .filter_map(|e| {
            let raw = e
                .path
                .strip_prefix('/')?
                .replacen("%2f", "/", 1)
                .replacen("%2F", "/", 1);
            NpmName::new(&raw).ok()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The roles an npm plan's packages take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    /// At most three; the first is the one the controls take.
    pub present: Vec<NpmName>,
    pub scoped: Option<NpmName>,
    pub tripwire: Option<NpmName>,
    pub template: Option<NpmName>,
    /// Whether `mutable` was moved first.
    pub mutable_first: bool,
}

/// Chooses the roles from `given` (`--present`, may be empty) and what the
/// snapshot `held`. The controls take an unscoped package when there is
/// one, so that the scoped control tests a second route shape; the lab's
/// own before the kit's, and never the kit's tripwire or template package,
/// which have sub-probes of their own. Without `--present`, `mutable` (the
/// package a controlled upstream serves too) goes first when held, so the
/// controls and the upstream's mutations act on it.
pub fn roles(given: Vec<NpmName>, held: &[NpmName], mutable: Option<&str>) -> Roles {
    let from_snapshot = given.is_empty();
    let kit_package = |name: &str| held.iter().find(|h| h.as_str() == name).cloned();
    let (tripwire, template) = (kit_package(kit::TRIPWIRE), kit_package(kit::TEMPLATE));
    let present = if from_snapshot { held.to_vec() } else { given };
    let scoped = present
        .iter()
        .chain(held.iter())
        .find(|n| n.scope().is_some())
        .cloned();
    let is_probe = |n: &NpmName| Some(n) == tripwire.as_ref() || Some(n) == template.as_ref();
    let mut ordered: Vec<NpmName> = present
        .iter()
        .filter(|n| n.scope().is_none() && !is_probe(n))
        .cloned()
        .collect();
    ordered.sort_by_key(|n| (n.as_str().starts_with(PREFIX), n.clone()));
    if ordered.is_empty() {
        ordered = present;
    }
    let mutable = mutable.filter(|_| from_snapshot).and_then(|m| {
        ordered
            .iter()
            .position(|n| n.as_str() == m)
            .filter(|i| *i > 0)
    });
    if let Some(i) = mutable {
        let m = ordered.remove(i);
        ordered.insert(0, m);
    }
    ordered.truncate(3);
    Roles {
        present: ordered,
        scoped,
        tripwire,
        template,
        mutable_first: mutable.is_some(),
    }
}
