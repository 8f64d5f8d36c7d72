//! `instance certify`: the lab's certificate of a running mirror's instance
//! key, for the snapshot it serves (see `egress_signing::instance` and
//! docs/threat-model.md). The mirror writes its public key to
//! `INSTANCE_DIR/instance.pub` when it starts (`egress-mirror
//! --instance-dir`); the operator certifies it with the key that signed the
//! snapshot and deploys the result as `INSTANCE_DIR/instance.cert`, which
//! the mirror reads whenever it changes.

use crate::{output, Failure};
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, Certificate, PublicKey, SigningKey};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct CertifyArgs {
    /// The lab's private key: the one that signed the snapshot (OpenSSH
    /// format, unencrypted, as `key generate` writes it).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The instance's public key: the `instance.pub` the mirror wrote into
    /// its --instance-dir when it started.
    #[arg(long, value_name = "FILE")]
    pub instance_key: PathBuf,
    /// The snapshot the instance serves: its directory (the ID is the
    /// SHA-256 of its MANIFEST, whose signature must verify with --key) or
    /// its ID (64 hex digits).
    #[arg(long, value_name = "DIR|ID")]
    pub snapshot: String,
    /// Where to write the certificate (replaced atomically): deploy it as
    /// `instance.cert` in the mirror's --instance-dir.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

fn read(path: &Path, what: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("{what} {}: {e}", path.display())))
}

/// The snapshot ID from `--snapshot`: a directory whose MANIFEST is signed
/// by `lab`, or 64 hex digits.
fn snapshot_id(arg: &str, lab: &SigningKey) -> Result<Sha256Digest, Failure> {
    let dir = Path::new(arg);
    if !dir.is_dir() {
        return Sha256Digest::from_hex(arg.trim()).map_err(|_| {
            Failure::usage(format!(
                "--snapshot {arg:?}: give the snapshot's directory or its ID (64 hex digits)"
            ))
        });
    }
    let manifest_path = dir.join(egress_snapshot::MANIFEST_FILE);
    let manifest = std::fs::read(&manifest_path)
        .map_err(|e| Failure::input(format!("--snapshot: {}: {e}", manifest_path.display())))?;
    let sig_path = dir.join(egress_snapshot::SIGNATURE_FILE);
    let sig = read(&sig_path, "--snapshot: the manifest's signature")?;
    let mine = AllowedSigners::parse(&AllowedSigners::line_for("lab", &lab.public()))
        .map_err(|e| Failure::internal(e.to_string()))?;
    egress_signing::verify(&sig, egress_signing::SNAPSHOT_NAMESPACE, &manifest, &mine).map_err(
        |e| {
            Failure::input(format!(
                "--snapshot {arg}: its manifest is not signed by --key ({e}); certify with the key that signed the snapshot"
            ))
        },
    )?;
    Ok(Sha256Digest::of(&manifest))
}

/// The snapshot an `instance.pub` line says its instance serves (the
/// mirror writes `egress-mirror instance of snapshot <ID>` as its comment).
fn stated_snapshot(line: &str) -> Option<Sha256Digest> {
    let (_, rest) = line.split_once("instance of snapshot ")?;
    Sha256Digest::from_hex(rest.split_whitespace().next()?).ok()
}

pub fn certify(args: CertifyArgs) -> Result<u8, Failure> {
    let lab = SigningKey::from_openssh(&read(&args.key, "--key")?)
        .map_err(|e| Failure::input(format!("--key {}: {e}", args.key.display())))?;
    let line = read(&args.instance_key, "--instance-key")?;
    let line = line.lines().next().unwrap_or_default();
    let instance = PublicKey::parse_openssh(line).map_err(|e| {
        Failure::input(format!(
            "--instance-key {}: {e}; give the instance.pub the mirror wrote at start",
            args.instance_key.display()
        ))
    })?;
    let snapshot = snapshot_id(&args.snapshot, &lab)?;
    if let Some(stated) = stated_snapshot(line).filter(|s| *s != snapshot) {
        return Err(Failure::input(format!(
            "--instance-key {}: that instance serves snapshot {}, not {}; certify it for the snapshot it serves",
            args.instance_key.display(),
            stated.to_hex(),
            snapshot.to_hex()
        )));
    }
    let certificate = Certificate::issue(&lab, &instance, snapshot);
    output::write_atomic(&args.out, certificate.to_text().as_bytes()).map_err(|e| {
        Failure::internal(format!("cannot write {}: {e}", args.out.display())).because(e)
    })?;
    egress_cli::outln!(
        "certified instance key {} for snapshot {} with {}; wrote {} (deploy it as instance.cert in the mirror's --instance-dir)",
        instance.fingerprint(),
        snapshot.to_hex(),
        lab.public().fingerprint(),
        args.out.display()
    );
    Ok(crate::exit::PASS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_an_instance_states() {
        let id = Sha256Digest::of(b"m");
        let line = format!(
            "ssh-ed25519 AAAA egress-mirror instance of snapshot {}",
            id.to_hex()
        );
        assert_eq!(stated_snapshot(&line), Some(id));
        assert_eq!(stated_snapshot("ssh-ed25519 AAAA"), None);
        assert_eq!(stated_snapshot("x instance of snapshot zz"), None);
    }
}
