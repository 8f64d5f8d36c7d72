//! The suite in npm's terms: the same six predicates, the same evidence
//! records and the same judging rules, over the npm registry protocol
//! (packuments full and abbreviated, scoped names, tarballs with `dist.integrity`).
//!
//! A run's plan says `protocol: npm`; [`crate::run()`], [`crate::judge_all`] and
//! `report verify` dispatch on it, so an npm report is re-derived offline
//! exactly as a PyPI one. The table is [`table::TABLE`]; docs/predicates.md
//! describes every sub-probe.

pub mod controls;
pub mod deployed;
pub mod doc;
pub mod facts;
pub mod held;
pub mod p1;
pub mod p2;
pub mod p3;
pub mod p4;
pub mod p5;
pub mod p6;
pub mod plan;
pub mod table;

pub use plan::{default_absent, Packages, TOP_PACKAGES};
pub use table::{Npm, TABLE};
