//! npm registry signatures in a snapshot: the upstream's `dist.signatures`
//! replayed verbatim in both packuments of the version they sign, the keys
//! document served verbatim at `/-/npm/v1/keys`, and nothing attached where
//! the integrity differs.

use egress_artifacts::{build_npm_tarball, NpmPackageSpec, NpmTarball};
use egress_signing::SigningKey;
use egress_snapshot::{
    Snapshot, SnapshotBuilder, SnapshotError, NPM_ABBREVIATED, NPM_JSON, NPM_KEYS_PATH,
};
use serde_json::{json, Value};

// Only TempDir is used here.
#[allow(dead_code)]
mod common;

use common::TempDir;

fn tarball(name: &str, version: &str) -> NpmTarball {
    build_npm_tarball(&NpmPackageSpec::new(
        name,
        version,
        "signed upstream",
        "module.exports = 1;\n",
    ))
}

fn builder(tarballs: &[(&str, &str, &NpmTarball)]) -> SnapshotBuilder {
    let mut b = SnapshotBuilder::new("/simple/");
    b.npm_registry_url("http://127.0.0.1:8080/").unwrap();
    for (name, version, t) in tarballs {
        b.add_npm_tarball(name, version, &t.filename, t.bytes.clone(), &t.integrity)
            .unwrap();
    }
    b
}

fn build(b: SnapshotBuilder) -> Snapshot {
    b.build(
        "2026-01-01T00:00:00Z",
        Some(&SigningKey::from_seed([9; 32], "test")),
        "npm@egress.test",
    )
    .unwrap()
}

fn served(s: &Snapshot, path: &str, content_type: &str) -> Vec<u8> {
    let e = s
        .doc
        .lookup(path, content_type)
        .unwrap_or_else(|| panic!("{path} {content_type} not served"));
    s.blobs.get(&e.sha256).unwrap().to_vec()
}

fn dist(s: &Snapshot, path: &str, content_type: &str, version: &str) -> Value {
    let doc: Value = serde_json::from_slice(&served(s, path, content_type)).unwrap();
    doc["versions"][version]["dist"].clone()
}

/// A keys document as registry.npmjs.org writes it, with its own spacing.
const KEYS: &str = "{\"keys\":[{\"expires\":null,\"keyid\":\"SHA256:abc\",\"keytype\":\"ecdsa-sha2-nistp256\",\"scheme\":\"ecdsa-sha2-nistp256\",\"key\":\"MFkw\"}]}\n";

#[test]
fn signatures_and_keys_are_replayed_verbatim() {
    let a1 = tarball("ec-a", "1.0.0");
    let a2 = tarball("ec-a", "2.0.0");
    let scoped = tarball("@ec/s", "1.0.0");
    let mut b = builder(&[
        ("ec-a", "1.0.0", &a1),
        ("ec-a", "2.0.0", &a2),
        ("@ec/s", "1.0.0", &scoped),
    ]);
    // Members npm does not know are kept too: the array is replayed as is.
    let sigs = json!([{"keyid": "SHA256:abc", "sig": "MEUCIQ==", "extra": [1, 2]}]);
    let scoped_sigs =
        json!([{"keyid": "SHA256:abc", "sig": "MEQ="}, {"keyid": "SHA256:def", "sig": "MEY="}]);
    b.add_npm_signatures("ec-a", "1.0.0", &a1.integrity, sigs.clone())
        .unwrap();
    b.add_npm_signatures("@ec/s", "1.0.0", &scoped.integrity, scoped_sigs.clone())
        .unwrap();
    b.npm_registry_keys(KEYS.as_bytes().to_vec()).unwrap();
    let s = build(b);
    s.check().unwrap();

    for ct in [NPM_JSON, NPM_ABBREVIATED] {
        let d = dist(&s, "/ec-a", ct, "1.0.0");
        assert_eq!(d["signatures"], sigs, "{ct}");
        assert_eq!(d["integrity"], a1.integrity.as_str());
        assert!(dist(&s, "/ec-a", ct, "2.0.0").get("signatures").is_none());
        for path in ["/@ec%2fs", "/@ec/s"] {
            assert_eq!(dist(&s, path, ct, "1.0.0")["signatures"], scoped_sigs);
        }
    }
    assert_eq!(served(&s, NPM_KEYS_PATH, NPM_JSON), KEYS.as_bytes());
    let keys: Vec<_> = s
        .doc
        .served
        .iter()
        .filter(|e| e.path == NPM_KEYS_PATH)
        .collect();
    assert_eq!(keys.len(), 1);

    // Written, signed and loaded again, as the mirror loads it.
    let dir = TempDir::new("egress-snapshot-npm-sigs");
    let out = dir.0.join("snap");
    s.write_dir(&out).unwrap();
    let loaded = Snapshot::load_dir(&out).unwrap();
    assert_eq!(loaded.id(), s.id());
    assert_eq!(served(&loaded, NPM_KEYS_PATH, NPM_JSON), KEYS.as_bytes());
}

#[test]
fn nothing_is_attached_that_does_not_sign_the_served_integrity() {
    let a1 = tarball("ec-a", "1.0.0");
    let other = tarball("ec-a", "9.9.9");
    let mut b = builder(&[("ec-a", "1.0.0", &a1)]);
    let sigs = json!([{"keyid": "SHA256:abc", "sig": "MEUCIQ=="}]);
    let npm_err = |e: SnapshotError| match e {
        SnapshotError::Npm(m) => m,
        e => panic!("{e}"),
    };
    // Signatures over another integrity.
    let m = npm_err(
        b.add_npm_signatures("ec-a", "1.0.0", &other.integrity, sigs.clone())
            .unwrap_err(),
    );
    assert!(m.contains("not attached"), "{m}");
    // A version that is not there.
    assert!(b
        .add_npm_signatures("ec-a", "2.0.0", &a1.integrity, sigs.clone())
        .is_err());
    assert!(b
        .add_npm_signatures("ec-b", "1.0.0", &a1.integrity, sigs.clone())
        .is_err());
    // Not shaped like dist.signatures.
    for bad in [
        json!([]),
        json!({"keyid": "a", "sig": "b"}),
        json!([{"keyid": "a"}]),
        json!([{"keyid": 1, "sig": "b"}]),
        json!("sig"),
    ] {
        assert!(
            b.add_npm_signatures("ec-a", "1.0.0", &a1.integrity, bad.clone())
                .is_err(),
            "{bad}"
        );
    }
    b.add_npm_signatures("ec-a", "1.0.0", &a1.integrity, sigs.clone())
        .unwrap();
    assert!(b
        .add_npm_signatures("ec-a", "1.0.0", &a1.integrity, sigs)
        .is_err());
    // Keys documents: a JSON object with a keys array, once.
    for bad in ["", "[]", "{\"keys\":{}}", "{\"keys\":[1]}", "not json"] {
        assert!(
            b.npm_registry_keys(bad.as_bytes().to_vec()).is_err(),
            "{bad}"
        );
    }
    b.npm_registry_keys(KEYS.as_bytes().to_vec()).unwrap();
    assert!(b.npm_registry_keys(KEYS.as_bytes().to_vec()).is_err());
    build(b).check().unwrap();

    // Without keys or signatures: neither appears.
    let s = build(builder(&[("ec-a", "1.0.0", &a1)]));
    assert!(s.doc.lookup(NPM_KEYS_PATH, NPM_JSON).is_none());
    assert!(dist(&s, "/ec-a", NPM_JSON, "1.0.0")
        .get("signatures")
        .is_none());
}
