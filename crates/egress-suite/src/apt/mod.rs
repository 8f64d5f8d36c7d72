//! The suite in apt's terms: the same six predicates, the same evidence
//! records and the same judging rules, over a Debian repository (a signed
//! `InRelease` or `Release` + `Release.gpg`, the `Packages` index it lists
//! with SHA256, `.deb`s in the pool).
//!
//! A run's plan says `protocol: apt`; its URL is the archive root (the URL
//! of a `deb` source line, e.g. `http://h/apt/debian/`), and its packages
//! name the dist, component, architecture and the keyring the `Release`
//! must verify against. The table is [`table::TABLE`]; docs/predicates.md
//! describes every sub-probe.

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
pub mod reads;
pub mod table;

pub use plan::Packages;
pub use table::{Apt, TABLE};
