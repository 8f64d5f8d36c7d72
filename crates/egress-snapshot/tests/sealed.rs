//! Sealed copies (`StoredSnapshot::sealed_blob`): a blob read once into a
//! memfd that the kernel refuses to change, reused while the store file is
//! unchanged, re-verified when it changes, and bounded by a memory budget.

#![cfg(target_os = "linux")]

use egress_model::Sha256Digest;
use egress_signing::SigningKey;
use egress_snapshot::manifest::blob_path;
use egress_snapshot::{BlobProblemKind, SnapshotBuilder, StoredSnapshot, RACY_SECS};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

// Only its TempDir is used here.
#[allow(dead_code)]
mod common;

use common::TempDir;

const EPERM: i32 = 1;

/// `len` bytes that differ with `seed`.
fn bytes(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

/// A snapshot of sdists with the given contents, written to `<tmp>/snap`;
/// returns their digests in order.
fn written(tag: &str, blobs: &[Vec<u8>]) -> (TempDir, PathBuf, Vec<Sha256Digest>) {
    let mut b = SnapshotBuilder::new("/simple/");
    for (i, bytes) in blobs.iter().enumerate() {
        b.add_dist(
            &format!("ec_sealed-{}.0.0.tar.gz", i + 1),
            bytes.clone(),
            None,
        )
        .unwrap();
    }
    let key = SigningKey::from_seed([6; 32], "test");
    let snapshot = b
        .build("2026-01-01T00:00:00Z", Some(&key), "sealed@egress.test")
        .unwrap();
    let tmp = TempDir::new(&format!("egress-sealed-{tag}"));
    let dir = tmp.0.join("snap");
    snapshot.write_dir(&dir).unwrap();
    let digests = blobs.iter().map(|b| Sha256Digest::of(b)).collect();
    (tmp, dir, digests)
}

/// The store at `dir` with zero-copy turned on (it is off by default: a
/// budget of 0), as the mirror's `--zero-copy-budget 1GiB` does.
fn opened_with_budget(dir: &std::path::Path) -> StoredSnapshot {
    let store = StoredSnapshot::open(dir).unwrap();
    assert_eq!(store.zero_copy_usage().budget, 0, "off by default");
    store.set_zero_copy_budget(1 << 30);
    store
}

fn contents(blob: &egress_snapshot::SealedBlob) -> Vec<u8> {
    let mut out = vec![0u8; blob.len() as usize];
    blob.file().read_exact_at(&mut out, 0).unwrap();
    out
}

fn is_eperm(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(EPERM)
}

/// The invariant zero-copy serving rests on: once handed out, a sealed copy
/// holds the blob and the kernel refuses every way of changing it, through
/// any descriptor. If sealing ever silently stopped, this fails.
#[test]
fn a_sealed_copy_holds_the_blob_and_refuses_every_change() {
    let big = bytes(3 * 1024 * 1024, 1);
    let (_tmp, dir, digests) = written("invariant", std::slice::from_ref(&big));
    let store = opened_with_budget(&dir);
    let blob = store
        .sealed_blob(&digests[0])
        .unwrap()
        .expect("a sealed copy");
    assert_eq!(blob.len(), big.len() as u64);
    assert_eq!(blob.digest(), digests[0]);
    assert!(contents(&blob) == big, "the copy differs from the blob");

    // Writes, at the position or at an offset, truncation and growth.
    let e = (&mut blob.file()).write(b"x").unwrap_err();
    assert!(is_eperm(&e), "write: {e}");
    let e = blob.file().write_at(b"x", 0).unwrap_err();
    assert!(is_eperm(&e), "pwrite: {e}");
    let e = blob.file().set_len(0).unwrap_err();
    assert!(is_eperm(&e), "truncate: {e}");
    let e = blob.file().set_len(blob.len() + 1).unwrap_err();
    assert!(is_eperm(&e), "grow: {e}");
    // Through another descriptor for the same memfd, opened for writing.
    let path = format!("/proc/self/fd/{}", blob.file().as_raw_fd());
    match std::fs::OpenOptions::new().write(true).open(&path) {
        Ok(mut other) => {
            let e = other.write(b"x").unwrap_err();
            assert!(is_eperm(&e), "write through {path}: {e}");
        }
        Err(e) => assert!(is_eperm(&e), "open {path}: {e}"),
    }
    assert!(contents(&blob) == big);

    // The probe the mirror runs checks the same refusal.
    let probe = egress_snapshot::probe_sealed_copies().unwrap();
    assert!(!probe.is_empty());

    // Just written: the file's fingerprint is too recent to trust, so the
    // copy serves this request only; it is not cached, and its memory is
    // returned to the budget when the last reference goes.
    let usage = store.zero_copy_usage();
    assert_eq!(usage.cached_blobs, 0);
    assert_eq!(usage.charged_bytes, big.len() as u64);
    drop(blob);
    assert_eq!(store.zero_copy_usage().charged_bytes, 0);
}

/// A copy made before the store file changed keeps its verified bytes; the
/// next request re-verifies the file, finds it corrupt and gets no copy,
/// until the file is restored.
#[test]
fn a_flipped_byte_on_disk_is_refused_and_never_copied() {
    let big = bytes(1024 * 1024, 2);
    let (_tmp, dir, digests) = written("flip", std::slice::from_ref(&big));
    let store = opened_with_budget(&dir);
    let before = store.sealed_blob(&digests[0]).unwrap().unwrap();

    let path = dir.join(blob_path(&digests[0]));
    let mut bad = big.clone();
    bad[123_456] ^= 0x01;
    std::fs::write(&path, &bad).unwrap();

    for _ in 0..2 {
        let err = store.sealed_blob(&digests[0]).unwrap_err();
        assert_eq!(
            err.kind,
            BlobProblemKind::Corrupt {
                actual: Sha256Digest::of(&bad)
            }
        );
        assert!(err.to_string().contains("corrupt"), "{err}");
    }
    assert!(contents(&before) == big, "a sealed copy changed");
    drop(before);
    assert_eq!(store.zero_copy_usage().charged_bytes, 0);

    std::fs::write(&path, &big).unwrap();
    let again = store.sealed_blob(&digests[0]).unwrap().unwrap();
    assert!(contents(&again) == big);
}

/// Copies of settled files are cached and reused; the budget bounds every
/// live copy, cached or still being sent; the least recently used cached
/// copy makes room; a blob larger than the budget, or a budget of 0, gets
/// no copy (the caller serves it the old way).
#[test]
fn the_budget_bounds_the_copies() {
    let len = 512 * 1024;
    let (_tmp, dir, d) = written("budget", &[bytes(len, 3), bytes(len, 4)]);
    // Let the files settle so that their copies may be cached.
    std::thread::sleep(std::time::Duration::from_secs(RACY_SECS as u64 + 1));
    let store = StoredSnapshot::open(&dir).unwrap();
    assert_eq!(
        store.zero_copy_usage().budget,
        egress_snapshot::DEFAULT_ZERO_COPY_BUDGET
    );
    // Off by default: no copy until a budget is set.
    assert_eq!(egress_snapshot::DEFAULT_ZERO_COPY_BUDGET, 0);
    assert!(store.sealed_blob(&d[0]).unwrap().is_none());
    store.set_zero_copy_budget(len as u64);

    let a = store.sealed_blob(&d[0]).unwrap().unwrap();
    // Cached: the same copy again, nothing read twice.
    let a2 = store.sealed_blob(&d[0]).unwrap().unwrap();
    assert!(Arc::ptr_eq(&a, &a2));
    drop(a2);
    // A is being sent: the budget is held, so B gets no copy, and A stays.
    assert!(store.sealed_blob(&d[1]).unwrap().is_none());
    let usage = store.zero_copy_usage();
    assert_eq!((usage.cached_blobs, usage.charged_bytes), (1, len as u64));
    drop(a);
    // A is only cached now: B evicts it.
    let b = store.sealed_blob(&d[1]).unwrap().unwrap();
    assert_eq!(b.digest(), d[1]);
    let usage = store.zero_copy_usage();
    assert_eq!((usage.cached_blobs, usage.charged_bytes), (1, len as u64));
    drop(b);
    let a = store.sealed_blob(&d[0]).unwrap().unwrap();
    assert!(contents(&a) == bytes(len, 3));
    drop(a);

    // Larger than the whole budget: no copy, nothing evicted.
    store.set_zero_copy_budget(len as u64 - 1);
    assert_eq!(store.zero_copy_usage().cached_blobs, 0);
    assert!(store.sealed_blob(&d[0]).unwrap().is_none());
    // Off.
    store.set_zero_copy_budget(0);
    assert!(store.sealed_blob(&d[1]).unwrap().is_none());
    let usage = store.zero_copy_usage();
    assert_eq!(
        (usage.budget, usage.cached_blobs, usage.charged_bytes),
        (0, 0, 0)
    );
    // The old path still serves it.
    assert_eq!(store.open_blob(&d[1]).unwrap().len(), len as u64);
}

/// A missing or unlisted blob is the same error as from `open_blob`.
#[test]
fn problems_are_reported_as_from_open_blob() {
    let (_tmp, dir, d) = written("missing", &[bytes(300 * 1024, 5)]);
    let store = opened_with_budget(&dir);
    std::fs::remove_file(dir.join(blob_path(&d[0]))).unwrap();
    assert_eq!(
        store.sealed_blob(&d[0]).unwrap_err().kind,
        BlobProblemKind::Missing
    );
    let stranger = Sha256Digest::of(b"not in the snapshot");
    assert!(store.sealed_blob(&stranger).is_err());
    assert_eq!(store.zero_copy_usage().charged_bytes, 0);
}
