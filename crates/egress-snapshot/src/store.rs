//! [`StoredSnapshot`]: a snapshot served straight from its directory, with
//! every blob verified lazily, before it is first served and again whenever
//! its file changes.
//!
//! [`Snapshot::load_dir`](crate::Snapshot::load_dir) reads and hashes every
//! blob into memory before anything is served; that costs start-up time and
//! memory in proportion to the snapshot. [`StoredSnapshot::open`] reads only
//! `MANIFEST`, `SNAPSHOT.json`, the signature and the allowed-signers file,
//! checks that they agree (the same rules as [`Snapshot::check`](crate::Snapshot::check),
//! except for blob bytes), and checks that `blobs/` and `blobs/sha256/` are
//! real directories. It reads no blob, so opening a snapshot of any size
//! takes time and memory in proportion to its `MANIFEST` only.
//!
//! # The serving invariant
//!
//! No byte that does not match its digest is ever handed out:
//! [`StoredSnapshot::open_blob`] returns an open file only after it has
//! established, **through that same open file handle**, that the file's
//! bytes hash to the requested digest:
//!
//! 1. the blob is opened with `O_NOFOLLOW` (a symlink at `blobs/sha256/<hex>`
//!    is refused, never followed) and `O_NONBLOCK` (a FIFO planted there
//!    cannot block the request), after checking that `blobs/` and
//!    `blobs/sha256/` are still the very directories seen by `open`;
//! 2. the open handle is `fstat`ed: it must be a regular file, and its
//!    fingerprint (device, inode, size, mtime and ctime, both to the
//!    nanosecond) is compared with the one recorded when this digest was last
//!    verified;
//! 3. if the fingerprint matches a trusted record the file is unchanged and
//!    is not hashed again; otherwise the whole file is hashed through the
//!    handle, the handle is `fstat`ed again (a change during hashing fails the
//!    request), the outcome is recorded, and the handle is rewound.
//!
//! A file's ctime cannot be set by an unprivileged process and moves on every
//! write, truncate, rename-over or `utimensat`, so a matching fingerprint
//! means an unchanged file. One exception is handled like git's "racily
//! clean" index entries: on filesystems with coarse timestamps a write in the
//! same clock tick as the verification leaves the ctime unchanged. So a
//! fingerprint whose ctime is less than [`RACY_SECS`](crate::RACY_SECS) seconds old when it is
//! recorded is not trusted: the file is hashed again on every request until
//! its ctime is older than that.
//!
//! # Three ways to serve a verified blob
//!
//! - **Small blobs** (at most [`SMALL_BLOB_MAX`]): the verified bytes are
//!   kept in memory; see [`StoredSnapshot::small_blob`].
//! - **Larger blobs, zero-copy** (Linux, opt-in: only with a memory budget
//!   set, see [`StoredSnapshot::set_zero_copy_budget`]): the file
//!   is read once, hashed while it is copied into an anonymous memfd, and
//!   the memfd is sealed against any change only if the digest matches; the
//!   server then sends that memfd with `sendfile(2)`. No time-of-check to
//!   time-of-use window exists there: the bytes sent are the bytes hashed,
//!   enforced by the kernel (see [`StoredSnapshot::sealed_blob`] and the
//!   `sealed` module). The file is still watched per request, so a change
//!   on disk is re-verified and a corrupt file refused.
//! - **Larger blobs, copied** (the default; also when zero-copy is
//!   unavailable or the blob does not fit the budget): the verified handle from
//!   [`StoredSnapshot::open_blob`] is copied to the socket in chunks, with
//!   the residual window below.
//!
//! # The residual window of the copy path
//!
//! Verification and sending are two steps. A file rewritten in place after
//! it was verified and before (or while) its bytes are copied to the client
//! would be sent unverified: the time-of-check to time-of-use window. It is
//! closed as far as a file API allows: the server sends all but the last
//! byte, then calls [`StoredSnapshot::unchanged_since_verified`] on the
//! handle that was copied from, and sends the last byte only if the file
//! still has its verified fingerprint; otherwise the connection is dropped
//! and the client sees a truncated response. (The server copies the bytes
//! into the socket rather than using `sendfile(2)`, whose page-cache
//! references could let a later write change bytes already "sent"; so what
//! was written before the check is what the client gets.) What remains is
//! a rewrite that leaves the fingerprint unchanged (impossible without
//! privileges, short of the coarse-timestamp case above within one tick),
//! and whatever a client does with a body it receives truncated. Blobs
//! replaced by `rename` (as [`Snapshot::write_dir`](crate::Snapshot::write_dir)
//! does with whole snapshots) are never affected: the open handle keeps the
//! old inode.
//!
//! Directory swaps (a `blobs/` directory replaced by a symlink between the
//! per-request directory check and the open) cannot make wrong bytes pass
//! either: whatever file is opened is hashed against the digest, so at worst
//! bytes equal to a listed blob are read from elsewhere. The mirror binary
//! also confines itself (Landlock) to reading beneath the snapshot directory
//! where the kernel allows it.

use crate::error::{BlobProblem, BlobProblemKind, SnapshotError};
use crate::fingerprint::Fingerprint;
use crate::index::{IndexBuilder, ServedIndex};
use crate::manifest::{blob_path, Manifest, SnapshotDoc, SNAPSHOT_JSON, SNAPSHOT_SCHEMA};
use crate::sealed::{self, CopyError, SealedBlob, SealedCache, ZeroCopyUsage};
use crate::stream::{read_doc, scan_manifest, DocSummary};
use crate::{well_known, ALLOWED_SIGNERS_FILE, MANIFEST_FILE, SIGNATURE_FILE};
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, Verified, SNAPSHOT_NAMESPACE};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The two directories above every blob, relative to the snapshot root.
const BLOB_DIRS: [&str; 2] = ["blobs", "blobs/sha256"];

/// The outcome of the last full hash of one digest's file.
#[derive(Debug, Clone, Copy)]
struct Verdict {
    fingerprint: Fingerprint,
    /// `Err(actual)`: the file hashed to `actual`, not to its digest.
    outcome: Result<(), Sha256Digest>,
    /// The fingerprint was settled when recorded: a file with this exact
    /// fingerprint need not be hashed again.
    trusted: bool,
}

/// A directory's identity, to notice it being replaced (e.g. by a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirId {
    dev: u64,
    ino: u64,
}

/// A snapshot directory opened for serving; see the module documentation.
///
/// Invariant: the evidence documents held here passed the same consistency
/// rules as [`Snapshot::check`](crate::Snapshot::check) (blob bytes aside),
/// so every served entry names a listed blob, and every listed blob is
/// served somewhere. Blob bytes are vouched for only by
/// [`StoredSnapshot::open_blob`].
#[derive(Debug)]
pub struct StoredSnapshot {
    root: PathBuf,
    dirs: [DirId; 2],
    /// The snapshot ID: the SHA-256 of the `MANIFEST` bytes read at open.
    id: Sha256Digest,
    /// The digest `MANIFEST` lists for `SNAPSHOT.json`.
    doc_digest: Sha256Digest,
    /// `SNAPSHOT.json` without `served` and `upload_times`.
    summary: DocSummary,
    /// What is served where, and the listed blobs (its blob table).
    index: ServedIndex,
    signature: Option<String>,
    allowed_signers: Option<String>,
    /// The whole documents, read again only when asked for (see
    /// [`StoredSnapshot::manifest_bytes`]).
    lazy: Lazy,
    verdicts: Mutex<HashMap<Sha256Digest, Verdict>>,
    /// Verified bytes of small blobs (pages, metadata), with the fingerprint
    /// of the file they were read from; see [`StoredSnapshot::small_blob`].
    small: RwLock<SmallCache>,
    /// Sealed copies of larger blobs; see [`StoredSnapshot::sealed_blob`].
    sealed: SealedCache,
}

/// The evidence documents as a whole, read from disk on first use.
#[derive(Debug, Default)]
struct Lazy {
    manifest_bytes: OnceLock<Vec<u8>>,
    manifest: OnceLock<Manifest>,
    doc_bytes: OnceLock<Vec<u8>>,
    doc: OnceLock<SnapshotDoc>,
}

/// Blobs up to this size are kept in memory once verified.
pub const SMALL_BLOB_MAX: u64 = 256 * 1024;
/// The most memory the small-blob cache may hold; past it, blobs are read
/// from disk on every request.
pub(crate) const SMALL_CACHE_MAX: u64 = 256 * 1024 * 1024;

#[derive(Debug, Default)]
struct SmallCache {
    blobs: HashMap<Sha256Digest, (Fingerprint, Arc<[u8]>)>,
    bytes: u64,
}

/// A blob file, open and verified: reading `len` bytes from its current
/// position (the start) yields bytes whose SHA-256 is `digest`, as long as
/// the file is not modified (see the module's residual window).
#[derive(Debug)]
pub struct VerifiedBlob {
    file: File,
    len: u64,
    digest: Sha256Digest,
    hashed: bool,
}

impl VerifiedBlob {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn digest(&self) -> Sha256Digest {
        self.digest
    }

    /// Whether this call hashed the file (first use, or the file changed
    /// since it was last verified, or it changed too recently to trust).
    pub fn was_hashed(&self) -> bool {
        self.hashed
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open file, positioned at its start, and its verified length.
    pub fn into_parts(self) -> (File, u64) {
        (self.file, self.len)
    }
}

impl StoredSnapshot {
    /// Opens a snapshot directory for serving without reading any blob.
    ///
    /// Checks: `dir` is a directory (it may itself be a symlink; nothing
    /// inside it may be); `MANIFEST` parses strictly and lists
    /// `SNAPSHOT.json` with the digest of its bytes; `SNAPSHOT.json` parses;
    /// both agree by the rules of [`Snapshot::check`](crate::Snapshot::check)
    /// except that blob bytes are not read; `MANIFEST.sig` and
    /// `allowed_signers`, where present, are regular UTF-8 files and
    /// `allowed_signers` is the blob served at its well-known path (checked
    /// by digest); `blobs/` and `blobs/sha256/` are real directories.
    pub fn open(dir: &Path) -> Result<StoredSnapshot, SnapshotError> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(SnapshotError::NotRegular(dir.to_path_buf())),
            Err(e) => return Err(SnapshotError::io("open snapshot directory", dir, e)),
        }
        // One fixed path from here on: a symlinked `dir` re-pointed later
        // shows up as replaced blob directories, not as another snapshot.
        let root = fs::canonicalize(dir)
            .map_err(|e| SnapshotError::io("open snapshot directory", dir, e))?;

        // Both documents are read as streams, hashed as they are read, and
        // never held whole: at a million entries they are hundreds of MB.
        let manifest_path = root.join(MANIFEST_FILE);
        let scan = scan_manifest(open_required(&manifest_path)?)?;
        let doc_path = root.join(SNAPSHOT_JSON);
        let mut builder = IndexBuilder::new(scan.blobs);
        let read = read_doc(open_required(&doc_path)?, &mut builder)?;
        if read.digest != scan.doc {
            return Err(SnapshotError::SnapshotJsonDigest {
                listed: scan.doc,
                actual: read.digest,
            });
        }
        let summary = read.parsed?;
        let signature = read_optional_text(&root.join(SIGNATURE_FILE))?;
        let allowed_signers = read_optional_text(&root.join(ALLOWED_SIGNERS_FILE))?;

        let mut dirs = [DirId { dev: 0, ino: 0 }; 2];
        for (slot, sub) in dirs.iter_mut().zip(BLOB_DIRS) {
            let path = root.join(sub);
            *slot = dir_id(&path).map_err(|kind| match kind {
                BlobProblemKind::Symlink => SnapshotError::Symlink(path.clone()),
                BlobProblemKind::Missing => {
                    SnapshotError::io("open blob directory", &path, io::ErrorKind::NotFound.into())
                }
                BlobProblemKind::Unreadable(e) => {
                    SnapshotError::io("open blob directory", &path, io::Error::other(e))
                }
                _ => SnapshotError::NotRegular(path.clone()),
            })?;
        }

        // The rules of `check_structure` that need every entry.
        let index = builder.finish().map_err(SnapshotError::Inconsistent)?;
        if let Some(text) = &allowed_signers {
            let served = index
                .at(well_known::ALLOWED_SIGNERS)
                .and_then(|at| at.iter().next())
                .map(|(_, d)| d);
            if served != Some(Sha256Digest::of(text.as_bytes())) {
                return Err(SnapshotError::Inconsistent(format!(
                    "allowed_signers differs from the blob served at {}",
                    well_known::ALLOWED_SIGNERS
                )));
            }
        }
        Ok(StoredSnapshot {
            root,
            dirs,
            id: scan.id,
            doc_digest: scan.doc,
            summary,
            index,
            signature,
            allowed_signers,
            lazy: Lazy::default(),
            verdicts: Mutex::new(HashMap::new()),
            small: RwLock::new(SmallCache::default()),
            sealed: SealedCache::new(sealed::DEFAULT_ZERO_COPY_BUDGET),
        })
    }

    /// The snapshot ID: the SHA-256 of the `MANIFEST` bytes.
    pub fn id(&self) -> Sha256Digest {
        self.id
    }

    /// The digest `MANIFEST` lists for `SNAPSHOT.json`.
    pub fn doc_digest(&self) -> Sha256Digest {
        self.doc_digest
    }

    /// The snapshot directory, canonicalised.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What is served where: every served entry, held compactly and
    /// looked up by the hash of the path. Its blob table is the blobs `MANIFEST`
    /// lists (every one of them served somewhere, as `open` checked).
    pub fn served(&self) -> &ServedIndex {
        &self.index
    }

    /// `SNAPSHOT.json`'s `schema`, `builder` and `created`.
    pub fn doc_header(&self) -> (&str, &str, &str) {
        (
            &self.summary.schema,
            &self.summary.builder,
            &self.summary.created,
        )
    }

    /// The parsed `MANIFEST`. Like [`StoredSnapshot::manifest_bytes`], read
    /// on first use (at a million entries it is hundreds of MB in memory).
    pub fn manifest(&self) -> &Manifest {
        self.lazy
            .manifest
            .get_or_init(|| Manifest::parse(self.manifest_bytes()).unwrap_or_default())
    }

    /// The exact `MANIFEST` bytes (what the signature covers), read again
    /// from disk on first use and kept: only if they still hash to the
    /// snapshot ID, else empty. For tools and tests; the mirror serves the
    /// file itself, verified like a blob (see [`StoredSnapshot::open_blob`]
    /// with [`StoredSnapshot::id`]), and never holds it.
    pub fn manifest_bytes(&self) -> &[u8] {
        self.lazy
            .manifest_bytes
            .get_or_init(|| self.read_evidence(MANIFEST_FILE, &self.id))
    }

    /// The parsed `SNAPSHOT.json`, read on first use as
    /// [`StoredSnapshot::doc_bytes`] is; a document with this snapshot's
    /// schema, builder and creation time and nothing else when the file no
    /// longer has its listed digest. For tools and tests: the mirror uses
    /// [`StoredSnapshot::served`].
    pub fn doc(&self) -> &SnapshotDoc {
        self.lazy.doc.get_or_init(|| {
            SnapshotDoc::parse(self.doc_bytes()).unwrap_or_else(|_| SnapshotDoc {
                schema: SNAPSHOT_SCHEMA.to_string(),
                builder: self.summary.builder.clone(),
                created: self.summary.created.clone(),
                sources: self.summary.sources.clone(),
                served: Vec::new(),
                upload_times: Default::default(),
                selection: self.summary.selection.clone(),
                layer: self.summary.layer.clone(),
            })
        })
    }

    /// The exact `SNAPSHOT.json` bytes (what `MANIFEST` lists), read again
    /// on first use: only if they still have the listed digest, else empty.
    pub fn doc_bytes(&self) -> &[u8] {
        self.lazy
            .doc_bytes
            .get_or_init(|| self.read_evidence(SNAPSHOT_JSON, &self.doc_digest))
    }

    fn read_evidence(&self, name: &str, digest: &Sha256Digest) -> Vec<u8> {
        read_no_follow(&self.root.join(name))
            .ok()
            .filter(|bytes| Sha256Digest::of(bytes) == *digest)
            .unwrap_or_default()
    }

    pub fn signature(&self) -> Option<&str> {
        self.signature.as_deref()
    }

    /// For a layer: its parent and tombstones (see [`crate::chain`]).
    pub fn layer(&self) -> Option<&crate::Layer> {
        self.summary.layer.as_ref()
    }

    pub fn allowed_signers(&self) -> Option<&str> {
        self.allowed_signers.as_deref()
    }

    /// Number of blobs `MANIFEST` lists.
    pub fn blob_count(&self) -> usize {
        self.index.blob_count()
    }

    /// Whether `MANIFEST` lists a blob with this digest.
    pub fn has_blob(&self, digest: &Sha256Digest) -> bool {
        self.index.has_blob(digest)
    }

    /// Whether `digest` is that of `MANIFEST` (the ID) or of `SNAPSHOT.json`:
    /// those two files are served as blobs of their own digests, read and
    /// verified as every blob is (see [`StoredSnapshot::open_blob`]).
    fn is_evidence(&self, digest: &Sha256Digest) -> bool {
        *digest == self.id || *digest == self.doc_digest
    }

    /// The file of `digest`, relative to the root: `blobs/sha256/<hex>`, or
    /// `MANIFEST` or `SNAPSHOT.json` for theirs.
    fn rel_path(&self, digest: &Sha256Digest) -> String {
        if *digest == self.id {
            MANIFEST_FILE.to_string()
        } else if *digest == self.doc_digest {
            SNAPSHOT_JSON.to_string()
        } else {
            blob_path(digest)
        }
    }

    /// See [`Snapshot::verify_signature`](crate::Snapshot::verify_signature).
    pub fn verify_signature(&self, allowed: &AllowedSigners) -> Result<Verified, SnapshotError> {
        let sig = self.signature.as_deref().ok_or(SnapshotError::Unsigned)?;
        egress_signing::verify(sig, SNAPSHOT_NAMESPACE, self.manifest_bytes(), allowed)
            .map_err(SnapshotError::Signature)
    }

    /// Opens the blob `digest` and verifies it through the open handle (see
    /// the module documentation). On success the file is positioned at its
    /// start and holds exactly the verified bytes; any problem (not listed,
    /// missing, a symlink, not a regular file, corrupt, unreadable, changed
    /// while being hashed) is an error naming the blob, and nothing of it
    /// may be served.
    pub fn open_blob(&self, digest: &Sha256Digest) -> Result<VerifiedBlob, BlobProblem> {
        let problem = |kind| BlobProblem {
            path: self.rel_path(digest),
            kind,
        };
        let (mut file, fingerprint) = self.open_checked(digest)?;
        if let Some(v) = self.verdicts().get(digest) {
            if v.trusted && v.fingerprint == fingerprint {
                return match v.outcome {
                    Ok(()) => Ok(VerifiedBlob {
                        file,
                        len: fingerprint.size,
                        digest: *digest,
                        hashed: false,
                    }),
                    Err(actual) => Err(problem(BlobProblemKind::Corrupt { actual })),
                };
            }
        }

        // Step 3: hash the whole file through the handle. The lock is not
        // held meanwhile; two requests may hash one blob concurrently, and
        // both record the same verdict.
        let actual = hash_file(&mut file)
            .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
        self.record(digest, &file, fingerprint, actual)?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
        Ok(VerifiedBlob {
            file,
            len: fingerprint.size,
            digest: *digest,
            hashed: true,
        })
    }

    /// Steps 1 and 2 of the module documentation: the blob's file opened
    /// without following symlinks, below the very directories `open` saw,
    /// and `fstat`ed through the handle: a regular file, and its
    /// fingerprint.
    fn open_checked(&self, digest: &Sha256Digest) -> Result<(File, Fingerprint), BlobProblem> {
        let rel = self.rel_path(digest);
        let problem = |kind| BlobProblem {
            path: rel.clone(),
            kind,
        };
        if self.is_evidence(digest) {
            // MANIFEST or SNAPSHOT.json, served as a blob of its own digest.
            let file = open_no_follow(&self.root.join(&rel)).map_err(problem)?;
            let meta = file
                .metadata()
                .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
            return Ok((file, Fingerprint::of(&meta)));
        }
        if !self.index.has_blob(digest) {
            return Err(problem(BlobProblemKind::Unreadable(
                "not listed in MANIFEST".into(),
            )));
        }
        // Step 1: the directories are the ones `open` checked, then the file
        // itself is opened without following a symlink.
        for (sub, want) in BLOB_DIRS.iter().zip(&self.dirs) {
            match dir_id(&self.root.join(sub)) {
                Ok(id) if id == *want => {}
                Ok(_) => {
                    return Err(problem(BlobProblemKind::Unreadable(format!(
                        "{sub}/ was replaced after the snapshot was opened"
                    ))))
                }
                Err(kind) => {
                    return Err(problem(BlobProblemKind::Unreadable(format!(
                        "{sub}/ is no longer a directory ({})",
                        BlobProblem {
                            path: (*sub).to_string(),
                            kind
                        }
                    ))))
                }
            }
        }
        let path = self.root.join(&rel);
        // Step 2 (the regular-file check is open_no_follow's): fstat the
        // handle we will serve from.
        let file = open_no_follow(&path).map_err(problem)?;
        let meta = file
            .metadata()
            .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
        Ok((file, Fingerprint::of(&meta)))
    }

    /// Records the outcome of hashing `file` (opened with `fingerprint`) to
    /// `actual`: the file is `fstat`ed again (a change while it was read
    /// fails the request, and records nothing), then the verdict is kept
    /// for later requests. `Err` unless `actual` is `digest`.
    fn record(
        &self,
        digest: &Sha256Digest,
        file: &File,
        fingerprint: Fingerprint,
        actual: Sha256Digest,
    ) -> Result<(), BlobProblem> {
        let problem = |kind| BlobProblem {
            path: self.rel_path(digest),
            kind,
        };
        let after = file
            .metadata()
            .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
        if Fingerprint::of(&after) != fingerprint {
            return Err(problem(BlobProblemKind::Unreadable(
                "the file changed while it was being verified".into(),
            )));
        }
        let outcome = if actual == *digest {
            Ok(())
        } else {
            Err(actual)
        };
        self.verdicts().insert(
            *digest,
            Verdict {
                fingerprint,
                outcome,
                trusted: fingerprint.settled_at(unix_now()),
            },
        );
        outcome.map_err(|actual| problem(BlobProblemKind::Corrupt { actual }))
    }

    /// A sealed copy of the blob `digest`, to be served zero-copy, or
    /// `Ok(None)` when there is none to be had: zero-copy is off (a budget
    /// of 0, or not Linux), the blob does not fit the budget now, or the
    /// memfd could not be made. Then serve it with
    /// [`StoredSnapshot::open_blob`] instead. Meant for blobs larger than
    /// [`SMALL_BLOB_MAX`].
    ///
    /// Invariant: a returned copy holds bytes that hashed to `digest` and
    /// that the kernel will never let change (see the `sealed` module).
    /// The file on disk is still watched: each call `lstat`s the blob's
    /// path, and a copy is reused only while the file has the (settled)
    /// fingerprint it was verified under. Otherwise the file is opened and
    /// checked as in [`StoredSnapshot::open_blob`] and read **once**, hashed
    /// while it is copied into a fresh memfd; a file that does not hash to
    /// `digest` is an error ([`BlobProblemKind::Corrupt`]), exactly as from
    /// `open_blob`, and nothing of it is served. A copy made from a file
    /// whose fingerprint is not settled yet (see [`RACY_SECS`](crate::RACY_SECS)) serves this
    /// request only and is not cached.
    pub fn sealed_blob(
        &self,
        digest: &Sha256Digest,
    ) -> Result<Option<Arc<SealedBlob>>, BlobProblem> {
        if !cfg!(target_os = "linux") || self.sealed.budget() == 0 {
            return Ok(None);
        }
        if let Ok(meta) = fs::symlink_metadata(self.root.join(self.rel_path(digest))) {
            if meta.is_file() {
                if let Some(blob) = self.sealed.get(digest, &Fingerprint::of(&meta)) {
                    return Ok(Some(blob));
                }
            }
        }
        let (mut file, fingerprint) = self.open_checked(digest)?;
        let Some(charge) = self.sealed.charge(fingerprint.size) else {
            return Ok(None);
        };
        let problem = |kind| BlobProblem {
            path: self.rel_path(digest),
            kind,
        };
        let (memfd, actual) = match sealed::copy(&mut file, fingerprint.size, digest) {
            Ok(copied) => copied,
            Err(CopyError::Source(e)) => {
                return Err(problem(BlobProblemKind::Unreadable(e.to_string())))
            }
            Err(CopyError::Length(_)) => {
                return Err(problem(BlobProblemKind::Unreadable(
                    "the file changed while it was being verified".into(),
                )))
            }
            Err(CopyError::Memory(_)) => return Ok(None),
        };
        // Sealed only if the bytes written are the blob: a corrupt file is
        // refused here, before any copy of it can be served.
        self.record(digest, &file, fingerprint, actual)?;
        let Ok(blob) = sealed::seal(memfd, fingerprint.size, *digest, Some(charge)) else {
            return Ok(None);
        };
        let blob = Arc::new(blob);
        if fingerprint.settled_at(unix_now()) {
            self.sealed.insert(*digest, fingerprint, Arc::clone(&blob));
        }
        Ok(Some(blob))
    }

    /// Sets the memory budget for sealed copies (see
    /// [`StoredSnapshot::sealed_blob`]); 0 (the default,
    /// [`DEFAULT_ZERO_COPY_BUDGET`](crate::DEFAULT_ZERO_COPY_BUDGET)) turns
    /// zero-copy serving off.
    /// Cached copies over the new budget are dropped at once; copies still
    /// being sent are released when they are done.
    pub fn set_zero_copy_budget(&self, bytes: u64) {
        self.sealed.set_budget(bytes);
    }

    /// The budget for sealed copies and what they hold now.
    pub fn zero_copy_usage(&self) -> ZeroCopyUsage {
        self.sealed.usage()
    }

    /// The verified bytes of a small blob (at most [`SMALL_BLOB_MAX`]), or
    /// `Ok(None)` for a larger one (serve it with [`StoredSnapshot::open_blob`]).
    ///
    /// Invariant: the bytes returned are always bytes that hashed to
    /// `digest`: they are the ones read through a verified handle and kept.
    /// The file on disk is still watched: each call `lstat`s the blob's path
    /// (one system call) and compares the fingerprint with the one the bytes
    /// were read under. Any difference (a rewrite, a flipped byte, a symlink,
    /// a replaced directory: all change the inode, size, mtime or ctime)
    /// sends the request down the full path of [`StoredSnapshot::open_blob`],
    /// which re-verifies and fails loudly on corruption.
    pub fn small_blob(&self, digest: &Sha256Digest) -> Result<Option<Arc<[u8]>>, BlobProblem> {
        if let Some(bytes) = self.cached_small_blob(digest) {
            return Ok(Some(bytes));
        }
        if let Ok(meta) = fs::symlink_metadata(self.root.join(self.rel_path(digest))) {
            if meta.is_file() && meta.len() > SMALL_BLOB_MAX {
                return Ok(None);
            }
        }
        let blob = self.open_blob(digest)?;
        if blob.len() > SMALL_BLOB_MAX {
            return Ok(None);
        }
        let trusted = self
            .verdicts()
            .get(digest)
            .is_some_and(|v| v.trusted && v.outcome.is_ok());
        let fingerprint = blob.file().metadata().ok().map(|m| Fingerprint::of(&m));
        let (mut file, len) = blob.into_parts();
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        let problem = |kind| BlobProblem {
            path: self.rel_path(digest),
            kind,
        };
        (&mut file)
            .take(len)
            .read_to_end(&mut bytes)
            .map_err(|e| problem(BlobProblemKind::Unreadable(e.to_string())))?;
        // The bytes just read must be the verified ones: same length, and the
        // handle unchanged since verification.
        if bytes.len() as u64 != len || !self.unchanged_since_verified(digest, &file) {
            return Err(problem(BlobProblemKind::Unreadable(
                "the file changed while it was being read".into(),
            )));
        }
        if Sha256Digest::of(&bytes) != *digest {
            return Err(problem(BlobProblemKind::Corrupt {
                actual: Sha256Digest::of(&bytes),
            }));
        }
        let bytes: Arc<[u8]> = bytes.into();
        if let (true, Some(fp)) = (trusted, fingerprint) {
            let mut cache = self.small.write().unwrap_or_else(|e| e.into_inner());
            if cache.bytes + len <= SMALL_CACHE_MAX {
                if let Some((_, old)) = cache.blobs.insert(*digest, (fp, Arc::clone(&bytes))) {
                    cache.bytes -= old.len() as u64;
                }
                cache.bytes += len;
            }
        }
        Ok(Some(bytes))
    }

    /// The verified bytes of a small blob when they are already in memory
    /// and its file has not changed since (one `lstat`, as in
    /// [`StoredSnapshot::small_blob`]); `None` otherwise, without reading or
    /// verifying anything, so a caller that must not block can try it first.
    pub fn cached_small_blob(&self, digest: &Sha256Digest) -> Option<Arc<[u8]>> {
        let meta = fs::symlink_metadata(self.root.join(self.rel_path(digest))).ok()?;
        if !meta.is_file() || meta.len() > SMALL_BLOB_MAX {
            return None;
        }
        let now = Fingerprint::of(&meta);
        let cache = self.small.read().unwrap_or_else(|e| e.into_inner());
        let (fp, bytes) = cache.blobs.get(digest)?;
        (*fp == now).then(|| Arc::clone(bytes))
    }

    /// Whether `file` (a handle from [`StoredSnapshot::open_blob`] for
    /// `digest`) still has the fingerprint recorded when `digest` was last
    /// verified as correct. Called after copying all but the last byte of a
    /// blob to a client (see the module's residual window). `false` when
    /// `fstat` fails, when the file changed, and also when another request
    /// has since verified a different file for the digest (a replacement):
    /// in doubt, the answer is no.
    pub fn unchanged_since_verified(&self, digest: &Sha256Digest, file: &File) -> bool {
        let Ok(meta) = file.metadata() else {
            return false;
        };
        let now = Fingerprint::of(&meta);
        self.verdicts()
            .get(digest)
            .is_some_and(|v| v.outcome.is_ok() && v.fingerprint == now)
    }

    /// The record is a plain map updated with single inserts, consistent
    /// even if a holder panicked, so poisoning is ignored.
    fn verdicts(&self) -> MutexGuard<'_, HashMap<Sha256Digest, Verdict>> {
        self.verdicts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// [`crate::open_no_follow`], its failure as a blob problem.
fn open_no_follow(path: &Path) -> Result<File, BlobProblemKind> {
    crate::open_no_follow(path).map_err(BlobProblemKind::from)
}

/// [`crate::read_no_follow`], its failure as a blob problem.
fn read_no_follow(path: &Path) -> Result<Vec<u8>, BlobProblemKind> {
    crate::read_no_follow(path).map_err(BlobProblemKind::from)
}

fn evidence_error(path: &Path, kind: BlobProblemKind) -> SnapshotError {
    match kind {
        BlobProblemKind::Missing => SnapshotError::io("read", path, io::ErrorKind::NotFound.into()),
        BlobProblemKind::Symlink => SnapshotError::Symlink(path.to_path_buf()),
        BlobProblemKind::NotAFile => SnapshotError::NotRegular(path.to_path_buf()),
        BlobProblemKind::Unreadable(e) => SnapshotError::io("read", path, io::Error::other(e)),
        BlobProblemKind::Corrupt { .. } => SnapshotError::NotRegular(path.to_path_buf()),
    }
}

fn open_required(path: &Path) -> Result<File, SnapshotError> {
    open_no_follow(path).map_err(|kind| evidence_error(path, kind))
}

/// `None` when absent; present but a symlink, not a file or not UTF-8 is an
/// error.
fn read_optional_text(path: &Path) -> Result<Option<String>, SnapshotError> {
    match read_no_follow(path) {
        Err(BlobProblemKind::Missing) => Ok(None),
        Err(kind) => Err(evidence_error(path, kind)),
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SnapshotError::NotUtf8(path.to_path_buf())),
    }
}

/// A real directory (not a symlink to one) and its identity.
fn dir_id(path: &Path) -> Result<DirId, BlobProblemKind> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(BlobProblemKind::Symlink),
        Ok(m) if m.is_dir() => Ok(DirId {
            dev: m.dev(),
            ino: m.ino(),
        }),
        Ok(_) => Err(BlobProblemKind::NotAFile),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(BlobProblemKind::Missing),
        Err(e) => Err(BlobProblemKind::Unreadable(e.to_string())),
    }
}

fn hash_file(file: &mut File) -> io::Result<Sha256Digest> {
    let mut hasher = Sha256Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(hasher.finish()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
