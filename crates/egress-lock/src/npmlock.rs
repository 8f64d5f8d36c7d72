//! `package-lock.json`, lockfile versions 2 and 3 (npm >= 7).
//!
//! Only the `packages` map is read. Every entry below `node_modules/`
//! (nested ones too) is a pin: name, version, the `resolved` tarball URL
//! (http or https) and the sha512 of its `integrity`. An entry without
//! `resolved` is a registry package whose URL npm left out
//! (`omit-lockfile-registry-resolved=true`, which keeps a lock
//! registry-agnostic): npm resolves it against the configured registry, and
//! so does the builder (`--npm-upstream`); its pin has no `resolved`.
//! The root entry `""`,
//! workspace links (`link: true`) and bundled dependencies (`inBundle: true`,
//! which arrive inside their parent's tarball) are not pins. An entry without
//! an integrity, or with only a weaker one (sha1), is an error: a snapshot
//! built from it would bind a name to bytes nobody vouched for (P1).
//!
//! Each pin also keeps what npm decides by whether it installs on a
//! platform: the entry's `os`, `cpu` and `libc` lists, and whether it is
//! `optional` (only then may npm leave it out where it does not fit).

use crate::LockError;
use egress_model::{Integrity, IntegrityError};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One locked npm package version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmPin {
    /// `name` or `@scope/name`: the registry name (an alias's real name).
    pub name: String,
    pub version: String,
    /// The absolute `resolved` tarball URL, http or https; `None` for a
    /// registry package written without one
    /// (`omit-lockfile-registry-resolved`).
    pub resolved: Option<String>,
    /// The lock's `integrity` value as written (possibly several hashes).
    pub integrity: String,
    /// The sha512 the `integrity` names.
    pub sha512: [u8; 64],
    /// The lock's `packages` key of the first entry with this pin.
    pub key: String,
    /// Dependency ranges of the entry, as the lock records them.
    pub dependencies: BTreeMap<String, String>,
    pub optional_dependencies: BTreeMap<String, String>,
    pub peer_dependencies: BTreeMap<String, String>,
    /// The lock's `hasInstallScript`.
    pub has_install_script: bool,
    /// The entry's `os`, `cpu` and `libc` (a single string is a list of
    /// one); empty when absent.
    pub os: Vec<String>,
    pub cpu: Vec<String>,
    pub libc: Vec<String>,
    /// `optional: true` on every entry with this pin: npm installs it only
    /// where it fits, and goes on without it elsewhere.
    pub optional: bool,
}

impl NpmPin {
    /// `sha512-<base64>`: the single integrity a registry serves.
    pub fn sri(&self) -> String {
        Integrity::from_bytes(self.sha512).to_string()
    }
}

/// A parsed `package-lock.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmLock {
    /// The file name used in messages.
    pub file: String,
    pub lockfile_version: u64,
    /// One per distinct name and version, sorted by name then version text.
    pub pins: Vec<NpmPin>,
}

/// The package name a `packages` key installs: what follows the last
/// `node_modules/`.
fn name_from_key(key: &str) -> Option<&str> {
    let (_, name) = key.rsplit_once("node_modules/")?;
    (!name.is_empty()).then_some(name)
}

/// Parses an SRI `integrity` (space-separated `algo-base64[?opts]`) and
/// returns its sha512, or why there is none.
pub fn sha512_of_integrity(integrity: &str) -> Result<[u8; 64], String> {
    let sha512 = Integrity::from_sri(integrity).map_err(|e| match e {
        IntegrityError::Empty => "the integrity is empty".into(),
        IntegrityError::NotSri(_) => format!("integrity {integrity:?} is not an SRI string"),
        IntegrityError::Base64 => format!("integrity {integrity:?}: malformed base64"),
        IntegrityError::Length(_) => format!("integrity {integrity:?}: a sha512 has 64 bytes"),
        IntegrityError::NoSha512(algos) => format!(
            "integrity {integrity:?} has no sha512 (only {}); a snapshot needs sha512: regenerate the lock with npm >= 7 (rm package-lock.json; npm install --package-lock-only)",
            algos.join(", ")
        ),
    })?;
    Ok(*sha512.as_bytes())
}

/// A platform field as package.json allows it: a string or an array of
/// strings (other members are ignored).
fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn string_map(entry: &Map<String, Value>, field: &str) -> BTreeMap<String, String> {
    entry
        .get(field)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Every `resolved` URL of a `package-lock.json` (see [`crate::urls`]),
/// any lockfile version, links and relative paths left out.
pub(crate) fn urls(file: &str, text: &str) -> Result<Vec<crate::LockUrl>, LockError> {
    let err = |m: String| LockError::new(file, 0, m);
    let doc: Value = serde_json::from_str(text).map_err(|e| err(format!("not valid JSON: {e}")))?;
    let mut out = Vec::new();
    // Versions 2 and 3 list `packages`; version 1 nests `dependencies`.
    let mut stack: Vec<(String, &Value)> = Vec::new();
    if let Some(p) = doc.get("packages").and_then(Value::as_object) {
        stack.extend(p.iter().map(|(k, v)| (k.clone(), v)));
    }
    if let Some(d) = doc.get("dependencies").and_then(Value::as_object) {
        stack.extend(d.iter().map(|(k, v)| (k.clone(), v)));
    }
    let mut seen = 0usize;
    while let Some((key, entry)) = stack.pop() {
        seen += 1;
        if seen > 1_000_000 {
            return Err(err("more than a million entries".into()));
        }
        if let Some(nested) = entry.get("dependencies").and_then(Value::as_object) {
            if entry.get("version").is_some() && doc.get("packages").is_none() {
                stack.extend(nested.iter().map(|(k, v)| (format!("{key} > {k}"), v)));
            }
        }
        if entry.get("link").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(resolved) = entry.get("resolved").and_then(Value::as_str) {
            if resolved.contains("://") {
                out.push(crate::LockUrl {
                    place: key.clone(),
                    field: "resolved".into(),
                    url: resolved.to_string(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.place.cmp(&b.place));
    Ok(out)
}

/// Parses a `package-lock.json` (or `npm-shrinkwrap.json`), versions 2 and 3.
pub fn parse_package_lock(file: &str, text: &str) -> Result<NpmLock, LockError> {
    let err = |m: String| LockError::new(file, 0, m);
    let doc: Value = serde_json::from_str(text).map_err(|e| err(format!("not valid JSON: {e}")))?;
    let version = doc
        .get("lockfileVersion")
        .and_then(Value::as_u64)
        .ok_or_else(|| err("no lockfileVersion: not a package-lock.json".into()))?;
    match version {
        1 => {
            return Err(err(
                "lockfileVersion 1 is not supported; run npm install with npm >= 7".into(),
            ))
        }
        2 | 3 => {}
        v => {
            return Err(err(format!(
                "lockfileVersion {v} is not supported (2 and 3 are)"
            )))
        }
    }
    let packages = doc
        .get("packages")
        .and_then(Value::as_object)
        .ok_or_else(|| err("no \"packages\" map".into()))?;

    let mut pins: BTreeMap<(String, String), NpmPin> = BTreeMap::new();
    for (key, entry) in packages {
        if key.is_empty() {
            continue;
        }
        let Some(entry) = entry.as_object() else {
            return Err(err(format!("packages[{key:?}] is not an object")));
        };
        let flag = |f: &str| entry.get(f).and_then(Value::as_bool) == Some(true);
        if flag("link") || flag("inBundle") {
            continue;
        }
        let Some(key_name) = name_from_key(key) else {
            // A workspace member's own directory; its dependencies are
            // entries of their own.
            continue;
        };
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(key_name)
            .to_string();
        let what = format!("package {key:?} ({name})");
        let version = entry
            .get("version")
            .and_then(Value::as_str)
            .ok_or_else(|| err(format!("{} has no version", what)))?
            .to_string();
        let resolved = entry
            .get("resolved")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(resolved) = &resolved {
            let scheme_ok = resolved.split_once("://").is_some_and(|(s, _)| {
                s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https")
            });
            if !scheme_ok {
                return Err(err(format!(
                    "{}@{version}: resolved {resolved:?} is not an http or https URL; only registry tarballs can enter a snapshot",
                    what
                )));
            }
        }
        let integrity = entry
            .get("integrity")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                err(format!(
                    "{}@{version} has no integrity; refusing to bind it to unverified bytes (regenerate the lock with npm >= 7)",
                    what
                ))
            })?
            .to_string();
        let sha512 =
            sha512_of_integrity(&integrity).map_err(|m| err(format!("{}@{version}: {m}", what)))?;
        let pin = NpmPin {
            name: name.clone(),
            version: version.clone(),
            resolved,
            integrity,
            sha512,
            key: key.clone(),
            dependencies: string_map(entry, "dependencies"),
            optional_dependencies: string_map(entry, "optionalDependencies"),
            peer_dependencies: string_map(entry, "peerDependencies"),
            has_install_script: flag("hasInstallScript"),
            os: string_list(entry.get("os")),
            cpu: string_list(entry.get("cpu")),
            libc: string_list(entry.get("libc")),
            optional: flag("optional"),
        };
        match pins.get_mut(&(name.clone(), version.clone())) {
            Some(old) if old.sha512 != pin.sha512 => {
                return Err(err(format!(
                "{name}@{version} is locked with two different integrities, at {:?} and {key:?}",
                old.key
            )))
            }
            // Optional only if every place that installs it is; a URL
            // written at one place serves all.
            Some(old) => {
                old.optional &= pin.optional;
                if old.resolved.is_none() {
                    old.resolved = pin.resolved;
                }
            }
            None => {
                pins.insert((name, version), pin);
            }
        }
    }
    Ok(NpmLock {
        file: file.to_string(),
        lockfile_version: version,
        pins: pins.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::base64;

    fn sri(byte: u8) -> String {
        format!("sha512-{}", base64::encode(&[byte; 64]))
    }

    fn lock(version: u64, packages: Value) -> String {
        serde_json::json!({
            "name": "p", "version": "1.0.0", "lockfileVersion": version,
            "requires": true, "packages": packages,
        })
        .to_string()
    }

    #[test]
    fn v2_and_v3_with_nested_scoped_links_and_bundles() {
        for v in [2, 3] {
            let text = lock(
                v,
                serde_json::json!({
                    "": { "name": "p", "dependencies": { "a": "^1" } },
                    "node_modules/a": { "version": "1.0.0", "resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz", "integrity": sri(1), "dependencies": { "b": "^2" } },
                    "node_modules/a/node_modules/b": { "version": "2.0.0", "resolved": "https://registry.npmjs.org/b/-/b-2.0.0.tgz", "integrity": format!("{} sha1-AAAA", sri(2)) },
                    "node_modules/b": { "version": "2.0.0", "resolved": "https://registry.npmjs.org/b/-/b-2.0.0.tgz", "integrity": sri(2) },
                    "node_modules/@s/c": { "version": "3.0.0", "resolved": "http://127.0.0.1:9/@s/c/-/c-3.0.0.tgz", "integrity": sri(3), "hasInstallScript": true },
                    "node_modules/w": { "resolved": "packages/w", "link": true },
                    "node_modules/a/node_modules/bundled": { "version": "1.0.0", "inBundle": true },
                }),
            );
            let l = parse_package_lock("package-lock.json", &text).unwrap();
            let names: Vec<_> = l
                .pins
                .iter()
                .map(|p| format!("{}@{}", p.name, p.version))
                .collect();
            assert_eq!(names, ["@s/c@3.0.0", "a@1.0.0", "b@2.0.0"]);
            assert_eq!(l.pins[0].sha512, [3; 64]);
            assert!(l.pins[0].has_install_script);
            assert_eq!(l.pins[1].dependencies["b"], "^2");
            assert_eq!(l.pins[2].sri(), sri(2));
        }
    }

    /// `omit-lockfile-registry-resolved=true`: registry entries carry no
    /// `resolved`; the pin is still made, to be resolved by the builder.
    #[test]
    fn entries_without_resolved_are_registry_pins() {
        let text = lock(
            3,
            serde_json::json!({
                "": { "name": "p" },
                "node_modules/a": { "version": "1.0.0", "integrity": sri(1) },
                "node_modules/@s/c": { "version": "3.0.0", "integrity": sri(3) },
                "node_modules/x/node_modules/@s/c": { "version": "3.0.0", "resolved": "https://r/@s/c/-/c-3.0.0.tgz", "integrity": sri(3) },
            }),
        );
        let l = parse_package_lock("l", &text).unwrap();
        let got: Vec<_> = l
            .pins
            .iter()
            .map(|p| (p.name.as_str(), p.resolved.as_deref()))
            .collect();
        assert_eq!(
            got,
            [("@s/c", Some("https://r/@s/c/-/c-3.0.0.tgz")), ("a", None)]
        );
    }

    #[test]
    fn platform_fields_and_optional() {
        let text = lock(
            3,
            serde_json::json!({
                "node_modules/n": { "version": "1.0.0", "resolved": "https://r/n/-/n-1.0.0.tgz", "integrity": sri(1), "optional": true, "os": ["linux"], "cpu": "x64", "libc": ["glibc", 7] },
                "node_modules/m": { "version": "1.0.0", "resolved": "https://r/m/-/m-1.0.0.tgz", "integrity": sri(2), "optional": true },
                "node_modules/a/node_modules/m": { "version": "1.0.0", "resolved": "https://r/m/-/m-1.0.0.tgz", "integrity": sri(2) },
                "node_modules/d": { "version": "1.0.0", "resolved": "https://r/d/-/d-1.0.0.tgz", "integrity": sri(3), "devOptional": true },
            }),
        );
        let l = parse_package_lock("l", &text).unwrap();
        let pin = |n: &str| l.pins.iter().find(|p| p.name == n).unwrap();
        let n = pin("n");
        assert!(n.optional);
        assert_eq!(
            (n.os.as_slice(), n.cpu.as_slice()),
            (&["linux".to_string()][..], &["x64".to_string()][..])
        );
        assert_eq!(n.libc, ["glibc"]);
        // Required at one place: required.
        assert!(!pin("m").optional);
        assert!(!pin("d").optional && pin("d").os.is_empty());
    }

    #[test]
    fn refusals() {
        let entry = |e: Value| lock(3, serde_json::json!({ "node_modules/x": e }));
        let e = parse_package_lock(
            "package-lock.json",
            &entry(
                serde_json::json!({ "version": "1.0.0", "resolved": "https://r/x/-/x-1.0.0.tgz" }),
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("package-lock.json: "), "{e}");
        assert!(
            e.contains("\"node_modules/x\" (x)@1.0.0 has no integrity"),
            "{e}"
        );
        let e = parse_package_lock(
            "l",
            &entry(serde_json::json!({ "version": "1.0.0", "resolved": "https://r/x/-/x-1.0.0.tgz", "integrity": "sha1-AAAA" })),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("has no sha512 (only sha1)"), "{e}");
        let e = parse_package_lock(
            "l",
            &entry(serde_json::json!({ "version": "1.0.0", "resolved": "git+ssh://h/x.git", "integrity": sri(1) })),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not an http or https URL"), "{e}");
        let e = parse_package_lock("l", &lock(1, serde_json::json!({})))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "l: lockfileVersion 1 is not supported; run npm install with npm >= 7"
        );
        let two = lock(
            3,
            serde_json::json!({
                "node_modules/x": { "version": "1.0.0", "resolved": "https://r/x.tgz", "integrity": sri(1) },
                "node_modules/y/node_modules/x": { "version": "1.0.0", "resolved": "https://r/x.tgz", "integrity": sri(2) },
            }),
        );
        assert!(parse_package_lock("l", &two)
            .unwrap_err()
            .to_string()
            .contains("two different integrities"));
    }
}
