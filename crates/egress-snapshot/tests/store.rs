//! `StoredSnapshot`: opening checks the evidence documents and reads no
//! blob; every blob is verified through its open handle when it is asked
//! for, and again whenever its file changes; symlinks are refused.

#![cfg(unix)]

use egress_artifacts::BuiltDist;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, SigningKey};
use egress_snapshot::manifest::blob_path;
use egress_snapshot::{
    BlobProblemKind, Snapshot, SnapshotBuilder, SnapshotError, StoredSnapshot, OCTET_STREAM,
};
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const PRINCIPAL: &str = "store@egress.test";

mod common;

use common::TempDir;

fn wheel(name: &str, version: &str) -> BuiltDist {
    common::wheel(name, version, "stored\n", None)
}

/// A signed snapshot with one wheel, written to `<tmp>/snap`.
fn written(tag: &str) -> (TempDir, PathBuf, Snapshot, BuiltDist) {
    let w = wheel("ec-stored", "1.0.0");
    let mut b = SnapshotBuilder::new("/simple/");
    b.add_dist(&w.filename, w.bytes.clone(), None).unwrap();
    let key = SigningKey::from_seed([5; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), PRINCIPAL)
        .unwrap();
    let tmp = TempDir::new(&format!("egress-store-{tag}"));
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    (tmp, dir, snapshot, w)
}

fn read_all(store: &StoredSnapshot, digest: &Sha256Digest) -> Vec<u8> {
    let blob = store.open_blob(digest).unwrap();
    assert_eq!(blob.digest(), *digest);
    let len = blob.len();
    let (mut file, _) = blob.into_parts();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, len);
    bytes
}

fn flip_byte(path: &Path) -> Vec<u8> {
    let original = std::fs::read(path).unwrap();
    let mut bad = original.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    // In place: same inode, new size-preserving content.
    std::fs::write(path, &bad).unwrap();
    original
}

#[test]
fn open_checks_evidence_and_serves_verified_blobs() {
    let (_tmp, dir, snapshot, w) = written("open");
    let store = StoredSnapshot::open(&dir).unwrap();
    assert_eq!(store.id(), snapshot.id());
    assert_eq!(store.manifest_bytes(), snapshot.manifest_bytes.as_slice());
    assert_eq!(store.doc_bytes(), snapshot.doc_bytes.as_slice());
    assert_eq!(store.doc(), &snapshot.doc);
    assert_eq!(store.signature(), snapshot.signature.as_deref());
    assert_eq!(store.allowed_signers(), snapshot.allowed_signers.as_deref());
    assert_eq!(store.blob_count(), snapshot.blobs.len());
    assert_eq!(store.root(), std::fs::canonicalize(&dir).unwrap());
    let allowed = AllowedSigners::parse(store.allowed_signers().unwrap()).unwrap();
    assert_eq!(
        store.verify_signature(&allowed).unwrap().principal,
        PRINCIPAL
    );

    // Every blob reads back as its bytes; the first use hashes.
    for digest in &snapshot.blobs.digests() {
        assert!(store.has_blob(digest));
        assert_eq!(
            read_all(&store, digest),
            snapshot.blobs.get(digest).unwrap().to_vec()
        );
    }
    let blob = store.open_blob(&w.sha256).unwrap();
    // Just written: its ctime is too recent to trust, so it is hashed again.
    assert!(blob.was_hashed());
    assert!(store.unchanged_since_verified(&w.sha256, blob.file()));

    // Not listed: refused without touching the disk.
    let stranger = Sha256Digest::of(b"not in the snapshot");
    assert!(!store.has_blob(&stranger));
    assert!(store.open_blob(&stranger).is_err());
}

#[test]
fn a_flipped_byte_fails_until_restored() {
    let (_tmp, dir, _snapshot, w) = written("flip");
    let store = StoredSnapshot::open(&dir).unwrap();
    let path = dir.join(blob_path(&w.sha256));
    assert_eq!(read_all(&store, &w.sha256), w.bytes);

    // A handle verified before the change no longer vouches for its bytes.
    let before = store.open_blob(&w.sha256).unwrap();
    let original = flip_byte(&path);
    assert!(!store.unchanged_since_verified(&w.sha256, before.file()));

    let err = store.open_blob(&w.sha256).unwrap_err();
    assert_eq!(err.path, blob_path(&w.sha256));
    let mut flipped = original.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x01;
    assert_eq!(
        err.kind,
        BlobProblemKind::Corrupt {
            actual: Sha256Digest::of(&flipped)
        }
    );
    assert!(err.to_string().contains(&w.sha256.to_hex()), "{err}");
    // Still corrupt on the next request.
    assert!(store.open_blob(&w.sha256).is_err());

    std::fs::write(&path, &original).unwrap();
    assert_eq!(read_all(&store, &w.sha256), w.bytes);
}

#[test]
fn open_reads_no_blob_and_missing_blobs_fail_at_request_time() {
    let (_tmp, dir, snapshot, w) = written("missing");
    let metadata = snapshot
        .doc
        .served
        .iter()
        .find(|e| e.path.ends_with(".metadata") && e.content_type == OCTET_STREAM)
        .unwrap()
        .sha256;
    std::fs::remove_file(dir.join(blob_path(&w.sha256))).unwrap();
    flip_byte(&dir.join(blob_path(&metadata)));
    // `open` neither notices the missing blob nor the corrupt one: it reads
    // no blob at all.
    let store = StoredSnapshot::open(&dir).unwrap();
    let err = store.open_blob(&w.sha256).unwrap_err();
    assert_eq!(err.kind, BlobProblemKind::Missing);
    assert!(matches!(
        store.open_blob(&metadata).unwrap_err().kind,
        BlobProblemKind::Corrupt { .. }
    ));
    // load_dir, which reads everything, names both.
    assert!(matches!(
        Snapshot::load_dir(&dir),
        Err(SnapshotError::Blobs(problems)) if problems.len() == 2
    ));
}

#[test]
fn symlinks_are_refused() {
    // A blob replaced by a symlink, even to identical bytes, is not followed.
    let (tmp, dir, _snapshot, w) = written("link-blob");
    let store = StoredSnapshot::open(&dir).unwrap();
    let path = dir.join(blob_path(&w.sha256));
    let outside = tmp.0.join("outside.whl");
    std::fs::rename(&path, &outside).unwrap();
    symlink(&outside, &path).unwrap();
    assert_eq!(
        store.open_blob(&w.sha256).unwrap_err().kind,
        BlobProblemKind::Symlink
    );

    // `blobs` or `blobs/sha256` symlinked: open fails.
    for sub in ["blobs", "blobs/sha256"] {
        let (tmp, dir, _snapshot, _w) = written("link-dir");
        let real = tmp.0.join("elsewhere");
        std::fs::rename(dir.join(sub), &real).unwrap();
        symlink(&real, dir.join(sub)).unwrap();
        let err = StoredSnapshot::open(&dir).unwrap_err();
        assert!(matches!(err, SnapshotError::Symlink(_)), "{sub}: {err}");
        assert!(!err.to_string().contains('\n'));
    }

    // The blob directory swapped for a symlink after open: refused per request.
    let (tmp, dir, _snapshot, w) = written("swap-dir");
    let store = StoredSnapshot::open(&dir).unwrap();
    let real = tmp.0.join("elsewhere");
    std::fs::rename(dir.join("blobs"), &real).unwrap();
    symlink(&real, dir.join("blobs")).unwrap();
    let err = store.open_blob(&w.sha256).unwrap_err();
    assert!(err.to_string().contains("blobs/"), "{err}");

    // Evidence files must not be symlinks either.
    let (tmp, dir, _snapshot, _w) = written("link-sig");
    let sig = dir.join("MANIFEST.sig");
    let moved = tmp.0.join("sig");
    std::fs::rename(&sig, &moved).unwrap();
    symlink(&moved, &sig).unwrap();
    assert!(matches!(
        StoredSnapshot::open(&dir),
        Err(SnapshotError::Symlink(_))
    ));
}

#[test]
fn a_fifo_in_place_of_a_blob_does_not_block() {
    let (_tmp, dir, _snapshot, w) = written("fifo");
    let store = StoredSnapshot::open(&dir).unwrap();
    let path = dir.join(blob_path(&w.sha256));
    std::fs::remove_file(&path).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable; skipping");
        return;
    }
    assert_eq!(
        store.open_blob(&w.sha256).unwrap_err().kind,
        BlobProblemKind::NotAFile
    );
}

#[test]
fn tampered_evidence_is_refused() {
    type Damage = fn(&Path);
    let cases: [(&str, Damage); 5] = [
        ("snapshot-json", |dir| {
            let mut bytes = std::fs::read(dir.join("SNAPSHOT.json")).unwrap();
            bytes.push(b' ');
            std::fs::write(dir.join("SNAPSHOT.json"), bytes).unwrap();
        }),
        ("manifest", |dir| {
            let text = std::fs::read_to_string(dir.join("MANIFEST")).unwrap();
            std::fs::write(dir.join("MANIFEST"), text.replacen("  ", " ", 1)).unwrap();
        }),
        ("allowed-signers", |dir| {
            std::fs::write(dir.join("allowed_signers"), "someone ssh-ed25519 AAAA\n").unwrap();
        }),
        ("no-blob-dir", |dir| {
            std::fs::remove_dir_all(dir.join("blobs")).unwrap();
        }),
        ("blob-dir-is-a-file", |dir| {
            std::fs::remove_dir_all(dir.join("blobs")).unwrap();
            std::fs::write(dir.join("blobs"), b"").unwrap();
        }),
    ];
    for (tag, damage) in cases {
        let (_tmp, dir, _snapshot, _w) = written(tag);
        damage(&dir);
        let err = StoredSnapshot::open(&dir).unwrap_err();
        assert!(!err.to_string().contains('\n'), "{tag}: {err}");
    }
    let tmp = TempDir::new("egress-store-absent");
    assert!(StoredSnapshot::open(&tmp.0.join("absent")).is_err());
}

/// 10,000 distribution files (about 10,200 blobs): `open` succeeds with one
/// blob corrupt and one missing, because it reads no blob; serving each of
/// those fails while the rest verify.
#[test]
fn open_of_a_10000_file_snapshot_reads_no_blob() {
    let mut b = SnapshotBuilder::new("/simple/");
    for p in 0..100 {
        for v in 0..100 {
            // An sdist is opaque bytes to the builder: nothing to build.
            let filename = format!("bulk{p}-1.{v}.tar.gz");
            b.add_dist(&filename, format!("bulk {p} {v}\n").into_bytes(), None)
                .unwrap();
        }
    }
    let snapshot = b.build("2026-01-01T00:00:00Z", None, PRINCIPAL).unwrap();
    let tmp = TempDir::new("egress-store-bulk");
    let dir = tmp.0.join("snap");
    // Written by hand rather than with write_dir, which fsyncs every file.
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    for (path, digest) in snapshot.manifest.entries() {
        if path != "SNAPSHOT.json" {
            std::fs::write(dir.join(path), snapshot.blobs.get(&digest).unwrap()).unwrap();
        }
    }
    std::fs::write(dir.join("SNAPSHOT.json"), &snapshot.doc_bytes).unwrap();
    std::fs::write(dir.join("MANIFEST"), &snapshot.manifest_bytes).unwrap();
    assert!(snapshot.blobs.len() > 10_000);

    let file = |p: usize, v: usize| {
        snapshot
            .doc
            .served
            .iter()
            .find(|e| e.path.ends_with(&format!("/bulk{p}-1.{v}.tar.gz")))
            .unwrap()
            .sha256
    };
    let (corrupt, missing, fine) = (file(42, 7), file(99, 99), file(0, 0));
    flip_byte(&dir.join(blob_path(&corrupt)));
    std::fs::remove_file(dir.join(blob_path(&missing))).unwrap();

    let store = StoredSnapshot::open(&dir).unwrap();
    assert_eq!(store.blob_count(), snapshot.blobs.len());
    assert!(matches!(
        store.open_blob(&corrupt).unwrap_err().kind,
        BlobProblemKind::Corrupt { .. }
    ));
    assert_eq!(
        store.open_blob(&missing).unwrap_err().kind,
        BlobProblemKind::Missing
    );
    assert_eq!(read_all(&store, &fine), b"bulk 0 0\n");
}
