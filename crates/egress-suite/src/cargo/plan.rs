//! What a cargo run probes: the sparse index at the plan's URL, crates the
//! snapshot holds (the first is the controls'), absent ones, the crate
//! whose text carries template expressions and one held at a yanked
//! version.

use egress_model::{CrateName, Url};
use serde::{Deserialize, Serialize};

/// A cargo run's plan.
pub type Plan = crate::plan::Plan<Packages>;
/// A collector of a cargo run.
pub type Collector<'a> = crate::collect::Collector<'a, Packages>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packages {
    /// Crates the snapshot holds; the first is the one the controls fetch.
    pub present: Vec<String>,
    /// Crates that exist upstream but must not be in the snapshot.
    pub absent: Vec<String>,
    /// A crate whose description and README carry template expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// A crate the snapshot holds at a version its signed index line marks
    /// yanked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked: Option<String>,
}

/// `rel` (no leading `/`) under the index root `index` (ends in `/`).
pub fn at(index: &Url, rel: &str) -> Url {
    let base = index.path();
    let sep = if base.ends_with('/') { "" } else { "/" };
    index.with_path(&format!("{base}{sep}{rel}"))
}

/// The index file of `name` under the index root, or `None` for a name
/// cargo would not ask for.
pub fn index_file(index: &Url, name: &str) -> Option<Url> {
    CrateName::new(name)
        .ok()
        .map(|n| at(index, &n.index_path()))
}

/// The index root, `None` when the plan's URL does not parse.
pub(crate) fn root(c: &Collector) -> Option<Url> {
    c.plan.index().ok()
}
