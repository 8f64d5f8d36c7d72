//! `snapshot build --base`: a layer on a verified snapshot (see
//! `egress_snapshot::chain` for what a layer keeps).

use crate::error::BuildError;
use egress_signing::{AllowedSigners, SigningKey, SNAPSHOT_NAMESPACE};
use egress_snapshot::verify::SnapshotDir;
use egress_snapshot::{chain::ChainProblem, SnapshotBuilder, StoredSnapshot};
use std::fs;
use std::path::Path;

/// Verifies `dir` (every blob, the signature, the chain below it) against
/// `signers`, or else against `key`'s own public key, and opens it.
pub(crate) fn open_base(
    dir: &Path,
    signers: Option<&Path>,
    key: &SigningKey,
    principal: &str,
    jobs: usize,
) -> Result<StoredSnapshot, BuildError> {
    let unverified = |why: String| BuildError::BaseUnverified {
        path: dir.to_path_buf(),
        why,
    };
    let allowed = match signers {
        Some(path) => {
            let text = fs::read_to_string(path).map_err(|cause| BuildError::Read {
                what: "--base-allowed-signers",
                path: path.to_path_buf(),
                cause,
            })?;
            AllowedSigners::parse(&text).map_err(|e| {
                BuildError::Usage(format!("--base-allowed-signers {}: {e}", path.display()))
            })?
        }
        None => AllowedSigners::parse(&AllowedSigners::line_for_namespace(
            principal,
            &key.public(),
            SNAPSHOT_NAMESPACE,
        ))
        .map_err(|e| BuildError::Usage(format!("--sign-key: {e}")))?,
    };
    let v = SnapshotDir::open(dir)
        .and_then(|d| d.verify(Some(&allowed), jobs.clamp(1, 64)))
        .map_err(|e| unverified(e.to_string()))?;
    if let Some(problem) = v.chain {
        let why = problem.to_string();
        return Err(match problem {
            ChainProblem::Signature { .. } => unverified(why),
            ChainProblem::Gap { .. } | ChainProblem::Forked { .. } => BuildError::ChainBroken {
                path: dir.to_path_buf(),
                why,
            },
        });
    }
    if let Some(first) = v.problems.first() {
        let more = match v.problems.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more: run snapshot verify)"),
        };
        let hint = if signers.is_none() {
            "; a base signed by another key needs --base-allowed-signers"
        } else {
            ""
        };
        return Err(unverified(format!("does not verify: {first}{more}{hint}")));
    }
    StoredSnapshot::open(dir).map_err(|e| unverified(e.to_string()))
}

/// Takes the base's view into `builder`, then the removals.
pub(crate) fn stage_base(
    builder: &mut SnapshotBuilder,
    base: &StoredSnapshot,
    remove: &[String],
    report: &mut impl FnMut(&str),
) -> Result<(), BuildError> {
    let s = builder.base(base).map_err(BuildError::Rejected)?;
    report(&format!(
        "base {}: {} PyPI projects ({} files), {} npm packages ({} versions), {} apt files; this is layer {} of the chain",
        base.id(),
        s.pypi_projects,
        s.pypi_files,
        s.npm_packages,
        s.npm_versions,
        s.apt_files,
        s.depth
    ));
    for spec in remove {
        let t = builder.remove(spec).map_err(BuildError::Rejected)?;
        report(&format!(
            "removed {} {} {}: {} file(s), recorded as a signed tombstone",
            t.protocol,
            t.name,
            t.version,
            t.paths.len()
        ));
    }
    Ok(())
}
