//! The suite in the Hugging Face Hub's terms: the same six predicates, the
//! same evidence records and the same judging rules, over the routes
//! `huggingface_hub` asks (read off version 2.4.0): a repository's info at a
//! revision, its tree at a commit, and each file under `/resolve/`.
//!
//! A run's plan says `protocol: hf`; its URL is what a sandbox sets as
//! `HF_ENDPOINT` (e.g. `http://h/hf`). Repositories are named as in a URL:
//! `org/name` is a model, `datasets/org/name` a dataset. The table is
//! [`table::TABLE`]; docs/predicates.md describes every sub-probe.

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

pub use plan::{Packages, RepoRef};
pub use table::{Hf, TABLE};
