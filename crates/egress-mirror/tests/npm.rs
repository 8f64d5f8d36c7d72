//! npm's registry side routes on the reference mirror: the keys document a
//! snapshot carries is served at `/-/npm/v1/keys` like any served path, and
//! npm's audit endpoints (POSTs) are refused with 405, never answered.

use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
use egress_signing::SigningKey;
use egress_snapshot::{SnapshotBuilder, NPM_KEYS_PATH};
use std::sync::Arc;

// Only the raw-request helpers are used here.
#[allow(dead_code)]
mod common;

use common::{raw, request};

const KEYS: &str = "{\"keys\":[{\"expires\":null,\"keyid\":\"SHA256:abc\",\"keytype\":\"ecdsa-sha2-nistp256\",\"scheme\":\"ecdsa-sha2-nistp256\",\"key\":\"MFkw\"}]}";

#[test]
fn keys_are_served_and_audits_are_refused() {
    let t = build_npm_tarball(&NpmPackageSpec::new(
        "ec-present",
        "1.0.0",
        "in the snapshot",
        "module.exports = 1;\n",
    ));
    let mut b = SnapshotBuilder::new("/simple/");
    b.npm_registry_url("http://127.0.0.1:8080/").unwrap();
    b.add_npm_tarball("ec-present", "1.0.0", &t.filename, t.bytes, &t.integrity)
        .unwrap();
    b.npm_registry_keys(KEYS.as_bytes().to_vec()).unwrap();
    let snapshot = b
        .build(
            "2026-01-01T00:00:00Z",
            Some(&SigningKey::from_seed([5; 32], "test")),
            "mirror@egress.test",
        )
        .unwrap();
    let id = snapshot.id().to_hex();
    let server = egress_mirror::serve(Arc::new(snapshot), "127.0.0.1:0").unwrap();
    let addr = server.addr();

    let r = request(addr, "GET", NPM_KEYS_PATH, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, KEYS.as_bytes());
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    assert_eq!(r.header("X-Egress-Snapshot"), Some(id.as_str()));
    let head = request(addr, "HEAD", NPM_KEYS_PATH, &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    // What `npm audit` and `npm install` (with audit on) send.
    for target in [
        "/-/npm/v1/security/advisories/bulk",
        "/-/npm/v1/security/audits/quick",
        "/-/npm/v1/security/audits",
    ] {
        let body = "{\"ec-present\":[\"1.0.0\"]}";
        let r = raw(
            addr,
            &format!(
                "POST {target} HTTP/1.1\r\nHost: mirror.test\r\nContent-Type: application/json\r\nnpm-command: audit\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(r.status, 405, "{target}");
        assert_eq!(r.header("Allow"), Some("GET, HEAD"), "{target}");
        assert_eq!(r.header("X-Egress-Snapshot"), Some(id.as_str()));
        // Not in the snapshot for reading either.
        assert_eq!(request(addr, "GET", target, &[]).status, 404, "{target}");
    }
    // Nothing else below /-/ exists: the keys path is matched exactly.
    for target in [
        "/-/npm/v1/keys/",
        "/-/npm/v1/KEYS",
        "/-/npm/v1/keys%2f",
        "/-/v1/search?text=ec",
        "/-/whoami",
    ] {
        assert_eq!(request(addr, "GET", target, &[]).status, 404, "{target}");
    }
    assert_eq!(request(addr, "GET", "/-/npm/v1/keys?x=1", &[]).status, 200);
    server.stop();
}
