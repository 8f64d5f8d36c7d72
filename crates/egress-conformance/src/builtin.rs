//! The main job with no arguments: the suite against the two built-in
//! references, each in front of its own canary upstream, all on loopback.
//!
//! (A) is the reference mirror serving a snapshot built from the canary's
//! files (everything but the upstream-only project), signed with a fixed
//! demonstration key. (B) is the caching-proxy fixture. Both runs use the
//! same plan shape, so every difference in the matrix is the targets'.

use crate::{exit, output, Failure, Format};
use egress_fixtures::canary::Canary;
use egress_fixtures::proxy::CachingProxy;
use egress_model::{Upstream, Url};
use egress_suite::{ManifestSource, Plan, PresentSpec, Report, Target};
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

pub fn plan_for(index: &Url, upstream: &dyn Upstream, signers: bool) -> Plan {
    let up = upstream.plan();
    Plan {
        index_url: index.to_string(),
        protocol: "pypi".into(),
        present: vec![PresentSpec {
            name: up.present.clone(),
            version: None,
        }],
        present_source: "built-in".into(),
        absent: vec![up.upstream_only.clone()],
        sdist_only: Some(up.tripwire.clone()),
        template: Some(up.template.clone()),
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

pub fn main(format: Format, out: Option<&Path>) -> Result<u8, Failure> {
    let (a, b) = run_both()?;
    let refs = [&a, &b];
    match format {
        Format::Text => {
            print!(
                "{}\n{}",
                egress_suite::render::text(&a),
                egress_suite::render::text(&b)
            );
            println!("\nDiscrimination matrix (yes: one target passes where another fails)\n");
            print!("{}", egress_suite::render::matrix_text(&refs));
        }
        Format::Json => {
            let both = serde_json::json!({ "reports": [a, b] });
            println!(
                "{}",
                serde_json::to_string_pretty(&both).unwrap_or_default()
            );
        }
        Format::Junit => {
            print!("{}", egress_suite::render::junit_many(&refs));
        }
    }
    if let Some(dir) = out {
        output::write_reports(
            dir,
            &[(&output::slug(NAME_A), &a), (&output::slug(NAME_B), &b)],
        )?;
    }
    // The built-in run succeeds when the references behave as references:
    // (A) passes everything and every predicate discriminates.
    let all_discriminate = egress_suite::catalog::PREDICATES.iter().all(|(p, _)| {
        a.predicate(p)
            .is_some_and(|v| v.status == egress_model::Status::Pass)
            && b.predicate(p)
                .is_some_and(|v| v.status == egress_model::Status::Fail)
    });
    Ok(if a.exit_code() == 0 && all_discriminate {
        exit::PASS
    } else {
        exit::FAIL
    })
}
