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

/// Widely used packages on the public registry, most downloaded first, as
/// shipped in `top-packages.txt`: the absent names `check` takes by default.
pub const TOP_PACKAGES: &str = include_str!("top-packages.txt");

/// How many default absent names a run probes.
pub const DEFAULT_ABSENT_COUNT: usize = 3;

/// The default absent packages: the first [`DEFAULT_ABSENT_COUNT`] of [`TOP_PACKAGES`] for
/// which `held` (the snapshot holds it) is false.
pub fn default_absent(held: impl Fn(&NpmName) -> bool) -> Vec<NpmName> {
    TOP_PACKAGES
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| NpmName::new(l).ok())
        .filter(|n| !held(n))
        .take(DEFAULT_ABSENT_COUNT)
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_top_packages_are_valid_names() {
        let listed = TOP_PACKAGES
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
        assert_eq!(listed.clone().count(), 20);
        for l in listed {
            assert!(NpmName::new(l).is_ok_and(|n| n.as_str() == l), "{l}");
        }
        let all = default_absent(|_| false);
        assert_eq!(all.len(), 3);
        let first = all.first().cloned().expect("one");
        assert!(!default_absent(|n| *n == first).contains(&first));
    }
}
