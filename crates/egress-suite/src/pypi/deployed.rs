//! `check` of a PyPI mirror: the plan of a run against any simple-API index URL.
//!
//! The snapshot's SNAPSHOT.json (beside a local `--manifest`, or at the
//! mirror's well-known path) names what to probe: without `--present`, the
//! project the controls take (else the root index's first); the conformance
//! kit's projects (`egress-kit-*`) and any sdist, for P4; and, without
//! `--absent`, widely used projects it does not hold.

use super::held::{kit, Held};
use super::PresentSpec;
use crate::deployed::{snapshot_doc, Given, PlanError, MUTABLE_SOURCE};
use crate::{Packages, Plan, UpstreamPlan};
use egress_model::{ProjectName, Url};

pub fn plan(
    given: Given<'_>,
    index: &Url,
    client: &egress_transcript::Client,
) -> Result<Plan<Packages>, PlanError> {
    let named: Vec<PresentSpec> = given
        .present
        .iter()
        .map(|p| {
            p.parse()
                .map_err(|e| PlanError::Usage(format!("--present {p}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let held = snapshot_doc(&given.manifest, index, client)
        .map(|d| Held::of(&d, index.path()))
        .unwrap_or_default();
    let (present, present_source) = if !named.is_empty() {
        (named, "--present")
    } else if let Some(name) = held.present() {
        let spec = |name: ProjectName| PresentSpec {
            name,
            version: None,
        };
        match given.mutable.filter(|m| held.holds(m) && **m != name) {
            // The controls and the mutations take the project the canary
            // serves too; the lab's own follows.
            Some(m) => (vec![spec(m.clone()), spec(name)], MUTABLE_SOURCE),
            None => (vec![spec(name)], "SNAPSHOT.json"),
        }
    } else {
        (Vec::new(), "root index")
    };
    let absent = if given.absent.is_empty() {
        super::default_absent(|n| held.holds(n))
    } else {
        given
            .absent
            .iter()
            .map(|a| ProjectName::new(a).map_err(|e| PlanError::Usage(format!("--absent: {e}"))))
            .collect::<Result<_, _>>()?
    };
    Ok(Plan {
        index_url: index.to_string(),
        packages: Packages::Pypi(super::Packages {
            present,
            absent,
            sdist_only: held.sdist_only(),
            template: held.kit(kit::TEMPLATE),
            tripwire: held.kit(kit::TRIPWIRE),
        }),
        present_source: present_source.to_string(),
        upstream: None,
        manifest: given.manifest,
        allowed_signers: given.allowed_signers,
        destructive: given.destructive,
        expect: given.expect,
    })
}

impl super::Packages {
    /// What a standalone canary's plan fills in (see `Plan::with_canary`).
    pub(crate) fn take_canary(&mut self, up: &UpstreamPlan, default_absent: bool) {
        self.sdist_only.get_or_insert_with(|| up.tripwire.clone());
        self.template.get_or_insert_with(|| up.template.clone());
        if default_absent {
            self.absent = vec![up.upstream_only.clone()];
        }
    }
}
