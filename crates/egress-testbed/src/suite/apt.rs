//! The testbed's apt variants, each in front of a fresh apt canary.

use super::{Guard, Ran, Variant, VariantError};
use egress_model::Url;
use egress_references::apt::builtin as apt_builtin;
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use std::path::Path;
use std::time::Instant;

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
pub(super) fn run_apt_variant(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
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
