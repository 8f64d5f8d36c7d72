//! Fixture (B) for npm, the caching npm proxy in front of the npm canary:
//! it does everything a conformant mirror must not, and these tests check
//! that it really does.

use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
use egress_http::{Reply, Request as ServerRequest, Response, Server};
use egress_model::{Exchange, Upstream, Url};
use egress_references::npm::canary::{self as npm_canary, NpmCanary, ABBREVIATED};
use egress_references::npm::proxy::NpmCachingProxy;
use egress_transcript::{Client, Request};
use serde_json::Value;
use sha2::{Digest, Sha512};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;

use common::{body, client, TempDir};

struct Setup {
    canary: NpmCanary,
    proxy: NpmCachingProxy,
    client: Client,
}

fn setup() -> Setup {
    let canary = NpmCanary::start().unwrap();
    let proxy = NpmCachingProxy::start(Url::parse(&canary.registry_url()).unwrap()).unwrap();
    let client = client(&proxy.base_url());
    Setup {
        canary,
        proxy,
        client,
    }
}

fn sri(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        egress_model::base64::encode(&Sha512::digest(bytes))
    )
}

fn targets_since(canary: &NpmCanary, mark: u64) -> Vec<String> {
    canary
        .requests_since(mark)
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

fn json_of(ex: &Exchange) -> Value {
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    serde_json::from_slice(&body(ex)).unwrap()
}

/// The packument at `target` through the proxy, with extra headers.
fn packument(c: &Client, target: &str, accept: &str, headers: &[(&str, &str)]) -> Value {
    let mut req = Request::get(target).header("Accept", accept);
    for (n, v) in headers {
        req = req.header(n, v);
    }
    json_of(&c.send("packument", &req))
}

/// GETs a tarball by its absolute URL (which must be on the proxy); a slow
/// upstream fetch under a loaded test run may be answered 302, so retry.
fn tarball(c: &Client, url: &str) -> Vec<u8> {
    let url = Url::parse(url).unwrap();
    assert!(url.same_origin(c.base()), "{url} is not on the proxy");
    for _ in 0..10 {
        let ex = c.get("tarball", url.path_and_query(), None);
        if ex.status() != Some(302) {
            assert_eq!(ex.status(), Some(200), "{}", ex.summary());
            return body(&ex);
        }
    }
    panic!("{url} always redirected");
}

#[test]
fn packuments_are_served_with_tarballs_on_the_proxy() {
    let s = setup();
    let proxy = s.proxy.base_url();
    let canary = s.canary.base_url();
    for target in ["/ec-present", "/@ec%2fscoped", "/@ec/scoped"] {
        for accept in [ABBREVIATED, "application/json"] {
            let doc = packument(&s.client, target, accept, &[]);
            let versions = doc["versions"].as_object().unwrap();
            assert!(!versions.is_empty());
            for (version, v) in versions {
                let name = doc["name"].as_str().unwrap();
                let url = v["dist"]["tarball"].as_str().unwrap();
                assert_eq!(
                    s.canary.tarball_url(name, version).unwrap(),
                    url.replace(&proxy, &canary),
                    "the path is kept, the origin is the proxy's"
                );
                assert!(url.starts_with(&format!("{proxy}/")), "{url}");
                let bytes = tarball(&s.client, url);
                assert_eq!(v["dist"]["integrity"], sri(&bytes), "{name} {version}");
            }
        }
    }
    // Abbreviated when asked, passed through from upstream.
    let ex = s
        .client
        .get("abbreviated", "/ec-present", Some(ABBREVIATED));
    let ctype = ex.response.as_ref().unwrap().header("content-type");
    assert_eq!(ctype, Some(ABBREVIATED));
    let doc = json_of(&ex);
    assert!(doc.get("readme").is_none());

    // One version, by number and by tag.
    for target in ["/ec-present/1.1.0", "/ec-present/latest"] {
        let v = json_of(&s.client.get("version", target, None));
        assert_eq!(v["version"], "1.1.0");
        let url = v["dist"]["tarball"].as_str().unwrap();
        assert_eq!(url, format!("{proxy}/ec-present/-/ec-present-1.1.0.tgz"));
    }
    assert_eq!(
        s.client.get("absent", "/ec-absent", None).status(),
        Some(404)
    );
}

#[test]
fn forwarded_headers_are_reflected_into_tarball_urls() {
    let s = setup();
    let doc = packument(
        &s.client,
        "/ec-present",
        ABBREVIATED,
        &[
            ("X-Forwarded-Host", "attacker.example:8443"),
            ("X-Forwarded-Proto", "https"),
        ],
    );
    assert_eq!(
        doc["versions"]["1.0.0"]["dist"]["tarball"],
        "https://attacker.example:8443/ec-present/-/ec-present-1.0.0.tgz"
    );
    let doc = packument(
        &s.client,
        "/@ec%2fscoped",
        "application/json",
        &[("Host", "elsewhere.example")],
    );
    assert_eq!(
        doc["versions"]["1.0.0"]["dist"]["tarball"],
        "http://elsewhere.example/@ec/scoped/-/scoped-1.0.0.tgz"
    );
}

#[test]
fn upstream_only_packages_and_upstream_changes_show_through() {
    let s = setup();
    let mark = s.canary.mark();
    let doc = packument(&s.client, "/ec-upstream-only", ABBREVIATED, &[]);
    let url = doc["versions"]["1.0.0"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    let bytes = tarball(&s.client, url);
    assert_eq!(doc["versions"]["1.0.0"]["dist"]["integrity"], sri(&bytes));
    let seen = targets_since(&s.canary, mark);
    assert!(
        seen.contains(&"GET /ec-upstream-only".to_string()),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"GET /ec-upstream-only/-/ec-upstream-only-1.0.0.tgz".to_string()),
        "{seen:?}"
    );

    // Digests passed on as upstream lists them: none, or not the bytes'.
    let doc = packument(&s.client, "/ec-no-integrity", ABBREVIATED, &[]);
    let dist = &doc["versions"]["1.0.0"]["dist"];
    assert!(dist.get("integrity").is_none(), "{dist}");
    tarball(&s.client, dist["tarball"].as_str().unwrap());
    let doc = packument(&s.client, "/ec-bad-integrity", ABBREVIATED, &[]);
    let dist = &doc["versions"]["1.0.0"]["dist"];
    let bytes = tarball(&s.client, dist["tarball"].as_str().unwrap());
    assert_ne!(dist["integrity"], sri(&bytes));

    // A new upstream version is served at once.
    s.canary.publish(npm_canary::PRESENT).unwrap();
    let doc = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    assert_eq!(doc["dist-tags"]["latest"], "9.9.9");
    let url = doc["versions"]["9.9.9"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    let bytes = tarball(&s.client, url);
    assert_eq!(doc["versions"]["9.9.9"]["dist"]["integrity"], sri(&bytes));

    // Cached tarballs stay, whatever upstream lists now.
    let doc = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    let url = doc["versions"]["1.0.0"]["dist"]["tarball"]
        .as_str()
        .unwrap()
        .to_string();
    let before = tarball(&s.client, &url);
    s.canary.replace_file_bytes("ec-present-1.0.0.tgz").unwrap();
    let doc = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    assert_ne!(doc["versions"]["1.0.0"]["dist"]["integrity"], sri(&before));
    assert_eq!(tarball(&s.client, &url), before);
}

#[test]
fn install_scripts_run_on_the_proxy_at_first_fetch() {
    let s = setup();
    let doc = packument(&s.client, "/ec-tripwire", ABBREVIATED, &[]);
    assert_eq!(doc["versions"]["0.1.0"]["hasInstallScript"], true);
    assert!(s.canary.requests().iter().all(|r| !r.tripwire));
    let url = doc["versions"]["0.1.0"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    tarball(&s.client, url);
    let trips: Vec<String> = s
        .canary
        .requests()
        .into_iter()
        .filter(|r| r.tripwire)
        .map(|r| r.target)
        .collect();
    assert_eq!(trips, ["/tripwire/ec-tripwire-0.1.0"]);
    assert_eq!(
        s.proxy.scanned_urls(),
        [format!(
            "{}/tripwire/ec-tripwire-0.1.0",
            s.canary.base_url()
        )]
    );
    // Only once: the second fetch comes from the cache.
    let mark = s.canary.mark();
    tarball(&s.client, url);
    assert_eq!(targets_since(&s.canary, mark), Vec::<String>::new());
}

#[test]
fn the_web_ui_evaluates_package_text() {
    let s = setup();
    let ex = s.client.get(
        "readme",
        "/-/verdaccio/data/package/readme/ec-template-text",
        None,
    );
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let readme = String::from_utf8(body(&ex)).unwrap();
    for (raw, evaluated) in egress_model::TEMPLATE_MARKERS {
        assert!(readme.contains(evaluated), "{evaluated} not in {readme}");
        assert!(!readme.contains(raw), "{raw} in {readme}");
    }
    let sidebar = json_of(&s.client.get(
        "sidebar",
        "/-/verdaccio/data/sidebar/ec-template-text",
        None,
    ));
    let description = sidebar["latest"]["description"].as_str().unwrap();
    assert!(description.contains("ECT-A49"), "{description}");
    assert_eq!(sidebar["description"], description);
    // Scoped names too, the scope separator in either spelling.
    for target in [
        "/-/verdaccio/data/package/readme/@ec/scoped",
        "/-/verdaccio/data/package/readme/@ec%2fscoped",
    ] {
        let ex = s.client.get("readme", target, None);
        assert!(String::from_utf8(body(&ex))
            .unwrap()
            .contains("# @ec/scoped"));
    }
}

/// npm's publish document for one version of `name`.
fn publish_doc(name: &str, version: &str) -> (Value, Vec<u8>) {
    let spec = NpmPackageSpec::new(name, version, "published through the proxy", "1;\n");
    let tgz = build_npm_tarball(&spec);
    let mut manifest = spec.package_json();
    manifest["_id"] = format!("{name}@{version}").into();
    manifest["dist"] = serde_json::json!({
        "integrity": tgz.integrity,
        "tarball": format!("http://registry.invalid/{name}/-/{name}-{version}.tgz"),
    });
    let doc = serde_json::json!({
        "_id": name,
        "name": name,
        "description": "published through the proxy",
        "dist-tags": {"latest": version},
        "versions": {version: manifest},
        "access": null,
        "_attachments": {
            format!("{name}-{version}.tgz"): {
                "content_type": "application/octet-stream",
                "data": egress_model::base64::encode(&tgz.bytes),
                "length": tgz.bytes.len(),
            }
        },
    });
    (doc, tgz.bytes)
}

fn write(c: &Client, method: &str, target: &str, body: &Value) -> Exchange {
    let req = Request::new(method.parse().unwrap(), target)
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer anything-at-all")
        .body(body.to_string().into_bytes());
    c.send("write", &req)
}

#[test]
fn publish_unpublish_and_tags_are_honoured() {
    let s = setup();
    let proxy = s.proxy.base_url();
    let mark = s.canary.mark();

    // A new version of an upstream package.
    let (doc, bytes) = publish_doc(npm_canary::PRESENT, "5.0.0");
    let ex = write(&s.client, "PUT", "/ec-present", &doc);
    assert_eq!(ex.status(), Some(201), "{}", ex.summary());
    let merged = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    assert_eq!(merged["dist-tags"]["latest"], "5.0.0");
    let versions: Vec<&String> = merged["versions"].as_object().unwrap().keys().collect();
    assert!(versions.len() == 3, "{versions:?}");
    let url = merged["versions"]["5.0.0"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    assert_eq!(url, format!("{proxy}/ec-present/-/ec-present-5.0.0.tgz"));
    assert_eq!(tarball(&s.client, url), bytes);
    let v = json_of(&s.client.get("version", "/ec-present/5.0.0", None));
    assert_eq!(v["description"], "published through the proxy");

    // A package upstream has never heard of, scoped.
    let (doc, bytes) = publish_doc("@ec/brand-new", "1.0.0");
    let ex = write(&s.client, "PUT", "/@ec%2fbrand-new", &doc);
    assert_eq!(ex.status(), Some(201), "{}", ex.summary());
    let full = packument(&s.client, "/@ec%2fbrand-new", "application/json", &[]);
    assert_eq!(full["dist-tags"]["latest"], "1.0.0");
    assert!(full["_rev"].is_string());
    let url = full["versions"]["1.0.0"]["dist"]["tarball"]
        .as_str()
        .unwrap();
    assert_eq!(url, format!("{proxy}/@ec/brand-new/-/brand-new-1.0.0.tgz"));
    assert_eq!(tarball(&s.client, url), bytes);

    // dist-tags.
    let ex = write(
        &s.client,
        "PUT",
        "/-/package/ec-present/dist-tags/latest",
        &Value::from("1.0.0"),
    );
    assert_eq!(ex.status(), Some(201), "{}", ex.summary());
    let merged = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    assert_eq!(merged["dist-tags"]["latest"], "1.0.0");

    // Unpublish one upstream version, then the whole package.
    let ex = write(
        &s.client,
        "DELETE",
        "/ec-present/-/ec-present-1.1.0.tgz/-rev/1-0",
        &Value::Null,
    );
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let merged = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    assert!(merged["versions"].get("1.1.0").is_none());
    assert_eq!(
        s.client
            .get("gone", "/ec-present/-/ec-present-1.1.0.tgz", None)
            .status(),
        Some(404)
    );
    let ex = write(&s.client, "DELETE", "/ec-present/-rev/2-0", &Value::Null);
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    assert_eq!(
        s.client.get("gone", "/ec-present", None).status(),
        Some(404)
    );

    // None of it reached upstream as a write.
    let writes: Vec<String> = targets_since(&s.canary, mark)
        .into_iter()
        .filter(|t| !t.starts_with("GET "))
        .collect();
    assert_eq!(writes, Vec::<String>::new());
}

#[test]
fn users_logins_and_tokens_are_handed_out() {
    let s = setup();
    let ex = write(
        &s.client,
        "PUT",
        "/-/user/org.couchdb.user:eve",
        &serde_json::json!({"name": "eve", "password": "x", "type": "user"}),
    );
    assert_eq!(ex.status(), Some(201), "{}", ex.summary());
    let doc: Value = serde_json::from_slice(&body(&ex)).unwrap();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["id"], "org.couchdb.user:eve");
    assert!(doc["token"].as_str().is_some_and(|t| t.len() > 16));

    let ex = write(&s.client, "POST", "/-/v1/login", &serde_json::json!({}));
    let login = json_of(&ex);
    let done = Url::parse(login["doneUrl"].as_str().unwrap()).unwrap();
    assert!(done.same_origin(s.client.base()));
    let done = json_of(&s.client.get("done", done.path_and_query(), None));
    assert!(done["token"].is_string());

    let created = json_of(&write(
        &s.client,
        "POST",
        "/-/npm/v1/tokens",
        &serde_json::json!({"password": "wrong", "readonly": true}),
    ));
    assert!(created["token"].is_string());
    assert_eq!(created["readonly"], true);
    let list = json_of(&s.client.get("tokens", "/-/npm/v1/tokens", None));
    assert_eq!(list["total"], 3);
}

#[test]
fn other_routes_go_upstream_verbatim() {
    let s = setup();
    let direct = client(&s.canary.base_url());
    let targets = [
        "/-/whoami",
        "/-/all",
        "/-/v1/search?text=ec&size=5",
        "/-/npm/v1/keys",
        "/ec-present/a/b",
        "/%2e%2e/etc/passwd",
    ];
    // Whatever the canary answers itself, the proxy relays.
    let answers: Vec<(Option<u16>, Vec<u8>)> = targets
        .iter()
        .map(|t| {
            let ex = direct.get("direct", t, None);
            (ex.status(), body(&ex))
        })
        .collect();
    let mark = s.canary.mark();
    for (target, (status, bytes)) in targets.iter().zip(&answers) {
        let ex = s.client.get("passthrough", target, None);
        assert_eq!(ex.status(), *status, "{target}: {}", ex.summary());
        assert_eq!(&body(&ex), bytes, "{target}");
    }
    let ex = write(
        &s.client,
        "POST",
        "/-/npm/v1/security/audits/quick",
        &serde_json::json!({}),
    );
    assert!(
        ex.status().is_some_and(|s| s != 502),
        "relayed: {}",
        ex.summary()
    );
    let mut want: Vec<String> = targets.iter().map(|t| format!("GET {t}")).collect();
    want.push("POST /-/npm/v1/security/audits/quick".into());
    assert_eq!(targets_since(&s.canary, mark), want);

    // Absolute-form and CONNECT, to loopback.
    let origin = s.canary.base_url();
    let authority = origin.trim_start_matches("http://").to_string();
    let mark = s.canary.mark();
    let raw = format!(
        "GET {origin}/ec-present?absolute HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    );
    let ex = s.client.send_raw("absolute", raw.as_bytes());
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    let inner = format!(
        "GET /ec-present?tunnel HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    );
    let exs = s
        .client
        .connect_tunnel("connect", &authority, inner.as_bytes());
    assert_eq!(exs.len(), 2);
    assert_eq!(exs[1].status(), Some(200), "{}", exs[1].summary());
    assert_eq!(
        targets_since(&s.canary, mark),
        ["GET /ec-present?absolute", "GET /ec-present?tunnel"]
    );
    let raw = "GET http://192.0.2.1/ HTTP/1.1\r\nHost: 192.0.2.1\r\nConnection: close\r\n\r\n";
    assert_eq!(
        s.client.send_raw("absolute", raw.as_bytes()).status(),
        Some(502)
    );
    let exs = s.client.connect_tunnel("connect", "192.0.2.1:443", b"x");
    assert_eq!(exs[0].status(), Some(502));
}

#[test]
fn a_slow_tarball_is_redirected_to_upstream() {
    // The npm canary cannot be made slow, so a small upstream of our own:
    // its tarball takes a second to start.
    let upstream = Server::bind_loopback(|req: ServerRequest| -> Reply {
        if req.path().ends_with(".tgz") {
            std::thread::sleep(Duration::from_secs(1));
        }
        Response::new(200).with_body("late").into()
    })
    .unwrap();
    let proxy =
        NpmCachingProxy::start(Url::parse(&format!("{}/", upstream.base_url())).unwrap()).unwrap();
    let c = client(&proxy.base_url());
    let ex = c.get("slow", "/ec-slow/-/ec-slow-1.0.0.tgz", None);
    assert_eq!(ex.status(), Some(302), "{}", ex.summary());
    let location = ex.response.as_ref().unwrap().header("location");
    assert_eq!(
        location,
        Some(format!("{}/ec-slow/-/ec-slow-1.0.0.tgz", upstream.base_url()).as_str())
    );
}

#[test]
fn refuses_a_non_loopback_upstream() {
    let url = Url::parse("http://192.0.2.1/").unwrap();
    assert!(NpmCachingProxy::start(url).is_err());
}

// ------------------------------------------------------------------ real npm

fn npm_available() -> bool {
    Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `npm install <packages>` into `prefix` through `registry`, with nothing
/// from the environment or any npmrc, and a private cache (which also holds
/// an empty global npmrc).
fn npm_install(registry: &str, prefix: &Path, cache: &Path, args: &[&str]) {
    let mut cmd =
        egress_references::npm::client::isolated_npm(prefix, cache, registry).expect("npm");
    cmd.arg("install").args(args).arg("--prefix").arg(prefix);
    let out = cmd.output().expect("run npm");
    assert!(
        out.status.success(),
        "npm install failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn installed_version(prefix: &Path, name: &str) -> String {
    let path = prefix.join("node_modules").join(name).join("package.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc["version"].as_str().unwrap().to_string()
}

#[test]
fn npm_installs_through_the_proxy() {
    if !npm_available() {
        eprintln!("skipping: npm is not installed");
        return;
    }
    let s = setup();
    let prefix = TempDir::new("npm-proxy-install");
    let cache = TempDir::new("npm-proxy-cache");
    npm_install(
        &s.proxy.registry_url(),
        &prefix.0,
        &cache.0,
        &["ec-present", "@ec/scoped"],
    );
    assert_eq!(installed_version(&prefix.0, "ec-present"), "1.1.0");
    assert_eq!(installed_version(&prefix.0, "@ec/scoped"), "1.0.0");
    let lock: Value =
        serde_json::from_slice(&std::fs::read(prefix.0.join("package-lock.json")).unwrap())
            .unwrap();
    assert_eq!(
        lock["packages"]["node_modules/ec-present"]["resolved"],
        format!("{}/ec-present/-/ec-present-1.1.0.tgz", s.proxy.base_url())
    );
    let targets: Vec<String> = s.canary.requests().into_iter().map(|r| r.target).collect();
    for want in ["/ec-present", "/ec-present/-/ec-present-1.1.0.tgz"] {
        assert!(
            targets.iter().any(|t| t == want),
            "{want} not in {targets:?}"
        );
    }

    // The client refuses to run install scripts; the proxy ran them already.
    assert!(s.canary.requests().iter().all(|r| !r.tripwire));
    npm_install(
        &s.proxy.registry_url(),
        &prefix.0,
        &cache.0,
        &["ec-tripwire", "--ignore-scripts"],
    );
    assert_eq!(installed_version(&prefix.0, "ec-tripwire"), "0.1.0");
    assert!(s.canary.requests().iter().any(|r| r.tripwire));
}

#[test]
fn npm_publishes_through_the_proxy_with_any_token() {
    if !npm_available() {
        eprintln!("skipping: npm is not installed");
        return;
    }
    let s = setup();
    let package = TempDir::new("npm-proxy-publish");
    let cache = TempDir::new("npm-proxy-publish-cache");
    let manifest = serde_json::json!({
        "name": "ec-published-by-npm",
        "version": "3.0.0",
        "description": "published by real npm through the proxy",
        "main": "index.js",
    });
    std::fs::write(package.0.join("package.json"), manifest.to_string()).unwrap();
    std::fs::write(package.0.join("index.js"), "module.exports = 3;\n").unwrap();
    let registry = s.proxy.registry_url();
    npm_write(&registry, &package.0, &cache.0, &["publish"]);
    let doc = packument(&s.client, "/ec-published-by-npm", ABBREVIATED, &[]);
    assert_eq!(doc["dist-tags"]["latest"], "3.0.0");
    let dist = &doc["versions"]["3.0.0"]["dist"];
    let bytes = tarball(&s.client, dist["tarball"].as_str().unwrap());
    assert_eq!(dist["integrity"], sri(&bytes));

    // And an upstream version unpublished, for every client of the proxy.
    let mark = s.canary.mark();
    npm_write(
        &registry,
        &package.0,
        &cache.0,
        &["unpublish", "ec-present@1.0.0", "--force"],
    );
    let doc = packument(&s.client, "/ec-present", ABBREVIATED, &[]);
    let versions: Vec<&String> = doc["versions"].as_object().unwrap().keys().collect();
    assert_eq!(versions, ["1.1.0"]);
    let writes: Vec<String> = targets_since(&s.canary, mark)
        .into_iter()
        .filter(|t| !t.starts_with("GET "))
        .collect();
    assert_eq!(writes, Vec::<String>::new(), "upstream saw no write");
}

/// `npm <args>` in `dir` against `registry` with a made-up token, isolated
/// as [`npm_install`] is.
fn npm_write(registry: &str, dir: &Path, cache: &Path, args: &[&str]) {
    let empty_rc = cache.join("empty-globalconfig");
    std::fs::write(&empty_rc, "").unwrap();
    let auth = format!(
        "--{}:_authToken=not-a-real-token",
        registry.trim_start_matches("http:")
    );
    let mut cmd = Command::new("npm");
    cmd.current_dir(dir)
        .args(args)
        .args(["--registry", registry, &auth])
        .args(["--no-update-notifier", "--cache"])
        .arg(cache)
        .args(["--userconfig", "/dev/null", "--globalconfig"])
        .arg(&empty_rc);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy().to_ascii_lowercase();
        if k.starts_with("npm_config_") || k.ends_with("_proxy") {
            cmd.env_remove(&key);
        }
    }
    let out = cmd.output().expect("run npm");
    assert!(
        out.status.success(),
        "npm {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
