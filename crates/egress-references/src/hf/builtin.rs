//! The built-in Hub run: the reference mirror (A) serving a snapshot of
//! the Hub canary's kit repositories, built by `snapshot build --hf-lock`'s
//! own code from the kit's lock, and the caching proxy (B) in front of a
//! canary of its own; the same plan for both.

use crate::apt::builtin::Scratch;
use crate::builtin::{client, demo_attestor, demo_key, demo_signers, BuiltinError, DEMO_PRINCIPAL};
use crate::hf::canary::{self as hf_canary, HfCanary};
use crate::hf::proxy::HfCachingProxy;
use egress_model::{HfUpstreamPlan, Upstream, Url};
use egress_suite::{hf, ManifestSource, Packages, Plan, Report, Target};
use std::sync::Arc;

pub const HF_NAME_A: &str = "hf reference (A)";
pub const HF_NAME_B: &str = "hf caching proxy (B)";

fn failed(what: &'static str, e: impl std::fmt::Display) -> BuiltinError {
    BuiltinError::Start {
        what,
        cause: std::io::Error::other(e.to_string()),
    }
}

pub fn hf_plan_for(endpoint: &Url, canary: &HfCanary) -> Plan<Packages> {
    let up = canary.plan();
    let hf = up.hf.clone().unwrap_or_else(|| HfUpstreamPlan {
        present: hf_canary::MODEL.into(),
        also_present: Vec::new(),
        upstream_only: hf_canary::UPSTREAM_ONLY.into(),
        bad_digest: None,
        absent_revision: String::new(),
        absent_file: hf_canary::ABSENT_FILE.into(),
    });
    let mut present = vec![hf.present];
    present.extend(hf.also_present);
    Plan {
        index_url: endpoint.to_string(),
        present_source: "built-in".into(),
        upstream: Some(up),
        manifest: ManifestSource::WellKnown,
        allowed_signers: true,
        destructive: true,
        expect: Default::default(),
        packages: Packages::Hf(hf::Packages {
            present,
            absent: vec![hf.upstream_only],
            absent_revision: Some(hf.absent_revision),
            absent_file: Some(hf.absent_file),
            bad_digest: hf.bad_digest,
        }),
    }
}

/// The reference's snapshot of the kit's repositories, read from `canary`
/// with the demonstration key, and the directory it lives in (keep it
/// while the snapshot is served).
pub fn demo_hf_snapshot(
    canary: &HfCanary,
) -> Result<(egress_snapshot::Snapshot, Scratch), BuiltinError> {
    let what = "the hf snapshot build";
    let dir = Scratch::new("hf")?;
    let lock = dir.path().join("hf.lock");
    std::fs::write(&lock, hf_canary::fixture_lock()).map_err(BuiltinError::start(what))?;
    let key = dir.path().join("demo-key");
    std::fs::write(&key, demo_key().to_openssh()).map_err(BuiltinError::start(what))?;
    let out = dir.path().join("snap");
    egress_build::quiet(true);
    let mut options = egress_build::BuildOptions::new(egress_build::Common {
        principal: Some(DEMO_PRINCIPAL.to_string()),
        ..egress_build::Common::new(key, out.clone())
    });
    options.hf = egress_build::hf::Inputs {
        hf_lock: Some(lock),
        hf_endpoint: Some(canary.endpoint().to_string()),
    };
    egress_build::build(options, |_| {}).map_err(|e| failed(what, e))?;
    let snapshot = egress_snapshot::Snapshot::load_dir(&out)?;
    Ok((snapshot, dir))
}

pub fn run_hf_against(
    name: &str,
    endpoint: &Url,
    canary: &HfCanary,
    expect: Option<egress_model::Sha256Digest>,
) -> Result<Report, BuiltinError> {
    let mut plan = hf_plan_for(endpoint, canary);
    plan.expect.snapshot = expect;
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(endpoint)?,
        plan,
        upstream: Some(canary as &dyn Upstream),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_hf_canary() -> Result<HfCanary, BuiltinError> {
    HfCanary::start_fixtures().map_err(BuiltinError::start("the hf canary upstream"))
}

/// The reference mirror (A) serving the kit's snapshot: the endpoint, the
/// snapshot's ID, and what stops it (the server goes before the
/// snapshot's directory).
pub struct HfReference {
    pub endpoint: Url,
    pub id: egress_model::Sha256Digest,
    server: Option<egress_http::ServerHandle>,
    _dir: Scratch,
}

impl Drop for HfReference {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

pub fn start_hf_reference(canary: &HfCanary) -> Result<HfReference, BuiltinError> {
    let what = "the hf reference mirror";
    let (snapshot, dir) = demo_hf_snapshot(canary)?;
    let id = snapshot.id();
    let mirror = egress_mirror::Mirror::new(Arc::new(snapshot)).attest(demo_attestor(id)?);
    let server = egress_http::Server::bind(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        mirror,
        crate::builtin::reference_server_limits(),
    )
    .map_err(BuiltinError::start(what))?;
    let endpoint = Url::parse(&format!("{}/hf", server.base_url()))?;
    Ok(HfReference {
        endpoint,
        id,
        server: Some(server),
        _dir: dir,
    })
}

pub fn run_hf_reference() -> Result<Report, BuiltinError> {
    let canary = start_hf_canary()?;
    let a = start_hf_reference(&canary)?;
    run_hf_against(HF_NAME_A, &a.endpoint, &canary, Some(a.id))
}

pub fn run_hf_proxy() -> Result<Report, BuiltinError> {
    let canary = start_hf_canary()?;
    let proxy = HfCachingProxy::start(canary.endpoint())
        .map_err(BuiltinError::start("the hf caching proxy fixture"))?;
    let endpoint = Url::parse(&proxy.endpoint())?;
    let report = run_hf_against(HF_NAME_B, &endpoint, &canary, None);
    proxy.stop();
    report
}

pub fn run_hf_both() -> Result<(Report, Report), BuiltinError> {
    let b = std::thread::spawn(run_hf_proxy);
    let a = run_hf_reference()?;
    let b = b.join().map_err(|_| BuiltinError::Panicked {
        what: "the hf caching-proxy run".into(),
    })??;
    Ok((a, b))
}
