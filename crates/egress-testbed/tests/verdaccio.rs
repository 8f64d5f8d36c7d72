//! The real Verdaccio 6.8.0 (installed by scripts/setup-peers into
//! `.tools/peers/verdaccio`, or `$EGRESS_PEERS_DIR/verdaccio`), started by
//! egress-testbed from `testbed/peers/verdaccio*.conf` in front of the npm
//! canary on loopback, with the real npm as its client: what each set-up
//! serves, what it fetches from its uplink, and what it lets anyone write.
//!
//! As for every testbed peer, a peer that is not installed is an error that
//! names `scripts/setup-peers` (scripts/test runs it first), not a skip.

use egress_model::{Upstream, Url};
use egress_references::npm::canary::{self as npm_canary, NpmCanary};
use egress_testbed::{start, Context, PeerConfig, Running};
use egress_transcript::{Client, Request};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where setup-peers installed the peers, as `egress-conformance testbed`
/// finds them.
fn peers_dir() -> PathBuf {
    std::env::var_os("EGRESS_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/peers"))
}

fn conf(name: &str) -> PeerConfig {
    let path = workspace().join(format!("testbed/peers/{name}.conf"));
    PeerConfig::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// An empty directory `<temp>/<name>-<pid>`.
fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// Starts the peer `name` in front of `canary`, as the testbed does.
fn peer(name: &str, canary: &NpmCanary) -> Running {
    let tarballs = canary.tarballs(false);
    let packages: Vec<(String, Vec<u8>)> = tarballs
        .iter()
        .map(|(_, _, t)| (t.filename.clone(), t.bytes.clone()))
        .collect();
    let mut names: Vec<String> = tarballs.iter().map(|(n, _, _)| n.clone()).collect();
    names.dedup();
    let ctx = Context {
        peers_dir: &peers_dir(),
        canary_index: &canary.registry_url(),
        canary_url: &canary.base_url(),
        packages: &packages,
        projects: &names,
        placeholders: &[],
        keyring: None,
    };
    start(&conf(name), &ctx).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// npm with nothing from this machine's environment or npmrc files: its
/// own cache (which also holds an empty global npmrc), no user config,
/// `registry`, loopback only.
fn npm(dir: &Path, cache: &Path, registry: &Url, args: &[&str]) -> Output {
    let mut cmd = egress_references::npm::client::isolated_npm(dir, cache, &registry.to_string())
        .expect("npm cache dir");
    cmd.args(args).args(["--fetch-retries", "0"]);
    cmd.output()
        .expect("run npm (Debian: apt-get install nodejs npm)")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what} failed:\n{}", text(o));
}

fn installed_version(project: &Path, name: &str) -> Option<String> {
    let path = project.join("node_modules").join(name).join("package.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    doc["version"].as_str().map(str::to_string)
}

/// An empty project that installs `packages` from `registry`.
fn install(dir: &Path, registry: &Url, packages: &[&str]) -> (PathBuf, Output) {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"egress-verdaccio-test","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    let mut args = vec!["install"];
    args.extend(packages);
    let o = npm(&project, &dir.join("cache"), registry, &args);
    (project, o)
}

/// A package of our own, ready for `npm publish`.
fn publishable(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join("publish");
    std::fs::create_dir_all(&p).expect("mkdir");
    let doc = serde_json::json!({ "name": name, "version": "1.0.0", "description": "published by a test" });
    std::fs::write(p.join("package.json"), doc.to_string()).expect("package.json");
    std::fs::write(p.join("index.js"), "module.exports = 1;\n").expect("index.js");
    p
}

fn client(registry: &Url) -> Client {
    Client::new(registry.clone(), Default::default(), None).expect("client")
}

/// npm's adduser request, sent directly (`npm adduser` is interactive).
fn adduser(registry: &Url, user: &str) -> egress_model::Exchange {
    let body = serde_json::json!({
        "_id": format!("org.couchdb.user:{user}"),
        "name": user,
        "password": "egress-test-password",
        "email": format!("{user}@example.invalid"),
        "type": "user",
        "roles": [],
        "date": "2026-01-01T00:00:00.000Z",
    });
    client(registry).send(
        "adduser",
        &Request::new(
            egress_transcript::Method::Put,
            &format!("/-/user/org.couchdb.user:{user}"),
        )
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .body(body.to_string().into_bytes()),
    )
}

fn status_of(registry: &Url, path: &str) -> Option<u16> {
    client(registry)
        .get("get", path, Some("application/json"))
        .status()
}

/// `--//127.0.0.1:PORT/:_authToken=TOKEN`, npm's per-registry token.
fn token_arg(registry: &Url, token: &str) -> String {
    format!("--//{}/:_authToken={token}", registry.authority())
}

#[test]
fn the_installed_verdaccio_is_the_pinned_one_and_its_default_config_is_the_template() {
    let root = peers_dir().join("verdaccio/node_modules");
    let version = |pkg: &str| -> String {
        let p = root.join(pkg).join("package.json");
        let bytes = std::fs::read(&p).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: not installed: run scripts/setup-peers verdaccio",
                p.display()
            )
        });
        let doc: Value = serde_json::from_slice(&bytes).expect("package.json");
        doc["version"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(version("verdaccio"), "6.8.0");
    // The override the pinned package.json carries.
    assert_eq!(version("node-fetch"), "2.7.0");

    // Everything below the template's header is the default.yaml Verdaccio
    // writes as config.yaml on its first start, with only the uplink moved
    // from registry.npmjs.org to the canary.
    let shipped = std::fs::read_to_string(root.join("@verdaccio/config/build/conf/default.yaml"))
        .expect("the shipped default.yaml");
    let template = std::fs::read_to_string(workspace().join("testbed/verdaccio.yaml.template"))
        .expect("template");
    let body_at = template
        .find("#\n# This is the default configuration file.")
        .expect("the shipped text in the template");
    let want = shipped.replace(
        "\n    url: https://registry.npmjs.org/\n",
        "\n    url: {canary_url}/\n",
    );
    assert_ne!(want, shipped, "the shipped uplink moved");
    assert_eq!(&template[body_at..], want);
}

/// The default configuration: a pull-through cache of its uplink, and
/// anyone may register and then publish.
#[test]
fn default_verdaccio_installs_through_its_uplink_and_lets_anyone_register_and_publish() {
    let dir = tmpdir("egress-testbed-verdaccio-default");
    let canary = NpmCanary::start().expect("npm canary");
    let peer = peer("verdaccio", &canary);
    let registry = peer.index_url.clone();
    assert_eq!(registry.path(), "/");
    let mark = canary.mark();

    let (project, o) = install(&dir, &registry, &[npm_canary::PRESENT, npm_canary::SCOPED]);
    ok(&o, "npm install through Verdaccio");
    assert_eq!(
        installed_version(&project, npm_canary::PRESENT).as_deref(),
        Some("1.1.0")
    );
    assert_eq!(
        installed_version(&project, npm_canary::SCOPED).as_deref(),
        Some("1.0.0")
    );
    // The lock names Verdaccio's tarball URLs, not the canary's.
    let lock: Value = serde_json::from_slice(
        &std::fs::read(project.join("package-lock.json")).expect("package-lock.json"),
    )
    .expect("lock");
    assert_eq!(
        lock["packages"]["node_modules/ec-present"]["resolved"],
        format!("{registry}ec-present/-/ec-present-1.1.0.tgz")
    );
    // What npm asked for, Verdaccio fetched from the canary.
    let seen: Vec<String> = canary
        .requests_since(mark)
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    for want in ["GET /ec-present", "GET /ec-present/-/ec-present-1.1.0.tgz"] {
        assert!(seen.iter().any(|s| s == want), "{want}: {seen:?}");
    }
    // A package absent from the lab's set is fetched and served too.
    assert_eq!(
        status_of(&registry, &format!("/{}", npm_canary::UPSTREAM_ONLY)),
        Some(200)
    );

    // Anyone may create a user, and with its token publish.
    let ex = adduser(&registry, "ec-anyone");
    assert_eq!(ex.status(), Some(201), "{:?}", ex.response);
    let token = ex
        .response
        .as_ref()
        .and_then(|r| r.full_body())
        .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        .and_then(|v| v["token"].as_str().map(str::to_string))
        .expect("a token");
    let p = publishable(&dir, "ec-published-by-anyone");
    let o = npm(
        &p,
        &dir.join("cache"),
        &registry,
        &["publish", &token_arg(&registry, &token)],
    );
    ok(&o, "npm publish with a self-made user's token");
    assert_eq!(status_of(&registry, "/ec-published-by-anyone"), Some(200));

    peer.stop();
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hardened configuration: the lab's packages from its storage, the
/// canary untouched, no publish, no user.
#[test]
fn hardened_verdaccio_serves_its_storage_alone_and_refuses_publish_and_adduser() {
    let dir = tmpdir("egress-testbed-verdaccio-hardened");
    let canary = NpmCanary::start().expect("npm canary");
    // The warm-up (through the default configuration) happens in start.
    let peer = peer("verdaccio-hardened", &canary);
    let registry = peer.index_url.clone();
    let storage = peer.workdir().join("storage");
    let mark = canary.mark();

    let (project, o) = install(&dir, &registry, &[npm_canary::PRESENT, npm_canary::SCOPED]);
    ok(&o, "npm install from hardened Verdaccio");
    assert_eq!(
        installed_version(&project, npm_canary::PRESENT).as_deref(),
        Some("1.1.0")
    );
    assert_eq!(
        installed_version(&project, npm_canary::SCOPED).as_deref(),
        Some("1.0.0")
    );
    // Every lab package and tarball is in the storage Verdaccio wrote.
    for (name, _, t) in canary.tarballs(false) {
        assert!(
            storage.join(&name).join(&t.filename).is_file(),
            "{name}: {} not in {:?}",
            t.filename,
            std::fs::read_dir(storage.join(&name)).map(|d| d
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .collect::<Vec<_>>())
        );
    }
    // Not in the storage: not found, and not fetched.
    assert_eq!(
        status_of(&registry, &format!("/{}", npm_canary::UPSTREAM_ONLY)),
        Some(404)
    );
    // Registration is closed, anonymous and with a made-up token alike.
    let ex = adduser(&registry, "ec-anyone");
    let st = ex.status().unwrap_or(0);
    assert!((400..500).contains(&st), "adduser: {:?}", ex.response);
    assert!(
        std::fs::read_to_string(peer.workdir().join("htpasswd"))
            .unwrap_or_default()
            .is_empty(),
        "a user was written"
    );
    // npm publish, anonymous (npm sends it with a token it has) and refused.
    let p = publishable(&dir, "ec-published-by-anyone");
    let o = npm(
        &p,
        &dir.join("cache"),
        &registry,
        &["publish", &token_arg(&registry, "made-up")],
    );
    assert!(!o.status.success(), "published:\n{}", text(&o));
    let out = text(&o);
    assert!(out.contains("E401") || out.contains("E403"), "{out}");
    assert_eq!(status_of(&registry, "/ec-published-by-anyone"), Some(404));
    assert!(!storage.join("ec-published-by-anyone").exists());
    // Nothing of this reached the canary.
    let seen = canary.requests_since(mark);
    assert!(seen.is_empty(), "{seen:?}");

    peer.stop();
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
