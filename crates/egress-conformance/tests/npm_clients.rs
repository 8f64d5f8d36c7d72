//! Real npm installs from the reference mirror, offline: a package-lock.json
//! is made by real npm against the npm canary upstream on loopback (its
//! `resolved` URLs point at the canary, as a lab's lock points at
//! registry.npmjs.org), `egress-conformance snapshot build --npm-lock` builds
//! the snapshot from it, the canary is stopped, and the real `egress-mirror`
//! binary serves the snapshot on the canary's port to `npm ci` and
//! `npm install`. Skipped when npm is not installed.

use egress_fixtures::npm_canary::{self, NpmCanary};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};

fn npm_available() -> bool {
    Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// npm with nothing from this machine's environment or npmrc files, a
/// private cache (which also holds an empty global npmrc) and `registry`.
fn npm(project: &Path, cache: &Path, registry: &str, args: &[&str]) -> Output {
    std::fs::create_dir_all(cache).expect("cache dir");
    // npm refuses to load one file as both user and global config.
    let empty_rc = cache.join("empty-globalconfig");
    std::fs::write(&empty_rc, "").expect("globalconfig");
    let mut cmd = Command::new("npm");
    cmd.current_dir(project)
        .args(args)
        .args(["--registry", registry])
        .args(["--no-audit", "--no-fund", "--no-update-notifier"])
        .arg("--cache")
        .arg(cache)
        .args(["--userconfig", "/dev/null", "--globalconfig"])
        .arg(&empty_rc);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy().to_ascii_lowercase();
        if k.starts_with("npm_config_") || k.ends_with("_proxy") {
            cmd.env_remove(&key);
        }
    }
    cmd.output().expect("run npm")
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
    // scripts/test installs npm; a test that skips would prove nothing.
    assert!(
        npm_available(),
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
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
    assert_eq!(
        installed_version(&ci, "ec-present").as_deref(),
        Some("1.1.0")
    );
    assert_eq!(
        installed_version(&ci, "@ec/scoped").as_deref(),
        Some("1.0.0")
    );
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
    assert_eq!(
        installed_version(&fresh, "ec-present").as_deref(),
        Some("1.1.0")
    );
    assert_eq!(
        installed_version(&fresh, "@ec/scoped").as_deref(),
        Some("1.0.0")
    );
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
    // scripts/test installs npm; a test that skips would prove nothing.
    assert!(
        npm_available(),
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
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
    // scripts/test installs npm; a test that skips would prove nothing.
    assert!(
        npm_available(),
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
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
    // scripts/test installs npm; a test that skips would prove nothing.
    assert!(
        npm_available(),
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
    let dir = tmpdir("egress-npm-clients-both");
    let npm_canary = NpmCanary::start().expect("npm canary");
    let project = locked_project(&dir, &npm_canary);
    let pypi = egress_fixtures::Canary::start().expect("canary");
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
