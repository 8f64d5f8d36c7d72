//! Building signed snapshots from lockfiles: `egress-conformance snapshot
//! build`.
//!
//! Every file that enters a snapshot is a local file or a download whose
//! bytes hash to what a lock pins; any disagreement between an index and
//! the locks refuses the whole snapshot, and nothing is written. The HTTP
//! client is here, not in egress-snapshot, which the mirror shares.
//!
//! The generic steps (the build itself, fetching with retries and
//! resumption, progress, writing) know no protocol; each protocol is a
//! folder ([`pypi`], [`npm`], [`apt`], [`cargo`]) with its share of the build, registered in
//! [`build`] below.

// Reads indexes, registries and downloads: no indexing or string slicing
// that a response could make panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::string_slice))]

pub mod apt;
pub mod args;
mod build;
pub mod cargo;
mod error;
mod fetch;
mod flatten;
pub mod hf;
pub mod keygen;
mod layer;
mod local;
pub mod npm;
mod progress;
pub mod pypi;
pub mod select;

pub use args::BuildArgs;
pub use build::{Common, Layering, DEFAULT_PRINCIPAL};
pub use egress_cli::store::{write_atomic, write_files, write_new, WriteError};
pub use error::{BuildError, Kind};
pub use flatten::{flatten, FlattenError, Flattened};
pub use progress::quiet;
pub use pypi::REWRITTEN_UV_LOCK;
pub use select::{Cutoff, Dropped, Rules};
use std::path::PathBuf;

/// Everything a build reads: the shared options and each protocol's inputs.
pub struct BuildOptions {
    pub common: Common,
    pub pypi: pypi::Inputs,
    pub npm: npm::Inputs,
    pub apt: apt::Inputs,
    pub cargo: cargo::Inputs,
    pub hf: hf::Inputs,
}

impl BuildOptions {
    /// `common` and no protocol input yet (PyPI's index the public one,
    /// as the CLI's default): set the inputs a build has.
    pub fn new(common: Common) -> Self {
        Self {
            common,
            pypi: pypi::Inputs {
                index_url: pypi::DEFAULT_INDEX.to_string(),
                ..Default::default()
            },
            npm: Default::default(),
            apt: Default::default(),
            cargo: Default::default(),
            hf: Default::default(),
        }
    }
}

impl Common {
    /// A build signed by `sign_key` into `out`, with one download at a
    /// time and no selection rules, cacert, dry run or layer.
    pub fn new(sign_key: PathBuf, out: PathBuf) -> Self {
        Self {
            sign_key,
            principal: None,
            jobs: 1,
            out,
            cacert: None,
            rules: Rules::default(),
            dry_run: false,
            layer: Layering::default(),
        }
    }
}

/// Fetches every file the locks pin, verifies each against its hash, and
/// writes a signed snapshot at `options.common.out`; any mismatch writes
/// nothing. `report` gets the lines a user is told on standard output;
/// progress and notes go to standard error.
///
/// The protocols are registered here, in the order they are read, fetched
/// and added.
pub fn build(options: BuildOptions, report: impl FnMut(&str)) -> Result<(), BuildError> {
    let parts: Vec<Box<dyn build::Part>> = vec![
        Box::new(pypi::Pypi::new(options.pypi)),
        Box::new(npm::Npm::new(options.npm)),
        Box::new(apt::Apt::new(options.apt)),
        Box::new(cargo::Cargo::new(options.cargo)),
        Box::new(hf::Hf::new(options.hf)),
    ];
    build::run(&options.common, parts, report)
}
