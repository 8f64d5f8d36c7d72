//! `snapshot pull REF DIR --allowed-signers FILE`: the manifest (its digest
//! checked when pulled by digest), every layer downloaded into a staging
//! directory next to DIR (a partial file resumes with a `Range` request;
//! each file counts only once its bytes hash to the layer's digest), the
//! whole verified as `snapshot verify` does, and only then the staging
//! directory renamed to DIR, which must not exist. DIR never appears
//! half-written; a failed pull leaves only verified files and partial
//! downloads in the staging directory, for the next pull to resume.

use crate::artifact::{self, Layer, OCI_MANIFEST};
use crate::reference::{Reference, Target};
use crate::registry::{Connect, Registry};
use crate::OciError;
use egress_model::digest::Sha256Hasher;
use egress_model::{BodyEnd, Sha256Digest};
use egress_signing::AllowedSigners;
use egress_snapshot::verify::SnapshotDir;
use egress_transcript::{BodySink, Request};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Tries per blob when the connection breaks or the registry is busy.
const ATTEMPTS: u32 = 3;

/// What a pull did.
#[derive(Debug)]
pub struct Pulled {
    pub manifest_digest: Sha256Digest,
    pub snapshot_id: Sha256Digest,
    pub files: usize,
    /// Bytes received from the registry in this run.
    pub fetched: u64,
    /// Files already complete and verified in the staging directory.
    pub reused: usize,
    /// What the verification said, one line each.
    pub notes: Vec<String>,
}

/// Where a pull of `manifest` into `dir` stages its files: a hidden
/// sibling named by the manifest digest, so that a pull of the same
/// artifact resumes and another artifact never mixes in.
pub fn staging_dir(dir: &Path, manifest: &Sha256Digest) -> Result<PathBuf, OciError> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| OciError::Usage(format!("{}: DIR must end in a name", dir.display())))?;
    let hex = manifest.to_hex();
    let short = hex.get(..16).unwrap_or(&hex);
    Ok(dir.with_file_name(format!(".{name}.pull-{short}")))
}

fn write_err(path: &Path, e: impl std::fmt::Display) -> OciError {
    OciError::Local(format!("cannot write {}: {e}", path.display()))
}

/// The sha256 and length of a regular file (not followed through a link).
fn hash_file(path: &Path) -> io::Result<(Sha256Digest, u64)> {
    let mut f = egress_snapshot::open_no_follow(path).map_err(|e| match e {
        egress_snapshot::NoFollowError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })?;
    let mut h = Sha256Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        let Some(data) = buf.get(..n) else { break };
        if n == 0 {
            break;
        }
        h.update(data);
        len += n as u64;
    }
    Ok((h.finish(), len))
}

/// The `N` of `Content-Range: bytes N-M/T`.
fn range_start(headers: &[(String, String)]) -> Option<u64> {
    let v = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-range"))?
        .1
        .trim();
    v.strip_prefix("bytes ")?
        .split('-')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Streams a blob into its partial file: appended on a `206` that starts
/// where the file ends, from the start on a `200`; never past the layer's
/// size.
struct Part<'a> {
    path: &'a Path,
    have: u64,
    size: u64,
    out: Option<BufWriter<File>>,
    written: u64,
}

impl BodySink for Part<'_> {
    fn begin(&mut self, status: u16, headers: &[(String, String)]) -> io::Result<bool> {
        let file = match status {
            206 if self.have > 0 && range_start(headers) == Some(self.have) => {
                OpenOptions::new().append(true).open(self.path)?
            }
            200 => {
                self.have = 0;
                File::create(self.path)?
            }
            _ => return Ok(false),
        };
        self.out = Some(BufWriter::with_capacity(256 * 1024, file));
        Ok(true)
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if self.have + self.written + data.len() as u64 > self.size {
            return Err(io::Error::other(
                "the registry sent more bytes than the layer's size",
            ));
        }
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| io::Error::other("body before begin"))?;
        out.write_all(data)?;
        self.written += data.len() as u64;
        Ok(())
    }
}

/// Downloads one layer to `dest` through `dest.part`, resuming a partial
/// file; returns the bytes received. A result that does not hash to the
/// layer's digest is deleted and refused (after one fresh try when it was
/// spliced from a resumed part).
fn fetch(
    reg: &mut Registry,
    layer: &Layer,
    dest: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<u64, OciError> {
    let part = dest.with_file_name(format!(
        "{}.part",
        dest.file_name().and_then(|n| n.to_str()).unwrap_or("blob")
    ));
    refuse_link(&part)?;
    let mut fetched = 0u64;
    let mut attempt = 0;
    let mut restarted = false;
    loop {
        let mut have = fs::symlink_metadata(&part).map_or(0, |m| m.len());
        if have > layer.size {
            fs::remove_file(&part).map_err(|e| write_err(&part, e))?;
            have = 0;
        }
        let mut spliced = have > 0;
        if have < layer.size {
            if have > 0 {
                say(&format!(
                    "resuming {} at byte {have} of {} (Range request)",
                    layer.title, layer.size
                ));
            }
            let mut sink = Part {
                path: &part,
                have,
                size: layer.size,
                out: None,
                written: 0,
            };
            let got = reg.get_blob(&layer.digest, have, &mut sink);
            let taken = sink.out.is_some();
            if let Some(mut w) = sink.out.take() {
                w.flush().map_err(|e| write_err(&part, e))?;
            }
            fetched += sink.written;
            spliced = taken && sink.have > 0;
            let (resp, err) = got?;
            let status = resp.status.unwrap_or(0);
            if let Some(e) = err.as_deref().filter(|e| e.starts_with("cannot store")) {
                return Err(write_err(&part, e));
            }
            let complete = taken && resp.body_end == BodyEnd::Complete;
            if !complete {
                attempt += 1;
                let why = if taken {
                    format!(
                        "the body ended after {} bytes ({})",
                        sink.have + sink.written,
                        err.as_deref().unwrap_or("cut short")
                    )
                } else {
                    format!("HTTP {status}")
                };
                let retriable = taken || matches!(status, 206 | 408 | 416 | 429 | 500..=599);
                if !retriable || attempt >= ATTEMPTS {
                    return Err(OciError::Registry(format!(
                        "GET blob {} ({}): {why}; {} bytes kept in {} for the next pull",
                        layer.title,
                        layer.digest,
                        fs::symlink_metadata(&part).map_or(0, |m| m.len()),
                        part.display()
                    )));
                }
                if !taken && matches!(status, 206 | 416) {
                    // A range the registry did not resume where asked.
                    let _ = fs::remove_file(&part);
                }
                say(&format!("retrying {}: {why}", layer.title));
                std::thread::sleep(std::time::Duration::from_millis(300 << attempt));
                continue;
            }
        }
        let (actual, len) = hash_file(&part).map_err(|e| write_err(&part, e))?;
        if actual == layer.digest && len == layer.size {
            fs::rename(&part, dest).map_err(|e| write_err(dest, e))?;
            return Ok(fetched);
        }
        let _ = fs::remove_file(&part);
        if spliced && !restarted {
            restarted = true;
            say(&format!(
                "{}: the resumed download does not match its digest; fetching it again from the start",
                layer.title
            ));
            continue;
        }
        return Err(OciError::Unverified(format!(
            "the registry served {} as {len} bytes with sha256 {actual}, not the layer's {} ({} bytes): refused, nothing written",
            layer.title, layer.digest, layer.size
        )));
    }
}

fn refuse_link(path: &Path) -> Result<(), OciError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OciError::Local(format!(
            "{} is a symlink: refused (remove the staging directory)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The manifest named by `reference`, its digest checked when the
/// reference names one.
fn manifest(
    reg: &mut Registry,
    reference: &Reference,
) -> Result<(Vec<u8>, Sha256Digest), OciError> {
    let what = format!("GET manifest {reference}");
    let req = Request::get(&reg.path(&format!("manifests/{}", reference.target)))
        .header("Accept", OCI_MANIFEST);
    let resp = reg.expect(&what, &req, &[200])?;
    let body = resp
        .full_body()
        .ok_or_else(|| {
            OciError::Registry(format!(
                "{what}: the manifest was cut short or is larger than {} bytes",
                crate::registry::MAX_DOCUMENT
            ))
        })?
        .to_vec();
    let digest = Sha256Digest::of(&body);
    if let Target::Digest(want) = &reference.target {
        if *want != digest {
            return Err(OciError::Unverified(format!(
                "{what}: the registry served a manifest whose sha256 is {digest}: refused, nothing written"
            )));
        }
    }
    if let Some(named) = resp.header("docker-content-digest") {
        if named.trim() != format!("sha256:{}", digest.to_hex()) {
            return Err(OciError::Unverified(format!(
                "{what}: the registry names the manifest {}, its bytes hash to sha256:{}: refused, nothing written",
                named.trim(),
                digest.to_hex()
            )));
        }
    }
    Ok((body, digest))
}

/// Pulls `reference` into `dir` (which must not exist), verified against
/// `signers` on `jobs` threads before it appears.
pub fn pull(
    reference: &Reference,
    dir: &Path,
    signers: &AllowedSigners,
    how: &Connect<'_>,
    jobs: usize,
    mut say: impl FnMut(&str),
) -> Result<Pulled, OciError> {
    if fs::symlink_metadata(dir).is_ok() {
        return Err(OciError::Usage(format!(
            "{} exists: a pull writes a new directory (remove it or name another)",
            dir.display()
        )));
    }
    let mut reg = Registry::new(reference, how)?;
    let (body, manifest_digest) = manifest(&mut reg, reference)?;
    let layers =
        artifact::parse(&body).map_err(|e| OciError::Unverified(format!("{reference}: {e}")))?;
    let stage = staging_dir(dir, &manifest_digest)?;
    refuse_link(&stage)?;
    fs::create_dir_all(stage.join("blobs/sha256")).map_err(|e| write_err(&stage, e))?;
    for sub in ["blobs", "blobs/sha256"] {
        refuse_link(&stage.join(sub))?;
    }
    let mut pulled = Pulled {
        manifest_digest,
        snapshot_id: Sha256Digest::of(b""),
        files: layers.len(),
        fetched: 0,
        reused: 0,
        notes: Vec::new(),
    };
    for layer in &layers {
        let dest = stage.join(&layer.title);
        refuse_link(&dest)?;
        if dest.exists() {
            // Verified when it was renamed there; checked again, as any
            // file that counts.
            if hash_file(&dest).is_ok_and(|(d, n)| d == layer.digest && n == layer.size) {
                pulled.reused += 1;
                continue;
            }
            fs::remove_file(&dest).map_err(|e| write_err(&dest, e))?;
        }
        pulled.fetched += fetch(&mut reg, layer, &dest, &mut say)?;
    }
    let found = SnapshotDir::open(&stage)
        .and_then(|d| d.verify(Some(signers), jobs))
        .map_err(|e| OciError::Unverified(format!("the pulled snapshot: {e}")))?;
    if !found.ok() {
        return Err(OciError::Unverified(format!(
            "the pulled snapshot does not verify against --allowed-signers: {} ({} problem(s)); {} not written",
            found.problems.first().map_or("", String::as_str),
            found.problems.len(),
            dir.display()
        )));
    }
    pulled.snapshot_id = found.id.unwrap_or(manifest_digest);
    pulled.notes = found.notes;
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        &stage,
        rustix::fs::CWD,
        dir,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(|e| {
        if e == rustix::io::Errno::EXIST {
            OciError::Usage(format!(
                "{} appeared during the pull: not replaced (the verified snapshot is in {})",
                dir.display(),
                stage.display()
            ))
        } else {
            write_err(dir, e)
        }
    })?;
    Ok(pulled)
}
