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
//!
//! What npm chooses a version by is served as the upstream gave it, in
//! both packuments alike: each version's dependency ranges,
//! `peerDependenciesMeta`, `os`, `cpu`, `libc`, `engines` and
//! `deprecated`; each version's publish time (the full packument's `time`,
//! with `created` the earliest and `modified` the latest of the snapshot's
//! versions, the abbreviated one's `modified`; none at all when no version
//! has one: a time is never invented), so `npm install --before` chooses
//! from the mirror as from the upstream. `dist-tags` has only `latest`,
//! the snapshot's own newest release (never the upstream's tag, which may
//! name a version the snapshot does not hold).

use egress_model::Sha256Digest;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// The full packument's content type.
pub const NPM_JSON: &str = "application/json";
/// The abbreviated ("corgi") packument's content type.
pub const NPM_ABBREVIATED: &str = "application/vnd.npm.install-v1+json";
/// Where an npm registry publishes the public keys its `dist.signatures`
/// verify with (`npm audit signatures` reads it), served as [`NPM_JSON`].
pub const NPM_KEYS_PATH: &str = "/-/npm/v1/keys";

/// What a packument says about one version besides its dist, as the lock,
/// the tarball's `package.json` or the upstream's packument records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NpmVersionMeta {
    pub dependencies: BTreeMap<String, String>,
    pub optional_dependencies: BTreeMap<String, String>,
    pub peer_dependencies: BTreeMap<String, String>,
    /// The peers `peerDependenciesMeta` marks `{"optional": true}`.
    pub optional_peers: BTreeSet<String>,
    pub has_install_script: bool,
    /// When the version was published (the upstream's `time[version]`),
    /// RFC 3339 exactly as the upstream wrote it; `None` when it gave none.
    pub published: Option<String>,
    /// The platforms it installs on (`os`, `cpu`, `libc`; empty: any).
    pub os: Vec<String>,
    pub cpu: Vec<String>,
    pub libc: Vec<String>,
    /// `engines` (e.g. `{"node": ">=18"}`), string values only.
    pub engines: BTreeMap<String, String>,
    /// The upstream's deprecation message, if the version is deprecated.
    pub deprecated: Option<String>,
    /// Who could publish the package when this version was published: the
    /// upstream full packument's `versions[v].maintainers`, in its order.
    /// Rendered into the full packument only, as npm serves it; empty when
    /// the upstream gave none (a lock or a local tarball gives none).
    pub maintainers: Vec<NpmMaintainer>,
}

/// One entry of a version's `maintainers`: an npm account name and the
/// email the upstream listed with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct NpmMaintainer {
    pub name: String,
    pub email: Option<String>,
}

impl NpmVersionMeta {
    /// Why the fields cannot be served as they are, if they cannot: a
    /// publish time that is not RFC 3339.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(t) = &self.published {
            if egress_model::Timestamp::parse(t).is_err() {
                return Err(format!("publish time {t:?} is not an RFC 3339 time"));
            }
        }
        Ok(())
    }
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
    /// For a version a layer carries from its base: its entries in the
    /// base's full and abbreviated packuments, served again verbatim.
    pub inherited: Option<Box<[Value; 2]>>,
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
pub fn is_safe_version(v: &str) -> bool {
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
    if let Some(docs) = &d.inherited {
        let [full, corgi] = &**docs;
        return if abbreviated { corgi } else { full }.clone();
    }
    let mut doc = Map::new();
    let meta = &d.meta;
    doc.insert("name".into(), json!(name));
    doc.insert("version".into(), json!(d.version));
    for (field, map) in [
        ("dependencies", &meta.dependencies),
        ("optionalDependencies", &meta.optional_dependencies),
        ("peerDependencies", &meta.peer_dependencies),
        ("engines", &meta.engines),
    ] {
        if !map.is_empty() {
            doc.insert(field.into(), json!(map));
        }
    }
    if !meta.optional_peers.is_empty() {
        let peers: Map<String, Value> = meta
            .optional_peers
            .iter()
            .map(|p| (p.clone(), json!({ "optional": true })))
            .collect();
        doc.insert("peerDependenciesMeta".into(), Value::Object(peers));
    }
    for (field, list) in [("os", &meta.os), ("cpu", &meta.cpu), ("libc", &meta.libc)] {
        if !list.is_empty() {
            doc.insert(field.into(), json!(list));
        }
    }
    if let Some(message) = &meta.deprecated {
        doc.insert("deprecated".into(), json!(message));
    }
    if meta.has_install_script && abbreviated {
        doc.insert("hasInstallScript".into(), json!(true));
    }
    if !abbreviated {
        doc.insert("_id".into(), json!(format!("{name}@{}", d.version)));
        if !meta.maintainers.is_empty() {
            let people: Vec<Value> = meta
                .maintainers
                .iter()
                .map(|m| match &m.email {
                    Some(email) => json!({ "name": m.name, "email": email }),
                    None => json!({ "name": m.name }),
                })
                .collect();
            doc.insert("maintainers".into(), Value::Array(people));
        }
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

/// Whether a version (one [`is_safe_version`] accepts) is a pre-release.
fn is_prerelease(v: &str) -> bool {
    v.split('+').next().is_some_and(|core| core.contains('-'))
}

/// `dist-tags.latest`: the newest release among `versions` (semver
/// order), or the newest version when all are pre-releases.
pub fn latest<'a>(versions: impl IntoIterator<Item = &'a str> + Clone) -> Option<&'a str> {
    let newest = |all: bool| {
        versions
            .clone()
            .into_iter()
            .filter(|v| all || !is_prerelease(v))
            .max_by(|a, b| semver_cmp(a, b))
    };
    newest(false).or_else(|| newest(true))
}

/// The full packument's `time`: each version's publish time as given,
/// `created` the earliest and `modified` the latest; `None` when no
/// version has one.
fn times(dists: &[NpmDist]) -> Option<Map<String, Value>> {
    let dated: Vec<(&str, &str, egress_model::Timestamp)> = dists
        .iter()
        .filter_map(|d| {
            let text = d.meta.published.as_deref()?;
            let at = egress_model::Timestamp::parse(text).ok()?;
            Some((d.version.as_str(), text, at))
        })
        .collect();
    let created = dated.iter().min_by_key(|(_, _, at)| *at)?;
    let modified = dated.iter().max_by_key(|(_, _, at)| *at)?;
    let mut time = Map::new();
    time.insert("created".into(), json!(created.1));
    time.insert("modified".into(), json!(modified.1));
    for (version, text, _) in &dated {
        time.insert((*version).to_string(), json!(text));
    }
    Some(time)
}

/// The full and the abbreviated packument of `name`, as bytes.
/// `registry` is the mirror's base URL without a trailing `/`; `dists` is
/// sorted by version and not empty.
pub(crate) fn render_packuments(name: &str, dists: &[NpmDist], registry: &str) -> [Vec<u8>; 2] {
    let latest = latest(dists.iter().map(|d| d.version.as_str())).unwrap_or_default();
    let time = times(dists);
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
        match (&time, abbreviated) {
            (Some(time), false) => {
                doc.insert("time".into(), Value::Object(time.clone()));
            }
            (Some(time), true) => {
                if let Some(modified) = time.get("modified") {
                    doc.insert("modified".into(), modified.clone());
                }
            }
            (None, _) => {}
        }
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

    fn dist(version: &str, meta: NpmVersionMeta) -> NpmDist {
        NpmDist {
            version: version.into(),
            filename: format!("x-{version}.tgz"),
            sha256: Sha256Digest::of(version.as_bytes()),
            integrity: format!("sha512-{version}"),
            meta,
            signatures: None,
            inherited: None,
        }
    }

    fn published(t: &str) -> NpmVersionMeta {
        NpmVersionMeta {
            published: Some(t.into()),
            ..NpmVersionMeta::default()
        }
    }

    fn render(dists: &[NpmDist]) -> (Value, Value) {
        let [full, corgi] = render_packuments("x", dists, "http://m");
        (
            serde_json::from_slice(&full).unwrap(),
            serde_json::from_slice(&corgi).unwrap(),
        )
    }

    #[test]
    fn latest_is_the_newest_release_held() {
        assert_eq!(latest(["1.0.0", "2.0.0-rc.1", "1.10.0"]), Some("1.10.0"));
        assert_eq!(latest(["1.0.0-a", "1.0.0-b+x"]), Some("1.0.0-b+x"));
        assert_eq!(latest([]), None);
    }

    #[test]
    fn times_are_served_as_given_and_never_invented() {
        let meta = NpmVersionMeta {
            optional_peers: ["p".to_string()].into(),
            peer_dependencies: [("p".to_string(), "*".to_string())].into(),
            os: vec!["linux".into()],
            cpu: vec!["x64".into()],
            libc: vec!["glibc".into()],
            engines: [("node".to_string(), ">=18".to_string())].into(),
            deprecated: Some("use y".into()),
            ..published("2024-06-15T12:00:00.000Z")
        };
        let dists = [
            dist("1.0.0", published("2024-02-01T12:00:00.000Z")),
            dist("1.1.0", meta),
            dist("1.2.0-beta.1", published("2025-04-10T14:00:00+02:00")),
            dist("1.3.0", NpmVersionMeta::default()),
        ];
        let (full, corgi) = render(&dists);
        let time = full["time"].as_object().unwrap();
        assert_eq!(time["created"], "2024-02-01T12:00:00.000Z");
        // The latest instant, in the upstream's own spelling.
        assert_eq!(time["modified"], "2025-04-10T14:00:00+02:00");
        assert_eq!(time["1.1.0"], "2024-06-15T12:00:00.000Z");
        assert!(time.get("1.3.0").is_none(), "{time:?}");
        assert_eq!(time.len(), 5);
        assert_eq!(corgi["modified"], time["modified"]);
        assert!(corgi.get("time").is_none());
        assert_eq!(full["dist-tags"], json!({ "latest": "1.3.0" }));
        assert_eq!(corgi["dist-tags"], full["dist-tags"]);
        // What npm chooses by is in both, alike.
        for doc in [&full, &corgi] {
            let v = &doc["versions"]["1.1.0"];
            assert_eq!(
                v["peerDependenciesMeta"],
                json!({ "p": { "optional": true } })
            );
            assert_eq!(v["os"], json!(["linux"]));
            assert_eq!(v["libc"], json!(["glibc"]));
            assert_eq!(v["engines"], json!({ "node": ">=18" }));
            assert_eq!(v["deprecated"], "use y");
            assert!(doc["versions"]["1.0.0"].get("os").is_none());
            assert_eq!(
                doc["versions"].as_object().unwrap().len(),
                dists.len(),
                "{doc}"
            );
        }
        assert_eq!(
            full["versions"]["1.1.0"]["dist"],
            corgi["versions"]["1.1.0"]["dist"]
        );
        // No time at all: no `time`, no `modified`.
        let (full, corgi) = render(&[dist("1.0.0", NpmVersionMeta::default())]);
        assert!(full.get("time").is_none() && corgi.get("modified").is_none());
        assert!(published("yesterday").check().is_err());
        assert!(published("2024-02-01T12:00:00.000Z").check().is_ok());
    }

    #[test]
    fn maintainers_are_in_the_full_packument_only() {
        let meta = NpmVersionMeta {
            maintainers: vec![
                NpmMaintainer {
                    name: "bob".into(),
                    email: Some("bob@example.org".into()),
                },
                NpmMaintainer {
                    name: "alice".into(),
                    email: None,
                },
            ],
            ..NpmVersionMeta::default()
        };
        let (full, corgi) = render(&[dist("1.0.0", meta), dist("1.1.0", Default::default())]);
        assert_eq!(
            full["versions"]["1.0.0"]["maintainers"],
            json!([{ "name": "bob", "email": "bob@example.org" }, { "name": "alice" }])
        );
        assert!(full["versions"]["1.1.0"].get("maintainers").is_none());
        assert!(corgi["versions"]["1.0.0"].get("maintainers").is_none());
    }

    #[test]
    fn the_builder_signs_each_tarballs_time_under_its_path() {
        use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
        let mut b = crate::SnapshotBuilder::new("/simple/");
        b.npm_registry_url("http://127.0.0.1:8/").unwrap();
        let t = |v: &str| build_npm_tarball(&NpmPackageSpec::new("@s/n", v, "d", ""));
        let (old, new) = (t("1.0.0"), t("2.0.0"));
        let time = "2024-02-01T12:00:00.000Z";
        b.add_npm_tarball_with(
            "@s/n",
            "1.0.0",
            &old.filename,
            old.bytes.clone(),
            &old.integrity,
            published(time),
        )
        .unwrap();
        let e = b
            .clone()
            .add_npm_tarball_with(
                "@s/n",
                "2.0.0",
                &new.filename,
                new.bytes.clone(),
                &new.integrity,
                published("2024-02-01"),
            )
            .unwrap_err();
        assert!(e.to_string().contains("not an RFC 3339 time"), "{e}");
        b.add_npm_tarball("@s/n", "2.0.0", &new.filename, new.bytes, &new.integrity)
            .unwrap();
        let snap = b.build("2026-01-01T00:00:00Z", None, "p").unwrap();
        assert_eq!(
            snap.doc.upload_times,
            [("/@s/n/-/n-1.0.0.tgz".to_string(), time.to_string())].into()
        );
    }
}
