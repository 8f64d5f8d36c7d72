//! `check --protocol npm`: the plan of an npm run against any registry URL.
//!
//! The snapshot's `SNAPSHOT.json` (beside a local `--manifest`, or at the
//! mirror's well-known path; its abbreviated packuments name the packages)
//! names what to probe: without `--present`, the packages the controls
//! take (the lab's own before the kit's); a scoped package; the
//! conformance kit's tripwire and template packages (`egress-kit-*`); and,
//! without `--absent`, widely used packages it does not hold. The controls
//! then show whether the mirror really serves them, so a mirror cannot pass
//! by declaring nothing.

use super::args::CheckArgs;
use crate::Failure;
use egress_model::{NpmName, Url};
use egress_references::npm::kit;
use egress_snapshot::{SnapshotDoc, NPM_ABBREVIATED};
use egress_suite::npm;
use egress_suite::{ManifestSource, Packages, Plan};

/// The registry URL the suite probes: a bare origin means `/`, and the path
/// always ends in `/` so that packuments join under it.
pub fn registry_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/")
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

fn names(flag: &str, raw: &[String]) -> Result<Vec<NpmName>, Failure> {
    raw.iter()
        .map(|n| NpmName::new(n).map_err(|e| Failure::usage(format!("{flag}: {e}"))))
        .collect()
}

pub fn plan(
    args: &CheckArgs,
    registry: &Url,
    client: &egress_transcript::Client,
    manifest: ManifestSource,
    allowed_signers: bool,
    mutable: Option<&egress_model::ProjectName>,
) -> Result<Plan<Packages>, Failure> {
    let given = names("--present", &args.present)?;
    let from_snapshot = given.is_empty();
    let held = super::snapshot_doc::snapshot_doc(&manifest, registry, client)
        .map(|d| packages_in(&d))
        .unwrap_or_default();
    let kit_package = |name: &str| held.iter().find(|h| h.as_str() == name).cloned();
    let (tripwire, template) = (kit_package(kit::TRIPWIRE), kit_package(kit::TEMPLATE));
    let (present, mut source) = if !given.is_empty() {
        (given, "--present")
    } else {
        (held.clone(), "SNAPSHOT.json")
    };
    let scoped = present
        .iter()
        .chain(held.iter())
        .find(|n| n.scope().is_some())
        .cloned();
    // The controls take the first package: an unscoped one when there is
    // one, so that the scoped control tests a second route shape; the lab's
    // own before the kit's, and never the kit's tripwire or template
    // package, which have sub-probes of their own.
    let is_probe = |n: &NpmName| Some(n) == tripwire.as_ref() || Some(n) == template.as_ref();
    let mut ordered: Vec<NpmName> = present
        .iter()
        .filter(|n| n.scope().is_none() && !is_probe(n))
        .cloned()
        .collect();
    ordered.sort_by_key(|n| {
        (
            n.as_str().starts_with(egress_references::kit::PREFIX),
            n.clone(),
        )
    });
    if ordered.is_empty() {
        ordered = present;
    }
    // With --canary, the controls and the mutations take the package the
    // canary serves too (the kit's present package), when the snapshot
    // holds it; the lab's own follow.
    let mutable = mutable.filter(|_| from_snapshot).and_then(|m| {
        ordered
            .iter()
            .position(|n| n.as_str() == m.as_str())
            .filter(|i| *i > 0)
    });
    if let Some(i) = mutable {
        let m = ordered.remove(i);
        ordered.insert(0, m);
        source = super::snapshot_doc::MUTABLE_SOURCE;
    }
    ordered.truncate(3);
    let absent = if args.absent.is_empty() {
        npm::default_absent(|n| held.contains(n))
    } else {
        names("--absent", &args.absent)?
    };
    Ok(Plan {
        index_url: registry.to_string(),
        packages: Packages::Npm(npm::Packages {
            present: ordered,
            scoped,
            absent,
            tripwire,
            template,
        }),
        present_source: source.into(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
    })
}
