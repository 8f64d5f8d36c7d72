//! cargo: the canary upstream (a sparse registry of its own fixture
//! crates, or of the crates cargo cached here), the caching proxy (B) and
//! the built-in run of (A) against (B).

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;
