//! npm package tarballs: the `.tgz` that `npm pack` produces, built by our
//! own code, byte-for-byte reproducible, with its sha512 SRI integrity.
//!
//! Entries sit under `package/` as npm lays them out (files only, no
//! directory entries, as `npm pack` writes them), with fixed owner and mtime,
//! written by the same ustar and gzip writers as the sdists.

use crate::assert_member_path;
use crate::sdist::{gzip, write_tar, TarEntry};
use egress_model::{Integrity, NpmName};
use std::collections::BTreeMap;

/// What goes into an npm package tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmPackageSpec {
    /// `name` or `@scope/name`; see [`is_valid_npm_name`].
    pub name: String,
    pub version: String,
    pub description: String,
    /// `main` of package.json; the text of that file is [`Self::index_js`].
    pub main: String,
    /// The text of the `main` file.
    pub index_js: String,
    /// `scripts` of package.json, e.g. `postinstall`; empty means none.
    pub scripts: BTreeMap<String, String>,
    /// `dependencies` of package.json (name to range).
    pub dependencies: BTreeMap<String, String>,
    /// `peerDependencies` (name to range).
    pub peer_dependencies: BTreeMap<String, String>,
    /// The peers marked optional: `peerDependenciesMeta` lists each as
    /// `{"optional": true}`.
    pub optional_peers: Vec<String>,
    /// `optionalDependencies` (name to range).
    pub optional_dependencies: BTreeMap<String, String>,
    /// `os`, `cpu` and `libc` of package.json: the platforms it installs on.
    pub os: Vec<String>,
    pub cpu: Vec<String>,
    pub libc: Vec<String>,
    /// The text of `README.md`, if there is one.
    pub readme: Option<String>,
    /// Further files, by path below `package/`.
    pub files: Vec<(String, Vec<u8>)>,
}

impl NpmPackageSpec {
    /// A spec with `main` `index.js`, no scripts, dependencies of any kind,
    /// platform fields, readme or extra files.
    pub fn new(name: &str, version: &str, description: &str, index_js: &str) -> Self {
        Self {
            name: name.to_string(),
            version: version.to_string(),
            description: description.to_string(),
            main: "index.js".to_string(),
            index_js: index_js.to_string(),
            scripts: BTreeMap::new(),
            dependencies: BTreeMap::new(),
            peer_dependencies: BTreeMap::new(),
            optional_peers: Vec::new(),
            optional_dependencies: BTreeMap::new(),
            os: Vec::new(),
            cpu: Vec::new(),
            libc: Vec::new(),
            readme: None,
            files: Vec::new(),
        }
    }

    /// The package.json document that [`build_npm_tarball`] writes, which is
    /// also what a registry's packument repeats for the version. Empty
    /// fields are left out.
    pub fn package_json(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "main": self.main,
            "license": "Apache-2.0",
        });
        if let Some(fields) = doc.as_object_mut() {
            if !self.scripts.is_empty() {
                fields.insert("scripts".into(), serde_json::json!(self.scripts));
            }
            let maps = [
                ("dependencies", &self.dependencies),
                ("peerDependencies", &self.peer_dependencies),
                ("optionalDependencies", &self.optional_dependencies),
            ];
            for (key, map) in maps {
                if !map.is_empty() {
                    fields.insert(key.into(), serde_json::json!(map));
                }
            }
            if !self.optional_peers.is_empty() {
                let meta: serde_json::Map<String, serde_json::Value> = self
                    .optional_peers
                    .iter()
                    .map(|p| (p.clone(), serde_json::json!({ "optional": true })))
                    .collect();
                fields.insert("peerDependenciesMeta".into(), meta.into());
            }
            for (key, list) in [("os", &self.os), ("cpu", &self.cpu), ("libc", &self.libc)] {
                if !list.is_empty() {
                    fields.insert(key.into(), serde_json::json!(list));
                }
            }
        }
        doc
    }

    /// Whether the package has a script npm runs at install time
    /// (`preinstall`, `install` or `postinstall`): the abbreviated
    /// packument's `hasInstallScript`.
    pub fn has_install_script(&self) -> bool {
        ["preinstall", "install", "postinstall"]
            .iter()
            .any(|s| self.scripts.contains_key(*s))
    }
}

/// A built npm tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmTarball {
    /// `{name}-{version}.tgz`, without the scope, as registries name it.
    pub filename: String,
    pub bytes: Vec<u8>,
    /// `sha512-<base64>`, the packument's `dist.integrity`.
    pub integrity: String,
    pub sha512: [u8; 64],
}

/// `sha512-<base64>` of `data`, the Subresource Integrity string npm uses:
/// shorthand for `Integrity::of(data).to_string()`.
pub fn sri_sha512(data: &[u8]) -> String {
    Integrity::of(data).to_string()
}

/// Whether `name` is a valid name for a new npm package:
/// [`NpmName::new_package`], the one npm-name rule.
pub fn is_valid_npm_name(name: &str) -> bool {
    NpmName::new_package(name).is_ok()
}

/// The registry's tarball filename for a package version:
/// `{name}-{version}.tgz`, the scope left out (`@ec/x` 1.0.0 is `x-1.0.0.tgz`).
pub fn npm_tarball_filename(name: &str, version: &str) -> String {
    let bare = name.rsplit_once('/').map_or(name, |(_, n)| n);
    format!("{bare}-{version}.tgz")
}

/// Builds the package's `.tgz`. Identical specs give identical bytes.
///
/// # Panics
/// If the name or version is invalid, if a path is invalid or duplicated, or
/// names a generated file (package.json, README.md, the `main` file). A panic
/// is a bug in the calling fixture code.
pub fn build_npm_tarball(spec: &NpmPackageSpec) -> NpmTarball {
    assert!(
        is_valid_npm_name(&spec.name),
        "invalid npm package name {:?}",
        spec.name
    );
    let version_ok = !spec.version.is_empty()
        && spec
            .version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.+".contains(&b));
    assert!(version_ok, "invalid npm version {:?}", spec.version);
    assert_member_path(&spec.main);
    let mut manifest =
        serde_json::to_string_pretty(&spec.package_json()).expect("a JSON value always serializes");
    manifest.push('\n');
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert("package.json".into(), manifest.into_bytes());
    files.insert(spec.main.clone(), spec.index_js.clone().into_bytes());
    if let Some(readme) = &spec.readme {
        files.insert("README.md".into(), readme.clone().into_bytes());
    }
    for (path, data) in &spec.files {
        assert_member_path(path);
        let previous = files.insert(path.clone(), data.clone());
        assert!(previous.is_none(), "duplicate npm package member {path:?}");
    }
    // package.json first, as `npm pack` writes it, so that readers that stop
    // early find the manifest.
    let mut entries: Vec<(String, TarEntry)> = Vec::with_capacity(files.len());
    let manifest = files.remove("package.json").unwrap_or_default();
    entries.push(("package/package.json".into(), TarEntry::File(manifest)));
    entries.extend(
        files
            .into_iter()
            .map(|(path, data)| (format!("package/{path}"), TarEntry::File(data))),
    );
    let bytes = gzip(&write_tar(&entries));
    let integrity = Integrity::of(&bytes);
    NpmTarball {
        filename: npm_tarball_filename(&spec.name, &spec.version),
        integrity: integrity.to_string(),
        sha512: *integrity.as_bytes(),
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miniz_oxide::inflate::decompress_to_vec;

    fn spec() -> NpmPackageSpec {
        let mut s =
            NpmPackageSpec::new("@ec/x", "1.2.3", "desc \"quoted\"", "module.exports = 1;\n");
        s.scripts
            .insert("postinstall".into(), "node -e \"1\"".into());
        s.readme = Some("# x\n".into());
        s
    }

    /// Entry names and contents of a ustar archive (regular files only).
    fn entries(tgz: &[u8]) -> Vec<(String, Vec<u8>)> {
        assert_eq!(&tgz[..3], &[0x1f, 0x8b, 8]);
        let tar = decompress_to_vec(&tgz[10..tgz.len() - 8]).unwrap();
        let mut out = Vec::new();
        let mut at = 0;
        while at + 512 <= tar.len() && tar[at] != 0 {
            let h = &tar[at..at + 512];
            let name_end = h[..100].iter().position(|&b| b == 0).unwrap_or(100);
            let name = String::from_utf8(h[..name_end].to_vec()).unwrap();
            let size_text = std::str::from_utf8(&h[124..135]).unwrap();
            let size = usize::from_str_radix(size_text, 8).unwrap();
            assert_eq!(h[156], b'0');
            out.push((name, tar[at + 512..at + 512 + size].to_vec()));
            at += 512 + size.next_multiple_of(512);
        }
        out
    }

    #[test]
    fn deterministic_with_package_layout() {
        let a = build_npm_tarball(&spec());
        assert_eq!(a, build_npm_tarball(&spec()));
        assert_eq!(a.filename, "x-1.2.3.tgz");
        assert_eq!(a.integrity, sri_sha512(&a.bytes));
        let names: Vec<String> = entries(&a.bytes).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "package/package.json",
                "package/README.md",
                "package/index.js"
            ]
        );
        let (_, manifest) = &entries(&a.bytes)[0];
        let doc: serde_json::Value = serde_json::from_slice(manifest).unwrap();
        assert_eq!(doc, spec().package_json());
        assert_eq!(doc["scripts"]["postinstall"], "node -e \"1\"");
        assert!(spec().has_install_script());

        let mut other = spec();
        other.files.push(("extra.txt".into(), b"x".to_vec()));
        let b = build_npm_tarball(&other);
        assert_ne!(a.integrity, b.integrity);
        assert_eq!(a.filename, b.filename);
    }

    #[test]
    fn dependency_and_platform_fields() {
        let plain = NpmPackageSpec::new("x", "1.0.0", "d", "");
        let keys: Vec<String> = plain
            .package_json()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for absent in ["dependencies", "peerDependencies", "os", "libc"] {
            assert!(!keys.contains(&absent.to_string()), "{absent}");
        }
        let mut s = plain.clone();
        s.dependencies.insert("a".into(), "^1.0.0".into());
        s.peer_dependencies.insert("p".into(), "^2.0.0".into());
        s.peer_dependencies.insert("q".into(), "*".into());
        s.optional_peers.push("q".into());
        s.optional_dependencies
            .insert("@s/n".into(), "1.0.0".into());
        s.os.push("linux".into());
        s.cpu.push("x64".into());
        s.libc.push("glibc".into());
        let doc = s.package_json();
        assert_eq!(doc["dependencies"], serde_json::json!({"a": "^1.0.0"}));
        assert_eq!(
            doc["peerDependencies"],
            serde_json::json!({"p": "^2.0.0", "q": "*"})
        );
        assert_eq!(
            doc["peerDependenciesMeta"],
            serde_json::json!({"q": {"optional": true}})
        );
        assert_eq!(
            doc["optionalDependencies"],
            serde_json::json!({"@s/n": "1.0.0"})
        );
        assert_eq!(doc["os"], serde_json::json!(["linux"]));
        assert_eq!(doc["cpu"], serde_json::json!(["x64"]));
        assert_eq!(doc["libc"], serde_json::json!(["glibc"]));
        let (_, manifest) = &entries(&build_npm_tarball(&s).bytes)[0];
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(manifest).unwrap(),
            doc
        );
    }

    #[test]
    fn sri_of_empty_input() {
        // printf '' | openssl dgst -sha512 -binary | base64
        assert_eq!(
            sri_sha512(b""),
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
        );
    }

    #[test]
    fn names() {
        for ok in ["a", "ec-present", "@ec/scoped", "a.b_c-d", "@x-y/z.z"] {
            assert!(is_valid_npm_name(ok), "{ok}");
        }
        for bad in [
            "", "A", "@ec", "@ec/", "@/x", ".a", "_a", "a/b", "@a/b/c", "a b", "a%2f", "@a/.b",
        ] {
            assert!(!is_valid_npm_name(bad), "{bad}");
        }
        assert_eq!(
            npm_tarball_filename("ec-present", "1.0.0"),
            "ec-present-1.0.0.tgz"
        );
    }

    #[test]
    fn package_json_and_members_are_read_back() {
        let mut s = spec();
        s.files.push(("binding.gyp".into(), b"{}".to_vec()));
        s.files
            .push(("build/Release/addon.node".into(), vec![0x7f, b'E']));
        let t = build_npm_tarball(&s);
        let got = crate::read_npm_package(&t.bytes).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&got.package_json).unwrap();
        assert_eq!(doc, s.package_json());
        assert_eq!(
            got.members,
            [
                "package.json",
                "README.md",
                "binding.gyp",
                "build/Release/addon.node",
                "index.js"
            ]
        );
        assert_eq!(got.unlisted, 0);
        for cut in 0..t.bytes.len() {
            assert!(
                crate::read_npm_package(&t.bytes[..cut]).is_err(),
                "cut {cut}"
            );
        }
    }
}
