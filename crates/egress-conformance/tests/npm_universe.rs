//! `snapshot build --npm-universe` as a user runs it: the real binary
//! against the npm canary's universe on loopback (`eu-*` packages with
//! publish times either side of `UNIVERSE_CUTOFF`, platform packages for
//! four targets, required and optional peers), then the real
//! `egress-mirror` serving the snapshot, and real npm installing from it
//! with and without `--before`, as it installs from the upstream. The
//! selection, the cutoff, the platform, the closure, resumption after a
//! killed build and every bad input.

use egress_references::npm::canary::NpmCanary;
use egress_references::npm::universe::{self as eu, Universe, UNIVERSE_CUTOFF};
use egress_snapshot::{Snapshot, SnapshotDoc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{ok, run, s, tmpdir, MirrorProcess};

const LINUX_X64_GLIBC: [&str; 6] = ["--os", "linux", "--cpu", "x64", "--libc", "glibc"];

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A free loopback port, for the mirror whose URL the packuments name.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// The arguments of `snapshot build` of `universe` (the file's text) from
/// `canary`, for a mirror at `mirror`, with `extra` flags; the snapshot at
/// `dir/snap`.
fn args(
    dir: &Path,
    canary: &NpmCanary,
    universe: &str,
    mirror: &str,
    extra: &[&str],
) -> Vec<String> {
    let key = dir.join("key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    let file = dir.join("universe.txt");
    std::fs::write(&file, universe).expect("write universe");
    let mut args: Vec<String> = [
        "snapshot",
        "build",
        "--npm-universe",
        s(&file),
        "--npm-upstream",
        &canary.registry_url(),
        "--npm-registry-url",
        mirror,
        "--sign-key",
        s(&key),
        "--out",
        s(&dir.join("snap")),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

fn build(dir: &Path, canary: &NpmCanary, universe: &str, mirror: &str, extra: &[&str]) -> Output {
    let args = args(dir, canary, universe, mirror, extra);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn doc(dir: &Path) -> SnapshotDoc {
    Snapshot::load_dir(&dir.join("snap"))
        .expect("load snapshot")
        .doc
}

/// `name@version` of every tarball the snapshot serves.
fn tarballs(d: &SnapshotDoc) -> BTreeSet<String> {
    d.served
        .iter()
        .filter_map(|e| {
            let (name, file) = e.path.strip_prefix('/')?.split_once("/-/")?;
            let bare = name.rsplit('/').next()?;
            let version = file
                .strip_prefix(&format!("{bare}-"))?
                .strip_suffix(".tgz")?;
            Some(format!("{name}@{version}"))
        })
        .collect()
}

/// The packument the snapshot serves at `path` as `content_type`.
fn packument(dir: &Path, d: &SnapshotDoc, path: &str, content_type: &str) -> Value {
    let e = d
        .lookup(path, content_type)
        .unwrap_or_else(|| panic!("{path} {content_type} is not served"));
    let blob = dir.join("snap/blobs/sha256").join(e.sha256.to_hex());
    serde_json::from_slice(&std::fs::read(blob).expect("blob")).expect("packument JSON")
}

/// The universe's cutoff closure for linux/x64/glibc, two versions a range.
fn the_snapshot(dir: &Path, canary: &NpmCanary, mirror: &str) -> Output {
    let mut flags = vec![
        "--exclude-newer",
        UNIVERSE_CUTOFF,
        "--versions-per-project",
        "2",
        "--closure",
    ];
    flags.extend_from_slice(&LINUX_X64_GLIBC);
    build(dir, canary, &format!("{}\n", eu::APP), mirror, &flags)
}

/// GET `path` from `base` (http), `accept` if given: status line and body.
fn get(base: &str, path: &str, accept: Option<&str>) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, raw[split + 4..].to_vec())
}

#[test]
fn a_dated_closure_for_one_platform_keeps_what_npm_would_install_there() {
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("npm-universe-closure");
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");
    let o = the_snapshot(&dir, &canary, &mirror_url);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let d = doc(&dir);

    // eu-app's two releases before the cutoff (not 2.0.0, after it; not
    // the beta: `*` names no pre-release); its eu-lib@^1.0.0 (1.3.0 and
    // 1.0.0; not 1.4.0, after; not 2.0.0, outside ^1); its required peer
    // eu-peer@^2.0.0; of its four optional platform packages only
    // linux-x64-gnu. Not the optional peer eu-peer-opt, nor eu-scripted,
    // which nothing reaches.
    let want: BTreeSet<String> = [
        "eu-app@1.0.0",
        "eu-app@1.1.0",
        "eu-lib@1.0.0",
        "eu-lib@1.3.0",
        "eu-peer@2.0.0",
        "eu-peer@2.1.0",
        "@eu/native-linux-x64-gnu@1.0.0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(tarballs(&d), want);

    // What each rule dropped, and the totals.
    let report = out(&o);
    for line in [
        "selected 4 projects, 7 versions, 7 files",
        "dropped by exclude-newer: 2 items",
        "dropped by platform: 3 items",
        "dropped by prerelease: 1 item",
        "dropped by range: 1 item",
        &format!("cutoff (signed): nothing uploaded after {UNIVERSE_CUTOFF}"),
    ] {
        assert!(report.contains(line), "{line:?} missing from:\n{report}");
    }
    assert!(report.contains("eu-app@2.0.0"), "{report}");
    assert!(!report.contains("have no upload time"), "{report}");

    // The cutoff and the platform are signed, with every tarball's time.
    let sel = d.selection.clone().expect("selection");
    assert_eq!(sel.exclude_newer.as_deref(), Some(UNIVERSE_CUTOFF));
    assert_eq!(
        (
            sel.npm_os.clone(),
            sel.npm_cpu.clone(),
            sel.npm_libc.clone()
        ),
        (
            vec!["linux".to_string()],
            vec!["x64".to_string()],
            vec!["glibc".to_string()]
        )
    );
    assert_eq!(sel.versions_per_project, Some(2));
    assert!(sel.closure);
    let cutoff = egress_model::Timestamp::parse(UNIVERSE_CUTOFF).expect("cutoff");
    let tgz: Vec<&str> = d
        .served
        .iter()
        .map(|e| e.path.as_str())
        .filter(|p| p.ends_with(".tgz"))
        .collect();
    assert_eq!(tgz.len(), 7);
    for p in tgz {
        let t = d
            .upload_times
            .get(p)
            .unwrap_or_else(|| panic!("no time for {p}"));
        assert!(t.ends_with(".000Z"), "as the registry wrote it: {t}");
        assert!(
            egress_model::Timestamp::parse(t).expect("time") <= cutoff,
            "{p} {t}"
        );
    }
    assert_eq!(
        d.upload_times
            .get("/eu-app/-/eu-app-1.1.0.tgz")
            .map(String::as_str),
        Some("2024-06-15T12:00:00.000Z")
    );

    // The packuments carry the snapshot's times and its own `latest`.
    let full = packument(&dir, &d, "/eu-app", "application/json");
    assert_eq!(
        full["time"],
        serde_json::json!({
            "created": "2024-02-01T12:00:00.000Z",
            "modified": "2024-06-15T12:00:00.000Z",
            "1.0.0": "2024-02-01T12:00:00.000Z",
            "1.1.0": "2024-06-15T12:00:00.000Z",
        })
    );
    // The upstream's `latest` is 2.0.0, after the cutoff.
    assert_eq!(canary.dist_tag(eu::APP, "latest").as_deref(), Some("2.0.0"));
    assert_eq!(full["dist-tags"], serde_json::json!({ "latest": "1.1.0" }));
    let corgi = packument(&dir, &d, "/eu-app", "application/vnd.npm.install-v1+json");
    assert_eq!(corgi["modified"], "2024-06-15T12:00:00.000Z");
    assert_eq!(corgi["dist-tags"], full["dist-tags"]);
    for doc in [&full, &corgi] {
        let v = &doc["versions"]["1.1.0"];
        assert_eq!(
            v["peerDependenciesMeta"],
            serde_json::json!({ eu::PEER_OPT: { "optional": true } })
        );
        assert_eq!(
            v["optionalDependencies"].as_object().map(|m| m.len()),
            Some(4)
        );
        assert_eq!(
            v["dist"]["tarball"],
            format!("{mirror_url}eu-app/-/eu-app-1.1.0.tgz")
        );
    }
    let lib = packument(&dir, &d, "/eu-lib", "application/json");
    assert_eq!(lib["dist-tags"]["latest"], "1.3.0", "upstream says 2.0.0");
    let gnu = packument(
        &dir,
        &d,
        "/@eu%2fnative-linux-x64-gnu",
        "application/vnd.npm.install-v1+json",
    );
    let v = &gnu["versions"]["1.0.0"];
    assert_eq!(
        (&v["os"], &v["cpu"], &v["libc"]),
        (
            &serde_json::json!(["linux"]),
            &serde_json::json!(["x64"]),
            &serde_json::json!(["glibc"])
        )
    );

    // The real mirror serves them.
    drop(canary);
    let mirror = MirrorProcess::start(&dir.join("snap"), &format!("127.0.0.1:{port}"));
    let (status, body) = get(
        &mirror.base,
        "/eu-app",
        Some("application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"),
    );
    assert!(status.contains(" 200 "), "{status}");
    let served: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(served, corgi);
    let (status, body) = get(&mirror.base, "/eu-app", None);
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(serde_json::from_slice::<Value>(&body).expect("JSON"), full);
    let (status, _) = get(&mirror.base, "/eu-app/-/eu-app-1.1.0.tgz", None);
    assert!(status.contains(" 200 "), "{status}");
    for absent in [
        "/eu-app/-/eu-app-2.0.0.tgz",
        "/eu-peer-opt",
        "/@eu%2fnative-darwin-arm64",
    ] {
        let (status, _) = get(&mirror.base, absent, None);
        assert!(status.contains(" 404 "), "{absent}: {status}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The last line on stderr, which must be the one-line error.
fn error_line(o: &Output) -> String {
    let e = err(o);
    let last = e.trim_end().lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("egress-conformance: "), "{e}");
    last
}

#[test]
fn bad_input_gets_one_line_and_its_exit_code_and_writes_nothing() {
    let canary = NpmCanary::start_with(Universe::with_no_time()).expect("canary");
    let dir = tmpdir("npm-universe-bad");
    let mirror = "http://127.0.0.1:9/";
    let cutoff = ["--exclude-newer", UNIVERSE_CUTOFF];
    let cases: [(&str, Vec<&str>, i32, &str); 6] = [
        ("eu-app\n-bad name\n", vec![], 4, "universe.txt line 2: "),
        ("eu-app@latest\n", vec![], 4, "universe.txt line 1: "),
        ("eu-no-time\n", cutoff.to_vec(), 9, "eu-no-time@1.0.0"),
        ("eu-app\neu-nowhere\n", vec!["--strict"], 6, "eu-nowhere"),
        ("eu-app\n", vec!["--libc", "bionic"], 2, "--libc"),
        (
            "eu-app\n",
            vec!["--npm-upstream", "ftp://x/"],
            2,
            "--npm-upstream",
        ),
    ];
    for (universe, flags, code, says) in cases {
        let o = build(&dir, &canary, universe, mirror, &flags);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{universe:?} {flags:?}: {}",
            err(&o)
        );
        let line = error_line(&o);
        assert!(line.contains(says), "{universe:?} {flags:?}: {line}");
        assert!(
            !dir.join("snap").exists(),
            "{universe:?} {flags:?} wrote a snapshot"
        );
        assert!(
            !dir.join(".snap.parts").exists(),
            "{universe:?} {flags:?} left parts"
        );
    }
    // --npm-upstream alone, and a universe without the mirror's URL.
    let o = run(&[
        "snapshot",
        "build",
        "--npm-upstream",
        "http://x/",
        "--npm-dist",
        s(&dir),
        "--npm-registry-url",
        mirror,
        "--sign-key",
        s(&dir.join("key")),
        "--out",
        s(&dir.join("snap")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(error_line(&o).contains("--npm-upstream is only used with --npm-universe"));
    let file = dir.join("universe.txt");
    let o = run(&[
        "snapshot",
        "build",
        "--npm-universe",
        s(&file),
        "--sign-key",
        s(&dir.join("key")),
        "--out",
        s(&dir.join("snap")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(error_line(&o).contains("--npm-universe needs --npm-registry-url"));

    // Without --strict a missing package is reported, not fatal; a dry run
    // selects and reports, and downloads and writes nothing.
    let o = build(
        &dir,
        &canary,
        "eu-lib\neu-nowhere\n",
        mirror,
        &["--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let report = out(&o);
    assert!(
        report.contains(
            "dry run, nothing downloaded or written: would select 1 projects, 4 versions, 4 files"
        ),
        "{report}"
    );
    assert!(report.contains("dropped by missing: 1 item"), "{report}");
    assert!(!dir.join("snap").exists() && !dir.join(".snap.parts").exists());
    assert!(
        !canary.requests().iter().any(|r| r.target.contains("/-/")),
        "a tarball was asked for"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_build_resumes_and_fetches_only_what_is_missing() {
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("npm-universe-resume");
    // Downloads go one at a time in name order: eu-peer 2.1.0 is the last.
    // It is slow; the build is killed while it is on its way.
    let slow = "eu-peer-2.1.0.tgz";
    canary.set_slow(slow, std::time::Duration::from_secs(30));
    let mut flags = vec![
        "--exclude-newer",
        UNIVERSE_CUTOFF,
        "--closure",
        "--jobs",
        "1",
    ];
    flags.extend_from_slice(&LINUX_X64_GLIBC);
    let args = args(&dir, &canary, "eu-app\n", "http://127.0.0.1:9/", &flags);
    let mut child = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !canary.requests().iter().any(|r| r.target.ends_with(slow)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{slow} was never asked for"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    assert!(!dir.join("snap").exists());
    assert!(
        dir.join(".snap.parts").exists(),
        "the verified downloads are kept"
    );
    let before = canary.requests().len();
    canary.set_slow(slow, std::time::Duration::ZERO);

    let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let again: Vec<String> = canary
        .requests()
        .iter()
        .skip(before)
        .map(|r| r.target.clone())
        .filter(|t| t.contains("/-/"))
        .collect();
    assert_eq!(again.len(), 1, "fetched again: {again:?}");
    assert!(again[0].ends_with(slow), "{again:?}");
    assert!(err(&o).contains("kept from an earlier run"), "{}", err(&o));
    // All of eu-app, eu-lib and eu-peer before the cutoff, and the one
    // platform package.
    assert_eq!(tarballs(&doc(&dir)).len(), 7, "{:?}", tarballs(&doc(&dir)));
    assert!(!dir.join(".snap.parts").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ npm

/// scripts/test installs npm; as in tests/npm_clients.rs, its absence
/// fails the test.
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

/// `npm install eu-app` (with `extra` flags) in a fresh project against
/// `registry`: the versions installed, `name@version` each, from
/// `node_modules`.
fn npm_install(dir: &Path, name: &str, registry: &str, extra: &[&str]) -> BTreeSet<String> {
    let project = dir.join(name);
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"eu-universe-test","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &project,
        &dir.join(format!("{name}-cache")),
        registry,
    )
    .expect("npm");
    cmd.args(["install", eu::APP]).args(extra);
    let o = cmd.output().expect("run npm");
    ok(
        &o,
        &format!("npm install {} {extra:?} from {registry}", eu::APP),
    );
    installed(&project.join("node_modules"))
}

/// `name@version` of every package under `node_modules` (scoped too).
fn installed(modules: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(modules) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let dirs: Vec<(String, PathBuf)> = if name.starts_with('@') {
            std::fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .map(|s| {
                    (
                        format!("{name}/{}", s.file_name().to_string_lossy()),
                        s.path(),
                    )
                })
                .collect()
        } else if name.starts_with('.') {
            Vec::new()
        } else {
            vec![(name, e.path())]
        };
        for (name, path) in dirs {
            let Ok(bytes) = std::fs::read(path.join("package.json")) else {
                continue;
            };
            let doc: Value = serde_json::from_slice(&bytes).expect("package.json");
            out.insert(format!("{name}@{}", doc["version"].as_str().unwrap_or("?")));
        }
    }
    out
}

/// What npm installs here (on Linux x64 with glibc, the `--os`/`--cpu`/
/// `--libc` of the snapshot): the newest releases before the cutoff, and
/// the one platform package for this machine.
fn expected_install() -> BTreeSet<String> {
    let mut want: BTreeSet<String> = ["eu-app@1.1.0", "eu-lib@1.3.0", "eu-peer@2.1.0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if std::env::consts::OS == "linux" && std::env::consts::ARCH == "x86_64" {
        want.insert("@eu/native-linux-x64-gnu@1.0.0".into());
    }
    want
}

#[test]
fn npm_installs_from_the_mirror_what_it_installs_from_upstream_before_the_cutoff() {
    require_npm();
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("npm-universe-npm");
    let before = ["--before", UNIVERSE_CUTOFF];
    // Upstream, at the cutoff: npm chooses by the packuments' `time`.
    let upstream = npm_install(&dir, "upstream", &canary.registry_url(), &before);
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");
    let o = the_snapshot(&dir, &canary, &mirror_url);
    ok(&o, "snapshot build --npm-universe");
    drop(canary);
    let mirror = MirrorProcess::start(&dir.join("snap"), &format!("127.0.0.1:{port}"));
    let registry = format!("{}/", mirror.base);
    let at_cutoff = npm_install(&dir, "mirror-before", &registry, &before);
    // Without --before: the mirror's `latest` is the snapshot's.
    let plain = npm_install(&dir, "mirror-plain", &registry, &[]);
    let want = expected_install();
    assert_eq!(upstream, want);
    assert_eq!(at_cutoff, want);
    assert_eq!(plain, want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lock real npm wrote for `eu-app` at the cutoff lists all four
/// platform packages, optional, with their `os`, `cpu` and `libc`; built
/// for linux/x64/glibc, the snapshot holds only the one that fits, and
/// `npm ci` installs from it. A lock gives no publish times, so with a
/// cutoff it is refused (exit 9); a required entry that does not fit the
/// target is refused (exit 2), naming its key.
#[test]
fn a_lock_keeps_the_optional_platform_packages_that_fit_the_target() {
    require_npm();
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("npm-universe-lock");
    let project = dir.join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"eu-lock-test","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &project,
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
    ]);
    ok(
        &cmd.output().expect("npm"),
        "npm install --package-lock-only",
    );
    let lock_path = project.join("package-lock.json");
    let lock: Value =
        serde_json::from_slice(&std::fs::read(&lock_path).expect("lock")).expect("JSON");
    let musl = &lock["packages"]["node_modules/@eu/native-linux-x64-musl"];
    assert_eq!(musl["optional"], true, "{lock}");
    assert_eq!(musl["libc"], serde_json::json!(["musl"]), "{lock}");

    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");
    let snap = dir.join("snap");
    let build_lock = |lock: &Path, extra: &[&str]| {
        let mut a = vec![
            "snapshot",
            "build",
            "--npm-lock",
            s(lock),
            "--npm-registry-url",
            &mirror_url,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let o = build_lock(&lock_path, &LINUX_X64_GLIBC);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).contains("dropped by platform: 3 items"),
        "{}",
        out(&o)
    );
    let d = doc(&dir);
    let held = tarballs(&d);
    assert!(held.contains("@eu/native-linux-x64-gnu@1.0.0"), "{held:?}");
    assert!(
        !held
            .iter()
            .any(|t| t.contains("musl") || t.contains("darwin") || t.contains("win32")),
        "{held:?}"
    );
    assert_eq!(held.len(), 4, "{held:?}");
    // No time is invented for a lock's tarballs.
    assert!(d.upload_times.is_empty(), "{:?}", d.upload_times);

    // npm ci from the mirror installs the lock there.
    drop(canary);
    let ci = {
        let mirror = MirrorProcess::start(&dir.join("snap"), &format!("127.0.0.1:{port}"));
        let copy = dir.join("ci");
        std::fs::create_dir_all(&copy).expect("mkdir");
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(project.join(f), copy.join(f)).expect("copy");
        }
        let mut cmd = egress_references::npm::client::isolated_npm(
            &copy,
            &dir.join("ci-cache"),
            &format!("{}/", mirror.base),
        )
        .expect("npm");
        // The lock's `resolved` URLs name the canary: the mirror stands in.
        cmd.args(["ci", "--replace-registry-host=always"]);
        ok(&cmd.output().expect("npm"), "npm ci");
        installed(&copy.join("node_modules"))
    };
    assert_eq!(ci, expected_install());

    // With a cutoff: a lock gives no publish times.
    let mut flags = LINUX_X64_GLIBC.to_vec();
    flags.extend_from_slice(&["--exclude-newer", UNIVERSE_CUTOFF]);
    let o = build_lock(&lock_path, &flags);
    assert_eq!(o.status.code(), Some(9), "{}", err(&o));
    assert!(error_line(&o).contains("gives no publish times"));
    // A required entry that does not fit the target.
    let mut required = lock.clone();
    if let Some(e) = required["packages"]["node_modules/@eu/native-linux-x64-musl"].as_object_mut()
    {
        e.remove("optional");
    }
    let edited = dir.join("required-lock.json");
    std::fs::write(&edited, required.to_string()).expect("write");
    let o = build_lock(&edited, &LINUX_X64_GLIBC);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("\"node_modules/@eu/native-linux-x64-musl\"")
            && line.contains("os=linux cpu=x64 libc=glibc"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
