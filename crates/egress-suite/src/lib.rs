//! The egress conformance suite for PyPI and npm mirrors.
//!
//! Each protocol (`pypi/`, `npm/`) is a [`subprobe::Suite`]: one table of
//! sub-probes of the six predicates, each with its collector and judge. A
//! run ([`run()`]) collects every sub-probe's evidence in the order its table
//! gives ([`driver`]) and then derives every verdict from that evidence alone
//! ([`judge_all`]). `report verify` calls the same function on a saved
//! report, so a verdict can be re-derived offline by anyone. [`protocol`] is
//! the one place that names every protocol.

// Reads the target's responses: no indexing or string slicing that a
// response could make panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::string_slice))]

pub mod apt;
pub mod cargo;
pub mod classify;
pub mod collect;
pub mod combined;
pub mod common;
pub mod deployed;
pub mod digests;
pub mod driver;
pub mod facts;
pub mod files;
pub mod hf;
pub mod html;
pub mod judge;
pub mod kit;
pub mod npm;
pub mod plan;
pub mod protocol;
pub mod pypi;
pub mod render;
pub mod report;
pub mod run;
pub mod sarif;
pub mod saved;
pub mod subprobe;
pub mod summary;
pub mod verdicts;

pub use plan::{Expect, ManifestSource, Plan, Upstream, UpstreamPlan};
pub use protocol::{judge_all, Packages, Protocol};
pub use report::{verify, Disagreement, Report};
pub use run::{run, Target};
pub use subprobe::{Predicate, SubProbeId, PREDICATES};
