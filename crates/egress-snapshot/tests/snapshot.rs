//! Builds snapshots from real distributions, reads the pages back with the
//! simple-API parsers, round-trips them through a directory, damages them in
//! every way `load_dir` must notice, and checks the written directory with
//! `sha256sum -c` and `ssh-keygen -Y verify`.

use egress_artifacts::{build_sdist, read_wheel_metadata, BuiltDist, SdistSpec};
use egress_model::{ProjectName, Sha256Digest, Version};
use egress_signing::{AllowedSigners, SigningKey};
use egress_simple::{
    parse_index_html, parse_index_json, parse_project_html, parse_project_json, HTML_V1, JSON_V1,
};
use egress_snapshot::manifest::blob_path;
use egress_snapshot::{well_known, BlobProblemKind, Snapshot, SnapshotBuilder, SnapshotError};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PRINCIPAL: &str = "snapshots@egress.test";

mod common;

use common::TempDir;

fn wheel(name: &str, version: &str, requires_python: Option<&str>) -> BuiltDist {
    common::wheel(name, version, "test wheel\n", requires_python)
}

fn sdist(name: &str, version: &str) -> BuiltDist {
    build_sdist(&SdistSpec {
        name: ProjectName::new(name).unwrap(),
        version: Version::new(version).unwrap(),
        summary: "never built".into(),
        // Would leave a marker if anything ever ran it.
        setup_py: "open('/tmp/egress-snapshot-ran-setup-py', 'w').close()\nfrom setuptools import setup\nsetup()\n".into(),
        files: vec![],
    })
}

fn key() -> SigningKey {
    SigningKey::from_seed([7; 32], "test")
}

struct Fixture {
    snapshot: Snapshot,
    present: BuiltDist,
    old: BuiltDist,
    source: BuiltDist,
    other: BuiltDist,
}

fn fixture() -> Fixture {
    let present = wheel("ec-present", "1.0.0", Some(">=3.7"));
    let old = wheel("ec-present", "0.9.0", None);
    let source = sdist("ec-present", "1.0.0");
    let other = wheel("ec-other", "2.0.0", None);
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&present.filename, present.bytes.clone(), None)
        .unwrap();
    b.add_dist(&old.filename, old.bytes.clone(), Some("broken".into()))
        .unwrap();
    b.add_dist(&source.filename, source.bytes.clone(), None)
        .unwrap();
    b.add_dist(&other.filename, other.bytes.clone(), None)
        .unwrap();
    b.source("requirements.txt", Sha256Digest::of(b"ec-present==1.0.0\n"));
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key()), PRINCIPAL)
        .unwrap();
    Fixture {
        snapshot,
        present,
        old,
        source,
        other,
    }
}

/// The bytes served at `path` with `content_type`.
fn served(s: &Snapshot, path: &str, content_type: &str) -> (Sha256Digest, Vec<u8>) {
    let e = s
        .doc
        .lookup(path, content_type)
        .unwrap_or_else(|| panic!("{path} {content_type} not served"));
    let bytes = s.blobs.get(&e.sha256).unwrap().to_vec();
    assert_eq!(Sha256Digest::of(&bytes), e.sha256);
    (e.sha256, bytes)
}

#[test]
fn pages_parse_and_link_hashes_are_blob_digests() {
    let f = fixture();
    let s = &f.snapshot;
    let (_, html) = served(s, "/simple/", HTML_V1);
    let (_, json) = served(s, "/simple/", JSON_V1);
    assert_eq!(
        parse_index_html(&html).unwrap().projects,
        ["ec-other", "ec-present"]
    );
    assert_eq!(
        parse_index_json(&json).unwrap().projects,
        ["ec-other", "ec-present"]
    );

    let (_, html) = served(s, "/simple/ec-present/", HTML_V1);
    let (_, json) = served(s, "/simple/ec-present/", JSON_V1);
    let html = parse_project_html(&html).unwrap();
    let json = parse_project_json(&json).unwrap();
    assert_eq!(json.name, "ec-present");
    assert_eq!(json.versions, ["0.9.0", "1.0.0"]);
    for page in [&html, &json] {
        assert_eq!(page.files.len(), 3);
        for file in &page.files {
            let dist = [&f.present, &f.old, &f.source]
                .into_iter()
                .find(|d| d.filename == file.filename)
                .unwrap();
            let hex = dist.sha256.to_hex();
            assert_eq!(file.url, format!("/files/{hex}/{}", dist.filename));
            assert_eq!(file.hashes.get("sha256"), Some(&hex));
            let (digest, bytes) = served(s, &file.url, "application/octet-stream");
            assert_eq!((digest, bytes), (dist.sha256, dist.bytes.clone()));

            let metadata_url = format!("{}.metadata", file.url);
            if dist.filename.ends_with(".whl") {
                let (md_digest, md) = served(s, &metadata_url, "application/octet-stream");
                assert_eq!(md, read_wheel_metadata(&dist.bytes).unwrap());
                let announced = file.core_metadata.as_ref().unwrap().get("sha256").unwrap();
                assert_eq!(announced, &md_digest.to_hex());
            } else {
                // An sdist's metadata would need a build: none is offered.
                assert_eq!(file.core_metadata, None);
                assert!(s.doc.paths().all(|p| p != metadata_url));
            }
            let yanked = (dist.filename == f.old.filename).then(|| "broken".to_string());
            assert_eq!(file.yanked, yanked);
            let rp = (dist.filename == f.present.filename).then(|| ">=3.7".to_string());
            assert_eq!(file.requires_python, rp);
        }
    }
    for file in &json.files {
        let dist = [&f.present, &f.old, &f.source]
            .into_iter()
            .find(|d| d.filename == file.filename)
            .unwrap();
        assert_eq!(file.size, Some(dist.bytes.len() as u64));
    }
    let other = parse_project_json(&served(s, "/simple/ec-other/", JSON_V1).1).unwrap();
    assert_eq!(other.files[0].filename, f.other.filename);

    // Nothing served but pages, files, metadata and allowed_signers; and the
    // evidence documents are not in `served`.
    assert_eq!(s.doc.served.len(), 2 + 2 + 2 + 4 + 3 + 1);
    assert!(s
        .doc
        .lookup(well_known::ALLOWED_SIGNERS, "text/plain")
        .is_some());
    assert!(s
        .doc
        .paths()
        .all(|p| p != well_known::MANIFEST && p != well_known::SNAPSHOT_JSON));
    assert_eq!(s.doc.sources.len(), 1);
    assert_eq!(s.id(), Sha256Digest::of(&s.manifest_bytes));
    assert!(!Path::new("/tmp/egress-snapshot-ran-setup-py").exists());
    s.check().unwrap();
}

#[test]
fn builder_refuses_bad_input() {
    let w = wheel("ec-a", "1.0", None);
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let dup = b.add_dist(&w.filename, w.bytes.clone(), None).unwrap_err();
    assert!(matches!(dup, SnapshotError::DuplicateDist(_)), "{dup}");
    for bad in [
        "x.txt",
        "../ec_a-1.0.tar.gz",
        "ec a-1.0.tar.gz",
        "ec_a-1.0-py3-none-any#.whl",
        "ec_a-1.0%2f.tar.gz",
    ] {
        let e = b.add_dist(bad, vec![1], None).unwrap_err();
        assert!(matches!(e, SnapshotError::InvalidDist { .. }), "{bad}: {e}");
    }
    let e = b
        .add_dist("ec_b-1.0-py3-none-any.whl", w.bytes.clone(), None)
        .unwrap_err();
    assert!(
        matches!(e, SnapshotError::MetadataMismatch { field: "Name", .. }),
        "{e}"
    );
    let e = b
        .add_dist("ec_a-2.0-py3-none-any.whl", w.bytes.clone(), None)
        .unwrap_err();
    assert!(
        matches!(
            e,
            SnapshotError::MetadataMismatch {
                field: "Version",
                ..
            }
        ),
        "{e}"
    );
    let e = b
        .add_dist("ec_c-1.0-py3-none-any.whl", b"not a zip".to_vec(), None)
        .unwrap_err();
    assert!(matches!(e, SnapshotError::WheelMetadata { .. }), "{e}");
    assert!(std::error::Error::source(&e).is_some());
    let e = SnapshotBuilder::new("/../")
        .build("now", None, PRINCIPAL)
        .unwrap_err();
    assert!(matches!(e, SnapshotError::IndexPath(_)), "{e}");
    // Unsigned snapshots build, and say so when asked for a signature.
    let s = b.build("now", None, PRINCIPAL).unwrap();
    assert!(s.allowed_signers.is_none());
    assert!(matches!(
        s.verify_signature(&AllowedSigners::parse("").unwrap()),
        Err(SnapshotError::Unsigned)
    ));
}

#[test]
fn write_load_round_trip_and_signature() {
    let f = fixture();
    let tmp = TempDir::new("egress-snapshot-roundtrip");
    let dir = tmp.0.join("snap");
    f.snapshot.write_dir(&dir).unwrap();
    let loaded = Snapshot::load_dir(&dir).unwrap();
    assert_eq!(loaded.manifest_bytes, f.snapshot.manifest_bytes);
    assert_eq!(loaded.doc_bytes, f.snapshot.doc_bytes);
    assert_eq!(loaded.doc, f.snapshot.doc);
    assert_eq!(loaded.signature, f.snapshot.signature);
    assert_eq!(loaded.allowed_signers, f.snapshot.allowed_signers);
    assert_eq!(loaded.blobs.len(), f.snapshot.blobs.len());
    assert_eq!(loaded.id(), f.snapshot.id());

    let allowed = AllowedSigners::parse(loaded.allowed_signers.as_deref().unwrap()).unwrap();
    let verified = loaded.verify_signature(&allowed).unwrap();
    assert_eq!(verified.principal, PRINCIPAL);
    let mut tampered = loaded.clone();
    tampered.manifest_bytes.push(b'\n');
    assert!(matches!(
        tampered.verify_signature(&allowed),
        Err(SnapshotError::Signature(_))
    ));
    let stranger = AllowedSigners::parse(&format!(
        "{}\n",
        AllowedSigners::line_for(PRINCIPAL, &SigningKey::from_seed([8; 32], "x").public())
    ))
    .unwrap();
    assert!(matches!(
        loaded.verify_signature(&stranger),
        Err(SnapshotError::Signature(_))
    ));

    // Writing again replaces the snapshot; no temp directories are left.
    let w = wheel("ec-new", "1.0", None);
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes, None).unwrap();
    let second = b.build("later", Some(&key()), PRINCIPAL).unwrap();
    second.write_dir(&dir).unwrap();
    assert_eq!(Snapshot::load_dir(&dir).unwrap().id(), second.id());
    let names: Vec<_> = std::fs::read_dir(&tmp.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["snap"]);

    // An empty directory is fine; a non-empty non-snapshot is refused.
    let empty = tmp.0.join("empty");
    std::fs::create_dir(&empty).unwrap();
    second.write_dir(&empty).unwrap();
    let other = tmp.0.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("precious"), b"x").unwrap();
    let e = second.write_dir(&other).unwrap_err();
    assert!(matches!(e, SnapshotError::NotASnapshotDir(_)), "{e}");
    assert!(other.join("precious").exists());
}

/// Writes the fixture, lets `damage` change the directory, and returns the
/// load error.
fn load_after(damage: impl FnOnce(&Path, &Snapshot)) -> SnapshotError {
    let f = fixture();
    let tmp = TempDir::new("egress-snapshot-damage");
    let dir = tmp.0.join("snap");
    f.snapshot.write_dir(&dir).unwrap();
    damage(&dir, &f.snapshot);
    let e = Snapshot::load_dir(&dir).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    e
}

fn blob_of(s: &Snapshot, path: &str) -> String {
    blob_path(
        &s.doc
            .lookup(path, "application/octet-stream")
            .unwrap()
            .sha256,
    )
}

#[test]
fn corrupt_and_missing_blobs_are_all_named() {
    let mut names = (String::new(), String::new());
    let e = load_after(|dir, s| {
        let files: Vec<_> = s
            .doc
            .served
            .iter()
            .filter(|e| e.path.starts_with("/files/"))
            .collect();
        names = (blob_path(&files[0].sha256), blob_path(&files[1].sha256));
        let mut bytes = std::fs::read(dir.join(&names.0)).unwrap();
        bytes[0] ^= 1;
        std::fs::write(dir.join(&names.0), bytes).unwrap();
        std::fs::remove_file(dir.join(&names.1)).unwrap();
    });
    let SnapshotError::Blobs(problems) = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 2, "{e}");
    assert!(problems
        .iter()
        .any(|p| p.path == names.0 && matches!(p.kind, BlobProblemKind::Corrupt { .. })));
    assert!(problems
        .iter()
        .any(|p| p.path == names.1 && p.kind == BlobProblemKind::Missing));
    let text = e.to_string();
    assert!(
        text.contains(&names.0)
            && text.contains(&names.1)
            && text.contains("corrupt")
            && text.contains("missing"),
        "{text}"
    );
}

#[test]
fn tampered_manifest_is_refused() {
    // A blob line whose digest no longer matches its name.
    let e = load_after(|dir, _| {
        let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
        let line = text.lines().find(|l| l.contains("blobs/")).unwrap();
        let first = if line.starts_with('0') { "1" } else { "0" };
        let flipped = format!("{first}{}", &line[1..]);
        std::fs::write(dir.join("MANIFEST"), text.replacen(line, &flipped, 1)).unwrap();
    });
    assert!(matches!(e, SnapshotError::Inconsistent(_)), "{e}");
    // A changed SNAPSHOT.json digest.
    let e = load_after(|dir, _| {
        let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
        let line = text.lines().find(|l| l.ends_with("SNAPSHOT.json")).unwrap();
        let fake = format!("{}  SNAPSHOT.json", Sha256Digest::of(b"{}"));
        std::fs::write(dir.join("MANIFEST"), text.replacen(line, &fake, 1)).unwrap();
    });
    assert!(matches!(e, SnapshotError::SnapshotJsonDigest { .. }), "{e}");
    // A dropped blob line: the page still serves it, MANIFEST no longer lists it.
    let e = load_after(|dir, s| {
        let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
        let blob = blob_of(
            s,
            s.doc
                .served
                .iter()
                .find(|e| e.path.starts_with("/files/"))
                .unwrap()
                .path
                .as_str(),
        );
        let kept: String = text
            .lines()
            .filter(|l| !l.ends_with(&blob))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(dir.join("MANIFEST"), kept).unwrap();
    });
    assert!(matches!(e, SnapshotError::Inconsistent(_)), "{e}");
    // A swapped blob (file and MANIFEST line changed together) shows in SNAPSHOT.json.
    let e = load_after(|dir, s| {
        let entry = s
            .doc
            .served
            .iter()
            .find(|e| e.path.starts_with("/files/"))
            .unwrap();
        let evil = b"evil bytes".to_vec();
        let d = Sha256Digest::of(&evil);
        std::fs::write(dir.join(blob_path(&d)), &evil).unwrap();
        let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
        let old = format!("{}  {}\n", entry.sha256, blob_path(&entry.sha256));
        let mut lines: Vec<String> = text
            .replacen(&old, "", 1)
            .lines()
            .map(str::to_string)
            .collect();
        lines.push(format!("{d}  {}", blob_path(&d)));
        lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
        std::fs::write(dir.join("MANIFEST"), lines.join("\n") + "\n").unwrap();
    });
    assert!(matches!(e, SnapshotError::Inconsistent(_)), "{e}");
}

#[test]
fn unsafe_manifest_paths_are_refused() {
    for evil in [
        "../outside",
        "/etc/passwd",
        "blobs/sha256/../../x",
        "blobs\\sha256\\x",
    ] {
        let e = load_after(|dir, _| {
            let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines.push(format!("{}  {evil}", Sha256Digest::of(b"x")));
            lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
            std::fs::write(dir.join("MANIFEST"), lines.join("\n") + "\n").unwrap();
        });
        assert!(matches!(e, SnapshotError::Manifest(_)), "{evil}: {e}");
        assert!(
            e.to_string().contains("leaves the snapshot") || e.to_string().contains("absolute"),
            "{e}"
        );
    }
    // A safe path that is not a blob path is not read either.
    let e = load_after(|dir, _| {
        let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
        std::fs::write(
            dir.join("MANIFEST"),
            format!("{}  MANIFEST.sig\n{text}", Sha256Digest::of(b"x")),
        )
        .unwrap();
    });
    assert!(matches!(e, SnapshotError::Inconsistent(_)), "{e}");
}

#[cfg(unix)]
#[test]
fn symlinks_are_refused() {
    use std::os::unix::fs::symlink;
    // A blob replaced by a link to an identical file outside the snapshot.
    let mut target = PathBuf::new();
    let e = load_after(|dir, s| {
        let blob = blob_of(
            s,
            s.doc
                .served
                .iter()
                .find(|e| e.path.starts_with("/files/"))
                .unwrap()
                .path
                .as_str(),
        );
        let outside = dir.parent().unwrap().join("outside");
        std::fs::copy(dir.join(&blob), &outside).unwrap();
        std::fs::remove_file(dir.join(&blob)).unwrap();
        symlink(&outside, dir.join(&blob)).unwrap();
        target = PathBuf::from(blob);
    });
    let SnapshotError::Blobs(problems) = &e else {
        panic!("{e}")
    };
    assert_eq!(problems[0].kind, BlobProblemKind::Symlink);
    assert!(e.to_string().contains(target.to_str().unwrap()), "{e}");
    // MANIFEST itself, and the blobs directory.
    let e = load_after(|dir, _| {
        std::fs::rename(dir.join("MANIFEST"), dir.parent().unwrap().join("M")).unwrap();
        symlink(dir.parent().unwrap().join("M"), dir.join("MANIFEST")).unwrap();
    });
    assert!(matches!(e, SnapshotError::Symlink(_)), "{e}");
    let e = load_after(|dir, _| {
        let moved = dir.parent().unwrap().join("blobs-elsewhere");
        std::fs::rename(dir.join("blobs"), &moved).unwrap();
        symlink(&moved, dir.join("blobs")).unwrap();
    });
    assert!(matches!(e, SnapshotError::Symlink(_)), "{e}");
}

#[test]
fn sha256sum_and_ssh_keygen_verify_the_written_dir() {
    let f = fixture();
    let tmp = TempDir::new("egress-snapshot-tools");
    let dir = tmp.0.join("snap");
    f.snapshot.write_dir(&dir).unwrap();

    let out = Command::new("sha256sum")
        .args(["--strict", "-c", "MANIFEST"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(": OK")).count(),
        f.snapshot.manifest.len()
    );
    assert!(stdout.contains("SNAPSHOT.json: OK"));

    let manifest = std::fs::File::open(dir.join("MANIFEST")).unwrap();
    let out = Command::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-f",
            "allowed_signers",
            "-I",
            PRINCIPAL,
            "-n",
        ])
        .arg(egress_signing::SNAPSHOT_NAMESPACE)
        .args(["-s", "MANIFEST.sig"])
        .current_dir(&dir)
        .stdin(Stdio::from(manifest))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // And ssh-keygen refuses the signature for a wrong namespace.
    let manifest = std::fs::File::open(dir.join("MANIFEST")).unwrap();
    let out = Command::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-f",
            "allowed_signers",
            "-I",
            PRINCIPAL,
            "-n",
            "file",
            "-s",
            "MANIFEST.sig",
        ])
        .current_dir(&dir)
        .stdin(Stdio::from(manifest))
        .output()
        .unwrap();
    assert!(!out.status.success());
}
