//! [`SnapshotBuilder::write`]: a build rendered straight into its
//! directory, for builds of any size.
//!
//! [`SnapshotBuilder::build`] assembles a [`Snapshot`](crate::Snapshot) in
//! memory: both documents as parsed values and as bytes, which at a million
//! wheels (four million served entries) is gigabytes. `write` keeps only a
//! compact table of the served entries (their paths in one arena) while it
//! renders, then streams `SNAPSHOT.json` and `MANIFEST` to disk, hashing
//! them as they are written, signs `MANIFEST` as it reads it back, and
//! checks the result the way the mirror opens it
//! ([`StoredSnapshot::open`]) before renaming it into place. The bytes are
//! exactly those `build` + [`Snapshot::write_dir`](crate::Snapshot::write_dir)
//! write (a test holds the two together).

use crate::build::{builder_name, signers_line};
use crate::dir::{write_blob, write_unsynced, Target, WriteFail};
use crate::error::SnapshotError;
use crate::manifest::{blob_path, DocView, SNAPSHOT_JSON, SNAPSHOT_SCHEMA};
use crate::{SnapshotBuilder, ALLOWED_SIGNERS_FILE, MANIFEST_FILE, SIGNATURE_FILE};
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use egress_signing::{SigningKey, SNAPSHOT_NAMESPACE};
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// What [`SnapshotBuilder::write`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The snapshot ID: the SHA-256 of `MANIFEST`.
    pub id: Sha256Digest,
    /// The SHA-256 of `SNAPSHOT.json`.
    pub doc: Sha256Digest,
    /// Served entries in `SNAPSHOT.json`.
    pub served: usize,
    /// Blobs under `blobs/sha256/`.
    pub blobs: usize,
}

/// The served entries, compactly: every path in one arena.
#[derive(Default)]
struct Rows {
    arena: String,
    rows: Vec<Row>,
    content_types: Vec<String>,
}

struct Row {
    start: usize,
    len: u32,
    content_type: u16,
    sha256: Sha256Digest,
}

impl Rows {
    fn push(&mut self, path: &str, content_type: &str, sha256: Sha256Digest) -> Result<(), String> {
        let too_many = || "more served entries than a snapshot can hold".to_string();
        let ct = match self.content_types.iter().position(|t| t == content_type) {
            Some(i) => i,
            None => {
                self.content_types.push(content_type.to_string());
                self.content_types.len() - 1
            }
        };
        let row = Row {
            start: self.arena.len(),
            len: u32::try_from(path.len()).map_err(|_| too_many())?,
            content_type: u16::try_from(ct).map_err(|_| too_many())?,
            sha256,
        };
        self.arena.push_str(path);
        self.rows.push(row);
        Ok(())
    }

    fn path(&self, r: &Row) -> &str {
        self.arena
            .get(r.start..r.start + r.len as usize)
            .unwrap_or_default()
    }

    fn content_type(&self, r: &Row) -> &str {
        self.content_types
            .get(usize::from(r.content_type))
            .map_or("", String::as_str)
    }

    /// In `SNAPSHOT.json`'s order: [`crate::ServedEntry`]'s (path, then
    /// content type, then digest).
    fn sort(&mut self) {
        let mut rows = std::mem::take(&mut self.rows);
        rows.sort_unstable_by(|a, b| {
            (self.path(a), self.content_type(a), a.sha256).cmp(&(
                self.path(b),
                self.content_type(b),
                b.sha256,
            ))
        });
        self.rows = rows;
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &str, Sha256Digest)> + '_ {
        self.rows
            .iter()
            .map(|r| (self.path(r), self.content_type(r), r.sha256))
    }

    /// The rules of [`crate::index`] over the sorted rows: each entry's
    /// own, and each path's entries together. (Every blob is served by
    /// construction: the blobs are the rows' digests.)
    fn check(&self) -> Result<(), SnapshotError> {
        let mut at = 0;
        while let Some(first) = self.rows.get(at) {
            let path = self.path(first);
            let same = self
                .rows
                .get(at..)
                .unwrap_or_default()
                .iter()
                .take_while(|r| self.path(r) == path)
                .count();
            let types: Vec<&str> = self
                .rows
                .get(at..at + same)
                .unwrap_or_default()
                .iter()
                .map(|r| self.content_type(r))
                .collect();
            for ct in &types {
                crate::index::entry_rule(path, ct).map_err(SnapshotError::Inconsistent)?;
            }
            crate::index::path_rule(path, &types).map_err(SnapshotError::Inconsistent)?;
            at += same.max(1);
        }
        Ok(())
    }

    /// Every served digest, sorted, once.
    fn digests(&self) -> Vec<Sha256Digest> {
        let mut d: Vec<Sha256Digest> = self.rows.iter().map(|r| r.sha256).collect();
        d.sort_unstable();
        d.dedup();
        d
    }
}

/// `served`, serialized as a sequence of [`crate::ServedEntry`].
struct ServedView<'a>(&'a Rows);

#[derive(Serialize)]
struct EntryView<'a> {
    path: &'a str,
    content_type: &'a str,
    sha256: Sha256Digest,
}

impl Serialize for ServedView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.rows.len()))?;
        for (path, content_type, sha256) in self.0.iter() {
            seq.serialize_element(&EntryView {
                path,
                content_type,
                sha256,
            })?;
        }
        seq.end()
    }
}

/// A writer that hashes what goes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256Hasher,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Creates `path` and writes `body` into it through a hashing buffer;
/// returns the digest of what was written.
fn write_hashed(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Sha256Digest, SnapshotError> {
    let file = File::create_new(path).map_err(|e| SnapshotError::io("create", path, e))?;
    let mut out = Hashing {
        inner: BufWriter::with_capacity(1 << 20, file),
        hasher: Sha256Hasher::new(),
    };
    body(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| SnapshotError::io("write", path, e))?;
    Ok(out.hasher.finish())
}

impl SnapshotBuilder {
    /// Renders every page and writes the signed snapshot to `dir`
    /// atomically (as [`Snapshot::write_dir`](crate::Snapshot::write_dir)
    /// does), holding only a compact table of the served entries: see the
    /// module documentation. The written directory is checked as the
    /// mirror opens it before it is renamed into place; nothing is left
    /// behind on failure.
    pub fn write(
        mut self,
        dir: &Path,
        created: &str,
        key: &SigningKey,
        principal: &str,
    ) -> Result<Written, SnapshotError> {
        let target = Target::of(dir)?;
        let signers = signers_line(key, principal);
        let (count, bytes) = self.served_estimate();
        let mut rows = Rows {
            arena: String::with_capacity(bytes),
            rows: Vec::with_capacity(count),
            content_types: Vec::new(),
        };
        let mut refused = None;
        let upload_times = self.render(Some(&signers), &mut |path, content_type, sha256| {
            if let Err(e) = rows.push(&path, content_type, sha256) {
                refused.get_or_insert(e);
            }
        })?;
        if let Some(why) = refused {
            return Err(SnapshotError::Inconsistent(why));
        }
        // What the pages were rendered from is no longer needed: what
        // follows reuses its memory.
        self.release_rendered();
        rows.sort();
        rows.check()?;
        let layer = self.layer.take();
        if let (Some(layer), Some(base)) = (&layer, &self.base_doc) {
            crate::chain::extends(base, rows.iter().map(|(p, _, d)| (p, d)), layer)
                .map_err(SnapshotError::Inconsistent)?;
        }
        self.base_doc = None;
        let sources = std::mem::take(&mut self.sources);
        let selection = self.selection.take();
        let builder = builder_name();
        let view = DocView {
            schema: SNAPSHOT_SCHEMA,
            builder: &builder,
            created,
            sources: &sources,
            served: ServedView(&rows),
            upload_times: &upload_times,
            selection: &selection,
            layer: &layer,
        };

        let mut blobs = std::mem::take(&mut self.blobs);
        // A store staged on disk beside `dir` becomes the new directory by
        // one rename: its files are checked where they are, never copied
        // or linked. Otherwise each blob is written (or linked) anew.
        let moved = target.fresh_name();
        let (tmp, in_place) = match blobs.move_to(&moved) {
            Ok(()) => (moved, true),
            Err(_) => (target.fresh()?, false),
        };
        let written = (|| {
            let digests = rows.digests();
            if in_place {
                check_in_place(&tmp, &digests)?;
            } else {
                write_blobs(&blobs, &tmp, &digests)?;
            }
            // The store's table goes before the documents are written.
            drop(blobs);
            let doc = write_hashed(&tmp.join(SNAPSHOT_JSON), |out| view.write(out))?;
            let manifest_path = tmp.join(MANIFEST_FILE);
            let id = write_hashed(&manifest_path, |out| {
                // Sorted by path: "SNAPSHOT.json" before "blobs/...".
                writeln!(out, "{}  {SNAPSHOT_JSON}", doc.to_hex())?;
                for d in &digests {
                    writeln!(out, "{}  {}", d.to_hex(), blob_path(d))?;
                }
                Ok(())
            })?;
            let manifest = File::open(&manifest_path)
                .map_err(|e| SnapshotError::io("read", &manifest_path, e))?;
            let signature = key
                .sign_reader(SNAPSHOT_NAMESPACE, io::BufReader::new(manifest))
                .map_err(|e| SnapshotError::io("sign", &manifest_path, e))?;
            write_unsynced(&tmp.join(SIGNATURE_FILE), signature.as_bytes())?;
            write_unsynced(&tmp.join(ALLOWED_SIGNERS_FILE), signers.as_bytes())?;
            sync(&tmp)?;
            let written = Written {
                id,
                doc,
                served: rows.rows.len(),
                blobs: digests.len(),
            };
            drop(digests);
            Ok(written)
        })();
        // Read back: the two documents on disk are the bytes that were
        // hashed as they were written.
        let written = written.and_then(|w| {
            for (name, want) in [(MANIFEST_FILE, Some(w.id)), (SNAPSHOT_JSON, None)] {
                let path = tmp.join(name);
                let got = hash_file(&path)?;
                let listed = match want {
                    Some(id) => id,
                    None => w.doc,
                };
                if got != listed {
                    return Err(SnapshotError::Inconsistent(format!(
                        "{name} changed on disk while the snapshot was written"
                    )));
                }
            }
            Ok(w)
        });
        match written {
            Ok(w) => {
                target.publish(&tmp)?;
                Ok(w)
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                Err(e)
            }
        }
    }
}

/// Every blob into `root/blobs/sha256/`, on every core, each hashed again
/// on its way (see [`write_blob`]).
fn write_blobs(
    blobs: &crate::BlobStore,
    root: &Path,
    digests: &[Sha256Digest],
) -> Result<(), SnapshotError> {
    let dir = root.join("blobs/sha256");
    fs::create_dir_all(&dir).map_err(|e| SnapshotError::io("create", &dir, e))?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = crate::pool::filter_map(digests, jobs, |d| {
        let path = blob_path(d);
        write_blob(blobs, &root.join(&path), &path, d).err()
    });
    let mut problems = Vec::new();
    for f in failed {
        match f {
            WriteFail::Blob(p) => problems.push(p),
            WriteFail::Io(e) => return Err(e),
        }
    }
    if !problems.is_empty() {
        problems.sort_by(|a, b| a.path.cmp(&b.path));
        return Err(SnapshotError::Blobs(problems));
    }
    Ok(())
}

/// The SHA-256 of a file, streamed.
fn hash_file(path: &Path) -> Result<Sha256Digest, SnapshotError> {
    let mut file = File::open(path).map_err(|e| SnapshotError::io("read", path, e))?;
    let mut out = Hashing {
        inner: io::sink(),
        hasher: Sha256Hasher::new(),
    };
    io::copy(&mut file, &mut out).map_err(|e| SnapshotError::io("read", path, e))?;
    Ok(out.hasher.finish())
}

/// After the staging directory became `root`: every listed blob is there
/// and hashes to its digest (checked on every core), and every other file
/// the store staged (a blob no page serves any more) is removed.
fn check_in_place(root: &Path, digests: &[Sha256Digest]) -> Result<(), SnapshotError> {
    let dir = root.join("blobs/sha256");
    let mut unlisted = Vec::new();
    for entry in fs::read_dir(&dir).map_err(|e| SnapshotError::io("list", &dir, e))? {
        let entry = entry.map_err(|e| SnapshotError::io("list", &dir, e))?;
        let name = entry.file_name();
        let listed = name
            .to_str()
            .and_then(|n| Sha256Digest::from_hex(n).ok())
            .is_some_and(|d| digests.binary_search(&d).is_ok());
        if !listed {
            unlisted.push(entry.path());
        }
    }
    for path in unlisted {
        fs::remove_file(&path).map_err(|e| SnapshotError::io("remove", &path, e))?;
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut problems = crate::pool::filter_map(digests, jobs, |d| {
        let rel = blob_path(d);
        let kind = match crate::nofollow::open_no_follow(&root.join(&rel)) {
            Err(e) => Some(crate::BlobProblemKind::from(e)),
            Ok(mut file) => {
                let mut out = Hashing {
                    inner: io::sink(),
                    hasher: Sha256Hasher::new(),
                };
                match io::copy(&mut file, &mut out) {
                    Err(e) => Some(crate::BlobProblemKind::Unreadable(e.to_string())),
                    Ok(_) => {
                        let actual = out.hasher.finish();
                        (actual != *d).then_some(crate::BlobProblemKind::Corrupt { actual })
                    }
                }
            }
        };
        kind.map(|kind| crate::BlobProblem { path: rel, kind })
    });
    if !problems.is_empty() {
        problems.sort_by(|a, b| a.path.cmp(&b.path));
        return Err(SnapshotError::Blobs(problems));
    }
    Ok(())
}

/// Makes everything under `root` durable: `syncfs` where there is one,
/// else each file and directory.
fn sync(root: &Path) -> Result<(), SnapshotError> {
    #[cfg(target_os = "linux")]
    {
        let dir = File::open(root).map_err(|e| SnapshotError::io("open", root, e))?;
        if rustix::fs::syncfs(&dir).is_ok() {
            return Ok(());
        }
    }
    fn walk(path: &Path) -> io::Result<()> {
        let meta = fs::symlink_metadata(path)?;
        if meta.is_dir() {
            for e in fs::read_dir(path)? {
                walk(&e?.path())?;
            }
        }
        File::open(path)?.sync_all()
    }
    walk(root).map_err(|e| SnapshotError::io("sync", root, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoredSnapshot;
    use egress_artifacts::{build_npm_tarball, build_wheel, NpmPackageSpec, WheelSpec};
    use egress_model::{ProjectName, Version};

    fn builder() -> SnapshotBuilder {
        let mut b = SnapshotBuilder::new("/simple/");
        fill(&mut b);
        b
    }

    fn fill(b: &mut SnapshotBuilder) {
        for (name, version) in [("a", "1.0"), ("a", "2.0"), ("b", "0.1")] {
            let w = build_wheel(&WheelSpec {
                name: ProjectName::new(name).unwrap(),
                version: Version::new(version).unwrap(),
                summary: "s".into(),
                description: String::new(),
                requires_python: Some(">=3.8".into()),
                files: vec![],
            });
            b.add_dist_with(
                &w.filename,
                w.bytes,
                None,
                Some("2024-01-31T12:00:00Z".into()),
            )
            .unwrap();
        }
        let t = build_npm_tarball(&NpmPackageSpec::new("@s/n", "1.0.0", "d", ""));
        b.npm_registry_url("http://127.0.0.1:8/").unwrap();
        b.add_npm_tarball("@s/n", "1.0.0", &t.filename, t.bytes, &t.integrity)
            .unwrap();
        b.source("uv.lock", Sha256Digest::of(b"lock"));
    }

    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p.strip_prefix(dir).unwrap().display().to_string();
                    out.push((rel, fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn writes_the_bytes_build_and_write_dir_write() {
        let tmp = std::env::temp_dir().join(format!("egress-write-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).unwrap();
        let key = SigningKey::from_seed([3; 32], "lab");
        let created = "2026-01-01T00:00:00Z";
        builder()
            .build(created, Some(&key), "lab")
            .unwrap()
            .write_dir(&tmp.join("memory"))
            .unwrap();
        let w = builder()
            .write(&tmp.join("streamed"), created, &key, "lab")
            .unwrap();
        assert_eq!(files(&tmp.join("memory")), files(&tmp.join("streamed")));
        // Staged on disk, as `snapshot build` stages.
        let mut staged = SnapshotBuilder::on_disk("/simple/", &tmp.join("staging")).unwrap();
        fill(&mut staged);
        staged
            .write(&tmp.join("staged"), created, &key, "lab")
            .unwrap();
        assert_eq!(files(&tmp.join("memory")), files(&tmp.join("staged")));
        let opened = StoredSnapshot::open(&tmp.join("streamed")).unwrap();
        assert_eq!(opened.id(), w.id);
        assert_eq!(w.served, opened.served().len());
        // Written again over itself: replaced whole.
        builder()
            .write(&tmp.join("streamed"), created, &key, "lab")
            .unwrap();
        assert!(fs::read_dir(&tmp).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".streamed")));
        let _ = fs::remove_dir_all(&tmp);
    }
}

#[cfg(test)]
mod rule_tests {
    use super::*;

    #[test]
    fn rows_keep_the_served_entry_rules() {
        let d = Sha256Digest::of(b"x");
        let rows = |entries: &[(&str, &str)]| {
            let mut r = Rows::default();
            for (p, ct) in entries {
                r.push(p, ct, d).unwrap();
            }
            r.sort();
            r.check()
        };
        let json = egress_simple::JSON_V1;
        let html = egress_simple::HTML_V1;
        assert!(rows(&[
            ("/simple/a/", html),
            ("/simple/a/", json),
            ("/b", "text/plain")
        ])
        .is_ok());
        for bad in [
            vec![("/simple/a/", html), ("/simple/a/", "text/plain")],
            vec![("/a", "text/plain"), ("/a", "text/html"), ("/a", json)],
            vec![("a", "text/plain")],
            vec![("/a?q", "text/plain")],
            vec![("/a", "text plain")],
            vec![(crate::well_known::MANIFEST, "text/plain")],
        ] {
            assert!(rows(&bad).is_err(), "{bad:?}");
        }
    }
}
