//! The interface to an upstream the suite controls (the canary), and the
//! package text the canary plants for the template probe.

use crate::{Observation, ProjectName, UpstreamRequest};
use serde::{Deserialize, Serialize};

/// Facts about the upstream the suite controls, recorded in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamPlan {
    /// The canary's origin, e.g. `http://127.0.0.1:40123`.
    pub origin: String,
    /// The canary's index URL, e.g. `http://127.0.0.1:40123/simple/`.
    pub index_url: String,
    /// A project the snapshot holds (the canary serves it too).
    pub present: ProjectName,
    /// A project the canary serves that the snapshot must not hold.
    pub upstream_only: ProjectName,
    /// Paths, on the canary, of that project's files.
    pub upstream_only_paths: Vec<String>,
    /// The sdist-only project whose build code calls the canary's tripwire.
    pub tripwire: ProjectName,
    /// The project whose metadata carries template expressions.
    pub template: ProjectName,
    /// A project the upstream lists with no digest on its file links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_digest: Option<ProjectName>,
    /// A project the upstream lists with a sha256 its bytes do not have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_digest: Option<ProjectName>,
    /// A project whose files the upstream serves from another origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offsite: Option<ProjectName>,
    /// A project the snapshot holds at a version the upstream marks yanked
    /// (cargo's index `yanked` flag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked: Option<ProjectName>,
    /// A Hub canary's repositories, which [`ProjectName`] cannot spell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hf: Option<HfUpstreamPlan>,
}

/// What a Hub canary serves that its kit's snapshot holds and must not
/// hold; repositories as a URL names them (`org/name`, `datasets/org/name`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HfUpstreamPlan {
    /// The repository the kit locks, whose `main` the canary moves.
    pub present: String,
    /// Repositories the kit's snapshot holds besides it.
    #[serde(default)]
    pub also_present: Vec<String>,
    /// A repository the canary serves and the kit does not lock.
    pub upstream_only: String,
    /// A repository whose files the canary serves with bytes its tree's
    /// digests contradict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_digest: Option<String>,
    /// A commit of `present` older than the one the kit locks.
    pub absent_revision: String,
    /// A file of `present` at the locked commit the kit's globs leave out.
    pub absent_file: String,
}

/// Why the controlled upstream did not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum UpstreamError {
    /// It serves no such project, package, file or version.
    #[error("{message}")]
    NotServed { message: String },
    /// It cannot do this kind of change (e.g. a PyPI upstream has no dist-tags).
    #[error("{message}")]
    Unsupported { message: String },
    /// It failed to make the change (e.g. the random source failed).
    #[error("{message}")]
    Failed { message: String },
    /// A remote upstream's control API did not answer, or answered with
    /// something that is not what the API returns.
    #[error("the canary's control API at {url}: {reason}")]
    Control { url: String, reason: String },
}

/// An upstream the suite controls: it sees every request the target makes
/// and can change what it serves during the run.
///
/// `mark` and `requests_since` cannot fail in this interface: an upstream
/// reached over a network (the standalone canary's control API) that fails
/// to answer them must remember it and make its caller discard the run, so
/// that an unread log never reads as "no contact".
pub trait Upstream: Send + Sync {
    fn plan(&self) -> UpstreamPlan;
    /// The current end of the request log; pass it to [`Upstream::requests_since`].
    fn mark(&self) -> u64;
    /// Requests logged after `mark`, in order.
    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest>;
    /// Publishes a new version of `project`; returns what changed.
    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError>;
    /// Replaces the bytes of an existing file, keeping its name (and updating
    /// the digest the upstream's pages list); returns what changed.
    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError>;
    /// Points the tag `tag` of `project` (an npm dist-tag such as `latest`)
    /// at `version`; returns what changed. Upstreams without tags refuse.
    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        let _ = (project, tag, version);
        Err(UpstreamError::Unsupported {
            message: "this upstream has no dist-tags".to_string(),
        })
    }
    /// Yanks `version` of `project` (a cargo index line's `yanked` set);
    /// returns what changed. Upstreams without yanking refuse.
    fn yank(&self, project: &str, version: &str) -> Result<Observation, UpstreamError> {
        let _ = (project, version);
        Err(UpstreamError::Unsupported {
            message: "this upstream cannot yank".to_string(),
        })
    }
}

/// Template expressions planted in package text, each with the text it turns
/// into if a template engine evaluates it. The prefixes make the evaluated
/// form unambiguous in any page. The syntaxes: Jinja, Django, Liquid and
/// Twig expressions (`{{ }}`) and statements (`{% %}`), `${}`
/// (JavaScript template literals, Freemarker, JSP EL), ERB (`<%= %>`) and
/// `#{}` (Ruby, CoffeeScript, Pug).
pub const TEMPLATE_MARKERS: [(&str, &str); 5] = [
    ("ECT-A{{7*7}}", "ECT-A49"),
    ("ECT-B${7*7}", "ECT-B49"),
    ("ECT-C<%= 7*7 %>", "ECT-C49"),
    ("ECT-D#{7*7}", "ECT-D49"),
    ("ECT-E{% if 7 %}49{% endif %}", "ECT-E49"),
];

/// The route on the canary that an artifact's build code calls. A request to
/// it means some code from an artifact ran.
pub const TRIPWIRE_PATH: &str = "/tripwire/";
