//! npm content of a snapshot: tarballs and their pre-rendered packuments.
//!
//! Served paths, for a package `name` (or `@scope/name`):
//! - `/<name>` (and for scoped names both `/@scope%2fname` and
//!   `/@scope/name`): the packument, full ([`NPM_JSON`]) and abbreviated
//!   ([`NPM_ABBREVIATED`]), negotiated by `Accept`;
//! - `/<name>/-/<name without scope>-<version>.tgz`: the tarball;
//! - [`NPM_KEYS_PATH`] (`/-/npm/v1/keys`), when the builder was given the
//!   upstream registry's keys document: those bytes, verbatim.
//!
//! Every version in a packument carries `dist.integrity` (the sha512 the
//! tarball was verified against when it entered the snapshot) and an absolute
//! `dist.tarball` URL on the mirror, and, where the upstream registry signed
//! that very integrity, its `dist.signatures` as the upstream listed them
//! (replayed, never made here). Packuments are rendered by serde from plain
//! strings; nothing a package supplies is evaluated (P4).

use egress_model::Sha256Digest;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The full packument's content type.
pub const NPM_JSON: &str = "application/json";
/// The abbreviated ("corgi") packument's content type.
pub const NPM_ABBREVIATED: &str = "application/vnd.npm.install-v1+json";
/// Where an npm registry publishes the public keys its `dist.signatures`
/// verify with (`npm audit signatures` reads it), served as [`NPM_JSON`].
pub const NPM_KEYS_PATH: &str = "/-/npm/v1/keys";

/// What a packument says about one version besides its dist, as the lock
/// records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NpmVersionMeta {
    pub dependencies: BTreeMap<String, String>,
    pub optional_dependencies: BTreeMap<String, String>,
    pub peer_dependencies: BTreeMap<String, String>,
    pub has_install_script: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct NpmDist {
    pub version: String,
    pub filename: String,
    pub sha256: Sha256Digest,
    pub integrity: String,
    pub meta: NpmVersionMeta,
    /// The upstream's `dist.signatures` for exactly `integrity`, verbatim.
    pub signatures: Option<Value>,
}

/// Whether `signatures` has the shape of a registry's `dist.signatures`: a
/// non-empty array of objects, each with a string `keyid` and `sig` (other
/// members are kept as they are).
pub fn is_signatures_shape(signatures: &Value) -> bool {
    signatures.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter().all(|s| {
                s.get("keyid").is_some_and(Value::is_string)
                    && s.get("sig").is_some_and(Value::is_string)
            })
    })
}

/// Whether `bytes` is a registry keys document: a JSON object whose `keys`
/// is an array of objects.
pub fn is_keys_document(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|doc| {
        doc.get("keys")
            .and_then(Value::as_array)
            .is_some_and(|keys| keys.iter().all(Value::is_object))
    })
}

/// An npm name that is safe as a URL path as it stands: `name` or
/// `@scope/name`, each part ASCII letters, digits, `-`, `.`, `_`, `~`, not
/// starting with `.`, `_` or `-`, at most 214 bytes in all.
pub(crate) fn is_safe_name(name: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '_', '-'])
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    };
    let ok = match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, pkg)| part(scope) && part(pkg)),
        None => part(name),
    };
    name.len() <= 214 && ok
}

/// A semver version (with optional pre-release and build): digits,
/// letters, `.`, `-`, `+`.
pub(crate) fn is_safe_version(v: &str) -> bool {
    v.len() <= 256
        && v.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-+".contains(&b))
}

/// The packument paths of `name`: `/name`, or for `@scope/name` both
/// `/@scope%2fname` (how npm asks) and `/@scope/name`.
pub fn packument_paths(name: &str) -> Vec<String> {
    match name.split_once('/') {
        Some((scope, pkg)) => vec![format!("/{scope}%2f{pkg}"), format!("/{name}")],
        None => vec![format!("/{name}")],
    }
}

/// Where a tarball is served: `/<name>/-/<filename>`.
pub fn tarball_path(name: &str, filename: &str) -> String {
    format!("/{name}/-/{filename}")
}

/// Semver precedence (build metadata ignored); versions that do not parse
/// sort below those that do, then by text.
pub fn semver_cmp(a: &str, b: &str) -> Ordering {
    type Parsed<'a> = ([u64; 3], Option<&'a str>);
    fn parse(v: &str) -> Option<Parsed<'_>> {
        let v = v.split('+').next()?;
        let (core, pre) = match v.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (v, None),
        };
        let mut nums = core.split('.').map(|n| n.parse::<u64>().ok());
        let out = [nums.next()??, nums.next()??, nums.next()??];
        nums.next().is_none().then_some((out, pre))
    }
    fn pre_cmp(a: &str, b: &str) -> Ordering {
        let mut x = a.split('.');
        let mut y = b.split('.');
        loop {
            match (x.next(), y.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(p), Some(q)) => {
                    let o = match (p.parse::<u64>(), q.parse::<u64>()) {
                        (Ok(m), Ok(n)) => m.cmp(&n),
                        (Ok(_), Err(_)) => Ordering::Less,
                        (Err(_), Ok(_)) => Ordering::Greater,
                        (Err(_), Err(_)) => p.cmp(q),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
            }
        }
    }
    match (parse(a), parse(b)) {
        (Some((x, xp)), Some((y, yp))) => x.cmp(&y).then_with(|| match (xp, yp) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(p), Some(q)) => pre_cmp(p, q),
        }),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => a.cmp(b),
    }
    .then_with(|| a.cmp(b))
}

fn version_doc(name: &str, d: &NpmDist, registry: &str, abbreviated: bool) -> Value {
    let mut doc = Map::new();
    doc.insert("name".into(), json!(name));
    doc.insert("version".into(), json!(d.version));
    for (field, map) in [
        ("dependencies", &d.meta.dependencies),
        ("optionalDependencies", &d.meta.optional_dependencies),
        ("peerDependencies", &d.meta.peer_dependencies),
    ] {
        if !map.is_empty() {
            doc.insert(field.into(), json!(map));
        }
    }
    if d.meta.has_install_script && abbreviated {
        doc.insert("hasInstallScript".into(), json!(true));
    }
    if !abbreviated {
        doc.insert("_id".into(), json!(format!("{name}@{}", d.version)));
    }
    let mut dist = json!({
        "integrity": d.integrity,
        "tarball": format!("{registry}{}", tarball_path(name, &d.filename)),
    });
    if let Some(signatures) = &d.signatures {
        dist["signatures"] = signatures.clone();
    }
    doc.insert("dist".into(), dist);
    Value::Object(doc)
}

/// The full and the abbreviated packument of `name`, as bytes.
/// `registry` is the mirror's base URL without a trailing `/`; `dists` is
/// sorted by version and not empty.
pub(crate) fn render_packuments(name: &str, dists: &[NpmDist], registry: &str) -> [Vec<u8>; 2] {
    let latest = dists
        .iter()
        .map(|d| d.version.as_str())
        .max_by(|a, b| semver_cmp(a, b))
        .unwrap_or_default();
    [false, true].map(|abbreviated| {
        let versions: Map<String, Value> = dists
            .iter()
            .map(|d| {
                (
                    d.version.clone(),
                    version_doc(name, d, registry, abbreviated),
                )
            })
            .collect();
        let mut doc = Map::new();
        if !abbreviated {
            doc.insert("_id".into(), json!(name));
        }
        doc.insert("name".into(), json!(name));
        doc.insert("dist-tags".into(), json!({ "latest": latest }));
        doc.insert("versions".into(), Value::Object(versions));
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(doc)).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_versions_and_order() {
        for ok in ["a", "ec-present", "@ec/scoped", "a.b_c~d", "Legacy"] {
            assert!(is_safe_name(ok), "{ok}");
        }
        for bad in [
            "", "-", "-a", ".a", "_a", "@a", "@a/", "a/b", "@a/b/c", "a%2fb", "a b", "a?",
        ] {
            assert!(!is_safe_name(bad), "{bad}");
        }
        assert!(is_safe_version("1.0.0-beta.1+build"));
        assert!(!is_safe_version("v1") && !is_safe_version("1/0") && !is_safe_version(""));
        let mut v = vec![
            "1.10.0",
            "1.2.0",
            "1.2.0-beta.2",
            "1.2.0-beta.10",
            "2.0.0-rc.1",
        ];
        v.sort_by(|a, b| semver_cmp(a, b));
        assert_eq!(
            v,
            [
                "1.2.0-beta.2",
                "1.2.0-beta.10",
                "1.2.0",
                "1.10.0",
                "2.0.0-rc.1"
            ]
        );
        assert_eq!(
            packument_paths("@s/n"),
            ["/@s%2fn".to_string(), "/@s/n".to_string()]
        );
    }
}
