//! The suite in npm's terms: the same six predicates, the same evidence
//! records and the same judging rules, over the npm registry protocol
//! (packuments full and abbreviated, scoped names, tarballs with `dist.integrity`).
//!
//! A run's plan says `protocol: npm`; [`crate::run`], [`crate::judge_all`] and
//! `report verify` dispatch on it, so an npm report is re-derived offline
//! exactly as a PyPI one. The catalog is [`catalog::CATALOG`];
//! docs/predicates.md describes every sub-probe.

#[path = "table.rs"]
pub mod catalog;
pub mod controls;
pub mod doc;
pub mod facts;
pub mod p1;
pub mod p2;
pub mod p3;
pub mod p4;
pub mod p5;
pub mod p6;
pub mod run;

use crate::collect::Collector;
use crate::plan::NpmPlan;
use egress_model::{NpmName, Url};

/// The full packument's media type, as npm asks for it with `--json`.
pub const FULL: &str = "application/json";
/// What npm sends when it installs: the abbreviated ("corgi") document first.
pub const ABBREVIATED: &str =
    "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

/// `path` (which starts with `/`) under the registry URL, which may carry a
/// path prefix of its own (`http://h/repository/npm/`).
pub fn at(registry: &Url, path: &str) -> Url {
    registry.with_path(&format!(
        "{}{}",
        registry.path().trim_end_matches('/'),
        path
    ))
}

pub(crate) fn plan_of<'a>(c: &'a Collector) -> Option<&'a NpmPlan> {
    c.plan.npm.as_ref()
}

pub(crate) fn packument_url(c: &Collector, name: &NpmName) -> Option<Url> {
    c.plan.index().ok().map(|r| at(&r, &name.packument_path()))
}
