//! Real clients install from the reference mirror, offline: the snapshot is
//! built by `egress-conformance snapshot build` from the canary upstream on
//! loopback, the canary is stopped, and `egress-mirror` (the real binary)
//! serves the snapshot to real pip and real uv at the versions pinned in
//! scripts/clients.txt (installed by scripts/setup-clients), over http and
//! over https with a test CA.

use egress_model::Sha256Digest;
use egress_references::pypi::canary::Canary;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{client, clients, free_port, mirror_bin, ok, run, s, tmpdir, MirrorProcess};
use egress_testca::TestCa;

/// Runs `egress-conformance`, which must exit 0.
fn conformance(args: &[&str]) -> Output {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The pinned pip's `install --isolated --no-cache-dir`, for more arguments.
fn pip_install() -> Command {
    let mut c = client(&clients().join("bin/pip"));
    c.args(["install", "--isolated", "--no-cache-dir"]);
    c
}

/// Builds a signed snapshot of `requirements` from a fresh canary, then
/// stops the canary: from here on there is no upstream at all.
fn snapshot_from_canary(dir: &Path, requirements: impl Fn(&Canary) -> String) -> PathBuf {
    let canary = Canary::start().expect("canary");
    let req = dir.join("requirements.txt");
    std::fs::write(&req, requirements(&canary)).expect("write requirements");
    let key = dir.join("signing-key");
    conformance(&["key", "generate", "--out", s(&key)]);
    let snap = dir.join("snap");
    conformance(&[
        "snapshot",
        "build",
        "--requirements",
        s(&req),
        "--index-url",
        &canary.index_url(),
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    drop(canary);
    snap
}

fn digest_of(canary: &Canary, filename: &str) -> Sha256Digest {
    canary
        .dists(false)
        .into_iter()
        .find(|(_, d)| d.filename == filename)
        .map(|(_, d)| d.sha256)
        .expect("canary file")
}

/// The present project's 1.0.0 wheel and sdist (pip and uv pick the wheel;
/// the sdist gives `check`'s P4 probe something to ask metadata for), and
/// the template-text project.
fn present_requirements(c: &Canary) -> String {
    format!(
        "ec-present==1.0.0 \\\n    --hash=sha256:{} \\\n    --hash=sha256:{}\nec-template-text==1.0.0 \\\n    --hash=sha256:{}\n",
        digest_of(c, WHEEL),
        digest_of(c, "ec_present-1.0.0.tar.gz"),
        digest_of(c, "ec_template_text-1.0.0-py3-none-any.whl")
    )
}

const WHEEL: &str = "ec_present-1.0.0-py3-none-any.whl";

#[test]
fn pip_installs_hash_pinned_from_the_mirror_using_pep_658_metadata() {
    let dir = tmpdir("egress-clients-pip");
    let snap = snapshot_from_canary(&dir, present_requirements);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let target = dir.join("site");
    let o = pip_install()
        .args([
            "--disable-pip-version-check",
            "--index-url",
            &format!("{}/simple/", mirror.base),
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
            s(&target),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("pip");
    ok(&o, "pip install --require-hashes");
    assert!(target.join("ec_present/__init__.py").is_file());
    assert!(target.join("ec_template_text/__init__.py").is_file());
    let lines = mirror.lines();
    // Nothing pip asked for was refused.
    assert!(
        lines
            .iter()
            .filter(|l| l.contains(" request "))
            .all(|l| l.contains("status=200")),
        "{lines:#?}"
    );
    let served = lines.len();

    // The resolver uses PEP 658 metadata: a dry run resolves an unpinned
    // requirement from the `.metadata` files alone, downloading no wheel.
    let o = pip_install()
        .args([
            "--disable-pip-version-check",
            "--dry-run",
            "--ignore-installed",
            "--index-url",
            &format!("{}/simple/", mirror.base),
            "--only-binary",
            ":all:",
            "ec-present",
        ])
        .output()
        .expect("pip");
    ok(&o, "pip install --dry-run");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ec-present-1.0.0"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let lines = mirror.lines()[served..].to_vec();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("{WHEEL}.metadata")) && l.contains("status=200")),
        "pip did not read PEP 658 metadata: {lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(&format!("{WHEEL} "))),
        "pip downloaded the wheel: {lines:#?}"
    );

    // The suite, against the real binary serving from its directory, finds
    // the manifest and signature at the well-known paths and passes.
    let o = Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args([
            "check",
            "--verbose",
            &format!("{}/simple/", mirror.base),
            "--allowed-signers",
            s(&dir.join("signing-key.allowed_signers")),
            "--absent",
            "ec-upstream-only",
        ])
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    for p in ["P1", "P2", "P3", "P4", "P5", "P6"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{p} ")) && l.contains(": PASS")),
            "{p}: {text}"
        );
    }
    assert!(text.contains("signed by"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn uv_installs_from_the_mirror() {
    let dir = tmpdir("egress-clients-uv");
    let snap = snapshot_from_canary(&dir, present_requirements);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let target = dir.join("site");
    let cache = dir.join("uv-cache");
    let o = client(&clients().join("bin/uv"))
        .args([
            "pip",
            "install",
            "--python",
            s(&clients().join("bin/python")),
            "--cache-dir",
            s(&cache),
            "--index-url",
            &format!("{}/simple/", mirror.base),
            "--target",
            s(&target),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("uv");
    ok(&o, "uv pip install");
    assert!(target.join("ec_present/__init__.py").is_file());
    assert!(mirror
        .lines()
        .iter()
        .any(|l| l.contains("/simple/ec-present/") && l.contains("status=200")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tampered_snapshot_is_refused() {
    let dir = tmpdir("egress-clients-tamper");
    let snap = snapshot_from_canary(&dir, present_requirements);
    // Flip a byte of the wheel's blob on disk.
    let manifest = std::fs::read_to_string(snap.join("MANIFEST")).expect("manifest");
    let canary_digest = {
        let c = Canary::start().expect("canary");
        digest_of(&c, WHEEL)
    };
    assert!(manifest.contains(&canary_digest.to_hex()));
    let blob = snap.join(format!("blobs/sha256/{canary_digest}"));
    let mut bytes = std::fs::read(&blob).expect("blob");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&blob, &bytes).expect("write");
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let o = pip_install()
        .args([
            "--index-url",
            &format!("{}/simple/", mirror.base),
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
            s(&dir.join("site")),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("pip");
    assert!(
        !o.status.success(),
        "pip installed from a tampered snapshot"
    );
    assert!(!dir.join("site/ec_present").exists());
    let lines = mirror.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&canary_digest.to_hex()) && l.contains("NOT served")),
        "{lines:#?}"
    );
    drop(mirror);

    // A tampered MANIFEST: the mirror refuses to start, and verify names it.
    let mut m = std::fs::read(snap.join("MANIFEST")).expect("manifest");
    m[0] = if m[0] == b'0' { b'1' } else { b'0' };
    std::fs::write(snap.join("MANIFEST"), &m).expect("write");
    let o = Command::new(mirror_bin())
        .args([s(&snap), "--listen", "127.0.0.1:0"])
        .output()
        .expect("mirror");
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_yanked_file_is_skipped_by_ranges_and_installed_when_pinned() {
    // The builder carries PEP 592 yanked status into every page it renders.
    let canary = Canary::start().expect("canary");
    let dir = tmpdir("egress-clients-yanked");
    let mut b = egress_snapshot::SnapshotBuilder::new("/simple/");
    for (_, d) in canary.dists(false) {
        let yanked =
            (d.filename == "ec_present-1.1.0-py3-none-any.whl").then(|| "broken build".to_string());
        b.add_dist(&d.filename, d.bytes, yanked).expect("add");
    }
    drop(canary);
    let key = egress_signing::SigningKey::from_seed([5; 32], "test");
    let snap = dir.join("snap");
    b.build("2026-01-01T00:00:00Z", Some(&key), "test")
        .expect("build")
        .write_dir(&snap)
        .expect("write");
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let pip = |spec: &str, target: &str| {
        pip_install()
            .args([
                "--no-deps",
                "--index-url",
                &format!("{}/simple/", mirror.base),
                "--only-binary",
                ":all:",
                "--target",
                s(&dir.join(target)),
                spec,
            ])
            .output()
            .expect("pip")
    };
    let o = pip("ec-present>=1.0", "range");
    ok(&o, "pip install ec-present>=1.0");
    let init =
        std::fs::read_to_string(dir.join("range/ec_present/__init__.py")).expect("installed");
    assert!(
        init.contains("1.0.0"),
        "the yanked 1.1.0 was chosen: {init}"
    );
    let o = pip("ec-present==1.1.0", "pinned");
    ok(&o, "pip install ec-present==1.1.0");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .to_lowercase()
            .contains("yanked"),
        "pip warns about the yanked file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn uv_sync_frozen_uses_the_rewritten_lock_against_the_mirror() {
    let dir = tmpdir("egress-clients-uvsync");
    let uv = clients().join("bin/uv");
    let python = clients().join("bin/python");
    let canary = Canary::start().expect("canary");
    let project = dir.join("app");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\ndependencies = [\"ec-present==1.1.0\"]\n\n[tool.uv]\npackage = false\n",
    )
    .expect("pyproject");
    // Real uv locks the project against the canary: its uv.lock names the
    // canary's file URLs, as a lab's lock names PyPI's.
    let cache = dir.join("uv-cache");
    let o = client(&uv)
        .current_dir(&project)
        .args([
            "lock",
            "--python",
            s(&python),
            "--cache-dir",
            s(&cache),
            "--default-index",
            &canary.index_url(),
        ])
        .output()
        .expect("uv lock");
    ok(&o, "uv lock");
    let lock = std::fs::read_to_string(project.join("uv.lock")).expect("uv.lock");
    assert!(lock.contains(&canary.base_url()), "{lock}");

    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}");
    let key = dir.join("signing-key");
    conformance(&["key", "generate", "--out", s(&key)]);
    let snap = dir.join("snap");
    conformance(&[
        "snapshot",
        "build",
        "--uv-lock",
        s(&project.join("uv.lock")),
        "--index-url",
        &canary.index_url(),
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
        "--mirror-url",
        &mirror_url,
    ]);
    drop(canary);
    let rewritten =
        std::fs::read_to_string(snap.join("rewritten/uv.lock")).expect("rewritten uv.lock");
    assert!(!rewritten.contains("127.0.0.1") || rewritten.contains(&mirror_url));
    std::fs::write(project.join("uv.lock"), &rewritten).expect("replace uv.lock");

    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let o = client(&uv)
        .current_dir(&project)
        .args([
            "sync",
            "--frozen",
            "--python",
            s(&python),
            "--cache-dir",
            s(&dir.join("uv-cache-2")),
        ])
        .output()
        .expect("uv sync");
    ok(&o, "uv sync --frozen");
    let site = std::fs::read_dir(project.join(".venv/lib"))
        .expect("venv lib")
        .next()
        .expect("python dir")
        .expect("entry")
        .path()
        .join("site-packages");
    assert!(site.join("ec_present/__init__.py").is_file());
    assert!(mirror
        .lines()
        .iter()
        .any(|l| l.contains("ec_present-1.1.0-py3-none-any.whl") && l.contains("status=200")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot of the conformance kit alone (`kit`, then `snapshot build
/// --dist`), served by the real mirror.
fn kit_snapshot(dir: &Path) -> PathBuf {
    let kit = dir.join("kit");
    conformance(&["kit", "--out", s(&kit)]);
    let key = dir.join("signing-key");
    conformance(&["key", "generate", "--out", s(&key)]);
    let snap = dir.join("snap");
    conformance(&[
        "snapshot",
        "build",
        "--dist",
        s(&kit),
        "--sign-key",
        s(&key),
        "--out",
        s(&snap),
    ]);
    snap
}

/// Every kit package installs with real pip and uv from the mirror: the
/// wheels, and the sdists built offline with the clients' pinned
/// setuptools (`--no-build-isolation`: the mirror holds no build backend,
/// and tests reach only loopback). Only the tripwire's build never runs
/// (`--only-binary` finds nothing to install for it, which is the point).
#[test]
fn the_kit_installs_with_pip_and_uv() {
    let dir = tmpdir("egress-clients-kit");
    let snap = kit_snapshot(&dir);
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let index = format!("{}/simple/", mirror.base);
    let pip = |target: &Path, args: &[&str]| {
        pip_install()
            .args(["--index-url", &index, "--target", s(target)])
            .args(args)
            .output()
            .expect("pip")
    };
    let wheels = dir.join("pip-wheels");
    let o = pip(
        &wheels,
        &[
            "--only-binary",
            ":all:",
            "egress-kit-present",
            "egress-kit-template",
        ],
    );
    ok(&o, "pip install the kit's wheels");
    for m in ["egress_kit_present", "egress_kit_template"] {
        assert!(wheels.join(m).join("__init__.py").is_file(), "{m}");
    }
    // The tripwire is an sdist only: without builds, there is nothing to install.
    let o = pip(
        &dir.join("pip-tripwire"),
        &["--only-binary", ":all:", "egress-kit-tripwire"],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("No matching distribution"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let target = dir.join("uv");
    let o = client(&clients().join("bin/uv"))
        .args([
            "pip",
            "install",
            "--python",
            s(&clients().join("bin/python")),
            "--cache-dir",
            s(&dir.join("uv-cache")),
            "--index-url",
            &index,
            "--target",
            s(&target),
            "egress-kit-present",
            "egress-kit-template",
        ])
        .output()
        .expect("uv");
    ok(&o, "uv pip install the kit's wheels");
    for m in ["egress_kit_present", "egress_kit_template"] {
        assert!(target.join(m).join("__init__.py").is_file(), "{m}");
    }
    // The sdists: built by the clients' setuptools, never fetched from the
    // mirror (it holds none), and `--no-binary` so the present project's
    // sdist is the one built, not its wheel.
    let sdists = ["egress-kit-present", "egress-kit-sdist-only"];
    let modules = ["egress_kit_present", "egress_kit_sdist_only"];
    let pip_sdists = dir.join("pip-sdists");
    let o = pip(
        &pip_sdists,
        &[
            "--no-build-isolation",
            "--no-binary",
            ":all:",
            sdists[0],
            sdists[1],
        ],
    );
    ok(&o, "pip install the kit's sdists");
    for m in modules {
        assert!(pip_sdists.join(m).join("__init__.py").is_file(), "{m}");
    }
    let uv_sdists = dir.join("uv-sdists");
    let o = client(&clients().join("bin/uv"))
        .args([
            "pip",
            "install",
            "--python",
            s(&clients().join("bin/python")),
            "--cache-dir",
            s(&dir.join("uv-cache-sdists")),
            "--index-url",
            &index,
            "--target",
            s(&uv_sdists),
            "--no-build-isolation",
            "--no-binary",
            ":all:",
            sdists[0],
            sdists[1],
        ])
        .output()
        .expect("uv");
    ok(&o, "uv pip install the kit's sdists");
    for m in modules {
        assert!(uv_sdists.join(m).join("__init__.py").is_file(), "{m}");
    }
    // Each sdist was fetched from the mirror; the tripwire's never was.
    let lines = mirror.lines();
    for f in [
        "egress_kit_present-1.0.0.tar.gz",
        "egress_kit_sdist_only-1.0.0.tar.gz",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(f) && l.contains("status=200")),
            "{f} was not served"
        );
    }
    assert!(
        !lines.iter().any(|l| l.contains("egress_kit_tripwire-")),
        "the tripwire's sdist was fetched"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Over https, with the mirror's own TLS (`--tls-cert/--tls-key`): pip
/// trusts the test CA with `--cert`, uv with `SSL_CERT_FILE` (uv's
/// documented way to add a CA bundle; it reads no system store by
/// default). Without the CA, pip refuses the certificate and installs
/// nothing.
/// [`pip_install`] trusting only what it is told: no CA bundle from the
/// environment (requests lets `REQUESTS_CA_BUNDLE` or `CURL_CA_BUNDLE`
/// override `--cert`).
fn pip_install_tls() -> Command {
    let mut c = pip_install();
    c.arg("--disable-pip-version-check");
    for k in [
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ] {
        c.env_remove(k);
    }
    c
}

#[test]
fn pip_and_uv_install_over_https_with_a_test_ca() {
    let dir = tmpdir("egress-clients-https");
    let snap = snapshot_from_canary(&dir, present_requirements);
    let ca = TestCa::new(&dir);
    let mirror = MirrorProcess::start_tls(&snap, "127.0.0.1:0", &ca);
    let index = format!("{}/simple/", mirror.base);

    let untrusted = pip_install_tls()
        .args([
            "--index-url",
            &index,
            "--retries",
            "0",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
            s(&dir.join("untrusted")),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("pip");
    assert!(!untrusted.status.success(), "pip trusted an unknown CA");
    assert!(!dir.join("untrusted/ec_present").exists());

    let target = dir.join("pip-site");
    let o = pip_install_tls()
        .args([
            "--index-url",
            &index,
            "--cert",
            s(&ca.ca_cert),
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
            s(&target),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("pip");
    ok(&o, "pip install --cert over https");
    assert!(target.join("ec_present/__init__.py").is_file());
    assert!(target.join("ec_template_text/__init__.py").is_file());

    let target = dir.join("uv-site");
    let o = client(&clients().join("bin/uv"))
        .env("SSL_CERT_FILE", &ca.ca_cert)
        .env_remove("SSL_CERT_DIR")
        .args([
            "pip",
            "install",
            "--python",
            s(&clients().join("bin/python")),
            "--cache-dir",
            s(&dir.join("uv-cache")),
            "--index-url",
            &index,
            "--target",
            s(&target),
            "-r",
            s(&dir.join("requirements.txt")),
        ])
        .output()
        .expect("uv");
    ok(&o, "uv pip install with SSL_CERT_FILE over https");
    assert!(target.join("ec_present/__init__.py").is_file());

    let lines = mirror.lines();
    let requests: Vec<&String> = lines.iter().filter(|l| l.contains(" request ")).collect();
    assert!(
        requests
            .iter()
            .any(|l| l.contains(&format!("{WHEEL} status=200"))),
        "{lines:#?}"
    );
    assert!(
        requests.iter().all(|l| l.contains("status=200")),
        "{lines:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
