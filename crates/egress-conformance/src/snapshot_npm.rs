//! The npm half of `snapshot build`: every tarball a `package-lock.json`
//! pins, fetched from its `resolved` URL and verified against the lock's
//! sha512 `integrity` before it may enter the snapshot. A mismatch refuses
//! the whole snapshot.

use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::pool;
use crate::progress::Progress;
use crate::Failure;
use egress_lock::{NpmLock, NpmPin};
use egress_model::Url;
use egress_transcript::{Client, Limits};
use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// A verified tarball, ready for the builder.
pub struct NpmStaged {
    pub pin: NpmPin,
    /// `<name without scope>-<version>.tgz`, its name on the mirror.
    pub filename: String,
    pub bytes: Vec<u8>,
}

/// Downloads every pin of `lock` (at most `jobs` at once) into `work` and
/// returns them once each matches its integrity.
pub fn fetch_npm(
    lock: &NpmLock,
    jobs: usize,
    cacert: Option<&Path>,
    work: &Path,
) -> Result<Vec<NpmStaged>, Failure> {
    let mut planned = Vec::new();
    for pin in &lock.pins {
        let url = Url::parse(&pin.resolved).map_err(|e| {
            Failure::input(format!(
                "{}: package {:?} ({}@{}): resolved: {e}",
                lock.file, pin.key, pin.name, pin.version
            ))
        })?;
        let job = FileJob {
            filename: format!("{}@{}", pin.name, pin.version),
            url,
            expect: Expect::Sri512(pin.sri()),
            size: None,
        };
        planned.push((pin, job));
    }
    // One client per origin: a lock may name more than one registry.
    let mut clients: HashMap<String, Client> = HashMap::new();
    for (_, job) in &planned {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(job.url.origin()) {
            let c = Client::new(job.url.clone(), Limits::download(), cacert)
                .map_err(|e| Failure::input(e.to_string()))?;
            slot.insert(c);
        }
    }
    if !planned.is_empty() {
        eprintln!(
            "fetching {} npm tarballs pinned by {}",
            planned.len(),
            lock.file
        );
    }
    let progress = Progress::new(planned.len(), 0);
    let stop = AtomicBool::new(false);
    let results = pool::map(&planned, jobs, |(_, job)| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let part = work.join(job.expect.part_name(&job.url));
        let r = fetch::download(&clients[&job.url.origin()], job, &part, &progress);
        match &r {
            Ok(bytes) => {
                let _ = fs::remove_file(&part);
                progress.done(&job.filename, bytes.len() as u64, "");
            }
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Some(r)
    });
    progress.finish();

    let mut out = Vec::new();
    let mut first_error = None;
    for ((pin, job), r) in planned.into_iter().zip(results) {
        match r {
            Some(Ok(bytes)) => out.push(NpmStaged {
                pin: pin.clone(),
                filename: egress_artifacts::npm_tarball_filename(&pin.name, &pin.version),
                bytes,
            }),
            Some(Err(FetchError::IntegrityMismatch { expected, actual })) => {
                return Err(Failure {
                    code: crate::exit::REFUSED,
                    message: format!(
                        "{}@{} (package {:?} in {}) from {}: expected integrity {expected}, got {actual}; refusing the whole snapshot",
                        pin.name, pin.version, pin.key, lock.file, job.url
                    ),
                });
            }
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_error {
        Some(e) => Err(crate::snapshot_build::fetch_failure(e)),
        None => Ok(out),
    }
}
