//! The built-in npm pair: (A) the reference mirror serving an npm snapshot
//! of the npm canary's tarballs, signed with the demonstration key; (B)
//! the npm caching proxy.

use crate::builtin::{
    client, demo_attestor, demo_key, demo_signers, BuiltinError, LateMirror, DEMO_PRINCIPAL,
};
use crate::npm::canary::{self as npm_canary, NpmCanary};
use crate::npm::proxy::NpmCachingProxy;
use crate::relay::SLOW_FETCH;
use egress_model::{NpmName, Upstream, Url};
use egress_suite::{npm, ManifestSource, Packages, Plan, Report, Target};
use std::sync::Arc;

/// The newest tarball of the present npm package: never the one the
/// tarball control fetches.
const NPM_SLOW_TARBALL: &str = "ec-present-1.1.0.tgz";
pub const NPM_NAME_A: &str = "npm reference (A)";
pub const NPM_NAME_B: &str = "npm caching proxy (B)";

fn npm_name(s: &str) -> Result<NpmName, BuiltinError> {
    Ok(NpmName::new(s)?)
}

/// The plan of an npm run against `registry` (ending in `/`) with the npm
/// canary as the controlled upstream.
pub fn npm_plan_for(
    registry: &Url,
    upstream: &NpmCanary,
    signers: bool,
) -> Result<Plan<Packages>, BuiltinError> {
    Ok(Plan {
        index_url: registry.to_string(),
        present_source: "built-in".into(),
        upstream: Some(upstream.plan()),
        manifest: ManifestSource::WellKnown,
        allowed_signers: signers,
        // The built-in run sends every vendor route.
        destructive: true,
        expect: Default::default(),
        packages: Packages::Npm(npm::Packages {
            present: vec![npm_name(npm_canary::PRESENT)?],
            scoped: Some(npm_name(npm_canary::SCOPED)?),
            absent: vec![
                npm_name(npm_canary::UPSTREAM_ONLY)?,
                npm_name(npm_canary::OFFSITE)?,
            ],
            tripwire: Some(npm_name(npm_canary::TRIPWIRE)?),
            template: Some(npm_name(npm_canary::TEMPLATE)?),
        }),
    })
}

/// (A)'s npm snapshot: every tarball the canary serves for the snapshot's
/// packages, with tarball links on `registry`, signed with the demonstration key.
pub fn demo_npm_snapshot(
    canary: &NpmCanary,
    registry: &str,
) -> Result<egress_snapshot::Snapshot, BuiltinError> {
    demo_npm_snapshot_at(canary, registry, "2026-01-01T00:00:00Z")
}

/// (A)'s npm snapshot as built at another time `created`: the same content
/// under another snapshot ID (a mirror started on another snapshot).
pub fn demo_npm_snapshot_at(
    canary: &NpmCanary,
    registry: &str,
    created: &str,
) -> Result<egress_snapshot::Snapshot, BuiltinError> {
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    builder.npm_registry_url(registry)?;
    // Registry signatures and keys are replayed as `snapshot build` does.
    let keys = serde_json::to_vec(&canary.keys_document())?;
    builder.npm_registry_keys(keys)?;
    // The canary's publish times are served and signed, under a cutoff
    // after all of them (P5.cutoff).
    builder.selection(egress_snapshot::Selection {
        exclude_newer: Some(crate::pypi::builtin::DEMO_CUTOFF.to_string()),
        ..Default::default()
    });
    for (name, version, tarball) in canary.tarballs(false) {
        let signatures = canary.signatures(&name, &version);
        let meta = egress_snapshot::NpmVersionMeta {
            published: canary.published(&name, &version),
            ..Default::default()
        };
        builder.add_npm_tarball_with(
            &name,
            &version,
            &tarball.filename,
            tarball.bytes,
            &tarball.integrity,
            meta,
        )?;
        if let Some(sigs) = signatures {
            builder.add_npm_signatures(&name, &version, &tarball.integrity, sigs)?;
        }
    }
    Ok(builder.build(created, Some(&demo_key()), DEMO_PRINCIPAL)?)
}

/// Runs the npm suite against `registry` with `canary` as the controlled
/// upstream and the demonstration key as the trusted signer.
pub fn run_npm_against(
    name: &str,
    registry: &Url,
    canary: &NpmCanary,
) -> Result<Report, BuiltinError> {
    let mut plan = npm_plan_for(registry, canary, true)?;
    plan.expect.snapshot = Some(demo_npm_snapshot(canary, &registry.to_string())?.id());
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(registry)?,
        plan,
        upstream: Some(canary),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_npm_canary() -> Result<NpmCanary, BuiltinError> {
    NpmCanary::start().map_err(BuiltinError::start("the npm canary upstream"))
}

/// Builds (A)'s npm snapshot from the canary's tarballs and serves it on
/// loopback; returns the server and its registry URL. The listener is bound
/// first: the packuments' tarball links name the mirror's own address.
pub fn serve_npm_reference(
    canary: &NpmCanary,
) -> Result<(egress_http::ServerHandle, Url), BuiltinError> {
    let mirror = LateMirror::default();
    let server = egress_http::Server::bind(
        "127.0.0.1:0",
        mirror.clone(),
        crate::builtin::reference_server_limits(),
    )
    .map_err(BuiltinError::start("the npm reference mirror"))?;
    let registry = format!("{}/", server.base_url());
    let snapshot = demo_npm_snapshot(canary, &registry)?;
    let attestor = demo_attestor(snapshot.id())?;
    mirror.set(egress_mirror::Mirror::new(Arc::new(snapshot)).attest(attestor));
    Ok((server, Url::parse(&registry)?))
}

/// Serves (A)'s npm snapshot and runs the npm suite against it.
pub fn run_npm_reference() -> Result<Report, BuiltinError> {
    let canary = start_npm_canary()?;
    let (server, registry) = serve_npm_reference(&canary)?;
    let report = run_npm_against(NPM_NAME_A, &registry, &canary);
    server.stop();
    report
}

/// Starts the npm caching-proxy fixture in front of a fresh npm canary,
/// runs the npm suite.
pub fn run_npm_proxy() -> Result<Report, BuiltinError> {
    let canary = start_npm_canary()?;
    // The newest tarball is slow upstream, so the proxy hands the client
    // over to the upstream for it, as pull-through caches do on a slow fetch.
    canary.set_slow(NPM_SLOW_TARBALL, SLOW_FETCH * 2);
    let proxy = NpmCachingProxy::start(Url::parse(&canary.registry_url())?)
        .map_err(BuiltinError::start("the npm caching proxy fixture"))?;
    run_npm_against(NPM_NAME_B, &Url::parse(&proxy.registry_url())?, &canary)
}

/// Runs both npm references side by side.
pub fn run_npm_both() -> Result<(Report, Report), BuiltinError> {
    let b = std::thread::spawn(run_npm_proxy);
    let a = run_npm_reference()?;
    let b = b.join().map_err(|_| BuiltinError::Panicked {
        what: "the npm caching-proxy run".into(),
    })??;
    Ok((a, b))
}
