//! The suite in PyPI's terms: the simple API (PEP 503 HTML, PEP 691 JSON)
//! and files addressed by digest. One module per predicate; each sub-probe is
//! a collector (talks to the target, records evidence) and a judge (a pure
//! function of that evidence), and [`table::TABLE`] lists them with their
//! stable ids. docs/predicates.md describes every sub-probe.

pub mod controls;
pub mod deployed;
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

pub use plan::{default_absent, Packages, PresentSpec, TOP_PROJECTS};
pub use table::{Pypi, TABLE};
