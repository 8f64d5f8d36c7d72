//! What a build target selects, as the installers compute it: which
//! versions a specifier admits, which dependencies a marker keeps for a
//! target, which wheels a target can install (PyPI, [`pypi`]); which
//! versions an npm range admits and which platform packages a target
//! installs ([`npm`]); which versions a cargo requirement admits
//! ([`cargo`]).
//!
//! Pure functions of text: no I/O. Every parser takes text from a
//! registry or a user and returns a typed value or an error; none panics.

// Parses registry metadata: no indexing or string slicing that input could
// make panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod cargo;
pub mod npm;
pub mod pypi;
