//! `check --protocol apt`: the plan of an apt run against any archive root.
//!
//! `--dist` names the dist (required); `--component` and `--arch` the
//! index to probe; `--keyring` the keyring its `Release` must verify
//! against (its bytes go into the plan, so that `report verify` checks the
//! same key). Without `--present`, the control package is the one a
//! `--canary` acts on when the dist's `Packages` index lists it, else the
//! first one it lists: the controls then show that the mirror serves it.
//! The conformance kit's tripwire and template packages are taken when the
//! index lists them (`egress_references::apt::kit`).

use super::args::CheckArgs;
use crate::Failure;
use egress_apt::packages::{is_architecture, is_package_name};
use egress_model::{ProjectName, Url, WireBytes};
use egress_suite::apt;
use egress_suite::{ManifestSource, Packages, Plan};

/// The archive root the suite probes: its path always ends in `/`. A bare
/// origin means `/`.
pub fn archive_url(raw: &str) -> Result<Url, Failure> {
    super::args::base_url(raw, "/")
}

fn names(flag: &str, raw: &[String]) -> Result<Vec<String>, Failure> {
    raw.iter()
        .map(|n| {
            if is_package_name(n) {
                Ok(n.clone())
            } else {
                Err(Failure::usage(format!(
                    "{flag} {n:?}: not a Debian package name (lower-case letters, digits, '+', '-', '.'; at least two characters, starting with a letter or digit)"
                )))
            }
        })
        .collect()
}

/// A dist or component as it appears in a path: no traversal, no query.
fn path_word(flag: &str, value: &str) -> Result<String, Failure> {
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
        Err(Failure::usage(format!(
            "{flag} {value:?}: give a name as it appears under the archive (letters, digits, '-', '_', '.', '+')"
        )))
    }
}

/// The names the dist's `Packages` index lists, in its order, when it is
/// served.
fn listed(client: &egress_transcript::Client, archive: &Url, p: &apt::Packages) -> Vec<String> {
    let url = apt::plan::at(archive, &p.dist_path(&p.packages_index()));
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
    for e in apt::doc::packages(body).unwrap_or_default() {
        if !names.contains(&e.package) {
            names.push(e.package);
        }
    }
    names
}

pub fn plan(
    args: &CheckArgs,
    archive: &Url,
    client: &egress_transcript::Client,
    manifest: ManifestSource,
    allowed_signers: bool,
    mutable: Option<&ProjectName>,
) -> Result<Plan<Packages>, Failure> {
    let Some(dist) = &args.dist else {
        return Err(Failure::usage(
            "--protocol apt needs --dist NAME: the dist (suite or codename) of the source line, e.g. --dist bookworm",
        ));
    };
    let dist = path_word("--dist", dist)?;
    let component = path_word("--component", &args.component)?;
    if !is_architecture(&args.arch) {
        return Err(Failure::usage(format!(
            "--arch {:?}: not a Debian architecture name, e.g. amd64",
            args.arch
        )));
    }
    let keyring = match &args.keyring {
        None => None,
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| Failure::input(format!("--keyring {}: {e}", path.display())))?;
            egress_signing::openpgp::Keyring::parse(&bytes).map_err(|e| {
                Failure::input(format!(
                    "--keyring {}: not an OpenPGP keyring: {e}; give the file a source's signed-by names (gpg --export, armored or not)",
                    path.display()
                ))
            })?;
            Some(WireBytes(bytes))
        }
    };
    let mut packages = apt::Packages {
        dist,
        component,
        arch: args.arch.clone(),
        keyring,
        present: names("--present", &args.present)?,
        absent: names("--absent", &args.absent)?,
        tripwire: None,
        template: None,
    };
    let mut source = "--present";
    let listed = listed(client, archive, &packages);
    if packages.present.is_empty() {
        // The package the canary's mutations act on when the index lists
        // it (the conformance kit's, with a standalone canary), else the
        // first one listed.
        let canary = mutable
            .map(|m| m.as_str().to_string())
            .filter(|m| listed.contains(m));
        if let Some(m) = canary {
            packages.present.push(m);
            source = "Packages index, the first one --canary serves too";
        } else if let Some(first) = listed.first() {
            packages.present.push(first.clone());
            source = "Packages index";
        }
    }
    // The conformance kit's probe packages, when the index lists them.
    let kit = |name: &str| listed.iter().any(|n| n == name).then(|| name.to_string());
    packages.tripwire = kit(egress_references::apt::kit::TRIPWIRE);
    packages.template = kit(egress_references::apt::kit::TEMPLATE);
    Ok(Plan {
        index_url: archive.to_string(),
        packages: Packages::Apt(packages),
        present_source: source.into(),
        upstream: None,
        manifest,
        allowed_signers,
        destructive: args.destructive,
        expect: args.expectations()?,
    })
}

/// Whether `index_url` is an apt canary's archive root (its plan's index
/// URL), as `check --canary` tells the canary's protocol.
pub fn is_canary_archive(index_url: &str) -> bool {
    index_url.ends_with(&format!("{}/", egress_references::apt::canary::ARCHIVE))
}
