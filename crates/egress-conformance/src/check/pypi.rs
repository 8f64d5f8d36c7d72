//! `check` of a PyPI mirror: the plan of a run against any simple-API index URL.
//!
//! The snapshot's SNAPSHOT.json (beside a local `--manifest`, or at the
//! mirror's well-known path) names what to probe: without `--present`, the
//! project the controls take (else the root index's first); the conformance
//! kit's projects (`egress-kit-*`) and any sdist, for P4; and, without
//! `--absent`, widely used projects it does not hold.

use super::args::CheckArgs;
use crate::Failure;
use egress_model::{ProjectName, Url};
use egress_suite::pypi::held::{kit, Held};
use egress_suite::pypi::{self, PresentSpec};
use egress_suite::{ManifestSource, Packages, Plan};

/// The index URL the suite probes: a bare origin means `/simple/`, and the
/// path always ends in `/` so that project pages join under it.
pub fn index_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/simple/")
}

pub fn plan(
    args: &CheckArgs,
    index: &Url,
    client: &egress_transcript::Client,
    manifest: ManifestSource,
    allowed_signers: bool,
    mutable: Option<&ProjectName>,
) -> Result<Plan<Packages>, Failure> {
    let given: Vec<PresentSpec> = args
        .present
        .iter()
        .map(|p| {
            p.parse()
                .map_err(|e| Failure::usage(format!("--present {p}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let held = super::snapshot_doc::snapshot_doc(&manifest, index, client)
        .map(|d| Held::of(&d, index.path()))
        .unwrap_or_default();
    let (present, present_source) = if !given.is_empty() {
        (given, "--present")
    } else if let Some(name) = held.present() {
        let spec = |name: ProjectName| PresentSpec {
            name,
            version: None,
        };
        match mutable.filter(|m| held.holds(m) && **m != name) {
            // The controls and the mutations take the project the canary
            // serves too; the lab's own follows.
            Some(m) => (
                vec![spec(m.clone()), spec(name)],
                super::snapshot_doc::MUTABLE_SOURCE,
            ),
            None => (vec![spec(name)], "SNAPSHOT.json"),
        }
    } else {
        (Vec::new(), "root index")
    };
    let absent = if args.absent.is_empty() {
        pypi::default_absent(|n| held.holds(n))
    } else {
        args.absent
            .iter()
            .map(|a| ProjectName::new(a).map_err(|e| Failure::usage(format!("--absent: {e}"))))
            .collect::<Result<_, _>>()?
    };
    Ok(Plan {
        index_url: index.to_string(),
        packages: Packages::Pypi(pypi::Packages {
            present,
            absent,
            sdist_only: held.sdist_only(),
            template: held.kit(kit::TEMPLATE),
            tripwire: held.kit(kit::TRIPWIRE),
        }),
        present_source: present_source.to_string(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
        expect: args.expectations()?,
    })
}
