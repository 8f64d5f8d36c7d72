//! The npm canary serves real npm-registry content that npm itself installs,
//! logs every request, refuses every write, and changes what it serves when
//! the suite asks.

use egress_model::{Observation, ProjectName, Sha256Digest, Upstream, Url, TEMPLATE_MARKERS};
use egress_references::npm::canary::{self as npm_canary, NpmCanary, ABBREVIATED};
use egress_transcript::{Client, Request};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1};
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

mod common;

use common::{body, client};

const ALL: [&str; 5] = [
    npm_canary::PRESENT,
    npm_canary::SCOPED,
    npm_canary::UPSTREAM_ONLY,
    npm_canary::TRIPWIRE,
    npm_canary::TEMPLATE,
];

fn sri(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        egress_model::base64::encode(&Sha512::digest(bytes))
    )
}

/// `/name` for unscoped names, `/@scope%2fname` for scoped ones, as npm asks.
fn packument_path(name: &str) -> String {
    format!("/{}", name.replace('/', "%2f"))
}

/// The packument and its content type.
fn packument(c: &Client, name: &str, abbreviated: bool) -> (Value, String) {
    let accept = if abbreviated {
        "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
    } else {
        "application/json"
    };
    let ex = c.get("packument", &packument_path(name), Some(accept));
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let ctype = ex
        .response
        .as_ref()
        .unwrap()
        .header("content-type")
        .unwrap();
    let ctype = ctype.to_string();
    (serde_json::from_slice(&body(&ex)).unwrap(), ctype)
}

/// Fetches `url` (which must be on the canary) and returns its bytes.
fn fetch(c: &Client, url: &str) -> Vec<u8> {
    let url = Url::parse(url).unwrap();
    assert!(url.same_origin(c.base()), "{url} is not on the canary");
    let ex = c.get("tarball", url.path_and_query(), None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    body(&ex)
}

fn sha256_of(c: &Client, url: &str) -> Sha256Digest {
    Sha256Digest::of(&fetch(c, url))
}

#[test]
fn packuments_parse_and_integrity_matches_served_bytes() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    for name in ALL {
        let (full, full_type) = packument(&c, name, false);
        let (abbr, abbr_type) = packument(&c, name, true);
        assert_eq!(full_type, "application/json");
        assert_eq!(abbr_type, ABBREVIATED);
        for doc in [&full, &abbr] {
            assert_eq!(doc["name"], name);
            let versions = doc["versions"].as_object().unwrap();
            assert!(!versions.is_empty());
            let latest = doc["dist-tags"]["latest"].as_str().unwrap();
            assert!(versions.contains_key(latest), "{name}: latest {latest}");
            for (version, v) in versions {
                assert_eq!(v["name"], name);
                assert_eq!(v["version"], version.as_str());
                let tarball = v["dist"]["tarball"].as_str().unwrap();
                assert_eq!(Some(tarball.to_string()), canary.tarball_url(name, version));
                let bytes = fetch(&c, tarball);
                assert_eq!(v["dist"]["integrity"], sri(&bytes), "{name} {version}");
            }
        }
        // Abbreviated: only what installing needs.
        assert!(abbr["modified"].is_string());
        for key in ["readme", "time", "description", "_id"] {
            assert!(abbr.get(key).is_none(), "{name}: abbreviated has {key}");
        }
        for v in abbr["versions"].as_object().unwrap().values() {
            assert!(v.get("readme").is_none() && v.get("description").is_none());
            assert!(v["dependencies"].is_object());
            let scripted = name == npm_canary::TRIPWIRE;
            assert_eq!(
                v.get("hasInstallScript"),
                scripted.then_some(&Value::Bool(true))
            );
        }
        // Full: the manifests, times and readme.
        assert!(full["time"]["modified"].is_string() && full["time"]["created"].is_string());
        for v in full["versions"].as_object().unwrap().keys() {
            assert!(full["time"][v].is_string(), "{name}: no time for {v}");
        }
        assert_eq!(full["_id"], name);
    }

    let (present, _) = packument(&c, npm_canary::PRESENT, true);
    let mut versions: Vec<&String> = present["versions"].as_object().unwrap().keys().collect();
    versions.sort();
    assert_eq!(versions, ["1.0.0", "1.1.0"]);
    assert_eq!(present["dist-tags"]["latest"], "1.1.0");

    let (tripwire, _) = packument(&c, npm_canary::TRIPWIRE, false);
    let script = tripwire["versions"]["0.1.0"]["scripts"]["postinstall"]
        .as_str()
        .unwrap();
    let call = format!("{}/tripwire/ec-tripwire-0.1.0", canary.base_url());
    assert!(script.contains(&call), "{script}");

    let (template, _) = packument(&c, npm_canary::TEMPLATE, false);
    let text = template.to_string();
    for (raw, evaluated) in TEMPLATE_MARKERS {
        for field in [&template["readme"], &template["description"]] {
            assert!(field.as_str().unwrap().contains(raw), "{raw} missing");
        }
        assert!(!text.contains(evaluated), "{evaluated} present");
    }

    // One version's manifest, by version and by dist-tag.
    for target in ["/ec-present/1.1.0", "/ec-present/latest"] {
        let ex = c.get("version", target, None);
        assert_eq!(ex.status(), Some(200), "{}", ex.summary());
        let v: Value = serde_json::from_slice(&body(&ex)).unwrap();
        assert_eq!(v["version"], "1.1.0");
        assert_eq!(v["dist"], present["versions"]["1.1.0"]["dist"]);
    }
    for target in [
        "/ec-present/2.0.0",
        "/ec-absent",
        "/ec-present/-/ec-present-2.0.0.tgz",
        "/ec-present/-/ec-upstream-only-1.0.0.tgz",
        "/EC-PRESENT",
        "/ec-present/../ec-upstream-only",
    ] {
        assert_eq!(
            c.get("absent", target, None).status(),
            Some(404),
            "{target}"
        );
    }
}

#[test]
fn scoped_names_in_both_encodings() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    let docs: Vec<Value> = ["/@ec%2fscoped", "/@ec%2Fscoped", "/@ec/scoped"]
        .iter()
        .map(|target| {
            let ex = c.get("scoped", target, Some(ABBREVIATED));
            assert_eq!(ex.status(), Some(200), "{}", ex.summary());
            serde_json::from_slice(&body(&ex)).unwrap()
        })
        .collect();
    assert!(docs.iter().all(|d| d == &docs[0]));
    let tarball = docs[0]["versions"]["1.0.0"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    assert_eq!(
        tarball,
        format!("{}/@ec/scoped/-/scoped-1.0.0.tgz", canary.base_url())
    );
    let bytes = fetch(&c, tarball);
    assert_eq!(
        docs[0]["versions"]["1.0.0"]["dist"]["integrity"],
        sri(&bytes)
    );
    let encoded = c.get("scoped", "/@ec%2fscoped/-/scoped-1.0.0.tgz", None);
    assert_eq!(body(&encoded), bytes);
    for target in [
        "/@ec",
        "/@ec%2f",
        "/@ec%252fscoped",
        "/@ec/scoped/-/other-1.0.0.tgz",
    ] {
        assert_eq!(c.get("bad", target, None).status(), Some(404), "{target}");
    }
}

#[test]
fn every_request_is_logged_and_writes_are_refused() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    let (before, _) = packument(&c, npm_canary::PRESENT, false);
    let mark = canary.mark();
    let publish = serde_json::json!({
        "name": "ec-present",
        "versions": {"6.6.6": {"name": "ec-present", "version": "6.6.6"}},
        "dist-tags": {"latest": "6.6.6"},
    });
    let writes = [
        ("PUT", "/ec-present", publish.to_string()),
        ("PUT", "/ec-new", publish.to_string()),
        ("DELETE", "/ec-present/-rev/1-0", String::new()),
        (
            "PUT",
            "/-/package/ec-present/dist-tags/latest",
            "\"1.0.0\"".into(),
        ),
        (
            "PUT",
            "/-/user/org.couchdb.user:eve",
            "{\"name\":\"eve\"}".into(),
        ),
        ("POST", "/-/v1/login", "{}".into()),
        ("POST", "/-/npm/v1/security/audits/quick", "{}".into()),
    ];
    for (method, target, payload) in &writes {
        let req = Request::new(method.parse().unwrap(), target)
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer npm_canarytoken")
            .body(payload.clone().into_bytes());
        let ex = c.send("write", &req);
        assert_eq!(
            ex.status(),
            Some(405),
            "{method} {target}: {}",
            ex.summary()
        );
    }
    let reads = [
        "/-/whoami",
        "/-/all",
        "/-/v1/search?text=ec",
        "/-/npm/v1/keys/other",
    ];
    for target in reads {
        assert_eq!(c.get("read", target, None).status(), Some(404), "{target}");
    }
    let ex = c.get("tripwire", "/tripwire/by-hand", None);
    assert_eq!(ex.status(), Some(200));

    let log = canary.requests_since(mark);
    let seen: Vec<(&str, &str, bool)> = log
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str(), r.tripwire))
        .collect();
    let mut want: Vec<(&str, &str, bool)> =
        writes.iter().map(|(m, t, _)| (*m, *t, false)).collect();
    want.extend(reads.iter().map(|t| ("GET", *t, false)));
    want.push(("GET", "/tripwire/by-hand", true));
    assert_eq!(seen, want);
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(canary.requests().len() as u64, canary.mark());

    // Nothing changed.
    let (after, _) = packument(&c, npm_canary::PRESENT, false);
    assert_eq!(before, after);
    assert_eq!(c.get("new", "/ec-new", None).status(), Some(404));
}

#[test]
fn mutations_show_at_the_canary() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    let plan = canary.plan();
    assert_eq!(plan.origin, canary.base_url());
    assert_eq!(plan.index_url, format!("{}/", canary.base_url()));
    assert_eq!(plan.present.as_str(), npm_canary::PRESENT);
    assert_eq!(plan.upstream_only.as_str(), npm_canary::UPSTREAM_ONLY);
    assert_eq!(plan.tripwire.as_str(), npm_canary::TRIPWIRE);
    assert_eq!(plan.template.as_str(), npm_canary::TEMPLATE);
    assert_eq!(
        plan.upstream_only_paths,
        ["/ec-upstream-only/-/ec-upstream-only-1.0.0.tgz"]
    );
    let snapshot: Vec<String> = canary
        .tarballs(false)
        .into_iter()
        .map(|(n, v, _)| format!("{n}@{v}"))
        .collect();
    assert!(snapshot.contains(&"@ec/scoped@1.0.0".to_string()));
    assert!(!snapshot.iter().any(|s| s.starts_with("ec-upstream-only")));

    // A new version, which becomes latest.
    let present = ProjectName::new(npm_canary::PRESENT).unwrap();
    let (old, _) = packument(&c, npm_canary::PRESENT, true);
    let Observation::UpstreamMutation {
        filename,
        before,
        after,
        ..
    } = canary.publish_new_version(&present).unwrap()
    else {
        panic!("not a mutation");
    };
    assert_eq!(filename, "ec-present-9.9.9.tgz");
    assert_eq!(before, None);
    let (new, _) = packument(&c, npm_canary::PRESENT, true);
    assert_eq!(new["dist-tags"]["latest"], "9.9.9");
    assert_ne!(new["modified"], old["modified"]);
    let v = &new["versions"]["9.9.9"]["dist"];
    assert_eq!(sha256_of(&c, v["tarball"].as_str().unwrap()), after);
    assert_eq!(
        v["integrity"],
        sri(&fetch(&c, v["tarball"].as_str().unwrap()))
    );
    assert!(canary.publish(npm_canary::SCOPED).is_ok());
    assert_eq!(
        canary.dist_tag(npm_canary::SCOPED, "latest").unwrap(),
        "9.9.10"
    );
    assert!(canary.publish("ec-absent").is_err());

    // Replaced bytes: same name and URL, new integrity.
    let old_dist = new["versions"]["1.0.0"]["dist"].clone();
    let url = old_dist["tarball"].as_str().unwrap();
    let old_sha = sha256_of(&c, url);
    let Observation::UpstreamMutation { before, after, .. } =
        canary.replace_file_bytes("ec-present-1.0.0.tgz").unwrap()
    else {
        panic!("not a mutation");
    };
    assert_eq!(before, Some(old_sha));
    assert_ne!(after, old_sha);
    let (replaced, _) = packument(&c, npm_canary::PRESENT, false);
    let new_dist = &replaced["versions"]["1.0.0"]["dist"];
    assert_eq!(new_dist["tarball"], old_dist["tarball"]);
    assert_ne!(new_dist["integrity"], old_dist["integrity"]);
    let bytes = fetch(&c, url);
    assert_eq!(Sha256Digest::of(&bytes), after);
    assert_eq!(new_dist["integrity"], sri(&bytes));
    assert!(canary.replace_file_bytes("ec-absent-1.0.0.tgz").is_err());

    // A moved dist-tag.
    let obs = canary
        .move_dist_tag(npm_canary::PRESENT, "latest", "1.1.0")
        .unwrap();
    let Observation::UpstreamMutation {
        filename, before, ..
    } = obs
    else {
        panic!("not a mutation");
    };
    assert_eq!(filename, "ec-present-1.1.0.tgz");
    assert!(before.is_some());
    let (moved, _) = packument(&c, npm_canary::PRESENT, true);
    assert_eq!(moved["dist-tags"]["latest"], "1.1.0");
    canary
        .move_dist_tag(npm_canary::PRESENT, "beta", "9.9.9")
        .unwrap();
    let (tagged, _) = packument(&c, npm_canary::PRESENT, false);
    assert_eq!(tagged["dist-tags"]["beta"], "9.9.9");
    assert!(canary
        .move_dist_tag(npm_canary::PRESENT, "latest", "7.0.0")
        .is_err());
    // The same through the Upstream interface.
    let up: &dyn Upstream = &canary;
    up.move_tag(npm_canary::PRESENT, "beta", "1.0.0").unwrap();
    assert_eq!(
        canary.dist_tag(npm_canary::PRESENT, "beta").as_deref(),
        Some("1.0.0")
    );
    assert!(up.move_tag("ec-absent", "latest", "1.0.0").is_err());
}

/// The `dist` of version 1.0.0 of `name` in the full and the abbreviated
/// packument, and in the version manifest.
fn dists(c: &Client, name: &str) -> Vec<Value> {
    let (full, _) = packument(c, name, false);
    let (abbr, _) = packument(c, name, true);
    let ex = c.get("version", &format!("/{name}/1.0.0"), None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let manifest: Value = serde_json::from_slice(&body(&ex)).unwrap();
    vec![
        full["versions"]["1.0.0"]["dist"].clone(),
        abbr["versions"]["1.0.0"]["dist"].clone(),
        manifest["dist"].clone(),
    ]
}

#[test]
fn no_integrity_lists_no_digest() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    for dist in dists(&c, npm_canary::NO_INTEGRITY) {
        assert!(dist.get("integrity").is_none(), "{dist}");
        assert!(dist.get("shasum").is_none(), "{dist}");
        let tarball = dist["tarball"].as_str().unwrap();
        assert_eq!(
            Some(tarball.to_string()),
            canary.tarball_url(npm_canary::NO_INTEGRITY, "1.0.0")
        );
        // The tarball itself is served, on the canary's own origin.
        assert!(!fetch(&c, tarball).is_empty());
    }
}

#[test]
fn bad_integrity_is_well_formed_but_not_of_the_served_bytes() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    for dist in dists(&c, npm_canary::BAD_INTEGRITY) {
        let integrity = dist["integrity"].as_str().unwrap();
        let b64 = integrity.strip_prefix("sha512-").unwrap();
        assert_eq!(egress_model::base64::decode(b64).unwrap().len(), 64);
        let bytes = fetch(&c, dist["tarball"].as_str().unwrap());
        assert_ne!(integrity, sri(&bytes), "the integrity matches the bytes");
        assert!(dist.get("shasum").is_none());
    }
}

#[test]
fn offsite_tarball_is_served_only_by_the_cdn_origin_and_logged() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    let cdn_origin = canary.offsite_origin();
    assert_ne!(cdn_origin, canary.base_url());
    let cdn = client(&cdn_origin);
    let path = npm_canary::tarball_path(npm_canary::OFFSITE, "1.0.0");
    let want_url = format!("{cdn_origin}{path}");
    assert_eq!(
        canary.tarball_url(npm_canary::OFFSITE, "1.0.0"),
        Some(want_url.clone())
    );
    for dist in dists(&c, npm_canary::OFFSITE) {
        assert_eq!(dist["tarball"], want_url.as_str());
        // Served by the CDN origin, with the listed integrity.
        let ex = cdn.get("offsite", &path, None);
        assert_eq!(ex.status(), Some(200), "{}", ex.summary());
        assert_eq!(dist["integrity"], sri(&body(&ex)));
    }
    // Not by the main origin.
    let mark = canary.mark();
    assert_eq!(c.get("main", &path, None).status(), Some(404));
    // The CDN serves nothing else: no packument, no other tarball.
    let present = npm_canary::tarball_path(npm_canary::PRESENT, "1.0.0");
    for target in [
        "/ec-offsite",
        present.as_str(),
        "/-/npm/v1/keys",
        "/ec-offsite/-/ec-offsite-9.9.9.tgz",
    ] {
        assert_eq!(cdn.get("cdn", target, None).status(), Some(404), "{target}");
    }
    let put = Request::new(egress_transcript::Method::Put, &path).body(b"x".to_vec());
    assert_eq!(cdn.send("put", &put).status(), Some(405));
    // Every request to either origin is in the one log, in order.
    let seen: Vec<(String, String)> = canary
        .requests_since(mark)
        .into_iter()
        .map(|r| (r.method.to_string(), r.target))
        .collect();
    let get = |t: &str| ("GET".to_string(), t.to_string());
    assert_eq!(
        seen,
        [
            get(&path),
            get("/ec-offsite"),
            get(&present),
            get("/-/npm/v1/keys"),
            get("/ec-offsite/-/ec-offsite-9.9.9.tgz"),
            ("PUT".to_string(), path.clone()),
        ]
    );
    // The CDN origin's requests earlier in the run are logged too.
    let all = canary.requests();
    assert_eq!(all.iter().filter(|r| r.target == path).count(), 3 + 1 + 1);
}

#[test]
fn the_three_digest_probes_are_upstream_only_and_in_the_plan() {
    let canary = NpmCanary::start().unwrap();
    let plan = canary.plan();
    let name = |p: &Option<ProjectName>| p.as_ref().map(|p| p.as_str().to_string());
    assert_eq!(
        name(&plan.no_digest).as_deref(),
        Some(npm_canary::NO_INTEGRITY)
    );
    assert_eq!(
        name(&plan.bad_digest).as_deref(),
        Some(npm_canary::BAD_INTEGRITY)
    );
    assert_eq!(name(&plan.offsite).as_deref(), Some(npm_canary::OFFSITE));
    let snapshot: Vec<String> = canary
        .tarballs(false)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    let everything: Vec<String> = canary
        .tarballs(true)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    for n in [
        npm_canary::NO_INTEGRITY,
        npm_canary::BAD_INTEGRITY,
        npm_canary::OFFSITE,
    ] {
        assert!(!snapshot.iter().any(|s| s == n), "{n} in a snapshot");
        assert!(everything.iter().any(|s| s == n), "{n} not served");
    }
    // Only ec-upstream-only's own files are listed as upstream-only paths.
    assert_eq!(
        plan.upstream_only_paths,
        ["/ec-upstream-only/-/ec-upstream-only-1.0.0.tgz"]
    );
}

/// Whether `dist.signatures` holds exactly one signature by the canary's
/// key, and whether it verifies over `<name>@<version>:<dist.integrity>`.
fn signature_verifies(canary: &NpmCanary, name: &str, version: &str, dist: &Value) -> bool {
    let sigs = dist["signatures"].as_array().expect("dist.signatures");
    assert_eq!(sigs.len(), 1, "{dist}");
    assert_eq!(sigs[0]["keyid"], canary.keyid().as_str());
    let keys = canary.keys_document();
    let spki = egress_model::base64::decode(keys["keys"][0]["key"].as_str().unwrap()).unwrap();
    let sig = egress_model::base64::decode(sigs[0]["sig"].as_str().unwrap()).unwrap();
    let message = npm_canary::signed_message(name, version, dist["integrity"].as_str().unwrap());
    // The point follows the 26-byte P-256 SubjectPublicKeyInfo prefix.
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &spki[26..])
        .verify(message.as_bytes(), &sig)
        .is_ok()
}

#[test]
fn every_listed_integrity_is_signed_with_the_published_key() {
    let canary = NpmCanary::start().unwrap();
    let c = client(&canary.base_url());
    let ex = c.get("keys", npm_canary::KEYS_PATH, None);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let keys: Value = serde_json::from_slice(&body(&ex)).unwrap();
    assert_eq!(keys, canary.keys_document());
    let key = &keys["keys"][0];
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    assert_eq!(key["expires"], Value::Null);
    assert_eq!(key["keytype"], "ecdsa-sha2-nistp256");
    assert_eq!(key["scheme"], "ecdsa-sha2-nistp256");
    let spki = egress_model::base64::decode(key["key"].as_str().unwrap()).unwrap();
    assert_eq!(spki.len(), 91);
    let fingerprint = egress_model::base64::encode(&Sha256::digest(&spki));
    assert_eq!(
        key["keyid"],
        format!("SHA256:{}", fingerprint.trim_end_matches('='))
    );
    // openssl reads the key as a P-256 public key, as node does.
    let dir = common::TempDir::new("npm-keys");
    let pem = dir.0.join("key.pem");
    std::fs::write(
        &pem,
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            key["key"].as_str().unwrap()
        ),
    )
    .unwrap();
    let out = Command::new("openssl")
        .args(["pkey", "-pubin", "-noout", "-text", "-in"])
        .arg(&pem)
        .output()
        .expect("openssl must be installed to run these tests");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("prime256v1"));

    let mut signed = ALL.to_vec();
    signed.extend([npm_canary::BAD_INTEGRITY, npm_canary::OFFSITE]);
    for name in signed {
        for abbreviated in [false, true] {
            let (doc, _) = packument(&c, name, abbreviated);
            for (version, v) in doc["versions"].as_object().unwrap() {
                let ok = signature_verifies(&canary, name, version, &v["dist"]);
                // The registry signs what it lists, right or wrong.
                assert!(ok, "{name} {version} abbreviated={abbreviated}");
            }
        }
    }
    for dist in dists(&c, npm_canary::NO_INTEGRITY) {
        assert!(dist.get("signatures").is_none(), "{dist}");
    }

    // Published and replaced versions are signed as they change.
    let present = ProjectName::new(npm_canary::PRESENT).unwrap();
    canary.publish_new_version(&present).unwrap();
    canary.replace_file_bytes("ec-present-1.0.0.tgz").unwrap();
    let (doc, _) = packument(&c, npm_canary::PRESENT, true);
    for version in ["1.0.0", "1.1.0", "9.9.9"] {
        let dist = &doc["versions"][version]["dist"];
        assert!(signature_verifies(
            &canary,
            npm_canary::PRESENT,
            version,
            dist
        ));
    }

    // A forged signature: well-formed, same key id, another message.
    let (before, _) = packument(&c, npm_canary::PRESENT, false);
    canary
        .forge_signature(npm_canary::PRESENT, "1.1.0")
        .unwrap();
    let (after, _) = packument(&c, npm_canary::PRESENT, false);
    for abbreviated in [false, true] {
        let (doc, _) = packument(&c, npm_canary::PRESENT, abbreviated);
        let dist = &doc["versions"]["1.1.0"]["dist"];
        assert!(!signature_verifies(
            &canary,
            npm_canary::PRESENT,
            "1.1.0",
            dist
        ));
        assert_eq!(
            dist["integrity"],
            before["versions"]["1.1.0"]["dist"]["integrity"]
        );
    }
    assert_eq!(after["versions"]["1.0.0"], before["versions"]["1.0.0"]);
    assert!(canary.forge_signature("ec-absent", "1.0.0").is_err());
}

// ------------------------------------------------------------------ real npm

static DIRS: AtomicU32 = AtomicU32::new(0);

/// A fresh, empty directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let n = DIRS.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!(
            "egress-npm-canary-{}-{label}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn npm_available() -> bool {
    Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `npm install` in `project` against the canary, with nothing from the
/// environment or any npmrc, and a private cache (which also holds an
/// empty global npmrc).
fn npm_install(canary: &NpmCanary, project: &Path, cache: &Path, extra: &[&str]) {
    // npm refuses to load one file as both user and global config.
    let empty_rc = cache.join("empty-globalconfig");
    std::fs::write(&empty_rc, "").unwrap();
    let mut cmd = Command::new("npm");
    cmd.current_dir(project)
        .args(["install", "--registry", &canary.registry_url()])
        .args(["--no-audit", "--no-fund", "--no-update-notifier"])
        .arg("--cache")
        .arg(cache)
        .args(["--userconfig", "/dev/null", "--globalconfig"])
        .arg(&empty_rc)
        .args(extra);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy().to_ascii_lowercase();
        if k.starts_with("npm_config_") || k.ends_with("_proxy") {
            cmd.env_remove(&key);
        }
    }
    let out = cmd.output().expect("run npm");
    assert!(
        out.status.success(),
        "npm install failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write_package_json(dir: &Path, dependencies: Value) {
    let doc = serde_json::json!({
        "name": "egress-npm-canary-test",
        "version": "0.0.0",
        "private": true,
        "dependencies": dependencies,
    });
    std::fs::write(dir.join("package.json"), doc.to_string()).unwrap();
}

fn installed_version(project: &Path, name: &str) -> String {
    let path = project.join("node_modules").join(name).join("package.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    doc["version"].as_str().unwrap().to_string()
}

#[test]
fn npm_installs_from_the_canary() {
    if !npm_available() {
        eprintln!("skipping: npm is not installed");
        return;
    }
    let canary = NpmCanary::start().unwrap();
    let project = TempDir::new("install");
    let cache = TempDir::new("cache");
    write_package_json(
        &project.0,
        serde_json::json!({ "ec-present": "1.1.0", "@ec/scoped": "1.0.0" }),
    );
    npm_install(&canary, &project.0, &cache.0, &["--ignore-scripts"]);
    assert_eq!(installed_version(&project.0, "ec-present"), "1.1.0");
    assert_eq!(installed_version(&project.0, "@ec/scoped"), "1.0.0");
    let index =
        std::fs::read_to_string(project.0.join("node_modules/ec-present/index.js")).unwrap();
    assert!(index.contains("1.1.0"));

    let targets: Vec<String> = canary.requests().into_iter().map(|r| r.target).collect();
    for want in [
        "/ec-present",
        "/@ec%2fscoped",
        "/ec-present/-/ec-present-1.1.0.tgz",
        "/@ec/scoped/-/scoped-1.0.0.tgz",
    ] {
        assert!(
            targets.iter().any(|t| t == want),
            "{want} not in {targets:?}"
        );
    }
    assert!(canary.requests().iter().all(|r| !r.tripwire));
    // The lockfile records the canary's integrity.
    let lock: Value =
        serde_json::from_slice(&std::fs::read(project.0.join("package-lock.json")).unwrap())
            .unwrap();
    let (doc, _) = packument(&client(&canary.base_url()), npm_canary::PRESENT, true);
    assert_eq!(
        lock["packages"]["node_modules/ec-present"]["integrity"],
        doc["versions"]["1.1.0"]["dist"]["integrity"]
    );
}

#[test]
fn the_tripwire_fires_when_npm_runs_install_scripts() {
    if !npm_available() {
        eprintln!("skipping: npm is not installed");
        return;
    }
    let canary = NpmCanary::start().unwrap();
    let cache = TempDir::new("tripwire-cache");
    // Control: with --ignore-scripts the same install leaves it alone.
    let quiet = TempDir::new("no-scripts");
    write_package_json(&quiet.0, serde_json::json!({ "ec-tripwire": "0.1.0" }));
    npm_install(&canary, &quiet.0, &cache.0, &["--ignore-scripts"]);
    assert_eq!(installed_version(&quiet.0, "ec-tripwire"), "0.1.0");
    assert!(canary.requests().iter().all(|r| !r.tripwire));

    let project = TempDir::new("tripwire");
    write_package_json(&project.0, serde_json::json!({ "ec-tripwire": "0.1.0" }));
    npm_install(&canary, &project.0, &cache.0, &[]);
    assert_eq!(installed_version(&project.0, "ec-tripwire"), "0.1.0");
    let trips: Vec<String> = canary
        .requests()
        .into_iter()
        .filter(|r| r.tripwire)
        .map(|r| r.target)
        .collect();
    assert_eq!(trips, ["/tripwire/ec-tripwire-0.1.0"]);
}
