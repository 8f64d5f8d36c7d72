//! The plan of a deployed check (`egress-conformance check URL`): what the
//! command line gave, read into each protocol's packages by its
//! `deployed.rs` (`pypi::deployed`, `npm::deployed`, `apt::deployed`),
//! and what is common to them: the snapshot's `SNAPSHOT.json`, from which
//! a check chooses what to probe when no `--present` is given (beside a
//! local `--manifest`, or at the mirror's well-known path). The controls
//! then show whether the mirror really serves what it declares, so a
//! mirror cannot pass by declaring nothing.

use crate::{Expect, ManifestSource, Packages, Plan, UpstreamPlan};
use egress_model::{ProjectName, Url};
use egress_snapshot::SnapshotDoc;

/// What `check` was given, common to every protocol.
pub struct Given<'a> {
    /// `--present`, as given.
    pub present: &'a [String],
    /// `--absent`, as given.
    pub absent: &'a [String],
    pub manifest: ManifestSource,
    /// Whether `--allowed-signers` was given.
    pub allowed_signers: bool,
    /// `--destructive`.
    pub destructive: bool,
    pub expect: Expect,
    /// The package the canary's mutations act on, with `--canary`.
    pub mutable: Option<&'a ProjectName>,
}

/// Why no plan was made: a flag's value (usage) or a file it names (input).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Input(String),
}

/// The plan's `present_source` when the first present package is the one
/// `--canary`'s plan names and the snapshot holds too (the conformance
/// kit's present package, for the standalone canary): the controls and
/// the canary's mutations act on it; the lab's own follow.
pub const MUTABLE_SOURCE: &str = "SNAPSHOT.json, the first one --canary serves too";

/// SNAPSHOT.json as the plan's manifest source gives it, if it can be read.
pub fn snapshot_doc(
    manifest: &ManifestSource,
    base: &Url,
    client: &egress_transcript::Client,
) -> Option<SnapshotDoc> {
    let bytes = match manifest {
        ManifestSource::File(m) => {
            std::fs::read(std::path::Path::new(m).with_file_name("SNAPSHOT.json")).ok()?
        }
        ManifestSource::WellKnown => {
            let path = base
                .with_path(egress_snapshot::well_known::SNAPSHOT_JSON)
                .path_and_query()
                .to_string();
            let ex = client.get("SNAPSHOT.json (to choose packages)", &path, None);
            ex.response
                .as_ref()
                .filter(|r| r.is_success())
                .and_then(|r| r.full_body())?
                .to_vec()
        }
        ManifestSource::Url(_) => return None,
    };
    SnapshotDoc::parse(&bytes).ok()
}

/// A standalone canary's plan names a package its protocol cannot name.
#[derive(Debug, thiserror::Error)]
#[error("its plan names {name}: {why}")]
pub struct CanaryPlanError {
    pub name: String,
    pub why: String,
}

impl Plan<Packages> {
    /// The plan with a standalone canary as its controlled upstream: the
    /// packages P4 needs are the canary's unless the snapshot named its
    /// own, and with `default_absent` (no `--absent`) the absent ones are
    /// the canary's upstream-only packages (the ones it serves that a
    /// snapshot must not hold), as in the testbed.
    pub fn with_canary(
        &mut self,
        up: UpstreamPlan,
        default_absent: bool,
    ) -> Result<(), CanaryPlanError> {
        self.packages.take_canary(&up, default_absent)?;
        self.upstream = Some(up);
        Ok(())
    }
}
