//! The library behind the `egress-conformance` binary: the built-in
//! references, `check`, `report verify`, `key generate`, `snapshot build` and
//! `snapshot verify`, and output writing, so that tests drive exactly what
//! the binary runs.

pub mod builtin;
pub mod check;
mod fetch;
pub mod keygen;
pub mod output;
mod pool;
mod progress;
pub mod snapshot_build;
mod snapshot_npm;
pub mod snapshot_verify;
pub mod testbed;
pub mod verify;

use clap::ValueEnum;

/// Exit codes, shared by every command (also in the README).
pub mod exit {
    /// Every predicate passes; `report verify`: every verdict re-derives.
    pub const PASS: u8 = 0;
    /// At least one predicate fails; `report verify`: a verdict differs.
    pub const FAIL: u8 = 1;
    /// Bad command line.
    pub const USAGE: u8 = 2;
    /// Inconclusive: target unreachable or a positive control failed.
    pub const INCONCLUSIVE: u8 = 3;
    /// An input file is unreadable or malformed (manifest, signers, CA, report).
    pub const INPUT: u8 = 4;
    /// The run itself could not be carried out (cannot write output, cannot
    /// start the built-in references, an index unreachable after retries).
    pub const INTERNAL: u8 = 5;
    /// `snapshot build` refused: the index does not serve what the locks pin
    /// (a pinned sha256 no page lists, or bytes that do not hash to it).
    /// Nothing was written.
    pub const REFUSED: u8 = 6;
}

/// A one-line error with the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn usage(m: impl Into<String>) -> Self {
        Self {
            code: exit::USAGE,
            message: m.into(),
        }
    }
    pub fn input(m: impl Into<String>) -> Self {
        Self {
            code: exit::INPUT,
            message: m.into(),
        }
    }
    pub fn internal(m: impl Into<String>) -> Self {
        Self {
            code: exit::INTERNAL,
            message: m.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Verdicts with their evidence lines, and the matrix.
    Text,
    /// The full report with every recorded exchange.
    Json,
    /// JUnit XML, one test case per sub-probe, for CI systems.
    Junit,
}
