//! `key generate`: an ed25519 signing key for snapshots, in the formats
//! OpenSSH reads, so that whoever verifies a snapshot needs no tool of ours.

use crate::write_new;
use egress_cli::{exit, Failure};
use egress_signing::{AllowedSigners, SigningKey, LAB_NAMESPACES};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The principal when none is given; `snapshot build` uses the key's comment
/// (which is this) unless told otherwise.
pub use crate::DEFAULT_PRINCIPAL;

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Where to write the private key; FILE.pub and FILE.allowed_signers go
    /// beside it. Existing files are never overwritten.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The principal named in the allowed_signers line (and the key comment).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_PRINCIPAL)]
    pub principal: String,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

pub fn generate(args: GenerateArgs) -> Result<u8, Failure> {
    let key_path = args.out;
    let pub_path = with_suffix(&key_path, ".pub");
    let signers_path = with_suffix(&key_path, ".allowed_signers");
    for p in [&key_path, &pub_path, &signers_path] {
        if fs::symlink_metadata(p).is_ok() {
            return Err(Failure::input(format!(
                "{} already exists; refusing to overwrite a key, choose another --out",
                p.display()
            )));
        }
    }
    if args.principal.trim().is_empty() || args.principal.chars().any(char::is_control) {
        return Err(Failure::usage(
            "--principal: give a non-empty name without control characters",
        ));
    }
    let key =
        SigningKey::generate(&args.principal).map_err(|e| Failure::internal(e.to_string()))?;
    let public = key.public();
    let pub_line = format!("{}\n", public.to_openssh(&args.principal));
    let signers_line = AllowedSigners::line_for_namespace(&args.principal, &public, LAB_NAMESPACES);

    let fail = |p: &Path, e: io::Error| {
        let code = if e.kind() == io::ErrorKind::AlreadyExists {
            exit::INPUT
        } else {
            exit::INTERNAL
        };
        Failure {
            code,
            message: format!("cannot write {}: {e}", p.display()),
            source: None,
        }
    };
    // The private key first: if it cannot be written, nothing else is.
    write_new(&key_path, key.to_openssh().as_bytes(), 0o600).map_err(|e| fail(&key_path, e))?;
    write_new(&pub_path, pub_line.as_bytes(), 0o644).map_err(|e| fail(&pub_path, e))?;
    write_new(&signers_path, format!("{signers_line}\n").as_bytes(), 0o644)
        .map_err(|e| fail(&signers_path, e))?;

    egress_cli::outln!("{signers_line}");
    egress_cli::outln!(
        "wrote {} (private, mode 0600), {} and {} (the line above: give it to whoever verifies snapshots); fingerprint {}",
        key_path.display(),
        pub_path.display(),
        signers_path.display(),
        public.fingerprint()
    );
    Ok(exit::PASS)
}
