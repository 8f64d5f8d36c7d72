//! The PyPI canary's universe content (see [`crate::universe`]): served
//! beside the canary's own projects when it starts with a [`Universe`]
//! (`Canary::start_with(Universe::default())`), never otherwise.
//!
//! Every release's files are uploaded at the time its row gives (RFC 3339;
//! "before" and "after" are relative to [`UNIVERSE_CUTOFF`],
//! 2025-06-01T00:00:00Z), and listed with that `upload-time` (PEP 700, as
//! PyPI writes it: `2024-01-10T10:00:00.000000Z`), their `size`, sha256,
//! `requires-python` and PEP 592 `yanked` on the JSON page; the HTML page
//! as ever (no `upload-time` there: PEP 700 is JSON only). Every wheel's
//! PEP 658 metadata is served at its URL + `.metadata`, byte-identical to
//! the wheel's `METADATA`, its sha256 listed as `core-metadata`. The JSON
//! API (`/pypi/<name>/json`) gives the same times, `yanked` and
//! `requires_dist`. The canary's own projects (`ec-*`) keep their pages as
//! they are: no `upload-time` on their simple pages.
//!
//! | project | version | uploaded | files | metadata |
//! |---|---|---|---|---|
//! | `eu-alpha` | 1.0.0 | 2024-01-10T10:00:00Z (before) | sdist + the 6 [`ALPHA_WHEEL_TAGS`] wheels | see below |
//! | `eu-alpha` | 1.1.0 | 2024-03-12T10:00:00Z (before) | the same | |
//! | `eu-alpha` | 1.1.1 | 2024-04-02T10:00:00Z (before) | the same, **yanked**: [`ALPHA_YANKED_REASON`] | |
//! | `eu-alpha` | 1.2.0 | 2024-09-18T10:00:00Z (before) | the same | |
//! | `eu-alpha` | 2.1.0rc1 | 2025-05-20T10:00:00Z (before, a prerelease) | the same | |
//! | `eu-alpha` | 2.0.0 | 2025-07-01T10:00:00Z (**after**) | the same | |
//! | `eu-beta` | 1.0.0 | 2024-02-01T09:00:00Z (before) | `py3-none-any` wheel | `Requires-Dist: eu-delta<2` |
//! | `eu-beta` | 1.5.0 | 2024-11-05T09:00:00Z (before) | the same | the same |
//! | `eu-beta` | 3.0.0 | 2025-08-01T09:00:00Z (**after**) | the same | the same |
//! | `eu-gamma` | 0.1.0 | 2024-02-15T09:00:00Z (before) | `py3-none-any` wheel | reached only through `eu-alpha[fast]` |
//! | `eu-delta` | 1.0.0 | 2024-01-20T09:00:00Z (before) | `py3-none-any` wheel | |
//! | `eu-delta` | 2.0.0 | 2024-12-01T09:00:00Z (before) | `py3-none-any` wheel | excluded by `eu-beta`'s `<2` only |
//! | `eu-win-only` | 1.0.0 | 2024-02-20T09:00:00Z (before) | `py3-none-win_amd64` wheel | reached only on Windows |
//! | `eu-old-py` | 1.0.0 | 2024-02-25T09:00:00Z (before) | `py3-none-any` wheel | reached only below Python 3.8 |
//! | `eu-sdist-only` | 1.0.0 | 2024-03-01T09:00:00Z (before) | sdist only | |
//! | `eu-big` | 1.0.0 | 2024-03-05T09:00:00Z (before) | `py3-none-any` wheel of more than [`BIG_MIN_BYTES`] | |
//!
//! Every `eu-alpha` wheel's METADATA has `Requires-Python: >=3.9` and, in
//! order, the [`ALPHA_REQUIRES_DIST`] (`eu-beta>=1.0`, `eu-gamma; extra ==
//! "fast"`, `eu-win-only; sys_platform == "win32"`, `eu-old-py;
//! python_version < "3.8"`) and `Provides-Extra: fast`. Sdists carry no
//! dependencies in their PKG-INFO and so list no `requires-python` (PyPI
//! lists what the file's own metadata says).
//!
//! With [`Universe::no_time`] ([`Universe::with_no_time`]) also
//! [`NO_TIME`] (`eu-no-time` 1.0.0, one `py3-none-any` wheel), whose simple
//! pages list no `upload-time` and whose JSON API gives `null` for it.
//!
//! The wheels of one release differ in their tag (their WHEEL file), so in
//! their bytes; their METADATA is the same.

use super::kit::{sdist_spec, wheel_spec, DistSpec};
use crate::universe::unix_secs;
pub use crate::universe::{Universe, UNIVERSE_CUTOFF};
use egress_artifacts::WheelExtras;
use egress_model::ProjectName;

/// Wheels for CPython 3.11 on every platform, and the sdist; yanked, a
/// prerelease and a release after the cutoff among its versions.
pub const ALPHA: &str = "eu-alpha";
/// Pure wheels; `eu-alpha` needs it; needs `eu-delta<2`.
pub const BETA: &str = "eu-beta";
/// Needed by `eu-alpha[fast]` only.
pub const GAMMA: &str = "eu-gamma";
/// 1.0.0 and 2.0.0, both before the cutoff; `eu-beta` needs `<2`.
pub const DELTA: &str = "eu-delta";
/// Needed by `eu-alpha` on Windows only; a `win_amd64` wheel.
pub const WIN_ONLY: &str = "eu-win-only";
/// Needed by `eu-alpha` below Python 3.8 only.
pub const OLD_PY: &str = "eu-old-py";
/// An sdist and no wheel.
pub const SDIST_ONLY: &str = "eu-sdist-only";
/// A wheel of more than [`BIG_MIN_BYTES`].
pub const BIG: &str = "eu-big";
/// Served only with [`Universe::no_time`]: listed without upload times.
pub const NO_TIME: &str = "eu-no-time";

/// The universe's projects, in the order the canary lists them (after its
/// own); [`NO_TIME`] follows when asked for.
pub const PROJECTS: [&str; 8] = [ALPHA, BETA, GAMMA, DELTA, WIN_ONLY, OLD_PY, SDIST_ONLY, BIG];

/// `eu-big`'s wheel is larger than this (1 MiB).
pub const BIG_MIN_BYTES: u64 = 1 << 20;

/// The tags of each `eu-alpha` release's wheels, in the order listed.
pub const ALPHA_WHEEL_TAGS: [&str; 6] = [
    "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",
    "cp311-cp311-musllinux_1_2_x86_64",
    "cp311-cp311-win_amd64",
    "cp311-cp311-macosx_11_0_arm64",
    "cp312-cp312-manylinux_2_17_x86_64",
    "cp39-abi3-manylinux_2_17_aarch64",
];

/// `Requires-Dist` of every `eu-alpha` wheel, in order.
pub const ALPHA_REQUIRES_DIST: [&str; 4] = [
    "eu-beta>=1.0",
    "eu-gamma; extra == \"fast\"",
    "eu-win-only; sys_platform == \"win32\"",
    "eu-old-py; python_version < \"3.8\"",
];

/// `Requires-Python` of every `eu-alpha` wheel.
pub const ALPHA_REQUIRES_PYTHON: &str = ">=3.9";

/// Why `eu-alpha` 1.1.1 is yanked (PEP 592).
pub const ALPHA_YANKED_REASON: &str = "broken build, use 1.1.0 or 1.2.0";

/// One file of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Sdist,
    /// A wheel with this tag (`py3-none-any` for a pure one).
    Wheel(&'static str),
}

/// One row of the table: a release and its files, all uploaded at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub project: &'static str,
    pub version: &'static str,
    /// RFC 3339: when each of its files was uploaded.
    pub uploaded: &'static str,
    /// Its files, in the order the page lists them.
    pub dists: &'static [Dist],
    /// PEP 592: yanked, with this reason.
    pub yanked: Option<&'static str>,
    /// Its wheels' `Requires-Python`.
    pub requires_python: Option<&'static str>,
    /// Its wheels' `Requires-Dist`, in order.
    pub requires_dist: &'static [&'static str],
    /// Its wheels' `Provides-Extra`.
    pub provides_extra: &'static [&'static str],
    /// Bytes of incompressible data in each of its wheels (`eu-big`).
    pub payload: usize,
}

const ALPHA_DISTS: &[Dist] = &[
    Dist::Sdist,
    Dist::Wheel(ALPHA_WHEEL_TAGS[0]),
    Dist::Wheel(ALPHA_WHEEL_TAGS[1]),
    Dist::Wheel(ALPHA_WHEEL_TAGS[2]),
    Dist::Wheel(ALPHA_WHEEL_TAGS[3]),
    Dist::Wheel(ALPHA_WHEEL_TAGS[4]),
    Dist::Wheel(ALPHA_WHEEL_TAGS[5]),
];
const PURE: &[Dist] = &[Dist::Wheel("py3-none-any")];

const fn alpha(version: &'static str, uploaded: &'static str) -> Release {
    Release {
        project: ALPHA,
        version,
        uploaded,
        dists: ALPHA_DISTS,
        yanked: None,
        requires_python: Some(ALPHA_REQUIRES_PYTHON),
        requires_dist: &ALPHA_REQUIRES_DIST,
        provides_extra: &["fast"],
        payload: 0,
    }
}

const fn pure(project: &'static str, version: &'static str, uploaded: &'static str) -> Release {
    Release {
        project,
        version,
        uploaded,
        dists: PURE,
        yanked: None,
        requires_python: None,
        requires_dist: &[],
        provides_extra: &[],
        payload: 0,
    }
}

const fn beta(version: &'static str, uploaded: &'static str) -> Release {
    Release {
        requires_dist: &["eu-delta<2"],
        ..pure(BETA, version, uploaded)
    }
}

/// The table (see the module docs), in upload order within each project.
pub const RELEASES: &[Release] = &[
    alpha("1.0.0", "2024-01-10T10:00:00Z"),
    alpha("1.1.0", "2024-03-12T10:00:00Z"),
    Release {
        yanked: Some(ALPHA_YANKED_REASON),
        ..alpha("1.1.1", "2024-04-02T10:00:00Z")
    },
    alpha("1.2.0", "2024-09-18T10:00:00Z"),
    alpha("2.1.0rc1", "2025-05-20T10:00:00Z"),
    alpha("2.0.0", "2025-07-01T10:00:00Z"),
    beta("1.0.0", "2024-02-01T09:00:00Z"),
    beta("1.5.0", "2024-11-05T09:00:00Z"),
    beta("3.0.0", "2025-08-01T09:00:00Z"),
    pure(GAMMA, "0.1.0", "2024-02-15T09:00:00Z"),
    pure(DELTA, "1.0.0", "2024-01-20T09:00:00Z"),
    pure(DELTA, "2.0.0", "2024-12-01T09:00:00Z"),
    Release {
        dists: &[Dist::Wheel("py3-none-win_amd64")],
        ..pure(WIN_ONLY, "1.0.0", "2024-02-20T09:00:00Z")
    },
    pure(OLD_PY, "1.0.0", "2024-02-25T09:00:00Z"),
    Release {
        dists: &[Dist::Sdist],
        ..pure(SDIST_ONLY, "1.0.0", "2024-03-01T09:00:00Z")
    },
    Release {
        // 1.25 MiB of incompressible bytes: more than BIG_MIN_BYTES deflated.
        payload: 5 << 18,
        ..pure(BIG, "1.0.0", "2024-03-05T09:00:00Z")
    },
];

/// [`NO_TIME`]'s release: uploaded then (the changelog says so), listed
/// without the time.
pub const NO_TIME_RELEASES: &[Release] = &[pure(NO_TIME, "1.0.0", "2024-05-01T09:00:00Z")];

/// One file to serve: what to build, when it was uploaded (Unix seconds),
/// and why it is yanked.
pub(crate) struct UniverseFile {
    pub(crate) spec: DistSpec,
    pub(crate) uploaded: u64,
    pub(crate) yanked: Option<String>,
}

/// A project to serve, and whether its pages list upload times.
pub(crate) struct UniverseProject {
    pub(crate) name: ProjectName,
    pub(crate) files: Vec<UniverseFile>,
    pub(crate) dated: bool,
}

/// The projects `universe` asks for, in [`PROJECTS`] order, then
/// [`NO_TIME`].
pub(crate) fn projects(universe: Universe) -> Vec<UniverseProject> {
    let mut out: Vec<UniverseProject> = PROJECTS
        .iter()
        .map(|p| project(p, RELEASES, true))
        .collect();
    if universe.no_time {
        out.push(project(NO_TIME, NO_TIME_RELEASES, false));
    }
    out
}

fn project(name: &str, table: &[Release], dated: bool) -> UniverseProject {
    let name = ProjectName::new(name).expect("universe names are valid");
    let files = table
        .iter()
        .filter(|r| r.project == name.as_str())
        .flat_map(|r| {
            let name = &name;
            r.dists.iter().map(move |d| UniverseFile {
                spec: dist_spec(name, r, *d),
                uploaded: unix_secs(r.uploaded),
                yanked: r.yanked.map(str::to_string),
            })
        })
        .collect();
    UniverseProject { name, files, dated }
}

fn dist_spec(name: &ProjectName, r: &Release, dist: Dist) -> DistSpec {
    let summary = format!("Universe fixture {} {}", r.project, r.version);
    match dist {
        Dist::Sdist => DistSpec::Sdist(sdist_spec(name, r.version, &summary, "")),
        Dist::Wheel(tag) => {
            let mut spec = wheel_spec(
                name,
                r.version,
                &summary,
                &format!("{summary}: a release of the canary's universe.\n"),
            );
            spec.requires_python = r.requires_python.map(str::to_string);
            if r.payload > 0 {
                spec.files.push((
                    format!("{}/payload.bin", name.wheel_component()),
                    incompressible(r.payload),
                ));
            }
            let extras = WheelExtras {
                tag: (tag != "py3-none-any").then(|| tag.to_string()),
                requires_dist: r.requires_dist.iter().map(|s| s.to_string()).collect(),
                provides_extra: r.provides_extra.iter().map(|s| s.to_string()).collect(),
            };
            DistSpec::WheelWith(spec, extras)
        }
    }
}

/// `len` bytes that deflate cannot shrink, the same on every run
/// (xorshift64*).
fn incompressible(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::Version;

    #[test]
    fn the_table_is_on_either_side_of_the_cutoff() {
        let cutoff = unix_secs(UNIVERSE_CUTOFF);
        let after: Vec<(&str, &str)> = RELEASES
            .iter()
            .filter(|r| unix_secs(r.uploaded) > cutoff)
            .map(|r| (r.project, r.version))
            .collect();
        assert_eq!(
            after,
            [(ALPHA, "2.0.0"), (BETA, "3.0.0")],
            "only these are after the cutoff"
        );
        for r in RELEASES.iter().chain(NO_TIME_RELEASES) {
            assert_ne!(unix_secs(r.uploaded), cutoff, "{r:?}");
            assert!(Version::new(r.version).is_ok(), "{r:?}");
            // Whole seconds: the pages write them with six zero decimals.
            assert!(r.uploaded.ends_with(":00Z"), "{r:?}");
        }
        for p in PROJECTS {
            assert!(RELEASES.iter().any(|r| r.project == p), "{p}");
        }
    }

    #[test]
    fn the_files_are_what_the_table_says() {
        let all = projects(Universe::with_no_time());
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[..8], PROJECTS);
        assert_eq!(names[8], NO_TIME);
        assert_eq!(projects(Universe::default()).len(), 8);
        let alpha = &all[0];
        assert_eq!(alpha.files.len(), 6 * 7);
        let built: Vec<_> = alpha.files.iter().map(|f| f.spec.build()).collect();
        assert_eq!(built[0].filename, "eu_alpha-1.0.0.tar.gz");
        assert_eq!(
            built[1].filename,
            "eu_alpha-1.0.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        );
        assert_eq!(
            built[6].filename,
            "eu_alpha-1.0.0-cp39-abi3-manylinux_2_17_aarch64.whl"
        );
        let big = all.iter().find(|p| p.name.as_str() == BIG).unwrap();
        let big = big.files[0].spec.build();
        assert!(
            big.bytes.len() as u64 > BIG_MIN_BYTES,
            "{}",
            big.bytes.len()
        );
        assert_eq!(incompressible(10), incompressible(10));
    }
}
