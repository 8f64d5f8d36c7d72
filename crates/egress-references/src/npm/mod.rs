//! npm: the canary upstream, the caching proxy (B), the built-in pair, and
//! an isolated npm client for the tests.

pub mod builtin;
pub mod canary;
pub mod client;
pub mod kit;
pub mod proxy;
pub mod universe;
