//! The sub-probes, one module per predicate. Each sub-probe is a collector
//! (talks to the target, records evidence) and a judge (pure function of that
//! evidence); [`crate::catalog`] lists them with their stable IDs.

#[path = "controls.rs"]
pub mod controls;
#[path = "p1.rs"]
pub mod p1_digest;
#[path = "p2.rs"]
pub mod p2_replay;
#[path = "p3.rs"]
pub mod p3_passthrough;
#[path = "p4.rs"]
pub mod p4_build;
#[path = "p5.rs"]
pub mod p5_snapshot;
#[path = "p6.rs"]
pub mod p6_control;
