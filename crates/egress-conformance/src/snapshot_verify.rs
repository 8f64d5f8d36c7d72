//! `snapshot verify DIR`: what `ssh-keygen -Y verify` and `sha256sum -c
//! MANIFEST` check, in our code, in parallel, naming every missing, extra or
//! corrupted blob rather than stopping at the first.
//!
//! Nothing in the directory is followed through a symlink: a snapshot holds
//! regular files only, and a link could make a good-looking blob path read
//! bytes from anywhere.

use crate::progress::human;
use crate::{exit, pool, Failure};
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use egress_signing::{AllowedSigners, SNAPSHOT_NAMESPACE};
use egress_snapshot::manifest::{blob_path, SNAPSHOT_JSON};
use egress_snapshot::{Manifest, SnapshotDoc, MANIFEST_FILE, SIGNATURE_FILE};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The snapshot directory.
    pub dir: PathBuf,
    /// An OpenSSH allowed_signers file you trust; without it the signature is
    /// not checked (the snapshot's own allowed_signers proves nothing).
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// Hashing threads; by default one per core.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
}

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

/// Streams a file through SHA-256; returns the digest and the length.
fn hash_file(path: &Path, size: u64) -> Result<(Sha256Digest, u64), ReadFail> {
    let mut file = open_no_follow(path)?;
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

/// Every entry below `rel` (relative to `root`), without following links:
/// regular files with `Some(size)`; anything else with `None` and a problem.
fn walk(
    root: &Path,
    rel: &str,
    files: &mut BTreeMap<String, Option<u64>>,
    problems: &mut Vec<String>,
) -> io::Result<()> {
    for entry in fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{rel}/{name}");
        let meta = fs::symlink_metadata(entry.path())?;
        if meta.file_type().is_symlink() {
            problems.push(format!(
                "{path} is a symlink (refused: a snapshot holds regular files only)"
            ));
            files.insert(path, None);
        } else if meta.is_dir() {
            walk(root, &path, files, problems)?;
        } else if meta.is_file() {
            files.insert(path, Some(meta.len()));
        } else {
            problems.push(format!("{path} is not a regular file"));
            files.insert(path, None);
        }
    }
    Ok(())
}

pub fn main(args: VerifyArgs) -> Result<u8, Failure> {
    let started = Instant::now();
    let dir = &args.dir;
    let jobs = match args.jobs {
        Some(0) => return Err(Failure::usage("--jobs: give at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Failure::input(format!(
                "{}: not a directory",
                dir.display()
            )))
        }
        Err(e) => return Err(Failure::input(format!("{}: {e}", dir.display()))),
    }
    let signers = match &args.allowed_signers {
        None => None,
        Some(p) => {
            let text = fs::read_to_string(p)
                .map_err(|e| Failure::input(format!("--allowed-signers {}: {e}", p.display())))?;
            Some(
                AllowedSigners::parse(&text).map_err(|e| {
                    Failure::input(format!("--allowed-signers {}: {e}", p.display()))
                })?,
            )
        }
    };

    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest_bytes = match read_no_follow(&manifest_path) {
        Ok(b) => b,
        Err(f @ (ReadFail::Missing | ReadFail::Io(_))) => {
            return Err(Failure::input(format!(
                "{} {}; not a snapshot directory",
                manifest_path.display(),
                f.describe()
            )))
        }
        Err(f) => {
            return Ok(report(
                dir,
                None,
                &[format!("MANIFEST {}", f.describe())],
                &[],
            ))
        }
    };
    let id = Sha256Digest::of(&manifest_bytes);
    let manifest = match Manifest::parse(&manifest_bytes) {
        Ok(m) => m,
        Err(e) => {
            return Ok(report(
                dir,
                Some(id),
                &[format!("MANIFEST does not parse: {e}")],
                &[],
            ))
        }
    };
    let mut problems = Vec::new();
    let mut notes = Vec::new();

    // The signature, against signers the caller trusts.
    match (&signers, read_no_follow(&dir.join(SIGNATURE_FILE))) {
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

    // SNAPSHOT.json: its digest, its schema, and that it serves listed blobs.
    match manifest.get(SNAPSHOT_JSON) {
        None => problems.push("MANIFEST does not list SNAPSHOT.json".to_string()),
        Some(listed) => match read_no_follow(&dir.join(SNAPSHOT_JSON)) {
            Err(f) => problems.push(format!("SNAPSHOT.json {}", f.describe())),
            Ok(bytes) => {
                let actual = Sha256Digest::of(&bytes);
                if actual != listed {
                    problems.push(format!(
                        "SNAPSHOT.json is corrupt: its sha256 is {actual}, MANIFEST lists {listed}"
                    ));
                } else {
                    match SnapshotDoc::parse(&bytes) {
                        Err(e) => problems.push(format!("SNAPSHOT.json does not parse: {e}")),
                        Ok(doc) => {
                            for e in doc.served.iter().filter(|e| !manifest.has_blob(&e.sha256)) {
                                problems.push(format!(
                                    "SNAPSHOT.json serves {} from blob {}, which MANIFEST does not list",
                                    e.path, e.sha256
                                ));
                            }
                        }
                    }
                }
            }
        },
    }

    // Listed blobs against what is on disk below blobs/.
    let mut listed: BTreeMap<String, Sha256Digest> = BTreeMap::new();
    for (path, digest) in manifest.entries() {
        if path == SNAPSHOT_JSON {
            continue;
        }
        if path == blob_path(&digest) {
            listed.insert(path.to_string(), digest);
        } else {
            problems.push(format!(
                "MANIFEST lists {path}, which is neither SNAPSHOT.json nor blobs/sha256/<its sha256>"
            ));
        }
    }
    let mut on_disk = BTreeMap::new();
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
        walk(dir, "blobs", &mut on_disk, &mut problems).map_err(|e| {
            Failure::input(format!("cannot list {}: {e}", dir.join("blobs").display()))
        })?;
    }
    let mut work: Vec<(&String, &Sha256Digest, u64)> = Vec::new();
    if store_ok {
        for (path, digest) in &listed {
            match on_disk.get(path) {
                Some(Some(size)) => work.push((path, digest, *size)),
                // Already named: a symlink or not a regular file.
                Some(None) => {}
                None => problems.push(format!("{path} is missing")),
            }
        }
        for (path, _) in on_disk
            .iter()
            .filter(|(p, size)| size.is_some() && !listed.contains_key(*p))
        {
            problems.push(format!("{path} is extra: MANIFEST does not list it"));
        }
    }

    // Largest first, so no thread is left with one big file at the end.
    work.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    let hash_started = Instant::now();
    let results = pool::map(&work, jobs, |(path, _, size)| {
        hash_file(&dir.join(path), *size)
    });
    let hash_secs = hash_started.elapsed().as_secs_f64();
    let mut bytes = 0u64;
    for ((path, digest, _), r) in work.iter().zip(results) {
        match r {
            Ok((actual, len)) => {
                bytes += len;
                if actual != **digest {
                    problems.push(format!("{path} is corrupt: its sha256 is {actual}"));
                }
            }
            Err(f) => problems.push(format!("{path} {}", f.describe())),
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
    Ok(report(dir, Some(id), &problems, &notes))
}

/// Prints the notes, every problem, and the verdict; returns the exit code.
fn report(dir: &Path, id: Option<Sha256Digest>, problems: &[String], notes: &[String]) -> u8 {
    for n in notes {
        crate::outln!("{n}");
    }
    for p in problems {
        crate::outln!("  BAD {p}");
    }
    let id = id.map_or_else(|| "?".to_string(), |d| d.to_hex());
    if problems.is_empty() {
        crate::outln!("{}: snapshot {id} verified", dir.display());
        exit::PASS
    } else {
        crate::outln!(
            "{}: snapshot {id} FAILED verification: {} problem(s)",
            dir.display(),
            problems.len()
        );
        exit::FAIL
    }
}
