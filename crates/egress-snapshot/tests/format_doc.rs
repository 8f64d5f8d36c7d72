//! docs/snapshot-format.md gives the commands a third party runs to verify a
//! snapshot with stock tools. This test runs that block verbatim on a
//! snapshot the builder wrote, and checks that it catches what it promises.

use egress_artifacts::{build_sdist, build_wheel, SdistSpec, WheelSpec};
use egress_model::{ProjectName, Version};
use egress_signing::{AllowedSigners, SigningKey, SNAPSHOT_NAMESPACE};
use egress_snapshot::SnapshotBuilder;
use std::path::{Path, PathBuf};
use std::process::Command;

const PRINCIPAL: &str = "release@example.org";

fn doc_block() -> String {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/snapshot-format.md"),
    )
    .expect("doc");
    let start = doc.find("```sh verify\n").expect("a ```sh verify block") + "```sh verify\n".len();
    let len = doc[start..].find("```").expect("end of block");
    doc[start..start + len].to_string()
}

fn write_snapshot(dir: &Path, key: &SigningKey) {
    let name = ProjectName::new("doc-check").expect("name");
    let version = Version::new("1.0").expect("version");
    let wheel = build_wheel(&WheelSpec {
        name: name.clone(),
        version: version.clone(),
        summary: "s".into(),
        description: "d".into(),
        requires_python: None,
        files: vec![("doc_check/__init__.py".into(), b"".to_vec())],
    });
    let sdist = build_sdist(&SdistSpec {
        name,
        version,
        summary: "s".into(),
        setup_py: "from setuptools import setup\nsetup()\n".into(),
        files: vec![],
    });
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&wheel.filename, wheel.bytes, None)
        .expect("wheel");
    b.add_dist(&sdist.filename, sdist.bytes, None)
        .expect("sdist");
    let snap = b
        .build("2026-01-01T00:00:00Z", Some(key), PRINCIPAL)
        .expect("build");
    snap.write_dir(dir).expect("write");
}

fn run_block(dir: &Path, trusted: &str) -> (bool, String) {
    std::fs::write(dir.join("trusted_signers"), trusted).expect("signers");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &doc_block()])
        .current_dir(dir)
        .env("PRINCIPAL", PRINCIPAL)
        .output()
        .expect("bash");
    let _ = std::fs::remove_file(dir.join("trusted_signers"));
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("egress-doc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d.join("snap")
}

#[test]
fn the_documented_commands_verify_a_built_snapshot_and_catch_tampering() {
    let key = SigningKey::from_seed([3; 32], PRINCIPAL);
    let trusted = format!(
        "{}\n",
        AllowedSigners::line_for_namespace(PRINCIPAL, &key.public(), SNAPSHOT_NAMESPACE)
    );

    let dir = tmp("ok");
    write_snapshot(&dir, &key);
    let (ok, out) = run_block(&dir, &trusted);
    assert!(ok, "{out}");
    let id =
        egress_model::Sha256Digest::of(&std::fs::read(dir.join("MANIFEST")).expect("manifest"));
    assert!(out.contains(&id.to_hex()), "prints the snapshot id: {out}");

    // A wrong signer.
    let other = SigningKey::from_seed([4; 32], "other");
    let wrong = format!(
        "{}\n",
        AllowedSigners::line_for_namespace(PRINCIPAL, &other.public(), SNAPSHOT_NAMESPACE)
    );
    assert!(!run_block(&dir, &wrong).0);

    // A corrupted blob.
    let blob = std::fs::read_dir(dir.join("blobs/sha256"))
        .expect("blobs")
        .next()
        .expect("a blob")
        .expect("entry")
        .path();
    let mut bytes = std::fs::read(&blob).expect("read");
    bytes[0] ^= 1;
    std::fs::write(&blob, &bytes).expect("write");
    assert!(!run_block(&dir, &trusted).0);
    bytes[0] ^= 1;
    std::fs::write(&blob, &bytes).expect("restore");
    assert!(run_block(&dir, &trusted).0);

    // An extra file in the store.
    std::fs::write(dir.join("blobs/sha256/extra"), b"x").expect("extra");
    assert!(!run_block(&dir, &trusted).0);
    let _ = std::fs::remove_dir_all(dir.parent().expect("parent"));
}
