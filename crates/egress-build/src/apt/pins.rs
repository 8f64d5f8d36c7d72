//! From a `--print-uris` line to the `.deb` the snapshot serves.
//!
//! Each line is matched by its pool path (its URL below the archive root,
//! percent-decoded) to the stanza whose `Filename` it is, in any signed
//! `Packages` of that archive given with `--apt-source` ([`plan`]). The
//! line's size and hash (MD5Sum with Debian 12's apt) must agree with the
//! stanza; the SHA256 that binds the bytes comes from the stanza alone,
//! which the verified `Release` covers. Then every `.deb` is downloaded
//! and must match that SHA256 and the stanza's size ([`download`]).

use super::source::AptSource;
use super::upstream::Upstream;
use crate::build::Net;
use crate::error::BuildError;
use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::progress::Progress;
use egress_apt::PackageEntry;
use egress_lock::{AptHash, AptUri};
use egress_model::Url;
use egress_snapshot::pool;
use egress_transcript::{Client, Limits};
use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};

/// A `.deb` whose bytes matched its signed stanza.
pub(crate) struct Deb {
    /// The source whose archive it is in (its base URL).
    pub(crate) base: String,
    pub(crate) stanza: PackageEntry,
    pub(crate) bytes: Vec<u8>,
}

/// One `.deb` to download: its line and the stanza that pins it.
pub(crate) struct Planned {
    line: usize,
    base: String,
    stanza: PackageEntry,
    job: FileJob,
}

/// Matches every line (with the index of its archive's first source) to
/// its signed stanza, and checks the line's size and hash against it.
pub(crate) fn plan(
    uris: &[(AptUri, usize)],
    uris_label: &str,
    sources: &[AptSource],
    upstream: &[Upstream],
) -> Result<Vec<Planned>, BuildError> {
    let mut planned: Vec<Planned> = Vec::new();
    for (uri, at) in uris {
        let line = uri.line;
        let Some(source) = sources.get(*at) else {
            continue;
        };
        let here = format!("--apt-uris {} line {line}", uris_label);
        let Some(pool_path) = egress_lock::pool_path_of(&uri.url, &source.base) else {
            return Err(BuildError::Conflict(format!(
                    "{here}: {} is not a pool path below {} as apt writes it; write the file with apt-get install --print-uris -qq",
                    uri.url, source.base
                )));
        };
        // Every distribution given for this archive, every component.
        let same_archive: Vec<usize> = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.base == source.base)
            .map(|(i, _)| i)
            .collect();
        let mut found: Option<&PackageEntry> = None;
        for i in &same_archive {
            let Some(up) = upstream.get(*i) else {
                continue;
            };
            for (_, _, entries) in &up.packages {
                if let Some(e) = entries.iter().find(|e| e.filename == pool_path) {
                    if let Some(prev) = found {
                        if prev.sha256 != e.sha256 || prev.size != e.size {
                            return Err(BuildError::Refused(format!(
                                    "{here}: {pool_path} is listed with different SHA256 or size in two signed indexes of {}; refusing to choose",
                                    source.base
                                )));
                        }
                    }
                    found.get_or_insert(e);
                }
            }
        }
        let dists: Vec<String> = same_archive
            .iter()
            .filter_map(|i| sources.get(*i))
            .map(|s| format!("{} {}", s.dist, s.components.join(" ")))
            .collect();
        let no_sha256 = || {
            BuildError::Refused(format!(
                    "{here}: {} has no SHA256 in any signed index of {} ({}), so its bytes cannot be bound; add the distribution and component that list it to --apt-source, or write the file again after apt-get update against the same archive",
                    uri.file_name,
                    source.base,
                    dists.join("; ")
                ))
        };
        let stanza = found.ok_or_else(no_sha256)?;
        let sha256 = stanza.sha256.ok_or_else(no_sha256)?;
        if uri.size != stanza.size {
            return Err(BuildError::Refused(format!(
                    "{here}: {} is {} bytes on the line but {} bytes in the signed index of {}; write the file again after apt-get update against the same archive",
                    uri.file_name, uri.size, stanza.size, source.base
                )));
        }
        check_line_hash(&here, uri, stanza)?;
        if planned
            .iter()
            .any(|p| p.base == source.base && p.stanza.filename == stanza.filename)
        {
            continue;
        }
        let url = Url::parse(&uri.url)
            .map_err(|e| BuildError::Conflict(format!("{here}: {}: {e}", uri.url)))?;
        planned.push(Planned {
            line,
            base: source.base.clone(),
            stanza: stanza.clone(),
            job: FileJob {
                filename: uri.file_name.clone(),
                url,
                expect: Expect::Sha256(sha256),
                size: Some(stanza.size),
            },
        });
    }
    Ok(planned)
}

/// The hash on a print-uris line against the same hash in the stanza.
fn check_line_hash(here: &str, uri: &AptUri, stanza: &PackageEntry) -> Result<(), BuildError> {
    let field = |name: &str| stanza.paragraph.get(name).map(str::to_ascii_lowercase);
    let (name, line, signed) = match &uri.hash {
        AptHash::Md5(h) => ("MD5Sum", h.to_ascii_lowercase(), stanza.md5.clone()),
        AptHash::Sha256(h) => ("SHA256", h.to_hex(), stanza.sha256.map(|d| d.to_hex())),
        AptHash::Sha1(h) => ("SHA1", h.to_ascii_lowercase(), field("SHA1")),
        AptHash::Sha512(h) => ("SHA512", h.to_ascii_lowercase(), field("SHA512")),
        AptHash::Unknown { .. } | AptHash::Missing => return Ok(()),
    };
    match signed {
        Some(signed) if signed != line => Err(BuildError::Refused(format!(
            "{here}: {} has {name} {line} on the line but {signed} in the signed index; write the file again after apt-get update against the same archive",
            uri.file_name
        ))),
        _ => Ok(()),
    }
}

/// Downloads every planned `.deb` (at most `net.jobs` at once); each must
/// match its stanza's SHA256 and size.
pub(crate) fn download(planned: &[Planned], net: &Net) -> Result<Vec<Deb>, BuildError> {
    let mut clients: HashMap<String, Client> = HashMap::new();
    for p in planned {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(p.job.url.origin()) {
            slot.insert(Client::new(
                p.job.url.clone(),
                Limits::download(),
                net.cacert,
            )?);
        }
    }
    let total: u64 = planned.iter().map(|p| p.stanza.size).sum();
    if !planned.is_empty() && !crate::progress::is_quiet() {
        eprintln!(
            "fetching {} .deb files pinned by signed indexes",
            planned.len()
        );
    }
    let progress = Progress::new(planned.len(), total);
    let stop = AtomicBool::new(false);
    let results = pool::map(planned, net.jobs, |p| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&p.job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", p.job.url))));
        };
        let part = net.work.join(p.job.expect.part_name(&p.job.url));
        let r = fetch::download(client, &p.job, &part, &progress);
        match &r {
            Ok(bytes) => {
                let _ = fs::remove_file(&part);
                progress.done(&p.job.filename, bytes.len() as u64, "");
            }
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Some(r)
    });
    progress.finish();
    let mut out = Vec::new();
    let mut first_error = None;
    for (p, r) in planned.iter().zip(results) {
        match r {
            Some(Ok(bytes)) if bytes.len() as u64 == p.stanza.size => out.push(Deb {
                base: p.base.clone(),
                stanza: p.stanza.clone(),
                bytes,
            }),
            Some(Ok(bytes)) => {
                return Err(BuildError::Refused(format!(
                    "{} (line {}): {} bytes, the signed index says {}; refusing the whole snapshot",
                    p.job.url,
                    p.line,
                    bytes.len(),
                    p.stanza.size
                )))
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                return Err(BuildError::Refused(format!(
                    "{} (line {}): expected sha256 {expected} (the signed index), got {actual}; refusing the whole snapshot",
                    p.job.url, p.line
                )))
            }
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}
