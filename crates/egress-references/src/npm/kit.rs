//! The npm conformance kit, and the probe packages the npm canary builds
//! with the same code: tarballs made by `egress-artifacts`, a tripwire
//! whose `postinstall` calls a canary, and package text carrying every raw
//! [`TEMPLATE_MARKERS`] expression.
//!
//! | package | versions | what it lets `check` probe |
//! |---|---|---|
//! | `egress-kit-present` | 1.0.0, 1.1.0 | a present package with two versions |
//! | `@egress-kit/scoped` | 1.0.0 | C.scoped and the scoped-name encodings |
//! | `egress-kit-tripwire` | 0.1.0, `postinstall` calls the canary | P4.tripwire, with a canary |
//! | `egress-kit-template` | 1.0.0, markers in description and README | P4.template-text |
//!
//! Each file is named as `npm pack` names it (`@egress-kit/scoped` 1.0.0 is
//! `egress-kit-scoped-1.0.0.tgz`); `snapshot build --npm-dist DIR` reads the
//! package's name and version from its `package.json`.

use crate::kit::{tripwire_url, KitFile};
use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
use egress_model::upstream::TEMPLATE_MARKERS;

/// The kit's package names, where `check` looks for them.
pub use egress_suite::npm::held::kit::{PRESENT, SCOPED, TEMPLATE, TRIPWIRE};

pub(crate) fn index_js(version: &str) -> String {
    format!("module.exports = {{ version: \"{version}\" }};\n")
}

/// A package with `index.js` and a README.
pub(crate) fn spec(name: &str, version: &str, description: &str) -> NpmPackageSpec {
    let mut s = NpmPackageSpec::new(name, version, description, &index_js(version));
    s.readme = Some(format!("# {name}\n\n{description}\n"));
    s
}

/// A package whose `postinstall` calls `url`: only an install with scripts
/// on makes that call.
pub(crate) fn tripwire_spec(name: &str, description: &str, url: &str) -> NpmPackageSpec {
    let mut tripwire = spec(name, "0.1.0", description);
    // egress-conformance canary: if this runs, an install script executed.
    tripwire.scripts.insert(
        "postinstall".into(),
        format!("node -e \"require('http').get('{url}').on('error', () => {{}})\""),
    );
    tripwire
}

/// A package whose description and README carry every raw template marker.
pub(crate) fn template_spec(name: &str) -> NpmPackageSpec {
    let markers: Vec<&str> = TEMPLATE_MARKERS.iter().map(|(raw, _)| *raw).collect();
    let mut template = spec(
        name,
        "1.0.0",
        &format!("Template probe {}", markers.join(" ")),
    );
    template.readme = Some(format!(
        "# {name}\n\nPackage text that a template engine must never evaluate.\n\n{}\n",
        markers.join("\n")
    ));
    template
}

/// The kit's packages, every version in publishing order, with the
/// tripwire aimed at `canary` (a checked base URL, see
/// [`crate::kit::check_canary`]): what [`files`] writes and what the
/// standalone canary serves, so that both hold the same bytes.
pub(crate) fn specs(canary: &str) -> Vec<NpmPackageSpec> {
    let present = "Conformance kit: a present package with two versions";
    vec![
        spec(PRESENT, "1.0.0", present),
        spec(PRESENT, "1.1.0", present),
        spec(SCOPED, "1.0.0", "Conformance kit: a scoped package"),
        tripwire_spec(
            TRIPWIRE,
            "Conformance kit: its postinstall script calls the canary tripwire",
            &tripwire_url(canary, &format!("{TRIPWIRE}-0.1.0")),
        ),
        template_spec(TEMPLATE),
    ]
}

/// The kit's tarballs, with the tripwire aimed at `canary` (a checked base
/// URL, see [`crate::kit::check_canary`]), sorted by name.
pub fn files(canary: &str) -> Vec<KitFile> {
    let mut out: Vec<KitFile> = specs(canary)
        .iter()
        .map(|s| KitFile {
            // As `npm pack` names it: the scope's `@` dropped, `/` as `-`.
            name: format!(
                "{}-{}.tgz",
                s.name.trim_start_matches('@').replace('/', "-"),
                s.version
            ),
            bytes: build_npm_tarball(s).bytes,
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
                "egress-kit-present-1.0.0.tgz",
                "egress-kit-present-1.1.0.tgz",
                "egress-kit-scoped-1.0.0.tgz",
                "egress-kit-template-1.0.0.tgz",
                "egress-kit-tripwire-0.1.0.tgz",
            ]
        );
        let trip = a
            .iter()
            .find(|f| f.name.contains("tripwire"))
            .expect("tripwire");
        let pj = read_top_level_file(&trip.bytes, TopLevelFile::PackageJson).expect("json");
        let pj = String::from_utf8(pj).expect("utf-8");
        assert!(
            pj.contains("http://192.0.2.1/tripwire/egress-kit-tripwire-0.1.0"),
            "{pj}"
        );
    }
}
