//! The library behind the `egress-conformance` binary: its commands' flags,
//! their output and their exit codes, so that tests drive exactly what the
//! binary runs. The work is done elsewhere: the built-in run in
//! `egress-references`, the testbed in `egress-testbed`, snapshot building
//! in `egress-build` and snapshot verifying in `egress-snapshot`; `check`,
//! `report verify` and `key generate` are here.

// Standard output goes through `output::print` (`out!`, `outln!`) only.
#![warn(clippy::print_stdout)]

pub mod check;
pub mod combined;
pub mod instance;
pub mod output;
pub mod run_builtin;
pub mod sandbox_scan;
pub mod snapshot;
pub mod verify;

use clap::ValueEnum;

/// Exit codes, shared by every command (also in the README).
pub use egress_cli::{exit, Failure};

/// How the text format reads: short by default, every line with
/// `--verbose`; colour by `--color`.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct TextArgs {
    /// Text format: every sub-probe with its reason and evidence line,
    /// instead of a line per target, the matrix and a line per FAIL or
    /// INCONCLUSIVE. The report files (--out) always hold everything.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Colour the verdicts: auto (on a terminal, unless NO_COLOR is set),
    /// always, never.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: egress_cli::ColorChoice,
}

impl TextArgs {
    pub fn paint(&self) -> egress_model::report_text::Paint {
        egress_model::report_text::Paint {
            on: self.color.on(),
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
    /// One self-contained HTML page: the matrix, each sub-probe and the
    /// exchanges that decided it; loads nothing.
    Html,
    /// SARIF 2.1.0, for code-scanning dashboards: a rule per sub-probe, a
    /// result per FAIL and INCONCLUSIVE.
    Sarif,
}
