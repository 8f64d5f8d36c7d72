//! The sub-probes, one module per predicate. Each sub-probe is a collector
//! (talks to the target, records evidence) and a judge (pure function of that
//! evidence); [`crate::catalog`] lists them with their stable IDs.

pub mod controls;
pub mod p1_digest;
pub mod p2_replay;
pub mod p3_passthrough;
pub mod p4_build;
pub mod p5_snapshot;
pub mod p6_control;
