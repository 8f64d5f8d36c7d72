//! The built-in apt run: the reference mirror (A) serving a snapshot of
//! the apt canary's snapshot packages, built by `snapshot build
//! --apt-uris`'s own code from print-uris lines as Debian 12's apt writes
//! them, and the caching proxy (B) in front of a canary of its own; the
//! same plan for both.

use crate::apt::canary::{self as apt_canary, AptCanary};
use crate::apt::proxy::AptCachingProxy;
use crate::builtin::{client, demo_attestor, demo_key, demo_signers, BuiltinError, DEMO_PRINCIPAL};
use egress_model::{Upstream, Url, WireBytes};
use egress_suite::{apt, ManifestSource, Packages, Plan, Report, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const APT_NAME_A: &str = "apt reference (A)";
pub const APT_NAME_B: &str = "apt caching proxy (B)";

/// The packages the snapshot holds (the tripwire and template ones too, as
/// a lab's image would).
const SNAPSHOT: [&str; 4] = [
    apt_canary::PRESENT,
    apt_canary::DEP,
    apt_canary::TRIPWIRE,
    apt_canary::TEMPLATE,
];

fn failed(what: &'static str, e: impl std::fmt::Display) -> BuiltinError {
    BuiltinError::Start {
        what,
        cause: std::io::Error::other(e.to_string()),
    }
}

pub fn apt_plan_for(archive: &Url, canary: &AptCanary, keyring: Vec<u8>) -> Plan<Packages> {
    Plan {
        index_url: archive.to_string(),
        present_source: "built-in".into(),
        upstream: Some(canary.plan()),
        manifest: ManifestSource::WellKnown,
        allowed_signers: true,
        destructive: true,
        expect: Default::default(),
        packages: Packages::Apt(apt::Packages {
            dist: apt_canary::DIST.into(),
            component: apt_canary::COMPONENT.into(),
            arch: apt_canary::ARCH.into(),
            keyring: Some(WireBytes(keyring)),
            present: vec![apt_canary::PRESENT.into(), apt_canary::DEP.into()],
            absent: vec![apt_canary::UPSTREAM_ONLY.into()],
            tripwire: Some(apt_canary::TRIPWIRE.into()),
            template: Some(apt_canary::TEMPLATE.into()),
        }),
    }
}

/// `apt-get install --print-uris -qq` lines for the snapshot packages, as
/// Debian 12's apt writes them (URL, file name, size, MD5Sum), from the
/// canary's signed `Packages`.
fn print_uris(canary: &AptCanary) -> Result<String, BuiltinError> {
    let path = format!(
        "dists/{}/{}/binary-{}/Packages",
        apt_canary::DIST,
        apt_canary::COMPONENT,
        apt_canary::ARCH
    );
    let text = canary
        .file(&path)
        .ok_or_else(|| failed("the apt snapshot build", "the canary serves no Packages"))?;
    let entries = egress_apt::parse_packages(&String::from_utf8_lossy(&text))
        .map_err(|e| failed("the apt snapshot build", e))?;
    Ok(entries
        .iter()
        .filter(|e| SNAPSHOT.contains(&e.package.as_str()))
        .map(|e| {
            format!(
                "'{}/{}' {} {} MD5Sum:{}\n",
                canary.archive_url(),
                e.filename.as_str(),
                e.filename.file_name(),
                e.size,
                e.md5.as_deref().unwrap_or_default()
            )
        })
        .collect())
}

/// A private directory for one build, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh private directory for `what`'s build.
    pub fn new(what: &str) -> Result<Scratch, BuiltinError> {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("egress-builtin-{what}-{}-{t}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(BuiltinError::start("a built-in snapshot build"))?;
        Ok(Scratch(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch() -> Result<Scratch, BuiltinError> {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("egress-builtin-apt-{}-{t}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(BuiltinError::start("the apt snapshot build"))?;
    Ok(Scratch(dir))
}

/// Builds the snapshot with the demonstration key, as `snapshot build
/// --apt-uris` does; returns its directory (inside `dir`).
fn build_snapshot(canary: &AptCanary, dir: &Path) -> Result<PathBuf, BuiltinError> {
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, BuiltinError> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(BuiltinError::start("the apt snapshot build"))?;
        Ok(p)
    };
    let uris = write("uris.txt", print_uris(canary)?.as_bytes())?;
    let keyring = write("canary-keyring.gpg", &canary.keyring())?;
    let key = write("demo-key", demo_key().to_openssh().as_bytes())?;
    let out = dir.join("snap");
    // The built-in run's output is its reports: no build progress.
    egress_build::quiet(true);
    let mut options = egress_build::BuildOptions::new(egress_build::Common {
        principal: Some(DEMO_PRINCIPAL.to_string()),
        ..egress_build::Common::new(key, out.clone())
    });
    options.apt = egress_build::apt::Inputs {
        apt_uris: Some(uris),
        apt_sources: vec![format!(
            "{} {} {}",
            canary.archive_url(),
            apt_canary::DIST,
            apt_canary::COMPONENT
        )],
        apt_source_files: Vec::new(),
        apt_keyring: Some(keyring),
        apt_arch: Vec::new(),
        apt_debs: Vec::new(),
    };
    egress_build::build(options, |_| {}).map_err(|e| failed("the apt snapshot build", e))?;
    Ok(out)
}

/// The reference's snapshot of the canary's snapshot packages, built with
/// the demonstration key, and the directory it lives in (keep it while the
/// snapshot is served).
pub fn demo_apt_snapshot(
    canary: &AptCanary,
) -> Result<(egress_snapshot::Snapshot, Scratch), BuiltinError> {
    let dir = scratch()?;
    let snapshot = egress_snapshot::Snapshot::load_dir(&build_snapshot(canary, &dir.0)?)?;
    Ok((snapshot, dir))
}

/// The keyring the reference's `Release` verifies against: the
/// demonstration key as the lab's OpenPGP key.
pub fn lab_keyring() -> Vec<u8> {
    egress_build::apt::lab_openpgp_key(&demo_key()).public_keyring()
}

/// The archive root the snapshot serves the canary's repository at.
pub fn archive_path(snapshot: &egress_snapshot::Snapshot) -> Option<String> {
    let suffix = format!("dists/{}/InRelease", apt_canary::DIST);
    snapshot
        .doc
        .served
        .iter()
        .find_map(|e| e.path.strip_suffix(&suffix).map(str::to_string))
}

pub fn run_apt_against(
    name: &str,
    archive: &Url,
    canary: &AptCanary,
    keyring: Vec<u8>,
    expect: Option<egress_model::Sha256Digest>,
) -> Result<Report, BuiltinError> {
    run_apt_against_via(name, archive, canary, keyring, expect, None)
}

/// [`run_apt_against`], with the other host the suite names (its upstream's
/// origin) at `via` when given: the testbed's relay to the canary, for a
/// peer that cannot reach the canary's own port. The relay passes bytes
/// unchanged, so the canary still sees every request that arrives.
pub fn run_apt_against_via(
    name: &str,
    archive: &Url,
    canary: &AptCanary,
    keyring: Vec<u8>,
    expect: Option<egress_model::Sha256Digest>,
    via: Option<&str>,
) -> Result<Report, BuiltinError> {
    let mut plan = apt_plan_for(archive, canary, keyring);
    plan.expect.snapshot = expect;
    if let (Some(up), Some(via)) = (plan.upstream.as_mut(), via) {
        let via = via.trim_end_matches('/').to_string();
        if let Some(rest) = up.index_url.strip_prefix(&up.origin) {
            up.index_url = format!("{via}{rest}");
        }
        up.origin = via;
    }
    Ok(egress_suite::run(Target {
        name: name.into(),
        client: client(archive)?,
        plan,
        upstream: Some(canary as &dyn Upstream),
        allowed_signers: Some(demo_signers()),
    }))
}

pub fn start_apt_canary() -> Result<AptCanary, BuiltinError> {
    AptCanary::start().map_err(BuiltinError::start("the apt canary upstream"))
}

pub fn run_apt_reference() -> Result<Report, BuiltinError> {
    let canary = start_apt_canary()?;
    let (snapshot, _dir) = demo_apt_snapshot(&canary)?;
    let id = snapshot.id();
    let archive = archive_path(&snapshot).ok_or_else(|| {
        failed(
            "the apt reference mirror",
            "the snapshot serves no InRelease",
        )
    })?;
    let mirror = egress_mirror::Mirror::new(Arc::new(snapshot)).attest(demo_attestor(id)?);
    let server = egress_http::Server::bind(
        "127.0.0.1:0",
        mirror,
        crate::builtin::reference_server_limits(),
    )
    .map_err(BuiltinError::start("the apt reference mirror"))?;
    let url = Url::parse(&format!("{}{archive}", server.base_url()))?;
    let report = run_apt_against(APT_NAME_A, &url, &canary, lab_keyring(), Some(id));
    server.stop();
    canary.stop();
    report
}

pub fn run_apt_proxy() -> Result<Report, BuiltinError> {
    let canary = start_apt_canary()?;
    let origin = Url::parse(&canary.base_url())?;
    let proxy = AptCachingProxy::start(&origin.authority())
        .map_err(BuiltinError::start("the apt caching proxy fixture"))?;
    let archive = Url::parse(&format!("{}{}/", proxy.base_url(), apt_canary::ARCHIVE))?;
    let report = run_apt_against(APT_NAME_B, &archive, &canary, canary.keyring(), None);
    proxy.stop();
    canary.stop();
    report
}

pub fn run_apt_both() -> Result<(Report, Report), BuiltinError> {
    let b = std::thread::spawn(run_apt_proxy);
    let a = run_apt_reference()?;
    let b = b.join().map_err(|_| BuiltinError::Panicked {
        what: "the apt caching-proxy run".into(),
    })??;
    Ok((a, b))
}
