//! The conformance kit's names, which `check` looks for in a snapshot: the
//! kit (`egress-conformance kit`, built in `egress-references`) makes its
//! packages under these names, and each protocol's `held.rs` finds them.

/// The name prefix of every kit package (PyPI projects and npm packages).
pub const PREFIX: &str = "egress-kit-";
/// The npm scope of the kit's scoped package.
pub const NPM_SCOPE: &str = "@egress-kit";
