//! The content-addressed blob store: in memory, or streamed to a staging
//! directory as blobs are added (for builds too large to hold in memory).

use crate::nofollow::read_no_follow;
use egress_model::Sha256Digest;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Blobs by their SHA-256.
///
/// Invariant: every blob handed out hashes to the digest it is stored under.
/// In memory, the map is private and the only way in outside this crate is
/// [`BlobStore::insert`], which computes the digest itself; inside the
/// crate, `insert_hashed` is called only with a digest just computed from
/// the same bytes. So whoever serves a blob from memory serves bytes that
/// match its digest, without re-hashing on every request. On disk
/// ([`BlobStore::on_disk`]) each blob is written to
/// `<staging>/blobs/sha256/<hex>` as it is added and only its digest and
/// length are kept; [`BlobStore::get`] reads the file back and hashes it
/// again, so a staging file changed meanwhile is never handed out.
#[derive(Debug, Clone, Default)]
pub struct BlobStore {
    inner: Inner,
}

#[derive(Debug, Clone)]
enum Inner {
    Memory(HashMap<Sha256Digest, Arc<[u8]>>),
    Disk(Disk),
}

impl Default for Inner {
    fn default() -> Self {
        Inner::Memory(HashMap::new())
    }
}

#[derive(Debug, Clone)]
struct Disk {
    staging: Arc<Staging>,
    /// How many distinct blobs were written. The staging directory itself
    /// is the table of what the store holds: at four million blobs a map
    /// of them was hundreds of MB, and twice that while it grew.
    count: usize,
    /// The first blob that could not be written: it is not in `blobs`, so
    /// a snapshot that serves it fails its check, naming this.
    failed: Option<String>,
}

/// A staging directory, removed when the last store using it is dropped.
#[derive(Debug)]
struct Staging {
    root: PathBuf,
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

impl BlobStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that writes every blob to `staging/blobs/sha256/<hex>` as it
    /// is added and keeps only digests and lengths in memory; `staging`
    /// must not exist yet, and is removed with the store (and its clones).
    /// [`Snapshot::write_dir`](crate::Snapshot::write_dir) hard-links the
    /// files into the snapshot (copying them across filesystems), so put
    /// `staging` on the filesystem of the snapshot's directory.
    pub fn on_disk(staging: &Path) -> io::Result<Self> {
        fs::create_dir(staging)?;
        let staging = Arc::new(Staging {
            root: staging.to_path_buf(),
        });
        fs::create_dir_all(staging.root.join("blobs/sha256"))?;
        Ok(Self {
            inner: Inner::Disk(Disk {
                staging,
                count: 0,
                failed: None,
            }),
        })
    }

    /// Stores `bytes` and returns their digest. Storing the same bytes again
    /// is a no-op.
    pub fn insert(&mut self, bytes: Vec<u8>) -> Sha256Digest {
        let digest = Sha256Digest::of(&bytes);
        self.insert_hashed(digest, bytes);
        digest
    }

    /// Only for a `digest` computed from `bytes` by the caller (see the type's
    /// invariant).
    pub(crate) fn insert_hashed(&mut self, digest: Sha256Digest, bytes: Vec<u8>) {
        match &mut self.inner {
            Inner::Memory(blobs) => {
                blobs.entry(digest).or_insert_with(|| Arc::from(bytes));
            }
            Inner::Disk(disk) => {
                let path = disk.staging.blob_file(&digest);
                match write_blob(&path, &bytes) {
                    Ok(created) => {
                        disk.count += usize::from(created);
                    }
                    Err(e) => {
                        if disk.failed.is_none() {
                            disk.failed = Some(format!("cannot write {}: {e}", path.display()));
                        }
                    }
                }
            }
        }
    }

    /// Adds blob `digest` whose bytes are the file `src` (a verified
    /// snapshot's blob, for a layer): on disk by a hard link, so the bytes
    /// are stored once; in memory by reading it. The bytes are hashed
    /// again whenever they leave the store ([`BlobStore::get`],
    /// [`Snapshot::write_dir`](crate::Snapshot::write_dir)); in memory
    /// they are hashed here. A link across filesystems is an error
    /// (`io::ErrorKind::CrossesDevices`), never a silent copy.
    pub(crate) fn link(&mut self, digest: Sha256Digest, src: &Path) -> io::Result<()> {
        match &mut self.inner {
            Inner::Memory(blobs) => {
                let bytes = read_no_follow(src).map_err(io::Error::other)?;
                if Sha256Digest::of(&bytes) != digest {
                    return Err(io::Error::other(format!(
                        "{} does not hash to {digest}",
                        src.display()
                    )));
                }
                blobs.entry(digest).or_insert_with(|| Arc::from(bytes));
                Ok(())
            }
            Inner::Disk(disk) => {
                let dest = disk.staging.blob_file(&digest);
                match fs::hard_link(src, &dest) {
                    Ok(()) => disk.count += 1,
                    // Held already: the file is named by its digest.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                Ok(())
            }
        }
    }

    /// For a store on disk: moves its staging directory to `dest` (absent,
    /// on the same filesystem), so that each staged blob is
    /// `dest/blobs/sha256/<hex>` without a copy or a link; the store is
    /// empty afterwards. `Err` (and nothing moved) for a store in memory,
    /// or when the rename fails (another filesystem).
    pub(crate) fn move_to(&mut self, dest: &Path) -> io::Result<()> {
        let Inner::Disk(disk) = &self.inner else {
            return Err(io::Error::other("the store is in memory"));
        };
        fs::rename(&disk.staging.root, dest)?;
        *self = Self::new();
        Ok(())
    }

    /// The blob's bytes. From disk they are read back and hashed again:
    /// `None` when the staging file is gone or no longer has these bytes.
    pub fn get(&self, digest: &Sha256Digest) -> Option<Arc<[u8]>> {
        match &self.inner {
            Inner::Memory(blobs) => blobs.get(digest).cloned(),
            Inner::Disk(disk) => {
                let bytes = read_no_follow(&disk.staging.blob_file(digest)).ok()?;
                (Sha256Digest::of(&bytes) == *digest).then(|| Arc::from(bytes))
            }
        }
    }

    pub fn contains(&self, digest: &Sha256Digest) -> bool {
        match &self.inner {
            Inner::Memory(blobs) => blobs.contains_key(digest),
            Inner::Disk(disk) => disk.staging.holds(digest),
        }
    }

    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Memory(blobs) => blobs.len(),
            Inner::Disk(disk) => disk.count,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every digest held, in no particular order (on disk: the staging
    /// directory's blob files).
    pub fn digests(&self) -> Vec<Sha256Digest> {
        match &self.inner {
            Inner::Memory(blobs) => blobs.keys().copied().collect(),
            Inner::Disk(disk) => fs::read_dir(disk.staging.root.join("blobs/sha256"))
                .map(|dir| {
                    dir.filter_map(|e| {
                        let name = e.ok()?.file_name();
                        Sha256Digest::from_hex(name.to_str()?).ok()
                    })
                    .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// For a store on disk: the first blob that could not be written.
    pub fn write_error(&self) -> Option<&str> {
        match &self.inner {
            Inner::Memory(_) => None,
            Inner::Disk(disk) => disk.failed.as_deref(),
        }
    }

    /// For a store on disk: the staging file of a blob it holds.
    pub(crate) fn staged_file(&self, digest: &Sha256Digest) -> Option<PathBuf> {
        match &self.inner {
            Inner::Memory(_) => None,
            Inner::Disk(disk) => disk
                .staging
                .holds(digest)
                .then(|| disk.staging.blob_file(digest)),
        }
    }
}

impl Staging {
    fn blob_file(&self, digest: &Sha256Digest) -> PathBuf {
        self.root.join(crate::manifest::blob_path(digest))
    }

    /// Whether the blob file is there (its bytes are checked whenever
    /// they leave the store).
    fn holds(&self, digest: &Sha256Digest) -> bool {
        fs::symlink_metadata(self.blob_file(digest)).is_ok_and(|m| m.is_file())
    }
}

/// A new file with `bytes` (`Ok(true)`). An existing one (the same blob
/// added before, or written by a clone of the store) is kept only if it
/// has exactly these bytes (`Ok(false)`), else written anew. Not synced:
/// the snapshot directory is synced as a whole when it is written.
fn write_blob(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    match File::create_new(path) {
        Ok(mut file) => file.write_all(bytes).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if read_no_follow(path).is_ok_and(|old| old == bytes) {
                return Ok(false);
            }
            fs::remove_file(path)?;
            File::create_new(path)?.write_all(bytes).map(|()| false)
        }
        Err(e) => Err(e),
    }
}
