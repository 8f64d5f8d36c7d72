//! The main job with no arguments: the suite against the two built-in
//! references, each in front of its own canary upstream, all on loopback.
//!
//! (A) is the reference mirror serving a snapshot built from the canary's
//! files (everything but the upstream-only project), signed with a fixed
//! demonstration key. (B) is the caching-proxy fixture. Both runs use the
//! same plan shape, so every difference in the matrix is the targets'.

use crate::{exit, output, Failure, Format};
use egress_fixtures::canary::Canary;
use egress_fixtures::npm_canary::{self, NpmCanary};
use egress_fixtures::npm_proxy::NpmCachingProxy;
use egress_fixtures::proxy::CachingProxy;
use egress_model::NpmName;
use egress_model::{Upstream, Url};
use egress_suite::pypi::PresentSpec;
use egress_suite::{npm, pypi, ManifestSource, Packages, Plan, Report, Target};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The built-in snapshot's signing key is fixed so runs are reproducible; it
/// signs nothing but this demonstration snapshot.
const DEMO_SEED: [u8; 32] = *b"egress-conformance built-in demo";
const DEMO_PRINCIPAL: &str = "built-in-reference@egress-conformance";

/// The newest file of the present project: never the one the file control fetches.
const SLOW_FILE: &str = "ec_present-1.1.0-py3-none-any.whl";

pub const NAME_A: &str = "reference (A)";
pub const NAME_B: &str = "caching proxy (B)";
/// The newest tarball of the present npm package: never the one the
/// tarball control fetches.
const NPM_SLOW_TARBALL: &str = "ec-present-1.1.0.tgz";
pub const NPM_NAME_A: &str = "npm reference (A)";
pub const NPM_NAME_B: &str = "npm caching proxy (B)";

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
            template: Some(up.template.clone()),
        }),
        present_source: "built-in".into(),
        upstream: Some(up),
        manifest: ManifestSource::WellKnown,
        allowed_signers: signers,
    }
}

/// Tight bounds: everything is on loopback and in-process.
pub fn limits() -> egress_transcript::Limits {
    egress_transcript::Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(10),
        ..Default::default()
    }
}

fn client(index: &Url) -> Result<egress_transcript::Client, Failure> {
    egress_transcript::Client::new(index.clone(), limits(), None)
        .map_err(|e| Failure::internal(e.to_string()))
}

/// (A)'s snapshot: every canary file but the upstream-only project's,
/// signed with the demonstration key.
pub fn demo_snapshot(canary: &Canary) -> Result<egress_snapshot::Snapshot, Failure> {
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    for (_, dist) in canary.dists(false) {
        builder
            .add_dist(&dist.filename, dist.bytes, None)
            .map_err(|e| Failure::internal(e.to_string()))?;
    }
    builder
        .build("2026-01-01T00:00:00Z", Some(&demo_key()), DEMO_PRINCIPAL)
        .map_err(|e| Failure::internal(e.to_string()))
}

/// Runs the suite against `index` with `canary` as the controlled upstream
/// and the demonstration key as the trusted signer.
pub fn run_against(name: &str, index: &Url, canary: &Canary) -> Result<Report, Failure> {
    let plan = plan_for(index, canary, true);
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(index)?,
        plan,
        upstream: Some(canary),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_canary() -> Result<Canary, Failure> {
    Canary::start().map_err(|e| Failure::internal(format!("cannot start the canary upstream: {e}")))
}

pub fn index_of(base_url: &str) -> Result<Url, Failure> {
    Url::parse(&format!("{base_url}/simple/")).map_err(|e| Failure::internal(e.to_string()))
}

/// Builds (A)'s snapshot from the canary's files, serves it, runs the suite.
pub fn run_reference() -> Result<Report, Failure> {
    let canary = start_canary()?;
    let snapshot = demo_snapshot(&canary)?;
    let server = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0")
        .map_err(|e| Failure::internal(format!("cannot start the reference mirror: {e}")))?;
    run_against(NAME_A, &index_of(&server.base_url())?, &canary)
}

/// Starts the caching-proxy fixture in front of a fresh canary, runs the suite.
pub fn run_proxy() -> Result<Report, Failure> {
    let canary = start_canary()?;
    // One file is slow upstream, so the proxy hands the client over to the
    // upstream for it, as pull-through caches do on a slow fetch.
    canary.set_slow(SLOW_FILE, egress_fixtures::proxy::SLOW_FETCH * 2);
    let up_index = Url::parse(&canary.index_url()).map_err(|e| Failure::internal(e.to_string()))?;
    let proxy = CachingProxy::start(up_index)
        .map_err(|e| Failure::internal(format!("cannot start the caching proxy fixture: {e}")))?;
    run_against(NAME_B, &index_of(&proxy.base_url())?, &canary)
}

/// Runs both references side by side.
pub fn run_both() -> Result<(Report, Report), Failure> {
    let b = std::thread::spawn(run_proxy);
    let a = run_reference()?;
    let b = b
        .join()
        .map_err(|_| Failure::internal("the caching-proxy run panicked"))??;
    Ok((a, b))
}

// ------------------------------------------------------------------- npm

fn npm_name(s: &str) -> Result<NpmName, Failure> {
    NpmName::new(s).map_err(|e| Failure::internal(e.to_string()))
}

/// The plan of an npm run against `registry` (ending in `/`) with the npm
/// canary as the controlled upstream.
pub fn npm_plan_for(
    registry: &Url,
    upstream: &NpmCanary,
    signers: bool,
) -> Result<Plan<Packages>, Failure> {
    Ok(Plan {
        index_url: registry.to_string(),
        present_source: "built-in".into(),
        upstream: Some(upstream.plan()),
        manifest: ManifestSource::WellKnown,
        allowed_signers: signers,
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
) -> Result<egress_snapshot::Snapshot, Failure> {
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    builder
        .npm_registry_url(registry)
        .map_err(|e| Failure::internal(e.to_string()))?;
    // Registry signatures and keys are replayed as `snapshot build` does.
    let keys = serde_json::to_vec(&canary.keys_document())
        .map_err(|e| Failure::internal(e.to_string()))?;
    builder
        .npm_registry_keys(keys)
        .map_err(|e| Failure::internal(e.to_string()))?;
    for (name, version, tarball) in canary.tarballs(false) {
        let signatures = canary.signatures(&name, &version);
        builder
            .add_npm_tarball(
                &name,
                &version,
                &tarball.filename,
                tarball.bytes,
                &tarball.integrity,
            )
            .map_err(|e| Failure::internal(e.to_string()))?;
        if let Some(sigs) = signatures {
            builder
                .add_npm_signatures(&name, &version, &tarball.integrity, sigs)
                .map_err(|e| Failure::internal(e.to_string()))?;
        }
    }
    builder
        .build("2026-01-01T00:00:00Z", Some(&demo_key()), DEMO_PRINCIPAL)
        .map_err(|e| Failure::internal(e.to_string()))
}

/// Runs the npm suite against `registry` with `canary` as the controlled
/// upstream and the demonstration key as the trusted signer.
pub fn run_npm_against(name: &str, registry: &Url, canary: &NpmCanary) -> Result<Report, Failure> {
    let plan = npm_plan_for(registry, canary, true)?;
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(registry)?,
        plan,
        upstream: Some(canary),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_npm_canary() -> Result<NpmCanary, Failure> {
    NpmCanary::start()
        .map_err(|e| Failure::internal(format!("cannot start the npm canary upstream: {e}")))
}

fn url(s: &str) -> Result<Url, Failure> {
    Url::parse(s).map_err(|e| Failure::internal(e.to_string()))
}

/// Builds (A)'s npm snapshot from the canary's tarballs and serves it on
/// loopback; returns the server and its registry URL. The listener is bound
/// first: the packuments' tarball links name the mirror's own address.
pub fn serve_npm_reference(
    canary: &NpmCanary,
) -> Result<(egress_http::ServerHandle, Url), Failure> {
    let mirror = LateMirror::default();
    let server = egress_http::Server::bind(
        "127.0.0.1:0",
        mirror.clone(),
        egress_http::Limits::default(),
    )
    .map_err(|e| Failure::internal(format!("cannot start the npm reference mirror: {e}")))?;
    let registry = format!("{}/", server.base_url());
    let snapshot = demo_npm_snapshot(canary, &registry)?;
    let _ = mirror.0.set(egress_mirror::Mirror::new(Arc::new(snapshot)));
    Ok((server, url(&registry)?))
}

/// Serves (A)'s npm snapshot and runs the npm suite against it.
pub fn run_npm_reference() -> Result<Report, Failure> {
    let canary = start_npm_canary()?;
    let (server, registry) = serve_npm_reference(&canary)?;
    let report = run_npm_against(NPM_NAME_A, &registry, &canary);
    server.stop();
    report
}

/// A mirror whose listener is bound before its snapshot exists: it answers
/// 503 until the snapshot is set, then is exactly that [`egress_mirror::Mirror`].
#[derive(Clone, Default)]
struct LateMirror(Arc<std::sync::OnceLock<egress_mirror::Mirror>>);

impl egress_http::Handler for LateMirror {
    fn handle(&self, req: egress_http::Request) -> egress_http::Reply {
        match self.0.get() {
            Some(m) => m.handle(req),
            None => egress_http::Response::text(503, "starting\n").into(),
        }
    }

    fn vouch_for_file(&self, response: &egress_http::Response, file: &std::fs::File) -> bool {
        self.0
            .get()
            .is_some_and(|m| m.vouch_for_file(response, file))
    }
}

/// Starts the npm caching-proxy fixture in front of a fresh npm canary,
/// runs the npm suite.
pub fn run_npm_proxy() -> Result<Report, Failure> {
    let canary = start_npm_canary()?;
    // The newest tarball is slow upstream, so the proxy hands the client
    // over to the upstream for it, as pull-through caches do on a slow fetch.
    canary.set_slow(NPM_SLOW_TARBALL, egress_fixtures::proxy::SLOW_FETCH * 2);
    let proxy = NpmCachingProxy::start(url(&canary.registry_url())?).map_err(|e| {
        Failure::internal(format!("cannot start the npm caching proxy fixture: {e}"))
    })?;
    run_npm_against(NPM_NAME_B, &url(&proxy.registry_url())?, &canary)
}

pub fn demo_key() -> egress_signing::SigningKey {
    egress_signing::SigningKey::from_seed(DEMO_SEED, DEMO_PRINCIPAL)
}

/// Both runs trust the demonstration key, as a lab would trust its own.
pub fn demo_signers() -> Vec<u8> {
    let line = egress_signing::AllowedSigners::line_for_namespace(
        DEMO_PRINCIPAL,
        &demo_key().public(),
        egress_signing::SNAPSHOT_NAMESPACE,
    );
    format!("{line}\n").into_bytes()
}

/// Runs both npm references side by side.
pub fn run_npm_both() -> Result<(Report, Report), Failure> {
    let b = std::thread::spawn(run_npm_proxy);
    let a = run_npm_reference()?;
    let b = b
        .join()
        .map_err(|_| Failure::internal("the npm caching-proxy run panicked"))??;
    Ok((a, b))
}

/// Whether a pair behaves as references: (A) passes everything and every
/// predicate separates it from (B).
pub fn references_hold(a: &Report, b: &Report) -> bool {
    let all_discriminate = egress_suite::PREDICATES.iter().all(|(p, _)| {
        a.predicate(p)
            .is_some_and(|v| v.status == egress_model::Status::Pass)
            && b.predicate(p)
                .is_some_and(|v| v.status == egress_model::Status::Fail)
    });
    a.exit_code() == 0 && all_discriminate
}

pub fn main(format: Format, out: Option<&Path>) -> Result<u8, Failure> {
    let npm = std::thread::spawn(run_npm_both);
    let (a, b) = run_both()?;
    let (na, nb) = npm
        .join()
        .map_err(|_| Failure::internal("the npm runs panicked"))??;
    match format {
        Format::Text => {
            for r in [&a, &b] {
                println!("{}", egress_suite::render::text(r));
            }
            println!("Discrimination matrix, PyPI (yes: one target passes where another fails)\n");
            print!("{}", egress_suite::render::matrix_text(&[&a, &b]));
            for r in [&na, &nb] {
                print!("\n{}", egress_suite::render::text(r));
            }
            println!("\nDiscrimination matrix, npm (yes: one target passes where another fails)\n");
            print!("{}", egress_suite::render::matrix_text(&[&na, &nb]));
        }
        Format::Json => {
            let all = serde_json::json!({ "reports": [a, b, na, nb] });
            println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        }
        Format::Junit => {
            print!("{}", egress_suite::render::junit_many(&[&a, &b, &na, &nb]));
        }
    }
    if let Some(dir) = out {
        output::write_reports(
            dir,
            &[
                (&output::slug(NAME_A), &a),
                (&output::slug(NAME_B), &b),
                (&output::slug(NPM_NAME_A), &na),
                (&output::slug(NPM_NAME_B), &nb),
            ],
        )?;
    }
    Ok(if references_hold(&a, &b) && references_hold(&na, &nb) {
        exit::PASS
    } else {
        exit::FAIL
    })
}
