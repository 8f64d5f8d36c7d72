//! The testbed's peers: the PyPI and npm mirrors labs deploy, each described by a
//! config file under `testbed/peers/`, started as a subprocess on loopback
//! with the canary upstream as its only upstream, and stopped again.
//!
//! This crate only starts and stops peers; `egress-conformance testbed`
//! runs the suite against them and renders the matrix.

#![forbid(unsafe_code)]

pub mod config;
pub mod peer;
pub mod setup;

pub use config::{FileSpec, PeerConfig, Protocol, Setup};
pub use peer::{fresh_dir, start, Context, Running};
