//! `snapshot misses LOG...`: the flags, and `egress_mirror::misses`'s
//! aggregate written out.

use super::{aggregate_files, OutputFormat, Protocol};
use egress_cli::{exit, Failure};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MissesFormat {
    /// A universe file of one protocol (needs --protocol), for
    /// `snapshot build --pypi-universe` or `--npm-universe`.
    Universe,
    /// JSON, schema egress-conformance/misses/v1: both protocols unless
    /// --protocol picks one.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MissesProtocol {
    Pypi,
    Npm,
}

#[derive(clap::Args)]
pub struct MissesArgs {
    /// Misses logs written by `egress-mirror --misses-log` (one or more;
    /// each may hold several runs).
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "universe")]
    pub format: MissesFormat,
    /// The protocol to list; required with --format universe.
    #[arg(long, value_enum)]
    pub protocol: Option<MissesProtocol>,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Prints (or writes) the aggregate. A log that cannot be read exits 4; a
/// line that is not the mirror's exits 14, naming the file and line;
/// nothing is written either way.
pub fn misses(args: MissesArgs) -> Result<u8, Failure> {
    let protocol = args.protocol.map(|p| match p {
        MissesProtocol::Pypi => Protocol::Pypi,
        MissesProtocol::Npm => Protocol::Npm,
    });
    let format = match args.format {
        MissesFormat::Universe => OutputFormat::Universe,
        MissesFormat::Json => OutputFormat::Json,
    };
    if format == OutputFormat::Universe && protocol.is_none() {
        return Err(Failure::usage(
            "--format universe writes one protocol's universe: give --protocol pypi or --protocol npm (or --format json for both)",
        ));
    }
    let agg = aggregate_files(&args.logs).map_err(|e| {
        let code = if e.is_bad_format() {
            exit::NOT_A_MISSES_LOG
        } else {
            exit::INPUT
        };
        Failure::new(code, e.to_string())
    })?;
    let text = agg.render(format, protocol);
    match &args.out {
        Some(path) => egress_cli::store::write_atomic(path, text.as_bytes()).map_err(|e| {
            Failure::internal(format!("cannot write {}: {e}", path.display())).because(e)
        })?,
        None => egress_cli::out!("{text}"),
    }
    Ok(exit::PASS)
}
