//! The built-in PyPI pair: (A) the reference mirror serving a snapshot
//! built from the canary's files (everything but the upstream-only
//! project), signed with the demonstration key; (B) the caching proxy.
//! Both runs use the same plan shape, so every difference in the matrix is
//! the targets'.

use crate::builtin::{client, demo_attestor, demo_key, demo_signers, BuiltinError, DEMO_PRINCIPAL};
use crate::pypi::canary::Canary;
use crate::pypi::proxy::CachingProxy;
use crate::relay::SLOW_FETCH;
use egress_model::{Upstream, Url};
use egress_suite::pypi::PresentSpec;
use egress_suite::{pypi, ManifestSource, Packages, Plan, Report, Target};
use std::sync::Arc;

/// The newest file of the present project: never the one the file control fetches.
const SLOW_FILE: &str = "ec_present-1.1.0-py3-none-any.whl";

pub const NAME_A: &str = "reference (A)";
pub const NAME_B: &str = "caching proxy (B)";

pub fn plan_for(index: &Url, upstream: &dyn Upstream, signers: bool) -> Plan<Packages> {
    let up = upstream.plan();
    Plan {
        index_url: index.to_string(),
        packages: Packages::Pypi(pypi::Packages {
            present: vec![PresentSpec {
                name: up.present.clone(),
                version: None,
            }],
            absent: vec![up.upstream_only.clone()],
            sdist_only: Some(up.tripwire.clone()),
            tripwire: None,
            template: Some(up.template.clone()),
        }),
        present_source: "built-in".into(),
        upstream: Some(up),
        manifest: ManifestSource::WellKnown,
        allowed_signers: signers,
        // The built-in run sends every vendor route.
        destructive: true,
        expect: Default::default(),
    }
}

/// (A)'s snapshot: every canary file but the upstream-only project's,
/// signed with the demonstration key.
pub fn demo_snapshot(canary: &Canary) -> Result<egress_snapshot::Snapshot, BuiltinError> {
    demo_snapshot_at(canary, "2026-01-01T00:00:00Z")
}

/// (A)'s snapshot as built at another time `created`: the same content
/// under another snapshot ID (a mirror started on another snapshot).
///
/// Each file carries the upload time the canary's JSON API gives it, as
/// `snapshot build` carries a time over, and the snapshot records
/// [`DEMO_CUTOFF`] as its cutoff: (A) serves those times on its JSON pages
/// and `SNAPSHOT.json` signs them, which P5.cutoff holds it to.
pub fn demo_snapshot_at(
    canary: &Canary,
    created: &str,
) -> Result<egress_snapshot::Snapshot, BuiltinError> {
    let dists = canary.dists(false);
    let times = upload_times(canary, dists.iter().map(|(name, _)| name))?;
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    builder.selection(egress_snapshot::Selection {
        exclude_newer: Some(DEMO_CUTOFF.to_string()),
        ..Default::default()
    });
    for (_, dist) in dists {
        let time = times.get(&dist.filename).cloned();
        builder.add_dist_with(&dist.filename, dist.bytes, None, time)?;
    }
    Ok(builder.build(created, Some(&demo_key()), DEMO_PRINCIPAL)?)
}

/// The cutoff (A)'s snapshot records: after every upload of the canary's
/// own files (2025-01-01 plus a serial of seconds), so nothing (A) serves
/// is newer.
pub const DEMO_CUTOFF: &str = "2025-06-01T00:00:00Z";

/// A file as the canary's JSON API lists it, as far as its time goes.
#[derive(serde::Deserialize)]
struct ApiFile {
    filename: String,
    upload_time_iso_8601: Option<String>,
}

/// The canary's JSON API document of a project, as far as its times go.
#[derive(serde::Deserialize)]
struct ApiProject {
    releases: std::collections::BTreeMap<String, Vec<ApiFile>>,
}

/// Each file's upload time (`upload_time_iso_8601`) by filename, from the
/// canary's JSON API (`/pypi/<name>/json`) for each project named. Asked
/// before a run begins, so no run's upstream log shows it.
fn upload_times<'a>(
    canary: &Canary,
    projects: impl Iterator<Item = &'a egress_model::ProjectName>,
) -> Result<std::collections::BTreeMap<String, String>, BuiltinError> {
    use serde::de::Error as _;
    let base = Url::parse(&canary.base_url())?;
    let api = client(&base)?;
    let mut names: Vec<&egress_model::ProjectName> = projects.collect();
    names.sort();
    names.dedup();
    let mut times = std::collections::BTreeMap::new();
    for name in names {
        let path = format!("/pypi/{name}/json");
        let ex = api.get("upload times", &path, Some("application/json"));
        let body = ex
            .response
            .as_ref()
            .filter(|r| r.status == Some(200))
            .and_then(|r| r.full_body())
            .ok_or_else(|| {
                serde_json::Error::custom(format!(
                    "the canary's {path} was not served: {}",
                    ex.summary()
                ))
            })?;
        let project: ApiProject = serde_json::from_slice(body)?;
        for file in project.releases.into_values().flatten() {
            if let Some(t) = file.upload_time_iso_8601 {
                times.insert(file.filename, t);
            }
        }
    }
    Ok(times)
}

/// Runs the suite against `index` with `canary` as the controlled upstream
/// and the demonstration key as the trusted signer, expecting (A)'s
/// snapshot (`--expect-snapshot`).
pub fn run_against(name: &str, index: &Url, canary: &Canary) -> Result<Report, BuiltinError> {
    let mut plan = plan_for(index, canary, true);
    plan.expect.snapshot = Some(demo_snapshot(canary)?.id());
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(index)?,
        plan,
        upstream: Some(canary),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_canary() -> Result<Canary, BuiltinError> {
    Canary::start().map_err(BuiltinError::start("the canary upstream"))
}

pub fn index_of(base_url: &str) -> Result<Url, BuiltinError> {
    Ok(Url::parse(&format!("{base_url}/simple/"))?)
}

/// Builds (A)'s snapshot from the canary's files, serves it, runs the suite.
pub fn run_reference() -> Result<Report, BuiltinError> {
    let canary = start_canary()?;
    let snapshot = Arc::new(demo_snapshot(&canary)?);
    snapshot.check()?;
    let mirror =
        egress_mirror::Mirror::new(Arc::clone(&snapshot)).attest(demo_attestor(snapshot.id())?);
    let server = egress_mirror::serve_mirror_with(
        mirror,
        "127.0.0.1:0",
        crate::builtin::reference_server_limits(),
    )
    .map_err(BuiltinError::start("the reference mirror"))?;
    run_against(NAME_A, &index_of(&server.base_url())?, &canary)
}

/// Starts the caching-proxy fixture in front of a fresh canary, runs the suite.
pub fn run_proxy() -> Result<Report, BuiltinError> {
    let canary = start_canary()?;
    // One file is slow upstream, so the proxy hands the client over to the
    // upstream for it, as pull-through caches do on a slow fetch.
    canary.set_slow(SLOW_FILE, SLOW_FETCH * 2);
    let up_index = Url::parse(&canary.index_url())?;
    let proxy =
        CachingProxy::start(up_index).map_err(BuiltinError::start("the caching proxy fixture"))?;
    run_against(NAME_B, &index_of(&proxy.base_url())?, &canary)
}

/// Runs both references side by side.
pub fn run_both() -> Result<(Report, Report), BuiltinError> {
    let b = std::thread::spawn(run_proxy);
    let a = run_reference()?;
    let b = b.join().map_err(|_| BuiltinError::Panicked {
        what: "the caching-proxy run".into(),
    })??;
    Ok((a, b))
}
