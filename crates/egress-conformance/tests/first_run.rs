//! `snapshot build` as a new user first meets it (issue 26, "first-run
//! friction"), each against a loopback canary with real inputs:
//!
//! - an npm lock that real npm wrote with `omit-lockfile-registry-resolved`
//!   (no `resolved` URLs) builds from `--npm-upstream`, and npm installs it
//!   from the mirror; a lock whose integrity the upstream bytes do not match
//!   is refused.

use egress_references::npm::canary::NpmCanary;
use egress_references::npm::universe::{self as eu, Universe, UNIVERSE_CUTOFF};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The last line of stderr: the one-line error.
fn error_line(o: &Output) -> String {
    err(o).lines().last().unwrap_or_default().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// scripts/test installs npm; its absence fails the test.
fn require_npm() {
    let found = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
}

/// A project in `dir/name` with a `package.json` and no dependency yet.
fn project(dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(&p).expect("mkdir");
    std::fs::write(
        p.join("package.json"),
        r#"{"name":"first-run-test","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    p
}

/// Names under `node_modules` (scoped ones as `@scope/name`).
fn installed(modules: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(modules).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if name.starts_with('@') {
            for s in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                out.push(format!("{name}/{}", s.file_name().to_string_lossy()));
            }
        } else {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// npm's `omit-lockfile-registry-resolved=true` (set here, so the test
/// does not depend on this machine's npm configuration) writes a lock with
/// `integrity` and no `resolved`. The builder resolves each package against
/// `--npm-upstream` (the canary: packuments, a scoped name among them),
/// verifies the bytes against the lock's integrity, and `npm ci` installs
/// the lock from the mirror serving the snapshot. A lock whose integrity
/// the upstream's bytes do not match refuses the build (exit 6), and an
/// upstream that does not list a locked version too.
#[test]
fn an_npm_lock_without_resolved_urls_builds_from_the_upstream() {
    require_npm();
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("first-run-npm");
    let proj = project(&dir, "project");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &proj,
        &dir.join("cache"),
        &canary.registry_url(),
    )
    .expect("npm");
    cmd.args([
        "install",
        eu::APP,
        "--package-lock-only",
        "--before",
        UNIVERSE_CUTOFF,
        "--omit-lockfile-registry-resolved=true",
    ]);
    ok(
        &cmd.output().expect("npm"),
        "npm install --package-lock-only",
    );
    let lock_path = proj.join("package-lock.json");
    let lock: Value =
        serde_json::from_slice(&std::fs::read(&lock_path).expect("lock")).expect("JSON");
    let packages = lock["packages"].as_object().expect("packages");
    let pinned: Vec<&String> = packages.keys().filter(|k| !k.is_empty()).collect();
    assert!(pinned.len() >= 4, "{lock}");
    assert!(
        packages
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .all(|(_, e)| e.get("resolved").is_none() && e.get("integrity").is_some()),
        "npm wrote resolved URLs: {lock}"
    );
    assert!(
        packages.contains_key("node_modules/@eu/native-linux-x64-gnu"),
        "{lock}"
    );

    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");
    let snap = dir.join("snap");
    let upstream = canary.registry_url();
    let build = |lock: &Path, upstream: &str| {
        run(&[
            "snapshot",
            "build",
            "--npm-lock",
            s(lock),
            "--npm-upstream",
            upstream,
            "--npm-registry-url",
            &mirror_url,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ])
    };
    let o = build(&lock_path, &upstream);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("resolving"), "{}", err(&o));

    // A locked integrity the upstream's bytes do not match: refused, and
    // the snapshot already there is left as it was.
    let before = std::fs::read(snap.join("SNAPSHOT.json")).expect("snapshot");
    let mut forged = lock.clone();
    let other = forged["packages"]["node_modules/eu-lib"]["integrity"].clone();
    forged["packages"]["node_modules/eu-app"]["integrity"] = other;
    let forged_path = dir.join("forged-lock.json");
    std::fs::write(&forged_path, forged.to_string()).expect("write");
    let o = build(&forged_path, &upstream);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("eu-app@") && line.contains("expected integrity"),
        "{line}"
    );
    assert_eq!(
        std::fs::read(snap.join("SNAPSHOT.json")).expect("snapshot"),
        before
    );
    // A version the upstream does not list: refused, naming the flag.
    let mut unknown = lock.clone();
    unknown["packages"]["node_modules/eu-app"]["version"] = "9.9.9".into();
    let unknown_path = dir.join("unknown-lock.json");
    std::fs::write(&unknown_path, unknown.to_string()).expect("write");
    let o = build(&unknown_path, &upstream);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("eu-app@9.9.9") && line.contains("--npm-upstream"),
        "{line}"
    );
    // --npm-upstream with nothing that reads it.
    let o = run(&[
        "snapshot",
        "build",
        "--npm-upstream",
        &upstream,
        "--requirements",
        s(&lock_path),
        "--sign-key",
        s(&key),
        "--out",
        s(&dir.join("unused")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        error_line(&o).contains("--npm-upstream is only used with"),
        "{}",
        err(&o)
    );

    // npm ci installs the lock from the mirror alone.
    drop(canary);
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let ci = project(&dir, "ci");
    std::fs::copy(&lock_path, ci.join("package-lock.json")).expect("copy");
    std::fs::copy(proj.join("package.json"), ci.join("package.json")).expect("copy");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &ci,
        &dir.join("ci-cache"),
        &format!("{}/", mirror.base),
    )
    .expect("npm");
    cmd.arg("ci");
    ok(&cmd.output().expect("npm"), "npm ci from the mirror");
    let got = installed(&ci.join("node_modules"));
    for want in ["eu-app", "eu-lib", "eu-peer"] {
        assert!(got.iter().any(|g| g == want), "{want} not in {got:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
