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

use super::held::{packages_in, roles};
use crate::deployed::{snapshot_doc, CanaryPlanError, Given, PlanError, MUTABLE_SOURCE};
use crate::{Packages, Plan, UpstreamPlan};
use egress_model::{NpmName, ProjectName, Url};

fn names(flag: &str, raw: &[String]) -> Result<Vec<NpmName>, PlanError> {
    raw.iter()
        .map(|n| NpmName::new(n).map_err(|e| PlanError::Usage(format!("{flag}: {e}"))))
        .collect()
}

pub fn plan(
    given: Given<'_>,
    registry: &Url,
    client: &egress_transcript::Client,
) -> Result<Plan<Packages>, PlanError> {
    let named = names("--present", given.present)?;
    let source = if named.is_empty() {
        "SNAPSHOT.json"
    } else {
        "--present"
    };
    let held = snapshot_doc(&given.manifest, registry, client)
        .map(|d| packages_in(&d))
        .unwrap_or_default();
    let roles = roles(named, &held, given.mutable.map(|m| m.as_str()));
    let source = if roles.mutable_first {
        MUTABLE_SOURCE
    } else {
        source
    };
    let absent = if given.absent.is_empty() {
        super::default_absent(|n| held.contains(n))
    } else {
        names("--absent", given.absent)?
    };
    Ok(Plan {
        index_url: registry.to_string(),
        packages: Packages::Npm(super::Packages {
            present: roles.present,
            scoped: roles.scoped,
            absent,
            tripwire: roles.tripwire,
            template: roles.template,
        }),
        present_source: source.into(),
        upstream: None,
        manifest: given.manifest,
        allowed_signers: given.allowed_signers,
        destructive: given.destructive,
        expect: given.expect,
    })
}

impl super::Packages {
    /// What a standalone canary's plan fills in (see `Plan::with_canary`).
    pub(crate) fn take_canary(
        &mut self,
        up: &UpstreamPlan,
        default_absent: bool,
    ) -> Result<(), CanaryPlanError> {
        let npm = |n: &ProjectName| {
            NpmName::new(n.as_str()).map_err(|e| CanaryPlanError {
                name: n.to_string(),
                why: e.to_string(),
            })
        };
        if self.tripwire.is_none() {
            self.tripwire = Some(npm(&up.tripwire)?);
        }
        if self.template.is_none() {
            self.template = Some(npm(&up.template)?);
        }
        if default_absent {
            self.absent = std::iter::once(&up.upstream_only)
                .chain(&up.offsite)
                .map(npm)
                .collect::<Result<_, _>>()?;
        }
        Ok(())
    }
}
