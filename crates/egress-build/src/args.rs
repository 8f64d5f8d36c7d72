//! `snapshot build`'s flags: what every protocol shares here, each
//! protocol's own in its folder (`pypi::Inputs`, `npm::Inputs`,
//! `apt::Inputs`, `cargo::Inputs`), flattened into one [`BuildArgs`] that
//! the CLI takes as it is and turns into [`BuildOptions`].

use crate::{apt, cargo, hf, npm, pypi, BuildError, BuildOptions, Common, Cutoff, Layering, Rules};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    pub pypi: pypi::Inputs,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub npm: npm::Inputs,
    #[command(flatten)]
    pub apt: apt::Inputs,
    #[command(flatten)]
    pub cargo: cargo::Inputs,
    #[command(flatten)]
    pub hf: hf::Inputs,
    #[command(flatten)]
    pub rules: RuleArgs,
    #[command(flatten)]
    pub layer: LayerArgs,
}

/// The key, the output and how to fetch.
#[derive(clap::Args, Debug)]
pub struct CommonArgs {
    /// The OpenSSH ed25519 private key (unencrypted) that signs the MANIFEST.
    #[arg(long, value_name = "FILE")]
    pub sign_key: PathBuf,
    /// The principal in the shipped allowed_signers; by default the key's
    /// comment.
    #[arg(long, value_name = "NAME")]
    pub principal: Option<String>,
    /// Parallel downloads.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
    /// The snapshot directory to write (atomically; an existing snapshot there
    /// is replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// PEM file of CA certificates to trust for an https index, added to
    /// the system's store (which SSL_CERT_FILE and SSL_CERT_DIR replace).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

/// The cutoff and the universe rules (docs/snapshot-format.md, "Universes
/// and targets").
#[derive(clap::Args, Debug)]
pub struct RuleArgs {
    /// The cutoff, RFC 3339 (e.g. 2025-06-01T00:00:00Z): nothing uploaded
    /// after it enters the snapshot, and the snapshot says so, signed.
    #[arg(long, value_name = "TIME", help_heading = "Universe")]
    pub exclude_newer: Option<String>,
    /// The newest N versions of each project at or before the cutoff.
    #[arg(long, value_name = "N", help_heading = "Universe")]
    pub versions_per_project: Option<u32>,
    /// Leave out any file larger than this many bytes.
    #[arg(long, value_name = "BYTES", help_heading = "Universe")]
    pub max_file_bytes: Option<u64>,
    /// Follow dependencies under the same cutoff and filters (PyPI:
    /// Requires-Dist from PEP 658 metadata, markers and extras evaluated for
    /// the targets; npm: dependencies, non-optional peerDependencies and
    /// the optional packages for the --os/--cpu/--libc platform).
    #[arg(long, help_heading = "Universe")]
    pub closure: bool,
    /// Stop at a project the registry lacks or a file whose bytes do not
    /// match the registry's hash, instead of reporting it and going on.
    #[arg(long, help_heading = "Universe")]
    pub strict: bool,
    /// Select and report what each rule keeps and drops, with the sizes
    /// the index lists; download nothing, write nothing.
    #[arg(long, help_heading = "Universe")]
    pub dry_run: bool,
}

/// Layers (docs/snapshot-format.md, "Layers").
#[derive(clap::Args, Debug)]
pub struct LayerArgs {
    /// Build a layer on this snapshot: its whole view is served again, files
    /// already in it are hard-linked (not stored twice), and the new signed
    /// SNAPSHOT.json names it as the parent. It must verify first.
    #[arg(long, value_name = "DIR", help_heading = "Layers")]
    pub base: Option<PathBuf>,
    /// Take NAME==VERSION (PyPI) or NAME@VERSION (npm) out of the base's
    /// view, recorded as a signed tombstone; repeatable.
    #[arg(long, value_name = "SPEC", requires = "base", help_heading = "Layers")]
    pub remove: Vec<String>,
    /// Who the base and every layer below it must be signed by [default:
    /// the key of --sign-key].
    #[arg(long, value_name = "FILE", requires = "base", help_heading = "Layers")]
    pub base_allowed_signers: Option<PathBuf>,
}

impl BuildArgs {
    /// The build these flags ask for; a cutoff that does not parse, or
    /// lies in the future, is a usage error.
    pub fn into_options(self) -> Result<BuildOptions, BuildError> {
        let r = self.rules;
        let exclude_newer = r
            .exclude_newer
            .as_deref()
            .map(|t| Cutoff::parse(t, egress_model::Timestamp::now()))
            .transpose()?;
        let c = self.common;
        Ok(BuildOptions {
            common: Common {
                sign_key: c.sign_key,
                principal: c.principal,
                jobs: c.jobs,
                out: c.out,
                cacert: c.cacert,
                rules: Rules {
                    exclude_newer,
                    versions_per_project: r.versions_per_project,
                    max_file_bytes: r.max_file_bytes,
                    closure: r.closure,
                    strict: r.strict,
                },
                dry_run: r.dry_run,
                layer: Layering {
                    base: self.layer.base,
                    remove: self.layer.remove,
                    base_signers: self.layer.base_allowed_signers,
                },
            },
            pypi: self.pypi,
            npm: self.npm,
            apt: self.apt,
            cargo: self.cargo,
            hf: self.hf,
        })
    }
}
