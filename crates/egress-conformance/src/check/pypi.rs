//! `check` of a PyPI mirror: the plan of a run against any simple-API index URL.
//!
//! Without `--present`, the project to probe comes from the manifest's
//! SNAPSHOT.json (beside a local `--manifest`), else from the root index.

use super::args::CheckArgs;
use crate::Failure;
use egress_model::{ProjectName, Url};
use egress_suite::pypi::{self, PresentSpec, DEFAULT_ABSENT};
use egress_suite::{ManifestSource, Packages, Plan};

/// The index URL the suite probes: a bare origin means `/simple/`, and the
/// path always ends in `/` so that project pages join under it.
pub fn index_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/simple/")
}

pub fn plan(
    args: &CheckArgs,
    index: &Url,
    manifest: ManifestSource,
    allowed_signers: bool,
) -> Result<Plan<Packages>, Failure> {
    let given: Vec<PresentSpec> = args
        .present
        .iter()
        .map(|p| {
            p.parse()
                .map_err(|e| Failure::usage(format!("--present {p}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let (present, present_source) = if !given.is_empty() {
        (given, "--present")
    } else if let ManifestSource::File(m) = &manifest {
        (
            present_from_manifest(std::path::Path::new(m), index.path()),
            "manifest",
        )
    } else {
        (Vec::new(), "root index")
    };
    let absent = if args.absent.is_empty() {
        DEFAULT_ABSENT
            .iter()
            .filter_map(|n| ProjectName::new(n).ok())
            .collect()
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
            sdist_only: None,
            template: None,
        }),
        present_source: present_source.to_string(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
    })
}

/// Present projects listed in a local manifest's SNAPSHOT.json, if any.
fn present_from_manifest(manifest: &std::path::Path, index_path: &str) -> Vec<PresentSpec> {
    let Ok(bytes) = std::fs::read(manifest.with_file_name("SNAPSHOT.json")) else {
        return Vec::new();
    };
    let Ok(doc) = egress_snapshot::SnapshotDoc::parse(&bytes) else {
        return Vec::new();
    };
    let mut names: Vec<ProjectName> = doc
        .paths()
        .filter_map(|p| {
            p.strip_prefix(index_path)?
                .strip_suffix('/')
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .and_then(|n| ProjectName::new(n).ok())
        })
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .take(1)
        .map(|name| PresentSpec {
            name,
            version: None,
        })
        .collect()
}
