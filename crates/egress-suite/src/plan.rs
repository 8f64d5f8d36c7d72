//! What a run is about: the target, the projects it probes, and what the
//! suite controls. The plan is recorded in the report, because judges read it.

use egress_model::{ProjectName, Url, Version};
pub use egress_model::{Upstream, UpstreamPlan};
use serde::{Deserialize, Serialize};

/// A project the snapshot holds (and so must serve), optionally one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresentSpec {
    pub name: ProjectName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
}

impl std::str::FromStr for PresentSpec {
    type Err = String;
    /// `NAME` or `NAME==VERSION`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, version) = match s.split_once("==") {
            Some((n, v)) => (n, Some(Version::new(v).map_err(|e| e.to_string())?)),
            None => (s, None),
        };
        Ok(Self {
            name: ProjectName::new(name).map_err(|e| e.to_string())?,
            version,
        })
    }
}

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The index URL the suite probes, ending in `/` (e.g. `http://h:8080/simple/`).
    pub index_url: String,
    pub protocol: String,
    pub present: Vec<PresentSpec>,
    /// How the present projects were chosen: `--present`, `manifest`, `root index`, `built-in`.
    pub present_source: String,
    pub absent: Vec<ProjectName>,
    /// An sdist-only project to ask for metadata, when one is known.
    pub sdist_only: Option<ProjectName>,
    /// A project whose text carries template expressions, when one is known.
    pub template: Option<ProjectName>,
    pub upstream: Option<UpstreamPlan>,
    pub manifest: ManifestSource,
    /// Whether `--allowed-signers` was given (its bytes are recorded as input).
    pub allowed_signers: bool,
}

impl Plan {
    pub fn index(&self) -> Result<Url, String> {
        Url::parse(&self.index_url).map_err(|e| e.to_string())
    }

    pub fn project_url(&self, name: &ProjectName) -> Result<Url, String> {
        self.index()?
            .join(&format!("{}/", name.as_str()))
            .map_err(|e| e.to_string())
    }
}

/// Default absent projects when nothing better is known: names that exist on
/// the public index and are very unlikely to be in a lab's snapshot under test.
pub const DEFAULT_ABSENT: &[&str] = &["egress-conformance-absent-probe", "pip-audit", "twine"];
