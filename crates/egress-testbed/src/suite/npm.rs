//! The testbed's npm variants, each in front of a fresh npm canary.

use super::{Guard, Ran, VariantError, NPM_REFERENCE};
use crate::PeerConfig;
use egress_model::Url;
use egress_references::builtin::LateMirror;
use egress_references::npm::builtin as npm_builtin;
use egress_references::npm::canary::NpmCanary;
use std::path::{Path, PathBuf};
use std::time::Instant;

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

/// [`run_variant`] for an npm variant, the reference when `cfg` is `None`:
/// a fresh npm canary, the npm suite.
pub(super) fn run_npm_variant(
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
