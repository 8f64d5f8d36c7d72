//! The suite in cargo's terms: the same six predicates, the same evidence
//! records and the same judging rules, over a sparse registry (its
//! `config.json`, the index files at `1/`, `2/`, `3/{c}/`, `{ab}/{cd}/`,
//! and the `.crate` downloads its `dl` template names).
//!
//! A run's plan says `protocol: cargo`; its URL is the sparse index root
//! (what a sandbox names after `sparse+`, e.g. `http://h/cargo/index/`).
//! The table is [`table::TABLE`]; docs/predicates.md describes every
//! sub-probe.

pub mod controls;
pub mod deployed;
pub mod doc;
pub mod facts;
pub mod p1;
pub mod p2;
pub mod p3;
pub mod p4;
pub mod p5;
pub mod p6;
pub mod plan;
pub mod table;

pub use plan::Packages;
pub use table::{Cargo, TABLE};
