//! The flags of `check`, and the URL forms they accept.

use crate::{Failure, Format};
use egress_model::{Sha256Digest, Url};
use egress_suite::Protocol;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The mirror's index URL, e.g. http://127.0.0.1:8080/simple/ (a bare origin
    /// means /simple/); with --protocol npm, its registry URL (a bare origin means /);
    /// with --protocol apt, the archive root of a `deb` source line; with --protocol
    /// cargo, the sparse index root (a bare origin means /cargo/index/); with
    /// --protocol hf, what a sandbox sets as HF_ENDPOINT (a bare origin means /hf/).
    pub url: String,
    /// Registry protocol the mirror speaks.
    #[arg(
        long,
        default_value = "pypi",
        value_parser = clap::builder::PossibleValuesParser::new(Protocol::ALL.iter().map(|p| p.as_str()))
    )]
    pub protocol: String,
    /// The snapshot manifest (a MANIFEST file or its URL); by default the mirror's
    /// /.well-known/egress-mirror/MANIFEST.
    #[arg(long, value_name = "PATH|URL")]
    pub manifest: Option<String>,
    /// An OpenSSH allowed_signers file trusted to sign the manifest.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// A project (and version) the snapshot holds; repeatable. By default taken
    /// from the manifest or the root index (npm: a package name, `@scope/name`
    /// too; by default taken from the manifest's SNAPSHOT.json).
    #[arg(long, value_name = "NAME==VERSION")]
    pub present: Vec<String>,
    /// A project that exists upstream but must not be in the snapshot; repeatable.
    #[arg(long, value_name = "NAME")]
    pub absent: Vec<String>,
    /// PEM file of CA certificates to trust for an https mirror.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub text: crate::TextArgs,
    /// Also write the report in every format into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A standalone canary (`egress-conformance canary`) that the mirror
    /// uses as its upstream: its URL (origin). Every sub-probe that needs a
    /// controlled upstream then runs.
    #[arg(long, value_name = "URL", requires = "canary_secret")]
    pub canary: Option<String>,
    /// The canary's secret file (as written by `canary --secret-file`).
    #[arg(long, value_name = "FILE", requires = "canary")]
    pub canary_secret: Option<PathBuf>,
    /// With --protocol apt: the dist (suite or codename) under `dists/`.
    #[arg(long, value_name = "NAME")]
    pub dist: Option<String>,
    /// With --protocol apt: the component to probe.
    #[arg(long, value_name = "NAME", default_value = "main")]
    pub component: String,
    /// With --protocol apt: the architecture to probe.
    #[arg(long, value_name = "ARCH", default_value = "amd64")]
    pub arch: String,
    /// With --protocol apt: the OpenPGP keyring (binary or armored) the
    /// dist's Release must verify against, as a source's `signed-by` names.
    #[arg(long, value_name = "FILE")]
    pub keyring: Option<PathBuf>,
    /// Longest time, in seconds, for any single exchange.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// Also send the vendor control routes that would change a mirror's
    /// state if honoured (cache drops, user and index creation, deletes);
    /// by default only the non-destructive ones. Recorded in the report.
    #[arg(long)]
    pub destructive: bool,
    /// Run from inside a sandbox: also run `sandbox-scan` with this URL as
    /// the mirror, and give one report of both (the suite's verdicts and
    /// every path out of the sandbox). Not with --canary: from a sealed
    /// sandbox the canary's control API is out of reach by design.
    #[arg(long, conflicts_with = "canary")]
    pub from_sandbox: bool,
    /// With --from-sandbox: a canary address the sandbox must not reach
    /// (IP:PORT, repeatable), as `sandbox-scan --canary`.
    #[arg(long, value_name = "ADDR", requires = "from_sandbox")]
    pub sandbox_canary: Vec<String>,
    /// With --from-sandbox: as `sandbox-scan --canary-zone`.
    #[arg(long, value_name = "ZONE", requires = "from_sandbox")]
    pub canary_zone: Option<String>,
    /// With --from-sandbox: as `sandbox-scan --lockfiles`.
    #[arg(long, value_name = "DIR", requires = "from_sandbox")]
    pub lockfiles: Option<PathBuf>,
    /// The snapshot ID (64 hex digits: the SHA-256 of its MANIFEST) the
    /// mirror must serve; P5.expected-snapshot fails otherwise.
    #[arg(long, value_name = "ID")]
    pub expect_snapshot: Option<String>,
    /// The sha256 (64 hex digits) of the mirror binary the attested
    /// instance must report; implies --require-attestation.
    #[arg(long, value_name = "SHA256")]
    pub expect_binary: Option<String>,
    /// Fail P5.instance-attestation when the mirror offers no attestation
    /// (by default a mirror without one is SKIPPED there). Needs
    /// --allowed-signers, the lab keys that certify instances.
    #[arg(long)]
    pub require_attestation: bool,
}

impl CheckArgs {
    /// What the run expects of the instance, from --expect-snapshot,
    /// --expect-binary and --require-attestation.
    pub(crate) fn expectations(&self) -> Result<egress_suite::Expect, Failure> {
        let digest = |flag: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|v| {
                    Sha256Digest::from_hex(v.trim()).map_err(|_| {
                        Failure::usage(format!(
                            "{flag} {v:?}: give 64 hex digits (a snapshot ID is the sha256 of its MANIFEST, as `snapshot verify` prints it)"
                        ))
                    })
                })
                .transpose()
        };
        let expect = egress_suite::Expect {
            snapshot: digest("--expect-snapshot", &self.expect_snapshot)?,
            binary: digest("--expect-binary", &self.expect_binary)?,
            attestation: self.require_attestation,
        };
        if (expect.attestation || expect.binary.is_some()) && self.allowed_signers.is_none() {
            return Err(Failure::usage(
                "--require-attestation and --expect-binary need --allowed-signers: the lab keys that certify instance keys",
            ));
        }
        Ok(expect)
    }
}

/// The index URL the suite probes: a bare origin means `/simple/`, and the
/// path always ends in `/` so that project pages join under it.
pub fn index_url(raw: &str) -> Result<Url, Failure> {
    base_url(raw, "/simple/")
}

/// The registry URL the suite probes: a bare origin means `/`, and the path
/// always ends in `/` so that packuments join under it.
pub fn registry_url(raw: &str) -> Result<Url, Failure> {
    base_url(raw, "/")
}

/// The archive root the suite probes: its path always ends in `/`. A bare
/// origin means `/`.
pub fn archive_url(raw: &str) -> Result<Url, Failure> {
    base_url(raw, "/")
}

/// `raw` with its path ending in `/`; a bare origin gets `root`.
pub(crate) fn base_url(raw: &str, root: &str) -> Result<Url, Failure> {
    let url = Url::parse(raw).map_err(|e| Failure::usage(format!("URL: {e}")))?;
    let path = url.path();
    let fixed = if path == "/" {
        root.to_string()
    } else if path.ends_with('/') {
        path.to_string()
    } else {
        format!("{path}/")
    };
    if url.path_and_query().contains('?') {
        return Err(Failure::usage(
            "URL: the index URL must not carry a query string",
        ));
    }
    Ok(url.with_path(&fixed))
}
