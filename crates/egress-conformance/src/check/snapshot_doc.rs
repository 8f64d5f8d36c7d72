//! The snapshot's `SNAPSHOT.json`, from which `check` chooses what to
//! probe when no `--present` is given: beside a local `--manifest`, or at
//! the mirror's well-known path. The controls then show whether the mirror
//! really serves what it declares, so a mirror cannot pass by declaring
//! nothing.

use egress_model::Url;
use egress_snapshot::SnapshotDoc;
use egress_suite::ManifestSource;

/// The plan's `present_source` when the first present package is the one
/// `--canary`'s plan names and the snapshot holds too (the conformance
/// kit's present package, for the standalone canary): the controls and
/// the canary's mutations act on it; the lab's own follow.
pub(super) const MUTABLE_SOURCE: &str = "SNAPSHOT.json, the first one --canary serves too";

/// SNAPSHOT.json as the plan's manifest source gives it, if it can be read.
pub(super) fn snapshot_doc(
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
