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
    /// A tripwire project in the snapshot (the conformance kit's), when one
    /// is known; else P4.tripwire probes the controlled upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tripwire: Option<ProjectName>,
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

/// Widely used projects on the public index, most downloaded first, as
/// shipped in `top-projects.txt`: the absent names `check` takes by default.
pub const TOP_PROJECTS: &str = include_str!("top-projects.txt");

/// How many default absent names a run probes.
pub const DEFAULT_ABSENT_COUNT: usize = 3;

/// The default absent projects: the first [`DEFAULT_ABSENT_COUNT`] of
/// [`TOP_PROJECTS`] for which `held` (the snapshot holds it) is false.
pub fn default_absent(held: impl Fn(&ProjectName) -> bool) -> Vec<ProjectName> {
    TOP_PROJECTS
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| ProjectName::new(l).ok())
        .filter(|n| !held(n))
        .take(DEFAULT_ABSENT_COUNT)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_top_projects_are_valid_names() {
        let all = default_absent(|_| false);
        assert_eq!(all.len(), DEFAULT_ABSENT_COUNT);
        let listed = TOP_PROJECTS
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
        assert_eq!(listed.clone().count(), 20);
        for l in listed {
            assert!(ProjectName::new(l).is_ok_and(|n| n.as_str() == l), "{l}");
        }
        let first = all.first().cloned().expect("one");
        assert!(!default_absent(|n| *n == first).contains(&first));
    }
}
