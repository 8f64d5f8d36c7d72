//! What a Hub run probes: the endpoint at the plan's URL, repositories the
//! snapshot holds (the first is the controls'), absent ones, and what the
//! upstream has that the snapshot must not: a commit of the first
//! repository and a file at its held commit.

use egress_model::{HfRepoId, HfRepoType, Url};
use serde::{Deserialize, Serialize};

/// A Hub run's plan.
pub type Plan = crate::plan::Plan<Packages>;
/// A collector of a Hub run.
pub type Collector<'a> = crate::collect::Collector<'a, Packages>;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Packages {
    /// Repositories the snapshot holds, as [`RepoRef`] reads them; the
    /// first is the one the controls read.
    pub present: Vec<String>,
    /// Repositories that exist upstream but must not be in the snapshot.
    pub absent: Vec<String>,
    /// A commit of the first present repository that the upstream has and
    /// the snapshot does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_revision: Option<String>,
    /// A file of the first present repository at its held commit that the
    /// upstream has and the snapshot does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_file: Option<String>,
    /// A repository the upstream serves with bytes its tree's digests
    /// contradict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_digest: Option<String>,
}

/// A repository as a URL names it: `org/name` (a model),
/// `datasets/org/name`, `spaces/org/name`, or with `models/` spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRef {
    pub repo_type: HfRepoType,
    pub id: HfRepoId,
}

impl RepoRef {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let (repo_type, id) = match raw.split_once('/') {
            Some(("datasets", rest)) => (HfRepoType::Dataset, rest),
            Some(("spaces", rest)) => (HfRepoType::Space, rest),
            Some(("models", rest)) => (HfRepoType::Model, rest),
            _ => (HfRepoType::Model, raw),
        };
        let id = HfRepoId::new(id).map_err(|e| e.to_string())?;
        Ok(Self { repo_type, id })
    }

    /// `/api/{models|datasets|spaces}/{id}` and `tail`, below the endpoint.
    pub fn api(&self, endpoint: &Url, tail: &str) -> Url {
        at(
            endpoint,
            &format!("api/{}/{}{tail}", self.repo_type.api_segment(), self.id),
        )
    }

    /// `/[datasets/]{id}/resolve/{rev}/{file}` below the endpoint, the
    /// file quoted as the client quotes it.
    pub fn resolve(&self, endpoint: &Url, rev: &str, file: &str) -> Url {
        at(
            endpoint,
            &format!(
                "{}{}/resolve/{rev}/{}",
                self.repo_type.url_prefix(),
                self.id,
                egress_snapshot::hf::quote(file)
            ),
        )
    }

    /// `/[datasets/]{id}` and `tail`, below the endpoint (the Hub's pages).
    pub fn page(&self, endpoint: &Url, tail: &str) -> Url {
        at(
            endpoint,
            &format!("{}{}{tail}", self.repo_type.url_prefix(), self.id),
        )
    }
}

impl std::fmt::Display for RepoRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.repo_type.url_prefix(), self.id)
    }
}

/// `rel` (no leading `/`) below the endpoint, with or without its `/`.
pub fn at(endpoint: &Url, rel: &str) -> Url {
    let base = endpoint.path().trim_end_matches('/');
    endpoint.with_path(&format!("{base}/{rel}"))
}

/// The endpoint, `None` when the plan's URL does not parse.
pub(crate) fn endpoint(c: &Collector) -> Option<Url> {
    c.plan.index().ok()
}

/// The repositories `names` reads, those that parse.
pub fn repos(names: &[String]) -> Vec<RepoRef> {
    names
        .iter()
        .filter_map(|n| RepoRef::parse(n).ok())
        .collect()
}

/// The first present repository: the controls'.
pub fn first(p: &Packages) -> Option<RepoRef> {
    p.present.first().and_then(|n| RepoRef::parse(n).ok())
}
