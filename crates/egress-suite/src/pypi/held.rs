//! What a snapshot's `SNAPSHOT.json` says it holds, and which of its
//! projects each role of a PyPI plan takes when no flag names one: the
//! project the controls take, the conformance kit's projects, and any
//! sdist (for P4).

use crate::kit::PREFIX;
use egress_model::{DistFilename, DistKind, ProjectName};
use egress_snapshot::SnapshotDoc;
use std::collections::BTreeMap;

/// The kit's PyPI projects.
pub mod kit {
    /// A wheel and an sdist of one project.
    pub const PRESENT: &str = "egress-kit-present";
    /// Only an sdist: its core metadata cannot be known without a build.
    pub const SDIST_ONLY: &str = "egress-kit-sdist-only";
    /// Only an sdist, whose `setup.py` calls the canary's tripwire.
    pub const TRIPWIRE: &str = "egress-kit-tripwire";
    /// A wheel whose Summary and Description carry every template marker.
    pub const TEMPLATE: &str = "egress-kit-template";
}

/// Each project a snapshot holds (from its page under the index path) with
/// the kinds of files it serves (from the file names of the paths it serves).
#[derive(Debug, Default)]
pub struct Held {
    /// Project name to (has a wheel, has an sdist).
    projects: BTreeMap<ProjectName, (bool, bool)>,
}

impl Held {
    pub fn of(doc: &SnapshotDoc, index_path: &str) -> Self {
        let mut projects: BTreeMap<ProjectName, (bool, bool)> = BTreeMap::new();
        for p in doc.paths() {
            let page = p
                .strip_prefix(index_path)
                .and_then(|n| n.strip_suffix('/'))
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .and_then(|n| ProjectName::new(n).ok());
            if let Some(name) = page {
                projects.entry(name).or_default();
            }
            let file = p
                .rsplit('/')
                .next()
                .and_then(|f| DistFilename::parse(f).ok());
            if let Some(f) = file {
                let kinds = projects.entry(f.name).or_default();
                match f.kind {
                    DistKind::Sdist => kinds.1 = true,
                    _ => kinds.0 = true,
                }
            }
        }
        Self { projects }
    }

    pub fn holds(&self, name: &ProjectName) -> bool {
        self.projects.contains_key(name)
    }

    /// A kit project, if the snapshot holds it.
    pub fn kit(&self, name: &str) -> Option<ProjectName> {
        ProjectName::new(name).ok().filter(|n| self.holds(n))
    }

    /// The project the controls take: the lab's own first (the first by
    /// name that is not a kit project), else the kit's present project;
    /// never the kit's tripwire, template or sdist-only project.
    pub fn present(&self) -> Option<ProjectName> {
        let probes = [kit::TRIPWIRE, kit::TEMPLATE, kit::SDIST_ONLY];
        let mut names: Vec<&ProjectName> = self
            .projects
            .keys()
            .filter(|n| !probes.contains(&n.as_str()))
            .collect();
        names.sort_by_key(|n| (n.as_str().starts_with(PREFIX), *n));
        names.first().map(|n| (*n).clone())
    }

    /// The project P4.metadata-sdist asks sdist metadata of: the kit's
    /// sdist-only project, else the first (by name) that serves only
    /// sdists, else the first that serves one; never the tripwire.
    pub fn sdist_only(&self) -> Option<ProjectName> {
        let with_sdist = || {
            self.projects
                .iter()
                .filter(|(n, (_, sdist))| *sdist && n.as_str() != kit::TRIPWIRE)
        };
        self.kit(kit::SDIST_ONLY)
            .or_else(|| {
                with_sdist()
                    .find(|(_, (wheel, _))| !wheel)
                    .map(|(n, _)| n.clone())
            })
            .or_else(|| with_sdist().next().map(|(n, _)| n.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(paths: &[&str]) -> Held {
        let served = paths
            .iter()
            .map(|p| egress_snapshot::ServedEntry {
                path: p.to_string(),
                content_type: "text/html".into(),
                sha256: egress_model::Sha256Digest::of(p.as_bytes()),
            })
            .collect();
        let doc = SnapshotDoc {
            schema: egress_snapshot::manifest::SNAPSHOT_SCHEMA.into(),
            builder: String::new(),
            created: String::new(),
            sources: Default::default(),
            served,
            upload_times: Default::default(),
            layer: None,
            selection: None,
        };
        Held::of(&doc, "/simple/")
    }

    #[test]
    fn sdists_and_the_kit_are_found_without_flags() {
        let name = |n: &str| ProjectName::new(n).ok();
        // The lab's own: a wheel-and-sdist project and an sdist-only one.
        let lab = held(&[
            "/simple/zeta/",
            "/files/aa/zeta-1.0.tar.gz",
            "/simple/alpha/",
            "/files/bb/alpha-1.0-py3-none-any.whl",
            "/files/cc/alpha-1.0.tar.gz",
        ]);
        assert_eq!(lab.present(), name("alpha"));
        assert_eq!(lab.sdist_only(), name("zeta"));
        assert_eq!(lab.kit(kit::TEMPLATE), None);
        // Wheels and sdists together: the first project with an sdist.
        let mixed = held(&[
            "/files/bb/alpha-1.0-py3-none-any.whl",
            "/files/cc/alpha-1.0.tar.gz",
        ]);
        assert_eq!(mixed.sdist_only(), name("alpha"));
        // The kit's projects take their roles; the lab's project stays first.
        let kit = held(&[
            "/simple/egress-kit-present/",
            "/simple/egress-kit-sdist-only/",
            "/simple/egress-kit-template/",
            "/files/dd/egress_kit_tripwire-0.1.0.tar.gz",
            "/simple/zeta/",
        ]);
        assert_eq!(kit.present(), name("zeta"));
        assert_eq!(kit.sdist_only(), name(kit::SDIST_ONLY));
        assert_eq!(kit.kit(kit::TEMPLATE), name(kit::TEMPLATE));
        assert_eq!(kit.kit(kit::TRIPWIRE), name(kit::TRIPWIRE));
        // Only the tripwire has an sdist: it is never the sdist-only project.
        assert_eq!(
            held(&["/files/dd/egress_kit_tripwire-0.1.0.tar.gz"]).sdist_only(),
            None
        );
        assert_eq!(held(&[]).present(), None);
    }
}
