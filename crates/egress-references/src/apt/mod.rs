//! apt: the canary upstream (a signed Debian repository), an isolated
//! apt-get for the tests, the caching proxy (B) and the built-in run.

pub mod builtin;
pub mod canary;
pub mod client;
pub mod kit;
pub mod proxy;
