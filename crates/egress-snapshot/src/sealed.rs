//! Sealed copies of verified blobs, so that they can be served zero-copy.
//!
//! A blob file in the store can be rewritten at any time, so bytes sent
//! from it with `sendfile(2)` are not safe: the socket keeps referencing the
//! file's page-cache pages after the call returns, and a write in between
//! changes bytes already vouched for. A sealed copy closes that for good:
//!
//! 1. the store file is read **once**; every chunk is hashed and written
//!    into a new anonymous file (`memfd_create` with `MFD_CLOEXEC |
//!    MFD_ALLOW_SEALING`: no name in any filesystem, private to this process,
//!    not inherited by anything it runs);
//! 2. only if the bytes hash to the blob's digest is the copy sealed with
//!    `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL`;
//! 3. only the sealed copy is ever served.
//!
//! **Invariant:** once `F_SEAL_WRITE` and `F_SEAL_SHRINK` are set, the
//! kernel refuses every `write`, `truncate`, `fallocate` and writable
//! shared `mmap` of the memfd, through any descriptor and from any process,
//! and `F_SEAL_SEAL` means no seal can be changed again. So every page a
//! socket still references after `sendfile` returns holds exactly the bytes
//! that were hashed, for as long as anyone references it. (Between the write
//! and the seal, only code able to open `/proc/<pid>/fd/` of this process,
//! i.e. code that could `ptrace` it anyway, could reach the memfd.)
//!
//! The copies live in RAM (or swap), so they are bounded by a budget in
//! bytes (none are made unless one is set: [`DEFAULT_ZERO_COPY_BUDGET`] is
//! 0): every live copy is
//! charged against it from before it is written until its last reference
//! is dropped, whether it is cached or only still being sent. Cached copies
//! are dropped least recently used first to make room; a copy that cannot
//! be charged (larger than the budget, or the budget held by copies still
//! being sent) is not made, and the caller serves the blob the old way.
//! At most [`MAX_SEALED_COPIES`] copies are cached, each one holding a file
//! descriptor.

use crate::fingerprint::Fingerprint;
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The default memory budget for sealed copies: 0, zero-copy serving off.
/// The default is the verified chunk copy (see the store's module
/// documentation): it shares the page cache and holds no second copy of
/// each blob. A budget (the mirror's `--zero-copy-budget`) turns sealed
/// copies on where server CPU per byte matters more than memory.
pub const DEFAULT_ZERO_COPY_BUDGET: u64 = 0;
/// The most sealed copies kept at once (each holds a file descriptor).
pub const MAX_SEALED_COPIES: usize = 1024;
/// Read size while copying a blob into its memfd.
const CHUNK: usize = 1024 * 1024;

/// A verified blob in a sealed anonymous file: its bytes hash to
/// [`SealedBlob::digest`] and the kernel will never let them change (see the
/// module documentation). Serve it with `sendfile(2)` from [`AsFd`].
#[derive(Debug)]
pub struct SealedBlob {
    file: File,
    len: u64,
    digest: Sha256Digest,
    /// Returned to the budget when the last reference is dropped.
    _charge: Option<Charge>,
}

impl SealedBlob {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn digest(&self) -> Sha256Digest {
        self.digest
    }

    /// The sealed memfd. Reading it at an offset (`read_at`) is fine;
    /// anything that would change it fails with `EPERM`.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl AsFd for SealedBlob {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// Bytes of the budget held by one sealed copy, from before it is written
/// until it is dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    charged: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.charged.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// What the sealed copies hold now; see [`crate::StoredSnapshot::zero_copy_usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZeroCopyUsage {
    /// The budget in bytes; 0 means zero-copy serving is off.
    pub budget: u64,
    /// Sealed copies cached for later requests.
    pub cached_blobs: usize,
    /// Bytes of every live sealed copy: cached ones and ones still being
    /// sent. Never more than `budget`.
    pub charged_bytes: u64,
}

/// Why a blob could not be copied into a memfd.
#[derive(Debug)]
pub(crate) enum CopyError {
    /// Reading the store file failed.
    Source(io::Error),
    /// The store file did not have the expected length.
    Length(u64),
    /// The memfd could not be made, written or sealed (no `memfd_create`,
    /// a seccomp filter, out of memory or descriptors): serve another way.
    Memory(io::Error),
}

/// Reads `src` to its end once, hashing every byte and writing it into a
/// new memfd. Returns the unsealed memfd and the digest of what was
/// written, which must be exactly `len` bytes. The caller seals it with
/// [`seal`] only if that digest is the right one.
pub(crate) fn copy(
    src: &mut impl Read,
    len: u64,
    digest: &Sha256Digest,
) -> Result<(File, Sha256Digest), CopyError> {
    let mut memfd = memfd(digest).map_err(CopyError::Memory)?;
    let mut hasher = Sha256Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut copied = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Source(e)),
        };
        hasher.update(&buf[..n]);
        io::Write::write_all(&mut memfd, &buf[..n]).map_err(CopyError::Memory)?;
        copied += n as u64;
        if copied > len {
            return Err(CopyError::Length(copied));
        }
    }
    if copied != len {
        return Err(CopyError::Length(copied));
    }
    Ok((memfd, hasher.finish()))
}

/// Seals a memfd filled by [`copy`] whose digest was checked: from here on
/// its bytes can never change (see the module documentation).
pub(crate) fn seal(
    file: File,
    len: u64,
    digest: Sha256Digest,
    charge: Option<Charge>,
) -> io::Result<SealedBlob> {
    add_seals(&file)?;
    Ok(SealedBlob {
        file,
        len,
        digest,
        _charge: charge,
    })
}

/// Checks that this process can make sealed copies: a few bytes are copied
/// into a memfd and sealed, and a write to the sealed memfd must then fail
/// with `EPERM`. The sealed probe is returned, e.g. to check that it can be
/// sent with `sendfile`. An error says what is missing (no `memfd_create`
/// on this system or under this seccomp filter, no sealing, ...).
pub fn probe() -> io::Result<SealedBlob> {
    let bytes = b"egress-mirror zero-copy probe\n";
    let digest = Sha256Digest::of(bytes);
    let (file, actual) =
        copy(&mut &bytes[..], bytes.len() as u64, &digest).map_err(|e| match e {
            CopyError::Source(e) | CopyError::Memory(e) => e,
            CopyError::Length(n) => io::Error::other(format!("copied {n} bytes")),
        })?;
    if actual != digest {
        return Err(io::Error::other("the copy does not hash to its digest"));
    }
    let sealed = seal(file, bytes.len() as u64, digest, None)?;
    match io::Write::write(&mut sealed.file(), b"x") {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(sealed),
        Err(e) => Err(io::Error::other(format!(
            "a write to a sealed memfd failed with {e}, not EPERM"
        ))),
        Ok(_) => Err(io::Error::other("a sealed memfd accepted a write")),
    }
}

#[cfg(target_os = "linux")]
fn memfd(digest: &Sha256Digest) -> io::Result<File> {
    use rustix::fs::{memfd_create, MemfdFlags};
    // The name only shows in /proc/<pid>/fd and /proc/<pid>/maps.
    let name = format!("egress-blob-{}", &digest.to_hex()[..16]);
    let fd = memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    Ok(File::from(fd))
}

#[cfg(not(target_os = "linux"))]
fn memfd(_digest: &Sha256Digest) -> io::Result<File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "sealed copies need Linux memfds",
    ))
}

#[cfg(target_os = "linux")]
fn add_seals(file: &File) -> io::Result<()> {
    use rustix::fs::{fcntl_add_seals, SealFlags};
    fcntl_add_seals(
        file,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn add_seals(_file: &File) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The sealed copies of a store: a least-recently-used map bounded by a
/// memory budget (see the module documentation).
#[derive(Debug)]
pub(crate) struct SealedCache {
    lru: Mutex<Lru>,
    /// Bytes of every live copy, cached or not. Only ever raised under the
    /// `lru` lock, after checking the budget; lowered by [`Charge::drop`]
    /// without it (so dropping a copy under the lock cannot deadlock).
    charged: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Lru {
    budget: u64,
    clock: u64,
    entries: HashMap<Sha256Digest, Entry>,
}

#[derive(Debug)]
struct Entry {
    /// The store file's fingerprint when the copy was verified; trusted
    /// (settled) or the copy would not have been cached.
    fingerprint: Fingerprint,
    last_used: u64,
    blob: Arc<SealedBlob>,
}

impl Lru {
    /// Drops the least recently used entry that is `evictable`; `false` if
    /// there is none.
    fn evict_one(&mut self, evictable: impl Fn(&Entry) -> bool) -> bool {
        let oldest = self
            .entries
            .iter()
            .filter(|(_, e)| evictable(e))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(d, _)| *d);
        oldest.is_some_and(|d| self.entries.remove(&d).is_some())
    }
}

impl SealedCache {
    pub(crate) fn new(budget: u64) -> Self {
        SealedCache {
            lru: Mutex::new(Lru {
                budget,
                clock: 0,
                entries: HashMap::new(),
            }),
            charged: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The map is updated with single inserts and removals, consistent even
    /// if a holder panicked, so poisoning is ignored.
    fn lru(&self) -> MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn budget(&self) -> u64 {
        self.lru().budget
    }

    /// Sets the budget and drops cached copies down to it (copies still
    /// being sent stay charged until they are done).
    pub(crate) fn set_budget(&self, budget: u64) {
        let mut lru = self.lru();
        lru.budget = budget;
        while self.charged.load(Ordering::SeqCst) > budget && lru.evict_one(|_| true) {}
    }

    pub(crate) fn usage(&self) -> ZeroCopyUsage {
        let lru = self.lru();
        ZeroCopyUsage {
            budget: lru.budget,
            cached_blobs: lru.entries.len(),
            charged_bytes: self.charged.load(Ordering::SeqCst),
        }
    }

    /// The cached copy of `digest` if the store file still has the
    /// fingerprint it was verified under. A copy whose file changed is
    /// dropped: the caller re-verifies the file.
    pub(crate) fn get(&self, digest: &Sha256Digest, now: &Fingerprint) -> Option<Arc<SealedBlob>> {
        let mut lru = self.lru();
        lru.clock += 1;
        let clock = lru.clock;
        let entry = lru.entries.get_mut(digest)?;
        if entry.fingerprint == *now {
            entry.last_used = clock;
            return Some(Arc::clone(&entry.blob));
        }
        lru.entries.remove(digest);
        None
    }

    /// Charges `bytes` against the budget for a new copy, dropping cached
    /// copies that nothing else holds, least recently used first, to make
    /// room. `None` when the budget cannot take it.
    pub(crate) fn charge(&self, bytes: u64) -> Option<Charge> {
        let mut lru = self.lru();
        if bytes > lru.budget {
            return None;
        }
        // A copy only the cache holds is freed at once when evicted; one
        // still being sent would stay charged, so evicting it frees nothing.
        while self.charged.load(Ordering::SeqCst) + bytes > lru.budget {
            if !lru.evict_one(|e| Arc::strong_count(&e.blob) == 1) {
                return None;
            }
        }
        self.charged.fetch_add(bytes, Ordering::SeqCst);
        Some(Charge {
            charged: Arc::clone(&self.charged),
            bytes,
        })
    }

    /// Caches a copy verified under `fingerprint` (which must be settled).
    pub(crate) fn insert(
        &self,
        digest: Sha256Digest,
        fingerprint: Fingerprint,
        blob: Arc<SealedBlob>,
    ) {
        let mut lru = self.lru();
        if lru.budget == 0 {
            return;
        }
        lru.clock += 1;
        let last_used = lru.clock;
        lru.entries.insert(
            digest,
            Entry {
                fingerprint,
                last_used,
                blob,
            },
        );
        while lru.entries.len() > MAX_SEALED_COPIES && lru.evict_one(|_| true) {}
    }
}
