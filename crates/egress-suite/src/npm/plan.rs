//! What an npm run probes: present packages (a scoped one too, when known),
//! absent ones, and the packages that P4 needs when they are known. The
//! plan's URL is then the registry URL (ending in `/`), under which
//! packuments and tarballs live.

use egress_model::{NpmName, Url};
use serde::{Deserialize, Serialize};

/// An npm run's plan.
pub type Plan = crate::plan::Plan<Packages>;
/// A collector of an npm run.
pub type Collector<'a> = crate::collect::Collector<'a, Packages>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packages {
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

/// Default absent npm packages when nothing better is known: names that
/// exist on the public registry and are very unlikely to be in a lab's
/// snapshot under test.
pub const DEFAULT_NPM_ABSENT: &[&str] = &["egress-conformance-absent-probe", "left-pad", "is-odd"];

/// The full packument's media type, as npm asks for it with `--json`.
pub const FULL: &str = "application/json";
/// What npm sends when it installs: the abbreviated ("corgi") document first.
pub const ABBREVIATED: &str =
    "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

/// `path` (which starts with `/`) under the registry URL, which may carry a
/// path prefix of its own (`http://h/repository/npm/`).
pub fn at(registry: &Url, path: &str) -> Url {
    registry.with_path(&format!(
        "{}{}",
        registry.path().trim_end_matches('/'),
        path
    ))
}

pub(crate) fn packument_url(c: &Collector, name: &NpmName) -> Option<Url> {
    c.plan.index().ok().map(|r| at(&r, &name.packument_path()))
}
