//! cargo: the canary upstream, a sparse registry built from the crates
//! cargo already holds on this machine.

pub mod canary;
