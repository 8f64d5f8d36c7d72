//! The egress conformance suite for PyPI and npm mirrors.
//!
//! A run collects evidence for each sub-probe of the six predicates (see
//! [`catalog::CATALOG`]) and then derives every verdict from that evidence
//! alone with [`report::judge_all`]. `report verify` calls the same function
//! on a saved report, so a verdict can be re-derived offline by anyone.

#[path = "pypi/table.rs"]
pub mod catalog;
pub mod classify;
pub mod collect;
#[path = "pypi/facts.rs"]
pub mod facts;
pub mod judge;
pub mod npm;
pub mod plan;
#[path = "pypi/mod.rs"]
pub mod probes;
pub mod render;
pub mod report;
pub mod run;

pub use plan::{ManifestSource, NpmPlan, Plan, PresentSpec, Upstream, UpstreamPlan};
pub use report::{judge_all, verify, Disagreement, Report};
pub use run::{run, Target};
