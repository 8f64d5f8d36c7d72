//! `snapshot verify`: the flags, and the verdict of
//! [`egress_snapshot::verify`] printed.

use crate::{exit, Failure};
use egress_signing::AllowedSigners;
use egress_snapshot::verify::{SnapshotDir, Verification, VerifyError};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The snapshot directory.
    pub dir: PathBuf,
    /// An OpenSSH allowed_signers file you trust; without it the signature is
    /// not checked (the snapshot's own allowed_signers proves nothing).
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Hashing threads; by default one per core.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let jobs = match args.jobs {
        Some(0) => return Err(Failure::usage("--jobs: give at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let input = |e: VerifyError| Failure::input(e.to_string());
    let dir = SnapshotDir::open(&args.dir).map_err(input)?;
    let signers = match &args.allowed_signers {
        None => None,
        Some(p) => {
            let fail = |e: &dyn std::fmt::Display| {
                Failure::input(format!("--allowed-signers {}: {e}", p.display()))
            };
            let text = fs::read_to_string(p).map_err(|e| fail(&e))?;
            Some(AllowedSigners::parse(&text).map_err(|e| fail(&e))?)
        }
    };
    let found = dir.verify(signers.as_ref(), jobs).map_err(input)?;
    Ok(report(&args.dir, &found))
}

/// Prints the notes, every problem, and the verdict; returns the exit code.
fn report(dir: &Path, v: &Verification) -> u8 {
    for n in &v.notes {
        println!("{n}");
    }
    for p in &v.problems {
        println!("  BAD {p}");
    }
    let id = v.id.map_or_else(|| "?".to_string(), |d| d.to_hex());
    if v.ok() {
        println!("{}: snapshot {id} verified", dir.display());
        exit::PASS
    } else {
        println!(
            "{}: snapshot {id} FAILED verification: {} problem(s)",
            dir.display(),
            v.problems.len()
        );
        exit::FAIL
    }
}
