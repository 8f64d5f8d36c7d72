//! `check --protocol apt`: the plan of an apt run against any archive root.
//!
//! `--dist` names the dist (required); `--component` and `--arch` the
//! index to probe; `--keyring` the keyring its `Release` must verify
//! against (its bytes go into the plan, so that `report verify` checks the
//! same key). Without `--present`, the control package is the first one the
//! dist's `Packages` index lists: the controls then show that the mirror
//! serves it.

use super::args::CheckArgs;
use crate::{exit, Failure};
use egress_apt::packages::{is_architecture, is_package_name};
use egress_model::{Url, WireBytes};
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

/// The first package the dist's `Packages` index lists, when it is served.
fn first_listed(
    client: &egress_transcript::Client,
    archive: &Url,
    p: &apt::Packages,
) -> Option<String> {
    let url = apt::plan::at(archive, &p.dist_path(&p.packages_index()));
    let ex = client.get("Packages (plan)", url.path_and_query(), None);
    let body = ex
        .response
        .as_ref()
        .filter(|r| r.is_success())?
        .full_body()?;
    apt::doc::packages(body)?
        .into_iter()
        .next()
        .map(|e| e.package)
}

pub fn plan(
    args: &CheckArgs,
    archive: &Url,
    client: &egress_transcript::Client,
    manifest: ManifestSource,
    allowed_signers: bool,
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
    if packages.present.is_empty() {
        if let Some(first) = first_listed(client, archive, &packages) {
            packages.present.push(first);
            source = "Packages index";
        }
    }
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

/// The standalone canary speaks PyPI and npm only for now.
pub fn no_canary() -> Failure {
    Failure::new(
        exit::USAGE,
        "--canary with --protocol apt: the standalone canary does not serve apt yet; run without --canary (the sub-probes that need a controlled upstream are then SKIPPED)",
    )
}
