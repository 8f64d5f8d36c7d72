//! Real cargo against egress-mirror's sparse registry, with this
//! repository's own `Cargo.lock`: a snapshot built from the cargo canary
//! (crates.io's own lines and `.crate` files, as cargo cached them here),
//! served, and the workspace fetched with `cargo fetch --locked` in a clean
//! `CARGO_HOME` whose only source is the mirror, over http and https, then
//! one crate built offline. The whole workspace built this way is
//! `scripts/cargo-from-mirror`.

mod common;

use common::{free_port, ok, run, s, tmpdir, workspace, MirrorProcess};
use egress_references::cargo::canary::{content_from_cargo_home, read_lock, CargoCanary};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's tracked files, copied: cargo reads every member's
/// manifest and targets.
fn copy_workspace(to: &Path) -> PathBuf {
    let root = workspace();
    let o = Command::new("git")
        .args([
            "-C",
            s(&root),
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .expect("git ls-files");
    ok(&o, "git ls-files");
    for rel in o.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).expect("utf-8 path"));
        let from = root.join(rel);
        if !from.is_file() {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&from, &dest).expect("copy");
    }
    to.to_path_buf()
}

/// cargo with a fresh `CARGO_HOME` whose crates.io is replaced by the
/// mirror's sparse registry, and nothing of the caller's cargo settings.
fn cargo(home: &Path, registry: &str, project: &Path, args: &[&str]) -> Command {
    std::fs::create_dir_all(home).expect("mkdir");
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"egress\"\n\n[source.egress]\nregistry = \"sparse+{registry}\"\n\n[net]\nretry = 0\n"
        ),
    )
    .expect("write config.toml");
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (k, _) in std::env::vars() {
        if k.starts_with("CARGO_") && k != "CARGO" {
            c.env_remove(k);
        }
    }
    c.env("CARGO_HOME", home)
        .env("CARGO_TARGET_DIR", home.join("target"))
        .env_remove("RUSTC_WRAPPER")
        .current_dir(project)
        .args(args);
    c
}

/// One raw HTTP/1.1 exchange with the mirror on loopback.
fn http(port: u16, request: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    c.write_all(request.as_bytes()).expect("send");
    let mut out = Vec::new();
    c.read_to_end(&mut out).expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

fn header(response: &str, name: &str) -> Option<String> {
    response.split("\r\n\r\n").next()?.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

fn output(mut c: Command) -> Output {
    c.output().expect("run cargo")
}

fn build_snapshot(
    dir: &Path,
    lock: &Path,
    canary: &CargoCanary,
    registry: &str,
    name: &str,
) -> (PathBuf, Output) {
    let key = dir.join("signing-key");
    if !key.exists() {
        ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    }
    let snap = dir.join(format!("snap-{name}"));
    let o = run(&[
        "snapshot",
        "build",
        "--cargo-lock",
        s(lock),
        "--cargo-index-url",
        &canary.index_url(),
        "--cargo-registry-url",
        registry,
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    (snap, o)
}

#[test]
fn cargo_fetches_and_builds_this_workspace_from_the_mirror() {
    let dir = tmpdir("egress-cargo-clients");
    let lock_path = workspace().join("Cargo.lock");
    let lock = read_lock(&lock_path).expect("Cargo.lock");
    let content = content_from_cargo_home(&lock)
        .expect("the locked crates in cargo's cache (scripts/test runs `cargo fetch --locked`)");
    let canary = CargoCanary::start(content).expect("canary");
    let port = free_port();
    let registry = format!("http://127.0.0.1:{port}");
    let (snap, o) = build_snapshot(&dir, &lock_path, &canary, &registry, "http");
    ok(&o, "snapshot build --cargo-lock");
    let tls_port = free_port();
    let tls_registry = format!("https://localhost:{tls_port}");
    let (tls_snap, tls) = build_snapshot(&dir, &lock_path, &canary, &tls_registry, "https");
    ok(&tls, "snapshot build --cargo-lock (https)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!(
            "{} files ({} downloaded)",
            lock.pins.len(),
            lock.pins.len()
        )),
        "{out}"
    );
    let asked = canary.requests();
    assert!(asked.iter().any(|r| r.target == "/index/config.json"));
    drop(canary);

    let project = copy_workspace(&dir.join("ws"));
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let index = format!("{registry}/cargo/index/");
    let home = dir.join("home");
    let o = output(cargo(&home, &index, &project, &["fetch", "--locked"]));
    ok(&o, "cargo fetch --locked from the mirror");
    let lines = mirror.lines();
    let served: Vec<&String> = lines.iter().filter(|l| l.contains(" request ")).collect();
    assert!(
        served
            .iter()
            .any(|l| l.contains("target=/cargo/index/config.json status=200")),
        "{served:#?}"
    );
    let crates = served
        .iter()
        .filter(|l| l.contains(".crate status=200"))
        .count();
    assert_eq!(crates, lock.pins.len(), "{served:#?}");
    // Offline, from what was fetched: one crate of the workspace and its
    // dependencies (scripts/cargo-from-mirror builds them all).
    let o = output(cargo(
        &home,
        &index,
        &project,
        &["build", "--locked", "--offline", "-p", "egress-model"],
    ));
    ok(&o, "cargo build --locked --offline -p egress-model");

    // An index file carries a validator, and a conditional request on it
    // is a 304: what cargo sends once its index cache has the file.
    let path = "/cargo/index/it/oa/itoa";
    let first = http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    );
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let etag = header(&first, "etag").expect("ETag");
    let again = http(
        port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(again.starts_with("HTTP/1.1 304"), "{again}");

    // Over https, trusting the lab's CA as cargo does (CARGO_HTTP_CAINFO).
    let ca = egress_testca::TestCa::new(&dir);
    let tls_mirror = MirrorProcess::start_tls(&tls_snap, &format!("127.0.0.1:{tls_port}"), &ca);
    let tls_home = dir.join("tls-home");
    let mut fetch = cargo(
        &tls_home,
        &format!("{tls_registry}/cargo/index/"),
        &project,
        &["fetch", "--locked"],
    );
    fetch.env("CARGO_HTTP_CAINFO", &ca.ca_cert);
    ok(&output(fetch), "cargo fetch --locked over https");
    let served = tls_mirror.lines();
    let crates = served
        .iter()
        .filter(|l| l.contains(".crate status=200"))
        .count();
    assert_eq!(crates, lock.pins.len());
    drop(mirror);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crate_missing_from_the_snapshot_is_a_clean_404() {
    let dir = tmpdir("egress-cargo-missing");
    let lock_path = workspace().join("Cargo.lock");
    let full = read_lock(&lock_path).expect("Cargo.lock");
    let content = content_from_cargo_home(&full).expect("cargo's cache");
    let canary = CargoCanary::start(content).expect("canary");
    // The lock less itoa: the snapshot never holds it.
    let text = std::fs::read_to_string(&lock_path).expect("read");
    let without: Vec<&str> = text
        .split("\n[[package]]\n")
        .filter(|p| !p.starts_with("name = \"itoa\"\n"))
        .collect();
    assert_eq!(without.len() + 1, text.split("\n[[package]]\n").count());
    let partial = dir.join("Cargo.lock");
    std::fs::write(&partial, without.join("\n[[package]]\n")).expect("write");
    let port = free_port();
    let registry = format!("http://127.0.0.1:{port}");
    let (snap, o) = build_snapshot(&dir, &partial, &canary, &registry, "partial");
    ok(&o, "snapshot build");
    let upstream_before = canary.requests().len();

    let project = copy_workspace(&dir.join("ws"));
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let home = dir.join("home");
    let o = output(cargo(
        &home,
        &format!("{registry}/cargo/index/"),
        &project,
        &["fetch", "--locked"],
    ));
    assert!(!o.status.success(), "cargo fetch succeeded without itoa");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("itoa"), "{err}");
    let lines = mirror.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("target=/cargo/index/it/oa/itoa status=404")),
        "{lines:#?}"
    );
    // Nothing reached the upstream: the mirror has no way to it.
    assert_eq!(canary.requests().len(), upstream_before);
    let _ = std::fs::remove_dir_all(&dir);
}
