//! A snapshot on disk:
//!
//! ```text
//! DIR/MANIFEST            sha256sum format, lists SNAPSHOT.json and every blob
//! DIR/MANIFEST.sig        SSHSIG over MANIFEST (optional)
//! DIR/allowed_signers     the signer's line (optional; also a served blob)
//! DIR/SNAPSHOT.json
//! DIR/blobs/sha256/<hex>
//! ```
//!
//! so that `sha256sum -c MANIFEST` and `ssh-keygen -Y verify` check it with no
//! tool of ours.

use crate::error::{BlobProblem, BlobProblemKind, SnapshotError};
use crate::manifest::{blob_path, Manifest, SnapshotDoc, SNAPSHOT_JSON};
use crate::nofollow::{read_no_follow, NoFollowError};
use crate::{BlobStore, Snapshot};
use egress_model::Sha256Digest;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub const MANIFEST_FILE: &str = "MANIFEST";
pub const SIGNATURE_FILE: &str = "MANIFEST.sig";
pub const ALLOWED_SIGNERS_FILE: &str = "allowed_signers";
/// The two directories above every blob; see [`blob_path`].
const BLOB_DIRS: [&str; 2] = ["blobs", "blobs/sha256"];

fn read_error(path: &Path, fail: NoFollowError) -> SnapshotError {
    match fail {
        NoFollowError::Missing => SnapshotError::io("read", path, io::ErrorKind::NotFound.into()),
        NoFollowError::Symlink => SnapshotError::Symlink(path.to_path_buf()),
        NoFollowError::NotAFile => SnapshotError::NotRegular(path.to_path_buf()),
        NoFollowError::Io(e) => SnapshotError::io("read", path, e),
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, SnapshotError> {
    read_no_follow(path).map_err(|fail| read_error(path, fail))
}

fn read_optional_text(path: &Path) -> Result<Option<String>, SnapshotError> {
    match read_no_follow(path) {
        Err(NoFollowError::Missing) => Ok(None),
        Err(fail) => Err(read_error(path, fail)),
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SnapshotError::NotUtf8(path.to_path_buf())),
    }
}

impl Snapshot {
    /// Loads and fully verifies a snapshot directory: `MANIFEST` parses
    /// strictly (safe, sorted, unique paths), `SNAPSHOT.json` has its listed
    /// digest, every blob is present and hashes to its name, and the whole
    /// passes [`Snapshot::check`]. Nothing inside the directory may be a
    /// symlink (the directory path itself may be). Every bad blob is named
    /// in one error. The signature is not checked here: that needs a trusted
    /// allowed-signers file, see [`Snapshot::verify_signature`].
    pub fn load_dir(dir: &Path) -> Result<Snapshot, SnapshotError> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(SnapshotError::NotRegular(dir.to_path_buf())),
            Err(e) => return Err(SnapshotError::io("open snapshot directory", dir, e)),
        }
        let manifest_bytes = read_file(&dir.join(MANIFEST_FILE))?;
        let manifest = Manifest::parse(&manifest_bytes)?;
        let listed = manifest
            .get(SNAPSHOT_JSON)
            .ok_or(SnapshotError::NoSnapshotJson)?;
        let doc_bytes = read_file(&dir.join(SNAPSHOT_JSON))?;
        let actual = Sha256Digest::of(&doc_bytes);
        if actual != listed {
            return Err(SnapshotError::SnapshotJsonDigest { listed, actual });
        }
        let doc = SnapshotDoc::parse(&doc_bytes)?;

        // A symlinked `blobs` directory would make every blob path follow it.
        for sub in BLOB_DIRS {
            let path = dir.join(sub);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => return Err(SnapshotError::Symlink(path)),
                Ok(m) if !m.is_dir() => return Err(SnapshotError::NotRegular(path)),
                // Missing: every blob is then reported missing below.
                _ => {}
            }
        }

        let mut blobs = BlobStore::new();
        let mut problems = Vec::new();
        for (path, digest) in manifest.entries() {
            if path == SNAPSHOT_JSON {
                continue;
            }
            // Only blob paths are read; MANIFEST.parse already refused
            // absolute paths and `..`, this refuses every other file name.
            if path != blob_path(&digest) {
                return Err(SnapshotError::Inconsistent(format!(
                    "MANIFEST entry {path:?} is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
                )));
            }
            let kind = match read_no_follow(&dir.join(path)) {
                Ok(bytes) => {
                    // The explicit check that makes the BlobStore invariant
                    // hold for loaded snapshots: bytes that do not hash to
                    // their name never enter the store, so never get served.
                    let actual = Sha256Digest::of(&bytes);
                    if actual == digest {
                        blobs.insert_hashed(digest, bytes);
                        continue;
                    }
                    BlobProblemKind::Corrupt { actual }
                }
                Err(fail) => BlobProblemKind::from(fail),
            };
            problems.push(BlobProblem {
                path: path.to_string(),
                kind,
            });
        }
        if !problems.is_empty() {
            return Err(SnapshotError::Blobs(problems));
        }

        let snapshot = Snapshot {
            manifest,
            manifest_bytes,
            doc,
            doc_bytes,
            signature: read_optional_text(&dir.join(SIGNATURE_FILE))?,
            allowed_signers: read_optional_text(&dir.join(ALLOWED_SIGNERS_FILE))?,
            blobs,
        };
        snapshot.check()?;
        Ok(snapshot)
    }

    /// Writes the snapshot to `dir` atomically: everything goes into a fresh
    /// sibling directory, which is then renamed onto `dir`. Readers see the
    /// old snapshot, no directory, or the new snapshot, never a mix. `dir`
    /// may be absent, empty, or hold a snapshot (which is replaced); anything
    /// else is refused.
    pub fn write_dir(&self, dir: &Path) -> Result<(), SnapshotError> {
        // Never publish a snapshot whose parts disagree.
        self.check()?;
        let target = Target::of(dir)?;
        let tmp = target.fresh()?;
        if let Err(e) = self.write_files(&tmp) {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        target.publish(&tmp)
    }

    /// Every file of the snapshot under `root`, then one sync of them all:
    /// blobs are written (or, from a store on disk, hashed again and
    /// hard-linked) on every core, without a sync per file, and the whole
    /// filesystem is synced once at the end (`syncfs`; a sync per file
    /// where that is not available). At a million blobs a sync per file
    /// was most of the time a build took.
    fn write_files(&self, root: &Path) -> Result<(), SnapshotError> {
        let blob_dir = root.join(BLOB_DIRS[1]);
        fs::create_dir_all(&blob_dir).map_err(|e| SnapshotError::io("create", &blob_dir, e))?;
        let work: Vec<(&str, Sha256Digest)> = self
            .manifest
            .entries()
            .filter(|(path, _)| *path != SNAPSHOT_JSON)
            .collect();
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let results = crate::pool::map(&work, jobs, |(path, digest)| {
            self.write_blob(&root.join(path), path, digest)
        });
        let mut problems = Vec::new();
        for r in results {
            match r {
                Ok(()) => {}
                Err(WriteFail::Blob(p)) => problems.push(p),
                Err(WriteFail::Io(e)) => return Err(e),
            }
        }
        if !problems.is_empty() {
            problems.sort_by(|a, b| a.path.cmp(&b.path));
            return Err(SnapshotError::Blobs(problems));
        }
        write_new(&root.join(SNAPSHOT_JSON), &self.doc_bytes)?;
        write_new(&root.join(MANIFEST_FILE), &self.manifest_bytes)?;
        if let Some(sig) = &self.signature {
            write_new(&root.join(SIGNATURE_FILE), sig.as_bytes())?;
        }
        if let Some(text) = &self.allowed_signers {
            write_new(&root.join(ALLOWED_SIGNERS_FILE), text.as_bytes())?;
        }
        self.sync_files(root)?;
        for sub in BLOB_DIRS {
            if let Ok(d) = File::open(root.join(sub)) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    /// One blob at `dest`: from memory, or from the store's staging file,
    /// which must still hash to `digest` (then it is hard-linked, or copied
    /// across filesystems).
    fn write_blob(&self, dest: &Path, path: &str, digest: &Sha256Digest) -> Result<(), WriteFail> {
        write_blob(&self.blobs, dest, path, digest)
    }

    /// Makes everything written under `root` durable.
    fn sync_files(&self, root: &Path) -> Result<(), SnapshotError> {
        #[cfg(target_os = "linux")]
        {
            let dir = File::open(root).map_err(|e| SnapshotError::io("open", root, e))?;
            if rustix::fs::syncfs(&dir).is_ok() {
                return Ok(());
            }
        }
        let mut files: Vec<PathBuf> = self
            .manifest
            .entries()
            .map(|(path, _)| root.join(path))
            .collect();
        files.push(root.join(MANIFEST_FILE));
        if self.signature.is_some() {
            files.push(root.join(SIGNATURE_FILE));
        }
        if self.allowed_signers.is_some() {
            files.push(root.join(ALLOWED_SIGNERS_FILE));
        }
        for path in files {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| SnapshotError::io("sync", &path, e))?;
        }
        Ok(())
    }
}

/// One blob of `blobs` at `dest`: from memory, or from the store's staging
/// file, which must still hash to `digest` (then it is hard-linked, or
/// copied across filesystems).
pub(crate) fn write_blob(
    blobs: &BlobStore,
    dest: &Path,
    path: &str,
    digest: &Sha256Digest,
) -> Result<(), WriteFail> {
    let problem = |kind| {
        WriteFail::Blob(BlobProblem {
            path: path.to_string(),
            kind,
        })
    };
    let Some(staged) = blobs.staged_file(digest) else {
        // `check` guaranteed the store holds every listed blob.
        let bytes = blobs
            .get(digest)
            .ok_or_else(|| problem(BlobProblemKind::Missing))?;
        return write_unsynced(dest, &bytes).map_err(WriteFail::Io);
    };
    let bytes = read_no_follow(&staged).map_err(|f| problem(BlobProblemKind::from(f)))?;
    let actual = Sha256Digest::of(&bytes);
    if actual != *digest {
        return Err(problem(BlobProblemKind::Corrupt { actual }));
    }
    if fs::hard_link(&staged, dest).is_ok() {
        return Ok(());
    }
    write_unsynced(dest, &bytes).map_err(WriteFail::Io)
}

/// Why one blob could not be written.
pub(crate) enum WriteFail {
    Blob(BlobProblem),
    Io(SnapshotError),
}

/// Where a snapshot is written: `dir`, which may be absent, empty, or hold
/// a snapshot (then replaced); its files go into a fresh sibling first
/// ([`Target::fresh`]), renamed onto `dir` when complete
/// ([`Target::publish`]): readers see the old snapshot, no directory, or
/// the new one, never a mix.
pub(crate) struct Target {
    dir: PathBuf,
    parent: PathBuf,
    name: String,
    replace: bool,
}

impl Target {
    /// Refuses a `dir` that is anything else than absent, empty or a
    /// snapshot.
    pub(crate) fn of(dir: &Path) -> Result<Self, SnapshotError> {
        let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            SnapshotError::io("write to", dir, io::ErrorKind::InvalidInput.into())
        })?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let replace = match fs::symlink_metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(SnapshotError::io("inspect", dir, e)),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(SnapshotError::Symlink(dir.to_path_buf()))
            }
            Ok(m) if !m.is_dir() => return Err(SnapshotError::NotASnapshotDir(dir.to_path_buf())),
            Ok(_) => {
                let empty = fs::read_dir(dir)
                    .map_err(|e| SnapshotError::io("list", dir, e))?
                    .next()
                    .is_none();
                let is_snapshot =
                    fs::symlink_metadata(dir.join(MANIFEST_FILE)).is_ok_and(|m| m.is_file());
                if !empty && !is_snapshot {
                    return Err(SnapshotError::NotASnapshotDir(dir.to_path_buf()));
                }
                // rename(2) replaces an empty directory but not a full one.
                !empty
            }
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            parent,
            name: name.to_string(),
            replace,
        })
    }

    /// A new, empty sibling directory to write into.
    pub(crate) fn fresh(&self) -> Result<PathBuf, SnapshotError> {
        let tmp = self.fresh_name();
        fs::create_dir(&tmp).map_err(|e| SnapshotError::io("create", &tmp, e))?;
        Ok(tmp)
    }

    /// A sibling path no other writer uses, not created.
    pub(crate) fn fresh_name(&self) -> PathBuf {
        self.parent.join(format!(".{}.tmp-{}", self.name, unique()))
    }

    /// Renames the complete `tmp` onto the target (removing `tmp` if that
    /// fails).
    pub(crate) fn publish(&self, tmp: &Path) -> Result<(), SnapshotError> {
        let dir = &self.dir;
        if self.replace {
            // Two renames: the old snapshot moves aside, the new one moves in.
            // (An atomic exchange needs renameat2, which std does not offer.)
            let old = self.parent.join(format!(".{}.old-{}", self.name, unique()));
            if let Err(e) = fs::rename(dir, &old) {
                let _ = fs::remove_dir_all(tmp);
                return Err(SnapshotError::io("move aside", dir, e));
            }
            if let Err(e) = fs::rename(tmp, dir) {
                let _ = fs::rename(&old, dir);
                let _ = fs::remove_dir_all(tmp);
                return Err(SnapshotError::io("rename into place", dir, e));
            }
            let _ = fs::remove_dir_all(&old);
        } else if let Err(e) = fs::rename(tmp, dir) {
            let _ = fs::remove_dir_all(tmp);
            return Err(SnapshotError::io("rename into place", dir, e));
        }
        // Make the rename itself durable; not fatal where unsupported.
        if let Ok(d) = File::open(&self.parent) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

pub(crate) fn write_unsynced(path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
    let mut file = File::create_new(path).map_err(|e| SnapshotError::io("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| SnapshotError::io("write", path, e))
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
    write_unsynced(path, bytes)
}

/// A name suffix no other writer uses at the same time.
fn unique() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}
