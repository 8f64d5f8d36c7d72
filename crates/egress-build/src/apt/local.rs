//! `--apt-debs DIR`: `.deb` files the lab adds as they are (the conformance
//! kit's, `egress-conformance kit --protocol apt`), listed in the
//! repository the snapshot serves beside the pinned packages.
//!
//! No upstream index vouches for them: the lab does, by giving the
//! directory, as with `--dist` (PyPI) and `--npm-dist`. Each one's stanza
//! is made from its own control file as `dpkg-scanpackages` makes it (its
//! fields, then `Filename`, `Size` and `SHA256` of the bytes, the
//! `Description` last), and it lives at Debian's pool path in the first
//! `--apt-source`'s archive, distribution and first component.

use crate::error::BuildError;
use egress_apt::{parse_packages, PackageEntry, Paragraph};
use egress_model::Sha256Digest;
use std::path::{Path, PathBuf};

/// One `.deb` from `--apt-debs`, with the stanza that lists it.
pub(crate) struct LocalDeb {
    pub(crate) path: PathBuf,
    pub(crate) stanza: PackageEntry,
    pub(crate) bytes: Vec<u8>,
}

fn refused(path: &Path, why: String) -> BuildError {
    BuildError::Conflict(format!(
        "--apt-debs {}: {why}; give a directory of .deb files (e.g. what egress-conformance kit --protocol apt writes)",
        path.display()
    ))
}

/// Debian's pool directory of `name` under `component` (`lib*` names under
/// their first four letters).
fn pool_dir(component: &str, name: &str) -> String {
    let prefix: String = if name.starts_with("lib") {
        name.chars().take(4).collect()
    } else {
        name.chars().take(1).collect()
    };
    format!("pool/{component}/{prefix}/{name}")
}

/// The stanza of `bytes`, at its pool path under `component`.
pub(crate) fn stanza(
    path: &Path,
    bytes: &[u8],
    component: &str,
) -> Result<PackageEntry, BuildError> {
    let control = egress_artifacts::deb_control_paragraph(bytes)
        .map_err(|e| refused(path, format!("not a readable .deb: {e}")))?;
    let field = |name: &str| {
        control
            .get(name)
            .map(str::to_string)
            .ok_or_else(|| refused(path, format!("its control file has no {name}")))
    };
    let (name, version, arch) = (field("Package")?, field("Version")?, field("Architecture")?);
    // The file name drops an epoch, as Debian's pool does.
    let bare = version.split_once(':').map_or(version.as_str(), |(_, v)| v);
    let filename = format!("{}/{name}_{bare}_{arch}.deb", pool_dir(component, &name));
    let mut p = Paragraph::new();
    let mut push = |n: &str, v: &str| {
        p.push(n, v)
            .map_err(|e| refused(path, format!("field {n}: {e}")))
    };
    for (n, v) in control.fields().filter(|(n, _)| *n != "Description") {
        push(n, v)?;
    }
    push("Filename", &filename)?;
    push("Size", &bytes.len().to_string())?;
    push("SHA256", &Sha256Digest::of(bytes).to_hex())?;
    if let Some(d) = control.get("Description") {
        push("Description", d)?;
    }
    let mut entries =
        parse_packages(&p.render()).map_err(|e| refused(path, format!("its control file: {e}")))?;
    match (entries.pop(), entries.is_empty()) {
        (Some(e), true) => Ok(e),
        _ => Err(refused(path, "its control file is not one stanza".into())),
    }
}

/// Every `.deb` in `dir`, sorted by file name, with its stanza under
/// `component`; other files are noted and left.
pub(crate) fn read_dir(dir: &Path, component: &str) -> Result<Vec<LocalDeb>, BuildError> {
    let files = crate::local::read_dir(dir, "--apt-debs", &[".deb"], "a .deb")?;
    let mut out: Vec<LocalDeb> = Vec::new();
    for crate::local::LocalFile { path, bytes, .. } in files {
        let stanza = stanza(&path, &bytes, component)?;
        if let Some(twin) = out.iter().find(|d| d.stanza.filename == stanza.filename) {
            return Err(refused(
                &path,
                format!(
                    "{} and {} are both {} {} {}",
                    twin.path.display(),
                    path.display(),
                    stanza.package,
                    stanza.version,
                    stanza.architecture
                ),
            ));
        }
        out.push(LocalDeb {
            path,
            stanza,
            bytes,
        });
    }
    if out.is_empty() {
        return Err(refused(dir, "it holds no .deb file".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_artifacts::{build_deb, DebSpec};

    #[test]
    fn a_deb_is_listed_as_dpkg_scanpackages_lists_it() {
        let deb = build_deb(&DebSpec {
            package: "libegress-x".into(),
            version: "2:1.0-1".into(),
            architecture: "all".into(),
            maintainer: "m <m@example.invalid>".into(),
            description: "Short\n Longer text.".into(),
            depends: Some("ec-dep".into()),
            scripts: Vec::new(),
            files: Vec::new(),
        });
        let e = stanza(Path::new("x.deb"), &deb, "main").expect("stanza");
        assert_eq!(
            e.filename.as_str(),
            "pool/main/libe/libegress-x/libegress-x_1.0-1_all.deb"
        );
        assert_eq!(e.sha256, Some(Sha256Digest::of(&deb)));
        assert_eq!(e.size, deb.len() as u64);
        assert_eq!(e.version, "2:1.0-1");
        assert_eq!(e.paragraph.get("Depends"), Some("ec-dep"));
        let names: Vec<&str> = e.paragraph.fields().map(|(n, _)| n).collect();
        assert_eq!(names.last(), Some(&"Description"));
        let bad = stanza(Path::new("bad.deb"), b"not a deb", "main").expect_err("refused");
        assert!(
            bad.to_string()
                .starts_with("--apt-debs bad.deb: not a readable .deb"),
            "{bad}"
        );
    }
}
