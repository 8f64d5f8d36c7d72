//! `check` of a PyPI mirror: the plan of a run against any simple-API index URL.
//!
//! The snapshot's SNAPSHOT.json (beside a local `--manifest`, or at the
//! mirror's well-known path) names what to probe: without `--present`, the
//! project the controls take (else the root index's first); the conformance
//! kit's projects (`egress-kit-*`) and any sdist, for P4; and, without
//! `--absent`, widely used projects it does not hold.

use super::args::CheckArgs;
use crate::Failure;
use egress_model::{DistFilename, DistKind, ProjectName, Url};
use egress_references::pypi::kit;
use egress_snapshot::SnapshotDoc;
use egress_suite::pypi::{self, PresentSpec};
use egress_suite::{ManifestSource, Packages, Plan};
use std::collections::BTreeMap;

/// The index URL the suite probes: a bare origin means `/simple/`, and the
/// path always ends in `/` so that project pages join under it.
pub fn index_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/simple/")
}

pub fn plan(
    args: &CheckArgs,
    index: &Url,
    client: &egress_transcript::Client,
    manifest: ManifestSource,
    allowed_signers: bool,
    mutable: Option<&ProjectName>,
) -> Result<Plan<Packages>, Failure> {
    let given: Vec<PresentSpec> = args
        .present
        .iter()
        .map(|p| {
            p.parse()
                .map_err(|e| Failure::usage(format!("--present {p}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let held = super::snapshot_doc::snapshot_doc(&manifest, index, client)
        .map(|d| Held::of(&d, index.path()))
        .unwrap_or_default();
    let (present, present_source) = if !given.is_empty() {
        (given, "--present")
    } else if let Some(name) = held.present() {
        let spec = |name: ProjectName| PresentSpec {
            name,
            version: None,
        };
        match mutable.filter(|m| held.projects.contains_key(*m) && **m != name) {
            // The controls and the mutations take the project the canary
            // serves too; the lab's own follows.
            Some(m) => (
                vec![spec(m.clone()), spec(name)],
                super::snapshot_doc::MUTABLE_SOURCE,
            ),
            None => (vec![spec(name)], "SNAPSHOT.json"),
        }
    } else {
        (Vec::new(), "root index")
    };
    let absent = if args.absent.is_empty() {
        pypi::default_absent(|n| held.projects.contains_key(n))
    } else {
        args.absent
            .iter()
            .map(|a| ProjectName::new(a).map_err(|e| Failure::usage(format!("--absent: {e}"))))
            .collect::<Result<_, _>>()?
    };
    Ok(Plan {
        index_url: index.to_string(),
        packages: Packages::Pypi(pypi::Packages {
            present,
            absent,
            sdist_only: held.sdist_only(),
            template: held.kit(kit::TEMPLATE),
            tripwire: held.kit(kit::TRIPWIRE),
        }),
        present_source: present_source.to_string(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
    })
}

/// What a snapshot's SNAPSHOT.json says it holds: each project (from its
/// page under the index path) with the kinds of files it serves (from the
/// file names of the paths it serves).
#[derive(Default)]
struct Held {
    /// Project name to (has a wheel, has an sdist).
    projects: BTreeMap<ProjectName, (bool, bool)>,
}

impl Held {
    fn of(doc: &SnapshotDoc, index_path: &str) -> Self {
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

    /// A kit project, if the snapshot holds it.
    fn kit(&self, name: &str) -> Option<ProjectName> {
        ProjectName::new(name)
            .ok()
            .filter(|n| self.projects.contains_key(n))
    }

    /// The project the controls take: the lab's own first (the first by
    /// name that is not a kit project), else the kit's present project;
    /// never the kit's tripwire, template or sdist-only project.
    fn present(&self) -> Option<ProjectName> {
        let probes = [kit::TRIPWIRE, kit::TEMPLATE, kit::SDIST_ONLY];
        let mut names: Vec<&ProjectName> = self
            .projects
            .keys()
            .filter(|n| !probes.contains(&n.as_str()))
            .collect();
        names.sort_by_key(|n| (n.as_str().starts_with(egress_references::kit::PREFIX), *n));
        names.first().map(|n| (*n).clone())
    }

    /// The project P4.metadata-sdist asks sdist metadata of: the kit's
    /// sdist-only project, else the first (by name) that serves only
    /// sdists, else the first that serves one; never the tripwire.
    fn sdist_only(&self) -> Option<ProjectName> {
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
