//! apt: an isolated apt-get for the tests (the canary upstream follows).

pub mod client;
