//! The testbed's Hub variants, each in front of a fresh Hub canary.

use super::{Ran, VariantError};
use crate::PeerConfig;
use egress_references::hf::builtin as hf_builtin;
use std::path::Path;
use std::time::Instant;

/// [`run_variant`] for a Hub variant, the reference when `cfg` is `None`:
/// a fresh Hub canary (the Xet hand-off offered), the Hub suite (the
/// built-in run's plan, upstream-observing sub-probes on) against the
/// peer's endpoint. A peer gets `{canary_url}` the canary's Hub origin and
/// `{canary_lfs}` its LFS origin (`http://127.0.0.1:PORT`), and
/// `{canary_lfs_netloc}` that origin's `host:port`.
pub(super) fn run_hf_variant(
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
