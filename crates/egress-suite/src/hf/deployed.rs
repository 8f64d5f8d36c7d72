//! What a deployed Hub check's plan takes from a standalone canary's.

use super::plan::{Packages, RepoRef};
use egress_model::UpstreamPlan;

impl Packages {
    /// The kit's repositories as present (the one the canary moves first),
    /// the commit and file the kit leaves out and, by default, the
    /// upstream-only repository as absent.
    pub(crate) fn take_canary(&mut self, up: &UpstreamPlan, default_absent: bool) {
        let Some(hf) = &up.hf else { return };
        self.present.retain(|p| p != &hf.present);
        self.present.insert(0, hf.present.clone());
        for p in &hf.also_present {
            if !self.present.contains(p) {
                self.present.push(p.clone());
            }
        }
        self.absent_revision
            .get_or_insert_with(|| hf.absent_revision.clone());
        self.absent_file
            .get_or_insert_with(|| hf.absent_file.clone());
        if self.bad_digest.is_none() {
            self.bad_digest.clone_from(&hf.bad_digest);
        }
        if default_absent {
            self.absent = vec![hf.upstream_only.clone()];
        }
    }
}

fn repos(flag: &str, raw: &[String]) -> Result<Vec<String>, crate::deployed::PlanError> {
    raw.iter()
        .map(|n| {
            RepoRef::parse(n)
                .map(|r| r.to_string())
                .map_err(|e| crate::deployed::PlanError::Usage(format!("{flag}: {e}")))
        })
        .collect()
}

/// `check --protocol hf URL`'s plan: the endpoint `endpoint` (what a
/// sandbox sets as `HF_ENDPOINT`, e.g. `http://h/hf`), the repositories
/// `--present` names (`org/name` for a model, `datasets/org/name`; the
/// first is the controls') and `--absent`. With `--canary`, the kit's
/// repositories are taken from the canary's plan instead.
pub fn plan(
    given: crate::deployed::Given<'_>,
    endpoint: &egress_model::Url,
    canary: bool,
) -> Result<crate::Plan<crate::Packages>, crate::deployed::PlanError> {
    let present = repos("--present", given.present)?;
    if present.is_empty() && !canary {
        return Err(crate::deployed::PlanError::Usage(
            "--present: name a repository the snapshot holds (org/name, or datasets/org/name); the Hub has no listing a mirror must serve"
                .into(),
        ));
    }
    Ok(crate::Plan {
        index_url: endpoint.to_string(),
        packages: crate::Packages::Hf(Packages {
            present,
            absent: repos("--absent", given.absent)?,
            absent_revision: None,
            absent_file: None,
            bad_digest: None,
        }),
        present_source: "--present".into(),
        upstream: None,
        manifest: given.manifest,
        allowed_signers: given.allowed_signers,
        destructive: given.destructive,
        expect: given.expect,
    })
}
