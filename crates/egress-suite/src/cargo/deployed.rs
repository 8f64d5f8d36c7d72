//! What a deployed cargo check's plan takes from a standalone canary's.

use super::plan::Packages;
use egress_model::UpstreamPlan;

impl Packages {
    /// The template crate, the crate held at a yanked version (the kit's
    /// `Cargo.lock` pins both) and, by default, the upstream-only one as
    /// absent.
    pub(crate) fn take_canary(&mut self, up: &UpstreamPlan, default_absent: bool) {
        self.template.get_or_insert_with(|| up.template.to_string());
        if let (None, Some(y)) = (&self.yanked, &up.yanked) {
            self.yanked = Some(y.to_string());
        }
        if default_absent {
            self.absent = vec![up.upstream_only.to_string()];
        }
    }
}

fn names(flag: &str, raw: &[String]) -> Result<Vec<String>, crate::deployed::PlanError> {
    raw.iter()
        .map(|n| {
            egress_model::CrateName::new(n)
                .map(|c| c.as_str().to_string())
                .map_err(|e| crate::deployed::PlanError::Usage(format!("{flag}: {e}")))
        })
        .collect()
}

/// `check --protocol cargo URL`'s plan: the sparse index root `index`
/// (`http://h/cargo/index/`), the crates `--present` names (the first is
/// the controls'; a crate with a canary's mutations first) and `--absent`.
pub fn plan(
    given: crate::deployed::Given<'_>,
    index: &egress_model::Url,
) -> Result<crate::Plan<crate::Packages>, crate::deployed::PlanError> {
    let mut present = names("--present", given.present)?;
    if let Some(m) = given.mutable {
        present.retain(|p| p != m.as_str());
        present.insert(0, m.as_str().to_string());
    }
    if present.is_empty() {
        return Err(crate::deployed::PlanError::Usage(
            "--present: name a crate the snapshot holds (cargo has no listing of every crate)"
                .into(),
        ));
    }
    Ok(crate::Plan {
        index_url: index.to_string(),
        packages: crate::Packages::Cargo(Packages {
            present,
            absent: names("--absent", given.absent)?,
            template: None,
            yanked: None,
        }),
        present_source: "--present".into(),
        upstream: None,
        manifest: given.manifest,
        allowed_signers: given.allowed_signers,
        destructive: given.destructive,
        expect: given.expect,
    })
}
