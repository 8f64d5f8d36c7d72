//! apt: the canary upstream (a signed Debian repository) and an isolated
//! apt-get for the tests.

pub mod canary;
pub mod client;
