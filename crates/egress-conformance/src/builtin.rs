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

fn plan_for(index: &Url, upstream: &dyn Upstream, signers: bool) -> Plan {
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

/// Builds (A)'s snapshot from the canary's files and serves it.
pub fn run_reference() -> Result<Report, Failure> {
    let canary = Canary::start()
        .map_err(|e| Failure::internal(format!("cannot start the canary upstream: {e}")))?;
    let mut builder = egress_snapshot::SnapshotBuilder::new("/simple/");
    for (_, dist) in canary.dists(false) {
        builder
            .add_dist(&dist.filename, dist.bytes, None)
            .map_err(|e| Failure::internal(e.to_string()))?;
    }
    let key = demo_key();
    let snapshot = builder
        .build("2026-01-01T00:00:00Z", Some(&key), DEMO_PRINCIPAL)
        .map_err(|e| Failure::internal(e.to_string()))?;
    let server = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0")
        .map_err(|e| Failure::internal(format!("cannot start the reference mirror: {e}")))?;
    let index = Url::parse(&format!("{}/simple/", server.base_url()))
        .map_err(|e| Failure::internal(e.to_string()))?;
    let plan = plan_for(&index, &canary, true);
    Ok(egress_suite::run(Target {
        name: NAME_A.into(),
        client: client(&index)?,
        plan,
        upstream: Some(&canary),
        allowed_signers: Some(demo_signers()),
    }))
}

fn demo_key() -> egress_signing::SigningKey {
    egress_signing::SigningKey::from_seed(DEMO_SEED, DEMO_PRINCIPAL)
}

/// Both runs trust the demonstration key, as a lab would trust its own.
fn demo_signers() -> Vec<u8> {
    let line = egress_signing::AllowedSigners::line_for_namespace(
        DEMO_PRINCIPAL,
        &demo_key().public(),
        egress_signing::SNAPSHOT_NAMESPACE,
    );
    format!("{line}\n").into_bytes()
}

pub fn run_proxy() -> Result<Report, Failure> {
    let canary = Canary::start()
        .map_err(|e| Failure::internal(format!("cannot start the canary upstream: {e}")))?;
    // One file is slow upstream, so the proxy hands the client over to the
    // upstream for it, as pull-through caches do on a slow fetch.
    canary.set_slow(SLOW_FILE, egress_fixtures::proxy::SLOW_FETCH * 2);
    let up_index = Url::parse(&canary.index_url()).map_err(|e| Failure::internal(e.to_string()))?;
    let proxy = CachingProxy::start(up_index)
        .map_err(|e| Failure::internal(format!("cannot start the caching proxy fixture: {e}")))?;
    let index = Url::parse(&proxy.index_url()).map_err(|e| Failure::internal(e.to_string()))?;
    let plan = plan_for(&index, &canary, true);
    Ok(egress_suite::run(Target {
        name: NAME_B.into(),
        client: client(&index)?,
        plan,
        upstream: Some(&canary),
        allowed_signers: Some(demo_signers()),
    }))
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
