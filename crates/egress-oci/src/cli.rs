//! `snapshot push` and `snapshot pull`: the flags over [`egress_oci`], its
//! lines printed, its errors as exit codes.

use crate::{Connect, OciError, Reference};
use egress_cli::{exit, Failure};
use std::path::PathBuf;

/// How to reach the registry, shared by push and pull.
#[derive(clap::Args)]
pub struct RegistryArgs {
    /// Speak http to the registry instead of https.
    #[arg(long)]
    pub plain_http: bool,
    /// PEM file of CA certificates to trust for an https registry.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// The snapshot directory (signed).
    pub dir: PathBuf,
    /// Where to push it: HOST[:PORT]/REPO:TAG.
    #[arg(value_name = "REF")]
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Bytes per upload request (PATCH).
    #[arg(long, value_name = "BYTES", default_value_t = crate::DEFAULT_CHUNK)]
    pub chunk_size: usize,
}

#[derive(clap::Args)]
pub struct PullArgs {
    /// What to pull: HOST[:PORT]/REPO:TAG or HOST[:PORT]/REPO@sha256:HEX.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// The directory to write; it must not exist, and appears only once the
    /// snapshot verifies.
    pub dir: PathBuf,
    /// The OpenSSH allowed_signers file the snapshot must be signed by.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

fn failure(e: OciError) -> Failure {
    let code = match &e {
        OciError::Usage(_) => exit::USAGE,
        OciError::Input(_) => exit::INPUT,
        OciError::Registry(_) => exit::REGISTRY,
        OciError::Unverified(_) => exit::PULL_UNVERIFIED,
        OciError::Local(_) => exit::INTERNAL,
    };
    Failure::new(code, e.to_string())
}

fn connect<'a>(args: &'a RegistryArgs, config: Option<&'a std::path::Path>) -> Connect<'a> {
    Connect {
        plain_http: args.plain_http,
        cacert: args.cacert.as_deref(),
        docker_config: config,
    }
}

fn reference(text: &str) -> Result<Reference, Failure> {
    Reference::parse(text).map_err(|e| Failure::usage(e.to_string()))
}

pub fn push(args: PushArgs) -> Result<u8, Failure> {
    let r = reference(&args.reference)?;
    let config = crate::auth::docker_config_path();
    let how = connect(&args.registry, config.as_deref());
    let done = crate::push(&args.dir, &r, &how, args.chunk_size, |l| {
        egress_cli::outln!("{l}")
    })
    .map_err(failure)?;
    egress_cli::outln!(
        "pushed snapshot {} to {r}: manifest sha256:{}; {} file(s) uploaded ({} bytes), {} skipped ({} bytes already in the registry)",
        done.snapshot_id,
        done.digest.to_hex(),
        done.uploaded.0,
        done.uploaded.1,
        done.skipped.0,
        done.skipped.1
    );
    Ok(exit::PASS)
}

pub fn pull(args: PullArgs) -> Result<u8, Failure> {
    let r = reference(&args.reference)?;
    let signers = egress_signing::AllowedSigners::read(&args.allowed_signers)
        .map_err(|e| Failure::input(format!("--allowed-signers {e}")))?;
    let config = crate::auth::docker_config_path();
    let how = connect(&args.registry, config.as_deref());
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let done = crate::pull(&r, &args.dir, &signers, &how, jobs, |l| {
        egress_cli::outln!("{l}")
    })
    .map_err(failure)?;
    for n in &done.notes {
        egress_cli::outln!("{n}");
    }
    egress_cli::outln!(
        "{}: snapshot {} pulled from {r} (manifest sha256:{}) and verified: {} file(s), {} bytes fetched, {} already staged",
        args.dir.display(),
        done.snapshot_id,
        done.manifest_digest.to_hex(),
        done.files,
        done.fetched,
        done.reused
    );
    Ok(exit::PASS)
}
