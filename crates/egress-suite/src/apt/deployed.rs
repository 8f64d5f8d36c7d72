//! `check --protocol apt`: the plan of an apt run against any archive root.
//!
//! `--dist` names the dist (required); `--component` and `--arch` the
//! index to probe; `--keyring` the keyring its `Release` must verify
//! against (its bytes go into the plan, so that `report verify` checks the
//! same key). Without `--present`, the control package is the one a
//! `--canary` acts on when the dist's `Packages` index lists it, else the
//! first one it lists: the controls then show that the mirror serves it.
//! The conformance kit's tripwire and template packages ([`kit`]) are
//! taken when the index lists them.

use crate::deployed::{Given, PlanError};
use crate::{Packages, Plan, UpstreamPlan};
use egress_apt::packages::{is_architecture, is_package_name};
use egress_model::{Url, WireBytes};
use std::path::Path;

/// The conformance kit's apt package names (built by
/// `egress_references::apt::kit`): `check --protocol apt` looks for them
/// in the `Packages` index it probes.
pub mod kit {
    pub const PRESENT: &str = "egress-kit-present";
    pub const TRIPWIRE: &str = "egress-kit-tripwire";
    pub const TEMPLATE: &str = "egress-kit-template";
}

/// What `check --protocol apt` alone was given.
pub struct Source<'a> {
    /// `--dist`.
    pub dist: Option<&'a str>,
    /// `--component`.
    pub component: &'a str,
    /// `--arch`.
    pub arch: &'a str,
    /// `--keyring`.
    pub keyring: Option<&'a Path>,
}

fn names(flag: &str, raw: &[String]) -> Result<Vec<String>, PlanError> {
    raw.iter()
        .map(|n| {
            if is_package_name(n) {
                Ok(n.clone())
            } else {
                Err(PlanError::Usage(format!(
                    "{flag} {n:?}: not a Debian package name (lower-case letters, digits, '+', '-', '.'; at least two characters, starting with a letter or digit)"
                )))
            }
        })
        .collect()
}

/// A dist or component as it appears in a path: no traversal, no query.
fn path_word(flag: &str, value: &str) -> Result<String, PlanError> {
    let ok = !value.is_empty()
        && value != "."
        && value != ".."
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.+/".contains(&b))
        && !value
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if ok {
        Ok(value.to_string())
    } else {
        Err(PlanError::Usage(format!(
            "{flag} {value:?}: give a name as it appears under the archive (letters, digits, '-', '_', '.', '+')"
        )))
    }
}

/// The names the dist's `Packages` index lists, in its order, when it is
/// served.
fn listed(client: &egress_transcript::Client, archive: &Url, p: &super::Packages) -> Vec<String> {
    let url = super::plan::at(archive, &p.dist_path(&p.packages_index()));
    let ex = client.get("Packages (plan)", url.path_and_query(), None);
    let Some(body) = ex
        .response
        .as_ref()
        .filter(|r| r.is_success())
        .and_then(|r| r.full_body())
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for e in super::doc::packages(body).unwrap_or_default() {
        if !names.contains(&e.package) {
            names.push(e.package);
        }
    }
    names
}

pub fn plan(
    given: Given<'_>,
    source: Source<'_>,
    archive: &Url,
    client: &egress_transcript::Client,
) -> Result<Plan<Packages>, PlanError> {
    let Some(dist) = source.dist else {
        return Err(PlanError::Usage(
            "--protocol apt needs --dist NAME: the dist (suite or codename) of the source line, e.g. --dist bookworm".into(),
        ));
    };
    let dist = path_word("--dist", dist)?;
    let component = path_word("--component", source.component)?;
    if !is_architecture(source.arch) {
        return Err(PlanError::Usage(format!(
            "--arch {:?}: not a Debian architecture name, e.g. amd64",
            source.arch
        )));
    }
    let keyring = match source.keyring {
        None => None,
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| PlanError::Input(format!("--keyring {}: {e}", path.display())))?;
            egress_signing::openpgp::Keyring::parse(&bytes).map_err(|e| {
                PlanError::Input(format!(
                    "--keyring {}: not an OpenPGP keyring: {e}; give the file a source's signed-by names (gpg --export, armored or not)",
                    path.display()
                ))
            })?;
            Some(WireBytes(bytes))
        }
    };
    let mut packages = super::Packages {
        dist,
        component,
        arch: source.arch.to_string(),
        keyring,
        present: names("--present", given.present)?,
        absent: names("--absent", given.absent)?,
        tripwire: None,
        template: None,
    };
    let mut present_source = "--present";
    let listed = listed(client, archive, &packages);
    if packages.present.is_empty() {
        // The package the canary's mutations act on when the index lists
        // it (the conformance kit's, with a standalone canary), else the
        // first one listed.
        let canary = given
            .mutable
            .map(|m| m.as_str().to_string())
            .filter(|m| listed.contains(m));
        if let Some(m) = canary {
            packages.present.push(m);
            present_source = "Packages index, the first one --canary serves too";
        } else if let Some(first) = listed.first() {
            packages.present.push(first.clone());
            present_source = "Packages index";
        }
    }
    // The conformance kit's probe packages, when the index lists them.
    let kit = |name: &str| listed.iter().any(|n| n == name).then(|| name.to_string());
    packages.tripwire = kit(kit::TRIPWIRE);
    packages.template = kit(kit::TEMPLATE);
    Ok(Plan {
        index_url: archive.to_string(),
        packages: Packages::Apt(packages),
        present_source: present_source.into(),
        upstream: None,
        manifest: given.manifest,
        allowed_signers: given.allowed_signers,
        destructive: given.destructive,
        expect: given.expect,
    })
}

impl super::Packages {
    /// What a standalone canary's plan fills in (see `Plan::with_canary`).
    pub(crate) fn take_canary(&mut self, up: &UpstreamPlan, default_absent: bool) {
        self.tripwire.get_or_insert_with(|| up.tripwire.to_string());
        self.template.get_or_insert_with(|| up.template.to_string());
        if default_absent {
            self.absent = vec![up.upstream_only.to_string()];
        }
    }
}
