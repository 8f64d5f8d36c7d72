//! The PyPI conformance kit, and the probe distributions the PyPI canary
//! builds with the same code: wheels and setuptools sdists made by
//! `egress-artifacts`, a tripwire `setup.py`, and package text carrying
//! every raw [`TEMPLATE_MARKERS`] expression.
//!
//! | project | files | what it lets `check` probe |
//! |---|---|---|
//! | `egress-kit-present` | 1.0.0 wheel + sdist | a wheel and an sdist of one project |
//! | `egress-kit-sdist-only` | 1.0.0 sdist | P4.metadata-sdist: core metadata no build can give |
//! | `egress-kit-tripwire` | 0.1.0 sdist whose `setup.py` calls the canary | P4.tripwire, with a canary |
//! | `egress-kit-template` | 1.0.0 wheel, markers in Summary, Description (README) and so in PEP 658 metadata | P4.template-text |

use crate::kit::{tripwire_url, KitFile};
use egress_artifacts::{
    build_sdist, build_wheel, build_wheel_with, SdistSpec, WheelExtras, WheelSpec,
};
use egress_model::upstream::TEMPLATE_MARKERS;
use egress_model::{ProjectName, Version};

/// The kit's project names, where `check` looks for them.
pub use egress_suite::pypi::held::kit::{PRESENT, SDIST_ONLY, TEMPLATE, TRIPWIRE};

fn module(name: &ProjectName) -> String {
    name.wheel_component()
}

fn init_py(version: &str) -> Vec<u8> {
    format!("__version__ = \"{version}\"\n").into_bytes()
}

fn version(v: &str) -> Version {
    Version::new(v).expect("fixture versions are valid")
}

/// A one-module wheel.
pub(crate) fn wheel_spec(
    name: &ProjectName,
    version_text: &str,
    summary: &str,
    description: &str,
) -> WheelSpec {
    WheelSpec {
        name: name.clone(),
        version: version(version_text),
        summary: summary.to_string(),
        description: description.to_string(),
        requires_python: None,
        files: vec![(
            format!("{}/__init__.py", module(name)),
            init_py(version_text),
        )],
    }
}

/// A one-module setuptools sdist whose `setup.py` starts with `preamble`.
pub(crate) fn sdist_spec(
    name: &ProjectName,
    version_text: &str,
    summary: &str,
    preamble: &str,
) -> SdistSpec {
    let setup_py = format!(
        "{preamble}from setuptools import setup\n\nsetup(name=\"{name}\", version=\"{version_text}\", packages=[\"{}\"])\n",
        module(name)
    );
    SdistSpec {
        name: name.clone(),
        version: version(version_text),
        summary: summary.to_string(),
        setup_py,
        files: vec![(
            format!("{}/__init__.py", module(name)),
            init_py(version_text),
        )],
    }
}

/// The start of a tripwire's `setup.py`: a call to `url`, which only a
/// build of the sdist makes.
pub(crate) fn tripwire_preamble(url: &str) -> String {
    format!(
        "import urllib.request\n\n# egress-conformance canary: if this line runs, a build executed artifact code.\ntry:\n    urllib.request.urlopen(\"{url}\", timeout=5)\nexcept Exception:\n    pass\n\n"
    )
}

/// Summary and description (the README) carrying every raw template marker.
pub(crate) fn template_text() -> (String, String) {
    let markers: Vec<&str> = TEMPLATE_MARKERS.iter().map(|(raw, _)| *raw).collect();
    (
        format!("Template probe {}", markers.join(" ")),
        format!(
            "Package text that a template engine must never evaluate.\n\n{}\n",
            markers.join("\n")
        ),
    )
}

/// A distribution to build: a wheel or an sdist.
#[derive(Debug, Clone)]
pub(crate) enum DistSpec {
    Wheel(WheelSpec),
    /// A wheel with another tag or with dependencies (the universe's).
    WheelWith(WheelSpec, WheelExtras),
    Sdist(SdistSpec),
}

impl DistSpec {
    pub(crate) fn build(&self) -> egress_artifacts::BuiltDist {
        match self {
            DistSpec::Wheel(w) => build_wheel(w),
            DistSpec::WheelWith(w, extras) => build_wheel_with(w, extras),
            DistSpec::Sdist(s) => build_sdist(s),
        }
    }

    /// The wheel's spec, if it is a wheel.
    pub(crate) fn wheel(&self) -> Option<&WheelSpec> {
        match self {
            DistSpec::Wheel(w) | DistSpec::WheelWith(w, _) => Some(w),
            DistSpec::Sdist(_) => None,
        }
    }

    /// What the wheel says beyond its spec (the default for a pure wheel
    /// without dependencies); `None` for an sdist.
    pub(crate) fn wheel_extras(&self) -> Option<&WheelExtras> {
        static PURE: WheelExtras = WheelExtras {
            tag: None,
            requires_dist: Vec::new(),
            provides_extra: Vec::new(),
        };
        match self {
            DistSpec::Wheel(_) => Some(&PURE),
            DistSpec::WheelWith(_, extras) => Some(extras),
            DistSpec::Sdist(_) => None,
        }
    }
}

/// The kit's projects and what to build for each, with the tripwire aimed
/// at `canary` (a checked base URL, see [`crate::kit::check_canary`]): what
/// [`files`] writes and what the standalone canary serves, so that both
/// hold the same bytes.
pub(crate) fn projects(canary: &str) -> Vec<(ProjectName, Vec<DistSpec>)> {
    let name = |s: &str| ProjectName::new(s).expect("kit names are valid");
    let present = "Conformance kit: a wheel and an sdist of one project";
    let (t_summary, t_description) = template_text();
    let tripwire = tripwire_preamble(&tripwire_url(canary, &format!("{TRIPWIRE}-0.1.0")));
    vec![
        (
            name(PRESENT),
            vec![
                DistSpec::Wheel(wheel_spec(
                    &name(PRESENT),
                    "1.0.0",
                    present,
                    "Conformance kit.\n",
                )),
                DistSpec::Sdist(sdist_spec(&name(PRESENT), "1.0.0", present, "")),
            ],
        ),
        (
            name(SDIST_ONLY),
            vec![DistSpec::Sdist(sdist_spec(
                &name(SDIST_ONLY),
                "1.0.0",
                "Conformance kit: only an sdist; its metadata needs a build",
                "",
            ))],
        ),
        (
            name(TRIPWIRE),
            vec![DistSpec::Sdist(sdist_spec(
                &name(TRIPWIRE),
                "0.1.0",
                "Conformance kit: its setup.py calls the canary tripwire",
                &tripwire,
            ))],
        ),
        (
            name(TEMPLATE),
            vec![DistSpec::Wheel(wheel_spec(
                &name(TEMPLATE),
                "1.0.0",
                &t_summary,
                &t_description,
            ))],
        ),
    ]
}

/// The kit's files, with the tripwire aimed at `canary` (a checked base
/// URL, see [`crate::kit::check_canary`]), sorted by name.
pub fn files(canary: &str) -> Vec<KitFile> {
    let mut out: Vec<KitFile> = projects(canary)
        .iter()
        .flat_map(|(_, specs)| specs.iter().map(DistSpec::build))
        .map(|d| KitFile {
            name: d.filename,
            bytes: d.bytes,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_artifacts::{read_top_level_file, TopLevelFile};

    #[test]
    fn the_kit_is_reproducible_and_aims_its_tripwire() {
        let a = files("http://192.0.2.1/");
        assert_eq!(a, files("http://192.0.2.1/"));
        let names: Vec<&str> = a.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "egress_kit_present-1.0.0-py3-none-any.whl",
                "egress_kit_present-1.0.0.tar.gz",
                "egress_kit_sdist_only-1.0.0.tar.gz",
                "egress_kit_template-1.0.0-py3-none-any.whl",
                "egress_kit_tripwire-0.1.0.tar.gz",
            ]
        );
        let trip = a
            .iter()
            .find(|f| f.name.contains("tripwire"))
            .expect("tripwire");
        let setup = read_top_level_file(&trip.bytes, TopLevelFile::SetupPy).expect("setup.py");
        let setup = String::from_utf8(setup).expect("utf-8");
        assert!(
            setup.contains("\"http://192.0.2.1/tripwire/egress-kit-tripwire-0.1.0\""),
            "{setup}"
        );
        let other = files("http://127.0.0.1:9/");
        assert_ne!(a, other);
    }
}
