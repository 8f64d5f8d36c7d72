//! The suite against the PyPI, npm and apt mirrors labs deploy, as
//! `egress-conformance testbed` runs it.
//!
//! For every variant (the reference mirror for each protocol, and each
//! `testbed/peers/*.conf` started by [`crate::start`]) a fresh canary
//! upstream of its protocol is started on loopback, the peer is started
//! with the canary as its only upstream, the whole suite of that protocol
//! runs with the upstream-observing sub-probes on (the plan of the built-in
//! run), and everything is stopped again. Variants run one after the
//! other, so that no peer's timing depends on another's load. PyPI and npm
//! have different sub-probes, so each protocol gets a matrix of its own;
//! so does apt (the apt canary, the apt suite with `--dist` the canary's
//! dist, the keyring the peer's config names or else the canary's).

use crate::config::ConfigError;
use crate::peer::PeerError;
use crate::{PeerConfig, Protocol};
use egress_model::{Status, Url};
use egress_references::apt::builtin as apt_builtin;
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_references::builtin::{BuiltinError, LateMirror};
use egress_references::cargo::builtin as cargo_builtin;
use egress_references::hf::builtin as hf_builtin;
use egress_references::npm::builtin as npm_builtin;
use egress_references::npm::canary::NpmCanary;
use egress_references::pypi::builtin;
use egress_references::pypi::canary::Canary;
use egress_suite::Report;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The reference mirror's column.
pub const REFERENCE: &str = "reference";
/// The reference mirror's column in the npm matrix.
pub const NPM_REFERENCE: &str = "reference-npm";
/// The reference mirror's column in the apt matrix.
pub const APT_REFERENCE: &str = "reference-apt";
/// The reference mirror's column in the cargo matrix.
pub const CARGO_REFERENCE: &str = "reference-cargo";
/// The reference mirror's column in the Hub matrix.
pub const HF_REFERENCE: &str = "reference-hf";

/// The newest file of the present project is slow upstream for every
/// variant: a real upstream is sometimes slow, and what a proxy does then
/// (wait, or hand the client to the upstream) is part of what is measured.
/// Never the file the suite's file control fetches.
const SLOW_FILE: &str = "ec_present-1.1.0-py3-none-any.whl";
pub const SLOW_UPSTREAM: Duration = Duration::from_secs(2);

/// Why a variant did not run (its column says so instead of verdicts).
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// A canary, or the snapshot of a reference, could not be made.
    #[error(transparent)]
    Reference(#[from] BuiltinError),
    /// A peer did not start.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// An in-process peer (a reference or a fixture) did not start.
    #[error("{0}")]
    InProcess(String),
}

/// Something that stops an in-process peer when dropped.
pub type Guard = Box<dyn Any>;
/// Starts an in-process peer in front of the canary; returns its index URL.
pub type StartFn = Box<dyn Fn(&Canary) -> Result<(Url, Guard), String>>;
/// Starts an in-process apt peer in front of the apt canary; returns its
/// archive root URL and the keyring its `Release` verifies against.
pub type AptStartFn = Box<dyn Fn(&AptCanary) -> Result<(Url, Vec<u8>, Guard), String>>;

pub enum Variant {
    /// The reference mirror serving a snapshot of the lab's projects.
    Reference,
    /// The reference mirror serving an npm snapshot of the lab's packages.
    NpmReference,
    /// The reference mirror serving the built-in apt snapshot.
    AptReference,
    /// The reference mirror serving the built-in cargo snapshot.
    CargoReference,
    /// The reference mirror serving the built-in Hub snapshot.
    HfReference,
    /// A real peer, from its config file.
    Peer(Box<PeerConfig>),
    /// An in-process peer (the tests' fixtures).
    Fixture { name: String, start: StartFn },
    /// An in-process apt peer (the tests' fixtures).
    AptFixture { name: String, start: AptStartFn },
}

impl Variant {
    pub fn name(&self) -> &str {
        match self {
            Variant::Reference => REFERENCE,
            Variant::NpmReference => NPM_REFERENCE,
            Variant::AptReference => APT_REFERENCE,
            Variant::CargoReference => CARGO_REFERENCE,
            Variant::HfReference => HF_REFERENCE,
            Variant::Peer(c) => &c.name,
            Variant::Fixture { name, .. } | Variant::AptFixture { name, .. } => name,
        }
    }

    pub fn about(&self) -> String {
        match self {
            Variant::Reference => {
                "egress-mirror serving a signed snapshot of the lab's projects, built from the canary's files".into()
            }
            Variant::NpmReference => {
                "egress-mirror serving a signed npm snapshot of the lab's packages, built from the npm canary's tarballs".into()
            }
            Variant::AptReference => {
                "egress-mirror serving the built-in apt snapshot (the canary's snapshot packages, built from apt-get --print-uris lines and re-signed with the lab key)".into()
            }
            Variant::CargoReference => {
                "egress-mirror serving the built-in cargo snapshot (the canary's snapshot crates, built with snapshot build --cargo-lock from a Cargo.lock that pins them)".into()
            }
            Variant::HfReference => {
                "egress-mirror serving the built-in Hub snapshot (the canary's kit repositories, built with snapshot build --hf-lock from the kit's hf.lock)".into()
            }
            Variant::Peer(c) => c.about.clone(),
            Variant::Fixture { .. } | Variant::AptFixture { .. } => "a test fixture".into(),
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self {
            Variant::NpmReference => Protocol::Npm,
            Variant::AptReference | Variant::AptFixture { .. } => Protocol::Apt,
            Variant::CargoReference => Protocol::Cargo,
            Variant::HfReference => Protocol::Hf,
            Variant::Peer(c) => c.protocol,
            Variant::Reference | Variant::Fixture { .. } => Protocol::Pypi,
        }
    }

    /// Whether this is a reference mirror's column, which must be all PASS.
    pub fn is_reference(name: &str) -> bool {
        [
            REFERENCE,
            NPM_REFERENCE,
            APT_REFERENCE,
            CARGO_REFERENCE,
            HF_REFERENCE,
        ]
        .contains(&name)
    }
}

/// Where the peer configs and the installed peers are: under the current
/// directory when it is the workspace, else under the workspace this binary
/// was built from. `EGRESS_PEERS_DIR` overrides where the venvs are.
pub struct Paths {
    pub configs: PathBuf,
    pub peers: PathBuf,
}

impl Paths {
    pub fn find() -> Self {
        let here = PathBuf::from("testbed/peers");
        let root = if here.is_dir() {
            PathBuf::from(".")
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
        };
        let peers = std::env::var_os("EGRESS_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".tools/peers"));
        Paths {
            configs: root.join("testbed/peers"),
            peers,
        }
    }
}

/// Per protocol, PyPI first, then npm, apt, cargo and the Hub: the reference, then every
/// peer config of that protocol in name order.
pub fn variants(configs: &Path) -> Result<Vec<Variant>, ConfigError> {
    let configs = PeerConfig::load_dir(configs)?;
    let mut all = Vec::new();
    for (protocol, reference) in [
        (Protocol::Pypi, Variant::Reference),
        (Protocol::Npm, Variant::NpmReference),
        (Protocol::Apt, Variant::AptReference),
        (Protocol::Cargo, Variant::CargoReference),
        (Protocol::Hf, Variant::HfReference),
    ] {
        all.push(reference);
        all.extend(
            configs
                .iter()
                .filter(|c| c.protocol == protocol)
                .map(|c| Variant::Peer(Box::new(c.clone()))),
        );
    }
    Ok(all)
}

/// The reference mirror: the built-in run's snapshot written to a
/// directory and served from it, as `egress-mirror DIR` serves one.
pub fn start_reference(canary: &Canary) -> Result<(Url, Guard), String> {
    /// The server (which stops on drop) goes before its directory.
    struct Served<S>(Option<S>, PathBuf);
    impl<S> Drop for Served<S> {
        fn drop(&mut self) {
            drop(self.0.take());
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let snapshot = builtin::demo_snapshot(canary).map_err(|e| e.to_string())?;
    let dir = crate::fresh_dir(REFERENCE);
    let mut served = Served(None, dir.clone());
    snapshot
        .write_dir(&dir)
        .map_err(|e| format!("cannot write the snapshot: {e}"))?;
    let store = egress_snapshot::StoredSnapshot::open(&dir)
        .map_err(|e| format!("cannot open the snapshot: {e}"))?;
    let attestor =
        egress_references::builtin::demo_attestor(store.id()).map_err(|e| e.to_string())?;
    let mirror = egress_mirror::Mirror::from_store(std::sync::Arc::new(store)).attest(attestor);
    let server = egress_mirror::serve_mirror(mirror, "127.0.0.1:0")
        .map_err(|e| format!("cannot serve the snapshot: {e}"))?;
    let index = builtin::index_of(&server.base_url()).map_err(|e| e.to_string())?;
    served.0 = Some(server);
    Ok((index, Box::new(served)))
}

/// The npm reference: the built-in npm snapshot, its tarball links on the
/// mirror's own address, written to a directory and served from it. The
/// listener is bound first (answering 503 until the snapshot is there),
/// because the packuments name the address it listens on.
pub fn start_npm_reference(canary: &NpmCanary) -> Result<(Url, Guard), String> {
    /// The server (which stops on drop) goes before its directory.
    struct Served(Option<egress_http::ServerHandle>, PathBuf);
    impl Drop for Served {
        fn drop(&mut self) {
            if let Some(s) = self.0.take() {
                s.stop();
            }
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let late = LateMirror::default();
    let server =
        egress_http::Server::bind("127.0.0.1:0", late.clone(), egress_http::Limits::default())
            .map_err(|e| format!("cannot listen: {e}"))?;
    let registry = format!("{}/", server.base_url());
    let dir = crate::fresh_dir(NPM_REFERENCE);
    let served = Served(Some(server), dir.clone());
    let snapshot = npm_builtin::demo_npm_snapshot(canary, &registry).map_err(|e| e.to_string())?;
    snapshot
        .write_dir(&dir)
        .map_err(|e| format!("cannot write the snapshot: {e}"))?;
    let store = egress_snapshot::StoredSnapshot::open(&dir)
        .map_err(|e| format!("cannot open the snapshot: {e}"))?;
    let attestor =
        egress_references::builtin::demo_attestor(store.id()).map_err(|e| e.to_string())?;
    late.set(egress_mirror::Mirror::from_store(std::sync::Arc::new(store)).attest(attestor));
    let url = Url::parse(&registry).map_err(|e| e.to_string())?;
    Ok((url, Box::new(served)))
}

/// The lab's npm packages for a peer: `(filename, bytes)` of every tarball
/// of the canary's snapshot packages, and their names.
pub fn npm_lab(canary: &NpmCanary) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let tarballs = canary.tarballs(false);
    let packages = tarballs
        .iter()
        .map(|(_, _, t)| (t.filename.clone(), t.bytes.clone()))
        .collect();
    let mut names: Vec<String> = tarballs.iter().map(|(n, _, _)| n.clone()).collect();
    names.dedup();
    (packages, names)
}

/// The apt reference: the built-in apt snapshot (as the built-in run's
/// reference (A) builds it from the canary) served by egress-mirror; its
/// archive root URL, the lab keyring its `Release` verifies against, the
/// snapshot's ID (the suite's expected snapshot), and what stops it.
pub fn start_apt_reference(
    canary: &AptCanary,
) -> Result<(Url, Vec<u8>, egress_model::Sha256Digest, Guard), String> {
    /// The server (which stops on drop) goes before its directory.
    struct Served(
        Option<egress_http::ServerHandle>,
        Option<apt_builtin::Scratch>,
    );
    impl Drop for Served {
        fn drop(&mut self) {
            if let Some(s) = self.0.take() {
                s.stop();
            }
            drop(self.1.take());
        }
    }
    let (snapshot, dir) = apt_builtin::demo_apt_snapshot(canary).map_err(|e| e.to_string())?;
    let mut served = Served(None, Some(dir));
    let id = snapshot.id();
    let archive = apt_builtin::archive_path(&snapshot)
        .ok_or_else(|| "the apt snapshot serves no InRelease".to_string())?;
    let attestor = egress_references::builtin::demo_attestor(id).map_err(|e| e.to_string())?;
    let mirror = egress_mirror::Mirror::new(std::sync::Arc::new(snapshot)).attest(attestor);
    let server = egress_http::Server::bind("127.0.0.1:0", mirror, egress_http::Limits::default())
        .map_err(|e| format!("cannot serve the apt snapshot: {e}"))?;
    let url = Url::parse(&format!("{}{archive}", server.base_url())).map_err(|e| e.to_string())?;
    served.0 = Some(server);
    Ok((url, apt_builtin::lab_keyring(), id, Box::new(served)))
}

/// What an apt peer is given: the lab's `.deb`s `(file name, bytes)`, the
/// paths below the archive root a warm-up fetches (what `apt-get update`
/// and `apt-get install --download-only` of the lab's packages fetch: the
/// dist's `InRelease`, its `Packages` and `Packages.gz` by path and by hash,
/// as the `Release` announces `Acquire-By-Hash`, and every lab `.deb`), and
/// the apt placeholders `{dist}`, `{component}` and `{arch}`.
#[allow(clippy::type_complexity)]
pub fn apt_lab(canary: &AptCanary) -> (Vec<(String, Vec<u8>)>, Vec<String>, Vec<(String, String)>) {
    let dist = canary.dist();
    let mut paths = vec![format!("dists/{dist}/InRelease")];
    for name in ["Packages", "Packages.gz"] {
        let rel = format!(
            "{}/binary-{}/{name}",
            apt_canary::COMPONENT,
            apt_canary::ARCH
        );
        paths.push(format!("dists/{dist}/{rel}"));
        let by_hash = egress_apt::IndexPath::new(&rel).ok().and_then(|index| {
            canary.file(&format!("dists/{dist}/{rel}")).map(|bytes| {
                egress_apt::by_hash_path(&index, &egress_model::Sha256Digest::of(&bytes))
            })
        });
        if let Some(h) = by_hash {
            paths.push(format!("dists/{dist}/{h}"));
        }
    }
    let mut packages = Vec::new();
    for (name, version) in canary.snapshot_packages(false) {
        if let Some((pool, bytes, _)) = canary.deb(&name, &version) {
            paths.push(pool.as_str().to_string());
            packages.push((pool.file_name().to_string(), bytes));
        }
    }
    let placeholders = vec![
        ("dist".to_string(), dist.to_string()),
        ("component".to_string(), canary.component().to_string()),
        ("arch".to_string(), apt_canary::ARCH.to_string()),
    ];
    (packages, paths, placeholders)
}

/// [`run_variant`] for an apt variant: a fresh apt canary, the apt suite
/// (the built-in run's apt plan, upstream-observing sub-probes on) against
/// the archive root, verifying `Release` against the variant's keyring.
fn run_apt_variant(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
    let canary = apt_builtin::start_apt_canary()?;
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let name = v.name();
    let report = match v {
        Variant::Peer(cfg) => {
            let (packages, paths, placeholders) = apt_lab(&canary);
            let keyring = canary.keyring();
            let ctx = crate::Context {
                peers_dir,
                canary_index: &format!("{}/", canary.archive_url()),
                canary_url: &canary.base_url(),
                packages: &packages,
                projects: &paths,
                placeholders: &placeholders,
                keyring: Some(&keyring),
            };
            let mut peer = crate::start(cfg, &ctx)?;
            ready = started.elapsed();
            let keyring = peer.keyring.clone().unwrap_or(keyring);
            // The other host the suite names is the canary as the peer
            // reaches it (testbed/apt-cacher-ng/zzz_testbed.conf.template).
            let r = apt_builtin::run_apt_against_via(
                name,
                &peer.index_url,
                &canary,
                keyring,
                None,
                Some(&peer.canary_url),
            );
            exited = peer.exited();
            peer.stop();
            r?
        }
        Variant::AptFixture { start, .. } => {
            let (url, keyring, guard) = start(&canary).map_err(VariantError::InProcess)?;
            ready = started.elapsed();
            let r = apt_builtin::run_apt_against(name, &url, &canary, keyring, None);
            drop(guard);
            r?
        }
        _ => {
            let (url, keyring, id, guard) =
                start_apt_reference(&canary).map_err(VariantError::InProcess)?;
            ready = started.elapsed();
            let r = apt_builtin::run_apt_against(name, &url, &canary, keyring, Some(id));
            drop(guard);
            r?
        }
    };
    canary.stop();
    Ok(Ran {
        report,
        ready,
        exited,
    })
}

/// [`run_variant`] for a cargo variant, the reference when `cfg` is
/// `None`: a fresh cargo canary, the cargo suite (the built-in run's cargo
/// plan, upstream-observing sub-probes on) against the peer's index root.
/// A peer gets `{canary_index}` the canary's sparse index URL
/// (`http://127.0.0.1:PORT/index/`), `{canary_dl}` the origin its
/// `config.json` sends downloads to (crates.io's `static.crates.io` and
/// API origin in one), and `seed` fills a directory with the canary's
/// index as a crates.io-index checkout holds it (`config.json` and every
/// index file at its path).
fn run_cargo_variant(
    name: &str,
    cfg: Option<&PeerConfig>,
    peers_dir: &Path,
) -> Result<Ran, VariantError> {
    let canary = cargo_builtin::start_cargo_canary()?;
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let report = match cfg {
        Some(cfg) => {
            let files = canary.index_files();
            let crates: Vec<String> = egress_references::cargo::canary::SNAPSHOT
                .iter()
                .map(|c| c.to_string())
                .collect();
            let placeholders = [("canary_dl".to_string(), canary.dl_origin().to_string())];
            let ctx = crate::Context {
                peers_dir,
                canary_index: &canary.index_url(),
                canary_url: canary.base_url(),
                packages: &files,
                projects: &crates,
                placeholders: &placeholders,
                keyring: None,
            };
            let mut peer = crate::start(cfg, &ctx)?;
            ready = started.elapsed();
            let r = cargo_builtin::run_cargo_against(name, &peer.index_url, &canary, None);
            exited = peer.exited();
            peer.stop();
            r?
        }
        None => {
            let a = cargo_builtin::start_cargo_reference(&canary)?;
            ready = started.elapsed();
            let r = cargo_builtin::run_cargo_against(name, &a.index, &canary, Some(a.id));
            drop(a);
            r?
        }
    };
    drop(canary);
    Ok(Ran {
        report,
        ready,
        exited,
    })
}

/// [`run_variant`] for a Hub variant, the reference when `cfg` is `None`:
/// a fresh Hub canary (the Xet hand-off offered), the Hub suite (the
/// built-in run's plan, upstream-observing sub-probes on) against the
/// peer's endpoint. A peer gets `{canary_url}` the canary's Hub origin and
/// `{canary_lfs}` its LFS origin (`http://127.0.0.1:PORT`), and
/// `{canary_lfs_netloc}` that origin's `host:port`.
fn run_hf_variant(
    name: &str,
    cfg: Option<&PeerConfig>,
    peers_dir: &Path,
) -> Result<Ran, VariantError> {
    let canary = hf_builtin::start_hf_canary()?;
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let report = match cfg {
        Some(cfg) => {
            let lfs = canary.cdn_origin().to_string();
            let placeholders = [
                (
                    "canary_lfs_netloc".to_string(),
                    lfs.trim_start_matches("http://").to_string(),
                ),
                ("canary_lfs".to_string(), lfs),
            ];
            let ctx = crate::Context {
                peers_dir,
                canary_index: canary.endpoint(),
                canary_url: canary.endpoint(),
                packages: &[],
                projects: &[],
                placeholders: &placeholders,
                keyring: None,
            };
            let mut peer = crate::start(cfg, &ctx)?;
            ready = started.elapsed();
            let r = hf_builtin::run_hf_against(name, &peer.index_url, &canary, None);
            exited = peer.exited();
            peer.stop();
            r?
        }
        None => {
            let a = hf_builtin::start_hf_reference(&canary)?;
            ready = started.elapsed();
            let r = hf_builtin::run_hf_against(name, &a.endpoint, &canary, Some(a.id));
            drop(a);
            r?
        }
    };
    drop(canary);
    Ok(Ran {
        report,
        ready,
        exited,
    })
}

/// [`run_variant`] for an npm variant, the reference when `cfg` is `None`:
/// a fresh npm canary, the npm suite.
fn run_npm_variant(
    name: &str,
    cfg: Option<&PeerConfig>,
    peers_dir: &Path,
) -> Result<Ran, VariantError> {
    let canary = npm_builtin::start_npm_canary()?;
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let report = match cfg {
        Some(cfg) => {
            let (packages, names) = npm_lab(&canary);
            let ctx = crate::Context {
                peers_dir,
                canary_index: &canary.registry_url(),
                canary_url: &canary.base_url(),
                packages: &packages,
                projects: &names,
                placeholders: &[],
                keyring: None,
            };
            let mut peer = crate::start(cfg, &ctx)?;
            ready = started.elapsed();
            let r = npm_builtin::run_npm_against(name, &peer.index_url, &canary);
            exited = peer.exited();
            peer.stop();
            r?
        }
        None => {
            let (registry, guard) =
                start_npm_reference(&canary).map_err(VariantError::InProcess)?;
            ready = started.elapsed();
            let r = npm_builtin::run_npm_against(name, &registry, &canary);
            drop(guard);
            r?
        }
    };
    canary.stop();
    Ok(Ran {
        report,
        ready,
        exited,
    })
}

/// Runs the suite against one variant in front of its own fresh canary and
/// stops everything again; returns the report and how long the variant took
/// to start (set-up steps, a sync or a warm-up included). `Err` names why
/// the variant could not run.
pub fn run_variant(v: &Variant, peers_dir: &Path) -> Result<(Report, Duration), VariantError> {
    run_variant_ran(v, peers_dir).map(|r| (r.report, r.ready))
}

/// What one variant's run gave.
pub struct Ran {
    pub report: Report,
    /// How long the variant took to start serving.
    pub ready: Duration,
    /// If the peer's process was no longer running when the suite ended:
    /// how it had ended (`signal: 11 (SIGSEGV)`). The sub-probes after
    /// that met a closed port.
    pub exited: Option<String>,
}

/// [`run_variant`], and whether the peer was still running at the end.
pub fn run_variant_ran(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
    match v {
        Variant::NpmReference => run_npm_variant(v.name(), None, peers_dir),
        Variant::Peer(cfg) if cfg.protocol == Protocol::Npm => {
            run_npm_variant(v.name(), Some(cfg), peers_dir)
        }
        Variant::AptReference | Variant::AptFixture { .. } => run_apt_variant(v, peers_dir),
        Variant::Peer(cfg) if cfg.protocol == Protocol::Apt => run_apt_variant(v, peers_dir),
        Variant::CargoReference => run_cargo_variant(v.name(), None, peers_dir),
        Variant::Peer(cfg) if cfg.protocol == Protocol::Cargo => {
            run_cargo_variant(v.name(), Some(cfg), peers_dir)
        }
        Variant::HfReference => run_hf_variant(v.name(), None, peers_dir),
        Variant::Peer(cfg) if cfg.protocol == Protocol::Hf => {
            run_hf_variant(v.name(), Some(cfg), peers_dir)
        }
        _ => run_pypi_variant(v, peers_dir),
    }
}

/// [`run_variant`] for a PyPI variant: a fresh canary (one file slow), the
/// PyPI suite.
fn run_pypi_variant(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
    let canary = builtin::start_canary()?;
    canary.set_slow(SLOW_FILE, SLOW_UPSTREAM);
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let report = match v {
        // The PyPI reference (run_variant sends the npm and apt ones elsewhere).
        Variant::Reference
        | Variant::NpmReference
        | Variant::AptReference
        | Variant::CargoReference
        | Variant::HfReference
        | Variant::AptFixture { .. } => {
            let (index, guard) = start_reference(&canary).map_err(VariantError::InProcess)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &index, &canary);
            drop(guard);
            r?
        }
        Variant::Fixture { start, .. } => {
            let (index, guard) = start(&canary).map_err(VariantError::InProcess)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &index, &canary);
            drop(guard);
            r?
        }
        Variant::Peer(cfg) => {
            let dists = canary.dists(false);
            let packages: Vec<(String, Vec<u8>)> = dists
                .iter()
                .map(|(_, d)| (d.filename.clone(), d.bytes.clone()))
                .collect();
            let mut projects: Vec<String> = dists.iter().map(|(n, _)| n.to_string()).collect();
            projects.dedup();
            let ctx = crate::Context {
                peers_dir,
                canary_index: &canary.index_url(),
                canary_url: &canary.base_url(),
                packages: &packages,
                projects: &projects,
                placeholders: &[],
                keyring: None,
            };
            let mut peer = crate::start(cfg, &ctx)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &peer.index_url, &canary);
            exited = peer.exited();
            peer.stop();
            r?
        }
    };
    canary.stop();
    Ok(Ran {
        report,
        ready,
        exited,
    })
}

/// The reports of the variants that ran, and why the others did not.
pub struct Outcome {
    pub reports: Vec<Report>,
    pub not_run: Vec<(String, String)>,
    /// Peers whose process ended during the suite's run, and how: their
    /// columns are what the suite measured, the later sub-probes against a
    /// closed port.
    pub exited: Vec<(String, String)>,
}

impl Outcome {
    /// The references' columns are all PASS (when they were run) and every
    /// variant ran. A reference's sub-probe may be SKIPPED for what it
    /// cannot be asked here: HTTP/2 (`P3.h2-smuggling`), which a mirror on
    /// plain http does not speak; every predicate still PASSes.
    pub fn ok(&self) -> bool {
        let reference_passes = self
            .reports
            .iter()
            .filter(|r| Variant::is_reference(&r.target_name))
            .all(|r| {
                r.probes
                    .iter()
                    .all(|p| matches!(p.status, Status::Pass | Status::Skipped))
                    && r.predicates.iter().all(|p| p.status == Status::Pass)
            });
        reference_passes && self.not_run.is_empty()
    }

    /// One line per variant that did not run, or whose process ended
    /// during the run.
    pub fn notes(&self) -> String {
        let not_run = self
            .not_run
            .iter()
            .map(|(n, e)| format!("not run: {n}: {e}\n"));
        let exited = self
            .exited
            .iter()
            .map(|(n, s)| format!("exited during the run: {n}: {s}\n"));
        not_run.chain(exited).collect()
    }
}

/// Runs every variant in order; `progress` gets one line per variant.
pub fn run(variants: &[Variant], peers_dir: &Path, mut progress: impl FnMut(&str)) -> Outcome {
    let mut out = Outcome {
        reports: Vec::new(),
        not_run: Vec::new(),
        exited: Vec::new(),
    };
    for v in variants {
        let started = Instant::now();
        match run_variant_ran(v, peers_dir) {
            Ok(Ran {
                report: r,
                ready,
                exited,
            }) => {
                progress(&format!(
                    "{}: {} in {:.1} s (serving after {:.1} s){}",
                    v.name(),
                    r.outcome,
                    started.elapsed().as_secs_f64(),
                    ready.as_secs_f64(),
                    exited
                        .as_ref()
                        .map(|s| format!("; the peer exited during the run ({s})"))
                        .unwrap_or_default()
                ));
                if let Some(s) = exited {
                    out.exited.push((v.name().to_string(), s));
                }
                out.reports.push(r);
            }
            Err(e) => {
                progress(&format!("{}: could not run: {e}", v.name()));
                out.not_run.push((v.name().to_string(), e.to_string()));
            }
        }
    }
    out
}

/// The reports that ran, one group per protocol (PyPI, npm, apt), each in
/// run order: the columns of one matrix.
pub fn by_protocol(reports: &[Report]) -> Vec<(&'static str, Vec<&Report>)> {
    [
        ("PyPI", "pypi"),
        ("npm", "npm"),
        ("apt", "apt"),
        ("cargo", "cargo"),
        ("hf", "hf"),
    ]
    .into_iter()
    .map(|(title, p)| {
        let group = reports.iter().filter(|r| r.plan.protocol() == p).collect();
        (title, group)
    })
    .filter(|(_, g): &(_, Vec<&Report>)| !g.is_empty())
    .collect()
}

/// One text matrix per protocol that ran, each under its title when
/// there is more than one.
pub fn matrix_text(reports: &[Report]) -> String {
    let groups = by_protocol(reports);
    let titled = groups.len() > 1;
    let mut text = String::new();
    for (i, (title, refs)) in groups.iter().enumerate() {
        if titled {
            text.push_str(&format!("{}{title}\n", if i > 0 { "\n" } else { "" }));
        }
        text.push_str(&egress_suite::render::matrix_text(refs));
    }
    text
}

/// The Markdown matrices (one per protocol: their sub-probes differ) with
/// the legend of their columns and the variants that did not run. Nothing
/// in it changes from run to run but verdicts.
pub fn matrix_markdown(variants: &[Variant], out: &Outcome) -> String {
    let mut md = String::new();
    for v in variants {
        md.push_str(&format!("- `{}`: {}\n", v.name(), v.about()));
    }
    let groups = by_protocol(&out.reports);
    let titled = groups.len() > 1;
    for (title, refs) in &groups {
        md.push('\n');
        if titled {
            md.push_str(&format!("### {title}\n\n"));
        }
        md.push_str(&egress_suite::render::matrix_markdown(refs));
    }
    for (n, e) in &out.not_run {
        md.push_str(&format!(
            "\n**not run**: `{n}`: {}\n",
            e.replace('|', "\\|")
        ));
    }
    for (n, s) in &out.exited {
        md.push_str(&format!(
            "\n**exited during the run**: `{n}`: {s}; the sub-probes after that met a closed port\n"
        ));
    }
    md
}
