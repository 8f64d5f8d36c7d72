//! Reading the registry's documents as a judge needs them: leniently (a
//! hostile target sends anything) and without evaluating anything.

use egress_model::Integrity;
use serde_json::Value;
use std::collections::BTreeMap;

/// One version of a packument, as far as P1 to P5 care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionDist {
    pub version: String,
    /// `dist.tarball` as written.
    pub tarball: Option<String>,
    /// `dist.integrity` as written.
    pub integrity: Option<String>,
    /// Number of `dist.signatures` entries.
    pub signatures: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packument {
    pub name: Option<String>,
    pub dist_tags: BTreeMap<String, String>,
    /// In the order of the document's `versions` object (sorted by key).
    pub versions: Vec<VersionDist>,
}

/// Why a body is not a packument.
#[derive(Debug, thiserror::Error)]
pub enum NotAPackument {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a JSON object")]
    NotObject,
    #[error("no `versions` object")]
    NoVersions,
}

impl Packument {
    /// A JSON object with a `versions` object; anything else is not a packument.
    pub fn parse(body: &[u8]) -> Result<Packument, NotAPackument> {
        let v: Value = serde_json::from_slice(body)?;
        let obj = v.as_object().ok_or(NotAPackument::NotObject)?;
        let versions = obj
            .get("versions")
            .and_then(Value::as_object)
            .ok_or(NotAPackument::NoVersions)?;
        let dist_tags = obj
            .get("dist-tags")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let versions = versions
            .iter()
            .map(|(version, doc)| version_dist(version, doc))
            .collect();
        Ok(Packument {
            name: obj.get("name").and_then(Value::as_str).map(str::to_string),
            dist_tags,
            versions,
        })
    }

    pub fn version(&self, v: &str) -> Option<&VersionDist> {
        self.versions.iter().find(|d| d.version == v)
    }
}

/// A version document's dist, wherever it sits (a packument entry or the
/// body of `GET /<name>/<version>`).
pub fn version_dist(version: &str, doc: &Value) -> VersionDist {
    let dist = doc.get("dist");
    let s = |k: &str| {
        dist.and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    VersionDist {
        version: version.to_string(),
        tarball: s("tarball"),
        integrity: s("integrity"),
        signatures: dist
            .and_then(|d| d.get("signatures"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    }
}

/// The well-formed sha512 entries of an SRI string (`sha512-<base64>`,
/// several allowed, separated by spaces); see [`Integrity::entries`].
pub fn sha512_entries(integrity: &str) -> Vec<Integrity> {
    Integrity::entries(integrity)
}

/// Whether `bytes` match a sha512 entry of `integrity`.
pub fn integrity_matches(integrity: &str, bytes: &[u8]) -> bool {
    Integrity::any_matches(integrity, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions_tags_and_dists() {
        let body = br#"{"name":"x","dist-tags":{"latest":"1.1.0"},"versions":{
            "1.0.0":{"dist":{"tarball":"http://h/x/-/x-1.0.0.tgz","integrity":"sha512-AAAA","signatures":[{},{}]}},
            "1.1.0":{}}}"#;
        let p = Packument::parse(body).unwrap();
        assert_eq!(p.name.as_deref(), Some("x"));
        assert_eq!(p.dist_tags["latest"], "1.1.0");
        assert_eq!(p.versions.len(), 2);
        assert_eq!(p.version("1.0.0").unwrap().signatures, 2);
        assert_eq!(p.version("1.1.0").unwrap().integrity, None);
        for bad in [&b"[]"[..], b"{}", b"{\"versions\":[]}", b"<html>"] {
            assert!(Packument::parse(bad).is_err());
        }
    }

    #[test]
    fn hostile_documents_are_read_without_trusting_their_shape() {
        // Nesting deeper than the parser allows is an error, not a crash.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(Packument::parse(deep.as_bytes()).is_err());
        // Fields of the wrong type read as absent, never as something else.
        let odd = br#"{"name":7,"dist-tags":{"latest":1,"next":"2.0.0"},"versions":{
            "1.0.0":{"dist":{"tarball":["x"],"integrity":{"sha512":"x"},"signatures":"no"}},
            "2.0.0":"not an object"}}"#;
        let p = Packument::parse(odd).unwrap();
        assert_eq!(p.name, None);
        assert_eq!(p.dist_tags.len(), 1);
        let v = p.version("1.0.0").unwrap();
        assert_eq!(
            (v.tarball.as_deref(), v.integrity.as_deref(), v.signatures),
            (None, None, 0)
        );
        assert_eq!(p.version("2.0.0").unwrap().integrity, None);
        // Integrity strings that are not base64 of 64 bytes carry no sha512.
        for bad in [
            "sha512-",
            "sha512-!!!!",
            "sha512-AAAA",
            "sha256-x sha384-y",
            "sha512",
        ] {
            assert!(sha512_entries(bad).is_empty(), "{bad}");
            assert!(!integrity_matches(bad, b""));
        }
    }

    #[test]
    fn integrity_is_checked_against_sha512_only() {
        let sri = egress_artifacts::sri_sha512(b"bytes");
        assert!(integrity_matches(&sri, b"bytes"));
        assert!(!integrity_matches(&sri, b"other"));
        assert!(integrity_matches(&format!("sha1-AAAA {sri}"), b"bytes"));
        assert!(!integrity_matches("sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", b""));
        assert!(sha512_entries("sha512-short").is_empty());
    }
}
