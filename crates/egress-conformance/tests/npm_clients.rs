//! Real npm installs from the reference mirror, offline: a package-lock.json
//! is made by real npm against the npm canary upstream on loopback (its
//! `resolved` URLs point at the canary, as a lab's lock points at
//! registry.npmjs.org), `egress-conformance snapshot build --npm-lock` builds
//! the snapshot from it, the canary is stopped, and the real `egress-mirror`
//! binary serves the snapshot on the canary's port to `npm ci` and
//! `npm install`, over http and over https (the mirror's own TLS, the test
//! CA given to node with `NODE_EXTRA_CA_CERTS`). Skipped when npm is not
//! installed.
//!
//! The snapshot replays the canary's registry signatures and keys, and real
//! `npm audit signatures` verifies them against the mirror, offline (see
//! [`audit_signatures`] for the one thing npm would fetch from the internet
//! and what stands in for it).

use egress_references::npm::canary::{self as npm_canary, NpmCanary};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};
use egress_testca::TestCa;

/// scripts/test installs npm; a test that skipped without it would prove
/// nothing, so its absence fails the test.
fn require_npm() {
    assert!(
        npm_available(),
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
}

fn npm_available() -> bool {
    Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// npm with nothing from this machine's environment or npmrc files, a
/// private cache (which also holds an empty global npmrc) and `registry`.
fn npm(project: &Path, cache: &Path, registry: &str, args: &[&str]) -> Output {
    npm_command(project, cache, registry, args)
        .output()
        .expect("run npm")
}

/// The command [`npm`] runs.
fn npm_command(project: &Path, cache: &Path, registry: &str, args: &[&str]) -> Command {
    let mut cmd =
        egress_references::npm::client::isolated_npm(project, cache, registry).expect("npm");
    cmd.args(args);
    cmd
}

/// What [`locked_project`] pins is what got installed.
fn assert_locked_versions(project: &Path) {
    assert_eq!(
        installed_version(project, "ec-present").as_deref(),
        Some("1.1.0")
    );
    assert_eq!(
        installed_version(project, "@ec/scoped").as_deref(),
        Some("1.0.0")
    );
}

fn installed_version(project: &Path, name: &str) -> Option<String> {
    let path = project.join("node_modules").join(name).join("package.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    doc["version"].as_str().map(str::to_string)
}

/// A project depending on ec-present@1.1.0 and @ec/scoped@1.0.0, its
/// package-lock.json v3 written by real npm against the canary.
fn locked_project(dir: &Path, canary: &NpmCanary) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let doc = serde_json::json!({
        "name": "egress-npm-clients-test",
        "version": "0.0.0",
        "private": true,
        "dependencies": { npm_canary::PRESENT: "1.1.0", npm_canary::SCOPED: "1.0.0" },
    });
    std::fs::write(project.join("package.json"), doc.to_string()).expect("package.json");
    let o = npm(
        &project,
        &dir.join("lock-cache"),
        &canary.registry_url(),
        &["install", "--package-lock-only", "--lockfile-version", "3"],
    );
    ok(&o, "npm install --package-lock-only");
    let lock: Value = serde_json::from_slice(
        &std::fs::read(project.join("package-lock.json")).expect("package-lock.json"),
    )
    .expect("lock JSON");
    assert_eq!(lock["lockfileVersion"], 3);
    assert_eq!(
        lock["packages"]["node_modules/@ec/scoped"]["resolved"],
        format!("{}/@ec/scoped/-/scoped-1.0.0.tgz", canary.base_url())
    );
    project
}

fn build(dir: &Path, lock: &Path, registry: &str, out: &Path) -> Output {
    let key = dir.join("signing-key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    run(&[
        "snapshot",
        "build",
        "--npm-lock",
        s(lock),
        "--npm-registry-url",
        registry,
        "--sign-key",
        s(&key),
        "--out",
        s(out),
    ])
}

/// A copy of the locked project without node_modules, for a clean install.
fn fresh_copy(project: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).expect("mkdir");
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(project.join(f), to.join(f)).expect("copy");
    }
    to.to_path_buf()
}

fn port_of(canary: &NpmCanary) -> u16 {
    canary
        .base_url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("canary port")
}

#[test]
fn npm_ci_and_npm_install_from_the_mirror_offline() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-ci");
    let canary = NpmCanary::start().expect("canary");
    let port = port_of(&canary);
    let registry = format!("http://127.0.0.1:{port}/");
    let project = locked_project(&dir, &canary);
    let snap = dir.join("snap");
    let o = build(&dir, &project.join("package-lock.json"), &registry, &snap);
    ok(&o, "snapshot build --npm-lock");
    let served_by_canary = canary.requests().len();
    assert!(served_by_canary > 0);
    canary.stop();

    // The same origin the lock's resolved URLs name, now the mirror.
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let ci = fresh_copy(&project, &dir.join("ci"));
    let o = npm(&ci, &dir.join("ci-cache"), &registry, &["ci"]);
    ok(&o, "npm ci");
    assert_locked_versions(&ci);
    let lines = mirror.lines();
    let requests: Vec<&String> = lines.iter().filter(|l| l.contains(" request ")).collect();
    for want in [
        "target=/ec-present/-/ec-present-1.1.0.tgz status=200",
        "target=/@ec/scoped/-/scoped-1.0.0.tgz status=200",
    ] {
        assert!(
            requests.iter().any(|l| l.contains(want)),
            "{want}: {lines:#?}"
        );
    }
    assert!(
        requests.iter().all(|l| l.contains("status=200")),
        "{lines:#?}"
    );

    // npm install without a lock resolves from the packuments (abbreviated,
    // scoped name encoded as npm sends it) and installs the locked versions.
    let fresh = dir.join("install");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    std::fs::write(
        fresh.join("package.json"),
        r#"{"name":"fresh","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    let o = npm(
        &fresh,
        &dir.join("install-cache"),
        &registry,
        &["install", "ec-present", "@ec/scoped@^1"],
    );
    ok(&o, "npm install");
    assert_locked_versions(&fresh);
    let lines = mirror.lines();
    for want in [
        "target=/ec-present status=200",
        "target=/@ec%2fscoped status=200",
    ] {
        assert!(lines.iter().any(|l| l.contains(want)), "{want}: {lines:#?}");
    }
    // An absent version is not there to be had.
    let o = npm(
        &fresh,
        &dir.join("install-cache"),
        &registry,
        &["install", "ec-present@1.0.0"],
    );
    assert!(!o.status.success(), "installed a version not in the lock");
    drop(mirror);

    // On another origin than the lock's resolved URLs, npm ci fetches from
    // those URLs (here: nothing listens) unless told to replace their host
    // with the registry's; by default npm >= 9 does that only for
    // registry.npmjs.org (`replace-registry-host=npmjs`).
    let elsewhere = MirrorProcess::start(&snap, "127.0.0.1:0");
    let registry = format!("{}/", elsewhere.base);
    let ci = fresh_copy(&project, &dir.join("ci-elsewhere"));
    let cache = dir.join("ci-elsewhere-cache");
    let o = npm(&ci, &cache, &registry, &["ci", "--fetch-retries", "0"]);
    assert!(!o.status.success(), "npm ci fetched from a dead origin?");
    let o = npm(
        &ci,
        &cache,
        &registry,
        &["ci", "--replace-registry-host", "always"],
    );
    ok(&o, "npm ci --replace-registry-host always");
    assert_eq!(
        installed_version(&ci, "ec-present").as_deref(),
        Some("1.1.0")
    );
    assert!(elsewhere
        .lines()
        .iter()
        .any(|l| l.contains("target=/@ec/scoped/-/scoped-1.0.0.tgz status=200")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tampered_tarball_is_not_served_and_npm_ci_fails() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-tamper");
    let canary = NpmCanary::start().expect("canary");
    let port = port_of(&canary);
    let registry = format!("http://127.0.0.1:{port}/");
    let project = locked_project(&dir, &canary);
    let snap = dir.join("snap");
    ok(
        &build(&dir, &project.join("package-lock.json"), &registry, &snap),
        "snapshot build",
    );
    canary.stop();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(snap.join("SNAPSHOT.json")).expect("SNAPSHOT.json"))
            .expect("json");
    let hex = doc["served"]
        .as_array()
        .expect("served")
        .iter()
        .find(|e| e["path"] == "/ec-present/-/ec-present-1.1.0.tgz")
        .and_then(|e| e["sha256"].as_str())
        .expect("tarball entry")
        .to_string();
    let blob = snap.join(format!("blobs/sha256/{hex}"));
    let mut bytes = std::fs::read(&blob).expect("blob");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&blob, &bytes).expect("write");

    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let ci = fresh_copy(&project, &dir.join("ci"));
    let o = npm(
        &ci,
        &dir.join("ci-cache"),
        &registry,
        &["ci", "--fetch-retries", "0"],
    );
    assert!(!o.status.success(), "npm ci installed a tampered tarball");
    assert!(installed_version(&ci, "ec-present").is_none());
    let lines = mirror.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&hex) && l.contains("NOT served")),
        "{lines:#?}"
    );
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_locks_are_refused_at_build_time_and_nothing_is_written() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-bad-lock");
    let canary = NpmCanary::start().expect("canary");
    let registry = canary.registry_url();
    let project = locked_project(&dir, &canary);
    let lock: Value =
        serde_json::from_slice(&std::fs::read(project.join("package-lock.json")).expect("lock"))
            .expect("json");
    let out = dir.join("snap");

    // An entry without integrity: exit 4, one line naming file and package.
    let mut no_integrity = lock.clone();
    no_integrity["packages"]["node_modules/ec-present"]
        .as_object_mut()
        .expect("entry")
        .remove("integrity");
    let path = dir.join("no-integrity.json");
    std::fs::write(&path, no_integrity.to_string()).expect("write");
    let o = build(&dir, &path, &registry, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("no-integrity.json")
            && err.contains("node_modules/ec-present")
            && err.contains("has no integrity"),
        "{err}"
    );
    assert!(!out.exists());

    // An integrity the canary's bytes do not match: exit 6, nothing written.
    let mut wrong = lock.clone();
    let other = wrong["packages"]["node_modules/@ec/scoped"]["integrity"].clone();
    wrong["packages"]["node_modules/ec-present"]["integrity"] = other;
    let path = dir.join("wrong-integrity.json");
    std::fs::write(&path, wrong.to_string()).expect("write");
    let o = build(&dir, &path, &registry, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{err}");
    assert!(
        err.contains("ec-present@1.1.0") && err.contains("refusing the whole snapshot"),
        "{err}"
    );
    assert!(!out.exists());

    // --npm-lock without --npm-registry-url is a usage error.
    let o = run(&[
        "snapshot",
        "build",
        "--npm-lock",
        s(&project.join("package-lock.json")),
        "--sign-key",
        s(&dir.join("signing-key")),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--npm-registry-url"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pypi_and_npm_side_by_side_in_one_snapshot() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-both");
    let npm_canary = NpmCanary::start().expect("npm canary");
    let project = locked_project(&dir, &npm_canary);
    let pypi = egress_references::Canary::start().expect("canary");
    let wheel = pypi
        .dists(false)
        .into_iter()
        .find(|(_, d)| d.filename == "ec_present-1.0.0-py3-none-any.whl")
        .map(|(_, d)| d.sha256)
        .expect("wheel");
    let req = dir.join("requirements.txt");
    std::fs::write(&req, format!("ec-present==1.0.0 --hash=sha256:{wheel}\n")).expect("write");
    let key = dir.join("signing-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    let o = run(&[
        "snapshot",
        "build",
        "--requirements",
        s(&req),
        "--index-url",
        &pypi.index_url(),
        "--npm-lock",
        s(&project.join("package-lock.json")),
        "--npm-registry-url",
        "http://127.0.0.1:9/",
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    ok(&o, "snapshot build --requirements --npm-lock");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(snap.join("SNAPSHOT.json")).expect("SNAPSHOT.json"))
            .expect("json");
    let served: Vec<(&str, &str)> = doc["served"]
        .as_array()
        .expect("served")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default(),
                e["content_type"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    for want in [
        ("/simple/ec-present/", "application/vnd.pypi.simple.v1+json"),
        ("/ec-present", "application/json"),
        ("/ec-present", "application/vnd.npm.install-v1+json"),
        ("/@ec%2fscoped", "application/vnd.npm.install-v1+json"),
        ("/@ec/scoped", "application/json"),
        ("/@ec/scoped/-/scoped-1.0.0.tgz", "application/octet-stream"),
    ] {
        assert!(served.contains(&want), "{want:?}: {served:?}");
    }
    assert!(doc["sources"]
        .as_object()
        .expect("sources")
        .keys()
        .any(|k| k == "package-lock.json:package-lock.json"));
    let o = run(&[
        "snapshot",
        "verify",
        s(&snap),
        "--allowed-signers",
        s(&dir.join("signing-key.allowed_signers")),
    ]);
    ok(&o, "snapshot verify");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------ registry signatures

/// Loaded into npm with `NODE_OPTIONS=--require`. `npm audit signatures`
/// first refreshes the Sigstore TUF repository from
/// https://tuf-repo-cdn.sigstore.dev (npm >= 9.5; @sigstore/tuf `initTUF`)
/// to look for `<registry host>/keys.json`, and only if TUF has no such
/// target (TUF_FIND_TARGET_ERROR, which is what the real repository answers
/// for any registry but registry.npmjs.org) asks the registry's own
/// `/-/npm/v1/keys`. The refresh needs the internet, which these tests do
/// not use (and a lab sandbox does not have), so this answers for TUF
/// exactly what the real repository would say about a loopback registry.
/// Everything else (the keys route, the packuments, the ECDSA verification,
/// the verdict) is npm's own code.
const NO_TUF_SHIM: &str = r#"'use strict';
const Module = require('module');
const load = Module._load;
Module._load = function (request) {
  const m = load.apply(this, arguments);
  if (request === '@sigstore/tuf' && m && !m.egressNoTuf) {
    m.egressNoTuf = true;
    m.initTUF = async () => ({
      getTarget: async (target) => {
        process.stderr.write(`egress-test: no Sigstore TUF target ${target}\n`);
        throw Object.assign(new Error(`target ${target} not found`), { code: 'TUF_FIND_TARGET_ERROR' });
      },
    });
  }
  return m;
};
"#;

/// Points every proxy variable of `cmd` at a loopback listener that must
/// see no connection (loopback itself is exempt): whatever npm tries to
/// reach beyond this machine goes there, and fails, instead of out.
fn outside_tripwire(cmd: &mut Command) -> std::net::TcpListener {
    let tripwire = std::net::TcpListener::bind("127.0.0.1:0").expect("tripwire");
    tripwire.set_nonblocking(true).expect("nonblocking");
    let proxy = format!("http://{}", tripwire.local_addr().expect("addr"));
    for var in ["https_proxy", "http_proxy", "HTTPS_PROXY", "HTTP_PROXY"] {
        cmd.env(var, &proxy);
    }
    for var in ["no_proxy", "NO_PROXY"] {
        cmd.env(var, "127.0.0.1,localhost");
    }
    tripwire
}

fn assert_untouched(tripwire: &std::net::TcpListener, what: &str) {
    assert!(
        matches!(tripwire.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "{what} tried to reach beyond loopback"
    );
}

/// Real `npm audit signatures` in `project` against `registry`, offline:
/// the Sigstore TUF step answered by [`NO_TUF_SHIM`], and every proxy
/// variable pointing at a loopback listener that must see no connection
/// (loopback itself is exempt), so nothing leaves this machine unnoticed.
fn audit_signatures(project: &Path, cache: &Path, registry: &str, dir: &Path) -> Output {
    let shim = dir.join("no-tuf.js");
    std::fs::write(&shim, NO_TUF_SHIM).expect("shim");
    let mut cmd = npm_command(project, cache, registry, &["audit", "signatures"]);
    cmd.env("NODE_OPTIONS", format!("--require {}", s(&shim)));
    let tripwire = outside_tripwire(&mut cmd);
    let o = cmd.output().expect("run npm audit signatures");
    assert_untouched(&tripwire, "npm audit signatures");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("egress-test: no Sigstore TUF target 127.0.0.1:"),
        "the TUF shim was not used (has npm changed how it loads @sigstore/tuf?):\n{err}"
    );
    o
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Builds the snapshot of [`locked_project`] from `canary`, stops the
/// canary and serves the snapshot on its port with the real mirror, then
/// `npm ci` from it. Returns the mirror, the installed project and the
/// build's stderr.
fn installed_from_mirror(
    dir: &Path,
    canary: NpmCanary,
) -> (MirrorProcess, PathBuf, String, String) {
    let port = port_of(&canary);
    let registry = format!("http://127.0.0.1:{port}/");
    let project = locked_project(dir, &canary);
    let snap = dir.join("snap");
    let o = build(dir, &project.join("package-lock.json"), &registry, &snap);
    ok(&o, "snapshot build --npm-lock");
    let built = String::from_utf8_lossy(&o.stderr).into_owned();
    canary.stop();
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let ci = fresh_copy(&project, &dir.join("ci"));
    ok(
        &npm(&ci, &dir.join("ci-cache"), &registry, &["ci"]),
        "npm ci",
    );
    assert_eq!(
        installed_version(&ci, "ec-present").as_deref(),
        Some("1.1.0")
    );
    (mirror, ci, registry, built)
}

#[test]
fn npm_audit_signatures_verifies_the_replayed_signatures_offline() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-signatures");
    let canary = NpmCanary::start().expect("canary");
    let keys = canary.keys_document().to_string();
    let keyid = canary.keyid();
    let (mirror, ci, registry, built) = installed_from_mirror(&dir, canary);
    assert!(
        built.contains("npm registry signatures: replaying those of all 2 pinned versions"),
        "{built}"
    );
    assert!(!built.contains("note: npm registry"), "{built}");

    // The snapshot serves the keys document verbatim, and the signatures.
    let doc: Value = serde_json::from_slice(
        &std::fs::read(dir.join("snap/SNAPSHOT.json")).expect("SNAPSHOT.json"),
    )
    .expect("json");
    let blob_at = |path: &str, ct: &str| {
        let hex = doc["served"]
            .as_array()
            .expect("served")
            .iter()
            .find(|e| e["path"] == path && e["content_type"] == ct)
            .and_then(|e| e["sha256"].as_str())
            .unwrap_or_else(|| panic!("{path} {ct} not served"))
            .to_string();
        std::fs::read(dir.join(format!("snap/blobs/sha256/{hex}"))).expect("blob")
    };
    assert_eq!(
        blob_at("/-/npm/v1/keys", "application/json"),
        keys.as_bytes()
    );
    for ct in ["application/json", "application/vnd.npm.install-v1+json"] {
        let p: Value = serde_json::from_slice(&blob_at("/@ec%2fscoped", ct)).expect("json");
        let sigs = &p["versions"]["1.0.0"]["dist"]["signatures"];
        assert_eq!(sigs[0]["keyid"], keyid.as_str(), "{ct}: {p}");
    }

    let o = audit_signatures(&ci, &dir.join("audit-cache"), &registry, &dir);
    let out = text(&o);
    assert!(o.status.success(), "npm audit signatures failed:\n{out}");
    assert!(out.contains("audited 2 packages"), "{out}");
    assert!(
        out.contains("2 packages have verified registry signatures"),
        "{out}"
    );
    assert!(
        !out.contains("missing") && !out.contains("invalid"),
        "{out}"
    );
    let lines = mirror.lines();
    for want in [
        "method=GET target=/-/npm/v1/keys status=200",
        "method=GET target=/ec-present status=200",
        "method=GET target=/@ec%2fscoped status=200",
    ] {
        assert!(lines.iter().any(|l| l.contains(want)), "{want}: {lines:#?}");
    }

    // npm's vulnerability audit POSTs to the registry; the mirror has no
    // control channel: 405, and npm says the audit failed.
    let o = npm_command(&ci, &dir.join("audit-cache"), &registry, &["audit"])
        .output()
        .expect("run npm audit");
    assert!(
        !o.status.success(),
        "npm audit passed against a mirror:\n{}",
        text(&o)
    );
    let lines = mirror.lines();
    assert!(
        lines.iter().any(|l| l.contains(
            "method=POST target=/-/npm/v1/security/advisories/bulk status=405"
        )),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .filter(|l| l.contains("method=POST"))
            .all(|l| l.contains("status=405")),
        "{lines:#?}"
    );
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_forged_registry_signature_fails_npm_audit_signatures() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-forged-signature");
    let canary = NpmCanary::start().expect("canary");
    // Well-formed, by the registry's key, over another integrity: the build
    // replays it as it is; it never verifies or mends a signature.
    canary
        .forge_signature(npm_canary::PRESENT, "1.1.0")
        .expect("forge");
    let (mirror, ci, registry, built) = installed_from_mirror(&dir, canary);
    assert!(
        built.contains("npm registry signatures: replaying those of all 2 pinned versions"),
        "{built}"
    );
    let o = audit_signatures(&ci, &dir.join("audit-cache"), &registry, &dir);
    let out = text(&o);
    assert!(!o.status.success(), "npm audit signatures passed:\n{out}");
    assert!(
        out.contains("1 package has an invalid registry signature"),
        "{out}"
    );
    assert!(out.contains("ec-present@1.1.0"), "{out}");
    assert!(!out.contains("@ec/scoped@1.0.0"), "{out}");
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A package-lock.json v3 pinning `(name, resolved, integrity)` at 1.0.0
/// or as given.
fn hand_lock(pins: &[(&str, &str, &str, &str)]) -> String {
    let mut packages = serde_json::Map::new();
    let deps: serde_json::Map<String, Value> = pins
        .iter()
        .map(|(n, v, _, _)| (n.to_string(), Value::from(*v)))
        .collect();
    packages.insert(
        String::new(),
        serde_json::json!({"name": "hand", "version": "0.0.0", "dependencies": deps}),
    );
    for (name, version, resolved, integrity) in pins {
        packages.insert(
            format!("node_modules/{name}"),
            serde_json::json!({"version": version, "resolved": resolved, "integrity": integrity}),
        );
    }
    serde_json::json!({
        "name": "hand",
        "version": "0.0.0",
        "lockfileVersion": 3,
        "requires": true,
        "packages": packages,
    })
    .to_string()
}

#[test]
fn signatures_that_cannot_be_replayed_are_left_out_with_one_line() {
    let dir = tmpdir("egress-npm-clients-unsigned");
    let canary = NpmCanary::start().expect("canary");
    let tarballs = canary.tarballs(true);
    let integrity = |name: &str, version: &str| {
        tarballs
            .iter()
            .find(|(n, v, _)| n == name && v == version)
            .map(|(_, _, t)| t.integrity.clone())
            .expect("served")
    };
    let url = |name: &str, version: &str| canary.tarball_url(name, version).expect("url");
    let present = (npm_canary::PRESENT, "1.1.0");
    let bad = (npm_canary::BAD_INTEGRITY, "1.0.0");
    let none = (npm_canary::NO_INTEGRITY, "1.0.0");
    let [p, b, n] =
        [present, bad, none].map(|(name, v)| (name, v, url(name, v), integrity(name, v)));
    let lock = dir.join("package-lock.json");
    std::fs::write(
        &lock,
        hand_lock(&[
            (p.0, p.1, &p.2, &p.3),
            (b.0, b.1, &b.2, &b.3),
            (n.0, n.1, &n.2, &n.3),
        ]),
    )
    .expect("lock");
    let registry = "http://127.0.0.1:9/";
    let snap = dir.join("snap");
    let o = build(&dir, &lock, registry, &snap);
    ok(&o, "snapshot build");
    let err = String::from_utf8_lossy(&o.stderr);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("npm registry")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    let note = notes[0];
    assert!(
        note.starts_with("note: npm registry signatures: replayed for 1 of 3 pinned versions"),
        "{note}"
    );
    assert!(
        note.contains("ec-no-integrity@1.0.0 (the upstream lists no signatures)"),
        "{note}"
    );
    assert!(
        note.contains("ec-bad-integrity@1.0.0 (the upstream lists integrity sha512-")
            && note.contains(&b.3),
        "{note}"
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(snap.join("SNAPSHOT.json")).expect("SNAPSHOT.json"))
            .expect("json");
    let packument = |path: &str| -> Value {
        let hex = doc["served"]
            .as_array()
            .expect("served")
            .iter()
            .find(|e| e["path"] == path && e["content_type"] == "application/json")
            .and_then(|e| e["sha256"].as_str())
            .expect("served")
            .to_string();
        serde_json::from_slice(
            &std::fs::read(snap.join(format!("blobs/sha256/{hex}"))).expect("blob"),
        )
        .expect("json")
    };
    assert!(packument("/ec-present")["versions"]["1.1.0"]["dist"]["signatures"].is_array());
    for (name, v) in [bad, none] {
        let dist = &packument(&format!("/{name}"))["versions"][v]["dist"];
        assert!(dist.get("signatures").is_none(), "{name}: {dist}");
        // The snapshot lists the lock's integrity, whatever upstream said.
        assert_eq!(dist["integrity"], integrity(name, v).as_str());
    }
    assert!(doc["served"]
        .as_array()
        .expect("served")
        .iter()
        .any(|e| e["path"] == "/-/npm/v1/keys"));

    // A registry without a keys route (the canary's CDN origin): no keys,
    // no signatures, one line, and the snapshot is built all the same.
    let offsite = (npm_canary::OFFSITE, "1.0.0");
    let lock = dir.join("offsite-lock.json");
    let o_url = url(offsite.0, offsite.1);
    assert!(o_url.starts_with(&canary.offsite_origin()));
    let o_int = integrity(offsite.0, offsite.1);
    std::fs::write(&lock, hand_lock(&[(offsite.0, offsite.1, &o_url, &o_int)])).expect("lock");
    let snap = dir.join("snap-offsite");
    let o = build(&dir, &lock, registry, &snap);
    ok(&o, "snapshot build (no keys route)");
    let err = String::from_utf8_lossy(&o.stderr);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("npm registry")).collect();
    assert_eq!(
        notes,
        [format!(
            "note: npm registry signatures: {}/-/npm/v1/keys answered 404; the snapshot serves no /-/npm/v1/keys and replays no dist.signatures",
            canary.offsite_origin()
        )],
        "{err}"
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(snap.join("SNAPSHOT.json")).expect("SNAPSHOT.json"))
            .expect("json");
    assert!(!doc["served"]
        .as_array()
        .expect("served")
        .iter()
        .any(|e| e["path"] == "/-/npm/v1/keys"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lab's lock, as npm writes it against the public registry: every
/// `resolved` URL on https://registry.npmjs.org/. npm's default
/// `replace-registry-host=npmjs` sends those fetches to the configured
/// registry instead, so the lock installs from the mirror unchanged.
#[test]
fn a_lock_resolved_at_registry_npmjs_org_installs_from_the_mirror_unchanged() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-npmjs");
    let canary = NpmCanary::start().expect("canary");
    let project = locked_project(&dir, &canary);
    let snap = dir.join("snap");
    // The snapshot is built from the canary's copy of the pinned tarballs.
    let mirror_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let registry = format!("http://127.0.0.1:{mirror_port}/");
    ok(
        &build(&dir, &project.join("package-lock.json"), &registry, &snap),
        "snapshot build --npm-lock",
    );
    // The lab's lock names the public registry; the integrity is the same.
    let lock_path = project.join("package-lock.json");
    let lock = std::fs::read_to_string(&lock_path).expect("lock");
    let public = lock.replace(
        &format!("{}/", canary.base_url()),
        "https://registry.npmjs.org/",
    );
    assert_ne!(lock, public);
    canary.stop();
    let ci = dir.join("ci");
    std::fs::create_dir_all(&ci).expect("mkdir");
    std::fs::copy(project.join("package.json"), ci.join("package.json")).expect("copy");
    std::fs::write(ci.join("package-lock.json"), &public).expect("lock");

    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{mirror_port}"));
    let mut cmd = npm_command(
        &ci,
        &dir.join("ci-cache"),
        &registry,
        &["ci", "--fetch-retries", "0"],
    );
    let tripwire = outside_tripwire(&mut cmd);
    let o = cmd.output().expect("run npm ci");
    assert_untouched(&tripwire, "npm ci");
    ok(&o, "npm ci with a lock resolved at registry.npmjs.org");
    assert_locked_versions(&ci);
    let lines = mirror.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("target=/@ec/scoped/-/scoped-1.0.0.tgz status=200")),
        "{lines:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every kit package installs with real npm from the mirror: a snapshot of
/// the kit alone (`kit --protocol npm`, then `snapshot build --npm-dist`);
/// the tripwire with `--ignore-scripts`, so that its postinstall never runs.
#[test]
fn the_kit_installs_with_npm() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-kit");
    let kit = dir.join("kit");
    ok(
        &run(&["kit", "--protocol", "npm", "--out", s(&kit)]),
        "kit --protocol npm",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let registry = format!("http://127.0.0.1:{port}/");
    let key = dir.join("signing-key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--npm-dist",
            s(&kit),
            "--npm-registry-url",
            &registry,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --npm-dist",
    );
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let doc = serde_json::json!({"name": "kit-test", "version": "0.0.0", "private": true});
    std::fs::write(project.join("package.json"), doc.to_string()).expect("package.json");
    let cache = dir.join("cache");
    let o = npm(
        &project,
        &cache,
        &registry,
        &[
            "install",
            "egress-kit-present@1.0.0",
            "@egress-kit/scoped",
            "egress-kit-template",
        ],
    );
    ok(&o, "npm install the kit");
    let o = npm(
        &project,
        &cache,
        &registry,
        &["install", "--ignore-scripts", "egress-kit-tripwire"],
    );
    ok(&o, "npm install --ignore-scripts the tripwire");
    for (name, version) in [
        ("egress-kit-present", "1.0.0"),
        ("@egress-kit/scoped", "1.0.0"),
        ("egress-kit-template", "1.0.0"),
        ("egress-kit-tripwire", "0.1.0"),
    ] {
        assert_eq!(
            installed_version(&project, name).as_deref(),
            Some(version),
            "{name}"
        );
    }
    // The latest version is the newer one.
    let o = npm(
        &project,
        &cache,
        &registry,
        &["install", "egress-kit-present"],
    );
    ok(&o, "npm install egress-kit-present");
    assert_eq!(
        installed_version(&project, "egress-kit-present").as_deref(),
        Some("1.1.0")
    );
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Over https with the mirror's own TLS: the snapshot names the https
/// registry URL, node trusts the test CA through `NODE_EXTRA_CA_CERTS`, and
/// `npm ci` (lock URLs moved to the registry's origin) and `npm install`
/// (tarball URLs from the packuments) both install. Without the CA, npm
/// refuses the certificate.
#[test]
fn npm_installs_over_https_with_node_extra_ca_certs() {
    require_npm();
    let dir = tmpdir("egress-npm-clients-https");
    let canary = NpmCanary::start().expect("canary");
    let project = locked_project(&dir, &canary);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let registry = format!("https://127.0.0.1:{port}/");
    let snap = dir.join("snap");
    let o = build(&dir, &project.join("package-lock.json"), &registry, &snap);
    ok(
        &o,
        "snapshot build --npm-lock --npm-registry-url https://...",
    );
    canary.stop();

    let ca = TestCa::new(&dir);
    let mirror = MirrorProcess::start_tls(&snap, &format!("127.0.0.1:{port}"), &ca);
    assert_eq!(format!("{}/", mirror.base), registry);
    let npm_tls = |project: &Path, cache: &str, args: &[&str], trusted: bool| {
        let mut cmd = npm_command(project, &dir.join(cache), &registry, args);
        if trusted {
            cmd.env("NODE_EXTRA_CA_CERTS", &ca.ca_cert);
        } else {
            cmd.env_remove("NODE_EXTRA_CA_CERTS");
        }
        cmd.output().expect("run npm")
    };

    let untrusted = fresh_copy(&project, &dir.join("untrusted"));
    let o = npm_tls(
        &untrusted,
        "untrusted-cache",
        &[
            "ci",
            "--replace-registry-host",
            "always",
            "--fetch-retries",
            "0",
        ],
        false,
    );
    assert!(
        !o.status.success(),
        "npm trusted an unknown CA: {}",
        text(&o)
    );
    assert!(!untrusted.join("node_modules/ec-present").exists());

    let ci = fresh_copy(&project, &dir.join("ci"));
    let o = npm_tls(
        &ci,
        "ci-cache",
        &["ci", "--replace-registry-host", "always"],
        true,
    );
    ok(&o, "npm ci over https");
    assert_locked_versions(&ci);

    let fresh = dir.join("install");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    std::fs::write(
        fresh.join("package.json"),
        r#"{"name":"fresh","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    let o = npm_tls(
        &fresh,
        "install-cache",
        &["install", "ec-present", "@ec/scoped@^1"],
        true,
    );
    ok(&o, "npm install over https");
    assert_locked_versions(&fresh);

    let lines = mirror.lines();
    let requests: Vec<&String> = lines.iter().filter(|l| l.contains(" request ")).collect();
    for want in [
        "target=/ec-present/-/ec-present-1.1.0.tgz status=200",
        "target=/@ec/scoped/-/scoped-1.0.0.tgz status=200",
        "target=/@ec%2fscoped status=200",
    ] {
        assert!(
            requests.iter().any(|l| l.contains(want)),
            "{want}: {lines:#?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
