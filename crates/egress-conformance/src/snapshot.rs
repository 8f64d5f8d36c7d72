//! `snapshot build` and `snapshot verify`: the flags, the build of
//! [`egress_build`] and the verdict of [`egress_snapshot::verify`] printed,
//! and their errors as exit codes.

use crate::{exit, Failure};
pub use egress_build::BuildArgs;
use egress_build::{BuildError, FlattenError, Kind};
use egress_signing::AllowedSigners;
use egress_snapshot::chain::ChainProblem;
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

#[derive(clap::Args)]
pub struct AptKeyringArgs {
    /// The snapshot signing key (the --sign-key of snapshot build).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Where to write the keyring; an existing file is replaced.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Write it ASCII-armoured (for a .asc file) instead of binary (.gpg).
    #[arg(long)]
    pub armor: bool,
}

pub fn build(args: BuildArgs) -> Result<u8, Failure> {
    let options = args.into_options().map_err(build_failure)?;
    egress_build::build(options, |line| egress_cli::outln!("{line}")).map_err(build_failure)?;
    Ok(exit::PASS)
}

fn build_failure(e: BuildError) -> Failure {
    let code = match e.kind() {
        Kind::Usage => exit::USAGE,
        Kind::Input => exit::INPUT,
        Kind::Internal => exit::INTERNAL,
        Kind::Refused => exit::REFUSED,
        Kind::Unverified => exit::UNVERIFIED,
        Kind::NoUploadTimes => exit::NO_UPLOAD_TIMES,
        Kind::BaseUnverified => exit::BASE_UNVERIFIED,
        Kind::ChainBroken => exit::CHAIN_BROKEN,
        Kind::LayerChangesBytes => exit::LAYER_CHANGES_BYTES,
        Kind::TombstoneAbsent => exit::TOMBSTONE_ABSENT,
    };
    Failure::new(code, e.to_string()).because(e)
}

/// `snapshot apt-keyring`: the public OpenPGP keyring of the key that signs
/// a snapshot's apt indexes, for a sandbox's apt (`signed-by`). The same
/// bytes are served at `/apt/keyring.gpg`, but a sandbox must get them
/// out-of-band, as a verifier gets allowed_signers.
pub fn apt_keyring(args: AptKeyringArgs) -> Result<u8, Failure> {
    let fail =
        |e: &dyn std::fmt::Display| Failure::input(format!("--key {}: {e}", args.key.display()));
    let text = fs::read_to_string(&args.key).map_err(|e| fail(&e))?;
    let key = egress_signing::SigningKey::from_openssh(&text).map_err(|e| fail(&e))?;
    let lab = egress_build::apt::lab_openpgp_key(&key);
    let bytes = if args.armor {
        lab.public_keyring_armored().into_bytes()
    } else {
        lab.public_keyring()
    };
    egress_build::write_atomic(&args.out, &bytes).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            format!("cannot write {}: {e}", args.out.display()),
        )
    })?;
    egress_cli::outln!(
        "{}: OpenPGP key {} ({}); point apt at it with [signed-by={}]",
        args.out.display(),
        lab.fingerprint(),
        egress_build::apt::LAB_KEY_USER_ID,
        args.out.display()
    );
    Ok(exit::PASS)
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
        Some(p) => Some(read_signers(p)?),
    };
    let found = dir.verify(signers.as_ref(), jobs).map_err(input)?;
    Ok(report(&args.dir, &found))
}

#[derive(clap::Args)]
pub struct FlattenArgs {
    /// The snapshot (a layer) to flatten.
    pub dir: PathBuf,
    /// Where to write the flattened snapshot (atomically).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The OpenSSH ed25519 private key that signs the new MANIFEST.
    #[arg(long, value_name = "FILE")]
    pub sign_key: PathBuf,
    /// Who DIR and its chain must be signed by [default: the key of
    /// --sign-key].
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
}

/// `snapshot flatten`: verify the chain, then write its view as one
/// snapshot without a parent ([`egress_build::flatten`]).
pub fn flatten(args: FlattenArgs) -> Result<u8, Failure> {
    let key = read_key(&args.sign_key)?;
    let signers = match &args.allowed_signers {
        Some(p) => Some(read_signers(p)?),
        None => None,
    };
    let done = egress_build::flatten(&args.dir, &args.out, &key, signers).map_err(|e| match e {
        FlattenError::SignKey(_) | FlattenError::Verify(_) => Failure::input(e.to_string()),
        FlattenError::ChainBroken { .. } => Failure::new(exit::CHAIN_BROKEN, e.to_string()),
        FlattenError::Unverified { .. } | FlattenError::Open { .. } => {
            Failure::new(exit::BASE_UNVERIFIED, e.to_string())
        }
        FlattenError::OutName => Failure::usage(e.to_string()),
        FlattenError::Write(e) => Failure::internal(e.to_string()).because(e),
    })?;
    egress_cli::outln!(
        "{}: snapshot {} with the view of {} ({} served paths), no chain",
        args.out.display(),
        done.snapshot.id(),
        done.from,
        done.snapshot.doc.served.len()
    );
    Ok(exit::PASS)
}

fn read_key(path: &Path) -> Result<egress_signing::SigningKey, Failure> {
    let fail =
        |e: &dyn std::fmt::Display| Failure::input(format!("--sign-key {}: {e}", path.display()));
    let text = fs::read_to_string(path).map_err(|e| fail(&e))?;
    egress_signing::SigningKey::from_openssh(&text).map_err(|e| fail(&e))
}

pub(crate) fn read_signers(p: &Path) -> Result<AllowedSigners, Failure> {
    AllowedSigners::read(p).map_err(|e| Failure::input(format!("--allowed-signers {e}")))
}

/// Prints the notes, every problem, and the verdict; returns the exit code.
fn report(dir: &Path, v: &Verification) -> u8 {
    for n in &v.notes {
        egress_cli::outln!("{n}");
    }
    for p in &v.problems {
        egress_cli::outln!("  BAD {p}");
    }
    let id = v.id.map_or_else(|| "?".to_string(), |d| d.to_hex());
    if v.ok() {
        egress_cli::outln!("{}: snapshot {id} verified", dir.display());
        exit::PASS
    } else {
        egress_cli::outln!(
            "{}: snapshot {id} FAILED verification: {} problem(s)",
            dir.display(),
            v.problems.len()
        );
        match v.chain {
            Some(ChainProblem::Gap { .. } | ChainProblem::Forked { .. }) => exit::CHAIN_BROKEN,
            _ => exit::FAIL,
        }
    }
}
