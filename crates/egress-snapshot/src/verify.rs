//! Verifying a snapshot directory offline (`egress-conformance snapshot
//! verify DIR`): what `ssh-keygen -Y verify` and `sha256sum -c MANIFEST`
//! check, in our code, in parallel, naming every missing, extra or
//! corrupted blob rather than stopping at the first.
//!
//! Nothing in the directory is followed through a symlink: a snapshot holds
//! regular files only, and a link could make a good-looking blob path read
//! bytes from anywhere.

use crate::index::DigestSet;
use crate::manifest::{blob_path, is_safe_relative_path, SNAPSHOT_JSON};
use crate::stream::{lower_hex, scan_doc, DocFail};
use crate::{human_size as human, pool, Manifest, SnapshotDoc, MANIFEST_FILE, SIGNATURE_FILE};
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, SNAPSHOT_NAMESPACE};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a directory could not be verified at all (a snapshot that can be
/// read but is wrong is a [`Verification`] with problems instead).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{}: {cause}", .path.display())]
    Unreadable { path: PathBuf, cause: io::Error },
    /// `MANIFEST` is missing or unreadable.
    #[error("{} {why}; not a snapshot directory", .path.display())]
    NoManifest { path: PathBuf, why: String },
    #[error("cannot list {}: {cause}", .path.display())]
    CannotList { path: PathBuf, cause: io::Error },
}

/// What [`SnapshotDir::verify`] found.
#[derive(Debug)]
pub struct Verification {
    /// The snapshot ID (the sha256 of `MANIFEST`), when it could be read.
    pub id: Option<Sha256Digest>,
    /// Everything wrong, sorted; empty when the snapshot verified.
    pub problems: Vec<String>,
    /// What was checked and how fast, one line each.
    pub notes: Vec<String>,
    /// For a layer: why its chain does not hold, if it does not (also in
    /// `problems`).
    pub chain: Option<crate::chain::ChainProblem>,
}

impl Verification {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn new(id: Option<Sha256Digest>, problems: Vec<String>, notes: Vec<String>) -> Self {
        Self {
            id,
            problems,
            notes,
            chain: None,
        }
    }
}

/// A directory to verify as a snapshot.
pub struct SnapshotDir(PathBuf);

enum ReadFail {
    Missing,
    Symlink,
    NotAFile,
    Io(io::Error),
}

impl ReadFail {
    fn describe(&self) -> String {
        match self {
            Self::Missing => "is missing".into(),
            Self::Symlink => "is a symlink (refused: a snapshot holds regular files only)".into(),
            Self::NotAFile => "is not a regular file".into(),
            Self::Io(e) => format!("is unreadable ({e})"),
        }
    }
}

/// Opens a regular file without following a symlink at its last component:
/// `lstat`, open, and check that the opened file is the one `lstat` saw.
fn open_no_follow(path: &Path) -> Result<File, ReadFail> {
    let before = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadFail::Missing),
        Err(e) => return Err(ReadFail::Io(e)),
    };
    if before.file_type().is_symlink() {
        return Err(ReadFail::Symlink);
    }
    if !before.is_file() {
        return Err(ReadFail::NotAFile);
    }
    let file = File::open(path).map_err(ReadFail::Io)?;
    let after = file.metadata().map_err(ReadFail::Io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (before.dev(), before.ino()) != (after.dev(), after.ino()) {
            return Err(ReadFail::Symlink);
        }
    }
    if !after.is_file() {
        return Err(ReadFail::NotAFile);
    }
    Ok(file)
}

fn read_no_follow(path: &Path) -> Result<Vec<u8>, ReadFail> {
    let mut bytes = Vec::new();
    open_no_follow(path)?
        .read_to_end(&mut bytes)
        .map_err(ReadFail::Io)?;
    Ok(bytes)
}

/// Streams a file through SHA-256; returns the digest and the length. One
/// `open` (`O_NOFOLLOW`) and one `fstat`, as `sha256sum` spends: at a
/// million small blobs the system calls around the hashing are the cost.
fn hash_file(path: &Path) -> Result<(Sha256Digest, u64), ReadFail> {
    let mut file = crate::open_no_follow(path).map_err(|e| match e {
        crate::NoFollowError::Missing => ReadFail::Missing,
        crate::NoFollowError::Symlink => ReadFail::Symlink,
        crate::NoFollowError::NotAFile => ReadFail::NotAFile,
        crate::NoFollowError::Io(e) => ReadFail::Io(e),
    })?;
    let size = file.metadata().map_err(ReadFail::Io)?.len();
    let mut hasher = Sha256Hasher::new();
    // Large reads keep the hashing, not the syscalls, the bottleneck; small
    // files get a small buffer.
    let cap = usize::try_from(size.clamp(4096, 1 << 20)).unwrap_or(1 << 20);
    let mut buf = vec![0u8; cap];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadFail::Io(e)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hasher.finish(), len))
}

/// What `MANIFEST` lists, without a map of its paths: the digest it lists
/// for `SNAPSHOT.json`, the blobs listed at their own path
/// (`blobs/sha256/<hex>`), sorted, and a problem for every other entry.
#[derive(Debug, Default)]
struct Listing {
    doc: Option<Sha256Digest>,
    blobs: Vec<Sha256Digest>,
    problems: Vec<String>,
}

impl Listing {
    fn add(&mut self, path: &str, digest: Sha256Digest) {
        if path == SNAPSHOT_JSON {
            self.doc = Some(digest);
        } else if path.strip_prefix("blobs/sha256/").and_then(lower_hex) == Some(digest) {
            // That is, `path == blob_path(&digest)`.
            self.blobs.push(digest);
        } else {
            self.problems.push(format!(
                "MANIFEST lists {path}, which is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
            ));
        }
    }

    /// `MANIFEST`'s bytes read by the rules of [`Manifest::parse`], which
    /// names what is wrong with them when they break one.
    fn of(bytes: &[u8]) -> Result<Self, crate::ManifestError> {
        match Self::scan(bytes) {
            Some(listing) => Ok(listing),
            None => {
                let manifest = Manifest::parse(bytes)?;
                let mut listing = Self::default();
                for (path, digest) in manifest.entries() {
                    listing.add(path, digest);
                }
                Ok(listing)
            }
        }
    }

    /// [`Manifest::parse`]'s rules without its map (a `String` per entry);
    /// `None` for anything it might refuse.
    fn scan(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?;
        if !text.is_empty() && !text.ends_with('\n') {
            return None;
        }
        let mut listing = Self::default();
        let mut last: Option<&str> = None;
        for line in text.lines() {
            let (hex, path) = line.split_once("  ")?;
            let digest = match lower_hex(hex) {
                Some(d) => d,
                None => Sha256Digest::from_hex(hex).ok()?,
            };
            if !is_safe_relative_path(path) || last.is_some_and(|prev| prev >= path) {
                return None;
            }
            last = Some(path);
            listing.add(path, digest);
        }
        // Blob paths sort as their digests do; this only makes sure.
        listing.blobs.sort_unstable();
        listing.blobs.dedup();
        Some(listing)
    }
}

/// The files below `blobs/`, without following links.
#[derive(Debug, Default)]
struct OnDisk {
    /// Regular files at `blobs/sha256/<64 lower-case hex>`.
    blobs: Vec<Sha256Digest>,
    /// Other entries at such paths (symlinks, not regular files): already
    /// named as problems, and not missing.
    refused: Vec<Sha256Digest>,
    /// Every other regular file (no listed blob is at such a path).
    others: Vec<String>,
}

/// Every entry below `rel` (relative to `root`), without following links:
/// regular files into `disk`; anything else named in `problems`.
fn walk(root: &Path, rel: &str, disk: &mut OnDisk, problems: &mut Vec<String>) -> io::Result<()> {
    let in_store = rel == "blobs/sha256";
    for entry in fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let digest = if in_store { lower_hex(&name) } else { None };
        let path = || format!("{rel}/{name}");
        // The type from the directory entry itself: no `lstat` per file.
        let meta = entry.file_type()?;
        if meta.is_symlink() {
            problems.push(format!(
                "{} is a symlink (refused: a snapshot holds regular files only)",
                path()
            ));
            disk.refused.extend(digest);
        } else if meta.is_dir() {
            walk(root, &path(), disk, problems)?;
        } else if meta.is_file() {
            // The size is read when the file is opened to be hashed.
            match digest {
                Some(d) => disk.blobs.push(d),
                None => disk.others.push(path()),
            }
        } else {
            problems.push(format!("{} is not a regular file", path()));
            disk.refused.extend(digest);
        }
    }
    Ok(())
}

/// The problems of `SNAPSHOT.json` at `path`: unreadable, not the bytes
/// `MANIFEST` lists (`listed`), not a document (in the words of
/// [`SnapshotDoc::parse`]), or serving blobs `MANIFEST` does not list.
fn check_doc(path: &Path, listed: Sha256Digest, blobs: &DigestSet<'_>) -> Vec<String> {
    let file = match open_no_follow(path) {
        Ok(f) => f,
        Err(f) => return vec![format!("SNAPSHOT.json {}", f.describe())],
    };
    let unlisted = |path: &str, digest: &Sha256Digest| {
        format!("SNAPSHOT.json serves {path} from blob {digest}, which MANIFEST does not list")
    };
    let mut problems = Vec::new();
    let (actual, parsed) = scan_doc(file, &mut |path, _, digest| {
        if !blobs.contains(digest) {
            problems.push(unlisted(path, digest));
        }
    });
    match parsed {
        Err(DocFail::Io(e)) => vec![format!("SNAPSHOT.json {}", ReadFail::Io(e).describe())],
        _ if actual != listed => vec![format!(
            "SNAPSHOT.json is corrupt: its sha256 is {actual}, MANIFEST lists {listed}"
        )],
        Ok(_) => problems,
        // Refused: the whole document, parsed as `SnapshotDoc::parse` does,
        // for its exact words (only ever for a document that is wrong).
        Err(DocFail::Parse(_)) => match read_no_follow(path) {
            Err(f) => vec![format!("SNAPSHOT.json {}", f.describe())],
            Ok(bytes) if Sha256Digest::of(&bytes) != listed => vec![format!(
                "SNAPSHOT.json is corrupt: its sha256 is {}, MANIFEST lists {listed}",
                Sha256Digest::of(&bytes)
            )],
            Ok(bytes) => match SnapshotDoc::parse(&bytes) {
                Err(e) => vec![format!("SNAPSHOT.json does not parse: {e}")],
                Ok(doc) => doc
                    .served
                    .iter()
                    .filter(|e| !blobs.contains(&e.sha256))
                    .map(|e| unlisted(&e.path, &e.sha256))
                    .collect(),
            },
        },
    }
}

impl SnapshotDir {
    /// `dir`, once it is known to be a directory.
    pub fn open(dir: &Path) -> Result<Self, VerifyError> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(Self(dir.to_path_buf())),
            Ok(_) => Err(VerifyError::NotADirectory(dir.to_path_buf())),
            Err(cause) => Err(VerifyError::Unreadable {
                path: dir.to_path_buf(),
                cause,
            }),
        }
    }

    /// Checks `MANIFEST`, its signature against `signers` (not checked
    /// without them: a snapshot's own allowed_signers proves nothing),
    /// `SNAPSHOT.json` and every blob, hashing on `jobs` threads.
    pub fn verify(
        &self,
        signers: Option<&AllowedSigners>,
        jobs: usize,
    ) -> Result<Verification, VerifyError> {
        let started = Instant::now();
        let dir = &self.0;
        let manifest_path = dir.join(MANIFEST_FILE);
        let manifest_bytes = match read_no_follow(&manifest_path) {
            Ok(b) => b,
            Err(f @ (ReadFail::Missing | ReadFail::Io(_))) => {
                return Err(VerifyError::NoManifest {
                    path: manifest_path,
                    why: f.describe(),
                })
            }
            Err(f) => {
                return Ok(Verification::new(
                    None,
                    vec![format!("MANIFEST {}", f.describe())],
                    Vec::new(),
                ))
            }
        };
        let id = Sha256Digest::of(&manifest_bytes);
        let listing = match Listing::of(&manifest_bytes) {
            Ok(m) => m,
            Err(e) => {
                return Ok(Verification::new(
                    Some(id),
                    vec![format!("MANIFEST does not parse: {e}")],
                    Vec::new(),
                ))
            }
        };
        let mut problems = Vec::new();
        let mut notes = Vec::new();

        // The signature, against signers the caller trusts.
        match (signers, read_no_follow(&dir.join(SIGNATURE_FILE))) {
            (None, _) => notes.push(
                "signature NOT checked: give --allowed-signers with a signer you trust".to_string(),
            ),
            (Some(s), Ok(sig)) => {
                let sig = String::from_utf8_lossy(&sig);
                match egress_signing::verify(&sig, SNAPSHOT_NAMESPACE, &manifest_bytes, s) {
                    Ok(v) => notes.push(format!(
                        "signature good: MANIFEST signed by {} ({})",
                        v.principal, v.fingerprint
                    )),
                    Err(e) => problems.push(format!("MANIFEST.sig does not verify: {e}")),
                }
            }
            (Some(_), Err(ReadFail::Missing)) => {
                problems.push("MANIFEST.sig is missing: the snapshot is unsigned".to_string())
            }
            (Some(_), Err(f)) => problems.push(format!("MANIFEST.sig {}", f.describe())),
        }

        // SNAPSHOT.json: its digest, its schema, and that it serves listed
        // blobs, read as a stream (hashed and parsed in one pass, never held).
        let listed = DigestSet::new(&listing.blobs);
        match listing.doc {
            None => problems.push("MANIFEST does not list SNAPSHOT.json".to_string()),
            Some(listed_digest) => {
                problems.extend(check_doc(&dir.join(SNAPSHOT_JSON), listed_digest, &listed))
            }
        }

        // Listed blobs against what is on disk below blobs/.
        problems.extend(listing.problems.iter().cloned());
        let mut disk = OnDisk::default();
        let mut store_ok = true;
        for sub in ["blobs", "blobs/sha256"] {
            match fs::symlink_metadata(dir.join(sub)) {
                Ok(m) if m.file_type().is_symlink() => {
                    problems.push(format!(
                        "{sub} is a symlink (refused); the blobs were not checked"
                    ));
                    store_ok = false;
                }
                Ok(m) if !m.is_dir() => {
                    problems.push(format!("{sub} is not a directory"));
                    store_ok = false;
                }
                _ => {}
            }
        }
        if store_ok && dir.join("blobs").is_dir() {
            walk(dir, "blobs", &mut disk, &mut problems).map_err(|cause| {
                VerifyError::CannotList {
                    path: dir.join("blobs"),
                    cause,
                }
            })?;
        }
        let mut work: Vec<Sha256Digest> = Vec::new();
        if store_ok {
            disk.blobs.sort_unstable();
            disk.refused.sort_unstable();
            // Both sorted: one merge finds the missing and the extra.
            let mut on_disk = disk.blobs.iter().peekable();
            for digest in &listing.blobs {
                while let Some(extra) = on_disk.next_if(|d| *d < digest) {
                    problems.push(format!(
                        "{} is extra: MANIFEST does not list it",
                        blob_path(extra)
                    ));
                }
                if on_disk.next_if(|d| *d == digest).is_some() {
                    work.push(*digest);
                } else if disk.refused.binary_search(digest).is_err() {
                    // (A refused one is already named.)
                    problems.push(format!("{} is missing", blob_path(digest)));
                }
            }
            for extra in on_disk {
                problems.push(format!(
                    "{} is extra: MANIFEST does not list it",
                    blob_path(extra)
                ));
            }
            for path in &disk.others {
                problems.push(format!("{path} is extra: MANIFEST does not list it"));
            }
        }

        // In path order (the directory is not stat'ed ahead for sizes).
        let hash_started = Instant::now();
        let results = pool::map(&work, jobs, |digest| {
            hash_file(&dir.join(blob_path(digest)))
        });
        let hash_secs = hash_started.elapsed().as_secs_f64();
        let mut bytes = 0u64;
        for (digest, r) in work.iter().zip(results) {
            let path = blob_path(digest);
            match r {
                Ok((actual, len)) => {
                    bytes += len;
                    if actual != *digest {
                        problems.push(format!("{path} is corrupt: its sha256 is {actual}"));
                    }
                }
                Err(f) => problems.push(format!("{path} {}", f.describe())),
            }
        }
        // A layer: the chain below it, once everything above holds (its
        // evidence blobs were just hashed with the rest).
        let mut chain = None;
        #[cfg(unix)]
        if problems.is_empty() {
            match crate::StoredSnapshot::open(dir) {
                Err(e) => problems.push(format!("cannot open it to read its chain: {e}")),
                Ok(store) => match verify_chain(&store, signers) {
                    Ok(lines) => notes.extend(lines),
                    Err(p) => {
                        problems.push(p.to_string());
                        chain = Some(p);
                    }
                },
            }
        }
        problems.sort();

        let rate = if hash_secs > 0.0 {
            bytes as f64 / 1e6 / hash_secs
        } else {
            0.0
        };
        notes.push(format!(
        "snapshot {id}: {} blobs, {bytes} bytes ({}) hashed in {hash_secs:.3} s ({rate:.0} MB/s, {jobs} threads); {:.3} s in all",
        work.len(),
        human(bytes),
        started.elapsed().as_secs_f64()
    ));
        let mut v = Verification::new(Some(id), problems, notes);
        v.chain = chain;
        Ok(v)
    }
}

/// The chain below a layer (nothing for a snapshot that is not one): every
/// ancestor's evidence as the layer holds it, checked by
/// [`crate::chain::walk`]. One note per ancestor.
#[cfg(unix)]
pub fn verify_chain(
    store: &crate::StoredSnapshot,
    signers: Option<&AllowedSigners>,
) -> Result<Vec<String>, crate::chain::ChainProblem> {
    if store.layer().is_none() {
        return Ok(Vec::new());
    }
    let ancestors = crate::chain::walk(store.id(), store.doc(), signers, |path| {
        let digest = store.served().lookup(path, crate::TEXT_PLAIN)?;
        let blob = store.open_blob(&digest).ok()?;
        let (file, len) = blob.into_parts();
        let mut bytes = Vec::new();
        file.take(len).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    })?;
    Ok(ancestors
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let signed = a
                .signer
                .as_deref()
                .map_or("signature NOT checked".to_string(), |s| {
                    format!("signed by {s}")
                });
            let kind = if a.doc.layer.is_some() {
                "layer"
            } else {
                "base"
            };
            format!(
                "chain: {} below, {kind} {}, {signed}; the layer above extends it",
                i + 1,
                a.id
            )
        })
        .collect())
}
