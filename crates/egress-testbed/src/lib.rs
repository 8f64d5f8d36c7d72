//! The testbed's peers: the PyPI, npm and apt mirrors labs deploy, each described by a
//! config file under `testbed/peers/`, started as a subprocess on loopback
//! with the canary upstream as its only upstream, and stopped again.
//!
//! [`suite`] runs the conformance suite against every peer and the
//! reference mirrors, one variant at a time, and renders the matrices;
//! `egress-conformance testbed` prints and writes them.

pub mod cli;
pub mod config;
pub mod peer;
pub mod relay;
pub mod setup;
pub mod suite;

pub use config::{ConfigError, FileSpec, PeerConfig, Protocol, Setup};
pub use peer::{fresh_dir, start, Context, PeerError, Running};
pub use setup::SetupError;
