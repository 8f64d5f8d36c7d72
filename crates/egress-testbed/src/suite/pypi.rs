//! The testbed's PyPI variants: the reference mirror, the fixtures and
//! the real peers, each in front of a fresh PyPI canary (one file slow).

use super::{Guard, Ran, Variant, VariantError, REFERENCE, SLOW_UPSTREAM};
use egress_model::Url;
use egress_references::pypi::builtin;
use egress_references::pypi::canary::Canary;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The newest file of the present project is slow upstream for every
/// variant: a real upstream is sometimes slow, and what a proxy does then
/// (wait, or hand the client to the upstream) is part of what is measured.
/// Never the file the suite's file control fetches.
const SLOW_FILE: &str = "ec_present-1.1.0-py3-none-any.whl";

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

/// [`run_variant`] for a PyPI variant: a fresh canary (one file slow), the
/// PyPI suite.
pub(super) fn run_pypi_variant(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
    let canary = builtin::start_canary()?;
    canary.set_slow(SLOW_FILE, SLOW_UPSTREAM);
    let started = Instant::now();
    let ready;
    let mut exited = None;
    let report = match v {
        // The PyPI reference (run_variant sends the other protocols'
        // variants elsewhere).
        Variant::Reference(_) | Variant::AptFixture { .. } => {
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
