//! `--npm-dist DIR`: local npm tarballs added as they are (the conformance
//! kit, or any `npm pack` output). Each tarball's `package/package.json`
//! names its package and version and gives what the packuments list
//! (dependencies, optional peers, platform fields, engines, whether it has
//! an install script; no publish time: none is invented); its integrity is
//! that of its own bytes. Nothing is fetched and nothing is run.

use crate::error::BuildError;
use egress_artifacts::{npm_tarball_filename, read_top_level_file, TopLevelFile};
use egress_snapshot::NpmVersionMeta;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A local tarball, read and described by its own `package.json`.
pub(crate) struct LocalTarball {
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    pub(crate) version: String,
    /// `<name without scope>-<version>.tgz`, its name on the mirror.
    pub(crate) filename: String,
    pub(crate) bytes: Vec<u8>,
    pub(crate) meta: NpmVersionMeta,
}

fn bad(path: &Path, why: impl std::fmt::Display) -> BuildError {
    BuildError::Tarball {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

fn string_map(doc: &Value, key: &str) -> BTreeMap<String, String> {
    doc.get(key)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads one tarball: its `package.json` must name a package and a version.
pub(crate) fn read_tarball(path: &Path, bytes: Vec<u8>) -> Result<LocalTarball, BuildError> {
    let json = read_top_level_file(&bytes, TopLevelFile::PackageJson).map_err(|e| bad(path, e))?;
    let doc: Value = serde_json::from_slice(&json)
        .map_err(|e| bad(path, format!("package/package.json is not JSON: {e}")))?;
    let field = |k: &str| {
        doc.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| bad(path, format!("package/package.json has no string \"{k}\"")))
    };
    let (name, version) = (field("name")?, field("version")?);
    let scripts = string_map(&doc, "scripts");
    let list = |k: &str| super::universe::string_list(doc.get(k));
    let meta = NpmVersionMeta {
        dependencies: string_map(&doc, "dependencies"),
        optional_dependencies: string_map(&doc, "optionalDependencies"),
        peer_dependencies: string_map(&doc, "peerDependencies"),
        optional_peers: doc
            .get("peerDependenciesMeta")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| v.get("optional").and_then(Value::as_bool) == Some(true))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default(),
        has_install_script: ["preinstall", "install", "postinstall"]
            .iter()
            .any(|s| scripts.contains_key(*s)),
        os: list("os"),
        cpu: list("cpu"),
        libc: list("libc"),
        engines: string_map(&doc, "engines"),
        ..NpmVersionMeta::default()
    };
    Ok(LocalTarball {
        path: path.to_path_buf(),
        filename: npm_tarball_filename(&name, &version),
        name,
        version,
        bytes,
        meta,
    })
}

/// Every `.tgz` in `dir`, sorted by file name; other files are noted and left.
pub(crate) fn local_tarballs(dir: &Path) -> Result<Vec<LocalTarball>, BuildError> {
    crate::local::read_dir(dir, "--npm-dist", &[".tgz"], "an npm tarball (.tgz)")?
        .into_iter()
        .map(|f| read_tarball(&f.path, f.bytes))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_artifacts::{build_npm_tarball, NpmPackageSpec};

    #[test]
    fn a_tarball_describes_itself() {
        let mut spec = NpmPackageSpec::new("@s/x", "1.2.3", "d", "");
        spec.scripts.insert("postinstall".into(), "true".into());
        spec.dependencies.insert("y".into(), "^1".into());
        let t = build_npm_tarball(&spec);
        let got = read_tarball(Path::new("x.tgz"), t.bytes).expect("reads");
        assert_eq!((got.name.as_str(), got.version.as_str()), ("@s/x", "1.2.3"));
        assert_eq!(got.filename, "x-1.2.3.tgz");
        assert!(got.meta.has_install_script);
        assert_eq!(
            got.meta.dependencies.get("y").map(String::as_str),
            Some("^1")
        );
        let e = read_tarball(Path::new("bad.tgz"), b"not gzip".to_vec())
            .err()
            .expect("refused");
        assert!(e.to_string().starts_with("--npm-dist bad.tgz: "), "{e}");
    }
}
