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
use egress_suite::npm::{self, held::packages_in, held::roles};
use egress_suite::{ManifestSource, Packages, Plan};

/// The registry URL the suite probes: a bare origin means `/`, and the path
/// always ends in `/` so that packuments join under it.
pub fn registry_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/")
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
    let source = if given.is_empty() {
        "SNAPSHOT.json"
    } else {
        "--present"
    };
    let held = super::snapshot_doc::snapshot_doc(&manifest, registry, client)
        .map(|d| packages_in(&d))
        .unwrap_or_default();
    let roles = roles(given, &held, mutable.map(|m| m.as_str()));
    let source = if roles.mutable_first {
        super::snapshot_doc::MUTABLE_SOURCE
    } else {
        source
    };
    let absent = if args.absent.is_empty() {
        npm::default_absent(|n| held.contains(n))
    } else {
        names("--absent", &args.absent)?
    };
    Ok(Plan {
        index_url: registry.to_string(),
        packages: Packages::Npm(npm::Packages {
            present: roles.present,
            scoped: roles.scoped,
            absent,
            tripwire: roles.tripwire,
            template: roles.template,
        }),
        present_source: source.into(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
        expect: args.expectations()?,
    })
}
