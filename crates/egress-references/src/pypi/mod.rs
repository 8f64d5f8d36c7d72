//! PyPI: the canary upstream, the caching proxy (B), and the built-in pair.

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;
pub mod universe;
