//! `snapshot flatten`: verify a layer's chain, then write its view as one
//! snapshot without a parent (`egress_snapshot::flatten` makes it; this
//! file verifies, stages beside `out` and writes atomically).

use crate::DEFAULT_PRINCIPAL;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, SigningKey, SNAPSHOT_NAMESPACE};
use egress_snapshot::chain::ChainProblem;
use egress_snapshot::verify::{SnapshotDir, VerifyError};
use egress_snapshot::{Snapshot, SnapshotError, StoredSnapshot};
use std::fs;
use std::path::{Path, PathBuf};

/// Why `snapshot flatten` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum FlattenError {
    /// The signers line made from `--sign-key` does not parse.
    #[error("--sign-key: {0}")]
    SignKey(String),
    /// The snapshot directory could not be read to verify it.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// It does not verify against the signers (its first problem).
    #[error("{}: does not verify: {first}", .dir.display())]
    Unverified { dir: PathBuf, first: String },
    /// Its chain has a gap or a fork (its first problem).
    #[error("{}: does not verify: {first}", .dir.display())]
    ChainBroken { dir: PathBuf, first: String },
    /// It verified but could not be opened to read its view.
    #[error("{}: {cause}", .dir.display())]
    Open { dir: PathBuf, cause: SnapshotError },
    /// `out` has no directory name.
    #[error("--out: give a directory name")]
    OutName,
    /// The flattened snapshot could not be made or written.
    #[error(transparent)]
    Write(SnapshotError),
}

/// What was written.
pub struct Flattened {
    pub snapshot: Snapshot,
    /// The id of the snapshot whose view it holds.
    pub from: Sha256Digest,
}

/// The principal `key` signs as: its comment, else [`DEFAULT_PRINCIPAL`].
fn principal_of(key: &SigningKey) -> String {
    Some(key.comment().trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| DEFAULT_PRINCIPAL.to_string())
}

/// Verifies `dir` and its chain against `signers` (by default `key`'s own
/// public key), then writes its view to `out` (atomically) as one snapshot
/// without a parent, signed by `key`, created now.
pub fn flatten(
    dir: &Path,
    out: &Path,
    key: &SigningKey,
    signers: Option<AllowedSigners>,
) -> Result<Flattened, FlattenError> {
    let principal = principal_of(key);
    let signers = match signers {
        Some(s) => s,
        None => AllowedSigners::parse(&AllowedSigners::line_for_namespace(
            &principal,
            &key.public(),
            SNAPSHOT_NAMESPACE,
        ))
        .map_err(|e| FlattenError::SignKey(e.to_string()))?,
    };
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let v = SnapshotDir::open(dir)?.verify(Some(&signers), jobs)?;
    if !v.ok() {
        let first = v.problems.first().cloned().unwrap_or_default();
        let dir = dir.to_path_buf();
        return Err(match v.chain {
            Some(ChainProblem::Gap { .. } | ChainProblem::Forked { .. }) => {
                FlattenError::ChainBroken { dir, first }
            }
            _ => FlattenError::Unverified { dir, first },
        });
    }
    let store = StoredSnapshot::open(dir).map_err(|cause| FlattenError::Open {
        dir: dir.to_path_buf(),
        cause,
    })?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or(FlattenError::OutName)?;
    let staging = out.with_file_name(format!(".{name}.flatten-{}", std::process::id()));
    let created = egress_model::Timestamp::now().to_string();
    let written = egress_snapshot::flatten(&store, &staging, &created, key, &principal).and_then(
        |snapshot| {
            snapshot.write_dir(out)?;
            Ok(snapshot)
        },
    );
    let _ = fs::remove_dir_all(&staging);
    let snapshot = written.map_err(FlattenError::Write)?;
    Ok(Flattened {
        snapshot,
        from: store.id(),
    })
}
