//! The apt conformance kit, and the probe packages the standalone apt
//! canary serves with the same code: `.deb`s made by
//! `egress_artifacts::build_deb` (`ar`, control and data tarballs), every
//! one `Architecture: all`, so that they sit in the `Packages` index of
//! any architecture.
//!
//! | package | version | what it lets `check --protocol apt` probe |
//! |---|---|---|
//! | `egress-kit-present` | 1.0 | a present package the canary's mutations act on (P5) |
//! | `egress-kit-tripwire` | 1.0, whose `postinst` calls the canary | P4.tripwire |
//! | `egress-kit-template` | 1.0, every raw [`TEMPLATE_MARKERS`] expression in its `Description` | P4.template-text |
//!
//! Each file is named as Debian's pool names it
//! (`egress-kit-present_1.0_all.deb`); `snapshot build --apt-debs DIR`
//! lists them in the lab-signed repository it serves. The same inputs give
//! the same bytes.

use crate::kit::{tripwire_url, KitFile};
use egress_artifacts::DebSpec;
use egress_model::TEMPLATE_MARKERS;

/// The maintainer of every `.deb` the canary and the kit build.
pub(crate) const MAINTAINER: &str = "egress-conformance <canary@egress.invalid>";

/// The `postinst` of a tripwire package: it calls `url` with whatever HTTP client
/// the machine has. If a request reaches the canary, a maintainer script ran.
pub fn tripwire_postinst(url: &str) -> String {
    format!(
        "#!/bin/sh\n\
         # If this runs, a maintainer script from a package ran: it tells the\n\
         # egress-conformance canary so.\n\
         URL='{url}'\n\
         curl -fsS \"$URL\" >/dev/null 2>&1 \\\n\
         \x20 || wget -q -O /dev/null \"$URL\" >/dev/null 2>&1 \\\n\
         \x20 || python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' \"$URL\" >/dev/null 2>&1 \\\n\
         \x20 || true\n\
         exit 0\n"
    )
}

/// The `Description` of a template-text package: every marker in the synopsis and one
/// a line in the extended description.
pub(crate) fn template_description() -> String {
    let raw: Vec<&str> = TEMPLATE_MARKERS.iter().map(|(raw, _)| *raw).collect();
    let mut text = format!("Template text {}", raw.join(" "));
    text.push_str("\n Package text that a template engine must never evaluate:");
    for r in &raw {
        text.push_str("\n ");
        text.push_str(r);
    }
    text
}

/// The kit's package names: `check --protocol apt` looks for them in the
/// `Packages` index it probes.
pub use egress_suite::apt::deployed::kit::{PRESENT, TEMPLATE, TRIPWIRE};
/// The version of every kit package.
pub const VERSION: &str = "1.0";
/// The architecture of every kit package.
pub const ARCH: &str = "all";

fn spec(name: &str, description: String) -> DebSpec {
    DebSpec {
        package: name.to_string(),
        version: VERSION.to_string(),
        architecture: ARCH.to_string(),
        maintainer: MAINTAINER.to_string(),
        description,
        depends: None,
        scripts: Vec::new(),
        files: vec![(
            format!("usr/share/doc/{name}/README"),
            format!("{name} {VERSION}: a probe package of the egress-conformance kit\n")
                .into_bytes(),
        )],
    }
}

fn describe(synopsis: &str) -> String {
    format!("{synopsis}\n A probe package of the egress-conformance kit; it installs one README.")
}

/// The kit's packages with the tripwire aimed at `canary` (a checked base
/// URL, see [`crate::kit::check_canary`]): what [`files`] writes and what
/// the standalone canary serves.
pub(crate) fn specs(canary: &str) -> Vec<DebSpec> {
    let mut tripwire = spec(
        TRIPWIRE,
        describe("Conformance kit: its postinst calls the canary tripwire"),
    );
    tripwire.scripts.push((
        "postinst".to_string(),
        tripwire_postinst(&tripwire_url(canary, &format!("{TRIPWIRE}-{VERSION}"))),
    ));
    vec![
        spec(
            PRESENT,
            describe("Conformance kit: a present package the canary changes mid-run"),
        ),
        tripwire,
        spec(TEMPLATE, template_description()),
    ]
}

/// The pool file name of a kit package.
pub fn file_name(name: &str) -> String {
    format!("{name}_{VERSION}_{ARCH}.deb")
}

/// The kit's files, named as Debian's pool names them.
pub fn files(canary: &str) -> Vec<KitFile> {
    specs(canary)
        .iter()
        .map(|s| KitFile {
            name: file_name(&s.package),
            bytes: egress_artifacts::build_deb(s),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kit_is_reproducible_and_dpkg_shaped() {
        let a = files("http://127.0.0.1:8700/");
        assert_eq!(a, files("http://127.0.0.1:8700/"));
        assert_ne!(a, files("http://127.0.0.1:8701/"));
        let names: Vec<&str> = a.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "egress-kit-present_1.0_all.deb",
                "egress-kit-tripwire_1.0_all.deb",
                "egress-kit-template_1.0_all.deb"
            ]
        );
        for name in [PRESENT, TRIPWIRE, TEMPLATE] {
            assert!(name.starts_with(crate::kit::PREFIX), "{name}");
        }
        for f in &a {
            let control = egress_artifacts::deb_control_paragraph(&f.bytes).expect("control");
            assert_eq!(control.get("Architecture"), Some(ARCH));
            assert_eq!(control.get("Version"), Some(VERSION));
        }
    }
}
