//! What an apt run probes: a dist of the archive at the plan's URL, one
//! component and architecture of it, the keyring its `Release` must verify
//! against, present packages (in the snapshot) and absent ones. The plan's
//! URL is the archive root, ending in `/`: `dists/` and `pool/` live under it.

use egress_model::{Url, WireBytes};
use serde::{Deserialize, Serialize};

/// An apt run's plan.
pub type Plan = crate::plan::Plan<Packages>;
/// A collector of an apt run.
pub type Collector<'a> = crate::collect::Collector<'a, Packages>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packages {
    /// The dist (suite or codename) under `dists/`.
    pub dist: String,
    pub component: String,
    pub arch: String,
    /// The OpenPGP keyring (binary or armored) the `Release` must verify
    /// against (`--keyring`); recorded so that `report verify` re-derives
    /// the signature verdict from the same bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring: Option<WireBytes>,
    /// Packages the snapshot holds; the first is the one the controls fetch.
    pub present: Vec<String>,
    /// Packages that exist upstream but must not be in the snapshot.
    pub absent: Vec<String>,
    /// A package whose maintainer scripts call the controlled upstream's tripwire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tripwire: Option<String>,
    /// A package whose `Description` carries template expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// The default component and architecture of `check --protocol apt`.
pub const DEFAULT_COMPONENT: &str = "main";
pub const DEFAULT_ARCH: &str = "amd64";

/// `rel` (no leading `/`) under the archive root `archive` (ends in `/`).
pub fn at(archive: &Url, rel: &str) -> Url {
    let base = archive.path();
    let sep = if base.ends_with('/') { "" } else { "/" };
    archive.with_path(&format!("{base}{sep}{rel}"))
}

impl Packages {
    /// `dists/<dist>/<rel>`.
    pub fn dist_path(&self, rel: &str) -> String {
        format!("dists/{}/{rel}", self.dist)
    }

    /// The `Packages` index, relative to `dists/<dist>/`.
    pub fn packages_index(&self) -> String {
        format!("{}/binary-{}/Packages", self.component, self.arch)
    }

    /// Where a pool file of `name` at `version` lives by Debian's layout,
    /// relative to the archive root (`pool/main/e/ec-x/ec-x_1.0_amd64.deb`;
    /// `lib*` names go under their first four letters).
    pub fn pool_path(&self, name: &str, version: &str) -> String {
        format!("{}{name}_{version}_{}.deb", self.pool_dir(name), self.arch)
    }

    /// The pool directory of `name`, ending in `/`.
    pub fn pool_dir(&self, name: &str) -> String {
        let prefix: String = if name.starts_with("lib") {
            name.chars().take(4).collect()
        } else {
            name.chars().take(1).collect()
        };
        format!("pool/{}/{prefix}/{name}/", self.component)
    }
}

pub(crate) fn archive(c: &Collector) -> Option<Url> {
    c.plan.index().ok()
}
