//! The testbed's cargo variants, each in front of a fresh cargo canary.

use super::{Ran, VariantError};
use crate::PeerConfig;
use egress_references::cargo::builtin as cargo_builtin;
use std::path::Path;
use std::time::Instant;

/// [`run_variant`] for a cargo variant, the reference when `cfg` is
/// `None`: a fresh cargo canary, the cargo suite (the built-in run's cargo
/// plan, upstream-observing sub-probes on) against the peer's index root.
/// A peer gets `{canary_index}` the canary's sparse index URL
/// (`http://127.0.0.1:PORT/index/`), `{canary_dl}` the origin its
/// `config.json` sends downloads to (crates.io's `static.crates.io` and
/// API origin in one), and `seed` fills a directory with the canary's
/// index as a crates.io-index checkout holds it (`config.json` and every
/// index file at its path).
pub(super) fn run_cargo_variant(
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
