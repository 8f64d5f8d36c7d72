//! What a run is about: the target, the projects it probes, and what the
//! suite controls. The plan is recorded in the report, because judges read it.

use egress_model::{NpmName, ProjectName, Url, Version};
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
    /// The packages an npm run probes (`protocol` is `npm`); the PyPI name
    /// lists above stay empty then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<NpmPlan>,
}

/// What an npm run is about. `Plan::index_url` is then the registry URL
/// (ending in `/`), under which packuments and tarballs live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NpmPlan {
    /// Packages the snapshot holds; the first is the one the controls fetch.
    pub present: Vec<NpmName>,
    /// A scoped package the snapshot holds, when one is known: the positive
    /// control for scoped-name encodings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoped: Option<NpmName>,
    /// Packages that exist upstream but must not be in the snapshot.
    pub absent: Vec<NpmName>,
    /// A package whose install script calls the controlled upstream's tripwire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tripwire: Option<NpmName>,
    /// A package whose description and README carry template expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<NpmName>,
}

impl Plan {
    pub fn is_npm(&self) -> bool {
        self.protocol == "npm"
    }

    pub fn index(&self) -> Result<Url, String> {
        Url::parse(&self.index_url).map_err(|e| e.to_string())
    }

    pub fn project_url(&self, name: &ProjectName) -> Result<Url, String> {
        self.index()?
            .join(&format!("{}/", name.as_str()))
            .map_err(|e| e.to_string())
    }
}

/// Default absent npm packages when nothing better is known: names that
/// exist on the public registry and are very unlikely to be in a lab's
/// snapshot under test.
pub const DEFAULT_NPM_ABSENT: &[&str] = &["egress-conformance-absent-probe", "left-pad", "is-odd"];

/// Default absent projects when nothing better is known: names that exist on
/// the public index and are very unlikely to be in a lab's snapshot under test.
pub const DEFAULT_ABSENT: &[&str] = &["egress-conformance-absent-probe", "pip-audit", "twine"];
