//! `check --protocol npm`: the plan of an npm run against any registry URL.
//!
//! Without `--present`, the packages to probe come from the snapshot's
//! `SNAPSHOT.json` (beside a local `--manifest`, or at the mirror's
//! well-known path): its abbreviated packuments name them. The controls then
//! show whether the mirror really serves them, so a mirror cannot pass by
//! declaring nothing.

use super::args::CheckArgs;
use crate::Failure;
use egress_model::{NpmName, Url};
use egress_snapshot::{SnapshotDoc, NPM_ABBREVIATED};
use egress_suite::npm::{self, DEFAULT_NPM_ABSENT};
use egress_suite::{ManifestSource, Packages, Plan};

/// The registry URL the suite probes: a bare origin means `/`, and the path
/// always ends in `/` so that packuments join under it.
pub fn registry_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/")
}

/// The packages whose abbreviated packuments a snapshot serves.
pub fn packages_in(doc: &SnapshotDoc) -> Vec<NpmName> {
    let mut names: Vec<NpmName> = doc
        .served
        .iter()
        .filter(|e| e.content_type == NPM_ABBREVIATED)
        .filter_map(|e| {
            let raw = e
                .path
                .strip_prefix('/')?
                .replacen("%2f", "/", 1)
                .replacen("%2F", "/", 1);
            NpmName::new(&raw).ok()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// SNAPSHOT.json as the plan's manifest source gives it, if it can be read.
fn snapshot_doc(
    manifest: &ManifestSource,
    registry: &Url,
    client: &egress_transcript::Client,
) -> Option<SnapshotDoc> {
    let bytes = match manifest {
        ManifestSource::File(m) => {
            std::fs::read(std::path::Path::new(m).with_file_name("SNAPSHOT.json")).ok()?
        }
        ManifestSource::WellKnown => {
            let path = registry
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
) -> Result<Plan<Packages>, Failure> {
    let given = names("--present", &args.present)?;
    let (present, source) = if !given.is_empty() {
        (given, "--present")
    } else {
        let found = snapshot_doc(&manifest, registry, client)
            .map(|d| packages_in(&d))
            .unwrap_or_default();
        (found, "SNAPSHOT.json")
    };
    let scoped = present.iter().find(|n| n.scope().is_some()).cloned();
    // The controls take the first package: an unscoped one when there is
    // one, so that the scoped control tests a second route shape.
    let mut ordered: Vec<NpmName> = present
        .iter()
        .filter(|n| n.scope().is_none())
        .cloned()
        .collect();
    if ordered.is_empty() {
        ordered = present;
    }
    ordered.truncate(3);
    let absent = if args.absent.is_empty() {
        names(
            "--absent",
            &DEFAULT_NPM_ABSENT
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )?
    } else {
        names("--absent", &args.absent)?
    };
    Ok(Plan {
        index_url: registry.to_string(),
        packages: Packages::Npm(npm::Packages {
            present: ordered,
            scoped,
            absent,
            tripwire: None,
            template: None,
        }),
        present_source: source.into(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
    })
}
