//! The Hub conformance kit: an `--hf-lock` (`hf.lock`) naming the Hub
//! canary's kit repositories at their commits: the model at its `main`
//! with globs that leave one file out, and the dataset whole. A commit id
//! is a digest of the commit's content, the same on every machine, so the
//! lock holds for any canary.
//!
//! A lab adds them to the snapshot under test with `snapshot build
//! --hf-lock KIT/hf.lock --hf-endpoint CANARY`: the builder reads each
//! tree at its commit from the canary, fetches the selected files and
//! verifies each against its blob id or LFS sha256. The canary's viewer
//! routes are the tripwire, on the canary itself: `canary` is not written
//! into anything.

use super::canary::fixture_lock;
use crate::kit::KitFile;

pub fn files(_canary: &str) -> Vec<KitFile> {
    vec![KitFile {
        name: "hf.lock".to_string(),
        bytes: fixture_lock().into_bytes(),
    }]
}
