//! The OCI image manifest a snapshot travels as (docs/snapshot-format.md,
//! "As an OCI artifact"): `artifactType` of our own, the empty config
//! descriptor, and one layer per file of the snapshot directory, its path
//! in `org.opencontainers.image.title`.

use egress_model::Sha256Digest;
use egress_snapshot::manifest::SNAPSHOT_JSON;
use egress_snapshot::{ALLOWED_SIGNERS_FILE, MANIFEST_FILE, SIGNATURE_FILE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The manifest's own media type (image-spec 1.1).
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// What the artifact is.
pub const ARTIFACT_TYPE: &str = "application/vnd.egress-conformance.snapshot.v1";
/// The empty config (image-spec, "Guidance for an Empty Descriptor").
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
/// The empty config's bytes.
pub const EMPTY_JSON: &[u8] = b"{}";
/// The layer annotation holding the file's path in the snapshot directory.
pub const TITLE: &str = "org.opencontainers.image.title";
/// The manifest annotation holding the snapshot ID.
pub const SNAPSHOT_ID: &str = "vnd.egress-conformance.snapshot.id";

/// Each file's layer media type.
pub const MANIFEST_TYPE: &str = "application/vnd.egress-conformance.snapshot.manifest.v1";
pub const SIGNATURE_TYPE: &str = "application/vnd.egress-conformance.snapshot.signature.v1";
pub const ALLOWED_SIGNERS_TYPE: &str =
    "application/vnd.egress-conformance.snapshot.allowed-signers.v1";
pub const DOC_TYPE: &str = "application/vnd.egress-conformance.snapshot.doc.v1+json";
pub const BLOB_TYPE: &str = "application/vnd.egress-conformance.snapshot.blob.v1";

/// The layer media type a file of the snapshot directory travels as, or
/// `None` for a path that is not one (a blob must be named by `digest`).
pub fn media_type(title: &str, digest: &Sha256Digest) -> Option<&'static str> {
    match title {
        MANIFEST_FILE => Some(MANIFEST_TYPE),
        SIGNATURE_FILE => Some(SIGNATURE_TYPE),
        ALLOWED_SIGNERS_FILE => Some(ALLOWED_SIGNERS_TYPE),
        SNAPSHOT_JSON => Some(DOC_TYPE),
        _ => (title == egress_snapshot::manifest::blob_path(digest)).then_some(BLOB_TYPE),
    }
}

/// One file of the snapshot as a layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its path in the snapshot directory.
    pub title: String,
    pub digest: Sha256Digest,
    pub size: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageManifest {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    artifact_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

fn digest_text(d: &Sha256Digest) -> String {
    format!("sha256:{}", d.to_hex())
}

/// The manifest's bytes for these layers (in this order).
pub fn render(layers: &[Layer], snapshot_id: &Sha256Digest) -> Vec<u8> {
    let m = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.to_string()),
        artifact_type: Some(ARTIFACT_TYPE.to_string()),
        config: Descriptor {
            media_type: EMPTY_CONFIG.to_string(),
            digest: digest_text(&Sha256Digest::of(EMPTY_JSON)),
            size: EMPTY_JSON.len() as u64,
            annotations: BTreeMap::new(),
        },
        layers: layers
            .iter()
            .map(|l| Descriptor {
                media_type: media_type(&l.title, &l.digest)
                    .unwrap_or(BLOB_TYPE)
                    .to_string(),
                digest: digest_text(&l.digest),
                size: l.size,
                annotations: BTreeMap::from([(TITLE.to_string(), l.title.clone())]),
            })
            .collect(),
        annotations: BTreeMap::from([(SNAPSHOT_ID.to_string(), snapshot_id.to_hex())]),
    };
    let mut out = serde_json::to_vec_pretty(&m).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Why a manifest is not one of our snapshot artifacts.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("the manifest is not JSON of an OCI image manifest: {0}")]
    Json(String),
    #[error("the manifest's {field} is {found:?}, not {want:?}: not a snapshot artifact")]
    Wrong {
        field: &'static str,
        found: String,
        want: &'static str,
    },
    #[error("layer {0}: {1}")]
    Layer(usize, String),
    #[error("the artifact has no MANIFEST layer")]
    NoManifest,
}

/// The layers of a snapshot artifact, each path checked: one of the four
/// evidence files or `blobs/sha256/<hex>` named by its own digest, each at
/// most once, with the media type that path travels as.
pub fn parse(bytes: &[u8]) -> Result<Vec<Layer>, ArtifactError> {
    let m: ImageManifest =
        serde_json::from_slice(bytes).map_err(|e| ArtifactError::Json(e.to_string()))?;
    let wrong = |field, found: Option<&str>, want| ArtifactError::Wrong {
        field,
        found: found.unwrap_or("absent").to_string(),
        want,
    };
    if m.schema_version != 2 {
        return Err(ArtifactError::Json(format!(
            "schemaVersion is {}, not 2",
            m.schema_version
        )));
    }
    if m.media_type.as_deref() != Some(OCI_MANIFEST) {
        return Err(wrong("mediaType", m.media_type.as_deref(), OCI_MANIFEST));
    }
    if m.artifact_type.as_deref() != Some(ARTIFACT_TYPE) {
        return Err(wrong(
            "artifactType",
            m.artifact_type.as_deref(),
            ARTIFACT_TYPE,
        ));
    }
    if m.config.media_type != EMPTY_CONFIG {
        return Err(wrong(
            "config mediaType",
            Some(&m.config.media_type),
            EMPTY_CONFIG,
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut layers = Vec::with_capacity(m.layers.len());
    for (i, d) in m.layers.into_iter().enumerate() {
        let n = i + 1;
        let fail = |why: String| ArtifactError::Layer(n, why);
        let digest = d
            .digest
            .strip_prefix("sha256:")
            .and_then(|h| Sha256Digest::from_hex(h).ok())
            .ok_or_else(|| fail(format!("digest {:?} is not sha256:<64 hex>", d.digest)))?;
        let title = d
            .annotations
            .get(TITLE)
            .ok_or_else(|| fail(format!("no {TITLE} annotation")))?
            .clone();
        let want = media_type(&title, &digest).ok_or_else(|| {
            fail(format!(
                "path {title:?} is not a snapshot file (MANIFEST, MANIFEST.sig, allowed_signers, SNAPSHOT.json or blobs/sha256/<its digest>)"
            ))
        })?;
        if d.media_type != want {
            return Err(fail(format!(
                "{title} has media type {:?}, not {want:?}",
                d.media_type
            )));
        }
        if !seen.insert(title.clone()) {
            return Err(fail(format!("{title} appears twice")));
        }
        layers.push(Layer {
            title,
            digest,
            size: d.size,
        });
    }
    if !seen.contains(MANIFEST_FILE) {
        return Err(ArtifactError::NoManifest);
    }
    Ok(layers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers() -> Vec<Layer> {
        let blob = Sha256Digest::of(b"wheel");
        vec![
            Layer {
                title: "MANIFEST".into(),
                digest: Sha256Digest::of(b"m"),
                size: 1,
            },
            Layer {
                title: egress_snapshot::manifest::blob_path(&blob),
                digest: blob,
                size: 5,
            },
        ]
    }

    #[test]
    fn a_rendered_manifest_parses_back() {
        let bytes = render(&layers(), &Sha256Digest::of(b"m"));
        assert_eq!(parse(&bytes).unwrap(), layers());
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains(ARTIFACT_TYPE) && text.contains(BLOB_TYPE),
            "{text}"
        );
    }

    #[test]
    fn foreign_or_unsafe_layers_are_refused() {
        let good = String::from_utf8(render(&layers(), &Sha256Digest::of(b"m"))).unwrap();
        let blob = egress_snapshot::manifest::blob_path(&Sha256Digest::of(b"wheel"));
        for (from, to) in [
            (ARTIFACT_TYPE, "application/vnd.oci.image.config.v1+json"),
            (blob.as_str(), "../../etc/passwd"),
            (
                blob.as_str(),
                "blobs/sha256/0000000000000000000000000000000000000000000000000000000000000000",
            ),
            (BLOB_TYPE, DOC_TYPE),
            ("\"MANIFEST\"", "\"SNAPSHOT.json\""),
        ] {
            let bad = good.replacen(from, to, 1);
            assert!(parse(bad.as_bytes()).is_err(), "{from} -> {to}");
        }
    }
}
