//! The PyPI targets of a build (`--python-version`, `--platform`,
//! `--implementation`, `--abi`, `--include-sdists`): which files a sandbox
//! of that kind can install, and which dependencies apply to it, as pip
//! computes them (the computing is `egress_select::pypi`'s).

use super::TargetArgs;
use crate::error::BuildError;
use egress_model::{DistFilename, DistKind};
use egress_select::pypi::{Environment, Marker, Pep440Version, Specifiers, Target};

/// One target per `--python-version`, each with every `--platform`.
pub(crate) struct Targets {
    targets: Vec<Target>,
    environments: Vec<Environment>,
    include_sdists: bool,
}

impl Targets {
    /// `None` when no target is given: every file is kept, as before
    /// targets existed.
    pub(crate) fn new(args: &TargetArgs) -> Result<Option<Self>, BuildError> {
        if args.python_versions.is_empty() {
            let stray = [
                (!args.platforms.is_empty(), "--platform"),
                (args.implementation.is_some(), "--implementation"),
                (!args.abis.is_empty(), "--abi"),
                (args.include_sdists, "--include-sdists"),
            ];
            if let Some((_, flag)) = stray.iter().find(|(given, _)| *given) {
                return Err(BuildError::Usage(format!(
                    "{flag} needs --python-version: a target is a Python version (and platforms), e.g. --python-version 3.11 --platform manylinux_2_17_x86_64"
                )));
            }
            return Ok(None);
        }
        let mut targets = Vec::new();
        for v in &args.python_versions {
            let t = Target::new(
                v,
                &args.platforms,
                args.implementation.as_deref(),
                &args.abis,
            )
            .and_then(Target::with_platform_expansion)
            .map_err(|e| BuildError::Usage(e.to_string()))?;
            targets.push(t);
        }
        let environments = targets.iter().map(Target::environment).collect();
        Ok(Some(Self {
            targets,
            environments,
            include_sdists: args.include_sdists,
        }))
    }

    /// For following markers when no target is given: every common
    /// CPython (3.9 to 3.14) on every common platform, so that a
    /// dependency is followed when its marker holds for any of them.
    pub(crate) fn common() -> Result<Self, BuildError> {
        let platforms = [
            "manylinux_2_17_x86_64",
            "manylinux_2_17_aarch64",
            "musllinux_1_2_x86_64",
            "macosx_11_0_arm64",
            "macosx_10_13_x86_64",
            "win_amd64",
        ];
        let mut targets = Vec::new();
        for minor in 9..=14 {
            for p in platforms {
                let t = Target::new(&format!("3.{minor}"), &[p.to_string()], None, &[])
                    .and_then(Target::with_platform_expansion)
                    .map_err(|e| BuildError::Usage(e.to_string()))?;
                targets.push(t);
            }
        }
        let environments = targets.iter().map(Target::environment).collect();
        Ok(Self {
            targets,
            environments,
            include_sdists: true,
        })
    }

    /// `cp311/manylinux_2_17_x86_64` (targets joined by `, `).
    pub(crate) fn describe(&self) -> String {
        self.targets
            .iter()
            .map(Target::describe)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What `SNAPSHOT.json` records of each target.
    pub(crate) fn recorded(&self) -> Vec<String> {
        self.targets.iter().map(Target::describe).collect()
    }

    pub(crate) fn include_sdists(&self) -> bool {
        self.include_sdists
    }

    /// `Ok(priority)` (lower is better; sdists come last) when some target
    /// can install `filename`, else the rule that drops it. The targets'
    /// manylinux and musllinux platforms accept the older levels too, as
    /// the sandbox's own pip computes them from its C library.
    pub(crate) fn file(&self, filename: &str) -> Result<usize, &'static str> {
        let parsed = DistFilename::parse(filename).map_err(|_| "filename")?;
        match parsed.kind {
            DistKind::Sdist if self.include_sdists => Ok(usize::MAX),
            DistKind::Sdist => Err("sdist"),
            DistKind::Wheel => self
                .targets
                .iter()
                .filter_map(|t| t.wheel_priority(filename))
                .min()
                .ok_or("platform"),
        }
    }

    /// Of one version's files that some target can install (see
    /// [`Targets::file`]), the ones an installer on some target would
    /// choose: each target's best-ranked wheel (pip and uv install the
    /// best one), and the sdists when they are included. The others are
    /// `superseded`. Returns a keep flag per file.
    pub(crate) fn best(&self, filenames: &[&str]) -> Vec<bool> {
        let mut keep: Vec<bool> = filenames
            .iter()
            .map(|f| self.include_sdists && !f.ends_with(".whl"))
            .collect();
        for t in &self.targets {
            let best = filenames
                .iter()
                .enumerate()
                .filter_map(|(i, f)| t.wheel_priority(f).map(|p| (p, i)))
                .min();
            if let Some((_, i)) = best {
                if let Some(k) = keep.get_mut(i) {
                    *k = true;
                }
            }
        }
        keep
    }

    /// A few of `files` to name in a message: the wheels for a target's
    /// own interpreter first (`cp311`), then the rest, at most three.
    pub(crate) fn nearest(&self, files: &[String]) -> Vec<String> {
        let own: Vec<String> = self
            .targets
            .iter()
            .map(|t| {
                let d = t.describe();
                format!("-{}-", d.split('/').next().unwrap_or(&d))
            })
            .collect();
        let mut sorted: Vec<&String> = files.iter().collect();
        sorted.sort_by_key(|f| (!own.iter().any(|o| f.contains(o.as_str())), f.as_str()));
        sorted.into_iter().take(3).cloned().collect()
    }

    /// Whether a file's `Requires-Python` admits some target's Python.
    pub(crate) fn requires_python(&self, spec: &str) -> bool {
        let Ok(spec) = Specifiers::parse(spec) else {
            // pip ignores a Requires-Python it cannot read.
            return true;
        };
        self.environments.iter().any(|env| {
            Pep440Version::parse(&env.python_version).is_ok_and(|v| spec.contains(&v, true))
        })
    }

    /// Whether a dependency with `marker` applies to some target, for a
    /// project asked for with `extras`.
    pub(crate) fn applies(&self, marker: Option<&Marker>, extras: &[String]) -> bool {
        marker.is_none_or(|m| self.environments.iter().any(|env| m.evaluate(env, extras)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn targets(version: &str, platforms: &[&str]) -> Targets {
        let args = TargetArgs {
            python_versions: vec![version.to_string()],
            platforms: platforms.iter().map(|p| p.to_string()).collect(),
            ..TargetArgs::default()
        };
        Targets::new(&args).unwrap().unwrap()
    }

    /// Each pin of a real lock and the files a target keeps of it.
    fn kept_per_pin(
        lock: &egress_lock::Lock,
        t: &Targets,
    ) -> (usize, BTreeMap<String, Vec<String>>) {
        let mut all = 0;
        let mut kept: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pin in &lock.pins {
            all += pin.files.len();
            let marker = pin
                .marker
                .as_deref()
                .and_then(|m| egress_select::pypi::Marker::parse(m).ok());
            if !t.applies(marker.as_ref(), &[]) {
                continue;
            }
            let names: Vec<String> = pin
                .files
                .iter()
                .map(|f| f.filename.clone().unwrap())
                .collect();
            let installable: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| t.file(n).is_ok())
                .collect();
            let entry = kept
                .entry(format!("{}=={}", pin.name, pin.version))
                .or_default();
            for (name, keep) in installable.iter().zip(t.best(&installable)) {
                if keep {
                    entry.push(name.to_string());
                }
            }
        }
        (all, kept)
    }

    /// The measurement, offline: uv's lock of 8 common packages
    /// (tests/data/uv-24, as uv wrote it) names 600-odd files; for
    /// CPython 3.11 on Linux each pin keeps one: the wheel pip would
    /// install there.
    #[test]
    fn a_real_uv_lock_keeps_one_wheel_per_pin_for_one_target() {
        let text = include_str!("../../tests/data/uv-24/uv.lock");
        let lock = egress_lock::parse_uv_lock("uv.lock", text).unwrap();
        let (all, kept) = kept_per_pin(&lock, &targets("3.11", &["manylinux_2_28_x86_64"]));
        assert!(all > 600, "{all} files in the lock");
        assert!(kept.len() >= 20, "{kept:?}");
        for (pin, files) in &kept {
            assert_eq!(files.len(), 1, "{pin}: {files:?}");
            assert!(files[0].ends_with(".whl"), "{pin}: {files:?}");
        }
        let kept_files: usize = kept.values().map(Vec::len).sum();
        assert!(kept_files < all / 20, "{kept_files} of {all}");
        let numpy = kept
            .iter()
            .find(|(p, _)| p.starts_with("numpy==2.4"))
            .unwrap();
        assert!(
            numpy.1[0].contains("cp311-cp311-manylinux_2_27_x86_64"),
            "{numpy:?}"
        );
        // charset-normalizer also ships an abi3 and a pure wheel that
        // CPython 3.11 could install; its best is the cp311 one.
        let cn = kept
            .iter()
            .find(|(p, _)| p.starts_with("charset-normalizer=="))
            .unwrap();
        assert!(cn.1[0].contains("-cp311-cp311-manylinux"), "{cn:?}");
    }

    /// numpy 2.4 ships no wheel for glibc 2.17 any more: on that older
    /// target it is the one pin left with no file (the build names it).
    #[test]
    fn on_manylinux_2_17_numpy_has_no_file() {
        let text = include_str!("../../tests/data/uv-24/uv.lock");
        let lock = egress_lock::parse_uv_lock("uv.lock", text).unwrap();
        let (_, kept) = kept_per_pin(&lock, &targets("3.11", &["manylinux_2_17_x86_64"]));
        let empty: Vec<&String> = kept
            .iter()
            .filter(|(_, f)| f.is_empty())
            .map(|(p, _)| p)
            .collect();
        assert_eq!(empty.len(), 1, "{empty:?}");
        assert!(empty[0].starts_with("numpy=="), "{empty:?}");
        assert!(kept.values().all(|f| f.len() <= 1));
    }

    #[test]
    fn sdists_only_when_asked_and_targets_need_a_version() {
        let t = targets("3.11", &["manylinux_2_17_x86_64"]);
        assert_eq!(t.file("x-1.0.tar.gz"), Err("sdist"));
        assert_eq!(t.file("x-1.0-cp311-cp311-win_amd64.whl"), Err("platform"));
        assert!(t.file("x-1.0-py3-none-any.whl").is_ok());
        let e = Targets::new(&TargetArgs {
            platforms: vec!["manylinux_2_17_x86_64".into()],
            ..TargetArgs::default()
        })
        .err()
        .unwrap();
        assert!(
            e.to_string()
                .starts_with("--platform needs --python-version"),
            "{e}"
        );
        let with_sdists = Targets::new(&TargetArgs {
            python_versions: vec!["3.11".into()],
            include_sdists: true,
            ..TargetArgs::default()
        })
        .unwrap()
        .unwrap();
        assert!(with_sdists.file("x-1.0.tar.gz").is_ok());
    }
}

#[cfg(test)]
mod graph_tests {
    use super::*;

    /// What `uv sync` installs from uv's universal lock on CPython 3.11 on
    /// Linux: numpy 2.4, not the 2.5 uv locked for Python 3.12 and later.
    #[test]
    fn a_real_uv_lock_graph_is_walked_with_the_targets_markers() {
        let text = include_str!("../../tests/data/uv-24/uv.lock");
        let t = Targets::new(&TargetArgs {
            python_versions: vec!["3.11".into()],
            platforms: vec!["manylinux_2_28_x86_64".into()],
            ..TargetArgs::default()
        })
        .unwrap()
        .unwrap();
        let needed = egress_lock::uv_lock_needed("uv.lock", text, &|m| {
            egress_select::pypi::Marker::parse(m).map_or(true, |m| t.applies(Some(&m), &[]))
        })
        .unwrap();
        let names: Vec<String> = needed.iter().map(|(n, v)| format!("{n}=={v}")).collect();
        assert!(
            names.iter().any(|n| n.starts_with("numpy==2.4.")),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.starts_with("numpy==2.5.")),
            "{names:?}"
        );
        assert!(
            names.iter().any(|n| n.starts_with("requests==")),
            "{names:?}"
        );
        let all = egress_lock::parse_uv_lock("uv.lock", text)
            .unwrap()
            .pins
            .len();
        assert!(needed.len() < all, "{} of {all}", needed.len());
    }
}
