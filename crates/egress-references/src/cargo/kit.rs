//! The cargo conformance kit: a `Cargo.lock` (version 4, as cargo 1.78 and
//! later write one) pinning the standalone cargo canary's snapshot crates
//! ([`SNAPSHOT`]: the present crate its mutations act on, the crate whose
//! text carries template expressions, and the one held at a yanked
//! version) with their checksums. The crates are built by our code, the
//! same bytes on every machine, so the checksums hold for any canary.
//!
//! A lab adds them to the snapshot under test with `snapshot build
//! --cargo-lock KIT/Cargo.lock --cargo-index-url CANARY/index/`: the
//! builder fetches exactly those versions from the canary, verifies each
//! against its checksum, and records their index lines. cargo has no
//! install-time code (a build script runs only when a crate is built), so
//! there is no tripwire to aim: `canary` is not written into anything.

use super::canary::{fixture_lock, fixtures, SNAPSHOT};
use crate::kit::KitFile;

pub fn files(_canary: &str) -> Vec<KitFile> {
    vec![KitFile {
        name: "Cargo.lock".to_string(),
        bytes: fixture_lock(&fixtures(), &SNAPSHOT).into_bytes(),
    }]
}
