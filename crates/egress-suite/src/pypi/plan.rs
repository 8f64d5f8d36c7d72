//! What a PyPI run probes: present projects (optionally one version each),
//! absent ones, and the projects that P4 needs when they are known.

use crate::plan::PlanUrlError;
use egress_model::{ProjectName, Url, Version};
use serde::{Deserialize, Serialize};

/// A PyPI run's plan.
pub type Plan = crate::plan::Plan<Packages>;
/// A collector of a PyPI run.
pub type Collector<'a> = crate::collect::Collector<'a, Packages>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packages {
    pub present: Vec<PresentSpec>,
    pub absent: Vec<ProjectName>,
    /// An sdist-only project to ask for metadata, when one is known.
    pub sdist_only: Option<ProjectName>,
    /// A project whose text carries template expressions, when one is known.
    pub template: Option<ProjectName>,
}

/// A project the snapshot holds (and so must serve), optionally one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresentSpec {
    pub name: ProjectName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
}

/// `--present` is neither `NAME` nor `NAME==VERSION`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PresentSpecError {
    #[error(transparent)]
    Name(#[from] egress_model::name::InvalidName),
    #[error(transparent)]
    Version(#[from] egress_model::version::InvalidVersion),
}

impl std::str::FromStr for PresentSpec {
    type Err = PresentSpecError;
    /// `NAME` or `NAME==VERSION`.
    fn from_str(s: &str) -> Result<Self, PresentSpecError> {
        let (name, version) = match s.split_once("==") {
            Some((n, v)) => (n, Some(Version::new(v)?)),
            None => (s, None),
        };
        Ok(Self {
            name: ProjectName::new(name)?,
            version,
        })
    }
}

impl Plan {
    /// A project's page under the index URL.
    pub fn project_url(&self, name: &ProjectName) -> Result<Url, PlanUrlError> {
        Ok(self.index()?.join(&format!("{}/", name.as_str()))?)
    }
}

/// Default absent projects when nothing better is known: names that exist on
/// the public index and are very unlikely to be in a lab's snapshot under test.
pub const DEFAULT_ABSENT: &[&str] = &["egress-conformance-absent-probe", "pip-audit", "twine"];
