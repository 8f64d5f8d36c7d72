//! The built-in cargo run: the reference mirror (A) serving a snapshot of
//! the cargo canary's fixture crates, built by `snapshot build
//! --cargo-lock`'s own code from a `Cargo.lock` that pins them, and the
//! caching proxy (B) in front of a canary of its own; the same plan for
//! both.

use crate::apt::builtin::Scratch;
use crate::builtin::{client, demo_attestor, demo_key, demo_signers, BuiltinError, DEMO_PRINCIPAL};
use crate::cargo::canary::{self as cargo_canary, CargoCanary};
use crate::cargo::proxy::CargoCachingProxy;
use egress_model::{Upstream, Url};
use egress_suite::{cargo, ManifestSource, Packages, Plan, Report, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const CARGO_NAME_A: &str = "cargo reference (A)";
pub const CARGO_NAME_B: &str = "cargo caching proxy (B)";

fn failed(what: &'static str, e: impl std::fmt::Display) -> BuiltinError {
    BuiltinError::Start {
        what,
        cause: std::io::Error::other(e.to_string()),
    }
}

pub fn cargo_plan_for(index: &Url, canary: &CargoCanary) -> Plan<Packages> {
    Plan {
        index_url: index.to_string(),
        present_source: "built-in".into(),
        upstream: Some(canary.plan()),
        manifest: ManifestSource::WellKnown,
        allowed_signers: true,
        destructive: true,
        expect: Default::default(),
        packages: Packages::Cargo(cargo::Packages {
            present: vec![cargo_canary::PRESENT.into()],
            absent: vec![cargo_canary::UPSTREAM_ONLY.into()],
            template: Some(cargo_canary::TEMPLATE.into()),
            yanked: Some(cargo_canary::YANKED.into()),
        }),
    }
}

/// Builds the snapshot of the fixture crates [`cargo_canary::SNAPSHOT`]
/// with the demonstration key, its `config.json` naming `mirror`.
fn build_snapshot(canary: &CargoCanary, dir: &Path, mirror: &str) -> Result<PathBuf, BuiltinError> {
    let what = "the cargo snapshot build";
    let lock = dir.join("Cargo.lock");
    let text = cargo_canary::fixture_lock(&cargo_canary::fixtures(), &cargo_canary::SNAPSHOT);
    std::fs::write(&lock, text).map_err(BuiltinError::start(what))?;
    let key = dir.join("demo-key");
    std::fs::write(&key, demo_key().to_openssh()).map_err(BuiltinError::start(what))?;
    let out = dir.join("snap");
    egress_build::quiet(true);
    let mut options = egress_build::BuildOptions::new(egress_build::Common {
        principal: Some(DEMO_PRINCIPAL.to_string()),
        ..egress_build::Common::new(key, out.clone())
    });
    options.cargo = egress_build::cargo::Inputs {
        cargo_lock: Some(lock),
        cargo_index_url: Some(canary.index_url()),
        cargo_registry_url: Some(mirror.to_string()),
        ..Default::default()
    };
    egress_build::build(options, |_| {}).map_err(|e| failed(what, e))?;
    Ok(out)
}

pub fn run_cargo_against(
    name: &str,
    index: &Url,
    canary: &CargoCanary,
    expect: Option<egress_model::Sha256Digest>,
) -> Result<Report, BuiltinError> {
    let mut plan = cargo_plan_for(index, canary);
    plan.expect.snapshot = expect;
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(index)?,
        plan,
        upstream: Some(canary as &dyn Upstream),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_cargo_canary() -> Result<CargoCanary, BuiltinError> {
    CargoCanary::start_fixtures().map_err(BuiltinError::start("the cargo canary upstream"))
}

/// The reference's snapshot of the fixture crates, its `config.json`
/// naming `mirror` (`http://host:port`), built with the demonstration key,
/// and the directory it lives in (keep it while the snapshot is served).
pub fn demo_cargo_snapshot(
    canary: &CargoCanary,
    mirror: &str,
) -> Result<(egress_snapshot::Snapshot, Scratch), BuiltinError> {
    let dir = Scratch::new("cargo")?;
    let snapshot =
        egress_snapshot::Snapshot::load_dir(&build_snapshot(canary, dir.path(), mirror)?)?;
    Ok((snapshot, dir))
}

/// A free loopback address: `config.json` names the mirror, so its port is
/// chosen before the build.
pub fn free_loopback() -> Result<std::net::SocketAddr, BuiltinError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(BuiltinError::start("the cargo reference mirror"))
}

/// The reference mirror (A) serving the fixture snapshot, in front of
/// `canary`: the index URL, the snapshot's ID, and what stops it (the
/// server goes before the snapshot's directory).
pub struct CargoReference {
    pub index: Url,
    pub id: egress_model::Sha256Digest,
    server: Option<egress_http::ServerHandle>,
    _dir: Scratch,
}

impl Drop for CargoReference {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

pub fn start_cargo_reference(canary: &CargoCanary) -> Result<CargoReference, BuiltinError> {
    let what = "the cargo reference mirror";
    let addr = free_loopback()?;
    let mirror_url = format!("http://{addr}");
    let (snapshot, dir) = demo_cargo_snapshot(canary, &mirror_url)?;
    let id = snapshot.id();
    let mirror = egress_mirror::Mirror::new(Arc::new(snapshot)).attest(demo_attestor(id)?);
    let server = egress_http::Server::bind(addr, mirror, crate::builtin::reference_server_limits())
        .map_err(BuiltinError::start(what))?;
    let index = Url::parse(&format!(
        "{mirror_url}{}",
        egress_snapshot::cargo::INDEX_PREFIX
    ))?;
    Ok(CargoReference {
        index,
        id,
        server: Some(server),
        _dir: dir,
    })
}

pub fn run_cargo_reference() -> Result<Report, BuiltinError> {
    let canary = start_cargo_canary()?;
    let a = start_cargo_reference(&canary)?;
    run_cargo_against(CARGO_NAME_A, &a.index, &canary, Some(a.id))
}

pub fn run_cargo_proxy() -> Result<Report, BuiltinError> {
    let canary = start_cargo_canary()?;
    let proxy = CargoCachingProxy::start(canary.base_url(), canary.dl_origin())
        .map_err(BuiltinError::start("the cargo caching proxy fixture"))?;
    let index = Url::parse(&proxy.index_url())?;
    let report = run_cargo_against(CARGO_NAME_B, &index, &canary, None);
    proxy.stop();
    report
}

pub fn run_cargo_both() -> Result<(Report, Report), BuiltinError> {
    let b = std::thread::spawn(run_cargo_proxy);
    let a = run_cargo_reference()?;
    let b = b.join().map_err(|_| BuiltinError::Panicked {
        what: "the cargo caching-proxy run".into(),
    })??;
    Ok((a, b))
}
