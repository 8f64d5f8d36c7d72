//! `snapshot push DIR REF`: every file of a signed snapshot as a layer
//! (blobs the repository already holds are skipped after a `HEAD`), each
//! new one uploaded in chunks (`POST`, `PATCH`…, `PUT ?digest=`), then the
//! manifest `PUT` by tag.

use crate::artifact::{self, Layer, EMPTY_JSON, OCI_MANIFEST};
use crate::reference::{Reference, Target};
use crate::registry::{Connect, Registry};
use crate::OciError;
use egress_model::digest::Sha256Hasher;
use egress_model::Sha256Digest;
use egress_snapshot::{
    open_no_follow, read_no_follow, Manifest, ALLOWED_SIGNERS_FILE, MANIFEST_FILE, SIGNATURE_FILE,
};
use egress_transcript::{Method, Request};
use std::io::Read;
use std::path::Path;

/// The chunk size when none is given.
pub const DEFAULT_CHUNK: usize = 8 * 1024 * 1024;

/// What a push did.
#[derive(Debug)]
pub struct Pushed {
    /// The manifest's digest.
    pub digest: Sha256Digest,
    pub snapshot_id: Sha256Digest,
    /// Files uploaded, and their bytes.
    pub uploaded: (usize, u64),
    /// Files the repository already held, and their bytes.
    pub skipped: (usize, u64),
}

fn local(path: &Path, e: impl std::fmt::Display) -> OciError {
    OciError::Input(format!("{}: {e}", path.display()))
}

/// The layers of the snapshot in `dir`: MANIFEST, MANIFEST.sig,
/// allowed_signers (when there), then what MANIFEST lists, in its order.
/// A blob's digest is its name (checked as it is uploaded).
fn layers(dir: &Path) -> Result<(Vec<Layer>, Sha256Digest), OciError> {
    let read = |name: &str| -> Result<Option<Layer>, OciError> {
        let p = dir.join(name);
        match read_no_follow(&p) {
            Ok(bytes) => Ok(Some(Layer {
                title: name.to_string(),
                digest: Sha256Digest::of(&bytes),
                size: bytes.len() as u64,
            })),
            Err(egress_snapshot::NoFollowError::Missing) => Ok(None),
            Err(e) => Err(local(&p, e)),
        }
    };
    let manifest = read(MANIFEST_FILE)?.ok_or_else(|| {
        OciError::Input(format!(
            "{}: no MANIFEST: not a snapshot directory",
            dir.display()
        ))
    })?;
    let sig = read(SIGNATURE_FILE)?.ok_or_else(|| {
        OciError::Input(format!(
            "{}: no MANIFEST.sig: only signed snapshots are pushed (a pull verifies the signature)",
            dir.display()
        ))
    })?;
    let id = manifest.digest;
    let bytes = read_no_follow(&dir.join(MANIFEST_FILE)).map_err(|e| local(dir, e))?;
    let listed = Manifest::parse(&bytes).map_err(|e| local(&dir.join(MANIFEST_FILE), e))?;
    let mut out = vec![manifest, sig];
    out.extend(read(ALLOWED_SIGNERS_FILE)?);
    for (path, digest) in listed.entries() {
        let p = dir.join(path);
        let meta = open_no_follow(&p)
            .and_then(|f| Ok(f.metadata()?))
            .map_err(|e| local(&p, e))?;
        out.push(Layer {
            title: path.to_string(),
            digest,
            size: meta.len(),
        });
    }
    Ok((out, id))
}

/// Uploads `path` (or `bytes` when given) in chunks of `chunk`; the bytes
/// must hash to `digest`, checked before the final `PUT`.
fn upload(
    reg: &mut Registry,
    source: Source<'_>,
    digest: &Sha256Digest,
    chunk: usize,
) -> Result<(), OciError> {
    let name = format!("sha256:{}", digest.to_hex());
    let what = format!("upload {name}");
    let start = reg.expect(
        &what,
        &Request::new(Method::Post, &reg.path("blobs/uploads/")),
        &[202],
    )?;
    let mut location = reg.location(&what, &start)?;
    let mut hasher = Sha256Hasher::new();
    let mut offset = 0u64;
    let mut reader: Box<dyn Read> = match source {
        Source::Bytes(b) => Box::new(b),
        Source::File(p) => Box::new(open_no_follow(p).map_err(|e| local(p, e))?),
    };
    let mut buf = vec![0u8; chunk];
    loop {
        let mut n = 0;
        while n < buf.len() {
            let Some(rest) = buf.get_mut(n..) else { break };
            match reader.read(rest) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(OciError::Input(format!("{what}: cannot read: {e}"))),
            }
        }
        let Some(data) = buf.get(..n) else { break };
        if data.is_empty() {
            break;
        }
        hasher.update(data);
        let end = offset + n as u64 - 1;
        let req = Request::new(Method::Patch, &location)
            .header("Content-Type", "application/octet-stream")
            .header("Content-Range", &format!("{offset}-{end}"))
            .body(data.to_vec());
        let resp = reg.expect(&format!("{what} (bytes {offset}-{end})"), &req, &[202])?;
        if let Some(range) = resp.header("range") {
            if range.trim() != format!("0-{end}") {
                return Err(OciError::Registry(format!(
                    "{what}: after bytes {offset}-{end} the registry holds {range:?}"
                )));
            }
        }
        location = reg.location(&what, &resp)?;
        offset = end + 1;
    }
    let actual = hasher.finish();
    if actual != *digest {
        return Err(OciError::Input(format!(
            "{what}: the file's sha256 is {actual}: the snapshot is corrupt (run snapshot verify)"
        )));
    }
    let sep = if location.contains('?') { '&' } else { '?' };
    let req = Request::new(
        Method::Put,
        &format!("{location}{sep}digest=sha256%3A{}", digest.to_hex()),
    );
    reg.expect(&format!("{what} (commit)"), &req, &[201])?;
    Ok(())
}

enum Source<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Pushes the snapshot in `dir` to `reference` (a tag); `say` gets one line
/// per file (uploaded or skipped).
pub fn push(
    dir: &Path,
    reference: &Reference,
    how: &Connect<'_>,
    chunk: usize,
    mut say: impl FnMut(&str),
) -> Result<Pushed, OciError> {
    let Target::Tag(tag) = &reference.target else {
        return Err(OciError::Usage(format!(
            "{reference}: push needs a tag (HOST[:PORT]/REPO:TAG), not a digest"
        )));
    };
    if chunk == 0 {
        return Err(OciError::Usage("--chunk-size: give at least 1 byte".into()));
    }
    let (layers, snapshot_id) = layers(dir)?;
    let mut reg = Registry::new(reference, how)?;
    let mut pushed = Pushed {
        digest: Sha256Digest::of(b""),
        snapshot_id,
        uploaded: (0, 0),
        skipped: (0, 0),
    };
    let empty = Sha256Digest::of(EMPTY_JSON);
    if !reg.has_blob(&empty)? {
        upload(&mut reg, Source::Bytes(EMPTY_JSON), &empty, chunk)?;
    }
    for l in &layers {
        if reg.has_blob(&l.digest)? {
            say(&format!(
                "skipped {} ({} bytes, already in the registry)",
                l.title, l.size
            ));
            pushed.skipped.0 += 1;
            pushed.skipped.1 += l.size;
            continue;
        }
        let path = dir.join(&l.title);
        upload(&mut reg, Source::File(&path), &l.digest, chunk)?;
        say(&format!("uploaded {} ({} bytes)", l.title, l.size));
        pushed.uploaded.0 += 1;
        pushed.uploaded.1 += l.size;
    }
    let body = artifact::render(&layers, &snapshot_id);
    let digest = Sha256Digest::of(&body);
    let what = format!("PUT manifest {tag}");
    let req = Request::new(Method::Put, &reg.path(&format!("manifests/{tag}")))
        .header("Content-Type", OCI_MANIFEST)
        .body(body);
    let resp = reg.expect(&what, &req, &[201])?;
    if let Some(d) = resp.header("docker-content-digest") {
        if d.trim() != format!("sha256:{}", digest.to_hex()) {
            return Err(OciError::Registry(format!(
                "{what}: the registry names the manifest {d}, not sha256:{}",
                digest.to_hex()
            )));
        }
    }
    pushed.digest = digest;
    Ok(pushed)
}
