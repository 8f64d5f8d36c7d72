//! Sub-probe pieces that every protocol shares, generic over the protocol's
//! packages and facts: a protocol's table names them beside its own.

pub mod build;
pub mod cases;
pub mod chain;
pub mod cutoff;
pub mod h2_smuggling;
pub mod instance;
pub mod passthrough;
pub mod replay;
pub mod routes;
pub mod runwide;
pub mod smuggling;
pub mod snapshot;
pub mod vendor;
pub mod writes;
