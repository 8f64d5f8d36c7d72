//! The PyPI part of a build: hashed requirements files, a uv.lock and
//! local wheels and sdists in; every pinned file found on its project page
//! (by its sha256), downloaded and verified. Wheels are read as zip files
//! for their METADATA, sdists stay opaque. With a mirror URL, the uv.lock
//! is rewritten to install from the mirror.

mod page;

use crate::build::{add_source, read_input, Extra, Net, Part, Sources, Staged, INDEX_PATH};
use crate::error::BuildError;
use crate::fetch::{self, FetchError, FileJob};
use crate::progress::Progress;
use egress_lock::Lock;
use egress_model::{DistFilename, ProjectName, Sha256Digest, Url, Version};
use egress_snapshot::{pool, SnapshotBuilder, FILES_PREFIX};
use egress_transcript::{Client, Limits};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where the mirror URL puts the rewritten uv.lock, inside the snapshot
/// directory.
pub const REWRITTEN_UV_LOCK: &str = "rewritten/uv.lock";

/// The PyPI inputs of a build.
#[derive(Default)]
pub struct Inputs {
    /// Hashed requirements files (pip-compile / uv pip compile --generate-hashes).
    pub requirements: Vec<PathBuf>,
    /// A uv.lock (version 1).
    pub uv_lock: Option<PathBuf>,
    /// Directories of wheels and sdists to add as they are.
    pub dist: Vec<PathBuf>,
    /// The index to fetch from (PEP 691 JSON or PEP 503 HTML).
    pub index_url: String,
    /// The mirror's base URL: also write the rewritten uv.lock, whose file
    /// URLs point at the mirror.
    pub mirror_url: Option<String>,
    /// `--pypi-universe`: project names with optional specifiers.
    pub universe: Option<PathBuf>,
    /// The targets wheels are chosen for.
    pub targets: TargetArgs,
}

/// `--python-version`, `--platform`, `--implementation`, `--abi`,
/// `--include-sdists`, as given. Without a version or platform, every file
/// is kept (as before targets existed).
#[derive(Default, Clone, Debug)]
pub struct TargetArgs {
    pub python_versions: Vec<String>,
    pub platforms: Vec<String>,
    pub implementation: Option<String>,
    pub abis: Vec<String>,
    pub include_sdists: bool,
}

/// A file some lock pins, and where.
#[derive(Debug, Clone)]
struct Wanted {
    name: ProjectName,
    version: Version,
    /// `file:line` of the first lock line pinning it.
    at: String,
    /// From uv.lock, used when the index gives none.
    upload_time: Option<String>,
}

/// A file ready for the builder.
struct File {
    bytes: Vec<u8>,
    yanked: Option<String>,
    upload_time: Option<String>,
}

pub(crate) struct Pypi {
    inputs: Inputs,
    index: Option<Url>,
    mirror: Option<String>,
    /// The uv.lock's name and text, for the rewrite.
    uv_lock_text: Option<(String, String)>,
    wanted: BTreeMap<Sha256Digest, Wanted>,
    /// Local files by name.
    local: BTreeMap<String, File>,
    /// The pinned digests to download, by project.
    by_project: BTreeMap<ProjectName, Vec<Sha256Digest>>,
    fetched: BTreeMap<String, File>,
}

impl Pypi {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            index: None,
            mirror: None,
            uv_lock_text: None,
            wanted: BTreeMap::new(),
            local: BTreeMap::new(),
            by_project: BTreeMap::new(),
            fetched: BTreeMap::new(),
        }
    }
}

impl Part for Pypi {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--requirements", "--uv-lock", "--dist"]
    }

    fn has_inputs(&self) -> bool {
        let i = &self.inputs;
        !i.requirements.is_empty() || i.uv_lock.is_some() || !i.dist.is_empty()
    }

    fn check(&mut self, _: &mut SnapshotBuilder) -> Result<(), BuildError> {
        self.index = Some(index_url(&self.inputs.index_url)?);
        if let Some(m) = &self.inputs.mirror_url {
            let url = Url::parse(m).map_err(|e| BuildError::Usage(format!("--mirror-url: {e}")))?;
            if url.path_and_query().contains('?') {
                return Err(BuildError::Usage(
                    "--mirror-url: must not carry a query string".into(),
                ));
            }
            self.mirror = Some(m.trim_end_matches('/').to_string());
        }
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        // Locks -> the digests wanted, each with the first place that pins it.
        let mut locks: Vec<Lock> = Vec::new();
        for path in &self.inputs.requirements {
            let (text, digest) = read_input("--requirements", path)?;
            locks.push(egress_lock::parse_requirements(
                &path.display().to_string(),
                &text,
            )?);
            add_source(sources, "requirements", path, digest);
        }
        if let Some(path) = &self.inputs.uv_lock {
            let (text, digest) = read_input("--uv-lock", path)?;
            locks.push(egress_lock::parse_uv_lock(
                &path.display().to_string(),
                &text,
            )?);
            add_source(sources, "uv.lock", path, digest);
            self.uv_lock_text = Some((path.display().to_string(), text));
        }
        for lock in &locks {
            for note in &lock.notes {
                eprintln!("note: {note}");
            }
            for pin in &lock.pins {
                for f in &pin.files {
                    let at = format!("{}:{}", lock.file, f.line);
                    match self.wanted.get(&f.sha256) {
                        Some(w) if (&w.name, &w.version) != (&pin.name, &pin.version) => {
                            return Err(BuildError::Conflict(format!(
                                "{at}: sha256 {} is pinned for {}=={} here and for {}=={} at {}; one file cannot be both",
                                f.sha256, pin.name, pin.version, w.name, w.version, w.at
                            )));
                        }
                        Some(_) => {}
                        None => {
                            self.wanted.insert(
                                f.sha256,
                                Wanted {
                                    name: pin.name.clone(),
                                    version: pin.version.clone(),
                                    at,
                                    upload_time: f.upload_time.clone(),
                                },
                            );
                        }
                    }
                }
            }
        }

        // Local files are taken as they are; a pinned digest found among
        // them needs no download.
        let mut local_digests = BTreeSet::new();
        for dir in &self.inputs.dist {
            for (name, bytes) in local_dists(dir)? {
                let digest = Sha256Digest::of(&bytes);
                if self.local.contains_key(&name) {
                    return Err(BuildError::Conflict(format!(
                        "--dist: {name} is given twice; keep one"
                    )));
                }
                add_source(sources, "dist", Path::new(&name), digest);
                local_digests.insert(digest);
                self.local.insert(
                    name,
                    File {
                        bytes,
                        yanked: None,
                        upload_time: None,
                    },
                );
            }
        }
        for (d, w) in &self.wanted {
            if !local_digests.contains(d) {
                self.by_project.entry(w.name.clone()).or_default().push(*d);
            }
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        self.fetched = fetch_all(net, index, &self.wanted, &self.by_project)?;
        Ok(())
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        out: &Path,
    ) -> Result<Staged, BuildError> {
        let mut staged = self.local;
        let downloaded = self.fetched.len();
        for (filename, f) in self.fetched {
            if let Some(old) = staged.get(&filename) {
                if Sha256Digest::of(&old.bytes) != Sha256Digest::of(&f.bytes) {
                    return Err(BuildError::Conflict(format!(
                        "{filename}: the file given with --dist differs from the one the lock pins; drop one"
                    )));
                }
            }
            staged.insert(filename, f);
        }
        let mut filenames: BTreeMap<Sha256Digest, String> = BTreeMap::new();
        let mut done = Staged {
            files: staged.len(),
            downloaded,
            ..Staged::default()
        };
        for (filename, f) in staged {
            let digest = Sha256Digest::of(&f.bytes);
            done.bytes += f.bytes.len() as u64;
            filenames.insert(digest, filename.clone());
            builder
                .add_dist_with(&filename, f.bytes, f.yanked, f.upload_time)
                .map_err(BuildError::Rejected)?;
        }
        // The rewrite is prepared before anything is written, so that a
        // lock it cannot rewrite leaves nothing behind.
        if let (Some(base), Some((name, text))) = (&self.mirror, &self.uv_lock_text) {
            let url_for = |d: &Sha256Digest| {
                filenames
                    .get(d)
                    .map(|f| format!("{base}{FILES_PREFIX}{}/{f}", d.to_hex()))
            };
            let registry = format!("{base}{}", INDEX_PATH.trim_end_matches('/'));
            let text = egress_lock::rewrite_uv_lock(name, text, &registry, &url_for)?;
            let path = out.join(REWRITTEN_UV_LOCK);
            done.extras.push(Extra {
                note: format!(
                    "uv.lock for the mirror: {} (uv sync --frozen installs from {base})",
                    path.display()
                ),
                path,
                text,
            });
        }
        Ok(done)
    }
}

/// The index URL as a directory (trailing `/`), without a query.
fn index_url(raw: &str) -> Result<Url, BuildError> {
    let url = Url::parse(raw).map_err(|e| BuildError::Usage(format!("--index-url: {e}")))?;
    if url.path_and_query().contains('?') {
        return Err(BuildError::Usage(
            "--index-url: must not carry a query string".into(),
        ));
    }
    let path = url.path();
    Ok(if path.ends_with('/') {
        url
    } else {
        url.with_path(&format!("{path}/"))
    })
}

/// Local wheels and sdists, sorted by name; other files are noted and left.
fn local_dists(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, BuildError> {
    let files = crate::local::read_dir(
        dir,
        "--dist",
        &[".whl", ".tar.gz", ".zip"],
        "a wheel or sdist file",
    )?;
    Ok(files.into_iter().map(|f| (f.name, f.bytes)).collect())
}

/// A page entry's sha256, if it lists one.
fn listed_sha256(entry: &egress_simple::FileEntry) -> Option<Sha256Digest> {
    entry
        .hashes
        .get("sha256")
        .and_then(|h| Sha256Digest::from_hex(h).ok())
}
/// Finds every wanted file on its project page, then downloads and verifies
/// all of them. Returns them by filename.
fn fetch_all(
    net: &Net,
    index: &Url,
    wanted: &BTreeMap<Sha256Digest, Wanted>,
    by_project: &BTreeMap<ProjectName, Vec<Sha256Digest>>,
) -> Result<BTreeMap<String, File>, BuildError> {
    let page_client = Client::new(index.clone(), fetch::page_limits(), net.cacert)?;
    let projects: Vec<(&ProjectName, &Vec<Sha256Digest>)> = by_project.iter().collect();
    let quiet = Progress::new(0, 0);
    if !projects.is_empty() {
        eprintln!("reading {} project pages from {index}", projects.len());
    }
    let pages = pool::map(&projects, net.jobs, |(name, _)| {
        let url = index.with_path(&format!("{}{name}/", index.path()));
        page::project_page(&page_client, &url, &quiet)
    });

    // Each pinned digest must be listed on its project's page.
    let mut jobs: Vec<(FileJob, Option<String>, Option<String>)> = Vec::new();
    let mut unlisted = Vec::new();
    for ((name, digests), page) in projects.iter().zip(pages) {
        let (page_url, page) = page?;
        for d in digests.iter() {
            let Some(w) = wanted.get(d) else { continue };
            let Some(entry) = page.files.iter().find(|f| listed_sha256(f) == Some(*d)) else {
                unlisted.push(format!(
                    "sha256 {d} pinned for {}=={} at {} is listed by no file on {page_url}",
                    w.name, w.version, w.at
                ));
                continue;
            };
            let project_ok = DistFilename::parse(&entry.filename).is_ok_and(|f| &f.name == *name);
            if !project_ok {
                return Err(BuildError::Refused(format!(
                    "{page_url} lists {:?} for sha256 {d} (pinned for {}=={} at {}), which is not a file of {name}",
                    entry.filename, w.name, w.version, w.at
                )));
            }
            let url = page_url.join(&entry.url).map_err(|e| {
                BuildError::Refused(format!("{page_url}: file URL of {}: {e}", entry.filename))
            })?;
            let upload_time = entry
                .upload_time
                .clone()
                .or_else(|| w.upload_time.clone())
                .filter(|t| SnapshotBuilder::is_valid_upload_time(t));
            jobs.push((
                FileJob {
                    filename: entry.filename.clone(),
                    url,
                    expect: fetch::Expect::Sha256(*d),
                    size: entry.size,
                },
                entry.yanked.clone(),
                upload_time,
            ));
        }
    }
    if let Some(first) = unlisted.first() {
        let more = match unlisted.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(BuildError::Refused(format!(
            "{first}{more}; the index does not serve what the lock pins"
        )));
    }

    // One client per origin: files often live elsewhere (PyPI's file host).
    let mut clients: HashMap<String, Client> = HashMap::new();
    for (job, _, _) in &jobs {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(job.url.origin()) {
            let c = Client::new(job.url.clone(), Limits::download(), net.cacert)?;
            slot.insert(c);
        }
    }
    let total = jobs.iter().filter_map(|(j, _, _)| j.size).sum();
    let progress = Progress::new(jobs.len(), total);
    // After the first failure no new download starts.
    let stop = AtomicBool::new(false);
    let results = pool::map(&jobs, net.jobs, |(job, _, _)| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", job.url))));
        };
        let part = net.work.join(job.expect.part_name(&job.url));
        let r = fetch::download(client, job, &part, &progress);
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

    let mut out = BTreeMap::new();
    let mut first_error = None;
    for ((job, yanked, upload_time), r) in jobs.into_iter().zip(results) {
        match r {
            Some(Ok(bytes)) => {
                out.insert(
                    job.filename,
                    File {
                        bytes,
                        yanked,
                        upload_time,
                    },
                );
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                let Some(w) = wanted.get(&expected) else {
                    return Err(FetchError::Mismatch { expected, actual }.into());
                };
                // A mismatch outranks any other failure: it is the one that
                // says the index serves other bytes than the lock pins.
                return Err(BuildError::Refused(format!(
                    "{} ({}=={}, pinned at {}) from {}: expected sha256 {expected}, got {actual}; refusing the whole snapshot",
                    job.filename, w.name, w.version, w.at, job.url
                )));
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
