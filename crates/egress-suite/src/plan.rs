//! What a run is about, in terms every protocol shares: the URL the suite
//! probes, the manifest, the controlled upstream and the signers. The
//! protocol's own part (which packages the run probes) is the type parameter
//! `P`, flattened into the same JSON object. The plan is recorded in the
//! report, because judges read it.

use egress_model::{Sha256Digest, Url};
pub use egress_model::{Upstream, UpstreamPlan};
use serde::{Deserialize, Serialize};

/// The plan's URL does not parse, or a path does not join under it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct PlanUrlError(#[from] pub egress_model::url::InvalidUrl);

/// Where the manifest comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "from", content = "at")]
pub enum ManifestSource {
    /// The mirror's well-known path.
    WellKnown,
    /// A local file given with `--manifest` (its bytes are recorded as input).
    File(String),
    /// A URL given with `--manifest` (fetched and recorded as an exchange).
    Url(String),
}

/// What the run expects of the instance it checks (`check
/// --expect-snapshot`, `--expect-binary`, `--require-attestation`), judged
/// by P5.expected-snapshot and P5.instance-attestation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expect {
    /// The snapshot ID (SHA-256 of its MANIFEST) the mirror must serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Sha256Digest>,
    /// The sha256 of the binary the instance must report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<Sha256Digest>,
    /// Whether a mirror that offers no attestation fails (rather than
    /// skips) P5.instance-attestation; implied by `binary`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub attestation: bool,
}

impl Expect {
    /// Nothing is expected (the plan's JSON then leaves the field out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan<P> {
    /// The URL the suite probes, ending in `/`: PyPI's index URL (e.g.
    /// `http://h:8080/simple/`), npm's registry URL.
    pub index_url: String,
    /// The packages this protocol's run probes.
    #[serde(flatten)]
    pub packages: P,
    /// How the present packages were chosen: `--present`, `manifest`, `root index`, `built-in`, ...
    pub present_source: String,
    pub upstream: Option<UpstreamPlan>,
    pub manifest: ManifestSource,
    /// Whether `--allowed-signers` was given (its bytes are recorded as input).
    pub allowed_signers: bool,
    /// Whether P6.vendor-routes sends the destructive vendor routes too
    /// (`check --destructive`); the built-in run and the testbed send all.
    /// Recorded so that `report verify` knows what was sent.
    #[serde(default)]
    pub destructive: bool,
    /// What the instance must be (see [`Expect`]).
    #[serde(default, skip_serializing_if = "Expect::is_empty")]
    pub expect: Expect,
}

impl<P> Plan<P> {
    pub fn index(&self) -> Result<Url, PlanUrlError> {
        Ok(Url::parse(&self.index_url)?)
    }

    /// The same plan with other packages (the shared fields are cloned).
    pub fn with<Q>(&self, packages: Q) -> Plan<Q> {
        Plan {
            index_url: self.index_url.clone(),
            packages,
            present_source: self.present_source.clone(),
            upstream: self.upstream.clone(),
            manifest: self.manifest.clone(),
            allowed_signers: self.allowed_signers,
            destructive: self.destructive,
            expect: self.expect.clone(),
        }
    }

    /// The same plan with its packages mapped.
    pub fn map<Q>(self, f: impl FnOnce(P) -> Q) -> Plan<Q> {
        Plan {
            index_url: self.index_url,
            packages: f(self.packages),
            present_source: self.present_source,
            upstream: self.upstream,
            manifest: self.manifest,
            allowed_signers: self.allowed_signers,
            destructive: self.destructive,
            expect: self.expect,
        }
    }
}
