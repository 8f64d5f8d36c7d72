//! `snapshot diff OLD NEW`: the flags, and [`egress_diff`]'s diff printed.

use crate::{DiffErrorKind, Options};
use egress_cli::{exit, Failure};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// Markdown for the reviewer: counts and flags, additions, removals.
    Md,
    /// JSON, schema egress-conformance/snapshot-diff/v1.
    Json,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    /// The snapshot before (e.g. a layer's parent).
    pub old: PathBuf,
    /// The snapshot after.
    pub new: PathBuf,
    #[arg(long, value_enum, default_value = "md")]
    pub format: DiffFormat,
    /// Flag files uploaded within N days before NEW's cutoff
    /// (`exclude_newer`, else its creation time).
    #[arg(long, value_name = "N", default_value_t = crate::DEFAULT_RECENT_DAYS)]
    pub recent_days: u32,
    /// An OpenSSH allowed_signers file you trust: both snapshots'
    /// signatures must verify against it (exit 10 otherwise).
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
}

/// Prints the diff; a directory that is not a snapshot exits 4, one whose
/// bytes or signature do not verify exits 10.
pub fn diff(args: DiffArgs) -> Result<u8, Failure> {
    let signers = args
        .allowed_signers
        .as_deref()
        .map(egress_signing::AllowedSigners::read)
        .transpose()
        .map_err(|e| Failure::input(format!("--allowed-signers {e}")))?;
    let options = Options {
        recent_days: args.recent_days,
    };
    let d = crate::diff_dirs(&args.old, &args.new, signers.as_ref(), &options).map_err(|e| {
        let code = match e.kind() {
            DiffErrorKind::NotASnapshot => exit::INPUT,
            DiffErrorKind::Unverified => exit::BASE_UNVERIFIED,
        };
        Failure::new(code, e.to_string())
    })?;
    egress_cli::out!(
        "{}",
        match args.format {
            DiffFormat::Md => d.to_markdown(),
            DiffFormat::Json => d.to_json(),
        }
    );
    Ok(exit::PASS)
}
